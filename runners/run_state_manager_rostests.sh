#!/usr/bin/env bash
# Runs the state manager's rostest file (launch/test/state_manager.test) in the headless
# image, as its non-root user: the node under rostest with the scenario runner stepping
# /clock. JUnit XML and logs come back to build/docker/rostest/state_manager/.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

case "${1:-}" in
  -h | --help)
    cat <<USAGE
Usage: runners/run_state_manager_rostests.sh [--variant prod|dev] [--repeat N]

Runs 'rostest gem_bringup state_manager.test' in gem-rs:headless-<variant>, N times
(default 1): runners/run_integration_tests.sh --test state_manager. rostest's JUnit XML
(test_results/) and the logs (log/) are copied to build/docker/rostest/state_manager/
whatever the outcome. Exit status: non-zero when any run failed.

Natively (no Docker): source runners/env.sh && rostest gem_bringup state_manager.test
USAGE
    exit 0
    ;;
esac
exec bash "$ROOT/runners/run_integration_tests.sh" --test state_manager --results state_manager "$@"
