"""Structure facts of the package, read from the source with :mod:`ast`.

- No import circle between TIAP's modules. Every ``import`` counts, at any depth (an import
  inside a function closes a circle as surely as one at the top), except those under
  ``if TYPE_CHECKING:``, which never run. None is allowed.
- No module uses another module's private name (``_name``), whether imported
  (``from tiap.x import _name``) or reached through a module (``x._name``).
- No import inside a function loads what the module has loaded already: a function-level
  import buys laziness only when its module (TIAP's or another) is not loaded when the
  importing module is (its module-level imports, transitively, with each module's packages
  and the homes of their PEP 562 names). Such an import belongs at the top.
- Outside what ``tiap --help`` loads, no import inside a function defers just one light TIAP
  module (one whose own imports are loaded already or the standard library's). The imports
  that stay inside functions keep ``import tiap`` and ``tiap --help`` light, defer a stage
  (a package, numpy, pydantic), or wait for an optional extra.
"""

from __future__ import annotations

import ast
import graphlib
import importlib
import importlib.util
import inspect
import sys
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


def _packages(module: str) -> list[str]:
    """The packages a module's import loads first: ``a.b.c`` -> ``a``, ``a.b``."""
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _lazy_homes(tree: ast.Module) -> dict[str, str]:
    """name -> home module of the names a package exports on first use: the dict literal
    a module-level ``lazy_exports(__name__, NAME)`` gets (:mod:`tiap.lazy`)."""
    dicts = {n.targets[0].id: n.value for n in tree.body if isinstance(n, ast.Assign)
             and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)
             and isinstance(n.value, ast.Dict)}
    out: dict[str, str] = {}
    for node in tree.body:
        for call in ast.walk(node):
            if (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                    and call.func.id == "lazy_exports" and len(call.args) == 2
                    and isinstance(call.args[1], ast.Name)):
                for name, home in ast.literal_eval(dicts[call.args[1].id]).items():
                    out[name] = home if isinstance(home, str) else home[0]
    return out


TREES = {m: ast.parse(p.read_text(encoding="utf-8")) for m, p in MODULES.items()}
LAZY = {m: homes for m, tree in TREES.items() if (homes := _lazy_homes(tree))}


class _Imports(ast.NodeVisitor):
    """The TIAP modules one module imports, its private-name uses, module aliases, the other
    modules it imports at module level, and each import inside a function."""

    def __init__(self, module: str, path: Path) -> None:
        self.module, self.path = module, path
        self.edges: set[str] = set()
        self.top: set[str] = set()  # imported at module level (not inside a function)
        self._depth = 0
        self.private: list[tuple[int, str]] = []
        self.aliases: dict[str, str] = {}  # local name -> TIAP module it stands for
        self.other_top: set[str] = set()  # other modules (stdlib, third party) at module level
        # each import statement inside a function: (line, "tiap" or "other", the modules it
        # loads, the names that load a module only if they are one (``x.n`` of another
        # module's ``from x import n``), its text)
        self.late: list[tuple[int, str, tuple[str, ...], tuple[str, ...], str]] = []

    def _add(self, target: str) -> None:
        self.edges.add(target)
        if not self._depth:
            self.top.add(target)

    def _other(self, node: ast.Import | ast.ImportFrom, names: list[str]) -> None:
        if self._depth:
            must, maybe = (names, []) if isinstance(node, ast.Import) else (names[:1], names[1:])
            self.late.append((node.lineno, "other", tuple(must), tuple(maybe), ast.unparse(node)))
        else:  # ``import a.b`` loads ``a`` too; ``x.n`` of ``from x import n`` may be no
            # module: then it is a name nobody imports as one
            self.other_top.update(p for n in names for p in (n, *_packages(n)))

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self._depth += 1
        self.generic_visit(node)
        self._depth -= 1

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_If(self, node: ast.If) -> None:
        if _type_checking(node):
            for child in node.orelse:
                self.visit(child)
            return
        self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        ours = [a.name for a in node.names if a.name == "tiap" or a.name.startswith("tiap.")]
        if len(ours) < len(node.names):
            self._other(node, [a.name for a in node.names if a.name not in ours])
        elif self._depth:
            self.late.append((node.lineno, "tiap", tuple(ours), (), ast.unparse(node)))
        for a in node.names:
            if a.name == "tiap" or a.name.startswith("tiap."):
                self._add(a.name)
                if a.asname:
                    self.aliases[a.asname] = a.name

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = _absolute(node, self.module, self.path)
        if not (base == "tiap" or base.startswith("tiap.")):
            if base != "__future__":
                self._other(node, [base, *(f"{base}.{a.name}" for a in node.names)])
            return
        loads = set()
        for a in node.names:
            full = f"{base}.{a.name}"
            target = full if full in MODULES else LAZY.get(base, {}).get(a.name, base)
            loads.add(target)
            self._add(target)
            if full in MODULES:
                self.aliases[a.asname or a.name] = full
            if a.name.startswith("_") and not a.name.startswith("__") and target != self.module:
                self.private.append((node.lineno, f"{base}.{a.name}"))
        if self._depth:
            self.late.append((node.lineno, "tiap", tuple(sorted(loads)), (), ast.unparse(node)))

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
        v.visit(TREES[module])
        out[module] = v
    return out


