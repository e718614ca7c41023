#!/usr/bin/env python3
"""DCQCN paper §5.2, parameter selection (spec E10; unverified: the seed text stops
before §5.2, so only the direction of each result is checked).

(a) Convergence. Two endless flows into one 40 Gbps port: A from t = 0, B from
60 ms, both starting at line rate (the simulator cannot start a flow at a chosen
rate). A 1 MB burst from a third host at t = 0 cuts A once, so that A's alpha timer
runs (the packet model starts it at a flow's first CNP, as HPCC's ns-3 model does):
when B starts, A is back at line rate with a decayed alpha and B has alpha = 1, so
the first congestion cuts B far more than A and the two flows start apart. Four
parameter sets, at packet level and in the fluid model (both flows at line rate,
A's alpha decayed as equation (7) decays it over 60 ms alone):
  - strawman: QCN's byte counter 150 KB and timer 1.5 ms, cut-off marking (Kmin =
    Kmax = 5 KB, Pmax = 1), g = 1/16 (eqds_lab.dcqcn_fluid.FluidParams.strawman);
  - timer-dominant: B = 10 MB, T = 55 us, still cut-off marking and g = 1/16;
  - + RED: the paper's 5 KB / 200 KB / 1 % ramp, g = 1/16;
  - paper: the same with g = 1/256 (the paper profile).
Convergence time: from B's start until the two flows' rates, averaged over the
last 10 ms, are first within 10 % of each other; "never" if not by the run's end.

(b) Queue under incast: 2:1 and 16:1, all senders at line rate at t = 0, the paper
profile with g = 1/16 and g = 1/256; the bottleneck queue from 20 ms on (mean, p99,
standard deviation, CDF), three seeds.

Usage: python3 experiments/dcqcn-s52-convergence/run.py [--quick] [--results DIR] [--ray ADDR]
"""

import csv
import json
import math
import sys
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

import numpy as np
from eqds_lab import Quantity, write_result
from eqds_lab.dcqcn_fluid import PACKET_BYTES, FluidParams, solve
from eqds_lab.experiment import parse_args, run_case

HERE = Path(__file__).resolve().parent
MTU, HEADER = 1500, 64
WIRE = MTU / (MTU - HEADER)
B_START_MS = 60
WINDOW_MS = 10
WITHIN = 0.10
SEEDS = (1, 2, 3)
INCASTS = [2, 16]
G = {"1/16": 1 / 16, "1/256": 1 / 256}
QUEUE_FROM_MS = 20

CUTOFF = (
    "{ kind = 'strict_priority', classes = [{ kind = 'drop_tail', limit_packets = 1000 }, "
    "{ kind = 'red', min_bytes = '5KB', max_bytes = '5KB', p_max = 1.0 }] }"
)
FLOWS = (
    "[{ src = 1, dst = 0, start = '0ms' }, "
    "{ src = 3, dst = 0, start = '0ms', size = '1MB' }, "
    f"{{ src = 2, dst = 0, start = '{B_START_MS}ms' }}]"
)
#: Label -> (packet-level overrides, fluid parameters).
_PAPER = FluidParams.paper()
STRAWMAN = "strawman (QCN B/T, cut-off, g=1/16)"
PAPER = "paper (+ g=1/256)"
CONFIGS = {
    STRAWMAN: (
        {
            "switch.queue": CUTOFF,
            "transport.roce.dcqcn": "{ profile = 'paper', g = 0.0625, "
            "increase_timer = '1.5ms', byte_counter = '150KB' }",
        },
        _PAPER.strawman(),
    ),
    "timer-dominant (B 10 MB, T 55 us, cut-off, g=1/16)": (
        {
            "switch.queue": CUTOFF,
            "transport.roce.dcqcn": "{ profile = 'paper', g = 0.0625 }",
        },
        replace(_PAPER, kmax=_PAPER.kmin, pmax=1.0, g=1 / 16),
    ),
    "+ RED 5 KB/200 KB/1 % (g=1/16)": (
        {"transport.roce.dcqcn": "{ profile = 'paper', g = 0.0625 }"},
        replace(_PAPER, g=1 / 16),
    ),
    PAPER: ({}, _PAPER),
}


