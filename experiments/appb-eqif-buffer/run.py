#!/usr/bin/env python3
"""EQDS paper, Appendix B: TCP over EQDS against the size of the sending EQIF's buffer.

Runs scenario.toml (T1 model, 1500-byte packets, one long TCP flow over EQDS in NDP
mode, a drop-tail EQIF marking ECN-capable packets from 16 packets on) for NewReno,
Cubic, DCTCP and BBR with per-destination buffers of 4 to 100 packets; plots
throughput and round trip against the buffer and writes result.json (paper: from one
BDP, 30 packets in its testbed, every TCP variant reaches line rate, DCTCP does with
K = 16 below that, BBR with half that, and larger buffers only add sender-side
queueing for Cubic).

Usage: python3 experiments/appb-eqif-buffer/run.py [--quick] [--results DIR] [--ray ADDR]
"""

import sys
from pathlib import Path

from eqds_lab import Quantity, load_flows, write_result
from eqds_lab.experiment import parse_args, run_case
from eqds_lab.plots import save

HERE = Path(__file__).resolve().parent
PROTOCOLS = ["newreno", "cubic", "dctcp", "bbr"]
#: Per-destination EQIF buffers, in packets.
BUFFERS = [4, 8, 16, 30, 60, 100]
#: One BDP here, the idle round trip at 25 Gbps, in packets (the EQDS window, sized
#: for the round trip under load, is 29).
BDP = 20
#: Payload per 1500-byte packet under 64 bytes of TCP and 44 of EQDS headers.
PAYLOAD_SHARE = 1392 / 1500
LINK_BPS = 25e9
QUICK = {"stop.time": "12ms", "stop.warmup": "4ms"}


