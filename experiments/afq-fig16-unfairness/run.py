#!/usr/bin/env python3
"""AFQ paper (NSDI'18), Figure 16 (digest A11, A12): unfairness (1 - Jain's index)
between TCP flows on a 10 Gbps link of about 25 us round trip.

(a) against the number of flows N, for drop-tail, SFQ, AFQ and Ideal-FQ;
(b) AFQ with 128 flows against its sketch's columns (2 rows);
(c) AFQ with 16 flows against its number of FIFO queues.

scenario.toml states the link and the flows (N senders, each one endless NewReno flow
starting within the first millisecond; Jain's index over the flows' mean throughputs
from 5 to 50 ms). The paper's values are lost; its sentences are the targets.

Usage: python3 experiments/afq-fig16-unfairness/run.py [--quick] [--results DIR] [--ray ADDR]
"""

import sys
from pathlib import Path

from eqds_lab import Quantity, load_flows, print_quantities, write_result
from eqds_lab.experiment import jain, parse_args, run_case
from eqds_lab.plots import save

HERE = Path(__file__).resolve().parent
#: 16 MB a port, so that the buffer never binds: AFQ keeps up to N rounds of BpR bytes
#: per flow (32 x 1500 B = 48 KB; 12.3 MB for 256 flows) and never evicts, so with a
#: buffer below flows x 48 KB its tail drops pick the losers: at 512 KB (the paper's
#: leaf buffer) late flows starve from about 16 flows on (the "AFQ, 512 KB" row; the
#: BpR trade-off of section 3.2). Every scheme gets the same buffer.
BUFFER = "limit_bytes = '16MB'"
SCHEMES = {
    "drop-tail": f"{{ kind = 'drop_tail', {BUFFER} }}",
    "SFQ": f"{{ kind = 'sfq', {BUFFER} }}",
    "AFQ": f"{{ kind = 'afq', {BUFFER} }}",
    "Ideal-FQ": f"{{ kind = 'ideal_fq', {BUFFER} }}",
    "AFQ, 512 KB": "{ kind = 'afq', limit_bytes = '512KB' }",
    "AFQ, 4 MB": "{ kind = 'afq', limit_bytes = '4MB' }",
}
FLOW_COUNTS = [4, 16, 64, 256]
SKETCH_FLOWS = 64
SKETCH_COLUMNS = [4, 16, 64, 256, 1024, 16384]
QUEUE_FLOWS = 16
QUEUE_COUNTS = [4, 8, 16, 32]
QUICK = {"stop.time": "'20ms'"}


def unfairness(args, name: str, n: int, queue: str, seeds: list[int]) -> float:
    """Mean over seeds of 1 - Jain's index of the N flows' mean throughputs."""
    fixed = {
        "topology.left": str(n),
        "workload.receiver": str(n),
        "workload.sender_hosts": f"'0-{n - 1}'",
        "switch.queue": queue,
    } | (QUICK if args.quick else {})
    sweep = run_case(args, HERE / "scenario.toml", name, fixed, seeds=seeds)
    values = []
    for run in sweep.runs():
        rates = load_flows([run])["mean_throughput_bps"].to_list()
        values.append(1 - jain(rates))
    return sum(values) / len(values)


