#!/usr/bin/env bash
# Runs the integration tests headless in the headless image: the suite's rostest files
# (launch/test/suite_*.test), or with --all everything runners/test.sh runs.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=runners/docker_common.sh
source "$ROOT/runners/docker_common.sh"

usage() {
  cat <<USAGE
Usage: runners/run_integration_tests.sh [--variant prod|dev] [--all] [--test NAME]...

In gem-rs:headless-<variant>:
  default      rostest every launch/test/suite_*.test (e-stop before serving, every fault
               then completion, node deaths)
  --test NAME  only launch/test/<NAME>.test (repeatable), e.g. --test suite_simulator_death
  --all        runners/test.sh: fmt, clippy, unit and all end-to-end tests (as CI)

Natively (no Docker): source runners/env.sh && rostest gem_bringup suite_estop_before_serving.test
USAGE
}

variant=prod
all=false
tests=()
while [ $# -gt 0 ]; do
  case "$1" in
    --variant) variant="${2:?--variant needs a value}"; shift 2 ;;
    --all) all=true; shift ;;
    --test) tests+=("${2:?--test needs a value}"); shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "error: unknown option '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
gem_check_variant "$variant"
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
name=$(gem_container_name integration-tests)
trap 'gem_cleanup_container "$name"' EXIT
if [ "$all" = true ]; then
  docker run --rm --name "$name" "$image" bash runners/test.sh
else
  # shellcheck disable=SC2016 # expanded inside the container
  docker run --rm --name "$name" "$image" bash -c '
    for t in "$@"; do
      echo "[rostest] $t"
      rostest gem_bringup "$t.test" || exit 1
    done' rostests "${tests[@]}"
fi
