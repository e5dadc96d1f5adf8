"""fa4jit.PagedKVCache: a paged KV cache layer of NVFP4 K and FP8 or MXFP4 V, each token row
scaled on its own (docs/NUMERICS.md §5), with `append` (new tokens' K/V quantized into their slots) and
`decode` (1-8 query tokens per sequence over its pages, GQA groups packed, split-KV merged on the
GPU). Both are custom ops (fa4jit::paged_append mutates the cache's storage; fa4jit::paged_decode
allocates its outputs and its workspace through PyTorch), so they run inside CUDA graphs with
static shapes per captured batch size and are traced by torch.compile. Imported only when torch
is importable."""
import ctypes
import math

import torch

from . import _library as L
from ._torch_ops import _current_stream, _tensor_desc


def _cache_at(storage, pages, kv_heads, page_size, head_dim, value_format):
    cache = L.PagedCache()
    L.check(L.library().fa4jit_paged_cache_at(storage.data_ptr(), pages, kv_heads, page_size, head_dim, value_format,
                                              ctypes.byref(cache)))
    return cache


def _rows_desc(x):
    """[tokens, kv_heads, D] as the C API's [tokens, kv_heads, 1, D] tensor."""
    return L.Tensor(x.data_ptr(), L.DTYPE_BF16, L.Shape4(x.shape[0], x.shape[1], 1, x.shape[2]),
                    L.Shape4(x.stride(0), x.stride(1), x.shape[2], 1))


@torch.library.custom_op("fa4jit::paged_append", mutates_args=("storage",))
def _paged_append(storage: torch.Tensor, k: torch.Tensor, v: torch.Tensor, slot_mapping: torch.Tensor, pages: int,
                  kv_heads: int, page_size: int, head_dim: int, value_format: int) -> None:
    device = storage.device.index
    args = L.AppendKvArgs(_cache_at(storage, pages, kv_heads, page_size, head_dim, value_format), _rows_desc(k),
                          _rows_desc(v),
                          slot_mapping.data_ptr(), ctypes.c_void_p(_current_stream(device)))
    L.check(L.library().fa4jit_append_kv(L.engine(device).handle, ctypes.byref(args)))


@_paged_append.register_fake
def _(storage, k, v, slot_mapping, pages, kv_heads, page_size, head_dim, value_format):
    return None


def _decode_args(storage, q, o, lse, block_table, seq_lens, pages, kv_heads, page_size, value_format, softmax_scale,
                 max_seq_len, splits):
    return L.DecodeArgs(_cache_at(storage, pages, kv_heads, page_size, q.shape[-1], value_format), _tensor_desc(q),
                        _tensor_desc(o), lse.data_ptr(), block_table.data_ptr(), block_table.shape[1],
                        seq_lens.data_ptr(), max_seq_len, softmax_scale, splits,
                        ctypes.c_void_p(_current_stream(q.device.index)))


@torch.library.custom_op("fa4jit::paged_decode", mutates_args=())
def _paged_decode(storage: torch.Tensor, q: torch.Tensor, block_table: torch.Tensor, seq_lens: torch.Tensor,
                  pages: int, kv_heads: int, page_size: int, value_format: int, softmax_scale: float, max_seq_len: int,
                  splits: int) -> tuple[torch.Tensor, torch.Tensor]:
    o = torch.empty(q.shape, dtype=torch.bfloat16, device=q.device)
    lse = torch.empty(q.shape[:3], dtype=torch.float32, device=q.device)
    args = _decode_args(storage, q, o, lse, block_table, seq_lens, pages, kv_heads, page_size, value_format,
                        softmax_scale, max_seq_len, splits)
    eng = L.engine(q.device.index)
    needed = ctypes.c_uint64()
    L.check(L.library().fa4jit_decode_workspace_size(eng.handle, ctypes.byref(args), ctypes.byref(needed)))
    # (through PyTorch's allocator: a captured graph keeps it, and no cuMemAlloc happens in capture)
    workspace = torch.empty(max(int(needed.value), 1), dtype=torch.uint8, device=q.device)
    L.check(L.library().fa4jit_decode_with_workspace(eng.handle, ctypes.byref(args), workspace.data_ptr(),
                                                     needed.value))
    return o, lse


@_paged_decode.register_fake
def _(storage, q, block_table, seq_lens, pages, kv_heads, page_size, value_format, softmax_scale, max_seq_len, splits):
    return q.new_empty(q.shape, dtype=torch.bfloat16), q.new_empty(q.shape[:3], dtype=torch.float32)


