"""What the trimming paper's switch experiments share (experiments/trimming-tofino*,
its §6.2-§6.4): the senders and receivers on one switch, the per-case overrides for
each switch model, and the measurements read from a run's outputs.

The switch has 80 hosts: senders are hosts 0-63 (ingress pipelines 0-3 of 16 ports),
receivers hosts 64-79 (pipeline 4, which carries only their PULLs and ACKs). Sender k
sends to receiver 64 + k mod 16 (the paper: "sender i to port i mod 16", §6.2).
"""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

#: One 1500-byte packet at 100 Gb/s, in picoseconds: the start jitter's range.
PACKET_TIME_PS = 120_000
#: The run length of every switch experiment (§6.2).
RUN_S = 500e-6
#: The first receiver host.
FIRST_RECEIVER = 64

#: `switch.model` and its queue per case name. MoD gets 20 packets of data queue
#: (our 19) instead of 10, as §6.1 gives it (+1 us of buffer for the recirculated
#: headers).
TRIMMING_QUEUE = "{ kind = 'trimming', data_packets = %d, scheduling = 'strict_priority' }"
MODELS = {
    "Ideal": {
        "switch.model": "'output_queued'",
        "switch.queue": TRIMMING_QUEUE % 9,
        "output.pipelines_csv": "false",
    },
    "MoD": {"switch.model": "'mirror_on_drop'", "switch.queue": TRIMMING_QUEUE % 19},
    "MoD, 10 packets": {"switch.model": "'mirror_on_drop'", "switch.queue": TRIMMING_QUEUE % 9},
    "DoD only": {"switch.model": "'deflect_on_drop'", "switch.queue": TRIMMING_QUEUE % 9},
    "Tofino": {"switch.model": "'tofino'", "switch.queue": TRIMMING_QUEUE % 9},
}


def flows(
    senders: list[int],
    receivers: int = 16,
    *,
    jitter_ps: int = PACKET_TIME_PS,
    seed: int = 1,
    size: str | None = None,
) -> dict[str, str]:
    """The `workload` override: each sender host k sends one NDP flow to receiver
    64 + k mod `receivers`, starting at a time drawn uniformly in [0, jitter_ps).

    The jitter stands in for what the paper's traffic had and a simulator lacks: with
    every sender starting at exactly 0 at exactly line rate, packets for one port reach
    the traffic manager at the same instants in every round, and the order the
    simulator breaks the tie in (sender order) makes the same pipeline lose every time:
    in 64-to-16 its DoD port took 83% of all deflections and its queue peaked at 1,753
    packets, against 150 (and a fair split) with the jitter."""
    rng = random.Random(seed)
    entries = []
    for k in senders:
        start = rng.randrange(jitter_ps) if jitter_ps > 0 else 0
        extra = f", size = '{size}'" if size else ""
        entries.append(
            f"{{ src = {k}, dst = {FIRST_RECEIVER + k % receivers}, start = {start}{extra} }}"
        )
    return {"workload": "[{ kind = 'flows', flows = [" + ", ".join(entries) + "] }]"}


def per_flow_gbps(out: Path, duration_s: float = RUN_S) -> dict[int, float]:
    """Each flow's mean goodput over the run in Gb/s, keyed by its sender host: the
    distinct payload bytes its receiver got (whole packets only), as the paper's
    per-flow throughput (95.7 Gb/s of 100 at 1500-byte packets with 64-byte
    headers)."""
    with open(out / "flows.csv") as f:
        return {
            int(r["src"]): int(r["bytes_received"]) * 8 / duration_s / 1e9
            for r in csv.DictReader(f)
        }


def hw_summary(out: Path) -> dict:
    """The `trimming_hw` object of summary.json (empty for the Ideal switch)."""
    return json.loads((out / "summary.json").read_text()).get("trimming_hw", {})


def total_trims(out: Path) -> int:
    """Data packets trimmed anywhere (TM, ingress, DoD or MoD), from ports.csv."""
    with open(out / "ports.csv") as f:
        return sum(int(r["trims"]) for r in csv.DictReader(f))


def dod_peak(out: Path) -> int:
    """The largest recirculation (DoD or MoD) queue of any pipeline, in packets (the
    one on the wire included); 0 for the Ideal switch."""
    return int(hw_summary(out).get("recirc_peak_packets") or 0)


def header_arrivals(out: Path) -> list[dict]:
    """Rows of arrivals.csv (ints where numeric), in arrival order."""
    with open(out / "arrivals.csv") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        for k in ("time_ps", "host", "flow", "seq", "sent_ps", "size", "returned"):
            r[k] = int(r[k])
    return rows


def mode_fractions(
    out: Path, port: int, start_ps: int, end_ps: int, pipe: int = 0
) -> dict[str, float]:
    """Share of [start_ps, end_ps) that `pipe`'s state for egress `port` spent in each
    mode, from modes.csv (a (pipeline, port) is OPTIMISTIC before its first row)."""
    with open(out / "modes.csv") as f:
        changes = [
            (int(r["time_ps"]), r["mode"])
            for r in csv.DictReader(f)
            if int(r["port"]) == port and int(r["pipe"]) == pipe
        ]
    spent: dict[str, int] = {}
    mode, t = "optimistic", start_ps
    for when, new in changes:
        if when <= start_ps:
            mode = new
            continue
        if when >= end_ps:
            break
        spent[mode] = spent.get(mode, 0) + when - t
        mode, t = new, when
    spent[mode] = spent.get(mode, 0) + end_ps - t
    return {m: v / (end_ps - start_ps) for m, v in spent.items()}


def receiver_port(out: Path, receiver_host: int) -> int:
    """The switch port whose link goes to `receiver_host`."""
    with open(out / "ports.csv") as f:
        for r in csv.DictReader(f):
            if r["peer"] == f"h{receiver_host}" and r["owner"].startswith("s"):
                return int(r["port"])
    raise ValueError(f"no switch port leads to host {receiver_host}")


def mode_intervals(out: Path, port: int, end_ps: int, pipe: int = 0) -> list[tuple[int, int, str]]:
    """`pipe`'s modes for egress `port` as (start_ps, end_ps, mode) intervals covering
    [0, end_ps), from modes.csv: what a Figure 7 timeline draws as bars. Intervals of
    zero length (two changes at one instant) are left out and neighbours in one mode
    merged, so each bar is one stretch of that mode."""
    with open(out / "modes.csv") as f:
        changes = [
            (int(r["time_ps"]), r["mode"])
            for r in csv.DictReader(f)
            if int(r["port"]) == port and int(r["pipe"]) == pipe
        ]
    spans = []
    mode, t = "optimistic", 0
    for when, new in changes:
        when = min(when, end_ps)
        if when > t:
            _extend(spans, t, when, mode)
        mode, t = new, max(t, when)
    if end_ps > t:
        _extend(spans, t, end_ps, mode)
    return spans


def _extend(spans: list[tuple[int, int, str]], start: int, end: int, mode: str) -> None:
    """Appends [start, end) in `mode`, merged into the last interval if it is in the
    same mode."""
    if spans and spans[-1][2] == mode and spans[-1][1] == start:
        spans[-1] = (spans[-1][0], end, mode)
    else:
        spans.append((start, end, mode))
