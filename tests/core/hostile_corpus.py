"""The corpus of issue 31, beside :mod:`cli_corpus`: the Python API, plug-ins, a damaged
store, the disk and the process limits, and the environment -- each case with its outcome.

A case is a ``fedsim`` command line (``argv``) or a Python snippet (``code``, run with
``python -c``: a :class:`~fedsim.errors.FedsimError` it raises is printed as one line on
stderr and ends it with exit 2, anything else is a traceback).  It runs in a fresh folder,
set up as ``setup`` says, with ``env`` added to the environment and ``limits`` applied
(``RLIMIT_FSIZE``, ``RLIMIT_NOFILE``).  Categories: ``API``, ``plug-in``, ``store damage``,
``disk and limits``, ``environment``, ``outputs`` (an output that would replace an input or
another output) and ``last round`` (cases of the previous round's hidden corpus).  The
oracle is :mod:`cli_corpus`'s (no traceback, at most two stderr lines, nothing left
running, no temporary file left) plus the case's own outcome: its exit code (``exit``), a
regular expression its stderr must match (``expect``), and ``after``: a check of what is
left (no partial output, the store intact, a file unchanged).

Cases marked ``root`` mount a small tmpfs (a full disk, a disk without inodes, a read-only
file system); they are skipped with a reason where the test does not run as root.

Run alone to print every case's outcome with an interpreter (before/after counts)::

    python tests/core/hostile_corpus.py [--python /work/main/.venv/bin/python] [--only NAME]
"""

from __future__ import annotations

import contextlib
import os
import re
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from cli_corpus import communicate_or_kill, corpus_main, group_alive, make_device

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
EXAMPLES = ROOT / "examples"
EX = str(EXAMPLES / "fedasync_quadratic.toml")
TIME_LIMIT = 120.0
MEMORY_LIMIT = 3 * 2**30

_T1 = ("--Q", "1", "--tau", "1", "--b", "1", "--sigma-g2", "1", "--gamma-g2", "1",
       "--f-gap", "1", "--T", "100", "--L", "1")
_SEARCH = ("search", "theorem8", "--family", "theorem8-norm", "--space", "K=2..5", "--out",
           "s", "--budget", "60s", "--grid", "4", "--refine", "0", "--confirm", "0",
           "--no-progress")
_PY_T1 = "dict(Q=1, tau=1, b=1, sigma_g2=1, gamma_g2=1, f_gap=1, L=1)"
_PY_T7 = "dict(L=1, mu=0.5, M=1, p=[0.4, 0.4], p_s=0.2, sigma=0.1, zeta=1, R0=1)"


@dataclass(frozen=True)
class Hostile:
    """One case (module doc)."""

    name: str
    category: str
    argv: tuple[str, ...] = ()
    code: str = ""
    exit: tuple[int, ...] = (2,)
    expect: str = ""
    setup: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    limits: dict[str, int] = field(default_factory=dict)
    after: tuple[str, ...] = ()
    stdout: str = ""        # "full" (/dev/full), "closed"
    stderr: str = ""        # "closed"
    root: bool = False
    script: bool = False    # a user's script: its traceback is Python's; the last line counts


def _py(code: str) -> str:
    return textwrap.dedent(code).strip()


# --------------------------------------------------------------------------- plug-ins
_PLUGIN = '''
import sys
from fedsim.theory.registry import Theorem
from fedsim.theory.result import BoundResult, Status

def _mk(value, status=Status.CERTIFIED_PAPER):
    def f(*, x: float = 1.0) -> BoundResult:
        return BoundResult(value=value() if callable(value) else value, status=status)
    return f

NONE = Theorem(name="p_none", function=lambda *, x=1.0: None, label="returns None")
STATUS = Theorem(name="p_status", function=_mk(1.0, "TOTALLY_CERTIFIED"), label="bad status")
ARRAY = Theorem(name="p_array", function=_mk(lambda: __import__("numpy").ones((2, 2))),
                label="2x2 value")
NAN = Theorem(name="p_nan", function=_mk(float("nan")), label="NaN value")
INF = Theorem(name="p_inf", function=_mk(float("inf")), label="inf value")
TEXT = Theorem(name="p_text", function=_mk("abc"), label="string value")
RAISES = Theorem(name="p_raises", function=_mk(lambda: 1 / 0), label="raises")
EXITS = Theorem(name="p_exits", function=_mk(lambda: sys.exit(5)), label="calls sys.exit")
GOOD = Theorem(name="p_good", function=_mk(1.5), label="a sound plug-in")
'''
_PLUGIN_FAMILY = '''
from dataclasses import replace
from fedsim.validation.families import get_family

_BASE = get_family("theorem8-norm")

def _raise(params):
    raise RuntimeError("builder exploded")

RAISES = replace(_BASE, name="p-fam-raises", builder=_raise, curve=None)
FORTY_TWO = replace(_BASE, name="p-fam-42", builder=lambda params: 42, curve=None)
'''
_ENTRY_POINTS = ("[fedsim.theorems]\n" + "".join(
    f"{k.lower()} = fedsim_hostile_plugin:{k}\n" for k in
    ("NONE", "STATUS", "ARRAY", "NAN", "INF", "TEXT", "RAISES", "EXITS", "GOOD"))
    + "[fedsim.families]\nraises = fedsim_hostile_family:RAISES\n"
    "forty-two = fedsim_hostile_family:FORTY_TWO\n")


