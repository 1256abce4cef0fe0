"""The LLM answer judge (tiap.answers.llm_judge): template files (the kit's, read from the
path, and TIAP's own), a real model (SmolLM2-135M on llama.cpp, the ``local_llm`` fixture),
and a stand-in server only to inject faults (an HTML reply, a 500, a reply that is no label)
and to count requests across a killed and a resumed run."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tiap.answers.judges import F1Judge, judge_answers
from tiap.answers.llm_judge import (
    DEFAULT_JUDGE_PROMPT,
    LLMAnswerJudge,
    parse_reply,
    read_prompt,
)
from tiap.answers.records import Answer, AnswerSet
from tiap.errors import TiapError

KIT_PROMPTS = ("judge_abl_no_datetol", "judge_abl_no_extradetail", "judge_abl_no_paraphrase",
               "judge_abl_no_partial", "judge_golden_v1", "judge_golden_v2",
               "judge_longmemeval_default", "judge_longmemeval_temporal",
               "judge_mem0_generous", "judge_mnemoverse", "judge_strict_ours")


def _answers(n: int, texts: list[str] | None = None) -> AnswerSet:
    texts = texts or [f"answer {i}" for i in range(n)]
    return AnswerSet(tuple(Answer("locomo", "X", f"q{i}", t, question=f"Question {i}?",
                                  reference=f"reference {i}") for i, t in enumerate(texts)))


# -- templates ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", KIT_PROMPTS)
def test_the_kits_templates_load_and_render(name: str, data_dir: Path) -> None:
    path = data_dir / "mnemoverse" / "kit" / "prompts" / f"{name}.txt"
    t = read_prompt(path)
    assert t.name == name and t.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    msgs = t.render("QQ-question", "RR-reference", "SS-response")
    text = "\n".join(m["content"] for m in msgs)
    for value in ("QQ-question", "RR-reference", "SS-response"):
        assert value in text
    assert not re.search(r"\{(question|answer|response|gold_answer|generated_answer)\}", text)
    # the comment lines at the top are not sent, nor the section markers
    first_comment = path.read_text().splitlines()[0]
    assert first_comment.startswith("#") and first_comment not in text
    assert "--- SYSTEM ---" not in text and "--- USER TEMPLATE ---" not in text
    assert msgs[-1]["role"] == "user"
    if name.startswith("judge_longmemeval"):  # an empty system section: no system message
        assert [m["role"] for m in msgs] == ["user"]
    else:
        assert [m["role"] for m in msgs] == ["system", "user"]


def test_tiaps_own_prompt() -> None:
    t = read_prompt(DEFAULT_JUDGE_PROMPT)
    assert t.name == "tiap_judge" and t.system and t.unknown == ()
    system, user = t.render("When?", "7 May 2023", "May 7, 2023")
    assert system["role"] == "system" and not system["content"].startswith("#")
    assert "Reference answer: 7 May 2023" in user["content"]
    assert "System's answer: May 7, 2023" in user["content"]
    # the JSON example's braces are sent as they are
    assert '{"label": "CORRECT" or "WRONG"' in user["content"]


def test_filling_is_one_pass_and_leaves_other_braces(tmp_path: Path) -> None:
    p = tmp_path / "t.txt"
    p.write_text('Gold {gold_answer}; said {generated_answer}; asked {question}; {"a": 1} {}\n')
    (msg,) = read_prompt(p).render("{response}", "{answer}", "x {question} y")
    # the values holding placeholder text are never filled again
    assert msg["content"] == 'Gold {answer}; said x {question} y; asked {response}; {"a": 1} {}'


def test_reply_parsing() -> None:
    assert parse_reply('{"label": "WRONG", "reason": "other year"}').label == "wrong"
    assert parse_reply('{"reasoning": "fine", "label": "correct"}').notes == "fine"
    assert parse_reply('Sure:\n```json\n{"label": "CORRECT"}\n```').label == "correct"
    assert parse_reply('My verdict: {"label": "wrong"} (sure)').label == "wrong"
    assert [parse_reply(t).label for t in ("Yes.", "no", "CORRECT", '"Wrong"', "**yes**")] \
        == ["correct", "wrong", "correct", "wrong", "correct"]
    for text, why in (("", "empty reply"), ("Yes, mostly", "the reply is not a label"),
                      ('{"label": "PARTIAL"}', "label 'PARTIAL' is not CORRECT or WRONG"),
                      ('{"label": "CORR', "the reply is not valid JSON")):
        v = parse_reply(text)
        assert v.label == "unscored" and v.reason.startswith(why), (text, v.reason)


# -- a real model --------------------------------------------------------------------------


def test_a_real_model_judges_and_a_rerun_asks_only_what_failed(local_llm, tmp_path: Path,
                                                                ) -> None:
    s = AnswerSet((
        Answer("locomo", "X", "q0", "7 May 2023", question="When did Caroline go to the group?",
               reference="7 May 2023"),
        Answer("locomo", "X", "q1", "Sweden", question="Where did Caroline move from?",
               reference="Sweden"),
        Answer("locomo", "X", "q2", "a dog", question="What pet does Melanie have?",
               reference="two cats"),
    ))
    judge = LLMAnswerJudge(model=local_llm.model, base_url=local_llm.base_url, timeout=300,
                           concurrency=1, max_invalid=1.0, max_tokens=128)
    totals: dict[str, list[int]] = {}

    def progress(name: str, done: int, total: int) -> None:
        totals.setdefault(name, []).append(total)

    cache = tmp_path / "verdicts.sqlite"
    out = judge_answers(s, judge, runs=2, cache=cache, progress=progress)
    names = ["smollm2-135m|tiap_judge|r0", "smollm2-135m|tiap_judge|r1"]
    assert list(out.configs) == names
    for r, name in enumerate(names):
        cfg = out.configs[name]
        assert (cfg.kind, cfg.model, cfg.prompt, cfg.run, cfg.temperature) == \
            ("llm", "smollm2-135m", "tiap_judge", r, 0.0)
        assert cfg.prompt_sha256 == hashlib.sha256(DEFAULT_JUDGE_PROMPT.read_bytes()).hexdigest()
        # the base seed is recorded (run r sends seed 0 + r): the runs differ in run only
        assert cfg.settings["seed"] == 0
        assert totals[name][0] == 3  # three distinct requests per run
    a0, a1 = (dataclasses.replace(out.configs[n], judge="x", run=0) for n in names)
    assert a0 == a1  # one family: the noise band compares the two runs
    labels = {(a.query_id, j): a.verdict(j) for a in out for j in names}
    for v in labels.values():
        assert v.label in ("correct", "wrong", None)
        assert v.label is not None or v.reason  # no label: the reason says why
    failed = {j: sum(labels[(q, j)].label is None for q in ("q0", "q1", "q2")) for j in names}
    # the second run asks only the requests whose reply gave no label
    totals.clear()
    again = judge_answers(s, judge, runs=2, cache=cache, progress=progress)
    for j in names:
        assert totals[j][0] == failed[j]
    for key, v in labels.items():
        if v.label is not None:  # a finished verdict is served from the cache, unchanged
            assert next(a for a in again if a.query_id == key[0]).verdict(key[1]) == v


# -- faults, from a stand-in server --------------------------------------------------------


class FaultServer:
    """Answers chat completions by the tag in the system's answer: ``[ok]`` a JSON label,
    ``[yes]`` the word Yes, ``[html]`` an HTML page with HTTP 200, ``[500]`` HTTP 500,
    ``[prose]`` a reply that is no label. Counts requests per tag."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.bodies: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        srv = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                text = " ".join(m["content"] for m in body["messages"])
                tag = re.search(r"\[(\w+)\]", text).group(1)
                with srv.lock:
                    srv.counts[tag] = srv.counts.get(tag, 0) + 1
                    srv.bodies.append(body)
                status, ctype = 200, "application/json"
                content = {"ok": '{"label": "CORRECT", "reason": "same"}', "yes": "Yes.",
                           "prose": "Well, it depends on the reading."}.get(tag)
                if tag == "html":
                    data = b"<html><body>Bad gateway</body></html>"
                    ctype = "text/html"
                elif tag == "500":
                    status, data = 500, b'{"error": "boom"}'
                else:
                    data = json.dumps({"choices": [{"index": 0, "finish_reason": "stop",
                                                    "message": {"role": "assistant",
                                                                "content": content}}],
                                       "model": body["model"]}).encode()
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"


