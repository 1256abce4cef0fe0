"""Tests for tiap.runs: format recognition, validation, warnings and writers."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tiap.errors import MAX_PROBLEMS, TiapError
from tiap.runs import (
    Ranking,
    Run,
    detect_run_format,
    read_run,
    write_jsonl_run,
    write_trec_run,
)
from tiap.runs.formats import (
    FORMAT_JSONL,
    FORMAT_ROWS_CSV,
    FORMAT_ROWS_JSONL,
    FORMAT_ROWS_TSV,
    FORMAT_TREC,
)

# One small run, given in every format below. Expected order for q1 is d1, d2, d3 (by rank),
# for q2 it is e1, e2.
TREC = """\
q1 Q0 d2 2 1.5 bm25
q1 Q0 d1 1 2.0 bm25
q1 Q0 d3 3 0.5 bm25
q2 Q0 e1 1 9 bm25
q2 Q0 e2 2 8 bm25
"""
JSONL = (
    '{"query_id": "q1", "system": "bm25", "ranking": ["d1", "d2", "d3"],'
    ' "scores": [2.0, 1.5, 0.5]}\n'
    '{"query_id": "q2", "system": "bm25", "ranking": ["e1", "e2"], "scores": [9, 8]}\n'
)
ROWS_CSV = """\
benchmark,system,query_id,retrieved_id,rank,score
locomo,bm25,q1,d1,1,2.0
locomo,bm25,q1,d3,3,0.5
locomo,bm25,q1,d2,2,1.5
locomo,bm25,q2,e1,1,9
locomo,bm25,q2,e2,2,8
"""
CSV_HEADER = "query_id,retrieved_id,rank,score\n"
EXPECTED = {"q1": ("d1", "d2", "d3"), "q2": ("e1", "e2")}
EXPECTED_SCORES = {"q1": (2.0, 1.5, 0.5), "q2": (9.0, 8.0)}


def write(path: Path, text: str, *, gz: bool = False) -> Path:
    if gz:
        path.write_bytes(gzip.compress(text.encode("utf-8")))
    else:
        path.write_text(text, encoding="utf-8")
    return path


def orders(run: Run) -> dict[str, tuple[str, ...]]:
    return {r.query_id: r.item_ids for r in run.rankings}


def error_text(excinfo: pytest.ExceptionInfo[TiapError]) -> str:
    return str(excinfo.value)


# --------------------------------------------------------------------------------------------
# Recognition by content
# --------------------------------------------------------------------------------------------


def rows_tsv() -> str:
    return ROWS_CSV.replace(",", "\t")


def rows_jsonl() -> str:
    lines = ROWS_CSV.splitlines()
    header = lines[0].split(",")
    out = []
    for line in lines[1:]:
        row: dict[str, object] = dict(zip(header, line.split(","), strict=True))
        row["rank"] = int(str(row["rank"]))
        row["score"] = float(str(row["score"]))
        out.append(json.dumps(row))
    return "\n".join(out) + "\n"


FORMATS: list[tuple[str, Callable[[], str]]] = [
    (FORMAT_TREC, lambda: TREC),
    (FORMAT_JSONL, lambda: JSONL),
    (FORMAT_ROWS_CSV, lambda: ROWS_CSV),
    (FORMAT_ROWS_TSV, rows_tsv),
    (FORMAT_ROWS_JSONL, rows_jsonl),
]


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize(("fmt", "text"), FORMATS, ids=[f for f, _ in FORMATS])
def test_each_format_recognised_by_content(
    tmp_path: Path, fmt: str, text: Callable[[], str], gz: bool
) -> None:
    # A misleading name: recognition must not depend on the extension.
    path = write(tmp_path / "run.data.csv", text(), gz=gz)
    assert detect_run_format(path) == fmt
    (run,) = read_run(path)
    assert run.system == "bm25"
    assert run.format == fmt
    assert run.source == path
    assert orders(run) == EXPECTED
    assert {r.query_id: r.scores for r in run.rankings} == EXPECTED_SCORES
    assert run.query_ids == ("q1", "q2")
    assert run.warnings == ()
    assert run.benchmark == ("locomo" if fmt.startswith("rows") else None)


def test_leading_blank_lines_and_bom_are_accepted(tmp_path: Path) -> None:
    path = write(tmp_path / "r", "\ufeff\n\n" + ROWS_CSV)
    (run,) = read_run(path)
    assert orders(run) == EXPECTED


def test_trec_rank_column_is_authoritative_over_scores(tmp_path: Path) -> None:
    # Scores say d3 > d1 > d2; ranks say d1, d2, d3. The rank column wins, and the
    # disagreement is counted (trec_eval would sort by score instead).
    path = write(
        tmp_path / "r",
        "q1 Q0 d3 3 5.0 s\nq1 Q0 d1 1 4.0 s\nq1 Q0 d2 2 1.0 s\nq2 Q0 x 1 1.0 s\nq2 Q0 y 2 1.0 s\n",
    )
    (run,) = read_run(path)
    assert run.ranking("q1").item_ids == ("d1", "d2", "d3")
    assert run.ranking("q1").scores == (4.0, 1.0, 5.0)
    # q1 rises (5.0 after 1.0); q2 only ties (1.0, 1.0): counted apart.
    rises, ties = run.warnings
    assert (rises.code, rises.count, rises.queries) == ("score_order", 1, 1)
    assert rises.examples[0].query_id == "q1"
    assert "score 5.0 at rank 3 is above 1.0 at rank 2" in str(rises.examples[0])
    assert (ties.code, ties.count, ties.queries) == ("score_ties", 1, 1)
    assert ties.examples[0].query_id == "q2"
    assert rises.examples[0].line == 1  # the line holding rank 3


def test_several_systems_in_one_file(tmp_path: Path) -> None:
    path = write(tmp_path / "r", TREC + "q1 Q0 z 1 1 dense\nq1 Q0 d1 2 0.5 dense\n")
    runs = read_run(path)
    assert [r.system for r in runs] == ["bm25", "dense"]
    assert orders(runs[1]) == {"q1": ("z", "d1")}
    (dense,) = read_run(path, system="dense")
    assert dense == runs[1]
    with pytest.raises(TiapError) as exc:
        read_run(path, system="splade")
    assert "no rankings for system 'splade'" in error_text(exc)
    assert "'bm25', 'dense'" in error_text(exc)


def test_records_without_a_system_are_named(tmp_path: Path) -> None:
    path = write(tmp_path / "bm25.jsonl.gz", '{"query_id": 7, "ranking": ["a", 3]}\n', gz=True)
    (run,) = read_run(path)
    assert run.system == "bm25"  # the file name's stem
    assert run.ranking("7") == Ranking("7", "bm25", ("a", "3"), None)
    (named,) = read_run(path, system="mine")
    assert named.system == "mine"


def test_rows_without_score_column_and_with_several_benchmarks(tmp_path: Path) -> None:
    path = write(
        tmp_path / "r.tsv",
        "system\tquery_id\tretrieved_id\trank\tbenchmark\n"
        "s\tq1\ta\t1\tlocomo\ns\tq1\tb\t2\tlocomo\ns\tq1\tc\t1\tbeam\n",
    )
    runs = read_run(path)
    assert [(r.benchmark, r.system) for r in runs] == [("locomo", "s"), ("beam", "s")]
    assert runs[0].ranking("q1") == Ranking("q1", "s", ("a", "b"))
    assert runs[1].ranking("q1").scores is None


# --------------------------------------------------------------------------------------------
# Round trips and writers
# --------------------------------------------------------------------------------------------


def test_round_trip_trec_to_jsonl_keeps_order_and_scores(tmp_path: Path) -> None:
    (run,) = read_run(write(tmp_path / "in.trec", TREC))
    n = write_jsonl_run(tmp_path / "out.jsonl", run)
    assert n == 2
    (back,) = read_run(tmp_path / "out.jsonl")
    assert back.format == FORMAT_JSONL
    assert back.rankings == run.rankings  # same ids, same order, same scores


def test_round_trip_jsonl_to_trec_keeps_order(tmp_path: Path) -> None:
    (run,) = read_run(write(tmp_path / "in.jsonl", JSONL))
    n = write_trec_run(tmp_path / "out.trec", run)
    assert n == 5
    # depth = 3 (longest ranking): scores 3, 2, 1 for q1 and 3, 2 for q2.
    assert (tmp_path / "out.trec").read_text().splitlines() == [
        "q1 Q0 d1 1 3 bm25",
        "q1 Q0 d2 2 2 bm25",
        "q1 Q0 d3 3 1 bm25",
        "q2 Q0 e1 1 3 bm25",
        "q2 Q0 e2 2 2 bm25",
    ]
    (back,) = read_run(tmp_path / "out.trec")
    assert orders(back) == orders(run) == EXPECTED
    assert back.warnings == ()  # written scores strictly decrease
    # And back to JSONL again: identical to the TREC reading.
    write_jsonl_run(tmp_path / "again.jsonl.gz", back)
    (again,) = read_run(tmp_path / "again.jsonl.gz")
    assert again.rankings == back.rankings


def test_jsonl_writer_keeps_benchmark_and_unicode_ids(tmp_path: Path) -> None:
    run = Run("s", (Ranking("q 1", "s", ("é item", "b"), (1.0, 0.5)),), benchmark="beam")
    write_jsonl_run(tmp_path / "o.jsonl", [run])
    row = json.loads((tmp_path / "o.jsonl").read_text(encoding="utf-8"))
    assert row == {
        "query_id": "q 1",
        "system": "s",
        "benchmark": "beam",
        "ranking": ["é item", "b"],
        "scores": [1.0, 0.5],
    }
    (back,) = read_run(tmp_path / "o.jsonl")
    assert back.rankings == run.rankings and back.benchmark == "beam"


def test_gzip_writes_are_byte_identical_across_reruns(tmp_path: Path) -> None:
    (run,) = read_run(write(tmp_path / "in", TREC))
    write_trec_run(tmp_path / "a.trec.gz", run)
    write_trec_run(tmp_path / "b.trec.gz", run)
    assert (tmp_path / "a.trec.gz").read_bytes() == (tmp_path / "b.trec.gz").read_bytes()
    assert (
        read_run(tmp_path / "a.trec.gz")[0].rankings == read_run(tmp_path / "b.trec.gz")[0].rankings
    )


def test_trec_write_rejects_whitespace_ids_and_writes_nothing(tmp_path: Path) -> None:
    src = write(
        tmp_path / "in.jsonl",
        '{"query_id": "q1", "system": "s", "ranking": ["ok", "has space"]}\n'
        '{"query_id": "q 2", "system": "s", "ranking": ["tab\\there"]}\n',
    )
    (run,) = read_run(src)  # fine in JSONL
    out = tmp_path / "out.trec"
    out.write_text("previous content\n")
    with pytest.raises(TiapError) as exc:
        write_trec_run(out, run)
    problems = exc.value.problems
    assert len(problems) == 3  # the item in q1, the query id "q 2", the item in "q 2"
    msg = error_text(exc)
    assert str(out) in msg
    assert "query q1: item id 'has space' at rank 2 contains whitespace" in msg
    assert "query id 'q 2' contains whitespace" in msg
    assert "'tab\\there'" in msg
    assert out.read_text() == "previous content\n"  # atomic: untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "out.trec"]


def test_trec_write_empty_ranking_needs_skip_empty(tmp_path: Path) -> None:
    run = Run("s", (Ranking("q1", "s", ()), Ranking("q2", "s", ("a",))))
    with pytest.raises(TiapError) as exc:
        write_trec_run(tmp_path / "o.trec", run)
    assert "query q1: empty ranking" in error_text(exc)
    assert write_trec_run(tmp_path / "o.trec", run, skip_empty=True) == 1
    assert (tmp_path / "o.trec").read_text() == "q2 Q0 a 1 1 s\n"


def test_writers_reject_the_same_query_twice(tmp_path: Path) -> None:
    a = Run("s", (Ranking("q1", "s", ("a",)),))
    with pytest.raises(TiapError, match="query q1: system 's' ranks this query in two runs"):
        write_trec_run(tmp_path / "o.trec", [a, a])
    with pytest.raises(TiapError, match="query q1: system 's' ranks this query in more"):
        write_jsonl_run(tmp_path / "o.jsonl", [a, a])
    assert not (tmp_path / "o.trec").exists() and not (tmp_path / "o.jsonl").exists()


def test_trec_written_by_us_gives_same_order_in_pytrec_eval(tmp_path: Path) -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    # Scores that trec_eval would reorder: tied (q1) and increasing (q2) against the ranks.
    src = write(
        tmp_path / "in.jsonl",
        '{"query_id": "q1", "system": "s", "ranking": ["a", "b", "c", "d"],'
        ' "scores": [1, 1, 1, 1]}\n'
        '{"query_id": "q2", "system": "s", "ranking": ["z", "y", "x"], "scores": [1, 2, 3]}\n',
    )
    (run,) = read_run(src)
    assert {w.code: w.examples[0].query_id for w in run.warnings} == {
        "score_ties": "q1", "score_order": "q2"}
    out = tmp_path / "out.trec"
    write_trec_run(out, run)
    with out.open() as fh:
        parsed = pytrec_eval.parse_run(fh)
    for r in run.rankings:
        docs = parsed[r.query_id]
        # trec_eval's order: score descending, then docno descending.
        trec_order = tuple(sorted(docs, key=lambda d: (docs[d], d), reverse=True))
        assert trec_order == r.item_ids
    # trec_eval itself agrees: the single relevant item at our rank k has RR = 1/k.
    qrels = {"q1": {"c": 1}, "q2": {"y": 1}}
    result = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(parsed)
    assert result["q1"]["recip_rank"] == pytest.approx(1 / 3)
    assert result["q2"]["recip_rank"] == pytest.approx(1 / 2)


# --------------------------------------------------------------------------------------------
# Duplicates
# --------------------------------------------------------------------------------------------

DUP_TREC = """\
q1 Q0 a 1 5 s
q1 Q0 b 2 4 s
q1 Q0 a 3 3 s
q1 Q0 c 4 2 s
q1 Q0 b 5 1 s
q2 Q0 x 2 2 s
q2 Q0 x 1 3 s
q3 Q0 ok 1 1 s
"""


def test_duplicate_item_is_an_error_naming_query_and_item(tmp_path: Path) -> None:
    path = write(tmp_path / "dup.trec", DUP_TREC)
    with pytest.raises(TiapError) as exc:
        read_run(path)
    problems = exc.value.problems
    assert [(p.line, p.query_id) for p in problems] == [(3, "q1"), (5, "q1"), (6, "q2")]
    msg = error_text(exc)
    assert (
        f"{path}:3, query q1: item 'a' appears more than once in the ranking "
        "(ranks 1 and 3; first on line 1)" in msg
    )
    assert f"{path}:6, query q2: item 'x' appears more than once" in msg


def test_dedup_first_keeps_first_in_rank_order_and_counts(tmp_path: Path) -> None:
    (run,) = read_run(write(tmp_path / "dup.trec", DUP_TREC), dedup="first")
    assert orders(run) == {"q1": ("a", "b", "c"), "q2": ("x",), "q3": ("ok",)}
    # q2's kept 'x' is the rank-1 row (line 7), not the first line of the file.
    assert run.ranking("q2").scores == (3.0,)
    (warning,) = run.warnings
    assert warning.code == "duplicate_dropped"
    assert (warning.count, warning.queries) == (3, 2)
    assert [(p.line, p.query_id) for p in warning.examples] == [(3, "q1"), (5, "q1"), (6, "q2")]
    assert "3 in 2 queries" in str(warning)


def test_dedup_in_jsonl_rankings(tmp_path: Path) -> None:
    path = write(
        tmp_path / "r.jsonl",
        '{"query_id": "q1", "system": "s", "ranking": ["a", "b", "a"], "scores": [3, 2, 1]}\n',
    )
    with pytest.raises(TiapError, match=r"r.jsonl:1, query q1: item 'a' .*positions 1 and 3"):
        read_run(path)
    (run,) = read_run(path, dedup="first")
    assert run.ranking("q1") == Ranking("q1", "s", ("a", "b"), (3.0, 2.0))
    assert run.warnings[0].count == 1


def test_bad_dedup_value(tmp_path: Path) -> None:
    with pytest.raises(TiapError, match="dedup must be"):
        read_run(write(tmp_path / "r", TREC), dedup="last")  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# Bad input: each problem names file, line and query
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "text", "line", "qid", "fragment"),
    [
        ("trec-nan", "q1 Q0 a 1 2 s\nq1 Q0 b 2 nan s\n", 2, "q1", "score 'nan' is not finite"),
        ("trec-inf", "q1 Q0 a 1 inf s\n", 1, "q1", "score 'inf' is not finite"),
        ("trec-overflow", "q1 Q0 a 1 1e999 s\n", 1, "q1", "score '1e999' is not finite"),
        (
            "trec-rank-text",
            "q1 Q0 a 1 2 s\nq1 Q0 b two 1 s\n",
            2,
            "q1",
            "rank 'two' is not an integer",
        ),
        ("trec-rank-float", "q1 Q0 a 1.0 2 s\n", 1, "q1", "rank '1.0' is not an integer"),
        ("trec-score-text", "q1 Q0 a 1 high s\n", 1, "q1", "score 'high' is not a number"),
        (
            "trec-columns",
            "q1 Q0 a 1 2 s\nq1 Q0 b 2 1\n",
            2,
            "q1",
            "expected 6 whitespace-separated columns",
        ),
        ("trec-columns-7", "q1 Q0 a 1 2 s\nq1 Q0 b 2 1 s x\n", 2, "q1", "found 7"),
        (
            "trec-gap",
            "q1 Q0 a 1 3 s\nq1 Q0 b 3 1 s\n",
            2,
            "q1",
            "ranks must run 1..2 for the 2 items of this query; rank 2 is missing",
        ),
        ("trec-zero-based", "q1 Q0 a 0 3 s\nq1 Q0 b 1 1 s\n", 1, "q1", "the lowest rank is 0"),
        (
            "trec-rank-tie",
            "q1 Q0 a 1 3 s\nq1 Q0 b 1 1 s\n",
            2,
            "q1",
            "rank 1 is given twice ('a' on line 1 and 'b'); ties in rank",
        ),
        (
            # NaN is not JSON: refused by TIAP's one JSON Lines reader, at its record path
            "jsonl-nan",
            '{"query_id": "q1", "ranking": ["a", "b"], "scores": [1, NaN]}\n',
            1,
            None,
            "NaN is not a JSON value; expected a finite number",
        ),
        (
            # 1e999 is JSON, read as infinity: the run reader refuses it
            "jsonl-overflow",
            '{"query_id": "q1", "ranking": ["a", "b"], "scores": [1, 1e999]}\n',
            1,
            "q1",
            "not finite (NaN or infinite), first at position 2",
        ),
        (
            "jsonl-inf",
            '{"query_id": "q1", "ranking": ["a"], "scores": [-Infinity]}\n',
            1,
            None,
            "-Infinity is not a JSON value",
        ),
        (
            "jsonl-scores-length",
            '{"query_id": "q1", "ranking": ["a", "b"], "scores": [1]}\n',
            1,
            "q1",
            "'scores' has 1 values but 'ranking' has 2",
        ),
        (
            "jsonl-score-type",
            '{"query_id": "q1", "ranking": ["a"], "scores": ["1"]}\n',
            1,
            "q1",
            "'scores' value at position 1 is not a number",
        ),
        (
            "jsonl-ranking-type",
            '{"query_id": "q1", "ranking": "a b"}\n',
            1,
            "q1",
            "'ranking' must be a list",
        ),
        (
            "jsonl-bad-id",
            '{"query_id": "q1", "ranking": ["a", null]}\n',
            1,
            "q1",
            "first at position 2",
        ),
        (
            "jsonl-bad-json",
            '{"query_id": "q1", "ranking": []}\n{"query_id": \n',
            2,
            None,
            "invalid JSON",
        ),
        (
            "jsonl-twice",
            '{"query_id": "q1", "ranking": []}\n{"query_id": "q1", "ranking": ["a"]}\n',
            2,
            "q1",
            "a second ranking for this query (system 'r'; first on line 1)",
        ),
        ("csv-nan", CSV_HEADER + "q1,a,1,NaN\n", 2, "q1", "score 'NaN' is not finite"),
        (
            "csv-columns",
            CSV_HEADER + "q1,a,1,0.5\nq1,b,2\n",
            3,
            "q1",
            "expected 4 columns as in the header, found 3",
        ),
        ("csv-rank", CSV_HEADER + "q1,a,first,0.5\n", 2, "q1", "rank 'first' is not an integer"),
        ("csv-gap", CSV_HEADER + "q1,a,2,0.5\n", 2, "q1", "the lowest rank is 2"),
        ("csv-empty-id", CSV_HEADER + "q1,,1,0.5\n", 2, "q1", "'retrieved_id' is missing or empty"),
        (
            "csv-mixed-score",
            CSV_HEADER + "q1,a,1,0.5\nq1,b,2,\n",
            3,
            "q1",
            "some rows of this query have a score and others do not",
        ),
        (
            "rows-jsonl-rank",
            '{"query_id": "q1", "retrieved_id": "a", "rank": "1"}\n',
            1,
            "q1",
            "rank '1' is not an integer",
        ),
    ],
)
def test_bad_input_is_located(
    tmp_path: Path, name: str, text: str, line: int, qid: str | None, fragment: str
) -> None:
    path = write(tmp_path / "r", text)
    with pytest.raises(TiapError) as exc:
        read_run(path)
    (problem,) = exc.value.problems
    assert problem.file == str(path)
    assert problem.line == line
    assert problem.query_id == qid
    assert fragment in problem.message
    prefix = (f"{path}:{line}" + (f", query {qid}" if qid else "")
              + (f", record {problem.record}" if problem.record else ""))
    assert error_text(exc).startswith(prefix + ": ")


def test_problems_are_collected_and_raised_together(tmp_path: Path) -> None:
    path = write(
        tmp_path / "r",
        "q1 Q0 a 1 2 s\nq1 Q0 b x 1 s\nq2 Q0 c 1 nan s\nq3 Q0 d 1 1\nq4 Q0 e 2 1 s\n",
    )
    with pytest.raises(TiapError) as exc:
        read_run(path)
    assert [(p.line, p.query_id) for p in exc.value.problems] == [
        (2, "q1"),
        (3, "q2"),
        (4, "q3"),
        (5, "q4"),
    ]


def test_very_many_problems_are_capped(tmp_path: Path) -> None:
    path = write(
        tmp_path / "r", "q0 Q0 a 1 1 s\n" + "".join(f"q{i} Q0 a 1 nan s\n" for i in range(60))
    )
    with pytest.raises(TiapError) as exc:
        read_run(path)
    problems = exc.value.problems
    assert len(problems) == MAX_PROBLEMS + 1
    assert problems[-1].message == "... and 10 more problems"


@pytest.mark.parametrize(
    ("text", "gz", "fragment"),
    [
        ("", False, "empty run file: it holds no rankings"),
        ("\n  \n\n", False, "empty run file: it holds no rankings"),
        ("", True, "empty run file: it holds no rankings"),
        (
            "benchmark,system,query_id,retrieved_id,rank,score\n",
            False,
            "empty run file: a header but no rows",
        ),
    ],
)
def test_empty_run_file(tmp_path: Path, text: str, gz: bool, fragment: str) -> None:
    path = write(tmp_path / "empty", text, gz=gz)
    with pytest.raises(TiapError) as exc:
        read_run(path)
    assert error_text(exc).startswith(str(path))
    assert fragment in error_text(exc)


@pytest.mark.parametrize("keep", [0.5, 0.9, 12], ids=["half", "most", "header-only"])
def test_truncated_gzip(tmp_path: Path, keep: float) -> None:
    data = gzip.compress("".join(f"q{i} Q0 d{i} 1 1 s\n" for i in range(2000)).encode())
    path = tmp_path / "run.gz"
    path.write_bytes(data[: int(keep if keep > 1 else len(data) * keep)])
    with pytest.raises(TiapError) as exc:
        read_run(path)
    assert str(path) in error_text(exc)
    assert "corrupt or truncated gzip" in error_text(exc)


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "r"
    path.write_bytes(b"q1 Q0 caf\xe9 1 1 s\n")
    with pytest.raises(TiapError) as info:
        read_run(path)
    (p,) = info.value.problems
    # "q1 Q0 caf" is 9 bytes: the Latin-1 é is byte 9 of line 1
    assert (p.code, p.file, p.line) == ("encoding", str(path), 1)
    assert p.message.startswith("not valid UTF-8: byte(s) e9 at byte offset 9 ")


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ("qid docid score\nq1 a 1\n", "first line: 'qid docid score'"),
        ('{"id": 1}\n', "first line: '{\"id\": 1}'"),
        ("[1, 2]\n", "first line: '[1, 2]'"),
        ('{"query_id": "q1",\n"ranking": []}\n', "not one JSON object on the line"),
        ('{"query_index": 0, "returned_ids_full": []}\n', "looks like an MTEL-Mem trace"),
    ],
)
def test_unknown_format_names_file_first_line_and_expectation(
    tmp_path: Path, text: str, hint: str
) -> None:
    path = write(tmp_path / "mystery.txt", "\n" + text)
    with pytest.raises(TiapError) as exc:
        read_run(path)
    msg = error_text(exc)
    assert msg.startswith(f"{path}:2: unrecognised run format: expected a TREC run")
    assert "JSONL rankings" in msg and "ranked-trace rows" in msg
    assert hint in msg


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(TiapError, match="file not found"):
        read_run(tmp_path / "nope")


# --------------------------------------------------------------------------------------------
# Record invariants
# --------------------------------------------------------------------------------------------


def test_ranking_invariants() -> None:
    r = Ranking("q1", "s", ["a", "b"], [2, 1])  # type: ignore[arg-type]
    assert r.item_ids == ("a", "b") and r.scores == (2.0, 1.0) and r.depth == 2
    with pytest.raises(ValueError, match="'a' occurs more than once"):
        Ranking("q1", "s", ("a", "a"))
    with pytest.raises(ValueError, match="1 scores for 2 items"):
        Ranking("q1", "s", ("a", "b"), (1.0,))
    with pytest.raises(ValueError, match="finite"):
        Ranking("q1", "s", ("a",), (float("nan"),))
    with pytest.raises(ValueError, match="non-empty strings"):
        Ranking("q1", "s", ("a", ""))


def test_run_invariants() -> None:
    a = Ranking("q1", "s", ("a",))
    run = Run("s", [a])  # type: ignore[arg-type]
    assert run.rankings == (a,) and "q1" in run and run.ranking("q1") is a
    with pytest.raises(ValueError, match="more than one ranking"):
        Run("s", (a, a))
    with pytest.raises(ValueError, match="belongs to system 's'"):
        Run("other", (a,))
