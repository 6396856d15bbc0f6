"""The literature's theorems: hand values, hypothesis checks, and the plug-in door."""

from __future__ import annotations

import math

import numpy as np
import pytest
from fedsim.theory.result import Status

from fedsim.literature.koloskova import theorem6_shape, theorem8_shape
from fedsim.literature.lemma11 import alphas, lemma11


def test_lemma11_the_texts_example():
    # 1000 clients, 900 at 10 s, 100 at 60 s, C = 10: 15 s against 42.5 s (Section 5.4)
    r = lemma11(delta=[10.0] * 900 + [60.0] * 100, C=10)
    assert r.value == pytest.approx(15.0)
    # Delta_tilde = 10 * 0.9^10 + 60 * (1 - 0.9^10)
    assert r.terms["minibatch_time"] == pytest.approx(10 * 0.9**10 + 60 * (1 - 0.9**10))
    assert round(r.terms["minibatch_time"], 1) == 42.6  # the text rounds to 42.5
    assert r.status == Status.CERTIFIED_PAPER


def test_lemma11_alphas_are_the_max_of_c_uniform_draws():
    a = alphas(4, 3)
    assert a.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(a, [1 / 64, 7 / 64, 19 / 64, 37 / 64])
    rng = np.random.default_rng(0)
    mx = rng.integers(1, 5, size=(200_000, 3)).max(axis=1)
    freq = np.bincount(mx, minlength=5)[1:] / mx.size
    # 5 sigma per cell: false alarm about 2.3e-6
    assert np.all(np.abs(freq - a) <= 5 * np.sqrt(a * (1 - a) / mx.size))


def test_theorem8_shape_and_its_step_hypothesis():
    r = theorem8_shape(sigma2=4.0, tau_C=8, L=1.0, eta=0.25, K=[4, 16])
    np.testing.assert_allclose(r.value, [2 / 2 + 8 / 4, 2 / 4 + 8 / 16])
    assert r.status == Status.RATE_SHAPE_ONLY
    bad = theorem8_shape(sigma2=4.0, tau_C=8, L=1.0, eta=0.3, K=16)
    assert bad.status == Status.NOT_APPLICABLE
    assert [h.name for h in bad.failing_hypotheses] == ["step_rule_11"]
    # the konstmish rule eta tau_C / tau_t satisfies (11) only if eta tau_C <= 1/(4L)
    assert theorem8_shape(sigma2=1.0, tau_C=8, L=1.0, eta=0.25, K=16,
                          rule="mishchenko").status == Status.NOT_APPLICABLE


def test_theorem6_shape_reads_tau_max():
    r = theorem6_shape(sigma2=0.0, tau_C=4, tau_max=16.0, K=[8, 32])
    np.testing.assert_allclose(r.value, [8 / 8, 8 / 32])   # sqrt(4 * 16) / K
    inf = theorem6_shape(sigma2=1.0, tau_C=4, tau_max=math.inf, K=8)
    assert inf.status == Status.NOT_APPLICABLE
    assert [h.name for h in inf.failing_hypotheses] == ["tau_max_finite"]


def test_the_theorems_come_in_through_the_entry_point_door():
    from importlib import metadata

    names = {ep.name for ep in metadata.entry_points(group="fedsim.theorems")}
    if not {"koloskova_theorem6", "koloskova_theorem8", "koloskova_lemma11"} <= names:
        pytest.skip("fedsim's entry points are not (re)installed: pip install -e .")
    from fedsim.theory import get_theorem

    assert get_theorem("koloskova_lemma11").label == "[K] Koloskova-Stich-Jaggi Lemma 11"
