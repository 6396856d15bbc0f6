"""The architecture contract (docs/INTERNALS.md section 0) holds over the whole namespace.

``archcheck`` builds the static import graph of ``fedsim``, ``fedsim.theory`` (the folder
``theory/``) and ``fedsim.validation`` (``validation/``) and checks the doors, the forbidden
imports, cycles at every level and private names.  A negative control builds a small package
that breaks each rule once and asserts that each break is flagged, so these tests can fail.
"""

from __future__ import annotations

from pathlib import Path

import archcheck as ac

ROOT = Path(__file__).resolve().parents[1]
ROOTS = {"fedsim": ROOT / "fedsim", "fedsim.theory": ROOT / "theory",
         "fedsim.validation": ROOT / "validation"}

LAYERS = [
    ("fedsim.testing",),
    ("fedsim.validation",),
    ("fedsim.cli", "fedsim.cli_run", "fedsim.__main__", "fedsim.api"),
    ("fedsim.engine",),
    ("fedsim.config",),
    ("fedsim.algorithms",),
    ("fedsim.local", "fedsim.servers"),
    ("fedsim.trace",),
    ("fedsim.problems",),
    ("fedsim.delays", "fedsim.rng"),
    ("fedsim.plugins",),
    ("fedsim.errors", "fedsim.lazy", "fedsim.jit"),
]
CORE = ("fedsim.algorithms", "fedsim.config", "fedsim.delays", "fedsim.engine", "fedsim.local",
        "fedsim.problems", "fedsim.servers", "fedsim.trace", "fedsim.rng", "fedsim.errors",
        "fedsim.cli", "fedsim.cli_run", "fedsim.plot", "fedsim.api", "fedsim.lazy", "fedsim.jit")
PURE = ("fedsim.local", "fedsim.servers", "fedsim.algorithms", "fedsim.problems",
        "fedsim.delays", "fedsim.config", "fedsim.trace")


def _graph():
    return ac.build_graph(ROOTS, flag_toplevel=("theory", "validation"))


def _check(g) -> dict[str, list]:
    return {
        "top-level theory/validation": ac.toplevel_uses(g),
        "layers": ac.layer_breaks(g, LAYERS),
        "engine and core never import theory or validation":
            ac.forbidden_uses(g, CORE, ("fedsim.theory", "fedsim.validation")),
        "theory never imports the engine, validation or SimPy":
            ac.forbidden_uses(g, ("fedsim.theory",),
                              ("fedsim.engine", "fedsim.validation", "simpy")),
        "rules, problems and delays never import SimPy": ac.forbidden_uses(g, PURE, ("simpy",)),
    }


def test_the_namespace_keeps_its_contract():
    broken = {k: v for k, v in _check(_graph()).items() if v}
    assert not broken, "\n".join(f"{k}: {v[:20]}" for k, v in broken.items())


def test_no_import_cycle_at_any_level():
    found = ac.cycles(_graph())
    assert not found, found


def test_no_private_name_crosses_a_module():
    found = ac.private_uses(_graph())
    assert not found, "\n".join(found)


def test_the_graph_sees_the_whole_namespace():
    g = _graph()
    for name in ("fedsim.engine", "fedsim.theory.registry", "fedsim.validation.suites"):
        assert name in g.modules
    assert sum(1 for e in g.edges if e.dst.startswith("fedsim.theory")) > 20


def test_tests_benchmarks_and_examples_import_no_top_level_theory_or_validation():
    roots = {f"x.{d}": ROOT / d for d in ("tests", "benchmarks", "examples")
             if (ROOT / d).is_dir()}
    g = ac.build_graph(roots, flag_toplevel=("theory", "validation"))
    assert not ac.toplevel_uses(g)


