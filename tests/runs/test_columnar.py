"""Tests for tiap.runs.columnar: the same rankings, warnings and errors as read_run.

The reference for every case is :func:`tiap.runs.read_run` on the same file: the
columnar reader must give the same rankings (as a matrix of codes) or raise the same
located error (file, line, query).
"""

from __future__ import annotations

import gzip
import random
from pathlib import Path

import numpy as np
import pytest

from tiap import ids as tiap_ids
from tiap.errors import TiapError
from tiap.ids import IdIndex
from tiap.runs import ColumnarRun, Run, columnar, read_qrels, read_run, read_run_columnar

pytest.importorskip("pyarrow")


def _write(path: Path, text: str, *, gz: bool = False) -> Path:
    data = text.encode("utf-8")
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def _random_trec(seed: int, n_queries: int = 40, tags: tuple[str, ...] = ("bm25",),
                 sep: str = " ") -> list[str]:
    """Lines of a valid TREC run: query by query, rank order, strictly decreasing scores."""
    rng = random.Random(seed)
    lines = []
    for q in range(n_queries):
        for tag in tags:
            depth = rng.randint(1, 25)
            docs = rng.sample(range(300), depth)
            for rank, d in enumerate(docs, start=1):
                lines.append(sep.join([f"q{q}", "Q0", f"d{d}", str(rank),
                                       f"{depth - rank + 0.5}", tag]) + "\n")
    return lines


def _as_orders(runs: list[Run]) -> dict[str, dict[str, tuple[str, ...]]]:
    return {r.system: {x.query_id: x.item_ids for x in r.rankings} for r in runs}


def _same_as_reference(path: Path, **kw: object) -> list[ColumnarRun]:
    got = read_run_columnar(path, **kw)  # type: ignore[arg-type]
    ref = read_run(path, **kw)  # type: ignore[arg-type]
    assert [r.system for r in got] == [r.system for r in ref]
    assert _as_orders([r.to_run() for r in got]) == _as_orders(ref)
    for g, r in zip(got, ref, strict=True):
        assert g.query_ids == r.query_ids
        assert [(w.code, w.count, w.queries) for w in g.warnings] == [
            (w.code, w.count, w.queries) for w in r.warnings]
        assert not g.rankings.flags.writeable and g.rankings.dtype == np.int32
    return got


def _same_error(path: Path, **kw: object) -> str:
    with pytest.raises(TiapError) as ref:
        read_run(path, **kw)  # type: ignore[arg-type]
    with pytest.raises(TiapError) as got:
        read_run_columnar(path, **kw)  # type: ignore[arg-type]
    assert str(got.value) == str(ref.value)
    return str(got.value)


# --------------------------------------------------------------------------------------------
# valid files


@pytest.mark.parametrize("sep", [" ", "\t"])
@pytest.mark.parametrize("gz", [False, True])
def test_random_run_equals_reference(tmp_path: Path, sep: str, gz: bool) -> None:
    path = _write(tmp_path / "run.trec", "".join(_random_trec(1, sep=sep)), gz=gz)
    (run,) = _same_as_reference(path)
    assert run.format == "trec" and run.n_queries == 40
    assert run.lengths.tolist() == [len(run.ranking(q)) for q in run.query_ids]
    # padding is -1 at the end of each row only
    valid = run.rankings >= 0
    assert (valid[:, 1:] <= valid[:, :-1]).all()


def test_fast_path_is_taken_for_clean_files(tmp_path: Path, monkeypatch) -> None:
    path = _write(tmp_path / "run.trec", "".join(_random_trec(2)))
    monkeypatch.setattr(columnar, "read_run", lambda *a, **k: pytest.fail("reference used"))
    assert read_run_columnar(path)[0].n_queries == 40


def test_small_blocks_and_unsorted_lines(tmp_path: Path, monkeypatch) -> None:
    """Blocks of a few hundred bytes: queries span blocks; shuffled lines need the second
    (score-order) pass; several systems interleave."""
    monkeypatch.setattr(columnar, "BLOCK_BYTES", 512)
    lines = _random_trec(3, n_queries=30, tags=("a", "b"))
    _same_as_reference(_write(tmp_path / "sorted.trec", "".join(lines)))
    random.Random(0).shuffle(lines)
    runs = _same_as_reference(_write(tmp_path / "shuffled.trec", "".join(lines)))
    assert [r.system for r in runs] == sorted({r.system for r in runs}, key=[r.system for r in
                                                                             runs].index)
    assert len(read_run_columnar(tmp_path / "shuffled.trec", system="b")) == 1


