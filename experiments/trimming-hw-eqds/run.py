#!/usr/bin/env python3
"""Issue 29, item 8: EQDS over the trimming paper's hardware switches ("Packet trimming on
real switch hardware", §3-§6: Tofino with ingress meters, deflect-on-drop and the
feedback loop; Mirror-on-Drop for Trident 4 / Spectrum 2) in place of the ideal
output-queued trimming switch, on two of the EQDS paper's (NSDI'22) experiments:

(a) the 512-to-1 native EQDS incast of the paper's htsim setting (k = 16 fat tree at
    100 Gbps, 4150 B MTU, 35-packet trimming queues, window 50, spraying), 128 KiB and
    256 KiB per sender: the last flow's completion against the ideal switch's, trims by
    path, the DoD (recirculation) queue's peak and the invariant's losses;
(b) experiments/fig8-permutation's TCP over EQDS and NDP permutations (k = 16 at
    10 Gbps): the mean per-flow throughput against the ideal switch's.

The reference is the simulated ideal switch of the same case (the trimming paper's
"optimal", its Q12), so the paper value of every ratio is 1. Switches: `ports_per_pipeline
= k / 4` stands for a four-pipeline chip (a k = 16 switch has 16 ports, a Tofino 1 has
4 x 16: our choice, as the paper never puts a Tofino in a fat tree); one pipeline per
switch (ports_per_pipeline = k) is also measured for Tofino. MoD gets one microsecond
more data buffer than the others, as the trimming paper's §6.1 gives it for the
recirculated headers (10 -> 20 packets at 1500 B and 100 Gb/s). Everything else is the
model's default: recirculation at the switch's fastest port, 1 us of recirculation
latency, meter bursts of the data queue's bytes plus the packet on the wire, t0 = 6 us,
t1 = 24 us.

Findings (result.json's notes have the numbers): every ratio is within 1.4% of 1 (incast
last completion 0.997-1.007 of the Ideal's; permutation throughput 0.997-1.014), with no
packet lost on any switch. Tofino with 4 pipelines trims 5% (TCP over EQDS) and 7% (NDP)
more than the Ideal in the permutation, its DoD queue peaks at 5 packets there and at 26
in the incast. One pipeline per switch trims 27-36% more. This experiment found that a
meter burst of the data queue's bytes alone runs out one packet before the TM would (the
limit leaves out the packet on the wire), and the default now includes that packet: at
k = 8 it takes NDP's one-pipeline trims from 1,113 to 670 against the Ideal's 519; at
k = 16 the excess stayed (+20.5% and +35.5% before), so the wire packet is not the whole
cause there, and the rest is not explained yet. MoD's extra microsecond of buffer is
what cuts its TCP-over-EQDS trims by 31% and lifts its throughput by 1.4%. The hardware
model took about 1.4 times as long as the Ideal switch, MoD (without meters) as long as
Tofino: the cost was on the path every switch arrival takes (`ArriveFrom`, which the run
loop did not prefetch). With that prefetch added, 1.1-1.3 times (BENCHMARKS.md).

Usage: python3 experiments/trimming-hw-eqds/run.py [--quick] [--results DIR] [--ray ADDR]
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import statistics
import subprocess
import sys
from pathlib import Path

import matplotlib.pyplot as plt
import polars as pl
from eqds_lab import Quantity, print_quantities, write_result
from eqds_lab.experiment import parse_args, run_case
from eqds_lab.plots import save
from eqds_lab.sweep import simulator
from eqds_lab.switch_tests import hw_summary

HERE = Path(__file__).resolve().parent
FIG8 = HERE.parent / "fig8-permutation"
INCAST = HERE / "scenario-incast.toml"
K = 16
#: One microsecond of line rate, in bytes, at each experiment's link rate.
US_BYTES = {"incast": 100e9 * 1e-6 / 8, "fig8": 10e9 * 1e-6 / 8}
INCAST_MTU = 4150
INCAST_QUEUE = 35
#: MoD's +1 us of data buffer at 100 Gb/s in whole 4150 B packets: 12,500 B = 3.01
#: packets, so 3 (35 -> 38).
MOD_INCAST_EXTRA = int(US_BYTES["incast"] // INCAST_MTU)
#: fig8's TCP over EQDS counts its data queue in bytes (72,000 B): +1 us = +1,250 B.
EQDS_QUEUE_BYTES = 72_000
MOD_EQDS_QUEUE_BYTES = EQDS_QUEUE_BYTES + int(US_BYTES["fig8"])
#: fig8's NDP counts 8 packets of 9000 B: 1 us (1,250 B) is less than one packet, so
#: MoD keeps 8 (a byte limit of 73,250 B would hold the same 8 packets).
NDP_QUEUE = 8
SIZES = ["128KiB", "256KiB"]
#: fig8's own QUICK window (its run.py), used here for the full run too: the full 100 ms
#: of TCP over EQDS took 78 s per 30 ms of simulated time on this machine (about 4.3
#: min per run, 16 runs), so every model runs the shortened window, seed 1.
WINDOW = {"stop.time": "30ms", "stop.warmup": "10ms"}
TOFINO = "Tofino, 4 pipelines"
TOFINO1 = "Tofino, 1 pipeline"
MOD = "MoD, 4 pipelines"
IDEAL = "Ideal"
PERF_REPEATS = 3


def trimming(limit: str) -> str:
    return f"{{ kind = 'trimming', {limit} }}"


def models(k: int, queue: str, mod_queue: str) -> dict[str, dict[str, str]]:
    """The `--set` overrides of each switch model, given the ideal's data queue and
    MoD's (one microsecond deeper)."""
    return {
        IDEAL: {"switch.model": "'output_queued'", "switch.queue": trimming(queue)},
        TOFINO: {
            "switch.model": "'tofino'",
            "switch.queue": trimming(queue),
            "switch.pipelines.ports_per_pipeline": str(k // 4),
        },
        MOD: {
            "switch.model": "'mirror_on_drop'",
            "switch.queue": trimming(mod_queue),
            "switch.pipelines.ports_per_pipeline": str(k // 4),
        },
        TOFINO1: {
            "switch.model": "'tofino'",
            "switch.queue": trimming(queue),
            "switch.pipelines.ports_per_pipeline": str(k),
        },
    }


def hw_counters(out: Path) -> dict[str, int]:
    """Trims by path, recirculation peak and losses of a run, from summary.json (the
    totals include the ideal switch's traffic-manager trims)."""
    summary = json.loads((out / "summary.json").read_text())
    links = summary["links"].values()
    hw = hw_summary(out)
    return {
        "trims": sum(link["trims"] for link in links),
        "returned_headers": sum(link["returns"] for link in links),
        "drops": sum(link["drops"] for link in links),
        "ingress_trims": hw.get("ingress_trims", 0),
        "deflections": hw.get("deflections", 0),
        "dod_trims": hw.get("dod_trims", 0),
        "mod_trims": hw.get("mod_trims", 0),
        "notifications": hw.get("notifications", 0),
        "recirc_peak_packets": hw.get("recirc_peak_packets", 0),
        "recirc_drops": hw.get("recirc_drops", 0),
        "invariant_losses": hw.get("invariant_losses", 0),
    }


def perf(out: Path) -> dict[str, float]:
    p = json.loads((out / "perf.json").read_text())
    return {
        "events": p["events"],
        "wall_time_s": round(p["wall_time_s"], 3),
        "events_per_s_millions": round(p["events_per_second"] / 1e6, 3),
    }


def incast_case(args, k: int, senders: int, size: str, name: str, fixed: dict) -> dict:
    overrides = fixed | {"workload.size": f"'{size}'"}
    if k != K:
        overrides |= {"topology.k": str(k), "workload.senders": str(senders)}
    sweep = run_case(args, INCAST, f"incast-{size}-{slug(name)}", overrides)
    out = sweep.runs()[0].out
    flows = pl.read_csv(out / "flows.csv")
    if flows["end_ps"].null_count():
        raise SystemExit(f"{out}: a flow did not complete")
    payload = INCAST_MTU - 64
    packets = -(-int(flows["size_bytes"][0]) // payload) * len(flows)
    bound_ms = packets * INCAST_MTU * 8 / 100e9 * 1e3
    last_ms = float(flows["end_ps"].max()) / 1e9
    return {
        "last_completion_ms": round(last_ms, 4),
        "over_receiver_line_rate": round(last_ms / bound_ms, 4),
        "delivered_bytes": int(flows["bytes_delivered"].sum()),
        **hw_counters(out),
        "perf": perf(out),
    }


def fig8_case(
    args, k: int, transport: str, name: str, fixed: dict, tag: str = ""
) -> dict:
    scenario = FIG8 / f"scenario-{transport}.toml"
    overrides = fixed | WINDOW | ({"topology.k": str(k)} if k != K else {})
    sweep = run_case(args, scenario, f"{tag}fig8-{transport}-{slug(name)}", overrides)
    out = sweep.runs()[0].out
    rates = sorted(pl.read_csv(out / "flows.csv")["mean_throughput_bps"].to_list())
    fractions = [r / 10e9 for r in rates]
    return {
        "mean_fraction": round(statistics.mean(fractions), 5),
        "p10_fraction": round(fractions[len(fractions) // 10], 4),
        "min_fraction": round(fractions[0], 4),
        "fractions": fractions,
        **hw_counters(out),
        "perf": perf(out),
    }


def slug(name: str) -> str:
    return name.split(",")[0].lower() + ("1" if "1 pipeline" in name else "")


def measure_perf(args, k: int, senders: int, incast: dict, eqds: dict) -> dict:
    """Wall time and events/s on the ideal, the 4-pipeline Tofino and MoD switch, each run
    alone, back to back and alternating, `PERF_REPEATS` times (the best of each): the
    256 KiB incast, and fig8's TCP over EQDS over its first 5 ms (the long case; the
    experiment's own runs go two at a time and are noisier). The hardware model takes
    every arrival at a switch through `ArriveFrom`, which the engine does not
    prefetch."""
    binary = simulator()
    small = {"topology.k": str(k), "workload.senders": str(senders)} if k != K else {}
    fig8_small = {"topology.k": str(k)} if k != K else {}
    cases = {
        "incast_256KiB": (INCAST, incast, {"workload.size": "'256KiB'"} | small),
        "fig8_eqds_5ms": (
            FIG8 / "scenario-eqds.toml",
            eqds,
            {"stop.time": "5ms", "stop.warmup": "1ms"} | fig8_small,
        ),
    }
    best: dict[str, dict[str, dict]] = {}
    root = args.results / ("runs-quick" if args.quick else "runs") / "perf"
    for case, (scenario, models_, extra) in cases.items():
        best[case] = {}
        for rep in range(PERF_REPEATS):
            for name in (IDEAL, TOFINO, MOD):
                out = root / f"{case}-{slug(name)}-{rep}"
                cmd = [str(binary), "run", str(scenario), "--out", str(out), "--quiet"]
                for key, value in (models_[name] | extra).items():
                    cmd += ["--set", f"{key}={value}"]
                subprocess.run(cmd, check=True)
                p = perf(out)
                if (
                    name not in best[case]
                    or p["wall_time_s"] < best[case][name]["wall_time_s"]
                ):
                    best[case][name] = p
        for name, key in ((TOFINO, "tofino"), (MOD, "mod")):
            best[case][f"{key}_over_ideal_wall_time"] = round(
                best[case][name]["wall_time_s"] / best[case][IDEAL]["wall_time_s"], 3
            )
    return best


def main() -> int:
    args = parse_args(__doc__, HERE, quick="k = 8 (127-to-1 incast, fig8 at k = 8)")
    k = 8 if args.quick else K
    senders = k**3 // 4 - 1 if args.quick else 512
    incast_models = models(
        k,
        f"data_packets = {INCAST_QUEUE}",
        f"data_packets = {INCAST_QUEUE + MOD_INCAST_EXTRA}",
    )
    fig8_models = {
        "eqds": models(
            k,
            f"data_bytes = '{EQDS_QUEUE_BYTES}B'",
            f"data_bytes = '{MOD_EQDS_QUEUE_BYTES}B'",
        ),
        "ndp": models(k, f"data_packets = {NDP_QUEUE}", f"data_packets = {NDP_QUEUE}"),
    }

    # Two runs at a time (the machine's two cores); the ideal and the Tofino run of a
    # case are submitted together, so their perf.json numbers saw the same load.
    jobs = {}
    with cf.ThreadPoolExecutor(max_workers=2) as pool:
        for transport, cases in fig8_models.items():
            for name, fixed in cases.items():
                jobs[("fig8", transport, name)] = pool.submit(
                    fig8_case, args, k, transport, name, fixed
                )
        for size in SIZES:
            for name, fixed in incast_models.items():
                jobs[("incast", size, name)] = pool.submit(
                    incast_case, args, k, senders, size, name, fixed
                )
        results = {key: job.result() for key, job in jobs.items()}
    speed = measure_perf(args, k, senders, incast_models, fig8_models["eqds"])
    checks = diagnostics(args)

    incast = {
        size: {n: results[("incast", size, n)] for n in incast_models} for size in SIZES
    }
    fig8 = {
        t: {n: results[("fig8", t, n)] for n in fig8_models[t]} for t in fig8_models
    }
    for size, cases in incast.items():
        for name, r in cases.items():
            r["over_ideal"] = round(
                r["last_completion_ms"] / cases[IDEAL]["last_completion_ms"], 4
            )
            print(f"incast {size} {name}: {without(r, 'perf')}")
    for transport, cases in fig8.items():
        for name, r in cases.items():
            r["over_ideal"] = round(
                r["mean_fraction"] / cases[IDEAL]["mean_fraction"], 4
            )
            print(f"fig8 {transport} {name}: {without(r, 'fractions', 'perf')}")

    label = {"eqds": "TCP over EQDS", "ndp": "NDP"}
    quantities = []
    for size in SIZES:
        for name in (TOFINO, MOD):
            quantities.append(
                Quantity(
                    f"{senders}-to-1 native EQDS incast, {size} per sender: last completion, "
                    f"{name} / Ideal switch",
                    1.0,
                    incast[size][name]["over_ideal"],
                    0.10,
                )
            )
    for transport in fig8:
        for name in (TOFINO, MOD):
            quantities.append(
                Quantity(
                    f"fig8 permutation, {label[transport]}: mean per-flow throughput, "
                    f"{name} / Ideal switch",
                    1.0,
                    fig8[transport][name]["over_ideal"],
                    0.05,
                )
            )
    hardware = [r for key, r in results.items() if key[2] != IDEAL]
    losses = sum(r["invariant_losses"] for r in hardware)
    quantities.append(
        Quantity(
            f"every hardware-switch run ({len(hardware)}): invariant_losses = 0 (1 = yes)",
            1,
            int(losses == 0),
            0,
        )
    )
    print_quantities(quantities)

    args.results.mkdir(parents=True, exist_ok=True)
    plot(incast, fig8, label, args.results / "eqds-hw.png")
    also = {
        "incast": {
            size: {n: without(r, "perf") for n, r in cases.items()}
            for size, cases in incast.items()
        },
        "fig8": {
            t: {n: without(r, "fractions", "perf") for n, r in cases.items()}
            for t, cases in fig8.items()
        },
        f"perf_best_of_{PERF_REPEATS}": speed,
        "diagnostics_k8": checks,
        "perf_fig8_eqds_run": {n: fig8["eqds"][n]["perf"] for n in (IDEAL, TOFINO)},
        "perf_fig8_eqds_tofino_over_ideal_wall_time": round(
            fig8["eqds"][TOFINO]["perf"]["wall_time_s"]
            / fig8["eqds"][IDEAL]["perf"]["wall_time_s"],
            3,
        ),
        "invariant_losses_total": losses,
    }
    quick = " (QUICK: k = 8, 127-to-1 incast, 2 pipelines of 4 ports / 1 of 8)"
    passed = write_result(
        args.results,
        experiment="trimming-hw-eqds",
        figure="trimming paper §6 switch models under EQDS (issue 29, item 8): "
        "EQDS NSDI'22 512-to-1 incast and Figure 8",
        setup=(
            "Switch models on every switch of a k = 16 fat tree: Ideal (output-queued "
            "trimming switch), Tofino (ingress meters at 100/50/25% of line rate, DoD, "
            "the feedback loop with t0 = 6 us, t1 = 24 us, notifications to every "
            "pipeline 1 us after the DoD dequeue), MoD (the TM trims, the header "
            "recirculates through the pipeline's mirror port); 4 pipelines of 4 ports "
            "per switch [choice: a 4-pipeline chip], Tofino with 1 pipeline of 16 ports "
            "also measured; recirculation at the switch's fastest port, 1 us latency. "
            f"(a) 512-to-1 native EQDS incast into host 0 (tests/common/mod.rs "
            f"native_incast(16, 512, size)): 100 Gbps, 1 us links, 4150 B MTU, spraying, "
            f"{INCAST_QUEUE}-packet trimming queues ({INCAST_QUEUE + MOD_INCAST_EXTRA} for "
            f"MoD: +1 us = 12,500 B = {MOD_INCAST_EXTRA} whole packets), window 50 "
            "packets, 128 KiB and 256 KiB per sender, run until every flow completes. "
            "(b) experiments/fig8-permutation's scenario-eqds.toml (TCP NewReno over EQDS, "
            f"{EQDS_QUEUE_BYTES:,} B data queues, MoD {MOD_EQDS_QUEUE_BYTES:,} B) and "
            f"scenario-ndp.toml (NDP, {NDP_QUEUE}-packet queues for every model: +1 us is "
            "1,250 B, less than one 9000 B packet), 10 Gbps, both over the window "
            "10-30 ms (fig8's own QUICK window: its full 100 ms took about 4.3 min per "
            "run here), seed 1. Reference: the Ideal run of the same case"
            + (quick if args.quick else "")
        ),
        quantities=quantities,
        also_measured=also,
        plot="eqds-hw.png",
        data="eqds-hw.csv",
        notes=notes(incast, fig8, speed, checks),
    )
    print("pass" if passed else "FAIL")
    return 0 if passed else 1


def diagnostics(args) -> dict[str, dict]:
    """Two side checks at k = 8 (cheap), for what the notes say about trims:
    - a single pipeline's meter with a burst of the data queue's byte capacity alone
      (which, as every limit here, leaves out the packet on the wire) is one packet
      shallower than its traffic manager; the default burst includes that packet;
    - MoD's trims in TCP over EQDS come from its extra 1,250 B of buffer, not from
      the mirror path: MoD at the Ideal's 72,000 B, and the Ideal at MoD's 73,250 B."""
    k = 8
    one = models(k, f"data_packets = {NDP_QUEUE}", f"data_packets = {NDP_QUEUE}")
    ideal_eqds = trimming(f"data_bytes = '{EQDS_QUEUE_BYTES}B'")
    more = trimming(f"data_bytes = '{MOD_EQDS_QUEUE_BYTES}B'")
    eqds = models(
        k,
        f"data_bytes = '{EQDS_QUEUE_BYTES}B'",
        f"data_bytes = '{MOD_EQDS_QUEUE_BYTES}B'",
    )
    room = NDP_QUEUE * 9000
    cases = {
        "NDP, Ideal": ("ndp", "ideal", one[IDEAL]),
        f"NDP, Tofino 1 pipeline, meter_burst {room:,} B": (
            "ndp",
            "t1room",
            one[TOFINO1] | {"switch.pipelines.meter_burst": f"'{room}B'"},
        ),
        "NDP, Tofino 1 pipeline, meter_burst 81,000 B (default)": (
            "ndp",
            "t1",
            one[TOFINO1],
        ),
        "TCP over EQDS, Ideal, 72,000 B": ("eqds", "ideal", eqds[IDEAL]),
        "TCP over EQDS, Ideal, 73,250 B": (
            "eqds",
            "ideal73",
            eqds[IDEAL] | {"switch.queue": more},
        ),
        "TCP over EQDS, MoD, 72,000 B": (
            "eqds",
            "mod72",
            eqds[MOD] | {"switch.queue": ideal_eqds},
        ),
        "TCP over EQDS, MoD, 73,250 B": ("eqds", "mod", eqds[MOD]),
    }
    out = {}
    for label, (transport, tag, fixed) in cases.items():
        r = fig8_case(args, k, transport, tag, fixed, tag="k8-")
        out[label] = {
            key: r[key]
            for key in (
                "mean_fraction",
                "trims",
                "ingress_trims",
                "dod_trims",
                "mod_trims",
            )
        }
    return out


def without(r: dict, *keys: str) -> dict:
    return {k: v for k, v in r.items() if k not in keys}


def notes(incast: dict, fig8: dict, speed: dict, checks: dict) -> list[str]:
    big = incast[SIZES[-1]]
    eqds = fig8["eqds"]

    def excess(case: dict, name: str) -> str:
        return f"{case[name]['trims'] / case[IDEAL]['trims'] - 1:+.1%}"

    trims = "; ".join(
        f"{label}: Ideal {c[IDEAL]['trims']}, Tofino 4 pipelines {c[TOFINO]['trims']} "
        f"({excess(c, TOFINO)}: {c[TOFINO]['ingress_trims']} at ingress, "
        f"{c[TOFINO]['dod_trims']} after deflection, DoD peak "
        f"{c[TOFINO]['recirc_peak_packets']}), Tofino 1 pipeline {c[TOFINO1]['trims']} "
        f"({excess(c, TOFINO1)}: {c[TOFINO1]['ingress_trims']} at ingress), MoD "
        f"{c[MOD]['trims']} ({excess(c, MOD)})"
        for label, c in (("TCP over EQDS", fig8["eqds"]), ("NDP", fig8["ndp"]))
    )
    d = checks
    room = next(k for k in d if "meter_burst" in k and "default" not in k)
    default = "NDP, Tofino 1 pipeline, meter_burst 81,000 B (default)"
    return [
        (
            "Every ratio is within a few percent of 1: the hardware switches neither slow "
            "the incast's last flow nor the permutation's flows. The 10-30 ms window "
            f"gives the Ideal switch {fig8['eqds'][IDEAL]['mean_fraction']} of line rate "
            f"for TCP over EQDS and {fig8['ndp'][IDEAL]['mean_fraction']} for NDP, what "
            "experiments/fig8-permutation measures over its full windows (0.898 over "
            "20-100 ms, 3 seeds; 0.921 over 5-30 ms): the shortened window does not "
            "change the regime."
        ),
        (
            f"Incast trims by path ({SIZES[-1]} per sender): Ideal {big[IDEAL]['trims']}, "
            "all in the TM; Tofino with 4 pipelines "
            f"{big[TOFINO]['ingress_trims']} at ingress and {big[TOFINO]['dod_trims']} "
            f"after deflection (DoD peak {big[TOFINO]['recirc_peak_packets']} packets, "
            f"{big[TOFINO]['notifications']} notifications = 4 pipelines x "
            f"{big[TOFINO]['deflections']} DoD departures); with 1 pipeline "
            f"{big[TOFINO1]['ingress_trims']} and {big[TOFINO1]['dod_trims']} (peak "
            f"{big[TOFINO1]['recirc_peak_packets']}): one pipeline's meter sees all of a "
            "port's traffic and trims nearly all of it before the TM, while each of "
            "four pipelines' meters passes up to line rate and the TM overflows into "
            f"DoD; MoD {big[MOD]['mod_trims']} mirrored headers (peak "
            f"{big[MOD]['recirc_peak_packets']}). The total is the same for every model "
            "(within 0.5%): the incast's trims come from the senders' first windows, "
            "whatever trims them. Returned headers (the receiver ToR's header queue "
            f"overflowing, back to the sender) are alike too: {big[IDEAL]['returned_headers']} "
            f"Ideal, {big[TOFINO]['returned_headers']} Tofino, {big[MOD]['returned_headers']} "
            "MoD. No packet was lost anywhere (drops and invariant_losses 0 in every run)."
        ),
        (
            f"Permutation trims over the whole 30 ms: {trims}. With 4 pipelines Tofino "
            f"trims {excess(eqds, TOFINO)} (TCP over EQDS) and "
            f"{excess(fig8['ndp'], TOFINO)} (NDP) against the Ideal, to compare with the "
            "trimming paper's 'at most 10% more (6% on average)' of its Figure 6, and "
            "its DoD queue peaks at "
            f"{max(c[TOFINO]['recirc_peak_packets'] for c in fig8.values())} packets."
        ),
        (
            "One pipeline per switch sees at its meter exactly the traffic its TM does. "
            "A meter burst of the data queue's byte capacity alone leaves out the packet "
            "on the wire (as every queue limit here), so the meter runs out one packet "
            "before the TM would; this experiment found it, and the default burst now "
            "includes that packet. At k = 8 (diagnostics_k8, NDP): Ideal "
            f"{d['NDP, Ideal']['trims']} trims, Tofino 1 pipeline with "
            f"{room.split('meter_burst ')[1]} {d[room]['trims']} and with the default "
            f"{d[default]['trims']} ({d[default]['ingress_trims']} at ingress). The "
            "throughput hardly changes either way (it is pull-clocked). At k = 16 one "
            "pipeline still trims more than the Ideal (above; +20.5% and +35.5% with the "
            "burst of the waiting room alone): the wire packet is not the whole cause "
            "there, and the rest is not explained yet."
        ),
        (
            "MoD's TCP-over-EQDS run trims less and goes faster than the Ideal because of "
            "its extra microsecond of buffer (1,250 B on 72,000 B), not its mirror path: "
            "at k = 8, Ideal at 72,000 B "
            f"{d['TCP over EQDS, Ideal, 72,000 B']['trims']} trims and at 73,250 B "
            f"{d['TCP over EQDS, Ideal, 73,250 B']['trims']}; MoD at 72,000 B "
            f"{d['TCP over EQDS, MoD, 72,000 B']['trims']} and at 73,250 B "
            f"{d['TCP over EQDS, MoD, 73,250 B']['trims']}. The 1,250 B hold the "
            "108-byte EQDS packets that carry TCP's ACKs beside the 8 full packets. NDP's "
            "queue counts whole 9000 B packets, so its MoD gets no extra buffer and its "
            "ratio is 1.000."
        ),
        (
            "Speed: the hardware model takes every arrival at a switch through "
            "ArriveFrom, which the engine does not prefetch. Best of "
            f"{PERF_REPEATS} runs alone, alternating: "
            + "; ".join(
                f"{case}: Ideal {p[IDEAL]['wall_time_s']} s at "
                f"{p[IDEAL]['events_per_s_millions']} M events/s, Tofino "
                f"{p[TOFINO]['wall_time_s']} s at {p[TOFINO]['events_per_s_millions']} "
                f"M events/s ({p[TOFINO]['events']} events against {p[IDEAL]['events']}), "
                f"wall time x{p['tofino_over_ideal_wall_time']}; MoD "
                f"{p[MOD]['events_per_s_millions']} M events/s, wall time "
                f"x{p['mod_over_ideal_wall_time']}"
                for case, p in speed.items()
            )
            + ". The experiment's own fig8 TCP-over-EQDS runs (two at a time): Ideal "
            f"{eqds[IDEAL]['perf']['wall_time_s']} s at "
            f"{eqds[IDEAL]['perf']['events_per_s_millions']} M events/s, Tofino "
            f"{eqds[TOFINO]['perf']['wall_time_s']} s at "
            f"{eqds[TOFINO]['perf']['events_per_s_millions']} M events/s. The machine "
            "is shared with other runs (2 cores): wall times are noisy."
        ),
    ]


def plot(incast: dict, fig8: dict, label: dict, path: Path) -> None:
    """Left: each incast's last completion over the Ideal's; right: each permutation's
    mean per-flow throughput over the Ideal's; the band is the tolerance."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    names = list(next(iter(incast.values())))
    width = 0.8 / len(names)
    rows = []
    for ax, groups, tol, title in (
        (
            left,
            {f"incast {s}": c for s, c in incast.items()},
            0.10,
            "last completion / Ideal",
        ),
        (
            right,
            {label[t]: c for t, c in fig8.items()},
            0.05,
            "mean throughput / Ideal",
        ),
    ):
        for i, name in enumerate(names):
            ys = [groups[g][name]["over_ideal"] for g in groups]
            xs = [j + (i - (len(names) - 1) / 2) * width for j in range(len(groups))]
            ax.bar(xs, ys, width, label=name)
            rows += [[title, g, name, y] for g, y in zip(groups, ys)]
        ax.axhspan(1 - tol, 1 + tol, color="0.9", zorder=-1)
        ax.set_xticks(range(len(groups)), list(groups))
        ax.set_ylim(0.8, 1.15)
        ax.set_ylabel(title)
        ax.legend(fontsize=8, loc="lower right")
    fig.suptitle(
        "EQDS on hardware trimming switches against the ideal switch (k = 16 fat tree)"
    )
    save(fig, path, ["quantity", "case", "switch", "ratio_to_ideal"], rows)


if __name__ == "__main__":
    sys.exit(main())
