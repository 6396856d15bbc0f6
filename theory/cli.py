"""``fedsim bounds``: evaluate a theorem's bound from the command line.

Usage (THEORY_SPEC 1.4 for what is printed)::

    fedsim bounds theorem1 --L 1 --Q 2 --tau 2 --b 1 --sigma-g2 0.2 --gamma-g2 1 \\
        --f-gap 50 --T 38880
    fedsim bounds theorem3 ... --mode paper_literal --json
    fedsim bounds theorem7 --L 2 --mu 1 --M 2 --p 0.3,0.3 --p-s 0.4 --sigma 0.1 \\
        --zeta 1 --R0 1 --K 100,1000 --level certified

* One sub-choice per theorem: ``theorem1``-``theorem3`` ([P], :mod:`theory.persafl`) and
  ``theorem7``-``theorem8`` ([A], :mod:`theory.area`, imported only when asked for).
* Every keyword argument of the evaluator is an option with dashes (``--sigma-g2``);
  ``inf`` is accepted for constants that may be infinite.  ``--T`` / ``--K`` and the
  probability vectors take comma lists (``--T 1e3,1e4,1e5`` gives a curve).
* ``--problem FILE.toml`` / ``--scenario FILE.toml`` supply constants through
  :func:`constants_from_file`; options given on the command line win.
* Output: the BoundResult table (terms, status, hypotheses, step sizes, derived constants),
  plus a per-horizon table for curves.  ``--json`` prints ``BoundResult.to_dict()`` as
  *strict* JSON: non-finite floats become the strings ``"inf"``, ``"-inf"``, ``"nan"``
  (so jq and other strict parsers accept it; ``float("inf")`` reads them back).
* Errors are one line on stderr with exit code 2 (:mod:`fedsim.cli`).
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from fedsim.errors import ConfigError, FedsimError
from theory.result import BoundResult

__all__ = ["add_parser", "run", "constants_from_file", "to_json", "THEOREMS"]


# --------------------------------------------------------------------------- argument types
def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None


def _int(text: str) -> int | float:
    try:
        return int(text)
    except ValueError:
        x = _float(text)
        return int(x) if x.is_integer() else x  # non-integers are refused by the evaluator


def _floats(text: str) -> float | list[float]:
    """A number or a comma list of numbers (a curve)."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts:
        raise argparse.ArgumentTypeError(f"expected a number or a comma list, got {text!r}")
    vals = [_float(p) for p in parts]
    return vals[0] if len(vals) == 1 and "," not in text else vals


def _vector(text: str) -> list[float]:
    """A comma list of numbers (always a list)."""
    v = _floats(text)
    return v if isinstance(v, list) else [v]


def _iters(text: str) -> int | float | list[int | float]:
    """Iteration counts: integer-valued entries become ints."""
    v = _floats(text)
    conv = (lambda x: int(x) if math.isfinite(x) and x.is_integer() else x)
    return [conv(x) for x in v] if isinstance(v, list) else conv(v)


# (kwarg, type, required, help)
_Opt = tuple[str, Callable[[str], Any], bool, str]

_P_COMMON: list[_Opt] = [
    ("L", _float, True, "smoothness constant L of each f_i"),
    ("Q", _int, True, "local steps per upload"),
    ("tau", _int, True, "staleness bound (Assumption 1)"),
    ("b", _int, True, "batch size"),
    ("sigma_g2", _float, True, "per-sample gradient variance (may be inf)"),
    ("gamma_g2", _float, True, "gradient diversity (may be inf)"),
]
_P_TAIL: list[_Opt] = [
    ("T", _floats, True, "server steps: a number or a comma list"),
    ("beta", _float, False, "server step (the theorems need 1; default 1)"),
    ("eta", _float, False, "client step (default: the theorem's prescription)"),
]

