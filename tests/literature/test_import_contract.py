"""The literature's theorem modules (``fedsim/literature/``) use only the public doors a
plug-in author has (docs/EXTENDING.md, "A plug-in package"): a negative control shows the
check flags a private name and a module outside the doors."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "fedsim" / "literature"

#: the modules a plug-in may import from fedsim (the example plug-in's doors), plus the
#: top-level ``import fedsim`` (``fedsim.run``, ``fedsim.Scenario``: docs/API.md)
DOORS = {"fedsim.theory.params", "fedsim.theory.registry", "fedsim.theory.result",
         "fedsim.errors", "fedsim.validation.families", "fedsim.validation.rows"}
#: third-party libraries a plug-in may use: fedsim's own declared dependencies (setup.cfg)
OUTSIDE_OK = {"numpy", "scipy", "math", "__future__", "collections", "typing", "dataclasses"}


def breaks(source: str) -> list[str]:
    """Every import of ``source`` that leaves the doors or names a private symbol."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            if node.level:
                out.append(f"relative import {'.' * node.level}{mod}")
                continue
            top = mod.split(".")[0]
            if top == "fedsim" and mod not in DOORS and not mod.startswith("fedsim.literature"):
                out.append(f"from {mod}")
            elif top != "fedsim" and top not in OUTSIDE_OK and top not in sys.stdlib_module_names:
                out.append(f"from {mod}")
            out += [f"private {mod}.{a.name}" for a in node.names if a.name.startswith("_")
                    and a.name != "annotations"]
        elif isinstance(node, ast.Import):
            for a in node.names:
                top = a.name.split(".")[0]
                bad = (a.name != "fedsim" if top == "fedsim" else
                       top not in OUTSIDE_OK and top not in sys.stdlib_module_names)
                if bad:
                    out.append(f"import {a.name}")
    return out


def test_literature_modules_import_only_public_doors():
    files = sorted(ROOT.glob("*.py"))
    assert len(files) >= 3
    found = {f.name: breaks(f.read_text()) for f in files}
    assert not any(found.values()), found


def test_the_check_flags_private_and_outside_imports():
    bad = ("from fedsim.theory.registry import _REGISTRY\n"
           "from fedsim.engine.dispatch import run\n"
           "from .koloskova import THEOREM6\n"
           "import fedsim.servers\n")
    assert breaks(bad) == ["private fedsim.theory.registry._REGISTRY",
                           "from fedsim.engine.dispatch", "relative import .koloskova",
                           "import fedsim.servers"]
