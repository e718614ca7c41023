#!/usr/bin/env python3
"""DCQCN paper E12: RoCEv2 goodput against random (corruption) loss, go-back-N and
go-back-0.

One RoCE sender WRITEs back-to-back messages to one receiver through one 40 Gbps
switch (scenario.toml); each switch port loses every arriving packet with a given
probability (`random_loss` queue). DCQCN is off: one sender at line rate into a link
of the same rate never queues, so no packet is marked and DCQCN would leave the
rate alone; the runs isolate loss recovery. Cases:

- loss at both switch ports (data towards the receiver, ACKs and NAKs towards the
  sender: a corrupting switch), go-back-N and go-back-0, 4 MB messages;
- loss on data only (the data's priority class behind a lossy queue, ACKs in
  another class), the same two modes: the first-order model's setting;
- go-back-0 with 1, 4 and 16 MB messages (loss both ways): its collapse goes
  with loss rate x message size.

The paper's §7, where it discusses non-congestion loss, is missing from the seed
text (spec §0, E12 "unverified"): there are no paper numbers. The reference values
are an analytic model of the same NIC behaviour (see `model`), and result.json says
so.

Usage: python3 experiments/dcqcn-e12-loss/run.py [--quick] [--results DIR] [--ray ADDR]
"""

import json
import math
import sys
from pathlib import Path

from eqds_lab import Quantity, load_flows, write_result
from eqds_lab.experiment import parse_args, run_case

HERE = Path(__file__).resolve().parent
RATES = [0.0, 1e-5, 1e-4, 1e-3, 3e-3, 1e-2]
QUICK_RATES = [0.0, 1e-4, 1e-3, 1e-2]
SEEDS = [1, 2, 3]
SIZES_MB = [1, 4, 16]
# scenario.toml's values the model needs.
LINE_BPS = 40e9
MTU, HEADER, RETH = 1500, 64, 16
LINK_S = 1e-6
NAK_INTERVAL_S = 500e-6  # transport.roce.nak_interval's default
RTO_S = 1.048576e-3  # transport.roce.rto's default
DEFAULT_MB = 4
INNER = "{ kind = 'drop_tail', limit_packets = 1000 }"


def lossy(rate: float) -> str:
    return f"{{ kind = 'random_loss', rate = {rate!r}, queue = {INNER} }}"


def queue(rate: float, placement: str) -> str:
    """The switch queue: every packet lossy, or only class 0 (data; ACKs are class 1)."""
    if placement == "both":
        return lossy(rate)
    return f"{{ kind = 'strict_priority', classes = [{lossy(rate)}, {INNER}] }}"


def packet_time() -> float:
    return MTU * 8 / LINE_BPS


def in_flight_at_nak() -> int:
    """W: the packets the sender starts from a lost packet until the NAK that rewinds
    to it arrives, all of which go-back-N sends again. The next packet leaves a packet
    time after the lost one, crosses two links (and the switch's transmitter) to the
    receiver, whose NAK crosses two links back."""
    t_pkt, t_ack = packet_time(), HEADER * 8 / LINE_BPS
    nak_at = 3 * t_pkt + 4 * LINK_S + 2 * t_ack
    return math.floor(nak_at / t_pkt) + 1


def message_packets(megabytes: int) -> int:
    """Packets per WRITE message: the first carries the 16 B RETH."""
    mss = MTU - HEADER
    return 1 + math.ceil((megabytes * 1e6 - (mss - RETH)) / mss)


def lossless_goodput() -> float:
    """Payload over wire bytes at line rate (a WRITE's RETH is negligible)."""
    return (MTU - HEADER) / MTU


def rto_restarts(megabytes: int) -> float:
    """Packets a go-back-0 sender wastes, on average over where in the message the
    loss falls, because replaying the message up to the loss outlasts the timeout:
    duplicates are ACKed without progress, so the timer, last armed by the ACK before
    the loss, expires R = rto / packet time into the replay and restarts it, and
    again 2R into the next replay, and so on (each expiry doubles the timeout). For a
    loss at position j, uniform in the message of M packets, the cost is the sum of
    R 2^i over the i with j > R 2^i; 0 while M <= R (messages under ~5 MB here)."""
    m = message_packets(megabytes)
    r = RTO_S / packet_time()
    extra, span = 0.0, r
    while span < m:
        extra += span * (m - span) / m
        span *= 2
    return extra


