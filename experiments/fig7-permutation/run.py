#!/usr/bin/env python3
"""EQDS paper, Figure 7: TCP permutation throughput on the T2 testbed model.

Runs scenario.toml (six hosts on three ToRs, each sending one long Cubic flow to a
host on another ToR, ECMP) and TCP over EQDS in NDP mode (60 kB trimming queues,
spraying) and RTS mode (no trimming), and the same with RoCE (DCQCN and PFC, against
RoCE over EQDS through the RDMA EQIF), ten seeds each (each seed a different
permutation and ECMP hashing); plots the CDF of per-flow throughput and writes
result.json (paper: over EQDS 22 Gbps on average, 24 at most; without EQDS 12-14 on
average).

Usage: python3 experiments/fig7-permutation/run.py [--quick] [--results DIR] [--ray ADDR]
"""

import sys
from pathlib import Path

from eqds_lab import (
    Quantity,
    load_flows,
    load_summaries,
    write_result,
)
from eqds_lab.experiment import EQDS_NDP, EQDS_RTS, parse_args, run_case
from eqds_lab.plots import cdf

HERE = Path(__file__).resolve().parent
#: T2's trimming buffers (Appendix B): 60 kB, 15 packets of 4 KiB, counted in bytes.
NDP = EQDS_NDP | {"switch.queue": "{ kind = 'trimming', data_bytes = '60kB' }"}
#: Without trimming, the baseline's 1 MB drop-tail queues, EQDS control above data.
RTS = EQDS_RTS | {
    "switch.queue": "{ kind = 'strict_priority', classes = ["
    "{ kind = 'drop_tail', limit_bytes = '1MB' }, "
    "{ kind = 'drop_tail', limit_bytes = '1MB' }] }"
}
#: One idle round trip here (a 4 KiB packet over four 25 Gbps hops and a control
#: packet back, 13.3 us) holds 11 packets: the window eqds-sim used by default before
#: it sized windows for the round trip under load.
IDLE_BDP = 11
#: RoCEv2 WRITEs (one endless message per flow) in priority class 1 behind ACKs and
#: CNPs, with DCQCN. Its RP runs the DCQCN paper's profile: the firmware defaults
#: Appendix B lists ("mlx-fw", R_AI 5 Mbps per R_i) recover so slowly in our model
#: that they are reported beside it, not as the main row.
ROCE = {
    "transport.protocol": "roce",
    "transport.class": "1",
    "transport.roce": "{ opcode = 'write', dcqcn = { profile = 'paper' } }",
    "host.queue": "{ kind = 'strict_priority', classes = ["
    "{ kind = 'drop_tail', limit_packets = 1000 }, { kind = 'drop_tail' }] }",
}
#: Without EQDS: a lossless fabric (PFC on class 1, 12 MB shared buffers) whose
#: switches mark with Appendix B's baseline thresholds (K_low 150 kB, K_high 1500 kB;
#: P_max 1 %, the DCQCN paper's), ECMP.
ROCE_PFC = ROCE | {
    "switch.queue": "{ kind = 'strict_priority', classes = ["
    "{ kind = 'drop_tail', limit_packets = 1000 }, "
    "{ kind = 'red', min_bytes = '150kB', max_bytes = '1500kB', p_max = 0.01 }] }",
    "pfc": "{ enabled = true, lossless = [1] }",
}
#: Over EQDS: no PFC, the same lossy 60 kB trimming fabric as TCP over EQDS, and an
#: RDMA EQIF with Appendix B's EQDS thresholds (K_low 72 kB, K_high 584 kB), whose
#: marks are CNPs to the local sender.
ROCE_EQDS = (
    ROCE
    | NDP
    | {"eqds.eqifs": "[{ kind = 'rdma', workloads = [0] }]", "transport.class": "0"}
)
#: Appendix B's firmware columns: the baseline's R_i 300 us, the EQDS one's 750 us.
MLX = "{ opcode = 'write', dcqcn = { profile = 'mlx-fw', increase_timer = '%s' } }"
RDMA_LABELS = (
    "RoCE (DCQCN, PFC, ECMP)",
    "RoCE over EQDS (RDMA EQIF, NDP mode)",
)
CONFIGS = {
    "TCP (ECMP)": {},
    "TCP over EQDS, NDP mode": NDP,
    "TCP over EQDS, RTS mode": RTS,
    "TCP over EQDS, NDP mode, window of one idle BDP": NDP | {"eqds.window": IDLE_BDP},
    RDMA_LABELS[0]: ROCE_PFC,
    RDMA_LABELS[1]: ROCE_EQDS,
    "RoCE (DCQCN mlx-fw, PFC, ECMP)": ROCE_PFC | {"transport.roce": MLX % "300us"},
    "RoCE over EQDS (DCQCN mlx-fw, R_i 750 us)": ROCE_EQDS
    | {"transport.roce": MLX % "750us"},
}
QUICK = {"stop.time": "8ms", "stop.warmup": "3ms"}