def test_every_break_is_flagged(tmp_path):
    pkg = tmp_path / "probe"
    for sub in ("low", "high", "theory"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "low" / "a.py").write_text("from probe.low import b\n")          # a sibling cycle
    (pkg / "low" / "b.py").write_text("from probe.low import a\n")
    (pkg / "low" / "c.py").write_text("import probe.high\n")                # a door upwards
    (pkg / "high" / "__init__.py").write_text("from probe.high.d import X\n")
    (pkg / "high" / "d.py").write_text("import probe.high\nX = 1\n")       # package <-> module
    (pkg / "high" / "e.py").write_text(
        "from probe.low.a import _hidden\nimport probe.low.b as b\nb._h()\n")  # private x2
    (pkg / "theory" / "f.py").write_text("import simpy\nimport validation.x\n")
    (pkg / "low" / "g.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import probe.high.d\n")
    (pkg / "low" / "h.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import probe.low.i\n")
    (pkg / "low" / "i.py").write_text("import probe.low.h\n")                # typing-only cycle
    g = ac.build_graph({"probe": pkg}, flag_toplevel=("validation",))
    assert ac.toplevel_uses(g) == ["probe.theory.f:2 imports top-level validation.x"]
    assert ac.layer_breaks(g, [("probe.high",), ("probe.low",)]) == [
        "probe.low.c:1 imports probe.high (a higher layer)"]
    assert ac.forbidden_uses(g, ("probe.theory",), ("simpy",)) == [
        "probe.theory.f:1 imports simpy"]
    assert sorted(map(tuple, ac.cycles(g))) == [("probe.high", "probe.high.d"),
                                                ("probe.low.a", "probe.low.b"),
                                                ("probe.low.h", "probe.low.i")]
    assert ac.private_uses(g) == ["probe.high.e:1 imports probe.low.a._hidden",
                                  "probe.high.e:3 reads probe.low.b._h"]


# -- one verdict function (issue 30): validation/verdict.py decides, every door calls it ------
VERDICT_WORDS = frozenset({"holds", "violated", "inconclusive", "not_applicable", "error",
                           "reversed", "unresolved"})
#: modules that combine verdicts already decided into one word (a summary cell, a paper
#: experiment's verdict from its claims' statuses); they decide no claim
AGGREGATORS = ("fedsim.validation.report.summary", "fedsim.validation.paper.stats")
#: the doors and the one name each imports: validate's table, search's points, fedsim.testing,
#: the paper suite's claims
DOORS = ("fedsim.validation.compare", "fedsim.validation.search_budget",
         "fedsim.testing.check", "fedsim.validation.paper.intervals")


def test_only_the_verdict_module_decides_a_verdict():
    found = ac.verdict_decisions(_graph(), VERDICT_WORDS,
                                 ("fedsim.validation.verdict",) + AGGREGATORS)
    assert not found, "\n".join(found)


def test_every_door_calls_the_one_verdict_function():
    g = _graph()
    for door in DOORS:
        assert any(e.src == door and e.dst == "fedsim.validation.verdict" and "judge" in e.names
                   for e in g.edges), door
    suite = [e for e in g.edges if e.src == "fedsim.validation.suite_verdicts"]
    assert any(e.dst == "fedsim.validation.compare" and "verdict_table" in e.names
               for e in suite)


def test_a_verdict_decided_elsewhere_is_flagged(tmp_path):
    pkg = tmp_path / "probe"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "door.py").write_text(
        "def v(hi, b):\n    return 'holds' if hi <= b else 'inconclusive'\n")
    (pkg / "rows.py").write_text("VERDICTS = ('holds', 'violated')\nX = dict(v='violated')\n"
                                 "def f(x):\n    out = 'violated'\n    return out\n")
    g = ac.build_graph({"probe": pkg}, flag_toplevel=())
    assert ac.verdict_decisions(g, VERDICT_WORDS, ()) == [
        "probe.door:2 decides 'holds'", "probe.door:2 decides 'inconclusive'",
        "probe.rows:4 decides 'violated'"]
    assert ac.verdict_decisions(g, VERDICT_WORDS, ("probe.door", "probe.rows")) == []
