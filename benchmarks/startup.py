"""Wall time of ``fedsim run`` on every example, after the first compile (issue 19 target:
at most 1 s each), beside the floor measured in the same run.

Each command runs in a fresh interpreter (``python -m fedsim run EXAMPLE --no-progress``),
once untimed to warm numba's disk cache and the OS file cache, then ``--repeat`` times,
the commands interleaved so that a change of machine load spreads over all of them.  Two
variants per example: with ``--out`` (the README's command without ``--plot``; the CSV is
written without pandas, :mod:`fedsim.trace_csv`) and without (the summary line only).

The floor lines are the same kind of fresh interpreter doing only: nothing; ``import
numpy``; ``import numpy, numba``; loading one trivial cached ``@njit`` function (numba
initialises its typing and target contexts on the first cached load, whatever the
function); ``import pandas``; ``import scipy.linalg``.  ``fedsim run`` needs the first four
on every scenario (the replay is compiled; ``import numba`` imports scipy and its first load
scipy.linalg, so the last line is inside the fourth); pandas is no longer on its path (the
line shows what ``--out`` cost before).

    python benchmarks/startup.py               # every example, 5 repeats
    python benchmarks/startup.py --repeat 3 --example fedasync_quadratic
    python benchmarks/startup.py --baseline /tmp/base   # also an older worktree, with its
                                                        # own .venv, interleaved: the ratio

Bytecode: an installed package has its ``.pyc`` files (pip compiles them); a checkout run
with ``PYTHONDONTWRITEBYTECODE=1`` compiles every fedsim module from source at every start
(about 0.1 s).  So the timed commands run with that variable removed and
``PYTHONPYCACHEPREFIX`` pointing into a temporary directory (nothing is written into the
tree); ``--as-is`` keeps the environment unchanged.

Prints one line per command: median and minimum wall seconds, median CPU seconds (user +
system: on a loaded machine, closer to what an idle one would show) (and, with ``--baseline``, the
baseline's median and the ratio baseline / this tree, both measured in this run).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["main"]

ROOT = Path(__file__).resolve().parents[1]

_KERNEL = """
import numba

@numba.njit(cache=True)
def one(x):
    return x + 1.0
"""


def _floor_commands(tmp: Path) -> dict[str, list[str]]:
    (tmp / "floor_kernel.py").write_text(_KERNEL)
    py = [sys.executable, "-c"]
    return {
        "floor: python": py + ["pass"],
        "floor: import numpy": py + ["import numpy"],
        "floor: import numpy, numba": py + ["import numpy, numba"],
        "floor: numba cached kernel load": py + [
            f"import sys; sys.path.insert(0, {str(tmp)!r}); import floor_kernel; "
            "floor_kernel.one(1.0)"],
        "floor: import pandas": py + ["import pandas"],
        "floor: import scipy.linalg": py + ["import scipy.linalg"],
    }


def _wall(cmd: list[str], root: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system) of one run of ``cmd``."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, cwd=root, env=env, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def _run_commands(python: str, root: Path, stems: list[str], tmp: Path) -> dict[str, list[str]]:
    cmds = {}
    for stem in stems:
        run = [python, "-m", "fedsim", "run", str(root / "examples" / f"{stem}.toml"),
               "--no-progress"]
        cmds[f"{stem} --out"] = run + ["--out", str(tmp / f"{stem}.csv")]
        cmds[f"{stem}"] = run
    return cmds


def main(argv: list[str] | None = None) -> int:
    """Time every command and print one line each."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5, help="timed runs per command (default 5)")
    ap.add_argument("--example", action="append", default=None,
                    help="an example's stem (repeatable; default every examples/*.toml)")
    ap.add_argument("--baseline", type=Path, default=None, metavar="DIR",
                    help="another worktree with its own .venv (e.g. a git worktree of an "
                    "older commit): its `fedsim run` commands are timed in the same loop")
    ap.add_argument("--as-is", action="store_true",
                    help="keep PYTHONDONTWRITEBYTECODE/PYTHONPYCACHEPREFIX as they are")
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error(f"--repeat must be >= 1, got {args.repeat}")
    stems = args.example or sorted(p.stem for p in (ROOT / "examples").glob("*.toml"))
    for stem in stems:
        if not (ROOT / "examples" / f"{stem}.toml").is_file():
            ap.error(f"--example {stem}: no file examples/{stem}.toml")
    base_py = None
    if args.baseline is not None:
        base_py = args.baseline / ".venv" / "bin" / "python"
        if not base_py.is_file():
            ap.error(f"--baseline {args.baseline}: no .venv/bin/python there")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        env = dict(os.environ)
        if not args.as_is:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
        jobs = {k: (c, ROOT) for k, c in _floor_commands(tmp).items()}
        jobs.update({k: (c, ROOT) for k, c in
                     _run_commands(sys.executable, ROOT, stems, tmp).items()})
        if base_py is not None:
            (tmp / "base").mkdir()
            jobs.update({f"baseline {k}": (c, args.baseline) for k, c in
                         _run_commands(str(base_py), args.baseline, stems,
                                       tmp / "base").items()})
        for cmd, root in jobs.values():  # warm: numba's disk cache, the OS file cache
            _wall(cmd, root, env)
        times: dict[str, list[float]] = {k: [] for k in jobs}
        cpu: dict[str, list[float]] = {k: [] for k in jobs}
        for _ in range(args.repeat):
            for name, (cmd, root) in jobs.items():
                w, c = _wall(cmd, root, env)
                times[name].append(w)
                cpu[name].append(c)
    width = max(map(len, times))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    mode = "environment as is" if args.as_is else "with .pyc files"
    print(f"fedsim run start-up ({mode}), {args.repeat} runs each, load average {load:.2f} "
          f"(median / min wall seconds, median CPU seconds"
          f"{'; baseline median wall, baseline/this, baseline CPU, ratio' if base_py else ''})")
    for name, ts in times.items():
        if name.startswith("baseline "):
            continue
        line = (f"  {name:<{width}}  {statistics.median(ts):6.3f}  {min(ts):6.3f}  "
                f"{statistics.median(cpu[name]):6.3f}")
        base = times.get(f"baseline {name}")
        if base:
            bcpu = statistics.median(cpu[f"baseline {name}"])
            line += (f"   {statistics.median(base):6.3f}  "
                     f"{statistics.median(base) / statistics.median(ts):5.2f}x  CPU {bcpu:6.3f} "
                     f"{bcpu / statistics.median(cpu[name]):5.2f}x")
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
