"""The audit's steps on inputs read once: ``RescoreInputs`` shared by find_cases and
graded_audit, the cases find_cases wrote judged from memory, and the redaction that
remembers strings. Each gives the files the steps give reading everything themselves."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import tiap
import tiap.memory.store
from tiap.audit import steps
from tiap.audit.cases import Case, ContestedItem, RescoreInputs, read_cases, write_cases
from tiap.audit.labels import redactor
from tiap.audit.steps import _as_read, find_cases, graded_audit, judge_cases
from tiap.errors import TiapError
from tiap.llm.client import add_secret, redact


def _jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _rescored(tmp: Path) -> Path:
    """Two stores (s1 for A, s2 for B), three queries; facts ranked above raw turns, so
    each run has contested credits under Source and Canonical."""
    for s in ("s1", "s2"):
        (tmp / s).mkdir()
        _jsonl(tmp / s / "items.jsonl", [
            {"item_id": "t1", "kind": "raw", "sources": ["d1:1"], "text": "I went to the park."},
            {"item_id": "m1", "kind": "fact", "sources": ["d1:1"], "text": f"{s}: the park."},
            {"item_id": "t2", "kind": "raw", "sources": ["d1:2"], "text": "Our dog is Max."},
            {"item_id": "m2", "kind": "fact", "sources": ["d1:2"], "text": "They have a dog."},
            {"item_id": "m3", "kind": "fact", "sources": ["d1:3"], "text": ""}])
    _jsonl(tmp / "queries.jsonl", [
        {"query_id": "q1", "question": "Where did she go?", "answer": "the park",
         "evidence": ["d1:1"]},
        {"query_id": "q2", "question": "What is the dog called?", "answer": "Max",
         "evidence": ["d1:2"]},
        {"query_id": "q3", "question": "Is it so?", "answer": "yes", "evidence": ["d1:3"]}])
    for system in ("A", "B"):
        _jsonl(tmp / f"{system}.jsonl", [
            {"query_id": "q1", "system": system, "ranking": ["m1", "t1", "m2"]},
            {"query_id": "q2", "system": system, "ranking": ["m2", "m1"]},
            {"query_id": "q3", "system": system, "ranking": ["m3", "t2"]}])
    scores = tiap.rescore([str(tmp / "A.jsonl"), str(tmp / "B.jsonl")], tmp / "queries.jsonl",
                          {"A": tmp / "s1/items.jsonl", "B": tmp / "s2/items.jsonl"},
                          measures="nDCG@5", tokenizer="none")
    scores.to_folder(tmp / "rs", inputs={
        "queries": tmp / "queries.jsonl", "items:A": tmp / "s1/items.jsonl",
        "items:B": tmp / "s2/items.jsonl", "run:A": tmp / "A.jsonl", "run:B": tmp / "B.jsonl"})
    return tmp / "rs"


def _files(folder: Path) -> dict[str, object]:
    """Every output below ``folder``: bytes, but manifests without their time, command and
    paths, and label rows without their timing (the run's clock)."""
    out: dict[str, object] = {}
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder).as_posix()
        if not p.is_file() or "sqlite" in rel:
            continue
        if rel.endswith("manifest.json"):
            man = json.loads(p.read_text())
            for key in ("created", "command_line", "inputs", "options"):
                man.pop(key, None)
            for c in man.get("counts") or []:
                if isinstance(c, dict):
                    c.pop("seconds", None)
            out[rel] = man
        elif rel.endswith("labels.jsonl"):
            rows = [json.loads(line) for line in p.read_text().splitlines()]
            for r in rows:
                r.pop("timing")
            out[rel] = rows
        else:
            out[rel] = p.read_bytes()
    return out


def _audit(rs: Path, out: Path, shared: RescoreInputs | None) -> None:
    out.mkdir()
    found = find_cases(rs, out / "cases.jsonl", each=True, preloaded=shared)
    judged = judge_cases(found if shared else out / "cases.jsonl", out / "judged",
                         ["lexical"], cache=out / "v.sqlite")
    graded_audit(rs, [judged if shared else out / "judged/labels.jsonl"], out / "graded",
                 preloaded=shared)


