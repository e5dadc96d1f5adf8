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
# cuobjdump (for the SASS checks) comes from CUDA's PyPI packages when the toolkit lacks it. Since
# 13.5 the cuobjdump package disassembles through nvdisasm, a package of its own, found beside it:
# both are installed, at one pinned version (an unpinned cuobjdump turned CI red when 13.5 landed).
# The tests look for cuobjdump on PATH, in /usr/local/cuda/bin, then in the `nvidia` Python
# packages (tests/runtime/cuobjdump.h); without it the SASS test case is skipped with a warning.
cuda_pip_version=13.5.37
pip_cuobjdump() {
  python3 -c 'import nvidia, os, sys
for p in nvidia.__path__:
    for sub in ("cu13/bin", "cuda_cuobjdump/bin", "cu12/bin"):
        d = os.path.join(p, sub)
        if all(os.access(os.path.join(d, t), os.X_OK) for t in ("cuobjdump", "nvdisasm")):
            print(os.path.join(d, "cuobjdump")); sys.exit(0)
sys.exit(1)' 2>/dev/null
}
if ! command -v cuobjdump >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/cuobjdump ] && ! pip_cuobjdump >/dev/null; then
  python3 -m pip install -q "nvidia-cuda-cuobjdump==$cuda_pip_version" "nvidia-cuda-nvdisasm==$cuda_pip_version" \
    >/dev/null 2>&1 || true
  if found=$(pip_cuobjdump); then
    echo "install-deps: cuobjdump (with nvdisasm) at $found"
  else
    echo "install-deps: cuobjdump unavailable; SASS checks will be skipped"
  fi
fi
[ -f /usr/local/cuda/include/nvrtc.h ] || { echo "install-deps: the CUDA toolkit (headers, NVRTC) is expected under /usr/local/cuda" >&2; exit 1; }
