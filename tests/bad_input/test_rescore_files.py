"""``tiap rescore`` is a shell over :func:`tiap.scoring.rescore_files` (issue 34): a Python
caller gets the folder the command writes, and every check the command makes, each error
naming the parameter (the command's names the option); runs given as ``[NAME=]PATH`` are
read by :func:`tiap.runs.read_named_run`. Every input is built here in ``tmp_path``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tiap.cli.main import main
from tiap.errors import TiapError
from tiap.runs import read_named_run
from tiap.scoring import rescore_files

ITEMS = [
    {"item_id": "t1", "kind": "raw", "sources": ["u1"], "text": "alpha beta"},
    {"item_id": "t2", "kind": "raw", "sources": ["u2"], "text": "gamma delta"},
    {"item_id": "f1", "kind": "fact", "sources": ["u1"], "text": "alpha fact"},
]
QUERIES = [
    {"query_id": "q1", "question": "alpha?", "answer": "a", "category": "c",
     "evidence": ["u1"]},
    {"query_id": "q2", "question": "gamma?", "answer": "a", "category": "c",
     "evidence": ["u2"]},
]
RUN = [{"query_id": "q1", "system": "A", "ranking": ["f1", "t1"]},
       {"query_id": "q2", "system": "A", "ranking": ["t2"]}]


def _jsonl(path: Path, rows: list[dict]) -> Path:  # type: ignore[type-arg]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture()
def f(tmp_path: Path) -> dict[str, Path]:
    (tmp_path / "store").mkdir()
    return {"items": _jsonl(tmp_path / "store" / "items.jsonl", ITEMS),
            "queries": _jsonl(tmp_path / "queries.jsonl", QUERIES),
            "run": _jsonl(tmp_path / "run.jsonl", RUN),
            "qrels": _write(tmp_path / "gold.qrels", "q1 0 t1 1\nq2 0 t2 1\n")}


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _comparable(folder: Path) -> dict[str, object]:
    """Every file of a rescore folder; of the manifest, what does not depend on when and
    where it was written."""
    files: dict[str, object] = {p.name: p.read_bytes() for p in sorted(folder.iterdir())
                                if p.name != "manifest.json"}
    man = json.loads((folder / "manifest.json").read_text())
    files["manifest"] = {k: man[k] for k in ("options", "outputs", "systems", "dataset")}
    files["inputs"] = {k: v["sha256"] for k, v in man["inputs"].items()}
    return files


def test_python_writes_the_folder_the_command_writes(f, tmp_path, capsys) -> None:
    done = rescore_files([f"B={f['run']}"], tmp_path / "py", items=[f["items"]],
                         queries=f["queries"], targets=["raw", "canonical"], measures="RR@2")
    assert main(["rescore", "--run", f"B={f['run']}", "--items", str(f["items"]),
                 "--queries", str(f["queries"]), "--targets", "raw,canonical",
                 "--measures", "RR@2", "--out", str(tmp_path / "cli")]) == 0
    assert _comparable(tmp_path / "py") == _comparable(tmp_path / "cli")
    # RR@2 under Raw: q1 ranks f1, t1 (its raw evidence item t1 at rank 2: 1/2), q2 ranks t2
    # first (1): mean (0.5 + 1) / 2 = 0.75; under Canonical q1's f1 (derived from u1) is at
    # rank 1 (1) and q2's u2 has no derived item: undefined, left out (n = 1)
    summary = (tmp_path / "py" / "summary.csv").read_text().splitlines()
    assert summary[1:] == ["B,raw,RR@2,2,2,0,0.75,0.75,0.75,0",
                           "B,canonical,RR@2,1,1,0,1.0,1.0,1.0,0"]
    assert done.scores.systems == ("B",) and done.out == tmp_path / "py"
    assert set(done.manifest["inputs"]) == {"queries", "items", "run:B"}
    assert done.run_warnings == {"B": {}} and done.overlays == {}


def test_the_qrels_path_from_python(f, tmp_path) -> None:
    # the qrels file is named by its file (gold); run A ranks t1 at 2 for q1 (1/2) and t2
    # at 1 for q2 (1): RR@2 mean 0.75, as on the lineage path's Raw target
    done = rescore_files(f["run"], tmp_path / "q", qrels=f["qrels"], measures="RR@2")
    assert (tmp_path / "q" / "summary.csv").read_text().splitlines()[1] == \
        "A,gold,RR@2,2,2,0,0.75,0.75,0.75,0"
    assert sorted(done.manifest["inputs"]) == ["qrels:gold", "run:run.jsonl"]
    assert (tmp_path / "q" / "queries.csv").read_text().splitlines()[1:] == [
        "q1,,,false", "q2,,,false"]


# (keyword arguments, the Python error, the command's arguments, the command's error)
CASES = [
    ({"k": 2, "measures": "R@2"},
     "give k or measures, not both (k 2 means measures nDCG@2,R@2,RR@2,Success@2)",
     ["--k", "2", "--measures", "R@2"],
     "give --k or --measures, not both (--k 2 means --measures nDCG@2,R@2,RR@2,Success@2)"),
    ({"measures": "nDCG@0"}, "measures: ", ["--measures", "nDCG@0"], "--measures: "),
    ({"qrels": "QRELS", "targets": ["raw"]}, "qrels replaces items, queries, targets: ",
     ["--qrels", "QRELS", "--targets", "raw"], ("--qrels replaces --items, --queries, "
     "--targets: ")),
    ({"queries": None}, ("missing queries: rescoring needs a store and a queries file "
     "(items, queries), or qrels files (qrels)"), ["--queries", None],
     ("missing --queries: rescoring needs a store and a queries file (--items, --queries), "
     "or qrels files (--qrels)")),
]


@pytest.mark.parametrize("kwargs,says,args,cli_says", CASES, ids=[c[1][:20] for c in CASES])
def test_each_check_is_the_api_s_and_names_what_the_caller_gave(f, tmp_path, capsys, kwargs,
                                                                says, args, cli_says) -> None:
    # the run file does not exist: every check comes before anything is read
    missing_run = tmp_path / "absent.jsonl"
    given = {"items": [f["items"]], "queries": f["queries"],
             **{k: f["qrels"] if v == "QRELS" else v for k, v in kwargs.items()}}
    with pytest.raises(TiapError, match=re.escape(says)):
        rescore_files([missing_run], tmp_path / "py", **given)
    cli = {"--items": str(f["items"]), "--queries": str(f["queries"])}
    for o, v in zip(args[::2], args[1::2], strict=True):
        cli[o] = str(f["qrels"]) if v == "QRELS" else v
    argv = ["rescore", "--run", str(missing_run), "--out", str(tmp_path / "cli"),
            *[x for o, v in cli.items() if v is not None for x in (o, v)]]
    assert main(argv) == 2
    assert cli_says in capsys.readouterr().err
    assert not (tmp_path / "py").exists() and not (tmp_path / "cli").exists()


def test_store_and_qrels_names_are_unique(f, tmp_path) -> None:
    with pytest.raises(TiapError, match="two stores given for every run"):
        rescore_files([f["run"]], tmp_path / "o", items=[f["items"], f["items"]],
                      queries=f["queries"])
    with pytest.raises(TiapError, match="two qrels files are named 'gold'"):
        rescore_files([f["run"]], tmp_path / "o", qrels=[f["qrels"], f"gold={f['qrels']}"])
    assert not (tmp_path / "o").exists()


def test_an_overlay_s_unknown_queries_are_counted_for_python_callers(f, tmp_path) -> None:
    overlay = _jsonl(tmp_path / "overlay.jsonl", [{"query_id": "q1", "evidence": ["u2"]},
                                                  {"query_id": "q9", "evidence": ["u1"]}])
    done = rescore_files([f["run"]], tmp_path / "o", items=f["items"], queries=f["queries"],
                         overlays=[f"fix={overlay}"], measures="RR@2")
    # q1's evidence changes (u1 -> u2), q9 is not in the queries file
    assert done.overlays == {"fix": {"rows": 2, "changed_queries": 1,
                                     "not_in_queries_file": 1, "examples": ["q9"]}}
    assert done.manifest["options"]["overlays"] == done.overlays
    assert done.overlay_findings() == [(
        "overlay_unknown_query", ("overlay fix: 1 of its 2 queries are not in the queries file "
        f"and change nothing (e.g. q9; counted in {tmp_path / 'o' / 'manifest.json'})"))]


def test_named_runs_rename_or_pick(tmp_path) -> None:
    two = _write(tmp_path / "two.trec", "q1 Q0 a 1 2.0 bm25\nq1 Q0 b 1 2.0 dense\n")
    one = _write(tmp_path / "one.trec", "q1 Q0 a 1 2.0 run1\n")
    for columnar in (False, True):
        assert [r.system for r in read_named_run(two, columnar=columnar)] == ["bm25", "dense"]
        assert [r.system for r in read_named_run(f"dense={two}", columnar=columnar)] == [
            "dense"]
        renamed = read_named_run(f"mine={one}", columnar=columnar)
        assert [r.system for r in renamed] == ["mine"]
        if not columnar:
            assert [x.system for x in renamed[0].rankings] == ["mine"]
        with pytest.raises(TiapError) as exc:
            read_named_run(f"splade={two}", columnar=columnar, option="--run")
        (problem,) = exc.value.problems
        assert problem.file == str(two) and problem.message == (
            "splade=: the file holds 2 systems (bm25, dense); name one of them")
    with pytest.raises(TiapError, match=r"^--run '=x': no such file"):
        read_named_run("=x", option="--run")
