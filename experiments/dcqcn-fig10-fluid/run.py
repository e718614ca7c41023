#!/usr/bin/env python3
"""DCQCN paper, Figure 10 (spec E7): the fluid model against packet-level DCQCN.

N senders start at line rate at t = 0 and send for ever to one receiver behind one
40 Gbps switch (scenario.toml: the paper profile, the RED ramp 5 KB / 200 KB / 1 %,
PFC with the data class lossless). The same system is integrated with the fluid
model of §5.1 (eqds_lab.dcqcn_fluid, FluidParams.paper()), for N = 2 and N = 10.

One plot per N: each packet-level flow's rate in 1 ms bins, the fluid model's rate
(its flows are identical, so one curve) for the feedback delay tau* = 50 us and, as a
sensitivity, 85 us, and the bottleneck queue of both. result.json states the
distance: the mean absolute difference between each packet-level flow's 1 ms rate
and the fluid rate, as a fraction of the fair share, and the aggregate rates.

Rates are on the wire (1500 B packets), as the fluid model counts them: the
simulator's delivered payload rate is scaled by 1500/1436.

Usage: python3 experiments/dcqcn-fig10-fluid/run.py [--quick] [--results DIR] [--ray ADDR]
"""

import csv
import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
from eqds_lab import Quantity, write_result
from eqds_lab.dcqcn_fluid import PACKET_BYTES, FluidParams, solve
from eqds_lab.experiment import parse_args, run_case

HERE = Path(__file__).resolve().parent
LINE = 40e9
MTU, HEADER = 1500, 64
# Delivered payload per packet -> wire bytes (a WRITE's one RETH is negligible).
WIRE = MTU / (MTU - HEADER)
FLOWS = [2, 10]
SEEDS = (1, 2, 3)
#: tau* of the main fluid curve, and the sensitivity runs (us). The paper does not
#: give tau*; public fluid re-implementations use 50-85 us, the spec's rule of
#: thumb (one base RTT + tau/2) gives about 30 us.
DELAY_US = 50
DELAYS_US = (25, 50, 85)
BIN_MS = 1
#: The start transient left out of the distance: the line-rate start, the cuts and
#: the drain of the first queue take under 2 ms; the recovery that follows is kept.
FROM_MS = 5
#: The steady part: both models have reached the fair share by 25 ms at N = 2.
STEADY_MS = 30
#: "Closely matches" as a number: the per-flow mean absolute difference within 15 %
#: of the fair share, about twice the packet model's own bin-to-bin noise at N = 2
#: (its steady per-flow 1 ms rates scatter by 6-10 % of the fair share, which no
#: fluid model can follow); aggregates within 5 %.
MAD_TOLERANCE = 0.15
DEQUEUE_QUEUE = (
    "{ kind = 'strict_priority', classes = [{ kind = 'drop_tail', limit_packets = 1000 }, "
    "{ kind = 'red', min_bytes = '5KB', max_bytes = '200KB', p_max = 0.01, "
    "mark_at = 'dequeue' }] }"
)
AGG_TOLERANCE = 0.05


def packet_rates(run_dir: Path, n: int, bins: int) -> np.ndarray:
    """Per-flow wire rate (Gb/s) in 1 ms bins: bins x flows (bin k is [k, k+1) ms)."""
    rates = np.zeros((bins, n))
    with open(run_dir / "flow_series.csv") as f:
        for row in csv.DictReader(f):
            k = int(row["time_ps"]) // (BIN_MS * 10**9) - 1
            if 0 <= k < bins:
                rates[k, int(row["flow"])] = float(row["throughput_bps"]) * WIRE / 1e9
    return rates


def packet_queue(run_dir: Path) -> tuple[np.ndarray, np.ndarray]:
    """The bottleneck's backlog over time (ms, KB): the switch port with the largest
    mean backlog (the receiver's downlink)."""
    series = defaultdict(list)
    with open(run_dir / "queues.csv") as f:
        for row in csv.DictReader(f):
            series[row["port"]].append((int(row["time_ps"]), int(row["backlog_bytes"])))
    port = max(series, key=lambda p: sum(b for _, b in series[p]))
    t, b = np.array(series[port], dtype=float).T
    return t / 1e9, b / 1e3