class PagedKVCache:
    """One attention layer's paged KV cache on a CUDA device: NVFP4 K and `value_format` V, "fp8"
    (E4M3 with a scale per row; 6.5 bits per element over K and V) or "mxfp4" (4.5 bits),
    `num_pages` pages of `page_size` tokens (a power of two in [16, 256]) for `num_kv_heads` heads
    of head dim 64 or 128, in one uint8 tensor (`storage`).

        cache = fa4jit.PagedKVCache(num_pages=4096, num_kv_heads=8, head_dim=128, page_size=16)
        cache.append(k, v, slot_mapping)              # k, v [tokens, 8, 128] bf16; slots int64
        o = cache.decode(q, block_table, seq_lens)    # q [batch, 32, queries, 128] bf16
    """

    def __init__(self, num_pages, num_kv_heads, head_dim, page_size=16, value_format="fp8", device="cuda"):
        if value_format not in L.KV_VALUE_FORMATS:
            raise ValueError(f"fa4jit.PagedKVCache: value_format {value_format!r} is not fp8 or mxfp4")
        self.value_format = value_format
        self._format_code = L.KV_VALUE_FORMATS[value_format]
        needed = ctypes.c_uint64()
        L.check(L.library().fa4jit_paged_cache_bytes(num_pages, num_kv_heads, page_size, head_dim, self._format_code,
                                                     ctypes.byref(needed)))
        self.num_pages, self.num_kv_heads, self.head_dim, self.page_size = num_pages, num_kv_heads, head_dim, page_size
        self.storage = torch.zeros(int(needed.value), dtype=torch.uint8, device=device)
        if self.storage.device.type != "cuda":
            raise ValueError(f"fa4jit.PagedKVCache: device {self.storage.device} is not a CUDA device")

    def _check_rows(self, name, x):
        if not isinstance(x, torch.Tensor) or x.dtype != torch.bfloat16 or x.dim() != 3:
            raise TypeError(f"fa4jit.PagedKVCache: {name} must be a bfloat16 [tokens, kv_heads, head_dim] tensor")
        if tuple(x.shape[1:]) != (self.num_kv_heads, self.head_dim) or x.stride(-1) != 1:
            raise ValueError(f"fa4jit.PagedKVCache: {name} is {tuple(x.shape)}; expected [tokens, "
                             f"{self.num_kv_heads}, {self.head_dim}] with the head dim contiguous")
        if x.device != self.storage.device:
            raise ValueError(f"fa4jit.PagedKVCache: {name} is on {x.device}, the cache on {self.storage.device}")

    def append(self, k, v, slot_mapping):
        """Quantizes new tokens' K and V ([tokens, kv_heads, head_dim] bfloat16) into their slots:
        slot_mapping (int64 [tokens]) gives page * page_size + row per token; a negative slot
        skips the token and one past the cache writes nothing. Each token's rows are scaled on
        their own, so a token's bits never depend on other tokens."""
        self._check_rows("k", k)
        self._check_rows("v", v)
        if k.shape[0] != v.shape[0] or slot_mapping.dtype != torch.int64 or tuple(slot_mapping.shape) != (k.shape[0],):
            raise ValueError("fa4jit.PagedKVCache.append: k and v need the same tokens and slot_mapping int64 [tokens]")
        torch.ops.fa4jit.paged_append(self.storage, k, v, slot_mapping.to(self.storage.device).contiguous(),
                                      self.num_pages, self.num_kv_heads, self.page_size, self.head_dim,
                                      self._format_code)

    def decode(self, q, block_table, seq_lens, *, max_seq_len=0, softmax_scale=None, splits=0, return_lse=False,
               layout="bhsd"):
        """Attention of `queries` new tokens per sequence over the sequence's cached tokens.

        q: bfloat16 [batch, q_heads, queries, head_dim] (layout "bhsd") or [batch, queries, q_heads,
        head_dim] ("bshd"), q_heads a multiple of num_kv_heads; block_table: int32 [batch, n], the
        sequence's pages in order; seq_lens: int32 [batch], its cached tokens, the new ones
        included (query i sees tokens j <= i + seq_len - queries). max_seq_len bounds seq_lens for
        the split choice (0: the block table's capacity); splits forces 1-16 key splits. Returns O
        in q's layout (and the LSE [batch, q_heads, queries] with return_lse). A sequence whose
        length exceeds its block table, or whose pages lie outside the cache, gets NaN rows."""
        if layout not in ("bhsd", "bshd"):
            raise ValueError(f"fa4jit.PagedKVCache.decode: unknown layout {layout!r} (bhsd or bshd)")
        if not isinstance(q, torch.Tensor) or q.dtype != torch.bfloat16 or q.dim() != 4:
            raise TypeError("fa4jit.PagedKVCache.decode: q must be a 4-D bfloat16 tensor")
        qv = q if layout == "bhsd" else q.transpose(1, 2)
        if qv.stride(-1) != 1:
            qv = qv.contiguous()
        if block_table.dtype != torch.int32 or block_table.dim() != 2 or block_table.shape[0] != qv.shape[0]:
            raise ValueError("fa4jit.PagedKVCache.decode: block_table must be int32 [batch, pages per sequence]")
        if seq_lens.dtype != torch.int32 or tuple(seq_lens.shape) != (qv.shape[0],):
            raise ValueError("fa4jit.PagedKVCache.decode: seq_lens must be int32 [batch]")
        scale = 1.0 / math.sqrt(qv.shape[-1]) if softmax_scale is None else float(softmax_scale)
        o, lse = torch.ops.fa4jit.paged_decode(self.storage, qv, block_table.contiguous(), seq_lens.contiguous(),
                                               self.num_pages, self.num_kv_heads, self.page_size, self._format_code,
                                               scale, int(max_seq_len), int(splits))
        if layout == "bshd":
            o = o.transpose(1, 2)
        return (o, lse) if return_lse else o
