#!/usr/bin/env bash
# Runs the suite beside the GEM e2 Gazebo world in the gazebo image, with Gazebo's and
# RViz's windows forwarded to the host's X11 display.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=runners/docker_common.sh
source "$ROOT/runners/docker_common.sh"

usage() {
  cat <<USAGE
Usage: runners/launch_integration_run.sh [options] [-- extra roslaunch arguments]

Starts gem-rs:gazebo-<variant>: roslaunch gem_bringup integration_run.launch sim:=gazebo
(Gazebo with the GEM e2 track world, mock_signals, state_manager, a controller, the task
planner serving the GEM track), RViz with launch/rviz/gem.rviz.

Options:
  --variant V        prod | dev (default: prod)
  --controller C     pure_pursuit | stanley (default: pure_pursuit)
  --waypoints F      waypoint file under launch/waypoints to serve (default: gem_track.csv;
                     empty: serve later with rosservice)
  --no-gui           Gazebo without its window (RViz off too); no X11 needed
  --host-network     share the host's network (to reach the master from host tools)
  -h, --help         this text

Example: runners/launch_integration_run.sh --controller stanley -- health_monitor:=false
USAGE
}

variant=prod
controller=pure_pursuit
waypoints=gem_track.csv
gui=true
network=()
launch_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --variant) variant="${2:?--variant needs a value}"; shift 2 ;;
    --controller) controller="${2:?--controller needs a value}"; shift 2 ;;
    --waypoints) waypoints="${2?--waypoints needs a value}"; shift 2 ;;
    --no-gui) gui=false; shift ;;
    --host-network) network=(--network host); shift ;;
    -h | --help) usage; exit 0 ;;
    --) shift; launch_args+=("$@"); break ;;
    *) echo "error: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
gem_check_variant "$variant"
case "$controller" in
  pure_pursuit | stanley) ;;
  *) echo "error: --controller must be pure_pursuit or stanley, not '$controller'" >&2; exit 2 ;;
esac
# X11 first: it is the likelier thing to be missing on a machine that has Docker.
x11=()
if [ "$gui" = true ]; then
  gem_require_x11
  x11=(--env "DISPLAY=$DISPLAY" --volume /tmp/.X11-unix:/tmp/.X11-unix:ro)
  if [ -n "${XAUTHORITY:-}" ] && [ -f "$XAUTHORITY" ]; then
    x11+=(--volume "$XAUTHORITY:/tmp/.gem-xauth:ro" --env XAUTHORITY=/tmp/.gem-xauth)
  fi
  if [ -d /dev/dri ]; then
    x11+=(--device /dev/dri)
  fi
fi

gem_require_docker
image=$(gem_image gazebo "$variant")
gem_require_image "$image" gazebo "$variant"

name=$(gem_container_name integration)
trap 'gem_cleanup_container "$name"' EXIT
docker run --rm --interactive --tty --name "$name" "${network[@]}" "${x11[@]}" "$image" \
  roslaunch gem_bringup integration_run.launch sim:=gazebo "controller:=$controller" \
  "waypoints:=$waypoints" "rviz:=$gui" "gazebo_gui:=$gui" "${launch_args[@]}"
