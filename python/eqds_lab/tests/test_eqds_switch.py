"""eqds-switch on the namespace testbed: forwarding, trimming for eqdsd's NDP mode, and
refusing what it must refuse (issue 31, at small, fast scales; the full measurements
are experiments/eqds-switch-testbed)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from eqds_lab.testbed import ROOT, Bed, Daemons, inner, netns_possible, run, total

SWITCH = ROOT / "target" / "release" / "eqds-switch"
TRIMMING = '{ kind = "trimming", data_packets = 4, return_to_sender = false }'

_why_not = netns_possible()
pytestmark = pytest.mark.skipif(_why_not is not None, reason=_why_not or "")


@pytest.fixture
def daemons(testbed: Bed, tmp_path: Path) -> Iterator[Daemons]:
    d = Daemons(testbed, tmp_path)
    try:
        yield d
    finally:
        d.stop_all()


def test_forwards_tcp_and_counts_it(testbed: Bed) -> None:
    testbed.up("--hosts", "2", "--rate", "200mbit", "--switch", "eqds")
    out = testbed.in_host(1, "ping", "-c", "3", "-i", "0.2", "-W", "2", "10.77.2.1")
    assert " 0% packet loss" in out
    testbed.iperf3_server(2, 5201)
    r = testbed.iperf3_client(1, 2, 5201, seconds=3)
    mbps = r["end"]["sum_received"]["bits_per_second"] / 1e6
    # The port's rate bounds it (with its 1 ms bucket), and the switch carried it all.
    assert 20 < mbps < 200 * 1.05, mbps
    m = testbed.switch_metrics("r1")
    assert m['eqds_switch_port_sent_bytes_total{port="h2"}'] >= r["end"]["sum_received"]["bytes"]
    assert total(m, "eqds_switch_port_ring_drops_total") == 0
    # SIGTERM: a clean stop, with each port's totals on its standard output.
    ns = f"{testbed.prefix}-r1"
    pid = int(Path(f"/run/{ns}-switch.pid").read_text())
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 5
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not Path(f"/proc/{pid}").exists(), "still running 5 s after SIGTERM"
    report = Path(f"/run/{ns}-switch.out").read_text()
    assert "port h2: rx" in report and "not forwarded" in report, report


def test_ndp_mode_over_trimming_resends_every_trimmed_packet(
    testbed: Bed, daemons: Daemons
) -> None:
    """Two NDP-mode tunnels into one 100 Mbit/s port of 4-packet trimming queues: the
    blind first windows overflow it, the switch trims, the receiver NACKs, the senders
    resend, and every DATA packet sent arrives whole or as its header."""
    testbed.up("--hosts", "3", "--rate", "100mbit", "--switch", "eqds", "--discipline", TRIMMING)
    for h in (1, 2, 3):
        daemons.start(h, "100mbit", extra='mode = "ndp"', tunnel="paths = 8")
    for k in (0, 1):
        testbed.iperf3_server(3, 5201 + k, addr=inner(3))
    with ThreadPoolExecutor(2) as pool:
        futures = [
            pool.submit(testbed.iperf3_client, 1 + k, 3, 5201 + k, seconds=3, addr=inner(3))
            for k in (0, 1)
        ]
        results = [f.result() for f in futures]
    assert all(r["end"]["sum_received"]["bytes"] > 1_000_000 for r in results)
    sw = testbed.switch_metrics("r1")
    trimmed = sw['eqds_switch_port_trimmed_total{port="h3"}']
    sent = whole = headers = retransmits = 0.0
    for h in (1, 2, 3):
        m = daemons.metrics(h)
        sent += total(m, "eqdsd_data_sent_total")
        whole += total(m, "eqdsd_tunnel_rx_data_packets_total")
        headers += total(m, "eqdsd_tunnel_rx_trimmed_packets_total")
        retransmits += total(m, "eqdsd_tunnel_tx_retransmits_total")
    assert trimmed > 0, "two blind windows into a 4-packet queue must trim"
    assert headers == trimmed, (headers, trimmed)
    assert retransmits >= trimmed
    assert sent == whole + headers, (sent, whole, headers)


def test_bad_configs_are_named_and_forwarding_kernels_refused(testbed: Bed, tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(
        '[[port]]\nname = "p1"\nrate = "1Gbps"\nqueue = { kind = "trimming", data_packets = 8 }\n'
    )
    r = subprocess.run(
        [str(SWITCH), "--config", str(bad), "--check"], check=False, capture_output=True, text=True
    )
    assert r.returncode == 2
    assert "port[0].queue" in r.stderr and "eqds_ports" in r.stderr, r.stderr
    testbed.up("--hosts", "1", "--switch", "eqds")
    ns = f"{testbed.prefix}-r1"
    conf = f"/run/{ns}-switch.toml"
    run(["ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv4.ip_forward=1"])
    r = subprocess.run(
        ["ip", "netns", "exec", ns, str(SWITCH), "--config", conf],
        check=False, capture_output=True, text=True, timeout=10,
    )  # fmt: skip
    assert r.returncode == 1
    assert "ip_forward" in r.stderr
