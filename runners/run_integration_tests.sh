#!/usr/bin/env bash
# Runs the suite's rostest files (launch/test/suite_*.test) in the headless image, as its
# non-root user; rostest's JUnit XML and the logs come back to build/docker/rostest/.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=runners/docker_common.sh
source "$ROOT/runners/docker_common.sh"

usage() {
  cat <<USAGE
Usage: runners/run_integration_tests.sh [--variant prod|dev] [--test NAME]... [--repeat N] [--results DIR]

In gem-rs:headless-<variant> (runners/docker_build.sh builds it):
  default      rostest every launch/test/suite_*.test (e-stop before serving, every fault
               then completion, node deaths)
  --test NAME  only launch/test/<NAME>.test (repeatable), e.g. --test suite_simulator_death
  --repeat N   run them N times (default 1)
  --results DIR  where under build/docker/rostest/ the results go (default integration)

rostest's JUnit XML (test_results/) and the roslaunch logs (log/) are copied to
build/docker/rostest/<DIR>/ whatever the outcome. Exit status: non-zero when any
test failed.

Natively (no Docker): source runners/env.sh && rostest gem_bringup suite_estop_before_serving.test
USAGE
}

variant=prod
repeat=1
results=integration
tests=()
while [ $# -gt 0 ]; do
  case "$1" in
    --variant) variant="${2:?--variant needs a value}"; shift 2 ;;
    --test) tests+=("${2:?--test needs a value}"); shift 2 ;;
    --repeat) repeat="${2:?--repeat needs a value}"; shift 2 ;;
    --results) results="${2:?--results needs a value}"; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "error: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
gem_check_variant "$variant"
gem_check_repeat "$repeat"
for t in "${tests[@]}"; do
  if [ ! -f "$ROOT/launch/test/$t.test" ]; then
    echo "error: no launch/test/$t.test" >&2
    exit 2
  fi
done
if [ ${#tests[@]} -eq 0 ]; then
  for f in "$ROOT"/launch/test/suite_*.test; do
    tests+=("$(basename "$f" .test)")
  done
fi
gem_require_docker
image=$(gem_image headless "$variant")
gem_require_image "$image" headless "$variant"
gem_run_rostests "$image" "$ROOT/build/docker/rostest/$results" "$repeat" "${tests[@]}"
