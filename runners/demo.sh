#!/usr/bin/env bash
# The main job, headless. The full demo of the issue list (planner, mock signals, faults
# injected with dynamic_reconfigure) needs nodes that do not exist yet; until then this
# shows what does, against real ROS 1 tools:
#   1. the state manager's scenarios under rostest (sim time, about a second);
#   2. a full lap of the GEM track: gem_sim (owning /clock at 10x) + the pure_pursuit
#      controller, driven by Debian's Python actionlib client, with live progress.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash runners/setup.sh
# shellcheck source=runners/env.sh
source runners/env.sh

echo "[demo] 1/2 state manager scenarios: rostest gem_bringup state_manager.test"
rostest gem_bringup state_manager.test

echo "[demo] 2/2 a lap of the GEM track: gem_sim at 10x + pure_pursuit"
port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export ROS_MASTER_URI="http://127.0.0.1:${port}"
pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT
rosmaster --core -p "$port" >/dev/null 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do
  rosparam set /use_sim_time true 2>/dev/null && break
  sleep 0.1
done
rosparam get /use_sim_time >/dev/null || { echo "[demo] rosmaster did not start" >&2; exit 1; }
log_dir="$ROS_HOME/demo"
mkdir -p "$log_dir"
rosrun gem_nodes gem_sim _publish_clock:=true _speedup:=10 >"$log_dir/gem_sim.log" 2>&1 &
pids+=($!)
rosrun gem_nodes pure_pursuit >"$log_dir/pure_pursuit.log" 2>&1 &
pids+=($!)
start=$(date +%s)
/usr/bin/python3 tests/py/nav_client.py /navigate_waypoints --file launch/waypoints/gem_track.csv --timeout 120 \
  | awk '/^feedback/ { n++; if (n % 100 == 0) printf "[demo] waypoint %5d of 3821, %5.1f %%\n", $2, 100 * $3; next } { print "[demo] " $0 }' \
  | tee "$log_dir/lap.log"
grep -q "state SUCCEEDED" "$log_dir/lap.log" || { echo "[demo] the lap did not succeed; logs in $log_dir" >&2; exit 1; }
echo "[demo] lap completed in $(( $(date +%s) - start )) s wall; logs in $log_dir"
