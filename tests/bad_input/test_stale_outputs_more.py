"""Kind 3, the other commands: every output folder describes exactly one run.

``tiap import *``, ``mem0-run``, ``build-store``, ``audit judge``, ``audit graded``,
``audit agreement`` and ``datasets export`` build their folder beside ``--out`` and swap it in
(:func:`tiap.io.output_folder`): a rerun with other inputs leaves exactly the second run's
files; a folder of the user's (or of another command) is refused untouched, exit 2,
``error[stale-output]`` naming the folder and ``--force``; resumable state (the verdict
cache, a parser cache inside a store, Mem0's stores) survives the swap. Every input is
built here in ``tmp_path``; real data is only read (``--data``).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from tiap.audit.cases import Case
from tiap.cli.main import main
from tiap.errors import TiapError


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _tree(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (relative path -> bytes)."""
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _hidden(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if p.name.startswith("."))


def _mine(tmp_path: Path) -> tuple[Path, dict[str, bytes]]:
    """A folder of the user's: a file and a file in a subfolder, no manifest."""
    out = tmp_path / "mine"
    (out / "sub").mkdir(parents=True)
    (out / "thesis.tex").write_text("chapter 1\n")
    (out / "sub" / "data.csv").write_text("1,2\n")
    return out, _tree(out)


def _refused(capsys: pytest.CaptureFixture[str], folder: Path, rc: int) -> str:
    err = capsys.readouterr().err
    assert rc == 2, err
    lines = [ln for ln in err.splitlines() if ln.startswith("error")]
    assert lines and lines[0].startswith(f"error[stale-output]: {folder}"), err
    assert "--force" in err and "Traceback" not in err
    return err


def _listed(out: Path) -> set[str]:
    """manifest.json and what its ``outputs`` list (top-level names)."""
    man = json.loads((out / "manifest.json").read_text())
    return {"manifest.json", *(o.split("/")[0] for o in man["outputs"])}


# -- tiap import -----------------------------------------------------------------------------


def _mem0_results(path: Path, queries: list[str]) -> Path:
    return _jsonl(path, [{"query_id": q, "evidence": ["u:1"], "results": [
        {"id": f"m-{q}", "memory": "x", "metadata": {"source_ids": ["u:1"]}, "score": 0.5}]}
        for q in queries])


def _generic(path: Path, query: str) -> Path:
    return _jsonl(path, [
        {"type": "item", "item_id": "t1", "kind": "raw", "sources": ["u1"]},
        {"type": "query", "query_id": query, "question": "?", "evidence": ["u1"]},
        {"type": "ranking", "query_id": query, "ranked": ["t1"]}])


def test_import_rerun_holds_only_the_second_import(tmp_path: Path, capsys) -> None:
    out = tmp_path / "imp"
    first = _mem0_results(tmp_path / "a.jsonl", ["q1", "q2"])
    assert main(["import", "mem0", str(first), "--out", str(out)]) == 0
    assert set(_tree(out)) == {"items.jsonl", "queries.jsonl", "run.jsonl", "mem0_report.json",
                               "lineage_coverage.json", "manifest.json"} == _listed(out)
    # an import of another system into the same --out replaces it whole: no mem0_report.json
    assert main(["import", "generic", str(_generic(tmp_path / "g.jsonl", "q9")),
                 "--out", str(out)]) == 0
    assert set(_tree(out)) == {"items.jsonl", "queries.jsonl", "run.jsonl",
                               "lineage_coverage.json", "manifest.json"} == _listed(out)
    assert [json.loads(ln)["query_id"] for ln in
            (out / "queries.jsonl").read_text().splitlines()] == ["q9"]
    # and back: the second mem0 import holds its one query only
    second = _mem0_results(tmp_path / "b.jsonl", ["q3"])
    assert main(["import", "mem0", str(second), "--out", str(out)]) == 0
    man = json.loads((out / "manifest.json").read_text())
    assert man["command"] == "import mem0" and man["inputs"][0]["path"] == str(second)
    assert [json.loads(ln)["query_id"] for ln in
            (out / "run.jsonl").read_text().splitlines()] == ["q3"]
    assert _hidden(tmp_path) == []


@pytest.mark.parametrize("system", ["mem0", "generic", "mtel-trace"])
def test_import_refuses_a_folder_of_the_users(system: str, tmp_path: Path, capsys) -> None:
    out, before = _mine(tmp_path)
    path = (_mem0_results(tmp_path / "a.jsonl", ["q1"]) if system == "mem0"
            else _generic(tmp_path / "g.jsonl", "q1"))  # refused before the trace is read
    err = _refused(capsys, out, main(["import", system, str(path), "--out", str(out)]))
    assert "holds no manifest of `tiap import`" in err
    assert _tree(out) == before and _hidden(tmp_path) == []
    if system != "mtel-trace":
        assert main(["import", system, str(path), "--out", str(out), "--force"]) == 0
        assert set(_tree(out)) == _listed(out)


