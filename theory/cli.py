"""``fedsim bounds``: evaluate a registered theorem's bound from the command line.

Usage (THEORY_SPEC 1.4 for what is printed)::

    fedsim bounds --list
    fedsim bounds theorem1 --L 1 --Q 2 --tau 2 --b 1 --sigma-g2 0.2 --gamma-g2 1 \\
        --f-gap 50 --T 38880
    fedsim bounds theorem3 ... --mode paper_literal --json
    fedsim bounds theorem7 --L 2 --mu 1 --M 2 --p 0.3,0.3 --p-s 0.4 --sigma 0.1 \\
        --zeta 1 --R0 1 --K 100,1000 --level certified

* One sub-choice per theorem of :mod:`fedsim.theory.registry` (built-ins and ``fedsim.theorems``
  plug-ins alike); ``--list`` prints them with their paper labels.
* The options are read from each bound function's signature (:func:`options`): every
  keyword argument is an option with dashes (``--sigma-g2``), required when it has no
  default.  The annotation gives the kind (:mod:`fedsim.theory.params`): ``float`` a number (``inf``
  accepted), ``int`` an integer (``1.5`` is a usage error), ``bool`` a flag, ``Literal[...]``
  a choice, ``str`` text checked by the theorem, ``Vector`` a comma list, ``Horizons`` /
  ``Iterations`` a number or a comma list (``--T 1e3,1e4,1e5`` gives a curve; an empty item
  such as ``--T 100,,200`` is a usage error).
* ``--problem FILE.toml`` supplies the problem's constants (:func:`constants_from_file`);
  ``--scenario FILE.toml`` every constant the scenario determines (the participation
  probabilities from the Poisson rates, sigma from ``sigma_g2``, R0 from the start point,
  tau from the provable staleness, the gaps at ``w0``: :func:`scenario_fill`), lists those
  it cannot fill and why, and resolves the hypotheses the scenario settles.  Options given
  on the command line win.
* Output: the BoundResult table (terms, status, hypotheses, step sizes, derived constants),
  plus a per-horizon table for curves.  ``--json`` prints ``BoundResult.to_dict()`` as
  *strict* JSON: non-finite floats become the strings ``"inf"``, ``"-inf"``, ``"nan"``
  (so jq and other strict parsers accept it; ``float("inf")`` reads them back).
* Errors are one line on stderr with exit code 2 (:mod:`fedsim.cli`).
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import math
import sys
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from fedsim.theory import params
from fedsim.theory.registry import Theorem, get_theorem, theorems
from fedsim.theory.result import BoundResult

from fedsim.errors import ConfigError, FedsimError

__all__ = ["add_parser", "run", "constants_from_file", "scenario_fill", "to_json", "options",
           "Option", "parse_option", "evaluate"]


# --------------------------------------------------------------------------- argument types
def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None


def _int(text: str) -> int:
    """An integer; ``1e3`` is read as 1000, ``1.5`` and ``inf`` are refused."""
    try:
        return int(text)
    except ValueError:
        x = _float(text)
        if not (math.isfinite(x) and x.is_integer()):
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        return int(x)


def _items(text: str) -> list[str]:
    parts = [p.strip() for p in text.split(",")]
    if not text.strip() or any(p == "" for p in parts):
        raise argparse.ArgumentTypeError(
            f"expected a number or a comma list without empty items, got {text!r}")
    return parts


def _vector(text: str) -> list[float]:
    """A comma list of numbers (always a list)."""
    return [_float(p) for p in _items(text)]


def _horizons(text: str) -> float | list[float]:
    """A number or a comma list of numbers (a curve over the horizon T, a count of server
    steps: each must be a whole number >= 1; ``1.5`` is a usage error)."""
    vals = [_float(p) for p in _items(text)]
    for v in vals:
        if not (math.isfinite(v) and v.is_integer() and v >= 1):
            raise argparse.ArgumentTypeError(
                f"expected whole numbers of steps >= 1, got {text!r}")
    return vals[0] if len(vals) == 1 and "," not in text else vals


#: the largest iteration count a recursion-based bound is run to (theorem7 and theorem8 keep
#: O(max K) numbers and time: 1e8 iterations took 400 s and 2.4 GB on one core)
MAX_ITERATIONS = 10**7


def _iterations(text: str) -> int | list[int]:
    """An integer or a comma list of integers (a curve), each in ``[1, MAX_ITERATIONS]``
    (the bound is evaluated by a recursion that runs to the largest one)."""
    vals = [_int(p) for p in _items(text)]
    for v in vals:
        if not 1 <= v <= MAX_ITERATIONS:
            raise argparse.ArgumentTypeError(
                f"expected whole numbers of iterations in [1, {MAX_ITERATIONS:.0e}], got "
                f"{text!r} (the bound's recursion runs to the largest one)")
    return vals[0] if len(vals) == 1 and "," not in text else vals


_PARSERS = {"number": _float, "integer": _int, "vector": _vector, "horizons": _horizons,
            "iterations": _iterations, "text": str}
_KINDS = {params.KIND_VECTOR: "vector", params.KIND_HORIZONS: "horizons",
          params.KIND_ITERATIONS: "iterations"}


def parse_option(kind: str, text: str) -> Any:
    """What ``text`` gives an option of ``kind`` (:attr:`Option.kind`, not ``flag`` or
    ``choice``) on the command line; ``argparse.ArgumentTypeError`` if it is refused."""
    return _PARSERS[kind](text)


# --------------------------------------------------------------------------- signature -> options
@dataclass(frozen=True)
class Option:
    """One command-line option read from a bound function's signature."""

    name: str
    kind: str   # number | integer | vector | horizons | iterations | text | choice | flag
    required: bool
    default: Any
    choices: tuple[str, ...] | None
    help: str

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


