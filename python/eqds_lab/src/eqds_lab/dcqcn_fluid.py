"""The DCQCN fluid model (Zhu et al., SIGCOMM 2015, §5.1, equations (5)-(9)).

N flows share one bottleneck of capacity C. Each flow i has a current rate RC_i, a
target rate RT_i and alpha_i; they meet only in the queue q, which RED marks with
probability p(q) (equation (5)). The feedback reaches a sender after a delay tau*,
so the model is a delay-differential system: the flows react to p and to their own
rate tau* ago.

    dq/dt     = sum_i RC_i - C                                               (6)
    dalpha/dt = g/tau' * [(1 - (1-p~)^(tau' R~)) - alpha]                      (7)
    dRT/dt    = -(RT - RC)/tau * (1 - (1-p~)^(tau R~))
                + RAI * R~ p~ (1-p~)^(F B)     / ((1-p~)^(-B)     - 1)
                + RAI * R~ p~ (1-p~)^(F T R~)  / ((1-p~)^(-T R~)  - 1)        (8)
    dRC/dt    = -RC alpha/(2 tau) * (1 - (1-p~)^(tau R~))
                + (RT - RC)/2 * R~ p~ / ((1-p~)^(-B)    - 1)
                + (RT - RC)/2 * R~ p~ / ((1-p~)^(-T R~) - 1)                  (9)

with p~ = p(t - tau*) and R~ = RC_i(t - tau*). Units as in the paper: rates in
packets per second, the queue and the thresholds in packets, B in packets. The model
has no hyper increase. The solver steps forward by Euler with a fixed step, keeping
a history of p and of each RC for the delayed terms; it clamps q at 0, RT to [0, C] and RC to
[the packet model's minimum rate, C], and takes the limits of the two increase terms as p~ goes to 0 (R~/B and 1/T).

The parameters default to the paper's (``FluidParams.paper``); Kmin, Kmax, Pmax, g,
T and B there are recalled values (the seed text stops before §5.2), and tau* is not
given at all: 50 us here, a solver parameter to report with every result.

``python -m eqds_lab.dcqcn_fluid --flows 2 --duration 0.1 --out fluid.csv`` writes
the rates and the queue over time as CSV (one row per sample interval).
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

#: Bytes of the packet the model counts in (the paper's buffer arithmetic uses 1500 B).
PACKET_BYTES = 1500


@dataclass(frozen=True)
class FluidParams:
    """One bottleneck and the DCQCN constants, in the model's units."""

    #: Capacity C, packets/s.
    capacity: float
    #: RED ramp: Kmin and Kmax in packets, Pmax.
    kmin: float
    kmax: float
    pmax: float
    #: alpha's gain.
    g: float
    #: CNP interval tau (s), alpha timer tau' (s), rate-increase timer T (s).
    tau: float
    tau_alpha: float
    timer: float
    #: Byte counter B, packets.
    byte_counter: float
    #: Fast-recovery steps F.
    fast_recovery: int
    #: Additive increase RAI, packets/s.
    rai: float
    #: Feedback delay tau* (s): not in the paper.
    delay: float
    #: The rate a cut never goes below, packets/s (not in the paper; the packet
    #: model's 100 Mbps).
    min_rate: float

    @staticmethod
    def paper(line_rate_bps: float = 40e9, delay: float = 50e-6) -> FluidParams:
        """The paper's values at ``line_rate_bps`` (the recalled ones marked in the
        module documentation)."""
        per_packet = 8 * PACKET_BYTES
        return FluidParams(
            capacity=line_rate_bps / per_packet,
            kmin=5_000 / PACKET_BYTES,
            kmax=200_000 / PACKET_BYTES,
            pmax=0.01,
            g=1 / 256,
            tau=50e-6,
            tau_alpha=55e-6,
            timer=55e-6,
            byte_counter=10_000_000 / PACKET_BYTES,
            fast_recovery=5,
            rai=40e6 / per_packet,
            delay=delay,
            min_rate=100e6 / per_packet,
        )

    def strawman(self) -> FluidParams:
        """The QCN-style setting the paper argues against: byte counter 150 KB, timer
        1.5 ms, cut-off marking at Kmin (Pmax 1), g = 1/16."""
        return replace(
            self,
            byte_counter=150_000 / PACKET_BYTES,
            timer=1.5e-3,
            kmax=self.kmin,
            pmax=1.0,
            g=1 / 16,
        )


def mark_probability(q: float, p: FluidParams) -> float:
    """Equation (5)."""
    if q <= p.kmin:
        return 0.0
    if q > p.kmax:
        return 1.0
    return (q - p.kmin) / (p.kmax - p.kmin) * p.pmax


def _pow1m(p: float, x: np.ndarray) -> np.ndarray:
    """(1 - p)^x, elementwise, for p in [0, 1] and x >= 0."""
    if p >= 1.0:
        return np.where(x > 0, 0.0, 1.0)
    return np.exp(x * math.log1p(-p))


def _expiry_rate(p: float, rate: np.ndarray, period_packets: np.ndarray) -> np.ndarray:
    """R p / ((1-p)^(-n) - 1): how often a counter of n packets expires between
    marks, at rate R. Its limit as p goes to 0 is R / n."""
    if p <= 0.0:
        return rate / period_packets
    if p >= 1.0:
        return np.zeros_like(rate)
    denom = np.expm1(-period_packets * math.log1p(-p))
    return np.where(denom > 0, rate * p / np.where(denom > 0, denom, 1.0), rate / period_packets)


@dataclass
class FluidRun:
    """What :func:`solve` returns: samples over time."""

    t: np.ndarray
    queue: np.ndarray
    #: Per flow, columns: RC, RT, alpha (shape: samples x flows).
    rc: np.ndarray
    rt: np.ndarray
    alpha: np.ndarray


