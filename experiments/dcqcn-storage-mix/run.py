#!/usr/bin/env python3
"""DCQCN paper (SIGCOMM'15) §6 in spirit: user traffic beside a disk-rebuild incast,
PFC alone against DCQCN (spec E11; the paper's production traces are not public).

Every host reads 1 MB from random other hosts back to back ("user" traffic) while d
hosts stream into host 19 (a rebuild of degree d = 2, 4, 8, 16). With PFC alone the
rebuild's PAUSE frames cascade through the fabric and stall user reads that never
cross the rebuild's bottleneck; DCQCN slows the rebuild senders instead. Reported per
configuration and degree: user reads completed after warm-up (the user traffic
carried), the median and 10th percentile of their throughput, and PAUSE frames sent
per switch. The paper's headline: up to 16x more user traffic with DCQCN.

Usage: python3 experiments/dcqcn-storage-mix/run.py [--quick] [--results DIR] [--ray ADDR]
"""

import json
import statistics
import sys
from pathlib import Path

import polars as pl
from eqds_lab import Quantity, print_quantities, write_result
from eqds_lab.experiment import parse_args, run_case

HERE = Path(__file__).resolve().parent
USER_BYTES = 1_000_000
WARMUP_PS = 20e9
#: Rebuild senders of degree d: hosts outside T4 first (hosts 0-14), then T4's.
POOL = list(range(15)) + [15, 16, 17, 18]
CONFIGS = {
    "PFC only": {"transport.roce.dcqcn": "false"},
    "PFC + DCQCN": {"transport.roce.dcqcn": "true"},
}


