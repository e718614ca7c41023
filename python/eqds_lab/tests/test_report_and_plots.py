"""Plot helpers write a PNG and its data; results and the experiments table."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

from eqds_lab import Quantity, report, write_result
from eqds_lab.plots import cdf, over_time, percentiles_vs, ranked

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def run_quick(experiment: str, results: Path, must_pass: bool = False) -> None:
    """Runs experiments/`experiment`/run.py --quick into `results`: it must finish
    (1 is a failed verdict, still a finished run), and pass if `must_pass`."""
    root = Path(__file__).resolve().parents[3]
    env = os.environ | {
        "EQDS_SIM": os.environ.get("EQDS_SIM", str(root / "target/release/eqds-sim"))
    }
    script = root / "experiments" / experiment / "run.py"
    cmd = [sys.executable, str(script), "--quick", "--results", str(results)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    assert proc.returncode in ((0,) if must_pass else (0, 1)), proc.stdout + proc.stderr


def test_plots_write_png_and_the_data_behind_it(tmp_path):
    made = [
        cdf({"a": [3, 1, 2], "b": [5]}, tmp_path / "cdf.png", xlabel="x"),
        ranked({"a": [0.2, 0.9, 0.5]}, tmp_path / "ranked.png", ylabel="y", reference={"p": 0.4}),
        percentiles_vs({"a": {1: [1, 2, 3], 2: [4, 5, 6]}}, tmp_path / "pv.png", "n", "fct"),
        over_time({"q": ([0.0, 1.0], [3, 4])}, tmp_path / "t.png", ylabel="packets"),
    ]
    for png in made:
        assert png.read_bytes()[:8] == PNG_MAGIC
    rows = read_csv(tmp_path / "cdf.csv")
    assert [(r["series"], float(r["x"]), float(r["cdf"])) for r in rows][:3] == [
        ("a", 1.0, 1 / 3),
        ("a", 2.0, 2 / 3),
        ("a", 3.0, 1.0),
    ]
    assert [float(r["value"]) for r in read_csv(tmp_path / "ranked.csv")] == [0.9, 0.5, 0.2]
    pv = {(r["percentile"], r["x"]): float(r["value"]) for r in read_csv(tmp_path / "pv.csv")}
    assert pv[("50", "1")] == 2.0 and pv[("99", "2")] == 5.98


def test_results_and_the_generated_table(tmp_path):
    for name, ours in [("exp-a", 0.41), ("exp-b", 0.9)]:
        d = tmp_path / name
        d.mkdir()
        passed = write_result(
            d, "Fig. 1", "setup", [Quantity("mean", 0.4, ours, 0.1)], plot="x.png"
        )
        assert passed == (name == "exp-a")
        assert json.loads((d / "result.json").read_text())["quantities"][0]["pass"] == passed
    text = report(tmp_path)
    assert (tmp_path / "README.md").read_text() == text
    assert (
        "| [exp-a](exp-a/) | Fig. 1 | mean | 0.4 | 0.41 | ±0.1 | pass | [x.png](exp-a/x.png) |"
        in text
    )
    assert "| 0.9 | ±0.1 | **fail** |" in text


def test_fig8_runs_through_eqds_lab_quick(tmp_path):
    run_quick("fig8-permutation", tmp_path)
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["experiment"] == "fig8-permutation"
    q = result["quantities"][0]
    assert 0.0 < q["ours"] < 1.0
    assert (tmp_path / "fig8.png").read_bytes()[:8] == PNG_MAGIC
    # TCP, MPTCP, NDP and TCP over EQDS, 128 flows each.
    assert len(read_csv(tmp_path / "fig8.csv")) == 4 * 128


def test_committed_experiments_table_is_up_to_date(tmp_path):
    experiments = Path(__file__).resolve().parents[3] / "experiments"
    for result in experiments.glob("*/result.json"):
        (tmp_path / result.parent.name).mkdir()
        (tmp_path / result.parent.name / "result.json").write_bytes(result.read_bytes())
    expected = report(tmp_path)
    assert (experiments / "README.md").read_text() == expected, "run `eqds-lab report`"


def test_ndp_incast_runs_through_eqds_lab_quick(tmp_path):
    run_quick("ndp-incast", tmp_path, must_pass=True)
    result = json.loads((tmp_path / "result.json").read_text())
    # NDP finishes every quick incast (N = 8, 64, 256) within 10% of line rate.
    assert result["quantities"][0]["pass"]
    completion = result["also_measured"]["completion_s"]
    assert set(completion) >= {"NDP (8-packet trimming queues)", "TCP, 15-packet buffers"}
    assert (tmp_path / "incast.png").read_bytes()[:8] == PNG_MAGIC


def test_fig10_runs_through_eqds_lab_quick(tmp_path):
    """A short instance of experiments/fig10-ping: the busy host's deep TCP queue adds
    hundreds of microseconds to a ping, EQDS's trimming queue tens."""
    run_quick("fig10-ping", tmp_path)
    rise = json.loads((tmp_path / "result.json").read_text())["also_measured"]["median_rise_us"]
    assert rise["TCP"] > 300, rise
    assert 0 < rise["TCP over EQDS, NDP mode"] < 100, rise
    assert (tmp_path / "fig10.png").read_bytes()[:8] == PNG_MAGIC


