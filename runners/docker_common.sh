# shellcheck shell=bash
# Shared by the runners/docker_*.sh and run_*/launch_* scripts: argument checks and clear
# errors when Docker or X11 is missing. Source it; it defines functions only.

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

# Removes exactly our container if it is still there (e.g. after Ctrl-C). As for a native
# launch: SIGINT first (roslaunch stops its nodes, which unregister), the
# container killed 6 s later at the latest (docker stop --signal needs Docker 23 or newer;
# older engines fall back to SIGTERM), then removed.
gem_cleanup_container() {
  docker stop --signal INT --time 6 "$1" >/dev/null 2>&1 ||
    docker stop --time 6 "$1" >/dev/null 2>&1 || true
  docker rm -f "$1" >/dev/null 2>&1 || true
}
