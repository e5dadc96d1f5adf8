"""fa4jit: FP4/FP8 FlashAttention kernels generated and compiled at run time.

    import torch, fa4jit
    o = fa4jit.attention(q, k, v, causal=True)              # q, k, v [B, H, S, D] bf16/fp16 on CUDA
    o, lse = fa4jit.attention(q, k, v, route="nvfp8", return_lse=True)
    fa4jit.set_auto_route_budget(min_cosine=0.98, logit_std=16)   # route="auto": the fastest route
    o = fa4jit.attention(q, k, v, route="auto")                    # predicted to meet the budget
    kv = fa4jit.quantize_kv(k, v)                            # a KV cache quantized once
    o = fa4jit.attention(q, kv)
    o, lse = fa4jit.merge_state(o_a, lse_a, o_b, lse_b)     # attention over two key sets, merged
    cache = fa4jit.PagedKVCache(num_pages, num_kv_heads, head_dim, page_size=16)
    cache.append(k, v, slot_mapping)                         # new tokens into an NVFP4/FP8 paged cache
    o = cache.decode(q, block_table, seq_lens)               # decode over it, split-KV on the GPU

Importing needs no GPU and no torch; `attention` needs torch with CUDA. `python -m fa4jit` runs
the fa4jit command-line tool (accuracy, tune, cache, tmem, ...).
"""
from . import _library

__all__ = ["attention", "quantize_kv", "merge_state", "merge_states", "PagedKVCache", "release_workspaces", "version",
           "set_auto_route_budget", "auto_route", "Fa4jitError", "__version__"]

Fa4jitError = _library.Fa4jitError


def set_auto_route_budget(min_cosine=0.98, logit_std=1.0):
    """route="auto" then runs, per shape, the fastest route preset whose CPU model predicts a cosine
    of O against FP64 of at least min_cosine for logits q.k.softmax_scale of standard deviation
    logit_std (docs/TUNING.md, "Route auto")."""
    _library.set_auto_route_budget(min_cosine, logit_std)


def auto_route(head_dim, seqlen_k, causal=False, device=0):
    """(route, predicted cosine) that route="auto" runs for this shape under the current budget."""
    return _library.auto_route(device, head_dim, causal, seqlen_k)


def version():
    """The version of the loaded libfa4jit.so."""
    return _library.library().fa4jit_version().decode()


__version__ = "0.5.0"

try:
    import torch as _torch  # noqa: F401
except ImportError:  # the C API still loads; attention needs torch
    def attention(*args, **kwargs):
        raise ImportError("fa4jit's tensor functions (attention, quantize_kv, merge_states) need PyTorch "
                          "(pip install torch)")

    quantize_kv = release_workspaces = merge_state = merge_states = PagedKVCache = attention
else:
    # (importing registers torch.ops.fa4jit.*)
    from ._torch_ops import attention, quantize_kv, release_workspaces  # noqa: E402
    from ._merge import merge_state, merge_states  # noqa: E402
    from ._paged import PagedKVCache  # noqa: E402
