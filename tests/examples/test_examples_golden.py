"""Every ``examples/*.toml`` against its stored output (the SimPy docs-test habit).

``tests/examples/expected/<name>.csv`` is the trace ``fedsim run examples/<name>.toml --out``
wrote (events joined with the recorded metrics) and ``<name>.stdout`` its summary line, both
made at commit 609153e, before the redesign.  Any change of behaviour -- an event, a
staleness, a metric's last bit -- shows up here as a failing byte comparison that names the
first differing line.  ``python tests/examples/test_examples_golden.py`` says which examples
differ; to accept a deliberate change, run it with ``--regenerate`` and explain it in the commit.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from fedsim.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXPECTED = Path(__file__).resolve().parent / "expected"
EXAMPLES = sorted((ROOT / "examples").glob("*.toml"))


def _run(path: Path, out: Path, capsys=None) -> str:
    rc = main(["run", str(path), "--out", str(out), "--no-progress"])
    assert rc == 0
    return capsys.readouterr().out if capsys is not None else ""


def test_every_example_has_a_stored_output():
    assert EXAMPLES, "no examples found"
    assert {p.stem for p in EXAMPLES} == {p.stem for p in EXPECTED.glob("*.csv")}


def _without_diverged(data: bytes) -> bytes:
    """The trace without its last column ``diverged`` (issue 14 item 4, added after the
    stored outputs were made); no example diverges, so every value must be 0."""
    lines = data.split(b"\n")
    assert lines[0].endswith(b",diverged"), lines[0]
    cut = [ln.rsplit(b",", 1) for ln in lines if ln]
    assert all(c[1] == b"0" for c in cut[1:]), "an example diverged"
    return b"".join(c[0] + b"\n" for c in cut)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_matches_stored_output(path, tmp_path, capsys):
    out = tmp_path / f"{path.stem}.csv"
    stdout = _run(path, out, capsys)
    assert stdout == (EXPECTED / f"{path.stem}.stdout").read_text()
    got, want = _without_diverged(out.read_bytes()), (EXPECTED / f"{path.stem}.csv").read_bytes()
    if got != want:  # say where, not just that
        g, w = got.decode().splitlines(), want.decode().splitlines()
        first = next((k for k, (a, b) in enumerate(zip(g, w, strict=False)) if a != b),
                     min(len(g), len(w)))
        pytest.fail(f"{path.stem}: trace differs from the stored output at line {first + 1} "
                    f"(got {len(g)} lines, want {len(w)})")


if __name__ == "__main__":  # pragma: no cover - maintenance helper
    import contextlib
    import io

    regenerate = "--regenerate" in sys.argv
    for p in EXAMPLES:
        buf = io.StringIO()
        target = EXPECTED / f"{p.stem}.csv" if regenerate else Path(f"/tmp/{p.stem}.csv")
        with contextlib.redirect_stdout(buf):
            main(["run", str(p), "--out", str(target), "--no-progress"])
        if regenerate:
            (EXPECTED / f"{p.stem}.stdout").write_text(buf.getvalue())
        print(p.stem, "regenerated" if regenerate else
              ("same" if target.read_bytes() == (EXPECTED / f"{p.stem}.csv").read_bytes()
               else "DIFFERS"))
