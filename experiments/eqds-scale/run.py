#!/usr/bin/env python3
"""Native EQDS at scale against htsim: permutation utilisation at k = 8, 12 and 16
(and 32 in the full run), and incasts that must still finish at line rate.

The setting is the one of the authors' public htsim model of EQDS (`htsim_eqds`):
fat trees of 100 Gbps links (25 Gbps at k = 12), 1 us per hop, MTU 4150 B, 35-packet
trimming queues, a 50-packet window, spraying, every host writing straight into EQDS
(`scenarios/eqds-permutation-100g.toml`). The permutations are htsim's own connection
matrices (`perm*.cm`, made by its `gen_permutation.py <file> N N 1000000000 0 1`), so
both simulators carry exactly the same pairs. Each runs twice: with the simulator's
default for native EQDS, spare PULLs (as htsim's model sends them), and with the
paper's constant window alone (`eqds.spare_pulls = false`).

htsim's numbers (below, `HTSIM`) were measured on this kind of machine with the stock
build of Broadcom/csg-htsim: `htsim_eqds -tm perm<N>.cm -end 1000 -nodes <N>`
(`-linkspeed 25000` at k = 12). htsim prints only the packets it sent, new and
resent; its per-flow rate of new data is the fairest figure to set beside ours (it
counts at most one window more than reached the receivers).

Usage: python3 experiments/eqds-scale/run.py [--quick] [--results DIR] [--ray ADDR]
"""

import json
import sys
from pathlib import Path

from eqds_lab import Quantity, load_flows, write_result
from eqds_lab.experiment import parse_args, run_case
from eqds_lab.plots import save

HERE = Path(__file__).resolve().parent
PERMUTATION = HERE.parents[1] / "scenarios" / "eqds-permutation-100g.toml"
INCAST = HERE / "scenario-incast.toml"
MTU, OVERHEAD = 4150, 64
PAYLOAD = MTU - OVERHEAD
RUN_S = 1e-3
WINDOW = 50

#: (k, Gb/s, connection matrix or None for the scenario's own permutation).
CASES = [(8, 100, "perm128.cm"), (12, 25, "perm432.cm"), (16, 100, "perm1024.cm")]
FULL_ONLY = [(32, 100, None)]
#: htsim_eqds over 1 ms: (new data packets, resent packets, wall s, peak RSS MiB).
HTSIM = {
    8: (359_999, 17_929, 10.6, 13.8),
    12: (308_864, 10_129, 12.9, 35.1),
    16: (2_854_153, 168_779, 243.2, 115.8),
}
INCASTS = [(64, "128KiB"), (64, "256KiB"), (512, "128KiB"), (512, "256KiB")]
QUICK_INCASTS = [(64, "128KiB")]
SIZES = {"128KiB": 128 * 1024, "256KiB": 256 * 1024}
SPARE = {"spare PULLs (default)": {}, "constant window": {"eqds.spare_pulls": "false"}}


def hosts(k: int) -> int:
    return k**3 // 4


def per_flow_gbps(packets: int, n: int) -> float:
    """Per-flow rate of `packets` full packets' payload over the run, in Gb/s."""
    return packets * PAYLOAD * 8 / RUN_S / n / 1e9


def summary(sweep) -> dict:
    return json.loads((sweep.runs()[0].out / "summary.json").read_text())


def permutation(
    args, k: int, gbps: int, cm: str | None, label: str, spare: dict
) -> dict:
    fixed = {
        "topology.k": k,
        "topology.link": f'{{ rate = "{gbps}Gbps", latency = "1us" }}',
    } | spare
    if cm:
        fixed["workload"] = f'{{ kind = "htsim", file = "{HERE / cm}" }}'
    name = f"perm-k{k}-{gbps}g-{'spare' if not spare else 'constant'}"
    sweep = run_case(args, PERMUTATION, name, fixed)
    s = summary(sweep)
    flows = load_flows(sweep)
    n = hosts(k)
    packets = s["eqds"]["packets"]
    new = packets["data_sent"] - s["eqds"]["tunnels"]["retransmits"]
    row = {
        "k": k,
        "gbps": gbps,
        "config": label,
        "goodput_gbps": round(flows["mean_throughput_bps"].mean() / 1e9, 2),
        "goodput_min_gbps": round(flows["mean_throughput_bps"].min() / 1e9, 2),
        "new_data_gbps": round(per_flow_gbps(new, n), 2),
        "host_up_utilisation": round(s["links"]["host_up"]["mean_utilisation"], 3),
        "trims": sum(link["trims"] for link in s["links"].values()),
        "control_per_data": round(packets["control_sent"] / packets["data_sent"], 2),
        "spare_pulls": s["eqds"].get("spare_pulls", 0),
        "events": s["engine"]["events"],
    }
    print(row)
    return row


