#!/usr/bin/env python3
"""A busy-polling UDP echo: the fastest round trip two user-space processes can make
over a path, the floor under any tunnel daemon's added latency.

Neither side ever sleeps: the server spins on a non-blocking socket, and the client
spins between its probes as well as while it waits for each answer, so no wakeup is
on the path. Prints the client's median round trip in µs.

Usage: udp_echo.py server PORT
       udp_echo.py client HOST PORT INTERVAL_US COUNT
"""

from __future__ import annotations

import socket
import statistics
import sys
import time


def serve(port: int) -> None:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", port))
    s.setblocking(False)
    while True:
        try:
            data, peer = s.recvfrom(2048)
        except BlockingIOError:
            continue
        s.sendto(data, peer)


def probe(host: str, port: int, interval_us: int, count: int) -> float:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect((host, port))
    s.setblocking(False)
    payload = bytes(64)
    rtts = []
    for _ in range(count):
        start = time.perf_counter_ns()
        while time.perf_counter_ns() - start < interval_us * 1000:
            pass
        sent = time.perf_counter_ns()
        s.send(payload)
        while True:
            try:
                s.recv(2048)
                break
            except BlockingIOError:
                pass
        rtts.append((time.perf_counter_ns() - sent) / 1000)
    return statistics.median(rtts)


def main() -> None:
    args = sys.argv[1:]
    if args[:1] == ["server"] and len(args) == 2:
        serve(int(args[1]))
    elif args[:1] == ["client"] and len(args) == 5:
        print(round(probe(args[1], int(args[2]), int(args[3]), int(args[4]))))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