def test_fig7_runs_through_eqds_lab_quick(tmp_path):
    """A short instance of experiments/fig7-permutation: ECMP collisions leave TCP's
    mean near half the link, EQDS's spraying every flow near all of it, and a window
    of one idle BDP falls short of the default; RoCE over EQDS runs near line rate in
    order. (The RDMA rows' verdicts need the full run: DCQCN's start-up cuts weigh on
    the 8 ms quick run, and the paper's RDMA maximum is a documented FAIL.)"""
    run_quick("fig7-permutation", tmp_path)
    result = json.loads((tmp_path / "result.json").read_text())
    tcp_verdicts = {q["name"]: q["pass"] for q in result["quantities"] if "TCP" in q["name"]}
    assert len(tcp_verdicts) == 3 and all(tcp_verdicts.values()), tcp_verdicts
    seen = result["also_measured"]
    roce = seen["RoCE over EQDS (RDMA EQIF, NDP mode)"]
    assert roce["mean_gbps"] > 18 and roce["roce_out_of_order"] == 0, roce
    tcp, ndp = seen["TCP (ECMP)"], seen["TCP over EQDS, NDP mode"]
    idle = seen["TCP over EQDS, NDP mode, window of one idle BDP"]
    assert ndp["min_gbps"] > 20 > tcp["mean_gbps"], seen
    assert idle["mean_gbps"] < ndp["mean_gbps"] - 2, seen
    assert ndp["eqds_window_packets"][0] > idle["eqds_window_packets"][0], seen
    # Eight configurations (four TCP, four RoCE), six flows, two seeds.
    assert len(read_csv(tmp_path / "fig7.csv")) == 8 * 6 * 2
    assert (tmp_path / "fig7.png").read_bytes()[:8] == PNG_MAGIC


def test_memory_scaling_runs_through_eqds_lab_quick(tmp_path):
    """A short instance of experiments/memory-scaling: a host serving 256 receivers
    keeps no more in flight than one serving one, about one BDP plus its NIC queue."""
    run_quick("memory-scaling", tmp_path, must_pass=True)
    seen = json.loads((tmp_path / "result.json").read_text())["also_measured"]
    per_packet = seen["peak_in_flight_packets"]["an ACK per packet"]
    assert set(per_packet) == {"1", "16", "256"}, per_packet
    assert all(abs(v - seen["bdp_plus_ring_packets"]) <= 2 for v in per_packet.values()), seen
    assert len(read_csv(tmp_path / "memory-scaling.csv")) == 2 * 3
    assert (tmp_path / "memory-scaling.png").read_bytes()[:8] == PNG_MAGIC


def test_appb_eqif_buffer_runs_through_eqds_lab_quick(tmp_path):
    """A short instance of experiments/appb-eqif-buffer: from one BDP of EQIF buffer
    every congestion controller fills the link; below it NewReno needs more buffer
    than Cubic."""
    run_quick("appb-eqif-buffer", tmp_path)
    share = json.loads((tmp_path / "result.json").read_text())["also_measured"][
        "throughput_fraction"
    ]
    assert all(share[p]["30"] > 0.95 for p in ("newreno", "cubic", "dctcp")), share
    assert share["newreno"]["4"] < share["cubic"]["4"], share
    assert (tmp_path / "eqif-buffer.png").read_bytes()[:8] == PNG_MAGIC


def test_fig15_runs_through_eqds_lab_quick(tmp_path):
    """A short instance of experiments/fig15-ec2-incast: with deep buffers the
    baseline's ping waits milliseconds behind the incast; over EQDS in RTS mode every
    flow gets its share and the ping finds the network's queue short."""
    run_quick("fig15-ec2-incast", tmp_path)
    seen = json.loads((tmp_path / "result.json").read_text())["also_measured"]
    tcp, rts = seen["TCP"], seen["TCP over EQDS, RTS mode"]
    assert tcp["ping_rise_us"] > 1000, seen
    assert rts["jain"] > 0.99 and rts["ping_rise_us"] < 50, seen
    assert (tmp_path / "fig15.png").read_bytes()[:8] == PNG_MAGIC
    assert (tmp_path / "fig16.png").read_bytes()[:8] == PNG_MAGIC


def test_sharing_runs_through_eqds_lab_quick(tmp_path):
    """A short instance of experiments/sharing: without EQDS a line-rate UDP sender
    starves TCP and Cubic starves Vegas and BBR; with EQDS every receiver is shared
    fairly (BBR included), and Vegas falls short only where its tunnel asks credit
    for its backlog alone."""
    run_quick("sharing", tmp_path, must_pass=True)
    seen = json.loads((tmp_path / "result.json").read_text())["also_measured"]
    vegas = {k: dict(v) for k, v in seen["vegas_with_eqds_gbps"].items()}
    assert vegas["Vegas alone"]["vegas"] > 20, vegas
    assert vegas["Vegas alone, credit for the backlog only"]["vegas"] < 12, vegas
    assert (tmp_path / "sharing.png").read_bytes()[:8] == PNG_MAGIC
