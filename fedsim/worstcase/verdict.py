"""The worst case beside a suite's verdict rows: ``worst_case``, ``bound_over_worst`` (the
theorem's own looseness) and ``worst_over_measured`` (the instance's slack), with
``worst_case_status`` (the solver's, never rounded away), ``worst_case_note`` (why a row has
no worst case) and ``worst_case_verdict``: the one verdict function
(:func:`fedsim.validation.verdict.judge`) on the worst case as its evidence
(``Evidence.exact(..., kind="worst_case")`` with a relative error of :data:`SOLVER_RTOL`; an
inaccurate or failed solve leaves the interval open on both sides, so it is never ``holds``
nor ``violated``), the row's simulation checks settled on the schedule the PEP was solved
along (its ``max_staleness``).  ``violated`` there is a certified violation: every function
of the class along that schedule is covered by the PEP.  A thin layer:
:func:`worst_case_columns` reads the verdict table and the cases, and writes nothing but its
cache.

A row gets a worst case only where the theorem's sigma = 0 core is the row's own bound and
the PEP reaches it (docs/theory/worst-case.md, the table): today [P] Theorem 1
(``theorem1``, paper mode) on a FedAsync local-SGD scenario whose bound has
``s2 = sigma_g^2/b + gamma_g^2 = 0``, at a horizon ``T <= MAX_K``: the nonconvex class,
``avg_grad_sq`` along the first T steps of the scenario's own event table, times
``f_gap = f(w0) - f_star_P`` read off the bound's first term (the PEP is normalised by
``f(x_0) - f_* <= 1``, ``nonconvex_norm = "f_star"``, a relaxation whose value is an upper
bound of the worst case, :mod:`fedsim.worstcase.pep`).  Every other row says why not.

Any other theorem -- a plug-in's -- gets the columns by declaring its method's first-order
form (:func:`fedsim.worstcase.declare.register_first_order`): its rows are solved as
declared, ``worst_case = scale x PEP value``.

Cache: one JSON file per cell under ``<run dir>/worstcase/``, keyed by the cell's inputs; a
re-run reads it.  ``budget_seconds``: no new cell is solved once the solves of this call
have used it (the quick suite's 10 s); such rows say so.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from fedsim.safefile import atomic_write_json_file
from fedsim.worstcase.declare import declared

__all__ = ["worst_case_columns", "worst_case_verdict", "CORE_REASONS", "MAX_K", "COLUMNS",
           "SOLVER_RTOL"]

#: the largest horizon a suite row's PEP is solved at
MAX_K = 40
COLUMNS = ("worst_case", "bound_over_worst", "worst_over_measured", "worst_case_status",
           "worst_case_witness", "worst_case_note", "worst_case_verdict")
#: the relative error a solved worst case is read with (PEPit's own test tolerance, the
#: agreement issue 32 asks of Clarabel and SCS)
SOLVER_RTOL = 1e-3
#: the witness of a wired row (nonconvex: the PEP value is an upper bound, no function built)
THEOREM1_WITNESS = ("none attached: the nonconvex PEP value (normalised by f(x0) - f*, a "
                    "relaxation) is an upper bound; fedsim worstcase --simulate builds its "
                    "Gram interpolant")
#: theorem -> why its suite rows get no worst case (docs/theory/worst-case.md)
CORE_REASONS = {
    "theorem2": "MAML step needs the Hessian: not first-order",
    "theorem3": "Moreau inner solve (a proximal point): expressible, not implemented",
    "theorem7": "bound on the expectation over i.i.d. events: every event path needed",
    "theorem8": "convex Lipschitz class and expectation over events: not implemented",
    "perfedavg_theorem4_5": "MAML step needs the Hessian: not first-order",
    "asypfl_theorem1": "tick model equals fedsim's only at n = 1: not wired to suite rows",
    "asypfl_theorem2": "tick model equals fedsim's only at n = 1: not wired to suite rows",
    "koloskova_theorem6": "a rate shape with unread constants: no bound value to compare "
                          "(the method's PEP: fedsim.worst_case(method='delayed_gd'))",
    "koloskova_theorem8": "a rate shape with unread constants: no bound value to compare "
                          "(the method's PEP: fedsim.worst_case(method='async_sgd'))",
}


def _theorem1_cell(case: Any, row: Any) -> dict[str, Any] | str:
    """The PEP inputs of a [P] Theorem 1 row, or why it has none."""
    run = next((r for r in case.runs if r.key == row.run_key), None)
    if run is None:
        return "no run for the row"
    sc = run.scenario
    a, p = sc.get("algorithm", {}), sc.get("problem", {})
    if a.get("name") != "fedasync" or a.get("client_rule", "sgd") != "sgd":
        return "not FedAsync with local SGD"
    if float(a.get("beta", 1.0)) != 1.0:
        return "beta != 1"
    res = row.result
    s2 = res.derived_constants.get("s2")
    if s2 is None or float(np.max(s2)) != 0.0:
        return "sigma_g^2/b + gamma_g^2 > 0: the row's bound is not the sigma = 0 core's"
    if res.mode != "paper" or "gap" not in res.terms:
        return f"mode {res.mode!r}: only the paper-mode bound is wired"
    if int(row.horizon) > MAX_K:
        return f"horizon {row.horizon} > {MAX_K}: beyond the PEP (nonconvex: no rate certificate)"
    T, L = int(row.horizon), float(p["L"])
    # the bound's first term is 4 sqrt(L) f_gap / sqrt(T) (theory/persafl/theorem1.py)
    gap = float(np.ravel(res.terms["gap"])[-1])
    f_gap = gap * math.sqrt(T) / (4.0 * math.sqrt(L))
    return {"scenario": sc, "T": T, "L": L, "f_gap": f_gap, "nonconvex_norm": "f_star"}


def _declared_cell(case: Any, row: Any) -> tuple[dict[str, Any], Any] | str:
    """The cache key and :class:`~fedsim.worstcase.declare.FirstOrderForm` of a row whose
    theorem declared one, or why it has none."""
    from fedsim.worstcase.declare import first_order_form

    run = next((r for r in case.runs if r.key == row.run_key), None)
    if run is None:
        return "no run for the row"
    form = first_order_form(case.theorem, run.scenario, row.result, int(row.horizon))
    if isinstance(form, str):
        return form
    if form.schedule.K > MAX_K:
        return f"horizon {form.schedule.K} > {MAX_K}: beyond the PEP"
    return {"declared": case.theorem, **form.key()}, form


def _solve_declared(form: Any) -> dict[str, Any]:
    from fedsim.worstcase.pep import solve_pep

    res = solve_pep(form.method, form.function_class, form.schedule, form.measure,
                    form.zeta_sq, solver="CLARABEL")
    return {"worst_case": res.value * form.scale, "status": res.status,
            "seconds": res.seconds, "max_staleness": form.schedule.max_staleness()}


def _solve_theorem1(cell: dict[str, Any]) -> dict[str, Any]:
    from fedsim.config import Scenario
    from fedsim.worstcase.classes import FunctionClass
    from fedsim.worstcase.door import method_from_scenario, schedule_from_scenario
    from fedsim.worstcase.pep import solve_pep

    sc = Scenario.from_dict(cell["scenario"])
    schedule = schedule_from_scenario(sc, cell["T"])
    res = solve_pep(method_from_scenario(sc), FunctionClass(kind="nonconvex", L=cell["L"]),
                    schedule, "avg_grad_sq", solver="CLARABEL",
                    nonconvex_norm=cell["nonconvex_norm"])
    return {"worst_case": res.value * cell["f_gap"], "status": res.status,
            "seconds": res.seconds, "max_staleness": schedule.max_staleness()}


def worst_case_verdict(result: Any, bound: float, worst: float, status: str,
                       sim_checks: Any = (), max_staleness: int | None = None) -> Any:
    """The :class:`~fedsim.validation.verdict.VerdictRow` of ``bound`` (one value of the
    :class:`~fedsim.theory.result.BoundResult` ``result``) against the worst case ``worst``
    solved with solver status ``status`` (module doc); ``max_staleness``: the schedule's,
    which settles the row's staleness checks (``None``: they stay unknown)."""
    from fedsim.validation.verdict import Evidence, Target, evaluate_checks, judge

    detail = f"performance-estimation worst case, solver status {status}"
    if status == "optimal":
        ev = Evidence.exact(worst, error=SOLVER_RTOL * abs(worst), kind="worst_case",
                            detail=detail)
    else:
        why = f"solver status {status or 'none'}"
        ev = Evidence(kind="worst_case", value=worst, low=worst, high=worst,
                      open_above=why, open_below=why, detail=detail)
    checks = list(sim_checks)
    outcomes = (None if max_staleness is None
                else evaluate_checks(checks, [{"max_staleness": int(max_staleness)}]))
    return judge(Target.of_bound(result, bound, checks), ev, outcomes)


