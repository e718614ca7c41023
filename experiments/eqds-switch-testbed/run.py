#!/usr/bin/env python3
"""eqds-switch on the namespace testbed: EQDS's NDP mode meets a trimming switch on
real Linux hosts (issue 31's acceptance; trimming paper E12, EQDS paper's testbed).

Hosts are network namespaces; the routers are eqds-switch (scripts/testbed.sh
--switch eqds) at SCHED_FIFO 20, 200 Mbit/s ports, kernel TCP Cubic and iperf3
through eqdsd (32 source ports, daemons at SCHED_FIFO 10, link_rate 200mbit).

1. The trimming invariant (trimming paper E12): four senders to one host and four to
   another through one switch for 30 s, eqdsd in NDP mode, 15-packet trimming queues.
   Every EQDS DATA packet sent (counted by the senders' daemons) arrives whole or as
   its header (counted by the receivers' daemons), and the switch trimmed as many as
   arrived trimmed. The four flows into each receiver share its port (Jain index).
2. eqdsd in NDP mode over trimming queues against RTS mode over drop-tail queues of the
   same size (15 packets), same switch, same run: an 8-to-1 incast (aggregate, Jain), one flow over
   two 100 Mbit/s paths, and the trimming paper's ping test (ping an idle target, then
   a target receiving 9 TCP flows: with trimming the median should rise by tens of
   microseconds, not by a queue).
3. Forwarding cost: UDP packets/s and Gbit/s through the switch at MTU 1500 and 9000
   (ports at 100 Gbit/s, so the switch and not its pacing is the limit), and idle ping
   RTT, against kernel forwarding on the same veths in the same run; then the switch
   with trimming queues on 1 Gbit/s ports, offered 950 Mbit/s: frames lost in the
   switch itself (its receive rings and buffers) must be none.

Two cores are shared by every host, daemon, switch and iperf3, so absolute rates are
this machine's. Writes result.json and a README section.

Usage: python3 experiments/eqds-switch-testbed/run.py [--results DIR] [--quick] [--rescore]
(--rescore: verdicts and notes again from the measurements in result.json, no run)
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Self

from eqds_lab import Quantity, write_result
from eqds_lab.experiment import jain, parse_args
from eqds_lab.report import print_quantities
from eqds_lab.testbed import Bed, Setup, mid_rate, ping_stats, run, total

HERE = Path(__file__).resolve().parent
RATE_MBPS = 200
TRIMMING = '{ kind = "trimming", data_packets = 15, return_to_sender = false }'
DROP_TAIL = '{ kind = "drop_tail", limit_packets = 15 }'
#: The two configurations compared: EQDS mode, the switch's queue.
MODES = {"ndp_trimming": ("ndp", TRIMMING), "rts_drop_tail": ("rts", DROP_TAIL)}
#: The ping test's baseline (trimming paper, Figure 13): plain TCP, no eqdsd, through
#: the same switch with a 200-packet drop-tail queue.
DEEP_DROP_TAIL = '{ kind = "drop_tail", limit_packets = 200 }'
DEEP_PACKETS = 200
#: One flow over two paths is measured this many times per mode (its median is scored):
#: single runs on two shared cores moved by up to a quarter.
TWO_PATH_REPEATS = 3


def fabric(hosts: int, mode: str, *args: str) -> Setup:
    if mode == "tcp_deep_drop_tail":
        return Setup(
            hosts, False, "--rate", f"{RATE_MBPS}mbit", "--switch", "eqds",
            "--discipline", DEEP_DROP_TAIL, *args,
        )  # fmt: skip
    eqds_mode, queue = MODES[mode]
    return Setup(
        hosts, True, "--rate", f"{RATE_MBPS}mbit", "--switch", "eqds", "--discipline", queue,
        *args, daemon_rate=f"{RATE_MBPS}mbit", eqds=f'mode = "{eqds_mode}"',
    )  # fmt: skip


class CpuBusy:
    """The fraction of the machine's CPU time that was not idle between `__enter__` and
    `__exit__` (/proc/stat): how much of the two cores a measurement left unused."""

    @staticmethod
    def _read() -> tuple[int, int]:
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
        return sum(fields), fields[3] + fields[4]  # idle + iowait

    def __enter__(self) -> Self:
        self.start = self._read()
        self.busy = 0.0
        return self

    def __exit__(self, *exc: object) -> None:
        total_1, idle_1 = self._read()
        total_0, idle_0 = self.start
        self.busy = round(1 - (idle_1 - idle_0) / max(1, total_1 - total_0), 3)


def tcp_flows(s: Setup, pairs: list[tuple[int, int]], seconds: int) -> list[float]:
    """One Cubic flow per (src, dst) for `seconds`, all at once; their mean rates."""
    for k, (_, dst) in enumerate(pairs):
        s.bed.iperf3_server(dst, 5201 + k, addr=s.addr(dst))
    with ThreadPoolExecutor(len(pairs)) as pool:
        futures = [
            pool.submit(
                s.bed.iperf3_client,
                src,
                dst,
                5201 + k,
                "-C",
                "cubic",
                "--get-server-output",
                seconds=seconds,
                addr=s.addr(dst),
            )
            for k, (src, dst) in enumerate(pairs)
        ]
        return [mid_rate(f.result(), seconds) for f in futures]


def invariant(seconds: int) -> dict:
    """Item 1: 1-4 -> 9 and 5-8 -> 10 through one switch, NDP mode, trimming."""
    s = fabric(10, "ndp_trimming")
    try:
        rates = tcp_flows(
            s, [(h, 9) for h in range(1, 5)] + [(h, 10) for h in range(5, 9)], seconds
        )
        time.sleep(1)  # everything in flight has arrived or been resent
        sent = whole = headers = 0.0
        for h in range(1, 11):
            m = s.daemons.metrics(h)
            sent += total(m, "eqdsd_data_sent_total")
            whole += total(m, "eqdsd_tunnel_rx_data_packets_total")
            headers += total(m, "eqdsd_tunnel_rx_trimmed_packets_total")
        sw = s.bed.switch_metrics("r1")
        return {
            "rates_to_9_mbps": [round(r, 1) for r in rates[:4]],
            "rates_to_10_mbps": [round(r, 1) for r in rates[4:]],
            "jain_to_9": round(jain(rates[:4]), 4),
            "jain_to_10": round(jain(rates[4:]), 4),
            "data_sent": int(sent),
            "received_whole": int(whole),
            "received_trimmed": int(headers),
            "neither": int(sent - whole - headers),
            "switch_trimmed": int(total(sw, "eqds_switch_port_trimmed_total")),
            "switch_dropped": int(total(sw, "eqds_switch_port_dropped_total")),
            "switch_ring_drops": int(total(sw, "eqds_switch_port_ring_drops_total")),
            "switch_not_forwarded": {
                k.split('"')[1]: int(v)
                for k, v in sw.items()
                if k.startswith("eqds_switch_not_forwarded_total") and v
            },
        }
    finally:
        s.close()


def incast(mode: str, seconds: int) -> dict:
    s = fabric(9, mode)
    try:
        with CpuBusy() as cpu:
            rates = tcp_flows(s, [(h, 9) for h in range(1, 9)], seconds)
        sw = s.bed.switch_metrics("r1")
        return {
            "cpu_busy": cpu.busy,
            "rates_mbps": [round(r, 1) for r in rates],
            "jain": round(jain(rates), 4),
            "aggregate_mbps": round(sum(rates), 1),
            "switch_trimmed": int(total(sw, "eqds_switch_port_trimmed_total")),
            "switch_dropped": int(total(sw, "eqds_switch_port_dropped_total")),
        }
    finally:
        s.close()


def ping_test(mode: str, seconds: int) -> dict:
    """Host 11 pings host 10 idle, then while hosts 1-9 send it a TCP flow each; the
    switch's queue towards host 10 is sampled meanwhile (is the rise the queue's?).
    The idle median is taken from 100 pings: idle medians of 40 moved by 0.4-1.4 ms
    between runs."""
    s = fabric(11, mode)
    try:
        idle = ping_stats(s.bed, 11, s.addr(10), 100)
        samples: list[float] = []
        done = threading.Event()

        def sample_queue() -> None:
            time.sleep(2.5)
            while not done.is_set():
                m = s.bed.switch_metrics("r1")
                samples.append(m.get('eqds_switch_port_queue_bytes{port="h10"}', 0.0))
                time.sleep(0.2)

        with ThreadPoolExecutor(2) as pool, CpuBusy() as cpu:
            loaded = pool.submit(
                ping_stats, s.bed, 11, s.addr(10), 20 * (seconds - 4), 2.5
            )
            sampler = pool.submit(sample_queue)
            rates = tcp_flows(s, [(h, 10) for h in range(1, 10)], seconds)
            ping = loaded.result()
            done.set()
            sampler.result()
        rise = (
            round((ping["median_ms"] - idle["median_ms"]) * 1000, 1)
            if ping["median_ms"] and idle["median_ms"]
            else None
        )
        # The queue's median depth in time at the port's rate.
        depth = statistics.median(samples) if samples else 0.0
        return {
            "idle": idle,
            "loaded": ping,
            "rise_us": rise,
            "aggregate_mbps": round(sum(rates), 1),
            "cpu_busy": cpu.busy,
            "queue_bytes_median": round(depth),
            "queue_us_median": round(depth * 8 / RATE_MBPS, 1),
            "queue_samples": len(samples),
        }
    finally:
        s.close()


def two_paths(mode: str, seconds: int) -> dict:
    """One flow from host 1 to host 3 over two 100 Mbit/s paths, TWO_PATH_REPEATS
    times on fresh fabrics: each run's rate, the CPU left idle, and what the sender's
    daemon and the leaf towards the paths counted."""
    runs = []
    for _ in range(TWO_PATH_REPEATS):
        s = fabric(
            4, mode, "--paths", "2", "--rate", "100mbit", "--host-rate", "200mbit"
        )
        try:
            with CpuBusy() as cpu:
                rate = tcp_flows(s, [(1, 3)], seconds)[0]
            d = s.daemons.metrics(1)
            leaf = s.bed.switch_metrics("left")
            per_path = [
                int(leaf.get(f'eqds_switch_port_sent_frames_total{{port="{r}"}}', 0))
                for r in ("r1", "r2")
            ]
            runs.append({
                "mbps": round(rate, 1),
                "cpu_busy": cpu.busy,
                "frames_per_path": per_path,
                "sender_rto_expiries": int(total(d, "eqdsd_tunnel_tx_rto_expiries_total")),
                "sender_retransmits": int(total(d, "eqdsd_tunnel_tx_retransmits_total")),
                "leaf_trimmed": int(total(leaf, "eqds_switch_port_trimmed_total")),
                "leaf_dropped": int(total(leaf, "eqds_switch_port_dropped_total")),
            })  # fmt: skip
        finally:
            s.close()
    return {"median_mbps": statistics.median(r["mbps"] for r in runs), "runs": runs}


# Item 3: forwarding cost on a two-host star.


def restart_switch(bed: Bed, discipline: str, rate: str) -> None:
    """Rewrites PREFIX-r1's switch configuration (every port's queue and rate) and
    starts it again, so it reads the interfaces' MTUs afresh."""
    ns = f"{bed.prefix}-r1"
    stop_switch(bed)
    conf = Path(f"/run/{ns}-switch.toml")
    lines = []
    for line in conf.read_text().splitlines():
        if line.startswith("queue = "):
            line = f"queue = {discipline}"
        elif line.startswith("rate = "):
            line = f'rate = "{rate}"'
        lines.append(line)
    conf.write_text("\n".join(lines) + "\n")
    binary = Path(__file__).resolve().parents[2] / "target" / "release" / "eqds-switch"
    log = open(f"/run/{ns}-switch.log", "ab")  # noqa: SIM115 (owned by the process)
    proc = subprocess.Popen(
        ["ip", "netns", "exec", ns, "chrt", "-f", "20", str(binary), "--config", str(conf)],
        stdout=subprocess.DEVNULL, stderr=log,
    )  # fmt: skip
    Path(f"/run/{ns}-switch.pid").write_text(str(proc.pid))
    for _ in range(100):
        if b"metrics addr" in Path(f"/run/{ns}-switch.log").read_bytes():
            break
        time.sleep(0.05)
    ping_stats(bed, 1, bed.host(2)["address"], 3)  # neighbours resolved


