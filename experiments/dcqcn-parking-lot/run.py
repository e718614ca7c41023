#!/usr/bin/env python3
"""DCQCN paper (SIGCOMM'15), Figures 3 and 8: PFC's parking-lot unfairness, and DCQCN.

H1-H4 WRITE 4 MB messages to R back to back on the paper's 3-tier testbed
(scenario.toml): H4 shares R's ToR, H1-H3 come in through its two uplinks. With PFC
alone (Figure 3) the ToR pauses each of its ingress ports alike, so H4, alone on its
port, gets more than the senders that share an uplink: the paper's H4 minimum is
above H1-H3's maximum. With DCQCN (Figure 8) the four share the link equally.
Per-transfer throughput is size / completion time; min, median and max per sender
over every transfer of every seed.

Usage: python3 experiments/dcqcn-parking-lot/run.py [--quick] [--results DIR] [--ray ADDR]
"""

import json
import statistics
import sys
from pathlib import Path

import polars as pl
from eqds_lab import Quantity, print_quantities, write_result
from eqds_lab.experiment import jain, parse_args, run_case

HERE = Path(__file__).resolve().parent
SIZE = 4_000_000
SENDERS = {0: "H1 (T1)", 5: "H2 (T2)", 10: "H3 (T3)", 15: "H4 (T4, R's ToR)"}
CONFIGS = {
    "PFC only (Figure 3)": {"transport.roce.dcqcn": "false"},
    "PFC + DCQCN (Figure 8)": {"transport.roce.dcqcn": "true"},
    # Sensitivity, not the paper's setting: the static threshold (24 KB per ingress
    # queue at this size instead of megabytes).
    "PFC only, static threshold": {
        "transport.roce.dcqcn": "false",
        "pfc.threshold": "static",
    },
}


def main() -> int:
    args = parse_args(__doc__, HERE, quick="one seed, 40 ms")
    seeds = [1] if args.quick else [1, 2, 3]
    stop = "40ms" if args.quick else "150ms"
    stats: dict[str, dict[int, list[float]]] = {}
    pauses: dict[str, int] = {}
    for i, (label, fixed) in enumerate(CONFIGS.items()):
        sweep = run_case(
            args,
            HERE / "scenario.toml",
            f"config{i}",
            fixed | {"stop.time": stop},
            seeds=seeds,
        )
        per_sender: dict[int, list[float]] = {h: [] for h in SENDERS}
        pauses[label] = 0
        for run in sweep.runs():
            flows = pl.read_csv(run.out / "flows.csv").filter(
                pl.col("fct_ps").is_not_null()
            )
            for src, fct in zip(flows["src"], flows["fct_ps"]):
                per_sender[src].append(SIZE * 8 / (fct / 1e12) / 1e9)
            summary = json.loads((run.out / "summary.json").read_text())
            pauses[label] += summary["pfc"]["pause_sent"]
        stats[label] = per_sender

    args.results.mkdir(parents=True, exist_ok=True)
    plot(stats, args.results / "parking-lot.png")

    pfc = stats["PFC only (Figure 3)"]
    dcqcn = stats["PFC + DCQCN (Figure 8)"]
    static = stats["PFC only, static threshold"]
    h4_min = min(pfc[15])
    others_max = max(max(pfc[h]) for h in (0, 5, 10))
    h4_median = statistics.median(pfc[15])
    others_median = statistics.mean(statistics.median(pfc[h]) for h in (0, 5, 10))
    medians = [statistics.median(dcqcn[h]) for h in SENDERS]
    spread = [max(dcqcn[h]) - min(dcqcn[h]) for h in SENDERS]
    quantities = [
        Quantity(
            "PFC only: H4's slowest transfer above H1-H3's fastest (1 = yes)",
            1,
            int(h4_min > others_max),
            0,
        ),
        Quantity(
            "PFC + DCQCN: Jain index of the four senders' medians",
            1,
            round(jain(medians), 4),
            0.05,
        ),
    ]
    passed = write_result(
        args.results,
        figure="DCQCN SIGCOMM'15, Figures 3 and 8 (parking lot, PFC only and with DCQCN)",
        setup=(
            "clos3 (4 ToRs, 4 leaves, 2 spines), 40 Gbps, 1 us links, 5 hosts per ToR; "
            "H1-H3 under T1-T3 and H4 under T4 WRITE 4 MB messages back to back to R under T4; "
            "data lossless (priority 1), ACK/CNP priority 0; 12 MB switches, dynamic PFC "
            "(beta 8), computed headroom; RED 5 KB/200 KB/1 % (recalled); DCQCN paper profile; "
            f"RTO 67 ms; {stop} per run, seeds {seeds}"
            + (" (QUICK)" if args.quick else "")
        ),
        quantities=quantities,
        also_measured={
            label: {
                SENDERS[h]: {
                    "transfers": len(v),
                    "min_gbps": round(min(v), 3),
                    "median_gbps": round(statistics.median(v), 3),
                    "max_gbps": round(max(v), 3),
                }
                for h, v in per_sender.items()
            }
            for label, per_sender in stats.items()
        }
        | {
            "pause_frames_sent": pauses,
            "pfc_only_h4_median_over_h1_h3_median": round(h4_median / others_median, 3),
            "static_threshold_h4_median_over_h1_h3_median": round(
                statistics.median(static[15])
                / statistics.mean(statistics.median(static[h]) for h in (0, 5, 10)),
                3,
            ),
            "static_threshold_h4_min_minus_h1_h3_max_gbps": round(
                min(static[15]) - max(max(static[h]) for h in (0, 5, 10)), 3
            ),
            "dcqcn_max_minus_min_gbps": [round(s, 3) for s in spread],
        },
        notes=NOTES,
        plot="parking-lot.png",
        data="parking-lot.csv",
    )
    print_quantities(quantities)
    return 0 if passed else 1


