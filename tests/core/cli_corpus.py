"""A bounded corpus of malformed, odd and hostile command lines for every ``fedsim``
subcommand (issue 21), and the runner that checks one case against the oracle.

Oracle: the process ends within the time limit and under the memory limit, with exit code 0,
2 or 3, at most two lines on stderr, no ``Traceback``, no process of its group alive after
it, and no temporary file (``.tmp-*``) left in its folder.

Run alone to print the outcome of every case with a given interpreter (before/after counts)::

    python tests/core/cli_corpus.py [--python /work/main/.venv/bin/python] [--only NAME]
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

#: per-case limits: wall-clock seconds and address space (bytes)
TIME_LIMIT = 60.0
MEMORY_LIMIT = 3 * 2**30

_SEARCH = ["--budget", "20s", "--grid", "2", "--refine", "0", "--confirm", "0",
           "--no-progress"]
_T1 = ["--Q", "1", "--tau", "1", "--b", "1", "--sigma-g2", "1", "--gamma-g2", "1",
       "--f-gap", "1", "--T", "100"]
_T7 = ["--L", "1", "--mu", "0.5", "--M", "1", "--p", "0.4,0.4", "--p-s", "0.2",
       "--sigma", "0.1", "--zeta", "1", "--R0", "1"]
_Y2 = ["--L", "1", "--mu", "0.5", "--p", "0.5,0.5", "--Gamma", "1", "--E", "1",
       "--pi", "1,1", "--chi2", "1", "--D2", "1", "--T", "100"]


@dataclass(frozen=True)
class Case:
    """One command line; ``category`` is the issue's category it belongs to."""

    name: str
    category: str
    argv: tuple[str, ...]
    files: dict[str, str] = field(default_factory=dict)  # created in the case's folder
    setup: str = ""                                       # "fifo", "run_dir:<kind>", "file"


def _window(tau: str) -> str:
    text = (EXAMPLES / "persafl_me_window.toml").read_text()
    return text.replace("tau = 2\n", f"tau = {tau}\n").replace(
        "delay_pmf = [0.25, 0.25, 0.5]\n", "")


def _delays(block: str, horizon: str) -> str:
    text = (EXAMPLES / "fedasync_quadratic.toml").read_text()
    start, end = text.index("[delays]"), text.index("[trigger]")
    text = text[:start] + "[delays]\n" + block + "\n" + text[end:]
    return text.replace("[horizon]\nsteps = 2000", f"[horizon]\n{horizon}")


def _dim(dim: int) -> str:
    return (EXAMPLES / "fedasync_quadratic.toml").read_text().replace("dim = 5", f"dim = {dim}")


