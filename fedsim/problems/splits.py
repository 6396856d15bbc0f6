"""Client partitions of a labelled data set, per-client train/test splits, per-client rates.

Every random choice comes from its own numpy stream of the problem's ``seed`` (the data
seed, independent of the run seed; docs/INTERNALS.md section 2)::

    partition        SeedSequence(seed, spawn_key=(2,))      # = data.digits_binary's
    test split of i  SeedSequence(seed, spawn_key=(3, i))
    client rates     SeedSequence(seed, spawn_key=(4,))
    validation of i  SeedSequence(seed, spawn_key=(5, i))

so the rows a client holds never depend on whether (or how large) a test split is
made: with ``test_fraction = f`` client ``i``'s training rows are its rows at
``f = 0`` minus its test rows, in the same order, and the test rows at a smaller
``f`` are a subset of those at a larger one (one permutation per client, a prefix of
it is held out).  A validation split (``validation_fraction = v``, for choosing
hyper-parameters without touching the test rows) is carved the same way from each
client's *training* rows after the test split, from its own stream: ``v = 0`` (the
default) draws nothing and leaves the training and test rows exactly as before.

Partitions (each returns one sorted ``int64`` index array per client):

* ``"iid"`` -- shuffle and cut into near-equal parts;
* ``"dirichlet"`` -- label skew: per class, client shares ~ Dirichlet(a 1_n)
  (Hsu, Qi & Brown 2019), then a deterministic top-up to ``min_rows``;
* ``"classes"`` -- c classes per client, dealt round-robin (McMahan et al. 2017).

They consume the generator exactly as ``fedsim.problems.data.partition_*`` do, so
for equal generators the partitions are identical (tests/problems/test_splits.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from fedsim.errors import (
    check_choice,
    check_integer,
    check_number,
    check_positive,
    check_probability,
    require,
)

__all__ = [
    "SPLITS",
    "ClientSplit",
    "client_rates",
    "partition",
    "partition_classes",
    "partition_dirichlet",
    "partition_iid",
    "partition_perfedavg",
    "split_dataset",
    "stream",
    "train_test_split",
    "validation_split",
]

SPLITS: tuple[str, ...] = ("iid", "dirichlet", "classes", "perfedavg")

#: spawn-key heads of the named streams (see the module docstring)
_KEY = {"partition": 2, "test": 3, "rates": 4, "validation": 5}


def stream(seed: int, purpose: str, *key: int) -> np.random.Generator:
    """The generator ``PCG64(SeedSequence(seed, spawn_key=(_KEY[purpose], *key)))``."""
    seed = check_integer("seed", seed, low=0)
    purpose = check_choice("purpose", purpose, _KEY)
    ss = np.random.SeedSequence(seed, spawn_key=(_KEY[purpose], *(int(k) for k in key)))
    return np.random.Generator(np.random.PCG64(ss))


def _labels(labels: Any) -> np.ndarray:
    lab = np.asarray(labels)
    require(lab.ndim == 1 and lab.size >= 1, "labels", f"<shape {lab.shape}>",
            "must be a non-empty 1-D array")
    require(np.issubdtype(lab.dtype, np.integer) and not np.issubdtype(lab.dtype, np.bool_),
            "labels", f"<dtype {lab.dtype}>", "must be an integer array")
    return lab


# ------------------------------------------------------------------------------------------
# partitions (generator given; identical rng consumption to fedsim.problems.data)
# ------------------------------------------------------------------------------------------
def partition_iid(n_rows: int, n_clients: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Shuffle ``range(n_rows)`` and cut it into ``n_clients`` near-equal parts (sorted)."""
    n_rows = check_integer("n_rows", n_rows, low=1)
    n_clients = check_integer("n_clients", n_clients, low=1, high=n_rows)
    parts = np.array_split(rng.permutation(n_rows), n_clients)
    return [np.sort(p).astype(np.int64) for p in parts]


