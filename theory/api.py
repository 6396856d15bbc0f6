"""``fedsim.theory.bound``: evaluate a registered theorem's bound by name, from Python."""

from __future__ import annotations

import inspect
from typing import Any

from fedsim.theory.registry import get_theorem
from fedsim.theory.result import BoundResult

from fedsim.errors import ConfigError

__all__ = ["bound"]


def bound(name: str, /, **constants: Any) -> BoundResult:
    """The bound of theorem ``name`` (``fedsim bounds --list`` lists them) at ``constants``.

    The keyword arguments are the theorem function's own (``fedsim bounds NAME --help``
    lists them, with their meaning). An unknown or missing argument is a
    :class:`~fedsim.errors.ConfigError` that lists the accepted ones, raised before anything
    is evaluated. The result carries its value, status, terms, every hypothesis
    (holds / fails / unknown, with why) and the step sizes the theorem prescribes.
    """
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
    return theorem.function(**constants)
