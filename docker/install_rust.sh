#!/usr/bin/env bash
# Installs one pinned Rust toolchain (with rustfmt and clippy, which runners/test.sh uses)
# system-wide under /usr/local, for the image's builder and headless stages.
# Usage: install_rust.sh VERSION
set -euo pipefail
version="${1:?usage: install_rust.sh VERSION}"
export RUSTUP_HOME=/usr/local/rustup CARGO_HOME=/usr/local/cargo
curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs -o /tmp/rustup-init.sh
sh /tmp/rustup-init.sh -y --no-modify-path --profile minimal \
  --default-toolchain "$version" --component rustfmt --component clippy
rm -f /tmp/rustup-init.sh
/usr/local/cargo/bin/rustc --version
