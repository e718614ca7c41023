#!/usr/bin/env python3
"""Blitz poster (SIGCOMM'18), Figure 1 and its text (spec B1-B3): FCT of 256 KB RDMA
incasts against incast degree, with continuous background flows, DCQCN against
Blitz's DASR, in simulation.

scenario.toml states the fabric and the workload: a 2-tier leaf-spine (8 x 10 hosts,
4 spines, 40 Gbps, PFC, RED/ECN on every switch port), an endless background flow
into the aggregator (host 0) and three endless flows into its leaf from others, and
incasts of d = 2..64 senders of 256 KB each to the aggregator, in rounds with 0-100
us of start jitter per sender. This script writes each degree's rounds into the
scenario (workload.2.flows) and runs every configuration of CONFIGS on them.

Reported, per configuration and degree: median and p99 FCT of the incast flows (B1),
the FCT distribution at degree 16 (B2), the background flows' goodput (B3), and the
ECN marks switches made, per port tier (the poster's 4x claim, B4, needs IOFD and no
marking at the last hop: reported as measured). The poster's testbed emulated DASR by
staggering messages at the application layer; here DASR is the rate rule itself
(docs/blitz.md).

Usage: python3 experiments/blitz/run.py [--quick] [--results DIR] [--ray ADDR]
"""

import contextlib
import csv
import io
import json
import math
import random
import statistics
import sys
from pathlib import Path

from eqds_lab import Quantity, print_quantities, write_result
from eqds_lab.experiment import parse_args, percentile, run_case

