"""AsyPFL Theorems 1-2: golden values (both readers), hypothesis flips, the tick oracle in
regime, and the counterexamples CE1-CE3 and reader 2's periods (5, 8)
(docs/theory/asypfl.md)."""

import numpy as np
import pytest
from fedsim.theory.asypfl import theorem1, theorem2, tick_oracle
from fedsim.theory.result import Status

P1 = dict(L=2, mu=0.5, eta=0.125, T=10, D2=4, p=[0.25, 0.75], sigma2=[1, 0.5], Gamma=0.3,
          E=2, pi=[1, 3], chi2=0.8)
P2 = dict(L=0.8, mu=0.2, eta=0.1, T=50, D2=0.01, p=[0.2, 0.3, 0.5], sigma2=[0.1, 0.2, 0.3],
          Gamma=0.05, E=3, pi=[1, 2, 1], chi2=0.4)


def test_golden_theorem1():
    assert theorem1(**P1, mode="paper_literal").value == pytest.approx(1.59953616006162, rel=1e-13)
    assert theorem1(**P1).value == pytest.approx(6.94165778012827, rel=1e-13)
    assert theorem1(**P1).derived_constants["B"] == pytest.approx(6519 / 640, rel=1e-14)
    assert theorem1(**P2, mode="paper_literal").value == pytest.approx(1.54591955809486, rel=1e-13)
    assert theorem1(**P2).value == pytest.approx(1.38718527793849, rel=1e-13)


def test_golden_theorem2():
    q1 = {k: v for k, v in P1.items() if k != "eta"} | {"T": 100}
    assert theorem2(**q1, mode="paper_literal").value == pytest.approx(95.7498964886799, rel=1e-13)
    assert theorem2(**q1).value == pytest.approx(8061 / 440, rel=1e-14)
    q2 = dict(L=1, mu=1, T=1000, D2=0.25, p=[0.2, 0.3, 0.5], sigma2=[0.1, 0.2, 0.3],
              Gamma=0.05, E=3, pi=[1, 4, 2], chi2=0.4)
    assert theorem2(**q2, mode="paper_literal").value == pytest.approx(3.57063177334365, rel=1e-13)
    assert theorem2(**q2).value == pytest.approx(178957 / 506000, rel=1e-14)


def _one(a=2.0, s=1.0, eta=0.125, w0=0.0, T=3, E=1):
    return tick_oracle(A=[[[a]]], b=[[0.0]], p=[1.0], pi=[1], E=E, eta=eta, w0=[w0], T=T,
                       C=[[[s]]])["gap"]


def test_CE1_literal_negative_and_violated():
    gap = _one()
    assert gap[1:] == pytest.approx([1 / 64, 25 / 1024, 481 / 16384], rel=1e-14)
    kw = dict(L=2, mu=2, eta=0.125, T=[1, 2, 3], D2=0, p=[1], sigma2=[1], Gamma=0, E=1, pi=[1],
              chi2=0)
    lit = theorem1(**kw, mode="paper_literal").value
    assert lit == pytest.approx([-1 / 32, -1 / 128, 5 / 512], rel=1e-14)
    assert np.all(lit < gap[1:])
    cor = theorem1(**kw)
    assert cor.status is Status.CERTIFIED_CORRECTED
    assert np.all(cor.value >= gap[1:] * (1 - 1e-14))


def test_CE2_non_sync_tick():
    gap = _one(a=1.0, s=0.0, eta=0.25, w0=1.0, T=3, E=2)
    assert gap[1] == 0.5
    r = theorem1(L=1, mu=1, eta=0.25, T=1, D2=1, p=[1], sigma2=[0], Gamma=0, E=2, pi=[1], chi2=0)
    assert r.value == pytest.approx(3 / 8) and r.value < gap[1]
    assert r.status is Status.NOT_APPLICABLE
    assert any(h.name.startswith("H9") and h.holds is False for h in r.hypotheses)


def test_CE3_theorem2_literal_violated():
    gap = _one(a=1.0, s=0.0, eta=lambda t: 2 / (8 + t), w0=100.0, T=10)
    assert gap[10] == pytest.approx(275625 / 2312, rel=1e-13)
    kw = dict(L=1, mu=1, T=10, D2=1e4, p=[1], sigma2=[0], Gamma=0, E=1, pi=[1], chi2=0)
    assert theorem2(**kw, mode="paper_literal").value == pytest.approx(58.2386976490866, rel=1e-13)
    assert theorem2(**kw).value == pytest.approx(20000 / 9) and theorem2(**kw).value > gap[10]


def test_reader2_periods_5_8():
    o = tick_oracle(A=[[[1.0]], [[1.0]]], b=[[0.0], [0.0]], p=[0.5, 0.5], pi=[5, 8], E=1,
                    eta=0.25, w0=[1.0], T=40)
    assert o["gap"][40] == pytest.approx(8.4805189872946e-06, rel=1e-10)
    kw = dict(L=1, mu=1, eta=0.25, T=40, D2=1, p=[0.5, 0.5], sigma2=[0, 0], Gamma=0, E=1,
              pi=[5, 8], chi2=0)
    lit = theorem1(**kw, mode="paper_literal")
    assert lit.value < o["gap"][40]   # violated (ratio 1.687)
    r = theorem1(**kw)
    assert r.status is Status.NOT_APPLICABLE
    assert any(h.name.startswith("H12") and h.holds is False for h in r.hypotheses)


@pytest.mark.parametrize("change,hyp", [({"mu": 0.0}, "H2"), ({"eta": 1.0}, "H8"),
                                        ({"T": 3, "E": 2}, "H9"),
                                        ({"chi2": float("inf"), "E": 2}, "H7"),
                                        ({"pi": [1, 2], "E": 2, "p": [0.5, 0.5],
                                          "sigma2": [1, 1], "T": 4}, "H12")])
def test_each_hypothesis_flips(change, hyp):
    base = dict(L=1, mu=0.5, eta=0.25, T=4, D2=1, p=[1], sigma2=[1], Gamma=0, E=1, pi=[1],
                chi2=1)
    r = theorem1(**{**base, **change})
    assert r.status is Status.NOT_APPLICABLE
    assert any(h.name.startswith(hyp) and h.holds is False for h in r.hypotheses)


def test_corrected_bounds_hold_against_oracle_in_regime():
    rng = np.random.default_rng(1)
    for _ in range(15):
        a = rng.uniform(0.5, 3.0, size=2)
        b = rng.normal(size=2)
        s = rng.uniform(0, 1, size=2)
        w0 = rng.normal() * 2
        p = np.array([0.5, 0.5])
        ws = float(p @ (a * b) / (p @ a))
        Fs = float(p @ (0.5 * a * (ws - b) ** 2))
        L, mu = float(a.max()), float(a.min())
        eta = 1 / (4 * L)
        o = tick_oracle(A=[[[x]] for x in a], b=[[x] for x in b], p=p, pi=[1, 1], E=1,
                        eta=eta, w0=[w0], T=30, C=[[[x]] for x in s])
        r = theorem1(L=L, mu=mu, eta=eta, T=np.arange(1, 31), D2=(w0 - ws) ** 2, p=p,
                     sigma2=s, Gamma=Fs, E=1, pi=[1, 1], chi2=np.inf)
        assert r.status is Status.CERTIFIED_CORRECTED
        assert np.all(o["gap"][1:] <= r.value * (1 + 1e-12))