NOTES = (
    "The paper's H4 figure (up to 20 Gbps; its minimum above H1-H3's maximum) comes "
    "from per-ingress-port pausing at T4: each of its three active ingress ports is "
    "paused alike, so H4, alone on its port, gets a third of R's link or half of it. "
    "The paper gives per-sender min/median/max bars but not the threshold settings of "
    "its switches. Expected from that mechanism: H4's median over H1-H3's is 13.3/8.9 "
    "= 1.5 when both uplinks carry traffic, 20/6.7 = 3 when ECMP puts H1-H3 on one. "
    "Ours (2026-11-27): H4 is favoured, but far less: median 10.6 against 9.6 Gb/s, "
    "its slowest transfer 9.1 against 17 for the fastest of H1-H3. T4 pauses all "
    "three ingress ports (ports.csv: hundreds to thousands of PAUSE frames each), "
    "yet the counters it pauses on differ (H4's peaked at 4.2 MB, the uplinks' at "
    "5.5 MB under the dynamic threshold), so the ports are not paused alike: with "
    "12 MB buffers and beta 8 every ingress may hold megabytes, the shares follow the "
    "backlog each ingress manages to park in T4, and the leaves' and spines' own "
    "buffers feed the uplinks in bursts. The third configuration tests that: with "
    "the static threshold (24 KB per ingress queue) the unfairness of the paper "
    "appears (static_threshold_* in also_measured: H4's median about twice H1-H3's, "
    "its slowest transfer close to their fastest); beta = 1 or a 2 MB buffer do the "
    "same (by hand, 100 ms, seed 1: H4 median 13.2 and 12.8 Gb/s against 7.3-8.9). "
    "So the figure depends on thresholds the paper does not give for its testbed "
    "(it gives beta = 8 only in the ECN-bound analysis, which the spec applies to "
    "every simulated experiment). First of the two sessions the timebox allows. "
    "With DCQCN the "
    "four share evenly (Jain 0.97 over the medians) but transfers vary widely "
    "(2-30 Gb/s): each new queue pair starts at line rate, the queue it builds cuts "
    "every flow towards the 100 Mb/s floor, and the paper's additive increase (40 "
    "Mb/s per 55 us) climbs back at 0.7 Gb/s per ms, so R's link carries about half "
    "its capacity in 4 MB transfers."
)


def plot(stats: dict[str, dict[int, list[float]]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(11, 3.4), sharey=True)
    rows = []
    for ax, (label, per_sender) in zip(axes, stats.items()):
        for x, (h, v) in enumerate(per_sender.items()):
            lo, mid, hi = min(v), statistics.median(v), max(v)
            ax.errorbar([x], [mid], yerr=[[mid - lo], [hi - mid]], fmt="o", capsize=4)
            rows.append((label, SENDERS[h], len(v), lo, mid, hi))
        ax.set_xticks(
            range(len(per_sender)), [SENDERS[h].split()[0] for h in per_sender]
        )
        ax.set_title(label, fontsize=9)
        ax.grid(axis="y", lw=0.3)
    axes[0].set_ylabel("per-transfer throughput (Gb/s)\nmin, median, max")
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    with open(path.with_suffix(".csv"), "w") as f:
        f.write("config,sender,transfers,min_gbps,median_gbps,max_gbps\n")
        f.writelines(
            f"{c},{s},{n},{a:.4f},{b:.4f},{d:.4f}\n" for c, s, n, a, b, d in rows
        )


if __name__ == "__main__":
    sys.exit(main())