def main() -> int:
    args = parse_args(
        __doc__, HERE, quick="20 ms instead of 100 ms, one seed, tau* = 50 us only"
    )
    duration_ms = 20 if args.quick else 100
    seeds = SEEDS[:1] if args.quick else SEEDS
    delays = (DELAY_US,) if args.quick else DELAYS_US
    bins = duration_ms // BIN_MS
    steady = STEADY_MS if not args.quick else 10
    args.results.mkdir(parents=True, exist_ok=True)

    quantities, also, notes = [], {}, {}
    for n in FLOWS:
        sweep = run_case(
            args,
            HERE / "scenario.toml",
            f"n{n}",
            {"workload.senders": n, "stop.time": f"{duration_ms}ms"},
            seeds=seeds,
        )
        runs = sweep.runs()
        pkt = {r.seed: packet_rates(r.out, n, bins) for r in runs}
        summary = json.loads((runs[0].out / "summary.json").read_text())
        qt, qkb = packet_queue(runs[0].out)

        params = {d: FluidParams.paper(LINE, d * 1e-6) for d in delays}
        fluid = {}
        for d, p in params.items():
            run = solve(p, [p.capacity] * n, duration_ms / 1e3, sample=10e-6)
            to_gbps = 8 * PACKET_BYTES / 1e9
            fluid[d] = {
                "t_ms": run.t * 1e3,
                "rc": run.rc[:, 0] * to_gbps,
                "queue_kb": run.queue * PACKET_BYTES / 1e3,
                # The fluid flows are identical: flow 0's rate, binned as the packets'.
                "binned": (run.rc[:, 0] * to_gbps)[: bins * 100]
                .reshape(bins, 100)
                .mean(axis=1),
                "sum_binned": (run.rc.sum(axis=1) * to_gbps)[: bins * 100]
                .reshape(bins, 100)
                .mean(axis=1),
            }

        fair = LINE / 1e9 / n
        start = FROM_MS // BIN_MS
        st = steady // BIN_MS

        def mad(d: int, lo: int, seed: int, pkt=pkt, fluid=fluid) -> float:
            return float(np.abs(pkt[seed][lo:] - fluid[d]["binned"][lo:, None]).mean())

        mads = {d: {s: mad(d, start, s) for s in seeds} for d in delays}
        mads_steady = {d: {s: mad(d, st, s) for s in seeds} for d in delays}
        main_mad = float(np.mean(list(mads[DELAY_US].values())))
        pkt_agg = float(np.mean([pkt[s][st:].sum(axis=1).mean() for s in seeds]))
        fl_agg = float(fluid[DELAY_US]["sum_binned"][st:].mean())
        # The packet model's own scatter: std of each flow's steady 1 ms rates.
        noise = float(np.mean([pkt[s][st:].std(axis=0).mean() for s in seeds]))
        steady_q = qkb[qt >= steady]
        fl_t = fluid[DELAY_US]["t_ms"]
        fl_q = fluid[DELAY_US]["queue_kb"][fl_t >= steady]

        def reach(series: np.ndarray, t_ms: np.ndarray, level: float) -> float | None:
            """First time (ms) after 2 ms a rate is within 5 % of `level` (its own
            steady mean: the packet flows settle below the fair share at N = 10)."""
            ok = (t_ms >= 2) & (series >= 0.95 * level)
            return round(float(t_ms[ok][0]), 2) if ok.any() else None

        pkt_mean_flow = pkt[seeds[0]].mean(axis=1)
        also[f"N={n}"] = {
            "fair_share_gbps": fair,
            "mad_gbps_from_5ms": {
                f"tau*={d}us": {str(s): round(v, 3) for s, v in m.items()}
                for d, m in mads.items()
            },
            f"mad_gbps_from_{steady}ms": {
                f"tau*={d}us": {str(s): round(v, 3) for s, v in m.items()}
                for d, m in mads_steady.items()
            },
            "packet_per_flow_noise_gbps": round(noise, 3),
            "aggregate_gbps_steady": {
                "packet": round(pkt_agg, 3),
                "fluid": round(fl_agg, 3),
            },
            "mean_rate_per_flow_gbps_steady": {
                "packet": round(pkt_agg / n, 3),
                "fluid": round(fl_agg / n, 3),
            },
            "steady_queue_kb": {
                "packet_mean": round(float(steady_q.mean()), 1),
                "packet_p99": round(float(np.percentile(steady_q, 99)), 1),
                "packet_std": round(float(steady_q.std()), 1),
                "packet_fraction_empty": round(float((steady_q == 0).mean()), 3),
                "packet_fraction_above_kmax": round(float((steady_q > 200).mean()), 3),
                "fluid_mean": round(float(fl_q.mean()), 1),
            },
            "peak_queue_kb": {
                "packet": round(float(qkb.max()), 1),
                **{
                    f"fluid tau*={d}us": round(float(f["queue_kb"].max()), 1)
                    for d, f in fluid.items()
                },
            },
            "ms_to_95pct_of_steady_rate": {
                "packet (mean of flows, 1 ms bins)": reach(
                    pkt_mean_flow, np.arange(bins) * BIN_MS + BIN_MS, pkt_agg / n
                ),
                **{
                    f"fluid tau*={d}us": reach(f["rc"], f["t_ms"], fair)
                    for d, f in fluid.items()
                },
            },
            "packet_roce_counters_seed1": summary.get("roce"),
            "pfc_seed1": {
                k: summary["pfc"][k]
                for k in ("pause_sent", "lossless_drops", "headroom_drops")
                if k in summary.get("pfc", {})
            }
            | {"max_shared_bytes": summary["pfc"]["switches"][0]["max_shared_bytes"]},
        }
        quantities += [
            Quantity(
                f"N={n}: mean abs(packet - fluid) per-flow rate, {FROM_MS}-{duration_ms} ms, "
                f"/ fair share (tau*={DELAY_US}us)",
                0.0,
                round(main_mad / fair, 4),
                MAD_TOLERANCE,
            ),
            Quantity(
                f"N={n}: aggregate rate from {steady} ms, packet / fluid",
                1.0,
                round(pkt_agg / fl_agg, 4),
                AGG_TOLERANCE,
            ),
        ]
        print(f"N={n}: {json.dumps(also[f'N={n}'], indent=1)}")
        plot(
            n,
            pkt[seeds[0]],
            fluid,
            qt,
            qkb,
            duration_ms,
            args.results / f"fig10-n{n}.png",
        )

    # The N = 10 packet run again with marking at dequeue: a loop without the queue's
    # delay in it (the notes explain why it matters there).
    deq = run_case(
        args,
        HERE / "scenario.toml",
        "n10-dequeue",
        {
            "workload.senders": 10,
            "stop.time": f"{duration_ms}ms",
            "switch.queue": DEQUEUE_QUEUE,
        },
    ).runs()[0]
    dt, dq = packet_queue(deq.out)
    dq = dq[dt >= steady]
    deq_agg = float(
        packet_rates(deq.out, 10, bins)[steady // BIN_MS :].sum(axis=1).mean()
    )
    also["N=10, marking at dequeue (seed 1)"] = {
        "steady_queue_kb_mean": round(float(dq.mean()), 1),
        "steady_fraction_empty": round(float((dq == 0).mean()), 3),
        "aggregate_gbps_steady": round(deq_agg, 3),
    }
    t2 = also["N=2"]["ms_to_95pct_of_steady_rate"]
    q2, q10 = also["N=2"]["steady_queue_kb"], also["N=10"]["steady_queue_kb"]
    agg10 = also["N=10"]["aggregate_gbps_steady"]
    notes = {
        "tau_star": f"the fluid model's feedback delay tau* is not in the paper (spec open "
        f"question 15): {DELAY_US} us for the quantities, {list(delays)} us reported; it moves "
        "the start transient only (the fixed point does not depend on it)",
        "model_differences": [
            (
                "no hyper increase in the model (the packet runs had none either: "
                "hyper_increase = 0); the byte counter is a Poisson rate there, and at "
                "B = 10 MB it expires only every 2-20 ms here, so it hardly matters in both"
            ),
            (
                "a cut is continuous in the model (under full marking RC decays by "
                "exp(-alpha/2) per tau where the NIC halves it per CNP); RT relaxes towards RC "
                "with time constant tau instead of jumping to it; additive increase starts at "
                "once when p = 0 instead of after F = 5 timer periods; alpha decays from t = 0 "
                "in the model, from the first CNP in the packet model (all flows here are "
                "congested from the start, so this one does not show)"
            ),
            (
                "the packet series are delivered rates at the receiver in 1 ms bins, the "
                "fluid curves are sending rates RC: they differ only while the queue is large "
                "(the first ms)"
            ),
            (
                "the model's feedback delay is a constant tau*; in the packet model a mark "
                "made at enqueue waits behind the queue before it reaches the NP, so the "
                "start's loop delay grows with the queue (up to ~80 us at N = 2): the packet "
                "flows are cut once or twice more at the start and recover from a lower rate. "
                f"At N = 2 they reach their steady rate at {t2['packet (mean of flows, 1 ms bins)']} "
                f"ms, the tau* = 50 us model at {t2['fluid tau*=50us']} ms; "
                f"tau* = 85 us ({t2.get('fluid tau*=85us')} ms) fits the start better"
            ),
            (
                "the model's marks are independent draws with p(q) of a smooth queue; at "
                f"N = 10 its fixed point is q = {q10['fluid_mean']:.0f} KB (mean from "
                f"{steady} ms), just under Kmax = 200 KB where p jumps from 1 % to 1. The "
                "packet queue is a sawtooth that crosses Kmax "
                f"({q10['packet_fraction_above_kmax']:.0%} of the time): every packet is then "
                "marked, all flows are cut together and the queue drains to empty "
                f"({q10['packet_fraction_empty']:.0%} of the time), so the steady queue is "
                f"{q10['packet_mean']:.0f} KB (p99 {q10['packet_p99']:.0f} KB) and the link "
                f"carries {1 - agg10['packet'] / agg10['fluid']:.1%} less than the model says. "
                f"At N = 2 the fixed point ({q2['fluid_mean']:.0f} KB) is far from the cliff "
                f"and the queues agree ({q2['packet_mean']:.0f} KB packet). Marking at dequeue "
                "(mark_at = 'dequeue', the authors' ns-3 model) shortens the loop and keeps "
                f"the link busy (N = 10, seed 1: mean {dq.mean():.0f} KB, "
                f"{(dq == 0).mean():.0%} empty, {deq_agg:.1f} Gb/s)"
            ),
        ],
        "verdict": (
            "per-flow rates match within the packet model's own noise once the start is "
            "over (mean |difference| from 5 ms over the fair share: "
            + ", ".join(f"{q.ours:.3f}" for q in quantities[::2])
            + " for N = 2, 10; the packet rates' own scatter: "
            + ", ".join(
                f"{also[f'N={n}']['packet_per_flow_noise_gbps'] * n / (LINE / 1e9):.3f}"
                for n in FLOWS
            )
            + "), and the ramp after the start has the same slope "
            "(RAI per Tinc, 0.73 Gb/s per ms); the model misses the depth of the start's cut "
            "(tau*-dependent) and, at N = 10, the queue and the ~6 % of throughput that the "
            "packet model loses to its Kmax sawtooth (the failing aggregate quantity)"
        ),
        "simulator_changes": "none: no bug found in either model",
    }
    passed = write_result(
        args.results,
        experiment="dcqcn-fig10-fluid",
        figure="DCQCN SIGCOMM'15, Figure 10 (spec E7)",
        setup=f"single 40 Gbps switch, 1 us links, N in {FLOWS} RoCE WRITE senders to one "
        "receiver, all at line rate at t=0, endless; DCQCN paper profile (g 1/256, "
        "K = Tinc = 55 us, B 10 MB, F 5, RAI 40 Mbps, N 50 us; min rate 100 Mbps), RED at "
        "enqueue 5 KB/200 KB/1 % (recalled values); PFC on, data class 1 lossless "
        "(12 MB dynamic threshold, beta 8), ACK/CNP class 0 first; "
        f"{duration_ms} ms, seeds {list(seeds)}. Fluid: equations (5)-(9) with the same "
        f"parameters, Euler step 1 us, tau* = {DELAY_US} us (not in the paper). Distance: "
        f"per-flow 1 ms wire rates, mean |packet - fluid| over flows, bins from {FROM_MS} ms "
        f"and seeds, over the fair share; tolerance {MAD_TOLERANCE} (about twice the "
        "packet model's own bin-to-bin scatter, which a fluid model cannot follow; "
        f"the paper says only 'closely matches'); aggregates within {AGG_TOLERANCE:.0%}"
        + (" (QUICK)" if args.quick else ""),
        quantities=quantities,
        also_measured=also,
        notes=notes,
        plot="fig10-n2.png",
        plots=[f"fig10-n{n}.png" for n in FLOWS],
        data=[f"fig10-n{n}.csv" for n in FLOWS],
    )
    print("pass" if passed else "FAIL")
    return 0 if passed else 1


def plot(n, pkt, fluid, qt, qkb, duration_ms, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, axq) = plt.subplots(
        2, 1, figsize=(7, 5.6), sharex=True, gridspec_kw={"height_ratios": [2.2, 1]}
    )
    rows = []
    t_bins = np.arange(pkt.shape[0]) * BIN_MS + BIN_MS / 2
    for i in range(n):
        ax.step(
            t_bins,
            pkt[:, i],
            where="mid",
            lw=0.8,
            alpha=0.75,
            label="packet level, per flow (1 ms bins)" if i == 0 else None,
        )
        rows += [
            ("rate_gbps", f"packet flow {i}", t, v) for t, v in zip(t_bins, pkt[:, i])
        ]
    styles = {25: ("0.55", ":"), 50: ("k", "-"), 85: ("0.35", "--")}
    # The fluid samples every 10 us through the start (2 ms), every 100 us after.
    t_fl = next(iter(fluid.values()))["t_ms"]
    keep = (t_fl < 2) | (np.arange(len(t_fl)) % 10 == 0)
    for d, f in fluid.items():
        color, ls = styles.get(d, ("k", "-"))
        ax.plot(
            f["t_ms"][keep],
            f["rc"][keep],
            color=color,
            ls=ls,
            lw=1.8 if d == DELAY_US else 1.1,
            label=f"fluid model, every flow (tau* = {d} us)",
        )
        rows += [
            ("rate_gbps", f"fluid tau*={d}us", t, v)
            for t, v in zip(f["t_ms"][keep], f["rc"][keep])
        ]
    ax.set_ylabel("rate per flow (Gb/s)")
    ax.set_ylim(0, 41)
    ax.set_title(f"DCQCN, {n} flows at line rate into one 40 Gbps port (Fig. 10)")
    ax.legend(fontsize=7, loc="upper right")
    # The packet queue every 10 us is too dense to read: its mean per 100 us.
    width = 0.1
    k = np.floor(qt / width).astype(int)
    counts = np.bincount(k)
    mean_q = np.bincount(k, weights=qkb) / np.maximum(counts, 1)
    tq = np.arange(len(mean_q)) * width + width / 2
    axq.plot(tq, mean_q, lw=0.8, color="tab:blue", label="packet level (100 us means)")
    rows += [("queue_kb", "packet", t, v) for t, v in zip(tq, mean_q)]
    for d, f in fluid.items():
        color, ls = styles.get(d, ("k", "-"))
        tk, qk = f["t_ms"][keep], f["queue_kb"][keep]
        axq.plot(tk, qk, color=color, ls=ls, lw=1.1, label=f"fluid, tau* = {d} us")
        rows += [("queue_kb", f"fluid tau*={d}us", t, v) for t, v in zip(tk, qk)]
    axq.set_yscale("symlog", linthresh=10)
    axq.axhline(5, color="0.7", lw=0.6)
    axq.axhline(200, color="0.7", lw=0.6)
    axq.set_ylabel("queue (KB)")
    axq.set_xlabel("time (ms)")
    axq.set_xlim(0, duration_ms)
    axq.legend(fontsize=6, loc="upper right", ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    plt.close(fig)
    with open(path.with_suffix(".csv"), "w") as f:
        f.write("panel,series,t_ms,value\n")
        f.writelines(f"{p},{s},{t:.3f},{v:.4f}\n" for p, s, t, v in rows)


if __name__ == "__main__":
    sys.exit(main())
