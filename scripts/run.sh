#!/usr/bin/env bash
# The README's main job: installs what is missing, builds, then generates, compiles, caches and
# runs a Direct-P attention (on the GPU when there is one; otherwise compile-only plus the CPU
# model) for an embedded default shape. Extra arguments go to `fa4jit run`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc)" --target fa4jit
exec build/bin/fa4jit run "$@"
