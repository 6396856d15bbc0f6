"""``fedsim worstcase``: the PEP worst case of a method along a schedule (issue 32).

Examples::

    fedsim worstcase --step 0.25 --mu 0.1 --tau 1 --K 10 --check SCS
    fedsim worstcase --method fedasync --Q 2 --beta 0.5 --step 0.2 --mu 0.1 --delays 0,1,2,1
    fedsim worstcase --scenario examples/fedasync_quadratic.toml --K 10 --mu 0.1
    fedsim worstcase --step 0.25 --mu 0.1 --tau 1 --K 10 --witness-out w.toml --simulate

Prints one line (value, solver, status, seconds, the check, the witness); ``--json``
prints the same as JSON.  Exit 0 when the solve is optimal or optimal_inaccurate (shown
as such) and the check (if any) agrees; 3 when the solve failed or the solvers disagree.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

__all__ = ["add_parser", "main_worstcase"]


def _ints(text: str) -> list[int]:
    try:
        return [int(t) for t in text.split(",") if t.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}"
                                         ) from exc


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``fedsim worstcase``."""
    p = subparsers.add_parser(
        "worstcase", help="the worst case of a method over a function class (PEP)",
        description=__doc__.split("\n\n")[0],
        epilog="exit codes: 0 solved (an inaccurate solve is shown as such); 2 bad input; "
               "3 the solve failed or the two solvers disagree")
    p.add_argument("--method", default="delayed_gd", choices=["delayed_gd", "fedasync",
                                                               "fedbuff", "async_sgd"])
    p.add_argument("--class", dest="function_class", default="strongly_convex",
                   choices=["strongly_convex", "nonconvex", "convex_lipschitz"])
    p.add_argument("--L", type=float, default=1.0)
    p.add_argument("--mu", type=float, default=0.0)
    p.add_argument("--step", type=float, default=None, help="the step (eta for fedasync/fedbuff)")
    p.add_argument("--Q", type=int, default=1, help="local steps")
    p.add_argument("--beta", type=float, default=1.0, help="FedAsync's server weight")
    p.add_argument("--server-lr", type=float, default=1.0, help="FedBuff's server step")
    p.add_argument("--tau-c", type=int, default=None,
                   help="async_sgd's concurrency tau_C (its delay-adaptive step rule)")
    p.add_argument("--step-rule", default="koloskova",
                   choices=["koloskova", "koloskova_drop", "mishchenko"],
                   help="async_sgd's step rule (fedsim.servers.delay_adaptive)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--delays", type=_ints, default=None,
                   help="tau_0,...,tau_{K-1}: step k applies the gradient at x_{k - tau_k}")
    g.add_argument("--tau", type=int, default=None, help="constant delay (with --K)")
    g.add_argument("--cyclic", type=_ints, default=None, help="a delay pattern repeated (with --K)")
    g.add_argument("--scenario", default=None, help="a scenario TOML: its method and the "
                   "first --K steps of its event table")
    p.add_argument("--K", type=int, default=None, help="server steps")
    p.add_argument("--clients", type=int, default=1, help="clients, round-robin (--tau/--cyclic)")
    p.add_argument("--zeta-sq", type=float, default=None,
                   help="one function per client with (1/n) sum ||grad f_i(x*)||^2 <= zeta^2")
    p.add_argument("--measure", default="dist_sq",
                   choices=["dist_sq", "f_gap", "f_gap_over_dist", "min_f_gap_over_dist",
                            "min_grad_sq", "avg_grad_sq"])
    p.add_argument("--solver", default="CLARABEL", choices=["CLARABEL", "SCS"])
    p.add_argument("--check", default=None, choices=["CLARABEL", "SCS"],
                   help="solve again with this solver; the two must agree to 1e-3 relative")
    p.add_argument("--witness-out", default=None, metavar="FILE",
                   help="write the witness scenario as TOML (the quadratic's, or the Gram "
                   "interpolant's, problem kind gram_interpolant): `fedsim run FILE` "
                   "simulates it")
    p.add_argument("--simulate", action="store_true",
                   help="run the witness with fedsim and print the value it reproduces")
    p.add_argument("--rate", action="store_true",
                   help="also a Lyapunov rate certificate for --tau / --cyclic (no K needed)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=main_worstcase)
    return p


def _simulate_gram(wc: Any, scenario: Any, out: dict[str, Any]) -> str:
    """The Gram interpolant run by fedsim's engine along the schedule
    (:func:`fedsim.worstcase.engine_witness.simulate_interpolant`); fills ``out``."""
    from fedsim.errors import FedsimError
    from fedsim.worstcase.engine_witness import simulate_interpolant

    try:
        ew = simulate_interpolant(wc.method, wc.function_class, wc.schedule, wc.measure,
                                  wc.pep, scenario=scenario)
    except FedsimError as exc:
        out["gram_simulated"] = None
        return f"fedsim does not simulate the Gram interpolant: {exc}"
    out["gram_simulated"] = ew.replayed
    out["gram_simulated_schedule_same"] = ew.same_schedule
    return (f"fedsim simulates the Gram interpolant: {wc.measure} {ew.replayed:.6g} "
            f"(schedule {'the same' if ew.same_schedule else 'DIFFERENT'}; "
            f"{'reproduces' if ew.reproduces else 'does NOT reproduce'} the PEP value)")


def _write_witness(wc: Any, scenario: Any, path: str) -> tuple[str | None, str]:
    """Write the witness scenario to ``path``: the quadratic's where one attains the PEP
    value and a scenario realises it, else the Gram interpolant's
    (:func:`fedsim.worstcase.engine_witness.write_interpolant_witness`, a recorded-model
    timeline's staleness file beside it); returns ``(which, "")``, or ``(None, why not)``
    (nothing written)."""

    made = [d for d in (Path(path).parent, *Path(path).parent.parents) if not d.exists()]
    Path(path).parent.mkdir(parents=True, exist_ok=True)   # like every other --out
    which, why = _write_witness_file(wc, scenario, path)
    if which is None:  # nothing written: take back the directories made for it, if empty
        for d in made:
            if d.exists() and not any(d.iterdir()):
                d.rmdir()
    return which, why


def _write_witness_file(wc: Any, scenario: Any, path: str) -> tuple[str | None, str]:
    """The body of :func:`_write_witness`, ``path``'s directory made."""
    from fedsim.errors import FedsimError
    from fedsim.worstcase.engine_witness import write_interpolant_witness

    w = wc.witness
    if w is not None and w.scenario is not None:
        w.to_toml(path)
        return "quadratic", ""
    if w is not None and w.kind == "quadratic":  # a delay list: its recorded-model timeline
        from fedsim.config.io import dump
        from fedsim.worstcase.schedule_witness import recorded_scenario, recorded_timeline
        from fedsim.worstcase.witness import quadratic_table

        p = Path(path)
        tl = recorded_timeline(wc.method, wc.schedule, p.parent, p.stem)
        if "reason" in tl:
            return None, f"{w.reason} ({tl['reason']})"
        dump(recorded_scenario(tl, quadratic_table(w.h, tl["n"]), 1.0, wc.schedule.K,
                               p.stem), p)
        return "quadratic", ""
    if wc.gram is not None:
        try:
            write_interpolant_witness(wc.method, wc.function_class, wc.schedule, wc.pep, path,
                                      scenario)
        except FedsimError as exc:
            return None, f"the Gram interpolant's: {exc}"
        return "Gram interpolant", ""
    return None, "not asked for" if w is None else w.reason


def main_worstcase(args: argparse.Namespace) -> int:
    """Run ``fedsim worstcase``."""
    from fedsim.errors import ConfigError
    from fedsim.worstcase.door import worst_case
    from fedsim.worstcase.schedule import Schedule
    from fedsim.worstcase.witness import simulate_witness

    scenario = None
    schedule = None
    rate_line, rate_out = "", None
    if args.rate:
        from fedsim.worstcase.classes import FunctionClass
        from fedsim.worstcase.door import build_method
        from fedsim.worstcase.rate import rate_certificate

        pattern = [args.tau] if args.tau is not None else args.cyclic
        if pattern is None:
            raise ConfigError("--rate needs --tau or --cyclic")
        rc = rate_certificate(build_method(args.method, args.step, args.Q, args.beta,
                                           args.server_lr, tau_c=args.tau_c,
                                           step_rule=args.step_rule),
                              FunctionClass(kind=args.function_class, L=args.L, mu=args.mu),
                              pattern)
        rate_line = (f"rate certificate: rho = {rc.rho:.6g} per step, ||x_k - x*||^2 <= "
                     f"{rc.C:.4g} rho^k ||x_0 - x*||^2  [CLARABEL: {rc.status}, "
                     f"{rc.seconds:.2f} s, {rc.solves} solves]")
        rate_out = {"rho": rc.rho, "C": rc.C, "status": rc.status,
                    "seconds": round(rc.seconds, 3)}
        if args.K is None:
            print(json.dumps({"rate": rate_out}) if args.json else rate_line)
            return 0 if rc.rho == rc.rho else 3
    if args.scenario is not None:
        from fedsim.config import load

        scenario = load(args.scenario)
    elif args.tau is not None or args.cyclic is not None:
        if args.K is None:
            raise ConfigError("--K is required with --tau or --cyclic")
        schedule = (Schedule.constant(args.tau, args.K, args.clients) if args.tau is not None
                    else Schedule.cyclic(args.cyclic, args.K, args.clients))
    elif args.delays is None:
        raise ConfigError("give one of --delays, --tau, --cyclic, --scenario")
    wc = worst_case(args.method, args.function_class, L=args.L, mu=args.mu, step=args.step,
                    delays=args.delays, schedule=schedule, measure=args.measure, Q=args.Q,
                    beta=args.beta, server_lr=args.server_lr, zeta_sq=args.zeta_sq,
                    solver=args.solver, check=args.check, scenario=scenario, K=args.K,
                    tau_c=args.tau_c, step_rule=args.step_rule)
    out = {"value": wc.value, "status": wc.status, "solver": wc.solver,
           "seconds": round(wc.seconds, 3), "K": wc.schedule.K, "measure": wc.measure,
           "check": None if wc.check is None else {"solver": wc.check.solver,
                                                   "value": wc.check.value,
                                                   "status": wc.check.status,
                                                   "agree": wc.agree},
           "witness": None if wc.witness is None else wc.witness.name,
           "gram_witness": None if wc.gram is None else {
               "replayed": wc.gram.replayed, "certified": wc.gram.value,
               "reproduces": wc.gram.reproduces, "dim": wc.gram.dim}}
    line = wc.summary() + ("\n" + rate_line if rate_line else "")
    if rate_out is not None:
        out["rate"] = rate_out
    w = wc.witness
    if args.witness_out is not None:
        written, why = _write_witness(wc, scenario, args.witness_out)
        if written is None:
            sys.stderr.write(f"fedsim: no witness scenario: {why}\n")
        else:
            line += f"\n{written} witness scenario written to {args.witness_out}"
            out["witness_toml"] = str(args.witness_out)
            out["witness_kind"] = written
    if args.simulate and w is not None and w.scenario is not None and \
            args.measure in ("dist_sq", "f_gap"):
        value, sched = simulate_witness(w, args.measure)
        same = sched.reads() == wc.schedule.reads()
        line += (f"\nfedsim simulates the witness: {args.measure} ratio {value:.6g} "
                 f"(schedule {'the same' if same else 'DIFFERENT'})")
        out["simulated"] = value
        out["simulated_schedule_same"] = same
    if args.simulate and wc.gram is not None:
        line += "\n" + _simulate_gram(wc, scenario, out)
    print(json.dumps(out) if args.json else line)
    failed = not math.isfinite(wc.value) or wc.agree is False
    return 3 if failed else 0
