#!/usr/bin/env python3
"""EQDS paper, Figures 17 and 18: sharing a receiver between unlike senders.

Two setups, each with and without EQDS, on one 25 Gbps switch (the T1 testbed's
rate): four TCP NewReno senders joined at 10 ms by an unresponsive line-rate UDP
sender (scenario-udp.toml), a Cubic, a NewReno and a DCTCP sender together
(scenario-mixed.toml), a Cubic and a Vegas sender (scenario-vegas.toml), and a Cubic
and a BBR sender (scenario-bbr.toml). Without EQDS the switch queue is drop-tail
(UDP, Vegas, BBR) or marks ECN beyond 20 packets (mixed); with EQDS every host tunnels its traffic (NDP mode, 100-packet EQIF queues)
through a 15-packet trimming switch queue. Plots each flow's throughput and writes
result.json: the paper reports that UDP takes the link and starves TCP without EQDS,
that delay-based controllers are starved by loss-based ones, and that EQDS shares
the receiver fairly, except that Vegas over EQDS cannot fill the link alone and gets
less than Cubic.

Usage: python3 experiments/sharing/run.py [--quick] [--results DIR] [--ray ADDR]
"""

import sys
from pathlib import Path

from eqds_lab import Quantity, load_flows, write_result
from eqds_lab.experiment import jain, parse_args, run_case
from eqds_lab.plots import save

HERE = Path(__file__).resolve().parent
RATE = 25e9
WITH_EQDS = {
    "eqds.enabled": "true",
    "switch.queue": "{ kind = 'trimming', data_packets = 15 }",
}
RUNS = {
    ("udp", False): ("scenario-udp.toml", {}),
    ("udp", True): ("scenario-udp.toml", WITH_EQDS),
    ("mixed", False): ("scenario-mixed.toml", {}),
    ("mixed", True): ("scenario-mixed.toml", WITH_EQDS),
    ("vegas", False): ("scenario-vegas.toml", {}),
    ("vegas", True): ("scenario-vegas.toml", WITH_EQDS),
    ("bbr", False): ("scenario-bbr.toml", {}),
    ("bbr", True): ("scenario-bbr.toml", WITH_EQDS),
}
#: Also measured: the BBR runs with 5 us links, an idle round trip of about 22 us
#: (the result should not hang on the round trip).
SLOWER_HOSTS = {"topology.link": "{ rate = '25Gbps', latency = '5us' }"}
#: Also measured: Vegas alone over EQDS, and both Vegas runs with tunnels that ask
#: credit for their backlog only (demand_lookahead 0), as the paper's EQIF appears to.
VEGAS_ALONE = {"workload.0.start": "1s"}
BACKLOG_ONLY = {"eqds.demand_lookahead": "0"}
VEGAS_EXTRA = {
    "Vegas alone": VEGAS_ALONE,
    "Cubic and Vegas, credit for the backlog only": BACKLOG_ONLY,
    "Vegas alone, credit for the backlog only": VEGAS_ALONE | BACKLOG_ONLY,
}


