"""Issue 14 items 1, 2 and 4: every malformed input ends in one clean line, exit 2.

A hypothesis property test mutates a valid scenario (wrong types, out-of-range values,
missing and unknown keys, broken encodings, huge sizes) and the command-line arguments of
``fedsim run`` / ``fedsim bounds``, and asserts: exit code 2 (or 0/3 when the mutation
happens to be valid), one line ``fedsim: error: ...`` on stderr, never a traceback.  The
simulation itself is not run for accepted mutations (``--steps 1`` keeps them cheap).
Case count: ``FUZZ_CASES`` scenario cases + ``ARG_CASES`` argument cases (< 1 minute).
"""

from __future__ import annotations

import contextlib
import math

import pytest
import tomli_w
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fedsim.cli import main

FUZZ_CASES = 300
ARG_CASES = 100

BASE = {
    "name": "fuzz", "seed": 1,
    "problem": {"kind": "quadratic", "n": 3, "dim": 2, "mu": 0.5, "L": 1.0, "seed": 1},
    "algorithm": {"name": "fedasync", "Q": 2, "eta": 0.1},
    "delays": {"compute": {"kind": "exponential", "rate": 1.0}},
    "horizon": {"steps": 3},
    "record": {"every": 1},
}

BAD_VALUES = st.one_of(
    st.just([10]), st.just("ten"), st.just({"a": 1}), st.just(True), st.just(-1),
    st.just(0), st.just(1e300), st.just(-1e300), st.just(math.inf), st.just(1.5),
    st.just(10**12), st.just(10**9), st.just(""), st.just([]), st.just(2**63),
    st.integers(-10**15, 10**15), st.floats(allow_nan=False), st.text(max_size=5),
)


def _paths(d, prefix=()):
    for k, v in d.items():
        yield prefix + (k,)
        if isinstance(v, dict):
            yield from _paths(v, prefix + (k,))


PATHS = list(_paths(BASE))


@st.composite
def mutated(draw):
    import copy

    d = copy.deepcopy(BASE)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(PATHS))
        parent = d
        for k in path[:-1]:
            parent = parent.get(k) if isinstance(parent, dict) else None
        if not isinstance(parent, dict):
            continue
        op = draw(st.sampled_from(["value", "delete", "unknown", "huge"]))
        if op == "value":
            # a copy: st.just's dicts and lists are shared between examples, and mutating a
            # shared one could make a scenario contain itself (infinite nesting)
            parent[path[-1]] = copy.deepcopy(draw(BAD_VALUES))
        elif op == "delete":
            parent.pop(path[-1], None)
        elif op == "unknown":
            parent[draw(st.sampled_from(["nope", "N", "Dim", "beta2"]))] = 1
        else:
            parent[draw(st.sampled_from(["n", "dim", "Q", "steps"]))] = draw(
                st.sampled_from([10**6, 10**9, 10**12]))
    return d


def _check(rc, capsys, argv):
    err = capsys.readouterr().err
    assert "Traceback" not in err, (argv, err)
    assert rc in (0, 2, 3), (argv, rc, err)
    if rc == 2:
        lines = [ln for ln in err.splitlines() if ln.startswith("fedsim: error:")]
        assert len(lines) == 1, (argv, err)


def _main(argv):
    try:
        return main(argv)
    except SystemExit as exc:  # argparse usage errors
        return exc.code


