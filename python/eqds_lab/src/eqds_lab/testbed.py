"""The namespace testbed (scripts/testbed.sh) and eqdsd daemons on it, driven from
Python: shared by the testbed's and the daemon's tests and by the experiments that run
on real Linux hosts (experiments/eqdsd-*). Needs root, iproute2, iperf3 and ping
(scripts/test.sh installs them)."""

from __future__ import annotations

import itertools
import json
import os
import signal
import statistics
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
TESTBED = ROOT / "scripts" / "testbed.sh"
EQDSD = Path(os.environ.get("EQDSD_BIN", ROOT / "target" / "release" / "eqdsd"))
EQDSCTL = EQDSD.with_name("eqdsctl")
_counter = itertools.count()
#: Seconds an experiment's iperf3 tests run; rates are taken over seconds 2 .. 7.
SECONDS = 8


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


def netns_possible() -> str | None:
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

    def iperf3_server(
        self, index: int, port: int, addr: str | None = None, realtime: bool = False
    ) -> None:
        """A one-off iperf3 server on host `index`, bound to `addr` (default: the
        host's testbed address); `realtime` as for `iperf3_client` (a UDP receiver
        needs a core as much as a UDP sender)."""
        addr = addr or self.host(index)["address"]
        rt = ("chrt", "-f", "5") if realtime else ()
        self.tcp_server(index, port, *rt, "iperf3", "-s", "-1", "-J", "-B", addr, "-p", str(port))

    def tcp_server(self, index: int, port: int, *cmd: str) -> None:
        """Starts `cmd` in host `index`'s namespace and waits until something listens
        on TCP `port` there; `kill_servers` stops it."""
        ns = self.host(index)["netns"]
        # The program, past any `chrt -f N` in front of it.
        name = cmd[3] if cmd[0] == "chrt" and len(cmd) > 3 else cmd[0]
        self.servers.append(
            subprocess.Popen(
                ["ip", "netns", "exec", ns, *cmd],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            listening = run(["ip", "netns", "exec", ns, "ss", "-Hltn", f"sport = :{port}"])
            if listening.stdout.strip():
                return
            assert self.servers[-1].poll() is None, f"{name} on {ns}:{port} exited"
            time.sleep(0.05)
        raise AssertionError(f"{name} on {ns} not listening on {port} after 10 s")

    def iperf3_client(
        self,
        src: int,
        dst: int,
        port: int,
        *args: str,
        seconds: int = 3,
        addr: str | None = None,
        realtime: bool = False,
    ) -> dict:
        """iperf3 from host `src` to host `dst` (at `addr`, default its testbed address);
        the parsed JSON report. `realtime` runs it SCHED_FIFO below the daemons
        (priority 5 against their 10): a UDP sender needs a core to offer line rate,
        daemons at real-time priority leave ordinary tasks little of two shared cores,
        and at their own priority it would keep them off its core."""
        rt = ("chrt", "-f", "5") if realtime else ()
        out = self.in_host(
            src,
            *rt, "iperf3", "-c", addr or self.host(dst)["address"], "-p", str(port),
            "-t", str(seconds),
            "-J", *args,
            timeout=seconds + 20,
        )  # fmt: skip
        return json.loads(out)

    def switch_metrics(self, node: str) -> dict[str, float]:
        """Every sample of the eqds-switch in namespace PREFIX-`node` (`r1`, `left`,
        ...; testbeds brought up with `--switch eqds`), keyed by name{labels}."""
        out = run(
            ["ip", "netns", "exec", f"{self.prefix}-{node}", str(EQDSCTL),
             "--metrics", "127.0.0.1:9600", "raw"]
        ).stdout  # fmt: skip
        return parse_samples(out)

    def kill_servers(self) -> None:
        for proc in self.servers:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=10)
        self.servers.clear()


def parse_samples(text: str) -> dict[str, float]:
    """Prometheus text as {name{labels}: value}."""
    samples = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, value = line.rsplit(" ", 1)
            samples[key] = float(value)
    return samples


def total(samples: dict[str, float], name: str) -> float:
    """The sum of every sample of metric `name`, whatever its labels."""
    return sum(v for k, v in samples.items() if k == name or k.startswith(name + "{"))


def inner(index: int) -> str:
    """The inner (EQDS) address of host `index`."""
    return f"10.88.{index}.1"


def config_text(
    index: int,
    rate: str,
    extra: str = "",
    tunnel: str = "",
    interface: str = "",
    peers: str = "",
    udp_offload: bool = False,
) -> str:
    """Host `index`'s configuration; `extra` goes into [eqds], `tunnel` into [tunnel],
    `interface` into [interface], and `peers` ([[peer]] tables) after the peer range.

    UDP offloads are off unless asked for, so that the routers' queues see what a
    switch would, one datagram at a time: a GSO train may be carried whole as far as
    a queue that limits packets, not segments."""
    return f"""
[interface]
address = "{inner(index)}/16"
{interface}
[tunnel]
listen = "10.77.{index}.1:7700"
udp_offload = {str(udp_offload).lower()}
{tunnel}
[eqds]
link_rate = "{rate}"
{extra}
[[peer_range]]
endpoints = "10.77.0.0/16"
port = 7700
allowed_ips = "10.88.0.0/16"
{peers}
"""


class Daemons:
    """eqdsd processes on testbed hosts; all are killed by the fixture."""

    def __init__(self, bed: Bed, workdir: Path) -> None:
        assert EQDSD.exists(), f"{EQDSD} missing: cargo build --release -p eqdsd"
        self.bed = bed
        self.workdir = workdir
        self.procs: dict[int, subprocess.Popen[bytes]] = {}

    def start(self, index: int, rate: str, realtime: bool = True, **sections: str | bool) -> None:
        """Starts host `index`'s daemon with link rate `rate`, SCHED_FIFO unless
        `realtime` is false (a busy-polling daemon must not be); `sections` are
        [`config_text`]'s keyword arguments."""
        cfg = self.workdir / f"h{index}.toml"
        cfg.write_text(config_text(index, rate, **sections))
        log = open(self.workdir / f"h{index}.log", "ab")  # noqa: SIM115 (owned by Popen)
        ns = self.bed.host(index)["netns"]
        self.procs[index] = subprocess.Popen(
            ["ip", "netns", "exec", ns]
            + (["chrt", "-f", "10"] if realtime else [])
            + [str(EQDSD), "--config", str(cfg)],
            stdout=log,
            stderr=log,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.procs[index].poll() is not None:
                raise AssertionError(f"eqdsd on h{index} exited:\n{self.log(index)}")
            probe = subprocess.run(
                ["ip", "netns", "exec", ns, str(EQDSCTL), "counters"],
                capture_output=True,
                check=False,
            )
            if probe.returncode == 0:
                return
            time.sleep(0.05)
        raise AssertionError(f"eqdsd on h{index} not answering:\n{self.log(index)}")

    def log(self, index: int) -> str:
        return (self.workdir / f"h{index}.log").read_text(errors="replace")

    def cpu_seconds(self, index: int) -> float:
        """CPU time host `index`'s daemon has used so far (user and system)."""
        # `ip netns exec` and `chrt` exec in place, so the process is eqdsd itself.
        stat = Path(f"/proc/{self.procs[index].pid}/stat").read_text()
        fields = stat.rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self, index: int, sig: int = signal.SIGTERM) -> int:
        proc = self.procs.pop(index)
        # `ip netns exec` execs the daemon, so the pid is the daemon's.
        proc.send_signal(sig)
        return proc.wait(timeout=10)

    def metrics(self, index: int) -> dict[str, float]:
        """Every sample of the daemon's metrics, keyed by name{labels}."""
        return parse_samples(self.bed.in_host(index, str(EQDSCTL), "raw"))

    def stop_all(self) -> None:
        for index in list(self.procs):
            self.stop(index, signal.SIGKILL)


def tx_bytes(netns: str, dev: str) -> int:
    """Bytes interface `dev` of namespace `netns` has sent."""
    out = run(["ip", "-j", "-s", "-n", netns, "link", "show", "dev", dev]).stdout
    return int(json.loads(out)[0]["stats64"]["tx"]["bytes"])


def received_mbps(result: dict) -> float:
    return result["end"]["sum_received"]["bits_per_second"] / 1e6


def shares_while_all_run(
    testbed: Bed, daemons: Daemons, receiver: int, jobs: list, seconds: int
) -> dict[int, float]:
    """Starts `jobs` (callables running one iperf3 client each for `seconds`) together
    and returns each sending host's rate into `receiver` in Mbit/s, from the receiving
    daemon's per-peer byte counters over the middle of the run, when every flow is up
    (iperf3's own figures cover each client's own, staggered, interval)."""

    def per_peer() -> dict[int, float]:
        m = daemons.metrics(receiver)
        out = {}
        for key, value in m.items():
            if key.startswith('eqdsd_tunnel_rx_bytes_total{peer="10.77.'):
                out[int(key.split(".")[2])] = value
        return out

    with ThreadPoolExecutor(len(jobs)) as pool:
        futures = [pool.submit(job) for job in jobs]
        time.sleep(1.5)
        t0, before = time.monotonic(), per_peer()
        time.sleep(seconds - 3)
        t1, after = time.monotonic(), per_peer()
        for f in futures:
            f.result()
    return {h: (after[h] - before.get(h, 0)) * 8 / (t1 - t0) / 1e6 for h in after}


def mid_rate(result: dict, seconds: int = SECONDS) -> float:
    """Mean rate the receiver saw (Mbit/s) over seconds 2 .. `seconds`-1 of one iperf3
    test of `seconds` (the server's intervals: for UDP the client's would be the
    sending rate)."""
    rates = [
        i["sum"]["bits_per_second"] / 1e6
        for i in result["server_output_json"]["intervals"]
        if 2 <= i["sum"]["start"] < seconds - 1
    ]
    return statistics.fmean(rates)


def ping_stats(bed: Bed, src: int, dst_addr: str, count: int, delay: float = 0) -> dict:
    """`count` pings 50 ms apart from host `src` after `delay` seconds: median and p99
    round-trip time (ms), and how many came back."""
    time.sleep(delay)
    out = bed.in_host(
        src, "ping", "-c", str(count), "-i", "0.05", "-W", "2", dst_addr,
        timeout=count + 30, check=False,
    )  # fmt: skip
    rtts = sorted(float(t.split("=")[1]) for t in out.split() if t.startswith("time="))
    if not rtts:
        return {"median_ms": None, "p99_ms": None, "received": 0}
    return {
        "median_ms": round(statistics.median(rtts), 3),
        "p99_ms": round(rtts[min(len(rtts) - 1, int(0.99 * len(rtts)))], 3),
        "received": len(rtts),
    }


class Setup:
    """A fresh testbed for one experiment's measurement, with (or without) a daemon on
    every host; `close` tears it all down."""

    def __init__(
        self,
        hosts: int,
        eqdsd: bool,
        *up_args: str,
        daemon_rate: str = "200mbit",
        eqds: str = "",
    ):
        self.bed = Bed()
        self.bed.up("--hosts", str(hosts), *up_args)
        self.eqdsd = eqdsd
        self.tmp = tempfile.TemporaryDirectory()
        self.daemons = Daemons(self.bed, Path(self.tmp.name))
        if eqdsd:
            for h in range(1, hosts + 1):
                self.daemons.start(h, daemon_rate, extra=eqds, tunnel="paths = 32")

    def addr(self, host: int) -> str:
        return inner(host) if self.eqdsd else self.bed.host(host)["address"]

    def flows(
        self,
        pairs: list[tuple[int, int]],
        udp: set[int] = frozenset(),
        udp_mbps: int = 250,
        cc: list[str] | None = None,
    ) -> list[dict]:
        """One iperf3 flow per (src, dst) pair, all at once, for SECONDS; their JSON
        reports. The flows numbered in `udp` are unresponsive UDP at `udp_mbps`; the
        others are TCP with the kernel congestion controller `cc[k]` (default Cubic)."""
        for k, (_, dst) in enumerate(pairs):
            self.bed.iperf3_server(dst, 5201 + k, addr=self.addr(dst), realtime=k in udp)
        with ThreadPoolExecutor(len(pairs)) as pool:
            futures = []
            for k, (src, dst) in enumerate(pairs):
                extra = (
                    ("-u", "-b", f"{udp_mbps}M", "-l", "1400")
                    if k in udp
                    else ("-C", cc[k] if cc else "cubic")
                )
                extra += ("--get-server-output",)
                futures.append(
                    pool.submit(
                        self.bed.iperf3_client,
                        src,
                        dst,
                        5201 + k,
                        *extra,
                        seconds=SECONDS,
                        addr=self.addr(dst),
                        realtime=k in udp,
                    )
                )
            return [f.result() for f in futures]

    def close(self) -> None:
        self.daemons.stop_all()
        self.bed.kill_servers()
        self.bed.down()
        self.tmp.cleanup()
