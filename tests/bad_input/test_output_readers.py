"""Kind 5 of issue 14 (TIAP's own output files, measure names): values and rows that
cannot be right are errors, never read silently.

- ``per_query.csv`` (read by ``sensitivity`` and ``audit cases``,
  :func:`tiap.scoring.folder.read_per_query`): a value is empty or a finite number in
  [0, 1]; each (system, target, query, measure) once; every system has a row for every
  target and measure and for each query it scored; a last line without a line end was cut.
- the tables of a sensitivity folder (read by ``report``, :mod:`tiap.report.load`): a cut
  last line, a table the manifest lists but the folder lacks, fewer rows than a manifest
  that records them announces, repeated keys, p-values outside [0, 1], non-finite gaps.
- measure names: a cutoff outside 1..1,000,000 is ``invalid-value``, never a traceback.

The toy rescoring: systems ``sys`` and ``sys2``, targets raw, source, canonical, measures
nDCG@5 and R@5, queries q1, q2. ``per_query.csv`` is written system, target, measure,
query, so its lines are (hand count): 1 header; system sys: 2-3 raw nDCG@5 q1 q2; 4-5 raw
R@5; 6-7 source nDCG@5; 8-9 source R@5; 10-11 canonical nDCG@5; 12-13 canonical R@5;
system sys2: the same at 14-25. ``winner_flips.csv`` has one row per measure and pair of
targets for the one pair of systems: 2 x 3 = 6 rows, lines 2-7.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tiap.cli.main import main
from tiap.datasets.queryfile import write_queries
from tiap.datasets.records import Query
from tiap.errors import TiapError
from tiap.memory.store import Item, write_items
from tiap.runs import Ranking, Run, write_jsonl_run
from tiap.scoring.folder import read_per_query
from tiap.scoring.measures import MAX_CUTOFF, Measure, parse_measure, parse_measures

ITEMS = [Item("t1", "raw", ("u1",), text="Caroline: I moved to Paris."),
         Item("t2", "raw", ("u2",), text="Melanie: pottery is fun."),
         Item("f1", "fact", ("u1",), text="Caroline moved to Paris.")]
QUERIES = [Query("q1", "c", "Where did Caroline move?", "Paris", "single-hop", ("u1",)),
           Query("q2", "c", "What does Melanie do?", "pottery", "single-hop", ("u2",))]
RUNS = [Run(system="sys", benchmark="toy", rankings=(Ranking("q1", "sys", ("f1", "t1")),
                                                    Ranking("q2", "sys", ("t2",)))),
        Run(system="sys2", benchmark="toy", rankings=(Ranking("q1", "sys2", ("t1",)),
                                                     Ranking("q2", "sys2", ("f1", "t2"))))]


@pytest.fixture()
def rs(tmp_path: Path) -> Path:
    write_items(tmp_path / "items.jsonl", ITEMS)
    write_queries(tmp_path / "queries.jsonl", QUERIES)
    write_jsonl_run(tmp_path / "run.jsonl", RUNS)
    rc = main(["rescore", "--run", str(tmp_path / "run.jsonl"), "--items",
               str(tmp_path / "items.jsonl"), "--queries", str(tmp_path / "queries.jsonl"),
               "--measures", "nDCG@5,R@5", "--out", str(tmp_path / "rs")])
    assert rc == 0
    return tmp_path / "rs"


def _err(capsys: pytest.CaptureFixture[str]) -> str:
    return capsys.readouterr().err.replace("\n", " ")


def _lines(path: Path) -> list[str]:
    return path.read_bytes().decode().split("\r\n")[:-1]


def _write_lines(path: Path, lines: list[str], end: str = "\r\n") -> None:
    path.write_bytes(("\r\n".join(lines) + end).encode())


def _sensitivity(rs: Path) -> int:
    return main(["sensitivity", str(rs), "--out", str(rs.parent / "sens"),
                 "--resamples", "10"])


def test_the_layout_the_docstring_counts(rs: Path) -> None:
    lines = _lines(rs / "per_query.csv")
    assert len(lines) == 25
    assert lines[2].startswith("sys,raw,q2,nDCG@5,")
    assert lines[12].startswith("sys,canonical,q2,R@5,")
    assert lines[24].startswith("sys2,canonical,q2,R@5,")


@pytest.mark.parametrize(("value", "why"), [("inf", "not finite"), ("nan", "not finite"),
                                            ("1.5", "outside [0, 1]"),
                                            ("-0.25", "outside [0, 1]"),
                                            ("0.5x", "not a number")])
def test_a_value_that_cannot_be_right(rs: Path, capsys, value: str, why: str) -> None:
    pq = rs / "per_query.csv"
    lines = _lines(pq)
    lines[2] = "sys,raw,q2,nDCG@5," + value
    _write_lines(pq, lines)
    assert _sensitivity(rs) == 2
    err = _err(capsys)
    assert f"error[invalid-value]: {pq}:3, query q2:" in err and why in err
    assert not (rs.parent / "sens").exists()
    # audit cases reads the same file through the same reader
    assert main(["audit", "cases", str(rs), "--out", str(rs.parent / "c.jsonl")]) == 2
    assert f"error[invalid-value]: {pq}:3, query q2:" in _err(capsys)
    assert not (rs.parent / "c.jsonl").exists()


def test_a_repeated_row(rs: Path, capsys) -> None:
    pq = rs / "per_query.csv"
    lines = _lines(pq)
    lines.insert(4, "sys,raw,q1,nDCG@5,0.25")  # line 5 repeats line 2's key
    _write_lines(pq, lines)
    assert _sensitivity(rs) == 2
    err = _err(capsys)
    assert f"error[duplicate]: {pq}:5, query q1:" in err
    assert "(sys, raw, q1, nDCG@5)" in err and "first on line 2" in err
    assert not (rs.parent / "sens").exists()


def test_a_last_line_cut_in_the_middle(rs: Path, capsys) -> None:
    pq = rs / "per_query.csv"
    data = pq.read_bytes()
    pq.write_bytes(data[:-5])  # line 25 loses its end
    assert _sensitivity(rs) == 2
    err = _err(capsys)
    assert f"error[truncated]: {pq}:25:" in err
    assert not (rs.parent / "sens").exists()


def test_rows_cut_at_a_line_end(rs: Path, capsys) -> None:
    pq = rs / "per_query.csv"
    _write_lines(pq, _lines(pq)[:-3])  # lines 23-25 gone: the file still ends a line
    assert _sensitivity(rs) == 2
    err = _err(capsys)
    assert f"error[truncated]: {pq}:" in err
    assert "1 rows of sys2/canonical/nDCG@5" in err and "2 queries" in err


def test_a_whole_system_missing(rs: Path, capsys) -> None:
    man = json.loads((rs / "manifest.json").read_text())
    man["systems"]["other"] = dict(man["systems"]["sys"], system="other")  # announced only
    (rs / "manifest.json").write_text(json.dumps(man))
    assert _sensitivity(rs) == 2
    err = _err(capsys)
    assert "error[truncated]" in err and "'other'" in err and str(rs / "per_query.csv") in err


def test_a_measure_or_target_the_rescoring_does_not_have(rs: Path, capsys) -> None:
    pq = rs / "per_query.csv"
    lines = _lines(pq)
    lines[1] = "sys,raw,q1,nDCG@6,0.5"
    _write_lines(pq, lines)
    assert _sensitivity(rs) == 2
    err = _err(capsys)
    assert f"error[invalid-value]: {pq}:2, query q1:" in err and "'nDCG@6'" in err


def test_a_wrong_header_or_encoding(rs: Path, capsys) -> None:
    pq = rs / "per_query.csv"
    lines = _lines(pq)
    _write_lines(pq, ["system,target,query,measure,value", *lines[1:]])
    assert _sensitivity(rs) == 2
    assert f"error[input]: {pq}:1:" in _err(capsys)
    pq.write_bytes(("\r\n".join(lines) + "\r\n").encode().replace(b"q2", b"q\xff", 1))
    assert _sensitivity(rs) == 2
    err = _err(capsys)
    assert f"error[encoding]: {pq}:3:" in err and "byte offset" in err


def test_intervals_and_sizes_are_checked_too(rs: Path, capsys) -> None:
    ts = rs / "target_sizes.csv"
    lines = _lines(ts)
    assert lines[1].startswith("sys,raw,q1,")
    lines[1] = "sys,raw,q1,-1,1"
    _write_lines(ts, lines)
    assert _sensitivity(rs) == 2
    assert f"error[invalid-value]: {ts}:2, query q1:" in _err(capsys)
    lines[1] = "sys,raw,q9,1,1"
    _write_lines(ts, lines)
    assert _sensitivity(rs) == 2
    assert f"error[invalid-value]: {ts}:2, query q9:" in _err(capsys)


# -- report: the tables of a sensitivity folder -----------------------------------------


@pytest.fixture()
def sens(rs: Path) -> Path:
    assert _sensitivity(rs) == 0
    return rs.parent / "sens"


def _report(sens: Path) -> int:
    return main(["report", str(sens), "--out", str(sens.parent / "report")])


def _flips(sens: Path) -> tuple[list[str], list[list[str]]]:
    with open(sens / "winner_flips.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    return rows[0], rows[1:]


def _write_flips(sens: Path, head: list[str], rows: list[list[str]]) -> None:
    with open(sens / "winner_flips.csv", "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([head, *rows])


def test_the_untouched_folder_reports(sens: Path) -> None:
    assert _report(sens) == 0


def test_a_truncated_winner_flips(sens: Path, capsys) -> None:
    f = sens / "winner_flips.csv"
    head, rows = _flips(sens)
    assert len(rows) == 6
    data = f.read_bytes()
    f.write_bytes(data[:-7])
    assert _report(sens) == 2
    assert f"error[truncated]: {f}:7:" in _err(capsys)
    assert not (sens.parent / "report").exists()


def test_winner_flips_with_fewer_rows_than_the_manifest_announces(sens: Path, capsys) -> None:
    man = json.loads((sens / "manifest.json").read_text())
    man["outputs"] = {name: {"rows": 99 if name == "winner_flips.csv" else None}
                      for name in man["outputs"]}
    (sens / "manifest.json").write_text(json.dumps(man))
    assert _report(sens) == 2
    err = _err(capsys)
    assert f"error[truncated]: {sens / 'winner_flips.csv'}:" in err
    assert "6 rows, the manifest announces 99" in err


def test_a_listed_table_that_is_gone(sens: Path, capsys) -> None:
    (sens / "system_means.csv").unlink()
    assert _report(sens) == 2
    err = _err(capsys)
    assert f"error[io]: {sens / 'system_means.csv'}:" in err


@pytest.mark.parametrize(("column", "value", "code"), [("p_1", "1.5", "invalid-value"),
                                                       ("gap_1", "inf", "invalid-value"),
                                                       ("gap_2", "nan", "invalid-value"),
                                                       ("flip", "yes", "invalid-value")])
def test_a_flip_value_that_cannot_be_right(sens: Path, capsys, column, value, code) -> None:
    head, rows = _flips(sens)
    rows[1][head.index(column)] = value
    _write_flips(sens, head, rows)
    assert _report(sens) == 2
    err = _err(capsys)
    assert f"error[{code}]: {sens / 'winner_flips.csv'}:3:" in err and column in err


def test_a_repeated_flip_row(sens: Path, capsys) -> None:
    head, rows = _flips(sens)
    _write_flips(sens, head, [*rows, rows[0]])
    assert _report(sens) == 2
    err = _err(capsys)
    assert f"error[duplicate]: {sens / 'winner_flips.csv'}:8:" in err
    assert "first on line 2" in err


def test_a_broken_manifest_is_located(sens: Path, capsys) -> None:
    (sens / "manifest.json").write_text('{"command": "sensitivity",\n "outputs": [}')
    assert _report(sens) == 2
    assert f"error[input]: {sens / 'manifest.json'}:2" in _err(capsys)


# -- measure names ----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["nDCG@99999999999999999999", "nDCG@1000001", "R@0",
                                  "RR@-3", "nDCG@" + "9" * 4000])
def test_absurd_cutoffs(name: str) -> None:
    with pytest.raises(TiapError) as info:
        parse_measures(f"R@5,{name}")
    assert info.value.code == "invalid-value"
    assert "1 to 1,000,000" in str(info.value)


def test_the_largest_cutoff() -> None:
    assert parse_measure(f"nDCG@{MAX_CUTOFF}") == Measure("nDCG", 1_000_000)
    with pytest.raises(TiapError):
        Measure("nDCG", 10**30)


def test_absurd_cutoff_on_the_command_line(rs: Path, capsys) -> None:
    out = rs.parent / "c.jsonl"
    assert main(["audit", "cases", str(rs), "--out", str(out),
                 "--measure", "nDCG@99999999999999999999"]) == 2
    err = _err(capsys)
    assert "error[invalid-value]: --measure:" in err and "1 to 1,000,000" in err
    assert main(["rescore", "--run", str(rs.parent / "run.jsonl"), "--items",
                 str(rs.parent / "items.jsonl"), "--queries", str(rs.parent / "queries.jsonl"),
                 "--measures", "nDCG@99999999999999999999", "--out", str(rs.parent / "r2")]) == 2
    assert "error[invalid-value]" in _err(capsys)
    assert not out.exists() and not (rs.parent / "r2").exists()


_ALIASES = {"ndcg": "nDCG", "ndcg_cut": "nDCG", "r": "R", "recall": "R", "rr": "RR",
            "mrr": "RR", "success": "Success", "hit": "Success", "p": "P", "precision": "P"}


@st.composite
def _measure_texts(draw: st.DrawFn) -> tuple[str, str | None, int | None]:
    """``NAME@DIGITS`` with spaces and any case: (text, reference family, reference k)."""
    alias = draw(st.sampled_from(sorted(_ALIASES)))
    name = "".join(c.upper() if draw(st.booleans()) else c for c in alias)
    digits = draw(st.one_of(st.integers(0, 2 * MAX_CUTOFF).map(str),
                            st.integers(0, 10**30).map(str),
                            st.text("0123456789", min_size=1, max_size=25)))
    sp = draw(st.sampled_from(["", " ", "  "]))
    text = f"{sp}{name}{sp}@{sp}{digits}{sp}"
    if len(digits) > 1 and digits.startswith("0") and digits.strip("0"):
        return text, None, None  # a Python literal cannot start with 0: not a measure
    return text, _ALIASES[alias], int(digits)


@settings(max_examples=300, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(_measure_texts())
def test_measure_names_against_a_reference(case: tuple[str, str | None, int | None]) -> None:
    text, family, k = case
    if family is None or k is None or not 1 <= k <= MAX_CUTOFF:
        with pytest.raises(TiapError):
            parse_measure(text)
        return
    assert parse_measure(text) == Measure(family, k)


@settings(max_examples=300, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.text(max_size=60),
                 st.text("nDCG@R0123456789,()_- ", max_size=60),
                 st.integers(1, 9000).map(lambda n: "-" * n + "1"),
                 st.integers(1, 3000).map(lambda n: "(" * n + "R" + ")" * n)))
def test_any_text_is_a_measure_list_or_a_tiap_error(text: str) -> None:
    try:
        got = parse_measures(text)
    except TiapError:
        return
    assert got and all(isinstance(m, Measure) for m in got)
    for m in got:
        assert m.cutoff is None or 1 <= m.cutoff <= MAX_CUTOFF


# -- per_query.csv: any bytes load as the reference reads them, or are a TiapError ------

_HEADER = ["system", "target", "query_id", "measure", "value"]


def _reference(data: bytes) -> dict[tuple[str, str, str, str], float] | None:
    """per_query.csv as the docstring of this module states it, read with the csv module
    (no manifest): the records, or None when the file must be refused."""
    if not data or data[-1:] not in (b"\n", b"\r"):
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    try:
        rows = list(csv.reader(io.StringIO(text, newline=""), strict=True))
    except csv.Error:
        return None
    if not rows or rows[0] != _HEADER:
        return None
    out: dict[tuple[str, str, str, str], float] = {}
    queries: dict[str, set[str]] = {}
    for row in rows[1:]:
        if len(row) != 5:
            return None
        s, t, q, m, v = row
        try:
            parse_measure(m)
        except TiapError:
            return None
        if v == "":
            x = math.nan
        else:
            try:
                x = float(v)
            except ValueError:
                return None
            if not math.isfinite(x) or not -1e-9 <= x <= 1 + 1e-9:
                return None
        if (s, t, q, m) in out:
            return None
        out[(s, t, q, m)] = x
        queries.setdefault(s, set()).add(q)
    targets = {k[1] for k in out}
    measures = {k[3] for k in out}
    for s, qs in queries.items():
        for t in targets:
            for m in measures:
                if any((s, t, q, m) not in out for q in qs):
                    return None
    return out


_VALUES = st.sampled_from(["", "0", "1.0", "0.5", "0.3333333333333333", "1e-3", "inf",
                           "nan", "1.5", "-0.1", "x", " 0.5", "1.0000000001"])


@st.composite
def _per_query_bytes(draw: st.DrawFn) -> bytes:
    systems = draw(st.lists(st.sampled_from(["A", "B", "s,1"]), min_size=1, max_size=2,
                            unique=True))
    targets = draw(st.lists(st.sampled_from(["raw", "source"]), min_size=1, unique=True))
    measures = draw(st.lists(st.sampled_from(["nDCG@5", "R@5", "RR", "zz", "P"]),
                             min_size=1, max_size=2, unique=True))
    queries = draw(st.lists(st.sampled_from(["q1", "q2", 'q"3']), min_size=1, unique=True))
    valid = draw(st.booleans())
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\r\n")
    w.writerow(_HEADER)
    for s in systems:
        for t in targets:
            for m in measures:
                for q in queries:
                    v = draw(st.sampled_from(["", "0.25", "1.0"]) if valid else _VALUES)
                    w.writerow([s, t, q, m, v])
    data = buf.getvalue().encode()
    how = draw(st.sampled_from(["none", "cut", "drop", "repeat", "byte", "insert", "raw"]))
    if how == "cut":
        data = data[:draw(st.integers(0, len(data)))]
    elif how in ("drop", "repeat"):
        lines = data.split(b"\r\n")[:-1]
        i = draw(st.integers(0, len(lines) - 1))
        lines[i:i + 1] = [] if how == "drop" else [lines[i], lines[i]]
        data = b"".join(x + b"\r\n" for x in lines)
    elif how in ("byte", "insert") and data:
        i = draw(st.integers(0, len(data) - 1))
        b = draw(st.binary(min_size=1, max_size=3))
        data = data[:i] + b + data[i + (how == "byte"):]
    elif how == "raw":
        data = draw(st.binary(max_size=200))
    return data


def _records(path: Path) -> dict[tuple[str, str, str, str], float]:
    pq = read_per_query(path, {})
    out = {}
    for (s, t, m), arr in pq.values.items():
        for q, i in pq.order[s].items():
            out[(s, t, q, m)] = float(arr[i])
    return out


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(
        (math.isnan(a[k]) and math.isnan(b[k])) or a[k] == b[k] for k in a)


@settings(max_examples=200, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(_per_query_bytes())
def test_per_query_bytes_load_as_the_reference_or_raise_tiap_error(data: bytes) -> None:
    want = _reference(data)
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "per_query.csv"
        path.write_bytes(data)
        if want is None:
            with pytest.raises(TiapError) as info:
                read_per_query(path, {})
            assert info.value.problems[0].file == str(path)
            assert re.fullmatch(r"[a-z-]+", info.value.code)
        else:
            assert _same(_records(path), want)


def test_a_table_cut_at_a_line_end_is_found_by_its_row_count(sens: Path, capsys) -> None:
    """`tiap sensitivity` records every table's rows and sha256: a file cut exactly after a
    line (which the CSV reader alone cannot tell from a whole file) is truncated, an edited
    one input-changed."""
    man = json.loads((sens / "manifest.json").read_text())
    entry = man["outputs"]["winner_flips.csv"]
    f = sens / "winner_flips.csv"
    lines = f.read_bytes().splitlines(keepends=True)
    assert entry["rows"] == len(lines) - 1 == 6  # header + 6 rows, counted by hand
    f.write_bytes(b"".join(lines[:-1]))
    assert _report(sens) == 2
    assert f"error[truncated]: {f}: 5 rows, the manifest announces 6" in _err(capsys)
    f.write_bytes(b"".join(lines).replace(b"true", b"false", 1))
    assert _report(sens) == 2
    assert f"error[input-changed]: {f}: changed since" in _err(capsys)
