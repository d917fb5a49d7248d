#!/usr/bin/env bash
# The main job, headless: the whole suite on a private master (gem_sim owning /clock at
# 5x, mock_signals, state_manager, status_overlay, pure_pursuit, task_planner serving the
# GEM track), driven by `gemctl demo`: an e-stop at 30 % of the lap and a battery fault at
# 60 %, injected with dynamic_reconfigure's dynparam and cleared after a hold; live
# progress; a summary (lap time, cross-track error, detection and stop latencies) and a
# trajectory plot in build/demo/. Exits 0 only if the lap completed and both faults
# stopped the car.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash runners/setup.sh
# shellcheck source=runners/env.sh
source runners/env.sh

port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export ROS_MASTER_URI="http://127.0.0.1:${port}"
out="$ROOT/build/demo"
mkdir -p "$out"
launch_pid=""
cleanup() {
  if [ -n "$launch_pid" ]; then
    kill -INT "$launch_pid" 2>/dev/null || true
    wait "$launch_pid" 2>/dev/null || true
  fi
}
trap cleanup EXIT
echo "[demo] the suite on $ROS_MASTER_URI (roslaunch log: $out/roslaunch.log)"
echo "[demo] try, in another shell: source runners/env.sh; export ROS_MASTER_URI=$ROS_MASTER_URI; gemctl status"
roslaunch -p "$port" gem_bringup integration_run.launch speedup:=5 waypoints:=gem_track.csv \
  state_timeout_ms:=3000 system_state_timeout_s:=3 pose_timeout_s:=3 >"$out/roslaunch.log" 2>&1 &
launch_pid=$!
if ! gemctl demo --track launch/waypoints/gem_track.csv --out "$out" --timeout 600; then
  echo "[demo] FAILED; the nodes' output is in $out/roslaunch.log" >&2
  exit 1
fi
