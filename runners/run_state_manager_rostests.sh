#!/usr/bin/env bash
# Runs the state manager's rostest file (launch/test/state_manager.test) in the headless
# image: the node under rostest with the scenario runner stepping /clock.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=runners/docker_common.sh
source "$ROOT/runners/docker_common.sh"

usage() {
  cat <<USAGE
Usage: runners/run_state_manager_rostests.sh [--variant prod|dev] [--repeat N]

Runs 'rostest gem_bringup state_manager.test' in gem-rs:headless-<variant>, N times
(default 1); JUnit results are printed by rostest. Exit status: rostest's.

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
    *) echo "error: unknown option '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
gem_check_variant "$variant"
case "$repeat" in
  '' | *[!0-9]* | 0) echo "error: --repeat must be a positive integer, not '$repeat'" >&2; exit 2 ;;
esac
gem_require_docker
image=$(gem_image headless "$variant")
gem_require_image "$image" headless "$variant"
name=$(gem_container_name rostest)
trap 'gem_cleanup_container "$name"' EXIT
# shellcheck disable=SC2016 # expanded inside the container
docker run --rm --name "$name" --env "REPEAT=$repeat" "$image" bash -c '
  for i in $(seq "$REPEAT"); do
    echo "[rostest] run $i of $REPEAT"
    rostest gem_bringup state_manager.test || exit 1
  done'