def solve(
    params: FluidParams,
    start_rates: list[float],
    duration: float,
    step: float = 1e-6,
    sample: float = 100e-6,
    start_alpha: list[float] | None = None,
) -> FluidRun:
    """Integrates (5)-(9) for flows starting at ``start_rates`` (packets/s, RT equal
    to RC) with an empty queue, for ``duration`` seconds. Each flow's alpha starts at
    1, as on a NIC, or at ``start_alpha``: a flow that has run alone for a while has
    let its alpha decay (equation (7) with p = 0), and so cuts less at the next mark
    than a new flow."""
    if not start_rates:
        raise ValueError("start_rates: at least one flow")
    if start_alpha is not None and (
        len(start_alpha) != len(start_rates) or not all(0 <= a <= 1 for a in start_alpha)
    ):
        raise ValueError("start_alpha: one value in [0, 1] per flow")
    if step <= 0 or duration <= 0 or sample < step:
        raise ValueError("step, duration: must be positive, and sample at least one step")
    p = params
    c = p.capacity
    rc = np.clip(np.array(start_rates, dtype=float), p.min_rate, c)
    rt = rc.copy()
    alpha = np.ones_like(rc) if start_alpha is None else np.array(start_alpha, dtype=float)
    q = 0.0
    lag = max(1, round(p.delay / step))
    # Ring buffers of the last `lag` steps: p(q) and each flow's RC.
    hist_p = np.zeros(lag)
    hist_rc = np.tile(rc, (lag, 1))
    b = np.full_like(rc, p.byte_counter)
    steps = round(duration / step)
    every = max(1, round(sample / step))
    ts, qs, rcs, rts, alphas = [], [], [], [], []
    for k in range(steps):
        slot = k % lag
        pd = hist_p[slot]  # p(t - tau*)
        rd = hist_rc[slot]  # RC(t - tau*)
        marked_tau = 1.0 - _pow1m(pd, p.tau * rd)
        marked_alpha = 1.0 - _pow1m(pd, p.tau_alpha * rd)
        by_bytes = _expiry_rate(pd, rd, b)
        by_timer = _expiry_rate(pd, rd, p.timer * rd)
        d_alpha = p.g / p.tau_alpha * (marked_alpha - alpha)
        d_rt = (
            -(rt - rc) / p.tau * marked_tau
            + p.rai * by_bytes * _pow1m(pd, p.fast_recovery * b)
            + p.rai * by_timer * _pow1m(pd, p.fast_recovery * p.timer * rd)
        )
        d_rc = -rc * alpha / (2 * p.tau) * marked_tau + (rt - rc) / 2 * (by_bytes + by_timer)
        d_q = rc.sum() - c
        alpha = np.clip(alpha + step * d_alpha, 0.0, 1.0)
        rt = np.clip(rt + step * d_rt, 0.0, c)
        rc = np.clip(rc + step * d_rc, p.min_rate, c)
        q = max(0.0, q + step * d_q)
        hist_p[slot] = mark_probability(q, p)
        hist_rc[slot] = rc
        if k % every == 0:
            ts.append(k * step)
            qs.append(q)
            rcs.append(rc.copy())
            rts.append(rt.copy())
            alphas.append(alpha.copy())
    return FluidRun(
        t=np.array(ts),
        queue=np.array(qs),
        rc=np.array(rcs),
        rt=np.array(rts),
        alpha=np.array(alphas),
    )


def write_csv(run: FluidRun, path: Path, packet_bytes: int = PACKET_BYTES) -> None:
    """Rates in Gbit/s and the queue in KB, one row per sample."""
    flows = run.rc.shape[1]
    with open(path, "w") as f:
        f.write(
            "t_s,queue_kb,"
            + ",".join(f"rc{i}_gbps,rt{i}_gbps,alpha{i}" for i in range(flows))
            + "\n"
        )
        to_gbps = 8 * packet_bytes / 1e9
        for k, t in enumerate(run.t):
            cols = [f"{t:.6f}", f"{run.queue[k] * packet_bytes / 1e3:.3f}"]
            for i in range(flows):
                cols += [
                    f"{run.rc[k, i] * to_gbps:.4f}",
                    f"{run.rt[k, i] * to_gbps:.4f}",
                    f"{run.alpha[k, i]:.6f}",
                ]
            f.write(",".join(cols) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m eqds_lab.dcqcn_fluid", description=__doc__.splitlines()[0]
    )
    ap.add_argument("--flows", type=int, default=2, help="flows at line rate (default 2)")
    ap.add_argument("--start-gbps", type=float, nargs="*", help="each flow's start rate instead")
    ap.add_argument("--line-gbps", type=float, default=40.0)
    ap.add_argument("--duration", type=float, default=0.1, help="seconds (default 0.1)")
    ap.add_argument("--delay-us", type=float, default=50.0, help="feedback delay tau* (default 50)")
    ap.add_argument("--strawman", action="store_true", help="the QCN-style parameters")
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    if a.flows < 1 or a.duration <= 0 or a.line_gbps <= 0 or a.delay_us < 0:
        print("dcqcn_fluid: --flows, --duration, --line-gbps must be positive", file=sys.stderr)
        return 2
    params = FluidParams.paper(a.line_gbps * 1e9, a.delay_us * 1e-6)
    if a.strawman:
        params = params.strawman()
    per_packet = 8 * PACKET_BYTES
    starts = (
        [g * 1e9 / per_packet for g in a.start_gbps]
        if a.start_gbps
        else [params.capacity] * a.flows
    )
    write_csv(solve(params, starts, a.duration), a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