def test_chunks_cut_at_line_ends(tmp_path: Path, monkeypatch) -> None:
    """Chunks of 100 bytes (lines cut at newlines, one line longer than a chunk), no final
    newline, CRLF line ends; ids with an 'x' send ranks through their text dictionary."""
    monkeypatch.setattr(columnar, "BLOCK_BYTES", 100)
    lines = _random_trec(6, n_queries=12)
    long_id = "x" * 150
    lines[3] = lines[3].replace(lines[3].split()[2], long_id)
    _same_as_reference(_write(tmp_path / "a.trec", "".join(lines).rstrip("\n")))
    _same_as_reference(_write(tmp_path / "b.trec", "".join(lines).replace("\n", "\r\n")))


def test_score_order_warning(tmp_path: Path) -> None:
    text = ("q1 Q0 a 1 3 s\nq1 Q0 b 2 3 s\nq1 Q0 c 3 4 s\n"  # ties at rank 2, rises at 3
            "q2 Q0 a 1 2 s\nq2 Q0 b 2 1 s\n"
            "q3 Q0 c 2 5 s\nq3 Q0 a 1 4 s\n"  # out of rank order in the file
            "q4 Q0 a 1 2 s\nq4 Q0 b 2 2 s\nq4 Q0 c 3 1 s\n")  # ties only
    (run,) = _same_as_reference(_write(tmp_path / "r.trec", text))
    w, ties = run.warnings
    assert w.code == "score_order" and w.count == 2
    assert [e.query_id for e in w.examples] == ["q1", "q3"]
    assert "score 4.0 at rank 3 is above 3.0 at rank 2" in str(w.examples[0])
    assert ties.code == "score_ties" and ties.count == 1
    assert [e.query_id for e in ties.examples] == ["q4"]
    assert "score 2.0 at rank 2 is equal to 2.0 at rank 1" in str(ties.examples[0])


def test_dedup_first_and_other_formats_use_the_reference(tmp_path: Path) -> None:
    dup = _write(tmp_path / "dup.trec", "q1 Q0 a 1 3 s\nq1 Q0 b 2 2 s\nq1 Q0 a 3 1 s\n")
    (run,) = _same_as_reference(dup, dedup="first")
    assert run.ranking("q1") == ("a", "b") and run.warnings[0].code == "duplicate_dropped"
    jsonl = _write(tmp_path / "r.jsonl", '{"query_id": "q1", "ranking": ["x", "y"]}\n')
    (run,) = _same_as_reference(jsonl)
    assert run.format == "jsonl" and run.ranking("q1") == ("x", "y")
    # runs of several spaces are whitespace too: read by the reference reader
    (run,) = _same_as_reference(_write(tmp_path / "spaces.trec", "q1  Q0 a   1 3 s\n"))
    assert run.ranking("q1") == ("a",)


def test_without_pyarrow(tmp_path: Path, monkeypatch) -> None:
    path = _write(tmp_path / "run.trec", "".join(_random_trec(4)))
    fast = read_run_columnar(path)[0]
    monkeypatch.setattr(columnar, "pyarrow_or_none", lambda: None)
    monkeypatch.setattr(tiap_ids, "pyarrow_or_none", lambda: None)
    slow = _same_as_reference(path)[0]
    assert isinstance(slow.items._ids, tuple)
    assert _as_orders([fast.to_run()]) == _as_orders([slow.to_run()])
    assert slow.items.codes(["d1", "nope"]).tolist()[1] == -1
    qrels = _write(tmp_path / "q.qrels", "q1 0 d1 1\nq1 0 d2 0\n")
    assert read_qrels(qrels).relevance.tolist() == [1, 0]


def test_id_index() -> None:
    ids = IdIndex(["a", "b", "c"])
    assert len(ids) == 3 and ids[1] == "b" and list(ids) == ["a", "b", "c"]
    assert ids.codes(["c", "x", "a"]).tolist() == [2, -1, 0]
    assert ids.decode([0, -1, 2]) == ["a", None, "c"]
    with pytest.raises(IndexError):
        ids[3]


def _mixed_ids(seed: int, n: int) -> list[str]:
    """Ids of 0-16 bytes (some multi-byte UTF-8), with repeats."""
    rng = random.Random(seed)
    pool = ["", "a", "é", "d1", "q0", "abcdefghijkl", "abcdefghijk", "abcdefghijklm",
            "日本語ab", "x" * 12] + [f"d{rng.randint(0, 10**9)}" for _ in range(200)]
    return [rng.choice(pool) for _ in range(n)]


