"""fa4jit.merge_states: attention states (O, LSE) over disjoint key sets merged into the state over
their union (docs/NUMERICS.md §4), for split-KV and context parallelism. CUDA tensors go through
one fa4jit kernel as the custom op fa4jit::merge_states (CUDA-graph safe, traced by
torch.compile); tensors on other devices through the same rule in PyTorch. Imported only when
torch is importable."""
import ctypes
from typing import List, Tuple

import torch

from . import _library as L
from ._torch_ops import _current_stream, _tensor_desc

_STATE_DTYPES = (torch.bfloat16, torch.float16, torch.float32)
_NEG_INF = float("-inf")


def _bhsd(o, layout):
    """O as its [B, H, S, D] view."""
    return o if layout == "bhsd" else o.transpose(1, 2)


def _check_states(outputs, lses, layout):
    if layout not in ("bhsd", "bshd"):
        raise ValueError(f"fa4jit.merge_states: unknown layout {layout!r} (bhsd or bshd)")
    if len(outputs) != len(lses):
        raise ValueError(f"fa4jit.merge_states: {len(outputs)} outputs but {len(lses)} LSEs")
    if not 1 <= len(outputs) <= L.MAX_MERGE_PARTS:
        raise ValueError(f"fa4jit.merge_states: {len(outputs)} states; a merge takes 1 to {L.MAX_MERGE_PARTS} "
                         "(merge merged states for more)")
    first = outputs[0]
    for i, (o, lse) in enumerate(zip(outputs, lses)):
        if not isinstance(o, torch.Tensor) or not isinstance(lse, torch.Tensor):
            raise TypeError(f"fa4jit.merge_states: state {i}'s output and LSE must be torch.Tensors")
        if o.dim() != 4:
            raise ValueError(f"fa4jit.merge_states: output {i} must be 4-D ({layout}), got shape {tuple(o.shape)}")
        if o.dtype not in _STATE_DTYPES or o.dtype != first.dtype:
            raise TypeError(f"fa4jit.merge_states: output {i} is {o.dtype}; the outputs share one of bfloat16, "
                            f"float16 or float32 (output 0 is {first.dtype})")
        if o.shape != first.shape or o.device != first.device or lse.device != first.device:
            raise ValueError(f"fa4jit.merge_states: output {i} {tuple(o.shape)} on {o.device} differs from output 0 "
                             f"{tuple(first.shape)} on {first.device} (or its LSE is elsewhere)")
        b, h, s, _ = _bhsd(o, layout).shape
        if lse.dtype != torch.float32 or tuple(lse.shape) != (b, h, s):
            raise ValueError(f"fa4jit.merge_states: LSE {i} must be float32 [B, H, S] = {(b, h, s)}, got "
                             f"{lse.dtype} {tuple(lse.shape)}")


@torch.library.custom_op("fa4jit::merge_states", mutates_args=())
def _merge_states_cuda(outputs: List[torch.Tensor], lses: List[torch.Tensor],
                       layout: str) -> Tuple[torch.Tensor, torch.Tensor]:
    first = outputs[0]
    out = torch.empty_like(first)
    out_lse = torch.empty(lses[0].shape, dtype=torch.float32, device=first.device)
    lses = [lse.contiguous() for lse in lses]  # (the kernel reads dense LSEs: a copy only where one is not)
    states = (L.AttentionState * len(outputs))(
        *[L.AttentionState(_tensor_desc(_bhsd(o, layout)), lse.data_ptr()) for o, lse in zip(outputs, lses)])
    desc = _tensor_desc(_bhsd(out, layout))
    device = first.device.index
    L.check(L.library().fa4jit_merge_states(L.engine(device).handle, states, len(outputs), ctypes.byref(desc),
                                            out_lse.data_ptr(), ctypes.c_void_p(_current_stream(device))))
    return out, out_lse


@_merge_states_cuda.register_fake
def _(outputs, lses, layout):
    return torch.empty_like(outputs[0]), lses[0].new_empty(lses[0].shape, dtype=torch.float32)


def _merge_states_torch(outputs, lses, layout):
    """The kernel's rule in PyTorch, in FP32 (params.cuh of templates/fa4jit/merge)."""
    lse = torch.stack([x.float() for x in lses])  # [N, B, H, S]
    has_nan = torch.isnan(lse).any(0)
    m = lse.amax(0)
    empty = m == _NEG_INF
    m = torch.where(empty, torch.zeros_like(m), m)
    w = torch.exp(lse - m)
    total = w.sum(0)
    scale = w / torch.where(empty, torch.ones_like(total), total)
    merged_lse = torch.where(empty, torch.full_like(m, _NEG_INF), m + torch.log(total))
    merged_lse = torch.where(has_nan, torch.full_like(m, float("nan")), merged_lse)
    acc = torch.zeros(_bhsd(outputs[0], layout).shape, dtype=torch.float32, device=outputs[0].device)
    for i, o in enumerate(outputs):
        s = scale[i].unsqueeze(-1)
        acc = acc + torch.where(s != 0, s * _bhsd(o, layout).float(), torch.zeros_like(acc))  # empty: unread
    out = acc.to(outputs[0].dtype)
    return (out if layout == "bhsd" else out.transpose(1, 2).contiguous()), merged_lse


def merge_states(outputs, lses, *, layout="bhsd"):
    """Merges attention states over disjoint key sets into the state over their union.

    outputs: 1 to 16 tensors O of one shape and dtype (bfloat16, float16 or float32), [B, H, S, D]
    (layout "bhsd") or [B, S, H, D] ("bshd"), any strides with the head dim contiguous; lses: their
    float32 LSEs [B, H, S] (natural log), as fa4jit.attention(..., return_lse=True) returns them.
    Returns (O, LSE) of the union, computed in FP32: O = sum_i w_i O_i / sum_i w_i with
    w_i = exp(LSE_i - max LSE), LSE = log sum_i exp(LSE_i). A state whose LSE is -inf (no key) is
    not read; a row with no key in any state gets O = 0 and LSE = -inf; a NaN LSE gives a NaN row.
    CUDA tensors (head dim 64, 128 or 256): one kernel on the current stream, no synchronization
    (custom op fa4jit::merge_states). Other devices: the same rule in PyTorch.
    """
    outputs, lses = list(outputs), list(lses)
    _check_states(outputs, lses, layout)
    if outputs[0].device.type != "cuda":
        return _merge_states_torch(outputs, lses, layout)
    if outputs[0].shape[-1] not in (64, 128, 256):
        raise ValueError(f"fa4jit.merge_states: head dim {outputs[0].shape[-1]} is not supported on CUDA "
                         "(64, 128 or 256)")
    if any(o.stride(-1) != 1 for o in outputs):
        raise ValueError("fa4jit.merge_states: the outputs' head dim must be contiguous (stride 1)")
    return torch.ops.fa4jit.merge_states(outputs, lses, layout)


def merge_state(o_a, lse_a, o_b, lse_b, *, layout="bhsd"):
    """merge_states([o_a, o_b], [lse_a, lse_b]): the state of attention over the keys of both."""
    return merge_states([o_a, o_b], [lse_a, lse_b], layout=layout)
