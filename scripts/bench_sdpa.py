#!/usr/bin/env python3
"""Times PyTorch scaled_dot_product_attention (cuDNN and flash backends, BF16) on the fa4jit
benchmark grid, plus the device-copy and GEMM ceilings, in the same run as `fa4jit bench`.

Method (as `fa4jit bench`'s, tools/bench_support.h): CUDA events, warm-up, median of repeats, inputs rotated
among several buffers, random data (never zeros). Prints one JSON object per line (for
scripts/bench_compare.py) and a short table at the end.
"""
import argparse, json, math, statistics, sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


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


def attn_flops(b, h, sq, sk, d, causal):
    f = 4.0 * b * h * sq * sk * d
    if causal:  # bottom-right aligned, sq == sk here: about half the pairs
        f *= (sk + 1) / (2.0 * sk) if sq == sk else 0.5
    return f


def ceilings():
    n = 1 << 28  # 512 MiB of bf16 per buffer
    x = torch.randn(n, device="cuda", dtype=torch.bfloat16); y = torch.empty_like(x)
    ms = time_ms(lambda: y.copy_(x))
    copy_tbs = 2 * x.numel() * 2 / (ms * 1e-3) / 1e12
    m = 8192
    a = torch.randn(m, m, device="cuda", dtype=torch.bfloat16); bm = torch.randn(m, m, device="cuda", dtype=torch.bfloat16)
    ms = time_ms(lambda: a @ bm)
    bf16_tf = 2 * m ** 3 / (ms * 1e-3) / 1e12
    out = {"kind": "ceiling", "copy_tb_s": copy_tbs, "bf16_gemm_tflops": bf16_tf}
    try:
        a8 = a.to(torch.float8_e4m3fn); b8 = bm.to(torch.float8_e4m3fn).t().contiguous().t()
        one = torch.tensor(1.0, device="cuda")
        ms = time_ms(lambda: torch._scaled_mm(a8, b8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16))
        out["fp8_gemm_tflops"] = 2 * m ** 3 / (ms * 1e-3) / 1e12
    except Exception as e:  # noqa: BLE001
        out["fp8_gemm_error"] = str(e)[:200]
    return out


def main():
    ap = argparse.ArgumentParser()
    # The names `fa4jit bench` takes (the plural spellings too).
    ap.add_argument("--head-dim", "--head-dims", dest="head_dims", default="64,128,256")
    ap.add_argument("--seqlen", "--seqlens", dest="seqlens", default="1024,4096,8192,16384,32768")
    ap.add_argument("--causal", default="0,1")
    ap.add_argument("--tokens", type=int, default=32768 * 16, help="batch*heads*seqlen target")
    args = ap.parse_args()
    torch.manual_seed(0)
    print(json.dumps({"kind": "device", "name": torch.cuda.get_device_name(),
                      "torch": torch.__version__, "cuda": torch.version.cuda,
                      "cudnn": torch.backends.cudnn.version()}), flush=True)
    print(json.dumps(ceilings()), flush=True)
    rows = []
    for d in map(int, args.head_dims.split(",")):
        for s in map(int, args.seqlens.split(",")):
            for causal in map(int, args.causal.split(",")):
                h = 2048 // d * 2 if d <= 128 else 16  # 32 heads at D64/128... keep work constant
                h = {64: 32, 128: 16, 256: 8}.get(d, 16)
                b = max(1, args.tokens // (h * s))
                bufs = [[torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16) for _ in range(3)] for _ in range(2)]
                row = {"kind": "sdpa", "head_dim": d, "seqlen": s, "causal": causal, "batch": b, "heads": h}
                for name, be in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
                    i = [0]
                    def run():
                        q, k, v = bufs[i[0] % 2]; i[0] += 1
                        F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))
                    try:
                        with sdpa_kernel([be]):
                            ms = time_ms(run)
                        row[name + "_ms"] = ms
                        row[name + "_tflops"] = attn_flops(b, h, s, s, d, causal) / (ms * 1e-3) / 1e12
                    except Exception as e:  # noqa: BLE001
                        row[name + "_error"] = str(e)[:160]
                rows.append(row)
                print(json.dumps(row), flush=True)
                del bufs
    print("\n  D   seqlen causal  cudnn TF/s  flash TF/s", file=sys.stderr)
    for r in rows:
        print(f"{r['head_dim']:4d} {r['seqlen']:7d} {r['causal']:5d} {r.get('cudnn_tflops', float('nan')):10.1f} {r.get('flash_tflops', float('nan')):10.1f}", file=sys.stderr)


if __name__ == "__main__":
    main()
