"""test_layout.py: the relations inferred from concrete values (shardproof_torch/layout.py).

Run by tests/torch/run.sh (python3 -m unittest, with the package's directory on sys.path).
Every case builds plan values from a model tensor the way a rank would hold them and checks
the relation found, or that none is found for values that are no such part.
"""
import unittest
from fractions import Fraction

import torch

from shardproof_torch.layout import (Mesh, fit_relation, same, shape_layout, shard_layouts,
                                     spanned_axes)

SEED = 7


def text(mesh, rel, shape):
    return None if rel is None else (rel.text(mesh, "T", shape), rel.scale)


class TestFitRelation(unittest.TestCase):
    def setUp(self):
        self.g = torch.Generator().manual_seed(SEED)
        self.mesh = Mesh([("dp", 2), ("tp", 2)])

    def randn(self, *shape):
        return torch.randn(*shape, generator=self.g)

    def test_layout_shard_and_replica(self):
        T = self.randn(4, 6)
        pv = {r: T[2 * (r // 2):2 * (r // 2) + 2, 3 * (r % 2):3 * (r % 2) + 3] for r in range(4)}
        rel = fit_relation(self.mesh, T, pv)
        self.assertEqual(text(self.mesh, rel, T.shape), ("T : [4@dp, 6@tp]", 1))
        rel = fit_relation(self.mesh, T, {r: T.clone() for r in range(4)})
        self.assertEqual(text(self.mesh, rel, T.shape), ("T : [4, 6]", 1))

    def test_layout_partial_sum_and_avg(self):
        T = self.randn(3, 4)
        parts = [self.randn(3, 4) for _ in range(2)]
        parts.append(T - parts[0])
        parts.append(T - parts[1])
        # ranks (dp, tp): tp partners 0,1 and 2,3 hold parts summing to T
        pv = {0: parts[0], 1: parts[2], 2: parts[1], 3: parts[3]}
        rel = fit_relation(self.mesh, T, pv)
        self.assertEqual(text(self.mesh, rel, T.shape), ("T : [3, 4] partial(sum@tp)", 1))
        pv = {r: v * 2 for r, v in pv.items()}
        rel = fit_relation(self.mesh, T, pv)
        self.assertEqual(text(self.mesh, rel, T.shape), ("T : [3, 4] partial(avg@tp)", 1))

    def test_layout_scale(self):
        T = self.randn(4, 3)
        pv = {r: 2 * T[2 * (r // 2):2 * (r // 2) + 2] for r in range(4)}
        rel = fit_relation(self.mesh, T, pv)
        self.assertEqual(text(self.mesh, rel, T.shape), ("T : [4@dp, 3]", Fraction(2)))

    def test_layout_rows(self):
        mesh = Mesh([("pp", 2)])
        T = self.randn(4, 3)
        rel = fit_relation(mesh, T, {1: T[2:3].clone()})
        self.assertEqual(text(mesh, rel, T.shape), ("T[2..3] : [1, 3]", 1))

    def test_layout_on_some_ranks(self):
        # a value that only pp = 0 holds may not be sharded over pp, though its values match
        mesh = Mesh([("pp", 2)])
        self.assertEqual(spanned_axes(mesh, [0]), [])
        self.assertEqual(spanned_axes(mesh, [0, 1]), [0])
        T = self.randn(2, 3)
        rel = fit_relation(mesh, T, {0: T[0:1].clone()})
        self.assertEqual(text(mesh, rel, T.shape), ("T[0..1] : [1, 3]", 1))

    def test_layout_none_for_unrelated_values(self):
        for _ in range(20):
            T = self.randn(4, 4)
            pv = {r: self.randn(2, 4) for r in range(4)}
            self.assertIsNone(fit_relation(self.mesh, T, pv))
        # a scalar fits no scale other than 1 (one element matches nearly any ratio)
        t = self.randn(())
        self.assertIsNone(fit_relation(self.mesh, t, {r: t * 3 for r in range(4)}))
        # all-zero model values relate to nothing (a coincidence would always fit)
        z = torch.zeros(2, 2)
        self.assertIsNone(fit_relation(self.mesh, z, {r: z.clone() for r in range(4)}))

    def test_same_is_exact(self):
        # what is assumed (a constant, a registered tensor's layout) matches only exactly
        T = torch.tensor([[1000.0, 0.0], [3.0, 4.0]])
        self.assertTrue(same(T, T.clone()))
        self.assertFalse(same(T, torch.tensor([[1000.0, 0.0099], [3.0, 4.0]])))
        self.assertTrue(same(T, T.to(torch.float64)))        # float32 -> float64 is exact
        self.assertTrue(same(torch.tensor([-0.0]), torch.tensor([0.0])))
        self.assertFalse(same(torch.tensor([float("nan")]), torch.tensor([float("nan")])))
        self.assertFalse(same(torch.tensor([1]), torch.tensor([1])))   # not floating point
        self.assertFalse(same(T, T[:1]))

    def test_shard_layouts_all_that_fit(self):
        # rank 0 holds rows 0..1 under dp and under tp alike: both stay open
        T = self.randn(4, 3)
        Ls = shard_layouts(self.mesh, T, T[0:2].clone(), 0)
        self.assertEqual(sorted(L.text(self.mesh, T.shape) for L in Ls),
                         ["[4@dp, 3]", "[4@tp, 3]"])
        Ls = shard_layouts(self.mesh, T, T[2:4].clone(), 1)
        self.assertEqual([L.text(self.mesh, T.shape) for L in Ls], ["[4@tp, 3]"])
        self.assertEqual(shard_layouts(self.mesh, T, T[2:4] + 1e-3, 1), [])

    def test_shape_layout(self):
        L = shape_layout(self.mesh, (4, 6), (2, 6), [0, 1, 2, 3])
        self.assertEqual(L.text(self.mesh, (4, 6)), "[4@dp, 6]")
        self.assertIsNone(shape_layout(self.mesh, (4, 6), (3, 6), [0, 1, 2, 3]))


if __name__ == "__main__":
    unittest.main()
