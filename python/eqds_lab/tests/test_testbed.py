"""The real testbed (scripts/testbed.sh): namespaces, tc shaping, multipath, teardown.

Needs root (network namespaces), iproute2, iperf3 and ping; scripts/test.sh installs the
last two. Skipped only when `ip netns add` is impossible.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from eqds_lab.testbed import Bed, namespaces, netns_possible, run, tx_bytes

_why_not = netns_possible()
pytestmark = pytest.mark.skipif(_why_not is not None, reason=_why_not or "")


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
    # 3 s from slow start, on two cores shared with everything: 0.75-0.95 of the rate.
    assert 0.70 * 200 <= mbps <= 1.05 * 200, f"h1->h2 TCP got {mbps:.1f} Mbit/s of 200"

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
