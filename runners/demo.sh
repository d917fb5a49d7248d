#!/usr/bin/env bash
# The main job. Until the headless GEM demo exists (see the README), this runs the wire
# interop smoke: our Rust types against Debian's rostopic/rosservice on a real master.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash runners/setup.sh
# shellcheck source=runners/env.sh
source runners/env.sh
echo "[demo] interop smoke (the headless GEM demo is not built yet)"
cargo test --release --quiet --test interop
