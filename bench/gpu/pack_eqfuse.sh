#!/usr/bin/env bash
# On the CPU machine, after bench/gpu/prepare.sh: packs the eqfuse command with the shared
# libraries it needs that a GPU machine without eqfuse's build dependencies lacks (Z3, protobuf,
# TBB, fmt, ...; not libc, libm, libstdc++, libgcc_s, libpthread, zlib, bzip2) into
# bench/gpu/trees/eqfuse.tar.xz, for check_backend.py there (bench/gpu/device.sh unpacks it).
#   bench/gpu/pack_eqfuse.sh [EQFUSE]      (default build/tools/eqfuse)
set -euo pipefail
cd "$(dirname "$0")/../.."
eqfuse=${1:-build/tools/eqfuse}
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/lib" bench/gpu/trees
strip -o "$stage/eqfuse" "$eqfuse"
ldd "$eqfuse" | awk '/=> \// {print $3}' |
  grep -Ev '/(libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt|libz|libbz2)\.so' |
  while read -r lib; do cp -L "$lib" "$stage/lib/"; done
strip --strip-unneeded "$stage"/lib/* 2>/dev/null || true
tar -cJf bench/gpu/trees/eqfuse.tar.xz -C "$stage" .
du -h bench/gpu/trees/eqfuse.tar.xz
