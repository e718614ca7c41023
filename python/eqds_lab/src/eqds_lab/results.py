"""Loading a sweep's results into polars DataFrames in one call."""

from __future__ import annotations

import json
from collections.abc import Sequence

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
    with EQDS's tunnel counters, resolved window (`eqds_window_packets`) and peak
    bytes in flight at a host (`eqds_peak_in_flight_bytes_per_host`) as `eqds_*`
    columns when the run used EQDS, and RoCE's and the RDMA EQIFs' counters as `roce_*`
    and `eqds_rdma_*` when it had them."""
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
        # The credit window the run resolved (its default depends on the topology),
        # and the most bytes any host had in flight (the paper's memory claim).
        eqds = s.get("eqds", {})
        for name in ("window_packets", "peak_in_flight_bytes_per_host"):
            if name in eqds:
                row[f"eqds_{name}"] = eqds[name]
        # RoCE's counters (roce_<counter>) and the RDMA EQIFs' (eqds_rdma_<counter>),
        # when the run had them.
        row |= {f"roce_{k}": v for k, v in s.get("roce", {}).items()}
        row |= {f"eqds_rdma_{k}": v for k, v in eqds.get("rdma", {}).items()}
        rows.append(row)
    return pl.DataFrame(rows)


def ping_rtts(
    flows: pl.DataFrame, workload: int, pinger: int, by: Sequence[str] = ()
) -> pl.DataFrame:
    """The pings of `ping` workload number `workload` (sent by host `pinger`) in `flows`
    (one run's flows.csv, or `load_flows`' frame with `by` naming the columns that tell
    runs apart, such as "seed"): one row per request with `by`, `sent_ps` and
    `rtt_ps`, null where the request or its reply was lost. A reply starts exactly
    when its request ended, which pairs them."""
    pings = flows.filter(pl.col("workload") == workload)
    requests = pings.filter(pl.col("src") == pinger).select(
        *by, pl.col("start_ps").alias("sent_ps"), pl.col("end_ps")
    )
    replies = pings.filter(pl.col("dst") == pinger).select(
        *by, pl.col("start_ps").alias("end_ps"), pl.col("end_ps").alias("answered_ps")
    )
    return (
        requests.join(replies, on=[*by, "end_ps"], how="left")
        .select(*by, "sent_ps", (pl.col("answered_ps") - pl.col("sent_ps")).alias("rtt_ps"))
        .sort([*by, "sent_ps"])
    )