SCAN = _scan()


def _loaded(module: str, scan: dict[str, _Imports]) -> tuple[set[str], set[str]]:
    """What importing ``module`` loads, by the scan: TIAP's modules (the module-level imports,
    transitively, with each module's packages) and the other modules those import at module
    level."""
    seen: set[str] = set()
    todo = [module]
    while todo:
        m = todo.pop()
        if m not in seen and m in scan:
            seen.add(m)
            todo += [*scan[m].top, *_packages(m)]
    return seen, set().union(*(scan[m].other_top for m in seen))


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # its package is no package: ``json.loads``
        return False


def _needless(module: str, scan: dict[str, _Imports] = SCAN) -> list[str]:
    """The function-level imports of ``module`` that load nothing new (its text)."""
    ours, others = _loaded(module, scan)
    out = []
    for _, kind, must, maybe, text in scan[module].late:
        loaded = ours if kind == "tiap" else others
        if set(must) <= loaded and all(n in loaded or not _is_module(n) for n in maybe):
            out.append(text)
    return out


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




def test_no_function_level_import_loads_what_is_loaded_already() -> None:
    # an import inside a function that loads nothing new buys no laziness: it belongs at the
    # top (imports that stay inside functions keep ``import tiap`` and ``tiap --help`` light,
    # defer a stage or wait for an optional extra)
    found = sorted(f"{m}: {text}" for m in SCAN for text in _needless(m))
    assert found == []


def test_the_late_import_check_sees_what_it_checks() -> None:
    # on modules the test builds: the package tiap.s loads json and tiap.s.a; tiap.s.a loads
    # tiap.s.b and concurrent.futures; tiap.s.b loads csv. tiap.s.c loads tiap.s.a, so tiap.s
    # (its package), tiap.s.a, tiap.s.b, json, csv, concurrent and concurrent.futures; its
    # function-level imports of those are needless, the rest load something new
    sources = {
        "tiap": ("__init__.py", ""),
        "tiap.s": ("s/__init__.py", "import json\nimport tiap.s.a\n"),
        "tiap.s.a": ("s/a.py", "import tiap.s.b\nfrom concurrent import futures\n"),
        "tiap.s.b": ("s/b.py", "import csv\n"),
        "tiap.s.c": ("s/c.py", ("import tiap.s.a\ndef f():\n"
                      "    import json\n    import csv\n    import tiap.s.b\n"
                      "    from tiap import s\n    from concurrent.futures import Future\n"
                      "    from concurrent import futures\n"
                      "    import tiap.s.d\n    import gzip\n    from json import decoder\n"
                      "    from tiap.scoring import write_rescore\n"
                      "    import csv, gzip\n    import tiap.s.e\n    import tiap.s.f\n")),
        "tiap.s.d": ("s/d.py", "import json\n"),
        "tiap.s.e": ("s/e.py", "import numpy\n"),
        "tiap.s.f": ("s/f.py", "import tiap.s.g\n"),
        "tiap.s.g": ("s/g.py", ""),
    }
    scan = {}
    for module, (path, source) in sources.items():
        scan[module] = _Imports(module, SRC / "tiap" / path)
        scan[module].visit(ast.parse(source))
    assert _loaded("tiap.s.c", scan)[0] == {"tiap", "tiap.s", "tiap.s.a", "tiap.s.b",
                                             "tiap.s.c"}
    assert _needless("tiap.s.c", scan) == [
        "import json", "import csv", "import tiap.s.b", "from tiap import s",
        "from concurrent.futures import Future", "from concurrent import futures"]
    # a name a package exports on first use loads its home (tiap.lazy)
    assert ("tiap.scoring.folder",) in [late[2] for late in scan["tiap.s.c"].late]
    # tiap.s.d would add itself and json (loaded): one light module; tiap.s.e adds numpy,
    # tiap.s.f adds tiap.s.g too
    assert _one_light_module("tiap.s.c", scan) == ["import tiap.s.d"]


#: What ``tiap --help`` loads (the CLI's entry module, by the scan): a function-level import
#: in these keeps the help light, whatever it loads.
HELP = _loaded("tiap.cli.main", SCAN)[0]


def _one_light_module(module: str, scan: dict[str, _Imports] = SCAN) -> list[str]:
    """The function-level imports of TIAP modules of ``module`` that, were they at its top,
    would load one module more and nothing outside TIAP and the standard library: the module
    itself, whose own imports are loaded already (its text)."""
    ours, others = _loaded(module, scan)
    out = []
    for _, kind, must, _, text in scan[module].late:
        if kind != "tiap" or set(must) <= ours:
            continue
        new = [_loaded(t, scan) for t in must]
        added = set().union(*(a for a, _ in new)) - ours
        foreign = {o.split(".")[0] for _, b in new for o in b - others} - sys.stdlib_module_names
        if len(added) == 1 and not foreign:
            out.append(text)
    return out


def test_no_function_level_import_defers_one_light_module() -> None:
    # outside what ``tiap --help`` loads, an import inside a function that would load only its
    # own module (whose imports are loaded already or the standard library's) defers next to
    # nothing: it belongs at the top
    found = sorted(f"{m}: {text}" for m in SCAN if m not in HELP for text in _one_light_module(m))
    assert found == []
