#!/usr/bin/env python3
"""AFQ paper (NSDI'18), Figure 7 (a-c) (digest A1): the hardware testbed in simulation.

Four servers answer four clients through one switch with 200 us of forwarding latency
(the AFQ prototype's aggregation hop; scenario.toml has the setup and its sources),
10 Gbps links, 512 KB a port, enterprise flow sizes, Poisson arrivals sized for a load
of the clients' 40 Gbps. Schemes (§6.1): Cubic over drop-tail, DCTCP (K = 65 packets)
over ECN drop-tail, DCTCP over AFQ, packet-pair over AFQ (AFQ: 32 queues, BpR 1500 B,
2 x 16384 sketch, per-flow marks at 8 rounds).

Per scheme and load: mean and 99th percentile of each flow's FCT over its idle FCT,
for all flows and for short flows (< 100 KB). The idle FCT is analytic: the flow alone
at line rate from its first byte, no slow start and no queue, (payload + 64 B per
packet) at 10 Gbps, plus the last packet's trip (two 1 us links, the switch latency,
its serialisation at the switch). Flows that start in the first 10 ms or the last
50 ms are not measured; a measured flow still running at the end counts with its time
so far (a lower bound, so that starving flows are not left out). Each run is long
enough for about 30,000 flows (9.5 s of simulated time at 10 %, 1.1 s at 90 %).

Findings (numbers in result.json's notes): AFQ improves DCTCP by 1.2x on average and
1.7x at the tail at 90 % load (paper: 2x), and the gains over Cubic grow with load,
but nowhere near 10x: most enterprise flows are one packet, whose FCT a queue can at
most double or triple at this 405 us round trip. Packet-pair's first round trip costs
flows of 3-10 packets what TCP's initial window sends at once, and its long flows
overshoot AFQ's 48 KB per-flow horizon at this round trip; without the switch
latency it beats DCTCP over AFQ from 50 % load on (the tail from 30 %), as in the
paper's simulations.

Usage: python3 experiments/afq-fig7-testbed/run.py [--quick] [--results DIR] [--ray ADDR]
"""

import math
import sys
from pathlib import Path

import polars as pl
from eqds_lab import Quantity, print_quantities, write_result
from eqds_lab.experiment import parse_args, percentile, run_case
from eqds_lab.plots import save

HERE = Path(__file__).resolve().parent
RATE_BPS = 10e9
MSS = 1436
HEADER = 64
LINK_US = 1.0
#: The bundled enterprise CDF's mean (its header), for the run lengths only.
MEAN_SIZE = 157_357
FLOWS_PER_RUN = 30_000
WARMUP_S = 0.010
TAIL_S = 0.050
SHORT = 100_000
BUFFER = "limit_bytes = '512KB'"
#: label -> (protocol, queue, overrides)
SCHEMES = {
    "Cubic, drop-tail": ("cubic", f"{{ kind = 'drop_tail', {BUFFER} }}", {}),
    "DCTCP, ECN K = 65": (
        "dctcp",
        f"{{ kind = 'ecn', {BUFFER}, k_packets = 65 }}",
        {},
    ),
    "DCTCP, AFQ": ("dctcp", f"{{ kind = 'afq', {BUFFER} }}", {}),
    "packet-pair, AFQ": ("packet_pair", f"{{ kind = 'afq', {BUFFER} }}", {}),
}
#: Not the paper's, and in no quantity: DCTCP and packet-pair over AFQ without the
#: switch's 200 us (a round trip of about 10 us, the paper's simulations'), to show
#: what the testbed's long round trip does to packet-pair; and DCTCP with the
#: simulations' minimum RTO of 200 us instead of Linux's 200 ms (see the notes).
DIAGNOSTIC = {
    "DCTCP, AFQ, no switch latency": (
        "dctcp",
        f"{{ kind = 'afq', {BUFFER} }}",
        {"switch.latency": "'0us'"},
    ),
    "packet-pair, AFQ, no switch latency": (
        "packet_pair",
        f"{{ kind = 'afq', {BUFFER} }}",
        {"switch.latency": "'0us'"},
    ),
    "DCTCP, ECN K = 65, min RTO 200 us": (
        "dctcp",
        f"{{ kind = 'ecn', {BUFFER}, k_packets = 65 }}",
        {"transport.min_rto": "'200us'", "transport.initial_rto": "'1ms'"},
    ),
}
LOADS = [0.1, 0.3, 0.5, 0.7, 0.9]


