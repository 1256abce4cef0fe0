"""``[NAME=]PATH`` values: one reader (:func:`tiap.io.split_named`), one rule, one message,
for every option and argument that takes them.

The rule: a value naming an existing file is a path, even with ``=`` in it; otherwise the
first ``=`` splits it, and neither NAME (stripped; a system name may hold ``/``) nor PATH is
empty. Before, each command split the value its own way: ``' =x'`` gave a system or store
named ``''``, and ``'x='`` a path ``''`` read as the working folder.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tiap.cli.main import main
from tiap.errors import TiapError
from tiap.io import split_named

RULE = "no such file, and not NAME=PATH (neither NAME nor PATH may be empty)"


@pytest.mark.parametrize(("value", "expected"), [
    ("bm25=runs/bm25.trec", ("bm25", Path("runs/bm25.trec"))),
    (" bm25 =x.trec", ("bm25", Path("x.trec"))),        # NAME is stripped
    ("a=b=c", ("a", Path("b=c"))),                      # the first '=' splits
    ("a/b=x.trec", ("a/b", Path("x.trec"))),            # a system name may hold '/'
    ("runs/bm25.trec", (None, Path("runs/bm25.trec"))),  # no '=': a path
])
def test_split(value: str, expected: tuple[str | None, Path]) -> None:
    assert split_named(value, "--run") == expected


@pytest.mark.parametrize("value", ["=x.trec", " =x.trec", "name=", " = "])
def test_refused(value: str) -> None:
    with pytest.raises(TiapError) as err:
        split_named(value, "--run")
    p = err.value.problems[0]
    assert (p.code, p.message) == ("invalid-value", f"--run {value!r}: {RULE}")


def test_an_existing_file_is_a_path(tmp_path: Path) -> None:
    f = tmp_path / "name=with=equals.trec"
    f.write_text("q1 Q0 d1 1 1.0 s\n", encoding="utf-8")
    assert split_named(str(f), "--run") == (None, f)
    odd = tmp_path / "runs" / "=x"  # a file whose name would be an empty NAME
    odd.parent.mkdir()
    odd.write_text("", encoding="utf-8")
    assert split_named(str(odd), "--run") == (None, odd)


@pytest.mark.parametrize(("argv", "option", "value"), [
    (["rescore", "--run", "=r.trec", "--qrels", "q.qrels"], "--run", "=r.trec"),
    (["rescore", "--run", "r.trec", "--qrels", " =q.qrels"], "--qrels", " =q.qrels"),
    (["rescore", "--run", "r.trec", "--items", "f1=", "--queries", "q.jsonl"], "--items",
     "f1="),
    (["targets", "--items", "i.jsonl", "--queries", "q.jsonl", "--overlay", "=o.jsonl"],
     "--overlay", "=o.jsonl"),
    (["audit", "agreement", "l.jsonl", "--human", "h="], "--human", "h="),
    (["sensitivity", "=rs"], "rescore folder", "=rs"),
])
def test_every_command_says_the_same(argv: list[str], option: str, value: str, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "r.trec").write_text("q1 Q0 d1 1 1.0 s\n", encoding="utf-8")
    (tmp_path / "q.qrels").write_text("q1 0 d1 1\n", encoding="utf-8")
    assert main([*argv, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.strip() == f"error[invalid-value]: {option} {value!r}: {RULE}"
    assert not (tmp_path / "out").exists()
