#!/usr/bin/env bash
# The main job, headless: the whole suite on a private master (gem_sim owning /clock at
# 5x, mock_signals, state_manager, status_overlay, pure_pursuit, task_planner serving the
# GEM track), driven by `gemctl demo`: an e-stop at 30 % of the lap and a battery fault at
# 60 %, injected with dynamic_reconfigure's dynparam and cleared after a hold; live
# progress; a summary (lap time, cross-track error, detection and stop latencies) and a
# trajectory plot in build/demo/. Exits 0 only if the lap completed and both faults
# stopped the car; on a failure it says which step failed and why, and exits within
# seconds. Extra arguments go to `gemctl demo` (e.g. --rounds 3, --hold-s 1); GEM_DEMO_OUT
# sets the output directory, GEM_DEMO_SPEEDUP the simulation's speed-up (default 5),
# GEM_DEMO_TIMEOUT_S the suite's timeouts (input staleness, system_state and pose in ROS
# time, and the clock stall in wall time; default 3 s), GEM_DEMO_TRACK the waypoint file in launch/waypoints (default gem_track.csv).
# The demo injects its faults through mock_signals (signals:=mock, on every platform).
# --pacmod runs the car's interfaces on the simulator (platform gem_e2_sim: gem_sim driven
# through the PACMod 2 topics by pacmod_bridge, the pose from its GNSS/INS solution
# through gnss_pose; docs/real-car.md), the car joining the track from the usual spawn
# pose, 2 m beside it, with the car's slow steering and the lqr law.
# --rviz opens RViz with launch/rviz/gem.rviz beside it (needs a display; without one, run
# the demo under `xvfb-run -a -s "-screen 0 1400x900x24"` with LIBGL_ALWAYS_SOFTWARE=1).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
rviz=false
platform=sim
demo_args=()
for a in "$@"; do
  case "$a" in
    --rviz) rviz=true ;;
    --pacmod) platform=gem_e2_sim ;;
    *) demo_args+=("$a") ;;
  esac
done
if [ "$rviz" = true ] && [ -z "${DISPLAY:-}" ]; then
  echo "[demo] --rviz needs a display (DISPLAY is not set); without one:" >&2
  echo "[demo]   LIBGL_ALWAYS_SOFTWARE=1 xvfb-run -a -s '-screen 0 1400x900x24' runners/demo.sh --rviz" >&2
  exit 2
fi
bash runners/setup.sh
# shellcheck source=runners/env.sh
source runners/env.sh

port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export ROS_MASTER_URI="http://127.0.0.1:${port}"
out="${GEM_DEMO_OUT:-$ROOT/build/demo}"
log="$out/roslaunch.log"
mkdir -p "$out"
launch_pid=""

# True once no process of the launch's group is left, waiting at most $1 seconds.
group_gone() {
  local tenths=$(($1 * 10))
  while kill -0 -- "-$launch_pid" 2>/dev/null; do
    [ "$tenths" -gt 0 ] || return 1
    sleep 0.1
    tenths=$((tenths - 1))
  done
}

# SIGINT to roslaunch (nodes unregister), then SIGTERM and SIGKILL to its whole process
# group, each after a bounded wait: the clean-up never waits on a node that hangs.
cleanup() {
  [ -n "$launch_pid" ] || return 0
  kill -INT "$launch_pid" 2>/dev/null || true
  if ! group_gone 4; then
    echo "[demo] roslaunch still running 4 s after SIGINT: SIGTERM to its process group" >&2
    kill -TERM -- "-$launch_pid" 2>/dev/null || true
    if ! group_gone 2; then
      echo "[demo] SIGKILL to the launch's process group" >&2
      kill -KILL -- "-$launch_pid" 2>/dev/null || true
    fi
  fi
  wait "$launch_pid" 2>/dev/null || true
  launch_pid=""
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "[demo] the suite on $ROS_MASTER_URI (platform $platform, roslaunch log: $log)"
echo "[demo] try, in another shell: source runners/env.sh; export ROS_MASTER_URI=$ROS_MASTER_URI; gemctl status"
# setsid: roslaunch leads a process group of its own, which the clean-up can signal whole.
track="${GEM_DEMO_TRACK:-gem_track.csv}"
timeout_s="${GEM_DEMO_TIMEOUT_S:-3}"
setsid roslaunch -p "$port" gem_bringup integration_run.launch "speedup:=${GEM_DEMO_SPEEDUP:-5}" \
  "waypoints:=$track" "state_timeout_ms:=$((timeout_s * 1000))" "system_state_timeout_s:=$timeout_s" \
  "pose_timeout_s:=$timeout_s" "clock_stall_s:=$timeout_s" "rviz:=$rviz" "platform:=$platform" \
  "signals:=mock" >"$log" 2>&1 &
launch_pid=$!
if ! gemctl demo --track "launch/waypoints/$track" --out "$out" ${demo_args[@]+"${demo_args[@]}"}; then
  echo "[demo] FAILED (the reason is on the gemctl line above); the nodes' output is in $log" >&2
  if grep -E "process has died|\[ERROR\]|panicked" "$log" >/dev/null 2>&1; then
    echo "[demo] from that log:" >&2
    grep -E "process has died|\[ERROR\]|panicked" "$log" | tail -n 5 | sed 's/\x1b\[[0-9;]*m//g' | cut -c1-300 >&2
  fi
  exit 1
fi
