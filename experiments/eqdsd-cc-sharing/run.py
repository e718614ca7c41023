#!/usr/bin/env python3
"""EQDS paper, Figure 18 on real Linux hosts: pairs of kernel congestion controllers
into one receiver, through eqdsd and on the plain path.

Three network namespaces behind one router (scripts/testbed.sh), 200 Mbit/s links
shaped by tc: hosts 1 and 2 each send one iperf3 TCP flow to host 3, host 1 with
Cubic and host 2 with each other controller the kernel offers (`-C`: BBR and Reno
here; DCTCP needs a module this kernel lacks). Without eqdsd the bottleneck is a
100-packet tail-drop queue, deep for this path as the T1 testbed's 1 MB TCP buffers
are for its; through eqdsd (RTS mode, link_rate = the tc rate) a 15-packet one. The
paper: without EQDS latency-based controllers are starved by loss-based ones; EQDS
shares fairly. Rates are the receiver's over seconds 2-7 of 8. Writes result.json;
the numbers depend on the machine (two cores here, shared by every host, router and
daemon).

Usage: python3 experiments/eqdsd-cc-sharing/run.py [--results DIR]
"""

from __future__ import annotations

import sys
from pathlib import Path

from eqds_lab import Quantity, write_result
from eqds_lab.experiment import jain, parse_args
from eqds_lab.testbed import Setup, mid_rate

HERE = Path(__file__).resolve().parent
RATE = "200mbit"
#: The controllers paired with Cubic (they must be in the kernel's
#: net.ipv4.tcp_available_congestion_control).
OTHERS = ["bbr", "reno"]
PLAIN_QUEUE = 100
EQDS_QUEUE = 15


def available() -> set[str]:
    text = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text()
    return set(text.split())


def pair(eqdsd: bool, other: str) -> dict:
    """Cubic from host 1 and `other` from host 2 into host 3, at once."""
    queue = EQDS_QUEUE if eqdsd else PLAIN_QUEUE
    s = Setup(3, eqdsd, "--rate", RATE, "--queue", str(queue))
    try:
        results = s.flows([(1, 3), (2, 3)], cc=["cubic", other])
        cubic, rate = (mid_rate(r) for r in results)
        return {
            "cubic_mbps": round(cubic, 1),
            f"{other}_mbps": round(rate, 1),
            "share": round(rate / (cubic + rate), 3),
            "jain": round(jain([cubic, rate]), 4),
        }
    finally:
        s.close()


def main() -> int:
    args = parse_args(__doc__, HERE)
    missing = [cc for cc in OTHERS if cc not in available()]
    if missing:
        print(f"the kernel lacks {missing}: see tcp_available_congestion_control")
        return 2
    m: dict = {}
    for other in OTHERS:
        for eqdsd in (False, True):
            key = f"{other}_{'eqdsd' if eqdsd else 'plain'}"
            print(f"[{key}]", file=sys.stderr)
            m[key] = pair(eqdsd, other)
            print(m[key], file=sys.stderr)
    quantities = [
        Quantity(
            f"plain path ({PLAIN_QUEUE}-packet queue): BBR's share beside Cubic (starved)",
            0.0,
            m["bbr_plain"]["share"],
            0.15,
        ),
        Quantity(
            "through eqdsd: Jain index of Cubic and BBR",
            1.0,
            m["bbr_eqdsd"]["jain"],
            0.05,
        ),
        Quantity(
            "through eqdsd: Jain index of Cubic and Reno",
            1.0,
            m["reno_eqdsd"]["jain"],
            0.05,
        ),
    ]
    args.results.mkdir(parents=True, exist_ok=True)
    ok = write_result(
        args.results,
        experiment="eqdsd-cc-sharing",
        figure="EQDS NSDI'22, Figure 18 (kernel controllers through eqdsd)",
        setup=f"Namespaces behind one router, {RATE} tc htb links; hosts 1 (Cubic) and 2 "
        "(BBR, then Reno) send one iperf3 flow each to host 3 for 8 s, rates over "
        f"seconds 2-7; plain path: {PLAIN_QUEUE}-packet pfifo bottleneck; eqdsd: RTS "
        f"mode, link_rate {RATE}, {EQDS_QUEUE}-packet bottleneck; two cores shared by "
        "everything.",
        quantities=quantities,
        also_measured=m,
        notes=[
            (
                "The paper runs Figure 18 on its T1 testbed at 25 Gbps with 1 MB switch "
                "buffers; here the path is 200 Mbit/s and the plain queue 100 packets, "
                "tens of this path's BDPs as 1 MB is of T1's. The daemons share two "
                "cores with everything else, so a run's figures move by several per "
                "cent between runs."
            ),
        ],
    )
    for q in quantities:
        print(f"{q.name}: ours {q.ours:.3f} (target {q.paper} +- {q.tolerance})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
