# shellcheck shell=bash
# Shared by the runners/docker_*.sh and run_*/launch_* scripts: argument checks and clear
# errors when Docker or X11 is missing. Source it; it defines functions only.

# The registry-free base image every gem-rs image starts from (runners/docker_base.sh).
GEM_BASE_IMAGE="${GEM_BASE_IMAGE:-gem-rs/debian:12}"
export GEM_BASE_IMAGE
# The gazebo image's base: from a registry, so it must have been loaded by hand.
GEM_NOETIC_IMAGE=ros:noetic-ros-base-focal
# The label on everything our scripts and tests create (images, containers, networks,
# volumes), so that leftovers of a crashed run can be found and removed.
GEM_LABEL=org.gem-rs
export GEM_NOETIC_IMAGE GEM_LABEL

# The uid and gid the image user gets: the caller's, or 1000 for root (the image user is
# never root).
gem_image_ids() {
  local uid gid
  uid=$(id -u)
  gid=$(id -g)
  [ "$uid" -ne 0 ] || uid=1000
  [ "$gid" -ne 0 ] || gid=1000
  echo "$uid $gid"
}

# The image tag of a target (headless|gazebo) and variant (prod|dev).
gem_image() {
  printf 'gem-rs:%s-%s' "$1" "$2"
}

gem_check_variant() {
  case "$1" in
    prod | dev) ;;
    *) echo "error: --variant must be prod or dev, not '$1'" >&2; exit 2 ;;
  esac
}

gem_check_repeat() {
  case "$1" in
    '' | *[!0-9]* | 0) echo "error: --repeat must be a positive integer, not '$1'" >&2; exit 2 ;;
  esac
}

# Fails with a clear message unless the docker CLI exists and its daemon answers.
gem_require_docker() {
  if ! command -v docker >/dev/null 2>&1; then
    echo "error: docker not found on PATH; install Docker Engine (https://docs.docker.com/engine/install/) or run the suite natively: bash runners/demo.sh" >&2
    exit 3
  fi
  if ! docker info >/dev/null 2>&1; then
    echo "error: the Docker daemon does not answer (is it running, and may $(id -un) use it?)" >&2
    exit 3
  fi
}

# Fails unless `image` exists locally, naming the command that builds it.
gem_require_image() {
  if ! docker image inspect "$1" >/dev/null 2>&1; then
    echo "error: image $1 not found; build it with: bash runners/docker_build.sh --target $2 --variant $3" >&2
    exit 3
  fi
}

# Fails with a clear message unless an X11 display is reachable for Gazebo and RViz.
gem_require_x11() {
  if [ -z "${DISPLAY:-}" ]; then
    echo "error: DISPLAY is not set: Gazebo's and RViz's windows need an X11 display (or pass --no-gui for a headless Gazebo)" >&2
    exit 4
  fi
  if [ ! -d /tmp/.X11-unix ]; then
    echo "error: /tmp/.X11-unix not found: no local X11 server to forward" >&2
    exit 4
  fi
}

# A container name unique to this invocation (removed by the trap below, never by pattern).
gem_container_name() {
  printf 'gem-rs-%s-%s' "$1" "$$"
}

# The owner label of what this invocation creates: this machine and this process. A run
# that ended without cleaning up leaves an owner whose process is gone.
gem_owner() {
  printf '%s:%s' "$(hostname)" "$$"
}

# Whether process PID is running: it exists and is not a zombie (a process just killed
# stays one until its parent reaps it).
gem_running() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  [ "${stat%% *}" != Z ]
}

# Removes what runs that ended without cleaning up left behind: containers, then networks
# and volumes, labelled with an owner on this machine whose process is gone.
gem_remove_leftovers() {
  local kind id owner pid removed=0 list
  for kind in container network volume; do
    list=(docker "$kind" ls --filter "label=$GEM_LABEL.owner" --format "{{.Name}} {{.Label \"$GEM_LABEL.owner\"}}")
    [ "$kind" != container ] || list=(docker ps --all --filter "label=$GEM_LABEL.owner" --format "{{.ID}} {{.Label \"$GEM_LABEL.owner\"}}")
    while read -r id owner; do
      pid=${owner##*:}
      if [ -z "$id" ] || [ "${owner%:*}" != "$(hostname)" ]; then continue; fi
      case "$pid" in '' | *[!0-9]*) continue ;; esac
      ! gem_running "$pid" || continue
      if [ "$kind" = container ]; then
        docker rm -f --volumes "$id" >/dev/null 2>&1 || true
      else
        docker "$kind" rm "$id" >/dev/null 2>&1 || true
      fi
      removed=$((removed + 1))
    done < <("${list[@]}" 2>/dev/null)
  done
  [ "$removed" -eq 0 ] || echo "[docker] removed $removed leftovers of earlier runs (label $GEM_LABEL.owner)" >&2
}

# Runs rostest on launch/test/<NAME>.test for each NAME given, `repeat` times, in the
# headless image as its user, and copies rostest's JUnit XML and the roslaunch logs to
# `results` on the host (owned by the caller: docker cp writes as the caller) before the
# container goes, whatever the outcome. Returns rostest's failure if any.
# Usage: gem_run_rostests IMAGE RESULTS REPEAT NAME...
gem_run_rostests() {
  local image="$1" results="$2" repeat="$3" status=0
  shift 3
  gem_remove_leftovers
  GEM_TEST_CONTAINER=$(gem_container_name rostest)
  trap 'gem_cleanup_container "$GEM_TEST_CONTAINER"' EXIT
  # shellcheck disable=SC2016 # expanded inside the container
  docker run --name "$GEM_TEST_CONTAINER" --label "$GEM_LABEL=test" \
    --label "$GEM_LABEL.owner=$(gem_owner)" --env "REPEAT=$repeat" "$image" bash -c '
      for i in $(seq "$REPEAT"); do
        for t in "$@"; do
          echo "[rostest] $t.test (run $i of $REPEAT)"
          rostest gem_bringup "$t.test" || exit 1
        done
      done' rostests "$@" || status=$?
  rm -rf "$results"
  mkdir -p "$results"
  docker cp "$GEM_TEST_CONTAINER:/opt/gem-rs/build/ros_home/test_results" "$results/" >/dev/null 2>&1 || true
  docker cp "$GEM_TEST_CONTAINER:/opt/gem-rs/build/ros_home/log" "$results/" >/dev/null 2>&1 || true
  echo "[rostest] JUnit XML and logs: $results"
  gem_cleanup_container "$GEM_TEST_CONTAINER"
  return "$status"
}

# Removes exactly our container if it is still there (e.g. after Ctrl-C). As for a native
# launch: SIGINT first (roslaunch stops its nodes, which unregister), the container killed
# 6 s later at the latest (docker stop --signal needs Docker 23 or newer; older engines
# fall back to SIGTERM), then removed.
gem_cleanup_container() {
  docker stop --signal INT --time 6 "$1" >/dev/null 2>&1 ||
    docker stop --time 6 "$1" >/dev/null 2>&1 || true
  docker rm -f "$1" >/dev/null 2>&1 || true
}
