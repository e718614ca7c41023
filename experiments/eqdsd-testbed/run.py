#!/usr/bin/env python3
"""eqdsd on the namespace testbed: issue 6's acceptance measurements, with and without
the daemon.

Hosts are network namespaces behind one router (scripts/testbed.sh), 200 Mbit/s links
shaped by tc, kernel TCP Cubic and iperf3. Every configuration is measured twice, once
through eqdsd (RTS mode, one daemon per host at SCHED_FIFO, link_rate = the tc rate) and
once on the plain path:

1. one TCP flow, 15-packet bottleneck queue: goodput as a fraction of the tc rate
   (median of three runs);
2. 8-to-1 TCP incast: Jain index and aggregate, with a 15-packet queue (and, without
   eqdsd, a 1000-packet queue);
3. ping from an idle ninth host to the incast receiver during the incast: eqdsd with
   the shallow queue against the plain path with the deep queue;
4. a line-rate UDP sender against four TCP flows into one receiver: UDP's share;
5. two parallel 100 Mbit/s paths (hosts on 200 Mbit/s): one TCP flow.

The UDP sender and receiver run at a real-time priority just below the daemons' (with
and without eqdsd): otherwise the daemons leave them too little of the two cores, and
UDP is limited by CPU rather than by the network (the UDP receiver, a plain task, got
6 Mbit/s while its daemon received 56). The TCP applications stay ordinary tasks: the
kernel does their work, and real-time applications starve ksoftirqd.

Per-flow rates come from iperf3's one-second intervals over the seconds every flow
was running (clients start within half a second of each other). Writes result.json and
a README section; the numbers depend on the machine (two cores here, shared by every
host, router and daemon).

Usage: python3 experiments/eqdsd-testbed/run.py [--results DIR]
"""

from __future__ import annotations

import statistics
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from eqds_lab import Quantity, write_result
from eqds_lab.experiment import jain, parse_args
from eqds_lab.testbed import Setup, mid_rate, ping_stats

HERE = Path(__file__).resolve().parent
RATE_MBPS = 200
#: The UDP-against-TCP case runs slower (see udp_share).
UDP_RATE_MBPS = 100


def single_flow(eqdsd: bool) -> float:
    s = Setup(2, eqdsd, "--rate", "200mbit", "--queue", "15")
    try:
        return mid_rate(s.flows([(1, 2)])[0])
    finally:
        s.close()


def incast(eqdsd: bool, queue: int) -> dict:
    """8-to-1 incast into host 9, host 10 pinging host 9 meanwhile."""
    s = Setup(10, eqdsd, "--rate", "200mbit", "--queue", str(queue))
    try:
        idle = ping_stats(s.bed, 10, s.addr(9), 20, 0)
        with ThreadPoolExecutor(1) as pool:
            loaded = pool.submit(ping_stats, s.bed, 10, s.addr(9), 60, 2.5)
            rates = [mid_rate(r) for r in s.flows([(h, 9) for h in range(1, 9)])]
            ping = loaded.result()
        return {
            "rates_mbps": [round(r, 1) for r in rates],
            "jain": round(jain(rates), 4),
            "aggregate_mbps": round(sum(rates), 1),
            "ping_idle": idle,
            "ping_loaded": ping,
        }
    finally:
        s.close()


def udp_share(eqdsd: bool, eqds: str = "") -> dict:
    # At 100 Mbit/s, not 200: sixteen processes (six daemons, five senders at 2.5x
    # their share, five receivers) share two cores here, and at 200 Mbit/s the
    # real-time UDP blaster kept the TCP senders off them, so the blaster's tunnel
    # took the credit TCP could not use (a share of 0.29-0.45 over several sessions).
    # At 100 Mbit/s nothing waits for a core and the five tunnels share exactly.
    s = Setup(
        6, eqdsd, "--rate", f"{UDP_RATE_MBPS}mbit", "--queue", "15",
        daemon_rate=f"{UDP_RATE_MBPS}mbit", eqds=eqds,
    )  # fmt: skip
    try:
        # 1.25x the link rate, as at 200 Mbit/s: far more starves iperf3's own
        # control connection behind the flood without eqdsd.
        blaster = UDP_RATE_MBPS * 5 // 4
        results = s.flows([(h, 6) for h in range(1, 6)], udp={4}, udp_mbps=blaster)
        rates = [mid_rate(r) for r in results]
        return {
            "tcp_mbps": [round(r, 1) for r in rates[:4]],
            "udp_mbps": round(rates[4], 1),
            "udp_share_of_tc_rate": round(rates[4] / UDP_RATE_MBPS, 3),
        }
    finally:
        s.close()


