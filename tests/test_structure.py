"""Structure facts of the package, read from the source with :mod:`ast`.

- No import circle between TIAP's modules. Every ``import`` counts, at any depth (an import
  inside a function closes a circle as surely as one at the top), except those under
  ``if TYPE_CHECKING:``, which never run. None is allowed.
- No module uses another module's private name (``_name``), whether imported
  (``from tiap.x import _name``) or reached through a module (``x._name``).
"""

from __future__ import annotations

import ast
import graphlib
import importlib
import inspect
from pathlib import Path

import tiap

SRC = Path(tiap.__file__).parent.parent


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted((SRC / "tiap").rglob("*.py"))}


def _absolute(node: ast.ImportFrom, module: str, path: Path) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    if path.name != "__init__.py":
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


class _Imports(ast.NodeVisitor):
    """The TIAP modules one module imports, its private-name uses, and module aliases."""

    def __init__(self, module: str, path: Path) -> None:
        self.module, self.path = module, path
        self.edges: set[str] = set()
        self.private: list[tuple[int, str]] = []
        self.aliases: dict[str, str] = {}  # local name -> TIAP module it stands for

    def _add(self, target: str) -> None:
        self.edges.add(target)

    def visit_If(self, node: ast.If) -> None:
        if _type_checking(node):
            for child in node.orelse:
                self.visit(child)
            return
        self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            if a.name == "tiap" or a.name.startswith("tiap."):
                self._add(a.name)
                if a.asname:
                    self.aliases[a.asname] = a.name

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = _absolute(node, self.module, self.path)
        if not (base == "tiap" or base.startswith("tiap.")):
            return
        for a in node.names:
            full = f"{base}.{a.name}"
            target = full if full in MODULES else base
            self._add(target)
            if full in MODULES:
                self.aliases[a.asname or a.name] = full
            if a.name.startswith("_") and not a.name.startswith("__") and target != self.module:
                self.private.append((node.lineno, f"{base}.{a.name}"))

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if (isinstance(node.value, ast.Name) and node.value.id in self.aliases
                and node.attr.startswith("_") and not node.attr.startswith("__")
                and self.aliases[node.value.id] != self.module):
            self.private.append((node.lineno, f"{self.aliases[node.value.id]}.{node.attr}"))
        self.generic_visit(node)


def _scan() -> dict[str, _Imports]:
    out = {}
    for module, path in MODULES.items():
        v = _Imports(module, path)
        v.visit(ast.parse(path.read_text(encoding="utf-8")))
        out[module] = v
    return out