def main() -> int:
    args = parse_args(__doc__, HERE, quick="30 ms runs instead of 50 ms")
    quick = {"stop.time": "30ms"} if args.quick else {}

    shares: dict[tuple[str, bool], list[tuple[str, float]]] = {}
    for (setup, eqds), (scenario, overrides) in RUNS.items():
        name = f"{setup}-{'eqds' if eqds else 'plain'}"
        flows = load_flows(
            run_case(args, HERE / scenario, name, overrides | quick)
        ).sort("id")
        shares[(setup, eqds)] = list(
            zip(flows["protocol"].to_list(), flows["mean_throughput_bps"].to_list())
        )

    vegas_extra = extra_runs(
        args,
        "scenario-vegas.toml",
        "vegas",
        {k: WITH_EQDS | v for k, v in VEGAS_EXTRA.items()},
        quick,
    )
    vegas_shallow = extra_runs(
        args,
        "scenario-vegas.toml",
        "vegas-shallow",
        {
            "without EQDS": {
                "switch.queue": "{ kind = 'drop_tail', limit_packets = 100 }"
            }
        },
        quick,
    )
    bbr_slower = extra_runs(
        args,
        "scenario-bbr.toml",
        "bbr",
        {"without EQDS": SLOWER_HOSTS, "with EQDS": SLOWER_HOSTS | WITH_EQDS},
        quick,
    )

    args.results.mkdir(parents=True, exist_ok=True)
    plot(shares, args.results / "sharing.png")
    gbps = {
        f"{setup}_{'eqds' if eqds else 'plain'}": [
            (proto, round(bps / 1e9, 3)) for proto, bps in flows
        ]
        for (setup, eqds), flows in shares.items()
    }
    for name, flows in gbps.items():
        print(name, flows)
    udp_plain = sum(b for p, b in shares[("udp", False)] if p == "udp") / 1e9
    tcp_plain = sum(b for p, b in shares[("udp", False)] if p != "udp") / 1e9
    rates = {k: [b for _, b in v] for k, v in shares.items()}
    vegas_plain = dict(shares[("vegas", False)])
    vegas_share = vegas_plain["vegas"] / (vegas_plain["vegas"] + vegas_plain["cubic"])
    bbr_plain = dict(shares[("bbr", False)])
    bbr_share = bbr_plain["bbr"] / (bbr_plain["bbr"] + bbr_plain["cubic"])
    bbr_eqds = dict(shares[("bbr", True)])
    passed = write_result(
        args.results,
        experiment="sharing",
        figure="EQDS NSDI'22, Figures 17 and 18",
        setup="One switch, 25 Gbps, 1 us links, 1500 B MTU, 1 ms min RTO, seed 1. "
        "UDP: 4 NewReno senders, a line-rate UDP sender from 10 ms (gaps jittered "
        "+-50%), throughput over 20-50 ms; without EQDS a 100-packet drop-tail queue. "
        "Mixed: Cubic, NewReno and DCTCP, throughput over 10-50 ms; without EQDS a "
        "100-packet queue marking ECN beyond 20 packets. Vegas: Cubic and Vegas, "
        "throughput over 10-50 ms; without EQDS a 1 MB (667-packet) drop-tail queue. "
        "BBR: "
        "Cubic and BBR with SACK, throughput over 10-50 ms; without EQDS a 1 MB "
        "(667-packet) drop-tail queue. With EQDS: "
        "NDP mode, 100-packet EQIF queues, 15-packet trimming switch queue."
        + (" (QUICK: runs end at 30 ms)" if args.quick else ""),
        quantities=[
            Quantity(
                "without EQDS: UDP throughput (Gb/s)", 25.0, round(udp_plain, 3), 2.5
            ),
            Quantity(
                "with EQDS: Jain index of 4 TCP + 1 UDP",
                1.0,
                round(jain(rates[("udp", True)]), 5),
                0.01,
            ),
            Quantity(
                "with EQDS: Jain index of Cubic, NewReno, DCTCP",
                1.0,
                round(jain(rates[("mixed", True)]), 5),
                0.02,
            ),
            Quantity(
                "without EQDS: Vegas's share of the receiver beside Cubic (starved)",
                0.0,
                round(vegas_share, 4),
                0.15,
            ),
            Quantity(
                "without EQDS: BBR's share of the receiver beside Cubic (starved)",
                0.0,
                round(bbr_share, 4),
                0.15,
            ),
            Quantity(
                "with EQDS: Jain index of Cubic and BBR",
                1.0,
                round(jain(rates[("bbr", True)]), 4),
                0.02,
            ),
        ],
        also_measured={
            "throughput_gbps": gbps,
            "tcp_total_without_eqds_gbps": round(tcp_plain, 3),
            "jain_mixed_without_eqds": round(jain(rates[("mixed", False)]), 4),
            "jain_cubic_vegas_with_eqds": round(jain(rates[("vegas", True)]), 4),
            "vegas_with_eqds_gbps": vegas_extra,
            "vegas_100_packet_queue_gbps": vegas_shallow,
            "bbr_with_5us_links_gbps": bbr_slower,
        },
        plot="sharing.png",
        data="sharing.csv",
        notes=[
            (
                "Paper, Figure 17: on a legacy network UDP takes ~25 Gbps and starves TCP; "
                "with EQDS the UDP sender is throttled in its own sending EQIF and the "
                "receiver sees perfect ingress sharing. Figure 18: without EQDS latency- "
                "and ECN-based controllers are starved by loss-based ones; EQDS shares "
                "fairly."
            ),
            (
                "Figure 18's exception, Vegas: alone over EQDS it cannot fill 25 Gbps, and "
                "beside Cubic it gets less. With tunnels that ask credit only for what waits "
                "in the EQIF (demand_lookahead 0) we find the same: Vegas keeps 2-4 packets "
                "queued, in the EQIF here, so its tunnel asks for 2-4 packets of credit, "
                "short of the link's BDP: alone it runs at "
                f"{dict(vegas_extra['Vegas alone, credit for the backlog only'])['vegas']} "
                "Gb/s, and beside Cubic it gets "
                f"{dict(vegas_extra['Cubic and Vegas, credit for the backlog only'])['vegas']}"
                " Gb/s. Our default tunnels count the packets in flight as demand to come "
                "(demand_lookahead = the window), as TCP's ACK clock makes them, so Vegas "
                "alone fills the link ("
                f"{dict(vegas_extra['Vegas alone'])['vegas']} Gb/s); beside Cubic it still "
                "gets less, "
                f"{dict(shares[('vegas', True)])['vegas'] / 1e9:.2f} against "
                f"{dict(shares[('vegas', True)])['cubic'] / 1e9:.2f} Gb/s (Jain "
                f"{jain(rates[('vegas', True)]):.3f}): half the receiver's PULLs go to "
                "Cubic, so Vegas's packets wait longer for credit, which it reads as "
                "queueing; it backs off below its half, and Cubic takes the rest."
            ),
            (
                "Without EQDS the Vegas case uses the T1 testbed's 1 MB buffer, as the "
                "BBR case does. With a 100-packet queue Vegas keeps "
                f"{dict(vegas_shallow['without EQDS'])['vegas']} Gb/s beside Cubic's "
                f"{dict(vegas_shallow['without EQDS'])['cubic']}: the drops Cubic causes cost "
                "Vegas retransmission timeouts, and, as Linux's Vegas does when it sends from "
                "an empty pipe (CA_EVENT_TX_START), it then forgets its base RTT and "
                "takes the queued round trip as the path's."
            ),
            (
                "BBR (v1, as Linux's): without EQDS Cubic fills the 1 MB queue and BBR, "
                "whose window is about two of its estimated BDPs, gets "
                f"{bbr_plain['bbr'] / 1e9:.2f} Gb/s beside Cubic's "
                f"{bbr_plain['cubic'] / 1e9:.2f}. With EQDS the receiver's PULLs share "
                f"the link: {bbr_eqds['bbr'] / 1e9:.2f} against "
                f"{bbr_eqds['cubic'] / 1e9:.2f} Gb/s (Jain "
                f"{jain(rates[('bbr', True)]):.4f}). The same with 5 us links (an idle "
                "round trip of about 22 us): with EQDS "
                f"{dict(bbr_slower['with EQDS'])} Gb/s, without "
                f"{dict(bbr_slower['without EQDS'])}."
            ),
        ],
    )
    print("pass" if passed else "FAIL")
    return 0 if passed else 1


