"""Every function and class of the public API (the ``__all__`` of each module in
:data:`tiap.PUBLIC_MODULES`) has a docstring with an example, and every example runs as
written: :mod:`doctest` runs it in a fresh empty folder (an example may write files there),
with the globals of the module that defines the object.
"""

from __future__ import annotations

import doctest
import importlib
import inspect
from typing import Any

import pytest

import tiap


def public_objects() -> dict[str, Any]:
    """``home.name`` -> object, for each function or class named in a public ``__all__``;
    an object exported by several modules is listed once, under its first public home."""
    seen: set[int] = set()
    out: dict[str, Any] = {}
    for module_name in tiap.PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if not (inspect.isfunction(obj) or inspect.isclass(obj)) or id(obj) in seen:
                continue
            seen.add(id(obj))
            out[f"{module_name}.{name}"] = obj
    return out


OBJECTS = public_objects()


@pytest.mark.parametrize("module_name", tiap.PUBLIC_MODULES)
def test_every_public_module_declares_its_api(module_name: str) -> None:
    module = importlib.import_module(module_name)
    assert isinstance(getattr(module, "__all__", None), list | tuple), \
        f"{module_name} has no __all__"
    missing = [n for n in module.__all__ if not hasattr(module, n)]
    assert not missing, f"{module_name}.__all__ names what it does not define: {missing}"


@pytest.mark.parametrize("qualname", sorted(OBJECTS))
def test_the_example_runs(qualname: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    obj = OBJECTS[qualname]
    home = importlib.import_module(obj.__module__)
    finder = doctest.DocTestFinder(recurse=False)
    tests = [t for t in finder.find(obj, qualname, globs=dict(vars(home))) if t.examples]
    assert tests, f"{qualname} ({obj.__module__}) has no example in its docstring"
    monkeypatch.chdir(tmp_path)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for t in tests:
        runner.run(t)
    assert runner.failures == 0, f"{runner.failures} example(s) of {qualname} failed"
