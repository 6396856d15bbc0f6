"""Issue 14 item 7: hand-computed engine cases the audit lacked.

1. **pFedMe** = synchronous FedAvg rounds with the ``moreau`` client rule (Dinh et al. 2020;
   [P] Algorithm 2 Option C, lines 10-12): per local step
   ``theta = argmin f_i(theta) + lam/2 (theta - w)^2`` (exact, noise-free), then
   ``w <- w - eta lam (w - theta)``; the server sets ``w <- w + m (mean_i w_i - w)``
   (``m = server_mix``, pFedMe's own beta).
2. **FedAsync with beta != 1** in the engine ([P] Algorithm 1 line 4:
   ``w^{t+1} = w^t - beta Delta``, ``Delta = w_read - w_client``), constant delays so the
   event order is known.
3. **read_at = "arrival" with think times**: which model version every client reads and
   the staleness sequence, worked out by hand from the event times.

Problem: ``f_i(w) = A_i/2 (w - b_i)^2`` in one dimension, ``A = (1, 2)``, ``b = (1, -1)``,
no gradient noise, so a local gradient step is ``w <- w - eta A_i (w - b_i)`` and the Moreau
inner solution is ``theta_i(w) = (A_i b_i + lam w)/(A_i + lam)``.  Replays use exact
``fractions.Fraction`` arithmetic; the first values are also written out as literals, so a
wrong hand value (or a wrong engine) fails the comparison at 1e-15.
"""

from __future__ import annotations

from fractions import Fraction as Fr

import numpy as np
import pytest

from fedsim.algorithms import get_algorithm
from fedsim.config import Scenario
from fedsim.engine.models.physical.reference import ReferenceRun
from fedsim.problems.quadratic import QuadraticProblem
from fedsim.rng import Streams
from tests.engine.paths import model_path, simpy_path

# one worker runs this module (make test: --dist loadgroup): the replay kernels of its
# rule combinations are compiled once, not by both workers at the same time
pytestmark = pytest.mark.xdist_group("test_fidelity_audit")

A = (Fr(1), Fr(2))
B = (Fr(1), Fr(-1))


def two_clients() -> QuadraticProblem:
    return QuadraticProblem([[[1.0]], [[2.0]]], [[1.0], [-1.0]])


def const(v: float) -> dict:
    return {"kind": "constant", "value": v}


def scenario(alg: dict, steps: int, delays: dict) -> Scenario:
    return Scenario.from_dict({
        "name": "fidelity-audit", "seed": 5,
        "problem": {"kind": "quadratic", "n": 2, "dim": 1, "mu": 1.0, "L": 2.0,
                    "noise_sd": 0.0, "seed": 0},
        "algorithm": alg, "delays": delays, "horizon": {"steps": steps},
        "record": {"metrics": ["f_gap"], "every": 1}})


def grad_step(i: int, w: Fr, eta: Fr, Q: int) -> Fr:
    for _ in range(Q):
        w = w - eta * A[i] * (w - B[i])
    return w


# --------------------------------------------------------------------------------------
# 1. pFedMe: synchronous rounds with the moreau client rule, exact inner solver
# --------------------------------------------------------------------------------------
def moreau_local(i: int, w: Fr, eta: Fr, lam: Fr, Q: int) -> Fr:
    for _ in range(Q):
        theta = (A[i] * B[i] + lam * w) / (A[i] + lam)   # argmin f_i + lam/2 (. - w)^2
        w = w - eta * lam * (w - theta)
    return w


def pfedme_hand(rounds: int, mix: Fr, eta: Fr = Fr(1, 8), lam: Fr = Fr(4), Q: int = 2) -> Fr:
    w = Fr(0)
    for _ in range(rounds):
        models = [moreau_local(i, w, eta, lam, Q) for i in (0, 1)]
        w = w + mix * (sum(models) / 2 - w)
    return w


def test_pfedme_hand_values_written_out():
    """eta lam = 1/2.  Client 0: theta = (1 + 4w)/5, w' = w - (w - 1)/10: 0 -> 1/10 -> 19/100.
    Client 1: theta = (4w - 2)/6, w' = w - (w + 1)/6: 0 -> -1/6 -> -11/36.
    Round 1: w1 = (19/100 - 11/36)/2 = -13/225; with server_mix 1/2: -13/450."""
    assert moreau_local(0, Fr(0), Fr(1, 8), Fr(4), 2) == Fr(19, 100)
    assert moreau_local(1, Fr(0), Fr(1, 8), Fr(4), 2) == Fr(-11, 36)
    assert pfedme_hand(1, Fr(1)) == Fr(-13, 225)
    assert pfedme_hand(1, Fr(1, 2)) == Fr(-13, 450)


