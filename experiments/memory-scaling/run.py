#!/usr/bin/env python3
"""EQDS paper, §8.5 "Memory": what a sender keeps in flight as its receivers multiply.

Runs scenario.toml (host 0 of a k=16 fat tree at 100 Gbps serving 1 MB objects back to
back over native EQDS) for 1 to 960 receivers, with EQDS's default deferred ACKs and
with an ACK per packet; plots the host's peak bytes in flight against the receiver
count and writes result.json (paper: in flight levels off at one BDP plus the NIC
ring whatever the receiver count, and reorder queues hold under 10 packets in
practice). Also runs the bundled native permutation (k=8) for the reorder queues'
depth.

Usage: python3 experiments/memory-scaling/run.py [--quick] [--results DIR] [--ray ADDR]
"""

import math
import sys
from pathlib import Path

from eqds_lab import Quantity, load_summaries, write_result
from eqds_lab.experiment import parse_args, run_case
from eqds_lab.plots import save

HERE = Path(__file__).resolve().parent
PERMUTATION = HERE.parents[1] / "scenarios" / "eqds-permutation-100g.toml"
RECEIVERS = [1, 4, 16, 64, 256, 960]
QUICK_RECEIVERS = [1, 16, 256]
MTU = 4150
#: One idle round trip of the six-hop paths (a 4150-byte packet out, a 64-byte control
#: packet back, 1 us per link at 100 Gbps) in full packets, plus eqds-sim's NIC
#: queue limit (`[eqds] nic_limit`, 2): the paper's "one BDP plus the NIC ring".
RTT_S = 6 * (MTU * 8 / 100e9 + 1e-6) + 6 * (64 * 8 / 100e9 + 1e-6)
BDP_PLUS_RING = math.ceil(RTT_S * 100e9 / 8 / MTU) + 2
CONFIGS = {
    "deferred ACKs (default: 4 packets or 10 us)": {},
    "an ACK per packet": {"eqds.ack_coalesce": 1},
}


