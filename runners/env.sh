# shellcheck shell=bash
# Source this file (`source runners/env.sh`) to use the suite with the ROS 1 tools:
# our message packages on ROS_PACKAGE_PATH, their Python modules on PYTHONPATH, our node
# binaries reachable through `rosrun gem_nodes <node>` (and `gemctl` on PATH), Debian's /usr/bin first on PATH
# (a pyenv `python3` has no ROS modules), logs in a writable place and a loopback master.
# runners/setup.sh builds what this file points at.

# Source ROS Noetic unless a ROS environment is active already (a catkin workspace built on
# it, e.g. the GEM e2 simulator's in the gazebo image: re-sourcing Noetic would drop it).
if [ -z "${ROS_DISTRO:-}" ] && [ -f /opt/ros/noetic/setup.bash ]; then
  # shellcheck disable=SC1091
  . /opt/ros/noetic/setup.bash
fi

GEM_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export GEM_ROOT

_gem_pkgs="$GEM_ROOT/msg/gem_state_msgs:$GEM_ROOT/msg/gem_controller_action:$GEM_ROOT/launch:$GEM_ROOT/build/ros"
# Vendored third-party definitions only where the real package is not installed (in the
# Gazebo image the real gazebo_msgs must win: ours is a subset, as are our pacmod_msgs and
# novatel_gps_msgs).
for _p in ackermann_msgs gazebo_msgs jsk_rviz_plugins pacmod_msgs novatel_gps_msgs; do
  if [ ! -d "/usr/share/$_p" ] && [ ! -d "/opt/ros/noetic/share/$_p" ]; then
    _gem_pkgs="$_gem_pkgs:$GEM_ROOT/msg/$_p"
  fi
done
case ":${ROS_PACKAGE_PATH:-}:" in
  *":$GEM_ROOT/msg/gem_state_msgs:"*) ;;
  *) export ROS_PACKAGE_PATH="$_gem_pkgs${ROS_PACKAGE_PATH:+:$ROS_PACKAGE_PATH}" ;;
esac
case ":${PYTHONPATH:-}:" in
  *":$GEM_ROOT/build/py:"*) ;;
  *) export PYTHONPATH="$GEM_ROOT/build/py${PYTHONPATH:+:$PYTHONPATH}" ;;
esac
export PATH="/usr/bin:/bin:$PATH:$GEM_ROOT/build/ros/gem_nodes/bin"
export ROS_HOME="${ROS_HOME:-$GEM_ROOT/build/ros_home}"
export ROS_LOG_DIR="${ROS_LOG_DIR:-$ROS_HOME/log}"
export ROS_IP="${ROS_IP:-127.0.0.1}"
export ROS_MASTER_URI="${ROS_MASTER_URI:-http://127.0.0.1:11311}"
unset _gem_pkgs _p
