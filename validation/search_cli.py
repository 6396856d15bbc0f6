"""``fedsim search``: where a theorem's bound breaks, or is loosest, over a scenario family.

``fedsim search THEOREM --family NAME --space 'n=1..30, p_s=0.1..0.9, M=[1,10,50], K=2..200'
[--fixed 'mode=corrected'] [--objective violation|looseness] [--budget 10m | --evals N]
[--out DIR]
[--heat x,y] [--report PDF]`` runs :func:`fedsim.validation.search.run_search` (coarse grid,
differential-evolution refinement, confirmation of every violating point -- up to
``--confirm`` -- by validate's machinery), writes ``DIR/search.csv`` and a one-page PDF
(``DIR/search.pdf`` by default) and prints the worst instances.  Re-running the same
command resumes from ``DIR``.  ``fedsim search --list`` prints every family, its theorem
and its parameters.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from fedsim.validation.cli import MAX_REPLICATES, MAX_WORKERS, int_at_least

from fedsim.safefile import path_option

__all__ = ["add_parser", "cmd_search", "list_families", "MAX_GRID"]

#: the largest --grid (points are evaluated one after the other; the grid is built first)
MAX_GRID = 100_000


def list_families() -> str:
    """Every family, its theorem and its parameters (``fedsim search --list``)."""
    from fedsim.validation.families import families

    out = []
    for f in families():
        out.append(f"{f.name}  (theorem: {f.theorem})  {f.title}")
        for p in f.params:
            rng = ""
            if p.choices:
                rng = " {" + "|".join(map(str, p.choices)) + "}"
            elif p.low is not None or p.high is not None:
                rng = f" {'(' if p.open_low else '['}" \
                      f"{'' if p.low is None else f'{p.low:g}'}, " \
                      f"{'' if p.high is None else f'{p.high:g}'}]"
            out.append(f"    {p.name:<14} {p.kind:<6} default {p.default!s:<8}{rng}  {p.doc}")
    return "\n".join(out)


def _fixed(text: str | None) -> dict[str, Any]:
    """``--fixed 'a=1, b=x'`` (or ``;``-separated) as ``{name: text}``; a key given twice or an
    item without ``=`` is a ConfigError."""
    from fedsim.errors import ConfigError

    if not text:
        return {}
    out: dict[str, Any] = {}
    for item in text.split(";") if ";" in text else text.split(","):
        if item.strip():
            k, eq, v = item.partition("=")
            k = k.strip()
            if not eq or not k:
                raise ConfigError(f"fixed must be name=value items, got {item.strip()!r}")
            if k in out:
                raise ConfigError(f"fixed names {k!r} twice ({k}={out[k]} and {k}={v.strip()})")
            out[k] = v.strip()
    return out


def _heat_axes(text: str | None, fam: Any, searched: list[str]) -> tuple[str, ...] | None:
    """``--heat x,y``: two different parameters of the family, both searched (checked before
    the search starts)."""
    from fedsim.errors import ConfigError

    if not text:
        return None
    axes = tuple(s.strip() for s in text.split(","))
    if len(axes) != 2 or not all(axes) or axes[0] == axes[1]:
        raise ConfigError(f"heat must name two different parameters 'x,y', got heat={text!r}")
    for a in axes:
        fam.param(a)
        if a not in searched:
            raise ConfigError(f"heat axis {a!r} is not searched; --space names {searched}")
    return axes


def cmd_search(args: argparse.Namespace) -> int:
    """Run the search the options describe; print the worst rows."""
    if args.list:
        print(list_families())
        return 0
    from fedsim.validation.families import get_family
    from fedsim.validation.report.search_page import search_page
    from fedsim.validation.search import SearchSettings, run_search
    from fedsim.validation.search_space import parse_budget, parse_space

    from fedsim.errors import ConfigError

    if not args.theorem or not args.family or not args.space:
        raise ConfigError("search needs THEOREM, --family and --space (or --list), got "
                          f"theorem={args.theorem!r}, family={args.family!r}, "
                          f"space={args.space!r}")
    if args.evals is not None and args.budget is not None:
        raise ConfigError(f"give --budget or --evals, not both, got budget={args.budget!r}, "
                          f"evals={args.evals}")
    st = SearchSettings(objective=args.objective, budget=parse_budget(
                            "10m" if args.budget is None else args.budget),
                        evals=args.evals,
                        grid=args.grid, refine=args.refine, confirm=args.confirm,
                        confirm_replicates=args.confirm_replicates,
                        replicates=args.replicates, max_states=args.max_states,
                        workers=args.workers, progress=not args.no_progress)
    from fedsim.cli_run import check_output_dir, check_output_path

    fam = get_family(args.family)
    searched = [d.name for d in parse_space(args.space, fam)]
    fixed = _fixed(args.fixed)
    both = sorted(set(fixed) & set(searched))
    if both:
        raise ConfigError(f"fixed sets {both[0]!r}, which --space searches; give it in one "
                          "of them")
    axes = _heat_axes(args.heat, fam, searched)
    check_output_dir("--out", args.out)  # every output path before any work (issue 21)
    report = args.report or Path(args.out) / "search.pdf"
    check_output_path("--report", report)
    from fedsim.output_paths import check_outputs

    check_outputs(outputs={"--report": report}, run_dirs={"--out": args.out})
    df = run_search(args.family, args.space, st, out=args.out, fixed=fixed,
                    theorem=args.theorem)
    pdf = search_page(df, report,
                      title=f"fedsim search: {fam.title}", objective=args.objective,
                      axes=axes, searched=searched)
    show = [c for c in searched + ["bound", "status", "measured", "method", "ratio",
                                   "verdict"] if c in df.columns]
    print(df[show].head(args.top).to_string(index=False))
    summary = json.loads((Path(args.out) / "summary.json").read_text())
    print(f"{summary['points']} points in {summary['seconds']:.1f} s; measured > bound at "
          f"{summary['violations']} ({len(summary['confirmed'])} confirmed, "
          f"{summary['unconfirmed_violations']} unconfirmed, not re-run); "
          f"{Path(args.out) / 'search.csv'}; {pdf}")
    return 0


def add_parser(subparsers: Any) -> None:
    """Register ``search`` on the ``fedsim`` dispatcher."""
    p = subparsers.add_parser("search", help="search a scenario family for bound violations "
                                             "or looseness -> search.csv + PDF",
                              description=__doc__.split("\n\n")[0])
    p.add_argument("theorem", nargs="?", help="theorem name (e.g. theorem8)")
    p.add_argument("--list", action="store_true", help="list every family and its parameters")
    p.add_argument("--family", help="family name (see --list)")
    p.add_argument("--space", help="e.g. 'n=1..30, p_s=0.1..0.9, M=[1,10,50], K=2..200'")
    p.add_argument("--fixed", help="parameters outside the space, e.g. 'mode=corrected'")
    p.add_argument("--objective", choices=("violation", "looseness"), default="violation")
    p.add_argument("--budget", default=None,
                   help="wall-clock budget (90s, 10m, 1h; default 10m)")
    p.add_argument("--evals", type=int_at_least(1, "evals"), default=None, metavar="N",
                   help="stop after N point evaluations instead of a time budget: the same "
                   "command then gives the same search.csv")
    p.add_argument("--out", type=path_option("--out"), default=Path("runs/search"),
                   help="run directory (resumable)")
    p.add_argument("--grid", type=int_at_least(1, "grid", MAX_GRID), default=60,
                   help="coarse-grid points (about)")
    p.add_argument("--refine", type=int_at_least(0, "refine"), default=3,
                   help="grid points refined by differential evolution")
    p.add_argument("--confirm", type=int_at_least(0, "confirm"), default=8,
                   help="violating points confirmed by engine Monte Carlo (largest first)")
    p.add_argument("--confirm-replicates",
                   type=int_at_least(2, "confirm-replicates", MAX_REPLICATES),
                   default=200)
    p.add_argument("--replicates", type=int_at_least(2, "replicates", MAX_REPLICATES),
                   default=4000,
                   help="Monte-Carlo replicates where no exact oracle is feasible")
    p.add_argument("--max-states", type=int_at_least(1, "max-states"), default=20000,
                   help="state budget of an exact enumeration before falling back to MC")
    p.add_argument("--workers", type=int_at_least(1, "workers", MAX_WORKERS), default=None)
    p.add_argument("--heat", help="two parameters for the heat map, e.g. 'K,p_s'")
    p.add_argument("--report", type=path_option("--report"),
                   help="PDF path (default DIR/search.pdf)")
    p.add_argument("--top", type=int_at_least(1, "top"), default=10)
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=cmd_search)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(0)