def _dist(site: Path, name: str, entry_points: bytes) -> None:
    info = site / f"{name}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_bytes(entry_points)


def _plugin_site(d: Path, kind: str) -> None:
    site = d / "site"
    site.mkdir()
    if kind == "hostile":
        (site / "fedsim_hostile_plugin.py").write_text(_PLUGIN)
        (site / "fedsim_hostile_family.py").write_text(_PLUGIN_FAMILY)
        _dist(site, "fedsim-hostile", _ENTRY_POINTS.encode())
    elif kind == "sys-exit":
        (site / "fedsim_exit_plugin.py").write_text("import sys\nsys.exit(7)\n")
        _dist(site, "fedsim-exit", b"[fedsim.theorems]\nexits = fedsim_exit_plugin:X\n")
    elif kind == "keyboard":
        (site / "fedsim_base_plugin.py").write_text("raise BaseException('odd')\n")
        _dist(site, "fedsim-base", b"[fedsim.theorems]\nbase = fedsim_base_plugin:X\n")
    elif kind == "encoding":
        _dist(site, "fedsim-latin1", b"[fedsim.theorems]\nbad\xff\xfe = m\xe9:X\n")


# --------------------------------------------------------------------------- stores
_TEMPLATE: dict[str, Path] = {}


def _search_template(python: str) -> Path:
    """A finished ``fedsim search`` run directory (made once per process)."""
    if python not in _TEMPLATE:
        d = Path(tempfile.mkdtemp(prefix="fedsim-corpus-store-"))
        subprocess.run([python, "-m", "fedsim.cli", *_SEARCH], cwd=d, check=True,
                       capture_output=True, timeout=600)
        _TEMPLATE[python] = d / "s"
    return _TEMPLATE[python]


def _damage_store(store: Path, how: str) -> None:
    if how == "page":  # 4 kB of seeded random bytes over the third page
        import random

        data = bytearray(store.read_bytes())
        rnd = random.Random(31)
        for i in range(4096 * 2, min(len(data), 4096 * 3)):
            data[i] = rnd.randrange(256)
        store.write_bytes(bytes(data))
        return
    if how == "header":
        data = bytearray(store.read_bytes())
        data[:100] = b"\x00garbage" * 12 + b"xxxx"
        store.write_bytes(bytes(data))
        return
    if how == "truncated":
        store.write_bytes(store.read_bytes()[: 4096 + 100])
        return
    db = sqlite3.connect(store)
    if how == "columns":
        db.executescript("DROP TABLE points; CREATE TABLE points (a, b);")
    elif how == "records-columns":
        db.executescript("DROP TABLE records; CREATE TABLE records (x TEXT, y TEXT);")
    elif how == "trigger":
        db.executescript("CREATE TRIGGER t BEFORE INSERT ON points BEGIN "
                         "SELECT RAISE(ABORT, 'planted'); END; DELETE FROM points;")
    elif how == "emptied":
        db.executescript("DELETE FROM points;")
    db.commit()
    db.close()


def _mount(path: Path, opts: str) -> None:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(path)], check=True)


def _fill(path: Path, leave: int) -> None:
    """Fill the file system of ``path`` up to ``leave`` free bytes."""
    st = os.statvfs(path)
    free = st.f_bavail * st.f_frsize
    with open(path / "filler", "wb") as fh:
        with contextlib.suppress(OSError):
            fh.write(b"\0" * max(0, free - leave))


