#!/usr/bin/env python3
"""EQDS paper, Figures 20 and 21: 1 MB closed-loop downloads across an oversubscribed core.

Runs scenario.toml (TCP Cubic, fair-queueing switches) and TCP over EQDS in NDP mode
(trimming, spraying) and RTS mode (no trimming, control prioritised) with 1, 2, 4 and
8 clients (core 50% to 400% loaded). Servers have 100 Gbps NICs, clients 25 Gbps, plots median and p99 FCT against the number of
clients, and writes result.json (paper: at light load EQDS's median is slightly lower
and its p99 2-5x lower; overloaded, trimming EQDS is about the baseline and RTS a
little slower).

Usage: python3 experiments/oversubscribed/run.py [--results DIR] [--ray ADDR]
"""

import sys
from pathlib import Path

from eqds_lab import (
    Quantity,
    load_flows,
    load_summaries,
    write_result,
)
from eqds_lab.experiment import EQDS_NDP, EQDS_RTS, HTSIM_TCP, parse_args, run_case
from eqds_lab.experiment import percentile as pct
from eqds_lab.plots import save

HERE = Path(__file__).resolve().parent
CLIENTS = {
    1: "[8]",
    2: "[8, 9]",
    4: "[8, 9, 10, 11]",
    8: "[8, 9, 10, 11, 12, 13, 14, 15]",
}
CONFIGS = {
    "TCP (fair queueing)": {},
    "TCP over EQDS, NDP mode": EQDS_NDP,
    "TCP over EQDS, RTS mode": EQDS_RTS,
    "TCP without SACK or small queues": HTSIM_TCP,
    # The paper's own EQDS windows (§8.5): its DPDK build's and its kernel
    # build's. It does not say which build ran this experiment.
    "TCP over EQDS, RTS mode, 50-packet window": EQDS_RTS | {"eqds.window": "50"},
    "TCP over EQDS, RTS mode, 150-packet window": EQDS_RTS | {"eqds.window": "150"},
}


