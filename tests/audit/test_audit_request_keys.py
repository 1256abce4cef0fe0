"""A verdict's key is what was asked: each distinct request is sent once per judge.

The cases are the real ones of conftest.py's two-store audit (LoCoMo conv-26, stores f1 and
f5, ``cases --each``), plus copies that differ only in fields the rubric's template does not
send (raw support, case id, system, store, target, an empty kind that the template renders
as "memory"). What a judge is asked is counted where it arrives: the local stand-in
endpoint records every request body, an offline judge records every input it answers. The
expected counts come from the cases themselves: the distinct values of the template's
placeholders (question, answer, kind, text) for the openai judge, and the distinct (answer,
text) pairs for the lexical judge.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from collections.abc import Sequence
from typing import Any

import pytest
from audit_fixtures import case
from stub_openai import StubServer

from tiap.audit import Verdict, VerdictCache, read_labels, run_judges, write_cases
from tiap.audit.cases import Case
from tiap.audit.judges import LexicalJudge
from tiap.cli.main import main
from tiap.errors import TiapError


def variants(cases: Sequence[Case]) -> list[Case]:
    """The cases; for every third, a copy that differs only in what the template does not
    send; for every fifth, two copies of kind "" and "memory" (one prompt: the template
    renders an empty kind as "memory")."""
    out = list(cases)
    for n, c in enumerate(cases[::3]):
        out.append(dataclasses.replace(
            c, case_id=f"{c.case_id}:copy", system=f"{c.system}-copy",
            store="elsewhere", target="canonical" if c.target == "source" else "source",
            raw_support_text=f"another raw turn {n}", raw_support_item_id=f"x{n}",
            raw_support_rank=7, extra={"note": n}))
    for c in cases[::5]:
        out += [dataclasses.replace(c, case_id=f"{c.case_id}:kind-{k or 'none'}", item_kind=k)
                for k in ("", "memory")]
    return out


def prompt(c: Case) -> tuple[str, str, str, str]:
    """What the rubric's user template sends (an empty kind is rendered as "memory")."""
    return (c.question, c.answer, c.item_kind or "memory", c.item_text)


@pytest.fixture()
def cases(two_store_audit: dict[str, Any]) -> list[Case]:
    out = variants(two_store_audit["cases"])
    # the premise: the old key (every judged field) splits prompts that are identical
    old_keys = {json.dumps(c.judged_fields(), sort_keys=True) for c in out}
    assert len(old_keys) > len({prompt(c) for c in out})
    return out


def test_openai_judge_sends_each_distinct_prompt_once(cases, tmp_path, monkeypatch) -> None:
    pytest.importorskip("httpx")
    from tiap.audit.openai_judge import OpenAIJudge

    monkeypatch.setenv("TIAP_TEST_KEY", "sk-request-keys")
    want = len({prompt(c) for c in cases})
    with StubServer() as server, VerdictCache(tmp_path / "c.sqlite") as vc:
        def judge(**kw: Any) -> OpenAIJudge:
            return OpenAIJudge(model="stub-model", base_url=server.base_url,
                               api_key_env="TIAP_TEST_KEY", concurrency=8, **kw)

        run = run_judges(cases, [judge()], vc)
        bodies = [json.dumps(b, sort_keys=True) for b in server.bodies]
        assert len(bodies) == want  # one request per distinct prompt ...
        assert len(set(bodies)) == len(bodies)  # ... never one twice
        assert run.stats[0].asked == run.stats[0].requests == want
        keys = {}
        for c, r in zip(cases, run.records, strict=True):
            assert keys.setdefault(prompt(c), r.request_key) == r.request_key
        assert len(set(keys.values())) == want
        # a rerun, and a judge that differs only in its name and transport, ask nothing
        again = run_judges(cases, [judge(name="renamed", timeout=5.0, max_retries=1)], vc)
        assert len(server.bodies) == want
        assert again.stats[0].cached == len(cases) and again.stats[0].asked == 0
        assert [r.request_key for r in again.records] == [r.request_key for r in run.records]
        # what is sent changes the key: another temperature asks again
        run_judges(cases[:3], [judge(temperature=0.5)], vc)
        assert len(server.bodies) == want + len({prompt(c) for c in cases[:3]})
        # the cache holds each request itself: the endpoint and the body as it was sent
        for r in run.records[:20]:
            sent = vc.request(r.request_key)
            assert sent is not None and sent["base_url"] == server.base_url
            assert json.dumps(sent["body"], sort_keys=True) in bodies