def idle_fct_ps(size: int, switch_latency_us: float) -> float:
    """The flow alone at line rate: every byte serialised once at the sender, then the
    last packet's two links, the switch's latency and its serialisation there."""
    packets = math.ceil(size / MSS)
    wire = size + HEADER * packets
    last = size - (packets - 1) * MSS + HEADER
    seconds = (wire + last) * 8 / RATE_BPS + (2 * LINK_US + switch_latency_us) * 1e-6
    return seconds * 1e12


def measure(out: Path, stop_s: float, switch_latency_us: float) -> dict[str, float]:
    flows = pl.read_csv(out / "flows.csv")
    stop_ps = stop_s * 1e12
    window = flows.filter(
        (pl.col("start_ps") >= WARMUP_S * 1e12)
        & (pl.col("start_ps") <= (stop_s - TAIL_S) * 1e12)
    )
    sizes = window["size_bytes"].to_list()
    starts = window["start_ps"].to_list()
    fcts = window["fct_ps"].to_list()
    slow_all, slow_short, unfinished, unfinished_short = [], [], 0, 0
    for size, start, fct in zip(sizes, starts, fcts):
        if fct is None:
            fct = stop_ps - start
            unfinished += 1
            unfinished_short += size < SHORT
        s = fct / idle_fct_ps(size, switch_latency_us)
        slow_all.append(s)
        if size < SHORT:
            slow_short.append(s)
    span = stop_s - TAIL_S - WARMUP_S
    ports = pl.read_csv(out / "ports.csv", infer_schema_length=0)
    switch = ports.filter(pl.col("tier") == "switch_down")
    hosts = ports.filter(pl.col("tier") == "host_up")

    def total(frame, column):
        if column not in frame.columns:
            return 0
        return sum(int(x) for x in frame[column] if x)

    return {
        "flows": len(sizes),
        "unfinished": unfinished,
        "unfinished_short": unfinished_short,
        # Offered bytes over the clients' 40 Gbps: the heavy tail makes it wander.
        "offered_load": round(sum(sizes) * 8 / (4 * RATE_BPS * span), 3),
        "mean_all": sum(slow_all) / len(slow_all),
        "p99_all": percentile(slow_all, 0.99),
        "mean_short": sum(slow_short) / len(slow_short),
        "p99_short": percentile(slow_short, 0.99),
        # Whole run, per flow started.
        "timeouts_per_flow": int(flows["timeouts"].sum()) / len(flows),
        "retransmits_per_flow": int(flows["retransmits"].sum()) / len(flows),
        "switch_drops": total(switch, "drops"),
        "afq_horizon_drops": total(switch, "afq_horizon_drops"),
        "host_nic_drops": total(hosts, "drops"),
    }


