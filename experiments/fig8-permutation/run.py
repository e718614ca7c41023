#!/usr/bin/env python3
"""EQDS paper, Figure 8: per-flow throughput of a TCP permutation on a k=16 fat tree.

Runs the scenario for several seeds, plots per-flow throughput (as a fraction of the
10 Gbps line rate) sorted by rank, as the paper does, and writes result.json with the
paper's value, ours, the tolerance and the verdict.

Usage: python3 experiments/fig8-permutation/run.py [--seeds 3] [--quick]
"""

import argparse
import csv
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
LINE_RATE = 10e9
# Paper: "Flow collisions hurt TCP badly, yielding only 40% of the network capacity."
PAPER_TCP_MEAN = 0.40
TOLERANCE = 0.10  # absolute, in fraction of line rate


def simulator() -> Path:
    subprocess.run(
        ["cargo", "build", "--release", "-q", "-p", "eqds-sim"], cwd=ROOT, check=True
    )
    return ROOT / "target" / "release" / "eqds-sim"


def run(binary: Path, seed: int, overrides: list[str]) -> list[float]:
    out = HERE / "runs" / f"tcp-seed{seed}"
    cmd = [
        str(binary),
        "run",
        str(HERE / "scenario.toml"),
        "--seed",
        str(seed),
        "--out",
        str(out),
        "-q",
    ]
    for o in overrides:
        cmd += ["--set", o]
    subprocess.run(cmd, check=True)
    with open(out / "flows.csv", newline="") as f:
        return [
            float(row["mean_throughput_bps"]) / LINE_RATE for row in csv.DictReader(f)
        ]


def plot(per_seed: dict[int, list[float]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.6))
    for seed, fractions in sorted(per_seed.items()):
        ranked = sorted(fractions, reverse=True)
        ax.plot(
            range(len(ranked)),
            [100 * x for x in ranked],
            lw=1.2,
            label=f"TCP (seed {seed})",
        )
    ax.axhline(
        100 * PAPER_TCP_MEAN, color="grey", ls="--", lw=1, label="paper: TCP mean ~40%"
    )
    ax.set_xlabel("flow rank")
    ax.set_ylabel("throughput (% of line rate)")
    ax.set_ylim(0, 105)
    ax.set_title("Permutation, k=16 fat tree, 1024 hosts, 10 Gbps")
    ax.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    fig.savefig(path, dpi=130)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument(
        "--quick", action="store_true", help="k=8 and 30 ms, for a smoke test"
    )
    args = ap.parse_args()
    overrides = (
        ["topology.k=8", "stop.time=30ms", "stop.warmup=10ms"] if args.quick else []
    )
    binary = simulator()
    per_seed = {s: run(binary, s, overrides) for s in range(1, args.seeds + 1)}
    everything = [x for v in per_seed.values() for x in v]
    mean = sum(everything) / len(everything)
    ranked = sorted(everything)
    median = ranked[len(ranked) // 2]
    data = HERE / "fig8-data.csv"
    with open(data, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["protocol", "seed", "rank", "throughput_fraction"])
        for seed, fr in sorted(per_seed.items()):
            for rank, x in enumerate(sorted(fr, reverse=True)):
                w.writerow(["tcp", seed, rank, f"{x:.6f}"])
    plot(per_seed, HERE / "fig8.png")
    result = {
        "experiment": "fig8-permutation",
        "paper_figure": "EQDS NSDI'22, Figure 8",
        "setup": "k=16 fat tree, 1024 hosts, 10 Gbps, TCP NewReno, per-flow ECMP, "
        "9000 B MTU, 100-packet queues, throughput over 20-100 ms"
        + (" (QUICK: k=8, 30 ms)" if args.quick else ""),
        "seeds": sorted(per_seed),
        "quantities": [
            {
                "name": "TCP mean per-flow throughput (fraction of line rate)",
                "paper": PAPER_TCP_MEAN,
                "ours": round(mean, 4),
                "tolerance": TOLERANCE,
                "pass": abs(mean - PAPER_TCP_MEAN) <= TOLERANCE,
            }
        ],
        "also_measured": {
            "tcp_median": round(median, 4),
            "tcp_p10": round(ranked[len(ranked) // 10], 4),
            "tcp_p90": round(ranked[9 * len(ranked) // 10], 4),
            "tcp_flows_below_half_rate": sum(x < 0.5 for x in everything)
            / len(everything),
        },
        "plot": "fig8.png",
        "data": "fig8-data.csv",
        "pending": "MPTCP, NDP and TCP over EQDS join when those transports exist",
    }
    (HERE / "result.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result["quantities"], indent=2))
    return 0 if all(q["pass"] for q in result["quantities"]) else 1


if __name__ == "__main__":
    sys.exit(main())
