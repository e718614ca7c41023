#!/usr/bin/env python3
"""TCP through eqdsd, through wireguard-go and on the bare path, over one veth pair
between two network namespaces, without a rate limit, measured in the same run.

For each MTU (1500 and 9000) and each of plain veth, eqdsd (sleeping between packets,
busy polling, and polling for 200 us after each packet), and wireguard-go: one iperf3
TCP flow (Cubic) for --seconds, the machine's CPU time over the run (from /proc/stat,
all cores: the daemons, the kernel's network stack and iperf3 together) per Gbit
carried, and ping RTT idle and during the flow. Needs root, iproute2, iperf3, ping;
wireguard-go as `wireguard` (--wireguard PATH) and `wg` (Debian's wireguard-tools).

Usage: python3 scripts/bench_tunnels.py [--seconds 8] [--wireguard PATH] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EQDSD = ROOT / "target" / "release" / "eqdsd"
A, B = "bt-a", "bt-b"


def sh(
    *cmd: str, check: bool = True, timeout: float = 60, input: str | None = None
) -> str:
    r = subprocess.run(
        cmd, check=False, capture_output=True, text=True, timeout=timeout, input=input
    )
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {r.stderr.strip()}")
    return r.stdout


def ns(name: str, *cmd: str, **kw) -> str:
    return sh("ip", "netns", "exec", name, *cmd, **kw)


def down() -> None:
    for n in (A, B):
        for pid in sh("ip", "netns", "pids", n, check=False).split():
            sh("kill", "-KILL", pid, check=False)
        sh("ip", "netns", "delete", n, check=False)


def up(mtu: int) -> None:
    down()
    for n in (A, B):
        sh("ip", "netns", "add", n)
        ns(n, "ip", "link", "set", "lo", "up")
    sh(
        "ip",
        "link",
        "add",
        "va",
        "netns",
        A,
        "type",
        "veth",
        "peer",
        "name",
        "vb",
        "netns",
        B,
    )
    for n, dev, addr in ((A, "va", "10.99.0.1/24"), (B, "vb", "10.99.0.2/24")):
        ns(n, "ip", "addr", "add", addr, "dev", dev)
        ns(n, "ip", "link", "set", dev, "mtu", str(mtu), "up")


def cpu_busy_seconds() -> float:
    """CPU time spent not idle since boot, over all cores, in seconds."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    idle = fields[3] + fields[4]
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def ping(dst: str, count: int) -> float:
    out = ns(A, "ping", "-c", str(count), "-i", "0.01", "-W", "1", dst, check=False)
    rtts = [float(t.split("=")[1]) for t in out.split() if t.startswith("time=")]
    return round(statistics.median(rtts) * 1000, 1) if rtts else float("nan")


