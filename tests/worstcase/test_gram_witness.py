"""The Gram-interpolant witness: a function of the class through the PEP's points, simulated
along the schedule (fedsim.worstcase.interpolant, fedsim.worstcase.gram_witness)."""

import numpy as np
import pytest

from fedsim.worstcase import FedAsync, FunctionClass, Schedule, delayed_gd, solve_pep
from fedsim.worstcase.gram_witness import GRAM_MATCH_RTOL, gram_witness
from fedsim.worstcase.interpolant import ConvexInterpolant

SC = FunctionClass(kind="strongly_convex", L=1.0, mu=0.1)
NC = FunctionClass(kind="nonconvex", L=1.0)


def test_interpolant_of_a_quadratic_is_the_quadratic():
    # points of f = x^2/2 (M = 1): s_i = x_i - g_i = 0, c_i = 0, so phi(x) = x^2/2 exactly
    X = np.array([[1.0], [-2.0]])
    phi = ConvexInterpolant.through(1.0, X, X.copy(), 0.5 * X[:, 0] ** 2)
    assert np.allclose(phi.S, 0.0) and np.allclose(phi.c, 0.0)
    v, g = phi.evaluate(np.array([0.7]))
    assert v == pytest.approx(0.245, abs=1e-12) and g == pytest.approx([0.7], abs=1e-12)


def _class_gap(f, kind, L, mu, pts):
    """The smallest slack of the class's interpolation inequality over ordered pairs
    (fedsim.worstcase.classes' rows): >= 0 for a member of the class."""
    vals = [f.evaluate(x) for x in pts]
    worst = np.inf
    for i, (fa, ga) in enumerate(vals):
        for j, (fb, gb) in enumerate(vals):
            if i == j:
                continue
            dx, dg = pts[i] - pts[j], ga - gb
            if kind == "strongly_convex":
                w = dx - dg / L
                rhs = fb + gb @ dx + dg @ dg / (2 * L) + mu / (2 * (1 - mu / L)) * w @ w
            else:
                rhs = fb + 0.5 * (ga + gb) @ dx + dg @ dg / (4 * L) - L / 4 * dx @ dx
            worst = min(worst, fa - rhs)
    return worst


@pytest.mark.parametrize("fclass, measure, method, sched", [
    (SC, "dist_sq", delayed_gd(0.25), Schedule.constant(1, 6)),
    (SC, "f_gap", FedAsync(eta=0.25, Q=2, beta=0.5), Schedule.cyclic([0, 2, 1], 5)),
    (NC, "avg_grad_sq", FedAsync(eta=0.5), Schedule.from_delays([0, 1, 1, 0, 2, 1])),
])
def test_witness_reproduces_the_pep_and_is_in_the_class(fclass, measure, method, sched):
    pep = solve_pep(method, fclass, sched, measure)
    assert pep.status.startswith("optimal")
    w = gram_witness(method, fclass, sched, measure, pep)
    assert w.reproduces, w.name                      # the PEP's own normalisation, 1e-3
    assert w.gap <= GRAM_MATCH_RTOL
    assert w.value <= pep.value * (1 + GRAM_MATCH_RTOL)   # certified: never above the PEP
    f = w.functions[0]
    rng = np.random.default_rng(0)
    pts = list(w.iterates) + [rng.normal(size=w.dim) * 2 for _ in range(6)]
    assert _class_gap(f, fclass.kind, fclass.L, fclass.mu, pts) >= -1e-7  # QP tolerance
    fstar, xstar = f.minimum()
    assert f.value(xstar) == pytest.approx(fstar, abs=1e-7)
    assert min(f.value(x) for x in pts) >= fstar - 1e-7


def test_nonconvex_normalisation_is_loose_and_said_so():
    # min ||grad f||^2 over f(x0) - f(xK) <= 1 (the PEP's normalisation) vs over f(x0) - f_*
    pep = solve_pep(delayed_gd(1.0), NC, Schedule.constant(1, 6), "min_grad_sq")
    w = gram_witness(delayed_gd(1.0), NC, Schedule.constant(1, 6), "min_grad_sq", pep)
    assert w.reproduces and w.value < 0.5 * pep.value
    assert "certified value" in w.name


def test_door_attaches_the_gram_witness_where_no_quadratic_attains_it():
    import fedsim

    wc = fedsim.worst_case(method="delayed_gd", function_class="nonconvex", L=1.0, step=1.0,
                           delays=[1] * 6, measure="min_grad_sq")
    assert wc.witness.kind == "none" and wc.gram is not None and wc.gram.reproduces
    assert "Gram witness" in wc.summary()
    sc = fedsim.worst_case(method="delayed_gd", function_class="strongly_convex", L=1.0,
                           mu=0.1, step=0.25, delays=[1] * 5)
    assert sc.witness.kind == "quadratic" and sc.gram is None
