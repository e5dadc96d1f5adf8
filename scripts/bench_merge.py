#!/usr/bin/env python3
"""Times fa4jit.merge_states at split-KV decode and context-parallel shapes beside the device copy
bandwidth and the same merge written with PyTorch operations, in one run.

Bytes moved: every part's O and LSE read once, the merged O and LSE written once; the floor is
those bytes at the measured copy bandwidth (a device-to-device copy of a 1 GiB buffer). Method as
scripts/bench_sdpa.py (CUDA events, warm-up, median of repeats), on a CUDA graph of 20 calls so
that the device time is timed, not Python's call overhead (as a serving runtime replays its decode
step). Prints one JSON object per line and a table. Usage: bench_merge.py [--reps N] (with FA4JIT_LIBRARY and PYTHONPATH set)."""
import argparse
import json
import statistics

import torch

import fa4jit
from fa4jit import _merge


def time_ms(fn, warmup=5, reps=20):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def graph_ms(fn, reps, calls=20):
    """Device time of one fn() call: `calls` of them captured in a CUDA graph, the replay timed."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            fn()
    return time_ms(graph.replay, reps=reps) / calls


def copy_bandwidth_gbs(reps):
    src = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    ms = time_ms(lambda: dst.copy_(src), reps=reps)
    return 2 * src.numel() / ms / 1e6  # read + write


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args()
    copy = copy_bandwidth_gbs(args.reps)
    print(json.dumps({"kind": "copy", "gbs": round(copy, 1)}))
    # (batch, query heads, query rows, head dim, parts, dtype): split-KV decode (one query row per
    # head, 32 heads) and context-parallel prefill (4k query rows)
    shapes = [(64, 32, 1, 128, 8, torch.float32), (128, 32, 4, 128, 16, torch.float32),
              (1, 32, 4096, 128, 2, torch.bfloat16), (1, 32, 4096, 128, 8, torch.bfloat16),
              (4, 16, 4096, 64, 4, torch.bfloat16)]
    rows = []
    for b, h, s, d, n, dtype in shapes:
        outs = [torch.randn(b, h, s, d, device="cuda").to(dtype) for _ in range(n)]
        lses = [torch.randn(b, h, s, device="cuda") for _ in range(n)]
        moved = (n + 1) * (outs[0].numel() * outs[0].element_size() + lses[0].numel() * 4)
        ms = graph_ms(lambda: fa4jit.merge_states(outs, lses), args.reps)
        torch_ms = graph_ms(lambda: _merge._merge_states_torch(outs, lses, "bhsd"), args.reps)
        row = {"kind": "merge", "batch": b, "heads": h, "rows": s, "head_dim": d, "parts": n,
               "dtype": str(dtype).replace("torch.", ""), "ms": round(ms, 4), "gbs": round(moved / ms / 1e6, 1),
               "of_copy": round(moved / ms / 1e6 / copy, 3), "floor_ms": round(moved / copy / 1e6, 4),
               "pytorch_ms": round(torch_ms, 4)}
        rows.append(row)
        print(json.dumps(row))
    print(f"\ncopy bandwidth {copy:.0f} GB/s")
    print("| B | H | rows | D | parts | dtype | ms | GB/s | of copy | floor ms | PyTorch ops ms |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['batch']} | {r['heads']} | {r['rows']} | {r['head_dim']} | {r['parts']} | {r['dtype']} | "
              f"{r['ms']:.4f} | {r['gbs']:.0f} | {r['of_copy']:.2f} | {r['floor_ms']:.4f} | {r['pytorch_ms']:.4f} |")


if __name__ == "__main__":
    main()
