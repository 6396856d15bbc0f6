"""The ``koloskova-lemma11`` family: its instance, and the pile-up that Lemma 11's
``Delta_bar`` leaves out (two equal clients, C = 2: time per 2 gradients is 4/3, not 1)."""

from __future__ import annotations

import pytest

from fedsim.literature.lemma11_family import FAMILY, build


def _q(**kw):
    q = {p.name: p.default for p in FAMILY.params}
    q.update(kw)
    return q


def test_instance_carries_the_lemma_with_its_hypothesis_settled():
    inst = build(_q(n=4, n_slow=1, slow=5.0, C=2, K=50))
    assert inst.bound.value == pytest.approx(2.0)          # (1 + 1 + 1 + 5) / 4
    assert all(h.holds for h in inst.bound.hypotheses)
    assert inst.scenario["algorithm"]["model"] == "uniform_assign"
    mb = build(_q(n=4, n_slow=1, slow=5.0, C=2, K=50, mode="minibatch_time"))
    assert mb.bound.value == pytest.approx(1 + 4 * (1 - 0.75**2))   # E max of 2 draws


@pytest.mark.slow  # compiles kernels of its own (~40-120 s cold): make slow
def test_two_equal_clients_pile_up():
    # C = 2 jobs on n = 2 clients of time 1: each finished job's successor goes to a uniform
    # client, so with positive probability both jobs queue on one client (rate 1 instead of
    # 2). Measured (20 replicates of 2000 steps): 1.333 +- 0.009 per 2 gradients, not 1.
    m = build(_q(n=2, n_slow=0, C=2, K=3000)).mc(8, 0)
    assert m.value == pytest.approx(4.0 / 3.0, abs=0.03)
    assert m.value - m.error > 1.0   # Lemma 11's Delta_bar = 1 is exceeded
