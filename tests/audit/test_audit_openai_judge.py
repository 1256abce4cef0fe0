"""The ``openai`` judge against a local stand-in server (tests/audit/stub_openai.py).

The endpoint is a stdlib HTTP server on 127.0.0.1 that speaks the chat-completions protocol;
no model runs here. The real client (httpx) makes real HTTP requests to it.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from audit_fixtures import case
from stub_openai import StubServer, format_of

from tiap.audit import UNSCORED, VerdictCache, make_judge, read_labels, run_judges
from tiap.audit.labels import Verdict
from tiap.audit.openai_judge import OpenAIJudge
from tiap.audit.rubric import PARSE_PATTERN, RUBRIC_VERSION, parse_verdict
from tiap.cli.main import main
from tiap.errors import TiapError

pytest.importorskip("httpx")

KEY = "sk-test-SECRET-0123456789"


@pytest.fixture()
def server():
    # a slow reply takes 6 s, three times the 2 s timeout its test sets: a reply that is
    # not slow takes milliseconds, so a loaded machine does not time it out
    with StubServer(slow=6.0) as s:
        yield s


@pytest.fixture()
def key(monkeypatch):
    monkeypatch.setenv("TIAP_TEST_KEY", KEY)
    return KEY


def judge(server: StubServer, **kw) -> OpenAIJudge:
    args = dict(model="stub-model", base_url=server.base_url, api_key_env="TIAP_TEST_KEY",
                backoff=0.01, max_backoff=0.05, timeout=5.0, max_retries=3)
    args.update(kw)
    return OpenAIJudge(**args)


def test_happy_path_parses_the_verdict_and_records_settings(server, key):
    j = judge(server)
    v = j.judge(case(1, "Where did she move? [label=partial] [serving=raw_needed]"))
    assert (v.label, v.serving_label, v.attempts) == ("partial", "raw_needed", 1)
    assert v.notes.startswith("stub verdict")
    assert '"semantic_support_label": "partial"' in v.raw_response
    assert v.response["status"] == 200 and v.response["model"] == "stub-model"
    body = server.bodies[0]
    assert body["temperature"] == 0.0 and body["model"] == "stub-model"
    assert "Where did she move?" in body["messages"][1]["content"]
    assert "Reference answer: Paris" in body["messages"][1]["content"]
    assert server.auth == {f"Bearer {KEY}"}
    s = j.settings()
    assert s["rubric_version"] == RUBRIC_VERSION and s["parse_pattern"] == PARSE_PATTERN
    assert s["temperature"] == 0.0 and s["model"] == "stub-model"
    assert "supports" in s["template"]["system"] and "{question}" in s["template"]["user"]
    assert s["api_key_env"] == "TIAP_TEST_KEY" and KEY not in str(s)


def test_fenced_json_is_read(server, key):
    v = judge(server).judge(case(1, "q [fence] [label=does_not_support]"))
    assert v.label == "does_not_support"


def test_429_then_success_is_retried(server, key):
    q = "q [429x2] [label=supports]"
    v = judge(server).judge(case(1, q))
    assert v.label == "supports" and v.attempts == 3
    assert [s for qq, s in server.requests if qq == q] == [429, 429, 200]


# A 500 to a request with a response_format is a refusal of the format (llama-cpp-python
# answers json_schema so): the transport's retries are tested without one.

def test_500s_exhausted_give_unscored_with_reason(server, key):
    q = "q [500-always]"
    v = judge(server, max_retries=2, response_format="none").judge(case(1, q))
    assert v.label == UNSCORED and v.reason == "HTTP 500 after 3 attempts"
    assert server.count(q) == 3


def test_a_500_then_success(server, key):
    v = judge(server, response_format="none").judge(case(1, "q [500x1] [label=partial]"))
    assert v.label == "partial" and v.attempts == 2


def test_slow_reply_times_out_and_is_retried(server, key):
    q = "q [slow-once] [label=supports]"
    v = judge(server, timeout=2.0).judge(case(1, q))
    assert v.label == "supports" and v.attempts == 2
    assert server.count(q) == 2


@pytest.mark.parametrize(("tag", "reason"), [
    ("garbage", "no JSON object in the response"),
    ("badjson", "invalid JSON in the response"),
    ("empty", "empty response"),
    ("notchat", "the body is not a chat completion"),
    ("badlabel", "label 'maybe' is not one of supports, partial, does_not_support"),
    ("400", "HTTP 400"),
])
def test_unparseable_replies_stay_unscored_with_their_reason(server, key, tag, reason):
    # a 400 to a response_format is its refusal: the case's own 400 is tested without one
    v = judge(server, response_format="none" if tag == "400" else "json_schema").judge(
        case(1, f"q [{tag}]"))
    assert v.label == UNSCORED and v.reason.startswith(reason)
    if tag in ("garbage", "badjson", "notchat"):
        assert v.raw_response  # the reply is kept
    assert server.count(f"q [{tag}]") == 1  # not retried: a bad reply is final


def test_configuration_error_stops_the_run(server, key, tmp_path):
    with VerdictCache(tmp_path / "c.sqlite") as vc, pytest.raises(TiapError, match="HTTP 401"):
        run_judges([case(1, "q [401]")], [judge(server)], vc)


def test_concurrency_limit_is_respected(tmp_path, key):
    with StubServer(delay=0.1) as server:
        cases = [case(i, f"question {i} [label=supports]") for i in range(12)]
        with VerdictCache(tmp_path / "c.sqlite") as vc:
            run = run_judges(cases, [judge(server, concurrency=3)], vc)
        assert all(r.label == "supports" for r in run.records)
        assert 2 <= server.max_inflight <= 3


def test_cli_several_judges_labels_and_no_key_anywhere(server, key, tmp_path, capsys):
    from tiap.audit import write_cases

    cases = [case(1, "Where did she move? [label=supports]"),
             case(2, "Where? [label=partial]", text="She likes France."),
             case(3, "Why? [garbage]", answer="Because of work", text="She found a job."),
             case(4, "When? [500-always]")]
    write_cases(tmp_path / "cases.jsonl", cases)
    out = tmp_path / "out"
    rc = main(["audit", "judge", str(tmp_path / "cases.jsonl"), "--judge", "openai",
               "--judge", 'openai(model="second", name="judge-2")', "--judge", "lexical",
               "--model", "stub-model", "--base-url", server.base_url, "--api-key-env",
               "TIAP_TEST_KEY", "--max-retries", "1", "--backoff", "0.01",
               "--response-format", "none", "--out", str(out)])
    assert rc == 0
    assert server.bodies and not any("response_format" in b for b in server.bodies)
    man = json.loads((out / "manifest.json").read_text())
    counts = {c["judge"]: c for c in man["counts"]}
    assert counts["judge-2"]["response_format"] == {"asked": "none", "used": "none",
                                                    "refusals": []}
    assert "response_format" not in counts["lexical"]  # an offline judge asks for none
    assert [j["response_format"] for j in man["judges"] if j["factory"] == "openai"] == [
        "none", "none"]
    recs = read_labels(out / "labels.jsonl")
    by = {(r.judge, r.case_id): r for r in recs}
    assert len(recs) == 12
    assert by[("openai/stub-model", "s:q1:source")].label == "supports"
    assert by[("judge-2", "s:q2:source")].label == "partial"
    g = by[("openai/stub-model", "s:q3:source")]
    assert g.label == UNSCORED and g.reason == "no JSON object in the response"
    assert g.raw_response == "I think the memory supports the answer."
    e = by[("judge-2", "s:q4:source")]
    assert e.label == UNSCORED and e.reason == "HTTP 500 after 2 attempts"
    r = by[("openai/stub-model", "s:q1:source")]
    assert r.settings["model"] == "stub-model" and r.settings["temperature"] == 0.0
    assert r.timing["attempts"] == 1 and r.timing["seconds"] >= 0 and r.timing["started"]
    assert r.dataset == "d" and r.item_id == "f1" and r.query_id == "q1"
    assert by[("lexical", "s:q1:source")].label == "supports"
    # the key went to the server and nowhere else
    assert server.auth == {f"Bearer {KEY}"}
    captured = capsys.readouterr()
    assert KEY not in captured.out + captured.err
    for f in out.rglob("*"):
        if f.is_file():
            assert KEY.encode() not in f.read_bytes(), f
    assert "TIAP_TEST_KEY" in (out / "manifest.json").read_text()


def test_rerun_asks_only_for_new_verdicts(server, key, tmp_path):
    cases = [case(i, f"question {i} [label=supports]") for i in range(5)]
    with VerdictCache(tmp_path / "c.sqlite") as vc:
        first = run_judges(cases, [judge(server)], vc)
        n = len(server.requests)
        again = run_judges(cases, [judge(server)], vc)
        assert len(server.requests) == n
        assert [r.label for r in again.records] == [r.label for r in first.records]
        assert again.stats[0].cached == 5 and again.stats[0].asked == 0
        # another model is another judge: asked again
        run_judges(cases, [judge(server, model="other")], vc)
        assert len(server.requests) == n + 5


def test_identical_texts_are_asked_once(server, key, tmp_path):
    a = case(1, "same question [label=partial]", target="source")
    b = case(1, "same question [label=partial]", target="canonical")
    with VerdictCache(tmp_path / "c.sqlite") as vc:
        run = run_judges([a, b], [judge(server)], vc)
    assert server.count("same question [label=partial]") == 1
    assert [r.label for r in run.records] == ["partial", "partial"]
    assert run.records[1].timing["reused_from"] == a.case_id


def test_unscored_verdicts_of_the_endpoint_are_never_cached(server, key, tmp_path):
    bad = case(1, "q [500-always]")
    good = [case(i, f"q{i} [label=supports]") for i in (2, 3)]
    with VerdictCache(tmp_path / "c.sqlite") as vc:
        first = run_judges([bad, *good], [judge(server, max_retries=0,
                                                response_format="none")], vc)
        assert [r.label for r in first.records] == [UNSCORED, "supports", "supports"]
        assert len(vc) == 2 and vc.case_ids() == {g.case_id for g in good}
        w = first.stats[0].warnings["invalid_reply"]
        assert w["count"] == 1 and w["examples"] == [
            "record s:q1:source, query q1: HTTP 500 after 1 attempts"]
        again = run_judges([bad, *good], [judge(server, max_retries=0,
                                                response_format="none")], vc)
        assert server.count("q [500-always]") == 2  # asked again, not served from the cache
        assert again.stats[0].cached == 2 and again.stats[0].asked == 1
        # an unscored verdict an older TIAP cached for this endpoint is not served either
        j = judge(server, max_retries=0, response_format="none")
        r = j.request(bad)
        vc.put(j.request_key(bad), judge=j.name, case_id=bad.case_id, request=r,
               verdict=Verdict(label=UNSCORED, reason="the body is not a chat completion",
                               raw_response="<html>proxy login</html>"), timing={})
        run_judges([bad, *good], [j], vc)
        assert server.count("q [500-always]") == 3


def test_retry_unscored_asks_again_for_cached_unscored_offline_verdicts(tmp_path):
    from tiap.audit.judges import LexicalJudge

    calls = []

    class Counting(LexicalJudge):
        def ask(self, request):
            calls.append(request["answer"])
            return super().ask(request)

    c = case(1, "q", answer="Likely no")  # no content token: unscored, and reusable
    with VerdictCache(tmp_path / "c.sqlite") as vc:
        for retry in (False, False, True):
            run = run_judges([c], [Counting()], vc, retry_unscored=retry)
            assert run.records[0].label == UNSCORED
    assert len(calls) == 2  # the first run and the retry; the second run is a cache hit


def test_the_model_is_required():
    with pytest.raises(TiapError, match="needs a model"):
        make_judge("openai")


def test_judge_specs_are_parsed_not_evaluated():
    j = make_judge('openai(model="qwen2.5:7b", name="qwen", temperature=0)',
                   {"base_url": "http://127.0.0.1:1/v1", "concurrency": 2})
    assert (j.name, j.model, j.base_url, j.concurrency) == ("qwen", "qwen2.5:7b",
                                                            "http://127.0.0.1:1/v1", 2)
    with pytest.raises(TiapError, match="constant"):
        make_judge('openai(model=__import__("os").getcwd())')
    with pytest.raises(TiapError, match="takes no argument"):
        make_judge("lexical(model='x')")
    with pytest.raises(TiapError, match="unknown judge"):
        make_judge("oracle")
    assert make_judge("lexical", {"model": "ignored"}).name == "lexical"


def test_settings_never_hold_the_key(monkeypatch, tmp_path: Path):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    j = OpenAIJudge(model="m", base_url="http://127.0.0.1:1/v1")
    c = case(1, "q")
    assert KEY not in str(j.settings()) and KEY not in str(j.request(c))


# -- structured output (response_format) and max_tokens --------------------------------------

VERDICT_FORMAT = {"type": "json_schema", "json_schema": {"name": "verdict", "strict": True,
                                                       "schema": {
    "type": "object",
    "properties": {
        "semantic_support_label": {"type": "string",
                                   "enum": ["supports", "partial", "does_not_support"]},
        "serving_semantics_label": {"type": "string", "enum": ["transformed_ok", "raw_needed",
                                                               "either_ok", "unclear"]},
        "notes": {"type": "string"}},
    "required": ["semantic_support_label", "serving_semantics_label", "notes"],
    "additionalProperties": False}}}
REFUSED_BODY = "'{\"error\": \"response_format is not supported\"}'"


def sent_formats(server: StubServer) -> list[str]:
    return [format_of(b) for b in server.bodies]


def test_the_request_asks_for_the_verdict_schema(server, key):
    j = judge(server)
    c = case(1, "q [label=partial]")
    v = j.judge(c)
    assert v.label == "partial" and v.response["response_format"] == "json_schema"
    body = server.bodies[0]
    assert body["response_format"] == VERDICT_FORMAT and body["max_tokens"] == 400
    assert j.request(c)["body"]["response_format"] == VERDICT_FORMAT  # the cache key holds it
    assert j.settings()["response_format"] == "json_schema"
    assert j.structured.report() == {"asked": "json_schema", "used": "json_schema",
                                     "refusals": []}
    plain = judge(server, response_format="json_object")
    assert plain.request(c)["body"]["response_format"] == {"type": "json_object"}
    assert "response_format" not in judge(server, response_format="none").request(c)["body"]


def test_a_500_to_json_schema_falls_back_to_json_object_at_once_and_for_good(key, tmp_path):
    cases = [case(i, f"question {i} [label=supports]") for i in range(3)]
    with StubServer(refuse={"json_schema": 500}) as server, \
            VerdictCache(tmp_path / "c.sqlite") as vc:
        j = judge(server, concurrency=1, backoff=5.0, max_backoff=5.0)  # a retry would wait 5 s
        t = time.monotonic()
        run = run_judges(cases, [j], vc)
        assert time.monotonic() - t < 2.5
        # the first case asked twice (the same request, then as json_object), the others once
        assert sent_formats(server) == ["json_schema", "json_object", "json_object",
                                        "json_object"]
        first, second = server.bodies[:2]
        assert {k: v for k, v in first.items() if k != "response_format"} == {
            k: v for k, v in second.items() if k != "response_format"}
        assert [s for _, s in server.requests] == [500, 200, 200, 200]
    assert [r.label for r in run.records] == ["supports"] * 3
    r0 = run.records[0]
    assert r0.timing["attempts"] == 2 and r0.response["response_format"] == "json_object"
    assert r0.settings["response_format"] == "json_schema"  # the mode asked for
    assert r0.request_key == j.request_key(cases[0])  # keyed by the request asked for
    st = run.stats[0].to_json()
    assert st["response_format"] == {
        "asked": "json_schema", "used": "json_object",
        "refusals": [{"response_format": "json_schema", "status": 500, "body": REFUSED_BODY}]}
    w = st["warnings"]["response_format"]
    assert w["count"] == 1 and w["message"] == (
        f"{server.base_url}/chat/completions refused response_format json_schema: the replies "
        "were asked with response_format json_object")
    assert w["examples"] == [f"json_schema: HTTP 500, body {REFUSED_BODY}"]


def test_a_server_refusing_both_formats_is_asked_without_one(key, tmp_path, capsys):
    from tiap.audit import write_cases

    write_cases(tmp_path / "cases.jsonl", [case(1, "q1 [label=partial]"), case(2, "q2")])
    out = tmp_path / "out"
    with StubServer(refuse={"json_schema": 400, "json_object": 422}) as server:
        rc = main(["audit", "judge", str(tmp_path / "cases.jsonl"), "--judge", "openai",
                   "--model", "stub-model", "--base-url", server.base_url, "--concurrency",
                   "1", "--out", str(out)])
        assert rc == 0
        assert sent_formats(server) == ["json_schema", "json_object", "none", "none"]
    labels = {r.case_id: r for r in read_labels(out / "labels.jsonl")}
    assert labels["s:q1:source"].label == "partial" and labels["s:q2:source"].label == "supports"
    assert labels["s:q1:source"].response["response_format"] == "none"
    assert labels["s:q1:source"].timing["attempts"] == 3
    man = json.loads((out / "manifest.json").read_text())
    rf = man["counts"][0]["response_format"]
    assert (rf["asked"], rf["used"]) == ("json_schema", "none")
    assert [(x["response_format"], x["status"]) for x in rf["refusals"]] == [
        ("json_schema", 400), ("json_object", 422)]
    assert man["judges"][0]["response_format"] == "json_schema"
    err = " ".join(capsys.readouterr().err.split())
    assert ("warning[response_format]: openai/stub-model: " + server.base_url
            + "/chat/completions refused response_format json_schema and json_object: the "
            "replies were asked with no response_format (the prompt alone asks for JSON) "
            "(2, counted in") in err


def test_a_reply_cut_at_max_tokens_is_unscored_and_not_cached(server, key, tmp_path):
    c = case(1, "q [length]")
    with VerdictCache(tmp_path / "c.sqlite") as vc:
        run = run_judges([c], [judge(server, max_tokens=50, max_invalid=1.0)], vc)
        assert len(vc) == 0
    r = run.records[0]
    assert r.label == UNSCORED and r.reason == "cut at max_tokens=50"
    assert r.response["finish_reason"] == "length"
    assert r.raw_response == ('{"semantic_support_label": "supports", '
                              '"serving_semantics_la')  # kept as received
    assert server.bodies[0]["max_tokens"] == 50


UNESCAPED = ('{"semantic_support_label": "supports", "serving_semantics_label": "either_ok", '
             '"notes": "she said "yes" to it"}')


def test_labels_are_recovered_from_invalid_json():
    v = parse_verdict(UNESCAPED)
    assert (v.label, v.serving_label, v.notes) == ("supports", "either_ok", None)
    assert v.reason == ("label recovered from invalid JSON: Expecting ',' delimiter; the notes "
                        "were dropped")
    assert v.raw_response == UNESCAPED
    # cut after the labels, with the other accepted keys
    v = parse_verdict('{"label": "Partial", "serving_label": "raw needed", "notes": "x')
    assert (v.label, v.serving_label, v.notes) == ("partial", "raw_needed", None)
    assert v.reason.startswith("label recovered from invalid JSON: Unterminated string")
    # no readable label, conflicting labels, a label outside the rubric: unscored
    for bad in ('{"semantic_support_label": "supp',
                '{"label": "partial", "semantic_support_label": "supports", "notes": "a"b"}',
                '{"semantic_support_label": "maybe", "notes": "a"b"}'):
        v = parse_verdict(bad)
        assert v.label == UNSCORED and v.reason.startswith("invalid JSON in the response ("), bad


def test_a_recovered_label_is_scored_and_cached(server, key, tmp_path):
    with VerdictCache(tmp_path / "c.sqlite") as vc:
        run = run_judges([case(1, "q [unescaped]")], [judge(server)], vc)
        assert len(vc) == 1
    r = run.records[0]
    assert (r.label, r.serving_label, r.notes) == ("supports", "either_ok", None)
    assert r.reason.startswith("label recovered from invalid JSON") and r.raw_response == UNESCAPED
