"""Property tests of every reader of ranked lists and every importer format (issue 14).

Any input either loads, with the records a small reference reader written here gives (TREC
runs and JSONL rankings), or raises :class:`TiapError`: never another exception
(``UnicodeDecodeError``, ``ValueError``, ``KeyError``, ``TypeError``, json's errors, ...).
The inputs are drawn from each format's own vocabulary (field names, ids, numbers that are
and are not valid), mixed with arbitrary bytes, so that most examples get past the first
line. Budgets are fixed and the runs derandomized, so CI sees the same examples every time.
"""

from __future__ import annotations

import gzip
import json
import math
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from unittest import mock

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tiap.datasets.records import Query, Session, Turn
from tiap.errors import TiapError
from tiap.runs import read_run, read_run_columnar

SETTINGS = settings(max_examples=120, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                           HealthCheck.data_too_large])


def _in_file(data: bytes, name: str, fn: Callable[[Path], Any]) -> Any:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / name
        path.write_bytes(data)
        return fn(path)


def _loads_or_tiap_error(fn: Callable[[], Any]) -> tuple[bool, Any]:
    """(True, value) or (False, the TiapError); any other exception fails the test."""
    try:
        value = fn()
    except TiapError as exc:
        assert exc.problems and all(p.code for p in exc.problems)
        event(f"refused: {exc.problems[0].code}")
        return False, exc
    event("loaded")
    return True, value


def _maybe_gzip(text: str, bom: bool, gz: bool) -> bytes:
    data = (("\ufeff" if bom else "") + text).encode("utf-8")
    return gzip.compress(data, mtime=0) if gz else data


# -- TREC runs ---------------------------------------------------------------------------------

_SEP = st.sampled_from([" ", "\t", "  ", " \t", "\xa0", "\x0c"])
_EOL = st.sampled_from(["\n", "\r\n", "\r"])
_QID = st.sampled_from(["q1", "q2", "7"])
_DOC = st.sampled_from(["d1", "d2", "d3", "conv-26:D1:3", "é"])
_RANK = st.sampled_from(["1", "2", "3", "1", "2", "0", "-1", "+2", "x", "1.0", "٣", "01"])
_SCORE = st.sampled_from(["1", "0.5", "2", "-3", "1e3", "nan", "inf", "x", "1_0", ".5", "0x1"])
_TAG = st.sampled_from(["s", "s", "t"])


@st.composite
def _trec_text(draw: st.DrawFn) -> str:
    """A valid TREC run (one to three rankings, lines in any order, any whitespace), then
    up to two mutations: a token replaced by one of the vocabulary, a token dropped or
    added, a line repeated."""
    lines: list[list[str]] = []
    for tag, qid in draw(st.lists(st.tuples(_TAG, _QID), min_size=1, max_size=3, unique=True)):
        docs = draw(st.lists(_DOC, min_size=1, max_size=3, unique=True))
        lines += [[qid, "Q0", d, str(r), draw(_SCORE.filter(_finite)), tag]
                  for r, d in enumerate(docs, start=1)]
    lines = draw(st.permutations(lines))
    for _ in range(draw(st.sampled_from([0, 0, 1, 2]))):
        i = draw(st.integers(0, len(lines) - 1))
        how = draw(st.sampled_from(["token", "token", "drop", "add", "repeat"]))
        j = draw(st.integers(0, len(lines[i]) - 1)) if lines[i] else 0
        if how == "token" and lines[i]:
            lines[i][j] = draw(st.one_of(_QID, _DOC, _RANK, _SCORE, _TAG))
        elif how == "drop" and lines[i]:
            del lines[i][j]
        elif how == "add":
            lines[i].insert(j, draw(_DOC))
        else:
            lines.insert(i, list(lines[i]))
    out = [draw(st.sampled_from(["", " "])) + draw(_SEP).join(toks) + draw(_EOL)
           for toks in lines]
    blank = draw(st.integers(0, len(out)))
    return "".join(out[:blank] + [draw(st.sampled_from(["", "\n", "  \n"]))] + out[blank:])


def _finite(text: str) -> bool:
    try:
        return "_" not in text and math.isfinite(float(text))
    except ValueError:
        return False


_TREC_TEXT = _trec_text()


_Rankings = dict[tuple[str, str], tuple[tuple[str, ...], tuple[float, ...] | None]]