def model(rate: float, recovery: str, placement: str, megabytes: int) -> float:
    """Goodput / lossless goodput when a data packet is lost with probability p:
    each loss costs C packet times, and a packet is lost p/(1-p) times on average
    before it gets through, so 1/(1 + p/(1-p) C). Go-back-N: C = W, the window sent
    again. Go-back-0 also resends the message up to the loss, (M - 1)/2 packets on
    average for M-packet messages (duplicates, whose loss costs nothing more), plus
    the timeout's restarts of that replay (`rto_restarts`). Recovery stalls for the
    NAK interval (the receiver NAKs one PSN once per interval) when the resend of the
    lost packet is lost too (probability p), or the NAK is (p, when the reverse path
    is lossy): C gains p T/t per such cause, T/t the interval in packet times. Losses
    within a recovery are otherwise free, so this holds beyond p C << 1; it
    neglects the stalls' own overlaps, which matter only for p >~ 1e-2."""
    c = in_flight_at_nak()
    if recovery == "go_back_0":
        c += (message_packets(megabytes) - 1) / 2 + rto_restarts(megabytes)
    causes = 2 if placement == "both" else 1
    c += causes * rate * NAK_INTERVAL_S / packet_time()
    return 1 / (1 + rate / (1 - rate) * c)


def load(sweep, placement: str, rates: list[float]) -> dict[float, list[float]]:
    """Goodput (fraction of line rate) per loss rate, one value per seed."""
    by_queue = {queue(p, placement): p for p in rates}
    flows = load_flows(sweep)
    out: dict[float, list[float]] = {}
    for row in flows.iter_rows(named=True):
        out.setdefault(by_queue[row["switch.queue"]], []).append(
            row["mean_throughput_bps"] / LINE_BPS
        )
    return dict(sorted(out.items()))


def counters(sweep, placement: str, rates: list[float]) -> dict[float, dict[str, int]]:
    """RoCE recovery counters and random losses, summed over seeds, per loss rate."""
    by_queue = {queue(p, placement): p for p in rates}
    keys = ("nak_go_backs", "retransmitted_packets", "naks_suppressed", "timeouts")
    out: dict[float, dict[str, int]] = {}
    for run in sweep.runs():
        s = json.loads((run.out / "summary.json").read_text())
        acc = out.setdefault(
            by_queue[run.params["switch.queue"]], dict.fromkeys(keys, 0)
        )
        for k in keys:
            acc[k] += s["roce"][k]
        acc["random_losses"] = (
            acc.get("random_losses", 0) + s["totals"]["random_losses"]
        )
    return dict(sorted(out.items()))


def mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def main() -> int:
    args = parse_args(
        __doc__, HERE, quick=f"loss rates {QUICK_RATES}, one seed, 50 ms runs"
    )
    rates = QUICK_RATES if args.quick else RATES
    seeds = SEEDS[:1] if args.quick else SEEDS
    common = {"stop.time": "50ms"} if args.quick else {}

    goodput: dict[tuple[str, str, int], dict[float, list[float]]] = {}
    recovery_counters = {}
    cases = [
        (pl, rec, DEFAULT_MB)
        for pl in ("both", "data")
        for rec in ("go_back_n", "go_back_0")
    ]
    cases += [("both", "go_back_0", mb) for mb in SIZES_MB if mb != DEFAULT_MB]
    for placement, recovery, mb in cases:
        fixed = common | {
            "transport.roce.recovery": recovery,
            "transport.roce.message_size": f"{mb}MB",
        }
        if placement == "data":
            fixed["transport.roce.ack_class"] = 1
        sweep = run_case(
            args,
            HERE / "scenario.toml",
            f"{placement}-{recovery}-{mb}MB",
            fixed,
            seeds=seeds,
            grid={"switch.queue": [queue(p, placement) for p in rates]},
        )
        goodput[placement, recovery, mb] = load(sweep, placement, rates)
        recovery_counters[f"{placement}, {recovery}, {mb} MB"] = counters(
            sweep, placement, rates
        )

    args.results.mkdir(parents=True, exist_ok=True)
    plot(goodput, args.results / "e12.png")

    def rel(placement: str, recovery: str, p: float, mb: int = DEFAULT_MB) -> float:
        """Mean goodput at loss p / mean lossless goodput."""
        g = goodput[placement, recovery, mb]
        return mean(g[p]) / mean(g[0.0])

    gbn_1e3 = rel("both", "go_back_n", 1e-3)
    gb0_over_gbn = mean(goodput["both", "go_back_0", DEFAULT_MB][1e-3]) / mean(
        goodput["both", "go_back_n", DEFAULT_MB][1e-3]
    )
    gbn_1e2 = rel("both", "go_back_n", 1e-2)
    worst = max(
        abs(rel(pl, rec, p, mb) - model(p, rec, pl, mb))
        for (pl, rec, mb) in goodput
        for p in rates
        if p > 0
    )
    w = in_flight_at_nak()
    n1e3 = recovery_counters[f"both, go_back_n, {DEFAULT_MB} MB"][1e-3]
    measured_w = n1e3["retransmitted_packets"] / max(1, n1e3["nak_go_backs"])
    model_note = (
        "model (not the paper: its §7 is missing): goodput / lossless = 1/(1 + p/(1-p) C), "
        f"C the packet times a lost data packet costs: W = {w} (the packets sent until the "
        "NAK arrives) for go-back-N, the textbook 1/(1 + p W); go-back-0 adds the replay of "
        "the message up to the loss, (M-1)/2, so it collapses as p M grows, and the "
        "timeout's restarts of replays longer than the RTO (16 MB messages); both add p x "
        "the 500 us NAK interval per stall cause (the resend lost again; the NAK lost, with "
        "loss both ways)"
    )
    passed = write_result(
        args.results,
        experiment="dcqcn-e12-loss",
        figure="DCQCN SIGCOMM'15, E12 (§7, unverified: the section is missing from the seed text)",
        setup=f"single 40 Gbps switch, 1 us links, one RoCE WRITE flow (one QP) of back-to-back "
        f"{DEFAULT_MB} MB messages (1 and 16 MB for the size series), MTU 1500, ACK every "
        f"packet, NAK interval 500 us, RTO 1.05 ms, DCQCN off (no congestion: it isolates "
        f"recovery); random per-packet loss at both switch ports (data and ACK/NAK paths), "
        f"or on the data class only; loss rates {rates}; {len(seeds)} seed(s) x "
        f"{common.get('stop.time', '500ms')}, goodput measured after 1 ms"
        + (" (QUICK)" if args.quick else ""),
        quantities=[
            Quantity(
                "go-back-N at 1e-3 loss (both ways): goodput / lossless; reference = "
                "model, no paper value",
                round(model(1e-3, "go_back_n", "both", DEFAULT_MB), 4),
                round(gbn_1e3, 4),
                0.02,
            ),
            Quantity(
                f"go-back-0 / go-back-N goodput at 1e-3 loss, {DEFAULT_MB} MB messages "
                "(below 1: go-back-0 falls behind); reference = model, trend only",
                round(
                    model(1e-3, "go_back_0", "both", DEFAULT_MB)
                    / model(1e-3, "go_back_n", "both", DEFAULT_MB),
                    4,
                ),
                round(gb0_over_gbn, 4),
                0.1,
            ),
            Quantity(
                "go-back-N at 1e-2 loss (both ways): goodput / lossless, with the NAK "
                "interval's stalls; reference = model",
                round(model(1e-2, "go_back_n", "both", DEFAULT_MB), 4),
                round(gbn_1e2, 4),
                0.05,
            ),
            Quantity(
                "largest difference, simulated against model, of goodput / lossless over every "
                "case and loss rate",
                0.0,
                round(worst, 4),
                0.05,
            ),
        ],
        unverified="The DCQCN paper's §7 (non-congestion loss and RoCEv2 recovery) is "
        "not in the seed text (spec §0 and E12): no paper number exists to compare with. "
        "Each reference is the analytic model of run.py's `model`, and the verdicts say "
        "whether the simulator agrees with it, not with the paper.",
        reference=model_note,
        also_measured={
            "goodput_fraction_of_line_rate": {
                f"{pl}, {rec}, {mb} MB": {
                    f"{p:g}": round(mean(g), 4) for p, g in by_p.items()
                }
                for (pl, rec, mb), by_p in goodput.items()
            },
            "lossless_goodput_model": round(lossless_goodput(), 4),
            "model_goodput_over_lossless": {
                f"{pl}, {rec}, {mb} MB": {
                    f"{p:g}": round(model(p, rec, pl, mb), 4) for p in rates
                }
                for (pl, rec, mb) in goodput
            },
            "w_packets_model": w,
            "resent_per_nak_go_back_go_back_n_1e-3 (W, plus the stalls' long go-backs)": round(
                measured_w, 2
            ),
            "message_packets": {f"{mb} MB": message_packets(mb) for mb in SIZES_MB},
            "recovery_counters_summed_over_seeds": {
                case: {f"{p:g}": c for p, c in by_p.items()}
                for case, by_p in recovery_counters.items()
            },
        },
        plot="e12.png",
        data="e12.csv",
    )
    print(
        f"go-back-N at 1e-3: {gbn_1e3:.4f} of lossless (model "
        f"{model(1e-3, 'go_back_n', 'both', DEFAULT_MB):.4f}); go-back-0/go-back-N at "
        f"1e-3: {gb0_over_gbn:.4f}; go-back-N at 1e-2: {gbn_1e2:.4f}; worst difference from the model "
        f"{worst:.4f}; W model {w}, measured {measured_w:.2f}: {'pass' if passed else 'FAIL'}"
    )
    return 0 if passed else 1