def partition_dirichlet(labels: Any, n_clients: int, a: float, rng: np.random.Generator,
                        min_rows: int = 1) -> list[np.ndarray]:
    """Dirichlet(a) label skew, then a deterministic top-up to ``min_rows`` rows per client.

    For each class k (increasing) its rows are shuffled, shares ``q ~ Dirichlet(a 1_n)``
    and counts ``~ Multinomial(n_k, q)`` are drawn, and consecutive blocks go to clients
    0..n-1 (small ``a``: strong skew).  Top-up: while a client has fewer than
    ``min_rows`` rows, the largest client (lowest index on ties) gives it one row of its
    most plentiful class (largest label on ties; its last such row).  Needs
    ``n_clients * min_rows <= len(labels)``.
    """
    lab = _labels(labels)
    n_clients = check_integer("n_clients", n_clients, low=1)
    a = check_positive("a", a)
    min_rows = check_integer("min_rows", min_rows, low=0)
    require(n_clients * min_rows <= lab.size, "min_rows", min_rows,
            f"must satisfy n_clients*min_rows <= {lab.size} rows (n_clients={n_clients})")
    owned: list[list[int]] = [[] for _ in range(n_clients)]
    for k in np.unique(lab):
        idx = rng.permutation(np.flatnonzero(lab == k))
        q = rng.dirichlet(np.full(n_clients, a))
        counts = rng.multinomial(idx.size, q / q.sum())
        for i, part in enumerate(np.split(idx, np.cumsum(counts)[:-1])):
            owned[i].extend(part.tolist())
    sizes = np.array([len(o) for o in owned])
    for i in range(n_clients):
        while sizes[i] < min_rows:
            donor = int(np.argmax(sizes))
            dl = lab[owned[donor]]
            vals, cnt = np.unique(dl, return_counts=True)
            k = vals[np.argmax(cnt)]
            pos = max(j for j, row in enumerate(owned[donor]) if lab[row] == k)
            owned[i].append(owned[donor].pop(pos))
            sizes[donor] -= 1
            sizes[i] += 1
    return [np.sort(np.array(o, dtype=np.int64)) for o in owned]


def partition_classes(labels: Any, n_clients: int, classes_per_client: int,
                      rng: np.random.Generator) -> list[np.ndarray]:
    """c classes per client: client i holds classes ``K_{(i c + j) mod C}``, j < c.

    ``K_0 < ... < K_{C-1}`` are the distinct labels.  Each class's rows are shuffled and
    cut into near-equal parts among its holders (client order); a class no client holds
    (possible when ``n c < C``) is dropped.  Needs ``1 <= c <= C``.
    """
    lab = _labels(labels)
    n_clients = check_integer("n_clients", n_clients, low=1)
    classes = np.unique(lab)
    C = classes.size
    c = check_integer("classes_per_client", classes_per_client, low=1, high=C)
    held = [{int(classes[(i * c + j) % C]) for j in range(c)} for i in range(n_clients)]
    owned: list[list[int]] = [[] for _ in range(n_clients)]
    for k in classes:
        holders = [i for i in range(n_clients) if int(k) in held[i]]
        idx = rng.permutation(np.flatnonzero(lab == k))
        if not holders:
            continue
        for i, part in zip(holders, np.array_split(idx, len(holders)), strict=True):
            owned[i].extend(part.tolist())
    return [np.sort(np.array(o, dtype=np.int64)) for o in owned]