def main() -> int:
    args = parse_args(__doc__, HERE, quick="one seed, 20 ms runs")
    seeds = [1] if args.quick else [1, 2, 3]
    by_n = {
        label: {n: unfairness(args, f"a-{i}-{n}", n, queue, seeds) for n in FLOW_COUNTS}
        for i, (label, queue) in enumerate(SCHEMES.items())
    }
    by_columns = {
        c: unfairness(
            args,
            f"b-{c}",
            SKETCH_FLOWS,
            f"{{ kind = 'afq', {BUFFER}, sketch_columns = {c} }}",
            seeds,
        )
        for c in SKETCH_COLUMNS
    }
    by_queues = {
        q: unfairness(
            args,
            f"c-{q}",
            QUEUE_FLOWS,
            f"{{ kind = 'afq', {BUFFER}, queues = {q} }}",
            seeds,
        )
        for q in QUEUE_COUNTS
    }

    args.results.mkdir(parents=True, exist_ok=True)
    plot(by_n, by_columns, by_queues, args.results / "fig16.png")
    afq = by_n["AFQ"]
    others = ["drop-tail", "SFQ"]
    quantities = [
        Quantity(
            "AFQ at most as unfair as drop-tail and SFQ at every N (1 = yes; paper: "
            "'AFQ has better fairness than other schemes')",
            1,
            int(all(afq[n] <= by_n[s][n] + 1e-3 for s in others for n in FLOW_COUNTS)),
            0,
        ),
        Quantity(
            f"AFQ unfairness with {FLOW_COUNTS[-1]} flows, 2 x 16384 sketch, 16 MB "
            "(fair: 0)",
            0,
            round(afq[FLOW_COUNTS[-1]], 4),
            0.05,
        ),
        Quantity(
            f"{SKETCH_FLOWS} flows: a sketch of {SKETCH_COLUMNS[0]} columns is less fair "
            f"than one of {SKETCH_COLUMNS[-1]} (1 = yes; paper: fair 'until the number "
            "of concurrent flows exceeds the sketch size')",
            1,
            int(by_columns[SKETCH_COLUMNS[0]] > by_columns[SKETCH_COLUMNS[-1]]),
            0,
        ),
    ]
    passed = write_result(
        args.results,
        figure="AFQ NSDI'18, Figure 16 (unfairness against flows, sketch, queues)",
        setup=(
            "dumbbell, N senders and 1 receiver, 10 Gbps links of 4 us (about 25 us "
            "round trip), one endless NewReno flow per sender (min RTO 200 us, MSS "
            "1436 B) starting within the first 1 ms, 16 MB per switch port (and AFQ "
            "with 512 KB and 4 MB), AFQ's defaults otherwise (32 queues, BpR 1500 B, 2 x 16384 "
            "sketch), Jain over "
            "mean throughputs from 5 ms to the end "
            + ("(20 ms, seed 1, QUICK)" if args.quick else "(50 ms, seeds 1-3)")
        ),
        quantities=quantities,
        also_measured={
            "unfairness_by_flows": by_n,
            f"afq_unfairness_by_sketch_columns_{SKETCH_FLOWS}_flows": by_columns,
            f"afq_unfairness_by_queues_{QUEUE_FLOWS}_flows": by_queues,
        },
        notes=[
            (
                "The paper's senders are on-off and its numbers are lost; here N "
                "long-lived flows join within a millisecond, so the unfairness measured "
                "is how the queue shares among flows that arrived at different times "
                "and over a 45 ms window. Trends, not values, are compared."
            ),
            (
                "Buffer: AFQ holds up to N rounds of BpR bytes per flow and never evicts; "
                "when flows x N x BpR exceeds the port's buffer, whoever filled it first "
                "keeps it and late flows lose to tail drops and timeouts (the 'AFQ, 512 "
                "KB' row; Ideal-FQ, which pushes out the largest tag, stays fair). The "
                "paper warns of this trade-off (section 3.2: BpR 'must be chosen "
                "carefully to balance fairness and efficient use of the switch buffer') "
                "and does not give Figure 16's buffer; 16 MB (more than 256 flows x 48 "
                "KB) keeps the sweep about the sketch and the queues."
            ),
            (
                "Drop-tail with 16 MB holds up to 13 ms of queue: the 45 ms window is a "
                "few of its round trips, and flows that joined a little later have not "
                "caught up in it (the very large drop-tail unfairness is that, more than "
                "TCP's steady-state sharing)."
            ),
        ],
        plot="fig16.png",
        data="fig16.csv",
    )
    print_quantities(quantities)
    print("by N:", by_n)
    print("by sketch columns:", by_columns)
    print("by queues:", by_queues)
    return 0 if passed else 1


def plot(by_n, by_columns, by_queues, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(9, 2.8))
    rows = []
    for label, series in by_n.items():
        xs = list(series)
        axes[0].plot(xs, [series[x] for x in xs], marker="o", label=label)
        rows += [["flows", label, x, series[x]] for x in xs]
    axes[0].set_xscale("log", base=2)
    axes[0].set_xlabel("flows")
    axes[0].set_ylabel("1 - Jain")
    axes[0].legend(fontsize=6)
    for ax, series, what, label in (
        (axes[1], by_columns, "sketch columns", f"AFQ, {SKETCH_FLOWS} flows"),
        (axes[2], by_queues, "FIFO queues", f"AFQ, {QUEUE_FLOWS} flows"),
    ):
        xs = list(series)
        ax.plot(xs, [series[x] for x in xs], marker="o")
        ax.set_xscale("log", base=2)
        ax.set_xlabel(what)
        ax.set_title(label, fontsize=8)
        rows += [[what, label, x, series[x]] for x in xs]
    save(fig, path, ["sweep", "series", "x", "unfairness"], rows)


if __name__ == "__main__":
    sys.exit(main())
