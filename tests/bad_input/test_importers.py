"""Kind 6 of the bad-input campaign: importers that drop or invent.

Every importer (generic, memoryos, graphiti, mem0, mtel-trace) now shares one rule per
sub-kind, and each test below builds its own bad input in ``tmp_path`` and checks the exact
outcome through ``tiap.cli.main.main`` (exit status, the ``error[code]`` line naming the
file, line, record and query, and that no output folder was written) or, where the format
legitimately repeats, the warning counted in the manifest and printed:

- two records of one id with another lineage (``duplicate``, both places named);
- an id repeated in a ranking (``runs.dedup_ranking``: an error, or the first occurrence
  kept with a ``duplicate_dropped`` warning saying that the later items moved up);
- a score list of another length than its ranking (both lengths named);
- a source naming no unit of the dataset (``invalid-value``, never counted as sourced);
- an input with no queries (``no queries in <file>``, exit 2).

LoCoMo (read, never written) gives the turns MemoryOS pages are matched against and the
queries of ``--dataset locomo``; its unit ids (``conv-26:D1:3``) are LoCoMo's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tiap.cli.main import main
from tiap.errors import TiapError
from tiap.importers.mem0 import import_mem0_results
from tiap.runs import read_run


def _jsonl(path: Path, rows: list[Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _errors(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line.startswith("error[")]


def _queries(tmp_path: Path, *qids: str) -> Path:
    return _jsonl(tmp_path / "q.jsonl", [{"query_id": q, "question": "?", "evidence": ["u:1"]}
                                         for q in qids])


# -- MemoryOS ---------------------------------------------------------------------------------


def _page(pid: str, user: str, agent: str, **extra: Any) -> dict[str, Any]:
    return {"page_id": pid, "user_input": user, "agent_response": agent,
            "timestamp": "1:56 pm on 8 May, 2023", **extra}


def _memoryos(tmp_path: Path, sessions: dict[str, list[dict[str, Any]]],
              results: list[dict[str, Any]]) -> Path:
    root = tmp_path / "run"
    user = root / "users" / "conv-26"
    user.mkdir(parents=True)
    (user / "mid_term.json").write_text(json.dumps(
        {"sessions": {sid: {"id": sid, "summary": "s", "details": pages}
                      for sid, pages in sessions.items()}}))
    _jsonl(root / "results.jsonl", results)
    return root


def test_memoryos_pages_sharing_a_page_id_are_an_error_naming_both(
        data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The old import kept the first page and dropped the second one's turns."""
    a = _page("p1", "Hey Mel!", "Hi Caroline!")
    b = _page("p1", "something else", "entirely")
    root = _memoryos(tmp_path, {"s1": [a], "s2": [b]},
                     [{"query_id": "conv-26:q0", "ranking": ["p1"]}])
    out = tmp_path / "out"
    rc = main(["import", "memoryos", str(root), "--out", str(out), "--data", str(data_dir)])
    assert rc == 2 and not out.exists()
    mid = root / "users" / "conv-26" / "mid_term.json"
    assert _errors(capsys) == [
        f"error[duplicate]: {mid}, record p1: page id 'p1' is also another page (other text, "
        f"user, timestamp or source_ids) at {mid} (session s1, page 0); each page id must "
        "name one page, so neither can be imported as it is"]


def test_memoryos_the_same_page_in_two_sessions_is_one_item(data_dir: Path,
                                                            tmp_path: Path) -> None:
    """MemoryOS inserts one batch of pages into a session per topic: the same page (same
    text) twice is one item, a parent of both sessions."""
    a = _page("p1", "Hey Mel!", "Hi Caroline!")
    root = _memoryos(tmp_path, {"s1": [a], "s2": [dict(a)]},
                     [{"query_id": "conv-26:q0", "ranking": ["s1", "p1"]}])
    out = tmp_path / "out"
    assert main(["import", "memoryos", str(root), "--out", str(out), "--data",
                 str(data_dir)]) == 0
    rows = [json.loads(x) for x in (out / "items.jsonl").read_text().splitlines()]
    assert [r["item_id"] for r in rows] == ["p1", "s1", "s2"]
    assert [r.get("parents") for r in rows[1:]] == [["p1"], ["p1"]]