def stop_switch(bed: Bed) -> None:
    ns = f"{bed.prefix}-r1"
    pid = Path(f"/run/{ns}-switch.pid")
    if pid.exists():
        subprocess.run(["kill", pid.read_text().strip()], check=False)
        time.sleep(0.3)
        pid.unlink()


def kernel_forwarding(bed: Bed, on: bool) -> None:
    """Turns the kernel's forwarding in PREFIX-r1 on (the switch stopped) or off."""
    ns = f"{bed.prefix}-r1"
    run(["ip", "netns", "exec", ns, "sysctl", "-qw", f"net.ipv4.ip_forward={int(on)}"])


def set_mtu(bed: Bed, mtu: int) -> None:
    for h in (1, 2):
        bed.in_host(h, "ip", "link", "set", "dev", "eth0", "mtu", str(mtu))
        run(["ip", "netns", "exec", f"{bed.prefix}-r1", "ip", "link", "set", "dev", f"h{h}",
             "mtu", str(mtu)])  # fmt: skip


def rx_counters(bed: Bed, host: int) -> tuple[int, int]:
    """Packets and bytes host `host`'s eth0 has received."""
    link = json.loads(
        bed.in_host(host, "ip", "-s", "-j", "link", "show", "dev", "eth0")
    )[0]
    rx = link["stats64"]["rx"]
    return rx["packets"], rx["bytes"]


