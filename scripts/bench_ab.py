#!/usr/bin/env python3
"""Sets two `fa4jit bench --json` runs of the same grid side by side (a base binary and the
working tree's, timed in the same device call) with cuDNN BF16 SDPA of that call:
usage: bench_ab.py BASE.jsonl NEW.jsonl SDPA.jsonl -> a markdown table per route and shape."""
import sys

from bench_compare import load


def main():
    base, new, sdpa = load(sys.argv[1]), load(sys.argv[2]), load(sys.argv[3])
    ref = {(r["head_dim"], r["seqlen"], r["causal"]): r.get("cudnn_tflops") for r in sdpa if r.get("kind") == "sdpa"}

    def key(r):
        return (r["route"], r.get("variant", "default"), r["head_dim"], r["seqlen"], r["causal"])

    base_by = {key(r): r for r in base if "tflops" in r}
    print("| route | D | seqlen | causal | cuDNN | base | new | new / base | new x cuDNN |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in new:
        if "tflops" not in r:
            print(f"| {r.get('route','?')} | {r.get('head_dim','?')} | {r.get('seqlen','?')} | {r.get('causal','?')} "
                  f"| | | error | | |")
            continue
        k = key(r)
        b = base_by.get(k)
        cud = ref.get(k[2:])
        bt = f"{b['tflops']:.0f}" if b else "–"
        ratio = f"{r['tflops'] / b['tflops']:.3f}" if b else "–"
        vs = f"{r['tflops'] / cud:.2f}x" if cud else "–"
        route = k[0] if k[1] == "default" else f"{k[0]}/{k[1]}"
        print(f"| {route} | {k[2]} | {k[3]} | {k[4]} | {cud or float('nan'):.0f} | {bt} | {r['tflops']:.0f} | {ratio} | {vs} |")


if __name__ == "__main__":
    main()
