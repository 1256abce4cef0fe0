"""The options of ``tiap audit``: no value is silently turned into another one.

``audit graded --k 0`` was read as "no --k" (60); empty items of ``--targets`` and
``--judges`` were dropped. ``audit judge`` now prints one ``warning[invalid_reply]`` line per
judge whose endpoint gave invalid replies (counted in the manifest), and takes
``--max-invalid``. Every input is built here in ``tmp_path``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_endpoints import HTML, Faults, chat

from tiap.audit import write_cases
from tiap.audit.cases import Case
from tiap.cli.main import main


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    rc = main(args)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return rc, err


def _graded(tmp_path: Path, *extra: str) -> list[str]:
    # the rescoring and the labels do not exist: the options are checked before they are read
    return ["audit", "graded", str(tmp_path / "rs"), "--labels", str(tmp_path / "l.jsonl"),
            "--out", str(tmp_path / "g"), *extra]


@pytest.mark.parametrize("k", ["0", "-5"])
def test_graded_k_below_one_is_refused(k: str, tmp_path: Path, capsys) -> None:
    rc, err = _run(_graded(tmp_path, "--k", k), capsys)
    assert rc == 2 and err.startswith("error[usage]: option --k: "), err
    assert "expected an integer from 1 to 1,000,000" in err and f"got {k} (an integer)" in err
    assert not (tmp_path / "g").exists()


@pytest.mark.parametrize(("option", "value", "item"), [
    ("--targets", "source,,canonical", 2), ("--targets", "source,", 2),
    ("--judges", ",lexical", 1)])
def test_graded_empty_items_are_refused(option: str, value: str, item: int, tmp_path: Path,
                                        capsys) -> None:
    rc, err = _run(_graded(tmp_path, option, value), capsys)
    assert rc == 2
    assert err.splitlines()[0] == (f"error[invalid-value]: {option} {value!r}: item {item} is "
                                   "empty (expected "
                                   f"{'target' if option == '--targets' else 'judge'} names "
                                   "separated by ',')"), err
    assert not (tmp_path / "g").exists()


def test_agreement_empty_judges_item_is_refused(tmp_path: Path, capsys) -> None:
    rc, err = _run(["audit", "agreement", str(tmp_path / "l.jsonl"), "--judges", "a,,b",
                    "--out", str(tmp_path / "ag")], capsys)
    assert rc == 2 and "error[invalid-value]: --judges 'a,,b': item 2 is empty" in err
    assert not (tmp_path / "ag").exists()


# -- audit judge -----------------------------------------------------------------------------


def _cases(path: Path, n: int) -> Path:
    write_cases(path, [Case(case_id=f"s:q{i}:source", system="s", query_id=f"q{i}",
                            target="source", item_id=f"f{i}", item_text="She moved to Paris.",
                            question=f"question {i}", answer="Paris", credited_rank=1,
                            item_kind="fact", dataset="d") for i in range(n)])
    return path


def _judge(cases: Path, out: Path, *extra: str) -> list[str]:
    return ["audit", "judge", str(cases), "--out", str(out), *extra]


@pytest.mark.parametrize(("option", "value"), [
    ("--max-invalid", "1.5"), ("--max-invalid", "-0.1"), ("--max-invalid", "nan"),
    ("--limit", "0"), ("--concurrency", "0"), ("--timeout", "0"), ("--backoff", "-1")])
def test_judge_numbers_out_of_range_are_refused(option: str, value: str, tmp_path: Path,
                                                capsys) -> None:
    rc, err = _run(_judge(_cases(tmp_path / "c.jsonl", 2), tmp_path / "j", "--judge", "lexical",
                          option, value), capsys)
    assert rc == 2 and option in err
    assert not (tmp_path / "j").exists()


def test_judge_max_invalid_without_an_endpoint_judge_is_refused(tmp_path: Path,
                                                                capsys) -> None:
    rc, err = _run(_judge(_cases(tmp_path / "c.jsonl", 2), tmp_path / "j", "--judge", "lexical",
                          "--max-invalid", "0.2"), capsys)
    assert rc == 2 and err.startswith("error[usage]: --max-invalid is for judges that call an "
                                      "endpoint (openai); none of lexical does"), err
    rc, err = _run(_judge(_cases(tmp_path / "c.jsonl", 2), tmp_path / "j", "--judge", "lexical",
                          "--max-invalid", "0.2", "--response-format", "none"), capsys)
    assert rc == 2 and err.startswith("error[usage]: --max-invalid and --response-format are "
                                      "for judges that call an endpoint (openai); none of "
                                      "lexical does"), err


def test_judge_response_format_is_checked_and_names_the_option(tmp_path: Path,
                                                               capsys) -> None:
    rc, err = _run(_judge(_cases(tmp_path / "c.jsonl", 2), tmp_path / "o", "--judge",
                          "openai", "--model", "m", "--base-url", "http://127.0.0.1:9/v1",
                          "--response-format", "json"), capsys)
    assert rc == 2 and err.startswith(
        "error[usage]: option --response-format: expected 'json_schema', 'json_object' or "
        "'none', got \"json\" (a string)"), err
    assert not (tmp_path / "o").exists()


@pytest.fixture()
def one_bad_reply() -> Any:
    """An endpoint answering every case with a verdict, but case 3 with an HTML page."""
    def script(path: str, headers: dict[str, str], body: dict[str, Any]) -> tuple[int, bytes]:
        if "question 3" in json.dumps(body):
            return 200, HTML
        return chat(json.dumps({"semantic_support_label": "supports",
                                "serving_semantics_label": "either_ok", "notes": "ok"}))
    srv = Faults(script)
    yield srv
    srv.close()


def _openai(url: str) -> list[str]:
    return ["--judge", "openai", "--model", "m", "--base-url", url, "--max-retries", "0",
            "--backoff", "0.01", "--concurrency", "1"]


def test_judge_prints_its_counted_invalid_replies(one_bad_reply: Faults, tmp_path: Path,
                                                  capsys) -> None:
    out = tmp_path / "j"
    rc, err = _run(_judge(_cases(tmp_path / "c.jsonl", 12), out, *_openai(one_bad_reply.url)),
                   capsys)
    assert rc == 0, err
    man = json.loads((out / "manifest.json").read_text())
    [entry] = man["counts"]
    w = entry["warnings"]["invalid_reply"]
    assert w["count"] == 1 and len(w["examples"]) == 1 and "s:q3:source" in w["examples"][0]
    lines = [ln for ln in err.splitlines() if ln.startswith("warning[")]
    assert len(lines) == 1, err
    assert lines[0].startswith(f"warning[invalid_reply]: {entry['judge']}: 1 of 12 replies of "
                               f"{one_bad_reply.url}/chat/completions were invalid")
    assert f"(1, counted in {out / 'manifest.json'}); first: record s:q3:source" in lines[0]


def test_judge_max_invalid_reaches_the_endpoint_judge(one_bad_reply: Faults, tmp_path: Path,
                                                      capsys) -> None:
    """One invalid reply in 12 passes the default share (0.5), not --max-invalid 0."""
    out = tmp_path / "j"
    rc, err = _run(_judge(_cases(tmp_path / "c.jsonl", 12), out, *_openai(one_bad_reply.url),
                          "--max-invalid", "0"), capsys)
    assert rc == 2 and err.startswith("error[endpoint]: "), err
    assert "a share of 0 of its replies" in err and not (out / "labels.jsonl").exists()


def test_judge_of_an_empty_cases_file_is_an_error(tmp_path: Path, capsys) -> None:
    """It used to exit 0 with an empty labels.jsonl."""
    cases = tmp_path / "cases.jsonl"
    cases.write_text("\n")
    out = tmp_path / "judged"
    rc, err = _run(_judge(cases, out, "--judge", "lexical"), capsys)
    assert rc == 2
    assert err.startswith(f"error[input]: {cases}: no cases in the file: nothing to judge")
    assert not out.exists()


def test_judge_names_the_option_a_bad_default_came_from(tmp_path: Path, capsys) -> None:
    rc, err = _run(_judge(_cases(tmp_path / "c.jsonl", 2), tmp_path / "o", "--judge",
                          "openai", "--model", "m", "--base-url", "127.0.0.1:9/v1"), capsys)
    assert rc == 2 and err.startswith("error[usage]: option --base-url: expected an http")
    assert not (tmp_path / "o").exists()