def udp_blast(bed: Bed, length: int, mbps: str, seconds: int = 5) -> dict:
    """UDP from host 1 to host 2 at `mbps` (0: as fast as iperf3 can) with `length`
    byte datagrams, the sender at SCHED_FIFO. What was offered, and what reached host
    2's interface: counted there, since the receiving iperf3, an ordinary task, gets
    little of two cores beside a real-time sender and switch, and its socket's drops
    are not the switch's."""
    bed.iperf3_server(2, 5301)
    p0, b0 = rx_counters(bed, 2)
    r = bed.iperf3_client(
        1,
        2,
        5301,
        "-u",
        "-b",
        f"{mbps}M",
        "-l",
        str(length),
        seconds=seconds,
        realtime=True,
    )
    time.sleep(0.2)
    p1, b1 = rx_counters(bed, 2)
    bed.kill_servers()
    sent = r["end"]["sum"]
    return {
        "offered_kpps": round(sent["packets"] / seconds / 1e3, 1),
        "offered_mbps": round(sent["bits_per_second"] / 1e6, 1),
        "forwarded_kpps": round((p1 - p0) / seconds / 1e3, 1),
        "forwarded_mbps": round((b1 - b0) * 8 / seconds / 1e6, 1),
        "forwarded_fraction": round((p1 - p0) / max(1, sent["packets"]), 4),
    }


