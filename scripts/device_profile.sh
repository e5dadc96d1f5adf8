#!/usr/bin/env bash
# Nsight Compute on the GPU machine (clocks left alone: --clock-control none). Two jobs:
#   stalls ROUTE D SEQLEN   one launch of the attention kernel: warp-state and pipe sections and
#                           the per-SASS-instruction stall samples (source page, CSV)
#   split  ROUTE D SEQLEN   the duration of every kernel of one forward (widening passes apart)
#   memory ROUTE D SEQLEN   one launch of the attention kernel: speed of light, memory workload
#                           (shared-memory and L2 throughput, pipe utilization)
# Binaries from .device-carry/ (scripts/prepare_device_carry.sh); output under $OUT.
# Usage: scripts/device_profile.sh stalls directp 128 16384 split nvfp8 128 4096 ...
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/fa4jit-out}; mkdir -p "$OUT"
BIN=.device-carry
export FA4JIT_CACHE_DIR=/tmp/fa4jit-cache
NCU=${NCU:-ncu}
while [ $# -ge 4 ]; do
  job=$1 route=$2 d=$3 s=$4; shift 4
  shape=(--route "$route" --head-dim "$d" --seqlen "$s" --causal 0 --reps 2 ${PROFILE_BENCH_ARGS:-})
  tag="${route}_d${d}_s${s}"
  timeout 120 "$BIN/fa4jit" bench "${shape[@]}" > /dev/null 2>&1 # compile into the cache first
  case "$job" in
    stalls)
      echo "== ncu stalls $tag"
      timeout 300 "$NCU" --clock-control none --kernel-name "regex:attn_${route}_d${d}_c0_[0-9a-f]+$" --launch-skip 3 \
        --launch-count 1 --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis \
        --section InstructionStats --section SourceCounters --section SpeedOfLight -o "$OUT/$tag" -f \
        "$BIN/fa4jit" bench "${shape[@]}" > "$OUT/ncu_$tag.log" 2>&1
      tail -3 "$OUT/ncu_$tag.log"
      "$NCU" -i "$OUT/$tag.ncu-rep" --page details > "$OUT/details_$tag.txt" 2>&1
      "$NCU" -i "$OUT/$tag.ncu-rep" --page source --csv --print-source sass 2>/dev/null | gzip > "$OUT/source_$tag.csv.gz"
      grep -E "Duration|Issue Slots Busy|Eligible Warps|Active Warps Per|No Eligible|Warp Cycles Per Issued" \
        "$OUT/details_$tag.txt" | head -12
      rm -f "$OUT/$tag.ncu-rep" ;;
    memory)
      echo "== ncu memory $tag"
      timeout 300 "$NCU" --clock-control none --kernel-name "regex:attn_${route}_d${d}_c0_[0-9a-f]+$" --launch-skip 3 \
        --launch-count 1 --section SpeedOfLight --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables \
        --section ComputeWorkloadAnalysis -o "$OUT/mem_$tag" -f "$BIN/fa4jit" bench "${shape[@]}" > "$OUT/ncu_mem_$tag.log" 2>&1
      tail -2 "$OUT/ncu_mem_$tag.log"
      "$NCU" -i "$OUT/mem_$tag.ncu-rep" --page details > "$OUT/details_mem_$tag.txt" 2>&1
      grep -iE "Duration|Shared|L2 Cache Throughput|DRAM Throughput|Compute \(SM\) Throughput|Memory Throughput|Bank" \
        "$OUT/details_mem_$tag.txt" | head -24
      rm -f "$OUT/mem_$tag.ncu-rep" ;;
    split)
      echo "== ncu kernel durations $tag"
      timeout 300 "$NCU" --clock-control none --kernel-name "regex:fa4jit_" --launch-skip 9 --launch-count 6 \
        --metrics gpu__time_duration.sum --csv "$BIN/fa4jit" bench "${shape[@]}" 2>/dev/null \
        | grep gpu__time_duration | awk -F'","' '{print $5 "," $(NF)}' | tee "$OUT/split_$tag.csv" ;;
  esac
done
