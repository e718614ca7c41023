#!/usr/bin/env python3
"""Idle ping RTT through eqdsd against the bare path, for each way the daemon can wait
for packets and for two ping intervals.

The same two namespaces and veth pair as scripts/bench_tunnels.py, no traffic besides
the pings. For each repetition: the bare veth, then a pair of daemons sleeping between
packets (SCHED_FIFO), polling for 200 us after each packet, and busy polling (both at
ordinary priority), each pinged 150 times at every interval. Prints the medians (us)
per repetition; on a VM, how long ping itself sleeps moves even the bare path's RTT.

With --pin CPU, both daemons and ping run on that one CPU: every hand-off between them
is then a wakeup on the same core. On VMs where waking an idle virtual CPU is slow (see
BENCHMARKS.md), that is the difference that matters.

Each repetition also runs scripts/udp_echo.py between the two namespaces on the bare
veth: a UDP round trip between two user-space processes that never sleep, the floor
under what any user-space tunnel can add (its column, "busy UDP echo", is that round
trip itself).

With --wireguard PATH, wireguard-go (another user-space TUN + UDP tunnel) is pinged too,
on the same veths, after the daemons in each repetition.

Usage: python3 scripts/bench_ping.py [--repeats 3] [--intervals 0.01,0.002] [--pin CPU]
       [--wireguard /path/to/wireguard]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import bench_tunnels as bench

ECHO = str(Path(__file__).resolve().parent / "udp_echo.py")

MODES = {
    "eqdsd sleeping": {},
    "eqdsd polling 200 us": {"poll_us": 200, "realtime": False},
    "eqdsd busy polling": {"busy_poll": True},
}


def median_rtt_us(dst: str, interval: str, pin: int | None, count: int = 150) -> int:
    taskset = ["taskset", "-c", str(pin)] if pin is not None else []
    ping = ["ping", "-c", str(count), "-i", interval, "-W", "1", dst]
    out = bench.ns(bench.A, *taskset, *ping)
    rtts = [float(t.split("=")[1]) * 1000 for t in out.split() if t.startswith("time=")]
    return round(statistics.median(rtts))


def busy_echo_us(interval: str, count: int = 150) -> int:
    """Median round trip of scripts/udp_echo.py across the bare veth."""
    server = subprocess.Popen(
        ["ip", "netns", "exec", bench.B, sys.executable, ECHO, "server", "9999"]
    )
    try:
        time.sleep(0.3)
        interval_us = str(round(float(interval) * 1e6))
        out = bench.ns(
            bench.A,
            sys.executable,
            ECHO,
            "client",
            "10.99.0.2",
            "9999",
            interval_us,
            str(count),
        )
        return int(out)
    finally:
        server.kill()
        server.wait()


def pin_to(cpu: int, pids: list[int]) -> None:
    """Moves every thread of each process onto `cpu`."""
    for pid in pids:
        cmd = ["taskset", "-a", "-p", "-c", str(cpu), str(pid)]
        subprocess.run(cmd, check=True, capture_output=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--intervals", default="0.01,0.002", help="ping -i values, seconds")
    ap.add_argument(
        "--pin", type=int, metavar="CPU", help="run both daemons and ping on this CPU"
    )
    ap.add_argument(
        "--wireguard",
        metavar="PATH",
        help="also ping through wireguard-go (this binary) on the same veths",
    )
    args = ap.parse_args()
    intervals = args.intervals.split(",")
    results: dict[tuple[str, str], list[int]] = {}
    try:
        bench.up(1500)
        for _ in range(args.repeats):
            for interval in intervals:
                results.setdefault(("plain veth", interval), []).append(
                    median_rtt_us("10.99.0.2", interval, args.pin)
                )
                results.setdefault(("busy UDP echo", interval), []).append(
                    busy_echo_us(interval)
                )
            for mode, kw in MODES.items():
                with tempfile.TemporaryDirectory() as d:
                    procs = bench.start_eqdsd(Path(d), 1500, **kw)
                    if args.pin is not None:
                        pin_to(args.pin, [p.pid for p in procs])
                    bench.ping("10.98.0.2", 5)  # tunnels up
                    for interval in intervals:
                        results.setdefault((mode, interval), []).append(
                            median_rtt_us("10.98.0.2", interval, args.pin)
                        )
                    for p in procs:
                        p.terminate()
                        p.wait(timeout=10)
            if args.wireguard:
                with tempfile.TemporaryDirectory() as d:
                    bench.start_wireguard(args.wireguard, Path(d), 1500)
                if args.pin is not None:
                    pgrep = ["pgrep", "-f", f"^{args.wireguard} wg0"]
                    pids = subprocess.run(
                        pgrep, check=True, capture_output=True, text=True
                    )
                    pin_to(args.pin, [int(x) for x in pids.stdout.split()])
                bench.ping("10.97.0.2", 5)  # handshake done
                for interval in intervals:
                    results.setdefault(("wireguard-go", interval), []).append(
                        median_rtt_us("10.97.0.2", interval, args.pin)
                    )
                # Deleting the namespaces removes wg0, and each wireguard-go with it.
                bench.up(1500)
    finally:
        bench.down()
    paths = list(dict.fromkeys(path for path, _ in results))
    print("\n| ping interval | " + " | ".join(paths) + " |")
    print("|---" * (len(paths) + 1) + "|")
    for interval in intervals:
        cells = [" / ".join(str(x) for x in results[(p, interval)]) for p in paths]
        print(f"| {float(interval) * 1e3:g} ms | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
