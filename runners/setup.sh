#!/usr/bin/env bash
# Idempotent, non-interactive set-up on a fresh machine:
#   1. installs Debian's ROS 1 packages when they are missing (or uses /opt/ros/noetic);
#   2. builds the workspace in release mode (GEM_BUILD_PROFILE=debug: debug);
#   3. generates the Python message modules of our msg/ packages into build/py;
#   4. lays out build/ros/gem_nodes so `rosrun gem_nodes <node>` finds our binaries.
# Afterwards `source runners/env.sh` gives a shell with everything on its paths.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
log() { printf '[setup] %s\n' "$*"; }

DEBIAN_ROS_PACKAGES=(
  ros-core python3-rostest python3-actionlib python3-dynamic-reconfigure python3-rosbag
  python3-genpy python3-genmsg catkin rosbash rospack-tools
  ros-std-msgs ros-geometry-msgs ros-nav-msgs ros-actionlib-msgs ros-diagnostic-msgs
  ros-std-srvs ros-rosgraph-msgs ros-sensor-msgs ros-visualization-msgs
  python3-nav-msgs python3-diagnostic-msgs python3-std-srvs python3-sensor-msgs
  python3-visualization-msgs python3-rosgraph-msgs
  libstd-msgs-dev libgeometry-msgs-dev libnav-msgs-dev libactionlib-msgs-dev
  libdiagnostic-msgs-dev libros-rosgraph-msgs-dev libsensor-msgs-dev
  libvisualization-msgs-dev libstd-srvs-dev libdynamic-reconfigure-config-init-mutex-dev
  libdiagnostic-aggregator-tools libdiagnostic-aggregator-dev shellcheck python3-venv
  ros-tf2-msgs libtf2-msgs-dev python3-tf2-msgs
  # Stock RViz in a real window without a display (tests/rviz.rs, demo.sh --rviz under
  # xvfb-run): RViz, an X server, Mesa's software OpenGL, ImageMagick for screenshots.
  rviz xvfb xauth libgl1-mesa-dri imagemagick
)

install_ros() {
  if [ -f /opt/ros/noetic/setup.bash ]; then
    log "using ROS Noetic from /opt/ros/noetic"
    return
  fi
  local missing=()
  local p
  for p in "${DEBIAN_ROS_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    log "Debian ROS 1 packages already installed"
    return
  fi
  log "installing ${#missing[@]} Debian packages: ${missing[*]}"
  local sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# GEM_BUILD_PROFILE=debug builds and lays out the debug binaries (the dev Docker image);
# the default is release.
profile_dir() {
  case "${GEM_BUILD_PROFILE:-release}" in
    release) echo release ;;
    debug) echo debug ;;
    *) echo "GEM_BUILD_PROFILE must be release or debug, not '${GEM_BUILD_PROFILE}'" >&2; exit 2 ;;
  esac
}

build_rust() {
  local dir
  dir=$(profile_dir)
  if ! command -v cargo >/dev/null; then
    # An image that copied the binaries from its builder stage has no toolchain.
    if [ -x "$ROOT/target/$dir/gemctl" ]; then
      log "no cargo: using the binaries already in target/$dir"
      return
    fi
    echo "cargo not found: install a Rust toolchain (rustup)" >&2
    exit 1
  fi
  if [ "$dir" = debug ]; then
    log "cargo build --workspace (debug)"
    cargo build --workspace --bins --quiet
  else
    log "cargo build --release --workspace"
    cargo build --release --workspace --bins --quiet
  fi
}

# genpy tools live in /usr/lib on Debian, /opt/ros/noetic/lib with Noetic.
tool() {
  local d
  for d in /usr/lib /opt/ros/noetic/lib; do
    [ -f "$d/$1" ] && { echo "$d/$1"; return; }
  done
  echo "cannot find $1 (genpy / actionlib_msgs not installed?)" >&2
  exit 1
}

# -I flags for every package a definition may reference: ours first, then installed ones.
include_flags() {
  local d pkg
  for d in "$ROOT"/msg/*/msg /usr/share/*/msg /opt/ros/noetic/share/*/msg; do
    [ -d "$d" ] || continue
    pkg=$(basename "$(dirname "$d")")
    printf -- '-I\n%s:%s\n' "$pkg" "$d"
  done
}

python_installed() { /usr/bin/python3 -c "import $1.msg" >/dev/null 2>&1; }

gen_python() {
  local out="$ROOT/build/py" genmsg gensrv pkg dir
  genmsg=$(tool genpy/genmsg_py.py)
  gensrv=$(tool genpy/gensrv_py.py)
  mapfile -t includes < <(include_flags)
  mkdir -p "$out"
  for dir in "$ROOT"/msg/*/; do
    pkg=$(basename "$dir")
    [ "$pkg" = std ] && continue
    if [ ! -d "$out/$pkg" ] && python_installed "$pkg"; then
      log "python: $pkg is installed, not generating ours"
      continue
    fi
    rm -rf "${out:?}/$pkg"
    mkdir -p "$out/$pkg"
    : > "$out/$pkg/__init__.py"
    if compgen -G "$dir/msg/*.msg" >/dev/null; then
      /usr/bin/python3 "$genmsg" -p "$pkg" -o "$out/$pkg/msg" "${includes[@]}" "$dir"/msg/*.msg
      /usr/bin/python3 "$genmsg" --initpy -p "$pkg" -o "$out/$pkg/msg"
    fi
    if compgen -G "$dir/srv/*.srv" >/dev/null; then
      /usr/bin/python3 "$gensrv" -p "$pkg" -o "$out/$pkg/srv" "${includes[@]}" "$dir"/srv/*.srv
      /usr/bin/python3 "$gensrv" --initpy -p "$pkg" -o "$out/$pkg/srv"
    fi
  done
  log "python messages in build/py"
}

# A ROS package whose directory holds links to the release binaries, for rosrun/roslaunch.
layout_nodes() {
  local pkg="$ROOT/build/ros/gem_nodes" src name dir
  dir=$(profile_dir)
  mkdir -p "$pkg/bin"
  cat > "$pkg/package.xml" <<XML
<?xml version="1.0"?>
<package format="2">
  <name>gem_nodes</name>
  <version>0.1.0</version>
  <description>The gem-rs node binaries (generated by runners/setup.sh).</description>
  <maintainer email="maintainers@gem-rs.org">gem-rs maintainers</maintainer>
  <license>BSD</license>
  <buildtool_depend>catkin</buildtool_depend>
</package>
XML
  find "$pkg/bin" -type l -delete
  # Node binaries, gemctl, and the rostest runners that launch/test/*.test start.
  for src in "$ROOT"/crates/gem_nodes/src/bin/*.rs "$ROOT"/crates/gem_cli/src/main.rs "$ROOT"/tests/rostest/*.rs; do
    [ -e "$src" ] || continue
    name=$(basename "$src" .rs)
    [ "$name" = main ] && name=gemctl
    ln -sf "$ROOT/target/$dir/$name" "$pkg/bin/$name"
  done
}

install_ros
build_rust
gen_python
layout_nodes
log "done; now: source runners/env.sh"
