#!/usr/bin/env bash
# Every check CI runs: set-up (installs what is missing), formatting, clippy, and all tests
# (gem_core unit tests, then the end-to-end tests against real rosmasters).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
start=$(date +%s)

bash runners/setup.sh
# shellcheck source=runners/env.sh
source runners/env.sh

echo "[test] cargo fmt --check"
cargo fmt --all -- --check
echo "[test] cargo clippy --all-targets -D warnings"
cargo clippy --workspace --all-targets --quiet -- -D warnings
echo "[test] shellcheck"
shellcheck runners/*.sh .ci/run
echo "[test] cargo test --release --workspace"
cargo test --release --workspace -- --nocapture

echo "[test] all checks passed in $(( $(date +%s) - start )) s"