def main() -> int:
    args = parse_args(__doc__, HERE)

    fct: dict[str, dict[int, tuple[float, float]]] = {}
    #: Per configuration and client count: mean resends per completed flow, and the
    #: retransmit timeouts of all completed flows.
    losses: dict[str, dict[int, tuple[float, int]]] = {}
    #: Per configuration and client count: EQDS's retransmit timeouts (all runs).
    eqds_rtos: dict[str, dict[int, int]] = {}
    for i, (label, overrides) in enumerate(CONFIGS.items()):
        fct[label], losses[label], eqds_rtos[label] = {}, {}, {}
        for n, hosts in CLIENTS.items():
            sweep = run_case(
                args,
                HERE / "scenario.toml",
                f"config{i}-clients{n}",
                overrides | {"workload.client_hosts": hosts},
                seeds=[1, 2],
            )
            done = load_flows(sweep).drop_nulls("fct_ps")
            us = [x / 1e6 for x in done["fct_ps"]]
            fct[label][n] = (pct(us, 0.5), pct(us, 0.99))
            losses[label][n] = (done["retransmits"].mean(), done["timeouts"].sum())
            summaries = load_summaries(sweep)
            if "eqds_rto_expiries" in summaries.columns:
                eqds_rtos[label][n] = int(summaries["eqds_rto_expiries"].sum())
            print(
                f"{label}, {n} clients: median {fct[label][n][0]:.0f} us, p99 {fct[label][n][1]:.0f} us"
            )

    args.results.mkdir(parents=True, exist_ok=True)
    plot(fct, args.results / "oversubscribed.png")
    tcp, ndp = fct["TCP (fair queueing)"], fct["TCP over EQDS, NDP mode"]

    def rts_with(window: int) -> float:
        """RTS mode's 8-client median FCT with the paper's `window`."""
        return fct[f"TCP over EQDS, RTS mode, {window}-packet window"][8][0]

    old_tcp = fct["TCP without SACK or small queues"]
    passed = write_result(
        args.results,
        experiment="oversubscribed",
        figure="EQDS NSDI'22, Figures 20 and 21",
        setup="2 ToRs x 8 hosts, 2 spines, 25 Gbps spine links (50 Gbps core), servers' "
        "leaf 100 Gbps NICs, clients' leaf 25 Gbps, 1 us links, 1500 B MTU, Cubic with "
        "SACK/RACK/TLP, TCP small queues and 1 ms min RTO; clients (hosts 8-15) bound round robin to "
        "servers 0-2 downloading 1 MB objects back to back, 1/2/4/8 clients, 50 ms, seeds "
        "1-2. TCP: fair-queueing switches (200 packets). EQDS NDP mode: 15-packet trimming "
        "queues, spraying; RTS mode: drop-tail with control prioritised",
        quantities=[
            Quantity(
                "1 client: p99 FCT, TCP / TCP over EQDS (NDP mode)",
                3.5,
                round(tcp[1][1] / ndp[1][1], 3),
                1.5,
            ),
            Quantity(
                "2 clients: p99 FCT, TCP / TCP over EQDS (NDP mode)",
                3.5,
                round(tcp[2][1] / ndp[2][1], 3),
                1.5,
            ),
            Quantity(
                "8 clients: median FCT, TCP / TCP over EQDS (NDP mode)",
                1.0,
                round(tcp[8][0] / ndp[8][0], 3),
                0.3,
            ),
            Quantity(
                "8 clients: median FCT, TCP over EQDS (RTS mode) / TCP",
                1.1,
                round(fct["TCP over EQDS, RTS mode"][8][0] / tcp[8][0], 3),
                0.15,
            ),
        ],
        also_measured={
            label: {
                str(n): {
                    "median_us": round(m),
                    "p99_us": round(p),
                    "resends_per_flow": round(losses[label][n][0], 1),
                    "timeouts": losses[label][n][1],
                }
                for n, (m, p) in by_n.items()
            }
            for label, by_n in fct.items()
        },
        plot="oversubscribed.png",
        data="oversubscribed.csv",
        notes=[
            (
                "Paper: at light load EQDS's median is slightly lower and its p99 2-5x lower "
                "(we take 3.5 +- 1.5), credited to packet-level load balancing; overloaded, "
                "trimming EQDS behaves like the baseline and RTS is slightly slower (we take 1.1 +- 0.15)."
            ),
            (
                "The testbed's third server and some of its clients had 10 Gbps NICs; "
                "the paper does not say which clients, so all run at 25 Gbps here. "
                "Modelling one guess ([host] links: server 2 and clients 9, 11, 13 and "
                "15 at 10 Gbps; seeds 1-2) moves away from the paper rather than "
                "towards it: TCP's p99 over NDP mode's is 0.95x at 1 client and 0.96x "
                "at 2, and at 8 clients TCP's median (1,432 us) is 1.42x NDP mode's and "
                "RTS mode's 0.62x TCP's (not investigated further; the result hangs "
                "on which NICs are slow, which the paper does not give)."
            ),
            (
                "Our baseline TCP is Linux's Cubic: it leaves slow start by HyStart, "
                "recovers as Linux does (SACK, RACK, tail-loss probes, Eifel) and never "
                "drops at its own NIC (TCP small queues). With one client nothing "
                "collides: HyStart ends slow start before the 100->25 Gbps step overflows "
                f"(each flow resends {losses['TCP (fair queueing)'][1][0]:.0f} packets, "
                f"{losses['TCP (fair queueing)'][1][1]} timeouts fire in all), and TCP "
                "finishes near line rate with no tail, so the 1-client p99 gain cannot "
                "appear. Classic slow start (before HyStart was modelled) lost about a "
                "fifth of the packets there, 134 per flow, and SACK resent them while the "
                "link stayed busy: the same FCT for every flow. Linux's "
                "coarse timers would not change that: a throwaway build whose tail-loss "
                "probe waited 2 ms longer (Linux adds two jiffies to it) gave the same FCT "
                "for every flow with one and two clients (seed 1), since no probe fires. "
                "Two clients collide on ECMP and EQDS's spraying shows its p99 gain, "
                "smaller than the paper's. EQDS's median at light load is "
                f"{ndp[1][0] - tcp[1][0]:.0f} us above TCP's ({ndp[1][0]:.0f} against "
                f"{tcp[1][0]:.0f} us): the tunnel's 44-byte headers and its first round "
                "trip. It was 374 us while a tunnelled TCP's packets in flight did not "
                "count as demand (4 packets of lookahead, not the window), and 406 us "
                "before the demand lookahead and warm restarts "
                "(eqds-proto): a tunnel asked only for what it had queued, so both the "
                "data tunnel at each new object and the client's tunnel of pure ACKs ran "
                "out of credit whenever their queue emptied and waited a round trip for an "
                "RTS's answer, about 4 RTS per download."
            ),
            (
                "Overloaded (8 clients), RTS mode runs faster than TCP "
                f"({fct['TCP over EQDS, RTS mode'][8][0] / tcp[8][0]:.2f}x its median; 0.89x "
                "before HyStart, whose TCP lost more in the core), where the paper finds "
                "it slightly slower (1.1x) because it 'requires a "
                "large amount of buffering'. Each tunnel's window is one (loaded) BDP at "
                "the slower of its two NICs: the servers' 100 Gbps "
                "tunnels to 25 Gbps clients hold a 25 Gbps BDP, so eight of them fit the "
                "two 200-packet core queues and nothing is lost (no retransmit timeout in "
                "either seed). With one window for all tunnels sized at the servers' rate, "
                "as before, they kept four times that in flight, overflowed the core "
                "(2,000-2,500 losses per 50 ms run, each costing a 1 ms retransmit "
                "timeout without trimming) and ran at 1.28x TCP. The paper's own windows "
                "(also measured) bracket its 1.1x the same way: 50 packets, its DPDK "
                f"build's, give {rts_with(50) / tcp[8][0]:.2f}x TCP with "
                f"{eqds_rtos[f'TCP over EQDS, RTS mode, {50}-packet window'][8]} EQDS "
                f"timeouts; 150, its kernel build's, {rts_with(150) / tcp[8][0]:.2f}x with "
                f"{eqds_rtos[f'TCP over EQDS, RTS mode, {150}-packet window'][8]}. The paper "
                "does not say which build ran here."
            ),
            (
                "With that larger window the verdict also moved with the RTO floor, "
                "which the paper does not give (we use 1 ms, of a usual 100 us to 1 ms): "
                "500 us gave 1.0x TCP, 250 us 0.89x; and with the core queue: at MTU 9000 "
                "(200 packets are then the paper's 2 MB) 0.96x. NDP mode needs no large "
                "window to be lossless, since it trims: at 8 clients each of its runs "
                "resends about 490,000 trimmed packets for 1.0x TCP's median, the "
                "repeated resending the paper reports as a reason to cut the pull rate "
                "under core congestion."
            ),
            (
                "Without SACK and small queues (htsim's TCP, also measured) the 1-client "
                f"p99 is {old_tcp[1][1] / ndp[1][1]:.1f}x EQDS's, inside the paper's range, "
                "but only because NewReno resends the ~130 packets slow start loses at the "
                "100->25 Gbps step one per round trip, which Linux's SACK does not."
            ),
        ],
    )
    print("pass" if passed else "FAIL")
    return 0 if passed else 1


def plot(fct: dict, path: Path) -> None:
    import matplotlib.pyplot as plt  # eqds_lab.plots has chosen the Agg backend

    fig, axes = plt.subplots(1, 2, figsize=(8, 3.4))
    rows = []
    for label, by_n in fct.items():
        ns = sorted(by_n)
        for ax, k, name in zip(axes, [0, 1], ["median", "p99"]):
            ax.plot(ns, [by_n[n][k] for n in ns], marker="o", label=label)
            ax.set_title(f"{name} FCT of 1 MB downloads", fontsize=9)
            ax.set_xlabel("clients (1 = core 50% busy, 8 = 400%)")
            ax.set_ylabel("us")
        rows += [(label, n, by_n[n][0], by_n[n][1]) for n in ns]
    axes[0].legend(fontsize=7)
    save(fig, path, ["config", "clients", "median_us", "p99_us"], rows)


if __name__ == "__main__":
    sys.exit(main())