def measure(dst: str, seconds: int) -> dict:
    """One iperf3 flow to `dst` in namespace B; throughput, CPU per Gbit, pings."""
    srv = subprocess.Popen(
        ["ip", "netns", "exec", B, "iperf3", "-s", "-1", "-B", dst],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(0.5)
    idle = ping(dst, 50)
    cpu0, t0 = cpu_busy_seconds(), time.monotonic()
    client = subprocess.Popen(
        [
            "ip",
            "netns",
            "exec",
            A,
            "iperf3",
            "-c",
            dst,
            "-t",
            str(seconds),
            "-C",
            "cubic",
            "-J",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    time.sleep(seconds / 2)
    loaded = ping(dst, 50)
    out, _ = client.communicate(timeout=seconds + 30)
    cpu = cpu_busy_seconds() - cpu0
    wall = time.monotonic() - t0
    srv.wait(timeout=10)
    result = json.loads(out)
    gbps = result["end"]["sum_received"]["bits_per_second"] / 1e9
    gbits = result["end"]["sum_received"]["bytes"] * 8 / 1e9
    return {
        "gbps": round(gbps, 2),
        "cpu_cores_busy": round(cpu / wall, 2),
        "cpu_seconds_per_gbit": round(cpu / gbits, 3) if gbits else None,
        "ping_idle_us": idle,
        "ping_loaded_us": loaded,
    }


def start_eqdsd(
    tmp: Path,
    mtu: int,
    busy_poll: bool = False,
    poll_us: int = 0,
    realtime: bool = True,
) -> list[subprocess.Popen]:
    """Both daemons; with `busy_poll` they never sleep and run at ordinary priority
    (two real-time spinners would keep everything else off the two cores)."""
    procs = []
    for n, me, peer in ((A, 1, 2), (B, 2, 1)):
        cfg = tmp / f"{n}.toml"
        cfg.write_text(
            f"""
[interface]
address = "10.98.0.{me}/24"
[tunnel]
listen = "10.99.0.{me}:7700"
mtu = {mtu}
# TUN offloads: TCP hands over 64 KB super-packets and takes merged ones back; with
# UDP GSO/GRO (on by default) a burst crosses the kernel as one buffer.
offload = true
busy_poll = {str(busy_poll).lower()}
poll_us = {poll_us}
[eqds]
# No link to pace for: PULLs as fast as the loop turns, many per turn, and a window
# for the credit loop's RTT under load.
link_rate = "40gbit"
pull_burst = 64
window = 128
# TCP's 64 KB bursts overflow the default 100-packet send queue (drops of 10% and
# more at MTU 1500); 1000 packets hold a few bursts of one fast flow.
send_queue = 1000
# The first packet of an idle path goes without waiting for credit (saves the RTS
# round trip for a ping).
initial_window = 1
[[peer]]
endpoint = "10.99.0.{peer}:7700"
allowed_ips = ["10.98.0.{peer}/32"]
"""
        )
        log = open(tmp / f"{n}.log", "w")  # noqa: SIM115 (owned by Popen)
        procs.append(
            subprocess.Popen(
                ["ip", "netns", "exec", n]
                + (["chrt", "-f", "10"] if realtime and not busy_poll else [])
                + [str(EQDSD), "--config", str(cfg)],
                stdout=log,
                stderr=log,
            )
        )
    time.sleep(1)
    return procs


def start_wireguard(wireguard: str, tmp: Path, mtu: int) -> None:
    keys = {}
    for n in (A, B):
        private = sh("wg", "genkey").strip()
        keys[n] = (private, sh("wg", "pubkey", input=private).strip())
    for n, me, peer_ns, peer in ((A, 1, B, 2), (B, 2, A, 1)):
        (tmp / f"{n}.key").write_text(keys[n][0])
        # Each instance needs its own /run/wireguard: a private mount namespace, in
        # which the daemon and `wg` meet through the UAPI socket.
        script = f"""
set -e
mkdir -p /run/wireguard
mount -t tmpfs none /run/wireguard
{wireguard} wg0
wg set wg0 listen-port 51820 private-key {tmp / f"{n}.key"} \
    peer {keys[peer_ns][1]} endpoint 10.99.0.{peer}:51820 allowed-ips 10.97.0.{peer}/32
ip addr add 10.97.0.{me}/24 dev wg0
ip link set wg0 mtu {mtu - 80} up
"""
        ns(n, "unshare", "-m", "sh", "-c", script)
    time.sleep(0.5)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=8)
    ap.add_argument("--wireguard", default=shutil.which("wireguard") or "wireguard")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    results = {}
    try:
        for mtu in (1500, 9000):
            with tempfile.TemporaryDirectory() as d:
                tmp = Path(d)
                up(mtu)
                results[f"plain/{mtu}"] = measure("10.99.0.2", args.seconds)
                procs = start_eqdsd(tmp, mtu)
                results[f"eqdsd/{mtu}"] = measure("10.98.0.2", args.seconds)
                for p in procs:
                    p.terminate()
                    p.wait(timeout=10)
                # Polling daemons run at ordinary priority: a real-time spinner keeps
                # the application it waits for off its core.
                for label, kw in (
                    ("busy-poll", {"busy_poll": True}),
                    ("poll 200us", {"poll_us": 200, "realtime": False}),
                ):
                    procs = start_eqdsd(tmp, mtu, **kw)
                    results[f"eqdsd {label}/{mtu}"] = measure("10.98.0.2", args.seconds)
                    for p in procs:
                        p.terminate()
                        p.wait(timeout=10)
                up(mtu)
                start_wireguard(args.wireguard, tmp, mtu)
                results[f"wireguard-go/{mtu}"] = measure("10.97.0.2", args.seconds)
                for k in [k for k in results if k.endswith(f"/{mtu}")]:
                    print(k, results[k], flush=True)
    finally:
        down()
    print(
        "\n| path | MTU | Gbit/s | CPU cores busy | CPU s per Gbit | ping idle (us) | ping loaded (us) |"
    )
    print("|---|---|---|---|---|---|---|")
    for key, r in results.items():
        path, mtu = key.split("/")
        print(
            f"| {path} | {mtu} | {r['gbps']} | {r['cpu_cores_busy']} | "
            f"{r['cpu_seconds_per_gbit']} | {r['ping_idle_us']} | {r['ping_loaded_us']} |"
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