def forwarding_cost() -> dict:
    bed = Bed()
    bed.up("--hosts", "2", "--switch", "eqds", "--rate", "100gbit")
    out: dict = {}
    try:
        for mtu in (1500, 9000):
            set_mtu(bed, mtu)
            length = mtu - 28
            restart_switch(
                bed, '{ kind = "drop_tail", limit_packets = 1000 }', "100Gbps"
            )
            sw = {
                "udp": udp_blast(bed, length, "0"),
                "ping": ping_stats(bed, 1, bed.host(2)["address"], 100),
            }
            m = bed.switch_metrics("r1")
            sw["ring_drops"] = int(total(m, "eqds_switch_port_ring_drops_total"))
            stop_switch(bed)
            kernel_forwarding(bed, True)
            kernel = {
                "udp": udp_blast(bed, length, "0"),
                "ping": ping_stats(bed, 1, bed.host(2)["address"], 100),
            }
            kernel_forwarding(bed, False)
            out[f"mtu{mtu}"] = {"eqds_switch": sw, "kernel": kernel}
        set_mtu(bed, 1500)
        restart_switch(bed, TRIMMING, "1Gbps")
        held = udp_blast(bed, 1472, "950", seconds=10)
        m = bed.switch_metrics("r1")
        held["ring_drops"] = int(total(m, "eqds_switch_port_ring_drops_total"))
        held["no_buffer"] = int(
            m.get('eqds_switch_not_forwarded_total{reason="no_buffer"}', 0)
        )
        held["queue_drops"] = int(total(m, "eqds_switch_port_dropped_total"))
        out["trimming_1g_950mbps"] = held
    finally:
        bed.kill_servers()
        bed.down()
    return out