def partition_perfedavg(labels: Any, n_clients: int, rng: np.random.Generator
                        ) -> list[np.ndarray]:
    """Per-FedAvg's heterogeneous split (Fallah et al. 2020, Sec. 5).

    "(i) Half of the users, *each* have a images of *each* of the first five classes;
    (ii) The rest, *each* have a/2 images from only *one* of the first five classes and 2a
    images from only *one* of the other five classes."  With C labels (C even, >= 2) the
    "first five" are ``K_0..K_{C/2-1}``; user ``i < floor(n/2)`` is of type (i); user
    ``n/2 + j`` of type (ii) takes first-half class ``K_{j mod C/2}`` and second-half class
    ``K_{C/2 + (j mod C/2)}`` (the paper leaves the assignment open; a cycle spreads the
    classes evenly).  ``a`` is the largest even integer the rows allow ([PF] fixes a = 196
    for MNIST); rows left over are not dealt.  Each class's rows are shuffled once.
    """
    lab = _labels(labels)
    n_clients = check_integer("n_clients", n_clients, low=2)
    classes = np.unique(lab)
    C = classes.size
    require(C >= 2 and C % 2 == 0, "labels", f"{C} classes",
            "must have an even number (>= 2) of classes for split='perfedavg'")
    h = C // 2
    n1 = n_clients // 2
    typ2 = list(range(n_clients - n1))
    count = {int(k): int(np.sum(lab == k)) for k in classes}
    a = None
    for cand in range(2 * (lab.size // max(1, n1 * h)) + 2, 1, -2):
        need = {int(k): 0 for k in classes}
        for k in classes[:h]:
            need[int(k)] += n1 * cand
        for j in typ2:
            need[int(classes[j % h])] += cand // 2
            need[int(classes[h + j % h])] += 2 * cand
        if all(need[k] <= count[k] for k in need):
            a = cand
            break
    require(a is not None, "n_clients", n_clients,
            "is too large for split='perfedavg' (not even a = 2 rows fit)")
    pools = {int(k): list(rng.permutation(np.flatnonzero(lab == k))) for k in classes}

    def take(k: Any, m: int) -> list[int]:
        out = pools[int(k)][:m]
        del pools[int(k)][:m]
        return [int(x) for x in out]

    owned: list[list[int]] = []
    for _ in range(n1):
        owned.append([x for k in classes[:h] for x in take(k, a)])
    for j in typ2:
        owned.append(take(classes[j % h], a // 2) + take(classes[h + j % h], 2 * a))
    return [np.sort(np.array(o, dtype=np.int64)) for o in owned]


def partition(labels: Any, n_clients: int, *, split: str = "iid", a: float = 0.5,
              classes_per_client: int = 2, seed: int = 0, min_rows: int = 1
              ) -> list[np.ndarray]:
    """Deal the rows of a labelled data set to ``n_clients`` (seeded from the partition stream).

    ``split``: ``"iid"``, ``"dirichlet"`` (concentration ``a > 0``; a top-up gives every
    client ``min_rows`` rows), ``"classes"`` (``classes_per_client`` in 1..C) or
    ``"perfedavg"`` (:func:`partition_perfedavg`).  Every
    client must end with at least ``min_rows`` rows, else ConfigError.
    """
    lab = _labels(labels)
    n_clients = check_integer("n_clients", n_clients, low=1)
    split = check_choice("split", split, SPLITS)
    min_rows = check_integer("min_rows", min_rows, low=1)
    require(n_clients * min_rows <= lab.size, "n_clients", n_clients,
            f"must satisfy n_clients*min_rows <= {lab.size} rows (min_rows={min_rows})")
    rng = stream(seed, "partition")
    if split == "iid":
        parts = partition_iid(lab.size, n_clients, rng)
    elif split == "dirichlet":
        parts = partition_dirichlet(lab, n_clients, a, rng, min_rows)
    elif split == "perfedavg":
        parts = partition_perfedavg(lab, n_clients, rng)
    else:
        parts = partition_classes(lab, n_clients, classes_per_client, rng)
    small = min(p.size for p in parts)
    require(small >= min_rows, "n_clients", n_clients,
            f"leaves a client with {small} rows < min_rows={min_rows} under split={split!r} "
            "(use fewer clients, more classes_per_client or a smaller min_rows)")
    return parts


# ------------------------------------------------------------------------------------------
# per-client train/test split
# ------------------------------------------------------------------------------------------
def train_test_split(parts: list[np.ndarray], test_fraction: float, seed: int = 0, *,
                     min_train: int = 1) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Split each client's rows into (train, test), client i from the stream ``(3, i)``.

    Client ``i`` with ``m_i`` rows holds out
    ``t_i = min(floor(test_fraction m_i + 1/2), m_i - min_train)`` rows (a client with
    ``m_i < min_train`` is a ConfigError): the first ``t_i`` of one permutation of its
    rows drawn from its own stream (so a larger fraction holds out a superset, and
    nothing else is consumed).  Both parts are returned sorted, so the training rows
    keep their original order and are exactly the client's rows minus the test rows;
    ``test_fraction = 0`` returns the rows unchanged (and empty tests).
    """
    require(isinstance(parts, (list, tuple)) and len(parts) >= 1, "parts",
            type(parts).__name__, "must be a non-empty list of index arrays")
    frac = check_probability("test_fraction", test_fraction, allow_one=False)
    seed = check_integer("seed", seed, low=0)
    min_train = check_integer("min_train", min_train, low=1)
    return _hold_out_each(parts, frac, seed, "test", min_train, "parts")


def _hold_out_each(parts: Any, frac: float, seed: int, purpose: str, min_train: int,
                   label: str) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Per client ``i``: ``t_i = min(floor(frac m_i + 1/2), m_i - min_train)`` rows held out
    by :func:`_hold_out` on the stream ``(purpose, i)``; ``(kept, held)`` lists."""
    kept: list[np.ndarray] = []
    held: list[np.ndarray] = []
    for i, p in enumerate(parts):
        p = np.asarray(p)
        require(p.ndim == 1 and np.issubdtype(p.dtype, np.integer), f"{label}[{i}]",
                f"<shape {p.shape}, dtype {p.dtype}>", "must be a 1-D integer index array")
        p = np.sort(p.astype(np.int64))
        require(p.size >= min_train, f"{label}[{i}]", f"<{p.size} rows>",
                f"must hold at least min_train={min_train} rows")
        t = min(int(math.floor(frac * p.size + 0.5)), p.size - min_train)
        k, h = _hold_out(p, t, stream(seed, purpose, i) if t else None)
        kept.append(k)
        held.append(h)
    return kept, held


def _hold_out(p: np.ndarray, t: int, rng: np.random.Generator | None
              ) -> tuple[np.ndarray, np.ndarray]:
    """``(kept, held)``: the first ``t`` of one permutation of ``p`` from ``rng`` held out."""
    if t == 0:
        return p, np.zeros(0, dtype=np.int64)
    perm = rng.permutation(p.size)
    held = np.zeros(p.size, dtype=bool)
    held[perm[:t]] = True
    return p[~held], p[held]


def validation_split(train: list[np.ndarray], validation_fraction: float, seed: int = 0, *,
                     min_train: int = 1) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Move a seeded share of each client's training rows into a validation set.

    Client ``i`` with ``m_i`` training rows gives
    ``v_i = min(floor(validation_fraction m_i + 1/2), m_i - min_train)`` rows: the first
    ``v_i`` of one permutation drawn from the stream ``(5, i)`` (independent of the
    partition and test streams, so the test rows never change).  Returns ``(train, val)``,
    both sorted; ``validation_fraction = 0`` returns the rows unchanged (and empty sets)
    without drawing.  The validation rows are for choosing hyper-parameters (e.g. AsyPFL's
    lambda, Ma et al. 2022 Sec. 4.3) so that the test rows are never used to choose.
    """
    frac = check_probability("validation_fraction", validation_fraction, allow_one=False)
    seed = check_integer("seed", seed, low=0)
    min_train = check_integer("min_train", min_train, low=1)
    return _hold_out_each(train, frac, seed, "validation", min_train, "train")


@dataclass(frozen=True)
class ClientSplit:
    """Row indices per client: ``train[i]``, ``test[i]`` and ``val[i]`` (sorted, disjoint;
    ``val`` is empty per client unless a validation fraction was asked for)."""

    train: tuple[np.ndarray, ...]
    test: tuple[np.ndarray, ...]
    val: tuple[np.ndarray, ...] = ()

    @property
    def n_clients(self) -> int:
        """Number of clients."""
        return len(self.train)


def split_dataset(labels: Any, n_clients: int, *, split: str = "iid", a: float = 0.5,
                  classes_per_client: int = 2, seed: int = 0, test_fraction: float = 0.0,
                  min_train: int = 1, validation_fraction: float = 0.0) -> ClientSplit:
    """:func:`partition`, :func:`train_test_split`, then :func:`validation_split`; each
    client keeps ``min_train`` training rows.

    The partition asks for ``min_rows = min_train`` (the rows before the test split);
    the test and validation splits then check that ``min_train`` training rows remain.
    """
    parts = partition(labels, n_clients, split=split, a=a,
                      classes_per_client=classes_per_client, seed=seed, min_rows=min_train)
    train, test = train_test_split(parts, test_fraction, seed, min_train=min_train)
    train, val = validation_split(train, validation_fraction, seed, min_train=min_train)
    return ClientSplit(tuple(train), tuple(test), tuple(val))


# ------------------------------------------------------------------------------------------
# per-client rates (lambda_i): fixed, or truncated normal
# ------------------------------------------------------------------------------------------
def client_rates(n_clients: int, *, kind: str = "fixed", rate: float = 1.0,
                 mean: float = 1.0, sd: float = 1.0, low: float = 0.0,
                 high: float = math.inf, seed: int = 0) -> np.ndarray:
    """Per-client rates ``lambda_i`` (e.g. the compute rates of Exponential delays).

    ``kind="fixed"``: every ``lambda_i = rate`` (> 0).  ``kind="truncated_normal"``:
    ``lambda_i ~ N(mean, sd)`` truncated to ``[low, high]`` (exact inverse-CDF draws of
    :class:`fedsim.delays.Normal`), from the ``rates`` stream of ``seed``; ``low >= 0``
    and a draw of exactly 0 is rejected as a ConfigError (a rate must be > 0), so use
    ``low > 0`` for a rate that can be a denominator.  AREA's "lambda_i ~ N(10, 5)" is
    ``kind="truncated_normal", mean=10, sd=5, low=<small positive>``.
    """
    n_clients = check_integer("n_clients", n_clients, low=1)
    kind = check_choice("kind", kind, ("fixed", "truncated_normal"))
    seed = check_integer("seed", seed, low=0)
    if kind == "fixed":
        r = check_positive("rate", rate)
        return np.full(n_clients, r)
    from fedsim.delays import Normal

    mean = check_number("mean", mean)
    sd = check_positive("sd", sd)
    low = check_number("low", low, low=0.0)
    high = check_number("high", high, low=low, strict=True, allow_inf=True)
    law = Normal(mean, sd, low=low, high=high)
    out = np.asarray(law.sample(stream(seed, "rates"), size=n_clients), dtype=np.float64)
    require(bool(np.all(out > 0.0)), "low", low,
            "must be > 0 here: a drawn rate was 0 (rates must be > 0)")
    return out
