#!/usr/bin/env bash
# Builds the gem-rs Docker images from docker/Dockerfile with the caller's uid/gid.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=runners/docker_common.sh
source "$ROOT/runners/docker_common.sh"

usage() {
  cat <<USAGE
Usage: runners/docker_build.sh [options]

Builds gem-rs:<target>-<variant> from docker/Dockerfile.

Options:
  --target T          headless | gazebo | all (default: all)
  --variant V         prod (release build, no sudo) | dev (debug build, sudo) (default: prod)
  --gem-e2-commit C   commit of the GEM e2 simulator for the gazebo image (default: the
                      Dockerfile's pinned one)
  --no-cache          build without Docker's layer cache
  -h, --help          this text

The image user 'gem' gets your uid/gid ($(id -u):$(id -g)) so files in bind mounts keep
their owner. Needs Docker Engine (BuildKit).
USAGE
}

target=all
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
    *) echo "error: unknown option '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
gem_check_variant "$variant"
case "$target" in
  headless | gazebo) targets=("$target") ;;
  all) targets=(headless gazebo) ;;
  *) echo "error: --target must be headless, gazebo or all, not '$target'" >&2; exit 2 ;;
esac
args=(--build-arg "VARIANT=$variant" --build-arg "USER_UID=$(id -u)" --build-arg "USER_GID=$(id -g)")
if [ -n "$commit" ]; then
  args+=(--build-arg "GEM_E2_COMMIT=$commit")
fi
gem_require_docker
for t in "${targets[@]}"; do
  image=$(gem_image "$t" "$variant")
  echo "[docker_build] $image"
  DOCKER_BUILDKIT=1 docker build --file "$ROOT/docker/Dockerfile" --target "$t" \
    "${args[@]}" "${extra[@]}" --tag "$image" "$ROOT"
done
