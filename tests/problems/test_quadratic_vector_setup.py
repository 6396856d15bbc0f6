"""The vectorised quadratic set-up equals the per-client loop bit for bit (issue 29).

The reference below is the per-client loop :class:`QuadraticProblem` ran before: one
``symmetric_psd_eigen`` per client for ``A_i`` and for ``noise_cov[i]``, one
``sqrt_factor`` per client, the stacks filled row by row.  The problem's arrays must be
those very bits: the shared-Hessian path decomposes one matrix and broadcasts it, the
client-specific path runs one stacked ``eigh`` / Cholesky.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedsim.errors import ConfigError
from fedsim.problems.quadratic import QuadraticProblem
from fedsim.problems.quadratic_linalg import sqrt_factor, symmetric_psd_eigen
from fedsim.problems.quadratic_random import random_client_data


def loop_arrays(mats, b, noise, noise_cov) -> dict[str, np.ndarray]:
    """The per-client loop: every array of the problem, client by client."""
    n, d = len(mats), mats[0].shape[0]
    s_mats = [np.asarray(noise_cov, dtype=np.float64)] * n if np.ndim(noise_cov) == 2 \
        else [np.asarray(s, dtype=np.float64) for s in noise_cov]
    a_stack, evals, evecs = np.empty((n, d, d)), np.empty((n, d)), np.empty((n, d, d))
    for i, a in enumerate(mats):
        a_stack[i], evals[i], evecs[i] = symmetric_psd_eigen(f"A[{i}]", np.asarray(a))
    s_stack, f_stack = np.empty((n, d, d)), np.empty((n, d, d))
    for i, s in enumerate(s_mats):
        s_stack[i], sev, svec = symmetric_psd_eigen(f"noise_cov[{i}]", s)
        f_stack[i] = sqrt_factor(s_stack[i], sev, svec)
    if noise == "additive":
        c_stack = s_stack.copy()
    else:
        c_stack = a_stack @ s_stack @ a_stack
        c_stack = 0.5 * (c_stack + np.swapaxes(c_stack, 1, 2))
    b_arr = np.asarray(b, dtype=np.float64)
    return {"A_stack": a_stack, "eigvals": evals, "eigvecs": evecs, "S_stack": s_stack,
            "noise_factor": f_stack, "C_stack": c_stack,
            "noise_in_eigenbasis": np.einsum("nji,njk,nki->ni", evecs, c_stack, evecs),
            "Abar": a_stack.mean(axis=0),
            "m": np.einsum("nij,nj->i", a_stack, b_arr) / n}


def assert_bitwise(p: QuadraticProblem, ref: dict[str, np.ndarray]) -> None:
    for name, want in ref.items():
        got = np.asarray(getattr(p, name))
        assert got.shape == want.shape, name
        assert got.tobytes() == want.tobytes(), name


@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("noise", ["additive", "sampling"])
def test_ten_thousand_clients_bitwise(shared: bool, noise: str) -> None:
    n = 10_000 if shared or noise == "additive" else 2_000
    mats, b, cov = random_client_data(n, 10, 0.1, 1.0, 1.0, 0.1, noise, shared, 7)
    p = QuadraticProblem(mats, b, None, noise=noise, noise_cov=cov)
    assert p.shared_hessian is shared
    assert_bitwise(p, loop_arrays(mats, b, noise, cov))
    assert np.array_equal(np.asarray(p.A), p.A_stack) and len(p.A) == n
    assert p.A[n - 1].tobytes() == p.A_stack[n - 1].tobytes()


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 12), d=st.integers(1, 5), seed=st.integers(0, 2**16),
       pattern=st.sampled_from(["shared", "distinct", "mixed", "equal-copies"]),
       cov=st.sampled_from(["none", "shared", "per-client", "singular"]))
def test_any_grouping_bitwise(n: int, d: int, seed: int, pattern: str, cov: str) -> None:
    rng = np.random.default_rng(seed)

    def psd() -> np.ndarray:
        g = rng.standard_normal((d, d))
        return g @ g.T / d

    base = [psd() for _ in range(3)]
    if pattern == "shared":
        mats = [base[0]] * n
    elif pattern == "distinct":
        mats = [psd() for _ in range(n)]
    elif pattern == "mixed":
        mats = [base[int(k)] for k in rng.integers(0, 3, size=n)]
    else:
        mats = [base[0].copy() for _ in range(n)]
    b = rng.standard_normal((n, d))
    if cov == "none":
        noise_cov = np.zeros((d, d))
        given_cov = None
    elif cov == "shared":
        noise_cov = given_cov = psd() + np.eye(d)
    elif cov == "per-client":
        noise_cov = given_cov = [psd() + 0.1 * np.eye(d) for _ in range(n)]
    else:  # rank one: Cholesky fails for some, the eigen factor is used
        v = rng.standard_normal(d)
        noise_cov = given_cov = [np.outer(v, v) if k % 2 else np.eye(d) for k in range(n)]
    for noise in ("additive", "sampling"):
        p = QuadraticProblem(mats, b, None, noise=noise, noise_cov=given_cov)
        assert_bitwise(p, loop_arrays(mats, b, noise, noise_cov))


def test_first_offending_client_is_named() -> None:
    good = np.eye(3)
    bad = np.diag([1.0, -1.0, 1.0])
    with pytest.raises(ConfigError, match=r"A\[4\] must be positive semidefinite"):
        QuadraticProblem([good] * 4 + [bad, bad], np.zeros((6, 3)))
    asym = good.copy()
    asym[0, 1] = 0.5
    with pytest.raises(ConfigError, match=r"A\[2\] must be symmetric"):
        QuadraticProblem([good, good, asym], np.zeros((3, 3)))
    with pytest.raises(ConfigError, match=r"A\[1\].shape"):
        QuadraticProblem([good, np.eye(2)], np.zeros((2, 3)))
    with pytest.raises(ConfigError, match=r"noise_cov\[1\]"):
        QuadraticProblem([good] * 2, np.zeros((2, 3)), noise_cov=[good, np.nan * good])


def test_a_shared_hessian_is_held_once_by_the_compiled_view() -> None:
    """The compiled view indexes the distinct Hessians: one ``d x d`` matrix for a shared
    one, whatever n, and each client's gradient is the interpreted ``A_i (w - b_i)``."""
    from fedsim.problems.compiled import compiled_view

    n = 10_000
    mats, b, _ = random_client_data(n, 10, 0.1, 1.0, 1.0, 0.0, "additive", True, 3)
    p = QuadraticProblem(mats, b)
    cv = compiled_view(p, 1)
    At, hix = cv.data[0], cv.data[1]
    assert At.shape == (1, 10, 10) and hix.shape == (n,) and not hix.any()
    w, g = np.linspace(-1.0, 1.0, 10), np.empty(10)
    for i in (0, n // 2, n - 1):
        cv.grad(cv.data, i, w, np.empty(0), g)
        np.testing.assert_allclose(g, p.grad(i, w), rtol=1e-13, atol=1e-14)
    for i in (0, n - 1):  # the interpreted oracles read the distinct Hessian: the stack's bits
        assert p.client_hessian(i).tobytes() == p.A_stack[i].tobytes()
        assert p.grad(i, w).tobytes() == (p.A_stack[i] @ (w - p.b_stack[i])).tobytes()
    q = QuadraticProblem(np.stack(mats[:3]) * [[[1.0]], [[2.0]], [[1.0]]], b[:3])
    At3, hix3 = compiled_view(q, 1).data[:2]
    assert At3.shape == (3, 10, 10) and list(hix3) == [0, 1, 2]


def test_the_memory_estimate_reads_whether_the_hessian_is_shared(monkeypatch) -> None:
    """A million clients with d = 10 fit the default 4 GiB when they share the Hessian
    (about 1.1 GB: the layout read once at set-up), not when each has its own (6 n d^2)."""
    from fedsim.config import Scenario
    from fedsim.config.budget import DEFAULT_BUDGET, estimate_bytes

    monkeypatch.setenv("FEDSIM_MEMORY_BUDGET", "1T")  # the scenarios are only estimated
    def sc(shared: bool) -> Scenario:
        return Scenario.from_dict({
            "name": "big", "seed": 0,
            "problem": {"kind": "quadratic", "n": 10**6, "dim": 10, "mu": 0.1, "L": 1.0,
                        "shared_hessian": shared},
            "algorithm": {"name": "fedasync", "Q": 1, "eta": 0.01},
            "horizon": {"steps": 10}})

    shared, own = estimate_bytes(sc(True))["problem"], estimate_bytes(sc(False))["problem"]
    assert shared == 8.0 * (10**8 + 4 * 10**7) and own == 8.0 * 6 * 10**8
    assert shared < DEFAULT_BUDGET < own


def loop_client_data(n, dim, mu, L, heterogeneity, seed):
    """The client-by-client generator of client-specific Hessians (the reference)."""
    rng = np.random.default_rng(int(seed))
    mats = []
    for i in range(n):
        s = rng.uniform(mu, L, size=dim)
        if i == 0:
            s[0] = mu
        if i == n - 1:
            s[-1] = L
        q, r = np.linalg.qr(rng.standard_normal((dim, dim)))
        q = q * np.where(np.diag(r) < 0, -1.0, 1.0)[None, :]
        a = (q * s[None, :]) @ q.T
        mats.append(0.5 * (a + a.T))
    return mats, heterogeneity * rng.standard_normal((n, dim))


def test_ten_thousand_client_specific_hessians_are_the_loops_bits() -> None:
    mats, b, _ = random_client_data(10_000, 10, 0.1, 1.0, 1.5, 0.1, "additive", False, 11)
    ref, ref_b = loop_client_data(10_000, 10, 0.1, 1.0, 1.5, 11)
    assert np.stack(mats).tobytes() == np.stack(ref).tobytes()
    assert b.tobytes() == ref_b.tobytes()


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 9), dim=st.integers(1, 6), seed=st.integers(0, 2**16),
       mu=st.floats(0.0, 1.0), width=st.floats(0.0, 10.0))
def test_client_specific_hessians_are_the_loops_bits_at_any_size(n, dim, seed, mu, width):
    L = mu + width
    if mu != L and dim < 2 and n < 2:
        return  # refused: one 1 x 1 matrix cannot carry both mu and L
    mats, b, _ = random_client_data(n, dim, mu, L, 1.0, 0.1, "additive", False, seed)
    ref, ref_b = loop_client_data(n, dim, mu, L, 1.0, seed)
    assert np.stack(mats).tobytes() == np.stack(ref).tobytes() and b.tobytes() == ref_b.tobytes()