#: The previous session's three full runs (2026-11-28, 05:00-06:40 UTC, another machine
#: of this kind), taken while a helper's builds and benchmarks shared the two cores:
#: NDP over trimming, then RTS over drop-tail. What load does to this testbed.
LOADED_RUNS = {
    "incast_mbps": ([168.6, 160.0, 156.7], [172.0, 154.8, 150.2]),
    "ping_rise_us": ([1203, 310, 636], [595, 619, 1120]),
    "two_paths_mbps": ([124.4, 128.6, 118.8], [120.3, 113.7, 36.0]),
}
#: Bytes on the wire per full-sized tunnelled TCP segment (Ethernet 14 + IP MTU 1500),
#: and the TCP payload in it: the inner MTU is 1500 - 44 (outer IP, UDP, EQDS header)
#: = 1456, less 52 bytes of inner IP and TCP with timestamps.
WIRE_BYTES, TCP_PAYLOAD = 1514, 1404


def notes(m: dict) -> list[str]:
    """What the numbers say, computed from them."""
    f = m["forwarding"]
    f15, f90 = f["mtu1500"], f["mtu9000"]
    pn, pr, pb = (
        m["ping_ndp_trimming"],
        m["ping_rts_drop_tail"],
        m["ping_tcp_deep_drop_tail"],
    )
    inc_n, inc_r = m["incast_ndp_trimming"], m["incast_rts_drop_tail"]
    tp_n, tp_r = m["two_paths_ndp_trimming"], m["two_paths_rts_drop_tail"]
    ceiling = RATE_MBPS * TCP_PAYLOAD / WIRE_BYTES

    def runs(t: dict, key: str) -> str:
        return ", ".join(str(r[key]) for r in t["runs"])

    return [
        (
            "Item 3, against kernel forwarding on the same veths in the same run (the switch "
            "stopped, ip_forward set). MTU 1500: the switch forwarded "
            f"{f15['eqds_switch']['udp']['forwarded_kpps']} kpps "
            f"({f15['eqds_switch']['udp']['forwarded_mbps']} Mbit/s) of "
            f"{f15['eqds_switch']['udp']['offered_kpps']} offered; the kernel "
            f"{f15['kernel']['udp']['forwarded_kpps']} of {f15['kernel']['udp']['offered_kpps']}. "
            "MTU 9000: the switch "
            f"{f90['eqds_switch']['udp']['forwarded_kpps']} kpps "
            f"({f90['eqds_switch']['udp']['forwarded_mbps']} Mbit/s) of "
            f"{f90['eqds_switch']['udp']['offered_kpps']} offered, losing "
            f"{f90['eqds_switch']['ring_drops']} frames in its receive ring (each frame is "
            "copied out of the ring and into the send call); the kernel "
            f"{f90['kernel']['udp']['forwarded_kpps']} of {f90['kernel']['udp']['offered_kpps']}. "
            "Idle ping medians (100 pings, each right after a blast) through the switch: "
            f"{f15['eqds_switch']['ping']['median_ms'] * 1000:.0f} us (MTU 1500) and "
            f"{f90['eqds_switch']['ping']['median_ms'] * 1000:.0f} us (9000), through the "
            f"kernel {f15['kernel']['ping']['median_ms'] * 1000:.0f} and "
            f"{f90['kernel']['ping']['median_ms'] * 1000:.0f} us; p99s "
            f"{f15['eqds_switch']['ping']['p99_ms'] * 1000:.0f} and "
            f"{f90['eqds_switch']['ping']['p99_ms'] * 1000:.0f} against "
            f"{f15['kernel']['ping']['p99_ms'] * 1000:.0f} and "
            f"{f90['kernel']['ping']['p99_ms'] * 1000:.0f} us. A sleeping user-space hop "
            "waits for a wakeup, whose cost varies from run to run (docs/eqds-switch.md: "
            "busy polling gives a steady median near the kernel's). The previous session "
            "measured 104-127 kpps "
            "for both at MTU 1500 on a machine shared with builds: these rates are the "
            "machine's, compare only within one run."
        ),
        (
            "The 1 Gbit/s trimming port offered 950 Mbit/s of iperf3 UDP lost nothing in the "
            "switch itself (ring, buffers); its discipline dropped "
            f"{f['trimming_1g_950mbps']['queue_drops']} datagrams (UDP that is not EQDS cannot "
            "be trimmed, so a full data queue drops it)."
        ),
        (
            f"Incast aggregate: NDP over trimming {inc_n['aggregate_mbps']} Mbit/s, RTS over "
            f"drop-tail {inc_r['aggregate_mbps']}, every flow "
            f"{min(inc_n['rates_mbps'])}-{max(inc_n['rates_mbps'])}. The ceiling for "
            f"tunnelled TCP on a {RATE_MBPS} Mbit/s port is {ceiling:.1f} Mbit/s "
            f"({TCP_PAYLOAD} bytes of payload per {WIRE_BYTES} on the wire; the target of "
            "0.95 of the port is above it), so NDP over trimming reached "
            f"{inc_n['aggregate_mbps'] / ceiling:.3f} of what the encapsulation allows, with "
            f"{inc_n['switch_trimmed']} headers trimmed and none lost. The CPU was "
            f"{inc_n['cpu_busy']:.0%} busy (load average before the run: "
            f"{m.get('load_average_at_start', 'not recorded')}). The previous session's runs on a machine shared "
            f"with a helper's builds got {LOADED_RUNS['incast_mbps'][0]} (NDP) and "
            f"{LOADED_RUNS['incast_mbps'][1]} (RTS): the daemons and the switch need the two "
            "cores to themselves."
        ),
        (
            f"Ping test: the median rose by {pn['rise_us']} us with NDP over trimming and "
            f"{pr['rise_us']} us with RTS over drop-tail (idle medians "
            f"{pn['idle']['median_ms']} and {pr['idle']['median_ms']} ms, 100 pings each), "
            "while the switch's queue towards the target, sampled every 0.2 s, held a median "
            f"of {pn['queue_us_median']} us and {pr['queue_us_median']} us. The baseline, "
            "plain TCP without eqdsd through the same switch with a 200-packet drop-tail "
            f"queue, rose by {pb['rise_us']} us (queue median {pb['queue_us_median']} us; "
            f"the full queue drains in {DEEP_PACKETS * WIRE_BYTES * 8 / RATE_MBPS:.0f} us): the "
            "test sees a queue when there is one. A loaded median below the idle one is "
            "the hosts', not the network's: under load the daemons' and switch's loops are "
            "awake when a ping arrives, idle they sleep. The p99 rose from "
            f"{pn['idle']['p99_ms']} to {pn['loaded']['p99_ms']} ms (NDP): scheduling on two "
            "shared cores. The previous session's rises under a helper's builds were "
            f"{LOADED_RUNS['ping_rise_us'][0]} (NDP) and {LOADED_RUNS['ping_rise_us'][1]} "
            "us (RTS), with the same empty switch queue."
        ),
        (
            f"Two paths, {TWO_PATH_REPEATS} runs each on fresh fabrics: NDP over trimming "
            f"{runs(tp_n, 'mbps')} Mbit/s (median {tp_n['median_mbps']}), RTS over drop-tail "
            f"{runs(tp_r, 'mbps')} (median {tp_r['median_mbps']}); the ceiling is "
            f"{ceiling:.1f}, the sender's 200 Mbit/s link. The leaf's spray put "
            f"{'; '.join('/'.join(str(x) for x in r['frames_per_path']) for r in tp_n['runs'])} "
            "frames on the two paths (NDP runs: 32 source ports hashed over two routers is "
            "never an even split, and the fuller path trims: "
            f"{runs(tp_n, 'leaf_trimmed')} trims, {runs(tp_n, 'sender_retransmits')} resends, "
            f"{runs(tp_n, 'sender_rto_expiries')} timeouts). RTS over drop-tail lost "
            f"{runs(tp_r, 'leaf_dropped')} frames at the leaf instead, each costing a "
            f"timeout ({runs(tp_r, 'sender_rto_expiries')}). The CPU was "
            f"{runs(tp_n, 'cpu_busy')} busy (NDP). The previous session's runs, shared with "
            f"a helper's builds, got {LOADED_RUNS['two_paths_mbps'][0]} (NDP) and "
            f"{LOADED_RUNS['two_paths_mbps'][1]} (RTS), with hundreds of spurious "
            "timeouts per second: its RTO expiries were the hosts' stalls, not the fabric's."
        ),
    ]


