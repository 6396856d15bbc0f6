"""``fedsim run``: every example end to end; bad input -> one line on stderr, exit code 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from fedsim.cli import main

EXAMPLES = sorted((Path(__file__).parents[2] / "examples").glob("*.toml"))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_examples_run_end_to_end(path, tmp_path, capsys):
    out = tmp_path / "run.csv"
    rc = main(["run", str(path), "--seed", "1", "--out", str(out), "--steps", "60",
               "--no-progress"])
    assert rc == 0
    df = pd.read_csv(out)
    assert len(df) == 61
    assert {"step", "time", "kind", "client", "staleness_steps", "staleness_time",
            "buffer_fill"} <= set(df.columns)
    assert (df["time"].diff().dropna() >= 0).all()
    line = capsys.readouterr().out.strip()
    assert "ok; steps=60" in line


def test_progress_bar_goes_to_stderr(tmp_path):
    out = tmp_path / "r.csv"
    res = subprocess.run([sys.executable, "-m", "fedsim.cli", "run", str(EXAMPLES[0]),
                          "--out", str(out), "--steps", "400", "--metrics-out",
                          str(tmp_path / "m.csv")],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "step" in res.stderr  # tqdm's unit
    assert res.stdout.count("\n") == 1
    m = pd.read_csv(tmp_path / "m.csv")
    assert m["step"].iloc[0] == 0 and m["step"].iloc[-1] == 400


@pytest.mark.parametrize("text, needle", [
    ("name = [unclosed", "invalid TOML"),
    ('[problem]\nkind = "quadratic"\nn = 2\ndim = 2\nmu = 0.1\nL = 1.0\n[algorithm]\n'
     'name = "fedbuff"\nbuffer = 0\n', "algorithm.buffer must be an integer >= 1"),
    ('[problem]\nkind = "quadratic"\nn = 2\ndim = 2\nmu = 0.1\nL = 1.0\n[delays]\n'
     'compute = {kind = "exponential", rate = -1.0}\n', "delays.compute.rate must be > 0"),
    ('colour = "red"\n[problem]\nkind = "quadratic"\nn = 2\ndim = 2\nmu = 0.1\nL = 1.0\n',
     "colour"),
])
def test_bad_scenario_one_line_exit_2(tmp_path, capsys, text, needle):
    p = tmp_path / "bad.toml"
    p.write_text(text)
    rc = main(["run", str(p), "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.count("\n") == 1 and err.startswith("fedsim: error:")
    assert needle in err


def test_missing_file_exit_2(tmp_path, capsys):
    rc = main(["run", str(tmp_path / "nope.toml"), "--no-progress"])
    assert rc == 2
    assert capsys.readouterr().err.startswith("fedsim: error:")


def test_bad_option_exit_2(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["run"])
    assert exc.value.code == 2
