#!/usr/bin/env bash
# Runs the state manager's rostest file (launch/test/state_manager.test) in the headless
# image, as its non-root user: the node under rostest with the scenario runner stepping
# /clock. JUnit XML and logs come back to build/docker/rostest/state_manager/.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=runners/docker_common.sh
source "$ROOT/runners/docker_common.sh"

usage() {
  cat <<USAGE
Usage: runners/run_state_manager_rostests.sh [--variant prod|dev] [--repeat N]

Runs 'rostest gem_bringup state_manager.test' in gem-rs:headless-<variant>, N times
(default 1). rostest's JUnit XML (test_results/) and the logs (log/) are copied to
build/docker/rostest/state_manager/ whatever the outcome. Exit status: non-zero when any
run failed.

Natively (no Docker): source runners/env.sh && rostest gem_bringup state_manager.test
USAGE
}

variant=prod
repeat=1
while [ $# -gt 0 ]; do
  case "$1" in
    --variant) variant="${2:?--variant needs a value}"; shift 2 ;;
    --repeat) repeat="${2:?--repeat needs a value}"; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "error: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
gem_check_variant "$variant"
gem_check_repeat "$repeat"
gem_require_docker
image=$(gem_image headless "$variant")
gem_require_image "$image" headless "$variant"
gem_run_rostests "$image" "$ROOT/build/docker/rostest/state_manager" "$repeat" state_manager
