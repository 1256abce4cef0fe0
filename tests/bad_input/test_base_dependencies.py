"""The base install: every third-party module TIAP imports without an extra is one of its
declared base dependencies (or a requirement of one).

A fresh process records every ``import`` statement executed by TIAP's own code (a wrapper of
``builtins.__import__`` that looks at the importing module's name) while it imports every module
of the package and runs what a user of the base install runs first (``tiap --help``, every
command's ``-h``, ``tiap measures``, ``tiap datasets list``); each third-party module so imported
is mapped to the distribution that provides it. One outside the base closure (an extra, or one
only the test extras bring in by accident, as ``click`` once was) fails the test. ``.ci/run`` also installs TIAP with plain
``pip install .`` in a clean venv and runs the same commands.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from importlib import metadata

from packaging.requirements import Requirement

_PROBE = r"""
import builtins, contextlib, io, json, pkgutil, importlib, sys
imported = set()
_real = builtins.__import__
def _recording(name, globals=None, locals=None, fromlist=(), level=0):
    if level == 0 and globals and str(globals.get("__name__", "")).startswith("tiap"):
        imported.add(name.split(".")[0])
    return _real(name, globals, locals, fromlist, level)
builtins.__import__ = _recording
import tiap
for m in pkgutil.walk_packages(tiap.__path__, "tiap."):
    if m.name.split(".")[-1] == "__main__":
        continue
    importlib.import_module(m.name)
import typer
from tiap.cli.main import app, main

def paths(cmd, prefix):
    yield prefix
    for name, sub in sorted(getattr(cmd, "commands", {}).items()):
        yield from paths(sub, [*prefix, name])

calls = [[*p, "-h"] for p in paths(typer.main.get_command(app), [])]
calls += [["measures"], ["datasets", "list"]]
failed = []
for args in calls:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        rc = main(args)
    if rc != 0:
        failed.append(args)
print(json.dumps({"modules": sorted(imported),
                  "calls": len(calls), "failed": failed}))
"""


def _base_closure() -> set[str]:
    """Normalised names of tiap's base requirements and, transitively, theirs (no extras)."""
    def norm(name: str) -> str:
        return re.sub(r"[-_.]+", "-", name).lower()

    seen: set[str] = set()
    todo = [r for r in metadata.requires("tiap") or []]
    while todo:
        req = Requirement(todo.pop())
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        name = norm(req.name)
        if name in seen:
            continue
        seen.add(name)
        try:
            todo.extend(metadata.requires(req.name) or [])
        except metadata.PackageNotFoundError:
            pass
    return seen


def test_the_base_path_imports_only_declared_base_dependencies() -> None:
    out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                         check=True).stdout
    probe = json.loads(out.splitlines()[-1])
    assert probe["failed"] == [] and probe["calls"] > 20, probe
    provided = metadata.packages_distributions()
    closure = _base_closure()
    assert {"numpy", "typer", "rich", "pydantic"} <= closure
    outside: dict[str, list[str]] = {}
    for module in probe["modules"]:
        if module in sys.stdlib_module_names or module.startswith("_") or module == "tiap":
            continue
        dists = {re.sub(r"[-_.]+", "-", d).lower() for d in provided.get(module, [])}
        if dists and not dists & closure:
            outside[module] = sorted(dists)
    assert outside == {}, (
        f"imported on the base path but not a base dependency: {outside}")


def test_the_closure_check_sees_an_undeclared_module() -> None:
    # the test above must be able to fail: click is installed here (by the test extras'
    # packages) but is no base dependency of TIAP's
    provided = metadata.packages_distributions()
    assert "click" in provided
    assert not {d.lower() for d in provided["click"]} & _base_closure()