#: Rebuilds result.json's verdicts and notes from its own measurements (no run).
RESCORE = "--rescore"


def measure(long_s: int, short_s: int) -> dict:
    # The testbed needs the cores to itself (docs/eqds-switch.md): say so if it has not.
    load = os.getloadavg()[0]
    m: dict = {"load_average_at_start": round(load, 2)}
    if load > (os.cpu_count() or 2) / 2:
        print(
            f"warning: load average {load:.2f} before the run: other work on this "
            "machine lowers the testbed's rates and raises its latencies",
            file=sys.stderr,
        )
    print("[1] trimming invariant", file=sys.stderr)
    m["invariant"] = invariant(long_s)
    for mode in MODES:
        print(f"[2] {mode}: incast, ping test, two paths", file=sys.stderr)
        m[f"incast_{mode}"] = incast(mode, short_s)
        m[f"ping_{mode}"] = ping_test(mode, short_s)
        m[f"two_paths_{mode}"] = two_paths(mode, short_s)
    print(
        "[2] baseline: plain TCP over a 200-packet drop-tail queue, ping test",
        file=sys.stderr,
    )
    m["ping_tcp_deep_drop_tail"] = ping_test("tcp_deep_drop_tail", short_s)
    print("[3] forwarding cost", file=sys.stderr)
    m["forwarding"] = forwarding_cost()
    print(json.dumps(m, indent=1), file=sys.stderr)
    return m


