#!/usr/bin/env bash
# Builds the images' base, gem-rs/debian:12, from Debian's package mirror alone: debootstrap
# (minbase) of Debian 12 under build/docker/, the packages of runners/packages/ros.txt and
# image.txt installed in a chroot, the tree imported with `docker import`. No registry is
# involved. The image carries a stamp (a hash of the package lists and this recipe's
# version); it is rebuilt only when it is missing or its stamp differs.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=runners/docker_common.sh
source "$ROOT/runners/docker_common.sh"

# Bump when the recipe below changes in a way that must rebuild the image.
RECIPE=1
SUITE=bookworm
MIRROR="${GEM_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
SECURITY="${GEM_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}"

usage() {
  cat <<USAGE
Usage: runners/docker_base.sh [--force] [--check]

Builds $GEM_BASE_IMAGE from Debian $SUITE (minbase + runners/packages/ros.txt and
image.txt) with debootstrap and docker import, when it is missing or its package lists
changed. Needs root (or sudo), debootstrap (GEM_DEBOOTSTRAP: its path), Docker, and the
mirror $MIRROR (GEM_DEBIAN_MIRROR, GEM_DEBIAN_SECURITY_MIRROR to change).

  --force   rebuild even when the image is up to date
  --check   only say whether the image is up to date (exit 0) or not (exit 1)
USAGE
}

force=false
check=false
while [ $# -gt 0 ]; do
  case "$1" in
    --force) force=true; shift ;;
    --check) check=true; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "error: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done

log() { printf '[docker_base] %s\n' "$*"; }

# The package names, sorted, one a line.
package_list() {
  grep -hv '^[[:space:]]*\(#\|$\)' "$ROOT/runners/packages/ros.txt" "$ROOT/runners/packages/image.txt" | sort -u
}
stamp=$(printf 'recipe %s\nsuite %s\n%s\n' "$RECIPE" "$SUITE" "$(package_list)" | sha256sum | cut -c1-16)

gem_require_docker
current=$(docker image inspect --format '{{ index .Config.Labels "org.gem-rs.base.stamp" }}' "$GEM_BASE_IMAGE" 2>/dev/null || true)
if [ "$current" = "$stamp" ] && [ "$force" = false ]; then
  log "$GEM_BASE_IMAGE is up to date (stamp $stamp)"
  exit 0
fi
if [ "$check" = true ]; then
  log "$GEM_BASE_IMAGE ${current:+is stale (stamp $current, lists give $stamp)}${current:-is missing}"
  exit 1
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    sudo=(sudo -n)
  else
    echo "error: debootstrap and chroot need root: run as root or with passwordless sudo" >&2
    exit 3
  fi
fi
DEBOOTSTRAP="${GEM_DEBOOTSTRAP:-$(command -v debootstrap || echo /usr/sbin/debootstrap)}"
if [ ! -x "$DEBOOTSTRAP" ]; then
  echo "error: debootstrap not found: apt-get install debootstrap (runners/setup.sh installs it)" >&2
  exit 3
fi
if ! curl -fs --max-time 20 -o /dev/null "$MIRROR/dists/$SUITE/Release"; then
  echo "error: the Debian mirror $MIRROR cannot be reached (no $MIRROR/dists/$SUITE/Release); set GEM_DEBIAN_MIRROR to one that can" >&2
  exit 3
fi

work="$ROOT/build/docker/base"
rootfs="$work/rootfs"
mounted=()
cleanup() {
  local m
  for m in "${mounted[@]}"; do
    "${sudo[@]}" umount -l "$m" 2>/dev/null || true
  done
  "${sudo[@]}" rm -rf "$rootfs"
}
trap cleanup EXIT
mkdir -p "$work"
"${sudo[@]}" rm -rf "$rootfs"
start=$(date +%s)

log "debootstrap --variant=minbase $SUITE from $MIRROR"
if ! "${sudo[@]}" "$DEBOOTSTRAP" --variant=minbase "$SUITE" "$rootfs" "$MIRROR" >"$work/debootstrap.log" 2>&1; then
  tail -n 20 "$work/debootstrap.log" >&2
  echo "error: debootstrap failed (whole log: $work/debootstrap.log)" >&2
  exit 1
fi

# The image's package sources: the release, its updates and security, from the same mirror.
"${sudo[@]}" tee "$rootfs/etc/apt/sources.list" >/dev/null <<SOURCES
deb $MIRROR $SUITE main
deb $MIRROR $SUITE-updates main
deb $SECURITY $SUITE-security main
SOURCES
# No service starts inside the chroot; apt keeps no recommends and no caches.
printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "$rootfs/usr/sbin/policy-rc.d" >/dev/null
"${sudo[@]}" chmod 755 "$rootfs/usr/sbin/policy-rc.d"
printf 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n' |
  "${sudo[@]}" tee "$rootfs/etc/apt/apt.conf.d/90gem-rs" >/dev/null
"${sudo[@]}" cp /etc/resolv.conf "$rootfs/etc/resolv.conf"
for m in proc sys dev; do
  "${sudo[@]}" mount --bind "/$m" "$rootfs/$m"
  mounted=("$rootfs/$m" "${mounted[@]}")
done

mapfile -t pkgs < <(package_list)
log "installing ${#pkgs[@]} packages in the chroot (runners/packages/ros.txt, image.txt)"
in_root() { "${sudo[@]}" chroot "$rootfs" env DEBIAN_FRONTEND=noninteractive LC_ALL=C "$@"; }
if ! { in_root apt-get update -qq && in_root apt-get install -y -qq "${pkgs[@]}"; } >"$work/apt.log" 2>&1; then
  tail -n 20 "$work/apt.log" >&2
  echo "error: installing the packages in the chroot failed (whole log: $work/apt.log)" >&2
  exit 1
fi
in_root apt-get clean
for m in "${mounted[@]}"; do
  "${sudo[@]}" umount -l "$m"
done
mounted=()
"${sudo[@]}" rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin \
  "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/locale/* "$rootfs"/tmp/*
: | "${sudo[@]}" tee "$rootfs/etc/resolv.conf" >/dev/null

# docker import tags only a complete image: a failure here leaves no tag behind.
log "docker import as $GEM_BASE_IMAGE"
"${sudo[@]}" tar -C "$rootfs" --numeric-owner -c . | docker import \
  --change "LABEL org.gem-rs.base.stamp=$stamp" \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8' \
  --change 'CMD ["bash"]' \
  - "$GEM_BASE_IMAGE" >/dev/null
printf '%s %s\n' "$stamp" "$(docker image inspect --format '{{.Id}}' "$GEM_BASE_IMAGE")" >"$work/stamp"
log "$GEM_BASE_IMAGE built in $(( $(date +%s) - start )) s ($(docker image inspect --format '{{.Size}}' "$GEM_BASE_IMAGE" | awk '{printf "%.0f MB", $1/1e6}'), stamp $stamp)"