HERE = Path(__file__).resolve().parent
SIZE = "256KB"
AGGREGATOR = 0
JITTER_NS = 100_000
FIRST_ROUND_NS = 1_000_000
# Incast senders: leaves 1-7 taken round-robin (host = 10 * leaf + i), so every
# degree spreads over the leaves; 64 of these 70 hosts are used at most, and hosts
# 29-79 (i = 9 on leaves 2-7) are left alone (59, 69, 79 send background flows).
SENDERS = [10 * (1 + j % 7) + j // 7 for j in range(64)]
BACKGROUND_TO_AGGREGATOR = 0  # workload index in scenario.toml
BACKGROUND_ELSEWHERE = 1
INCAST = 2

#: A switch port queue that never marks: control first, then data, as `switch.queue`
#: without RED.
NO_MARKING = (
    "{ kind = 'strict_priority', classes = [{ kind = 'drop_tail', limit_packets = 1000 }, "
    "{ kind = 'drop_tail' }] }"
)

# One row per configuration; the DCQCN row is the baseline of every ratio.
CONFIGS = {
    "DCQCN": {"transport.roce.dcqcn": "true", "transport.roce.dasr": "false"},
    "Blitz DASR only (DASR + DCQCN)": {
        "transport.roce.dcqcn": "true",
        "transport.roce.dasr": "true",
    },
    # Ablation: DASR's rate rule without DCQCN (data not ECN-capable).
    "DASR alone (no DCQCN)": {
        "transport.roce.dcqcn": "false",
        "transport.roce.dasr": "true",
    },
    # DASR + DCQCN with the ToR -> host ports not marking (the digest's §1.4.2:
    # last-hop congestion is DASR's), through `switch.edge_queue`.
    "Blitz DASR, no last-hop marking": {
        "transport.roce.dcqcn": "true",
        "transport.roce.dasr": "true",
        "switch.edge_queue": NO_MARKING,
    },
    # The whole of Blitz: DASR, IOFD in the fabric, DCQCN for what is left.
    "Blitz DASR + IOFD, no last-hop marking": {
        "transport.roce.dcqcn": "true",
        "transport.roce.dasr": "true",
        "switch.edge_queue": NO_MARKING,
        "iofd.enabled": "true",
    },
    # RoCE over EQDS: no PFC, sprayed trimming fabric (15-packet queues), every
    # workload through the RDMA EQIF (Appendix B's thresholds, CNPs to DCQCN).
    "RoCE over EQDS (RDMA EQIF)": {
        "transport.roce.dcqcn": "true",
        "transport.roce.dasr": "false",
        "eqds.enabled": "true",
        "eqds.eqifs": "[{ kind = 'rdma', workloads = [0, 1, 2] }]",
        "switch.load_balancing": "spray",
        "switch.queue": "{ kind = 'trimming', data_packets = 15 }",
        "pfc.enabled": "false",
    },
}
BASELINE = "DCQCN"
BLITZ = "Blitz DASR + IOFD, no last-hop marking"
POSTER_DEGREES = (2, 4, 8, 16)  # the testbed's range: at most 18 senders
CDF_DEGREE = 16


def period_ns(d: int) -> int:
    """Time between rounds: 10 ms, or 0.25 ms per sender when more (a degree-64
    round of 16 MB takes 3.3 ms at 40 Gbps). The poster's rounds are 100 ms apart,
    time enough for the background flow to be back at its steady rate; 10 ms gives
    DCQCN most of that (its recovery from deep cuts takes milliseconds) at a tenth
    of the simulation's cost. At 2 ms DCQCN's background flow never recovers and
    the incasts meet a starved competitor."""
    return max(10_000_000, d * 250_000)


def rounds(d: int, quick: bool) -> int:
    """Enough rounds for about 300 incast flows per degree (100 under --quick), at
    least 10 rounds (4) and at most 75 (25): the background flows, not the incasts,
    cost most of the simulation, and they run for every round's period."""
    if quick:
        return min(25, max(4, math.ceil(100 / d)))
    return min(75, max(10, math.ceil(300 / d)))


def incast_flows(d: int, n: int) -> str:
    """Workload 2's flows: `n` rounds of `d` senders, each starting uniformly within
    the first 100 us of its round (the same draws for every configuration)."""
    rng = random.Random(f"blitz-{d}")
    flows = []
    for r in range(n):
        start = FIRST_ROUND_NS + r * period_ns(d)
        for src in SENDERS[:d]:
            at = start + rng.randrange(JITTER_NS)
            flows.append(
                f"{{ src = {src}, dst = {AGGREGATOR}, size = '{SIZE}', start = '{at}ns' }}"
            )
    return "[" + ", ".join(flows) + "]"


def main() -> int:
    args = parse_args(__doc__, HERE, quick="degrees 2, 8, 32; about 100 flows each")
    degrees = [2, 8, 32] if args.quick else [2, 4, 8, 16, 32, 64]
    fct: dict[str, dict[int, list[float]]] = {c: {} for c in CONFIGS}
    unfinished: dict[str, dict[int, int]] = {c: {} for c in CONFIGS}
    background: dict[str, dict[int, dict[str, float]]] = {c: {} for c in CONFIGS}
    marks: dict[str, dict[int, dict[str, int]]] = {c: {} for c in CONFIGS}
    #: RoCE packets the receivers saw out of order (with PFC nothing is lost, so
    #: reordering; over EQDS, EQDS delivers in order).
    reordered: dict[str, dict[int, int]] = {c: {} for c in CONFIGS}
    for d in degrees:
        n = rounds(d, args.quick)
        stop_ns = FIRST_ROUND_NS + (n + 1) * period_ns(d)
        workload = {
            "workload.2.flows": incast_flows(d, n),
            "stop.time": f"{stop_ns}ns",
            "stop.warmup": f"{FIRST_ROUND_NS}ns",
        }
        for i, (label, fixed) in enumerate(CONFIGS.items()):
            sweep = quietly(
                run_case,
                args,
                HERE / "scenario.toml",
                f"config{i}-degree{d}",
                fixed | workload,
            )
            print(f"degree {d:2}, {label}: done", flush=True)
            (run,) = sweep.runs()
            with open(run.out / "flows.csv") as f:
                flows = list(csv.DictReader(f))
            incast = [r for r in flows if int(r["workload"]) == INCAST]
            fct[label][d] = [int(r["fct_ps"]) / 1e6 for r in incast if r["fct_ps"]]
            unfinished[label][d] = sum(1 for r in incast if not r["fct_ps"])
            bg = [r for r in flows if int(r["workload"]) != INCAST]
            background[label][d] = {
                f"{r['src']}->{r['dst']}": float(r["mean_throughput_bps"]) / 1e9
                for r in bg
            }
            with open(run.out / "ports.csv") as f:
                tiers: dict[str, int] = {}
                for p in csv.DictReader(f):
                    tiers[p["tier"]] = tiers.get(p["tier"], 0) + int(p["marks"])
            marks[label][d] = tiers
            summary = json.loads((run.out / "summary.json").read_text())
            reordered[label][d] = summary["roce"]["out_of_order"]

    args.results.mkdir(parents=True, exist_ok=True)
    table = summarise(fct, degrees)
    write_csv(table, args.results / "fct.csv")
    plot(table, fct, degrees, args.results / "fct.png")

    def ratio(stat: str, d: int, other: str = BLITZ) -> float:
        return table[BASELINE][d][stat] / table[other][d][stat]

    poster = [d for d in POSTER_DEGREES if d in degrees]
    gm = {
        s: math.exp(statistics.fmean(math.log(ratio(s, d)) for d in poster))
        for s in ("median_us", "p99_us")
    }
    to_agg = f"1->{AGGREGATOR}"
    bg_change = statistics.fmean(
        100 * (background[BLITZ][d][to_agg] / background[BASELINE][d][to_agg] - 1)
        for d in degrees
    )
    total_marks = {c: sum(sum(t.values()) for t in marks[c].values()) for c in CONFIGS}
    quantities = [
        Quantity(
            f"median incast FCT, DCQCN / Blitz (DASR + IOFD), geometric mean over degrees {poster}",
            2.9,
            round(gm["median_us"], 3),
            0.4,
        ),
        Quantity(
            f"p99 incast FCT, DCQCN / Blitz (DASR + IOFD), geometric mean over degrees {poster}",
            2.9,
            round(gm["p99_us"], 3),
            0.4,
        ),
        Quantity(
            "background flow into the aggregator: goodput change with Blitz (%), "
            "mean over degrees",
            0,
            round(bg_change, 2),
            0.5,
        ),
        Quantity(
            "RoCE packets received out of order with Blitz, all degrees (RDMA needs 0)",
            0,
            sum(reordered[BLITZ].values()),
            0,
        ),
        Quantity(
            "ECN marks, DCQCN / Blitz (all switch ports, all degrees)",
            4,
            round(total_marks[BASELINE] / max(1, total_marks[BLITZ]), 3),
            1,
        ),
    ]
    passed = write_result(
        args.results,
        figure="Blitz SIGCOMM'18 poster, Figure 1 (FCT vs incast degree, CDF at 16) and text",
        setup=(
            "leaf-spine 8 leaves x 10 hosts, 4 spines, 40 Gbps, 1 us links; RoCE WRITEs, "
            "PFC lossless data (priority 1), ACK/CNP priority 0, RED 5 KB/200 KB/1 % on "
            "every switch port, DCQCN paper profile, ACK every packet; incasts of "
            f"{SIZE} from d senders (leaves 1-7) to host 0, rounds every max(10 ms, "
            "d x 0.25 ms) with 0-100 us start jitter, "
            + ("QUICK: " if args.quick else "")
            + ", ".join(f"d={d}: {rounds(d, args.quick)} rounds" for d in degrees)
            + "; endless background host 1 -> 0 and 59, 69, 79 -> 5, 6, 7 (into leaf 0); "
            "goodput measured from the first round to the end; seed 1"
        ),
        quantities=quantities,
        also_measured={
            "fct_us": {
                c: {
                    str(d): {k: round(v, 2) for k, v in s.items()}
                    for d, s in by_d.items()
                }
                for c, by_d in table.items()
            },
            "fct_ratio_dcqcn_over": {
                c: {
                    str(d): {
                        "median": round(ratio("median_us", d, c), 3),
                        "p99": round(ratio("p99_us", d, c), 3),
                    }
                    for d in degrees
                }
                for c in CONFIGS
                if c != BASELINE
            },
            "unfinished_incast_flows": {
                c: {str(d): u for d, u in by_d.items()}
                for c, by_d in unfinished.items()
            },
            "background_goodput_gbps": {
                c: {
                    str(d): {k: round(v, 3) for k, v in g.items()}
                    for d, g in by_d.items()
                }
                for c, by_d in background.items()
            },
            "ecn_marks_per_tier": {
                c: {str(d): t for d, t in by_d.items()} for c, by_d in marks.items()
            },
            "ecn_marks_total": total_marks,
            "roce_out_of_order": {
                c: {str(d): n for d, n in by_d.items()} for c, by_d in reordered.items()
            },
        },
        notes=NOTES,
        plot="fct.png",
        data="fct.csv",
    )
    print_quantities(quantities)
    return 0 if passed else 1


NOTES = (
    "The poster's 2.5-3.3x compares InfiniBand's congestion control with DASR emulated "
    "by staggering messages at the application layer on a 20-host testbed, with incasts "
    "100 ms apart; here both sides are simulated RoCE on a fabric, DASR is the rate "
    "rule, and rounds come every 10 ms or more. DCQCN's incast FCTs here are already "
    "close to the ideal total / C (a synchronised incast finishes together whatever "
    "shares its senders get), so no rate rule can be 2.5x faster: the FCT ratios fail "
    "for every Blitz row. What DASR changes is everything around the incast: the "
    "background flow into the aggregator keeps 27-38 Gb/s between and during rounds "
    "(DCQCN's falls to 3-30 Gb/s and recovers slowly), which fails the poster's "
    "'within 0.5 %' by being far better. With the last hop not marking (the digest's "
    "choice for Blitz) marks fall about 2x (poster 4x, for 'typical workloads' it does "
    "not describe). IOFD (DASR + IOFD row) moves flows off congested spine links; the "
    "last-hop re-sequencer puts every RoCE flow back in order before its host (before "
    "it existed, this row had 35,679 packets out of order, NAKs and go-back-N resends). "
    "RoCE over EQDS has no PFC and no marks: the fabric trims, EQDS resends and "
    "delivers in order. Timebox: second and last session on the FCT gap; the cause "
    "(the baseline is not the poster's, and DCQCN with PFC already finishes incasts "
    "near total / C in this model) is in what the poster does not give, so the "
    "ratios are recorded as measured."
)


def quietly(run, *args):
    """Runs `run(*args)` without the sweep's progress lines, which would repeat the
    whole list of incast flows; shows them, cut short, if a run fails."""
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            return run(*args)
    except SystemExit:
        for line in out.getvalue().splitlines():
            print(line[:400])
        raise


def summarise(fct: dict[str, dict[int, list[float]]], degrees: list[int]) -> dict:
    return {
        c: {
            d: {
                "median_us": statistics.median(by_d[d]),
                "p99_us": percentile(by_d[d], 0.99),
                "flows": len(by_d[d]),
            }
            for d in degrees
        }
        for c, by_d in fct.items()
    }


def write_csv(table: dict, path: Path) -> None:
    with open(path, "w") as f:
        f.write("config,degree,flows,median_us,p99_us\n")
        for c, by_d in table.items():
            f.writelines(
                f"{c},{d},{s['flows']},{s['median_us']:.2f},{s['p99_us']:.2f}\n"
                for d, s in by_d.items()
            )


def plot(table: dict, fct: dict, degrees: list[int], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.6))
    for k, (c, by_d) in enumerate(table.items()):
        color = f"C{k}"
        a.plot(
            degrees,
            [by_d[d]["median_us"] for d in degrees],
            "o-",
            color=color,
            label=f"{c} median",
        )
        a.plot(
            degrees,
            [by_d[d]["p99_us"] for d in degrees],
            "s--",
            color=color,
            label=f"{c} p99",
        )
    a.set_xscale("log", base=2)
    a.set_yscale("log")
    a.set_xticks(degrees, [str(d) for d in degrees])
    a.set_xlabel("incast degree")
    a.set_ylabel("incast FCT (us)")
    a.legend(fontsize=6)
    a.grid(lw=0.3)
    cdf_d = CDF_DEGREE if CDF_DEGREE in degrees else degrees[len(degrees) // 2]
    for k, c in enumerate(fct):
        xs = sorted(fct[c][cdf_d])
        b.plot(xs, [(i + 1) / len(xs) for i in range(len(xs))], color=f"C{k}", label=c)
    b.set_xlabel(f"incast FCT at degree {cdf_d} (us)")
    b.set_ylabel("CDF")
    b.legend(fontsize=6)
    b.grid(lw=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=150)


if __name__ == "__main__":
    sys.exit(main())
