"""Kind 7 of the bad-input campaign: degraded endpoints must not poison caches, and no
configured secret may reach a file TIAP writes.

The mechanisms (``tiap.llm.client``): cache keys name the endpoint (:func:`endpoint_id`: base URL
and model, never the key) for the parser, the judge and the Ollama encoder; only valid
replies are cached, invalid ones are counted (``warnings.invalid_reply``) and asked again
by the next run; a run whose replies are mostly invalid stops with ``error[endpoint]``
naming the URL and the start of the first bad body (:class:`InvalidReplies`); every reply
and every row written is redacted (:func:`redact`). The endpoint is a stand-in HTTP server
on 127.0.0.1 used only to inject faults (HTML 200, echoed headers, truncated JSON, prose).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "memory"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "audit"))
from audit_fixtures import case  # noqa: E402
from memory_fixtures import small_dataset  # noqa: E402

from tiap.audit import read_labels, write_cases  # noqa: E402
from tiap.audit.run import VerdictCache  # noqa: E402
from tiap.cli.main import main  # noqa: E402
from tiap.errors import TiapError  # noqa: E402
from tiap.llm.client import REDACTED, add_secret, read_completion, redact  # noqa: E402
from tiap.memory import build_store, make_parser  # noqa: E402
from tiap.memory.llm_parser import LlmCache  # noqa: E402
from tiap.retrieval.encoders import read_embeddings  # noqa: E402

pytest.importorskip("httpx")

KEY = "sk-k7-SECRET-0123456789abcdef"
TURN_MARK = "Turn to extract facts from:\n"
HTML = b"<html><head><title>Sign in</title></head><body>proxy login required</body></html>"
FAST = settings(max_examples=300, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow])
FILES = settings(max_examples=60, deadline=None, derandomize=True,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

Script = Callable[[str, dict[str, str], dict[str, Any]], tuple[int, bytes]]


# -- a fault-injecting stand-in endpoint ----------------------------------------------------


class Faults:
    """An HTTP server on 127.0.0.1 whose every answer is ``script(path, headers, body)``."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.lock = threading.Lock()
        self.asked: list[dict[str, Any]] = []
        state = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                with state.lock:
                    state.asked.append(body)
                status, data = state.script(self.path, dict(self.headers), body)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05},
                         daemon=True).start()

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    @property
    def url(self) -> str:
        return self.root + "/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def endpoints() -> Iterator[Callable[[Script], Faults]]:
    made: list[Faults] = []

    def make(script: Script) -> Faults:
        made.append(Faults(script))
        return made[-1]

    yield make
    for f in made:
        f.close()


def chat(content: Any) -> tuple[int, bytes]:
    return 200, json.dumps({"choices": [{"message": {"role": "assistant",
                                                      "content": content}}]}).encode()


def turn_of(body: dict[str, Any]) -> str:
    return body["messages"][1]["content"].split(TURN_MARK, 1)[1]


def facts_for(tag: str) -> Script:
    """A good endpoint: two facts per turn, naming ``tag`` and the turn's digest."""
    def script(path: str, headers: dict[str, str], body: dict[str, Any]) -> tuple[int, bytes]:
        d = hashlib.sha256(turn_of(body).encode()).hexdigest()[:6]
        return chat(json.dumps([f"{tag} fact {d} one.", f"{tag} fact {d} two."]))
    return script


def always(status: int, data: bytes) -> Script:
    return lambda path, headers, body: (status, data)


def cache_rows(path: Path) -> int:
    db = sqlite3.connect(path)
    try:
        return int(db.execute("SELECT COUNT(*) FROM facts").fetchone()[0])
    finally:
        db.close()


def parser(url: str, cache: Path, **kw: Any):  # type: ignore[no-untyped-def]
    args: dict[str, Any] = {"base_url": url, "model": "m", "max_facts": 3, "cache": str(cache),
                            "backoff": 0.001, "concurrency": 1, "max_retries": 0}
    args.update(kw)
    return make_parser("llm", **args)