def two_paths(eqdsd: bool) -> float:
    s = Setup(
        4,
        eqdsd,
        "--paths",
        "2",
        "--rate",
        "100mbit",
        "--host-rate",
        "200mbit",
        "--queue",
        "15",
    )
    try:
        return mid_rate(s.flows([(1, 3)])[0])
    finally:
        s.close()


def main() -> int:
    args = parse_args(__doc__, HERE)
    m: dict = {}
    for eqdsd in (True, False):
        key = "eqdsd" if eqdsd else "plain"
        print(f"[{key}] one flow, three runs", file=sys.stderr)
        runs = [round(single_flow(eqdsd), 1) for _ in range(3)]
        m[f"single_{key}_runs_mbps"] = runs
        m[f"single_{key}_mbps"] = statistics.median(runs)
        print(f"[{key}] incast, 15-packet queue", file=sys.stderr)
        m[f"incast_{key}_q15"] = incast(eqdsd, 15)
        print(f"[{key}] UDP against TCP", file=sys.stderr)
        m[f"udp_{key}"] = udp_share(eqdsd)
        print(f"[{key}] two paths, three runs", file=sys.stderr)
        # Three runs, as for one flow: a single one ranged from 0.95x to 1.64x of one
        # path with the same build, as the two cores allowed.
        paths_runs = [round(two_paths(eqdsd), 1) for _ in range(3)]
        m[f"two_paths_{key}_runs_mbps"] = paths_runs
        m[f"two_paths_{key}_mbps"] = statistics.median(paths_runs)
    print("[plain] incast, 1000-packet queue", file=sys.stderr)
    m["incast_plain_q1000"] = incast(False, 1000)

    packet_ms = 1514 * 8 / (RATE_MBPS * 1e6) * 1e3
    e15, p1000 = m["incast_eqdsd_q15"], m["incast_plain_q1000"]
    quantities = [
        Quantity(
            "one TCP flow through eqdsd / tc rate",
            0.95,
            m["single_eqdsd_mbps"] / 200,
            0.05,
        ),
        Quantity(
            "8-to-1 incast through eqdsd, 15-packet queue: Jain", 1.0, e15["jain"], 0.05
        ),
        Quantity(
            "8-to-1 incast through eqdsd: aggregate / tc rate",
            0.95,
            e15["aggregate_mbps"] / 200,
            0.05,
        ),
        Quantity(
            "UDP share against 4 TCP through eqdsd",
            0.2,
            m["udp_eqdsd"]["udp_share_of_tc_rate"],
            0.05,
        ),
        Quantity(
            "one TCP flow over two 100 Mbit/s paths through eqdsd / one path",
            2.0,
            m["two_paths_eqdsd_mbps"] / 100,
            0.8,
        ),
    ]
    loaded = e15["ping_loaded"]["median_ms"]
    idle = e15["ping_idle"]["median_ms"]
    m["ping_rise_eqdsd_q15_packet_times"] = (
        round((loaded - idle) / packet_ms, 1) if loaded and idle else None
    )
    m["ping_loaded_plain_q1000_ms"] = p1000["ping_loaded"]["median_ms"]
    args.results.mkdir(parents=True, exist_ok=True)
    ok = write_result(
        args.results,
        "Issue 6 acceptance (EQDS NSDI'22 testbed claims, on namespaces)",
        "Namespaces behind one router, 200 Mbit/s tc htb links (100 for UDP against TCP "
        "and per path for two paths), 15-packet pfifo bottleneck "
        "(1000 for the deep case), Cubic, iperf3 8 s (rates over seconds 2-7), eqdsd in RTS "
        "mode with link_rate 200mbit and 32 source ports; two cores shared by everything.",
        quantities,
        experiment="eqdsd-testbed",
        also_measured=m,
        notes=[
            (
                "The two cores are shared by up to ten daemons at SCHED_FIFO, the hosts, "
                "the router and iperf3, so one run's figures move by several percent: on "
                "2026-11-23 the plain path's one flow ranged 166-189 Mbit/s across runs. "
                "Compare builds by alternating them. For the demand lookahead and warm "
                "restarts (eqds-proto), three alternated 10-host incasts of each build "
                "gave 177-179 Mbit/s before and 169-183 with them; with them, lookahead 0 "
                "against 4 gave 171-181 and 178-185 (three each, twice over); full runs "
                "gave an incast aggregate of 0.89-0.91 of the tc rate before (two runs) "
                "and 0.84-0.89 with them (five runs), and one flow 0.89-0.90 and "
                "0.87-0.91. No difference stands out of the noise."
            ),
        ],
    )
    print(
        "\n".join(
            f"{q.name}: ours {q.ours:.3f} (target {q.paper} +- {q.tolerance})"
            for q in quantities
        )
    )
    return 0 if ok else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except subprocess.CalledProcessError as e:
        print(e.stderr, file=sys.stderr)
        raise
