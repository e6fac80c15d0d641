#!/usr/bin/env bash
# The whole test suite: unit, integration, the kubectl and Python client suites.
set -euo pipefail
cd "$(dirname "$0")/.."
# Incremental artifacts double the target dir; CI builds once from a clean clone.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
./scripts/setup.sh
# Drift fails the suite: formatting, and clippy with warnings as errors (the workspace lints included).
cargo fmt --all --check
cargo clippy --workspace --all-targets -- -D warnings
cargo build --workspace --bins
if command -v cargo-nextest >/dev/null 2>&1; then
  cargo nextest run --workspace --no-fail-fast
else
  cargo test --workspace --no-fail-fast
fi
