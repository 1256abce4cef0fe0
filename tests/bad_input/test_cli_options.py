"""Kind 5 of the bad-input campaign, command-line options: a value out of range, an empty
list, an empty item or a name defined nowhere is one located error line, exit 2, naming
the option and what it takes, and nothing is written; never a silent default.

The mechanisms (src/tiap/cli/common.py): :func:`bounded` options (the declared ranges of
:data:`tiap.limits.LIMITS`, checked by the callback :func:`in_range`), :func:`one_of`
(choices), and
:func:`split_names` for lists of names (``--targets``, ``--measures``, ``--collections``).
Every input is built here in ``tmp_path``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import typer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tiap.cli.common import in_range, one_of, split_names
from tiap.cli.main import main
from tiap.errors import TiapError

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


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture()
def f(tmp_path: Path) -> dict[str, Path]:
    store = tmp_path / "store"
    store.mkdir()
    return {"items": _jsonl(store / "items.jsonl", ITEMS),
            "store": store,
            "queries": _jsonl(tmp_path / "queries.jsonl", QUERIES),
            "run": _jsonl(tmp_path / "run.jsonl", RUN),
            "out": tmp_path / "out"}


def _rescore(f: dict[str, Path], *extra: str) -> list[str]:
    return ["rescore", "--items", str(f["items"]), "--queries", str(f["queries"]),
            "--run", str(f["run"]), "--out", str(f["out"]), *extra]


def _one_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def _ge(n: int) -> re.Pattern[str]:
    """The wording of a declared range starting at ``n`` (tiap.limits)."""
    return re.compile(rf"option --[a-z0-9-]+: expected an integer from {n} to ")


def _says(says: str | re.Pattern[str], line: str) -> bool:
    return bool(says.search(line)) if isinstance(says, re.Pattern) else says in line


# (arguments after the inputs, option named, code, what the line must say)
RESCORE_CASES = [
    (["--depth", "0"], "--depth", "usage", _ge(1)),
    (["--depth", "-2"], "--depth", "usage", _ge(1)),
    (["--targets", ""], "--targets", "invalid-value", re.compile("is empty")),
    (["--targets", " , "], "--targets", "invalid-value", re.compile("' , ' is empty")),
    (["--targets", "raw,,source"], "--targets", "invalid-value",
     re.compile("item 2 is empty")),
    (["--targets", "raw,"], "--targets", "invalid-value", re.compile("item 2 is empty")),
    (["--targets", "raw,sorce"], "--targets", "invalid-value",
     re.compile(r"unknown target 'sorce' \(did you mean 'source'\?\)")),
    (["--measures", ""], "--measures", "invalid-value", re.compile("is empty")),
    (["--measures", "nDCG@2,,R@2"], "--measures", "invalid-value",
     re.compile("item 2 is empty")),
    (["--measures", "nDCG@0"], "--measures", "invalid-value",
     re.compile(r"nDCG@0.*\bgot 0\b")),
    (["--k", "0"], "--k", "usage", _ge(1)),
    (["--k", "20", "--measures", "R@2"], "--k", "invalid-value",
     re.compile(r"give --k or --measures, not both \(--k 20 means --measures "
                r"nDCG@20,R@20,RR@20,Success@20\)")),
    (["--credit", "sets"], "--credit", "usage", re.compile("not one of group, set")),
    (["--missing", ""], "--missing", "usage", re.compile("not one of skip, zero")),
    (["--dedup", "last"], "--dedup", "usage", re.compile("not one of error, first")),
    # --shared with a target that defines no query: the shared subset is empty
    (["--shared", "--targets", "raw;notes=kind in {note}"], "--shared", "invalid-value",
     re.compile(r"target\(s\) 'notes' define no query")),
]


@pytest.mark.parametrize("extra,option,code,says", RESCORE_CASES,
                         ids=[" ".join(c[0]) or "''" for c in RESCORE_CASES])
def test_rescore_option_errors(f, capsys, extra, option, code, says) -> None:
    assert main(_rescore(f, *extra)) == 2
    line = _one_error(capsys)
    assert line.startswith(f"error[{code}]: "), line
    assert option in line and says.search(line), line
    assert not f["out"].exists()
    assert not [p for p in f["out"].parent.iterdir() if p.name.startswith(".out")]


def test_rescore_edge_values_still_work(f, capsys) -> None:
    # --depth 1: q1 keeps f1 only -> Raw R@2 of q1 is 0 (t1 was at rank 2), q2 keeps t2 -> 1
    assert main(_rescore(f, "--depth", "1", "--credit", "SET", "--measures", "R@2",
                         "--targets", "raw", "--shared")) == 0
    rows = (f["out"] / "per_query.csv").read_text().splitlines()
    assert rows[1:] == ["A,raw,q1,R@2,0.0", "A,raw,q2,R@2,1.0"]
    man = json.loads((f["out"] / "manifest.json").read_text())
    assert man["options"]["depth"] == 1 and man["options"]["credit"] == "set"


def test_rescore_k_is_the_cutoff_of_the_default_measures(f, capsys) -> None:
    # --k 1: q1's top item is the fact f1 (Raw credits no fact; Source credits it through
    # its source u1), q2's is the raw turn t2 (credited by both)
    assert main(_rescore(f, "--k", "1", "--targets", "raw,source")) == 0
    man = json.loads((f["out"] / "manifest.json").read_text())
    assert man["options"]["measures"] == ["nDCG@1", "R@1", "RR@1", "Success@1"]
    rows = set((f["out"] / "per_query.csv").read_text().splitlines()[1:])
    assert {"A,raw,q1,R@1,0.0", "A,raw,q2,R@1,1.0", "A,source,q1,R@1,1.0",
            "A,source,q2,R@1,1.0"} <= rows


def test_targets_command_option_errors(f, capsys) -> None:
    base = ["targets", "--items", str(f["items"]), "--queries", str(f["queries"]),
            "--out", str(f["out"])]
    for value, says in (("", "is empty"), ("raw,,canonical", "item 2 is empty"),
                        ("raw,canonicl", "did you mean 'canonical'")):
        assert main([*base, "--targets", value]) == 2
        line = _one_error(capsys)
        assert line.startswith("error[invalid-value]: --targets") and says in line, line
        assert not f["out"].exists()


@pytest.fixture()
def rescored(f) -> Path:
    r = f["out"].parent / "r"
    assert main(["rescore", "--items", str(f["items"]), "--queries", str(f["queries"]),
                 "--run", f"A={f['run']}", "--run", f"B={f['run']}", "--out", str(r)]) == 0
    return r


SENSITIVITY_CASES = [
    (["--alpha", "0"], "--alpha", "(0, 1)"),
    (["--alpha", "1"], "--alpha", "(0, 1)"),
    (["--alpha", "1.5"], "--alpha", "(0, 1)"),
    (["--alpha", "nan"], "--alpha", "(0, 1)"),
    (["--min-effect", "-0.1"], "--min-effect", "a number from 0 to 1"),
    (["--min-effect", "inf"], "--min-effect", "a number from 0 to 1"),
    (["--min-dz", "-0.1"], "--min-dz", "a number from 0 to 10"),
    (["--min-dz", "nan"], "--min-dz", "a number from 0 to 10"),
    (["--resamples", "0"], "--resamples", _ge(1)),
    (["--answer-depth", "0"], "--answer-depth", _ge(1)),
    (["--correction", "bonferroni"], "--correction", "not one of holm, bh, none"),
]


@pytest.mark.parametrize("extra,option,says", SENSITIVITY_CASES,
                         ids=[" ".join(c[0]) for c in SENSITIVITY_CASES])
def test_sensitivity_option_errors(f, rescored, capsys, extra, option, says) -> None:
    capsys.readouterr()
    assert main(["sensitivity", str(rescored), "--out", str(f["out"]), *extra]) == 2
    line = _one_error(capsys)
    assert line.startswith("error[usage]: ") and option in line, line
    assert _says(says, line), line
    assert not f["out"].exists()


def test_sensitivity_headline_is_measure_or_k(f, rescored, capsys) -> None:
    capsys.readouterr()
    base = ["sensitivity", str(rescored), "--resamples", "20", "--no-answers"]
    assert main([*base, "--out", str(f["out"]), "--k", "60", "--measure", "nDCG@60"]) == 2
    line = _one_error(capsys)
    assert line == ("error[invalid-value]: give --measure or --k, not both (--k 60 means "
                    "--measure nDCG@60)"), line
    assert main([*base, "--out", str(f["out"]), "--k", "20"]) == 2
    assert "measure nDCG@20 is not in the rescore output" in _one_error(capsys)
    assert not f["out"].exists()
    # --k 60 is the default headline, nDCG@60: the same tables as no option at all
    by_k, default = f["out"].parent / "by_k", f["out"].parent / "default"
    assert main([*base, "--out", str(by_k), "--k", "60"]) == 0
    assert main([*base, "--out", str(default)]) == 0
    man = json.loads((by_k / "manifest.json").read_text())
    assert man["options"]["primary"] == {"r": "nDCG@60"}
    for name in ("winner_flips.csv", "deltas.csv"):
        assert (by_k / name).read_bytes() == (default / name).read_bytes()


RETRIEVE_CASES = [
    (["--k", "0"], "--k", _ge(1)),
    (["--batch-size", "0"], "--batch-size", _ge(1)),  # was silently 64
    (["--rrf-k", "-1"], "--rrf-k", re.compile("expected a number from 0 to 1,000,000")),
    (["--system", ""], "--system", re.compile("non-empty")),  # was silently the retriever's
    (["--bm25-b", "1.5"], "--bm25-b", re.compile(r"a number from 0 to 1\b")),
    (["--bm25-k1", "-1"], "--bm25-k1", re.compile("a number from 0 to 100")),
]


@pytest.mark.parametrize("extra,option,says", RETRIEVE_CASES,
                         ids=[" ".join(c[0]) or "''" for c in RETRIEVE_CASES])
def test_retrieve_option_errors(f, capsys, extra, option, says) -> None:
    trace = f["out"].parent / "run_out.jsonl"
    assert main(["retrieve", "--store", str(f["store"]), "--queries", str(f["queries"]),
                 "--retriever", "bm25", "--no-cache", "--out", str(trace), *extra]) == 2
    line = _one_error(capsys)
    assert line.startswith("error[usage]: ") and option in line and says.search(line), line
    assert not trace.exists() and not trace.with_suffix(".trec").exists()


BUILD_STORE_CASES = [
    (["--parser", "heuristic", "--collections", ""], "--collections", "error[invalid-value]",
     "is empty"),  # was: every collection
    (["--parser", "heuristic", "--collections", "conv-26,,conv-30"], "--collections",
     "error[invalid-value]", "item 2 is empty"),
    (["--parser", "heuristic", "--max-facts", "0"], "--max-facts", "error[usage]", _ge(1)),
    (["--parser", "heuristic", "--workers", "0"], "--workers", "error[usage]", _ge(1)),
    (["--parser", "llm", "--timeout", "0"], "--timeout", "error[usage]",
     "a number in (0, 86,400]"),
    (["--parser", "llm", "--timeout", "nan"], "--timeout", "error[usage]",
     "a number in (0, 86,400]"),
    (["--parser", "llm", "--concurrency", "0"], "--concurrency", "error[usage]", _ge(1)),
    (["--parser", "llm", "--max-retries", "-1"], "--max-retries", "error[usage]", _ge(0)),
    (["--parser", "llm", "--max-tokens", "0"], "--max-tokens", "error[usage]", _ge(1)),
    (["--parser", "llm", "--model", "m", "--base-url", "http://127.0.0.1:9/v1",
      "--response-format", "json_list"], "option --response-format", "error[usage]",
     "expected 'json_schema', 'json_object' or 'none', got \"json_list\""),
    (["--parser", "heuristic", "--max-tokens", "64", "--response-format", "none"],
     "--response-format, --max-tokens", "error[input]", "options for --parser llm only"),
]


@pytest.mark.parametrize("extra,option,start,says", BUILD_STORE_CASES,
                         ids=[" ".join(c[0]) for c in BUILD_STORE_CASES])
def test_build_store_option_errors(f, tmp_path, capsys, extra, option, start, says) -> None:
    # refused before any data is read: the --data folder does not even exist
    assert main(["build-store", "locomo", "--out", str(f["out"]), "--data",
                 str(tmp_path / "no-data"), *extra]) == 2
    line = _one_error(capsys)
    assert line.startswith(start) and option in line and _says(says, line), line
    assert not f["out"].exists()


# -- the helpers -----------------------------------------------------------------------------


def test_split_names_by_hand() -> None:
    assert split_names(" a , b ", "--x") == ["a", "b"]
    assert split_names("Raw", "--x", known=["raw"]) == ["Raw"]  # names compare without case
    with pytest.raises(TiapError) as err:
        split_names("a,,b,zz", "--x", known=["a", "b", "zzz"])
    texts = [p.message for p in err.value.problems]
    assert texts == ["--x 'a,,b,zz': item 2 is empty (expected names separated by ',')",
                     "--x: unknown name 'zz' (did you mean 'zzz'?); known: a, b, zzz"]
    assert {p.code for p in err.value.problems} == {"invalid-value"}
    with pytest.raises(TiapError) as err:
        split_names("conv-26, conv-30,conv-26", "--collections")
    assert [p.message for p in err.value.problems] == [
        "--collections 'conv-26, conv-30,conv-26': item 3 ('conv-26') repeats item 1"]


def test_in_range_and_one_of_by_hand() -> None:
    unit = in_range("alpha", "--a")  # (0, 1), open at both ends
    assert unit(0.5) == 0.5 and unit(None) is None
    for bad in (0.0, 1.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(TiapError, match=r"^option --a: expected a number in \(0, 1\), "
                                            r"got .* \(a float\)$") as err:
            unit(bad)
        assert err.value.problems[0].code == "usage"
    closed = in_range("unit", "--b")  # [0, 1]
    assert closed(0.0) == 0.0 and closed(1.0) == 1.0
    pick = one_of("holm", "bh")
    assert pick("BH") == "bh"
    with pytest.raises(typer.BadParameter, match="'x' is not one of holm, bh"):
        pick("x")


# -- property: a list option either parses to the reference items or is a TiapError ---------


@settings(max_examples=300, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(value=st.text(alphabet=st.sampled_from("ab ,;={}\t\u00e9"), max_size=12))
def test_split_names_is_the_reference_split_or_an_error(value: str) -> None:
    reference = [v.strip() for v in value.split(",")]  # str.split, then strip each item
    try:
        got = split_names(value, "--x")
    except TiapError as exc:
        # refused only for an empty item or an item given twice
        assert not all(reference) or len(set(reference)) < len(reference), value
        assert all(p.code == "invalid-value" and "--x" in p.message for p in exc.problems)
    else:
        assert got == reference and all(got) and len(set(got)) == len(got)


@settings(max_examples=300, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(value=st.lists(st.sampled_from(["raw", "source", "sorce", ",", ";", "=",
                                       "kind in {fact}", " ", "x", "{"]),
                      max_size=6).map("".join))
def test_split_targets_never_raises_anything_else(value: str) -> None:
    from tiap.cli.targets import split_targets
    from tiap.targets.targets import DEFAULT_REGISTRY

    try:
        got = split_targets(value)
    except TiapError as exc:
        assert all("--targets" in p.message for p in exc.problems), value
    else:
        assert got and all(got)
        defined = {t.partition("=")[0].strip().lower() for t in got if "=" in t}
        assert all(t in DEFAULT_REGISTRY or t.lower() in defined for t in got if "=" not in t)


@pytest.mark.parametrize("qrels", [False, True])
def test_a_run_sharing_no_query_with_the_queries_is_an_error(tmp_path: Path, capsys,
                                                              qrels: bool) -> None:
    """Rescoring a run none of whose queries is judged used to exit 0 with n = 0 everywhere."""
    run = tmp_path / "run.trec"
    run.write_text("zz1 Q0 t1 1 1.0 s\n")
    if qrels:
        q = tmp_path / "raw.qrels"
        q.write_text("q1 0 t1 1\n")
        args = ["--qrels", f"raw={q}"]
    else:
        q = tmp_path / "queries.jsonl"
        q.write_text('{"query_id": "q1", "question": "?", "evidence": ["u1"]}\n')
        items = tmp_path / "items.jsonl"
        items.write_text('{"item_id": "t1", "kind": "raw", "sources": ["u1"]}\n')
        args = ["--queries", str(q), "--items", str(items)]
    assert main(["rescore", "--run", str(run), *args, "--out", str(tmp_path / "rs")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error[invalid-value]: {run}: no query of run 's' is in the ")
    assert "'zz1'" in err and "'q1'" in err
    assert not (tmp_path / "rs").exists()


def test_rescore_findings_are_coded_warnings_counted_in_the_manifest(tmp_path: Path,
                                                                     capsys) -> None:
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 t1 1 2.0 s\nq1 Q0 ghost 2 1.0 s\nq9 Q0 t1 1 1.0 s\n")
    q = tmp_path / "queries.jsonl"
    q.write_text('{"query_id": "q1", "question": "?", "evidence": ["u1"]}\n'
                 '{"query_id": "q2", "question": "?", "evidence": ["u1"]}\n')
    items = tmp_path / "mem" / "items.jsonl"  # the store is named by its folder
    items.parent.mkdir()
    items.write_text('{"item_id": "t1", "kind": "raw", "sources": ["u1"]}\n')
    out = tmp_path / "rs"
    assert main(["rescore", "--run", str(run), "--queries", str(q), "--items", str(items),
                 "--out", str(out)]) == 0
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("warning")]
    where = f" (counted in {out / 'manifest.json'})"
    assert lines == [
        "warning[query_not_judged]: s: 1 ranked queries are not in the queries file and were "
        "left out (e.g. q9)" + where,
        "warning[query_not_ranked]: s: 1 queries of the queries file have no ranking in the "
        "run and were left out (e.g. q2)" + where,
        "warning[unknown_ranked_item]: s: 1 ranked ids in 1 queries are not in the store "
        "mem and earn nothing (e.g. q1: ghost)" + where]
    rep = json.loads((out / "manifest.json").read_text())["systems"]["s"]
    assert rep["queries_not_in_queries_file"]["count"] == 1
    assert rep["queries_not_in_run"]["count"] == 1
    assert rep["unknown_ranked_items"]["count"] == 1
