#!/usr/bin/env python3
"""Sets `fa4jit bench --json` beside scripts/bench_sdpa.py output of the same run: a markdown
table of TFLOP/s per route and its ratio to cuDNN BF16 SDPA. Where the bench timed the call from
BF16 tensors too (e2e_tflops), a cell reads "end-to-end (x cuDNN) / kernel". Where bench_sdpa.py
timed the Python package too (--fa4jit), a column per route reads "Python (x cuDNN, x the C API
call timed beside it in the same process)"."""
import json, sys


def load(path):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                rows.append(json.loads(line))
    return rows


def main():
    ours, sdpa = load(sys.argv[1]), load(sys.argv[2])
    ref = {(r["head_dim"], r["seqlen"], r["causal"]): r for r in sdpa if r.get("kind") == "sdpa"}
    ceil = next((r for r in sdpa if r.get("kind") == "ceiling"), {})
    dev = next((r for r in sdpa if r.get("kind") == "device"), {})
    # A column per route, or per route/variant when `fa4jit bench --variants` ran several.
    def column(r):
        v = r.get("variant", "default")
        return r["route"] if v == "default" else f"{r['route']}/{v}"
    routes = []
    for r in ours:
        if column(r) not in routes:
            routes.append(column(r))
    print(f"device: {dev.get('name','?')}, torch {dev.get('torch','?')}; copy {ceil.get('copy_tb_s',0):.2f} TB/s, "
          f"BF16 GEMM {ceil.get('bf16_gemm_tflops',0):.0f} TF/s, FP8 GEMM {ceil.get('fp8_gemm_tflops',0):.0f} TF/s\n")
    py_routes = []
    for r in sdpa:
        for name in r:
            if name.startswith("python_") and name.endswith("_tflops") and name[7:-7] not in py_routes:
                py_routes.append(name[7:-7])
    head = ("| D | seqlen | causal | cuDNN | flash | " + " | ".join(f"{r} (x cuDNN)" for r in routes)
            + "".join(f" | Python {r} (x cuDNN, x C API)" for r in py_routes) + " |")
    print(head)
    print("|" + "---|" * (5 + len(routes) + len(py_routes)))
    keys = sorted({(r["head_dim"], r["seqlen"], r["causal"]) for r in ours})
    for k in keys:
        s = ref.get(k, {})
        cud = s.get("cudnn_tflops")
        cells = []
        for route in routes:
            m = next((r for r in ours if column(r) == route and (r["head_dim"], r["seqlen"], r["causal"]) == k), None)
            if not m or "tflops" not in m:
                cells.append("error")
            else:
                tf = m.get("e2e_tflops", m["tflops"])
                cell = f"{tf:.0f} ({tf/cud:.2f}x)" if cud else f"{tf:.0f}"
                cells.append(cell + (f" / {m['tflops']:.0f}" if "e2e_tflops" in m else ""))
        for route in py_routes:
            tf = s.get(f"python_{route}_tflops")
            cxx = s.get(f"capi_{route}_tflops")
            if tf is None:
                cells.append("error" if f"python_{route}_error" in s else "-")
            else:
                cells.append(f"{tf:.0f} ({tf / cud:.2f}x" if cud else f"{tf:.0f} (-")
                cells[-1] += f", {tf / cxx:.2f}x)" if cxx else ")"
        print(f"| {k[0]} | {k[1]} | {k[2]} | {cud or float('nan'):.0f} | {s.get('flash_tflops', float('nan')):.0f} | "
              + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
