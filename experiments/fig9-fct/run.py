#!/usr/bin/env python3
"""EQDS paper, Figure 9: FCT of 1 MB closed-loop downloads on the T1 testbed model.

Runs scenario.toml (TCP Cubic, ECMP, drop-tail) and TCP over EQDS in NDP mode
(trimming, spraying) and RTS mode (no trimming), three seeds each; plots the FCT CDFs
and writes result.json with median and 95th-percentile FCT ratios against TCP
(paper: EQDS cuts the median 2.4x and the p95 2x; RTS is a little slower than NDP mode
but still halves both).

Usage: python3 experiments/fig9-fct/run.py [--quick] [--results DIR] [--ray ADDR]
"""

import sys
from pathlib import Path

from eqds_lab import Quantity, load_flows, write_result
from eqds_lab.experiment import (
    EQDS_NDP_JUMBO,
    EQDS_RTS,
    HTSIM_TCP,
    parse_args,
    run_case,
)
from eqds_lab.experiment import percentile as pct
from eqds_lab.plots import cdf

HERE = Path(__file__).resolve().parent
CONFIGS = {
    "TCP": {},
    "TCP over EQDS, NDP mode": EQDS_NDP_JUMBO,
    "TCP over EQDS, RTS mode": EQDS_RTS,
    "TCP without SACK or small queues": HTSIM_TCP,
    # Also measured: TCP's ACKs ahead of the data waiting in their tunnel.
    "TCP over EQDS, NDP mode, ACKs first": EQDS_NDP_JUMBO | {"eqds.acks_first": "true"},
}
QUICK = {"stop.time": "15ms"}


def split_by_server_sharing(flows) -> tuple[list[float], list[float]]:
    """FCTs (us) of the flows that had their server to themselves, and of those that
    shared its uplink with another download for a tenth of their life or more."""
    alone, shared = [], []
    for (_seed, _src), group in flows.group_by(["seed", "src"]):
        spans = list(zip(group["start_ps"].to_list(), group["end_ps"].to_list()))
        for i, (start, end) in enumerate(spans):
            overlap = sum(
                max(0, min(end, e) - max(start, s))
                for j, (s, e) in enumerate(spans)
                if j != i
            )
            fct_us = (end - start) / 1e6
            (shared if overlap >= 0.1 * (end - start) else alone).append(fct_us)
    return sorted(alone), sorted(shared)


