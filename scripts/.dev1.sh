#!/usr/bin/env bash
# session 11 call 1: ragged m-blocks (idle consumers pass turns; cheap tiles last)
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/o}; mkdir -p $OUT/t
export FA4JIT_CACHE_DIR=/tmp/fa4jit-cache
BIN=.device-carry
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader | tee $OUT/t/gpu.txt
# prewarm kernels in the background? no: keep it sequential
echo "== gpu tests (ragged subsets)"
timeout 200 $BIN/runtime_test_gpu_forward "*several work tiles per CTA*" > $OUT/t/several.log 2>&1; echo "exit $?"
grep -E "FAILED|^test cases|^assertions|All tests passed" -A2 $OUT/t/several.log | head -20
timeout 150 $BIN/runtime_test_gpu_forward "*: nvfp8 route","*: directp route","*: bf16 route" > $OUT/t/routes.log 2>&1; echo "exit $?"
grep -E "FAILED|^test cases|^assertions|All tests passed" -A2 $OUT/t/routes.log | head -20
BENCH_ARGS="--head-dims 64,128 --seqlens 2000,4096,8192 --causal 0 --reps 10" OUT=$OUT/b timeout 420 bash scripts/device_check.sh bench ab