#: sub-choice -> (module, function, options, mode choices or None, default mode)
THEOREMS: dict[str, tuple[str, str, list[_Opt], tuple[str, ...] | None, str | None]] = {
    "theorem1": ("theory.persafl", "theorem1", _P_COMMON + [
        ("f_gap", _float, True, "f(w0) - f_star_P"),
    ] + _P_TAIL, ("paper", "general_eta"), "paper"),
    "theorem2": ("theory.persafl", "theorem2", _P_COMMON + [
        ("rho", _float, True, "Hessian Lipschitz constant (may be inf)"),
        ("G", _float, True, "gradient bound of Assumption 6 (may be inf)"),
        ("alpha", _float, True, "MAML inner step"),
        ("sigma_h2", _float, True, "Hessian variance, Frobenius norm (may be inf)"),
        ("gamma_h2", _float, True, "Hessian diversity (may be inf)"),
        ("F_gap", _float, True, "F^(b)(w0) - f_star_P"),
    ] + _P_TAIL, ("paper", "general_eta"), "paper"),
    "theorem3": ("theory.persafl", "theorem3", _P_COMMON + [
        ("lam", _float, True, "Moreau-envelope parameter lambda"),
        ("nu", _float, True, "inner-solve accuracy"),
        ("F_gap", _float, True, "F^(c)(w0) - f_star_P"),
        ("kappa_me", _float, False, "Lemma 5 kappa in (1, lam/L] (default lam/L)"),
    ] + _P_TAIL, ("corrected", "paper_literal", "general_eta"), "corrected"),
    "theorem7": ("theory.area", "theorem7", [
        ("L", _float, True, "smoothness constant"),
        ("mu", _float, True, "strong convexity constant"),
        ("M", _int, True, "local steps"),
        ("p", _vector, True, "client event probabilities p_i (comma list)"),
        ("p_s", _float, True, "server event probability"),
        ("sigma", _float, True, "gradient noise sigma ([A] Asm 1)"),
        ("zeta", _float, True, "max_i ||x* - u_i*||"),
        ("R0", _float, True, "||x_{s,0} - x*||"),
        ("K", _iters, True, "global iterations: a number or a comma list"),
        ("grad_norms_at_xstar", _vector, False, "||grad f_i(x*)|| per client (comma list)"),
        ("r_init", _vector, False, "exact ||x_{i,0} - x*_{i,0}|| per client (comma list)"),
    ], None, None),
    "theorem8": ("theory.area", "theorem8", [
        ("M", _int, True, "local steps"),
        ("p", _vector, True, "client event probabilities p_i (comma list)"),
        ("p_s", _float, True, "server event probability"),
        ("sigma2", _float, True, "gradient noise variance"),
        ("B", _float, True, "Lipschitz constant of each f_i"),
        ("R", _float, True, "||x_{s,0} - x*||"),
        ("K", _iters, True, "global iterations: a number or a comma list"),
        ("alpha", _float, False, "constant step (default: the theorem's)"),
    ], None, "corrected"),
}

_FLAGS = {"theorem3": [("affine_additive", "H3.y declared: affine gradients, additive noise "
                        "(uses the paper's mu_c, E-P10)")],
          "theorem7": [("paper_literal", "use the paper's (erroneous) constants")]}


# --------------------------------------------------------------------------- problem files
def constants_from_file(path: str | Path, *, include_algorithm: bool = True) -> dict[str, Any]:
    """Theorem keyword arguments read from a scenario/problem TOML via :mod:`fedsim.config`.

    The problem's constants table (``Problem.constants``: ``L``, ``mu``, ``rho``,
    ``sigma_g2``, ``sigma_h2``, ``gamma_g2``, ``gamma_h2``, ``G``, ``B``, ``zeta`` ...) is
    mapped by name.  With ``include_algorithm`` the algorithm fields the scenario sets
    explicitly are mapped too (``Q``, ``eta``, ``batch -> b``, ``beta``, ``alpha`` (a
    number), ``lam``, ``nu``, ``M``, ``tau``) and ``horizon.steps`` gives ``T`` and ``K``.
    Gaps such as ``f_gap`` need the initial point and are not read.  Raises
    :class:`FedsimError` "not supported yet" if :mod:`fedsim.config` is missing.
    """
    try:
        config = importlib.import_module("fedsim.config")
    except ModuleNotFoundError as exc:
        if exc.name != "fedsim.config":
            raise
        raise FedsimError("--problem/--scenario: not supported yet (fedsim.config is not built)"
                          ) from None
    load = getattr(config, "load", None)
    build = getattr(config, "build_problem", None)
    if load is None or build is None:
        raise FedsimError("--problem/--scenario: not supported yet (fedsim.config has no "
                          "load()/build_problem())")
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"problem file must be an existing file, got path={str(p)!r}")
    scenario = load(p)
    problem = build(getattr(scenario, "problem", scenario))
    out: dict[str, Any] = {name: float(c.value) for name, c in problem.constants.items()}
    if include_algorithm:
        alg = getattr(scenario, "algorithm", None)
        for src, dst in (("Q", "Q"), ("eta", "eta"), ("batch", "b"), ("beta", "beta"),
                         ("alpha", "alpha"), ("lam", "lam"), ("nu", "nu"), ("M", "M"),
                         ("tau", "tau")):
            v = getattr(alg, src, None)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                out[dst] = v
        steps = getattr(getattr(scenario, "horizon", None), "steps", None)
        if isinstance(steps, int):
            out["T"] = steps
            out["K"] = steps
    return out