@pytest.mark.parametrize("short_only", [True, False])
def test_dictionary_encode_matches_pyarrow(short_only: bool) -> None:
    """Short ids (<= 12 bytes) are hashed by their folded view records, longer ones as
    strings: both give pyarrow's codes and dictionary."""
    import pyarrow as pa
    import pyarrow.compute as pc

    ids = [s for s in _mixed_ids(0, 5000) if len(s.encode()) <= 12 or not short_only]
    strings = pa.array(ids, pa.string())
    for arr in (strings, strings.slice(7, 3000)):  # a slice has a non-zero view offset
        got = columnar._dictionary_encode(arr)
        want = pc.dictionary_encode(arr)
        assert got.indices.to_pylist() == want.indices.to_pylist()
        assert got.dictionary.to_pylist() == want.dictionary.to_pylist()
        assert got.dictionary.type == pa.string()
    assert (tiap_ids.keys_of(strings) is None) is not short_only


def test_folds_that_collide_fall_back_to_strings(monkeypatch) -> None:
    """Ids of 8-12 bytes are folded. With the fold made to ignore a record's first word
    (length and first 4 bytes), ids that differ only there collide; the first words are
    compared, so the fold route gives up and the strings decide: same codes, same
    look-ups."""
    import pyarrow as pa

    monkeypatch.setattr(tiap_ids, "FOLD", (np.uint64(0), np.uint64(1)))
    monkeypatch.setattr(tiap_ids, "UNFOLD", np.uint64(1))
    b, a, c = "bbbb-0000001", "aaaa-0000001", "cccc-0000001"  # same bytes 4-11
    strings = pa.array([b, a, b, c, a], pa.string())
    assert tiap_ids.keys_of(strings).kind == "view"
    assert len(set(tiap_ids.keys_of(strings).keys.tolist())) == 1  # every fold collides
    assert tiap_ids.encode_keys(tiap_ids.keys_of(strings)) is None
    got = columnar._dictionary_encode(strings)
    assert got.indices.to_pylist() == [0, 1, 0, 2, 1]
    assert got.dictionary.to_pylist() == [b, a, c]
    index = IdIndex([a, b, c])
    assert index._inline_codes(pa.array([c, "dddd-0000001", a])) is None
    assert index.codes([c, "dddd-0000001", a]).tolist() == [2, -1, 0]


def test_ids_of_one_length_and_prefix() -> None:
    """``doc-00000017``-style ids (one length, one 4-byte prefix): folds cannot collide, so
    no row is checked; codes and dictionary are still pyarrow's."""
    import pyarrow as pa
    import pyarrow.compute as pc

    rng = np.random.default_rng(0)
    ids = pa.array([f"doc-{i:08d}" for i in rng.integers(0, 5000, 20000)], pa.string())
    keyed = tiap_ids.keys_of(ids)
    assert keyed.kind == "view" and (keyed.records[:, 0] == keyed.records[0, 0]).all()
    got, want = columnar._dictionary_encode(ids), pc.dictionary_encode(ids)
    assert got.indices.to_pylist() == want.indices.to_pylist()
    assert got.dictionary.to_pylist() == want.dictionary.to_pylist()


def test_short_view_records_are_zero_padded() -> None:
    """The Arrow rule the fold route stands on: a string of at most 12 bytes is stored in
    its view record as its length and its bytes, the rest zero, even when cut from a longer
    string."""
    import pyarrow as pa
    import pyarrow.compute as pc

    cut = pc.utf8_slice_codeunits(pa.array(["abcdefghijklmnopqrstuvwxyz", "xyzxyzxyzxyzq"]), 0, 3)
    records = tiap_ids.keys_of(cut, fold=True).records
    raw = records.view(np.uint8).reshape(-1, 16)
    assert raw.tolist() == [[3, 0, 0, 0, 97, 98, 99] + [0] * 9,
                            [3, 0, 0, 0, 120, 121, 122] + [0] * 9]


def test_exact_keys_of_ids_up_to_7_bytes() -> None:
    """Ids of at most 7 bytes get one integer each, bytes and length: distinct ids give
    distinct keys (also ids that differ only by a trailing NUL), and the keys give the
    view records back."""
    import pyarrow as pa

    ids = ["", "a", "a\x00", "\x00", "ab", "abcdefg", "abcdefh", "é", "日本", "d212336"]
    keyed = tiap_ids.keys_of(pa.array(ids, pa.string()))
    assert keyed.kind == "exact" and len(set(keyed.keys.tolist())) == len(ids)
    folded = tiap_ids.keys_of(pa.array(ids, pa.string()), fold=True)
    assert keyed.view_records().tolist() == folded.records.tolist()
    assert tiap_ids.keys_of(pa.array(ids + ["abcdefgh"], pa.string())).kind == "view"
    encoded = columnar._dictionary_encode(pa.array(ids * 3, pa.string()))
    assert encoded.dictionary.to_pylist() == ids
    assert encoded.indices.to_pylist() == list(range(len(ids))) * 3