def _kind(annotation: Any) -> tuple[str, tuple[str, ...] | None]:
    fedsim_kind = params.kind_of(annotation)
    if fedsim_kind is not None:
        return _KINDS[fedsim_kind], None
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) is typing.Literal:
        return "choice", tuple(str(a) for a in typing.get_args(annotation))
    if annotation is bool:
        return "flag", None
    if annotation is int:
        return "integer", None
    if annotation is str:
        return "text", None
    if args and annotation not in (float, int, str, bool):  # X | None, X | ndarray ...
        for a in args:
            k = _kind(a)
            if k[0] != "number" or a is float:
                return k
    return "number", None


def options(theorem: Theorem) -> list[Option]:
    """The options of ``theorem``: one per keyword argument of its function's signature."""
    fn = theorem.function
    hints = typing.get_type_hints(fn, include_extras=True)
    out = []
    for name, par in inspect.signature(fn).parameters.items():
        if par.kind in (par.VAR_KEYWORD, par.VAR_POSITIONAL):
            continue
        kind, choices = _kind(hints.get(name, Any))
        required = par.default is inspect.Parameter.empty
        default = None if required else par.default
        text = theorem.help.get(name, f"keyword argument {name} of {theorem.name}")
        out.append(Option(name, kind, required, default, choices, text))
    return out


