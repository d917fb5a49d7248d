# shellcheck shell=bash
# The one list of the binaries a user runs: the node binaries, gemctl and the rostest
# runners that launch/test/*.test start. runners/setup.sh lays them out for `rosrun
# gem_nodes`, runners/docker_build.sh stages them into the headless image. Source it.

# Prints each binary's name, one a line, from the sources under ROOT ($1).
gem_binary_names() {
  local src name
  for src in "$1"/crates/gem_nodes/src/bin/*.rs "$1"/crates/gem_cli/src/main.rs "$1"/tests/rostest/*.rs; do
    [ -e "$src" ] || continue
    name=$(basename "$src" .rs)
    [ "$name" = main ] && name=gemctl
    echo "$name"
  done
}