def main() -> int:
    rescore = RESCORE in sys.argv
    if rescore:
        sys.argv.remove(RESCORE)  # not one of the runners' common options
    args = parse_args(
        __doc__,
        HERE,
        quick="10 s flows instead of 30 s for item 1, 8 s for item 2 (for trying the script)",
    )
    long_s, short_s = (10, 8) if args.quick else (30, 12)
    if rescore:
        m = json.loads((args.results / "result.json").read_text())["also_measured"]
    else:
        m = measure(long_s, short_s)

    inv, ndp, rts = m["invariant"], m["incast_ndp_trimming"], m["incast_rts_drop_tail"]
    held = m["forwarding"]["trimming_1g_950mbps"]
    deep_drain_us = DEEP_PACKETS * 1514 * 8 / RATE_MBPS
    ndp_rise = m["ping_ndp_trimming"]["rise_us"]
    quantities = [
        Quantity(
            "E12: EQDS DATA packets neither delivered whole nor as a header",
            0,
            inv["neither"],
            0,
        ),
        Quantity(
            "E12: headers the switch trimmed - headers the receivers got",
            0,
            inv["switch_trimmed"] - inv["received_trimmed"],
            0,
        ),
        Quantity(
            "E12: Jain index of the four flows into host 9", 1.0, inv["jain_to_9"], 0.01
        ),
        Quantity(
            "E12: Jain index of the four flows into host 10",
            1.0,
            inv["jain_to_10"],
            0.01,
        ),
        Quantity("8-to-1 incast, NDP mode over trimming: Jain", 1.0, ndp["jain"], 0.05),
        Quantity(
            "8-to-1 incast, NDP mode over trimming: aggregate / port rate",
            0.95,
            ndp["aggregate_mbps"] / RATE_MBPS,
            0.05,
        ),
        Quantity(
            "ping median rise into a target of 9 flows, NDP over trimming "
            "(us; at most tens, a fall scores 0)",
            36,
            max(0.0, ndp_rise if ndp_rise is not None else 1e9),
            64,
        ),
        Quantity(
            "ping test: switch queue towards the loaded target, median (us; tens at most)",
            0,
            m["ping_ndp_trimming"].get("queue_us_median", 1e9),
            50,
        ),
        Quantity(
            "ping median rise, plain TCP over a 200-packet drop-tail queue / that queue's "
            "drain time (the paper's baseline: ~0.5 ms, its full buffer)",
            1.0,
            (m["ping_tcp_deep_drop_tail"]["rise_us"] or 0) / deep_drain_us,
            0.3,
        ),
        Quantity(
            "one flow over two 100 Mbit/s paths, NDP over trimming / one path "
            f"(median of {TWO_PATH_REPEATS} runs)",
            2.0,
            m["two_paths_ndp_trimming"]["median_mbps"] / 100,
            0.4,
        ),
        Quantity(
            "trimming switch at 1 Gbit/s, 950 Mbit/s offered: frames lost in the switch itself",
            0,
            held["ring_drops"] + held["no_buffer"],
            0,
        ),
    ]
    m["rts_drop_tail_incast_jain"] = rts["jain"]
    args.results.mkdir(parents=True, exist_ok=True)
    ok = write_result(
        args.results,
        "eqds-switch: EQDS over a trimming switch on Linux (issue 31)",
        "Namespaces, eqds-switch routers (SCHED_FIFO 20) with 200 Mbit/s ports, eqdsd on "
        "every host (32 source ports, link_rate 200mbit), Cubic and iperf3; NDP mode over "
        "15-packet trimming queues against RTS mode over 15-packet drop-tail; two cores "
        "shared by everything.",
        quantities,
        experiment="eqds-switch-testbed",
        also_measured=m,
        notes=notes(m),
    )
    print_quantities(quantities)
    return 0 if ok else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except subprocess.CalledProcessError as e:
        print(e.stderr, file=sys.stderr)
        raise
