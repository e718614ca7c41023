"""The DCQCN fluid model (equations (5)-(9)): its fixed point and the parameter
argument of the paper's §5.2 (as the digest recalls it), on one 40 Gbps bottleneck."""

import polars as pl
import pytest

from eqds_lab.dcqcn_fluid import FluidParams, main, mark_probability, solve

STEP = 2e-6


def test_two_flows_settle_at_fair_shares_with_a_small_marking_probability():
    p = FluidParams.paper()
    run = solve(p, [p.capacity, p.capacity], 0.04, step=STEP, sample=1e-3)
    last = run.t >= 0.03
    total = run.rc[last].sum(axis=1).mean()
    assert total == pytest.approx(p.capacity, rel=0.02)
    a, b = run.rc[last].mean(axis=0)
    assert a == pytest.approx(b, rel=0.01)
    # §5.1: at the fixed point the marking probability is below 1 %, the queue just
    # above Kmin, where marking starts.
    q = run.queue[last].mean()
    assert p.kmin < q < p.kmax
    assert 0 < mark_probability(q, p) < 0.01


def test_tuned_parameters_converge_and_the_strawman_does_not():
    p = FluidParams.paper()
    starts = [p.capacity, p.capacity / 10]

    def spread(params):
        run = solve(params, starts, 0.06, step=STEP, sample=1e-3)
        lo, hi = sorted(run.rc[-1])
        return lo / hi

    # Timer-dominant increase, a RED ramp with a small Pmax and g = 1/256: the
    # faster flow sees more marks, so the two meet (0.955 at 50 ms here).
    assert spread(p) > 0.85
    # QCN's byte counter and timer, cut-off marking, g = 1/16: the faster flow keeps
    # its lead (0.08 at 50 ms).
    assert spread(p.strawman()) < 0.3


def test_command_line_writes_a_csv_and_refuses_bad_arguments(tmp_path):
    out = tmp_path / "fluid.csv"
    assert main(["--flows", "3", "--duration", "0.002", "--out", str(out)]) == 0
    df = pl.read_csv(out)
    assert {"t_s", "queue_kb", "rc0_gbps", "rt2_gbps", "alpha1"} <= set(df.columns)
    assert df["rc0_gbps"][0] == pytest.approx(40.0)
    assert main(["--flows", "0", "--out", str(out)]) == 2
    with pytest.raises(ValueError):
        solve(FluidParams.paper(), [], 0.01)


def test_a_flow_whose_alpha_decayed_cuts_less_than_a_new_one():
    # Both at line rate into one link: the first marks cut the new flow (alpha 1) by
    # half per CNP interval, the one with alpha 0.05 by 2.5 %.
    p = FluidParams.paper()
    run = solve(p, [p.capacity] * 2, 0.002, step=STEP, sample=1e-4, start_alpha=[0.05, 1.0])
    assert run.alpha[0, 0] == pytest.approx(0.05, abs=0.01)
    old, new = run.rc[-1]
    assert old > 3 * new
    with pytest.raises(ValueError):
        solve(p, [p.capacity] * 2, 0.01, start_alpha=[1.0])
    with pytest.raises(ValueError):
        solve(p, [p.capacity], 0.01, start_alpha=[1.5])
