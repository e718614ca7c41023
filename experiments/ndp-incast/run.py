#!/usr/bin/env python3
"""NDP incast: completion time of an N-to-1 incast against N, NDP versus TCP NewReno
and DCTCP with a shallow and a deep switch buffer.

Each configuration is one eqds_lab sweep over N (the base scenario is scenario.toml,
the NDP setup; the others replace the switch queue and the transport). The plot shows
when the last of the N flows completed, beside the ideal: N x 256 KiB through the
receiver's 10 Gbps link plus one base RTT. result.json checks NDP against that ideal
(the NDP paper: incasts complete at line rate whatever N).

Usage: python3 experiments/ndp-incast/run.py [--quick] [--results DIR] [--ray ADDR]
"""

import sys
from pathlib import Path

from eqds_lab import Quantity, load_flows, write_result
from eqds_lab.experiment import parse_args, run_case

HERE = Path(__file__).resolve().parent
SIZE = 256 * 1024
MTU, HEADER = 9000, 64
RATE = 10e9
# One-way 6 hops of a 9000 B packet plus 6 hops back of a header, 1 us per link.
BASE_RTT = 6 * (MTU * 8 / RATE + 1e-6) + 6 * (HEADER * 8 / RATE + 1e-6)
SENDERS = [8, 16, 32, 64, 128, 256, 512, 1024]
QUICK_SENDERS = [8, 64, 256]

SHALLOW, DEEP = 15, 500
# scenario.toml's stop.time: a flow not done by then is reported as unfinished.
STOP_S = 10.0
ECMP = {
    "switch.load_balancing": "ecmp",
    "host.queue": "{ kind = 'drop_tail', limit_packets = 1000 }",
}
CONFIGS = {
    "NDP (8-packet trimming queues)": {},
    f"TCP, {SHALLOW}-packet buffers": ECMP
    | {
        "transport.protocol": "newreno",
        "switch.queue": f"{{ kind = 'drop_tail', limit_packets = {SHALLOW} }}",
    },
    f"TCP, {DEEP}-packet buffers": ECMP
    | {
        "transport.protocol": "newreno",
        "switch.queue": f"{{ kind = 'drop_tail', limit_packets = {DEEP} }}",
    },
    f"DCTCP, {SHALLOW}-packet buffers": ECMP
    | {
        "transport.protocol": "dctcp",
        "switch.queue": f"{{ kind = 'ecn', k_packets = 10, limit_packets = {SHALLOW} }}",
    },
    f"DCTCP, {DEEP}-packet buffers": ECMP
    | {
        "transport.protocol": "dctcp",
        "switch.queue": f"{{ kind = 'ecn', k_packets = 10, limit_packets = {DEEP} }}",
    },
}


def ideal(n: int) -> float:
    packets = -(-SIZE // (MTU - HEADER))
    return n * (SIZE + packets * HEADER) * 8 / RATE + BASE_RTT


def main() -> int:
    args = parse_args(__doc__, HERE, quick="N in 8, 64, 256 only")
    senders = QUICK_SENDERS if args.quick else SENDERS

    completion: dict[str, dict[int, float]] = {}
    unfinished_flows: dict[str, dict[int, int]] = {}
    for i, (label, overrides) in enumerate(CONFIGS.items()):
        sweep = run_case(
            args,
            HERE / "scenario.toml",
            f"config{i}",
            overrides,
            grid={"workload.senders": senders},
        )
        flows = load_flows(sweep)
        by_n, stuck = {}, {}
        for (n,), group in flows.group_by("workload.senders"):
            unfinished = group["end_ps"].null_count()
            if unfinished:
                # TCP's RTO back-off can leave flows waiting past the run's end
                # (incast collapse): report how many, and plot them at the end time.
                stuck[int(n)] = unfinished
                by_n[int(n)] = STOP_S
            else:
                by_n[int(n)] = group["end_ps"].max() / 1e12
        completion[label] = dict(sorted(by_n.items()))
        unfinished_flows[label] = dict(sorted(stuck.items()))

    args.results.mkdir(parents=True, exist_ok=True)
    plot(completion, senders, args.results / "incast.png")
    for label, stuck in unfinished_flows.items():
        for n, k in stuck.items():
            print(f"{label}, N={n}: {k} of {n} flows unfinished after {STOP_S:g} s")
    ndp_label = "NDP (8-packet trimming queues)"
    if unfinished_flows[ndp_label]:
        print(f"NDP left flows unfinished: {unfinished_flows[ndp_label]}")
    ndp = completion[ndp_label]
    worst = max(ndp[n] / ideal(n) for n in senders)
    passed = write_result(
        args.results,
        experiment="ndp-incast",
        figure="NDP (SIGCOMM'17) incast behaviour, as used by the EQDS paper's NDP mode",
        setup=f"k=18 fat tree, 10 Gbps, 1 us links, 9000 B MTU, N x 256 KiB to one host, N in {senders}; "
        f"NDP: trimming queues of 8 data packets, spraying, initial window one loaded BDP (the default); "
        f"TCP/DCTCP: ECMP, drop-tail or ECN (K=10) queues of {SHALLOW} or {DEEP} packets, 10 ms min RTO"
        + (" (QUICK)" if args.quick else ""),
        quantities=[
            Quantity(
                "NDP worst last-completion time / ideal over all N",
                1.0,
                round(worst, 4),
                0.10,
            )
        ],
        also_measured={
            "completion_s": {
                label: {str(n): round(t, 6) for n, t in by_n.items()}
                for label, by_n in completion.items()
            },
            "ideal_s": {str(n): round(ideal(n), 6) for n in senders},
            "unfinished_flows_at_10s": {
                label: {str(n): k for n, k in stuck.items()}
                for label, stuck in unfinished_flows.items()
                if stuck
            },
        },
        plot="incast.png",
        data="incast.csv",
    )
    print(f"NDP worst completion / ideal = {worst:.4f}: {'pass' if passed else 'FAIL'}")
    return 0 if passed else 1


def plot(
    completion: dict[str, dict[int, float]], senders: list[int], path: Path
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.8))
    rows = []
    for label, by_n in completion.items():
        xs = sorted(by_n)
        ax.plot(xs, [by_n[x] * 1e3 for x in xs], marker="o", lw=1.2, label=label)
        rows += [(label, x, by_n[x]) for x in xs]
    ax.plot(
        senders,
        [ideal(n) * 1e3 for n in senders],
        "k--",
        lw=1,
        label="ideal (line rate + 1 RTT)",
    )
    rows += [("ideal", n, ideal(n)) for n in senders]
    ax.axhline(
        STOP_S * 1e3, color="grey", lw=0.8, ls=":", label="run ends (flows unfinished)"
    )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("senders N (256 KiB each)")
    ax.set_ylabel("last flow completes (ms)")
    ax.set_title("N-to-1 incast, k=18 fat tree, 10 Gbps")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    with open(path.with_suffix(".csv"), "w") as f:
        f.write("series,senders,completion_s\n")
        f.writelines(f"{label},{n},{t}\n" for label, n, t in rows)


if __name__ == "__main__":
    sys.exit(main())