@pytest.fixture
def faults() -> Iterator[FaultServer]:
    srv = FaultServer()
    srv.thread.start()
    try:
        yield srv
    finally:
        srv.httpd.shutdown()
        srv.httpd.server_close()


def _judge(srv: FaultServer, **kw: Any) -> LLMAnswerJudge:
    args = {"model": "stand-in", "base_url": srv.base_url, "max_retries": 0, "backoff": 0.0,
            "concurrency": 1, "max_invalid": 1.0, **kw}
    return LLMAnswerJudge(**args)


def test_faults_give_no_label_with_the_reason_and_are_asked_again(faults: FaultServer,
                                                                   tmp_path: Path) -> None:
    # the valid replies come first: the structured output mode is settled by then, so the
    # 500 is the server failing, not refusing json_schema
    s = _answers(5, ["[ok]", "[yes]", "[html]", "[500]", "[prose]"])
    cache = tmp_path / "verdicts.sqlite"
    out = judge_answers(s, _judge(faults), cache=cache)
    got = [(a.verdict("stand-in|tiap_judge|r0").label, a.verdict("stand-in|tiap_judge|r0")
            .reason) for a in out]
    assert got[:2] == [("correct", "same"), ("correct", None)]  # the judge's reason kept
    assert got[2] == (None, "the body is not a chat completion")
    assert got[3] == (None, "HTTP 500 after 1 attempts")
    assert got[4][0] is None and got[4][1].startswith("the reply is not a label")
    w = out.warnings["invalid_reply"]
    assert w["count"] == 3 and w["judges"] == {"stand-in|tiap_judge|r0": 3}
    assert faults.counts == {"ok": 1, "yes": 1, "html": 1, "500": 1, "prose": 1}
    # the next run asks the three failed requests again, never the two finished ones
    judge_answers(s, _judge(faults), cache=cache)
    assert faults.counts == {"ok": 1, "yes": 1, "html": 2, "500": 2, "prose": 2}
    # the body asked for the JSON schema of a label and a reason, with the run's seed
    body = faults.bodies[0]
    assert body["response_format"]["json_schema"]["schema"]["required"] == ["label", "reason"]
    assert body["seed"] == 0 and body["temperature"] == 0.0


