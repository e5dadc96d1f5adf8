#!/usr/bin/env bash
# One call on the GPU machine: GPU tests, the main job, and fa4jit bench beside PyTorch SDPA in the
# same run. Binaries come prebuilt (stripped) in .device-carry/ (scripts/prepare_device_carry.sh);
# logs go to $OUT. Usage: scripts/device_check.sh [tests|run|jit|bench|ab|variants|tune|python|backward|merge|decode|decode-tuned|train]... (default: tests run bench)
# `train`: examples/train_lm once per route of TRAIN_ROUTES (default sdpa nvfp8) with TRAIN_ARGS,
# logs into $OUT/train_lm (plot them here: examples/train_lm/plot_training.py).
# TESTS (with `tests`): the GPU test binaries to run, default all of them.
# `variants` (after `bench`, whose SDPA figures it reuses): the wgmma kernel beside its
# leave-one-out and classifier/consumer-order variants (env VARIANTS, VARIANT_SHAPES, VARIANT_ROUTES).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/fa4jit-out}; mkdir -p "$OUT"
BIN=${BIN:-.device-carry} # (or a smaller folder of the same binaries, to stay under the carry limit)
export FA4JIT_CACHE_DIR=/tmp/fa4jit-cache
export LD_LIBRARY_PATH="$PWD/$BIN${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" # (libfa4jit.so.0 for the C API test)
steps=("$@"); [ ${#steps[@]} -eq 0 ] && steps=(tests run bench)
BENCH_ARGS=${BENCH_ARGS:---head-dim 64,128,256 --seqlen 4096,16384 --causal 0,1}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader | tee "$OUT/gpu.txt"
for step in "${steps[@]}"; do
  case "$step" in
    tests)
      for t in ${TESTS:-runtime_test_driver runtime_test_tensor_maps runtime_test_gpu_quantize runtime_test_gpu_quantize_variants runtime_test_gpu_call_edges runtime_test_gpu_steady_state runtime_test_gpu_nonfinite runtime_test_gpu_graph runtime_test_c_api runtime_test_gpu_forward runtime_test_gpu_backward runtime_test_gpu_merge runtime_test_gpu_paged}; do
        # (the forward suite takes 380-450 s on the H200: its own limit, the others' 120 s)
        limit=120; [ "$t" = runtime_test_gpu_forward ] && limit=540
        echo "== $t"; timeout $limit "$BIN/$t" "[gpu]" > "$OUT/$t.log" 2>&1; echo "   exit status $?"
        grep -E "FAILED|^test cases|^assertions|All tests passed|with message" -A2 "$OUT/$t.log" | head -40
      done ;;
    run)
      echo "== fa4jit run (cold cache, then a second process: disk hit)"
      timeout 120 "$BIN/fa4jit" run 2>&1 | tee "$OUT/run.log"
      timeout 120 "$BIN/fa4jit" run --json 2>&1 | tee -a "$OUT/run.log" ;;
    jit)
      echo "== fa4jit jit-bench"
      timeout 180 "$BIN/fa4jit" jit-bench --json 2>&1 | tee "$OUT/jit_bench.json" ;;
    python)
      echo "== the Python package with PyTorch (tests/python/gpu_torch_check.py)"
      FA4JIT_LIBRARY="$PWD/$BIN/libfa4jit.so" FA4JIT_CLI="$PWD/$BIN/fa4jit" PYTHONPATH="$PWD/python" \
        timeout 300 python3 tests/python/gpu_torch_check.py 2>&1 | tee "$OUT/python.log" | tail -40 ;;
    backward)
      # Forward + backward from BF16 through fa4jit.attention(route="nvfp8") beside SDPA (BACKWARD_ARGS)
      echo "== scripts/bench_backward.py ${BACKWARD_ARGS:-}"
      FA4JIT_LIBRARY="$PWD/$BIN/libfa4jit.so" PYTHONPATH="$PWD/python" PYTHONUNBUFFERED=1 timeout 400 \
        python3 scripts/bench_backward.py ${BACKWARD_ARGS:-} > "$OUT/bench_backward.jsonl" 2> "$OUT/bench_backward.err"
      tail -20 "$OUT/bench_backward.err"
      # The same grid through the CLI (Engine calls, no PyTorch), with the backward's variants
      echo "== fa4jit bench --backward ${BACKWARD_CLI_ARGS:-}"
      timeout 300 "$BIN/fa4jit" bench --backward --json ${BACKWARD_CLI_ARGS:-} > "$OUT/cli_backward.jsonl" 2>&1
      tail -3 "$OUT/cli_backward.jsonl" | cut -c1-300 ;;
    merge)
      echo "== scripts/bench_merge.py"
      FA4JIT_LIBRARY="$PWD/$BIN/libfa4jit.so" PYTHONPATH="$PWD/python" timeout 120 \
        python3 scripts/bench_merge.py > "$OUT/bench_merge.jsonl" 2> "$OUT/bench_merge.err"
      tail -9 "$OUT/bench_merge.jsonl"; tail -3 "$OUT/bench_merge.err" ;;
    decode|decode-tuned)
      # decode-tuned: `fa4jit tune --decode` on the same grid first (DECODE_ARGS' --batch, --context
      # and --page-size), then the same benchmark, whose plans then come from the tuning database.
      name=bench_decode
      if [ "$step" = decode-tuned ]; then
        name=bench_decode_tuned
        grid=$(echo "${DECODE_ARGS:-}" | sed -E 's/--reps [0-9]+//')
        echo "== fa4jit tune --decode $grid"
        timeout 400 "$BIN/fa4jit" tune --decode $grid --no-progress 2>&1 | tee "$OUT/tune_decode.log" | tail -14
        "$BIN/fa4jit" tune --show --candidates --json > "$OUT/tune_decode_db.json" 2>&1
      fi
      echo "== scripts/bench_decode.py ${DECODE_ARGS:-}"
      FA4JIT_CLI="$PWD/$BIN/fa4jit" PYTHONUNBUFFERED=1 timeout 500 \
        python3 scripts/bench_decode.py ${DECODE_ARGS:-} > "$OUT/$name.jsonl" 2> "$OUT/$name.err"
      tail -40 "$OUT/$name.err" ;;
    train)
      for route in ${TRAIN_ROUTES:-sdpa nvfp8}; do
        echo "== examples/train_lm --attention $route ${TRAIN_ARGS:-}"
        FA4JIT_LIBRARY="$PWD/$BIN/libfa4jit.so" PYTHONPATH="$PWD/python" PYTHONUNBUFFERED=1 \
          python3 examples/train_lm/train_lm.py --attention "$route" --out "$OUT/train_lm" ${TRAIN_ARGS:-} \
          2> "$OUT/train_lm_$route.err" | tail -4
        tail -3 "$OUT/train_lm_$route.err"
      done ;;
    tune)
      TUNE_ARGS=${TUNE_ARGS:---route nvfp8,directp --head-dim 128 --seqlen 4096 --causal 0,1 --reps 10}
      echo "== fa4jit tune $TUNE_ARGS"
      timeout 300 "$BIN/fa4jit" tune $TUNE_ARGS 2>&1 | tee "$OUT/tune.log" | tail -25
      echo "== second process: replay only (must compile and time nothing)"
      FA4JIT_TUNE=replay timeout 120 "$BIN/fa4jit" tune $TUNE_ARGS --replay 2>&1 | tee "$OUT/tune_replay.log" | tail -12
      "$BIN/fa4jit" tune --show --json > "$OUT/tuning_db.json" 2>&1 ;;
    bench)
      echo "== fa4jit bench $BENCH_ARGS"
      timeout 300 "$BIN/fa4jit" bench $BENCH_ARGS --json > "$OUT/bench_fa4jit.jsonl" 2> "$OUT/bench_fa4jit.err"
      tail -3 "$OUT/bench_fa4jit.err"
      echo "== PyTorch SDPA, same grid"
      hd=$(echo "$BENCH_ARGS" | sed -n 's/.*--head-dims\{0,1\} \([^ ]*\).*/\1/p'); sl=$(echo "$BENCH_ARGS" | sed -n 's/.*--seqlens\{0,1\} \([^ ]*\).*/\1/p')
      # (PY_ROUTES: the same grid through the Python package's fa4jit.attention, beside cuDNN)
      FA4JIT_LIBRARY="$PWD/$BIN/libfa4jit.so" PYTHONPATH="$PWD/python" PYTHONUNBUFFERED=1 timeout 400 \
        python3 scripts/bench_sdpa.py --head-dim "$hd" --seqlen "$sl" ${PY_ROUTES:+--fa4jit "$PY_ROUTES"} \
        > "$OUT/bench_sdpa.jsonl" 2> "$OUT/bench_sdpa.err"
      tail -2 "$OUT/bench_sdpa.err"
      python3 scripts/bench_compare.py "$OUT/bench_fa4jit.jsonl" "$OUT/bench_sdpa.jsonl" | tee "$OUT/bench_table.md" ;;
    ab)
      # A/B in the same run (after `bench`, whose grid and SDPA figures it reuses): the binary
      # $BIN/fa4jit-base (built from the base commit, scripts/prepare_device_carry.sh --base REV)
      # over the same grid, cache apart so that neither sees the other's kernels.
      echo "== base binary: fa4jit bench $BENCH_ARGS"
      FA4JIT_CACHE_DIR=/tmp/fa4jit-cache-base timeout 300 "$BIN/fa4jit-base" bench $BENCH_ARGS --json \
        > "$OUT/bench_base.jsonl" 2> "$OUT/bench_base.err"
      tail -3 "$OUT/bench_base.err"
      python3 scripts/bench_ab.py "$OUT/bench_base.jsonl" "$OUT/bench_fa4jit.jsonl" "$OUT/bench_sdpa.jsonl" | tee "$OUT/bench_ab.md" ;;
    variants)
      VARIANTS=${VARIANTS:-default,serial,affine,affine+serial,skip-loads,skip-qk,skip-softmax,skip-pv,softmax-twice}
      VARIANT_SHAPES=${VARIANT_SHAPES:---head-dim 128 --seqlen 4096,16384 --causal 0}
      VARIANT_ROUTES=${VARIANT_ROUTES:-nvfp8,directp}
      echo "== fa4jit bench --route $VARIANT_ROUTES --schedule wgmma-ws --variants $VARIANTS $VARIANT_SHAPES"
      timeout 400 "$BIN/fa4jit" bench --route "$VARIANT_ROUTES" $VARIANT_SHAPES --schedule wgmma-ws --variants "$VARIANTS" \
        --reps 10 --json > "$OUT/bench_variants.jsonl" 2> "$OUT/bench_variants.err"
      tail -3 "$OUT/bench_variants.err"
      python3 scripts/bench_compare.py "$OUT/bench_variants.jsonl" "$OUT/bench_sdpa.jsonl" | tee "$OUT/bench_variants.md" ;;
  esac
done
# The device tool brings back a limited number of files: one archive of every log.
tar czf /tmp/fa4jit-logs.tgz -C "$OUT" . && find "$OUT" -type f -delete && mv /tmp/fa4jit-logs.tgz "$OUT/logs.tgz"
