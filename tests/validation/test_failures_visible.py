"""Failed replicates are visible (issue 20, item 4).

A family row whose every replicate raises (the engine refuses an ``algorithm.beta`` key that
AREA does not use: the documented key of another algorithm, the mistake a user made) must be
an ``error`` row, never a silent NaN; the first failure's message and the count reach stderr
(with ``progress=False`` too), ``verdicts.csv`` (``failure``), the PDF's details page and
``summary.json`` (``in_regime_ok`` false, ``error_rows``, ``failed_replicates``).
"""

from __future__ import annotations

import json

import matplotlib.pyplot as plt
import pandas as pd
import pytest
from fedsim.validation import families as F
from fedsim.validation.compare import verdict_table
from fedsim.validation.report.details import details_page
from fedsim.validation.report.plan import load_run
from fedsim.validation.suites import run_suite
from matplotlib.text import Text

_BASE = F.get_family("theorem8-norm")


def _beta_typo(q):
    inst = _BASE.builder(q)
    inst.scenario["algorithm"]["beta"] = 0.5       # not a key of AREA: every replicate raises
    return inst


@pytest.fixture
def broken_family():
    fam = F.Family(name="beta-typo", theorem="theorem8", title="AREA with a typo",
                   doc="theorem8-norm with algorithm.beta set", params=_BASE.params,
                   builder=_beta_typo, modes=_BASE.modes)
    F.register_family(fam)
    yield fam
    F.unregister_family(fam.name)


def test_all_failed_replicates_make_an_error_row_everywhere(broken_family, tmp_path, capfd):
    res = run_suite("quick", family="beta-typo", replicates=4, workers=1, progress=False,
                    out=tmp_path / "run", report=tmp_path / "r.pdf")
    err = capfd.readouterr().err
    line = [x for x in err.splitlines() if "replicates failed" in x]
    assert len(line) == 1 and "4 of 4 replicates failed; first: ConfigError: algorithm.beta" \
        in line[0] and "error row" in line[0]
    assert "in-regime row not 'holds'" in err                    # printed without progress
    v = pd.read_csv(tmp_path / "run" / "verdicts.csv")
    assert list(v["verdict"]) == ["error"] and v["n_failed"].iloc[0] == 4
    assert v["failure"].iloc[0].startswith("4 of 4 replicates failed; first: ConfigError")
    s = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert s["in_regime_ok"] is False and res["in_regime_ok"] is False
    assert s["error_rows"] == 1 and s["failed_replicates"] == 4
    assert (tmp_path / "r.pdf").stat().st_size > 0
    fig = details_page(load_run(tmp_path / "run"), "theorem8", "beta-typo-default")
    texts = [t.get_text() for t in fig.findobj(Text)]
    plt.close(fig)
    assert any(t.startswith("Replicate failures: 4 of 4 replicates failed; first: "
                            "ConfigError: algorithm.beta") for t in texts), texts


def test_error_needs_failures_and_no_finite_value():
    bounds = pd.DataFrame([dict(theorem="t", scenario=s, mode="m", horizon=1, bound=1.0,
                                status="CERTIFIED_PAPER", bound_is_certified=True,
                                hypotheses_hold=True, n_failed=f)
                           for s, f in (("all-failed", 3), ("no-samples", 0),
                                        ("some-failed", 1), ("diverged", 2))])
    samples = pd.DataFrame([("t", "some-failed", "m", 1, 0.5 + 0.01 * k) for k in range(5)]
                           + [("t", "diverged", "m", 1, float("inf"))],
                           columns=["theorem", "scenario", "mode", "horizon", "value"])
    got = dict(zip(*verdict_table(samples, bounds)[["scenario", "verdict"]].T.values,
                   strict=True))
    assert got == {"all-failed": "error", "no-samples": "inconclusive",
                   "some-failed": "holds", "diverged": "inconclusive"}