def _reference_trec(text: str) -> _Rankings | None:
    """The TREC rules, written out: split lines, six whitespace-separated fields, an ASCII
    integer rank, a finite score, ranks 1..n per (tag, query), no item twice. ``None``: the
    file must be refused."""
    groups: dict[tuple[str, str], list[tuple[int, str, float]]] = {}
    for line in re.split(r"\r\n|\r|\n", text.removeprefix("\ufeff")):
        toks = line.split()
        if not toks:
            continue
        if len(toks) != 6:
            return None
        qid, _q0, doc, rank_text, score_text, tag = toks
        if not re.fullmatch(r"[+-]?[0-9]+", rank_text) or "_" in score_text:
            return None
        try:
            score = float(score_text)
        except ValueError:
            return None
        if not math.isfinite(score):
            return None
        groups.setdefault((tag, qid), []).append((int(rank_text), doc, score))
    if not groups:
        return None
    out = {}
    for key, rows in groups.items():
        rows.sort()
        if [r for r, _, _ in rows] != list(range(1, len(rows) + 1)):
            return None
        docs = tuple(d for _, d, _ in rows)
        if len(set(docs)) != len(docs):
            return None
        out[key] = (docs, tuple(s for _, _, s in rows))
    return out


def _as_dict(runs: Any) -> _Rankings:
    return {(run.system, r.query_id): (r.item_ids, r.scores) for run in runs
            for r in run.rankings}


@SETTINGS
@given(text=_TREC_TEXT, bom=st.booleans(), gz=st.booleans())
def test_trec_run_reads_as_the_reference_or_refuses(text: str, bom: bool, gz: bool) -> None:
    data = _maybe_gzip(text, bom, gz)
    ok, runs = _in_file(data, "r.trec", lambda p: _loads_or_tiap_error(lambda: read_run(p)))
    expected = _reference_trec(text)
    if expected is None:
        assert not ok, f"accepted a run the reference refuses: {text!r}"
    else:
        assert ok, f"refused a valid run: {text!r}: {runs}"
        assert _as_dict(runs) == expected


@SETTINGS
@given(text=_TREC_TEXT, gz=st.booleans())
def test_columnar_reader_agrees_with_read_run(text: str, gz: bool) -> None:
    data = _maybe_gzip(text, False, gz)

    def both(p: Path) -> tuple[tuple[bool, Any], tuple[bool, Any]]:
        return (_loads_or_tiap_error(lambda: read_run(p)),
                _loads_or_tiap_error(lambda: read_run_columnar(p)))

    (ok, runs), (ok_c, cols) = _in_file(data, "r.trec", both)
    assert ok == ok_c, (text, runs, cols)
    if ok:
        assert {(c.system, q): c.ranking(q) for c in cols for q in c.query_ids} == {
            k: v[0] for k, v in _as_dict(runs).items()}


@SETTINGS
@given(data=st.binary(max_size=200), gz=st.booleans())
def test_any_bytes_load_or_raise_tiap_error(data: bytes, gz: bool) -> None:
    raw = gzip.compress(data, mtime=0) if gz else data
    for reader in (read_run, read_run_columnar):
        ok, runs = _in_file(raw, "r.run", lambda p, f=reader: _loads_or_tiap_error(lambda: f(p)))
        if ok and reader is read_run and runs[0].format == "trec":
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:  # pragma: no cover - a run must be UTF-8
                raise AssertionError(f"read a run that is not UTF-8: {data!r}") from None
            assert _as_dict(runs) == _reference_trec(text)


# -- JSONL rankings and ranked-trace rows ------------------------------------------------------

_ID = st.one_of(st.sampled_from(["d1", "d2", "d3", "", " "]), st.integers(-1, 3), st.booleans(),
                st.none(), st.floats(allow_nan=True))
_NUM = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-3, 3),
                 st.booleans(), st.none(), st.sampled_from(["0.5", "x"]))


