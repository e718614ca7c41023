#!/usr/bin/env python3
"""EQDS paper, Figure 8: per-flow throughput of a TCP permutation on a k=16 fat tree.

Runs the sweep (scenario.toml x seeds) through eqds_lab, plots per-flow throughput (as a
fraction of the 10 Gbps line rate) sorted by rank as the paper does, and writes
result.json with the paper's value, ours, the tolerance and the verdict.

Usage: python3 experiments/fig8-permutation/run.py [--quick] [--results DIR] [--ray ADDR]
"""

import argparse
import sys
from pathlib import Path

from eqds_lab import Quantity, Sweep, load_flows, run_sweep, write_result
from eqds_lab.plots import ranked

HERE = Path(__file__).resolve().parent
LINE_RATE = 10e9
# Paper: "Flow collisions hurt TCP badly, yielding only 40% of the network capacity."
PAPER_TCP_MEAN = 0.40
TOLERANCE = 0.10  # absolute, in fraction of line rate


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--quick", action="store_true", help="k=8 and 30 ms, for a smoke test"
    )
    ap.add_argument(
        "--results", type=Path, default=HERE, help="where result.json and plots go"
    )
    ap.add_argument(
        "--ray", metavar="ADDRESS", help="run on Ray ('local' or a cluster address)"
    )
    args = ap.parse_args()

    sweep = Sweep.load(HERE / "sweep.toml")
    if args.quick:
        sweep.fixed |= {"topology.k": 8, "stop.time": "30ms", "stop.warmup": "10ms"}
        sweep.out = args.results / "runs-quick"
    outcomes = run_sweep(sweep, ray_address=args.ray)
    if any(o.status == "failed" for o in outcomes):
        return 1
    flows = load_flows(sweep).with_columns(fraction=flows_fraction())
    per_seed = {
        f"TCP (seed {seed})": group["fraction"].to_list()
        for (seed,), group in sorted(flows.group_by("seed"))
    }
    everything = sorted(flows["fraction"].to_list())
    mean = sum(everything) / len(everything)
    args.results.mkdir(parents=True, exist_ok=True)
    ranked(
        per_seed,
        args.results / "fig8.png",
        ylabel="throughput (fraction of line rate)",
        title="Permutation, k=16 fat tree, 1024 hosts, 10 Gbps",
        reference={"paper: TCP mean ~40%": PAPER_TCP_MEAN},
    )
    passed = write_result(
        args.results,
        experiment="fig8-permutation",
        figure="EQDS NSDI'22, Figure 8",
        setup="k=16 fat tree, 1024 hosts, 10 Gbps, TCP NewReno, per-flow ECMP, 9000 B MTU, "
        "100-packet queues, throughput over 20-100 ms, seeds 1-3"
        + (" (QUICK: k=8, 30 ms)" if args.quick else ""),
        quantities=[
            Quantity(
                "TCP mean per-flow throughput (fraction of line rate)",
                PAPER_TCP_MEAN,
                round(mean, 4),
                TOLERANCE,
            ),
        ],
        also_measured={
            "tcp_median": round(everything[len(everything) // 2], 4),
            "tcp_p10": round(everything[len(everything) // 10], 4),
            "tcp_p90": round(everything[9 * len(everything) // 10], 4),
            "tcp_flows_below_half_rate": sum(x < 0.5 for x in everything)
            / len(everything),
        },
        plot="fig8.png",
        data="fig8.csv",
        pending="MPTCP, NDP and TCP over EQDS join Figure 8 when those transports land",
    )
    print(
        f"TCP mean {mean:.4f} of line rate (paper {PAPER_TCP_MEAN}): {'pass' if passed else 'FAIL'}"
    )
    return 0 if passed else 1


def flows_fraction():
    import polars as pl

    return pl.col("mean_throughput_bps") / LINE_RATE


if __name__ == "__main__":
    sys.exit(main())