def ideal_incast_s(n: int, size: int) -> float:
    """N senders' packets through the receiver's link, plus one idle round trip (a
    full packet out over six hops, a control packet back)."""
    full, rest = divmod(size, PAYLOAD)
    wire = n * (full * MTU + (rest + OVERHEAD if rest else 0))
    rtt = 6 * (MTU * 8 / 100e9 + 1e-6) + 6 * (OVERHEAD * 8 / 100e9 + 1e-6)
    return wire * 8 / 100e9 + rtt


def incast(args, n: int, size: str, label: str, spare: dict) -> dict:
    fixed = {"workload.senders": n, "workload.size": f'"{size}"'} | spare
    name = f"incast-{n}-{size}-{'spare' if not spare else 'constant'}"
    sweep = run_case(args, INCAST, name, fixed)
    flows = load_flows(sweep)
    last = flows["end_ps"].max() / 1e12
    s = summary(sweep)
    row = {
        "senders": n,
        "size": size,
        "config": label,
        "completed": int(flows["end_ps"].is_not_null().sum()),
        "last_completion_us": round(last * 1e6, 1),
        "ideal_us": round(ideal_incast_s(n, SIZES[size]) * 1e6, 1),
        "over_ideal": round(last / ideal_incast_s(n, SIZES[size]), 3),
        "trims": sum(link["trims"] for link in s["links"].values()),
    }
    print(row)
    return row