@st.composite
def _ranking_obj(draw: st.DrawFn) -> Any:
    """A valid JSONL ranking, then up to two of its fields replaced by values of the
    vocabulary (valid or not) or removed."""
    ids = draw(st.lists(st.one_of(_DOC, st.integers(0, 5)), max_size=4))
    obj: dict[str, Any] = {"query_id": draw(st.one_of(_QID, st.integers(0, 2))),
                           "ranking": ids}
    if draw(st.booleans()):
        obj["system"] = draw(st.sampled_from(["a", "b"]))
    if draw(st.booleans()):
        obj["scores"] = draw(st.lists(st.floats(-5, 5), min_size=len(ids), max_size=len(ids)))
    bad = {"query_id": st.one_of(_ID, st.just("")), "system": st.sampled_from([" ", 3, None]),
           "ranking": st.one_of(st.lists(_ID, max_size=4), st.text(max_size=3)),
           "scores": st.one_of(st.lists(_NUM, max_size=4), st.just("x"))}
    for key in draw(st.lists(st.sampled_from(sorted(bad)), max_size=2)):
        if draw(st.integers(0, 3)):
            obj[key] = draw(bad[key])
        else:
            obj.pop(key, None)
    return draw(st.sampled_from([obj] * 8 + [[obj], 3]))


def _reference_jsonl(lines: list[Any]) -> _Rankings | None:
    """JSONL rankings, written out: one object a line, a string or integer query id, a list
    of non-empty string or integer ids, no id twice, optional finite scores as many as the
    ids, one ranking per (system, query)."""
    out: _Rankings = {}
    if not lines:
        return None

    def ident(v: Any) -> str | None:
        if isinstance(v, bool):
            return None
        if isinstance(v, int):
            return str(v)
        return v if isinstance(v, str) and v else None

    for obj in lines:
        if not isinstance(obj, dict) or not isinstance(obj.get("ranking"), list):
            return None
        qid = ident(obj.get("query_id"))
        ids = [ident(v) for v in obj["ranking"]]
        if qid is None or None in ids or len(set(ids)) != len(ids):
            return None
        system = str(obj["system"]).strip() if obj.get("system") is not None else ""
        system = system or "r"
        scores = obj.get("scores")
        if scores is not None:
            if not isinstance(scores, list) or len(scores) != len(ids) or not all(
                    isinstance(s, (int, float)) and not isinstance(s, bool) and math.isfinite(s)
                    for s in scores):
                return None
            scores = tuple(float(s) for s in scores)
        if (system, qid) in out:
            return None
        out[(system, qid)] = (tuple(ids), scores)
    return out


@SETTINGS
@given(objs=st.lists(_ranking_obj(), max_size=5), blank=st.booleans())
def test_jsonl_rankings_read_as_the_reference_or_refuse(objs: list[Any], blank: bool) -> None:
    text = ("\n" if blank else "").join(json.dumps(o) + "\n" for o in objs)
    ok, runs = _in_file(text.encode(), "r.jsonl",
                        lambda p: _loads_or_tiap_error(lambda: read_run(p)))
    expected = _reference_jsonl(objs)
    if expected is None:
        assert not ok, f"accepted rankings the reference refuses: {text!r}"
    else:
        assert ok, f"refused valid rankings: {text!r}: {runs}"
        assert _as_dict(runs) == expected


_ROW_KEYS = ["benchmark", "system", "query_id", "retrieved_id", "rank", "score", "extra"]


@st.composite
def _rows_text(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["csv", "tsv", "jsonl"]))
    header = draw(st.lists(st.sampled_from(_ROW_KEYS), min_size=3, max_size=7))
    value = st.one_of(_QID, _DOC, _RANK, _SCORE, st.just(""), st.text(max_size=3))
    rows = draw(st.lists(st.lists(value, min_size=len(header) - 1, max_size=len(header) + 1),
                         max_size=5))
    if kind == "jsonl":
        return "".join(json.dumps(dict(zip(header, r, strict=False))) + "\n" for r in rows)
    sep = "," if kind == "csv" else "\t"
    quote = draw(st.sampled_from(["", '"']))
    return "".join(sep.join(quote + c + quote for c in line) + "\n" for line in [header, *rows])


@SETTINGS
@given(text=_rows_text(), gz=st.booleans())
def test_ranked_trace_rows_load_or_raise_tiap_error(text: str, gz: bool) -> None:
    _in_file(_maybe_gzip(text, False, gz), "rows.txt",
             lambda p: _loads_or_tiap_error(lambda: read_run(p)))


# -- importers ---------------------------------------------------------------------------------

_UNITS = ["c1:D1:1", "c1:D1:2", "c1:D1:3"]
_TEXTS = ["hello there", "I like tea", "see you"]


