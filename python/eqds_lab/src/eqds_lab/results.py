"""Loading a sweep's results into polars DataFrames in one call."""

from __future__ import annotations

import json

import polars as pl

from .sweep import Run, Sweep


def _runs(source: Sweep | list[Run]) -> list[Run]:
    return source.runs() if isinstance(source, Sweep) else list(source)


def load_flows(source: Sweep | list[Run]) -> pl.DataFrame:
    """Every finished run's flows.csv, with one column per swept parameter."""
    frames = []
    for run in _runs(source):
        path = run.out / "flows.csv"
        if not path.exists():
            continue
        df = pl.read_csv(path)
        frames.append(df.with_columns(pl.lit(v).alias(k) for k, v in run.params.items()))
    return pl.concat(frames, how="diagonal") if frames else pl.DataFrame()


def load_summaries(source: Sweep | list[Run]) -> pl.DataFrame:
    """One row per finished run: its parameters and the headline numbers of summary.json,
    with EQDS's tunnel counters as `eqds_*` columns when the run used EQDS."""
    rows = []
    for run in _runs(source):
        path = run.out / "summary.json"
        if not path.exists():
            continue
        s = json.loads(path.read_text())
        row = dict(run.params)
        row |= {
            "flows": s["flows"]["total"],
            "completed": s["flows"]["completed"],
            "drops": s["totals"]["drops"],
            "marks": s["totals"]["marks"],
            "jain_index": s["jain_index"],
            "throughput_mean_bps": s["throughput_bps"].get("mean"),
            "fct_p50_ps": s["fct_ps"].get("p50"),
            "fct_p99_ps": s["fct_ps"].get("p99"),
            "end_time_ps": s["end_time_ps"],
            "events": s["engine"]["events"],
        }
        # Runs with EQDS also report its tunnel counters (retransmits, holes the
        # reorder queues skipped, late deliveries, RSTs, ...), as eqds_<counter>.
        tunnels = s.get("eqds", {}).get("tunnels", {})
        row |= {f"eqds_{name}": value for name, value in tunnels.items()}
        rows.append(row)
    return pl.DataFrame(rows)
