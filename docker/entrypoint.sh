#!/usr/bin/env bash
# The images' entrypoint: the GEM e2 simulator's workspace (gazebo image; it chains ROS
# Noetic), then our suite (runners/env.sh) on every path, then the command.
set -eo pipefail
if [ -f /opt/gem_e2/devel/setup.bash ]; then
  # shellcheck disable=SC1091
  source /opt/gem_e2/devel/setup.bash
fi
# shellcheck source=runners/env.sh
source "${GEM_ROOT:-/opt/gem-rs}/runners/env.sh"
exec "$@"