CASES: tuple[Case, ...] = (
    # -- tracebacks --------------------------------------------------------------------
    Case("space-overflow-B", "traceback", ("search", "theorem8", "--family", "theorem8-norm",
         "--space", "B=1e307..1.7e308", "--out", "s", *_SEARCH)),
    Case("space-overflow-kappa", "traceback", ("search", "theorem7", "--family",
         "theorem7-quad", "--space", "kappa=1..1e300", "--out", "s", *_SEARCH)),
    Case("bounds-L-1e308", "traceback", ("bounds", "theorem1", "--L=1e308", *_T1)),
    Case("heat-one-axis", "traceback", ("search", "theorem8", "--family", "theorem8-norm",
         "--space", "K=2..5", "--heat", "K", "--out", "s", *_SEARCH)),
    Case("heat-three-axes", "traceback", ("search", "theorem8", "--family", "theorem8-norm",
         "--space", "K=2..5, p_s=0.2..0.5", "--heat", "K,p_s,M", "--out", "s", *_SEARCH)),
    Case("heat-same-axis", "traceback", ("search", "theorem8", "--family", "theorem8-norm",
         "--space", "K=2..5", "--heat", "K,K", "--out", "s", *_SEARCH)),
    Case("search-out-is-file", "traceback", ("search", "theorem8", "--family",
         "theorem8-norm", "--space", "K=2..3", "--out", "afile", *_SEARCH), setup="file"),
    Case("validate-out-dangling-link", "traceback", ("validate", "--suite", "smoke", "--out",
         "dangling", "--no-progress"), setup="dangling"),
    Case("dask-file-url", "traceback", ("validate", "--suite", "smoke", "--dask",
         "file:///etc/passwd", "--out", "v", "--no-progress")),
    Case("dask-tls-without-options", "traceback", ("validate", "--suite", "smoke", "--dask",
         "tls://127.0.0.1:9", "--out", "v", "--no-progress")),
    Case("deep-toml", "traceback", ("run", "deep.toml"),
         files={"deep.toml": "x = " + "[" * 20000 + "]" * 20000 + "\n"}),
    Case("report-non-numeric-mean", "traceback", ("report", "rd", "--out", "r.pdf"),
         setup="run_dir:mean"),
    Case("report-400-digit-horizon", "traceback", ("report", "rd", "--out", "r.pdf"),
         setup="run_dir:horizon"),
    Case("report-meta-not-object", "traceback", ("report", "rd", "--out", "r.pdf"),
         setup="run_dir:meta"),
    Case("plot-xyz", "traceback", ("run", str(EXAMPLES / "fedasync_quadratic.toml"),
         "--plot", "x.xyz", "--no-progress")),
    # -- memory ------------------------------------------------------------------------
    Case("fixed-n-1e9", "memory", ("search", "theorem8", "--family", "theorem8-norm",
         "--space", "K=2..3", "--fixed", "n=1e9", "--out", "s", *_SEARCH)),
    Case("grid-1e9", "memory", ("search", "theorem8", "--family", "theorem8-norm",
         "--space", "K=2..300, p_s=0.1..0.9", "--out", "s", "--budget", "20s",
         "--refine", "0", "--confirm", "0", "--no-progress", "--grid", "1000000000")),
    Case("window-tau-1e6-space", "memory", ("search", "theorem1", "--family",
         "theorem1-window", "--space", "tau=0..1000000", "--out", "s", *_SEARCH)),
    Case("bounds-theorem7-K-1e18", "memory", ("bounds", "theorem7", *_T7, "--K",
         "10,1e18")),
    Case("run-dev-zero", "memory", ("run", "/dev/zero")),
    Case("window-tau-1e9", "memory", ("run", "w.toml", "--no-progress"),
         files={"w.toml": _window("1000000000")}),
    # -- hangs -------------------------------------------------------------------------
    Case("replicates-1e9", "hang", ("validate", "--suite", "smoke", "--replicates",
         "1000000000", "--out", "v", "--no-progress")),
    Case("run-fifo", "hang", ("run", "fifo.toml"), setup="fifo"),
    Case("zero-delays-time-horizon", "hang", ("run", "z.toml", "--no-progress"),
         files={"z.toml": _delays('download = {kind = "constant", value = 0.0}\n'
                                  'compute = {kind = "constant", value = 0.0}\n'
                                  'upload = {kind = "constant", value = 0.0}\n'
                                  'compute_per = "round"\n', "time = 10.0")}),
    # -- accepted silently -------------------------------------------------------------
    Case("fixed-overlaps-space", "silent", ("search", "theorem8", "--family",
         "theorem8-norm", "--space", "K=2..5", "--fixed", "K=3", "--out", "s", *_SEARCH)),
    Case("fixed-twice", "silent", ("search", "theorem8", "--family", "theorem8-norm",
         "--space", "K=2..3", "--fixed", "n=2,n=3", "--out", "s", *_SEARCH)),
    Case("bounds-theorem7-K-0", "silent", ("bounds", "theorem7", *_T7, "--K", "0")),
    Case("per-client-list-length", "silent", ("bounds", "asypfl_theorem2", *_Y2,
         "--sigma2", "1,1,1")),
    Case("validate-out-empty", "silent", ("validate", "--suite", "smoke", "--out", "",
         "--no-progress")),
    Case("tiny-rate-inf-time", "silent", ("run", "r.toml", "--no-progress"),
         files={"r.toml": _delays('download = {kind = "exponential", rate = 1e-308}\n'
                                  'compute = {kind = "exponential", rate = 1e-308}\n'
                                  'upload = {kind = "exponential", rate = 1e-308}\n'
                                  'compute_per = "round"\n', "steps = 20")}),
    # -- files -------------------------------------------------------------------------
    Case("run-out-device", "files", ("run", str(EXAMPLES / "fedasync_quadratic.toml"),
         "--out", "dev", "--no-progress"), setup="device"),
    Case("report-out-device", "files", ("report", "rd", "--out", "dev"),
         setup="run_dir:ok+device"),
    Case("validate-report-fifo", "files", ("validate", "--suite", "smoke", "--out", "v",
         "--report", "fifo.pdf", "--no-progress"), setup="fifo:fifo.pdf"),
    Case("search-out-device", "files", ("search", "theorem8", "--family", "theorem8-norm",
         "--space", "K=2..3", "--out", "dev", *_SEARCH), setup="device"),
    Case("validate-report-device", "files", ("validate", "--suite", "smoke", "--out", "v",
         "--report", "dev", "--no-progress"), setup="device"),
    Case("search-tiny-budget", "hang", ("search", "theorem8", "--family", "theorem8-norm",
         "--space", "K=2..300", "--fixed", "n=2", "--out", "s", "--budget", "0.5s", "--grid",
         "50", "--refine", "0", "--confirm", "0", "--no-progress")),
    Case("run-out-symlink", "files", ("run", str(EXAMPLES / "fedasync_quadratic.toml"),
         "--out", "link.csv", "--no-progress"), setup="symlink"),
)


