#!/usr/bin/env python3
"""Times the training step of attention as PyTorch users call it: forward + backward from BF16
tensors that require grad, through fa4jit.attention(route="nvfp8") (the quantized training
route) and through PyTorch SDPA BF16 (cuDNN and flash backends), in one process and interleaved
repeat by repeat. Also the backward alone (the grad of a kept output), and fa4jit's deterministic
dQ and MXFP4 P/V variants. Before the timings: the floors, from the measured BF16 and FP8 GEMM
rates (the backward's five products at either rate) and the copy bandwidth.

Method as scripts/bench_sdpa.py: CUDA events, warm-up, medians. Prints one JSON object per line
(kept in docs/benchmarks/, turned into docs/BENCHMARKS.md by scripts/make_benchmarks.py) and a
table at the end. Usage: bench_backward.py [--head-dim 64,128] [--seqlen 1024,4096] [--causal 0,1]
"""
import argparse, json, math, sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from bench_sdpa import attn_flops, ceilings, time_interleaved_ms


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--head-dim", dest="head_dims", default="64,128")
    ap.add_argument("--seqlen", dest="seqlens", default="1024,4096,8192")
    ap.add_argument("--causal", default="0,1")
    ap.add_argument("--tokens", type=int, default=8192 * 16, help="batch * heads * seqlen")
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--reps", type=int, default=10)
    a = ap.parse_args()
    import fa4jit

    ceil = ceilings()
    print(json.dumps(ceil), flush=True)
    rows = []
    for d in (int(x) for x in a.head_dims.split(",")):
        for s in (int(x) for x in a.seqlens.split(",")):
            for causal in (int(x) for x in a.causal.split(",")):
                h = a.heads
                b = max(1, a.tokens // (h * s))
                torch.manual_seed(0)
                q, k, v, do = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16) for _ in range(4))
                for t in (q, k, v):
                    t.requires_grad_(True)

                def step(fn):
                    def run():
                        o = fn()
                        torch.autograd.grad(o, (q, k, v), do)
                    return run

                def sdpa(backend):
                    def fn():
                        with sdpa_kernel(backend):
                            return F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))
                    return fn

                def fa4(**kw):
                    return lambda: fa4jit.attention(q, k, v, causal=bool(causal), route="nvfp8", **kw)

                # The backward alone: the grad of one kept forward's output (retain_graph).
                def backward_only(fn):
                    o = fn()
                    return lambda: torch.autograd.grad(o, (q, k, v), do, retain_graph=True)

                calls = {
                    "sdpa_cudnn": step(sdpa(SDPBackend.CUDNN_ATTENTION)),
                    "sdpa_flash": step(sdpa(SDPBackend.FLASH_ATTENTION)),
                    "fa4jit": step(fa4()),
                    "fa4jit_deterministic": step(fa4(deterministic=True)),
                    "sdpa_cudnn_bwd": backward_only(sdpa(SDPBackend.CUDNN_ATTENTION)),
                    "fa4jit_bwd": backward_only(fa4()),
                }
                calls["fa4jit_mxfp4"] = step(fa4(backward_pv="mxfp4"))
                names, fns = [], []
                for name, fn in calls.items():
                    try:
                        fn()
                        names.append(name), fns.append(fn)
                    except Exception as e:  # noqa: BLE001 (a backend that does not take the shape)
                        print(json.dumps({"kind": "skipped", "call": name, "error": str(e)[:160]}), flush=True)
                ms = dict(zip(names, time_interleaved_ms(fns, warmup=3, reps=a.reps)))
                fwd = attn_flops(b, h, s, s, d, causal)
                step_flops, bwd_flops = 3.5 * fwd, 2.5 * fwd
                # Floors: the backward's five GEMMs (2.5x the forward's FLOPs) at the measured BF16
                # and FP8 GEMM rates.
                floor_bf16 = bwd_flops / (ceil["bf16_gemm_tflops"] * 1e12) * 1e3
                floor_fp8 = bwd_flops / (ceil.get("fp8_gemm_tflops", ceil["bf16_gemm_tflops"]) * 1e12) * 1e3
                row = {"kind": "backward", "batch": b, "heads": h, "seqlen": s, "head_dim": d, "causal": causal,
                       "ms": ms, "floor_bwd_bf16_ms": floor_bf16, "floor_bwd_fp8_ms": floor_fp8,
                       "step_tflops": {n: step_flops / (t * 1e-3) / 1e12 for n, t in ms.items() if not n.endswith("_bwd")},
                       "bwd_tflops": {n: bwd_flops / (t * 1e-3) / 1e12 for n, t in ms.items() if n.endswith("_bwd")}}
                print(json.dumps(row), flush=True)
                rows.append(row)
                del q, k, v, do
                torch.cuda.empty_cache()
    print("\n| D | S | causal | SDPA cuDNN step ms | fa4jit step ms | x cuDNN | det. ms | bwd: cuDNN / fa4jit ms | bwd floor BF16 / FP8 ms |",
          file=sys.stderr)
    print("|---|---|---|---|---|---|---|---|---|", file=sys.stderr)
    for r in rows:
        m = r["ms"]
        cu, fa = m.get("sdpa_cudnn", math.nan), m.get("fa4jit", math.nan)
        print(f"| {r['head_dim']} | {r['seqlen']} | {r['causal']} | {cu:.3f} | {fa:.3f} | {cu / fa:.2f} | "
              f"{m.get('fa4jit_deterministic', math.nan):.3f} | {m.get('sdpa_cudnn_bwd', math.nan):.3f} / "
              f"{m.get('fa4jit_bwd', math.nan):.3f} | {r['floor_bwd_bf16_ms']:.3f} / {r['floor_bwd_fp8_ms']:.3f} |",
              file=sys.stderr)


if __name__ == "__main__":
    main()