def extra_runs(
    args, scenario: str, prefix: str, cases: dict[str, dict], quick: dict
) -> dict[str, list[tuple[str, float]]]:
    """Runs `scenario` once per case (label: overrides) and returns each case's
    flows that carried anything, as (protocol, Gb/s)."""
    out = {}
    for i, (label, overrides) in enumerate(cases.items()):
        sweep = run_case(args, HERE / scenario, f"{prefix}-extra{i}", overrides | quick)
        flows = load_flows(sweep).sort("id")
        out[label] = [
            (p, round(b / 1e9, 3))
            for p, b in zip(
                flows["protocol"].to_list(), flows["mean_throughput_bps"].to_list()
            )
            if b > 0
        ]
    return out


def plot(shares: dict, path: Path) -> None:
    import matplotlib.pyplot as plt  # eqds_lab.plots has chosen the Agg backend

    fig, axes = plt.subplots(1, 4, figsize=(14, 3.4), sharey=True)
    rows = []
    for ax, setup, title in zip(
        axes,
        ["udp", "mixed", "vegas", "bbr"],
        [
            "4 TCP + line-rate UDP",
            "Cubic, NewReno, DCTCP",
            "Cubic, Vegas",
            "Cubic, BBR",
        ],
    ):
        for j, eqds in enumerate([False, True]):
            flows = shares[(setup, eqds)]
            xs = [j * (len(flows) + 1) + i for i in range(len(flows))]
            ax.bar(
                xs,
                [b / 1e9 for _, b in flows],
                color=[
                    "C1" if p in ("udp", "dctcp", "vegas", "bbr") else "C0"
                    for p, _ in flows
                ],
            )
            for x, (p, b) in zip(xs, flows):
                ax.text(x, b / 1e9 + 0.3, p, rotation=90, ha="center", fontsize=7)
                rows.append((setup, "eqds" if eqds else "plain", p, b))
        n = len(shares[(setup, False)])
        ax.set_xticks([(n - 1) / 2, n + 1 + (n - 1) / 2], ["without EQDS", "with EQDS"])
        ax.set_title(title, fontsize=9)
    axes[0].set_ylabel("throughput (Gb/s)")
    save(fig, path, ["setup", "network", "protocol", "throughput_bps"], rows)


if __name__ == "__main__":
    sys.exit(main())
