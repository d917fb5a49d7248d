#!/usr/bin/env bash
# Creates the image's non-root user `gem` with the host's uid/gid (so files written to a
# bind-mounted work tree keep their owner). VARIANT=dev also installs sudo and lets `gem`
# use it without a password; prod images have no sudo at all.
# Usage: add_user.sh UID GID VARIANT
set -euo pipefail
uid="${1:?usage: add_user.sh UID GID VARIANT}"
gid="${2:?usage: add_user.sh UID GID VARIANT}"
variant="${3:?usage: add_user.sh UID GID VARIANT}"
case "$variant" in
  dev | prod) ;;
  *) echo "add_user.sh: VARIANT must be dev or prod, not '$variant'" >&2; exit 2 ;;
esac
# A base image may already own this gid/uid (ubuntu:20.04 has none at 1000; be safe).
getent group "$gid" >/dev/null || groupadd --gid "$gid" gem
useradd --uid "$uid" --gid "$gid" --create-home --shell /bin/bash gem
if [ "$variant" = dev ]; then
  apt-get update
  apt-get install -y --no-install-recommends sudo
  rm -rf /var/lib/apt/lists/*
  echo 'gem ALL=(ALL) NOPASSWD:ALL' > /etc/sudoers.d/gem
  chmod 0440 /etc/sudoers.d/gem
fi
