"""Issue 33: the step cache of ``tiap audit-run`` trusts no file it wrote.

A step is up to date only when its record (``.steps/<step>.json``) matches on all of: its
settings, TIAP's code, the sha256 of every file of an earlier step it reads, and the sha256
of every file it wrote. A file deleted or edited since makes its step run again, with a line
that names the file; a step whose input files then differ runs again too. Every test
deletes or edits one file of a small real run, reruns, and checks the line, which steps ran
again, and that the outputs equal the clean run's bytes.

The run: LoCoMo conv-26, its first 3 sessions (25 queries), stores f1 and native, BM25 to
depth 10, the offline lexical audit, Stage III with 200 resamples and the report (when the
report extra is installed): every kind of step, in a few seconds.

The outputs compared byte for byte are the data files: every table (``.csv``), qrels, TREC
run, store, queries file, case file, trace and report table. Left out are the files that
record when they were written and so differ between any two clean runs: the manifests
(``created``, a store's ``elapsed_seconds``), the judge's labels (each verdict's timing),
the verdict cache, the report page, the target card and its appendix (they quote the
manifests) and the step records (their ``seconds``). A trace's first line names its store
manifest's sha256, so where the store was built again only its rankings are compared.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tiap import provenance
from tiap.cli.main import main
from tiap.pipeline import load_config, run_pipeline

CONFIG = """\
name = "small"
dataset = "locomo"
retrievers = ["bm25"]
k = 10
targets = ["raw", "source", "canonical"]
measures = ["nDCG@10", "R@10"]
credit = "group"
collections = ["conv-26"]
sessions = 3
resamples = 200
audit = ["lexical"]

[[stores]]
name = "f1"
parser = "heuristic"
max_facts = 1

[[stores]]
name = "native"
parser = "native"
"""

#: Every step of the run, in the order it runs.
ORDER = ["queries", "store-f1", "store-native", "retrieve-f1-bm25", "retrieve-native-bm25",
         "rescore", "audit", "sensitivity", "report"]


def _tree(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (relative path -> bytes)."""
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _mtimes(folder: Path) -> dict[str, int]:
    return {p.relative_to(folder).as_posix(): p.stat().st_mtime_ns
            for p in folder.rglob("*") if p.is_file()}


def _restore(folder: Path, tree: dict[str, bytes], mtimes: dict[str, int]) -> None:
    """Put ``folder`` back to the clean run for the next test: every file's bytes, and its
    modification time (so that a check by mtime alone would see no change either)."""
    shutil.rmtree(folder, ignore_errors=True)
    for rel, data in tree.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        os.utime(path, ns=(mtimes[rel], mtimes[rel]))


def _data(tree: dict[str, bytes], *, rankings_only: bool = False) -> dict[str, bytes]:
    """The data files of a run (the module docstring says which and why)."""
    out = {}
    for rel, data in tree.items():
        name = rel.rsplit("/", 1)[-1]
        if rel.startswith(".steps/") or name in ("target_card.md", "target_card_appendix.md"):
            continue
        if name.endswith((".csv", ".qrels", ".trec", ".md", ".tex")) or name in (
                "items.jsonl", "queries.jsonl", "cases.jsonl"):
            out[rel] = data
        elif rel.startswith("runs/") and name.endswith(".jsonl"):
            out[rel] = data.split(b"\n", 1)[1] if rankings_only else data
    return out


class _Later(datetime):
    """A clock that says 2000-01-01: a manifest written again in this process differs from
    the clean run's, so whether a later step must run again does not depend on timing."""

    @classmethod
    def now(cls, tz=None):  # type: ignore[no-untyped-def, override]
        return datetime(2000, 1, 1, tzinfo=tz or UTC)


