"""Flow completion times against the best a network allows: the normalisation of the
fair-queueing papers' FCT plots (AFQ, NSDI'18, Figures 7-10; pFabric's "normalised
FCT").

A flow's ideal FCT is what it takes alone on an idle network with its whole payload
sent back to back at its NIC's rate: packets cross store-and-forward hops, so the
last byte arrives after the slowest hop has carried every packet, preceded by the
first packet's way to that hop and followed by the last packet's way from it, plus
the links' propagation. `eqds-sim` reproduces it exactly for a flow with nothing to
wait for (a window at least as large as the flow), so a normalised FCT of 1 means
"nothing got in the way, not even the transport's own start-up".
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

import polars as pl


def packet_sizes(size: int, mtu: int, header: int) -> tuple[int, int, int]:
    """(packets, wire bytes of the first, wire bytes of the last) of a `size`-byte
    payload cut into `mtu - header` byte segments."""
    mss = mtu - header
    n = max(1, -(-size // mss))
    last = size - (n - 1) * mss
    return n, min(size, mss) + header, last + header


def ideal_fct_ps(
    size: int,
    rates_bps: Sequence[float],
    propagation_ps: int,
    mtu: int = 1500,
    header: int = 64,
) -> float:
    """Ideal FCT in picoseconds of a `size`-byte flow over hops of `rates_bps` (the
    sender's NIC first) with `propagation_ps` of propagation in all."""
    n, first, last = packet_sizes(size, mtu, header)
    wire = size + n * header
    per_byte = [8e12 / r for r in rates_bps]  # ps per byte, hop by hop
    best = 0.0
    for k, bottleneck in enumerate(per_byte):
        t = first * sum(per_byte[:k]) + wire * bottleneck + last * sum(per_byte[k + 1 :])
        best = max(best, t)
    return best + propagation_ps


def normalised(
    flows: pl.DataFrame,
    path_of,
    mtu: int = 1500,
    header: int = 64,
) -> pl.DataFrame:
    """`flows` (rows of flows.csv) with `ideal_ps` and `norm_fct` (FCT / ideal; null
    if unfinished) added; `path_of(src, dst)` gives a flow's (hop rates, propagation
    in ps)."""
    cache: dict[tuple, float] = {}
    ideal = []
    for size, src, dst in zip(flows["size_bytes"], flows["src"], flows["dst"], strict=True):
        rates, prop = path_of(src, dst)
        key = (size, tuple(rates), prop)
        if key not in cache:
            cache[key] = ideal_fct_ps(size, rates, prop, mtu, header)
        ideal.append(cache[key])
    return flows.with_columns(pl.Series("ideal_ps", ideal)).with_columns(
        (pl.col("fct_ps") / pl.col("ideal_ps")).alias("norm_fct")
    )


def size_bucket(edges: Sequence[int]) -> pl.Expr:
    """An expression labelling `size_bytes` with the bucket of `edges` it falls in:
    '< e0', 'e0-e1', ..., '>= en' (sizes in KB or MB)."""

    def label(b: int) -> str:
        return f"{b // 1_000_000} MB" if b >= 1_000_000 else f"{b // 1000} KB"

    expr = pl.when(pl.col("size_bytes") < edges[0]).then(pl.lit(f"< {label(edges[0])}"))
    for lo, hi in pairwise(edges):
        expr = expr.when(pl.col("size_bytes") < hi).then(pl.lit(f"{label(lo)}-{label(hi)}"))
    return expr.otherwise(pl.lit(f">= {label(edges[-1])}"))