def main() -> int:
    args = parse_args(__doc__, HERE, quick="degrees 2 and 8, one seed")
    degrees = [2, 8] if args.quick else [2, 4, 8, 16]
    seeds = [1] if args.quick else [1, 2]
    result: dict[str, dict[int, dict]] = {}
    for i, (label, fixed) in enumerate(CONFIGS.items()):
        result[label] = {}
        for d in degrees:
            senders = "[" + ", ".join(str(h) for h in POOL[:d]) + "]"
            sweep = run_case(
                args,
                HERE / "scenario.toml",
                f"config{i}-degree{d}",
                fixed | {"workload.1.sender_hosts": senders},
                seeds=seeds,
            )
            rates, completed, pauses = [], 0, []
            for run in sweep.runs():
                flows = pl.read_csv(run.out / "flows.csv").filter(
                    (pl.col("workload") == 0)
                    & pl.col("fct_ps").is_not_null()
                    & (pl.col("start_ps") >= WARMUP_PS)
                )
                completed += flows.height
                rates += [USER_BYTES * 8 / (f / 1e12) / 1e9 for f in flows["fct_ps"]]
                summary = json.loads((run.out / "summary.json").read_text())
                pauses += [s["pause_sent"] for s in summary["pfc"]["switches"]]
            rates.sort()
            result[label][d] = {
                "user_reads_completed": completed,
                "user_median_gbps": round(statistics.median(rates), 3),
                "user_p10_gbps": round(rates[len(rates) // 10], 3),
                "pause_sent_per_switch_mean": round(statistics.mean(pauses), 1),
                "pause_sent_per_switch_max": max(pauses),
            }

    args.results.mkdir(parents=True, exist_ok=True)
    plot(result, degrees, args.results / "storage-mix.png")
    pfc, dcqcn = result["PFC only"], result["PFC + DCQCN"]
    gain = {
        d: dcqcn[d]["user_reads_completed"] / max(1, pfc[d]["user_reads_completed"])
        for d in degrees
    }
    p10_gain = {
        d: dcqcn[d]["user_p10_gbps"] / max(1e-9, pfc[d]["user_p10_gbps"])
        for d in degrees
    }
    quantities = [
        Quantity(
            "DCQCN carries more user traffic than PFC alone at every rebuild degree (1 = yes)",
            1,
            int(all(g > 1 for g in gain.values())),
            0,
        ),
        Quantity(
            "most user traffic DCQCN carries over PFC alone (x, over degrees)",
            16,
            round(max(gain.values()), 2),
            8,
        ),
    ]
    passed = write_result(
        args.results,
        figure="DCQCN SIGCOMM'15, §6 storage benchmark (spec E11, in spirit: synthetic mix)",
        setup=(
            "clos3 (4 ToRs, 4 leaves, 2 spines), 40 Gbps, 1 us links, 5 hosts per ToR; every host "
            "reads 1 MB from random hosts back to back (user), d hosts stream into host 19 "
            f"(rebuild, d in {degrees}); 60 ms, user reads started after 20 ms counted; data "
            "lossless, ACK/CNP priority 0; 12 MB switches, dynamic PFC (beta 8); RED "
            f"5 KB/200 KB/1 % (recalled); DCQCN paper profile; seeds {seeds}"
            + (" (QUICK)" if args.quick else "")
        ),
        quantities=quantities,
        also_measured={
            "per_degree": {
                label: {str(d): v for d, v in by_d.items()}
                for label, by_d in result.items()
            },
            "user_traffic_gain": {str(d): round(g, 3) for d, g in gain.items()},
            "user_p10_gain": {str(d): round(g, 3) for d, g in p10_gain.items()},
        },
        notes=(
            "The paper's 16x comes from production storage traces and a benchmark its "
            "missing §6 describes; it is a trend target here, not a number our synthetic "
            "mix can be held to. What must hold is the direction: with DCQCN the "
            "rebuild stops pausing the fabric, and user reads that do not share its "
            "bottleneck stop waiting behind PAUSE. Ours (2026-11-27): it does from d = 8 "
            "on (1.9x at 8, 12.6x at 16, where PFC alone pauses every switch thousands "
            "of times and user reads crawl), but at d = 2 and 4 DCQCN carries less "
            "(0.67x, 0.71x): PFC barely fires there, while every 1 MB read starts at "
            "line rate, is cut towards the 100 Mb/s floor by the queue it meets, and "
            "climbs back by the paper's 40 Mb/s per 55 us (its p10 read is 2.1 Gb/s "
            "against 3.7-4.1 with PFC alone). The first quantity fails on that: a cost "
            "of the recalled parameters (RAI, B = 10 MB keeping hyper increase off) on "
            "short transfers, not of the mechanism; the profiles mlx-fw and hpcc-ns3 "
            "recover faster and are the next thing to run here."
        ),
        plot="storage-mix.png",
        data="storage-mix.csv",
    )
    print_quantities(quantities)
    return 0 if passed else 1


def plot(result: dict[str, dict[int, dict]], degrees: list[int], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(10, 3.2))
    rows = []
    for label, by_d in result.items():
        axes[0].plot(
            degrees,
            [by_d[d]["user_reads_completed"] for d in degrees],
            marker="o",
            label=label,
        )
        axes[1].plot(
            degrees,
            [by_d[d]["user_median_gbps"] for d in degrees],
            marker="o",
            label=f"{label}, median",
        )
        axes[1].plot(
            degrees,
            [by_d[d]["user_p10_gbps"] for d in degrees],
            marker="x",
            ls="--",
            label=f"{label}, p10",
        )
        axes[2].plot(
            degrees,
            [by_d[d]["pause_sent_per_switch_mean"] for d in degrees],
            marker="o",
            label=label,
        )
        rows += [(label, d, *by_d[d].values()) for d in degrees]
    axes[0].set_ylabel("user reads completed")
    axes[1].set_ylabel("user read throughput (Gb/s)")
    axes[2].set_ylabel("PAUSE frames per switch")
    for ax in axes:
        ax.set_xlabel("rebuild degree d")
        ax.set_xscale("log", base=2)
        ax.grid(lw=0.3)
        ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    with open(path.with_suffix(".csv"), "w") as f:
        f.write(
            "config,degree,user_reads_completed,user_median_gbps,user_p10_gbps,pause_per_switch_mean,pause_per_switch_max\n"
        )
        f.writelines(",".join(str(x) for x in r) + "\n" for r in rows)


if __name__ == "__main__":
    sys.exit(main())