def main() -> int:
    args = parse_args(__doc__, HERE, quick="one seed, 15 ms")

    fcts: dict[str, list[float]] = {}
    #: Share of the completed flows that resent anything, per configuration.
    resending: dict[str, float] = {}
    #: FCTs (us) of the flows alone at their server and of those sharing it.
    by_server: dict[str, tuple[list[float], list[float]]] = {}
    for i, (label, overrides) in enumerate(CONFIGS.items()):
        sweep = run_case(
            args,
            HERE / "scenario.toml",
            f"config{i}",
            overrides | (QUICK if args.quick else {}),
            seeds=[1] if args.quick else [1, 2, 3],
        )
        flows = load_flows(sweep).drop_nulls("fct_ps")
        fcts[label] = sorted(x / 1e6 for x in flows["fct_ps"].to_list())
        by_server[label] = split_by_server_sharing(flows)
        resending[label] = (flows["retransmits"] > 0).mean()

    args.results.mkdir(parents=True, exist_ok=True)
    cdf(
        fcts,
        args.results / "fig9.png",
        xlabel="FCT of 1 MB downloads (us)",
        title="T1 leaf-spine model, 12 hosts at 25 Gbps, closed loop",
    )
    tcp = fcts["TCP"]
    stats = {
        label: {
            "flows": len(v),
            "median_us": round(pct(v, 0.5), 1),
            "p95_us": round(pct(v, 0.95), 1),
            "p99_us": round(pct(v, 0.99), 1),
            "share_of_flows_resending": round(resending[label], 4),
        }
        for label, v in fcts.items()
    }
    for label, (alone, shared) in by_server.items():
        stats[label] |= {
            "share_of_flows_sharing_their_server": round(
                len(shared) / max(1, len(alone) + len(shared)), 3
            ),
            "alone_median_us": round(pct(alone, 0.5), 1),
            "alone_p95_us": round(pct(alone, 0.95), 1),
            "shared_median_us": round(pct(shared, 0.5), 1),
        }
    for label, s in stats.items():
        print(label, s)
    trio = [
        stats[k] for k in ("TCP", "TCP over EQDS, NDP mode", "TCP over EQDS, RTS mode")
    ]
    ndp, rts = fcts["TCP over EQDS, NDP mode"], fcts["TCP over EQDS, RTS mode"]
    passed = write_result(
        args.results,
        experiment="fig9-fct",
        figure="EQDS NSDI'22, Figure 9",
        setup="4 ToRs x 3 hosts at 25 Gbps, 2 spines, 2 x 25 Gbps uplinks per ToR (200 Gbps "
        "cross-section), 1 us links, 9000 B MTU, Cubic with HyStart, SACK/RACK/TLP, Eifel, TCP small queues and 1 ms min RTO, "
        "every host downloading 1 MB objects "
        "from random hosts back to back, 50 ms, seeds 1-3. TCP: ECMP, 200-packet "
        "drop-tail. EQDS (100-packet EQIF queues with backpressure): NDP mode on "
        "trimming queues of 15 full packets (135,000 B, counted in bytes) with spraying; RTS mode on 200-packet drop-tail with "
        "EQDS control in a higher priority class" + (" (QUICK)" if args.quick else ""),
        quantities=[
            Quantity(
                "median FCT, TCP / TCP over EQDS (NDP mode)",
                2.4,
                round(pct(tcp, 0.5) / pct(ndp, 0.5), 3),
                0.5,
            ),
            Quantity(
                "p95 FCT, TCP / TCP over EQDS (NDP mode)",
                2.0,
                round(pct(tcp, 0.95) / pct(ndp, 0.95), 3),
                0.5,
            ),
            Quantity(
                "median FCT, TCP / TCP over EQDS (RTS mode)",
                2.0,
                round(pct(tcp, 0.5) / pct(rts, 0.5), 3),
                0.5,
            ),
            Quantity(
                "p95 FCT, TCP / TCP over EQDS (RTS mode)",
                2.0,
                round(pct(tcp, 0.95) / pct(rts, 0.95), 3),
                0.5,
            ),
        ],
        also_measured=stats,
        plot="fig9.png",
        data="fig9.csv",
        notes=[
            (
                "The paper reads 2.4x (median) and 2x (p95) for NDP mode and 'halves median "
                "and p95' for RTS mode; we take 2x for RTS. More flows complete with EQDS in "
                "the same 50 ms, so the FCT samples differ in number."
            ),
            (
                "The baseline recovers as Linux does (SACK, RACK, tail-loss probes) and keeps "
                "its NIC queue short (TCP small queues). Without those two (htsim's TCP, "
                "also measured) slow start overflows the sender's own NIC queue and "
                "recovers one hole per round trip, which more than triples its median FCT; "
                "against that baseline EQDS's gains look like the paper's, against Linux's "
                "they do not."
            ),
            (
                "The topology follows Appendix B (12 endpoints, 200 Gbps cross-section). "
                "Random pairs load servers unevenly: "
                f"{trio[0]['share_of_flows_sharing_their_server']:.0%} of TCP's flows share "
                "their server's 25 Gbps uplink with another download for a tenth of their "
                "life or more, and no transport can speed those up. Flows alone at their "
                "server: median {} us TCP, {} NDP, {} RTS; p95 {}, {} and {} us. ".format(
                    *(t["alone_median_us"] for t in trio),
                    *(t["alone_p95_us"] for t in trio),
                )
                + "Shared: median {}, {} and {} us. ".format(
                    *(t["shared_median_us"] for t in trio)
                )
                + "Alone, EQDS's spraying around core collisions shows: TCP's median is "
                f"{trio[0]['alone_median_us'] / trio[1]['alone_median_us']:.2f}x NDP mode's "
                f"and {trio[0]['alone_median_us'] / trio[2]['alone_median_us']:.2f}x RTS "
                "mode's; shared, the server's uplink sets every transport's pace "
                f"({trio[0]['shared_median_us'] / trio[1]['shared_median_us']:.2f}x). "
                "An earlier "
                "model with 8 hosts per ToR and 100 Gbps uplinks had no core collisions and "
                "gave TCP the better median (460 against 649 us)."
            ),
            (
                "Every host here both downloads and serves, so its TCP ACKs wait in its "
                "tunnels behind its own uploads; queueing them ahead ([eqds] acks_first, also "
                "measured) trims the NDP-mode median slightly. TCP also slow-starts over the "
                "tunnel's longer round trip. What slowed Linux TCP 2.4x in the paper's "
                "testbed is not modelled. It is not loss recovery: only "
                f"{resending['TCP'] * 100:.1f}% of the baseline's flows resend anything "
                "(200-packet queues), so Linux's 200 ms minimum RTO and its tail-loss "
                "probe's two-jiffy floor could move the tail at most, not the median."
            ),
            (
                "Neither EQDS's window nor the endpoint count closes the gap (seeds 1-3, "
                "eqds-sim directly). A window of one idle BDP (7 packets of 9000 B), the "
                "default until this run, held EQDS to 70% of the link in a T1 permutation "
                "where every host sends and receives, since data waits behind data at "
                "each sprayed hop and PULLs behind the reverse path's data; the default "
                "is now one BDP of that loaded round trip (15 packets), which gives 97%. "
                "But here the window hardly matters: 10, 14, 20 or 30 packets moved the "
                "NDP median only from 634 to 621, 608, 606 and 607 us in an earlier "
                "build, and going from 7 to 15 packets in this one moved it by under 2%. "
                "Trimming queues counted in packets rather than bytes (as before this "
                "run) trimmed 3-5 times as much, since each 108-byte packet carrying a "
                "TCP ACK took a full packet's place, and moved the NDP median by under "
                "3%. The paper's own "
                "windows, 50 packets (its DPDK build) and 150 (its kernel build), give NDP "
                "mode 615 and 598 us and RTS mode 634 and 627 us. Appendix B's "
                "8 Linux endpoints alone (2 per ToR, no oversubscription) give TCP 570 us "
                "and NDP mode 619 us. Linux's delayed ACKs (one ACK per two segments, "
                "[transport] delayed_ack) give TCP 721 us and NDP mode 603 us (seed 1): "
                "1.20x rather than 1.16x."
            ),
        ],
    )
    print("pass" if passed else "FAIL")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
