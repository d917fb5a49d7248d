#!/usr/bin/env bash
# Creates the image's non-root user `gem` with the given uid/gid (the host's, so files
# written to a bind-mounted work tree keep their owner; runners/docker_build.sh passes
# 1000 when the host user is root). VARIANT=dev lets `gem` use sudo without a password
# (installing sudo if the image lacks it); prod images have no sudo at all.
# Usage: add_user.sh UID GID VARIANT
set -euo pipefail
uid="${1:?usage: add_user.sh UID GID VARIANT}"
gid="${2:?usage: add_user.sh UID GID VARIANT}"
variant="${3:?usage: add_user.sh UID GID VARIANT}"
case "$variant" in
  dev | prod) ;;
  *) echo "add_user.sh: VARIANT must be dev or prod, not '$variant'" >&2; exit 2 ;;
esac
if [ "$uid" -eq 0 ] || [ "$gid" -eq 0 ]; then
  echo "add_user.sh: the image user must not be root (uid $uid, gid $gid)" >&2
  exit 2
fi
# A base image may already own this gid (ubuntu:20.04 has none at 1000; be safe).
getent group "$gid" >/dev/null || groupadd --gid "$gid" gem
useradd --uid "$uid" --gid "$gid" --create-home --shell /bin/bash gem
if [ "$variant" = dev ]; then
  if ! command -v sudo >/dev/null; then
    apt-get update
    apt-get install -y --no-install-recommends sudo
    rm -rf /var/lib/apt/lists/*
  fi
  echo 'gem ALL=(ALL) NOPASSWD:ALL' > /etc/sudoers.d/gem
  chmod 0440 /etc/sudoers.d/gem
elif dpkg-query -W -f='${Status}' sudo 2>/dev/null | grep -q "install ok installed"; then
  # The base image carries sudo for the dev variant; prod removes it (offline, dpkg only).
  SUDO_FORCE_REMOVE=yes dpkg --purge sudo >/dev/null
fi
