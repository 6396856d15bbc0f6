"""The progress bar covers the timeline writing: ``write_tables`` writes the replicates in
pieces under a ``timeline`` bar, then the replay has its own bar; the pieces change no
table and each piece's ``extra_info`` keeps its own table indices."""

from __future__ import annotations

import numpy as np

import fedsim.engine.dispatch as dispatch
from fedsim.config import Scenario
from fedsim.engine import problem_for, run
from fedsim.engine.models import ExecutionModel, model_of
from fedsim.engine.replay.driver import TableSet


def _sc() -> Scenario:
    return Scenario.from_dict({
        "name": "bar", "seed": 2,
        "problem": {"kind": "quadratic", "n": 4, "dim": 2, "mu": 0.2, "L": 1.0,
                    "noise_sd": 0.1, "seed": 0},
        "algorithm": {"name": "fedasync", "client_rule": "sgd", "Q": 2, "eta": 0.1},
        "delays": {"compute": {"kind": "exponential", "rate": 1.0}},
        "horizon": {"steps": 30}, "record": {"every": 5, "metrics": ["grad_sq"]}})


def test_pieces_change_no_table_and_keep_extra_info_indices(monkeypatch, capsys) -> None:
    sc = _sc()
    p = problem_for(sc)
    reps = [0, 1, 2, 3, 4]
    real = model_of(sc).write

    def writer(scenario, problem, rs):
        w = real(scenario, problem, rs)
        return TableSet(tables=list(w.tables if isinstance(w, TableSet) else w),
                        extra_info=lambda k, res, rs=list(rs): {"rep": rs[k]})

    monkeypatch.setattr(dispatch, "model_of", lambda s: ExecutionModel(key="wrapped",
                                                                     write=writer))
    monkeypatch.setattr(dispatch, "TIMELINE_PIECES", 2)
    whole = dispatch.write_tables(sc, p, reps)
    pieces = dispatch.write_tables(sc, p, reps, progress=True)
    assert "timeline" in capsys.readouterr().err
    assert len(pieces.tables) == 5
    for a, b in zip(whole.tables, pieces.tables, strict=True):
        assert np.array_equal(a.time, b.time) and np.array_equal(a.c_read, b.c_read)
    assert [pieces.extra_info(k, None)["rep"] for k in range(5)] == reps


def test_run_with_progress_shows_both_phases_and_equals_run(capsys) -> None:
    sc = _sc()
    quiet = run(sc, 3)
    capsys.readouterr()
    shown = run(sc, 3, progress=True)
    err = capsys.readouterr().err
    assert "timeline" in err and "replay" in err
    assert shown.equals(quiet)