def llm_cli(url: str, cache: Path, out: Path, data_dir: Path, *extra: str) -> list[str]:
    return ["build-store", "locomo", "--parser", "llm", "--collections", "conv-26",
            "--base-url", url, "--model", "m", "--max-facts", "2", "--concurrency", "4",
            "--max-retries", "0", "--cache", str(cache), "--data", str(data_dir),
            "--out", str(out), *extra]


def error_lines(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if ln.startswith("error[")]


# -- the case: an HTML page answered with 200 ----------------------------------------


@pytest.mark.parametrize("concurrency", [1, 4])
def test_html_200_stops_the_build_caches_nothing_and_the_right_endpoint_starts_clean(
        endpoints, data_dir: Path, tmp_path: Path, capsys, concurrency: int) -> None:
    bad = endpoints(always(200, HTML))
    cache, out = tmp_path / "cache.sqlite", tmp_path / "store"
    assert main(llm_cli(bad.url, cache, out, data_dir,
                        "--concurrency", str(concurrency))) == 2
    lines = error_lines(capsys.readouterr().err)
    assert len(lines) == 1 and lines[0].startswith("error[endpoint]: "), lines
    assert f"the endpoint {bad.url}/chat/completions gave " in lines[0]
    assert "HTTP 200 but the body is not a chat completion" in lines[0]
    assert "its body starts '<html><head><title>Sign in</title>" in lines[0]
    # it stopped at the probe: 10 turns answered, 2 attempts each, plus at most the
    # concurrency - 1 other turns in flight, 2 attempts each (a turn is started only once a
    # reply was taken, so this holds whatever the threads' timing: with all turns handed to
    # the threads at once, one thread asked 21 times); no store written, no reply cached
    assert 20 <= len(bad.asked) <= 20 + 2 * (concurrency - 1)
    assert not out.exists() and cache_rows(cache) == 0

    good = endpoints(facts_for("good"))
    assert main(llm_cli(good.url, cache, out, data_dir)) == 0
    assert len(good.asked) == 419  # every turn of conv-26 asked: nothing came from the cache
    rows = [json.loads(x) for x in (out / "items.jsonl").read_text().splitlines()]
    assert sum(r["kind"] == "fact" for r in rows) == 2 * 419
    man = json.loads((out / "manifest.json").read_text())
    assert man["parser_stats"]["turns_invalid"] == 0 and "warnings" not in man


@pytest.mark.parametrize("body", [
    HTML,
    b'{"choices": [{"message": {"role": "assistant", "content": "[\\"A.\\"',  # truncated
    b'{"object": "error", "message": "model not loaded"}',  # JSON, not a chat completion
    b"",
])
def test_bodies_that_are_not_chat_completions(endpoints, tmp_path: Path, body: bytes) -> None:
    srv = endpoints(always(200, body))
    with pytest.raises(TiapError) as exc:
        build_store(small_dataset(), parser(srv.url, tmp_path / "c.sqlite"), tmp_path / "s")
    assert exc.value.code == "endpoint"
    msg = str(exc.value)
    assert srv.url in msg and "gave 5 invalid replies in 5" in msg
    if body:
        assert "its body starts " + repr(body.decode()[:40])[:-1] in msg
    assert not (tmp_path / "s").exists() and cache_rows(tmp_path / "c.sqlite") == 0
    # the same command again: the 5 turns are asked again (their failures were only noted)
    # and, every reply being invalid again, the build stops again
    with pytest.raises(TiapError, match="gave 5 invalid replies in 5"):
        build_store(small_dataset(), parser(srv.url, tmp_path / "c.sqlite"), tmp_path / "s")
    assert not (tmp_path / "s").exists() and cache_rows(tmp_path / "c.sqlite") == 0


def test_prose_from_every_turn_stops_unless_max_invalid_is_1(endpoints, tmp_path: Path) -> None:
    srv = endpoints(lambda p, h, b: chat("Sure! Here are the facts you asked for."))
    with pytest.raises(TiapError, match=r"gave 5 invalid replies in 5.*the reply is not JSON"):
        build_store(small_dataset(), parser(srv.url, tmp_path / "c.sqlite"), tmp_path / "s")
    assert len(srv.asked) == 10  # 5 turns, each asked twice (the JSON retry)
    res = build_store(small_dataset(), parser(srv.url, tmp_path / "c.sqlite", max_invalid=1.0),
                      tmp_path / "s")
    w = res.manifest["warnings"]["invalid_reply"]
    assert w["count"] == 5 and w["reasons"] == {"the reply is not JSON": 5}
    assert res.counts["derived"] == 0 and cache_rows(tmp_path / "c.sqlite") == 0


