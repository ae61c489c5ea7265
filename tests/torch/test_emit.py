"""test_emit.py: the translation's choices that the check assumes rather than proves
(shardproof_torch/emit.py): constants matched to the model's, mesh axis names.

Run by tests/torch/run.sh (python3 -m unittest, with the package's directory on sys.path).
"""
import unittest

import torch

from shardproof_torch.aten import MapError
from shardproof_torch.capture import Op, Trace, Val
from fractions import Fraction

from shardproof_torch.emit import EmitError, Emitter, infer_mesh, rational
from shardproof_torch.layout import Mesh

SEED = 7


def emitter(mesh):
    """An Emitter with only the state the constant matching reads."""
    em = Emitter.__new__(Emitter)
    em.mesh = mesh
    em.model_consts, em.plan_consts, em.used = [], {}, set()
    return em


class TestConstants(unittest.TestCase):
    def setUp(self):
        self.g = torch.Generator().manual_seed(SEED)
        self.mesh = Mesh([("dp", 2), ("tp", 2)])

    def randn(self, *shape):
        return torch.randn(*shape, generator=self.g)

    def test_equal_model_constants_are_one_input(self):
        em = emitter(self.mesh)
        T = self.randn(4, 3)
        a = em.model_const(T, None, (4, 3))
        self.assertEqual(em.model_const(T.clone(), None, (4, 3)), a)
        self.assertNotEqual(em.model_const(T + 1, None, (4, 3)), a)

    def test_constant_names_avoid_used_names(self):
        em = emitter(self.mesh)
        em.used = {"c1"}
        self.assertEqual(em.model_const(self.randn(2), None, (2,)), "c2")

    def test_match_is_exact(self):
        em = emitter(self.mesh)
        T = torch.tensor([[1000.0, 0.0], [3.0, 4.0]])
        em.model_const(T, None, (2, 2))
        self.assertEqual(em.match_const(Trace(0), T.clone()), "c1")
        with self.assertRaises(MapError):
            em.match_const(Trace(0), torch.tensor([[1000.0, 0.0099], [3.0, 4.0]]))

    def test_layout_stays_open_until_a_rank_decides(self):
        # rank 0's rows 0..1 are its shard under dp and under tp; rank 1 (dp 0, tp 1) decides
        em = emitter(self.mesh)
        T = self.randn(4, 3)
        em.model_const(T, None, (4, 3))
        em.match_const(Trace(0), T[0:2].clone())
        self.assertEqual(len(em.plan_consts["c1"]), 2)
        em.match_const(Trace(1), T[2:4].clone())
        self.assertEqual([L.text(self.mesh, (4, 3)) for L in em.plan_consts["c1"]],
                         ["[4@tp, 3]"])

    def test_shard_of_two_constants_is_refused(self):
        em = emitter(self.mesh)
        T = self.randn(4, 3)
        em.model_const(T, None, (4, 3))
        em.model_const(T[0:2].clone(), None, (2, 3))
        with self.assertRaisesRegex(MapError, "several different constants"):
            em.match_const(Trace(0), T[0:2].clone())

    def test_non_finite_constant_is_refused(self):
        em = emitter(self.mesh)
        tr = Trace(None)
        tr.vals.append(Val((2,), "float32", torch.tensor([1.0, float("inf")]), "const"))
        em.single, em.const_names = tr, {}
        with self.assertRaisesRegex(MapError, "non-finite"):
            em.const_text(tr, 0, None)


class TestNumbers(unittest.TestCase):
    def test_simplest_rational_of_a_decimal(self):
        self.assertEqual(rational(0.1, f32=True), Fraction(1, 10))
        self.assertEqual(rational(1e-5, f32=True), Fraction(1, 100000))
        self.assertEqual(rational(1 / 3), Fraction(1, 3))

    def test_powers_of_two_and_integers_are_exact(self):
        # scaling by a power of two is exact in floating point: x * 2^30 * 2^-30 is x
        # (the simplest rationals in the rounding intervals were 1073741792, 1/1073741761)
        for f32 in (False, True):
            self.assertEqual(rational(2.0 ** 30, f32) * rational(2.0 ** -30, f32), 1)
            self.assertEqual(rational(-3 * 2.0 ** -40, f32), Fraction(-3, 2 ** 40))
            self.assertEqual(rational(1e8, f32), 100000000)


class TestMeshNames(unittest.TestCase):
    def ranks(self, world, groups=()):
        trs = [Trace(r) for r in range(world)]
        for g in groups:
            for r in g:
                trs[r].ops.append(Op("all_reduce", [], [], None, dict(group=list(g))))
        return trs

    def test_inferred_axes_avoid_registered_names(self):
        self.assertEqual(infer_mesh(self.ranks(2), 2).names, ["w"])
        self.assertEqual(infer_mesh(self.ranks(2), 2, {"w"}).names, ["w_"])
        trs = self.ranks(4, [(0, 1), (2, 3), (0, 2), (1, 3)])
        self.assertEqual(infer_mesh(trs, 4, {"m1"}).names, ["m0_", "m1_"])

    def test_given_axis_named_like_a_tensor_is_refused(self):
        trs = self.ranks(2)
        for tr in trs:
            tr.mesh = [("w", 2)]
        with self.assertRaisesRegex(EmitError, "also the name of a registered tensor"):
            infer_mesh(trs, 2, {"w"})
        for tr in trs:
            tr.mesh = [("sum", 2)]
        with self.assertRaisesRegex(EmitError, "not usable in a plan"):
            infer_mesh(trs, 2, set())


if __name__ == "__main__":
    unittest.main()