def test_ids_over_12_bytes_are_hashed_as_strings() -> None:
    """Ids of more than 12 bytes get no integer keys (the string, large-string and
    string-view layouts alike); their codes are pyarrow's, slices too, and pieces of short
    and long ids merge by the strings."""
    import pyarrow as pa
    import pyarrow.compute as pc

    rng = random.Random(3)
    ids = [f"conv-{rng.randint(0, 99)}:D{rng.randint(1, 30)}:{rng.randint(1, 40)}"
           f"#f{rng.randint(0, 9)}" for _ in range(4000)] + ["é" * 16, "x" * 32, "y" * 13]
    strings = pa.array(ids, pa.string())
    for layout in (pa.string(), pa.large_string(), pa.string_view()):
        assert tiap_ids.keys_of(strings.cast(layout)) is None
    assert tiap_ids.keys_of(pa.array(["x" * 12, "y" * 13])) is None
    for arr in (strings, strings.slice(5, 3000), strings.cast(pa.large_string())):
        got, want = columnar._dictionary_encode(arr), pc.dictionary_encode(arr)
        assert got.indices.to_pylist() == want.indices.to_pylist()
        assert got.dictionary.to_pylist() == want.dictionary.to_pylist()
    merged = columnar._Dictionaries()
    for piece in (["abcdefghijklm", "d1"], ["short", "abcdefghijklm"], ["d1", "q" * 20]):
        merged.add(columnar._dictionary_encode(pa.array(piece)).values)
    unified, code_map = merged.finish()
    assert unified.to_pylist() == ["abcdefghijklm", "d1", "short", "q" * 20]
    assert code_map.tolist() == [0, 1, 2, 0, 1, 3, -1]


def test_id_index_codes_short_and_long_ids() -> None:
    ids = _mixed_ids(1, 3000)
    index = IdIndex(list(dict.fromkeys(ids)))
    probe = _mixed_ids(2, 2000) + ["never-seen", "zz"]
    want = {s: i for i, s in enumerate(index.to_list())}
    assert index.codes(probe).tolist() == [want.get(s, -1) for s in probe]
    short = [s for s in probe if len(s.encode()) <= 12]
    assert index.codes(short).tolist() == [want.get(s, -1) for s in short]
    short_index = IdIndex([s for s in index.to_list() if len(s.encode()) <= 12])
    want = {s: i for i, s in enumerate(short_index.to_list())}
    assert short_index.codes(short).tolist() == [want.get(s, -1) for s in short]
    # exact keys (<= 7 bytes) on one side, folds (8-12 bytes) on the other, both ways
    tiny = [s for s in short if len(s.encode()) <= 7]
    assert short_index.codes(tiny).tolist() == [want.get(s, -1) for s in tiny]
    tiny_index = IdIndex(list(dict.fromkeys(tiny)))
    want = {s: i for i, s in enumerate(tiny_index.to_list())}
    assert tiny_index.codes(short).tolist() == [want.get(s, -1) for s in short]
    assert tiny_index.codes(tiny).tolist() == [want.get(s, -1) for s in tiny]


# --------------------------------------------------------------------------------------------
# bad files: the reference reader's located errors, whichever route found the problem

GOOD = "q1 Q0 a 1 3 s\nq1 Q0 b 2 2 s\nq2 Q0 a 1 1 s\n"


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("duplicate", "q1 Q0 a 1 3 s\nq1 Q0 a 2 2 s\n", "'a' appears more than once"),
        ("gap", "q1 Q0 a 1 3 s\nq1 Q0 b 3 2 s\n", "rank 2 is missing"),
        ("tie", "q1 Q0 a 1 3 s\nq1 Q0 b 1 2 s\n", "rank 1 is given twice"),
        ("zero rank", "q1 Q0 a 0 3 s\n", "the lowest rank is 0"),
        ("nan", GOOD + "q3 Q0 a 1 nan s\n", "'nan' is not finite"),
        ("inf", GOOD + "q3 Q0 a 1 -inf s\n", "'-inf' is not finite"),
        ("huge", GOOD + "q3 Q0 a 1 1e999 s\n", "'1e999' is not finite"),
        ("word score", GOOD + "q3 Q0 a 1 high s\n", "'high' is not a number"),
        ("float rank", GOOD + "q3 Q0 a 1.0 1 s\n", "rank '1.0' is not an integer"),
        ("hex rank", GOOD + "q3 Q0 a 0x1 1 s\n", "rank '0x1' is not an integer"),
        ("columns", GOOD + "q3 Q0 a 1 1\n", "expected 6 whitespace-separated columns"),
        ("empty field", GOOD + "q3 Q0  1 1 s\n", "expected 6 whitespace-separated columns"),
        ("tab in id", GOOD + "q3 Q0 a\tb 1 1 s\n", "expected 6 whitespace-separated columns"),
        ("nbsp in id", GOOD + "q3 Q0 a\u00a0b 1 1 s\n", "expected 6 whitespace-separated"),
    ],
)
def test_bad_runs_report_like_the_reference(tmp_path: Path, name: str, text: str,
                                            expected: str) -> None:
    message = _same_error(_write(tmp_path / "bad.trec", text))
    assert expected in message and "bad.trec:" in message