def test_a_run_of_mostly_invalid_replies_stops(faults: FaultServer, tmp_path: Path) -> None:
    s = _answers(3, ["[ok]", "[html]", "[prose]"])
    with pytest.raises(TiapError, match="gave 2 invalid replies in 3") as exc:
        judge_answers(s, _judge(faults, max_invalid=0.5), cache=tmp_path / "c.sqlite")
    assert exc.value.code == "endpoint"


def test_kill_and_resume_asks_nothing_twice(faults: FaultServer, tmp_path: Path) -> None:
    s = _answers(6, [f"[ok] answer {i}" for i in range(6)])
    cache = tmp_path / "verdicts.sqlite"

    class Killed(Exception):
        pass

    def kill_after_4(name: str, done: int, total: int) -> None:
        if done == 4:
            raise Killed

    with pytest.raises(Killed):  # the process dies after 4 committed verdicts
        judge_answers(s, _judge(faults), runs=2, cache=cache, progress=kill_after_4)
    assert faults.counts == {"ok": 4}
    asked: dict[str, int] = {}
    out = judge_answers(s, _judge(faults), runs=2, cache=cache,
                        progress=lambda n, d, t: asked.setdefault(n, t))
    # run 0 had 4 of 6 finished: 2 asked; run 1 (seed 1: other requests) all 6
    assert asked == {"stand-in|tiap_judge|r0": 2, "stand-in|tiap_judge|r1": 6}
    assert faults.counts == {"ok": 12}  # 6 answers x 2 runs, each asked once in all
    assert {b["seed"] for b in faults.bodies} == {0, 1}
    assert all(a.verdict(j).label == "correct" for a in out for j in out.configs)


def test_temperature_and_offline_judges_together(faults: FaultServer, tmp_path: Path) -> None:
    s = AnswerSet((Answer("locomo", "X", "q0", "[ok] Paris", question="Where?",
                          reference="Paris"),))
    out = judge_answers(s, [F1Judge(), _judge(faults)], runs=2, temperature=0.7,
                        cache=tmp_path / "c.sqlite")
    assert list(out.configs) == ["locomo-f1", "stand-in|tiap_judge|r0",
                                 "stand-in|tiap_judge|r1"]  # the offline judge once
    assert out.configs["stand-in|tiap_judge|r1"].temperature == 0.7
    assert {b["temperature"] for b in faults.bodies} == {0.7}
