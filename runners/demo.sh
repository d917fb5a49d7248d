#!/usr/bin/env bash
# The main job. The full headless GEM demo (simulator, controllers, planner) is not built
# yet; until it is, this shows what exists, against real ROS 1 tools:
#   1. the wire interop smoke (our Rust types with rostopic/rosservice), and
#   2. the state manager's scenarios under rostest, on sim time.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash runners/setup.sh
# shellcheck source=runners/env.sh
source runners/env.sh
echo "[demo] 1/2 interop smoke (the headless GEM demo is not built yet)"
cargo test --release --quiet --test interop
echo "[demo] 2/2 state manager scenarios: rostest gem_bringup state_manager.test"
rostest gem_bringup state_manager.test