def main() -> int:
    args = parse_args(
        __doc__, HERE, quick="loads 30 % and 90 %, a quarter of the flows"
    )
    loads = [0.3, 0.9] if args.quick else LOADS
    per_run = FLOWS_PER_RUN // 4 if args.quick else FLOWS_PER_RUN
    results: dict[str, dict[float, dict[str, float]]] = {}
    for i, (label, (protocol, queue, extra)) in enumerate(
        (SCHEMES | DIAGNOSTIC).items()
    ):
        results[label] = {}
        latency_us = 0.0 if extra.get("switch.latency") == "'0us'" else 200.0
        for load in loads:
            arrivals = load * 4 * RATE_BPS / (8 * MEAN_SIZE)
            stop_s = round(per_run / arrivals + WARMUP_S + TAIL_S, 3)
            fixed = {
                "transport.protocol": f"'{protocol}'",
                "switch.queue": queue,
                "workload.load": str(load),
                "stop.time": f"'{stop_s}s'",
            } | extra
            sweep = run_case(args, HERE / "scenario.toml", f"s{i}-l{load}", fixed)
            [run] = sweep.runs()
            m = measure(run.out, stop_s, latency_us)
            results[label][load] = {k: round(v, 3) for k, v in m.items()}

    args.results.mkdir(parents=True, exist_ok=True)
    plot(results, args.results / "fig7.png")
    high = loads[-1]
    cubic, dctcp = results["Cubic, drop-tail"][high], results["DCTCP, ECN K = 65"][high]
    dctcp_afq, pp = results["DCTCP, AFQ"][high], results["packet-pair, AFQ"][high]

    def ratio(a, b, key):
        return round(a[key] / b[key], 2)

    quantities = [
        Quantity(
            f"{high:.0%} load, all flows: mean normalised FCT, DCTCP over ECN drop-tail / "
            "DCTCP over AFQ (paper: AFQ 'improves DCTCP performance by 2x')",
            2,
            ratio(dctcp, dctcp_afq, "mean_all"),
            0.6,
        ),
        Quantity(
            f"{high:.0%} load, all flows: 99th percentile, DCTCP / DCTCP over AFQ "
            "(paper: 2x 'for both average and tail')",
            2,
            ratio(dctcp, dctcp_afq, "p99_all"),
            0.6,
        ),
        Quantity(
            f"{high:.0%} load, all flows: mean normalised FCT, Cubic over drop-tail / "
            "packet-pair over AFQ (paper: AFQ improves 'TCP performance by 10x')",
            10,
            ratio(cubic, pp, "mean_all"),
            5,
        ),
        Quantity(
            f"{high:.0%} load, all flows: 99th percentile, Cubic / packet-pair over AFQ "
            "(paper: 10x)",
            10,
            ratio(cubic, pp, "p99_all"),
            5,
        ),
        Quantity(
            f"{high:.0%} load, short flows (< 100 KB): packet-pair over AFQ has a lower "
            "mean normalised FCT than DCTCP over AFQ (1 = yes; paper, Figure 7(b): "
            "packet-pair 'avoids slow-start')",
            1,
            int(pp["mean_short"] < dctcp_afq["mean_short"]),
            0,
        ),
        Quantity(
            f"{high:.0%} load: packet-pair's gain over DCTCP (both over AFQ) larger for "
            "short flows than for all (1 = yes; paper: 'especially for short flows')",
            1,
            int(
                dctcp_afq["mean_short"] / pp["mean_short"]
                > dctcp_afq["mean_all"] / pp["mean_all"]
            ),
            0,
        ),
    ]
    passed = write_result(
        args.results,
        figure="AFQ NSDI'18, Figure 7 (testbed: FCT against load, all and short flows)",
        setup=(
            "one switch, hosts 4-7 (servers) answering hosts 0-3 (clients), 10 Gbps "
            "links of 1 us, 200 us of switch forwarding latency each way (round trip "
            "about 405 us), 512 KB a port, 1500 B packets (MSS 1436 B); Linux hosts: "
            "1000-packet per-flow fair NIC queues (fq_codel's fairness), TCP with SACK, RACK/TLP, "
            "HyStart and min RTO 200 ms; packet-pair min RTO 200 us; enterprise sizes "
            "(bundled CDF, mean 157 KB), Poisson arrivals at the load of the clients' "
            f"40 Gbps; loads {loads}, seed 1, about {per_run} flows a run; FCT over the "
            "analytic idle FCT" + (" (QUICK)" if args.quick else "")
        ),
        quantities=quantities,
        also_measured={"by_scheme": results},
        notes=NOTES,
        plot="fig7.png",
        data="fig7.csv",
    )
    print_quantities(quantities)
    for label, by_load in results.items():
        print(label, {lo: (r["mean_all"], r["p99_all"]) for lo, r in by_load.items()})
    return 0 if passed else 1