def test_a_few_invalid_replies_are_counted_printed_and_asked_again(
        endpoints, data_dir: Path, tmp_path: Path, capsys) -> None:
    invalid: Counter[str] = Counter()
    good = facts_for("ok")

    def script(path: str, headers: dict[str, str], body: dict[str, Any]) -> tuple[int, bytes]:
        turn = turn_of(body)
        if hashlib.sha256(turn.encode()).hexdigest()[0] == "0":  # one turn in 16 or so
            with threading.Lock():
                invalid[turn] += 1
            return 200, HTML
        return good(path, headers, body)

    srv = endpoints(script)
    cache, out = tmp_path / "cache.sqlite", tmp_path / "store"
    assert main(llm_cli(srv.url, cache, out, data_dir)) == 0
    err = capsys.readouterr().err
    n = len(invalid)
    assert 0 < n < 419 / 2 and set(invalid.values()) == {2}  # each asked twice, never valid
    man = json.loads((out / "manifest.json").read_text())
    w = man["warnings"]["invalid_reply"]
    assert w["count"] == n == man["parser_stats"]["turns_invalid"]
    assert len(w["examples"]) == 5 and all(e.startswith("record conv-26:") for e in w["examples"])
    warn = [ln for ln in err.splitlines() if ln.startswith("warning[invalid_reply]: ")]
    assert len(warn) == 1 and f"{n} of 419 replies of {srv.url}/chat/completions" in warn[0]
    assert cache_rows(cache) == 419 - n

    # the rerun asks again for exactly those turns (twice each) and nothing else
    srv.asked.clear()
    assert main(llm_cli(srv.url, cache, out, data_dir)) == 0
    assert Counter(turn_of(b) for b in srv.asked) == Counter({t: 2 for t in invalid})


def test_max_invalid_out_of_range_is_refused(tmp_path: Path, data_dir: Path, capsys) -> None:
    rc = main(llm_cli("http://127.0.0.1:9/v1", tmp_path / "c", tmp_path / "s", data_dir,
                      "--max-invalid", "1.5"))
    assert rc == 2 and "--max-invalid" in capsys.readouterr().err
    with pytest.raises(TiapError, match="key max_invalid: expected a number from 0 to 1"):
        parser("http://127.0.0.1:9/v1", tmp_path / "c", max_invalid=-0.1)


# -- cache keys name the endpoint ------------------------------------------------------------


def test_parser_cache_keys_name_the_endpoint(endpoints, tmp_path: Path) -> None:
    a, b = endpoints(facts_for("A")), endpoints(facts_for("B"))
    cache = tmp_path / "c.sqlite"
    build_store(small_dataset(), parser(a.url, cache), tmp_path / "sa")
    res = build_store(small_dataset(), parser(b.url, cache), tmp_path / "sb")
    assert len(a.asked) == 5 and len(b.asked) == 5  # B asked for every turn again
    assert res.manifest["parser_stats"]["cache_hits"] == 0
    texts = [json.loads(x)["text"] for x in (tmp_path / "sb" / "items.jsonl").read_text()
             .splitlines() if '"kind":"fact"' in x]
    assert len(texts) == 10 and all(t.startswith("B fact") for t in texts)
    # the same endpoint (a trailing / is the same URL) is served from the cache
    res = build_store(small_dataset(), parser(a.url + "/", cache), tmp_path / "sa2")
    assert res.manifest["parser_stats"]["cache_hits"] == 5 and len(a.asked) == 5


