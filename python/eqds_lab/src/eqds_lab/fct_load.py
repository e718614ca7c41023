"""A closed-loop object-download load for real hosts: every client fetches objects of
one size from random servers, one at a time and back to back, each over a new TCP
connection, and records how long each took. The EQDS paper's storage-like workload
(Figure 9) on network namespaces.

    python3 -m eqds_lab.fct_load serve --port 6000
    python3 -m eqds_lab.fct_load fetch --servers 10.0.0.2,10.0.0.3 --port 6000 \\
        --size 1000000 --seconds 20 --seed 1

A request is the object size as 8 bytes (network order); the server answers with that
many bytes and closes. `fetch` prints one JSON object: the server, the start (seconds
since the first fetch began) and the completion time in microseconds of every object,
from the connection attempt to its last byte. A download that fails (refused, reset,
cut short, longer than the answer asked for, or 30 s without a byte) is listed with
its error instead of a completion time, and the next one starts.
"""

from __future__ import annotations

import argparse
import json
import random
import socket
import socketserver
import struct
import sys
import time

REQUEST = struct.Struct("!Q")
#: Largest object a server sends (a request for more is refused by closing).
MAX_SIZE = 1 << 30
CHUNK = 1 << 16
#: Seconds a download may go without a byte before it counts as failed.
TIMEOUT_S = 30


class _Handler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        request = self.request.recv(REQUEST.size, socket.MSG_WAITALL)
        if len(request) != REQUEST.size:
            return
        (size,) = REQUEST.unpack(request)
        if size > MAX_SIZE:
            return
        payload = memoryview(bytes(CHUNK))
        while size:
            n = min(size, CHUNK)
            self.request.sendall(payload[:n])
            size -= n


class _Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True
    request_queue_size = 128


def serve(port: int) -> None:
    with _Server(("0.0.0.0", port), _Handler) as server:
        server.serve_forever()


def fetch_one(server: str, port: int, size: int, buf: memoryview) -> int:
    """Downloads one object of `size` bytes from `server` over a new connection and
    returns how many bytes came; an answer cut short or longer than `size` is an error."""
    with socket.create_connection((server, port), timeout=TIMEOUT_S) as sock:
        sock.sendall(REQUEST.pack(size))
        got = 0
        while got < size:
            n = sock.recv_into(buf, min(len(buf), size - got))
            if n == 0:
                raise ConnectionError(f"{server} closed after {got} of {size} bytes")
            got += n
        # The server closes once it has sent the object: anything more is wrong.
        if sock.recv_into(buf, 1):
            raise ConnectionError(f"{server} sent more than the {size} bytes asked for")
        return got


def fetch(servers: list[str], port: int, size: int, seconds: float, seed: int) -> dict:
    rng = random.Random(seed)
    buf = memoryview(bytearray(CHUNK))
    begin = time.monotonic()
    objects = []
    while time.monotonic() - begin < seconds:
        server = rng.choice(servers)
        start = time.monotonic()
        row = {"server": server, "start_s": round(start - begin, 6)}
        try:
            fetch_one(server, port, size, buf)
            row["fct_us"] = round((time.monotonic() - start) * 1e6, 1)
        except OSError as e:
            row["error"] = str(e) or type(e).__name__
            # A server that is down refuses at once: do not spin on it.
            time.sleep(0.01)
        objects.append(row)
    return {"size": size, "objects": objects}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m eqds_lab.fct_load", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("serve", help="answer object requests until killed")
    s.add_argument("--port", type=int, required=True)
    f = sub.add_parser("fetch", help="download objects back to back for a while")
    f.add_argument("--servers", required=True, help="comma-separated addresses")
    f.add_argument("--port", type=int, required=True)
    f.add_argument("--size", type=int, required=True, help="object size in bytes")
    f.add_argument("--seconds", type=float, required=True)
    f.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    if args.command == "serve":
        serve(args.port)
        return 0
    if not 0 < args.size <= MAX_SIZE:
        parser.error(f"--size must be 1..{MAX_SIZE} bytes, got {args.size}")
    servers = [a for a in args.servers.split(",") if a]
    if not servers:
        parser.error("--servers names no address")
    json.dump(fetch(servers, args.port, args.size, args.seconds, args.seed), sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
