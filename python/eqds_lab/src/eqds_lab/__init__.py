"""eqds_lab: run eqds-sim sweeps locally, load their results, plot them."""

from .results import load_flows, load_summaries
from .sweep import Run, Sweep, run_sweep

__all__ = ["Run", "Sweep", "load_flows", "load_summaries", "run_sweep"]
