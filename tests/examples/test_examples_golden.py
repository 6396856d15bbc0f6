"""Every ``examples/*.toml`` against its stored output (the SimPy docs-test habit).

``tests/examples/expected/<name>.csv`` is the trace ``fedsim run examples/<name>.toml --out``
wrote (events joined with the recorded metrics) in its stored form (:func:`stored_form`:
without the last column ``diverged``, added after the outputs were first made at commit
609153e) and ``<name>.stdout`` its summary line.  Any change of behaviour -- an event, a
staleness, a metric's last bit -- shows up here as a failing byte comparison that names the
first differing line.  ``python tests/examples/test_examples_golden.py`` says which examples
differ; to accept a deliberate change, run it with ``--regenerate`` (it writes exactly what
the test compares, :func:`example_output`) and explain it in the commit.
"""

from __future__ import annotations

import contextlib
import io
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

import pytest

from fedsim.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXPECTED = Path(__file__).resolve().parent / "expected"
EXAMPLES = sorted((ROOT / "examples").glob("*.toml"))


def stored_form(data: bytes) -> bytes:
    """The trace ``data`` (CSV bytes) as stored: without its last column ``diverged``
    (issue 14 item 4); no example diverges, so every value must be 0 (AssertionError
    otherwise)."""
    lines = data.split(b"\n")
    assert lines[0].endswith(b",diverged"), lines[0]
    cut = [ln.rsplit(b",", 1) for ln in lines if ln]
    assert all(c[1] == b"0" for c in cut[1:]), "an example diverged"
    return b"".join(c[0] + b"\n" for c in cut)


def example_output(path: Path) -> tuple[str, bytes]:
    """``fedsim run path --out ... --no-progress``: its stdout and its trace in the
    stored form (:func:`stored_form`) -- what the test compares and ``--regenerate``
    writes."""
    buf = io.StringIO()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / f"{path.stem}.csv"
        with contextlib.redirect_stdout(buf):
            rc = main(["run", str(path), "--out", str(out), "--no-progress"])
        assert rc == 0, (path.stem, rc)
        return buf.getvalue(), stored_form(out.read_bytes())


def first_difference(got: bytes, want: bytes) -> str | None:
    """``None`` when equal, else where the traces first differ (line, line counts)."""
    if got == want:
        return None
    g, w = got.decode().splitlines(), want.decode().splitlines()
    first = next((k for k, (a, b) in enumerate(zip(g, w, strict=False)) if a != b),
                 min(len(g), len(w)))
    return f"differs at line {first + 1} (got {len(g)} lines, want {len(w)})"


def regenerate(examples: Iterable[Path] = EXAMPLES, expected: Path = EXPECTED) -> None:
    """Write each example's ``<name>.csv`` / ``<name>.stdout`` into ``expected``."""
    expected.mkdir(parents=True, exist_ok=True)
    for p in examples:
        stdout, trace = example_output(p)
        (expected / f"{p.stem}.csv").write_bytes(trace)
        (expected / f"{p.stem}.stdout").write_text(stdout)


def differences(examples: Iterable[Path] = EXAMPLES, expected: Path = EXPECTED
                ) -> dict[str, str]:
    """``name -> what differs`` for the examples whose output is not the stored one."""
    out = {}
    for p in examples:
        stdout, trace = example_output(p)
        if stdout != (expected / f"{p.stem}.stdout").read_text():
            out[p.stem] = "stdout differs"
            continue
        where = first_difference(trace, (expected / f"{p.stem}.csv").read_bytes())
        if where is not None:
            out[p.stem] = f"trace {where}"
    return out


def test_every_example_has_a_stored_output():
    assert EXAMPLES, "no examples found"
    assert {p.stem for p in EXAMPLES} == {p.stem for p in EXPECTED.glob("*.csv")}


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_matches_stored_output(path):
    stdout, trace = example_output(path)
    assert stdout == (EXPECTED / f"{path.stem}.stdout").read_text()
    where = first_difference(trace, (EXPECTED / f"{path.stem}.csv").read_bytes())
    if where is not None:  # say where, not just that
        pytest.fail(f"{path.stem}: trace {where} from the stored output")


def test_regenerate_writes_what_the_test_compares(tmp_path):
    """The helper regenerates the stored files byte for byte (two quick examples), and
    the comparison then finds no difference; a changed byte is found."""
    picked = [p for p in EXAMPLES if p.stem in ("fedasync_quadratic", "asypfl_logistic")]
    assert len(picked) == 2
    regenerate(picked, tmp_path)
    for p in picked:
        assert (tmp_path / f"{p.stem}.csv").read_bytes() == (EXPECTED / f"{p.stem}.csv"
                                                              ).read_bytes()
        assert (tmp_path / f"{p.stem}.stdout").read_text() == (
            EXPECTED / f"{p.stem}.stdout").read_text()
    assert differences(picked, tmp_path) == {}
    f = tmp_path / f"{picked[0].stem}.csv"
    lines = f.read_bytes().split(b"\n")
    n = len(lines) - 1  # the file ends with a newline
    lines[3] = lines[3].replace(b"0", b"1", 1)
    f.write_bytes(b"\n".join(lines))
    assert differences(picked, tmp_path) == {
        picked[0].stem: f"trace differs at line 4 (got {n} lines, want {n})"}


def test_stored_form_drops_only_a_zero_diverged_column():
    assert stored_form(b"step,x,diverged\n0,1.5,0\n1,2.5,0\n") == b"step,x\n0,1.5\n1,2.5\n"
    with pytest.raises(AssertionError, match="an example diverged"):
        stored_form(b"step,x,diverged\n0,1.5,0\n1,nan,1\n")


if __name__ == "__main__":  # pragma: no cover - maintenance helper
    if "--regenerate" in sys.argv:
        regenerate()
        print("regenerated", ", ".join(p.stem for p in EXAMPLES))
    else:
        diff = differences()
        for p in EXAMPLES:
            print(p.stem, diff.get(p.stem, "same"))
        sys.exit(1 if diff else 0)