def _cache_path(out: Path, key: dict[str, Any]) -> Path:
    h = hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:20]
    return out / "worstcase" / f"{h}.json"


def worst_case_columns(table: Any, cases: list[Any], out: str | Path,
                       budget_seconds: float = 10.0) -> Any:
    """``table`` with :data:`COLUMNS` added (module doc); ``table`` is the suite's verdict
    table (``theorem``, ``scenario``, ``mode``, ``horizon``, ``bound``, ``mean``)."""
    out = Path(out)
    by_key = {(c.theorem, c.scenario): c for c in cases}
    used = 0.0
    cols: dict[str, list[Any]] = {c: [] for c in COLUMNS}
    for _, r in table.iterrows():
        worst, status, note, label = math.nan, "", "", ""
        case = by_key.get((r["theorem"], r["scenario"]))
        row = None if case is None else next(
            (x for x in case.rows if x.mode == r["mode"] and x.horizon == r["horizon"]), None)
        if row is None:
            note = "not a theorem row (a control)"
        elif case.theorem != "theorem1" and not declared(case.theorem):
            note = CORE_REASONS.get(case.theorem, "no first-order form declared")
        else:
            if case.theorem == "theorem1":
                cell = _theorem1_cell(case, row)
                solve = _solve_theorem1
                label = THEOREM1_WITNESS
            else:
                got_cell = _declared_cell(case, row)
                cell, solve = got_cell, None
                if not isinstance(got_cell, str):
                    cell, form = got_cell
                    label = form.witness or "none declared"
                    solve = lambda _c, f=form: _solve_declared(f)  # noqa: E731
            if isinstance(cell, str):
                note = cell
            else:
                path = _cache_path(out, cell)
                if path.exists():
                    got = json.loads(path.read_text())
                elif used >= budget_seconds:
                    got = None
                    note = f"not solved: over this suite's {budget_seconds:g} s budget"
                else:
                    got = solve(cell)
                    used += got["seconds"]
                    atomic_write_json_file(path, got)
                if got is not None:
                    worst, status = float(got["worst_case"]), str(got["status"])
        bound, mean = float(r.get("bound", math.nan)), float(r.get("mean", math.nan))
        verdict = ""
        if status:
            verdict = worst_case_verdict(row.result, bound, worst, status,
                                         getattr(case, "sim_checks", ()),
                                         got.get("max_staleness")).verdict
        cols["worst_case"].append(worst)
        cols["bound_over_worst"].append(bound / worst if worst > 0 else math.nan)
        cols["worst_over_measured"].append(worst / mean if mean > 0 and np.isfinite(worst)
                                           else math.nan)
        cols["worst_case_status"].append(status)
        cols["worst_case_witness"].append(label if status else "")
        cols["worst_case_note"].append(note)
        cols["worst_case_verdict"].append(verdict)
    t = table.copy()
    for c in COLUMNS:
        t[c] = cols[c]
    return t