def test_bad_run_names_file_line_and_query(tmp_path: Path) -> None:
    lines = _random_trec(5)
    lines[17] = lines[17].replace(lines[17].split()[4], "nan")
    path = _write(tmp_path / "run.trec", "".join(lines))
    message = _same_error(path)
    qid = lines[17].split()[0]
    assert f"run.trec:18, query {qid}: score 'nan' is not finite" in message


def test_not_utf8_and_unknown_system(tmp_path: Path) -> None:
    path = tmp_path / "latin1.trec"
    path.write_bytes(GOOD.encode() + "q3 Q0 caf\u00e9 1 1 s\n".encode("latin-1"))
    assert f"latin1.trec:{GOOD.count(chr(10)) + 1}: not valid UTF-8: byte(s) e9 at byte offset " \
        f"{len(GOOD.encode()) + 9} " in _same_error(path)
    good = _write(tmp_path / "good.trec", GOOD)
    assert "no rankings for system 'x'" in _same_error(good, system="x")


# --------------------------------------------------------------------------------------------
# qrels

QRELS = "q1 0 a 1\nq1 0 b 0\nq2 0 a 2\nq1 0 c 1\n"


@pytest.mark.parametrize("fast", [True, False])
def test_qrels(tmp_path: Path, monkeypatch, fast: bool) -> None:
    if not fast:
        monkeypatch.setattr(columnar, "_fast_qrels", lambda *a: (_ for _ in ()).throw(
            columnar._GiveUp("test")))
    q = read_qrels(_write(tmp_path / "t.qrels", QRELS))
    assert q.query_ids.to_list() == ["q1", "q2"] and q.n_judgments == 4 and q.graded
    assert q.as_dict() == {"q1": {"a": 1, "b": 0, "c": 1}, "q2": {"a": 2}}
    assert [q.items[i] for i in q.item.tolist()] == ["a", "b", "a", "c"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (QRELS + "q2 0 a 1\n", "t.qrels:5, query q2: item 'a' is judged twice for this query "
                               "(first on line 3)"),
        (QRELS + "q3 0 a\n", "t.qrels:5, query q3: expected 4 whitespace-separated columns"),
        (QRELS + "q3 0 a yes\n", "t.qrels:5, query q3: relevance 'yes' is not an integer"),
        (QRELS + "q3 0 a 0x1\n", "t.qrels:5, query q3: relevance '0x1' is not an integer"),
        (QRELS + "q3 0 a\u00a0b 1\n", "t.qrels:5, query q3: expected 4"),
        ("", "empty qrels file"),
    ],
)
def test_bad_qrels(tmp_path: Path, text: str, expected: str) -> None:
    with pytest.raises(TiapError) as exc:
        read_qrels(_write(tmp_path / "t.qrels", text))
    assert expected in str(exc.value)


@pytest.mark.parametrize(
    ("values", "value", "expected"),
    [
        (["Q0"] * 5, "Q0", True),
        (["Q0", "Q0", "Q1"], "Q0", False),
        (["Q", "0Q0"], "Q0", False),  # the same bytes, cut elsewhere
        (["Q0"] * 3, "Q", False),
        (["", ""], "", True),
        (["", "a"], "", False),
        (["é", "é"], "é", True),
    ],
)
def test_constant_columns_read_off_buffers(values: list[str], value: str,
                                           expected: bool) -> None:
    import pyarrow as pa

    array = pa.array(values, pa.string())
    assert columnar._all_equal(array, value) is expected
    assert columnar._all_equal(pa.chunked_array([array.slice(1), array.slice(0, 1)]),
                               value) is expected
    assert columnar._all_equal(array.slice(1), value) is all(v == value for v in values[1:])