NOTES = [
    (
        "Workload caveat: the enterprise CDF is the closest public tabulation we found "
        "(NUMFabric's ENTERPRISE_CDF); that it is the paper's reference [1] (most "
        "likely CONGA's enterprise workload) is our inference (scenarios/cdf/"
        "enterprise.cdf). Its largest flows (up to 1.77 GB) carry most bytes, so the "
        "offered load of a run wanders around its target (offered_load: 0.12 to 1.07 "
        "of the clients' links for targets 0.1 to 0.9)."
    ),
    (
        "Choices where the paper is silent: the switch latency is 200 us per packet "
        "each way (the digest's reading of 'end-to-end latency ... approximately "
        "200us'; read as a round trip it would be 100 us); no testbed buffer is given, "
        "512 KB is the simulations' leaf buffer; the testbed's 25 long-lived "
        "connections per client-server pair are one flow per response here (Linux "
        "restarts slow start after idle, so a request on an idle connection starts "
        "much as a new flow does); TCP keeps Linux's 200 ms minimum RTO (the testbed "
        "ran default kernels), packet-pair the simulations' 200 us (the 200 us row "
        "for DCTCP differs little); a host's NIC queue serves its flows in turn (1000 "
        "packets, drops from the longest flow), so a long flow overflowing its own "
        "NIC does not delay its host's short ones (the simulator has no per-socket "
        "TCP small queues: long DCTCP flows, never marked at their NIC, lose their own "
        "packets there, up to 3.3 M over a run, which costs them, not the short "
        "flows); the idle FCT is analytic, the line-rate bound, the same for every "
        "scheme (so ratios between schemes are ratios of FCTs, and slow start and "
        "packet-pair's first round trip both show)."
    ),
    (
        "What we see at 90 % load (mean / 99th percentile of FCT over idle FCT, all "
        "flows): Cubic over drop-tail 3.36 / 9.78, DCTCP 1.99 / 15.9, DCTCP over AFQ "
        "1.61 / 9.40, packet-pair over AFQ 2.19 / 12.7. AFQ improves DCTCP by 1.23x "
        "on average and 1.69x at the tail (paper: 2x), and its gains grow with load "
        "(Cubic / DCTCP over AFQ, mean: 1.0x at 10 %, 2.1x at 90 %), but nowhere near "
        "10x: most enterprise flows are one packet (median 1 KB), whose FCT is the "
        "200 us switch latency plus at most a few hundred microseconds of queue, so "
        "even Cubic's full 512 KB buffer (420 us) cannot make the average 10x the "
        "idle FCT. The paper's 10x needs something that costs far more than a queue, "
        "such as timeouts of Linux's 200 ms minimum; here SACK, RACK and tail-loss "
        "probes leave Cubic 0.001 timeouts per flow."
    ),
    (
        "Packet-pair over AFQ with this round trip: its first pair, then a wait of a "
        "round trip (405 us) before the pacing starts, costs flows of 3-10 packets "
        "(a fifth of the flows) what TCP's initial window of 10 sends at once: at "
        "10 % load their FCT is 2.96x the idle FCT against DCTCP's 1.01x, so the "
        "short-flow mean is higher than DCTCP's over AFQ (1.79 against 1.33 at 90 %; "
        "FAIL). Longer flows gain from skipping slow start (14-100 KB: 2.79 against "
        "3.18; 0.1-1 MB: 2.71 against 4.64 at 10 %), and so does the short-flow tail "
        "(99th percentile 3.0 against 4.2 at 10 %, 5.1 against 4.8 at 90 %). Its "
        "long flows overshoot AFQ's per-flow horizon: a rate wrong for one round "
        "trip moves rate x 405 us, hundreds of KB, against the 48 KB (32 rounds of "
        "1500 B) a flow may queue, so 22,000-145,000 horizon drops a run and 9-26 "
        "retransmissions per flow, recovered one hole per round trip (NewReno, the "
        "paper's). Without the switch latency (round trip about 10 us, the paper's "
        "simulations; dashed rows, normalised to their own idle FCT) the same end "
        "host has no drop at any load and beats DCTCP over AFQ from 50 % load on "
        "(mean; the 99th percentile from 30 %; short flows at 90 %: mean 4.36 "
        "against 8.57, 99th percentile 12.4 "
        "against 17.8): the paper's simulation claim holds, the testbed's needs a "
        "shorter round trip, a larger BpR or more queues than 32 x 1 MSS give."
    ),
]


def plot(results, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [
        ("mean_all", "all flows: mean"),
        ("p99_all", "all flows: 99th pct"),
        ("mean_short", "short flows: mean"),
        ("p99_short", "short flows: 99th pct"),
    ]
    fig, axes = plt.subplots(2, 2, figsize=(8, 5.5))
    rows = []
    for ax, (key, title) in zip(axes.flat, panels):
        for label, by_load in results.items():
            loads = list(by_load)
            style = "--" if label in DIAGNOSTIC else "-"
            ax.plot(
                [100 * lo for lo in loads],
                [by_load[lo][key] for lo in loads],
                style,
                marker="o",
                label=label,
            )
            rows += [[label, lo, key, by_load[lo][key]] for lo in loads]
        ax.set_yscale("log")
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("load (%)")
        ax.set_ylabel("FCT / idle FCT")
    axes[0][0].legend(fontsize=6)
    save(fig, path, ["scheme", "load", "statistic", "normalised_fct"], rows)


if __name__ == "__main__":
    sys.exit(main())
