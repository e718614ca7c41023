#!/usr/bin/env bash
# Runs every test of the project. Installs what the tests need on a fresh machine.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null 2>&1; then
    echo "cargo is required (install Rust with rustup)" >&2
    exit 1
fi

# The simulator's timing of events by kind (`[output] event_costs`) is a build
# feature, off by default; its tests first, so that the workspace's build below
# leaves the default binary in place for the Python tests.
cargo test --release -p eqds-sim --features event-costs --lib --test perf_json event_costs

cargo test --release --workspace

# The daemon's and the switch's binaries, for their testbed tests.
cargo build --release -p eqdsd -p eqds-switch

# The real testbed's tests (scripts/testbed.sh, eqdsd) need iperf3, ping and nft (loss
# injection where the kernel has no sch_netem) from Debian's packages; install them
# only when missing (as root, never prompting).
if ! command -v iperf3 >/dev/null 2>&1 || ! command -v ping >/dev/null 2>&1 ||
    ! command -v nft >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq iperf3 iputils-ping nftables </dev/null
fi

# The experiment tooling (eqds_lab) and its tests, Ray included.
python3 -m pip install --quiet --disable-pip-version-check -e "python/eqds_lab[test,ray]"
EQDS_SIM="$PWD/target/release/eqds-sim" python3 -m pytest -q python/eqds_lab/tests
