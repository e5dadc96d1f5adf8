#!/usr/bin/env bash
# Builds the binaries the GPU machine runs and copies them, stripped, into .device-carry/ (ignored
# by git; name it in the device tool's `carry`).
#   --base REV   also builds fa4jit at commit REV (a worktree under build-base/) as
#                .device-carry/fa4jit-base, for device_check.sh's same-run A/B step `ab`.
set -euo pipefail
cd "$(dirname "$0")/.."
base=""
if [ "${1:-}" = "--base" ]; then base=${2:?"--base needs a commit"}; fi
cmake -S . -B build >/dev/null
targets=(fa4jit fa4jit_shared runtime_test_driver runtime_test_tensor_maps runtime_test_gpu_quantize runtime_test_gpu_quantize_variants runtime_test_gpu_call_edges runtime_test_gpu_steady_state runtime_test_gpu_nonfinite runtime_test_gpu_graph runtime_test_c_api runtime_test_gpu_forward runtime_test_gpu_backward runtime_test_gpu_merge runtime_test_gpu_paged)
cmake --build build -j "$(nproc)" --target "${targets[@]}"
mkdir -p .device-carry
strip --strip-debug -o .device-carry/fa4jit build/bin/fa4jit
# libfa4jit.so under its soname (what runtime_test_c_api needs) and its plain name (the Python
# package's FA4JIT_LIBRARY)
strip --strip-debug -o .device-carry/libfa4jit.so.0 build/lib/libfa4jit.so.0
ln -sf libfa4jit.so.0 .device-carry/libfa4jit.so
for t in "${targets[@]:2}"; do strip --strip-debug -o ".device-carry/$t" "build/tests/$t"; done
rm -f .device-carry/fa4jit-base
if [ -n "$base" ]; then
  rm -rf build-base/src && git worktree prune
  git worktree add --detach build-base/src "$base" >/dev/null
  cmake -S build-base/src -B build-base/build >/dev/null
  cmake --build build-base/build -j "$(nproc)" --target fa4jit
  strip --strip-debug -o .device-carry/fa4jit-base build-base/build/bin/fa4jit
  git worktree remove --force build-base/src
fi
du -sh .device-carry