# --------------------------------------------------------------------------- parser
def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``fedsim bounds`` with one sub-choice per theorem."""
    p = subparsers.add_parser("bounds", help="evaluate a theorem's bound (BoundResult)",
                              description="Evaluate a theorem's bound: value, status, terms, "
                              "hypotheses, step sizes (THEORY_SPEC 1.4).")
    sub = p.add_subparsers(dest="theorem", required=True, metavar="{" + ",".join(THEOREMS) + "}",
                           parser_class=type(p))
    for name, (module, _fn, opts, modes, default_mode) in THEOREMS.items():
        paper = "[P] PersA-FL" if module.endswith("persafl") else "[A] AREA"
        sp = sub.add_parser(name, help=f"{paper} {name.replace('theorem', 'Theorem ')}")
        for kw, typ, required, text in opts:
            flag = "--" + kw.replace("_", "-")
            sp.add_argument(flag, dest=kw, type=typ, default=None, metavar=kw.upper(),
                            help=text + (" (required)" if required else ""))
        for kw, text in _FLAGS.get(name, []):
            sp.add_argument("--" + kw.replace("_", "-"), dest=kw, action="store_true", help=text)
        if name == "theorem7":
            sp.add_argument("--level", default="certified",
                            help="certified | leading_terms | rate_shape (default certified)")
        else:
            sp.add_argument("--mode", default=default_mode, choices=modes,
                            help="evaluation mode" + (
                                f" (default {default_mode})" if default_mode else
                                " (corrected | paper | general_alpha)"))
        sp.add_argument("--problem", metavar="FILE.toml", default=None,
                        help="read the problem's constants from a TOML file")
        sp.add_argument("--scenario", metavar="FILE.toml", default=None,
                        help="read constants and algorithm parameters from a scenario TOML")
        sp.add_argument("--json", action="store_true", help="print BoundResult.to_dict() as JSON")
        sp.set_defaults(func=run)
    return p


def _evaluator(module: str, fn: str) -> Callable[..., BoundResult]:
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name != module:
            raise
        raise FedsimError(f"{fn} needs {module}, which is not built yet") from None
    return getattr(mod, fn)


def _kwargs(args: argparse.Namespace) -> dict[str, Any]:
    module, fn, opts, _modes, _default = THEOREMS[args.theorem]
    names = {o[0] for o in opts} | {k for k, _ in _FLAGS.get(args.theorem, [])}
    from_file: dict[str, Any] = {}
    if args.problem:
        from_file.update(constants_from_file(args.problem, include_algorithm=False))
    if args.scenario:
        from_file.update(constants_from_file(args.scenario, include_algorithm=True))
    kw = {k: v for k, v in from_file.items() if k in names}
    for name, _typ, required, _text in opts:
        v = getattr(args, name)
        if v is not None:
            kw[name] = v
        elif required and name not in kw:
            raise ConfigError(f"{name} is required for {args.theorem}, got no "
                              f"--{name.replace('_', '-')} (give it or a --problem/--scenario)")
    for flag, _text in _FLAGS.get(args.theorem, []):
        if getattr(args, flag):
            kw[flag] = True
    if args.theorem == "theorem7":
        kw["level"] = args.level
    else:
        kw["mode"] = args.mode
    return kw


# --------------------------------------------------------------------------- output
def _jsonable(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    if isinstance(x, dict):
        return {k: _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    return x


def to_json(result: BoundResult) -> str:
    """Strict JSON of ``result.to_dict()`` with non-finite floats as strings."""
    return json.dumps(_jsonable(result.to_dict()), indent=2, allow_nan=False)


def _curve_table(result: BoundResult, horizon: str, hs: Any) -> str:
    hs = np.atleast_1d(np.asarray(hs, dtype=np.float64))
    cols = {horizon: hs, "value": np.atleast_1d(np.asarray(result.value, dtype=np.float64))}
    for k, v in result.terms.items():
        if k != "value_if_hypotheses_ignored" and np.ndim(v) > 0:
            cols[k] = np.asarray(v, dtype=np.float64)
    status = result.derived_constants.get("status_per_T")
    ws = [max(12, len(k) + 2) for k in cols]
    head = "".join(f"{k:>{w}}" for k, w in zip(cols, ws, strict=True))
    rows = [head + ("  status" if status else "")]
    for i in range(hs.size):
        line = "".join(f"{float(c[i]):>{w}.6g}" for c, w in zip(cols.values(), ws, strict=True))
        rows.append(line + (f"  {status[i]}" if status else ""))
    return "  per horizon:\n" + "\n".join("    " + r for r in rows)


def run(args: argparse.Namespace) -> int:
    """Evaluate the chosen theorem and print the table (or JSON); returns 0."""
    module, fn, _opts, _modes, _default = THEOREMS[args.theorem]
    kw = _kwargs(args)
    result = _evaluator(module, fn)(**kw)
    if args.json:
        print(to_json(result))
        return 0
    print(result)
    horizon = "K" if args.theorem in ("theorem7", "theorem8") else "T"
    if np.ndim(result.value) > 0:
        print(_curve_table(result, horizon, kw[horizon]))
    return 0
