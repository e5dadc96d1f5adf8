#!/usr/bin/env python3
"""Context parallelism with fa4jit: every rank holds all the queries and one shard of the keys and
values; each attends to its shard, the ranks gather the (O, LSE) states, and fa4jit.merge_states
turns them into attention over all the keys, identical on every rank.

    # one process per GPU (NCCL), e.g. torchrun --nproc-per-node 2 context_parallel.py
    o, lse = context_parallel_attention(q, k_shard, v_shard)

`attend` computes one rank's state: fa4jit.attention(..., return_lse=True) on CUDA tensors by
default, or exact FP32 attention (`exact_attention`) for CPU tensors, where the Gloo backend runs
the same recipe on one machine (tests/python/test_context_parallel.py).

Sharding keys splits a causal mask across ranks: each shard would need the diagonal offset of its
first key, which fa4jit's bottom-right aligned causal mask does not take. The recipe is for
attention without a causal mask (prefill over a shared prefix, cross attention, decode over a long
context) or for callers that pass each shard a mask of their own through `attend`.

Run as a script, it checks itself: `python3 context_parallel.py` starts two Gloo processes on the
CPU (or, with --nccl, one process per visible GPU) and compares the merged state with one pass over
all the keys.
"""
import argparse
import math
import os
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import fa4jit


def exact_attention(q, k, v, softmax_scale=None):
    """Attention and its LSE in FP32 (PyTorch, any device): [B, H, S, D] in, O in q's dtype and the
    float32 LSE [B, H, Sq] (natural log) out. Key/value heads are repeated for GQA."""
    scale = softmax_scale if softmax_scale is not None else 1.0 / math.sqrt(q.shape[-1])
    group = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
    s = (q.float() @ k.float().transpose(-1, -2)) * scale
    lse = torch.logsumexp(s, -1)
    return (torch.softmax(s, -1) @ v.float()).to(q.dtype), lse


def fa4jit_attention(q, k, v, route="directp"):
    """One rank's state through fa4jit (CUDA tensors)."""
    return fa4jit.attention(q, k, v, route=route, return_lse=True)


def context_parallel_attention(q, k_shard, v_shard, group=None, attend=None):
    """Attention of q over the keys of every rank's shard: this rank's state, all-gathered and
    merged. q [B, Hq, Sq, D] is the same on every rank; k_shard, v_shard [B, Hkv, Sk_rank, D] are
    this rank's keys. Returns (O, LSE) over all the keys."""
    if attend is None:
        attend = fa4jit_attention if q.is_cuda else exact_attention
    o, lse = attend(q, k_shard, v_shard)
    world = dist.get_world_size(group)
    outputs = [torch.empty_like(o) for _ in range(world)]
    lses = [torch.empty_like(lse) for _ in range(world)]
    dist.all_gather(outputs, o.contiguous(), group=group)
    dist.all_gather(lses, lse.contiguous(), group=group)
    return fa4jit.merge_states(outputs, lses)


def _problem(seed, device, dtype, shape):
    batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim = shape
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(batch, heads_q, seqlen_q, head_dim, generator=g)
    k = torch.randn(batch, heads_kv, seqlen_k, head_dim, generator=g)
    v = torch.randn(batch, heads_kv, seqlen_k, head_dim, generator=g)
    return [t.to(device=device, dtype=dtype) for t in (q, k, v)]


def _rank_main(rank, world, backend, init_file, shape, dtype_name, result_dir):
    """One rank of the self-check: its shard of a seeded problem, the merged state, and the error
    against one pass over all the keys (written by rank 0)."""
    device = torch.device("cuda", rank) if backend == "nccl" else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    dist.init_process_group(backend, init_method=f"file://{init_file}", rank=rank, world_size=world)
    dtype = getattr(torch, dtype_name)
    q, k, v = _problem(1234, device, dtype, shape)
    keys = k.shape[2]
    first, last = rank * keys // world, (rank + 1) * keys // world
    o, lse = context_parallel_attention(q, k[:, :, first:last], v[:, :, first:last])
    if rank == 0:
        ref_o, ref_lse = exact_attention(q.double(), k.double(), v.double())
        rel = ((o.double() - ref_o).norm() / ref_o.norm()).item()
        lse_err = (lse.double() - ref_lse).abs().max().item()
        with open(os.path.join(result_dir, "result.txt"), "w") as f:
            f.write(f"{rel} {lse_err}\n")
    dist.barrier()
    dist.destroy_process_group()


def self_check(world, backend, shape, dtype_name):
    """Runs the recipe over `world` processes; returns (rel-L2 of O, max |LSE error|) against FP64."""
    with tempfile.TemporaryDirectory() as tmp:
        mp.spawn(_rank_main, args=(world, backend, os.path.join(tmp, "init"), shape, dtype_name, tmp), nprocs=world,
                 join=True)
        with open(os.path.join(tmp, "result.txt")) as f:
            rel, lse_err = (float(x) for x in f.read().split())
    return rel, lse_err


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nccl", action="store_true", help="one process per visible GPU, NCCL (default: 2 on Gloo)")
    parser.add_argument("--world", type=int, default=2, help="processes for Gloo (default 2)")
    args = parser.parse_args()
    if args.nccl:
        world, backend, dtype = torch.cuda.device_count(), "nccl", "bfloat16"
        if world < 2:
            sys.exit("--nccl needs at least two GPUs")
    else:
        world, backend, dtype = args.world, "gloo", "float32"
    shape = (2, 8, 2, 64, 4096, 128)  # batch, query heads, key/value heads, queries, keys, head dim
    rel, lse_err = self_check(world, backend, shape, dtype)
    print(f"{backend}, {world} ranks, {dtype}: rel-L2 of O {rel:.2e}, max |LSE error| {lse_err:.2e} "
          "against one FP64 pass over all the keys")


if __name__ == "__main__":
    main()
