"""fedsim.jit's disk cache: a change in a callee (another module) is seen by its callers,
a closure is found again by a fresh process, and a read-only install caches under
$XDG_CACHE_HOME/fedsim/numba."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

CALLEE = """
from {jit_import}

@{deco}
def g(x):
    return x + {value}
"""

CALLER = """
from {jit_import}
from pkgx.callee import g

@{deco}
def f(x):
    return g(x) * 2.0

def make(k):
    def h(x):
        return g(x) + k
    return {closure}

h = make(1.0)
"""

ROOT_ACCESS = """
_access = os.access
os.access = lambda p, m, **k: (False if m == os.W_OK and str(p).startswith({site!r})
                               else _access(p, m, **k))
"""

MAIN = """
from pkgx.caller import f, h
print(f(1.0), h(1.0), sum(f.stats.cache_hits.values()), sum(f.stats.cache_misses.values()))
"""


def _write(root: Path, value: int, fedsim: bool) -> None:
    pkg = root / "pkgx"
    pkg.mkdir(exist_ok=True)
    (pkg / "__init__.py").write_text("")
    if fedsim:
        args = dict(jit_import="fedsim.jit import jit, cache_closure", deco="jit",
                    closure="cache_closure(jit(h))")
    else:
        args = dict(jit_import="numba import njit", deco="njit(cache=True)",
                    closure="njit(cache=True)(h)")
    (pkg / "callee.py").write_text(CALLEE.format(value=value, **args))
    (pkg / "caller.py").write_text(CALLER.format(**args))


def _run(root: Path, cache: Path) -> list[float]:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "PYTHONPATH": str(root)}
    out = subprocess.run([sys.executable, "-c", MAIN], env=env, capture_output=True,
                         text=True, check=True, timeout=600, cwd=root)
    return [float(v) for v in out.stdout.split()]


def _edit_callee(root: Path, value: int, fedsim: bool) -> None:
    """Change the callee's source (its file only; the caller's file is untouched)."""
    callee = root / "pkgx" / "callee.py"
    before = callee.stat().st_mtime_ns
    _write(root, value, fedsim)
    os.utime(callee, ns=(before + 10**9, before + 10**9))
    for p in (root / "pkgx").rglob("__pycache__"):
        for f in p.glob("*.pyc"):
            f.unlink()


@pytest.mark.slow
def test_numba_own_cache_misses_a_callee_change(tmp_path):
    """The limit fedsim.jit removes: plain numba (cache=True) loads the caller's stale
    machine code after the callee changed in another file."""
    _write(tmp_path, 1, fedsim=False)
    assert _run(tmp_path, tmp_path / "c")[:2] == [4.0, 3.0]
    _edit_callee(tmp_path, 5, fedsim=False)
    f, h, hits, _ = _run(tmp_path, tmp_path / "c")
    assert (f, h) == (4.0, 3.0) and hits == 1  # stale: g now returns x + 5


@pytest.mark.slow
def test_fedsim_jit_recompiles_a_caller_when_its_callee_changes(tmp_path):
    _write(tmp_path, 1, fedsim=True)
    f, h, hits, misses = _run(tmp_path, tmp_path / "c")
    assert (f, h, hits, misses) == (4.0, 3.0, 0, 1)
    assert _run(tmp_path, tmp_path / "c") == [4.0, 3.0, 1, 0]  # a fresh process loads it
    _edit_callee(tmp_path, 5, fedsim=True)
    f, h, hits, misses = _run(tmp_path, tmp_path / "c")
    assert (f, h, hits, misses) == (12.0, 7.0, 0, 1)  # caller and closure compiled again
    assert _run(tmp_path, tmp_path / "c") == [12.0, 7.0, 1, 0]


def test_source_digest_follows_callees_and_closure_constants():
    from fedsim.jit import jit, source_digest

    ns: dict = {}
    exec(textwrap.dedent("""
        def g(x):
            return x + 1
        def f(x):
            return g(x)
    """), ns)
    before = source_digest(ns["f"])
    assert source_digest(ns["f"]) == before  # deterministic
    exec(textwrap.dedent("""
        def g(x):
            return x + 2
    """), ns)
    assert source_digest(ns["f"]) != before  # callee changed, caller's code did not

    def make(k):
        def h(x):
            return k(x)
        return h

    a = jit(lambda x: x + 1.0)
    b = jit(lambda x: x + 2.0)
    assert source_digest(make(a)) != source_digest(make(b))
    assert source_digest(make(a)) == source_digest(make(jit(lambda x: x + 1.0)))


@pytest.mark.slow
def test_read_only_install_caches_under_xdg_cache_home(tmp_path):
    """A copy of the package in a read-only directory: fedsim.jit points NUMBA_CACHE_DIR at
    $XDG_CACHE_HOME/fedsim/numba, the compiled code is saved there, and a second process
    loads it.  (As root, for whom every directory is writable, ``os.access`` is made to say
    what it says to a user: that the package directory is not writable.)"""
    import shutil

    import fedsim

    src = Path(fedsim.__file__).resolve().parent
    site = tmp_path / "site"
    shutil.copytree(src, site / "fedsim", ignore=shutil.ignore_patterns(
        "__pycache__", "*.nbi", "*.nbc"))
    modes = []
    for p in [site, *site.rglob("*")]:
        if p.is_dir():
            modes.append(p)
    for p in reversed(modes):
        p.chmod(stat.S_IRUSR | stat.S_IXUSR)
    prog = ("import os, numpy as np\n"
            + (ROOT_ACCESS.format(site=str(site)) if os.geteuid() == 0 else "") +
            "from fedsim.servers.fedasync import fedasync_apply\n"
            "w = np.zeros(2); fedasync_apply(w, np.ones(2), np.zeros(2), 0.5)\n"
            "print(os.environ['NUMBA_CACHE_DIR'], sum(fedasync_apply.stats.cache_hits.values()))")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env.update(PYTHONPATH=str(site), XDG_CACHE_HOME=str(tmp_path / "xdg"))
    try:
        outs = [subprocess.run([sys.executable, "-c", prog], env=env, capture_output=True,
                               text=True, timeout=600, cwd=tmp_path) for _ in range(2)]
    finally:
        for p in modes:
            p.chmod(stat.S_IRWXU)
    for o in outs:
        assert o.returncode == 0, o.stderr
    target = str(tmp_path / "xdg" / "fedsim" / "numba")
    assert outs[0].stdout.split() == [target, "0"]
    assert outs[1].stdout.split() == [target, "1"]
    assert list(Path(target).rglob("*.nbi"))
    assert not list(site.rglob("*.nbi"))