def _setup(case: Hostile, d: Path, python: str) -> list[Path]:
    """Prepare the case's folder; returns the mount points to unmount afterwards."""
    mounts: list[Path] = []
    for step in case.setup:
        kind, _, arg = step.partition(":")
        if kind == "fifo":
            os.mkfifo(d / arg)
        elif kind == "file":
            name, _, text = arg.partition("=")
            (d / name).parent.mkdir(parents=True, exist_ok=True)
            (d / name).write_text(text or "x")
        elif kind == "device":
            make_device(d / arg)
        elif kind == "scenario":
            shutil.copy(EX, d / arg)
        elif kind == "synthetic":
            subprocess.run([python, "-c", "import sys; from fedsim.validation._selftest import "
                            "write_synthetic_run; write_synthetic_run(sys.argv[1], "
                            "replicates=3)", str(d / arg)], check=True, timeout=300)
        elif kind == "store":  # a finished search directory, damaged as asked
            shutil.copytree(_search_template(python), d / "s")
            if arg:
                _damage_store(d / "s" / "store.sqlite", arg)
        elif kind == "plugin":
            _plugin_site(d, arg)
        elif kind == "tmpfs":  # tmpfs:<name>:<options>[:fill=<bytes left>]
            name, opts, *rest = arg.split(":")
            _mount(d / name, opts)
            mounts.append(d / name)
            for r in rest:
                if r.startswith("fill="):
                    _fill(d / name, int(r[5:]))
                elif r.startswith("store"):
                    shutil.copytree(_search_template(python), d / name / "s")
                    _damage_store(d / name / "s" / "store.sqlite", "emptied")
                elif r.startswith("inodes"):  # use up every inode
                    k = 0
                    with contextlib.suppress(OSError):
                        while k < 10000:
                            (d / name / f"i{k}").touch()
                            k += 1
        elif kind == "ro-tmpfs":
            _mount(d / arg, "size=64k")
            subprocess.run(["mount", "-o", "remount,ro", str(d / arg)], check=True)
            mounts.append(d / arg)
        elif kind == "cache":  # a numba cache directory with one damaged compiled function
            env = dict(os.environ, NUMBA_CACHE_DIR=str(d / arg))
            subprocess.run([python, "-c", _COMPILE_ONE], env=env, check=True, timeout=600,
                           capture_output=True)
            for p in (d / arg).rglob("*"):
                if p.suffix in (".nbi", ".nbc"):
                    p.write_bytes(b"garbage, not a pickle" * 3)
        elif kind == "link":
            name, _, target = arg.partition("=")
            (d / name).symlink_to(target)
        elif kind == "dir-instead":  # a directory where a file belongs
            (d / arg).unlink()
            (d / arg).mkdir()
        elif kind == "script":
            name, _, text = arg.partition("=")
            (d / name).write_text(text)
    return mounts


_COMPILE_ONE = ("import numpy as np\nfrom fedsim.servers.fedasync import fedasync_apply\n"
                "w = np.zeros(2); fedasync_apply(w, np.ones(2), np.zeros(2), 0.5)\n"
                "print('compiled', w.tolist())")


# --------------------------------------------------------------------------- checks after
def _after(case: Hostile, d: Path) -> str | None:
    for check in case.after:
        kind, _, arg = check.partition(":")
        if kind == "absent" and (d / arg).exists():
            return f"{arg} exists (a partial or a replaced output)"
        if kind == "same":
            name, _, text = arg.partition("=")
            if (d / name).read_text() != (text or "x"):
                return f"{name} was changed"
        if kind == "intact":
            try:
                db = sqlite3.connect(d / arg)
                ok = db.execute("PRAGMA integrity_check").fetchone()[0]
                db.close()
            except sqlite3.Error as exc:
                return f"{arg} cannot be read after the case: {exc}"
            if ok != "ok":
                return f"{arg} is not intact: {ok}"
        if kind == "scenario-intact" and (d / arg).read_text() != Path(EX).read_text():
            return f"{arg} was overwritten"
        if kind == "no-tmp":
            left = [p.name for p in d.rglob(".tmp-*")]
            if left:
                return f"temporary files left: {left[:3]}"
        if kind == "no-temp-dirs":
            left = list(Path(arg).glob("fedsim-validate-*")) + list(Path(arg).glob(
                "fedsim-numba-*"))
            if left:
                return f"temporary directories left: {[p.name for p in left[:3]]}"
        if kind == "no-cache-in":
            hits = list(Path(arg).rglob("*.nbi"))
            if hits:
                return f"compiled code written into {arg}: {hits[0]}"
    return None


# --------------------------------------------------------------------------- running
_WRAP = ("import sys\nfrom fedsim.errors import FedsimError\ntry:\n{body}\n"
         "except FedsimError as exc:\n"
         "    sys.stderr.write(f'refused: {{type(exc).__name__}}: {{exc}}\\n')\n"
         "    sys.exit(2)\n")


def _command(case: Hostile, python: str) -> list[str]:
    if case.code:
        body = textwrap.indent(_py(case.code), "    ")
        return [python, "-c", _WRAP.format(body=body)]
    if case.argv and case.argv[0] == "python":
        return [python, *case.argv[1:]]
    return [python, "-m", "fedsim.cli", *case.argv]


def _limits(extra: dict[str, int]) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    for name, value in extra.items():
        res = getattr(resource, name)
        resource.setrlimit(res, (value, value))


