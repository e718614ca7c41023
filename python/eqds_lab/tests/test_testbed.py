"""The real testbed (scripts/testbed.sh): namespaces, tc shaping, multipath, teardown.

Needs root (network namespaces), iproute2, iperf3 and ping; scripts/test.sh installs the
last two. Skipped only when `ip netns add` is impossible.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

TESTBED = Path(__file__).resolve().parents[3] / "scripts" / "testbed.sh"
_counter = itertools.count()


def run(cmd: list[str], timeout: float = 30) -> subprocess.CompletedProcess[str]:
    """Runs a command; on failure the error shows its output."""
    try:
        return subprocess.run(cmd, check=True, timeout=timeout, capture_output=True, text=True)
    except subprocess.CalledProcessError as e:
        raise AssertionError(
            f"{' '.join(cmd)} failed ({e.returncode}):\n{e.stdout}\n{e.stderr}"
        ) from None


def _netns_possible() -> str | None:
    """None if this process may create network namespaces, else why not."""
    probe = f"eqtbprobe{os.getpid()}"
    try:
        r = subprocess.run(
            ["ip", "netns", "add", probe], check=False, capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"cannot run `ip netns add`: {e}"
    if r.returncode != 0:
        return f"`ip netns add` is impossible here (needs root): {r.stderr.strip()}"
    subprocess.run(["ip", "netns", "delete", probe], check=False, capture_output=True, timeout=10)
    return None


_why_not = _netns_possible()
pytestmark = pytest.mark.skipif(_why_not is not None, reason=_why_not or "")


def namespaces(prefix: str) -> list[str]:
    out = run(["ip", "netns", "list"]).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith(f"{prefix}-")]


class Bed:
    """One testbed: brought up by `up`, always torn down by the fixture."""

    def __init__(self) -> None:
        self.prefix = f"tb{os.getpid()}n{next(_counter)}"
        self.servers: list[subprocess.Popen[bytes]] = []
        self.summary: dict = {}

    def script(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return run(["bash", str(TESTBED), *args], timeout=timeout)

    def up(self, *args: str) -> dict:
        self.script("up", "--prefix", self.prefix, *args)
        self.summary = json.loads(Path(f"/run/{self.prefix}-testbed.json").read_text())
        return self.summary

    def down(self) -> None:
        self.script("down", "--prefix", self.prefix)

    def host(self, index: int) -> dict:
        return self.summary["hosts"][index - 1]

    def in_host(self, index: int, *cmd: str, timeout: float = 30) -> str:
        return run(["ip", "netns", "exec", self.host(index)["netns"], *cmd], timeout).stdout

    def iperf3_server(self, index: int, port: int) -> None:
        """A one-off iperf3 server on host `index`'s namespace address."""
        ns, addr = self.host(index)["netns"], self.host(index)["address"]
        self.servers.append(
            subprocess.Popen(
                ["ip", "netns", "exec", ns, "iperf3", "-s", "-1", "-B", addr, "-p", str(port)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            listening = run(["ip", "netns", "exec", ns, "ss", "-Hltn", f"sport = :{port}"])
            if listening.stdout.strip():
                return
            assert self.servers[-1].poll() is None, f"iperf3 server on {ns}:{port} exited"
            time.sleep(0.05)
        raise AssertionError(f"iperf3 server on {ns} {addr}:{port} not listening after 10 s")

    def iperf3_client(self, src: int, dst: int, port: int, *args: str, seconds: int = 3) -> dict:
        out = self.in_host(
            src,
            "iperf3", "-c", self.host(dst)["address"], "-p", str(port), "-t", str(seconds),
            "-J", *args,
            timeout=seconds + 20,
        )  # fmt: skip
        return json.loads(out)

    def kill_servers(self) -> None:
        for proc in self.servers:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=10)
        self.servers.clear()


@pytest.fixture
def testbed() -> Iterator[Bed]:
    tb = Bed()
    try:
        yield tb
    finally:
        tb.kill_servers()
        tb.down()


def tx_bytes(netns: str, dev: str) -> int:
    out = run(["ip", "-j", "-s", "-n", netns, "link", "show", "dev", dev]).stdout
    return int(json.loads(out)[0]["stats64"]["tx"]["bytes"])


def test_one_path_tcp_reaches_the_tc_rate_and_ping_works(testbed: Bed) -> None:
    summary = testbed.up("--hosts", "2", "--rate", "200mbit", "--queue", "100")
    assert [h["netns"] for h in summary["hosts"]] == [
        f"{testbed.prefix}-h1",
        f"{testbed.prefix}-h2",
    ]
    assert summary["routers"][0]["netns"] == f"{testbed.prefix}-r1"
    assert summary["queue_packets"] == 100

    ping = testbed.in_host(1, "ping", "-c", "3", "-i", "0.2", "-W", "2", testbed.host(2)["address"])
    assert " 0% packet loss" in ping, ping

    testbed.iperf3_server(2, 5201)
    result = testbed.iperf3_client(1, 2, 5201)
    mbps = result["end"]["sum_received"]["bits_per_second"] / 1e6
    assert 0.80 * 200 <= mbps <= 1.05 * 200, f"h1->h2 TCP got {mbps:.1f} Mbit/s of 200"

    # The bottleneck queue holds MTU-sized packets (no GSO aggregates), in packets.
    qdisc = run(["ip", "netns", "exec", f"{testbed.prefix}-r1", "tc", "-s", "-j", "qdisc",
                 "show", "dev", "h2"]).stdout  # fmt: skip
    fifo = next(q for q in json.loads(qdisc) if q["kind"] == "pfifo")
    assert fifo["options"]["limit"] == 100
    assert fifo["bytes"] / fifo["packets"] <= 1514, fifo


def test_two_paths_both_routers_forward(testbed: Bed) -> None:
    summary = testbed.up("--hosts", "4", "--paths", "2", "--rate", "100mbit", "--queue", "50")
    p = testbed.prefix
    assert {r["netns"] for r in summary["routers"]} == {f"{p}-r1", f"{p}-r2"}
    assert [h["side"] for h in summary["hosts"]] == ["left", "left", "right", "right"]

    # Left hosts send to right hosts: data leaves each router on its "right" link.
    before = {r: tx_bytes(f"{p}-{r}", "right") for r in ("r1", "r2")}
    testbed.iperf3_server(3, 5201)
    testbed.iperf3_server(4, 5202)
    # 2 x 8 parallel flows with distinct source ports: all 16 hashing onto one path
    # happens with probability 2^-15.
    with ThreadPoolExecutor(2) as pool:
        runs = [
            pool.submit(testbed.iperf3_client, 1, 3, 5201, "-P", "8"),
            pool.submit(testbed.iperf3_client, 2, 4, 5202, "-P", "8"),
        ]
        results = [r.result() for r in runs]
    moved = {r: tx_bytes(f"{p}-{r}", "right") - before[r] for r in ("r1", "r2")}
    total = sum(moved.values())
    received = sum(r["end"]["sum_received"]["bytes"] for r in results)
    assert total >= received, (moved, received)
    for router, nbytes in moved.items():
        assert nbytes > 0.10 * total, f"{router} carried {nbytes} of {total} bytes: {moved}"
    # Together the two 100 Mbit/s paths carry more than one path could.
    mbps = sum(r["end"]["sum_received"]["bits_per_second"] for r in results) / 1e6
    assert mbps > 120, f"aggregate {mbps:.1f} Mbit/s over two 100 Mbit/s paths"


def test_down_removes_everything_with_the_prefix_and_only_that(testbed: Bed) -> None:
    testbed.up("--hosts", "3", "--paths", "2")
    assert len(namespaces(testbed.prefix)) == 3 + 4
    other = Bed()
    other.prefix = testbed.prefix + "x"  # shares the text prefix, must survive
    try:
        other.up("--hosts", "2")
        testbed.down()
        assert namespaces(testbed.prefix) == []
        assert not Path(f"/run/{testbed.prefix}-testbed.json").exists()
        testbed.down()  # idempotent
        assert sorted(namespaces(other.prefix)) == [
            f"{other.prefix}-h1",
            f"{other.prefix}-h2",
            f"{other.prefix}-r1",
        ]
    finally:
        other.down()
    assert namespaces(other.prefix) == []
