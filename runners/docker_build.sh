#!/usr/bin/env bash
# Builds the gem-rs Docker images with the caller's uid/gid: headless from
# docker/Dockerfile on the registry-free base (runners/docker_base.sh) with the host's
# build of our binaries; gazebo from docker/gazebo.Dockerfile.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=runners/docker_common.sh
source "$ROOT/runners/docker_common.sh"
# shellcheck source=runners/binaries.sh
source "$ROOT/runners/binaries.sh"

usage() {
  cat <<USAGE
Usage: runners/docker_build.sh [options]

Builds gem-rs:<target>-<variant>.

Options:
  --target T          headless | gazebo | all (default: headless)
  --variant V         prod (release build, no sudo) | dev (debug build, sudo) (default: prod)
  --gem-e2-commit C   commit of the GEM e2 simulator for the gazebo image (default: the
                      Dockerfile's pinned one)
  --no-cache          build without Docker's layer cache
  -h, --help          this text

headless starts from $GEM_BASE_IMAGE (build it first: runners/docker_base.sh) and copies
in the host's cargo build of the variant's profile (built here when out of date): the host
and the image are both Debian 12, so the binaries load on the image's glibc. gazebo needs
ros:noetic-ros-base-focal present locally and the internet.
The image user 'gem' gets your uid/gid ($(gem_image_ids | tr " " :)) so files in bind mounts keep
their owner (1000:1000 when you are root).
USAGE
}

target=headless
variant=prod
commit=""
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --target) target="${2:?--target needs a value}"; shift 2 ;;
    --variant) variant="${2:?--variant needs a value}"; shift 2 ;;
    --gem-e2-commit) commit="${2:?--gem-e2-commit needs a value}"; shift 2 ;;
    --no-cache) extra+=(--no-cache); shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "error: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
gem_check_variant "$variant"
case "$target" in
  headless | gazebo) targets=("$target") ;;
  all) targets=(headless gazebo) ;;
  *) echo "error: --target must be headless, gazebo or all, not '$target'" >&2; exit 2 ;;
esac
gem_require_docker
# Every target's base image is checked before anything is built: a missing one fails at
# once, naming it.
for t in "${targets[@]}"; do
  case "$t" in
    headless)
      if ! docker image inspect "$GEM_BASE_IMAGE" >/dev/null 2>&1; then
        echo "error: base image $GEM_BASE_IMAGE not found; build it with: bash runners/docker_base.sh" >&2
        exit 3
      fi ;;
    gazebo)
      if ! docker image inspect "$GEM_NOETIC_IMAGE" >/dev/null 2>&1; then
        echo "error: the gazebo target needs $GEM_NOETIC_IMAGE, which is not present locally (docker load it; this machine has no registry to pull it from)" >&2
        exit 3
      fi ;;
  esac
done

read -r uid gid < <(gem_image_ids)
args=(--build-arg "VARIANT=$variant" --build-arg "USER_UID=$uid" --build-arg "USER_GID=$gid")
[ -z "$commit" ] || args+=(--build-arg "GEM_E2_COMMIT=$commit")

# Stages the headless image's build context, build/docker/context/: what the image holds
# of the repository (launch files, messages, runners, docker/, the rostest and Python test
# files, the names runners/setup.sh lays out) and the host's binaries of the variant's
# profile under target/<profile>/: the node binaries, gemctl and the rostest runners.
stage_context() {
  local dir=release cargo_args=(--release) ctx="$ROOT/build/docker/context" name
  if [ "$variant" = dev ]; then dir=debug; cargo_args=(); fi
  if ! command -v cargo >/dev/null; then
    echo "error: cargo not found: the headless image copies the host's build (install a Rust toolchain)" >&2
    exit 3
  fi
  echo "[docker_build] cargo build ${cargo_args[*]} --workspace --bins (the image's binaries)"
  (cd "$ROOT" && cargo build "${cargo_args[@]}" --workspace --bins --quiet)
  rm -rf "$ctx"
  mkdir -p "$ctx/target/$dir" "$ctx/tests" "$ctx/crates/gem_nodes/src" "$ctx/crates/gem_cli/src"
  cp -a "$ROOT/docker" "$ROOT/launch" "$ROOT/msg" "$ROOT/runners" "$ctx/"
  cp -a "$ROOT/tests/py" "$ROOT/tests/rostest" "$ctx/tests/"
  cp -a "$ROOT/crates/gem_nodes/src/bin" "$ctx/crates/gem_nodes/src/"
  cp -a "$ROOT/crates/gem_cli/src/main.rs" "$ctx/crates/gem_cli/src/"
  for name in $(gem_binary_names "$ROOT"); do
    cp "$ROOT/target/$dir/$name" "$ctx/target/$dir/$name"
  done
}

for t in "${targets[@]}"; do
  image=$(gem_image "$t" "$variant")
  started=$(date +%s)
  if [ "$t" = headless ]; then
    stage_context
    file="$ROOT/docker/Dockerfile"
    context="$ROOT/build/docker/context"
  else
    file="$ROOT/docker/gazebo.Dockerfile"
    context="$ROOT"
  fi
  echo "[docker_build] $image"
  # The classic builder: it needs no front-end image (BuildKit's would be pulled), and it
  # tags the image only when every step succeeded.
  if ! DOCKER_BUILDKIT=0 docker build --force-rm --file "$file" --target "$t" \
    "${args[@]}" "${extra[@]}" --tag "$image" "$context"; then
    echo "error: building $image failed (output above)" >&2
    exit 1
  fi
  echo "[docker_build] $image built in $(( $(date +%s) - started )) s ($(docker image inspect --format '{{.Size}}' "$image" | awk '{printf "%.0f MB", $1/1e6}'))"
done
