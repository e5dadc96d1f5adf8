#!/usr/bin/env python3
"""Decode over fa4jit's paged NVFP4-K / FP8-V cache beside PyTorch SDPA's BF16 decode, in one run.

fa4jit's side is `fa4jit bench --decode --json` (Engine::decode with its split combine, 20 calls per
timed sample, block tables rotated over >= 256 MB of distinct pages so that nothing is timed from
L2). PyTorch's side is scaled_dot_product_attention on a contiguous BF16 cache [B, Hkv, context, D]
with enable_gqa, per backend (flash, cuDNN, efficient; the fastest one that runs is kept), the
same 20-call samples and rotation over distinct K/V copies. The BF16 roofline is the BF16 cache's
bytes at the copy bandwidth fa4jit's run measured.

Usage: bench_decode.py [--batch 1,4,16,64] [--context 4096,16384,65536,131072] [--page-size 16,64]
       [--reps N] (FA4JIT_CLI names the fa4jit binary). Prints JSON lines, then a table on stderr."""
import argparse
import json
import os
import statistics
import subprocess
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

CALLS = 20
MIN_DISTINCT_BYTES = 256e6


def time_ms(fn, reps):
    for _ in range(2):
        fn(0)
    torch.cuda.synchronize()
    times = []
    for r in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn(r)
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / CALLS)
    return statistics.median(times)


def sdpa_decode_ms(batch, context, q_heads, kv_heads, head_dim, reps):
    bytes_per_copy = batch * kv_heads * context * head_dim * 2 * 2
    copies = max(1, int(-(-MIN_DISTINCT_BYTES // bytes_per_copy)))
    g = torch.Generator(device="cuda").manual_seed(0)
    q = torch.randn(batch, q_heads, 1, head_dim, device="cuda", dtype=torch.bfloat16, generator=g)
    ks = [torch.randn(batch, kv_heads, context, head_dim, device="cuda", dtype=torch.bfloat16, generator=g)
          for _ in range(copies)]
    vs = [torch.randn_like(k) for k in ks]
    best = None
    for name, backend in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION),
                          ("efficient", SDPBackend.EFFICIENT_ATTENTION)):
        def run(r, backend=backend):
            with sdpa_kernel([backend]):
                for i in range(CALLS):
                    c = (r * CALLS + i) % copies
                    F.scaled_dot_product_attention(q, ks[c], vs[c], enable_gqa=True)
        try:
            ms = time_ms(run, reps)
        except RuntimeError as e:  # (a backend that does not take this shape)
            print(f"# sdpa {name} at batch {batch} context {context}: {str(e).splitlines()[0]}", file=sys.stderr)
            continue
        if best is None or ms < best[1]:
            best = (name, ms)
    del ks, vs
    torch.cuda.empty_cache()
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", default="1,4,16,64")
    ap.add_argument("--context", default="4096,16384,65536,131072")
    ap.add_argument("--page-size", default="16,64")
    ap.add_argument("--value-format", default="fp8,mxfp4")
    ap.add_argument("--q-heads", type=int, default=32)
    ap.add_argument("--kv-heads", type=int, default=8)
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--reps", type=int, default=10)
    args = ap.parse_args()
    cli = os.environ.get("FA4JIT_CLI", "fa4jit")
    proc = subprocess.run([cli, "bench", "--decode", "--json", "--batch", args.batch, "--context", args.context,
                           "--page-size", args.page_size, "--value-format", args.value_format, "--q-heads", str(args.q_heads), "--kv-heads",
                           str(args.kv_heads), "--head-dim", str(args.head_dim), "--reps", str(args.reps)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"fa4jit bench --decode failed: {proc.stderr.strip()}")
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    sdpa = {}
    for row in rows:
        key = (row["batch"], row["context"])
        if key not in sdpa:
            sdpa[key] = sdpa_decode_ms(row["batch"], row["context"], args.q_heads, args.kv_heads, args.head_dim,
                                       args.reps)
        best = sdpa[key]
        row["sdpa_backend"] = best[0] if best else None
        row["sdpa_ms"] = best[1] if best else None
        row["speedup_vs_sdpa"] = best[1] / row["ms"] if best else None
        print(json.dumps(row), flush=True)
    print(f"{'V':>5} {'batch':>5} {'context':>7} {'page':>4} {'splits':>6} {'ms':>8} {'x copy':>6} {'roof ms':>8} "
          f"{'sdpa ms':>8} {'backend':>9} {'bf16 roof':>9} {'x sdpa':>6}", file=sys.stderr)
    for r in rows:
        print(f"{r['value_format']:>5} {r['batch']:>5} {r['context']:>7} {r['page_size']:>4} {r['splits']:>6} {r['ms']:>8.4f} "
              f"{r['fraction_of_copy']:>6.2f} {r['cache_roofline_ms']:>8.4f} {r['sdpa_ms'] or float('nan'):>8.4f} "
              f"{r['sdpa_backend'] or '-':>9} {r['bf16_roofline_ms']:>9.4f} {r['speedup_vs_sdpa'] or float('nan'):>6.2f}",
              file=sys.stderr)


if __name__ == "__main__":
    main()
