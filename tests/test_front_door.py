"""The front door: ``import tiap`` gives the main tasks by name, loads none of the stages
until one is used, and every example in the front door's docstrings runs as written."""

from __future__ import annotations

import doctest
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import tiap


def test_import_tiap_loads_no_stage() -> None:
    code = "import sys, tiap; print(sorted(m for m in sys.modules if m.startswith('tiap')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "['tiap', 'tiap.errors', 'tiap.lazy']"


def test_a_front_door_name_loads_its_stage_on_first_use() -> None:
    code = ("import sys, tiap; tiap.rescore; "
            "print('tiap.scoring.rescore' in sys.modules, 'tiap.sensitivity' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.split() == ["True", "False"]


@pytest.mark.parametrize("name", sorted(set(tiap.__all__) - {"PUBLIC_MODULES", "TiapError",
                                                      "__version__"}))
def test_every_front_door_name_is_its_home_object(name: str) -> None:
    module, attr = tiap._HOMES[name]
    assert getattr(tiap, name) is getattr(importlib.import_module(module), attr)
    assert name in dir(tiap)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'judges'"):
        tiap.judges  # noqa: B018 - the front door has judge, not judges


def _examples() -> list[tuple[str, object]]:
    from tiap.audit.steps import LabelSet
    from tiap.scoring import inputs
    from tiap.scoring.scores import Scores
    from tiap.sensitivity.analyze import analyze
    from tiap.sensitivity.compare import Comparison

    return [("tiap.scoring.inputs", inputs), ("Scores.to_frame", Scores.to_frame),
            ("Scores.to_folder", Scores.to_folder), ("analyze", analyze),
            ("Comparison.table", Comparison.table), ("Comparison.to_frame", Comparison.to_frame),
            ("Comparison.to_latex", Comparison.to_latex),
            ("LabelSet.label_counts", LabelSet.label_counts), ("LabelSet.write", LabelSet.write)]


@pytest.mark.parametrize("name", [n for n, _ in _examples()])
def test_the_docstring_examples_run(name: str, tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    obj = dict(_examples())[name]
    if name.endswith(".to_frame"):
        pytest.importorskip("pandas")
    monkeypatch.chdir(tmp_path)  # an example may write a file
    tests = doctest.DocTestFinder().find(obj, name)
    assert sum(len(t.examples) for t in tests) > 0, f"{name} has no example"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for t in tests:
        runner.run(t)
    assert runner.failures == 0, f"{runner.failures} example(s) of {name} failed"
