"""The audit's label readers accept nothing that cannot be right (issue 33, item 3).

``audit graded --judges NAME`` with a judge that no label names, or an empty labels file,
reported 100% survival (every unjudged member kept, the binary target's nDCG) and exit 0;
``audit agreement --judges NAME`` or a human CSV that matches no case reported as if all
were well. One check (:func:`tiap.audit.labels.select_judges`) now runs before any figure
is computed: labels exist, every judge asked for is named by a label, every judge taken
gives a scored label; human labels must meet the judges' cases (those that do not are
counted, ``warning[unmatched_label]``), and graded labels must grade a member of a target.

Every input is built here: a store of four items, two queries and one run, rescored, cases
found and judged by the offline ``lexical`` judge through the CLI (the real flow).

- q1 "Where did Caroline move?" (evidence u1), ranking f1 t2 t1; q2 "What does Melanie do?"
  (evidence u2), ranking o2 t1 t2. Raw: {t1} and {t2}; Source and Canonical add the fact f1
  (from u1) and the observation o2 (from u2).
- Contested credits, one case per credit (``--each``): f1 and o2, each under Source and
  Canonical: 4 cases, 2 labelled items (toy, q1, f1) and (toy, q2, o2).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from tiap.audit import LabelRecord, agreement, graded_rescore, item_relevance, read_labels
from tiap.audit.labels import write_labels
from tiap.cli.main import main
from tiap.datasets.queryfile import write_queries
from tiap.datasets.records import Query
from tiap.errors import TiapError
from tiap.memory.store import Item, Store, write_items
from tiap.runs import Ranking, Run, write_jsonl_run

ITEMS = [Item("t1", "raw", ("u1",), text="Caroline: I moved to Paris last year!"),
         Item("t2", "raw", ("u2",), text="Melanie: pottery class was fun."),
         Item("f1", "fact", ("u1",), text="Caroline moved to Paris in 2022."),
         Item("o2", "observation", ("u2",), text="Melanie likes pottery.")]
QUERIES = [Query("q1", "c", "Where did Caroline move?", "Paris", "single-hop", ("u1",)),
           Query("q2", "c", "What does Melanie do?", "pottery", "single-hop", ("u2",))]
RUN = Run("sys", (Ranking("q1", "sys", ("f1", "t2", "t1")),
                  Ranking("q2", "sys", ("o2", "t1", "t2"))))


@pytest.fixture(scope="module")
def audit(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("audit")
    write_items(root / "items.jsonl", ITEMS, store="toy")
    write_queries(root / "queries.jsonl", QUERIES)
    write_jsonl_run(root / "run.jsonl", [RUN])
    assert main(["rescore", "--run", str(root / "run.jsonl"), "--items",
                 str(root / "items.jsonl"), "--queries", str(root / "queries.jsonl"),
                 "--measures", "nDCG@3", "--out", str(root / "rs")]) == 0
    assert main(["audit", "cases", str(root / "rs"), "--each",
                 "--out", str(root / "cases.jsonl")]) == 0
    assert main(["audit", "judge", str(root / "cases.jsonl"), "--judge", "lexical",
                 "--out", str(root / "judged")]) == 0
    labels = read_labels(root / "judged" / "labels.jsonl")
    assert len(labels) == 4 and {r.judge for r in labels} == {"lexical"}
    assert {(r.store, r.query_id, r.item_id) for r in labels} == {("toy", "q1", "f1"),
                                                                  ("toy", "q2", "o2")}
    assert all(r.scored for r in labels)
    return {"root": root, "rs": root / "rs", "labels": root / "judged" / "labels.jsonl",
            "records": labels}


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    capsys.readouterr()
    rc = main(args)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return rc, " ".join(err.split())  # rich wraps long lines


def _graded(audit: dict[str, Any], out: Path, *extra: str) -> list[str]:
    return ["audit", "graded", str(audit["rs"]), "--out", str(out), *extra]


def _relabel(records: list[LabelRecord], **change: Any) -> list[LabelRecord]:
    return [LabelRecord(**{**r.__dict__, "origin": None, **change}) for r in records]


# -- audit graded ----------------------------------------------------------------------------


def test_graded_with_good_labels_has_no_warning(audit: dict[str, Any], tmp_path: Path,
                                                capsys) -> None:
    rc, err = _run(_graded(audit, tmp_path / "g", "--labels", str(audit["labels"])), capsys)
    assert rc == 0 and "warning" not in err
    assert "warnings" not in json.loads((tmp_path / "g" / "manifest.json").read_text())


@pytest.mark.parametrize(("judges", "hint"), [("nosuch", ""),
                                              ("lexcal", " (did you mean 'lexical'?)")])
def test_graded_judge_no_label_names(audit: dict[str, Any], tmp_path: Path, capsys,
                                     judges: str, hint: str) -> None:
    rc, err = _run(_graded(audit, tmp_path / "g", "--labels", str(audit["labels"]),
                           "--judges", judges), capsys)
    assert rc == 2, err
    assert err == (f"error[invalid-value]: {audit['labels']}: judge {judges!r} is asked for, "
                   f"but no label names it{hint}; the judges of the labels: lexical "
                   "(4 labels)")
    assert not (tmp_path / "g").exists()


def test_graded_empty_labels_file(audit: dict[str, Any], tmp_path: Path, capsys) -> None:
    (tmp_path / "empty.jsonl").write_text("")
    for labels in (["--labels", str(tmp_path / "empty.jsonl")],
                   ["--labels", str(audit["labels"]), "--labels", str(tmp_path / "empty.jsonl")]):
        rc, err = _run(_graded(audit, tmp_path / "g", *labels), capsys)
        assert rc == 2, err
        assert err.startswith(f"error[input]: {tmp_path / 'empty.jsonl'}: the labels file "
                              "holds no label"), err
        assert not (tmp_path / "g").exists()


def test_graded_judge_whose_every_label_is_unscored(audit: dict[str, Any], tmp_path: Path,
                                                   capsys) -> None:
    dead = tmp_path / "dead.jsonl"
    write_labels(dead, _relabel(audit["records"], judge="dead", label="unscored",
                                reason="HTTP 500 after 4 retries"))
    both = ["--labels", str(audit["labels"]), "--labels", str(dead)]
    for labels in (["--labels", str(dead)], both):
        rc, err = _run(_graded(audit, tmp_path / "g", *labels), capsys)
        assert rc == 2, err
        assert err.startswith(f"error[input]: {dead}: judge 'dead' gives no scored label: its "
                              "4 labels, all unscored (4 x HTTP 500 after 4 retries)"), err
        assert not (tmp_path / "g").exists()
    # left out by name, the other judge grades as it does alone
    assert _run(_graded(audit, tmp_path / "g", *both, "--judges", "lexical"), capsys)[0] == 0
    assert _run(_graded(audit, tmp_path / "g1", "--labels", str(audit["labels"])),
                capsys)[0] == 0
    assert ((tmp_path / "g" / "graded_summary.csv").read_text()
            == (tmp_path / "g1" / "graded_summary.csv").read_text())


def test_graded_labels_of_another_audit(audit: dict[str, Any], tmp_path: Path,
                                        capsys) -> None:
    other = tmp_path / "other.jsonl"
    write_labels(other, _relabel(audit["records"], store="other"))
    rc, err = _run(_graded(audit, tmp_path / "g", "--labels", str(other)), capsys)
    assert rc == 2, err
    # 4 labels of 2 items (each judged under Source and Canonical), none of store toy
    assert err == (f"error[invalid-value]: {other}:1: none of the 2 labelled items is a "
                   "derived member of a target (source, canonical) of these runs, so the "
                   "labels would grade nothing (first: store other, query q1, item f1); are "
                   "they of another audit? The labels' stores: other; the runs': toy"), err
    assert not (tmp_path / "g").exists()


def test_graded_labels_that_grade_nothing_are_counted(audit: dict[str, Any], tmp_path: Path,
                                                      capsys) -> None:
    """The judged labels and two more: (toy, q1, t2) is an item of the store but no member
    of q1's targets (t2 derives from u2; q1's evidence is u1), (toy, q2, x) no item at all.
    4 labelled items, 2 of them grade nothing."""
    extra = [LabelRecord(case_id=f"extra:{i}", judge="lexical", label="supports",
                         store="toy", query_id=q, item_id=item)
             for i, (q, item) in enumerate([("q1", "t2"), ("q2", "x")])]
    labels = tmp_path / "labels.jsonl"
    write_labels(labels, [*_relabel(audit["records"]), *extra])
    rc, err = _run(_graded(audit, tmp_path / "g", "--labels", str(labels)), capsys)
    assert rc == 0, err
    man = json.loads((tmp_path / "g" / "manifest.json").read_text())
    w = man["warnings"]["unmatched_label"]
    assert w["count"] == 2 and "(2 of 4 labelled items)" in w["message"]
    assert w["examples"] == [f"{labels}:5: store toy, query q1, item t2 grades no member",
                             f"{labels}:6: store toy, query q2, item x grades no member"]
    assert (f"warning[unmatched_label]: {w['message']} (2, counted in "
            f"{tmp_path / 'g' / 'manifest.json'}); first: {w['examples'][0]}") in err
    # and nothing else changed: the summary is the judged labels' alone
    assert _run(_graded(audit, tmp_path / "g1", "--labels", str(audit["labels"])),
                capsys)[0] == 0
    assert ((tmp_path / "g" / "graded_summary.csv").read_text()
            == (tmp_path / "g1" / "graded_summary.csv").read_text())


# -- audit agreement -------------------------------------------------------------------------


def _agreement(out: Path, *args: str) -> list[str]:
    return ["audit", "agreement", *args, "--out", str(out)]


def test_agreement_judge_no_label_names(audit: dict[str, Any], tmp_path: Path,
                                        capsys) -> None:
    rc, err = _run(_agreement(tmp_path / "ag", str(audit["labels"]), "--judges", "nosuch"),
                   capsys)
    assert rc == 2, err
    assert err == (f"error[invalid-value]: {audit['labels']}: judge 'nosuch' is asked for, "
                   "but no label names it; the judges of the labels: lexical (4 labels)")
    assert not (tmp_path / "ag").exists()


def test_agreement_empty_labels_file(tmp_path: Path, capsys) -> None:
    (tmp_path / "empty.jsonl").write_text("\n")
    rc, err = _run(_agreement(tmp_path / "ag", str(tmp_path / "empty.jsonl")), capsys)
    assert rc == 2 and err.startswith(f"error[input]: {tmp_path / 'empty.jsonl'}: the labels "
                                      "file holds no label"), err
    assert not (tmp_path / "ag").exists()


def test_agreement_judge_whose_every_label_is_unscored(audit: dict[str, Any], tmp_path: Path,
                                                      capsys) -> None:
    dead = tmp_path / "dead.jsonl"
    write_labels(dead, _relabel(audit["records"], judge="dead", label="unscored",
                                reason="no reference answer"))
    rc, err = _run(_agreement(tmp_path / "ag", str(audit["labels"]), str(dead)), capsys)
    assert rc == 2, err
    assert err.startswith(f"error[input]: {dead}: judge 'dead' gives no scored label"), err
    assert not (tmp_path / "ag").exists()


def test_agreement_human_csv_that_matches_no_case(audit: dict[str, Any], tmp_path: Path,
                                                  capsys) -> None:
    human = tmp_path / "human.csv"
    human.write_text("case_id,label\nnope:1,supports\nnope:2,partial\n")
    rc, err = _run(_agreement(tmp_path / "ag", str(audit["labels"]), "--human", str(human)),
                   capsys)
    assert rc == 2, err
    assert err.startswith(f"error[invalid-value]: {human}: human rater 'human:human' labels "
                          "no case that a judge labelled, so its agreement would be computed "
                          "over nothing: its 2 labels name cases such as nope:1, nope:2; the "
                          f"judges' are such as {audit['records'][0].case_id}"), err
    assert not (tmp_path / "ag").exists()


def test_agreement_human_labels_of_no_case_are_counted(audit: dict[str, Any], tmp_path: Path,
                                                       capsys) -> None:
    case = audit["records"][0]
    human = tmp_path / "human.csv"
    human.write_text(f"case_id,label\n{case.case_id},{case.label}\nnope:1,partial\n")
    rc, err = _run(_agreement(tmp_path / "ag", str(audit["labels"]), "--human", str(human)),
                   capsys)
    assert rc == 0, err
    w = json.loads((tmp_path / "ag" / "manifest.json").read_text())["warnings"]
    assert w == {"unmatched_label": {
        "message": "human labels name cases that no judge labelled; they are left out (1 of 2 "
                   "human labels)",
        "count": 1, "examples": [f"{human}:3: case 'nope:1' has no judge's label"]}}
    assert "warning[unmatched_label]: human labels name cases" in err
    with open(tmp_path / "ag" / "human.csv", newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["target"] == "all"
                and r["scheme"] == "three_class"]
    # one judgment in common, and the human agrees with the judge on it
    assert [(r["rater"], r["n"], r["agreement"]) for r in rows] == [("lexical", "1", "1.0")]


def test_agreement_human_csv_with_no_row_or_no_label(audit: dict[str, Any], tmp_path: Path,
                                                     capsys) -> None:
    human = tmp_path / "human.csv"
    human.write_text("case_id,label\n")
    rc, err = _run(_agreement(tmp_path / "ag", str(audit["labels"]), "--human", str(human)),
                   capsys)
    assert rc == 2 and err == f"error[input]: {human}: the human-label file holds no label row"
    human.write_text(f"case_id,label\n{audit['records'][0].case_id},\n")
    rc, err = _run(_agreement(tmp_path / "ag", str(audit["labels"]), "--human", str(human)),
                   capsys)
    assert rc == 2 and err.startswith(f"error[input]: {human}: human rater 'human:human' gives "
                                      "no scored label: its 1 label, all unscored (1 x no "
                                      "label given)"), err
    assert not (tmp_path / "ag").exists()


# -- the Python API: the same checks ---------------------------------------------------------


def test_the_api_checks_the_same(audit: dict[str, Any]) -> None:
    from tiap.audit.labels import select_judges

    recs = audit["records"]
    with pytest.raises(TiapError, match="no labels") as info:
        item_relevance([])
    assert info.value.code == "input"
    with pytest.raises(TiapError, match="no labels"):
        agreement([])
    for call in (lambda: item_relevance(recs, judges=["nosuch"]),
                 lambda: agreement(recs, raters=["nosuch"]),
                 lambda: select_judges(recs, ["lexical", "lexical"])):
        with pytest.raises(TiapError) as info:
            call()
        assert info.value.code == "invalid-value"
    assert "asked for twice (items 1 and 2)" in str(info.value)
    human = [LabelRecord(case_id="nope", judge="human:h", label="supports")]
    with pytest.raises(TiapError, match="labels no case that a judge labelled"):
        agreement(recs, human=human)
    rel = item_relevance(_relabel(recs, store="other"))
    assert rel == {("other", "q1", "f1"): rel[("other", "q1", "f1")],
                   ("other", "q2", "o2"): rel[("other", "q2", "o2")]}
    with pytest.raises(TiapError, match="none of the 2 labelled items") as info:
        graded_rescore([RUN], QUERIES, {None: Store("toy", tuple(ITEMS))}, rel, k=3)
    assert info.value.code == "invalid-value"
    # no labels at all is the caller's choice here: the binary target, and no warning
    assert graded_rescore([RUN], QUERIES, {None: Store("toy", tuple(ITEMS))}, {},
                          k=3).warnings == {}
