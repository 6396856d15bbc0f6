"""Search over schedules: delay patterns within tau and the theorem1-schedule family
(fedsim.worstcase.patterns, validation/families/schedules.py)."""

import math

import pandas as pd
import pytest
from fedsim.validation.families import Measurement, get_family
from fedsim.validation.families.schedules import worst_case_measurement
from fedsim.validation.verdict import Evidence, Target, judge

from fedsim.cli import main
from fedsim.errors import ConfigError
from fedsim.testing import check_bound
from fedsim.worstcase.patterns import pattern_delays


def test_patterns_by_hand():
    assert pattern_delays("constant", 2, 4) == [2, 2, 2, 2]
    assert pattern_delays("sawtooth", 2, 6, period=3) == [0, 1, 2, 0, 1, 2]
    assert pattern_delays("sawtooth", 3, 4, period=3, phase=1) == [1, 3, 0, 1]
    assert pattern_delays("burst", 3, 6, period=3, burst=1, phase=2) == [0, 3, 0, 0, 3, 0]
    assert pattern_delays("list", 2, 5, delays=[2, 0]) == [2, 0, 2, 0, 2]
    with pytest.raises(ConfigError, match="tau"):
        pattern_delays("list", 1, 3, delays=[2])
    with pytest.raises(ConfigError, match="period"):
        pattern_delays("sawtooth", 1, 3, period=1)


def _wc(pep, wit, status="optimal"):
    return {"pep": pep, "witness": wit, "status": status, "solver": "CLARABEL",
            "witness_dim": 2, "replayed": pep, "delays": [1, 1]}


def _verdict(m: Measurement, bound: float) -> str:
    inst = get_family("theorem1-schedule").build({})
    return judge(Target.of_bound(inst.bound, bound, []), Evidence.of_measurement(m), None
                 ).verdict


@pytest.mark.parametrize("pep, wit, status, bound, expected", [
    (1.0, 0.2, "optimal", 2.0, "holds"),             # the PEP's upper end is under the bound
    (1.0, 0.2, "optimal", 0.5, "inconclusive"),      # PEP above, witness below: not certified
    (1.0, 0.9995, "optimal", 0.5, "violated"),       # the witness attains it: certified
    (1.0, 0.8, "optimal", 0.5, "violated"),          # witness itself above the bound
    (1.0, 0.2, "optimal_inaccurate", 2.0, "inconclusive"),   # never rounded into a verdict
])
def test_measurement_makes_violated_certified(pep, wit, status, bound, expected):
    m = worst_case_measurement(_wc(pep, wit, status), bound)
    assert m.method == "worst_case" and m.value == pep
    assert _verdict(m, bound) == expected


def test_family_point_holds_in_the_paper_regime():
    inst = get_family("theorem1-schedule").build({"T": 8, "L": 5e-4, "pattern": "burst",
                                                  "period": 3})
    assert inst.status == "CERTIFIED_PAPER" and inst.unknown == []
    rec = check_bound(inst, check_replicates=0)
    assert rec.verdict == "holds" and rec.claim, rec.note
    m = inst.measure()
    assert 0 < m.value < inst.bound_value and "delays [1, 0, 0, 1, 0, 0, 1, 0]" in m.detail
    assert inst.exact_curve()[0] <= m.value * (1 + 1e-3)    # the witness is certified


def test_search_over_patterns(tmp_path):
    from fedsim.validation.search import SearchSettings, run_search

    df = run_search("theorem1-schedule", "pattern=[constant,sawtooth]",
                    SearchSettings(evals=2, grid=2, refine=0, confirm=0, progress=False,
                                   workers=1), out=tmp_path,
                    fixed={"T": 4, "L": 1.0, "mode": "general_eta", "eta_mult": 0.05,
                           "tau": 2, "period": 3})
    assert sorted(df["pattern"]) == ["constant", "sawtooth"]
    assert set(df["method"]) == {"worst_case"}
    assert all(math.isfinite(r) and 0 < r < 1 for r in df["ratio"])


@pytest.mark.slow
def test_search_over_patterns_cli(tmp_path):
    assert main(["search", "theorem1", "--family", "theorem1-schedule", "--space",
                 "pattern=[constant,sawtooth]", "--fixed", "T=6,L=1.0,mode=general_eta,"
                 "eta_mult=0.05,tau=2,period=3", "--evals", "2", "--grid", "2", "--refine",
                 "0", "--confirm", "0", "--out", str(tmp_path), "--no-progress"]) == 0
    df = pd.read_csv(tmp_path / "search.csv")
    assert sorted(df["pattern"]) == ["constant", "sawtooth"]
    assert set(df["method"]) == {"worst_case"}
    assert all(math.isfinite(r) and 0 < r < 1 for r in df["ratio"])
