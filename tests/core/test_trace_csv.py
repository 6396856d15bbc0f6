"""fedsim.trace_csv writes the bytes pandas writes (``fedsim run --out``/``--metrics-out``),
without importing pandas: hand-made traces with the awkward values (NaN, infinities, -0.0,
subnormals, huge and tiny numbers, metrics at some steps only, a diverged run), a
hypothesis property over random columns, and real runs of every example through the CLI."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from fedsim.trace import KINDS, Trace
from fedsim.trace_csv import column_text, write_metrics_csv, write_trace_csv

ROOT = Path(__file__).resolve().parents[2]


def _trace(time, kind_code, client, s_steps, s_time, fill, msteps, metrics, diverged=False):
    n = len(time)
    return Trace(time=np.asarray(time, dtype=np.float64),
                 kind_code=np.asarray(kind_code, dtype=np.int64),
                 client=np.asarray(client, dtype=np.int64),
                 staleness_steps=np.asarray(s_steps, dtype=np.int64),
                 staleness_time=np.asarray(s_time, dtype=np.float64),
                 buffer_fill=np.asarray(fill, dtype=np.int64),
                 metric_steps=np.asarray(msteps, dtype=np.int64),
                 metrics={k: np.asarray(v) for k, v in metrics.items()},
                 client_updates=np.zeros(2, dtype=np.int64), concurrency_time=np.zeros(1),
                 concurrency_busy=np.zeros(1), concurrency_mean=0.0, diverged=diverged,
                 diverged_step=n - 1 if diverged else None, final_w=np.zeros(2),
                 steps_done=n - 1, sim_time=float(time[-1]), staleness_bound=1.0)


def _pandas_out(trace: Trace) -> str:
    fh = io.StringIO()
    trace.to_pandas().to_csv(fh, index=False)
    return fh.getvalue()


def _pandas_metrics(trace: Trace) -> str:
    m = trace.metrics_frame()
    m["diverged"] = int(bool(trace.diverged))
    fh = io.StringIO()
    m.to_csv(fh, index=False)
    return fh.getvalue()


def _ours(writer, trace: Trace) -> str:
    fh = io.StringIO()
    writer(trace, fh)
    return fh.getvalue()


AWKWARD = [0.0, -0.0, 1e-300, 5e-324, 1e16, 1e-5, 0.1, 1.0 / 3.0, -2.5e300, np.inf, -np.inf,
           np.nan, 123456789.125, 1e15]


def test_hand_made_trace_with_awkward_values_and_sparse_metrics():
    n = len(AWKWARD)
    t = _trace(time=np.cumsum(np.abs(np.nan_to_num(AWKWARD, posinf=1.0, neginf=1.0))),
               kind_code=[i % len(KINDS) for i in range(n)], client=[-1] + list(range(n - 1)),
               s_steps=range(n), s_time=AWKWARD, fill=[0] * n, msteps=[0, 3, 7, n - 1],
               metrics={"grad_sq": AWKWARD[:4], "f_gap": [np.nan, 1.5, -0.0, 7e-7]},
               diverged=True)
    out = _ours(write_trace_csv, t)
    assert out == _pandas_out(t)
    assert _ours(write_metrics_csv, t) == _pandas_metrics(t)
    lines = out.splitlines()
    assert lines[0] == ("step,time,kind,client,staleness_steps,staleness_time,buffer_fill,"
                        "grad_sq,f_gap,diverged")
    assert lines[2].split(",")[7:] == ["", "", "1"]  # step 1: no metric (NaN -> empty)


def test_metrics_at_every_step_and_integer_metric_columns():
    n = 5
    base = dict(time=np.arange(n) * 0.5, kind_code=[0] + [1] * (n - 1), client=range(-1, n - 1),
                s_steps=[0] * n, s_time=[0.0] * n, fill=[0] * n)
    every = _trace(**base, msteps=range(n), metrics={"grad_sq": np.arange(n, dtype=np.int64)})
    assert _ours(write_trace_csv, every) == _pandas_out(every)  # int column stays int
    some = _trace(**base, msteps=[0, 2], metrics={"grad_sq": np.array([4, 9])})
    assert _ours(write_trace_csv, some) == _pandas_out(some)  # upcast to float with NaN
    assert _ours(write_metrics_csv, some) == _pandas_metrics(some)
    none = _trace(**base, msteps=[], metrics={})
    assert _ours(write_trace_csv, none) == _pandas_out(none)


def test_steps_that_are_not_a_left_merge_fall_back_to_pandas():
    """Repeated recorded steps: the merge repeats rows; the writer hands over to pandas."""
    base = dict(time=[0.0, 1.0, 2.0], kind_code=[0, 1, 1], client=[-1, 0, 1], s_steps=[0, 0, 1],
                s_time=[0.0, 0.0, 1.0], fill=[0, 0, 0])
    t = _trace(**base, msteps=[0, 2, 2], metrics={"grad_sq": [1.0, 2.0, 3.0]})
    assert _ours(write_trace_csv, t) == _pandas_out(t)
    assert _ours(write_trace_csv, t).count("\n") == 5  # header + 4 rows (step 2 twice)


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(np.float64, st.integers(1, 30), elements=st.floats(allow_nan=True,
                                                                      allow_infinity=True)))
def test_a_float_column_is_written_as_pandas_writes_it(values):
    fh = io.StringIO()
    pd.DataFrame({"i": np.arange(values.size), "x": values}).to_csv(fh, index=False)
    assert fh.getvalue() == "i,x\n" + "".join(
        f"{i},{v}\n" for i, v in enumerate(column_text(values)))


@pytest.mark.parametrize("example", sorted(p.stem for p in (ROOT / "examples").glob("*.toml")))
def test_fedsim_run_out_is_byte_identical_to_pandas(tmp_path, example):
    """The CLI's files against pandas' on the same run (40 steps of every example)."""
    from fedsim import load, run
    from fedsim.config import HorizonConfig

    toml = ROOT / "examples" / f"{example}.toml"
    out, mout = tmp_path / "out.csv", tmp_path / "m.csv"
    subprocess.run([sys.executable, "-m", "fedsim", "run", str(toml), "--no-progress",
                    "--steps", "40", "--out", str(out), "--metrics-out", str(mout)],
                   check=True, capture_output=True, cwd=tmp_path, timeout=600)
    sc = load(toml)
    from dataclasses import replace

    trace = run(replace(sc, horizon=HorizonConfig(steps=40, time=sc.horizon.time)))
    assert out.read_bytes() == _pandas_out(trace).encode()
    assert mout.read_bytes() == _pandas_metrics(trace).encode()
