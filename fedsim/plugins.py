"""Entry-point plug-ins as untrusted input: load one group, report a broken entry point in
one line, go on; check what a plug-in returns before anyone reads it.

fedsim reads four entry-point groups (``docs/EXTENDING.md``, "A plug-in package";
``docs/PLUGINS.md``):

* ``fedsim.theorems`` -- a :class:`fedsim.theory.registry.Theorem` (or a callable that
  registers what it wants), read by :func:`fedsim.theory.registry.load_plugins`;
* ``fedsim.families`` -- a :class:`fedsim.validation.families.Family` (or a list of them),
  read by :func:`fedsim.validation.families.load_family_plugins`;
* ``fedsim.suite_rows`` -- a list of :class:`fedsim.validation.rows.SuiteRow` (or a callable
  returning one), read by :func:`fedsim.validation.rows.load_row_plugins`;
* ``fedsim.problems`` -- a :class:`fedsim.problems.registry.ProblemKind` (or a list of them),
  read by :func:`fedsim.problems.registry.load_problem_plugins` the first time a scenario
  names a ``[problem] kind`` that is not built in.

**Loading.**  An entry point that fails to import -- any exception, ``SystemExit`` (a plug-in
calling ``sys.exit`` at import) or another ``BaseException`` but Ctrl-C, an installed
``entry_points.txt`` that is not UTF-8 -- or that names an object of the wrong kind, is
skipped: one line on stderr names it, its value and the first line of the error (once per
process), and :func:`broken_plugins` lists it.  Every other command keeps working.

**Results.**  A plug-in theorem's function runs through :func:`checked_theorem_function`:
an exception it raises, or a result that is not a
:class:`~fedsim.theory.result.BoundResult` of a known status with a real value (a number, or
a 1-D array of numbers over the horizons), finite unless the status says there is no bound
(``VACUOUS``, ``NOT_APPLICABLE``: ``+inf``), is a :class:`PluginError` naming the plug-in --
never a certified NaN.  A plug-in family's builder runs through
:func:`checked_family_builder`: it must return an ``Instance``.  A problem kind's builder runs
through :func:`checked_problem_builder` (it must return a
:class:`~fedsim.problems.base.Problem` with integer ``n >= 1`` and ``dim >= 1``) and its
client count through :func:`checked_problem_clients` (an integer ``>= 1``).  A plug-in that
raises a :class:`~fedsim.errors.FedsimError` (a ``ConfigError`` on a bad parameter) is
passed on as it is: that is its one-line refusal.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from importlib import metadata
from typing import Any

from fedsim.errors import FedsimError

__all__ = ["load_group", "load_group_once", "broken_plugins", "PluginError", "first_line",
           "checked_theorem_function", "checked_family_builder", "check_bound_result",
           "checked_problem_builder", "checked_problem_clients"]

_BROKEN: dict[tuple[str, str], str] = {}
_LOADED: set[str] = set()


class PluginError(FedsimError):
    """A plug-in raised, or returned something fedsim cannot use (one line names it)."""


def first_line(exc: BaseException) -> str:
    """An exception from foreign code in one line: ``Type: first line of its message``."""
    if isinstance(exc, SystemExit):
        return f"SystemExit({exc.code!r}) (it called sys.exit)"
    msg = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {msg[0]}" if msg else type(exc).__name__


def _report(key: tuple[str, str], line: str) -> None:
    if key not in _BROKEN:
        _BROKEN[key] = line
        try:
            sys.stderr.write(line + "\n")
        except (OSError, ValueError, AttributeError):  # stderr closed: broken_plugins() has it
            pass


def _entry_points(group: str) -> list[Any]:
    """The group's entry points; a distribution whose metadata cannot be read (not UTF-8,
    garbled) is reported once and skipped instead of breaking every command."""
    try:
        return list(metadata.entry_points(group=group))
    except Exception:  # noqa: BLE001 - one bad distribution: read them one at a time
        pass
    seen: set[str] = set()
    eps: list[Any] = []
    for dist in metadata.distributions():
        try:
            name = dist.metadata["Name"] or "?"
            if name in seen:
                continue
            seen.add(name)
            eps += [ep for ep in dist.entry_points if ep.group == group]
        except Exception as exc:  # noqa: BLE001 - foreign metadata: report, skip
            where = getattr(dist, "_path", "?")
            _report(("dist", str(where)), f"fedsim: the installed metadata at {where} cannot "
                    f"be read and its plug-ins were skipped: {first_line(exc)}")
    return eps


def load_group(group: str, accept: Callable[[str, Any], None]) -> list[str]:
    """Load every entry point of ``group`` and pass ``(name, object)`` to ``accept`` (which
    raises on an object of the wrong kind).  Returns the names accepted; a failing entry point
    is reported (module docstring) and skipped."""
    loaded = []
    for ep in _entry_points(group):
        try:
            accept(ep.name, ep.load())
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 - foreign code (SystemExit too): skip it
            _report((group, ep.name), f"fedsim: plug-in {ep.name!r} ({group} = {ep.value}) "
                    f"is broken and was skipped: {first_line(exc)}")
            continue
        loaded.append(ep.name)
    return loaded


def load_group_once(group: str, accept: Callable[[str, Any], None], *,
                    force: bool = False) -> list[str]:
    """:func:`load_group` the first time ``group`` is asked for in this process (or again
    with ``force``); later calls return ``[]``."""
    if group in _LOADED and not force:
        return []
    _LOADED.add(group)
    return load_group(group, accept)


def broken_plugins() -> list[str]:
    """The one-line reports of the plug-ins skipped so far in this process."""
    return list(_BROKEN.values())


def _value_problem(value: Any, status: Any) -> str | None:
    import numpy as np

    from fedsim.theory.result import Status

    if isinstance(value, (bool, np.bool_, str, bytes)) or value is None:
        return f"value={value!r} is not a number"
    try:
        a = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        return f"value of type {type(value).__name__} is not a number"
    if a.ndim > 1:
        return f"value has shape {a.shape}; a bound is a number or a 1-D array over horizons"
    if np.isnan(a).any():
        return "value is NaN"
    no_bound = status in (Status.VACUOUS, Status.NOT_APPLICABLE)
    if np.isneginf(a).any() or (np.isposinf(a).any() and not no_bound):
        return f"value is {'-inf' if np.isneginf(a).any() else 'inf'} with status {status}"
    return None


def check_bound_result(who: str, result: Any) -> Any:
    """``result`` if it is a BoundResult of a known status with a real, finite value (module
    doc), its status made a :class:`~fedsim.theory.result.Status`; else :class:`PluginError`
    naming ``who``."""
    from fedsim.theory.result import BoundResult, Status

    if not isinstance(result, BoundResult):
        raise PluginError(f"plug-in {who} returned {type(result).__name__}, not a "
                          "BoundResult; refused")
    try:
        status = Status(result.status)
    except (ValueError, TypeError):
        raise PluginError(f"plug-in {who} returned status {result.status!r}, which is not "
                          f"one of {', '.join(s.value for s in Status)}; refused") from None
    problem = _value_problem(result.value, status)
    if problem is not None:
        raise PluginError(f"plug-in {who} returned a bound whose {problem}; refused (never "
                          "reported as a bound)")
    result.status = status
    return result


def _guarded(who: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    try:
        return fn(*args, **kwargs)
    except (FedsimError, KeyboardInterrupt):
        raise
    except BaseException as exc:  # noqa: BLE001 - foreign code (SystemExit too)
        raise PluginError(f"plug-in {who} failed: {first_line(exc)}") from None


def _checked(what: str, name: str, fn: Callable[..., Any] | None,
             check: Callable[[str, Any], Any]) -> Callable[..., Any] | None:
    """``fn`` (a plug-in's ``what`` called ``name``) wrapped, its signature kept: the call
    guarded (:func:`_guarded`) and its result passed through ``check(who, out)``, which
    raises :class:`PluginError` or returns what the caller gets.  ``None`` and a function
    already wrapped are returned as they are."""
    if fn is None or getattr(fn, "__fedsim_checked__", False):
        return fn
    who = f"{what} {name!r} ({getattr(fn, '__module__', '?')})"

    @functools.wraps(fn)
    def checked(*args: Any, **kwargs: Any) -> Any:
        return check(who, _guarded(who, fn, *args, **kwargs))

    checked.__fedsim_checked__ = True  # type: ignore[attr-defined]
    return checked


def _built(who: str, out: Any, cls: type, label: str) -> Any:
    """``out`` if it is a ``cls``, else the :class:`PluginError` "built X, not <label>"."""
    if not isinstance(out, cls):
        raise PluginError(f"plug-in {who} built {type(out).__name__}, not {label}; refused")
    return out


def checked_theorem_function(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` (a plug-in theorem's bound) wrapped so that an exception, or a result
    :func:`check_bound_result` refuses, is a :class:`PluginError` naming ``name``."""
    return _checked("theorem", name, fn, check_bound_result)


def checked_family_builder(name: str, fn: Callable[..., Any] | None,
                           instance_type: type) -> Callable[..., Any] | None:
    """A plug-in family's builder (or curve builder) wrapped so that an exception, or a
    result that is not an ``instance_type``, is a :class:`PluginError` naming ``name``."""
    return _checked("family", name, fn, lambda who, out: _built(
        who, out, instance_type, f"an {instance_type.__name__}"))


def _positive_int(value: Any) -> bool:
    import numpy as np

    return (isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
            and int(value) >= 1)


def checked_problem_builder(name: str, fn: Callable[..., Any],
                            problem_type: type) -> Callable[..., Any]:
    """A problem kind's builder wrapped so that an exception, or a result that is not a
    ``problem_type`` (:class:`~fedsim.problems.base.Problem`) with integer ``n >= 1`` and
    ``dim >= 1``, is a :class:`PluginError` naming the kind (its signature is kept: the
    config checks the ``[problem]`` keys against it)."""
    label = f"a {problem_type.__module__}.{problem_type.__name__}"

    def check(who: str, out: Any) -> Any:
        _built(who, out, problem_type, label)
        for attr in ("n", "dim"):
            if not _positive_int(getattr(out, attr, None)):
                raise PluginError(f"plug-in {who} built a problem whose {attr} = "
                                  f"{getattr(out, attr, None)!r} is not an integer >= 1; "
                                  "refused")
        return out

    return _checked("problem kind", name, fn, check)


def checked_problem_clients(name: str, fn: Callable[[Any], Any]) -> Callable[[Any], int]:
    """A problem kind's ``clients(params)`` wrapped: an exception, or a count that is not an
    integer ``>= 1``, is a :class:`PluginError` naming the kind."""

    def check(who: str, out: Any) -> int:
        if not _positive_int(out):
            raise PluginError(f"plug-in {who} counted {out!r} clients, not an integer >= 1; "
                              "refused")
        return int(out)

    return _checked("problem kind", name, fn, check)