def test_an_old_parser_cache_is_refused_not_reused(tmp_path: Path, capsys,
                                                   data_dir: Path) -> None:
    old = tmp_path / "old.sqlite"
    db = sqlite3.connect(old)  # the schema TIAP wrote before endpoint keys (user_version 0)
    db.execute("CREATE TABLE facts (key TEXT PRIMARY KEY, model TEXT NOT NULL, "
               "prompt_version TEXT NOT NULL, unit_id TEXT, status TEXT NOT NULL, "
               "facts TEXT NOT NULL, detail TEXT, created TEXT NOT NULL)")
    db.execute("INSERT INTO facts VALUES ('k', 'm', 'tiap-facts-v1', 'c1:D1:1', 'invalid', "
               "'[]', 'the reply is not JSON', '2024-01-01')")
    db.commit()
    db.close()
    with pytest.raises(TiapError, match="schema 1, not 2.*cannot be told apart by base URL"):
        LlmCache(old)
    rc = main(llm_cli("http://127.0.0.1:9/v1", old, tmp_path / "s", data_dir))
    lines = error_lines(capsys.readouterr().err)
    assert rc == 2 and len(lines) == 1 and lines[0].startswith(f"error[cache]: {old}: ")
    assert "--cache" in lines[0] and not (tmp_path / "s").exists()


def verdict_script(label: str = "supports") -> Script:
    def script(path: str, headers: dict[str, str], body: dict[str, Any]) -> tuple[int, bytes]:
        return chat(json.dumps({"semantic_support_label": label,
                                "serving_semantics_label": "either_ok", "notes": "ok"}))
    return script


def judge_cli(cases: Path, url: str, out: Path, *extra: str) -> list[str]:
    return ["audit", "judge", str(cases), "--judge", "openai", "--model", "m", "--base-url",
            url, "--max-retries", "0", "--backoff", "0.01", "--out", str(out), *extra]


def test_judge_html_endpoint_stops_and_the_right_one_is_asked_afresh(
        endpoints, tmp_path: Path, capsys) -> None:
    cases = tmp_path / "cases.jsonl"
    write_cases(cases, [case(i, f"question {i}") for i in range(12)])
    bad, out = endpoints(always(200, HTML)), tmp_path / "judged"
    assert main(judge_cli(cases, bad.url, out, "--concurrency", "1")) == 2
    lines = error_lines(capsys.readouterr().err)
    assert len(lines) == 1 and lines[0].startswith(
        f"error[endpoint]: the endpoint {bad.url}/chat/completions gave 10 invalid replies in "
        "10 (the cases asked in this run); the first, for case s:q0:source, query q0: the body "
        "is not a chat completion; its body starts '<html><head><title>Sign in"), lines
    assert len(bad.asked) == 10 and not (out / "labels.jsonl").exists()
    assert len(VerdictCache(out / "cache.sqlite")) == 0

    good = endpoints(verdict_script("partial"))
    assert main(judge_cli(cases, good.url, out)) == 0
    assert len(good.asked) == 12
    assert {r.label for r in read_labels(out / "labels.jsonl")} == {"partial"}
    # the verdicts of one endpoint are not served for another
    other = endpoints(verdict_script("supports"))
    assert main(judge_cli(cases, other.url, out)) == 0
    assert len(other.asked) == 12
    assert {r.label for r in read_labels(out / "labels.jsonl")} == {"supports"}


def test_ollama_vectors_are_cached_per_endpoint_and_bad_answers_cache_nothing(
        endpoints, tmp_path: Path) -> None:
    from tiap.retrieval import make_retriever

    def embed(value: float) -> Script:
        return lambda p, h, b: (200, json.dumps(
            {"embeddings": [[value, 1.0] for _ in b["input"]]}).encode())

    a, b = endpoints(embed(1.0)), endpoints(embed(-1.0))
    cache = tmp_path / "emb"
    ra = make_retriever("dense", model="ollama:e", ollama_url=a.root, cache_dir=cache)
    rb = make_retriever("dense", model="ollama:e", ollama_url=b.root, cache_dir=cache)
    va, vb = ra.embed(["x", "y"]), rb.embed(["x", "y"])  # type: ignore[attr-defined]
    assert len(a.asked) == 1 and len(b.asked) == 1  # B's vectors are not A's
    assert va[0] == pytest.approx([2 ** -0.5, 2 ** -0.5])
    assert vb[0] == pytest.approx([-(2 ** -0.5), 2 ** -0.5])

    html = endpoints(always(200, HTML))
    rh = make_retriever("dense", model="ollama:e", ollama_url=html.root, cache_dir=cache)
    with pytest.raises(TiapError) as exc:
        rh.embed(["x"])  # type: ignore[attr-defined]
    assert exc.value.code == "endpoint"
    assert f"Ollama at {html.root} sent a body that is not JSON for 1 texts" in str(exc.value)
    assert "'<html><head>" in str(exc.value)
    db = sqlite3.connect(cache / "embeddings.sqlite3")
    models = sorted(r[0] for r in db.execute("SELECT DISTINCT model FROM vectors"))
    db.close()
    assert models == sorted([f"ollama:e@{a.root}", f"ollama:e@{b.root}"])


