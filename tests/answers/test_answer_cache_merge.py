"""``tiap cache merge`` takes answer caches too (two machines answering halves of a sample)."""

from __future__ import annotations

from pathlib import Path

from tiap.answers import AnswerCache
from tiap.cli.main import main


def test_answer_caches_merge(tmp_path: Path, capsys) -> None:
    a, b = tmp_path / "a.sqlite", tmp_path / "b.sqlite"
    with AnswerCache(a) as c:
        c.put("k1", model="m", system="A", query_id="q1", answer="Paris")
        c.put("k2", model="m", system="A", query_id="q2", answer="Rome")
    with AnswerCache(b) as c:
        c.put("k2", model="m", system="A", query_id="q2", answer="Milan")  # differs
    assert main(["cache", "merge", str(a), "--into", str(b)]) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert "1 added, 0 already there, 1 differing" in err and "holds 2 answers" in err
    with AnswerCache(b) as c:
        assert (c.get("k1"), c.get("k2")) == ("Paris", "Milan")  # --into's kept