def main() -> int:
    args = parse_args(__doc__, HERE, quick="k = 8 and 12, one 64-to-1 incast")
    cases = CASES[:2] if args.quick else CASES + FULL_ONLY
    perms = [
        permutation(args, k, gbps, cm, label, spare)
        for k, gbps, cm in cases
        for label, spare in SPARE.items()
    ]
    incasts = [
        incast(args, n, size, label, spare)
        for n, size in (QUICK_INCASTS if args.quick else INCASTS)
        for label, spare in SPARE.items()
    ]
    default = next(iter(SPARE))

    def perm(k: int, label: str = default) -> dict:
        return next(r for r in perms if r["k"] == k and r["config"] == label)

    quantities = []
    htsim_rows = {}
    for k, gbps, _ in cases:
        if k not in HTSIM:
            continue
        new, resent, wall, rss = HTSIM[k]
        theirs = per_flow_gbps(new, hosts(k))
        htsim_rows[str(k)] = {
            "new_data_gbps": round(theirs, 2),
            "goodput_at_least_gbps": round(theirs - WINDOW * MTU * 8 / RUN_S / 1e9, 2),
            "resent_packets": resent,
            "wall_s": wall,
            "peak_rss_mib": rss,
        }
        ours = perm(k)["new_data_gbps"]
        quantities.append(
            Quantity(
                f"k={k}, {gbps} Gb/s: per-flow new data at least htsim's "
                f"({theirs:.2f} Gb/s; ours {ours}) (1 = yes)",
                1,
                int(ours >= theirs),
                0,
            )
        )
    big = max(k for k, _, _ in cases if k in HTSIM)
    quantities.append(
        Quantity(
            f"k={big}: host uplink utilisation (issue 30: full utilisation; the "
            f"constant window: {perm(big, 'constant window')['host_up_utilisation']})",
            1.0,
            perm(big)["host_up_utilisation"],
            0.02,
        )
    )
    for r in incasts:
        if r["config"] != default:
            continue
        quantities.append(
            Quantity(
                f"{r['senders']}-to-1 incast of {r['size']}: last completion / ideal "
                "(must stay within 10%)",
                1.0,
                r["over_ideal"],
                0.1,
            )
        )

    args.results.mkdir(parents=True, exist_ok=True)
    plot(perms, args.results / "eqds-scale.png")
    passed = write_result(
        args.results,
        experiment="eqds-scale",
        figure="issue 30 (EQDS at scale), against htsim's EQDS model",
        setup="Native EQDS permutations over htsim's own connection matrices (k=8 "
        "and 16 at 100 Gbps, k=12 at 25 Gbps; k=32 at 100 Gbps with the scenario's "
        "permutation in the full run), 1 us per hop, MTU 4150 B, 35-packet trimming "
        "queues, window 50, spraying, 1 ms; 64- and 512-to-1 incasts of 128 and 256 "
        "KiB into host 0 of the k=16 tree until every flow completes. Each case with "
        "spare PULLs (the default for native EQDS) and with the constant window",
        quantities=quantities,
        also_measured={"permutations": perms, "incasts": incasts, "htsim": htsim_rows},
        plot="eqds-scale.png",
        data="eqds-scale.csv",
        notes=[
            (
                "Where the constant window loses: at k=16 the loaded credit loop (a data "
                "packet out, its PULL back, about 18.5 us with the transient queues of "
                "spraying) outlasts the 16.6 us a 50-packet window takes at 100 Gbps, so "
                "every tunnel is window-bound and its receiver's link idles between "
                "rounds (k=8's loop is shorter, k=12's window four BDPs at 25 Gbps). "
                "Windows of 60 or 80 packets measured 91.1 Gb/s per flow there. htsim's "
                "model does not idle: its pull pacer sends 'slow' PULLs to idle senders, "
                "up to a window beyond their targets, which spare PULLs reproduce. htsim "
                "also paces PULLs at 1/0.99 of the link rate with 4096 bytes of credit "
                "per PULL against 4150-byte packets, and its fabric trims (its resent "
                "packets); ours paces at the link rate less the control packets that "
                "arrive on it and trims nothing in these permutations."
            ),
            (
                "At 25 Gbps (k=12) the senders' own uplinks, which carry their data and "
                "the control packets of the flows they receive, are the bottleneck: "
                "spare PULLs then change nothing but the PULL count, the credit being "
                "clamped at the sender."
            ),
        ],
    )
    print("pass" if passed else "FAIL")
    return 0 if passed else 1


def plot(perms: list[dict], path: Path) -> None:
    import matplotlib.pyplot as plt  # eqds_lab.plots has chosen the Agg backend

    fig, ax = plt.subplots(figsize=(6, 3.6))
    labels = list(SPARE)
    ks = sorted({r["k"] for r in perms})
    width = 0.8 / (len(labels) + 1)
    rows = []
    for i, label in enumerate(labels):
        ys = []
        for k in ks:
            r = next(r for r in perms if r["k"] == k and r["config"] == label)
            ys.append(r["new_data_gbps"] / r["gbps"])
            rows.append(
                (k, r["gbps"], label, r["new_data_gbps"], r["host_up_utilisation"])
            )
        ax.bar(
            [x + i * width for x in range(len(ks))],
            ys,
            width,
            label=f"eqds-sim, {label}",
        )
    theirs = []
    for k in ks:
        rate = next(r["gbps"] for r in perms if r["k"] == k)
        theirs.append(per_flow_gbps(HTSIM[k][0], hosts(k)) / rate if k in HTSIM else 0)
        if k in HTSIM:
            rows.append((k, rate, "htsim", round(theirs[-1] * rate, 2), ""))
    ax.bar(
        [x + len(labels) * width for x in range(len(ks))], theirs, width, label="htsim"
    )
    ax.set_xticks([x + width for x in range(len(ks))], [f"k={k}" for k in ks])
    ax.set_ylim(0.8, 1.04)
    ax.set_ylabel("per-flow new data / link rate")
    ax.legend(fontsize=7, loc="upper center", ncol=3)
    save(
        fig, path, ["k", "gbps", "config", "new_data_gbps", "host_up_utilisation"], rows
    )


if __name__ == "__main__":
    sys.exit(main())
