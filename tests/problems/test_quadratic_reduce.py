"""The slab-by-slab set-up reductions give the bits of the whole-stack expressions.

:func:`fedsim.problems.quadratic_reduce.client_reductions` never lays out the ``(n, d,
d)`` stack whole (beyond one slab); ``Abar``, ``m``, ``x``, ``g`` and ``q`` must be the
bits NumPy gives on the laid-out stack, whatever the slab size, for a shared Hessian, a few
distinct ones and one per client.
"""

from __future__ import annotations

import numpy as np
import pytest

from fedsim.problems.quadratic import QuadraticProblem
from fedsim.problems.quadratic_linalg import DistinctMatrices, materialize, psd_solve
from fedsim.problems.quadratic_random import random_client_data
from fedsim.problems.quadratic_reduce import client_reductions


def whole_stack(dm: DistinctMatrices, b: np.ndarray) -> tuple[np.ndarray, ...]:
    stack = materialize(dm)
    abar = stack.mean(axis=0)
    m = np.einsum("nij,nj->i", stack, b) / dm.n
    x = psd_solve(abar, m)
    r = x - b
    return (abar, m, x, np.einsum("nij,nj->ni", stack, r),
            np.einsum("ni,nij,nj->n", r, stack, r))


def matrices(kind: str, n: int, d: int, rng: np.random.Generator) -> DistinctMatrices:
    k = {"shared": 1, "few": 3, "specific": n}[kind]
    a = rng.standard_normal((k, d, d))
    vals = a @ a.transpose(0, 2, 1)
    index = (np.zeros(n, np.intp) if k == 1 else np.arange(n, dtype=np.intp) if k == n
             else rng.integers(0, k, n).astype(np.intp))
    return DistinctMatrices(vals, index, np.zeros(1, np.intp))


@pytest.mark.parametrize("kind", ["shared", "few", "specific"])
@pytest.mark.parametrize("d", [2, 3, 10])
@pytest.mark.parametrize("slab", [2, 7, 1000, None])
def test_slabs_give_the_whole_stack_bits(kind: str, d: int, slab: int | None) -> None:
    rng = np.random.default_rng(d * 31 + len(kind))
    n = 3001 if kind == "specific" else 12_001
    dm = matrices(kind, n, d, rng)
    b = 3.0 * rng.standard_normal((n, d))
    got = client_reductions(dm, b, psd_solve, slab)
    for name, g, w in zip("Abar m x g q".split(), got, whole_stack(dm, b), strict=True):
        assert g.shape == w.shape, name
        assert g.tobytes() == w.tobytes(), name


@pytest.mark.parametrize("shared", [True, False])
def test_problem_reductions_match_its_stack(shared: bool) -> None:
    n = 10_000 if shared else 3_000
    mats, b, cov = random_client_data(n, 10, 0.1, 1.0, 1.0, 0.1, "additive", shared, 11)
    p = QuadraticProblem(mats, b, None, noise="additive", noise_cov=cov)
    a = np.asarray(p.A_stack)
    r = p.x_star - p.b_stack
    assert p.Abar.tobytes() == a.mean(axis=0).tobytes()
    assert p.grad_at_xstar.tobytes() == np.einsum("nij,nj->ni", a, r).tobytes()
    q = np.einsum("ni,nij,nj->n", r, a, r)
    assert p.f_star == float(np.mean(p.c) + 0.5 * np.mean(q))
