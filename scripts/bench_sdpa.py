#!/usr/bin/env python3
"""Times PyTorch scaled_dot_product_attention (cuDNN and flash backends, BF16) on the fa4jit
benchmark grid, plus the device-copy and GEMM ceilings, in the same run as `fa4jit bench`.
With --fa4jit ROUTES it times `fa4jit.attention` from the same BF16 tensors too (the Python
package's call, end to end), and beside it the C API's fa4jit_forward_with_workspace on the same
tensors with its arguments made once (what a C++ runtime calls), the two interleaved repeat by
repeat so that clock drift between them cancels.

Method (as `fa4jit bench`'s, tools/bench_support.h): CUDA events, warm-up, median of repeats, inputs rotated
among several buffers, random data (never zeros). Prints one JSON object per line (for
scripts/bench_compare.py) and a short table at the end.
"""
import argparse, json, statistics, sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def time_interleaved_ms(fns, warmup=5, reps=20):
    """The median time of each call: CUDA events around every repeat, after warm-up, one repeat
    of each call in turn."""
    for fn in fns:
        for _ in range(warmup):
            fn()
    torch.cuda.synchronize()
    times = [[] for _ in fns]
    for _ in range(reps):
        for fn, ts in zip(fns, times):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record(); fn(); b.record()
            b.synchronize()
            ts.append(a.elapsed_time(b))
    return [statistics.median(ts) for ts in times]


def time_ms(fn, warmup=5, reps=20):
    return time_interleaved_ms([fn], warmup, reps)[0]


def fa4jit_calls(bufs, causal, route):
    """fa4jit.attention on the rotated buffers, and the C API call on the same buffers with its
    arguments (and workspace) made beforehand."""
    import ctypes
    import fa4jit
    from fa4jit import _library as L, _torch_ops as T
    lib, eng = L.library(), L.engine(torch.cuda.current_device())
    o = torch.empty_like(bufs[0][0])
    stream = torch.cuda.current_stream().cuda_stream
    args = [L.ForwardArgs(*(T._tensor_desc(t) for t in (q, k, v, o)), 0, L.ROUTES[route], int(causal),
                          q.shape[-1] ** -0.5, stream) for q, k, v in bufs]
    size = ctypes.c_uint64()
    L.check(lib.fa4jit_workspace_size(eng.handle, ctypes.byref(args[0]), ctypes.byref(size)))
    workspace = torch.empty(max(size.value, 1), dtype=torch.uint8, device="cuda")
    i, j = [0], [0]

    def python_call():
        q, k, v = bufs[i[0] % 2]; i[0] += 1
        fa4jit.attention(q, k, v, causal=bool(causal), route=route)

    def c_call():
        a = args[j[0] % 2]; j[0] += 1
        L.check(lib.fa4jit_forward_with_workspace(eng.handle, ctypes.byref(a), workspace.data_ptr(), workspace.numel()))
    return python_call, c_call


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
    ap.add_argument("--fa4jit", default="", help="fa4jit routes to time through the Python package, e.g. directp,nvfp8")
    args = ap.parse_args()
    fa4jit_routes = [r for r in args.fa4jit.split(",") if r]
    torch.manual_seed(0)
    print(json.dumps({"kind": "device", "name": torch.cuda.get_device_name(),
                      "torch": torch.__version__, "cuda": torch.version.cuda,
                      "cudnn": torch.backends.cudnn.version()}), flush=True)
    print(json.dumps(ceilings()), flush=True)
    rows = []
    for d in map(int, args.head_dims.split(",")):
        for s in map(int, args.seqlens.split(",")):
            for causal in map(int, args.causal.split(",")):
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
                for route in fa4jit_routes:
                    try:
                        for api, ms in zip(("python", "capi"), time_interleaved_ms(fa4jit_calls(bufs, causal, route))):
                            row[f"{api}_{route}_ms"] = ms
                            row[f"{api}_{route}_tflops"] = attn_flops(b, h, s, s, d, causal) / (ms * 1e-3) / 1e12
                    except Exception as e:  # noqa: BLE001
                        row[f"python_{route}_error"] = str(e)[:160]
                rows.append(row)
                print(json.dumps(row), flush=True)
                del bufs
    print("\n  D   seqlen causal  cudnn TF/s  flash TF/s", file=sys.stderr)
    for r in rows:
        print(f"{r['head_dim']:4d} {r['seqlen']:7d} {r['causal']:5d} {r.get('cudnn_tflops', float('nan')):10.1f} {r.get('flash_tflops', float('nan')):10.1f}", file=sys.stderr)


if __name__ == "__main__":
    main()
