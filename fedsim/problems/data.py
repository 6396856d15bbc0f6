"""Binary logistic-regression data sets split across clients (THEORY_SPEC 9.2, 9.4).

Every generator returns ``(X_list, y_list)``: one float64 array ``X_i`` of shape
``(m_i, d)`` and one float64 label vector ``y_i`` of shape ``(m_i,)`` with entries in
``{-1.0, +1.0}`` per client, ready for ``LogisticProblem(X_list, y_list, nu_reg)``.

* :func:`synthetic_logistic` -- heterogeneous Gaussian clients, labels from a logistic
  model plus flips;
* :func:`digits_binary` -- scikit-learn's bundled 8x8 digits (no download: the data
  ship inside scikit-learn), made binary and split by label skew;
* :func:`add_anchor_rows` -- THEORY_SPEC 9.4's anchor rows, which make the objective
  coercive and strictly convex, hence give it a unique minimiser.

Everything is deterministic in ``seed``: the data of a problem are part of the
problem, independent of the run seed (docs/INTERNALS.md section 2).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Literal

import numpy as np

from fedsim.errors import (
    ConfigError,
    FedsimError,
    check_finite,
    check_integer,
    check_number,
    require,
)
from fedsim.problems.splits import partition_classes, partition_dirichlet, partition_iid

__all__ = [
    "synthetic_logistic",
    "digits_binary",
    "add_anchor_rows",
    "partition_iid",
    "partition_dirichlet",
    "partition_classes",
    "SIGNAL",
    "load_digits_arrays",
    "pca",
]

#: Scale of the common true weight vector of :func:`synthetic_logistic`.
SIGNAL: float = 3.0

_DIGITS_ROWS = 1797  # size of sklearn's load_digits
_SPLITS = ("dirichlet", "classes", "iid")
_SCALES = ("pixel", "max_norm")


def _is_int(v: object) -> bool:
    """True if ``v`` passes :func:`fedsim.errors.check_integer` (an integer type, not a bool)."""
    try:
        check_integer("value", v)
    except ConfigError:
        return False
    return True


def _gen(seed: int, *key: int) -> np.random.Generator:
    """Generator for one named part of a data set: ``SeedSequence(seed, spawn_key=key)``."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(int(seed), spawn_key=key)))