def test_memoryos_repeated_page_in_results_is_a_counted_warning(
        data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """retrieved [p1, p2, p1, p3]: p1's repeat at rank 3 is dropped, p3 moves up to rank 3;
    said in the manifest (count 1, one query, the place) and on stderr."""
    p1, p2, p3 = (_page(f"p{i}", f"text {i}", f"reply {i}") for i in (1, 2, 3))
    root = _memoryos(tmp_path, {"s1": [p1, p2, p3]},
                     [{"query_id": "conv-26:q0", "retrieved_pages": [p1, p2, dict(p1), p3]}])
    out = tmp_path / "out"
    assert main(["import", "memoryos", str(root), "--out", str(out), "--data",
                 str(data_dir)]) == 0
    [run] = read_run(out / "run.jsonl")
    assert run.ranking("conv-26:q0").item_ids == ("p1", "p2", "p3")
    man = json.loads((out / "manifest.json").read_text())
    w = man["warnings"]["duplicate_dropped"]
    assert (w["count"], w["queries"]) == (1, 1)
    assert w["examples"] == [f"{root / 'results.jsonl'}:1, query conv-26:q0: dropped item 'p1' "
                             "at rank 3 (kept its rank 1); the items after it moved up one rank"]
    err = capsys.readouterr().err
    assert "warning[duplicate_dropped]: rankings repeated items: each item's first occurrence " \
           "was kept" in err and "(1 in 1 queries, counted in" in err


def test_memoryos_source_ids_naming_no_unit(data_dir: Path, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    p = _page("p1", "x", "y", source_ids=["conv-26:D1:3", "conv-26:D99:1"])
    root = _memoryos(tmp_path, {"s1": [p]}, [{"query_id": "conv-26:q0", "ranking": ["p1"]}])
    out = tmp_path / "out"
    assert main(["import", "memoryos", str(root), "--out", str(out), "--data",
                 str(data_dir)]) == 2
    assert not out.exists()
    mid = root / "users" / "conv-26" / "mid_term.json"
    [line] = _errors(capsys)
    assert line.startswith(f"error[invalid-value]: {mid}, record p1: source_ids "
                           "['conv-26:D99:1'] name no unit of the dataset")


def test_memoryos_knowledge_without_text_is_not_dropped_from_the_ranking(
        data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A knowledge entry without text used to vanish, moving the entries after it up."""
    p1 = _page("p1", "a", "b")
    root = _memoryos(tmp_path, {"s1": [p1]}, [{
        "query_id": "conv-26:q0", "retrieved_pages": [p1],
        "retrieved_user_knowledge": [{"knowledge": ""}, {"knowledge": "Caroline paints"}]}])
    out = tmp_path / "out"
    assert main(["import", "memoryos", str(root), "--out", str(out), "--data",
                 str(data_dir)]) == 2
    assert _errors(capsys) == [
        f"error[input]: {root / 'results.jsonl'}:1, query conv-26:q0: "
        "retrieved_user_knowledge[0] is not a knowledge entry with a 'knowledge' text, got "
        "{'knowledge': ''}"]


def test_memoryos_empty_results_is_an_error(data_dir: Path, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    root = _memoryos(tmp_path, {"s1": [_page("p1", "a", "b")]}, [])
    out = tmp_path / "out"
    assert main(["import", "memoryos", str(root), "--out", str(out), "--data",
                 str(data_dir)]) == 2
    assert not out.exists()
    assert _errors(capsys) == [
        f"error[input]: {root / 'results.jsonl'}: no queries in results.jsonl: it holds no "
        "query results, so there is nothing to import (is it the right file?)"]


# -- Graphiti ---------------------------------------------------------------------------------


def _edge(uid: str, eps: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    row: dict[str, Any] = {"uuid": uid, "source_node_uuid": "n1", "target_node_uuid": "n2",
                           "fact": f"fact {uid}", "group_id": "conv-26", **extra}
    if eps is not None:
        row["episodes"] = eps
    return row


def _graphiti(tmp_path: Path, capsys: pytest.CaptureFixture[str], rows: list[dict[str, Any]],
              *extra: str) -> tuple[int, list[str], Path, Path]:
    res = _jsonl(tmp_path / "results.jsonl", rows)
    out = tmp_path / "out"
    q = _queries(tmp_path, "q1", "q2", "q3")
    rc = main(["import", "graphiti", str(res), "--out", str(out), "--queries", str(q), *extra])
    return rc, _errors(capsys), res, out


def test_graphiti_reranker_scores_of_the_wrong_length(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Two edges, one score: the old import dropped the scores without a word."""
    rc, errors, res, out = _graphiti(tmp_path, capsys, [
        {"query_id": "q1", "edges": [_edge("x1"), _edge("x2")], "edge_reranker_scores": [0.9]}])
    assert rc == 2 and not out.exists()
    assert errors == [f"error[input]: {res}:1, query q1: 'edge_reranker_scores' has 1 scores but "
                      "'edges' has 2 entries; one score per ranked entry, in the same order"]


def test_graphiti_scores_on_some_entries_only(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    rc, errors, res, _ = _graphiti(tmp_path, capsys, [
        {"query_id": "q1", "edges": [_edge("x1", score=0.5), _edge("x2")]}])
    assert rc == 2
    assert errors == [f"error[input]: {res}:1, query q1: 1 of the 2 'edges' entries have a "
                      "'score' (first without: position 2); give one on every entry or on none"]


def test_graphiti_empty_reranker_list_means_no_scores(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Some Graphiti searches return ``[]`` beside their edges: no scores, not a mismatch."""
    rc, _, _, out = _graphiti(tmp_path, capsys, [
        {"query_id": "q1", "edges": [_edge("x1"), _edge("x2")], "edge_reranker_scores": []}])
    assert rc == 0
    [run] = read_run(out / "run.jsonl")
    assert run.ranking("q1").item_ids == ("x1", "x2") and run.ranking("q1").scores is None


def test_graphiti_edge_ranked_twice_is_an_error(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    rc, errors, res, out = _graphiti(tmp_path, capsys, [
        {"query_id": "q1", "edges": [_edge("x1"), _edge("x2"), _edge("x1")]}])
    assert rc == 2 and not out.exists()
    assert errors == [f"error[duplicate]: {res}:1, query q1: item 'x1' appears more than once "
                      "in the ranking (ranks 1 and 3) (system 'results'); Graphiti returns each "
                      "result once"]


def test_graphiti_edge_with_other_episodes_elsewhere(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """The same edge uuid citing other episodes in another result: one of them would be
    dropped; an edge given without episodes (as Zep does) agrees with any."""
    rc, errors, res, _ = _graphiti(tmp_path, capsys, [
        {"query_id": "q1", "edges": [_edge("x1", ["e1"])]},
        {"query_id": "q2", "edges": [_edge("x1"), _edge("x1b", ["e3"])]},
        {"query_id": "q3", "edges": [_edge("x1", ["e2"])]}])
    assert rc == 2
    assert errors[0] == (
        f"error[duplicate]: {res}:3, query q3: edge x1 was read as the same edge with another "
        f"lineage (episodes ('e1',) vs ('e2',)) at {res}:1; one uuid names one record, so "
        "neither can be imported as it is")


def test_graphiti_missing_ranked_list_names_the_level(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """``--level node`` on edge-only results used to give empty rankings and exit 0."""
    rc, errors, res, out = _graphiti(tmp_path, capsys, [
        {"query_id": "q1", "edges": [_edge("x1")]}], "--level", "node")
    assert rc == 2 and not out.exists()
    assert errors[0] == (f"error[input]: {res}:1, query q1: no 'nodes' list: --level node ranks "
                         "the result's nodes (give them, even empty, or pass the --level the "
                         "results hold)")


def test_graphiti_episode_sources_naming_no_unit(data_dir: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    res = _jsonl(tmp_path / "results.jsonl", [
        {"query_id": "conv-26:q0", "edges": [_edge("x1", ["e1"])],
         "episodes": [{"uuid": "e1", "content": "c", "sources": ["D1:3"]}]}])
    out = tmp_path / "out"
    assert main(["import", "graphiti", str(res), "--out", str(out), "--data",
                 str(data_dir)]) == 2
    [line] = _errors(capsys)
    assert line.startswith(f"error[invalid-value]: {res}:1, record e1: source 'D1:3' of this "
                           "item names no unit of dataset 'locomo' (units look like 'conv-")


def test_graphiti_empty_results(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, errors, res, out = _graphiti(tmp_path, capsys, [])
    assert rc == 2 and not out.exists()
    assert errors == [f"error[input]: {res}: no queries in results.jsonl: it holds no search "
                      "results, so there is nothing to import (is it the right file?)"]


# -- generic ----------------------------------------------------------------------------------


def test_generic_duplicate_item_is_a_duplicate_error(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    src = _jsonl(tmp_path / "g.jsonl", [
        {"type": "item", "item_id": "t1", "kind": "raw", "sources": ["u:1"]},
        {"type": "item", "item_id": "t1", "kind": "raw", "sources": ["u:2"]},
        {"type": "ranking", "query_id": "q1", "ranked": ["t1"]}])
    out = tmp_path / "out"
    assert main(["import", "generic", str(src), "--out", str(out), "--queries",
                 str(_queries(tmp_path, "q1"))]) == 2
    assert not out.exists()
    assert _errors(capsys) == [
        f"error[duplicate]: {src}:2, record t1: duplicate item id (first on line 1)"]


def test_generic_repeat_in_a_ranking_is_an_error(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    src = _jsonl(tmp_path / "g.jsonl", [
        {"type": "item", "item_id": "t1", "kind": "raw", "sources": ["u:1"]},
        {"type": "item", "item_id": "t2", "kind": "raw", "sources": ["u:2"]},
        {"type": "ranking", "query_id": "q1", "ranked": ["t1", "t2", "t1"]}])
    assert main(["import", "generic", str(src), "--out", str(tmp_path / "out"), "--queries",
                 str(_queries(tmp_path, "q1"))]) == 2
    assert _errors(capsys) == [
        f"error[duplicate]: {src}:3, query q1: item 't1' appears more than once in the ranking "
        "(ranks 1 and 3) (system 'g'); remove the repeat: the rank order is the data"]


def test_generic_source_naming_no_unit_of_the_dataset(data_dir: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """'D1:3' (the conversation left out) names no LoCoMo turn: it used to be counted as a
    sourced item that no target could ever credit."""
    src = _jsonl(tmp_path / "g.jsonl", [
        {"type": "item", "item_id": "t1", "kind": "raw", "sources": ["conv-26:D1:3"]},
        {"type": "item", "item_id": "t2", "kind": "raw", "sources": ["D1:3"]},
        {"type": "ranking", "query_id": "conv-26:q0", "ranked": ["t1", "t2"]}])
    out = tmp_path / "out"
    assert main(["import", "generic", str(src), "--out", str(out), "--dataset", "locomo",
                 "--data", str(data_dir)]) == 2
    assert not out.exists()
    [line] = _errors(capsys)
    assert line.startswith(f"error[invalid-value]: {src}:2, record t2: source 'D1:3' of this "
                           "item names no unit of dataset 'locomo'")


def test_generic_without_rankings_is_an_error(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    src = _jsonl(tmp_path / "g.jsonl", [
        {"type": "item", "item_id": "t1", "kind": "raw", "sources": ["u:1"]}])
    out = tmp_path / "out"
    assert main(["import", "generic", str(src), "--out", str(out), "--queries",
                 str(_queries(tmp_path, "q1"))]) == 2
    assert not out.exists()
    assert _errors(capsys) == [
        f"error[input]: {src}: no queries in g.jsonl: it holds no ranking records, so there is "
        "nothing to import (is it the right file?)"]


def test_generic_empty_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "g.jsonl"
    src.write_text("\n\n")
    assert main(["import", "generic", str(src), "--out", str(tmp_path / "out"), "--queries",
                 str(_queries(tmp_path, "q1"))]) == 2
    [line] = _errors(capsys)
    assert line.startswith(f"error[input]: {src}: no queries in g.jsonl")


# -- Mem0 -------------------------------------------------------------------------------------


def _mem(mid: str, sources: list[str], score: float | None = 0.5) -> dict[str, Any]:
    row: dict[str, Any] = {"id": mid, "memory": f"memory {mid}",
                           "metadata": {"source_ids": sources}}
    if score is not None:
        row["score"] = score
    return row


def test_mem0_repeated_result_is_counted_and_printed(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """[a, b, a, c]: the repeat at rank 3 is dropped and c moves up to rank 3; the old import
    counted it in mem0_report.json only, and printed nothing."""
    res = _jsonl(tmp_path / "r.jsonl", [{"query_id": "q1", "evidence": ["u:1"], "results": [
        _mem("a", ["u:1"], 0.9), _mem("b", ["u:2"], 0.8), _mem("a", ["u:1"], 0.7),
        _mem("c", ["u:3"], 0.6)]}])
    out = tmp_path / "out"
    assert main(["import", "mem0", str(res), "--out", str(out)]) == 0
    [run] = read_run(out / "run.jsonl")
    assert run.ranking("q1").item_ids == ("a", "b", "c")
    assert run.ranking("q1").scores == (0.9, 0.8, 0.6)
    w = json.loads((out / "manifest.json").read_text())["warnings"]["duplicate_dropped"]
    assert (w["count"], w["queries"]) == (1, 1)
    assert w["examples"] == [f"{res}:1, query q1: dropped item 'a' at rank 3 (kept its rank 1); "
                             "the items after it moved up one rank"]
    assert "warning[duplicate_dropped]" in capsys.readouterr().err


def test_mem0_scores_on_some_results_only(tmp_path: Path) -> None:
    res = _jsonl(tmp_path / "r.jsonl", [{"query_id": "q1", "evidence": ["u:1"], "results": [
        _mem("a", ["u:1"], 0.9), _mem("b", ["u:2"], None)]}])
    with pytest.raises(TiapError) as exc:
        import_mem0_results(res, tmp_path / "out")
    assert str(exc.value) == (f"{res}:1, query q1: 1 of the 2 results have a 'score' (first "
                              "without: rank 2); keep Mem0's score on every result or on none")
    assert not (tmp_path / "out").exists()


def test_mem0_source_naming_no_unit(tmp_path: Path) -> None:
    res = _jsonl(tmp_path / "r.jsonl", [{"query_id": "q1", "evidence": ["c1:D1:1"], "results": [
        _mem("a", ["c1:D1:1"]), _mem("b", ["c1:D9:9"])]}])
    with pytest.raises(TiapError) as exc:
        import_mem0_results(res, tmp_path / "out", units=["c1:D1:1", "c1:D1:2"])
    assert exc.value.code == "invalid-value"
    assert str(exc.value) == (
        f"{res}:1, record b: source 'c1:D9:9' of this item names no unit of the dataset (units "
        "look like 'c1:D1:1'); give the dataset's unit ids, or \"sources\": [] for an item that "
        "derives from none of them")
    assert not (tmp_path / "out").exists()


def test_mem0_memory_with_two_lineages_is_a_duplicate(tmp_path: Path) -> None:
    res = _jsonl(tmp_path / "r.jsonl", [
        {"query_id": "q1", "evidence": ["u:1"], "results": [_mem("a", ["u:1"])]},
        {"query_id": "q2", "evidence": ["u:1"], "results": [_mem("a", ["u:2"])]}])
    with pytest.raises(TiapError) as exc:
        import_mem0_results(res, tmp_path / "out")
    assert exc.value.code == "duplicate"
    assert str(exc.value) == (f"{res}:2, record a, query q2: memory a has other sources or kind "
                              f"than on {res}:1 (['u:1'] vs ['u:2'])")


def test_mem0_empty_results(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    res = tmp_path / "r.jsonl"
    res.write_text("")
    out = tmp_path / "out"
    assert main(["import", "mem0", str(res), "--out", str(out)]) == 2
    assert not out.exists()
    assert _errors(capsys) == [
        f"error[input]: {res}: no queries in r.jsonl: it holds no query results, so there is "
        "nothing to import (is it the right file?)"]


# -- the run reader: the same rule, and the same words ------------------------------------------


def test_read_run_dedup_first_says_what_was_done(tmp_path: Path) -> None:
    run_file = tmp_path / "r.trec"
    run_file.write_text("q1 Q0 d1 1 3 s\nq1 Q0 d2 2 2 s\nq1 Q0 d1 3 1 s\nq1 Q0 d3 4 0 s\n")
    [run] = read_run(run_file, dedup="first")
    assert run.ranking("q1").item_ids == ("d1", "d2", "d3")
    [w] = run.warnings
    assert (w.code, w.count, w.queries) == ("duplicate_dropped", 1, 1)
    assert str(w.examples[0]) == (f"{run_file}:3, query q1: dropped item 'd1' at rank 3 (kept "
                                  "its rank 1); the items after it moved up one rank")
    with pytest.raises(TiapError) as exc:
        read_run(run_file)
    assert exc.value.code == "duplicate"
    assert str(exc.value) == (f"{run_file}:3, query q1: item 'd1' appears more than once in the "
                              "ranking (ranks 1 and 3; first on line 1) (system 's'); pass "
                              "dedup='first' to keep its first occurrence")


def test_graphiti_a_boolean_query_id_and_a_non_list_communities_are_located(
        data_dir: Path, tmp_path: Path) -> None:
    """Found by the property test: ``"query_id": false`` passed as an id (a bool is an int)
    and ``"communities": 1`` raised a TypeError; both are now located problems."""
    from tiap.importers.graphiti import read_graphiti

    path = tmp_path / "results.jsonl"
    path.write_text('{"query_id": "conv-26:q0", "communities": 1, "edges": []}\n'
                    '{"query_id": false, "edges": []}\n')
    with pytest.raises(TiapError) as err:
        read_graphiti(path, data_dir=data_dir)
    text = str(err.value)
    assert f"{path}:1, query conv-26:q0: 'communities' must be a list" in text
    assert f"{path}:2: search result has no 'query_id'" in text