@pytest.mark.parametrize("mix", [1.0, 0.5])
def test_sync_moreau_rounds_by_hand(mix):
    alg = {"name": "fedavg", "client_rule": "moreau", "inner_solver": "exact", "Q": 2,
           "eta": 0.125, "lam": 4.0, "participation": 1.0, "server_mix": mix}
    delays = {"download": const(0.0), "compute": const(1.0), "upload": const(0.0)}
    round1 = {1.0: -13 / 225, 0.5: -13 / 450}[mix]        # the literals above
    for rounds in (1, 2, 3):
        sc = scenario(alg, rounds, delays)
        assert sc.seed == 5
        tr = model_path(sc, two_clients())
        assert tr.steps_done == rounds
        want = round1 if rounds == 1 else float(pfedme_hand(rounds, Fr(mix)))
        assert tr.final_w[0] == pytest.approx(want, abs=1e-15), rounds
    assert tr.info["inner_solves"] == 2 * 2 * 3      # Q solves per client per round


# --------------------------------------------------------------------------------------
# 2. FedAsync, beta = 1/2
# --------------------------------------------------------------------------------------
# client 0: compute 1.0, client 1: compute 1.25 (download/upload 0, read at the request)
ASYNC_DELAYS = {"download": const(0.0), "compute": const(1.0), "upload": const(0.0),
                "override": [{"clients": [1], "compute": const(1.25)}]}
#: (uploader, server step of the model it read) for steps 1..6, from the upload times
#: c0 @ 1, 2, 3, 4 (reads at 0, 1, 2, 3) and c1 @ 1.25, 2.5, 3.75 (reads at 0, 1.25, 2.5):
#: step 1 c0@1 read w0; 2 c1@1.25 read w0; 3 c0@2 read w1 (model at 1 = after step 1);
#: 4 c1@2.5 read w2 (at 1.25, after step 2); 5 c0@3 read w3 (at 2, after step 3);
#: 6 c1@3.75 read w4 (at 2.5, after step 4).  Staleness (step - 1 - r): 0, 1, 1, 1, 1, 1.
FEDASYNC_ORDER = [(0, 0), (1, 0), (0, 1), (1, 2), (0, 3), (1, 4)]


def fedasync_hand(beta: Fr, eta: Fr, Q: int) -> list[Fr]:
    """[P] Alg. 1 line 4: w^{t+1} = w^t - beta (w_read - w_client)."""
    w = [Fr(0)]
    for i, r in FEDASYNC_ORDER:
        client = grad_step(i, w[r], eta, Q)
        w.append(w[-1] - beta * (w[r] - client))
    return w


def _reference(sc, problem):
    return ReferenceRun(sc, problem, Streams(sc.seed, 0), False,
                        get_algorithm(sc.algorithm.name)).run()


@pytest.mark.parametrize("engine", [model_path, simpy_path, _reference])
def test_fedasync_beta_half_iterates_by_hand(engine):
    """beta = 1/2, eta = 1/2, Q = 2.  Step 1: c0 from 0: 0 -> 1/2 -> 3/4, w1 = 0 + (3/4)/2
    = 3/8.  Step 2: c1 from w0 = 0: 0 -> -1 -> -1, w2 = 3/8 + (-1)/2 = -1/8 (no staleness
    in the delta: the read model is w0, not w1)."""
    hand = fedasync_hand(Fr(1, 2), Fr(1, 2), 2)
    assert hand[1:3] == [Fr(3, 8), Fr(-1, 8)]
    alg = {"name": "fedasync", "Q": 2, "eta": 0.5, "beta": 0.5}
    for steps in range(1, len(FEDASYNC_ORDER) + 1):
        sc = scenario(alg, steps, ASYNC_DELAYS)
        tr = engine(sc, two_clients())
        assert tr.final_w[0] == pytest.approx(float(hand[steps]), abs=1e-15), steps
    assert tr.client.tolist() == [-1] + [i for i, _ in FEDASYNC_ORDER]
    assert tr.staleness_steps.tolist() == [0] + [t - r for t, (_, r) in
                                                 enumerate(FEDASYNC_ORDER)]


def test_fedasync_is_not_xie_mixing_under_staleness():
    """Xie et al.'s FedAsync mixes ``w <- (1 - beta) w + beta w_client``; [P]'s line 4 (what
    fedsim implements) subtracts ``beta (w_read - w_client)``.  They agree when the read
    model is the current one and differ at step 2 here (client 1 read w0 != w1):
    mixing gives 3/16 - 1/2 = -5/16 instead of -1/8.  So the hand replay above tells the
    two rules apart."""
    hand = fedasync_hand(Fr(1, 2), Fr(1, 2), 2)
    beta = Fr(1, 2)
    mixed = (1 - beta) * hand[1] + beta * grad_step(1, hand[0], Fr(1, 2), 2)
    assert mixed == Fr(-5, 16) and mixed != hand[2]
    assert (1 - beta) * hand[0] + beta * grad_step(0, hand[0], Fr(1, 2), 2) == hand[1]