# --------------------------------------------------------------------------- problem files
def constants_from_file(path: str | Path, *, include_algorithm: bool = True) -> dict[str, Any]:
    """Theorem keyword arguments read from a scenario/problem TOML via :mod:`fedsim.config`.

    The problem's constants table (``Problem.constants``: ``L``, ``mu``, ``rho``,
    ``sigma_g2``, ``sigma_h2``, ``gamma_g2``, ``gamma_h2``, ``G``, ``B``, ``zeta`` ...) is
    mapped by name.  With ``include_algorithm`` the algorithm fields the scenario sets
    explicitly are mapped too (``Q``, ``eta``, ``batch -> b``, ``beta``, ``alpha`` (a
    number), ``lam``, ``nu``, ``M``, ``tau``) and ``horizon.steps`` gives ``T`` and ``K``.
    Gaps such as ``f_gap`` need the initial point and are not read.
    """
    config = importlib.import_module("fedsim.config")  # the front door reads scenario files
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"problem file must be an existing file, got path={str(p)!r}")
    scenario = config.load(p)
    problem = config.build_problem(getattr(scenario, "problem", scenario))
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
class _ListAction(argparse.Action):
    """``--list``: print every registered theorem and exit 0."""

    def __init__(self, option_strings: list[str], dest: str, **kw: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kw)

    def __call__(self, parser: argparse.ArgumentParser, namespace: Any, values: Any,
                 option_string: str | None = None) -> None:
        ths = theorems()
        wn = max((len(t.name) for t in ths), default=0)   # columns as wide as the longest
        wl = max((len(t.label) for t in ths), default=0)
        wm = max((len(t.module) for t in ths), default=0)
        for th in ths:
            statuses = ", ".join(s.value for s in th.statuses)
            print(f"{th.name:<{wn}}  {th.label:<{wl}}  {th.module:<{wm}}"
                  + (f"  [{statuses}]" if statuses else ""))
        parser.exit(0)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``fedsim bounds`` with one sub-choice per registered theorem."""
    p = subparsers.add_parser("bounds", help="evaluate a theorem's bound (BoundResult)",
                              description="Evaluate a theorem's bound: value, status, terms, "
                              "hypotheses, step sizes (THEORY_SPEC 1.4).")
    p.add_argument("--list", action=_ListAction, help="list the registered theorems and exit")
    entries = []
    for th in theorems():
        try:
            entries.append((th, options(th)))
        except (FedsimError, TypeError, ValueError) as exc:  # a plug-in's bad signature
            sys.stderr.write(f"fedsim: theorem {th.name!r} ({th.module}) is skipped by "
                             f"fedsim bounds: {str(exc).splitlines()[0] if str(exc) else exc!r}\n")
    sub = p.add_subparsers(dest="theorem", required=True,
                           metavar="{" + ",".join(t.name for t, _ in entries) + "}",
                           parser_class=type(p))
    for th, opts in entries:
        sp = sub.add_parser(th.name, help=th.label, description=th.label + ". " + th.paper)
        for o in opts:
            if o.kind == "flag":
                sp.add_argument(o.flag, dest=o.name, action="store_true", help=o.help)
            elif o.kind == "choice":
                # None when not given: the function's default applies, or the scenario's
                # value (--scenario fills e.g. Per-FedAvg's variant from the client rule)
                sp.add_argument(o.flag, dest=o.name, default=None, choices=o.choices,
                                help=o.help + (f" (default {o.default})" if o.default else ""))
            else:
                sp.add_argument(o.flag, dest=o.name, type=_PARSERS[o.kind], default=None,
                                metavar=o.name.upper(),
                                help=o.help + (" (required)" if o.required else ""))
        sp.add_argument("--problem", metavar="FILE.toml", default=None,
                        help="read the problem's constants from a TOML file")
        sp.add_argument("--scenario", metavar="FILE.toml", default=None,
                        help="read constants and algorithm parameters from a scenario TOML")
        sp.add_argument("--json", action="store_true", help="print BoundResult.to_dict() as JSON")
        sp.set_defaults(func=run)
    return p


def scenario_fill(path: str | Path, theorem: Theorem) -> Any:
    """What the scenario file at ``path`` fixes of ``theorem``'s arguments
    (:func:`fedsim.validation.scenario_constants.scenario_constants`, the one derivation that
    ``fedsim run --bound`` uses too)."""
    config = importlib.import_module("fedsim.config")  # the front door reads scenario files
    derive = importlib.import_module("fedsim.validation.scenario_constants")
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"scenario file must be an existing file, got path={str(p)!r}")
    return derive.scenario_constants(config.load(p), theorem)


def _kwargs(args: argparse.Namespace, theorem: Theorem) -> tuple[dict[str, Any], Any]:
    opts = options(theorem)
    names = {o.name for o in opts}
    from_file: dict[str, Any] = {}
    if args.problem:
        from_file.update(constants_from_file(args.problem, include_algorithm=False))
    filled = scenario_fill(args.scenario, theorem) if args.scenario else None
    if filled is not None:
        from_file.update(filled.values)
    kw = {k: v for k, v in from_file.items() if k in names}
    for o in opts:
        v = getattr(args, o.name)
        if o.kind == "flag":
            if v:
                kw[o.name] = True
        elif v is not None:
            kw[o.name] = v
    lacking = [o for o in opts if o.required and o.name not in kw]
    if lacking:
        why = filled.missing if filled is not None else {}
        o = lacking[0]
        raise ConfigError(
            f"{o.name} is required for {theorem.name}, got no {o.flag}"
            + (f"; the scenario does not determine it: {why[o.name]}" if o.name in why else
               " (give it or a --problem/--scenario)")
            + (f" (also missing: {', '.join(x.name for x in lacking[1:])})"
               if len(lacking) > 1 else ""))
    _check_per_client_lengths(kw, [o for o in opts if o.kind == "vector"])
    return kw, filled


def _check_per_client_lengths(kw: dict[str, Any], vectors: list[Option]) -> None:
    """Every comma-list option is per client: all given ones have the same length."""
    given = [(o, kw[o.name]) for o in vectors
             if isinstance(kw.get(o.name), (list, tuple, np.ndarray))]
    if len({len(v) for _, v in given}) > 1:
        (o1, v1), (o2, v2) = given[0], next((o, v) for o, v in given if len(v) != len(given[0][1]))
        raise ConfigError(f"{o2.flag} has {len(v2)} entries but {o1.flag} has {len(v1)}; the "
                          "comma lists are per client and must have one entry per client")


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


def evaluate(theorem: Theorem, constants: dict[str, Any]) -> BoundResult:
    """``theorem.function(**constants)``; an overflow of float64 is a one-line
    :class:`FedsimError` (``fedsim bounds`` and :func:`fedsim.theory.bound` alike)."""
    try:
        with np.errstate(all="ignore"):  # an overflow shows in the value (inf)
            return theorem.function(**constants)
    except (OverflowError, FloatingPointError, ZeroDivisionError) as exc:
        raise FedsimError(f"{theorem.name}: the bound cannot be evaluated in float64 at these "
                          f"constants ({type(exc).__name__}: {exc}); use smaller values") from None


def run(args: argparse.Namespace) -> int:
    """Evaluate the chosen theorem and print the table (or JSON); returns 0."""
    theorem = get_theorem(args.theorem)
    kw, filled = _kwargs(args, theorem)
    from fedsim.notice import notice_after

    with notice_after(f"evaluating {theorem.name}'s bound (a long recursion at these "
                      "horizons); this can take a while"):
        result = evaluate(theorem, kw)
    if filled is not None:
        result = filled.resolve(result)
    if args.json:
        print(to_json(result))
        return 0
    print(result)
    if filled is not None:
        print(filled.table({o.name for o in options(theorem) if getattr(args, o.name)
                            not in (None, False)}))
    if np.ndim(result.value) > 0 and theorem.horizon in kw:
        print(_curve_table(result, theorem.horizon, kw[theorem.horizon]))
    return 0
