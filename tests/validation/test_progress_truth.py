"""Progress that tells the truth: ``fedsim run`` compiles on its own line before the run's
bar; ``fedsim report`` shows a page bar and writes where its help says."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from fedsim.validation._selftest import write_synthetic_run

from fedsim.cli import main

EX = Path(__file__).parents[2] / "examples"


def test_run_compiles_before_its_bar(tmp_path):
    res = subprocess.run([sys.executable, "-m", "fedsim.cli", "run",
                          str(EX / "fedasync_quadratic.toml"), "--steps", "30",
                          "--metrics-out", str(tmp_path / "m.csv")],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    err = res.stderr
    done = err.index("the rest loaded, in")
    assert "compiling kernels" in err[:done]
    assert "step" in err[done:]            # the run's bar comes after the compile line


def test_report_shows_pages_and_writes_its_default(tmp_path, capsys):
    write_synthetic_run(tmp_path, seed=1, replicates=12)
    assert main(["report", str(tmp_path)]) == 0
    out = capsys.readouterr()
    assert "report pages" in out.err
    assert (tmp_path / "report.pdf").is_file() and f"{tmp_path / 'report.pdf'}" in out.out