def main() -> int:
    args = parse_args(__doc__, HERE, quick="12 ms runs")

    #: Per protocol and buffer: (throughput as a fraction of the payload line rate,
    #: mean round trip the flow's TCP saw in us).
    runs: dict[str, dict[int, tuple[float, float]]] = {p: {} for p in PROTOCOLS}
    for protocol in PROTOCOLS:
        for packets in BUFFERS:
            sweep = run_case(
                args,
                HERE / "scenario.toml",
                f"{protocol}-{packets}",
                {"transport.protocol": protocol, "eqds.send_queue": packets}
                | (QUICK if args.quick else {}),
            )
            flow = load_flows(sweep).row(0, named=True)
            fraction = flow["mean_throughput_bps"] / (LINK_BPS * PAYLOAD_SHARE)
            runs[protocol][packets] = (
                round(fraction, 4),
                round(flow["rtt_mean_ps"] / 1e6, 1),
            )
            print(f"{protocol}, {packets}-packet EQIF: {fraction:.3f} of the link, "
                  f"RTT {flow['rtt_mean_ps'] / 1e6:.1f} us")  # fmt: skip

    args.results.mkdir(parents=True, exist_ok=True)
    plot(runs, args.results / "eqif-buffer.png")
    at = {p: {b: f for b, (f, _) in by_b.items()} for p, by_b in runs.items()}
    rtt = {p: {b: r for b, (_, r) in by_b.items()} for p, by_b in runs.items()}
    passed = write_result(
        args.results,
        experiment="appb-eqif-buffer",
        figure="EQDS NSDI'22, Appendix B (buffer settings for TCP EQIFs)",
        setup="T1 model of fig9 with 1500 B packets (4 ToRs x 3 hosts at 25 Gbps, 2 "
        "spines, 1 us links; one BDP is about 20 packets, the EQDS window 29), NDP mode "
        "(15-packet trimming queues, spraying); one long TCP flow from host 0 to host 3; "
        "drop-tail EQIF without backpressure, ECN marks from 16 packets (DCTCP's K); "
        "Cubic with HyStart, SACK/RACK/TLP, Eifel; BBR v1; 30 ms, the first 10 ms not "
        "counted",
        quantities=[
            Quantity(
                "slowest of NewReno, Cubic, DCTCP, BBR at a 30-packet EQIF (fraction of line rate)",
                1.0,
                min(at[p][30] for p in PROTOCOLS),
                0.05,
            ),
            Quantity(
                "DCTCP (K = 16) at a 16-packet EQIF (fraction of line rate)",
                1.0,
                at["dctcp"][16],
                0.05,
            ),
            Quantity(
                "BBR at an 8-packet EQIF, half DCTCP's K (fraction of line rate)",
                1.0,
                at["bbr"][8],
                0.05,
            ),
            Quantity(
                "Cubic throughput at a 100-packet EQIF / at a 30-packet EQIF",
                1.0,
                round(at["cubic"][100] / at["cubic"][30], 4),
                0.02,
            ),
        ],
        also_measured={
            "throughput_fraction": {
                p: {str(b): f for b, f in v.items()} for p, v in at.items()
            },
            "mean_rtt_us": {
                p: {str(b): r for b, r in v.items()} for p, v in rtt.items()
            },
        },
        plot="eqif-buffer.png",
        data="eqif-buffer.csv",
        notes=[
            (
                "Paper: 'When the send buffer is at least one BDP (30 packets in our "
                "testbed), all TCP variants achieve line-rate; below that the throughput "
                "depends on the congestion controller. DCTCP maintains full utilization "
                "with K=16'; and larger buffers 'simply result in more EQDS sender-side "
                "buffering for TCP Cubic, and do not affect performance at all'; BBR needs "
                "'half that' of DCTCP's K = 16 (we read 8 packets)."
            ),
            (
                f"Our BDP is about {BDP} packets, a little under the paper's 30, so the "
                "30-packet buffer is a little over one BDP here. Cubic's round trip grows "
                f"from {rtt['cubic'][30]} us at 30 packets to {rtt['cubic'][100]} us at "
                "100, its throughput does not: the extra packets only wait in the EQIF. "
                "Below one BDP, NewReno (halving at each drop) needs the most buffer and "
                "Cubic (cutting by 30%) less. DCTCP behaves as NewReno in buffers below "
                "its K (the EQIF drops before it marks) and keeps the link full from K "
                "on, where marks rather than drops pace it. BBR paces at its bandwidth "
                f"estimate and ignores drops: {at['bbr'][8]} of the link at 8 packets, "
                f"{at['bbr'][4]} at 4."
            ),
            (
                "This needs a tunnel that counts TCP's packets in flight as demand to "
                "come (eqds-sim's default demand_lookahead with tunnelled transports, the "
                "window). With 4 packets of lookahead a tunnel keeps little more in the "
                "network than waits in its EQIF, and at a 30-packet buffer DCTCP ran at "
                "84% of the link and NewReno at 89%."
            ),
        ],
    )
    print("pass" if passed else "FAIL")
    return 0 if passed else 1


def plot(runs: dict[str, dict[int, tuple[float, float]]], path: Path) -> None:
    import matplotlib.pyplot as plt  # eqds_lab.plots has chosen the Agg backend

    fig, axes = plt.subplots(1, 2, figsize=(8, 3.4))
    rows = []
    for protocol, by_b in runs.items():
        bs = sorted(by_b)
        for ax, k, name in zip(
            axes, [0, 1], ["throughput (fraction of line rate)", "mean RTT (us)"]
        ):
            ax.plot(bs, [by_b[b][k] for b in bs], marker="o", label=protocol)
            ax.set_xscale("log")
            ax.set_xlabel("EQIF buffer per destination (packets)")
            ax.set_ylabel(name)
            ax.axvline(BDP, color="grey", linewidth=0.5)
        rows += [(protocol, b, by_b[b][0], by_b[b][1]) for b in bs]
    axes[0].legend(fontsize=8)
    save(
        fig,
        path,
        ["protocol", "buffer_packets", "throughput_fraction", "mean_rtt_us"],
        rows,
    )


if __name__ == "__main__":
    sys.exit(main())
