"""``fedsim run`` starts without the heavy libraries it does not use (issue 19: start-up).

Checked by what a fresh interpreter holds in ``sys.modules``, not by a clock, so a
regression (a module-level ``import pandas`` on the run path, another subcommand's module
imported for ``fedsim run``) fails whatever the machine's load.  The timing itself is
``benchmarks/startup.py``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from fedsim.cli import SUBCOMMANDS, build_parser, main

ROOT = Path(__file__).resolve().parents[2]

#: not needed by ``fedsim run`` without --plot (matplotlib draws --plot; --out and
#: --metrics-out are written without pandas, :mod:`fedsim.trace_csv`), whatever the scenario
HEAVY = ("scipy.stats", "scipy.integrate", "scipy.interpolate", "pandas", "matplotlib",
         "dask", "distributed", "sklearn", "tqdm")
#: the set-up of these problems needs them: the quadratic's Cholesky solve (scipy.linalg,
#: which imports nothing else heavy) and the logistic problem's minimiser certificate (an LP)
BY_PROBLEM = {"quadratic": ("scipy.optimize", "autograd"), "logistic": ()}


def _modules_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    prog = code + "\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))\n"
    out = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True,
                         check=True, cwd=ROOT, timeout=600).stdout
    return set(json.loads(out.splitlines()[-1]))


def _among(mods: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in mods if any(m == h or m.startswith(h + ".") for h in names))


def test_importing_the_cli_and_building_the_run_parser_is_light():
    mods = _modules_after("import fedsim.cli as c\nc.build_parser('run')")
    assert _among(mods, HEAVY + ("scipy", "numba", "simpy", "autograd")) == []
    # the other subcommands' modules are not imported for `fedsim run`
    assert {"fedsim.theory.cli", "fedsim.validation.cli",
            "fedsim.validation.search_cli"} & mods == set()


@pytest.mark.parametrize(("example", "kind"), [("fedasync_quadratic", "quadratic"),
                                               ("fedbuff_quadratic", "quadratic"),
                                               ("asfedavg_logistic", "logistic")])
def test_a_whole_run_imports_no_library_it_does_not_use(example, kind, tmp_path):
    """The whole ``fedsim run`` (parse, load, simulate, write both CSVs, summary line): the
    run happens, so the imports it makes on the way count too."""
    toml = ROOT / "examples" / f"{example}.toml"
    outs = ["--out", str(tmp_path / "t.csv"), "--metrics-out", str(tmp_path / "m.csv")]
    mods = _modules_after(
        "import contextlib, io\nfrom fedsim.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert main(['run', {str(toml)!r}, '--no-progress', '--steps', '30', *{outs!r}])"
        " == 0\n")
    assert (tmp_path / "t.csv").stat().st_size > 0 and (tmp_path / "m.csv").stat().st_size > 0
    assert "fedsim.engine" in mods  # it did run
    assert _among(mods, HEAVY + BY_PROBLEM[kind]) == []
    assert {"fedsim.theory.registry", "fedsim.validation"} & mods == set()


def test_the_subcommand_table_names_what_each_module_registers():
    """SUBCOMMANDS (the module to import for a subcommand) is what the modules register."""
    registered: dict[str, str] = {}
    for mod in dict.fromkeys(SUBCOMMANDS.values()):
        sub = argparse.ArgumentParser().add_subparsers()
        importlib.import_module(mod).add_parser(sub)
        registered.update(dict.fromkeys(sub.choices, mod))
    assert registered == SUBCOMMANDS


def test_the_parser_of_one_subcommand_parses_as_the_full_parser():
    argv = ["run", "x.toml", "--seed", "3", "--steps", "7", "--no-progress"]
    one, full = build_parser("run").parse_args(argv), build_parser().parse_args(argv)
    assert vars(one) == vars(full)
    assert build_parser("validate").parse_args(["report", "somewhere"]).command == "report"


def test_help_and_an_unknown_command_still_list_every_subcommand(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert all(name in out for name in SUBCOMMANDS)
    with pytest.raises(SystemExit) as exc:
        main(["nosuchcommand"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("fedsim: error: argument command: invalid choice")
    assert all(repr(name) in err for name in SUBCOMMANDS)