def clients(n: int) -> str:
    """`n` receivers spread over hosts 64-1023, the other pods of the k=16 tree."""
    return str([64 + i * 960 // n for i in range(n)])


def main() -> int:
    args = parse_args(__doc__, HERE, quick="1, 16 and 256 receivers")
    receivers = QUICK_RECEIVERS if args.quick else RECEIVERS

    #: Per configuration and receiver count: the host's peak in flight, in packets.
    peak: dict[str, dict[int, float]] = {label: {} for label in CONFIGS}
    for i, (label, overrides) in enumerate(CONFIGS.items()):
        for n in receivers:
            fixed = {"workload.client_hosts": clients(n)} | overrides
            sweep = run_case(args, HERE / "scenario.toml", f"config{i}-{n}", fixed)
            bytes_ = load_summaries(sweep)["eqds_peak_in_flight_bytes_per_host"][0]
            peak[label][n] = round(bytes_ / MTU, 1)
            print(f"{label}, {n} receivers: peak {peak[label][n]} packets in flight")

    permutation = run_case(args, PERMUTATION, "permutation-k8", {"topology.k": 8})
    reorder = load_summaries(permutation).row(0, named=True)

    args.results.mkdir(parents=True, exist_ok=True)
    plot(peak, args.results / "memory-scaling.png")
    default = peak["deferred ACKs (default: 4 packets or 10 us)"]
    #: Receiver counts where deferred ACKs raise the peak above one BDP plus the ring.
    risen = [n for n, v in default.items() if v > BDP_PLUS_RING + 5]
    most = receivers[-1]
    passed = write_result(
        args.results,
        experiment="memory-scaling",
        figure="EQDS NSDI'22, §8.5 (memory: in-flight packets against receivers)",
        setup="k=16 fat tree, 100 Gbps, 1 us links, MTU 4150 B, 35-packet trimming "
        "queues, spraying, native EQDS with a 50-packet window; host 0 serves 1 MB "
        f"objects back to back to {receivers[0]}-{most} receivers in other pods, 2 ms; "
        "peak bytes in flight at host 0 (sent, not yet ACKed or NACKed). Reorder "
        "queues: the native permutation at k=8 (128 hosts), 1 ms",
        quantities=[
            Quantity(
                f"peak in flight, {most} receivers / 1 receiver",
                1.0,
                round(default[most] / default[1], 3),
                0.25,
            ),
            Quantity(
                f"peak in flight at {most} receivers / (one BDP + NIC ring)",
                1.0,
                round(default[most] / BDP_PLUS_RING, 3),
                0.25,
            ),
        ],
        also_measured={
            "bdp_plus_ring_packets": BDP_PLUS_RING,
            "peak_in_flight_packets": {
                label: {str(n): v for n, v in by_n.items()}
                for label, by_n in peak.items()
            },
            "permutation_k8_peak_reorder_held_packets": reorder[
                "eqds_peak_reorder_held"
            ],
            "permutation_k8_holes_skipped": reorder["eqds_holes_skipped"],
        },
        plot="memory-scaling.png",
        data="memory-scaling.csv",
        notes=[
            (
                "Paper (§8.5): the number of in-flight packets 'levels off' at about 400, "
                "the NIC ring plus one BDP, however many receivers an iperf sender "
                "serves; 1.5 GB would hold 10,000 destinations; reorder queues stay "
                "under 10 packets in practice. Its 400 belongs to its kernel build and "
                f"NIC; here one BDP plus eqds-sim's 2-packet NIC queue is {BDP_PLUS_RING} "
                "packets, and we compare the shape: none of the 50-packet windows of "
                "hundreds of tunnels is ever in flight at once, because receivers pull "
                "and the sender's link paces what it sends."
            ),
            (
                "With deferred ACKs the peak rises at "
                f"{', '.join(str(n) for n in risen) or 'no'} receivers (up to "
                f"{max(default.values())} packets): there each receiver's slice "
                "of the link brings 4 packets more slowly than the 10 us ACK timer "
                "runs, so up to 10 us of sending (30 packets at 100 Gbps) can wait for "
                f"its ACK, {BDP_PLUS_RING + 30} packets at most; elsewhere the peak is "
                "one BDP plus the NIC queue. With an ACK per packet it is there at "
                "every receiver count, so the rise is ACK deferral, not credit, and "
                "stays far below what 16 tunnels' windows would hold (800 packets). "
                "Since receivers send spare PULLs (the default for native EQDS since "
                "issue 30) the rise reaches 64 receivers too (45 packets with the "
                "constant window there), still within that bound."
            ),
            (
                "Reorder queues in the k=8 native permutation: the deepest any of the "
                f"128 tunnels got in 1 ms was {reorder['eqds_peak_reorder_held']} "
                f"packets held behind a hole ({reorder['eqds_holes_skipped']} holes "
                "skipped), the maximum over all tunnels and the whole run, against "
                "the paper's 'under 10 in practice'."
            ),
        ],
    )
    print("pass" if passed else "FAIL")
    return 0 if passed else 1


def plot(peak: dict[str, dict[int, float]], path: Path) -> None:
    import matplotlib.pyplot as plt  # eqds_lab.plots has chosen the Agg backend

    fig, ax = plt.subplots(figsize=(6, 3.6))
    rows = []
    for label, by_n in peak.items():
        ns = sorted(by_n)
        ax.plot(ns, [by_n[n] for n in ns], marker="o", label=label)
        rows += [(label, n, by_n[n]) for n in ns]
    ax.axhline(BDP_PLUS_RING, color="grey", linewidth=0.8, label="one BDP + NIC queue")
    ax.axhline(50, color="grey", linestyle=":", linewidth=0.8, label="one window")
    ax.set_xscale("log")
    ax.set_ylim(bottom=0)
    ax.set_xlabel("receivers served by one host")
    ax.set_ylabel("peak packets in flight")
    ax.legend(fontsize=8)
    save(fig, path, ["acks", "receivers", "peak_in_flight_packets"], rows)


if __name__ == "__main__":
    sys.exit(main())