class CountingLexical(LexicalJudge):
    """The lexical judge, recording every input it is asked about."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.asked: list[tuple[str, str]] = []

    def ask(self, request: dict[str, Any]) -> Verdict:
        self.asked.append((request["answer"], request["item_text"]))
        return super().ask(request)


def test_offline_judge_is_asked_each_distinct_input_once(cases, tmp_path) -> None:
    want = {(c.answer, c.item_text) for c in cases}
    assert len(want) < len({prompt(c) for c in cases})  # the kind is not its input either
    j = CountingLexical()
    with VerdictCache(tmp_path / "c.sqlite") as vc:
        run = run_judges(cases, [j], vc)
        assert sorted(j.asked) == sorted(want)
        assert run.stats[0].requests == len(want)
        j2 = CountingLexical(name="lexical-2")
        run_judges(cases, [j2], vc)
        assert j2.asked == []  # renaming asks nothing again
        j3 = CountingLexical(supports=0.9)
        run_judges(cases, [j3], vc)
        assert sorted(j3.asked) == sorted(want)  # a threshold changes the answer
    by = {(c.answer, c.item_text): r.label for c, r in zip(cases, run.records, strict=True)}
    assert all(by[(c.answer, c.item_text)] == r.label
               for c, r in zip(cases, run.records, strict=True))


def test_cli_rerun_asks_nothing(cases, tmp_path) -> None:
    write_cases(tmp_path / "cases.jsonl", cases)
    for _ in range(2):
        assert main(["audit", "judge", str(tmp_path / "cases.jsonl"), "--judge", "lexical",
                     "--out", str(tmp_path / "out")]) == 0
    man = json.loads((tmp_path / "out" / "manifest.json").read_text())
    (counts,) = man["counts"]
    assert counts["asked"] == 0 and counts["from_cache"] == len(cases)
    assert counts["requests"] == len({(c.answer, c.item_text) for c in cases})
    recs = read_labels(tmp_path / "out" / "labels.jsonl")
    assert all(len(r.request_key) == 64 for r in recs)
    assert {r.store for r in recs} == {c.store for c in cases}


def test_an_old_cache_is_refused_not_mixed(tmp_path, capsys) -> None:
    old = tmp_path / "cache.sqlite"
    db = sqlite3.connect(old)
    db.execute("CREATE TABLE verdicts (judge_key TEXT NOT NULL, case_key TEXT NOT NULL, "
               "judge TEXT NOT NULL, case_id TEXT NOT NULL, label TEXT NOT NULL, verdict TEXT "
               "NOT NULL, timing TEXT NOT NULL, created TEXT NOT NULL, PRIMARY KEY (judge_key, "
               "case_key))")
    db.commit()
    db.close()
    with pytest.raises(TiapError, match="schema 1, not 2") as err:
        VerdictCache(old)
    assert str(old) in str(err.value)
    write_cases(tmp_path / "cases.jsonl", [case(1, "q")])
    assert main(["audit", "judge", str(tmp_path / "cases.jsonl"), "--judge", "lexical",
                 "--cache", str(old), "--out", str(tmp_path / "out")]) == 2
    assert "cannot be reused" in capsys.readouterr().err
    with VerdictCache(tmp_path / "new.sqlite") as vc:  # a new cache opens again
        run_judges([case(1, "q")], [LexicalJudge()], vc)
    with VerdictCache(tmp_path / "new.sqlite") as vc:
        assert len(vc) == 1
