"""The ideal FCT that normalised FCTs divide by (eqds_lab.fct)."""

import polars as pl

from eqds_lab.fct import ideal_fct_ps, normalised, packet_sizes, size_bucket


def test_packet_sizes_cut_the_payload_into_segments():
    assert packet_sizes(1, 1500, 64) == (1, 65, 65)
    assert packet_sizes(1436, 1500, 64) == (1, 1500, 1500)
    assert packet_sizes(3416, 1500, 64) == (3, 1500, 608)


def test_one_hop_is_serialisation_plus_propagation():
    # 1500 B at 10 Gbps: 1.2 us.
    assert ideal_fct_ps(1436, [10e9], 1_000_000) == 1_200_000 + 1_000_000


def test_the_slowest_hop_carries_everything_and_the_others_one_packet():
    # 3,416 B across a leaf-spine (10, 40, 40, 10 Gbps, 4 x 1 us): eqds-sim's FCT for
    # such a flow alone (TCP's first window holds it) is 8.6864 us: 4 us of
    # propagation, the first packet's 1.2 + 0.3 + 0.3 us to the last hop, and the
    # flow's 3,608 wire bytes there (2.8864 us).
    assert ideal_fct_ps(3416, [10e9, 40e9, 40e9, 10e9], 4_000_000) == 8_686_400
    # A slow middle hop is the bottleneck: the first packet's way to it, every
    # packet over it, the last packet's way from it.
    t = ideal_fct_ps(2872, [10e9, 1e9, 10e9], 0)
    assert t == 1500 * 800 + 3000 * 8000 + 1500 * 800


def test_normalised_divides_by_the_ideal_and_leaves_unfinished_flows_null():
    flows = pl.DataFrame(
        {
            "size_bytes": [1436, 1436],
            "src": [0, 0],
            "dst": [1, 1],
            "fct_ps": [4_400_000, None],
        }
    )
    out = normalised(flows, lambda s, d: ([10e9], 1_000_000))
    assert out["norm_fct"].to_list() == [2.0, None]


def test_size_buckets_label_sizes():
    df = pl.DataFrame({"size_bytes": [5_000, 50_000, 5_000_000]})
    labels = df.select(size_bucket([10_000, 100_000]).alias("b"))["b"].to_list()
    assert labels == ["< 10 KB", "10 KB-100 KB", ">= 100 KB"]