def test_import_refuses_another_commands_output_and_a_file_beside(tmp_path: Path,
                                                                  capsys) -> None:
    out = tmp_path / "imp"
    res = _mem0_results(tmp_path / "a.jsonl", ["q1"])
    assert main(["import", "mem0", str(res), "--out", str(out)]) == 0
    (out / "my_notes.txt").write_text("keep me\n")
    capsys.readouterr()
    before = _tree(out)
    err = _refused(capsys, out, main(["import", "mem0", str(res), "--out", str(out)]))
    assert "'my_notes.txt'" in err and _tree(out) == before
    rescored = tmp_path / "r"
    rescored.mkdir()
    (rescored / "manifest.json").write_text(json.dumps({"command": "rescore", "outputs": []}))
    err = _refused(capsys, rescored, main(["import", "mem0", str(res), "--out", str(rescored)]))
    assert "holds the output of `tiap rescore`, not of `tiap import`" in err


def test_import_of_a_python_caller_is_forced_through_the_context(tmp_path: Path) -> None:
    """An importer that does not take ``force`` (``fn(path, out_dir, ...)``) gets it from
    :func:`tiap.importers.forced`."""
    from tiap.importers import forced
    from tiap.importers.generic import import_generic

    out, _ = _mine(tmp_path)
    path = _generic(tmp_path / "g.jsonl", "q1")
    with pytest.raises(TiapError) as err:
        import_generic(path, out)
    assert err.value.problems[0].code == "stale-output"
    with forced():
        import_generic(path, out)
    assert set(_tree(out)) == _listed(out)


# -- build-store -----------------------------------------------------------------------------


def _build(data_dir: Path, out: Path, collections: str, *extra: str) -> int:
    return main(["build-store", "locomo", "--parser", "native", "--collections", collections,
                 "--out", str(out), "--data", str(data_dir), *extra])


def test_build_store_rerun_holds_only_the_second_build(data_dir: Path, tmp_path: Path,
                                                       capsys) -> None:
    out = tmp_path / "store"
    assert _build(data_dir, out, "conv-26") == 0
    assert set(_tree(out)) == {"items.jsonl", "manifest.json"}
    (out / "items.jsonl.bak").write_text("not listed\n")  # refused: a file of the user's
    capsys.readouterr()
    before = _tree(out)
    assert "'items.jsonl.bak'" in _refused(capsys, out, _build(data_dir, out, "conv-30"))
    assert _tree(out) == before
    (out / "items.jsonl.bak").unlink()
    assert _build(data_dir, out, "conv-30") == 0
    man = json.loads((out / "manifest.json").read_text())
    assert man["dataset"]["collections"] == ["conv-30"]
    assert {json.loads(ln)["collection"] for ln in
            (out / "items.jsonl").read_text().splitlines()} == {"conv-30"}
    assert _hidden(tmp_path) == []


def test_build_store_refuses_a_folder_of_the_users(data_dir: Path, tmp_path: Path,
                                                   capsys) -> None:
    out, before = _mine(tmp_path)
    err = _refused(capsys, out, _build(data_dir, out, "conv-26"))
    assert "no manifest of `tiap build-store`" in err and _tree(out) == before
    assert _build(data_dir, out, "conv-26", "--force") == 0
    assert set(_tree(out)) == {"items.jsonl", "manifest.json"}