@contextlib.contextmanager
def _folder() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="fedsim-hostile-"))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def skip_reason(case: Hostile) -> str | None:
    """Why ``case`` cannot run here (None: it can)."""
    if case.root and os.geteuid() != 0:
        return "mounts a small tmpfs: needs root"
    if case.root and shutil.which("mount") is None:
        return "mounts a small tmpfs: no mount command"
    return None


def run_hostile(case: Hostile, python: str = sys.executable,
                time_limit: float = TIME_LIMIT) -> tuple[bool, str]:
    """``(passed, why)`` for one case (module doc)."""
    with _folder() as d:
        tmp = d / "tmp"
        tmp.mkdir()
        mounts: list[Path] = []
        try:
            mounts = _setup(case, d, python)
            env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
                       MKL_NUM_THREADS="1", PYTHONFAULTHANDLER="", TMPDIR=str(tmp))
            if any(s.startswith("plugin:") for s in case.setup):
                env["PYTHONPATH"] = str(d / "site")
            env.update({k: v.replace("{d}", str(d)) for k, v in case.env.items()})
            for k in [k for k, v in env.items() if v == "<unset>"]:
                del env[k]
            out_target: object = subprocess.PIPE
            if case.stdout == "full":
                out_target = open("/dev/full", "w")  # noqa: SIM115 - closed below
            t0 = time.monotonic()

            def pre() -> None:
                _limits(case.limits)
                if case.stdout == "closed":
                    os.close(1)
                if case.stderr == "closed":
                    os.close(2)

            p = subprocess.Popen(_command(case, python), cwd=d, env=env,
                                 stdin=subprocess.DEVNULL, stdout=out_target,
                                 stderr=subprocess.PIPE, text=True, start_new_session=True,
                                 preexec_fn=pre)
            try:
                res = communicate_or_kill(p, time_limit)
            finally:
                if out_target is not subprocess.PIPE:
                    out_target.close()  # type: ignore[union-attr]
            if res is None:
                return False, f"hang: still running after {time_limit:.0f} s"
            out, err = res
            secs = time.monotonic() - t0
            deadline = time.monotonic() + 5
            while group_alive(p.pid) and time.monotonic() < deadline:
                time.sleep(0.1)
            if group_alive(p.pid):
                os.killpg(p.pid, signal.SIGKILL)
                return False, "a process of the case outlived it by 5 s"
            err = err or ""
            lines = [x for x in err.strip().splitlines() if x.strip()]
            last = lines[-1] if lines else "(no stderr)"
            if case.script:  # the refusal is the script's last line
                lines = [last]
            if ("Traceback" in err and not case.script) or "MemoryError" in err:
                return False, f"traceback (exit {p.returncode}): {last}"
            if p.returncode not in case.exit:
                return False, f"exit {p.returncode}, expected {case.exit}: {last}"
            if len(lines) > 2:
                return False, f"{len(lines)} stderr lines: {lines[0]}"
            if case.expect and not re.search(case.expect, "\n".join(lines)):
                return False, f"stderr does not say {case.expect!r}: {last}"
            problem = _after(case, d)
            if problem is None:
                left = [q.name for q in d.rglob(".tmp-*")]
                problem = f"temporary files left: {left[:3]}" if left else None
            if problem is None and list(tmp.iterdir()):
                problem = f"left in the temporary directory: {sorted(os.listdir(tmp))[:3]}"
            if problem is not None:
                return False, problem
            return True, f"exit {p.returncode} in {secs:.1f} s: {lines[0] if lines else ''}"
        finally:
            for m in reversed(mounts):
                subprocess.run(["umount", "-l", str(m)], check=False)


