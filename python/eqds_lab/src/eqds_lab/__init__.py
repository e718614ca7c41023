"""eqds_lab: run eqds-sim sweeps locally, load their results, plot them."""

from .report import Quantity, print_quantities, report, write_result
from .results import load_flows, load_summaries, ping_rtts
from .sweep import Run, Sweep, run_sweep

__all__ = [
    "Quantity",
    "Run",
    "Sweep",
    "load_flows",
    "load_summaries",
    "ping_rtts",
    "print_quantities",
    "report",
    "run_sweep",
    "write_result",
]