# --------------------------------------------------------------------------------------
# 3. read_at = "arrival" with think times
# --------------------------------------------------------------------------------------
# client 0: download 0.5, compute 1, upload 0, think 0.375 -> round k starts at 1.875 k
# client 1: download 0.375, compute 2, upload 0.25, think 0.5 -> round k starts at 3.125 k
THINK_DELAYS = {"download": const(0.5), "compute": const(1.0), "upload": const(0.0),
                "think": const(0.375),
                "override": [{"clients": [1], "download": const(0.375), "compute": const(2.0),
                              "upload": const(0.25), "think": const(0.5)}]}
#: Starts: c0 0, 1.875, 3.75, 5.625, 7.5; c1 0, 3.125, 6.25 (dyadic: exact in binary).
#: Uploads (= server steps): c0 1.5, 3.375, 5.25, 7.125, 9.0; c1 2.625, 5.75, 8.875, so
#: steps 1..8 are c0@1.5, c1@2.625, c0@3.375, c0@5.25, c1@5.75, c0@7.125, c1@8.875, c0@9.0.
#: arrival: reads at start + download: c0 0.5, 2.375, 4.25, 6.125, 8.0; c1 0.375, 3.5,
#: 6.625; the model read is w_r with r = number of uploads before the read time
#: (e.g. step 3, c0 reads at 2.375: only 1.5 precedes, r = 1; step 7, c1 reads at 6.625:
#: 1.5, 2.625, 3.375, 5.25, 5.75 precede, r = 5):
ARRIVAL = {"uploader": [0, 1, 0, 0, 1, 0, 1, 0],
           "read": [0, 0, 1, 3, 3, 5, 5, 6],
           "t_read": [0.5, 0.375, 2.375, 4.25, 3.5, 6.125, 6.625, 8.0]}
#: request: reads at the round starts: c0 0, 1.875, 3.75, 5.625, 7.5; c1 0, 3.125, 6.25.
REQUEST = {"uploader": ARRIVAL["uploader"],
           "read": [0, 0, 1, 3, 2, 4, 5, 6],
           "t_read": [0.0, 0.0, 1.875, 3.75, 3.125, 5.625, 6.25, 7.5]}
UPLOAD_T = [1.5, 2.625, 3.375, 5.25, 5.75, 7.125, 8.875, 9.0]


def test_hand_tables_are_consistent():
    """Staleness = (step - 1) - r: arrival (0,1,1,0,1,0,1,1), request (0,1,1,0,2,1,1,1)
    (they differ at steps 5 and 6); every read precedes its upload and r counts the
    uploads before the read."""
    for tab in (ARRIVAL, REQUEST):
        for k, (r, tr) in enumerate(zip(tab["read"], tab["t_read"], strict=True)):
            assert r == sum(t < tr for t in UPLOAD_T) and tr < UPLOAD_T[k]
    assert [k - r for k, r in enumerate(ARRIVAL["read"])] == [0, 1, 1, 0, 1, 0, 1, 1]
    assert [k - r for k, r in enumerate(REQUEST["read"])] == [0, 1, 1, 0, 2, 1, 1, 1]


@pytest.mark.parametrize("engine", [model_path, simpy_path, _reference])
@pytest.mark.parametrize("read_at, tab", [("arrival", ARRIVAL), ("request", REQUEST)])
def test_read_at_with_think_times_by_hand(engine, read_at, tab):
    beta, eta = Fr(1, 2), Fr(1, 4)
    w = [Fr(0)]
    for i, r in zip(tab["uploader"], tab["read"], strict=True):
        w.append(w[-1] - beta * (w[r] - grad_step(i, w[r], eta, 1)))
    delays = {**THINK_DELAYS, "read_at": read_at}
    sc = scenario({"name": "fedasync", "Q": 1, "eta": 0.25, "beta": 0.5}, 8, delays)
    tr = engine(sc, two_clients())
    assert tr.client.tolist() == [-1] + tab["uploader"]
    assert tr.time.tolist() == [0.0] + UPLOAD_T
    assert tr.staleness_steps.tolist() == [0] + [k - r for k, r in enumerate(tab["read"])]
    np.testing.assert_allclose(tr.staleness_time[1:],
                               np.subtract(UPLOAD_T, tab["t_read"]), rtol=0, atol=1e-15)
    assert tr.final_w[0] == pytest.approx(float(w[-1]), abs=1e-15)
