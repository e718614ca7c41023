"""Sweeps on the local pool and on Ray, resumption, and failure isolation."""

from __future__ import annotations

import importlib.util
import json
import textwrap
from pathlib import Path

import polars as pl
import pytest

from eqds_lab import Sweep, load_flows, load_summaries, ping_rtts, run_sweep
from eqds_lab.sweep import simulator

SCENARIO = """
[topology]
kind = "dumbbell"
left = 2
right = 1
link = { rate = "10Gbps", latency = "1us" }
bottleneck = { rate = "10Gbps", latency = "1us" }

[switch]
queue = { kind = "drop_tail", limit_packets = 20 }

[transport]
min_rto = "200us"
initial_rto = "200us"

[workload]
kind = "flows"
flows = [{ src = 0, dst = 2, size = 200000 }, { src = 1, dst = 2, size = 200000 }]

[stop]
time = "50ms"
"""


@pytest.fixture(scope="session")
def binary() -> Path:
    return simulator()


def make_sweep(tmp: Path, grid: str, out: str = "runs") -> Sweep:
    (tmp / "scenario.toml").write_text(SCENARIO)
    (tmp / "sweep.toml").write_text(
        textwrap.dedent(
            f"""
            scenario = "scenario.toml"
            seeds = [1, 2]
            out = "{out}"
            [set]
            "transport.mtu" = 1500
            [grid]
            {grid}
            """
        )
    )
    return Sweep.load(tmp / "sweep.toml")


def quiet(_outcome) -> None:
    pass


def test_local_sweep_runs_every_combination_and_resumes(tmp_path, binary):
    sweep = make_sweep(tmp_path, '"switch.queue.limit_packets" = [5, 50]')
    outcomes = run_sweep(sweep, binary=binary, workers=2, progress=quiet)
    assert [o.status for o in outcomes] == ["ran"] * 4
    flows = load_flows(sweep)
    assert flows.height == 8
    assert set(flows["switch.queue.limit_packets"].to_list()) == {"5", "50"}
    assert (flows["bytes_delivered"] == 200000).all()
    summaries = load_summaries(sweep)
    assert summaries.height == 4
    assert (summaries["completed"] == 2).all()
    # The swept limit reached each run: no backlog ever exceeded it.
    for run in sweep.runs():
        links = json.loads((run.out / "summary.json").read_text())["links"]
        limit = int(run.params["switch.queue.limit_packets"])
        switch_deepest = max(
            links[t]["max_backlog_bytes"] for t in ("switch_down", "bottleneck_lr", "bottleneck_rl")
        )
        assert switch_deepest <= limit * 1500
    # Resuming skips everything already done.
    again = run_sweep(sweep, binary=binary, workers=2, progress=quiet)
    assert [o.status for o in again] == ["skipped"] * 4
    assert load_flows(sweep).equals(flows)
    # Editing the scenario invalidates the finished runs.
    (tmp_path / "scenario.toml").write_text(SCENARIO.replace('"50ms"', '"60ms"'))
    edited = run_sweep(sweep, binary=binary, workers=2, progress=quiet)
    assert [o.status for o in edited] == ["ran"] * 4


def test_summaries_carry_eqds_tunnel_counters(tmp_path, binary):
    sweep = make_sweep(tmp_path, '"eqds.enabled" = [true, false]')
    sweep.fixed |= {"eqds.mode": "rts"}
    run_sweep(sweep, binary=binary, workers=2, progress=quiet)
    summaries = load_summaries(sweep).sort("eqds.enabled")
    assert summaries["eqds.enabled"].to_list() == ["false", "false", "true", "true"]
    # Both flows went through EQDS, a tunnel each way (TCP ACKs come back through
    # their own), and no hole was skipped.
    assert summaries["eqds_tunnels"].to_list() == [None, None, 4, 4]
    assert summaries["eqds_holes_skipped"].to_list() == [None, None, 0, 0]
    assert (summaries["completed"] == 2).all()


def test_a_broken_run_is_reported_and_the_others_finish(tmp_path, binary):
    sweep = make_sweep(tmp_path, '"switch.queue.limit_packets" = [10, 0]')
    outcomes = run_sweep(sweep, binary=binary, workers=2, progress=quiet)
    failed = [o for o in outcomes if o.status == "failed"]
    assert len(failed) == 2
    assert all("limit" in o.error for o in failed)
    assert sum(o.status == "ran" for o in outcomes) == 2


@pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="ray is not installed")
def test_ray_gives_the_same_results_as_the_local_pool(tmp_path, binary):
    local = make_sweep(tmp_path, '"switch.queue.limit_packets" = [5, 50]', out="local")
    remote = make_sweep(tmp_path, '"switch.queue.limit_packets" = [5, 50]', out="ray")
    run_sweep(local, binary=binary, workers=2, progress=quiet)
    outcomes = run_sweep(remote, binary=binary, ray_address="local", progress=quiet)
    assert [o.status for o in outcomes] == ["ran"] * 4
    for a, b in zip(local.runs(), remote.runs()):
        assert (a.out / "flows.csv").read_bytes() == (b.out / "flows.csv").read_bytes()
        assert (a.out / "summary.json").read_bytes() == (b.out / "summary.json").read_bytes()


def test_bad_sweep_files_are_rejected(tmp_path):
    (tmp_path / "s.toml").write_text("seeds = [1]\n")
    with pytest.raises(ValueError, match="scenario"):
        Sweep.load(tmp_path / "s.toml")
    (tmp_path / "s.toml").write_text('scenario = "x.toml"\n[grid]\n"a.b" = []\n')
    with pytest.raises(ValueError, match="non-empty"):
        Sweep.load(tmp_path / "s.toml")
    (tmp_path / "s.toml").write_text('scenario = "x.toml"\nbogus = 1\n')
    with pytest.raises(ValueError, match="bogus"):
        Sweep.load(tmp_path / "s.toml")


def test_cli_sweep_and_its_errors(tmp_path, binary, capsys):
    from eqds_lab.cli import main

    assert main(["sweep", str(tmp_path / "missing.toml")]) == 2
    assert main(["report", "--experiments", str(tmp_path / "nowhere")]) == 2
    make_sweep(tmp_path, '"switch.queue.limit_packets" = [10, 0]')
    assert main(["sweep", str(tmp_path / "sweep.toml"), "--sim", str(binary)]) == 1
    out = capsys.readouterr()
    assert "2 ran, 0 skipped, 2 failed" in out.out
    assert "limit_packets=0" in out.err and "scenario.toml" in out.err


def test_ping_rtts_pair_each_request_with_its_reply(tmp_path: Path, binary: Path) -> None:
    """A ping workload beside bulk flows from the pinged host: every request is paired
    with its reply, round trips on the idle path are all the same, and the bulk
    flows' queue at the bottleneck shows in the round trips that cross it."""
    scenario = SCENARIO.replace("[workload]", "[[workload]]").replace(
        "[stop]",
        '[[workload]]\nkind = "ping"\nsrc = 2\ndst = 0\ninterval = "20us"\nprotocol = "udp"\n'
        "\n[stop]",
    )
    (tmp_path / "scenario.toml").write_text(scenario)
    sweep = Sweep(scenario=tmp_path / "scenario.toml", seeds=[1, 2], out=tmp_path / "runs")
    assert all(o.status == "ran" for o in run_sweep(sweep))
    pings = ping_rtts(load_flows(sweep), workload=1, pinger=2, by=["seed"])
    assert pings.height == 2 * 2500
    # The bulk flows overflow the 20-packet bottleneck queue now and then, and a reply
    # behind it can be lost with them; a lost ping has no round trip.
    lost = pings.filter(pl.col("rtt_ps").is_null())
    assert lost.height < 10 and lost["sent_ps"].max() < 1_000_000_000, lost
    assert pings["sent_ps"].to_list()[:3] == [0, 20_000_000, 40_000_000]
    # The replies cross the bottleneck from host 0's side behind the bulk flows while
    # they run (their 400 KB take some 330 us at 10 Gbit/s): those pings take longer
    # than the ones after, which all take the idle round trip.
    early = pings.filter(pl.col("sent_ps") < 200_000_000)["rtt_ps"].median()
    late = pings.filter(pl.col("sent_ps") > 1_000_000_000)["rtt_ps"]
    assert early > late.max() and late.min() == late.max()
