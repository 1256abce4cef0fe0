"""The error and warning codes: every code used in the source is registered in
``tiap.errors.CODES``, and ``docs/errors.md`` lists exactly the registry."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tiap.errors import CODES, Problems, TiapError

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "tiap"
DOC = ROOT / "docs" / "errors.md"

#: ``code="..."`` in a call, or a string as the first argument of a warning counter's add
_USE = re.compile(r"""\bcode\s*=\s*["']([A-Za-z0-9_\-]+)["']""")


def table() -> str:
    """The codes table of docs/errors.md, as it must read (rendered from CODES)."""
    rows = ["| code | kind | what it means | what to do |", "|---|---|---|---|"]
    for code, (meaning, todo) in CODES.items():
        kind = "warning" if "_" in code else "error"
        rows.append(f"| `{code}` | {kind} | {meaning} | {todo} |")
    return "\n".join(rows)


def test_every_code_used_in_the_source_is_registered() -> None:
    used: dict[str, list[str]] = {}
    for path in SRC.rglob("*.py"):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            for code in _USE.findall(line):
                used.setdefault(code, []).append(f"{path.relative_to(ROOT)}:{n}")
    unknown = {c: where for c, where in used.items() if c not in CODES}
    assert not unknown, unknown
    assert "input-changed" in CODES and "usage" in CODES  # the regex does see something
    assert used, "no code= found in the source: the pattern is wrong"


def test_run_reader_warnings_are_registered() -> None:
    from tiap.traces import runs

    assert set(runs._WARNING_TEXT) <= set(CODES)


def test_docs_list_exactly_the_registry() -> None:
    text = DOC.read_text()
    start = text.index("<!-- codes:start -->") + len("<!-- codes:start -->")
    end = text.index("<!-- codes:end -->")
    assert text[start:end].strip() == table(), (
        "docs/errors.md is out of date; its table must read:\n\n" + table())


def test_error_and_warning_codes_are_told_apart_by_their_spelling() -> None:
    # errors are kebab-case, warnings snake_case: the docs' "kind" column relies on it
    for code in CODES:
        assert re.fullmatch(r"[a-z]+(-[a-z]+)*|[a-z]+(_[a-z]+)+", code), code


def test_an_unregistered_code_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="unregistered"):
        TiapError("x", code="no-such-code")
    with pytest.raises(ValueError, match="unregistered"):
        Problems("f").add("x", code="no-such-code")


def test_problems_keep_their_code() -> None:
    probs = Problems("f.jsonl", limit=1)
    probs.add("a", line=1, code="duplicate")
    probs.add("b", line=2, code="duplicate")
    with pytest.raises(TiapError) as info:
        probs.raise_if_any()
    assert info.value.code == "duplicate"
    assert [p.code for p in info.value.problems] == ["duplicate", "duplicate"]
    assert str(info.value.problems[1]) == "f.jsonl: ... and 1 more problems"