@pytest.mark.parametrize(("body", "what"), [
    (b'{"embeddings": [[1, true]]}', "something other than numbers"),
    (b'{"embeddings": [["0.5", 1]]}', "something other than numbers"),
    (b'{"embeddings": [[1e39, 1]]}', "non-finite"),
    (b'{"embeddings": [[1, 2], [3]]}', "2 embeddings"),
    (b'{"embeddings": [[]]}', "not rows of one length"),
    (b'[' * 5000, "not JSON"),
])
def test_ollama_answers_that_are_refused(body: bytes, what: str) -> None:
    n = 2 if b"[3]" in body else 1
    with pytest.raises(TiapError, match=what) as exc:
        read_embeddings(body, 1 if what == "2 embeddings" else n, "http://h")
    assert exc.value.code == "endpoint"


# -- secrets never written -------------------------------------------------------------------


def all_bytes(root: Path) -> Iterator[tuple[Path, bytes]]:
    for p in root.rglob("*"):
        if p.is_file():
            yield p, p.read_bytes()


def test_an_echoing_endpoint_cannot_write_the_key_from_the_parser(
        endpoints, tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("TIAP_K7_KEY", KEY)

    def echo(path: str, headers: dict[str, str], body: dict[str, Any]) -> tuple[int, bytes]:
        auth = headers.get("Authorization", "")
        return 200, json.dumps({"echo": headers, "choices": [{"message": {
            "content": json.dumps([f"The server saw {auth}.", f"Key {auth[7:]} again."])}}]}
        ).encode()

    srv = endpoints(echo)
    work = tmp_path / "w"
    res = build_store(small_dataset(),
                      parser(srv.url, work / "c.sqlite", api_key_env="TIAP_K7_KEY"), work / "s")
    assert res.counts["derived"] == 10
    facts = [json.loads(x)["text"] for x in (work / "s" / "items.jsonl").read_text().splitlines()
             if '"kind":"fact"' in x]
    assert f"The server saw Bearer {REDACTED}." in facts and f"Key {REDACTED} again." in facts
    for p, data in all_bytes(work):
        assert KEY.encode() not in data, p
    # an error message quoting the echoed body is redacted too
    srv.script = lambda p, h, b: (200, f"<html>you sent {h.get('Authorization')}</html>".encode())
    with pytest.raises(TiapError) as exc:
        build_store(small_dataset(), parser(srv.url, work / "c2.sqlite",
                                            api_key_env="TIAP_K7_KEY"), work / "s2")
    assert KEY not in str(exc.value) and f"you sent Bearer {REDACTED}" in str(exc.value)


def test_an_echoing_endpoint_cannot_write_the_key_from_the_judge(tmp_path: Path, monkeypatch,
                                                                 capsys) -> None:
    from stub_openai import StubServer

    monkeypatch.setenv("TIAP_K7_KEY", KEY)
    cases = tmp_path / "cases.jsonl"
    write_cases(cases, [case(i, f"question {i} [echo-auth]") for i in range(3)])
    out = tmp_path / "judged"
    with StubServer() as server:
        assert main(judge_cli(cases, server.base_url, out, "--api-key-env",
                              "TIAP_K7_KEY")) == 0
        assert server.auth == {f"Bearer {KEY}"}  # the key was sent
    captured = capsys.readouterr()
    assert KEY not in captured.out + captured.err
    recs = read_labels(out / "labels.jsonl")
    assert all(f"(you sent Authorization: Bearer {REDACTED})" in (r.notes or "") for r in recs)
    for p, data in all_bytes(tmp_path):
        assert KEY.encode() not in data, p


@contextlib.contextmanager
def own_secrets() -> Iterator[None]:
    """Secrets registered inside are forgotten after (the registry is process-wide)."""
    import tiap.llm.client

    saved = set(tiap.llm.client._SECRETS)
    try:
        yield
    finally:
        with tiap.llm.client._SECRETS_LOCK:
            tiap.llm.client._SECRETS.clear()
            tiap.llm.client._SECRETS.update(saved)


@own_secrets()
def test_redact() -> None:
    add_secret("short")  # under 8 characters: not a secret (it would garble text)
    add_secret("my-configured-key-42")
    assert redact("short") == "short"
    assert redact({"a": ["x my-configured-key-42 y"]}) == {"a": [f"x {REDACTED} y"]}
    assert redact("Authorization: Bearer abc123def456") == f"Authorization: Bearer {REDACTED}"
    assert redact('{"x-api-key": "zz9-top"}') == f'{{"x-api-key": "{REDACTED}"}}'
    assert redact("authorization: Basic dXNlcjpwYXNz") == f"authorization: Basic {REDACTED}"
    assert redact("http://bob:hunter22@host/v1") == f"http://bob:{REDACTED}@host/v1"
    # ordinary prose is left alone
    for text in ("She was the bearer of good news.", "The key to success is practice.",
                 "Mail me at bob@example.com", "api_key_env: OPENAI_API_KEY"):
        assert redact(text) == text


# -- property-based: the endpoint readers never raise anything but TiapError ----------------

_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10, 10) | st.floats(allow_nan=False)
    | st.text(max_size=12),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=6), kids,
                                                              max_size=4),
    max_leaves=12)