def plot(goodput, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # Loss rate 0 cannot sit on a log axis: draw it a decade left of the smallest rate.
    positive = sorted({p for by_p in goodput.values() for p in by_p if p > 0})
    zero_x = positive[0] / 10

    def x(p: float) -> float:
        return p if p > 0 else zero_x

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4.2))
    colours = {"go_back_n": "tab:blue", "go_back_0": "tab:orange"}
    names = {"go_back_n": "go-back-N", "go_back_0": "go-back-0"}
    rows = []
    dense = [zero_x] + [positive[0] * 10 ** (i / 20) for i in range(20 * 4 + 1)]
    dense = [d for d in dense if d <= positive[-1] * 1.01]
    for (pl, rec, mb), by_p in goodput.items():
        for p, g in by_p.items():
            rows.append(
                (pl, rec, mb, p, mean(g), min(g), max(g), len(g), model(p, rec, pl, mb))
            )
        if mb != DEFAULT_MB:
            continue
        ps = list(by_p)
        style = (
            {"marker": "o", "ls": "-"}
            if pl == "both"
            else {"marker": "s", "ls": ":", "mfc": "none"}
        )
        where = "loss both ways" if pl == "both" else "loss on data only"
        ax.errorbar(
            [x(p) for p in ps],
            [mean(by_p[p]) for p in ps],
            yerr=[
                [max(0.0, mean(by_p[p]) - min(by_p[p])) for p in ps],
                [max(0.0, max(by_p[p]) - mean(by_p[p])) for p in ps],
            ],
            color=colours[rec],
            lw=1.2,
            capsize=2,
            label=f"{names[rec]}, {where}",
            **style,
        )
        # The placements' models differ visibly only for go-back-N (NAK losses).
        if pl == "both" or rec == "go_back_n":
            base = mean(by_p[0.0])
            ax.plot(
                [x(d) for d in dense],
                [base * model(d if d != zero_x else 0.0, rec, pl, mb) for d in dense],
                color=colours[rec],
                lw=0.8,
                ls="--" if pl == "both" else "-.",
                label=f"{names[rec]}, model ({where})",
            )
    ax.set_xscale("log")
    ticks = [zero_x, *positive]
    ax.set_xticks(ticks, ["0"] + [f"{p:g}" for p in positive])
    ax.minorticks_off()
    ax.set_ylim(0, 1)
    ax.set_xlabel("random loss rate per packet")
    ax.set_ylabel("goodput (fraction of 40 Gbps)")
    ax.set_title(f"RoCE, {DEFAULT_MB} MB WRITEs, one 40 Gbps switch, DCQCN off")
    ax.legend(fontsize=7, loc="lower left")

    # Go-back-0 against loss rate x message size: the sizes fall on one curve, but
    # for messages whose replay outlasts the timeout.
    pm = [10 ** (i / 10) for i in range(-30, 31)]
    bx.plot(pm, [1 / (1 + v / 2) for v in pm], "k--", lw=0.8, label="1 / (1 + pM/2)")
    for i, mb in enumerate(SIZES_MB):
        by_p = goodput.get(("both", "go_back_0", mb))
        if not by_p:
            continue
        m = message_packets(mb)
        ps = [p for p in by_p if p > 0]
        base = mean(by_p[0.0])
        colour = f"C{i + 2}"
        bx.plot(
            [p * m for p in ps],
            [mean(by_p[p]) / base for p in ps],
            marker="os^"[i],
            ls="none",
            color=colour,
            label=f"{mb} MB ({m} packets)",
        )
        fine = [v / m for v in pm if v / m < 0.02]
        restarts = rto_restarts(mb) > 0
        bx.plot(
            [p * m for p in fine],
            [model(p, "go_back_0", "both", mb) for p in fine],
            color=colour,
            lw=0.8,
            ls="-" if restarts else ":",
            label=f"{mb} MB, model"
            + (" (timeout restarts the replay)" if restarts else ""),
        )
    bx.set_xscale("log")
    bx.set_ylim(0, 1.05)
    bx.set_xlabel("loss rate x packets per message (p M)")
    bx.set_ylabel("goodput / lossless goodput")
    bx.set_title("go-back-0 against p x message size (loss both ways)")
    bx.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    with open(path.with_suffix(".csv"), "w") as f:
        f.write(
            "placement,recovery,message_mb,loss_rate,goodput_mean,goodput_min,goodput_max,"
            "seeds,model_goodput_over_lossless\n"
        )
        f.writelines(
            f"{pl},{rec},{mb},{p:g},{g:.6f},{lo:.6f},{hi:.6f},{n},{mdl:.6f}\n"
            for pl, rec, mb, p, g, lo, hi, n, mdl in rows
        )


if __name__ == "__main__":
    sys.exit(main())
