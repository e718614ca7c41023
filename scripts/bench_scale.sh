#!/usr/bin/env bash
# Per-event cost against network size (BENCHMARKS.md, "Per-event cost against network
# size"): the EQDS (200 us) and NDP (300 us) permutations of scenarios/ at each k,
# with two builds of eqds-sim in interleaved pairs, the order alternating.
#
#   scripts/bench_scale.sh BASE_BIN NEW_BIN ["KS"] [PAIRS]     (defaults "8 16 24 32", 3)
#
# One line per run: protocol, k, build, pair, wall seconds, peak RSS (KB), events,
# events/s, then events and events/s past a 100 us warm-up (perf.json's
# `after_warmup`: without building the network and the start-up transient; "-" for
# a build older than that). Compare the builds pair by pair: this machine's speed
# drifts within minutes. Run it on an otherwise idle machine.
set -euo pipefail
. "$(dirname "$0")/two_builds.sh"
two_builds "$0" "$@"
declare -A bin=([base]=$base [new]=$new)
ks=${3:-"8 16 24 32"}
pairs=${4:-3}
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for k in $ks; do
  for proto in eqds ndp; do
    scenario=scenarios/$proto-permutation-100g.toml
    stop=200us
    [ "$proto" = ndp ] && stop=300us
    for pair in $(seq 1 "$pairs"); do
      order="base new"
      [ $((pair % 2)) = 0 ] && order="new base"
      for build in $order; do
        /usr/bin/time -f "%e %M" -o "$tmp/time" "${bin[$build]}" run "$scenario" -q \
          --set topology.k="$k" --set stop.time=$stop --set stop.warmup=100us --out "$tmp/out" > /dev/null
        read -r wall rss < "$tmp/time"
        perf=$(python3 -c "import json; d = json.load(open('$tmp/out/perf.json')); w = d.get('after_warmup') or {}; print(d['events'], round(d['events_per_second']), w.get('events', '-'), round(w['events_per_second']) if w else '-')")
        echo "$proto $k $build $pair $wall $rss $perf"
      done
    done
  done
done
