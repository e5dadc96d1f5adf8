#!/usr/bin/env bash
# Builds the binaries the GPU machine runs and copies them, stripped, into .device-carry/ (ignored
# by git; name it in the device tool's `carry`).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build >/dev/null
targets=(fa4jit runtime_test_driver runtime_test_gpu_quantize runtime_test_gpu_quantize_variants runtime_test_gpu_forward)
cmake --build build -j "$(nproc)" --target "${targets[@]}"
mkdir -p .device-carry
strip --strip-debug -o .device-carry/fa4jit build/bin/fa4jit
for t in "${targets[@]:1}"; do strip --strip-debug -o ".device-carry/$t" "build/tests/$t"; done
du -sh .device-carry