def _completion(content: Any) -> bytes:
    return json.dumps({"choices": [{"message": {"content": content}}]}).encode()


_bodies = st.one_of(
    st.binary(max_size=200),
    _json_values.map(lambda v: json.dumps(v).encode()),
    _json_values.map(_completion),
    st.lists(st.text(max_size=20), max_size=6).map(lambda v: _completion(json.dumps(v))),
    st.tuples(st.lists(st.text(max_size=20), max_size=6), st.integers(0, 60)).map(
        lambda t: _completion(json.dumps(t[0]))[: t[1]]),  # truncated
)


def _reference_content(body: bytes) -> str | None:
    """The reference reader: stdlib JSON, ``choices[0].message.content`` when a string."""
    try:
        data = json.loads(body)
        content = data["choices"][0]["message"]["content"]
    except Exception:  # noqa: BLE001 - the reference accepts exactly what it can index
        return None
    return content if isinstance(content, str) else None


DEEP = _completion("[" * 5000)  # json.loads raises RecursionError on such nesting


@FAST
@given(_bodies)
@example(b"[" * 5000)
@example(DEEP)
def test_property_chat_bodies(body: bytes) -> None:
    text, data, content = read_completion(body)  # never raises
    ref = _reference_content(body)
    if ref is not None:
        assert content == redact(ref)
    assert content is None or isinstance(content, str)


def _reference_facts(content: str, cap: int) -> list[str] | None:
    """Strict reference: the content is exactly a JSON list of strings."""
    try:
        value = json.loads(content)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return None
    out: list[str] = []
    for v in value:
        s = " ".join(v.split())
        if s and s not in out:
            out.append(s)
    return out[:cap]


