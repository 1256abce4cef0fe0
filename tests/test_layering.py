"""The package layering the code relies on: ids below both the run readers and the kernels.

Read from the source with :mod:`ast` (every ``import`` and ``from ... import``, at any depth,
so an import inside a function counts too).
"""

from __future__ import annotations

import ast
from pathlib import Path

import tiap

ROOT = Path(tiap.__file__).parent


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
    return out


def _modules(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def test_no_run_or_importer_module_imports_scoring() -> None:
    offenders = {str(p.relative_to(ROOT)): sorted(m for m in _imports(p)
                                                  if m.startswith("tiap.scoring"))
                 for p in [*_modules("runs"), *_modules("importers")]}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_run_formats_import_no_importer() -> None:
    """The run formats sit below the importers (which write runs), never the reverse."""
    offenders = {str(p.relative_to(ROOT)): sorted(m for m in _imports(p)
                                                  if m.startswith("tiap.importers"))
                 for p in _modules("runs")}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_no_run_module_imports_a_private_name() -> None:
    """The columnar fast path shares the formats' helpers by their public names."""
    for path in _modules("runs"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        private = [f"{node.module}.{a.name}" for node in ast.walk(tree)
                   if isinstance(node, ast.ImportFrom) and node.module
                   and node.module.startswith("tiap.")
                   for a in node.names if a.name.startswith("_")]
        assert private == [], path


def test_kernels_do_not_import_the_readers() -> None:
    for name in ("kernels.py", "encode.py", "measures.py"):
        imported = _imports(ROOT / "scoring" / name)
        assert not [m for m in imported if m.startswith("tiap.runs")], name


def test_both_take_ids_from_tiap_ids() -> None:
    assert "tiap.ids" in _imports(ROOT / "runs" / "columnar.py")
    assert "tiap.ids" in _imports(ROOT / "scoring" / "encode.py")
    assert "tiap.ids" in _imports(ROOT / "scoring" / "kernels.py")
    ids_imports = _imports(ROOT / "ids.py")
    assert not [m for m in ids_imports if m.startswith("tiap.") and m != "tiap.errors"]