def flow_rates(run_dir: Path) -> dict[int, np.ndarray]:
    """Each flow's wire rate (Gb/s) per 1 ms bin, bin k = [k, k+1) ms."""
    rows = defaultdict(dict)
    last = 0
    with open(run_dir / "flow_series.csv") as f:
        for row in csv.DictReader(f):
            k = int(row["time_ps"]) // 10**9 - 1
            rows[int(row["flow"])][k] = float(row["throughput_bps"]) * WIRE / 1e9
            last = max(last, k)
    return {
        fl: np.array([r.get(k, 0.0) for k in range(last + 1)]) for fl, r in rows.items()
    }


def bottleneck_queue(run_dir: Path) -> tuple[np.ndarray, np.ndarray]:
    """(ms, KB) of the switch port with the largest mean backlog."""
    series = defaultdict(list)
    with open(run_dir / "queues.csv") as f:
        for row in csv.DictReader(f):
            series[row["port"]].append((int(row["time_ps"]), int(row["backlog_bytes"])))
    port = max(series, key=lambda p: sum(b for _, b in series[p]))
    t, b = np.array(series[port], dtype=float).T
    return t / 1e9, b / 1e3


def convergence_ms(
    t_ms: np.ndarray, a: np.ndarray, b: np.ndarray, dt_ms: float
) -> float | None:
    """First time after B's start (t_ms = 0) at which the means of the two rates over
    the last WINDOW_MS are within WITHIN of each other; None if never."""
    w = max(1, round(WINDOW_MS / dt_ms))
    kernel = np.ones(w) / w
    ma, mb = np.convolve(a, kernel, "valid"), np.convolve(b, kernel, "valid")
    ends = t_ms[w - 1 :]
    ok = np.minimum(ma, mb) >= (1 - WITHIN) * np.maximum(ma, mb)
    ok &= ends >= WINDOW_MS
    return round(float(ends[ok][0]), 1) if ok.any() else None


def pause_frames(sweep) -> int:
    """PAUSE frames the switches sent over a sweep's runs."""
    return sum(
        json.loads((r.out / "summary.json").read_text())["pfc"]["pause_sent"]
        for r in sweep.runs()
    )


def fmt_ms(v: float | None) -> str:
    return "never" if v is None else f"{v:g} ms"


def ratio(a: float, b: float) -> float:
    """The smaller of two rates over the larger."""
    return round(float(min(a, b) / max(a, b)), 3) if max(a, b) > 0 else 0.0