def test_build_store_keeps_a_parser_cache_inside_the_store(tmp_path: Path) -> None:
    """A parser whose cache lies in --out (``--cache OUT/parser-cache.sqlite``) writes it in
    place during the build; the rebuild swaps the folder and the cache survives."""
    from tiap.datasets.base import Bundle, InlineDataset
    from tiap.datasets.records import Collection, Session, Turn
    from tiap.memory import build_store
    from tiap.memory.build import cache_entries
    from tiap.memory.heuristic import HeuristicParser

    out = tmp_path / "store"
    assert cache_entries(out / "parser-cache.sqlite", out) == (
        "parser-cache.sqlite", "parser-cache.sqlite-wal", "parser-cache.sqlite-shm",
        "parser-cache.sqlite-journal", "parser-cache.sqlite.shards")
    assert cache_entries(out / "c" / "x.sqlite", out) == ("c",)
    assert cache_entries(tmp_path / "elsewhere.sqlite", out) == ()

    class Caching(HeuristicParser):
        cache_path = out / "parser-cache.sqlite"

        def prepare(self, dataset: Any) -> None:
            out.mkdir(exist_ok=True)
            with open(self.cache_path, "a") as fh:
                fh.write("turn\n")

    turn = Turn("c1:D1:1", "c1", "session_1", 1, "Ann", "I moved to Paris last May.")
    ds = InlineDataset([Bundle(collection=Collection("c1", 1, 1, ("Ann",)),
                               sessions=(Session("c1", "session_1", 1, None),),
                               turns=(turn,), queries=())])
    for _ in range(2):
        build_store(ds, Caching(1), out, store="s")
    assert set(_tree(out)) == {"items.jsonl", "manifest.json", "parser-cache.sqlite"}
    assert (out / "parser-cache.sqlite").read_text() == "turn\nturn\n"  # used in place, twice
    (out / "yours.txt").write_text("x\n")
    with pytest.raises(TiapError) as err:
        build_store(ds, Caching(1), out, store="s")
    assert err.value.problems[0].code == "stale-output"
    assert (out / "parser-cache.sqlite").read_text() == "turn\nturn\n"  # refused before work


# -- audit judge -----------------------------------------------------------------------------


def _cases(path: Path, ids: list[int]) -> Path:
    from tiap.audit import write_cases

    write_cases(path, [Case(case_id=f"s:q{i}:source", system="s", query_id=f"q{i}",
                            target="source", item_id=f"f{i}", item_text="She moved to Paris.",
                            question="Where did she move?", answer="Paris", credited_rank=1,
                            item_kind="fact", dataset="d") for i in ids])
    return path


def _judge(cases: Path, out: Path, *extra: str) -> int:
    return main(["audit", "judge", str(cases), "--judge", "lexical", "--out", str(out), *extra])


def test_judge_rerun_holds_only_the_second_run_and_keeps_the_cache(tmp_path: Path,
                                                                   capsys) -> None:
    out = tmp_path / "j"
    assert _judge(_cases(tmp_path / "a.jsonl", [1, 2, 3]), out) == 0
    assert set(_tree(out)) == {"labels.jsonl", "manifest.json", "cache.sqlite"}
    assert _judge(_cases(tmp_path / "b.jsonl", [2, 9]), out) == 0
    assert set(_tree(out)) == {"labels.jsonl", "manifest.json", "cache.sqlite"}
    labels = [json.loads(ln)["case_id"] for ln in (out / "labels.jsonl").read_text().splitlines()]
    assert labels == ["s:q2:source", "s:q9:source"]
    man = json.loads((out / "manifest.json").read_text())
    # the cache survived the swap: case 2 (asked by the first run) and 9 make one request
    # (same question, text and answer), so it came from the cache
    assert man["counts"][0]["from_cache"] == 2 and man["counts"][0]["asked"] == 0
    assert _hidden(tmp_path) == []


def test_judge_refuses_a_folder_of_the_users(tmp_path: Path, capsys) -> None:
    out, before = _mine(tmp_path)
    cases = _cases(tmp_path / "a.jsonl", [1])
    err = _refused(capsys, out, _judge(cases, out))
    assert "no manifest of `tiap audit judge`" in err and _tree(out) == before
    assert _judge(cases, out, "--force") == 0
    assert set(_tree(out)) == {"labels.jsonl", "manifest.json", "cache.sqlite"}


# -- audit agreement -------------------------------------------------------------------------


def _labels(path: Path, judge: str, labels: list[str]) -> Path:
    return _jsonl(path, [{"case_id": f"s:q{i}:source", "judge": judge, "label": lab}
                         for i, lab in enumerate(labels)])


def test_agreement_rerun_holds_only_the_second_run(tmp_path: Path, capsys) -> None:
    a = _labels(tmp_path / "a.jsonl", "a", ["supports", "partial", "supports"])
    b = _labels(tmp_path / "b.jsonl", "b", ["supports", "supports", "does_not_support"])
    human = tmp_path / "human.csv"
    human.write_text("case_id,label\ns:q0:source,supports\ns:q1:source,partial\n")
    out = tmp_path / "ag"
    assert main(["audit", "agreement", str(a), str(b), "--human", str(human),
                 "--out", str(out)]) == 0
    assert {"human.csv", "confusion.csv"} <= set(_tree(out))
    assert main(["audit", "agreement", str(a), str(b), "--out", str(out)]) == 0
    assert set(_tree(out)) == {"agreement.json", "pairwise.csv", "distribution.csv",
                               "majority.jsonl", "manifest.json"} == _listed(out)
    mine, before = _mine(tmp_path)
    capsys.readouterr()
    err = _refused(capsys, mine, main(["audit", "agreement", str(a), str(b),
                                       "--out", str(mine)]))
    assert "no manifest of `tiap audit agreement`" in err and _tree(mine) == before