def _json_value(keys: list[str]) -> st.SearchStrategy[Any]:
    """JSON values with the format's keys, ids and numbers at their leaves."""
    leaf = st.one_of(st.none(), st.booleans(), st.integers(-2, 3), st.floats(allow_nan=False),
                     st.sampled_from(["", "x", "q1", "t1", "t2", "p1", "s1", "e1", "raw", "any",
                                      "conv-26:q0", "c1", *_UNITS, *_TEXTS]))
    return st.recursive(leaf, lambda c: st.lists(c, max_size=3)
                        | st.dictionaries(st.sampled_from(keys), c, max_size=5),
                        max_leaves=12)


def _lines(keys: list[str], extra: st.SearchStrategy[Any] | None = None
           ) -> st.SearchStrategy[bytes]:
    noise = st.one_of(st.dictionaries(st.sampled_from(keys), _json_value(keys), max_size=6),
                      _json_value(keys))
    obj = noise if extra is None else st.one_of(extra, extra, extra, extra, noise)
    text = st.lists(obj, max_size=5).map(
        lambda objs: "".join(json.dumps(o) + "\n" for o in objs).encode())
    return st.one_of(text, text, text, text, text, st.binary(max_size=60))


def _fake_dataset() -> Any:
    """A two-collection dataset in memory (what ``tiap.datasets.load`` gives the importers)."""
    turns = [Turn(u, "c1", "session_1", i + 1, "A", t) for i, (u, t) in
             enumerate(zip(_UNITS, _TEXTS, strict=True))]
    queries = [Query("q1", "c1", "?", None, "1", ("c1:D1:2",)),
               Query("conv-26:q0", "c1", "?", None, "1", ("c1:D1:1",))]
    bundle = SimpleNamespace(collection=SimpleNamespace(collection_id="c1"), turns=turns,
                             sessions=[Session("c1", "session_1", 1, "8 May 2023")])
    return SimpleNamespace(turns_iter=lambda: iter(turns), queries_iter=lambda: iter(queries),
                           bundles=lambda: iter([bundle]))


def _with_dataset(fn: Callable[[], Any]) -> tuple[bool, Any]:
    ds = _fake_dataset()

    def load(*a: Any, **k: Any) -> Any:
        return ds

    # ``load`` where each importer took it (``from tiap.datasets import load``)
    with (mock.patch("tiap.importers.load", load), mock.patch("tiap.importers.graphiti.load", load),
          mock.patch("tiap.importers.memoryos.load", load)):
        return _loads_or_tiap_error(fn)


_GENERIC_KEYS = ["type", "item_id", "kind", "sources", "parents", "text", "collection",
                 "uncertain", "possible_sources", "requires", "max_sources", "placeholder",
                 "existence", "count", "query_id", "question", "evidence", "ranked", "score"]
_GENERIC_RECORD = st.fixed_dictionaries(
    {"type": st.sampled_from(["item", "ranking", "query"]),
     "item_id": st.sampled_from(["t1", "t2"]), "kind": st.sampled_from(["raw", "fact"]),
     "sources": st.lists(st.sampled_from([*_UNITS, "zz"]), max_size=2),
     "query_id": st.sampled_from(["q1", "conv-26:q0"]),
     "ranked": st.lists(st.one_of(st.sampled_from(["t1", "t2"]), st.fixed_dictionaries(
         {"item_id": st.sampled_from(["t1", "t2"]), "score": _NUM})), max_size=3)})


_GENERIC_VALID = st.builds(
    lambda ranked, qid: [{"type": "item", "item_id": "t1", "kind": "raw", "sources": [_UNITS[0]]},
                         {"type": "item", "item_id": "t2", "kind": "fact", "parents": ["t1"]},
                         {"type": "ranking", "query_id": qid, "ranked": ranked}],
    st.lists(st.sampled_from(["t1", "t2"]), unique=True, max_size=2),
    st.sampled_from(["q1", "conv-26:q0"]))


@st.composite
def _generic_file(draw: st.DrawFn) -> bytes:
    """A valid export (or noise lines), with up to two records added or replaced."""
    rows: list[Any] = draw(_GENERIC_VALID)
    for _ in range(draw(st.sampled_from([0, 0, 0, 1, 2]))):
        rec = draw(st.one_of(_GENERIC_RECORD, _json_value(_GENERIC_KEYS)))
        if draw(st.booleans()):
            rows.append(rec)
        else:
            rows[draw(st.integers(0, len(rows) - 1))] = rec
    text = "".join(json.dumps(r) + "\n" for r in rows).encode()
    return draw(st.one_of(st.just(text), st.just(text), st.just(text),
                          _lines(_GENERIC_KEYS, _GENERIC_RECORD)))