@FAST
@given(_bodies)
@example(DEEP)
@example(_completion(json.dumps(["A fact quoting ```json [1]```.", "B."])))
def test_property_parser_turns(body: bytes) -> None:
    from tiap.llm.client import ChatReply

    p = make_parser("llm", base_url="http://127.0.0.1:9/v1", model="m", max_facts=3,
                    json_retries=0)
    text, data, content = read_completion(body)
    p.http.post = lambda payload, **kw: ChatReply(200, 1, text, data, content)  # type: ignore
    res = p._turn([{"role": "user", "content": "x"}])  # never raises
    assert res.status in ("ok", "invalid")
    ref = None if content is None else _reference_facts(content, 3)
    if ref is not None:
        assert res.status == "ok" and res.facts == ref
    if res.status == "ok":
        assert len(res.facts) <= 3 and len(set(res.facts)) == len(res.facts)
        assert all(isinstance(f, str) and f and f == " ".join(f.split()) for f in res.facts)
    else:
        assert res.facts == [] and res.detail


@FAST
@given(_bodies)
@example(DEEP)
@example(_completion("{" + '"a":[' * 3000))
def test_property_judge_verdicts(body: bytes) -> None:
    from tiap.audit.labels import SEMANTIC_LABELS, UNSCORED
    from tiap.audit.openai_judge import OpenAIJudge
    from tiap.llm.client import ChatReply

    j = OpenAIJudge(model="m", base_url="http://127.0.0.1:9/v1")
    text, data, content = read_completion(body)
    v = j._verdict(ChatReply(200, 1, text, data, content))  # never raises
    assert v.label in (*SEMANTIC_LABELS, UNSCORED)
    assert j.reusable(v) == (v.label != UNSCORED)


def _reference_embeddings(body: bytes, n: int) -> np.ndarray | None:
    try:
        vecs = json.loads(body)["embeddings"]
    except Exception:  # noqa: BLE001
        return None
    if not isinstance(vecs, list) or len(vecs) != n:
        return None
    rows = []
    for v in vecs:
        if not isinstance(v, list) or not v or any(type(x) not in (int, float) for x in v):
            return None
        rows.append([float(x) for x in v])
    if n and len({len(r) for r in rows}) != 1:
        return None
    with np.errstate(over="ignore"):
        arr = np.array(rows, dtype=np.float32).reshape(n, -1 if n else 0)
    return arr if np.all(np.isfinite(arr)) else None


_emb_bodies = st.one_of(
    st.binary(max_size=120),
    _json_values.map(lambda v: json.dumps({"embeddings": v}).encode()),
    st.lists(st.lists(st.one_of(st.floats(width=64), st.integers(-5, 5), st.booleans()),
                      min_size=0, max_size=3), max_size=3).map(
        lambda v: json.dumps({"embeddings": v}).encode()),
)


@FAST
@given(_emb_bodies, st.integers(0, 3))
def test_property_ollama_embeddings(body: bytes, n: int) -> None:
    ref = _reference_embeddings(body, n)
    try:
        got = read_embeddings(body, n, "http://h")
    except TiapError as exc:
        assert exc.code == "endpoint"
        assert ref is None
        return
    assert ref is not None and got.dtype == np.float32
    np.testing.assert_array_equal(got, ref)


@FILES
@given(st.binary(max_size=300))
def test_property_cache_files(tmp_path: Path, blob: bytes) -> None:
    """Any bytes where a cache file is expected: it opens, or a TiapError names it."""
    from tiap.retrieval.cache import EmbeddingCache

    for name, open_it in (("llm.sqlite", lambda p: LlmCache(p).get("k")),
                          ("v.sqlite", lambda p: VerdictCache(p).get("k")),
                          ("emb/embeddings.sqlite3", lambda p: EmbeddingCache(p.parent)
                           .missing("m", ["k"]))):
        path = tmp_path / hashlib.sha256(blob).hexdigest()[:12] / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(blob)
        try:
            open_it(path)
        except TiapError as exc:
            assert str(path.parent) in str(exc)


@FAST
@given(st.text(max_size=80), st.text(alphabet="abcdefghijk0123456789-_", min_size=8,
                                     max_size=20))
def test_property_redaction_removes_the_secret(text: str, secret: str) -> None:
    with own_secrets():
        add_secret(secret)
        mixed = text[: len(text) // 2] + secret + text[len(text) // 2:]
        out = redact(mixed)
        assert secret not in out
        assert redact(out) == out  # idempotent