def main() -> int:
    args = parse_args(
        __doc__, HERE, quick="40 ms after B's start, one seed, 50 ms incasts"
    )
    after_ms = 40 if args.quick else 140
    seeds = SEEDS[:1] if args.quick else SEEDS
    incast_ms = 50 if args.quick else 100
    args.results.mkdir(parents=True, exist_ok=True)
    to_gbps = 8 * PACKET_BYTES / 1e9

    # (a) convergence, packet level and fluid.
    conv: dict[str, dict] = {}
    series: dict[str, dict] = {}
    pauses = 0
    for i, (label, (overrides, fp)) in enumerate(CONFIGS.items()):
        sweep = run_case(
            args,
            HERE / "scenario.toml",
            f"convergence{i}",
            overrides
            | {"workload.flows": FLOWS, "stop.time": f"{B_START_MS + after_ms}ms"},
            seeds=seeds,
        )
        pauses += pause_frames(sweep)
        # Packet level, per seed: the plot shows the first seed.
        per_seed, final, first5 = {}, {}, {}
        for run in sweep.runs():
            rates = flow_rates(run.out)
            pa, pb = rates[0][B_START_MS:], rates[2][B_START_MS:]
            n = min(len(pa), len(pb))
            pa, pb = pa[:n], pb[:n]
            pt = np.arange(n) + 1.0  # bin ends, ms after B's start
            last = pt > n - 20
            per_seed[run.seed] = convergence_ms(pt, pa, pb, 1.0)
            final[run.seed] = ratio(pa[last].mean(), pb[last].mean())
            first5[run.seed] = [
                round(float(pa[:5].mean()), 2),
                round(float(pb[:5].mean()), 2),
            ]
            if run.seed == seeds[0]:
                shown = (pt, pa, pb)
        pt, pa, pb = shown
        # The fluid twin: both at line rate, A's alpha decayed over B_START_MS alone.
        alpha_a = math.exp(-fp.g * B_START_MS * 1e-3 / fp.tau_alpha)
        fl = solve(
            fp,
            [fp.capacity] * 2,
            after_ms / 1e3,
            sample=100e-6,
            start_alpha=[alpha_a, 1],
        )
        ft = fl.t * 1e3
        fa, fb = fl.rc[:, 0] * to_gbps, fl.rc[:, 1] * to_gbps
        flast = ft >= after_ms - 20
        times = sorted(per_seed.values(), key=lambda v: math.inf if v is None else v)
        conv[label] = {
            # The median seed's time ("never" if most seeds never converged).
            "packet_ms": times[len(times) // 2],
            "packet_ms_per_seed": {str(k): v for k, v in per_seed.items()},
            "fluid_ms": convergence_ms(ft, fa, fb, 0.1),
            "packet_rates_A_B_first_5ms_gbps_per_seed": {
                str(k): v for k, v in first5.items()
            },
            "packet_final_20ms_min_over_max_per_seed": {
                str(k): v for k, v in final.items()
            },
            "fluid_final_20ms_min_over_max": ratio(fa[flast].mean(), fb[flast].mean()),
            "fluid_start_alpha_of_A": round(alpha_a, 6),
        }
        series[label] = {"pt": pt, "pa": pa, "pb": pb, "ft": ft, "fa": fa, "fb": fb}
        print(f"{label}: {conv[label]}")
    plot_convergence(series, conv, after_ms, args.results)

    # (b) queue under incast, g = 1/16 against 1/256.
    queues: dict[tuple[int, str], dict[int, np.ndarray]] = {}
    traces: dict[tuple[int, str], tuple[np.ndarray, np.ndarray]] = {}
    for n in INCASTS:
        for gname, g in G.items():
            sweep = run_case(
                args,
                HERE / "scenario.toml",
                f"incast{n}-g{gname.replace('/', '_')}",
                {
                    "workload": f"{{ kind = 'incast', receiver = 0, senders = {n} }}",
                    "transport.roce.dcqcn": f"{{ profile = 'paper', g = {g!r} }}",
                    "stop.time": f"{incast_ms}ms",
                },
                seeds=seeds,
            )
            pauses += pause_frames(sweep)
            queues[(n, gname)] = {}
            for r in sweep.runs():
                t, q = bottleneck_queue(r.out)
                queues[(n, gname)][r.seed] = q[t >= QUEUE_FROM_MS]
                if r.seed == seeds[0]:
                    traces[(n, gname)] = (t, q)
    qstats = {}
    for (n, gname), by_seed in queues.items():
        pooled = np.concatenate(list(by_seed.values()))
        qstats[f"{n}:1, g={gname}"] = {
            "mean_kb": round(float(pooled.mean()), 1),
            "p50_kb": round(float(np.percentile(pooled, 50)), 1),
            "p99_kb": round(float(np.percentile(pooled, 99)), 1),
            "std_kb": round(float(pooled.std()), 1),
            "fraction_empty": round(float((pooled == 0).mean()), 3),
            "std_kb_per_seed": {
                str(s): round(float(q.std()), 1) for s, q in by_seed.items()
            },
            "p99_kb_per_seed": {
                str(s): round(float(np.percentile(q, 99)), 1)
                for s, q in by_seed.items()
            },
        }
    plot_queues(queues, traces, incast_ms, args.results)

    # Quantities: directions only (§5.2 is not in the seed text).
    def yes(x: bool) -> float:
        return 1.0 if x else 0.0

    quantities = [
        Quantity(
            f"packet: strawman rates within 10 % within {after_ms} ms of B's start, "
            f"in any of {len(seeds)} seeds (1 = yes)",
            0.0,
            yes(
                any(
                    v is not None for v in conv[STRAWMAN]["packet_ms_per_seed"].values()
                )
            ),
            0.0,
        ),
        Quantity(
            f"packet: paper params converge within {after_ms} ms, in each of {len(seeds)} "
            "seeds (1 = yes)",
            1.0,
            yes(all(v is not None for v in conv[PAPER]["packet_ms_per_seed"].values())),
            0.0,
        ),
        Quantity(
            f"fluid: strawman rates within 10 % within {after_ms} ms (1 = yes)",
            0.0,
            yes(conv[STRAWMAN]["fluid_ms"] is not None),
            0.0,
        ),
        Quantity(
            f"fluid: paper params converge within {after_ms} ms (1 = yes)",
            1.0,
            yes(conv[PAPER]["fluid_ms"] is not None),
            0.0,
        ),
    ]
    ratios = {}
    for n in INCASTS:
        lo, hi = queues[(n, "1/256")], queues[(n, "1/16")]
        std_ratio = {s: float(lo[s].std() / hi[s].std()) for s in seeds}
        p99_ratio = {
            s: float(np.percentile(lo[s], 99) / np.percentile(hi[s], 99)) for s in seeds
        }
        ratios[f"{n}:1"] = {
            "std_g1/256_over_g1/16": {
                str(s): round(v, 3) for s, v in std_ratio.items()
            },
            "p99_g1/256_over_g1/16": {
                str(s): round(v, 3) for s, v in p99_ratio.items()
            },
        }
        quantities.append(
            Quantity(
                f"{n}:1 incast: queue std dev and p99 lower with g=1/256 than 1/16, "
                f"in each of {len(seeds)} seeds (1 = yes)",
                1.0,
                yes(
                    all(v < 1 for v in std_ratio.values())
                    and all(v < 1 for v in p99_ratio.values())
                ),
                0.0,
            )
        )
    passed = write_result(
        args.results,
        experiment="dcqcn-s52-convergence",
        figure="DCQCN SIGCOMM'15, §5.2 (spec E10; ⚠ unverified: not in the seed text)",
        setup="single 40 Gbps switch, 1 us links, RoCE WRITE, endless flows, PFC on with the "
        "data class lossless (never fired), DCQCN packet-level and fluid model (tau* 50 us). "
        f"(a) flow A from 0, a 1 MB burst from a third host at 0 (so A's alpha timer runs), "
        f"flow B from {B_START_MS} ms, both at line rate; {after_ms} ms after B's start; "
        "converged = the two rates' means over the last 10 ms within 10 %; four parameter "
        "sets (strawman: B 150 KB, T 1.5 ms, cut-off marking at 5 KB, g 1/16; timer-dominant; "
        "+ RED 5 KB/200 KB/1 %; paper g 1/256). Fluid twin: both at line rate, A's alpha "
        f"decayed as over {B_START_MS} ms alone. (b) 2:1 and 16:1 incasts, paper profile with "
        f"g = 1/16 or 1/256, {incast_ms} ms, queue from {QUEUE_FROM_MS} ms, seeds "
        f"{list(seeds)}. Quantities are directions only (1 = yes), as the spec asks: "
        "§5.2's numbers are not available" + (" (QUICK)" if args.quick else ""),
        quantities=quantities,
        also_measured={
            "convergence": conv,
            "incast_queue": qstats,
            "incast_queue_ratios": ratios,
            "pfc_pause_frames_all_runs": pauses,
        },
        notes={
            "unverified": "§5.2 is missing from the seed text; the strawman values (QCN's "
            "B = 150 KB, T = 1.5 ms), the cut-off K = 5 KB and g = 1/16 vs 1/256 are the "
            "spec's recollection, and so are the paper profile's Kmin/Kmax/Pmax, g, T, B",
            "start_rates": "the simulator starts every flow at line rate and cannot start "
            "one at a chosen rate; B starts when A is at line rate, and the rates part at "
            "the first congestion because A's alpha has decayed and B's has not. The packet "
            "model arms alpha's timer at a flow's first CNP (alpha stays 1 until then, the "
            "paper's footnote; HPCC's ns-3 does the same), hence the 1 MB burst at t = 0 "
            "that gives A a congestion history; in the fluid model alpha decays from t = 0",
            "convergence": "strawman: after B's start A and B run at "
            + " and ".join(
                f"{x:g}"
                for x in next(
                    iter(
                        conv[STRAWMAN][
                            "packet_rates_A_B_first_5ms_gbps_per_seed"
                        ].values()
                    )
                )
            )
            + " Gb/s (first 5 ms, packet level) and B stays below 1 Gb/s: cut-off marking cuts both every 50 us whatever "
            "their rate, and the 150 KB byte counter re-grows the fast flow faster. "
            "The three timer-driven sets converge at packet level and in the model; the "
            "paper's g = 1/256 converges more slowly than g = 1/16 at packet level "
            "(alpha differentiates the flows slowly), and its convergence time varies "
            "with the seed; with cut-off marking no random draw is made, so all seeds "
            "give the same run",
            "incast_queue": "g = 1/256 lowers the queue's standard deviation and p99 in "
            f"every seed ({ratios}), a modest effect: at both degrees the queue is a "
            "sawtooth between empty and its peak (at 16:1 every ~2.5 ms, peaking above "
            "Kmax), with either g",
            "pfc": f"PFC sent {pauses} PAUSE frames over all runs (the dynamic threshold "
            "with a 12 MB buffer is far above these queues); it is on so that the "
            "line-rate starts are lossless by construction",
        },
        plot="convergence.png",
        plots=["convergence.png", "convergence-time.png", "incast-queue.png"],
        data=["convergence.csv", "convergence-time.csv", "incast-queue.csv"],
    )
    print("pass" if passed else "FAIL")
    return 0 if passed else 1


def plot_convergence(series, conv, after_ms, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(9, 6), sharex=True, sharey=True)
    rows = []
    for ax, (label, s) in zip(axes.flat, series.items()):
        ax.step(
            s["pt"] - 0.5,
            s["pa"],
            where="mid",
            lw=0.9,
            color="tab:blue",
            label="A, packet",
        )
        ax.step(
            s["pt"] - 0.5,
            s["pb"],
            where="mid",
            lw=0.9,
            color="tab:orange",
            label="B, packet",
        )
        ax.plot(s["ft"], s["fa"], lw=1.2, ls="--", color="navy", label="A, fluid")
        ax.plot(s["ft"], s["fb"], lw=1.2, ls="--", color="darkred", label="B, fluid")
        c = conv[label]
        per_seed = c["packet_ms_per_seed"]
        first = next(iter(per_seed))
        shown = {"packet": per_seed[first], "fluid": c["fluid_ms"]}
        for t, color in zip(shown.values(), ("tab:green", "olive")):
            if t is not None:
                ax.axvline(t, color=color, lw=0.8, ls=":")
        others = ", ".join(fmt_ms(v) for k, v in per_seed.items() if k != first)
        ax.set_title(
            f"{label}\nwithin 10 %: packet (seed {first}) {fmt_ms(shown['packet'])}"
            + (f" [other seeds {others}]" if others else "")
            + f", fluid {fmt_ms(shown['fluid'])}",
            fontsize=7,
        )
        ax.set_ylim(0, 41)
        for name in ("pa", "pb"):
            rows += [
                (label, f"packet {name[1].upper()}", t - 0.5, v)
                for t, v in zip(s["pt"], s[name])
            ]
        for name in ("fa", "fb"):
            rows += [
                (label, f"fluid {name[1].upper()}", t, v)
                for t, v in zip(s["ft"][::10], s[name][::10])
            ]
    for ax in axes[1]:
        ax.set_xlabel("time since B started (ms)")
    for ax in axes[:, 0]:
        ax.set_ylabel("rate (Gb/s)")
    axes[0, 0].legend(fontsize=7, loc="center right")
    fig.suptitle(
        "Two flows, one 40 Gbps port: B starts at line rate while A runs at line rate "
        "(§5.2, unverified)",
        fontsize=9,
    )
    fig.tight_layout()
    fig.savefig(out / "convergence.png", dpi=150)
    plt.close(fig)
    with open(out / "convergence.csv", "w") as f:
        f.write("config,series,t_ms_after_b_start,rate_gbps\n")
        f.writelines(f'"{c}",{s},{t:.2f},{v:.4f}\n' for c, s, t, v in rows)

    # The convergence-time figure: "never" drawn to the run's end, hatched.
    fig, ax = plt.subplots(figsize=(7, 3.4))
    labels = list(conv)
    y = np.arange(len(labels))
    rows = []
    for off, key, color in (
        (-0.18, "packet_ms", "tab:blue"),
        (0.18, "fluid_ms", "tab:gray"),
    ):
        model = key.split("_")[0]
        for yi, label in zip(y, labels):
            v = conv[label][key]
            if v is None:
                ax.barh(
                    yi + off,
                    after_ms,
                    height=0.34,
                    fill=False,
                    hatch="//",
                    edgecolor=color,
                )
                ax.text(
                    after_ms * 0.98,
                    yi + off,
                    "never",
                    va="center",
                    ha="right",
                    fontsize=7,
                )
            else:
                ax.barh(
                    yi + off,
                    v,
                    height=0.34,
                    color=color,
                    label=model if yi == 0 else None,
                )
            rows.append(
                (label, model + (" (median seed)" if model == "packet" else ""), v)
            )
        if model == "packet":
            for yi, label in zip(y, labels):
                for seed, t in conv[label]["packet_ms_per_seed"].items():
                    ax.plot(
                        after_ms if t is None else t,
                        yi + off,
                        "k.",
                        ms=4,
                        label="packet, each seed" if yi == 0 and seed == "1" else None,
                    )
                    rows.append((label, f"packet seed {seed}", t))
    ax.set_yticks(y, labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(0, after_ms)
    ax.set_xlabel(
        f"time from B's start until the rates are within 10 % (ms; run: {after_ms} ms)"
    )
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "convergence-time.png", dpi=150)
    plt.close(fig)
    with open(out / "convergence-time.csv", "w") as f:
        f.write("config,model,convergence_ms\n")
        f.writelines(f'"{c}",{m},{"never" if v is None else v}\n' for c, m, v in rows)


def plot_queues(queues, traces, incast_ms, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, len(INCASTS), figsize=(9, 6))
    rows = []
    colors = {"1/16": "tab:red", "1/256": "tab:blue"}
    for j, n in enumerate(INCASTS):
        ax = axes[0, j]
        for gname in G:
            pooled = np.sort(np.concatenate(list(queues[(n, gname)].values())))
            ys = np.arange(1, len(pooled) + 1) / len(pooled)
            # 200 points of the CDF are enough to draw and to keep.
            idx = np.unique(np.linspace(0, len(pooled) - 1, 200).astype(int))
            ax.plot(pooled[idx], ys[idx], color=colors[gname], label=f"g = {gname}")
            rows += [("cdf", n, gname, pooled[i], ys[i]) for i in idx]
        ax.set_xlabel(f"queue (KB), from {QUEUE_FROM_MS} ms, all seeds")
        ax.set_ylabel("CDF")
        ax.set_title(f"{n}:1 incast, 40 Gbps, paper profile", fontsize=9)
        ax.legend(fontsize=7)
        ax = axes[1, j]
        lo, hi = 40, min(60, incast_ms)
        for gname in G:
            t, q = traces[(n, gname)]
            sel = (t >= lo) & (t <= hi)
            ax.plot(t[sel], q[sel], lw=0.7, color=colors[gname], label=f"g = {gname}")
            rows += [
                ("trace", n, gname, tt, qq) for tt, qq in zip(t[sel][::5], q[sel][::5])
            ]
        ax.set_xlabel("time (ms), seed 1")
        ax.set_ylabel("queue (KB)")
        ax.legend(fontsize=7)
    fig.suptitle(
        "Bottleneck queue under incast, g = 1/16 vs 1/256 (§5.2, unverified)",
        fontsize=9,
    )
    fig.tight_layout()
    fig.savefig(out / "incast-queue.png", dpi=150)
    plt.close(fig)
    with open(out / "incast-queue.csv", "w") as f:
        f.write("panel,incast,g,x,y\n")
        f.writelines(f"{p},{n}:1,{g},{x:.4f},{y:.4f}\n" for p, n, g, x, y in rows)


if __name__ == "__main__":
    sys.exit(main())