# --------------------------------------------------------------------------- the cases
_MOVE = r"move it away"
CASES: tuple[Hostile, ...] = (
    # -- API -----------------------------------------------------------------------------
    Hostile("api-run-replicate-1e30", "API",
            code=f"import fedsim\nfedsim.run({EX!r}, replicate=10**30)",
            expect=r"replicate must be an integer in \[0, 4294967295\]"),
    Hostile("api-run-horizon-none", "API",
            code=f"import dataclasses, fedsim\nfrom fedsim.config import load\n"
                 f"fedsim.run(dataclasses.replace(load({EX!r}), horizon=None))",
            expect=r"horizon must be a HorizonConfig"),
    Hostile("api-run-problem-string", "API",
            code="import fedsim\nfrom fedsim.config import Scenario\n"
                 "fedsim.run(Scenario(problem='quadratic'))",
            expect=r"problem must be a ProblemConfig"),
    Hostile("api-run-scenario-dict", "API", exit=(0,),
            code="import fedsim\nfrom fedsim.validation.families import get_family\n"
                 "t = fedsim.run(get_family('theorem8-norm').build().scenario)\n"
                 "assert t.steps_done > 0"),
    Hostile("api-run-bad-budget-env", "API", env={"FEDSIM_MEMORY_BUDGET": "zzz"},
            code=f"import fedsim\nfedsim.run({EX!r})",
            expect=r"FEDSIM_MEMORY_BUDGET must be a size"),
    Hostile("api-bound-T-2x2", "API",
            code=f"import numpy as np\nfrom fedsim.theory import bound\n"
                 f"bound('theorem1', T=np.ones((2, 2)), **{_PY_T1})",
            expect=r"T must be a number or a 1-D list of numbers"),
    Hostile("api-bound-T-1e400", "API",
            code=f"from fedsim.theory import bound\nbound('theorem1', T=10**400, **{_PY_T1})",
            expect=r"T: expected whole numbers of steps >= 1"),
    Hostile("api-bound-name-list", "API",
            code="from fedsim.theory import bound\nbound(['theorem1'])",
            expect=r"name must be a theorem name"),
    Hostile("api-bound-theorem7-K-1e18", "API",
            code=f"import numpy as np\nfrom fedsim.theory import bound\n"
                 f"bound('theorem7', K=np.array([10**18]), **{_PY_T7})",
            expect=r"K: expected whole numbers of iterations in \[1, 1e\+07\]"),
    Hostile("api-bound-L-1e308", "API",
            code=f"from fedsim.theory import bound\nkw = {_PY_T1}\nkw['L'] = 1e308\n"
                 "bound('theorem1', T=100, **kw)",
            expect=r"cannot be evaluated in float64"),
    Hostile("api-bound-ok", "API", exit=(0,),
            code=f"from fedsim.theory import bound\n"
                 f"r = bound('theorem1', T=[100, 200], **{_PY_T1})\nassert r.value.shape == (2,)"),
    Hostile("api-validate-replicates-1e12", "API",
            code="import fedsim.validation as v\nv.validate('smoke', replicates=10**12)",
            expect=r"replicates must be <= 1000000, got replicates=1000000000000"),
    Hostile("api-validate-workers-0", "API",
            code="import fedsim.validation as v\nv.validate('smoke', workers=0)",
            expect=r"workers must be >= 1, got workers=0"),
    Hostile("api-validate-out-file", "API", setup=("file:afile",), after=("same:afile",),
            code="import fedsim.validation as v\nv.validate('smoke', out='afile')",
            expect=r"out must be a directory or a new path.*\(a file\)"),
    Hostile("api-validate-out-fifo", "API", setup=("fifo:ff",),
            code="import fedsim.validation as v\nv.validate('smoke', out='ff')",
            expect=r"out must be a directory or a new path.*\(a FIFO\)"),
    Hostile("api-validate-out-device", "API", setup=("device:dev",),
            code="import fedsim.validation as v\nv.validate('smoke', out='dev')",
            expect=r"out must be a directory or a new path"),
    Hostile("api-validate-report-device", "API", setup=("device:dev",),
            code="import fedsim.validation as v\nv.validate('smoke', report='dev')",
            expect=r"report must be a regular file or a new path"),
    Hostile("api-validate-report-is-store", "API",
            setup=("synthetic:rd", "file:rd/store.sqlite=keep"),
            after=("same:rd/store.sqlite=keep",),
            code="import fedsim.validation as v\n"
                 "v.validate('smoke', out='rd', report='rd/store.sqlite')",
            expect=r"would replace the store of the run directory"),
    Hostile("api-validate-unguarded-script", "API",
            setup=("script:s.py=import fedsim.validation\n"
                   "fedsim.validation.validate('smoke', out='v')\n",),
            argv=("python", "s.py"), exit=(1,), after=("absent:v", "no-temp-dirs:tmp"),
            script=True,
            expect=r"line 2: each worker re-imports the script; put the call under "
                   r"`if __name__ == \"__main__\":`"),
    Hostile("api-validate-bad-suite", "API",
            code="import fedsim.validation as v\nv.validate('smok')",
            expect=r"suite must be one of"),
    # -- plug-in -------------------------------------------------------------------------
    Hostile("plugin-sys-exit-at-import", "plug-in", setup=("plugin:sys-exit",),
            argv=("bounds", "theorem1", *_T1), exit=(0,),
            expect=r"plug-in 'exits' .* SystemExit\(7\)"),
    Hostile("plugin-base-exception-at-import", "plug-in", setup=("plugin:keyboard",),
            argv=("bounds", "theorem1", *_T1), exit=(0, 2)),
    Hostile("plugin-entry-points-not-utf8-help", "plug-in", setup=("plugin:encoding",),
            argv=("--help",), exit=(0,), expect=r"cannot be read"),
    Hostile("plugin-entry-points-not-utf8-bounds", "plug-in", setup=("plugin:encoding",),
            argv=("bounds", "theorem1", *_T1), exit=(0,)),
    Hostile("plugin-returns-none", "plug-in", setup=("plugin:hostile",),
            argv=("bounds", "p_none"), expect=r"'p_none'.*returned NoneType, not a BoundResult"),
    Hostile("plugin-unknown-status", "plug-in", setup=("plugin:hostile",),
            argv=("bounds", "p_status"), expect=r"status 'TOTALLY_CERTIFIED'"),
    Hostile("plugin-2x2-value", "plug-in", setup=("plugin:hostile",),
            argv=("bounds", "p_array"), expect=r"shape \(2, 2\)"),
    Hostile("plugin-nan-value", "plug-in", setup=("plugin:hostile",),
            argv=("bounds", "p_nan"), expect=r"'p_nan'.*value is NaN; refused"),
    Hostile("plugin-nan-value-json", "plug-in", setup=("plugin:hostile",),
            argv=("bounds", "p_nan", "--json"), expect=r"value is NaN; refused"),
    Hostile("plugin-inf-certified", "plug-in", setup=("plugin:hostile",),
            argv=("bounds", "p_inf"), expect=r"value is inf with status CERTIFIED_PAPER"),
    Hostile("plugin-string-value", "plug-in", setup=("plugin:hostile",),
            argv=("bounds", "p_text"), expect=r"value='abc' is not a number"),
    Hostile("plugin-raises", "plug-in", setup=("plugin:hostile",),
            argv=("bounds", "p_raises"), expect=r"'p_raises'.*failed: ZeroDivisionError"),
    Hostile("plugin-sys-exit-in-bound", "plug-in", setup=("plugin:hostile",),
            argv=("bounds", "p_exits"), expect=r"failed: SystemExit\(5\)"),
    Hostile("plugin-nan-python", "plug-in", setup=("plugin:hostile",),
            code="from fedsim.theory import bound\nbound('p_nan', x=1.0)",
            expect=r"refused: PluginError: .*value is NaN"),
    Hostile("plugin-sound-one-works", "plug-in", setup=("plugin:hostile",),
            argv=("bounds", "p_good"), exit=(0,)),
    Hostile("plugin-builtin-still-works", "plug-in", setup=("plugin:hostile",),
            argv=("bounds", "theorem1", *_T1), exit=(0,)),
    Hostile("plugin-family-raises", "plug-in", setup=("plugin:hostile",),
            argv=("search", "theorem8", "--family", "p-fam-raises", "--space", "K=2..3",
                  "--out", "s", "--budget", "30s", "--grid", "2", "--refine", "0",
                  "--confirm", "0", "--no-progress"), exit=(0, 2),
            expect=r"family 'p-fam-raises'.*RuntimeError: builder exploded"),
    Hostile("plugin-family-returns-42", "plug-in", setup=("plugin:hostile",),
            argv=("search", "theorem8", "--family", "p-fam-42", "--space", "K=2..3",
                  "--out", "s", "--budget", "30s", "--grid", "2", "--refine", "0",
                  "--confirm", "0", "--no-progress"), exit=(0, 2),
            expect=r"family 'p-fam-42'.*built int, not an Instance"),
    # -- store damage ----------------------------------------------------------------------
    Hostile("store-random-page", "store damage", setup=("store:page",), argv=_SEARCH,
            exit=(0, 2), expect=r"^$|" + _MOVE, after=("no-tmp",)),
    Hostile("store-garbage-header", "store damage", setup=("store:header",), argv=_SEARCH,
            expect=_MOVE),
    Hostile("store-truncated", "store damage", setup=("store:truncated",), argv=_SEARCH,
            exit=(0, 2), expect=r"^$|" + _MOVE),
    Hostile("store-points-other-columns", "store damage", setup=("store:columns",),
            argv=_SEARCH, expect=r"table points has columns .*" + _MOVE),
    Hostile("store-records-other-columns", "store damage", setup=("store:records-columns",),
            argv=_SEARCH, expect=r"table records has columns .*" + _MOVE),
    Hostile("store-planted-trigger", "store damage", setup=("store:trigger",),
            argv=_SEARCH, expect=r"triggers or views .*" + _MOVE),
    Hostile("store-is-a-directory", "store damage",
            setup=("store:", "dir-instead:s/store.sqlite"), argv=_SEARCH,
            expect=r"is a directory, not a database file"),
    Hostile("report-meta-link-dev-zero", "store damage",
            setup=("synthetic:rd", "link:rd/meta/zz.json=/dev/zero"),
            argv=("report", "rd", "--out", "r.pdf"), expect=r"meta/zz.json is not a regular"),
    Hostile("report-meta-fifo", "store damage", setup=("synthetic:rd", "fifo:rd/meta/zz.json"),
            argv=("report", "rd", "--out", "r.pdf"), expect=r"meta/zz.json is not a regular"),
    Hostile("report-meta-garbage-fields", "store damage",
            setup=("synthetic:rd", "file:rd/meta/zz.json={\"theorem\": \"ThmA\", "
                   "\"scenario\": \"x\", \"title\": 5, \"hypotheses\": \"abc\"}"),
            argv=("report", "rd", "--out", "r.pdf"), expect=r"meta/zz.json has title of type"),
    # -- disk and limits ---------------------------------------------------------------------
    Hostile("run-out-full-disk", "disk and limits", root=True,
            setup=("tmpfs:m:size=256k:fill=8192",), argv=("run", EX, "--out", "m/t.csv",
                                                         "--no-progress"),
            expect=r"m/t.csv: No space left on device", after=("absent:m/t.csv", "no-tmp")),
    Hostile("report-out-full-disk", "disk and limits", root=True,
            setup=("synthetic:rd", "tmpfs:m:size=64k:fill=16384"),
            argv=("report", "rd", "--out", "m/r.pdf"),
            expect=r"m/r.pdf: No space left on device", after=("absent:m/r.pdf", "no-tmp")),
    Hostile("search-resume-full-disk", "disk and limits", root=True,
            setup=("tmpfs:m:size=2m:store:fill=4096",),
            argv=tuple(a if a != "s" else "m/s" for a in _SEARCH),
            expect=r"m/s/(store.sqlite|search.json).*(disk is full|No space left on device)",
            after=("intact:m/s/store.sqlite", "no-tmp")),
    Hostile("search-new-dir-tiny-disk", "disk and limits", root=True,
            setup=("tmpfs:m:size=48k",),
            argv=tuple(a if a != "s" else "m/s" for a in _SEARCH),
            expect=r"disk is full|No space left on device"),
    Hostile("run-out-no-inodes", "disk and limits", root=True,
            setup=("tmpfs:m:size=1m,nr_inodes=16:inodes",),
            argv=("run", EX, "--out", "m/t.csv", "--no-progress"),
            expect=r"m/t.csv: No space left on device", after=("absent:m/t.csv",)),
    Hostile("run-out-read-only-fs", "disk and limits", root=True, setup=("ro-tmpfs:m",),
            argv=("run", EX, "--out", "m/t.csv", "--no-progress"),
            expect=r"--out must be in a writable directory"),
    Hostile("run-out-file-size-limit", "disk and limits",
            limits={"RLIMIT_FSIZE": 16384}, argv=("run", EX, "--out", "t.csv",
                                                  "--no-progress"),
            expect=r"t.csv: File too large \(a file-size limit", after=("absent:t.csv",)),
    Hostile("search-file-size-limit", "disk and limits", setup=("store:emptied",),
            limits={"RLIMIT_FSIZE": 24576}, argv=_SEARCH,
            expect=r"cannot write s/store.sqlite: a disk I/O error|File too large",
            after=("intact:s/store.sqlite",)),
    Hostile("bounds-open-files-12", "disk and limits", limits={"RLIMIT_NOFILE": 12},
            argv=("bounds", "theorem1", *_T1), exit=(0, 2)),
    Hostile("run-open-files-12", "disk and limits", limits={"RLIMIT_NOFILE": 12},
            argv=("run", EX, "--out", "t.csv", "--no-progress"), exit=(0, 2)),
    Hostile("bounds-stdout-dev-full", "disk and limits", stdout="full",
            argv=("bounds", "theorem1", *_T1), expect=r"standard output: No space left"),
    Hostile("bounds-stdout-closed", "disk and limits", stdout="closed",
            argv=("bounds", "theorem1", *_T1), exit=(0,)),
    Hostile("bounds-stderr-closed-bad-input", "disk and limits", stderr="closed",
            argv=("bounds", "theorem1", "--L", "abc")),
    Hostile("run-memory-budget-1T-huge-dim", "disk and limits",
            setup=("file:big.toml=" + Path(EX).read_text().replace("dim = 5", "dim = 44000"),),
            argv=("run", "big.toml", "--memory-budget", "1T", "--no-progress"),
            expect=r"more than this machine has"),
    # -- outputs that would replace an input or another output (Deliver 1), last round -----
    Hostile("report-out-is-store", "outputs", setup=("synthetic:rd", "file:rd/store.sqlite=keep"),
            argv=("report", "rd", "--out", "rd/store.sqlite"),
            expect=r"would replace the store", after=("same:rd/store.sqlite=keep",)),
    Hostile("validate-report-is-store", "outputs",
            setup=("synthetic:rd", "file:rd/store.sqlite=keep"),
            argv=("validate", "--suite", "smoke", "--out", "rd", "--report",
                  "rd/store.sqlite", "--no-progress"),
            expect=r"would replace the store", after=("same:rd/store.sqlite=keep",)),
    Hostile("search-report-is-store", "outputs", setup=("store:",),
            argv=(*_SEARCH, "--report", "s/store.sqlite"), expect=r"would replace the store",
            after=("intact:s/store.sqlite",)),
    Hostile("validate-report-is-verdicts", "outputs", setup=("synthetic:rd",),
            argv=("validate", "--suite", "smoke", "--out", "rd", "--report",
                  "rd/verdicts.csv", "--no-progress"), expect=r"would replace the verdicts.csv"),
    Hostile("run-out-is-scenario", "outputs", setup=("scenario:s.toml",),
            argv=("run", "s.toml", "--out", "s.toml", "--no-progress"),
            expect=r"is the scenario 's.toml' this command reads",
            after=("scenario-intact:s.toml",)),
    Hostile("run-out-is-scenario-via-link", "outputs",
            setup=("scenario:s.toml", "file:sub/x"),
            argv=("run", "s.toml", "--out", "sub/../s.toml", "--no-progress"),
            expect=r"this command reads", after=("scenario-intact:s.toml",)),
    Hostile("run-metrics-out-is-out", "outputs",
            argv=("run", EX, "--out", "a.csv", "--metrics-out", "./a.csv", "--no-progress"),
            expect=r"are the same file", after=("absent:a.csv",)),
    Hostile("search-budget-empty", "last round", argv=(*_SEARCH[:-1], "--budget", ""),
            expect=r"budget must look like"),
    Hostile("search-space-B-overflow-refine", "last round", exit=(0,),
            argv=("search", "theorem8", "--family", "theorem8-norm", "--space",
                  "B=1e307..1.7e308", "--out", "s", "--budget", "30s", "--grid", "2",
                  "--refine", "1", "--confirm", "0", "--no-progress")),
    # -- environment -------------------------------------------------------------------------
    *(Hostile(f"env-budget-zzz-{cmd[0]}", "environment", env={"FEDSIM_MEMORY_BUDGET": "zzz"},
              argv=cmd, expect=r"^fedsim: error: FEDSIM_MEMORY_BUDGET must be a size such as")
      for cmd in (("run", EX, "--no-progress"), ("bounds", "theorem1", *_T1),
                  ("validate", "--suite", "smoke", "--out", "v", "--no-progress"),
                  ("report", "rd"), _SEARCH)),
    Hostile("env-budget-1e308T", "environment", env={"FEDSIM_MEMORY_BUDGET": "1e308T"},
            argv=("run", EX, "--no-progress"), expect=r"must be at most 1e\+18 bytes"),
    Hostile("option-budget-1e308T", "environment",
            argv=("run", EX, "--memory-budget", "1e308T", "--no-progress"),
            expect=r"must be at most 1e\+18 bytes"),
    Hostile("env-batched-yes", "environment", env={"FEDSIM_BATCHED": "yes"},
            argv=("run", EX, "--no-progress"), expect=r"FEDSIM_BATCHED must be 0 or 1"),
    Hostile("env-fault-garbage", "environment", env={"FEDSIM_FAULT": "chunk@x y"},
            argv=("bounds", "theorem1", *_T1), expect=r"FEDSIM_FAULT must be"),
    Hostile("env-numba-disable-jit", "environment", env={"NUMBA_DISABLE_JIT": "1"},
            argv=("run", EX, "--no-progress"), expect=r"NUMBA_DISABLE_JIT=1 .* unset it"),
    Hostile("env-cache-dir-is-a-file", "environment", exit=(0,),
            setup=("file:afile", "file:xdgfile"),
            env={"NUMBA_CACHE_DIR": "{d}/afile", "XDG_CACHE_HOME": "{d}/xdgfile"},
            code=_COMPILE_ONE, expect=r"note: .* cannot be written; compiled code goes to "
                                      r"the temporary",
            after=("same:afile", "no-temp-dirs:tmp")),
    Hostile("env-cache-dir-read-only-fs", "environment", exit=(0,), root=True,
            setup=("ro-tmpfs:ro", "file:xdgfile"),
            env={"NUMBA_CACHE_DIR": "{d}/ro", "XDG_CACHE_HOME": "{d}/xdgfile"},
            code=_COMPILE_ONE, expect=r"compiled code goes to the temporary",
            after=("no-temp-dirs:tmp",)),
    Hostile("env-cache-damaged-entries", "environment", exit=(0,), setup=("cache:nc",),
            env={"NUMBA_CACHE_DIR": "{d}/nc"}, code=_COMPILE_ONE),
)


def main(argv: list[str]) -> int:
    return corpus_main(argv, CASES, run_hostile, time_limit=TIME_LIMIT, width=36,
                       skip=skip_reason)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
