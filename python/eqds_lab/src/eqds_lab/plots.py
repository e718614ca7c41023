"""Figures in the styles these papers use. Each helper writes a PNG and, beside it,
the CSV of exactly the data plotted (same name, `.csv`)."""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt


def save(fig, path: Path, header: Sequence[str], rows: list[Sequence]) -> Path:
    """Writes `fig` to `path` (PNG) and `rows` under `header` beside it (`.csv`), and
    closes the figure: the last step of every helper here and of runners' own figures."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)
    with open(path.with_suffix(".csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    return path


def cdf(
    series: Mapping[str, Sequence[float]],
    path: Path,
    xlabel: str,
    title: str = "",
    xlim: tuple[float, float] | None = None,
    logx: bool = False,
) -> Path:
    """Empirical CDF of each labelled sample (e.g. per-flow throughput or FCT).
    `xlim` zooms the plot (a few outliers would otherwise squash the rest); `logx`
    shows samples that differ by orders of magnitude (microseconds against
    milliseconds); the CSV always holds every point."""
    fig, ax = plt.subplots(figsize=(6, 3.6))
    rows = []
    for label, values in series.items():
        xs = sorted(values)
        ys = [(i + 1) / len(xs) for i in range(len(xs))]
        ax.step(xs, ys, where="post", label=label)
        rows += [(label, x, y) for x, y in zip(xs, ys)]
    ax.set_xlabel(xlabel)
    ax.set_ylabel("CDF")
    ax.set_ylim(0, 1.01)
    if logx:
        ax.set_xscale("log")
    if xlim is not None:
        ax.set_xlim(*xlim)
    ax.set_title(title)
    ax.legend(fontsize=8)
    return save(fig, path, ["series", "x", "cdf"], rows)


def ranked(
    series: Mapping[str, Sequence[float]],
    path: Path,
    ylabel: str,
    title: str = "",
    reference: Mapping[str, float] | None = None,
) -> Path:
    """Values sorted from largest to smallest against their rank (the Figure 8 style),
    with optional horizontal reference lines (e.g. the paper's numbers)."""
    fig, ax = plt.subplots(figsize=(6, 3.6))
    rows = []
    for label, values in series.items():
        ys = sorted(values, reverse=True)
        ax.plot(range(len(ys)), ys, lw=1.2, label=label)
        rows += [(label, i, y) for i, y in enumerate(ys)]
    for label, y in (reference or {}).items():
        ax.axhline(y, color="grey", ls="--", lw=1, label=label)
    ax.set_xlabel("rank")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8, loc="upper right")
    return save(fig, path, ["series", "rank", "value"], rows)


def percentiles_vs(
    points: Mapping[str, Mapping[float, Sequence[float]]],
    path: Path,
    xlabel: str,
    ylabel: str,
    percentiles: Sequence[float] = (50, 99),
    title: str = "",
) -> Path:
    """Percentiles of a sample against a swept parameter (e.g. FCT vs load or senders),
    one line per series and percentile."""
    fig, ax = plt.subplots(figsize=(6, 3.6))
    rows = []
    for label, by_x in points.items():
        xs = sorted(by_x)
        for p in percentiles:
            ys = [_percentile(sorted(by_x[x]), p) for x in xs]
            ax.plot(xs, ys, marker="o", lw=1.2, label=f"{label} p{p:g}")
            rows += [(label, p, x, y) for x, y in zip(xs, ys)]
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8)
    return save(fig, path, ["series", "percentile", "x", "value"], rows)


def over_time(
    series: Mapping[str, tuple[Sequence[float], Sequence[float]]],
    path: Path,
    ylabel: str,
    title: str = "",
) -> Path:
    """Lines over time (throughput or queue occupancy); `series` maps a label to
    (times in seconds, values)."""
    fig, ax = plt.subplots(figsize=(6, 3.6))
    rows = []
    for label, (ts, vs) in series.items():
        ax.plot(ts, vs, lw=1, label=label)
        rows += [(label, t, v) for t, v in zip(ts, vs)]
    ax.set_xlabel("time (s)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8)
    return save(fig, path, ["series", "time_s", "value"], rows)


def _percentile(sorted_values: Sequence[float], p: float) -> float:
    """Linear interpolation between closest ranks (as eqds-sim's summary does)."""
    if not sorted_values:
        return float("nan")
    rank = p / 100 * (len(sorted_values) - 1)
    lo, hi = int(rank), min(int(rank) + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (rank - lo)