@pytest.fixture(scope="module")
def clean(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    base = tmp_path_factory.mktemp("step-outputs")
    (base / "small.toml").write_text(CONFIG, encoding="utf-8")
    out = base / "out"
    lines: list[str] = []
    res = run_pipeline(load_config(base / "small.toml"), out, data=data_dir, log=lines.append)
    steps = [s for s in ORDER if s in res.timings]
    assert steps == ORDER[:len(steps)] and len(steps) >= len(ORDER) - 1  # report: an extra
    return {"config": base / "small.toml", "out": out, "root": out / "small",
            "tree": _tree(out / "small"), "mtimes": _mtimes(out / "small"), "steps": steps,
            "data": data_dir}


@pytest.fixture()
def rerun(clean: dict, monkeypatch: pytest.MonkeyPatch):
    """Restore the clean run, then ``rerun()`` runs the pipeline again: (log lines, the
    steps run again)."""
    _restore(clean["root"], clean["tree"], clean["mtimes"])
    monkeypatch.setattr(provenance, "datetime", _Later)

    def again(**options) -> tuple[list[str], list[str]]:
        lines: list[str] = []
        res = run_pipeline(load_config(clean["config"], **options), clean["out"],
                           data=clean["data"], log=lines.append)
        assert set(res.timings) | set(res.skipped) == set(clean["steps"])
        return lines, [s for s in clean["steps"] if s in res.timings]

    return again


def _edit_ranking(data: bytes) -> bytes:
    """The trace with the first two items of its first ranking swapped (a hand edit)."""
    lines = data.split(b"\n")
    row = json.loads(lines[1])
    row["ranking"][:2] = row["ranking"][1::-1]
    lines[1] = json.dumps(row, separators=(",", ":")).encode()
    return b"\n".join(lines)


# (file, what is done to it, the step that wrote it, the steps run again): a step whose
# outputs come out the same bytes leaves the later steps up to date (queries, a trace, a
# TREC run, Stage III's tables, whose manifest records no time); one whose manifest records
# when it was written (the clock above) makes every step that reads it run again
CASES = [
    ("queries.jsonl", "edit", "queries", ["queries"]),
    ("stores/f1/items.jsonl", "edit", "store-f1",
     ["store-f1", "retrieve-f1-bm25", "rescore", "audit", "sensitivity", "report"]),
    ("runs/f1-bm25.jsonl", "ranking", "retrieve-f1-bm25", ["retrieve-f1-bm25"]),
    ("runs/native-bm25.trec", "delete", "retrieve-native-bm25", ["retrieve-native-bm25"]),
    ("rescore/pairwise.csv", "delete", "rescore", ["rescore", "audit", "sensitivity", "report"]),
    ("rescore/per_query.csv", "edit", "rescore", ["rescore", "audit", "sensitivity", "report"]),
    ("audit/graded/support_summary.csv", "edit", "audit", ["audit"]),
    ("sensitivity/system_means.csv", "edit", "sensitivity", ["sensitivity"]),
    ("report/index.html", "delete", "report", ["report"]),
]


@pytest.mark.parametrize(("rel", "change", "owner", "again"), CASES,
                         ids=[f"{c[1]}-{c[0]}" for c in CASES])
def test_a_deleted_or_edited_output_is_recomputed(clean: dict, rerun, rel: str, change: str,
                                                   owner: str, again: list[str]) -> None:
    if owner not in clean["steps"]:
        pytest.skip("the report extra is not installed")
    path = clean["root"] / rel
    if change == "delete":
        path.unlink()
    elif change == "ranking":
        path.write_bytes(_edit_ranking(path.read_bytes()))
    else:  # one byte more at the end: nothing else differs
        path.write_bytes(path.read_bytes() + b"\n")
    assert path.exists() == (change != "delete")
    lines, ran = rerun()
    what = "was deleted" if change == "delete" else "changed"
    assert f"{owner}: recomputed: {rel} {what} since the step wrote it" in lines
    if owner == "audit":  # its manifests are written by subprocesses, on the real clock:
        # whether the report reads other bytes then depends on the second it ran in
        assert ran in (["audit"], ["audit", "report"])
    else:
        assert ran == [s for s in again if s in clean["steps"]]
    for step in ran:
        if step != owner:  # a later step says which of its input files changed
            assert any(ln.startswith(f"{step}: recomputed: its input") for ln in lines), step
    now = _tree(clean["root"])
    assert sorted(now) == sorted(clean["tree"])
    rankings_only = "store-f1" in ran  # a trace's header names its store's manifest sha256
    assert _data(now, rankings_only=rankings_only) == _data(clean["tree"],
                                                            rankings_only=rankings_only)
    if change == "ranking":  # the retriever's own trace again, header and all
        assert now[rel] == clean["tree"][rel]


def test_nothing_changed_or_only_touched_recomputes_nothing(clean: dict, rerun) -> None:
    lines, ran = rerun()
    assert ran == [] and not [ln for ln in lines if "recomputed" in ln]
    for rel in ("runs/f1-bm25.jsonl", "rescore/pairwise.csv", "sensitivity/system_means.csv"):
        (clean["root"] / rel).touch()  # a new mtime, the same bytes
    lines, ran = rerun()
    assert ran == []
    assert _tree(clean["root"]) == clean["tree"]


def test_the_record_holds_the_sha256_of_every_file_the_step_wrote(clean: dict) -> None:
    tree = clean["tree"]

    def record(step: str) -> dict:
        return json.loads(tree[f".steps/{step}.json"])

    for step, folder in (("rescore", "rescore/"), ("sensitivity", "sensitivity/"),
                         ("audit", "audit/")):
        wrote = {rel: hashlib.sha256(data).hexdigest() for rel, data in tree.items()
                 if rel.startswith(folder) and not rel.startswith("audit/verdicts.sqlite")}
        assert record(step)["outputs"] == wrote, step
    assert "audit/judged/labels.jsonl" in record("audit")["outputs"]
    assert "rescore/pairwise.csv" in record("rescore")["outputs"]
    assert record("retrieve-f1-bm25")["outputs"] == {
        rel: hashlib.sha256(tree[rel]).hexdigest()
        for rel in ("runs/f1-bm25.jsonl", "runs/f1-bm25.trec")}
    # what a step read: the outputs of the steps before it, as they recorded them
    assert record("rescore")["spec"]["needs"]["retrieve-f1-bm25"] == record(
        "retrieve-f1-bm25")["outputs"]
    assert record("sensitivity")["spec"]["needs"]["rescore"] == record("rescore")["outputs"]


def test_changed_settings_or_record_are_named(clean: dict, rerun) -> None:
    lines, ran = rerun(resamples=300)
    assert ran[0] == "sensitivity"
    assert "sensitivity: recomputed: its settings changed (resamples)" in lines
    _restore(clean["root"], clean["tree"], clean["mtimes"])
    (clean["root"] / ".steps" / "sensitivity.json").write_text("{", encoding="utf-8")
    lines, ran = rerun()
    assert ran == ["sensitivity"]  # the same tables and manifest: the report stands
    assert ("sensitivity: recomputed: its record .steps/sensitivity.json is unreadable or "
            "from an older TIAP") in lines
    # changed code: tests/test_pipeline.py


def test_audit_run_says_which_file_changed(clean: dict, rerun, capsys) -> None:
    (clean["root"] / "sensitivity" / "system_means.csv").unlink()
    rc = main(["audit-run", str(clean["config"]), "--out", str(clean["out"]), "--data",
               str(clean["data"])])
    assert rc == 0
    err = capsys.readouterr().err
    assert ("  sensitivity: recomputed: sensitivity/system_means.csv was deleted since the "
            "step wrote it") in err
    assert "every step was up to date" not in err
    assert _tree(clean["root"])["sensitivity/system_means.csv"] == \
        clean["tree"]["sensitivity/system_means.csv"]
