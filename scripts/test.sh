#!/usr/bin/env bash
# Runs every test of the project. Installs what the tests need on a fresh machine.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null 2>&1; then
    echo "cargo is required (install Rust with rustup)" >&2
    exit 1
fi

cargo test --release --workspace
