#!/usr/bin/env python3
"""examples/context_parallel on the CPU: two and three Gloo processes, each attending to its shard
of the keys, merged with fa4jit.merge_states, against one FP64 pass over all the keys; and
fa4jit.merge_states' PyTorch rule on its edges. Needs PyTorch (exit status 77, a skip, without it).
Usage: test_context_parallel.py (with PYTHONPATH and FA4JIT_LIBRARY set)."""
import math
import os
import sys
import unittest

try:
    import torch
except ImportError:
    print("PyTorch is not installed: skipped")
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples",
                                "context_parallel"))
import context_parallel  # noqa: E402

import fa4jit  # noqa: E402


class ContextParallel(unittest.TestCase):
    def test_gloo_ranks_merge_to_one_pass_over_all_keys(self):
        for world in (2, 3):
            rel, lse_err = context_parallel.self_check(world, "gloo", (1, 4, 2, 16, 300, 64), "float32")
            self.assertLessEqual(rel, 1e-5, f"{world} ranks")
            self.assertLessEqual(lse_err, 1e-5, f"{world} ranks")


class MergeRule(unittest.TestCase):
    def shards(self, pieces, layout="bhsd"):
        g = torch.Generator().manual_seed(5)
        q, k, v = (torch.randn(2, 3, 7, 64, generator=g) for _ in range(3))
        k, v = torch.randn(2, 3, 90, 64, generator=g), torch.randn(2, 3, 90, 64, generator=g)
        bounds = [round(i * 90 / pieces) for i in range(pieces + 1)]
        states = [context_parallel.exact_attention(q, k[:, :, a:b], v[:, :, a:b]) for a, b in zip(bounds, bounds[1:])]
        full = context_parallel.exact_attention(q.double(), k.double(), v.double())
        if layout == "bshd":
            states = [(o.transpose(1, 2), lse) for o, lse in states]
        return states, full

    def test_shards_merge_exactly_in_both_layouts(self):
        for layout in ("bhsd", "bshd"):
            for pieces in (1, 2, 16):
                states, (ref_o, ref_lse) = self.shards(pieces, layout)
                o, lse = fa4jit.merge_states([s[0] for s in states], [s[1] for s in states], layout=layout)
                if layout == "bshd":
                    self.assertEqual(tuple(o.shape), (2, 7, 3, 64))
                    o = o.transpose(1, 2)
                rel = ((o.double() - ref_o).norm() / ref_o.norm()).item()
                self.assertLessEqual(rel, 1e-6, f"{layout}, {pieces} pieces")
                self.assertLessEqual((lse.double() - ref_lse).abs().max().item(), 1e-5)

    def test_empty_states_are_unread_and_all_empty_rows_are_zero(self):
        (a, lse_a), = self.shards(1)[0]
        garbage = torch.full_like(a, float("nan"))
        empty = torch.full_like(lse_a, -math.inf)
        o, lse = fa4jit.merge_state(a, lse_a, garbage, empty)
        self.assertTrue(torch.equal(o, a))
        self.assertTrue(torch.equal(lse, lse_a))
        o, lse = fa4jit.merge_state(garbage, empty, garbage, empty)
        self.assertTrue(torch.equal(o, torch.zeros_like(a)))
        self.assertTrue(bool((lse == -math.inf).all()))
        nan_lse = lse_a.clone()
        nan_lse[0, 0, 0] = float("nan")
        o, lse = fa4jit.merge_state(a, nan_lse, a, lse_a)
        self.assertTrue(bool(torch.isnan(lse[0, 0, 0])) and bool(torch.isnan(o[0, 0, 0]).all()))
        self.assertFalse(bool(torch.isnan(o[0, 0, 1:]).any()))

    def test_bad_states_are_named(self):
        (a, lse_a), = self.shards(1)[0]
        with self.assertRaisesRegex(ValueError, "17 states"):
            fa4jit.merge_states([a] * 17, [lse_a] * 17)
        with self.assertRaisesRegex(ValueError, "2 outputs but 1 LSEs"):
            fa4jit.merge_states([a, a], [lse_a])
        with self.assertRaisesRegex(TypeError, "output 1 is torch.bfloat16"):
            fa4jit.merge_state(a, lse_a, a.bfloat16(), lse_a)
        with self.assertRaisesRegex(ValueError, "LSE 1 must be float32"):
            fa4jit.merge_state(a, lse_a, a, lse_a[:, :, :3])
        with self.assertRaisesRegex(ValueError, "unknown layout"):
            fa4jit.merge_state(a, lse_a, a, lse_a, layout="sbhd")


if __name__ == "__main__":
    unittest.main()