@settings(SETTINGS, max_examples=80)
@given(data=_generic_file(), dataset=st.sampled_from([True, True, True, False]))
def test_generic_import_loads_or_raises_tiap_error(data: bytes, dataset: bool) -> None:
    from tiap.importers.generic import read_generic

    _in_file(data, "g.jsonl", lambda p: _with_dataset(
        lambda: read_generic(p, dataset="fake" if dataset else None)))


_MEM0_KEYS = ["query_id", "collection", "question", "evidence", "results", "id", "memory",
              "metadata", "source_ids", "source_window", "tiap_kind", "score", "user_id"]
_MEM0_RECORD = st.fixed_dictionaries({
    "query_id": st.sampled_from(["q1", "conv-26:q0"]), "evidence": st.just(["c1:D1:1"]),
    "results": st.lists(st.fixed_dictionaries({
        "id": st.sampled_from(["m1", "m2"]), "memory": st.just("x"),
        "metadata": st.fixed_dictionaries({"source_ids": st.lists(
            st.sampled_from([*_UNITS, "zz"]), max_size=2)}),
        "score": _NUM}), max_size=3)})


@SETTINGS
@given(data=_lines(_MEM0_KEYS, _MEM0_RECORD), dataset=st.booleans(),
       as_list=st.booleans())
def test_mem0_import_loads_or_raises_tiap_error(data: bytes, dataset: bool,
                                                as_list: bool) -> None:
    from tiap.importers.mem0 import read_mem0_import

    if as_list and data.startswith(b"{"):  # the JSON-document form: a list of queries
        data = b"[" + b",".join(x for x in data.splitlines() if x) + b"]"
    _in_file(data, "r.jsonl", lambda p: _loads_or_tiap_error(
        lambda: read_mem0_import(p, units=_UNITS if dataset else None)))


_GRAPHITI_KEYS = ["query_id", "edges", "nodes", "episodes", "communities", "uuid", "group_id",
                  "source_node_uuid", "target_node_uuid", "episodes", "episode_uuids", "name",
                  "fact", "content", "source_description", "sources", "score", "type",
                  "edge_reranker_scores", "node_reranker_scores", "episode_reranker_scores"]
_GRAPHITI_EDGE = st.fixed_dictionaries({
    "uuid": st.sampled_from(["x1", "x2"]), "source_node_uuid": st.just("n1"),
    "target_node_uuid": st.sampled_from(["n2", "n1"]),
    "episodes": st.lists(st.sampled_from(["e1", "e2"]), max_size=2),
    "group_id": st.sampled_from(["c1", ""])})
_GRAPHITI_RECORD = st.fixed_dictionaries({
    "query_id": st.sampled_from(["q1", "conv-26:q0"]),
    "edges": st.lists(_GRAPHITI_EDGE, max_size=3),
    "edge_reranker_scores": st.lists(_NUM, max_size=3),
    "episodes": st.lists(st.fixed_dictionaries({
        "uuid": st.sampled_from(["e1", "e2", "x1"]),
        "name": st.sampled_from([*_UNITS, "c1:D1:1, c1:D1:2", "nope"]),
        "sources": st.lists(st.sampled_from([*_UNITS, "zz"]), max_size=2)}), max_size=2)})


@SETTINGS
@given(data=_lines(_GRAPHITI_KEYS, _GRAPHITI_RECORD), graph=_lines(_GRAPHITI_KEYS),
       level=st.sampled_from(["edge", "node", "episode"]))
def test_graphiti_import_loads_or_raises_tiap_error(data: bytes, graph: bytes,
                                                    level: str) -> None:
    from tiap.importers.graphiti import read_graphiti

    def run(p: Path) -> Any:
        g = p.with_name("graph.jsonl")
        g.write_bytes(graph)
        return _with_dataset(lambda: read_graphiti(p, graph=g, level=level, dataset="fake"))

    _in_file(data, "results.jsonl", run)


_MEMORYOS_KEYS = ["query_id", "ranking", "retrieved_pages", "retrieved_user_knowledge",
                  "retrieved_assistant_knowledge", "page_id", "user_input", "agent_response",
                  "timestamp", "source_ids", "knowledge", "sessions", "details", "summary",
                  "knowledge_base", "assistant_knowledge"]
_PAGE = st.fixed_dictionaries({
    "page_id": st.sampled_from(["p1", "p2", "s1"]),
    "user_input": st.sampled_from([*_TEXTS, ""]), "agent_response": st.sampled_from(_TEXTS),
    "timestamp": st.sampled_from(["8 May 2023", "x"])})