def test_inputs_read_once_give_the_same_files(tmp_path: Path, monkeypatch) -> None:
    rs = _rescored(tmp_path)
    reads: list[str] = []
    real = tiap.memory.store.read_store

    def counted(path, *a, **kw):  # type: ignore[no-untyped-def]
        reads.append(Path(path).parent.name)
        return real(path, *a, **kw)

    monkeypatch.setattr(tiap.memory.store, "read_store", counted)
    _audit(rs, tmp_path / "each", None)
    assert sorted(reads) == ["s1", "s1", "s2", "s2"]  # each step reads both stores
    reads.clear()
    shared = RescoreInputs.load(rs)
    _audit(rs, tmp_path / "once", shared)
    assert sorted(reads) == ["s1", "s2"]  # once, for the three steps
    each, once = _files(tmp_path / "each"), _files(tmp_path / "once")
    assert list(each) == list(once) and each == once
    # the audit found something to compare: 2 systems x 2 targets x (m1 of q1, m2 of q2,
    # m3 of q3; m2 of q1 is past the first contested credit but still contested)
    cases = read_cases(tmp_path / "once/cases.jsonl")
    assert len(cases) == len({c.case_id for c in cases}) >= 8
    assert {c.item_text for c in cases} >= {""}  # m3: a case the lexical judge cannot score


def test_the_cases_file_is_read_when_it_changed(tmp_path: Path) -> None:
    rs = _rescored(tmp_path)
    found = find_cases(rs, tmp_path / "cases.jsonl", each=True)
    assert len(found.cases) == found.written > 1
    write_cases(tmp_path / "cases.jsonl", found.cases[:1])  # changed after find_cases
    got = judge_cases(found, tmp_path / "judged", ["lexical"])
    assert got.n_cases == 1 and got.records[0].case_id == found.cases[0].case_id


def test_the_labels_file_is_read_when_it_changed(tmp_path: Path, monkeypatch) -> None:
    rs = _rescored(tmp_path)
    judged = judge_cases(find_cases(rs, tmp_path / "cases.jsonl", each=True),
                         tmp_path / "judged", ["lexical"])
    assert len(judged.rows) == len(judged.records) > 1
    seen: list[object] = []
    real = steps.read_labels

    def spy(paths, *, held=None):  # type: ignore[no-untyped-def]
        seen.append(sorted(held or {}))
        return real(paths, held=held)

    monkeypatch.setattr(steps, "read_labels", spy)
    labels = tmp_path / "judged/labels.jsonl"
    graded_audit(rs, [judged], tmp_path / "g1")
    assert seen[-1] == [labels]  # unchanged: the rows in memory
    lines = labels.read_text().splitlines(keepends=True)
    labels.write_text("".join(lines[:1]))  # one label left
    graded_audit(rs, [judged], tmp_path / "g2")
    assert seen[-1] == []  # changed: the file is read
    manifest = json.loads((tmp_path / "g2/manifest.json").read_text())
    assert manifest["inputs"]["labels:0"]["bytes"] == len(lines[0].encode())


def test_preloaded_inputs_are_for_their_own_rescoring_only(tmp_path: Path) -> None:
    rs = _rescored(tmp_path)
    shared = RescoreInputs.load(rs)
    with pytest.raises(TiapError, match="files .* or preloaded, not both") as e:
        find_cases(rs, tmp_path / "c.jsonl", runs=[f"A={tmp_path / 'A.jsonl'}"],
                   preloaded=shared)
    assert e.value.problems[0].code == "usage"
    other = tmp_path / "rs2"
    other.mkdir()
    for f in rs.iterdir():
        (other / f.name).write_bytes(f.read_bytes())
    with pytest.raises(TiapError, match="not of this one") as e:
        graded_audit(other, [tmp_path / "l.jsonl"], tmp_path / "g", preloaded=shared)
    assert e.value.problems[0].file == str(other)


def test_held_cases_are_as_read_back() -> None:
    """A case as written and read back: NaN values and empty optional texts become None."""
    plain = Case("A:q1:source", "A", "q1", "source", "m1", "text", "q?", "a", 1,
                 raw_value=0.5, target_value=1.0, raw_support_item_id="t1",
                 raw_support_text="turn", contested=(ContestedItem(1, "m1", "fact"),))
    odd = Case("A:q2:source", "A", "q2", "source", "m2", "text", "q?", "a", 2,
               raw_value=math.nan, target_value=1.0, raw_support_item_id="",
               raw_support_text="", contested=(ContestedItem(2, "m2", ""),))
    assert _as_read(plain) is plain
    back = Case.from_json(json.loads(json.dumps(odd.to_json())))
    got = _as_read(odd)
    assert (got.raw_value, got.raw_support_item_id, got.raw_support_text) == (None, None, None)
    assert got == back


def test_the_remembering_redactor_is_redact() -> None:
    add_secret("sk-preloaded-secret-42")
    rows = [{"a": "key sk-preloaded-secret-42 here", "sk-preloaded-secret-42": [1, 2.5, None],
             "h": "Authorization: Bearer abc123456789", "u": "https://user:pw@host/x",
             "t": ("x-api-key: zzz999", True), "n": {"deep": ["api_key=abc123"]}}] * 3
    red = redactor()
    assert [red(r) for r in rows] == [redact(r) for r in rows]
    assert "sk-preloaded-secret-42" not in json.dumps([red(r) for r in rows])