def _setup(case: Case, d: Path) -> None:
    for name, text in case.files.items():
        (d / name).write_text(text)
    kind = case.setup
    if kind.endswith("+device") or kind == "device":
        make_device(d / "dev")
        kind = kind.removesuffix("+device")
    if kind.startswith("fifo"):
        os.mkfifo(d / (kind.split(":", 1)[1] if ":" in kind else "fifo.toml"))
    elif kind == "file":
        (d / "afile").write_text("x")
    elif kind == "dangling":
        (d / "dangling").symlink_to(d / "nowhere")
    elif kind == "symlink":
        (d / "victim").write_text("keep")
        (d / "link.csv").symlink_to(d / "victim")
    elif kind.startswith("run_dir:"):
        _run_dir(d / "rd", kind.split(":", 1)[1])


def make_device(path: Path) -> None:
    """A character device node of our own at ``path`` (a copy of /dev/null's numbers) when
    running as root, else a FIFO: never point a test at the system's /dev/null, which an
    unsafe writer would replace."""
    import stat

    if os.geteuid() == 0:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    else:
        os.mkfifo(path)


def _is_node(path: Path) -> bool:
    import stat

    m = os.lstat(path).st_mode
    return stat.S_ISCHR(m) or stat.S_ISFIFO(m)


