"""One JSON policy, the write side too (issue 34): every JSON or JSON Lines writer of TIAP
refuses a non-finite float (``allow_nan=False``), so it never writes the ``NaN`` or
``Infinity`` token that TIAP's strict reader (:func:`tiap.io.read_json`), jq and
JavaScript's ``JSON.parse`` refuse. A value that is not determined is written as ``null``.

Read from the source with :mod:`ast`: every call of ``json.dump`` or ``json.dumps`` in
``src/tiap`` (docstring examples are text, not calls)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

import tiap
from tiap.errors import TiapError
from tiap.provenance import Manifest, read_manifest

SRC = Path(tiap.__file__).parent


def _lenient_calls(source: str) -> list[int]:
    """The lines of the ``json.dump``/``json.dumps`` calls without ``allow_nan=False``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("dump", "dumps")
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "json"):
            strict = any(k.arg == "allow_nan" and isinstance(k.value, ast.Constant)
                         and k.value.value is False for k in node.keywords)
            if not strict:
                found.append(node.lineno)
    return found


def test_every_json_writer_refuses_nan() -> None:
    found = {f"{p.relative_to(SRC)}:{line}" for p in sorted(SRC.rglob("*.py"))
             for line in _lenient_calls(p.read_text(encoding="utf-8"))}
    assert sorted(found) == []


def test_the_scan_sees_each_form() -> None:
    # a call without the keyword, with it True, with it False; a docstring example is text
    src = ('"""\n>>> json.dumps(x)\n"""\nimport json\njson.dumps(1)\n'
           'json.dump(1, fh, allow_nan=True)\njson.dumps(1, allow_nan=False)\n')
    assert _lenient_calls(src) == [5, 6]


def test_a_manifest_with_nan_is_refused_when_written(tmp_path: Path) -> None:
    # the writer refuses, so no manifest the strict reader would refuse is ever left behind
    man = Manifest.new("rescore", options={"alpha": float("nan")})
    with pytest.raises(ValueError, match="not JSON compliant"):
        man.write(tmp_path / "manifest.json")
    assert not (tmp_path / "manifest.json").exists()
    # what the lenient writer would have left is refused by the reader, located
    (tmp_path / "manifest.json").write_text(
        json.dumps({"command": "rescore", "options": {"alpha": float("nan")}}))
    with pytest.raises(TiapError) as exc:
        read_manifest(tmp_path)
    p = exc.value.problems[0]
    assert (p.file, p.record, p.code) == (str(tmp_path / "manifest.json"), ".options.alpha",
                                          "invalid-value")


def test_a_mean_the_target_sizes_do_not_determine_is_written_as_null(tmp_path: Path) -> None:
    """Two queries, each with one raw turn of evidence ranked first: under Raw each has one
    group of one member. q1's n_groups is emptied in the folder (not known): the mean of
    n_groups over the defined queries is then not determined (null in the sensitivity
    manifest, where json.dumps would have written NaN); n_members is known for both:
    (1 + 1) / 2 = 1.0."""
    scores = tiap.rescore({"A": {"q1": ["t1"], "q2": ["t2"]}},
                          [{"query_id": "q1", "evidence": ["d1:1"]},
                           {"query_id": "q2", "evidence": ["d1:2"]}],
                          [{"item_id": "t1", "kind": "raw", "sources": ["d1:1"]},
                           {"item_id": "t2", "kind": "raw", "sources": ["d1:2"]}],
                          measures="RR@5")
    scores.to_folder(tmp_path / "r")
    sizes = tmp_path / "r" / "target_sizes.csv"
    text = sizes.read_text(encoding="utf-8")
    assert "A,raw,q1,1,1\n" in text
    sizes.write_text(text.replace("A,raw,q1,1,1\n", "A,raw,q1,,1\n"), encoding="utf-8")
    from tiap.sensitivity import write_sensitivity

    back = tiap.Scores.from_folder(tmp_path / "r")
    write_sensitivity(tiap.analyze(back, resamples=100), tmp_path / "s")
    man = read_manifest(tmp_path / "s")  # the strict reader: no NaN in it
    cov = man["datasets"][0]["systems"]["A"]["coverage"]["raw"]
    assert cov["mean_groups"] is None and cov["mean_members"] == 1.0