def main() -> int:
    args = parse_args(__doc__, HERE, quick="two seeds, 8 ms")

    #: Per configuration: every flow's throughput in Gb/s, all seeds pooled.
    gbps: dict[str, list[float]] = {}
    #: Per configuration: TCP segments (RoCE packets) resent, over all flows and seeds.
    resent: dict[str, int] = {}
    #: Per RoCE configuration: RoCE packets the receivers saw out of order.
    reordered: dict[str, int] = {}
    windows: dict[str, list[int]] = {}
    for i, (label, overrides) in enumerate(CONFIGS.items()):
        sweep = run_case(
            args,
            HERE / "scenario.toml",
            f"config{i}",
            overrides | (QUICK if args.quick else {}),
            seeds=[1, 2] if args.quick else range(1, 11),
        )
        flows = load_flows(sweep)
        gbps[label] = sorted(x / 1e9 for x in flows["mean_throughput_bps"].to_list())
        resent[label] = int(flows["retransmits"].sum())
        summaries = load_summaries(sweep)
        if "eqds_window_packets" in summaries.columns:
            windows[label] = sorted(set(summaries["eqds_window_packets"]))
        if "roce_out_of_order" in summaries.columns:
            reordered[label] = int(summaries["roce_out_of_order"].sum())

    args.results.mkdir(parents=True, exist_ok=True)
    cdf(
        gbps,
        args.results / "fig7.png",
        xlabel="per-flow throughput (Gb/s)",
        title="T2 model: 6 hosts at 25 Gbps, cross-ToR permutation",
    )
    stats = {
        label: {
            "flows": len(v),
            "mean_gbps": round(sum(v) / len(v), 2),
            "min_gbps": round(v[0], 2),
            "max_gbps": round(v[-1], 2),
            "tcp_segments_resent": resent[label],
        }
        | ({"eqds_window_packets": windows[label]} if label in windows else {})
        | ({"roce_out_of_order": reordered[label]} if label in reordered else {})
        for label, v in gbps.items()
    }
    for label, s in stats.items():
        print(label, s)
    ndp, tcp = stats["TCP over EQDS, NDP mode"], stats["TCP (ECMP)"]
    roce, roce_eqds = stats[RDMA_LABELS[0]], stats[RDMA_LABELS[1]]
    rts, idle = (
        stats["TCP over EQDS, RTS mode"],
        stats["TCP over EQDS, NDP mode, window of one idle BDP"],
    )
    passed = write_result(
        args.results,
        experiment="fig7-permutation",
        figure="EQDS NSDI'22, Figure 7 (TCP and RDMA)",
        setup="T2 model: 3 ToRs x 2 hosts, 2 spines, all links 25 Gbps (the paper's "
        "10 Gbps cannot carry its 22-24 Gbps), 1 us links, 4 KiB MTU; each "
        "host sends one long TCP Cubic flow (HyStart, SACK/RACK/TLP, TCP small queues) to "
        "a host on another ToR and receives one; throughput over 10-30 ms, seeds 1-10. "
        "TCP: ECMP, 1 MB drop-tail. TCP over EQDS (default window, 100-packet EQIF "
        "queues): NDP mode on 60 kB trimming queues with spraying; RTS mode on 1 MB "
        "drop-tail with EQDS control in a higher priority class",
        quantities=[
            Quantity(
                "TCP over EQDS (NDP mode), mean per-flow Gb/s",
                22.0,
                ndp["mean_gbps"],
                1.5,
            ),
            Quantity(
                "TCP over EQDS (NDP mode), max per-flow Gb/s",
                24.0,
                ndp["max_gbps"],
                1.0,
            ),
            Quantity(
                "TCP without EQDS (ECMP), mean per-flow Gb/s",
                13.0,
                tcp["mean_gbps"],
                1.5,
            ),
            Quantity(
                "RDMA over EQDS (RDMA EQIF, NDP mode), mean per-flow Gb/s",
                22.0,
                roce_eqds["mean_gbps"],
                1.5,
            ),
            Quantity(
                "RDMA over EQDS (RDMA EQIF, NDP mode), max per-flow Gb/s",
                24.0,
                roce_eqds["max_gbps"],
                1.0,
            ),
            Quantity(
                "RDMA without EQDS (DCQCN, PFC, ECMP), mean per-flow Gb/s",
                13.0,
                roce["mean_gbps"],
                1.5,
            ),
            Quantity(
                "RDMA over EQDS: packets the RoCE receivers saw out of order",
                0,
                roce_eqds.get("roce_out_of_order", -1),
                0,
            ),
        ],
        also_measured=stats,
        plot="fig7.png",
        data="fig7.csv",
        notes=[
            (
                "Paper: 'TCP and RDMA flows running over EQDS achieve 22Gbps on average "
                "(maximum 24Gbps) in a permutation traffic matrix, compared to an average "
                "of 12-14Gbps without EQDS', and spraying does so 'without causing "
                "reordering problems'. We take 13 +- 1.5 for both baselines (TCP and RDMA)."
            ),
            (
                "Without EQDS each ToR hashes its two flows onto its two uplinks, and the "
                "two flows into a ToR share a spine's downlink when their ToRs hashed "
                "them to the same spine: a "
                "flow that shares a link runs at half rate or less, and only "
                f"{sum(x > 20 for x in gbps['TCP (ECMP)'])} of the {tcp['flows']} run "
                f"alone (TCP min {tcp['min_gbps']}, max {tcp['max_gbps']} Gb/s). "
                f"Over EQDS every flow runs at {ndp['min_gbps']}-{ndp['max_gbps']} Gb/s "
                "(NDP mode), the 4 KiB packets' payload rate less the PULLs and "
                "reverse ACKs sharing each link; RTS mode, whose queues do not trim, "
                f"gives {rts['mean_gbps']} on average. Reordering costs TCP nothing: "
                f"{ndp['tcp_segments_resent']} segments resent in NDP mode and "
                f"{rts['tcp_segments_resent']} in RTS mode, over all flows and seeds."
            ),
            (
                "This needs a credit window that covers the round trip under load. Every "
                "host sends and receives, so data waits behind data at each sprayed hop "
                "and PULLs wait behind the reverse flows' data: the credit loop takes "
                "about twice its idle round trip. With one idle BDP "
                f"({IDLE_BDP} packets) as the window, EQDS gives only "
                f"{idle['mean_gbps']} Gb/s per flow; eqds-sim's default, one BDP of "
                "the loaded round trip (a full packet of queue at every hop each way), "
                f"is {', '.join(map(str, windows['TCP over EQDS, NDP mode']))} packets "
                "here, inside the paper's 'typically 10-30 packets' (its implementations "
                "used 50 and 150)."
            ),
            (
                "RDMA rows: RoCEv2 WRITEs with DCQCN (the DCQCN paper's RP profile). "
                "Without EQDS the fabric is lossless (PFC) and marks with Appendix B's "
                "baseline thresholds; ECMP collisions and DCQCN's slow recovery after "
                f"its start-up cuts give {roce['mean_gbps']} Gb/s on average (min "
                f"{roce['min_gbps']}). Over EQDS there is no PFC: the fabric trims, "
                "EQDS resends, and the RoCE receivers saw "
                f"{roce_eqds.get('roce_out_of_order')} packets out of order over all "
                "seeds. The engine writes RoCE packets at line rate into the RDMA EQIF, "
                "which drains them 44 bytes longer each and shares the link with the "
                "reverse flow's PULLs and ACKs: its queue to the destination passes "
                "K_low (72 kB), the EQIF sends CNPs, and DCQCN holds each flow a little "
                f"below line rate, {roce_eqds['min_gbps']}-{roce_eqds['max_gbps']} Gb/s. "
                "The mean matches the paper's 22; the paper's 24 Gb/s maximum is beyond "
                "what this loop gives any flow here (FAIL by about 0.5 Gb/s beyond the "
                "tolerance): the paper does not say how its RDMA flows were measured."
            ),
            (
                "With Appendix B's firmware parameters (profile mlx-fw: R_AI 5 Mbps per "
                "R_i, no byte counter, a cut's target rate kept unless a timer increase "
                "came first): "
                f"{stats['RoCE (DCQCN mlx-fw, PFC, ECMP)']['mean_gbps']} Gb/s without "
                "EQDS and "
                f"{stats['RoCE over EQDS (DCQCN mlx-fw, R_i 750 us)']['mean_gbps']} "
                "over it (also_measured), with "
                f"{stats['RoCE over EQDS (DCQCN mlx-fw, R_i 750 us)'].get('roce_out_of_order')} "
                "packets out of order over all seeds: a trimmed packet's resend came "
                "after the EQDS receiver had skipped its reorder-queue hole (one hole "
                "each in two seeds), and go-back-N resent behind it."
            ),
        ],
    )
    print("pass" if passed else "FAIL")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
