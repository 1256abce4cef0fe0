"""Dense retrieval through Ollama's /api/embed, against a local stub server speaking it.

The stub embeds a text as its 26 letter counts (a..z), unnormalised, so the expected cosine
ranking can be worked out by hand, and answers unknown models as Ollama does (HTTP 404 with
an "error" message).
"""

from __future__ import annotations

import json
import socket
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from retrieval_fixtures import make_queries, make_store

from tiap.cli.main import main
from tiap.errors import MissingExtraError, TiapError
from tiap.retrieval import OllamaEncoder, make_retriever, retrieve

MODEL = "stub-embed"


def letters(text: str) -> list[float]:
    v = [0.0] * 26
    for c in text.lower():
        if "a" <= c <= "z":
            v[ord(c) - 97] += 1
    return v


class Stub(ThreadingHTTPServer):
    requests: list[dict[str, Any]]
    mode: str  # "ok", "short" (one embedding too few)


class Handler(BaseHTTPRequestHandler):
    server: Stub

    def log_message(self, *args: Any) -> None:  # keep test output quiet
        pass

    def _send(self, status: int, obj: Any) -> None:
        body = json.dumps(obj).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:  # the name is http.server's API
        length = int(self.headers.get("Content-Length", "0"))
        req = json.loads(self.rfile.read(length))
        self.server.requests.append({"path": self.path, **req})
        if self.path != "/api/embed":
            self._send(404, {"error": "404 page not found"})
            return
        if req.get("model") != MODEL:
            self._send(404, {"error": f"model \"{req.get('model')}\" not found, "
                                      "try pulling it first"})
            return
        texts = req["input"] if isinstance(req["input"], list) else [req["input"]]
        embs = [letters(t) for t in texts]
        if self.server.mode == "short":
            embs = embs[:-1]
        self._send(200, {"model": MODEL, "embeddings": embs, "total_duration": 1000})


@pytest.fixture
def stub() -> Iterator[Stub]:
    server = Stub(("127.0.0.1", 0), Handler)
    server.requests = []
    server.mode = "ok"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def url_of(server: Stub) -> str:
    host, port = server.server_address[:2]
    return f"http://{host}:{port}"


def test_ollama_dense_ranking_and_cache(stub: Stub, tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    queries = make_queries(tmp_path / "q.jsonl")
    ret = make_retriever("dense", model=f"ollama:{MODEL}", ollama_url=url_of(stub),
                         cache_dir=tmp_path / "cache", batch_size=4)
    res = retrieve(store, queries, ret, tmp_path / "ollama.jsonl")
    spec = res.header["retriever"]
    assert spec["backend"] == "ollama" and spec["model"] == f"ollama:{MODEL}"
    assert spec["url"] == url_of(stub)
    # 7 item texts (6 distinct: the kayak text is in both collections) + 3 questions = 9
    # distinct texts, in batches of at most 4: 3 requests, each naming the model.
    assert [len(r["input"]) for r in stub.requests] == [4, 4, 1]
    assert {r["model"] for r in stub.requests} == {MODEL}
    assert {r["path"] for r in stub.requests} == {"/api/embed"}
    # q3 "kayak" (k2 a2 y1) against c2 by letter-count cosine: "Kayaking on the lake" shares
    # most of its letters, so it ranks first; every item of c2 is ranked.
    r = res.run.ranking("q3")
    assert r.item_ids[0] == "c2:kayak" and len(r.item_ids) == 3
    q = np.array(letters("kayak"))
    d = np.array(letters("Kayaking on the lake"))
    assert r.scores is not None
    assert r.scores[0] == pytest.approx(q @ d / np.linalg.norm(q) / np.linalg.norm(d), rel=1e-6)

    # Rerun on the same cache: no request at all.
    before = len(stub.requests)
    again = make_retriever("dense", model=f"ollama:{MODEL}", ollama_url=url_of(stub),
                           cache_dir=tmp_path / "cache")
    retrieve(store, queries, again, tmp_path / "ollama2.jsonl")
    assert len(stub.requests) == before


def test_an_unknown_ollama_model(stub: Stub) -> None:
    enc = OllamaEncoder("nomic-embed-text", url=url_of(stub))
    with pytest.raises(TiapError, match=r"HTTP 404 .*'nomic-embed-text'.*not found, try pulling"):
        enc.encode(["hello"])


def test_a_malformed_answer(stub: Stub) -> None:
    stub.mode = "short"
    with pytest.raises(TiapError, match=r"sent 1 embeddings for 2 texts; the body starts") as e:
        OllamaEncoder(MODEL, url=url_of(stub)).encode(["one", "two"])
    assert e.value.code == "endpoint" and url_of(stub) in str(e.value)


def test_no_server_listening() -> None:
    with socket.socket() as s:  # a free port, closed again: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    enc = OllamaEncoder(MODEL, url=f"127.0.0.1:{port}", timeout=5)
    assert enc.url == f"http://127.0.0.1:{port}"
    with pytest.raises(TiapError, match="cannot reach Ollama at http://127.0.0.1"):
        enc.encode(["hello"])


def test_the_cli_with_an_ollama_model(stub: Stub, tmp_path: Path, capsys) -> None:
    store = make_store(tmp_path / "store")
    queries = make_queries(tmp_path / "q.jsonl")
    out = tmp_path / "runs" / "ollama.jsonl"
    code = main(["retrieve", "--store", str(store), "--queries", str(queries),
                 "--retriever", "dense", "--model", f"ollama:{MODEL}", "--ollama-url",
                 url_of(stub), "--cache-dir", str(tmp_path / "cache"), "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    assert "encoded 9 texts" in capsys.readouterr().err
    assert out.exists() and (tmp_path / "runs" / "ollama.trec").exists()


def test_missing_httpx_names_the_llm_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "httpx", None)
    with pytest.raises(MissingExtraError, match=r"pip install -e '\.\[llm\]'"):
        OllamaEncoder(MODEL)