# ------------------------------------------------------------------------------------------
def synthetic_logistic(
    n_clients: int,
    dim: int,
    samples_per_client: int | Sequence[int],
    heterogeneity: float = 1.0,
    label_noise: float = 0.1,
    seed: int = 0,
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Heterogeneous synthetic logistic data (h = ``heterogeneity``, d = ``dim``).

    Model (each part drawn from its own child seed, so client i's data do not depend
    on ``n_clients``; adding clients appends new ones):

    * common weights ``wbar = SIGNAL * g``, ``g ~ N(0, I_d)`` (child key ``(0,)``);
    * client i (child key ``(1, i)``): weights ``w_i = wbar + h * SIGNAL * xi_i`` and
      feature mean ``c_i = h * zeta_i / sqrt(d)`` with ``xi_i, zeta_i ~ N(0, I_d)``;
    * rows ``x_ij = c_i + eps_ij / sqrt(d)``, ``eps_ij ~ N(0, I_d)``
      (so ``E||x_ij - c_i||^2 = 1`` and ``E||c_i||^2 = h^2``);
    * ``y_ij = +1`` with probability ``sigmoid(x_ij . w_i)`` and ``-1`` otherwise, then
      flipped independently with probability ``label_noise``.

    ``h = 0`` gives i.i.d. clients.  Rules: ``n_clients, dim >= 1``; every
    ``samples_per_client >= 1`` (an int or one int per client); ``h >= 0`` finite;
    ``0 <= label_noise <= 0.5``.
    """
    check_integer("n_clients", n_clients, low=1)
    check_integer("dim", dim, low=1)
    if _is_int(samples_per_client):
        sizes = [int(samples_per_client)] * int(n_clients)
    else:
        require(isinstance(samples_per_client, (Sequence, np.ndarray))
                and len(samples_per_client) == n_clients
                and all(_is_int(m) for m in samples_per_client),
                "samples_per_client", samples_per_client,
                f"must be an integer or a sequence of {n_clients} integers")
        sizes = [int(m) for m in samples_per_client]
    require(min(sizes) >= 1, "samples_per_client", samples_per_client, "must be >= 1")
    h = check_number("heterogeneity", heterogeneity, allow_inf=True)
    require(np.isfinite(h) and h >= 0.0, "heterogeneity", heterogeneity, "must be finite and >= 0")
    noise = check_number("label_noise", label_noise)
    require(0.0 <= noise <= 0.5, "label_noise", label_noise, "must be in [0, 0.5]")
    check_integer("seed", seed, low=0)

    d = int(dim)
    wbar = SIGNAL * _gen(seed, 0).standard_normal(d)
    X_list: list[np.ndarray] = []
    y_list: list[np.ndarray] = []
    for i, m in enumerate(sizes):
        rng = _gen(seed, 1, i)
        w_i = wbar + h * SIGNAL * rng.standard_normal(d)
        c_i = h * rng.standard_normal(d) / np.sqrt(d)
        X = c_i + rng.standard_normal((m, d)) / np.sqrt(d)
        p = 0.5 * (1.0 + np.tanh(0.5 * (X @ w_i)))  # sigmoid, overflow-free
        y = np.where(rng.random(m) < p, 1.0, -1.0)
        y = np.where(rng.random(m) < noise, -y, y)
        X_list.append(np.ascontiguousarray(X, dtype=np.float64))
        y_list.append(y.astype(np.float64))
    return X_list, y_list


# ------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def load_digits_arrays() -> tuple[np.ndarray, np.ndarray]:
    """The bundled digits as read-only (pixels 0..16 float64 (1797, 64), digit int64)."""
    try:
        from sklearn.datasets import load_digits
    except ImportError as exc:
        raise FedsimError(
            "digits_binary needs scikit-learn, which is not installed; "
            "install it with: pip install fedsim[data]") from exc
    bunch = load_digits()
    pixels = np.asarray(bunch.data, dtype=np.float64)
    digits = np.asarray(bunch.target, dtype=np.int64)
    pixels.setflags(write=False)
    digits.setflags(write=False)
    return pixels, digits


def pca(X: np.ndarray, k: int) -> np.ndarray:
    """Scores on the top-k principal axes of the centred data (numpy SVD).

    The sign of each axis is fixed so that its largest-magnitude entry is positive,
    which makes the reduction deterministic.
    """
    Xc = X - X.mean(axis=0)
    _, _, vt = np.linalg.svd(Xc, full_matrices=False)
    V = vt[:k].T.copy()
    signs = np.sign(V[np.argmax(np.abs(V), axis=0), np.arange(k)])
    V *= signs
    return Xc @ V


def digits_binary(
    n_clients: int,
    split: Literal["dirichlet", "classes", "iid"] = "dirichlet",
    a: float = 0.5,
    classes_per_client: int = 2,
    positive_classes: Sequence[int] = (0, 2, 4, 6, 8),
    seed: int = 0,
    max_features: int | None = None,
    scale: Literal["pixel", "max_norm"] = "pixel",
    min_rows: int = 10,
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """scikit-learn's 8x8 digits (1797 rows, 64 pixels in 0..16) as a federated binary task.

    * Labels: ``+1`` for digits in ``positive_classes`` (default even digits), else ``-1``.
    * Features: pixels / 16, in [0, 1].  ``max_features=k`` (1..63) replaces them by
      the scores on the top-k principal axes of the centred pixel data (numpy SVD,
      signs fixed; see :func:`pca`), which keeps ``d`` and the constants moderate;
      these scores are centred, not in [0, 1].  ``scale="max_norm"`` then divides every
      row by the largest row norm of the whole data set, so ``max_j ||x_j|| = 1``
      (which bounds L_i <= 1/4, G <= 1 and rho <= 1/(6 sqrt 3), THEORY_SPEC 9.2).
    * Split across clients by the 10 original digit classes: ``"dirichlet"``
      (:func:`partition_dirichlet` with concentration ``a``), ``"classes"``
      (:func:`partition_classes` with ``classes_per_client``) or ``"iid"``.  Every
      client gets at least ``min_rows`` rows, or ConfigError if that is impossible.
      With ``"classes"`` and ``n_clients * classes_per_client < 10`` the digits no
      client holds are left out.

    Needs scikit-learn (``pip install fedsim[data]``), imported only when called.
    """
    check_integer("n_clients", n_clients, low=1)
    require(split in _SPLITS, "split", split, f"must be one of {list(_SPLITS)}")
    check_integer("min_rows", min_rows, low=1)
    if split == "dirichlet":
        # NaN breaks the rule below (and is reported by it) rather than the type check
        nan = isinstance(a, float) and np.isnan(a)
        av = a if nan else check_number("a", a, allow_inf=True)
        require(np.isfinite(av) and av > 0, "a", a, "must be finite and > 0")
    if split == "classes":
        require(_is_int(classes_per_client) and 1 <= classes_per_client <= 10,
                "classes_per_client", classes_per_client, "must be an integer in 1..10")
    pos = tuple(positive_classes)
    require(len(pos) >= 1 and all(_is_int(k) and 0 <= k <= 9 for k in pos)
            and len(set(pos)) == len(pos) and len(pos) <= 9,
            "positive_classes", positive_classes,
            "must be 1 to 9 distinct digits in 0..9 (both labels must occur)")
    if max_features is not None:
        require(_is_int(max_features) and 1 <= max_features <= 63, "max_features", max_features,
                "must be None or an integer in 1..63")
    require(scale in _SCALES, "scale", scale, f"must be one of {list(_SCALES)}")
    check_integer("seed", seed, low=0)
    require(n_clients * min_rows <= _DIGITS_ROWS, "n_clients", n_clients,
            f"must satisfy n_clients*min_rows <= {_DIGITS_ROWS} rows (min_rows={min_rows})")

    pixels, digits = load_digits_arrays()
    X = pixels / 16.0
    if max_features is not None:
        X = pca(X, int(max_features))
    if scale == "max_norm":
        X = X / np.max(np.linalg.norm(X, axis=1))
    y = np.where(np.isin(digits, pos), 1.0, -1.0)

    rng = _gen(seed, 2)
    if split == "iid":
        parts = partition_iid(digits.size, int(n_clients), rng)
    elif split == "dirichlet":
        parts = partition_dirichlet(digits, int(n_clients), float(a), rng, int(min_rows))
    else:
        parts = partition_classes(digits, int(n_clients), int(classes_per_client), rng)
    sizes = [p.size for p in parts]
    require(min(sizes) >= min_rows, "n_clients", n_clients,
            f"leaves a client with {min(sizes)} rows < min_rows={min_rows} under "
            f"split={split!r} (use fewer clients, more classes_per_client or a smaller min_rows)")
    X_list = [np.ascontiguousarray(X[p]) for p in parts]
    y_list = [y[p].copy() for p in parts]
    return X_list, y_list


# ------------------------------------------------------------------------------------------
def add_anchor_rows(
    X_list: Sequence[np.ndarray],
    y_list: Sequence[np.ndarray],
    s: float = 1.0,
    clients: Literal["all", "first"] = "all",
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Append the anchor rows ``(s e_k, +1)`` and ``(s e_k, -1)``, k = 1..d (THEORY_SPEC 9.4).

    The 2d rows are appended in the order ``(s e_1, +1), (s e_1, -1), (s e_2, +1), ...``
    to every client (``clients="all"``) or to client 0 only (``"first"``).  New arrays
    are returned; the inputs are not modified.

    Why this gives a unique minimiser (unregularised logistic loss): for any w != 0
    pick k with w_k != 0; one of the two anchors of coordinate k has margin
    ``-s|w_k| < 0``, so along the ray t*w its loss term ``log(1 + exp(t s |w_k|))``
    grows without bound while every other term is >= 0: the objective is coercive and
    a minimiser exists.  The anchor rows alone span R^d, so X has full column rank and
    the Hessian ``(1/m) sum_j s'(z_j) x_j x_j^T`` (with ``s' > 0``) is positive definite
    everywhere: the objective is strictly convex and the minimiser is unique.  With
    ``"all"`` this holds for every f_i (per-client minimisers, f_star_P, zeta); with
    ``"first"`` it holds for the global f = (1/n) sum_i f_i (x*, f_star_A), since the
    other clients add convex terms.
    """
    require(isinstance(X_list, Sequence) and isinstance(y_list, Sequence), "X_list",
            type(X_list).__name__, "and y_list must be lists of arrays")
    require(len(X_list) >= 1, "X_list", X_list, "must hold at least one client")
    require(len(X_list) == len(y_list), "y_list", f"<{len(y_list)} clients>",
            f"must have one label vector per client ({len(X_list)})")
    sv = check_number("s", s, allow_inf=True)
    require(np.isfinite(sv) and sv > 0.0, "s", s, "must be finite and > 0")
    require(clients in ("all", "first"), "clients", clients, "must be 'all' or 'first'")
    Xs = [np.asarray(X, dtype=np.float64) for X in X_list]
    ys = [np.asarray(y, dtype=np.float64) for y in y_list]
    d = Xs[0].shape[1] if Xs[0].ndim == 2 else -1
    for i, (X, y) in enumerate(zip(Xs, ys, strict=True)):
        require(X.ndim == 2 and X.shape[1] == d and d >= 1, f"X_list[{i}]", X.shape,
                f"must be a 2-D array with {d} columns")
        require(y.shape == (X.shape[0],), f"y_list[{i}]", y.shape,
                f"must have shape ({X.shape[0]},)")
        check_finite(f"X_list[{i}]", X)
        require(bool(np.all((y == 1.0) | (y == -1.0))), f"y_list[{i}]", y,
                "must contain only -1/+1 labels")
    XA = sv * np.repeat(np.eye(d), 2, axis=0)
    yA = np.tile([1.0, -1.0], d)
    targets = range(len(Xs)) if clients == "all" else (0,)
    X_out = [X.copy() for X in Xs]
    y_out = [y.copy() for y in ys]
    for i in targets:
        X_out[i] = np.vstack([Xs[i], XA])
        y_out[i] = np.concatenate([ys[i], yA])
    return X_out, y_out
