#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, and runs every test that needs no
# GPU; then the same suite under AddressSanitizer + UndefinedBehaviorSanitizer.
# On a machine with a GPU, FA4JIT_GPU_TESTS=1 also runs the [gpu] cases.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs=$(nproc)
label_args=(-LE gpu)
[ "${FA4JIT_GPU_TESTS:-0}" = 1 ] && label_args=()

cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$jobs"
(cd build && ctest --output-on-failure -j "$jobs" "${label_args[@]}")

if [ "${FA4JIT_SKIP_SANITIZERS:-0}" != 1 ]; then
  cmake -S . -B build-san -DCMAKE_BUILD_TYPE=Debug -DFA4JIT_SANITIZE=ON >/dev/null
  cmake --build build-san -j "$jobs"
  (cd build-san && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
     ctest --output-on-failure -j "$jobs" -LE 'gpu|no-sanitizer')
fi
