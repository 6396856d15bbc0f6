"""``fedsim.theory.bound``: evaluate a registered theorem's bound by name, from Python."""

from __future__ import annotations

import argparse
import inspect
from typing import Any

import numpy as np
from fedsim.theory.registry import get_theorem
from fedsim.theory.result import BoundResult

from fedsim.errors import ConfigError

__all__ = ["bound", "check_constants"]


def _as_text(value: Any) -> str | None:
    """The command-line text of a Python number or 1-D list of numbers (None otherwise)."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if isinstance(value, (bool, np.bool_)):
        return None
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    if isinstance(value, (list, tuple, np.ndarray)):
        if np.ndim(value) != 1 or len(value) == 0:
            return None
        items = [_as_text(v) for v in value]
        return None if any(t is None or "," in t for t in items) else ",".join(items)
    return None


def check_constants(name: str, constants: dict[str, Any]) -> dict[str, Any]:
    """The constants of theorem ``name`` as ``fedsim bounds`` reads them: each value
    refused as its option would refuse it (the same parser: a number, a whole number of
    steps >= 1, a count of iterations up to the CLI's limit, a 1-D list of numbers, one of
    the choices), with the option's message; returns the values the command line would
    pass."""
    from fedsim.theory.cli import options, parse_option

    opts = {o.name: o for o in options(get_theorem(name))}
    out: dict[str, Any] = {}
    for key, value in constants.items():
        o = opts.get(key)
        if o is None:
            out[key] = value
            continue
        if o.kind == "flag":
            if not isinstance(value, (bool, np.bool_)):
                raise ConfigError(f"{key} must be True or False, got {key}={value!r}")
            out[key] = bool(value)
        elif o.kind == "choice":
            if not isinstance(value, str) or value not in (o.choices or ()):
                raise ConfigError(f"{key} must be one of {', '.join(o.choices or ())}, got "
                                  f"{key}={value!r}")
            out[key] = value
        elif o.kind == "text":
            if not isinstance(value, str):
                raise ConfigError(f"{key} must be a string, got {key}={value!r}")
            out[key] = value
        else:
            text = _as_text(value)
            if text is None:
                raise ConfigError(f"{key} must be a number or a 1-D list of numbers, got "
                                  f"{key} of type {type(value).__name__}"
                                  + (f" and shape {np.shape(value)}"
                                     if isinstance(value, np.ndarray) else ""))
            try:
                parsed = parse_option(o.kind, text)
            except argparse.ArgumentTypeError as exc:
                raise ConfigError(f"{key}: {exc}") from None
            scalar = not isinstance(value, (list, tuple, np.ndarray))
            out[key] = parsed if scalar or isinstance(parsed, list) else [parsed]
    return out


def bound(name: str, /, **constants: Any) -> BoundResult:
    """The bound of theorem ``name`` (``fedsim bounds --list`` lists them) at ``constants``.

    The keyword arguments are the theorem function's own (``fedsim bounds NAME --help``
    lists them, with their meaning). An unknown or missing argument, or a value the
    matching ``fedsim bounds`` option refuses (:func:`check_constants`), is a
    :class:`~fedsim.errors.ConfigError` that says so, raised before anything is evaluated;
    a bound that overflows float64 is a :class:`~fedsim.errors.FedsimError`, as on the
    command line. The result carries its value, status, terms, every hypothesis (holds /
    fails / unknown, with why) and the step sizes the theorem prescribes.
    """
    if not isinstance(name, str):
        raise ConfigError(f"name must be a theorem name (a string; fedsim bounds --list), got "
                          f"name={name!r}")
    from fedsim.environment import check_environment

    check_environment()
    theorem = get_theorem(name)
    params = inspect.signature(theorem.function).parameters
    if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        accepted = [k for k, p in params.items()
                    if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)]
        unknown = sorted(set(constants) - set(accepted))
        if unknown:
            raise ConfigError(f"{name} does not take {', '.join(unknown)}; it takes "
                              f"{', '.join(accepted)}")
        missing = [k for k in accepted
                   if params[k].default is inspect.Parameter.empty and k not in constants]
        if missing:
            raise ConfigError(f"{name} needs {', '.join(missing)}")
    from fedsim.theory.cli import evaluate

    return evaluate(theorem, check_constants(name, constants))
