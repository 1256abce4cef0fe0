"""The llm parser against a local OpenAI-compatible server (stdlib http.server on 127.0.0.1)."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from memory_fixtures import (
    FakeServer,
    InlineDataset,
    chat_reply,
    default_reply,
    format_of,
    read_rows,
    refusing,
    turn_text,
)

from tiap.datasets import load
from tiap.engine import LocalEngine, use_engine
from tiap.errors import MissingExtraError, TiapError
from tiap.memory import build_store, make_parser, turn_contexts
from tiap.memory.llm_parser import build_messages, parse_facts


def llm_parser(server: FakeServer, tmp_path: Path, **kw: Any):  # type: ignore[no-untyped-def]
    args: dict[str, Any] = {"base_url": server.url, "model": "fake-model", "max_facts": 3,
                            "cache": str(tmp_path / "cache.sqlite"), "backoff": 0.001,
                            "concurrency": 1}
    args.update(kw)
    return make_parser("llm", **args)


def digest(turn: str) -> str:
    return hashlib.sha256(turn.encode()).hexdigest()[:8]


def test_happy_path_and_cache(fake_llm: FakeServer, inline_dataset: InlineDataset,
                              tmp_path: Path) -> None:
    res = build_store(inline_dataset, llm_parser(fake_llm, tmp_path, concurrency=3), tmp_path / "s")
    rows = read_rows(tmp_path / "s" / "items.jsonl")
    facts = {r["item_id"]: r for r in rows if r["kind"] == "fact"}
    assert len(fake_llm.requests) == 5 and len(facts) == 10
    t3 = "I went to a LGBTQ support group yesterday and it was so powerful."
    line = f"Caroline: {t3}"  # the turn as the prompt shows it
    assert facts["c1:D1:3#f1"] == {"item_id": "c1:D1:3#f1", "store": "s", "kind": "fact",
                                   "sources": ["c1:D1:3"], "text": f"Fact {digest(line)} one.",
                                   "collection": "c1"}
    assert facts["c1:D1:3#f2"]["text"] == f"Fact {digest(line)} two."
    # the request: model, deterministic settings, speakers, date and preceding turns
    body = next(b for b in fake_llm.requests if turn_text(b) == line)
    assert body["model"] == "fake-model" and body["temperature"] == 0.0 and body["seed"] == 1337
    system, user = body["messages"][0]["content"], body["messages"][1]["content"]
    assert "at most 3 strings" in system
    assert "Session date: 8 May 2023" in user
    assert "Speakers: Caroline (speaking now), Melanie" in user
    assert "Preceding turns (context only):\nCaroline: Hey Mel!" in user
    first_user = next(b for b in fake_llm.requests if "adopted a beagle" in turn_text(b))
    first_text = first_user["messages"][1]["content"]
    assert "Speakers: The user (speaking now), The assistant" in first_text
    st = res.manifest["parser_stats"]
    assert (st["turns"], st["requests"], st["cache_hits"], st["turns_invalid"]) == (5, 5, 0, 0)
    args = res.manifest["parser"]["args"]
    assert args["model"] == "fake-model" and args["base_url"] == fake_llm.url
    assert args["api_key_env"] == "OPENAI_API_KEY" and args["max_facts"] == 3

    # a second build asks nothing and writes the same bytes
    res2 = build_store(inline_dataset, llm_parser(fake_llm, tmp_path), tmp_path / "s2",
                       store="s")
    assert len(fake_llm.requests) == 5
    assert res2.manifest["parser_stats"]["cache_hits"] == 5
    items = [(tmp_path / d / "items.jsonl").read_bytes() for d in ("s", "s2")]
    assert items[0] == items[1]


def test_cap_on_facts(fake_llm: FakeServer, inline_dataset: InlineDataset, tmp_path: Path) -> None:
    fake_llm.script = lambda body, n: chat_reply(json.dumps(["A.", "B.", "C.", "D."]))
    res = build_store(inline_dataset, llm_parser(fake_llm, tmp_path, max_facts=2), tmp_path / "s")
    assert res.counts["by_kind"]["fact"] == 10
    assert res.counts["derived_per_turn"] == {"2": 5}
    assert res.manifest["parser_stats"]["facts_dropped_over_cap"] == 10


def test_retries_on_429_500_and_timeouts(fake_llm: FakeServer, inline_dataset: InlineDataset,
                                         tmp_path: Path) -> None:
    def script(body: dict[str, Any], n: int):  # type: ignore[no-untyped-def]
        if n == 0:
            return 429, {"error": "slow down"}, {"Retry-After": "0"}
        if n == 1:
            return 500, "internal error", {}
        if n == 2 and "beagle" in turn_text(body):
            time.sleep(6.0)  # three times the client's timeout (replies that are not slow
            # take milliseconds, so a loaded machine does not time them out)
        return default_reply(body)

    fake_llm.script = script
    res = build_store(inline_dataset, llm_parser(fake_llm, tmp_path, timeout=2.0), tmp_path / "s")
    st = res.manifest["parser_stats"]
    assert st["http_retries"] == 2 * 5 + 1  # 429 and 500 for every turn, one timeout
    assert st["requests"] == 5 * 3 + 1 and len(fake_llm.requests) == 16
    assert res.counts["by_kind"]["fact"] == 10 and st["turns_invalid"] == 0


def test_bad_json_is_retried_then_the_turn_yields_nothing(
        fake_llm: FakeServer, inline_dataset: InlineDataset, tmp_path: Path) -> None:
    def script(body: dict[str, Any], n: int):  # type: ignore[no-untyped-def]
        turn = turn_text(body)
        if "support group" in turn:
            return chat_reply("Here are the facts: Caroline went to a group.")  # never JSON
        if "charity race" in turn and n == 0:
            return chat_reply('["unterminated')
        if "beagle" in turn:
            return 200, {"unexpected": "shape"}, {}  # not an OpenAI response
        return default_reply(body)

    fake_llm.script = script
    res = build_store(inline_dataset, llm_parser(fake_llm, tmp_path), tmp_path / "s")
    st = res.manifest["parser_stats"]
    assert st["turns_invalid"] == 2 and st["json_retries"] == 3
    rows = read_rows(tmp_path / "s" / "items.jsonl")
    sources = {r["sources"][0] for r in rows if r["kind"] == "fact"}
    assert sources == {"c1:D1:1", "c1:D1:2", "c2:D1:2"}
    assert res.counts["turns_without_derived"] == 2
    # the retry shows the model its reply and says what was wrong
    retry = [b for b in fake_llm.requests if "support group" in turn_text(b)][1]
    assert [m["role"] for m in retry["messages"]] == ["system", "user", "assistant", "user"]
    assert "not JSON" in retry["messages"][3]["content"]
    # the two invalid turns are counted, with their reasons, in the manifest's warnings
    w = res.manifest["warnings"]["invalid_reply"]
    assert w["count"] == 2 and len(w["examples"]) == 2
    assert st["invalid_reasons"] == {"HTTP 200 but the body is not a chat completion": 1,
                                     "the reply is not JSON": 1}
    assert any(e.startswith("record c1:D1:3: the reply is not JSON") for e in w["examples"])
    # invalid turns are not cached: a rerun asks again for those two (2 attempts each) only
    before = len(fake_llm.requests)
    res2 = build_store(inline_dataset, llm_parser(fake_llm, tmp_path), tmp_path / "s2")
    asked = [turn_text(b) for b in fake_llm.requests[before:]]
    assert len(asked) == 4 and all("support group" in t or "beagle" in t for t in asked)
    assert res2.manifest["parser_stats"]["cache_hits"] == 3
    assert res2.manifest["warnings"]["invalid_reply"]["count"] == 2


def test_endpoint_down_stops_the_build_and_keeps_finished_turns(
        fake_llm: FakeServer, inline_dataset: InlineDataset, tmp_path: Path) -> None:
    fake_llm.script = lambda body, n: ((503, "busy", {}) if "support group" in turn_text(body)
                                       else default_reply(body))
    with pytest.raises(TiapError, match="gave up after 3 attempts; last: HTTP 503") as exc:
        build_store(inline_dataset, llm_parser(fake_llm, tmp_path, max_retries=2), tmp_path / "s")
    assert "run the same command again to resume" in str(exc.value)
    assert not (tmp_path / "s").exists()
    cached = sqlite3.connect(tmp_path / "cache.sqlite").execute(
        "SELECT unit_id FROM facts ORDER BY unit_id").fetchall()
    assert [u for (u,) in cached] == ["c1:D1:1", "c1:D1:2"]
    # the endpoint recovers: only the unfinished turns are asked
    fake_llm.script = lambda body, n: default_reply(body)
    fake_llm.requests.clear()
    build_store(inline_dataset, llm_parser(fake_llm, tmp_path), tmp_path / "s")
    asked = [turn_text(b) for b in fake_llm.requests]
    assert len(asked) == 3 and not any("charity race" in t or "Good to see" in t for t in asked)


class _TasksHere(LocalEngine):
    """The engine path (requests as tasks, shards) with the tasks run in this process, in
    order: what a Ray worker runs, without Ray (tests/engine runs it on Ray)."""

    name = "tasks-here"


def test_on_an_engine_an_endpoint_down_stops_the_build_and_keeps_finished_turns(
        fake_llm: FakeServer, inline_dataset: InlineDataset, tmp_path: Path) -> None:
    """As above with the requests as engine tasks (two turns a task): the error names the
    turn, the turns finished before it are in the cache, and a rerun asks only the rest
    (the failed task's shard, already committed, is merged and removed)."""
    fake_llm.script = lambda body, n: ((503, "busy", {}) if "support group" in turn_text(body)
                                       else default_reply(body))
    parser = llm_parser(fake_llm, tmp_path, max_retries=2, concurrency=2)
    with use_engine(_TasksHere()), pytest.raises(TiapError, match=(
            "failed on turn c1:D1:3: gave up after 3 attempts; last: HTTP 503")) as exc:
        build_store(inline_dataset, parser, tmp_path / "s")
    assert "run the same command again to resume" in str(exc.value)
    assert not (tmp_path / "s").exists()
    cached = sqlite3.connect(tmp_path / "cache.sqlite").execute(
        "SELECT unit_id FROM facts ORDER BY unit_id").fetchall()
    assert [u for (u,) in cached] == ["c1:D1:1", "c1:D1:2"]
    shards = tmp_path / "cache.sqlite.shards"
    assert len(list(shards.glob("*.jsonl"))) == 1  # the task that failed: c1:D1:3 alone
    fake_llm.script = lambda body, n: default_reply(body)
    fake_llm.requests.clear()
    with use_engine(_TasksHere()):
        res = build_store(inline_dataset, llm_parser(fake_llm, tmp_path, concurrency=2),
                          tmp_path / "s")
    asked = [turn_text(b) for b in fake_llm.requests]
    assert len(asked) == 3 and not any("charity race" in t or "Good to see" in t for t in asked)
    assert not shards.exists()
    stats = res.manifest["parser_stats"]
    assert (stats["turns"], stats["cache_hits"], stats["requests"]) == (5, 2, 3)
    assert stats["tasks_retried"] == 0
    # the same store as a build with threads, from the same cache
    local = build_store(inline_dataset, llm_parser(fake_llm, tmp_path), tmp_path / "t",
                        store="s")
    assert local.manifest["parser_stats"]["cache_hits"] == 5
    assert (tmp_path / "s" / "items.jsonl").read_bytes() == (
        tmp_path / "t" / "items.jsonl").read_bytes()


def test_non_retryable_answers(fake_llm: FakeServer, inline_dataset: InlineDataset,
                               tmp_path: Path) -> None:
    fake_llm.script = lambda body, n: (401, {"error": "bad key"}, {})
    with pytest.raises(TiapError, match=r"HTTP 401.*\$MY_KEY"):
        build_store(inline_dataset, llm_parser(fake_llm, tmp_path, api_key_env="MY_KEY"),
                    tmp_path / "s")
    assert max(fake_llm.seen.values()) == 1  # no retry (a request already in flight may finish)
    bad = llm_parser(fake_llm, tmp_path, base_url=fake_llm.url.replace("/v1", "/v2"))
    with pytest.raises(TiapError, match="HTTP 404"):
        build_store(inline_dataset, bad, tmp_path / "s")


def test_api_key_is_sent_and_never_written(fake_llm: FakeServer, inline_dataset: InlineDataset,
                                           tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIAP_TEST_KEY", "sk-secret-123")
    build_store(inline_dataset, llm_parser(fake_llm, tmp_path, api_key_env="TIAP_TEST_KEY"),
                tmp_path / "s")
    assert all(h.get("Authorization") == "Bearer sk-secret-123" for h in fake_llm.headers)
    for p in tmp_path.rglob("*"):
        if p.is_file():
            assert b"sk-secret-123" not in p.read_bytes(), p
    monkeypatch.delenv("TIAP_TEST_KEY")
    fake_llm.headers.clear()
    build_store(inline_dataset, llm_parser(fake_llm, tmp_path, cache=str(tmp_path / "c2.sqlite"),
                                           api_key_env="TIAP_TEST_KEY"), tmp_path / "s")
    assert all("Authorization" not in h for h in fake_llm.headers)


def test_configuration_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(TiapError) as exc:
        make_parser("llm")
    msgs = [p.message for p in exc.value.problems]  # argument names, not a command's options
    assert [m.split(": missing")[0] for m in msgs] == ["parser 'llm': key base_url",
                                                       "parser 'llm': key model"]
    with pytest.raises(TiapError, match="key max_facts: expected an integer from 1 to 1,000"):
        make_parser("llm", base_url="http://x/v1", model="m", max_facts=0)
    monkeypatch.setitem(sys.modules, "httpx", None)  # as if the extra were not installed
    with pytest.raises(MissingExtraError, match=r"pip install -e '\.\[llm\]'"):
        make_parser("llm", base_url="http://x/v1", model="m")


def test_parse_facts() -> None:
    assert parse_facts('["A.", "B."]', 5) == (["A.", "B."], 0)
    assert parse_facts('```json\n["A.",  "A.", " B  c. "]\n```', 5) == (["A.", "B c."], 0)
    assert parse_facts('{"facts": [{"fact": "A."}, {"text": "B."}]}', 5) == (["A.", "B."], 0)
    assert parse_facts('Sure: ["A.", "B.", "C."]', 2) == (["A.", "B."], 1)
    assert parse_facts("[]", 3) == ([], 0)
    for bad in ("no json here", '{"answer": 1}', "[1, 2]", '"just a string"', '["x"'):
        with pytest.raises(ValueError):
            parse_facts(bad, 3)


# -- kill and resume -------------------------------------------------------------------------


def committed(cache: Path) -> int:
    """Turns committed to the parser's cache so far (0 while it does not exist yet)."""
    try:
        db = sqlite3.connect(f"file:{cache}?mode=ro", uri=True)
    except sqlite3.Error:
        return 0
    try:
        return int(db.execute("SELECT count(*) FROM facts").fetchone()[0])
    except sqlite3.Error:
        return 0
    finally:
        db.close()


def test_kill_and_resume(fake_llm: FakeServer, data_dir: Path, tmp_path: Path) -> None:
    """A build killed mid-way resumes without asking again for the turns it had finished."""
    cache = tmp_path / "cache.sqlite"
    out = tmp_path / "store"
    cmd = [sys.executable, "-m", "tiap.cli.main", "build-store", "locomo", "--parser", "llm",
           "--collections", "conv-26", "--base-url", fake_llm.url, "--model", "fake-model",
           "--max-facts", "2", "--concurrency", "2", "--cache", str(cache),
           "--data", str(data_dir), "--out", str(out)]
    fake_llm.block_after = 40  # from the 41st request on, the server hangs
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env={**os.environ, "TIAP_OFFLINE": "1"})
    try:
        assert fake_llm.blocked.wait(60), proc.stderr.read() if proc.stderr else ""
        # kill once a reply is committed (however loaded the machine), not after a set time
        deadline = time.monotonic() + 60
        while not committed(cache) and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert not out.exists()  # nothing half-written
    finished = {u for (u,) in sqlite3.connect(cache).execute("SELECT unit_id FROM facts")}
    assert 0 < len(finished) <= 40

    # the turns' requests, as the parser builds them, keyed by unit id
    bundle = next(b for b in load("locomo", data_dir).bundles()
                  if b.collection.collection_id == "conv-26")
    turn_of = {build_messages(c, 2)[1]["content"].split("Turn to extract facts from:\n", 1)[1]:
               c.turn.unit_id for c in turn_contexts(bundle, 3)}
    fake_llm.block_after = None
    fake_llm.requests.clear()
    from tiap.cli.main import main

    assert main(cmd[3:]) == 0
    asked = [turn_of[turn_text(b)] for b in fake_llm.requests]
    assert not finished & set(asked)  # finished turns were not asked again
    assert sorted(asked) == sorted(u for u in turn_of.values() if u not in finished)

    # the resumed store equals one built in a single go
    fresh = tmp_path / "fresh"
    assert main([*cmd[3:-4], "--cache", str(tmp_path / "fresh.sqlite"), "--data", str(data_dir),
                 "--out", str(fresh), "--name", "store"]) == 0
    assert (out / "items.jsonl").read_bytes() == (fresh / "items.jsonl").read_bytes()
    rows = read_rows(out / "items.jsonl")
    assert sum(r["kind"] == "fact" for r in rows) == 2 * 419


# -- structured output (response_format) and max_tokens --------------------------------------

FACTS_FORMAT = {"type": "json_schema", "json_schema": {"name": "facts", "strict": True,
                                                     "schema": {
    "type": "object",
    "properties": {"facts": {"type": "array", "items": {"type": "string"}, "maxItems": 3}},
    "required": ["facts"], "additionalProperties": False}}}


def test_requests_ask_for_the_facts_schema_and_cap_the_tokens(
        fake_llm: FakeServer, inline_dataset: InlineDataset, tmp_path: Path) -> None:
    res = build_store(inline_dataset, llm_parser(fake_llm, tmp_path), tmp_path / "s")
    assert len(fake_llm.requests) == 5
    assert all(b["response_format"] == FACTS_FORMAT for b in fake_llm.requests)
    assert all(b["max_tokens"] == 512 for b in fake_llm.requests)
    st = res.manifest["parser_stats"]
    assert st["response_format"] == {"asked": "json_schema", "used": "json_schema",
                                     "refusals": []}
    assert st["max_tokens"] == 512 and st["replies_cut"] == 0
    args = res.manifest["parser"]["args"]
    assert (args["response_format"], args["max_tokens"]) == ("json_schema", 512)
    assert "warnings" not in res.manifest
    fake_llm.requests.clear()
    build_store(inline_dataset, llm_parser(fake_llm, tmp_path, max_tokens=64,
                                           response_format="none"), tmp_path / "s2")
    assert all("response_format" not in b and b["max_tokens"] == 64 for b in fake_llm.requests)


def test_max_tokens_and_the_format_asked_for_are_in_the_cache_key(
        fake_llm: FakeServer, inline_dataset: InlineDataset, tmp_path: Path) -> None:
    messages = [{"role": "user", "content": "x"}]
    keys = {(rf, mt): llm_parser(fake_llm, tmp_path, response_format=rf, max_tokens=mt).key(
        messages) for rf in ("json_schema", "json_object") for mt in (512, 100)}
    assert len(set(keys.values())) == 4
    assert llm_parser(fake_llm, tmp_path).key(messages) == keys[("json_schema", 512)]
    build_store(inline_dataset, llm_parser(fake_llm, tmp_path), tmp_path / "s")
    build_store(inline_dataset, llm_parser(fake_llm, tmp_path, max_tokens=512), tmp_path / "s")
    assert len(fake_llm.requests) == 5  # the same key: all five from the cache
    res = build_store(inline_dataset, llm_parser(fake_llm, tmp_path, max_tokens=100),
                      tmp_path / "s")
    assert len(fake_llm.requests) == 10 and res.manifest["parser_stats"]["cache_hits"] == 0


def test_a_500_to_json_schema_falls_back_to_json_object_at_once_and_for_good(
        fake_llm: FakeServer, inline_dataset: InlineDataset, tmp_path: Path) -> None:
    fake_llm.script = refusing({"json_schema": 500})
    t = time.monotonic()
    res = build_store(inline_dataset, llm_parser(fake_llm, tmp_path, backoff=5.0),
                      tmp_path / "s")  # a retry would wait 5 s
    assert time.monotonic() - t < 2.5
    assert [format_of(b) for b in fake_llm.requests] == ["json_schema"] + ["json_object"] * 5
    first, again = fake_llm.requests[:2]  # the same request, asked again as json_object
    assert first["messages"] == again["messages"] and again["response_format"] == {
        "type": "json_object"}
    assert res.counts["by_kind"]["fact"] == 10
    st = res.manifest["parser_stats"]
    assert (st["requests"], st["http_retries"], st["turns_invalid"]) == (6, 0, 0)
    assert st["response_format"] == {
        "asked": "json_schema", "used": "json_object",
        "refusals": [{"response_format": "json_schema", "status": 500,
                      "body": "'json_schema is not supported'"}]}
    w = res.manifest["warnings"]["response_format"]
    assert w["count"] == 1 and w["message"] == (
        f"{fake_llm.url}/chat/completions refused response_format json_schema: the replies "
        "were asked with response_format json_object")


def test_a_server_refusing_both_formats_is_asked_without_one(
        fake_llm: FakeServer, inline_dataset: InlineDataset, tmp_path: Path) -> None:
    fake_llm.script = refusing({"json_schema": 400, "json_object": 422})
    res = build_store(inline_dataset, llm_parser(fake_llm, tmp_path), tmp_path / "s")
    assert [format_of(b) for b in fake_llm.requests] == ["json_schema", "json_object",
                                                         *["none"] * 5]
    assert res.counts["by_kind"]["fact"] == 10
    st = res.manifest["parser_stats"]
    assert st["requests"] == 7 and st["http_retries"] == 0
    rf = st["response_format"]
    assert rf["used"] == "none" and [(r["response_format"], r["status"])
                                     for r in rf["refusals"]] == [("json_schema", 400),
                                                                  ("json_object", 422)]
    assert res.manifest["warnings"]["response_format"]["count"] == 2


def test_a_reply_cut_at_max_tokens_is_an_invalid_turn(
        fake_llm: FakeServer, inline_dataset: InlineDataset, tmp_path: Path) -> None:
    def script(body: dict[str, Any], n: int):  # type: ignore[no-untyped-def]
        if "support group" in turn_text(body):  # valid JSON, but the cap cut the reply
            return chat_reply(json.dumps({"facts": ["A.", "B."]}), finish_reason="length")
        return default_reply(body)

    fake_llm.script = script
    res = build_store(inline_dataset, llm_parser(fake_llm, tmp_path, max_tokens=40),
                      tmp_path / "s")
    st = res.manifest["parser_stats"]
    assert (st["turns_invalid"], st["json_retries"], st["replies_cut"]) == (1, 1, 2)
    assert st["invalid_reasons"] == {"cut at max_tokens=40": 1}
    assert res.manifest["warnings"]["invalid_reply"]["examples"] == [
        "record c1:D1:3: cut at max_tokens=40"]
    rows = read_rows(tmp_path / "s" / "items.jsonl")
    assert not [r for r in rows if r["kind"] == "fact" and r["sources"] == ["c1:D1:3"]]
    assert res.counts["by_kind"]["fact"] == 8
    retry = [b for b in fake_llm.requests if "support group" in turn_text(b)][1]
    assert "cut at max_tokens=40" in retry["messages"][3]["content"]


def test_cli_response_format_and_max_tokens_reach_the_requests(
        fake_llm: FakeServer, data_dir: Path, tmp_path: Path) -> None:
    from tiap.cli.main import main

    out = tmp_path / "store"
    assert main(["build-store", "locomo", "--parser", "llm", "--collections", "conv-26",
                 "--base-url", fake_llm.url, "--model", "fake-model", "--max-facts", "2",
                 "--concurrency", "4", "--cache", str(tmp_path / "c.sqlite"), "--data",
                 str(data_dir), "--response-format", "json_object", "--max-tokens", "64",
                 "--out", str(out)]) == 0
    assert len(fake_llm.requests) == 419
    assert all(b["response_format"] == {"type": "json_object"} and b["max_tokens"] == 64
               for b in fake_llm.requests)
    man = json.loads((out / "manifest.json").read_text())
    assert (man["parser"]["args"]["response_format"], man["parser"]["args"]["max_tokens"]) == (
        "json_object", 64)
    assert man["parser_stats"]["response_format"] == {"asked": "json_object",
                                                      "used": "json_object", "refusals": []}
