#!/usr/bin/env bash
# Proves that a change meant not to change results does not: runs every line of
# scripts/same_outputs.list (every bundled and experiment scenario, long ones cut
# short, plus the large-network cases) with two builds of eqds-sim and compares
# every output file but perf.json, byte for byte.
#
#   scripts/same_outputs.sh BASE_BIN NEW_BIN [OUTDIR]
#
# BASE_BIN and NEW_BIN are eqds-sim binaries (build the base at its commit in a
# worktree, or copy target/release/eqds-sim aside before changing anything).
# Prints SAME, DIFF or FAIL per line and exits non-zero unless every line is SAME.
# About 10 minutes on two cores.
set -uo pipefail
. "$(dirname "$0")/two_builds.sh"
two_builds "$0" "$@"
out=$(realpath -m "${3:-/tmp/same_outputs}")
cd "$(dirname "$0")/.."
rm -rf "$out"
mkdir -p "$out/base" "$out/new"
n=0
bad=0
while read -r file args; do
  case "$file" in '' | '#'*) continue ;; esac
  n=$((n + 1))
  name=$(printf "%02d" "$n")_$(echo "$file" | tr '/' '_' | sed 's/.toml$//')
  failed=0
  for build in base new; do
    bin=$base
    [ "$build" = new ] && bin=$new
    if ! eval "\"$bin\" run \"$file\" -q --out \"$out/$build/$name\" $args" > "$out/$build/$name.log" 2>&1; then
      echo "FAIL $build $file $args (see $out/$build/$name.log)"
      failed=1
    fi
  done
  if [ $failed = 1 ]; then
    bad=$((bad + 1))
  elif diff -r -x perf.json "$out/base/$name" "$out/new/$name" > "$out/$name.diff" 2>&1; then
    echo "SAME $file $args"
  else
    echo "DIFF $file $args (see $out/$name.diff)"
    bad=$((bad + 1))
  fi
done < scripts/same_outputs.list
echo "$((n - bad)) of $n SAME"
[ $bad = 0 ]
