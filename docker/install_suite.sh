#!/usr/bin/env bash
# The headless image's one build step (docker/Dockerfile), run as root in /opt/gem-rs,
# which holds the staged suite (owned by UID:GID already): creates the user `gem`
# (docker/add_user.sh), then, as `gem`, runs runners/setup.sh without cargo (it uses the
# staged binaries, generates the Python messages and lays out `rosrun gem_nodes`), and
# checks that every binary loads on this image's glibc.
# Usage: install_suite.sh UID GID VARIANT
set -euo pipefail
uid="${1:?usage: install_suite.sh UID GID VARIANT}"
gid="${2:?usage: install_suite.sh UID GID VARIANT}"
variant="${3:?usage: install_suite.sh UID GID VARIANT}"
cd /opt/gem-rs
bash docker/add_user.sh "$uid" "$gid" "$variant"
chown "$uid:$gid" /opt/gem-rs
profile=release
[ "$variant" = prod ] || profile=debug
runuser -u gem -- env HOME=/home/gem GEM_SETUP_HOST_TOOLS=0 GEM_BUILD_PROFILE="$profile" \
  bash runners/setup.sh
missing=$(ldd build/ros/gem_nodes/bin/* | grep 'not found' || true)
if [ -n "$missing" ]; then
  echo "install_suite.sh: binaries that cannot start on this image's glibc: $missing" >&2
  exit 1
fi
build/ros/gem_nodes/bin/gemctl --version
