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

import numpy as np
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


def test_the_digest_holds_the_compile_options_of_a_function_and_of_what_it_binds():
    """The old key saw a bound callee's source only: the same source bound once inlined
    (``inline=True``) and once called shared one cache entry, though their machine code
    differs."""
    from fedsim.jit import compile_options, jit, source_digest

    def g(x):
        return x + 1.0

    inlined, called = jit(cache=False, inline=True)(g), jit(cache=False)(g)
    assert inlined.py_func is called.py_func
    assert "always" in compile_options(inlined) and "never" in compile_options(called)
    assert "cache" not in compile_options(jit(g)) and compile_options(g) == ""

    def make(k):
        def h(x):
            return k(x)
        return h

    assert source_digest(inlined) != source_digest(called)
    assert source_digest(make(inlined)) != source_digest(make(called))
    assert source_digest(make(inlined)) == source_digest(make(jit(cache=False, inline=True)(g)))
    assert source_digest(jit(cache=False, nrt=False)(g)) != source_digest(called)


def test_the_digest_holds_the_constants_a_function_reads_from_globals():
    """numba freezes a global number or array into the machine code; the old key did not
    see it (the caller's bytecode is the same whatever the constant's value)."""
    import types

    from fedsim.jit import source_digest

    consts = types.ModuleType("consts")
    consts.K = 1.0
    ns: dict = {"consts": consts, "A": np.zeros(3)}
    exec(textwrap.dedent("""
        K = 1.0
        def f(x):
            return x + K + consts.K + A[0]
    """), ns)
    before = source_digest(ns["f"])
    ns["K"] = 2.0
    after_k = source_digest(ns["f"])
    consts.K = 2.0
    after_mod = source_digest(ns["f"])
    ns["A"] = np.ones(3)
    assert len({before, after_k, after_mod, source_digest(ns["f"])}) == 4


def test_a_compiled_closure_is_named_after_what_it_binds():
    """numba links a callee into each caller under its name, "link once": two bindings of
    one source must carry two names, the same binding one."""
    from fedsim.jit import jit

    def one(x):
        return x + 1.0

    def two(x):
        return x + 2.0

    def make(k):
        def h(x):
            return k(x)
        return h

    a, b = jit(cache=False)(one), jit(cache=False)(two)
    names = [jit(cache=False)(make(k)).py_func.__qualname__ for k in (a, b, a)]
    assert names[0] != names[1] and names[0] == names[2]
    assert names[0].startswith("test_a_compiled_closure_is_named_after_what_it_binds.<locals>"
                               ".make.<locals>.h[")
    assert jit(cache=False)(one).py_func.__qualname__.endswith(".one")  # no closure: as is
    inl = jit(cache=False, inline=True)(make(a)).py_func.__qualname__
    assert inl != names[0]  # the options are part of the name


BINDINGS = """
from fedsim.jit import jit, cache_closure
from pkgx import consts

def g(x):
    return x + 1.0

LEAF = {"inline": jit(inline=True)(g), "call": jit(g)}

def make(k):
    def h(x):
        return k(x) + consts.K
    return cache_closure(jit(h))
"""

#: the key before options and constants counted: the digest without them
OLD_KEY = """
import fedsim.jit_digest as J
J.compile_options = lambda fn: ""
setattr(J, "_frozen", lambda value: False)
"""

BINDINGS_MAIN = """
import sys
from pkgx.bindings import LEAF, make
h = make(LEAF[sys.argv[1]])
print(h(1.0), sum(h.stats.cache_hits.values()), sum(h.stats.cache_misses.values()))
"""


@pytest.mark.slow
@pytest.mark.parametrize("fedsim_key", [True, False])
def test_two_bindings_of_one_source_never_share_a_cache_entry(tmp_path, fedsim_key):
    """End to end, in fresh processes sharing one cache: a closure bound to a callee
    compiled inline, then the same source bound to the same callee compiled as a call, then
    a constant changed in another module.  With fedsim's key each is a miss; with the old
    key (``fedsim_key=False``: the bound callee's source only, constants not seen) the second
    process loads the first's entry and the third loads a stale constant."""
    pkg = tmp_path / "pkgx"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "consts.py").write_text("K = 10.0\n")
    (pkg / "bindings.py").write_text(BINDINGS)
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "c"), "PYTHONPATH": str(tmp_path)}
    prog = BINDINGS_MAIN if fedsim_key else OLD_KEY + BINDINGS_MAIN

    def run(leaf: str) -> list[float]:
        out = subprocess.run([sys.executable, "-c", prog, leaf], env=env, text=True,
                             capture_output=True, timeout=600, cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        return [float(v) for v in out.stdout.split()]

    assert run("inline") == [12.0, 0, 1]
    second = run("call")
    again = run("call")
    (pkg / "consts.py").write_text("K = 20.0\n")
    for p in pkg.rglob("*.pyc"):
        p.unlink()
    third = run("call")
    assert again == [12.0, 1, 0]
    if fedsim_key:
        assert second == [12.0, 0, 1]  # its own entry, compiled
        assert third == [22.0, 0, 1]  # the constant changed: compiled again
    else:
        assert second == [12.0, 1, 0]  # the inlined binding's entry, loaded
        assert third == [12.0, 1, 0]  # stale: consts.K is 20 now
