"""The distribution: one import namespace (``fedsim``), a name of its own, one version source.

The wheel is built from a copy of this checkout's tracked files (``pip wheel``) and
installed into a folder of its own; it is then used from a working directory that holds a
``theory.py`` and a ``validation/`` package, which must not shadow anything.
"""

from __future__ import annotations

import configparser
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = {"fedsim": "fedsim", "theory": "fedsim.theory", "validation": "fedsim.validation"}


def _setup_cfg() -> configparser.ConfigParser:
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    return cfg


def test_setup_cfg_lists_every_package_folder():
    listed = set(_setup_cfg()["options"]["packages"].split())
    found = set()
    for folder, prefix in FOLDERS.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder).parts
            found.add(".".join([prefix, *rel]))
    assert listed == found


def test_one_version_source_and_a_name_of_our_own():
    import fedsim

    meta = _setup_cfg()["metadata"]
    assert meta["version"].strip() == "attr: fedsim.__version__"
    assert meta["name"].strip() == "fedsim-bounds"
    from importlib.metadata import version

    assert version("fedsim-bounds") == fedsim.__version__


_NOT_SOURCE = (".git", ".venv", "build", "dist", "runs", "reports", "__pycache__",
               "*.egg-info", ".pytest_cache", ".ruff_cache", ".hypothesis")


def _source_copy(dest: Path) -> Path:
    """The files git tracks (every file but the build and run outputs without git), copied
    to ``dest``: ``pip wheel`` builds in the tree it is given, so building a copy leaves no
    ``build/`` in the checkout, and a file the build needs but git does not track fails here."""
    res = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True)
    if res.returncode != 0:
        shutil.copytree(ROOT, dest, ignore=shutil.ignore_patterns(*_NOT_SOURCE))
        return dest
    for rel in res.stdout.decode().split("\0"):
        if rel and (ROOT / rel).is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, dest / rel)
    return dest


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    src = _source_copy(tmp_path_factory.mktemp("src"))
    res = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet",
                          "-w", str(out), str(src)], capture_output=True, text=True,
                         timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    (whl,) = out.glob("fedsim_bounds-*.whl")
    return whl


def test_the_wheel_installs_one_top_level_package(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    (top,) = [n for n in names if n.endswith(".dist-info/top_level.txt")]
    assert zipfile.ZipFile(wheel).read(top).decode().split() == ["fedsim"]
    assert {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")} \
        == {"fedsim"}
    for must in ("fedsim/py.typed", "fedsim/__main__.py", "fedsim/theory/registry.py",
                 "fedsim/validation/suites.py", "fedsim/theory/area/theorem8.py",
                 "fedsim/validation/report/summary.py"):
        assert must in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") or n.endswith(".dist-info/LICENSE")
               for n in names)


def test_the_installed_wheel_is_not_shadowed_by_a_local_theory_or_validation(wheel, tmp_path):
    site = tmp_path / "site"
    res = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--quiet",
                          "--target", str(site), str(wheel)], capture_output=True, text=True,
                         timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    work = tmp_path / "notebook"
    (work / "validation").mkdir(parents=True)
    (work / "theory.py").write_text("raise ImportError('the local theory.py was imported')\n")
    (work / "validation" / "__init__.py").write_text(
        "raise ImportError('the local validation/ was imported')\n")
    # the checkout's compiled code: entries are kept per module name, so the installed copy
    # of the same source loads them (fedsim.jit.cache_root) instead of compiling again
    from fedsim.jit import cache_root

    env = dict(os.environ, PYTHONPATH=str(site), NUMBA_CACHE_DIR=str(cache_root()))
    version = subprocess.run([sys.executable, "-m", "fedsim", "--version"], cwd=work, env=env,
                             capture_output=True, text=True, timeout=300)
    assert version.returncode == 0, version.stderr
    import fedsim

    assert version.stdout.strip() == f"fedsim {fedsim.__version__}"
    # one theorem's smoke rows: the installed fedsim.validation and fedsim.theory end to end
    # (the whole smoke suite runs from the checkout in tests/validation)
    smoke = subprocess.run([sys.executable, "-m", "fedsim", "validate", "--suite", "smoke",
                            "--theorem", "theorem1", "--out", str(tmp_path / "run"),
                            "--no-progress"], cwd=work, env=env, capture_output=True, text=True,
                           timeout=600)
    assert smoke.returncode == 0, smoke.stderr[-2000:]
    assert (tmp_path / "run" / "verdicts.csv").is_file()
    where = subprocess.run([sys.executable, "-c", "import fedsim.theory as t; print(t.__file__)"],
                           cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert where.stdout.strip().startswith(str(site)), where.stdout + where.stderr
