#!/usr/bin/env bash
# Copies the shared libraries a binary built here needs, other than glibc's and the GPU driver's,
# into DIR, so the binary runs on the device machine (another distribution) with
# LD_LIBRARY_PATH=DIR:/usr/local/cuda/lib64.
# Usage: scripts/device_libs.sh DIR BINARY...
set -euo pipefail
dir="$1"; shift
mkdir -p "$dir"
for bin in "$@"; do
  ldd "$bin" | awk '/=> \// {print $3}' | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|libcuda.so*|libnvrtc*) ;;
      *) cp -L "$lib" "$dir"/ ;;
    esac
  done
done
ls "$dir"