_MEMORYOS_RECORD = st.fixed_dictionaries({
    "query_id": st.sampled_from(["q1", "conv-26:q0"]),
    "retrieved_pages": st.lists(_PAGE, max_size=3),
    "retrieved_user_knowledge": st.lists(st.fixed_dictionaries(
        {"knowledge": st.sampled_from(["", "likes tea"])}), max_size=2)})
_MID_TERM = st.one_of(_json_value(_MEMORYOS_KEYS), st.fixed_dictionaries({"sessions": (
    st.dictionaries(st.sampled_from(["s1", "s2", "p1"]), st.fixed_dictionaries(
        {"details": st.lists(_PAGE, max_size=3), "summary": st.just("s")}), max_size=2))}))


@settings(SETTINGS, max_examples=60)
@given(results=_lines(_MEMORYOS_KEYS, _MEMORYOS_RECORD), mid=_MID_TERM,
       short=_json_value(_MEMORYOS_KEYS), raw_mid=st.one_of(st.none(), st.binary(max_size=20)))
def test_memoryos_import_loads_or_raises_tiap_error(results: bytes, mid: Any, short: Any,
                                                    raw_mid: bytes | None) -> None:
    from tiap.importers.memoryos import read_memoryos

    def run(p: Path) -> Any:
        user = p.parent / "users" / "c1"
        user.mkdir(parents=True)
        (user / "mid_term.json").write_bytes(raw_mid if raw_mid is not None
                                             else json.dumps(mid).encode())
        (user / "short_term.json").write_text(json.dumps(short))
        (user / "long_term_user.json").write_text(json.dumps(
            {"knowledge_base": short} if isinstance(short, list) else short))
        return _with_dataset(lambda: read_memoryos(p.parent, dataset="fake"))

    _in_file(results, "results.jsonl", run)


_MTEL_KEYS = ["query_index", "tenant_id", "query", "expected_fixture_indexes",
              "returned_ids_full", "returned_ids_topk", "ranked_preview", "memory_id", "kind",
              "is_expected_family_match", "score", "expected_memory_ids",
              "expected_group_sizes", "is_expected", "normalized_content"]


@st.composite
def _mtel_rows(draw: st.DrawFn) -> list[Any]:
    """Kind-flag rows of the inline LoCoMo (``test_mtel_inline``), some fields replaced."""
    from test_mtel_inline import flag_row

    rows: list[Any] = []
    for idx, (q, gold) in enumerate(draw(st.lists(st.sampled_from(
            [("What did Ann adopt?", [0]), ("Where did they hike?", [2]),
             ("What is new?", [1, 3])]), min_size=1, max_size=2, unique_by=lambda x: x[0])),
            start=1):
        ids = draw(st.lists(st.sampled_from(["r0", "r1", "o1", "o2"]), min_size=1, max_size=3))
        rows.append(flag_row(idx, "c-1", q, gold, [
            (m, "raw_turn" if m.startswith("r") else "observation", draw(st.booleans()))
            for m in ids]))
    for _ in range(draw(st.sampled_from([0, 1, 2]))):
        row = draw(st.sampled_from(rows))
        row[draw(st.sampled_from(_MTEL_KEYS[:8]))] = draw(_json_value(_MTEL_KEYS))
    if draw(st.integers(0, 5)) == 0:
        rows.append(draw(_json_value(_MTEL_KEYS)))
    return rows


@settings(SETTINGS, max_examples=80)
@given(rows=_mtel_rows(), gz=st.booleans(),
       raw=st.one_of(st.none(), st.none(), st.none(), st.binary(max_size=40)))
def test_mtel_trace_loads_or_raises_tiap_error(rows: list[Any], gz: bool,
                                               raw: bytes | None) -> None:
    from test_mtel_inline import QA, TURNS, locomo

    from tiap.importers.mtel import import_mtel_trace

    text = "".join(json.dumps(r) + "\n" for r in rows).encode() if raw is None else raw
    data = gzip.compress(text, mtime=0) if gz else text

    def run(p: Path) -> Any:
        assert TURNS and QA
        lc = locomo.__wrapped__(p.parent)  # the fixture's function: writes locomo10.json
        return _loads_or_tiap_error(lambda: import_mtel_trace(p, locomo_path=lc))

    _in_file(data, "trace.jsonl.gz", run)
