"""The namespace testbed (scripts/testbed.sh) driven from Python: shared by the testbed's
own tests and the eqdsd tests. Needs root, iproute2, iperf3 and ping."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

TESTBED = Path(__file__).resolve().parents[3] / "scripts" / "testbed.sh"
_counter = itertools.count()


def run(
    cmd: list[str], timeout: float = 30, input: str | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """Runs a command; on failure (when `check`) the error shows its output."""
    try:
        return subprocess.run(
            cmd, check=check, timeout=timeout, capture_output=True, text=True, input=input
        )
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


WHY_NOT = _netns_possible()
needs_netns = pytest.mark.skipif(WHY_NOT is not None, reason=WHY_NOT or "")


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

    def in_host(self, index: int, *cmd: str, timeout: float = 30, check: bool = True) -> str:
        """Runs `cmd` in host `index`'s namespace; its standard output."""
        ns = self.host(index)["netns"]
        return run(["ip", "netns", "exec", ns, *cmd], timeout, check=check).stdout

    def iperf3_server(self, index: int, port: int, addr: str | None = None) -> None:
        """A one-off iperf3 server on host `index`, bound to `addr` (default: the
        host's testbed address)."""
        ns, addr = self.host(index)["netns"], addr or self.host(index)["address"]
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

    def iperf3_client(
        self, src: int, dst: int, port: int, *args: str, seconds: int = 3, addr: str | None = None
    ) -> dict:
        """iperf3 from host `src` to host `dst` (at `addr`, default its testbed address);
        the parsed JSON report."""
        out = self.in_host(
            src,
            "iperf3", "-c", addr or self.host(dst)["address"], "-p", str(port),
            "-t", str(seconds),
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
