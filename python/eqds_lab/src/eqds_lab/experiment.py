"""What the experiment runners in experiments/ share: their command line, the
statistics they report and the overrides that put a scenario's TCP over EQDS."""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path

from .sweep import Sweep, run_sweep

#: TCP over EQDS in NDP mode: every host tunnels through EQDS, switches trim
#: (15-packet data queues) and spray.
EQDS_NDP = {
    "eqds.enabled": "true",
    "switch.load_balancing": "spray",
    "switch.queue": "{ kind = 'trimming', data_packets = 15 }",
}

#: EQDS_NDP on the T1 testbed model's jumbo frames (MTU 9000): the same 15 full
#: packets of trimming queue, counted in bytes as a switch buffer is (the paper
#: gives it as 125 KB). Counted in packets, the 108-byte data packets that carry TCP's
#: ACKs inside EQDS take full packets' places: in fig9 the switches then trimmed 3-5
#: times as much sprayed data, which NACKs repair at a cost of under 3% of the median
#: FCT.
EQDS_NDP_JUMBO = EQDS_NDP | {"switch.queue": "{ kind = 'trimming', data_bytes = '135000B' }"}

#: TCP over EQDS in RTS mode on switches that do not trim: 200-packet drop-tail
#: queues, with EQDS control (class 0) served ahead of data (the transport's class
#: 1), as a trimming switch serves trimmed headers (trimming paper, §2); the EQDS
#: paper does not say where control packets queue on a network that does not trim.
EQDS_RTS = {
    "eqds.enabled": "true",
    "eqds.mode": "rts",
    "switch.load_balancing": "spray",
    "transport.class": "1",
    "switch.queue": "{ kind = 'strict_priority', classes = ["
    "{ kind = 'drop_tail', limit_packets = 200 }, "
    "{ kind = 'drop_tail', limit_packets = 200 }] }",
}

#: TCP as htsim models it, beside a Linux-like baseline: loss recovery without SACK
#: (NewReno's one hole per round trip), classic slow start without HyStart, and no
#: TCP small queues (a limit no NIC queue reaches), so slow start can overflow its
#: own NIC.
HTSIM_TCP = {
    "transport.sack": "false",
    "transport.hystart": "false",
    "transport.nic_limit": "1000000",
}


def parse_args(doc: str, here: Path, quick: str | None = None) -> argparse.Namespace:
    """The runners' common options: --results, --ray, and --quick if `quick` says
    what it does."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    if quick is not None:
        ap.add_argument("--quick", action="store_true", help=quick)
    ap.add_argument("--results", type=Path, default=here, help="where result.json and plots go")
    ap.add_argument("--ray", metavar="ADDRESS", help="run on Ray ('local' or a cluster address)")
    return ap.parse_args()


def run_case(
    args: argparse.Namespace,
    scenario: Path,
    name: str,
    fixed: Mapping[str, object],
    *,
    seeds: Sequence[int] = (1,),
    grid: Mapping[str, Sequence[object]] | None = None,
) -> Sweep:
    """Runs one case of an experiment: `scenario` with the `fixed` overrides for each
    seed (and each point of `grid`) into `runs/<name>` below the results folder
    (`runs-quick/<name>` under --quick, so a quick run never reuses a full one).
    Exits with status 1 if any run failed."""
    quick = getattr(args, "quick", False)
    sweep = Sweep(
        scenario=scenario,
        seeds=list(seeds),
        out=args.results / ("runs-quick" if quick else "runs") / name,
        grid=dict(grid or {}),
        fixed=dict(fixed),
    )
    if any(o.status == "failed" for o in run_sweep(sweep, ray_address=args.ray)):
        raise SystemExit(1)
    return sweep


def jain(xs: Sequence[float]) -> float:
    """Jain's fairness index: 1 when all are equal, 1/n when one takes everything."""
    squares = sum(x * x for x in xs)
    return sum(xs) ** 2 / (len(xs) * squares) if squares else 0.0


def percentile(xs: Sequence[float], p: float) -> float:
    """The value below which a fraction `p` of `xs` lies (nearest rank)."""
    s = sorted(xs)
    return s[min(len(s) - 1, int(p * len(s)))]
