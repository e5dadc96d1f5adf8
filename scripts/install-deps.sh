#!/usr/bin/env bash
# Installs what the build needs on Debian 12 (the project's machines and CI). Idempotent.
set -euo pipefail
need=()
for pkg in cmake g++ make libfmt-dev libspdlog-dev catch2 llvm-14-dev llvm-14-tools zlib1g-dev libncurses-dev python3; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "install-deps: installing ${need[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
# cuobjdump (for the SASS checks) comes from CUDA's PyPI package when the toolkit lacks it.
if ! command -v cuobjdump >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/cuobjdump ]; then
  python3 -m pip install -q nvidia-cuda-cuobjdump >/dev/null 2>&1 || echo "install-deps: cuobjdump unavailable; SASS checks will be skipped"
fi
[ -f /usr/local/cuda/include/nvrtc.h ] || { echo "install-deps: the CUDA toolkit (headers, NVRTC) is expected under /usr/local/cuda" >&2; exit 1; }