def _run_dir(rd: Path, damage: str) -> None:
    """A synthetic run directory (no manifest: structural checks only), damaged as asked."""
    import json

    from fedsim.validation._selftest import write_synthetic_run

    write_synthetic_run(rd, replicates=3)
    csv = rd / "verdicts.csv"
    if damage == "mean":
        lines = csv.read_text().splitlines(keepends=True)
        head = lines[0].rstrip("\n").split(",")
        row = lines[1].rstrip("\n").split(",")
        row[head.index("mean")] = "abc"
        lines[1] = ",".join(row) + "\n"
        csv.write_text("".join(lines))
    elif damage == "horizon":
        lines = csv.read_text().splitlines(keepends=True)
        head = lines[0].rstrip("\n").split(",")
        row = lines[1].rstrip("\n").split(",")
        row[head.index("horizon")] = "9" * 400
        lines[1] = ",".join(row) + "\n"
        csv.write_text("".join(lines))
    elif damage == "meta":
        m = sorted((rd / "meta").glob("*.json"))[0]
        m.write_text(json.dumps([1, 2, 3]))


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    resource.setrlimit(resource.RLIMIT_CPU, (int(TIME_LIMIT) + 5, int(TIME_LIMIT) + 10))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def group_alive(pgid: int) -> bool:
    """Whether a process of the group ``pgid`` is still alive."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def run_case(case: Case, python: str = sys.executable,
             time_limit: float = TIME_LIMIT) -> tuple[bool, str]:
    """``(passed, why)`` for one case (module doc)."""
    with tempfile.TemporaryDirectory(prefix="fedsim-fuzz-") as tmp:
        d = Path(tmp)
        _setup(case, d)
        before = {p.name for p in d.rglob("*")}
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
                   MKL_NUM_THREADS="1", PYTHONFAULTHANDLER="")
        t0 = time.monotonic()
        p = subprocess.Popen([python, "-m", "fedsim.cli", *case.argv], cwd=d, env=env,
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True,
                             preexec_fn=_limits)
        res = communicate_or_kill(p, time_limit)
        if res is None:
            return False, f"hang: still running after {time_limit:.0f} s"
        out, err = res
        secs = time.monotonic() - t0
        deadline = time.monotonic() + 5
        while group_alive(p.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if group_alive(p.pid):
            os.killpg(p.pid, signal.SIGKILL)
            return False, "a process of the run outlived it by 5 s"
        lines = err.strip().splitlines()
        if "Traceback" in err or "MemoryError" in err:
            return False, f"traceback (exit {p.returncode}): {lines[-1] if lines else ''}"
        if p.returncode not in (0, 2, 3):
            return False, f"exit {p.returncode}: {lines[-1] if lines else '(no stderr)'}"
        if len(lines) > 2:
            return False, f"{len(lines)} stderr lines: {lines[0]}"
        left = [q.name for q in d.rglob(".tmp-*") if q.name not in before]
        if left:
            return False, f"temporary files left: {left[:3]}"
        if case.category == "silent" and p.returncode == 0:
            return False, "accepted silently (exit 0)"
        if case.setup == "symlink" and (d / "victim").read_text() != "keep":
            return False, "wrote through a symlink"
        if "device" in case.setup and not _is_node(d / "dev"):
            return False, "replaced a device node with a file"
        return True, f"exit {p.returncode} in {secs:.1f} s: {lines[0] if lines else ''}"


def communicate_or_kill(p: subprocess.Popen, time_limit: float) -> tuple[str, str] | None:
    """``p``'s ``(stdout, stderr)``, or ``None`` once ``time_limit`` seconds have passed (its
    whole process group killed with SIGKILL first, and reaped)."""
    try:
        return p.communicate(timeout=time_limit)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return None


def corpus_main(argv: list[str], cases, run, *, time_limit: float, width: int = 28,
                skip=None) -> int:
    """The command line of a corpus script: ``--python`` (the interpreter under test),
    ``--only`` (a substring of case names) and ``--time-limit``; ``run(case, python,
    limit) -> (ok, why)`` runs a case, ``skip(case)`` says why a case cannot run here (or
    nothing).  One line per case, then a count per category."""
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--only", default=None)
    ap.add_argument("--time-limit", type=float, default=time_limit)
    a = ap.parse_args(argv)
    cat_w = 16 if skip else 9
    counts: dict[str, list[int]] = {}
    for c in cases:
        if a.only and a.only not in c.name:
            continue
        why_skip = skip(c) if skip else None
        if why_skip:
            print(f"skip {c.category:<{cat_w}} {c.name:<{width}} {why_skip}", flush=True)
            continue
        try:
            ok, why = run(c, a.python, a.time_limit)
        except (subprocess.SubprocessError, OSError) as exc:
            ok, why = False, f"set-up failed: {exc}"
        counts.setdefault(c.category, [0, 0])[0 if ok else 1] += 1
        print(f"{'ok  ' if ok else 'FAIL'} {c.category:<{cat_w}} {c.name:<{width}} {why[:140]}",
              flush=True)
    for cat, (good, bad) in counts.items():
        print(f"{cat}: {good} handled, {bad} not")
    return 0


def main(argv: list[str]) -> int:
    return corpus_main(argv, CASES, run_case, time_limit=TIME_LIMIT)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))


#: hostile values the generated cases put into one option of a valid command line
#: (never a system path such as /dev/zero or /dev/null: an unsafe writer would replace it)
HOSTILE = ("", "nan", "inf", "-inf", "-1", "0", "1e308", "1e-308", "1e18", "abc", "1,,2",
           "9" * 400, "\u00e9", "--", "1e9", "-0", "0x10")

#: valid command lines and the options whose value the generator replaces
_BASES: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
    (("bounds", "theorem7", *_T7, "--K", "10"), ("--L", "--mu", "--M", "--p", "--p-s",
                                                  "--sigma", "--zeta", "--R0", "--K")),
    (("bounds", "theorem1", "--L", "1", *_T1), ("--L", "--Q", "--tau", "--b", "--sigma-g2",
                                                "--f-gap", "--T")),
    (("bounds", "asypfl_theorem2", *_Y2, "--sigma2", "1,1"), ("--p", "--sigma2", "--pi",
                                                              "--E", "--T")),
    (("search", "theorem8", "--family", "theorem8-norm", "--space", "K=2..4", "--out", "s",
      *_SEARCH), ("--space", "--grid", "--budget", "--fixed", "--replicates", "--out")),
    # --report names a FIFO, so a mutation that passes every other check still ends in a
    # refusal before the suite runs (a smoke suite would take minutes)
    (("validate", "--suite", "smoke", "--out", "v", "--no-progress", "--report", "fifo.pdf"),
     ("--suite", "--replicates", "--workers", "--out", "--dask")),
    (("run", str(EXAMPLES / "fedasync_quadratic.toml"), "--steps", "50", "--no-progress",
      "--out", "o.csv"), ("--steps", "--seed", "--replicate", "--out", "--memory-budget",
                          "--plot")),
    (("report", "rd", "--out", "r.pdf"), ("--out",)),
)


def generated_cases(n: int, seed: int = 21) -> tuple[Case, ...]:
    """``n`` cases: a base command line with one option's value replaced by a hostile value
    (seeded: the same cases every run).  ``validate`` cases keep ``--replicates`` small
    unless that is the option replaced, so a case that runs stays short."""
    import random

    rng = random.Random(seed)
    out = []
    for k in range(n):
        argv, opts = _BASES[k % len(_BASES)]
        opt = rng.choice(opts)
        val = rng.choice(HOSTILE)
        args = list(argv)
        if opt in args:
            args[args.index(opt) + 1] = val
        else:
            args += [opt, val]
        setup = {"report": "run_dir:ok", "validate": "fifo:fifo.pdf"}.get(args[0], "")
        out.append(Case(f"gen{k:02d}-{args[0]}-{opt.lstrip('-')}={val[:12]!r}", "generated",
                        tuple(args), setup=setup))
    return tuple(out)
