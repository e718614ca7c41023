#!/usr/bin/env bash
# Two builds of eqds-sim on the same scenario at the same time, one per core, for
# differences of a few percent: both runs see the same machine at the same moment,
# so this machine's drift (up to 30% within minutes) cancels in their ratio. They
# also share the memory system, so read the ratio, not the absolute rates.
#
#   scripts/bench_side_by_side.sh BASE_BIN NEW_BIN [ROUNDS] [ARGS...]
#
# Default ARGS: the EQDS permutation at k=32 for 50 us. One line per round: both
# runs' events/s past warm-up (perf.json's `after_warmup`, or the whole run's for a
# build without it), new/base, and whether both processed the same events.
set -euo pipefail
. "$(dirname "$0")/two_builds.sh"
two_builds "$0" "$@"
rounds=${3:-3}
shift $(($# < 3 ? $# : 3))
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(scenarios/eqds-permutation-100g.toml --set topology.k=32 --set stop.time=50us)
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rate='import json, sys
d = json.load(open(sys.argv[1]))
w = d.get("after_warmup") or d
print(d["events"], w["events_per_second"])'
for round in $(seq 1 "$rounds"); do
  "$base" run "${args[@]}" -q --out "$tmp/base" > /dev/null &
  "$new" run "${args[@]}" -q --out "$tmp/new" > /dev/null &
  wait
  read -r eb rb < <(python3 -c "$rate" "$tmp/base/perf.json")
  read -r en rn < <(python3 -c "$rate" "$tmp/new/perf.json")
  python3 -c "print('round $round: base %.3f M/s, new %.3f M/s, new/base %.3f, same events: %s' % ($rb / 1e6, $rn / 1e6, $rn / $rb, $eb == $en))"
done
