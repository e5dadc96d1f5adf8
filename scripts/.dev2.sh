#!/usr/bin/env bash
# session 13 call 2: FP16 scores with thread key blocks (D64, D256) and on quad blocks; GPU test case; SDPA
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=.device-carry; export FA4JIT_CACHE_DIR=/tmp/fa4jit-cache
mkdir -p "$OUT/d"; D="$OUT/d"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader | tee "$D/gpu.txt"
G="--routes directp --head-dims 64,128,256 --seqlens 4096,16384,32768 --causal 0,1 --reps 10 --json"
echo "== bench pass 1"; timeout 240 $BIN/fa4jit bench $G --variants default,fp16-scores,fp16-scores+quad-blocks > "$D/p1.jsonl" 2> "$D/p1.err"; tail -2 "$D/p1.err"
echo "== bench pass 2"; timeout 200 $BIN/fa4jit bench $G --variants fp16-scores+quad-blocks,fp16-scores,default > "$D/p2.jsonl" 2> "$D/p2.err"; tail -2 "$D/p2.err"
echo "== sdpa"; PYTHONUNBUFFERED=1 timeout 120 python3 scripts/bench_sdpa.py --head-dims 64,128,256 --seqlens 4096,16384,32768 > "$D/sdpa.jsonl" 2> "$D/sdpa.err"; tail -1 "$D/sdpa.err"
python3 scripts/bench_compare.py "$D/p1.jsonl" "$D/sdpa.jsonl" > "$D/t1.md"; python3 scripts/bench_compare.py "$D/p2.jsonl" "$D/sdpa.jsonl" > "$D/t2.md"
cat "$D/t1.md" "$D/t2.md"
echo "== gpu test: FP16 scores"
timeout 180 $BIN/runtime_test_gpu_forward "*directp with FP16 scores" > "$D/test.log" 2>&1; echo "exit $?"
grep -E "FAILED|^test cases|^assertions|All tests passed|with message" -A3 "$D/test.log" | head -40; grep -E "directp" "$D/test.log" | head -30
tar czf "$OUT/logs.tgz" -C "$OUT" d
