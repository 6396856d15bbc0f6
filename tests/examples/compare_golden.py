"""Largest relative difference between the examples' traces and their stored outputs.

``python tests/examples/compare_golden.py`` runs every ``examples/*.toml`` and compares its
trace with ``tests/examples/expected/<name>.csv`` column by column: non-numeric columns and
the event columns must be equal, numbers within ``--rtol`` (default 1e-10) relative
(``|a - b| <= rtol * max(|a|, |b|)``, NaN equal to NaN).  It prints the largest relative
difference per example, the column and the row; exit status 1 when one exceeds ``rtol``.
An optional argument names another directory of stored outputs (e.g. main's, extracted
with ``git archive``) to compare against.
The maintenance helper for a deliberate change at rounding level (issue 19): regenerate
with ``test_examples_golden.py --regenerate`` only after this passes.
"""

from __future__ import annotations

import contextlib
import io
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from fedsim.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXPECTED = Path(__file__).resolve().parent / "expected"


def compare(rtol: float = 1e-10, expected: Path = EXPECTED) -> float:
    worst = 0.0
    for p in sorted((ROOT / "examples").glob("*.toml")):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / f"{p.stem}.csv"
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                main(["run", str(p), "--out", str(out), "--no-progress"])
            got = pd.read_csv(out)
        want = pd.read_csv(expected / f"{p.stem}.csv")
        assert list(got.columns[: len(want.columns)]) == list(want.columns), p.stem
        assert len(got) == len(want), (p.stem, len(got), len(want))
        rel, where = 0.0, ""
        for col in want.columns:
            a, b = got[col].to_numpy(), want[col].to_numpy()
            if a.dtype.kind not in "fi" or b.dtype.kind not in "fi":
                assert (a == b).all(), (p.stem, col)
                continue
            a, b = a.astype(float), b.astype(float)
            both_nan = np.isnan(a) & np.isnan(b)
            assert (np.isnan(a) == np.isnan(b)).all(), (p.stem, col, "NaN pattern")
            den = np.maximum(np.abs(a), np.abs(b))
            with np.errstate(invalid="ignore", divide="ignore"):
                r = np.where(both_nan | (a == b), 0.0, np.abs(a - b) / den)
            k = int(np.argmax(r))
            if r[k] > rel:
                rel, where = float(r[k]), f"{col} row {k}"
        print(f"{p.stem:24s} max rel diff {rel:.3e} {where}")
        worst = max(worst, rel)
    print(f"largest relative difference {worst:.3e} (rtol {rtol:g})")
    return worst


if __name__ == "__main__":  # pragma: no cover - maintenance helper
    where = Path(sys.argv[1]) if len(sys.argv) > 1 else EXPECTED  # e.g. an older copy
    sys.exit(0 if compare(expected=where) <= 1e-10 else 1)
