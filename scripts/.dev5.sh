#!/usr/bin/env bash
# session 13 call 5 (exploration, validator relaxed locally): D128 directp tile shapes with FP16 scores
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=.device-carry; export FA4JIT_CACHE_DIR=/tmp/fa4jit-cache
mkdir -p "$OUT/d"; D="$OUT/d"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader | tee "$D/gpu.txt"
G="--routes directp --head-dims 128 --seqlens 4096,16384,32768 --causal 0,1 --reps 10 --json"
V="default,keys128+thread-blocks,rows128+keys128+thread-blocks,rows128+keys192"
R="rows128+keys192,rows128+keys128+thread-blocks,keys128+thread-blocks,default"
echo "== pass 1"; timeout 200 $BIN/fa4jit bench $G --variants $V > "$D/p1.jsonl" 2> "$D/p1.err"; tail -2 "$D/p1.err"
echo "== pass 2"; timeout 200 $BIN/fa4jit bench $G --variants $R > "$D/p2.jsonl" 2> "$D/p2.err"; tail -2 "$D/p2.err"
echo "== sdpa"; PYTHONUNBUFFERED=1 timeout 100 python3 scripts/bench_sdpa.py --head-dims 128 --seqlens 4096,16384,32768 > "$D/sdpa.jsonl" 2> "$D/sdpa.err"
python3 scripts/bench_compare.py "$D/p1.jsonl" "$D/sdpa.jsonl"; python3 scripts/bench_compare.py "$D/p2.jsonl" "$D/sdpa.jsonl"
tar czf "$OUT/logs.tgz" -C "$OUT" d
