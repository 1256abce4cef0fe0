"""``tiap.judge``: contested credits judged in memory, the judging of ``tiap audit judge``
without its folder; labels checked against the lexical rule worked by hand."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

import tiap
from tiap.audit import Case, judge_cases, read_labels, write_cases
from tiap.errors import TiapError


def _case(cid: str, text: str, answer: str) -> Case:
    return Case(cid, "A", f"q{cid}", "canonical", f"m{cid}", text, "What?", answer, 1)


# The lexical judge's label is the share of the answer's content tokens found in the item's
# text: >= 0.75 supports, >= 0.1 partial, else does not support; an answer with no content
# token is unscored. By hand:
CASES = [
    _case("1", "Mel paints sunsets.", "sunsets"),                  # 1/1 -> supports
    _case("2", "Mel went camping by the lake.", "lake mountains"),  # 1/2 -> partial
    _case("3", "Mel has a dog.", "sunsets"),                       # 0/1 -> does_not_support
    _case("4", "Mel has a dog.", "the"),                           # no content token
]
EXPECTED = {"1": "supports", "2": "partial", "3": "does_not_support", "4": "unscored"}


def test_judge_in_memory_gives_the_labels_worked_by_hand(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    labels = tiap.judge(CASES)
    assert {r.case_id: r.label for r in labels.records} == EXPECTED
    assert labels.label_counts("lexical") == {"supports": 1, "partial": 1,
                                              "does_not_support": 1, "unscored": 1}
    assert labels.n_cases == 4 and [s.judge for s in labels.stats] == ["lexical"]
    assert str(labels).splitlines()[-1].split() == ["lexical", "1", "1", "1", "1"]
    # nothing written: not in the working folder, and the run's cache is gone
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tmp"]
    assert list((tmp_path / "tmp").iterdir()) == []


def test_judge_is_the_judging_of_judge_cases(tmp_path: Path) -> None:
    """The same labels from a cases file, from find_cases' result, and from the folder
    step; several judges at once, each counted."""
    path = tmp_path / "cases.jsonl"
    write_cases(path, CASES)
    specs = ["lexical", 'lexical(supports=0.4, name="lenient")']
    mem = tiap.judge(path, specs)
    folder = judge_cases(path, tmp_path / "judged", specs)
    key = [(r.case_id, r.judge, r.label, r.request_key) for r in mem.records]
    assert key == [(r.case_id, r.judge, r.label, r.request_key) for r in folder.records]
    assert key == [(r.case_id, r.judge, r.label, r.request_key)
                   for r in read_labels([tmp_path / "judged" / "labels.jsonl"])]
    # the lenient judge's 0.4 threshold makes case 2's 1/2 coverage a support
    assert mem.label_counts("lenient") == {"supports": 2, "partial": 0,
                                           "does_not_support": 1, "unscored": 1}
    man = json.loads((tmp_path / "judged" / "manifest.json").read_text())
    assert man["counts"] == [s.to_json() | {"seconds": man["counts"][i]["seconds"]}
                             for i, s in enumerate(mem.stats)]

    from tiap.audit.steps import CasesResult

    found = CasesResult(path, 4, 4, [], {})
    assert [r.label for r in tiap.judge(found, limit=2).records] == ["supports", "partial"]


def test_a_kept_cache_serves_the_next_run(tmp_path: Path) -> None:
    cache = tmp_path / "verdicts.sqlite"
    first = tiap.judge(CASES, cache=cache)
    again = tiap.judge(CASES, cache=cache)
    assert (first.stats[0].asked, first.stats[0].cached) == (4, 0)
    assert (again.stats[0].asked, again.stats[0].cached) == (0, 4)
    assert [r.label for r in again.records] == [r.label for r in first.records]


def test_bad_cases_and_judges_are_errors(tmp_path: Path) -> None:
    with pytest.raises(TiapError, match="cases must be Case objects.*got dict") as exc:
        tiap.judge([{"case_id": "1"}])
    assert exc.value.problems[0].code == "invalid-value"
    with pytest.raises(TiapError, match="no cases: nothing to judge"):
        tiap.judge([])
    empty = tmp_path / "none.jsonl"
    empty.write_text("")
    with pytest.raises(TiapError, match="no cases in the file"):
        tiap.judge(empty)
    with pytest.raises(TiapError, match="no judge given") as exc:
        tiap.judge(CASES, [])
    assert exc.value.problems[0].code == "usage"
