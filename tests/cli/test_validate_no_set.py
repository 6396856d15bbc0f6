"""``fedsim validate --set KEY=VALUE`` (issue 34 item 1): refused before anything runs, in one
line that says why and which options do apply."""

from __future__ import annotations

from fedsim.cli import main


def test_validate_set_is_refused_in_one_line_naming_what_applies(capsys, tmp_path):
    rc = main(["validate", "--suite", "smoke", "--out", str(tmp_path / "run"),
               "--set", "algorithm.eta=0.1", "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1
    assert "--set algorithm.eta=0.1" in err and "--replicates" in err
    assert "fedsim run FILE --set KEY=VALUE" in err and "stale" in err
    assert not (tmp_path / "run").exists()                  # nothing was run


def test_validate_help_says_what_set_does(capsys):
    try:
        main(["validate", "--help"])
    except SystemExit:
        pass
    out = " ".join(capsys.readouterr().out.split())
    assert "--set KEY=VALUE refused, with the reason" in out and "--replicates" in out
