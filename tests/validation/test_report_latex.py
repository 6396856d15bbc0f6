"""``fedsim report RUN --latex DIR``: booktabs tables and vector figures per panel.  The
tables are compiled when a TeX engine is on PATH, else their structure is checked."""

from __future__ import annotations

import contextlib
import io
import re
import shutil
import subprocess

import pytest
from fedsim.validation._selftest import write_synthetic_run
from fedsim.validation.report.latex import file_stem, tex_escape

from fedsim.cli import main

# one worker runs this module (make test: --dist loadgroup), so its module fixture runs once
pytestmark = pytest.mark.xdist_group("test_report_latex")


@pytest.fixture(scope="module")
def latex(tmp_path_factory):
    run = tmp_path_factory.mktemp("run")
    write_synthetic_run(run, seed=1, replicates=12)
    out = tmp_path_factory.mktemp("tex")
    err = io.StringIO()
    with contextlib.redirect_stderr(err):          # with its progress bars
        assert main(["report", str(run), "--out", str(out / "r.pdf"), "--latex",
                     str(out)]) == 0
    (out / "stderr.txt").write_text(err.getvalue())
    return out


def test_escape_and_stems():
    assert tex_escape("a_b & 50% #1 $x$ {y} ~ ^") == (
        r"a\_b \& 50\% \#1 \$x\$ \{y\} \textasciitilde{} \^{}")
    assert file_stem("ThmA", "quad shared/1", "") == "ThmA__quad-shared-1"


def test_tables_are_booktabs_with_consistent_rows(latex):
    tables = sorted(latex.glob("*.tex"))
    assert {t.name for t in tables} >= {"summary.tex", "verdicts-ThmA.tex", "verdicts-ThmB.tex"}
    for t in tables:
        text = t.read_text()
        assert text.count(r"\toprule") == text.count(r"\bottomrule") == 1
        cols = len(re.search(r"\\begin\{tabular\}\{(\w+)\}", text).group(1))
        body = [ln for ln in text.splitlines() if ln.endswith(r"\\")]
        assert len(body) >= 2
        for ln in body:   # every row has one cell per column (escaped & do not count)
            assert len(re.findall(r"(?<!\\)&", ln)) == cols - 1, (t.name, ln)


def test_every_panel_is_a_vector_figure(latex):
    pdfs = sorted((latex / "figures").glob("*.pdf"))
    svgs = sorted((latex / "figures").glob("*.svg"))
    assert len(pdfs) == len(svgs) == 5     # ThmA's 4 (scenario, mode) groups and ThmB's 1
    assert all(p.read_bytes().startswith(b"%PDF") for p in pdfs)
    assert all(b"<svg" in s.read_bytes()[:2000] for s in svgs)
    assert any(p.name.startswith("ThmA__quad_shared__paper") for p in pdfs)


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="no TeX engine on PATH")
def test_tables_compile(latex, tmp_path):
    doc = tmp_path / "doc.tex"
    body = "\n".join(rf"\input{{{t}}}" for t in sorted(latex.glob("*.tex")))
    doc.write_text("\\documentclass{article}\\usepackage{booktabs}\\usepackage{graphicx}\n"
                   "\\begin{document}\n" + body + "\n\\end{document}\n")
    res = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", doc.name],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout[-2000:]



def test_latex_figures_show_progress(latex):
    """``fedsim report --latex`` draws every panel again: a ``latex figures`` bar says so
    after the ``report pages`` bar (the 56 panels of the quick suite took 45 s with nothing
    on the screen)."""
    err = (latex / "stderr.txt").read_text()
    assert "report pages" in err and "latex figures" in err
    assert re.search(r"latex figures:.*\d/5 \[", err)              # one step per panel
    assert err.index("report pages") < err.index("latex figures")
