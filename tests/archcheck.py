"""A static import graph of the ``fedsim`` namespace and the contracts it must keep.

``theory/`` and ``validation/`` sit at the repository root but install as ``fedsim.theory``
and ``fedsim.validation`` (``package_dir`` in setup.cfg), so a tool that walks one package
folder cannot see the namespace whole; this module reads every file with :mod:`ast` and maps
each folder onto its installed name.  An edge is one ``import`` statement (module level or
inside a function, as import-linter counts them).  Imports under ``if TYPE_CHECKING:`` are
annotations only: they count for cycles (a cycle that only typing hides is still two modules
that cannot be understood apart) and for private names, not for the doors.

Contracts (``docs/INTERNALS.md`` section 0):

* no top-level ``theory`` or ``validation`` import anywhere;
* layers: each listed layer imports only the layers below it;
* forbidden imports (the engine never imports ``fedsim.theory``; ``fedsim.theory`` never
  imports the engine, ``fedsim.validation`` or SimPy; rules and problems never import SimPy);
* no import cycle at any level: the module graph, packages and their own modules included,
  has no strongly connected component with more than one module;
* no private name (``_x``, not a dunder) is imported from another module or read as an
  attribute of an imported module.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Graph", "Edge", "build_graph", "cycles", "private_uses", "layer_breaks",
           "forbidden_uses", "toplevel_uses", "verdict_decisions"]


@dataclass(frozen=True)
class Edge:
    src: str
    dst: str          # an internal module, or the external top-level name
    line: int
    names: tuple[str, ...] = ()   # names taken by ``from dst import names`` (not submodules)
    typing_only: bool = False     # under ``if TYPE_CHECKING:``


@dataclass
class Graph:
    modules: dict[str, Path] = field(default_factory=dict)
    packages: set[str] = field(default_factory=set)
    edges: list[Edge] = field(default_factory=list)
    private_attrs: list[tuple[str, int, str, str]] = field(default_factory=list)
    raw_toplevel: list[tuple[str, int, str]] = field(default_factory=list)

    def internal(self, name: str) -> bool:
        return name in self.modules


def _module_names(roots: dict[str, Path]) -> tuple[dict[str, Path], set[str]]:
    modules: dict[str, Path] = {}
    packages: set[str] = set()
    for prefix, folder in roots.items():
        for path in sorted(folder.rglob("*.py")):
            rel = path.relative_to(folder).with_suffix("")
            parts = [p for p in rel.parts]
            if parts[-1] == "__init__":
                parts = parts[:-1]
                name = ".".join([prefix, *parts])
                packages.add(name)
            else:
                name = ".".join([prefix, *parts])
            modules[name] = path
    return modules, packages


def _type_checking_lines(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = node.test
            name = (test.id if isinstance(test, ast.Name)
                    else test.attr if isinstance(test, ast.Attribute) else None)
            if name == "TYPE_CHECKING":
                for sub in node.body:
                    for inner in ast.walk(sub):
                        if hasattr(inner, "lineno"):
                            skip.add(inner.lineno)
    return skip


def _resolve_relative(module: str, is_package: bool, level: int, target: str | None) -> str:
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join([*base, target] if target else base)


def build_graph(roots: dict[str, Path], *, flag_toplevel: tuple[str, ...] = ()) -> Graph:
    """Read every module under ``roots`` (installed prefix -> folder) into a :class:`Graph`."""
    g = Graph()
    g.modules, g.packages = _module_names(roots)
    for name, path in g.modules.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        skip = _type_checking_lines(tree)
        aliases: dict[str, str] = {}      # local name -> internal module it is bound to
        for node in ast.walk(tree):
            typing_only = getattr(node, "lineno", None) in skip
            if isinstance(node, ast.Import):
                for a in node.names:
                    top = a.name.split(".")[0]
                    if top in flag_toplevel:
                        g.raw_toplevel.append((name, node.lineno, a.name))
                    dst = a.name if a.name in g.modules else top
                    g.edges.append(Edge(name, dst, node.lineno, (), typing_only))
                    if a.name in g.modules:
                        aliases[a.asname or a.name.split(".")[0]] = (
                            a.name if a.asname else a.name.split(".")[0])
            elif isinstance(node, ast.ImportFrom):
                src = (_resolve_relative(name, name in g.packages, node.level, node.module)
                       if node.level else node.module or "")
                top = src.split(".")[0]
                if not node.level and top in flag_toplevel:
                    g.raw_toplevel.append((name, node.lineno, src))
                taken: list[str] = []
                for a in node.names:
                    sub = f"{src}.{a.name}"
                    if sub in g.modules:
                        g.edges.append(Edge(name, sub, node.lineno, (), typing_only))
                        aliases[a.asname or a.name] = sub
                    else:
                        taken.append(a.name)
                if taken or src not in g.modules:
                    dst = src if src in g.modules else top
                    g.edges.append(Edge(name, dst, node.lineno, tuple(taken), typing_only))
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in aliases and _private(node.attr)
                    and aliases[node.value.id] != name):
                g.private_attrs.append((name, node.lineno, aliases[node.value.id], node.attr))
    return g


def _private(attr: str) -> bool:
    return attr.startswith("_") and not (attr.startswith("__") and attr.endswith("__"))


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def cycles(g: Graph) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    adj: dict[str, set[str]] = defaultdict(set)
    for e in g.edges:
        if g.internal(e.dst) and e.dst != e.src:
            adj[e.src].add(e.dst)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in sorted(g.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(adj[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(adj[w]))))
                    advanced = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def private_uses(g: Graph) -> list[str]:
    """``from m import _x`` and ``m._x`` where ``m`` is another module."""
    found = []
    for e in g.edges:
        if g.internal(e.dst) and e.dst != e.src:
            for n in e.names:
                if _private(n):
                    found.append(f"{e.src}:{e.line} imports {e.dst}.{n}")
            last = e.dst.rsplit(".", 1)[-1]
            parent = e.dst.rsplit(".", 1)[0]
            if _private(last) and not _within(e.src, parent):
                found.append(f"{e.src}:{e.line} imports private module {e.dst}")
    for src, line, mod, attr in g.private_attrs:
        found.append(f"{src}:{line} reads {mod}.{attr}")
    return found


def layer_breaks(g: Graph, layers: list[tuple[str, ...]]) -> list[str]:
    """Edges from a layer to a higher one (index 0 is the top)."""
    def layer_of(m: str) -> int | None:
        for i, group in enumerate(layers):
            if any(_within(m, p) for p in group):
                return i
        return None
    bad = []
    for e in g.edges:
        if e.typing_only:
            continue
        a, b = layer_of(e.src), layer_of(e.dst)
        if a is not None and b is not None and b < a:
            bad.append(f"{e.src}:{e.line} imports {e.dst} (a higher layer)")
    return bad


def forbidden_uses(g: Graph, sources: tuple[str, ...], forbidden: tuple[str, ...]) -> list[str]:
    bad = []
    for e in g.edges:
        if e.typing_only:
            continue
        if any(_within(e.src, s) for s in sources) and any(_within(e.dst, f) for f in forbidden):
            bad.append(f"{e.src}:{e.line} imports {e.dst}")
    return bad


def toplevel_uses(g: Graph) -> list[str]:
    return [f"{src}:{line} imports top-level {what}" for src, line, what in g.raw_toplevel]


def _verdict_values(node: ast.AST | None, vocabulary: frozenset[str]) -> list[str]:
    """The verdict words ``node`` evaluates to directly (a literal, or a branch of ``a if c
    else b``)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value] if node.value in vocabulary else []
    if isinstance(node, ast.IfExp):
        return (_verdict_values(node.body, vocabulary)
                + _verdict_values(node.orelse, vocabulary))
    return []


def verdict_decisions(g: Graph, vocabulary: frozenset[str], allowed: tuple[str, ...]
                      ) -> list[str]:
    """``module:line`` for every ``return`` or assignment (outside ``allowed`` modules) whose
    value is a verdict word (``vocabulary``): a module that decides a verdict itself.  Data
    tables (a tuple of the words, a dict from one vocabulary to another) and keyword
    arguments (``expected_verdict="violated"``) decide nothing and are not flagged."""
    out = []
    for mod, path in sorted(g.modules.items()):
        if mod in allowed:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.Return, ast.Assign, ast.AnnAssign, ast.AugAssign)):
                for word in _verdict_values(node.value, vocabulary):
                    out.append(f"{mod}:{node.lineno} decides {word!r}")
    return out