@settings(max_examples=FUZZ_CASES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(d=mutated(), broken=st.sampled_from([None, b"\xff\xfe", b"[problem", b"\x00"]))
def test_malformed_scenarios_get_one_clean_line(d, broken, tmp_path_factory, capsys):
    p = tmp_path_factory.mktemp("fz") / "s.toml"
    try:
        data = tomli_w.dumps(d).encode()
    except (TypeError, ValueError):  # not representable in TOML (e.g. 2**63)
        return
    if broken is not None:
        data = data[:len(data) // 2] + broken + data[len(data) // 2:]
    p.write_bytes(data)
    argv = ["run", str(p), "--no-progress", "--steps", "1"]
    _check(_main(argv), capsys, argv)


ARGS = st.lists(st.sampled_from(["--seed", "--steps", "--out", "--metrics-out",
                                 "--replicate", "--memory-budget", "-1", "1.5", "x",
                                 "/dev/null/x.csv", "", "0", "1K", "--T", "100,,200"]),
                max_size=5)


@settings(max_examples=ARG_CASES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(extra=ARGS, cmd=st.sampled_from(["run", "bounds"]))
def test_malformed_arguments_get_one_clean_line(extra, cmd, tmp_path_factory, capsys):
    d = tmp_path_factory.mktemp("fa")
    p = d / "s.toml"
    p.write_text(tomli_w.dumps(BASE))
    if cmd == "run":
        argv = ["run", str(p), "--no-progress", "--steps", "1", *extra]
    else:
        argv = ["bounds", "theorem1", "--scenario", str(p), *extra]
    with contextlib.chdir(d):  # a relative --out such as "100,,200" lands here, not in the repo
        rc = _main(argv)
    _check(rc, capsys, argv)


@pytest.mark.parametrize("edit, needle", [
    ({"n": [10]}, "problem.n must be an integer"),
    ({"n": "ten"}, "problem.n must be an integer"),
    ({"n": {"a": 1}}, "problem.n must be an integer"),
    ({"noise_sd": 1e300}, "noise_sd must be <= 1e150"),
    ({"n": 10**9}, "over the budget"),
    ({"dim": 10**9}, "over the budget"),
])
def test_listed_problem_cases(edit, needle, tmp_path, capsys):
    d = {**BASE, "problem": {**BASE["problem"], **edit}}
    p = tmp_path / "s.toml"
    p.write_text(tomli_w.dumps(d))
    assert _main(["run", str(p), "--no-progress"]) == 2
    assert needle in capsys.readouterr().err


def test_memory_budget_flag_changes_the_limit(tmp_path, capsys):
    d = {**BASE, "algorithm": {**BASE["algorithm"], "Q": 10**6}}
    p = tmp_path / "s.toml"
    p.write_text(tomli_w.dumps(d))
    assert _main(["run", str(p), "--no-progress", "--memory-budget", "1M"]) == 2
    assert "over the budget of 1 MiB" in capsys.readouterr().err
    assert _main(["run", str(p), "--no-progress", "--steps", "1"]) == 0


def test_no_horizon_and_negative_normal_mean_are_refused(tmp_path, capsys):
    p = tmp_path / "s.toml"
    p.write_text(tomli_w.dumps({k: v for k, v in BASE.items() if k != "horizon"}))
    assert _main(["run", str(p), "--no-progress"]) == 2
    assert "horizon is required" in capsys.readouterr().err
    d = {**BASE, "delays": {"compute": {"kind": "normal", "mean": -1.0, "sd": 0.5}}}
    p.write_text(tomli_w.dumps(d))
    assert _main(["run", str(p), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "delays.compute.mean must be >= low = 0" in err and "real mean 0.18" in err


def test_output_paths_are_checked_before_the_run(tmp_path, capsys):
    p = tmp_path / "s.toml"
    p.write_text(tomli_w.dumps({**BASE, "horizon": {"steps": 10**7}}))
    f = tmp_path / "afile"
    f.write_text("x")
    for opt in ("--out", "--metrics-out"):
        for bad in (f / "x.csv", "/dev/null/x.csv"):   # parent folder cannot be created
            assert _main(["run", str(p), "--no-progress", opt, str(bad)]) == 2
            assert f"{opt} must be creatable" in capsys.readouterr().err
    assert _main(["validate", "--suite", "smoke", "--out", str(f)]) == 2
    assert "--out must be a directory" in capsys.readouterr().err
    assert _main(["validate", "--suite", "smoke", "--out", str(tmp_path / "r"),
                  "--report", str(f / "r.pdf")]) == 2
    assert "--report" in capsys.readouterr().err


def test_diverged_run_exits_3_with_a_diverged_column(tmp_path, capsys):
    import pandas as pd

    d = {**BASE, "algorithm": {**BASE["algorithm"], "eta": 1e6, "Q": 5},
         "horizon": {"steps": 200}}
    p = tmp_path / "s.toml"
    p.write_text(tomli_w.dumps(d))
    out, met = tmp_path / "o.csv", tmp_path / "m.csv"
    rc = _main(["run", str(p), "--no-progress", "--out", str(out), "--metrics-out", str(met)])
    assert rc == 3 and "diverged at step" in capsys.readouterr().out
    assert set(pd.read_csv(out)["diverged"]) == {1} and set(pd.read_csv(met)["diverged"]) == {1}
    p.write_text(tomli_w.dumps(BASE))
    assert _main(["run", str(p), "--no-progress", "--out", str(out)]) == 0
    assert set(pd.read_csv(out)["diverged"]) == {0}
    nested = tmp_path / "new" / "folder" / "o.csv"       # missing parents are created
    assert _main(["run", str(p), "--no-progress", "--out", str(nested)]) == 0
    assert pd.read_csv(nested).equals(pd.read_csv(out))