# -- audit graded (the folder check; the swap is tests/audit/test_audit_graded.py's) ---------


def test_graded_refuses_a_folder_of_the_users_before_reading(tmp_path: Path, capsys) -> None:
    out, before = _mine(tmp_path)
    rc = main(["audit", "graded", str(tmp_path / "no-such-rescore"), "--labels",
               str(tmp_path / "no-labels.jsonl"), "--out", str(out)])
    assert "no manifest of `tiap audit graded`" in _refused(capsys, out, rc)
    assert _tree(out) == before


# -- datasets export ---------------------------------------------------------------------------


def test_export_rerun_holds_only_the_second_export(tmp_path: Path, capsys) -> None:
    from tiap.datasets import DataSource, load
    from tiap.datasets.export import export_dataset

    root = tmp_path / "data"
    (root / "locomo").mkdir(parents=True)
    conv = {"sample_id": "conv-1", "conversation": {
        "speaker_a": "Ann", "speaker_b": "Bob", "session_1_date_time": "1 May 2023",
        "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "hi"}]},
        "qa": [{"question": "?", "answer": "hi", "evidence": ["D1:1"], "category": 1}]}
    (root / "locomo" / "locomo10.json").write_text(json.dumps([conv]))
    ds = load("locomo", source=DataSource(root, verify=False))
    out = tmp_path / "exp"
    export_dataset(ds, out)
    (out / "extra.jsonl").write_text("an old file of another version\n")
    with pytest.raises(TiapError) as err:
        export_dataset(ds, out)
    assert err.value.problems[0].code == "stale-output" and "'extra.jsonl'" in str(err.value)
    export_dataset(ds, out, force=True)
    assert set(_tree(out)) == _listed(out) == {
        "turns.jsonl", "queries.jsonl", "memories.jsonl", "problems.jsonl", "manifest.json"}
    mine, before = _mine(tmp_path)
    with pytest.raises(TiapError):
        export_dataset(ds, mine)
    assert _tree(mine) == before
    # the command: refused before anything is read, replaced with --force
    args = ["datasets", "export", "locomo", "--data", str(root), "--no-verify", "--out",
            str(mine)]
    assert "no manifest of `tiap datasets export`" in _refused(capsys, mine, main(args))
    assert _tree(mine) == before
    assert main([*args, "--force"]) == 0
    assert set(_tree(mine)) == set(_tree(out))


# -- mem0-run --------------------------------------------------------------------------------


def test_mem0_run_refuses_a_folder_of_the_users_before_any_work(
        data_dir: Path, tmp_path: Path, capsys) -> None:
    out, before = _mine(tmp_path)
    rc = main(["mem0-run", "locomo", "--collections", "conv-26", "--sessions", "1",
               "--out", str(out), "--data", str(data_dir)])
    assert "no manifest of `tiap mem0-run`" in _refused(capsys, out, rc)
    assert _tree(out) == before and _hidden(tmp_path) == []


@pytest.mark.skipif(importlib.util.find_spec("mem0") is None, reason="needs the mem0 extra")
def test_mem0_run_rerun_keeps_the_stores_and_replaces_the_rest(
        data_dir: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "m"
    args = ["mem0-run", "locomo", "--collections", "conv-26", "--sessions", "1",
            "--out", str(out), "--data", str(data_dir)]
    assert main(args) == 0
    [done] = (out / "mem0_store").glob("*/done.json")  # one finished collection
    stamp = done.read_bytes()
    files = set(_tree(out))
    assert {"mem0_results.jsonl", "mem0_memories.jsonl", "items.jsonl", "run.jsonl",
            "manifest.json"} <= files
    man = json.loads((out / "manifest.json").read_text())
    assert man["command"] == "mem0-run"
    assert {n for n in files if "/" not in n} <= _listed(out)
    (out / "old_extra.txt").write_text("x\n")
    capsys.readouterr()
    assert "'old_extra.txt'" in _refused(capsys, out, main(args))
    (out / "old_extra.txt").unlink()
    assert main(args) == 0
    assert done.read_bytes() == stamp  # the finished collection was kept, not rebuilt
    assert set(_tree(out)) == files and "(done before)" in capsys.readouterr().out
