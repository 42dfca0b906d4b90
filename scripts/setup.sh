#!/usr/bin/env bash
# Installs what mpicast needs on Debian 12: SimGrid (headers + pkg-config), libclang for bindgen,
# g++ (build.rs compiles src/sim/blocking.cpp against SimGrid's C++ API; mpicxx uses it too),
# llvm (llvm-mca: compiled costing schedules machine loops on the host's CPU model),
# OpenMPI (mpicc, mpirun), iproute2 (ip netns, tc: emulated networks), chromium (the HTML
# report test renders pages headless) and mimalloc (build.rs links it as the process's allocator).
# Does nothing when everything is already there.
set -euo pipefail

pkgs=(pkg-config g++ libclang-dev libsimgrid-dev openmpi-bin libopenmpi-dev iproute2 chromium llvm libmimalloc-dev)
missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all packages present (${pkgs[*]})"
  exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
  SUDO=()
elif command -v sudo >/dev/null 2>&1; then
  SUDO=(sudo)
else
  echo "setup: need root or sudo to install: ${missing[*]}" >&2
  exit 2
fi

echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -q
"${SUDO[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