SCAN = _scan()


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import circle, one at a time: find one, drop one of its edges, look again."""
    graph = {m: set(ts) for m, ts in graph.items()}
    found = []
    while True:
        try:
            graphlib.TopologicalSorter(graph).prepare()
            return found
        except graphlib.CycleError as exc:
            cycle = exc.args[1]
            found.append(cycle)
            graph[cycle[-1]].discard(cycle[-2])  # each node is a predecessor of the next


def test_no_import_circle() -> None:
    graph = {m: {t for t in v.edges if t in MODULES and t != m} for m, v in SCAN.items()}
    assert [" -> ".join(c) for c in _circles(graph)] == []


def test_no_module_uses_another_modules_private_names() -> None:
    found = {f"{m}:{line}": name for m, v in SCAN.items() for line, name in v.private}
    assert found == {}


def test_the_scan_sees_what_it_checks() -> None:
    # the checks above cannot pass by seeing nothing: every stage is scanned and the scanner
    # catches each form on a module it builds
    assert {"tiap.errors", "tiap.ids", "tiap.io"} <= set(MODULES)
    src = ("import tiap.ids as ids\nfrom tiap.io import _private\n"
           "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from tiap.io import _hidden\n"
           "def f():\n    from tiap import errors\n    return ids._x, errors._y\n")
    v = _Imports("tiap.sample", SRC / "tiap" / "sample.py")
    v.visit(ast.parse(src))
    assert v.edges == {"tiap.ids", "tiap.io", "tiap.errors"}
    assert sorted(name for _, name in v.private) == ["tiap.errors._y", "tiap.ids._x",
                                                     "tiap.io._private"]
    # the circle search ends and finds each circle of a graph it is given (module -> what it
    # imports): a -> b -> c -> a and d -> e -> d; none once the graph has none
    found = _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"e"}, "e": {"d", "a"}})
    assert sorted(sorted(set(c)) for c in found) == [["a", "b", "c"], ["d", "e"]]
    assert _circles({"a": {"b"}, "b": {"c"}, "c": set()}) == []



def _cli_imports(module: str, path: Path, source: str) -> list[tuple[int, str, str | None]]:
    """Each TIAP import of a ``tiap.cli`` module other than ``tiap.cli.*``, at any depth and
    under ``if TYPE_CHECKING:`` too: ``(line, module, name)``, name ``None`` for
    ``import tiap.x``. ``from tiap import x`` names ``x`` of ``tiap`` (a submodule too)."""
    out: list[tuple[int, str, str | None]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name, None) for a in node.names
                    if a.name == "tiap" or a.name.startswith("tiap.")]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, module, path)
            if base == "tiap" or base.startswith("tiap."):
                out += [(node.lineno, base, a.name) for a in node.names]
    return sorted(i for i in out if i[1] != "tiap.cli" and not i[1].startswith("tiap.cli."))


def _not_public(imports: list[tuple[int, str, str | None]]) -> list[str]:
    """The imports that reach past the public API (:data:`tiap.PUBLIC_MODULES`' ``__all__``)."""
    bad = []
    for line, module, name in imports:
        if module not in tiap.PUBLIC_MODULES:
            bad.append(f"{line}: {module} is not a public module")
        elif name is not None and name not in getattr(importlib.import_module(module),
                                                      "__all__", ()):
            bad.append(f"{line}: {module}.{name} is not in {module}.__all__")
    return bad


def test_the_cli_imports_only_public_names() -> None:
    # the CLI is a thin shell over the public API: what it needs, a Python caller gets too
    cli = {m: p for m, p in MODULES.items() if m == "tiap.cli" or m.startswith("tiap.cli.")}
    assert len(cli) > 10
    found = {f"{m}: {b.split(': ', 1)[1]}" for m, p in cli.items()
             for b in _not_public(_cli_imports(m, p, p.read_text(encoding="utf-8")))}
    assert sorted(found) == []


def test_the_cli_check_sees_what_it_checks() -> None:
    # each form, on a module the test builds: internal modules (plain and from-import, inside a
    # function, under TYPE_CHECKING, relative), a name not in a public __all__ (a private one,
    # a submodule through ``from tiap import``); tiap.cli.* itself is not checked
    src = ("import tiap.scoring.measures\nfrom tiap.numfmt import interval\n"
           "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
           "    from tiap.llm.local import LocalServer\n"
           "def f():\n    from tiap import provenance\n    from tiap.io import _umask\n"
           "from ..io import atomic_write\nfrom tiap.cli.common import app\nfrom . import main\n"
           "from tiap.scoring import parse_measures\nimport tiap.scoring\nfrom tiap import load\n")
    imports = _cli_imports("tiap.cli.sample", SRC / "tiap" / "cli" / "sample.py", src)
    assert imports == [
        (1, "tiap.scoring.measures", None), (2, "tiap.numfmt", "interval"),
        (5, "tiap.llm.local", "LocalServer"), (7, "tiap", "provenance"), (8, "tiap.io", "_umask"),
        (9, "tiap.io", "atomic_write"), (12, "tiap.scoring", "parse_measures"),
        (13, "tiap.scoring", None), (14, "tiap", "load")]
    assert _not_public(imports)[:5] == [
        "1: tiap.scoring.measures is not a public module", "2: tiap.numfmt is not a public module",
        "5: tiap.llm.local is not a public module", "7: tiap.provenance is not in tiap.__all__",
        "8: tiap.io._umask is not in tiap.io.__all__"]


def test_no_public_name_is_shadowed_by_a_submodule() -> None:
    # importing a package's submodule ``p.x`` sets the attribute ``x`` of ``p``: a name ``x``
    # a package exports lazily (PEP 562 ``__getattr__``) is then the module, not the object
    for name in MODULES:  # every module imported: each submodule's attribute is set
        if not name.startswith("tiap.cli") and name != "tiap.__main__":
            importlib.import_module(name)
    shadowed = [f"{m}.{n}" for m in tiap.PUBLIC_MODULES
                for n in getattr(importlib.import_module(m), "__all__", ())
                if inspect.ismodule(getattr(importlib.import_module(m), n))]
    assert shadowed == []
