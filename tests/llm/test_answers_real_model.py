"""TIAP's own answers (tiap.answers.generate) against a real small model (SmolLM2-135M on a
llama.cpp server, the ``local_llm`` fixture): contexts cut to the budget, the request cache,
a killed run resumed without asking again; a stand-in server only to inject faults."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from tiap.answers.generate import (
    AnswerCache,
    count_tokens,
    generate_answers,
    stratified_sample,
)
from tiap.datasets import Query
from tiap.errors import TiapError
from tiap.memory.store import Item
from tiap.runs import Ranking, Run

TURNS = {
    "c:1": "Ann (1 May 2023): I adopted a grey cat called Pixel last week.",
    "c:2": "Bob (1 May 2023): My sister moved to Lisbon in March.",
    "c:3": "Ann (2 May 2023): I started learning the cello.",
    "c:4": "Bob (2 May 2023): We went hiking on Mount Rainier.",
}
ITEMS = [Item(u, "raw", (u,), text=t, collection="c") for u, t in TURNS.items()]
QUERIES = [Query("q1", "c", "What is the name of Ann's cat?", "Pixel", "single-hop", ("c:1",)),
           Query("q2", "c", "Where did Bob's sister move?", "Lisbon", "single-hop", ("c:2",)),
           Query("q3", "c", "What instrument does Ann learn?", "cello", "multi-hop", ("c:3",)),
           Query("q4", "c", "Where did Bob hike?", "Mount Rainier", "temporal", ("c:4",))]
RANKS = {"q1": ["c:1", "c:2", "c:3"], "q2": ["c:2", "c:4"], "q3": ["c:3", "c:1"],
         "q4": ["c:4", "c:3", "c:2", "c:1"]}


def _run(name: str = "s-bm25", store: str = "s") -> Run:
    return Run(name, [Ranking(q, name, ids) for q, ids in RANKS.items()], store=store)


def _endpoint(srv) -> tuple[str, str]:
    return srv.base_url, srv.model


def test_answers_record_the_context_given_under_the_budget(local_llm, tmp_path: Path) -> None:
    # count_tokens by hand: c:1 "Ann ( 1 May 2023 ) : I adopted a grey cat called Pixel last
    # week ." 17; c:2 15; c:3 13; c:4 14. Budget 30, k 3:
    # q1: 17, then 17 + 15 = 32 > 30: c:1 alone (2 of its top 3 cut)
    # q2: 15 + 14 = 29: both; q3: 13 + 17 = 30 (equal fits): both
    # q4: 14 + 13 = 27, then 27 + 15 = 42 > 30: c:4, c:3 (1 of its top 3 cut)
    assert [count_tokens(TURNS[u]) for u in ("c:1", "c:2", "c:3", "c:4")] == [17, 15, 13, 14]
    seen = []
    s = generate_answers(_run(), QUERIES, {"s": ITEMS}, k=3, token_budget=30,
                         endpoint=_endpoint(local_llm), cache=tmp_path / "a.sqlite",
                         dataset="toy", progress=seen.append, max_tokens=24)
    assert [a.query_id for a in s] == ["q1", "q2", "q3", "q4"]
    ctx = {a.query_id: a.context.items for a in s}
    assert ctx == {"q1": ("c:1",), "q2": ("c:2", "c:4"), "q3": ("c:3", "c:1"),
                   "q4": ("c:4", "c:3")}
    assert all(a.context.store == "s" and a.dataset == "toy" for a in s)
    assert all(isinstance(a.answer, str) and a.answer.strip() for a in s)
    assert [a.reference for a in s] == ["Pixel", "Lisbon", "cello", "Mount Rainier"]
    assert [p.cached for p in seen] == [False] * 4 and all(p.requests == 1 for p in seen)
    gen = s.warnings["generation"]
    assert gen["model"] == "smollm2-135m" and gen["items_cut_by_budget"] == 2 + 0 + 0 + 1
    # again: every answer from the cache, the same text, no request
    seen.clear()
    again = generate_answers(_run(), QUERIES, {"s": ITEMS}, k=3, token_budget=30,
                             endpoint=_endpoint(local_llm), cache=tmp_path / "a.sqlite",
                             dataset="toy", progress=seen.append, max_tokens=24)
    assert again.answers == s.answers
    assert [p.cached for p in seen] == [True] * 4 and sum(p.requests for p in seen) == 0
    # k = 1 changes the contexts of q2, q3, q4 (another body: asked again), not q1's
    seen.clear()
    generate_answers(_run(), QUERIES, {"s": ITEMS}, k=1, token_budget=30,
                     endpoint=_endpoint(local_llm), cache=tmp_path / "a.sqlite",
                     progress=seen.append, max_tokens=24)
    assert [p.cached for p in seen] == [True, False, False, False]


KILLED = """
import os, signal, sys
sys.path.insert(0, {tests!r})
from test_answers_real_model import ITEMS, QUERIES, _run
from tiap.answers.generate import generate_answers
def progress(p):
    if p.done == 2:
        os.kill(os.getpid(), signal.SIGKILL)  # no handler, no cleanup runs
generate_answers(_run(), QUERIES, {{"s": ITEMS}}, endpoint=({url!r}, {model!r}),
                 cache={cache!r}, progress=progress, max_tokens=24)
"""


def test_a_killed_run_resumes_without_asking_again(local_llm, tmp_path: Path) -> None:
    cache = tmp_path / "a.sqlite"
    code = KILLED.format(tests=str(Path(__file__).parent), url=local_llm.base_url,
                         model=local_llm.model, cache=str(cache))
    proc = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert proc.returncode == -9, proc.stderr
    with sqlite3.connect(cache) as db:
        done = sorted(q for (q,) in db.execute("SELECT query_id FROM answers"))
    assert done == ["q1", "q2"]  # each answer was committed before the next request
    seen = []
    s = generate_answers(_run(), QUERIES, {"s": ITEMS}, endpoint=_endpoint(local_llm),
                         cache=cache, progress=seen.append, max_tokens=24)
    assert len(s) == 4
    # the second run asked for q3 and q4 only: 2 requests, not 4
    assert [(p.query_id, p.cached) for p in seen] == [("q1", True), ("q2", True),
                                                      ("q3", False), ("q4", False)]
    assert sum(p.requests for p in seen) == 2
    with AnswerCache(cache) as c:
        assert len(c) == 4


# -- faults, from a stand-in server ------------------------------------------------------------


class _Fake(BaseHTTPRequestHandler):
    body = b"<html>not a chat completion</html>"
    asked: ClassVar[list[dict]] = []

    def do_POST(self) -> None:
        n = int(self.headers["Content-Length"])
        type(self).asked.append(json.loads(self.rfile.read(n)))
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def fake():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Fake)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    _Fake.asked = []
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1"
    srv.shutdown()
    srv.server_close()


def test_invalid_replies_stop_the_run_and_are_not_cached(fake: str, tmp_path: Path) -> None:
    cache = tmp_path / "a.sqlite"
    with pytest.raises(TiapError, match=r"gave 4 invalid replies in 4 .*body starts "
                                        r"'<html>not a chat completion</html>'") as exc:
        generate_answers(_run(), QUERIES, {"s": ITEMS}, endpoint=(fake, "m"), cache=cache)
    assert exc.value.code == "endpoint"
    assert len(_Fake.asked) == 4
    with AnswerCache(cache) as c:
        assert len(c) == 0  # nothing invalid is kept: the next run asks again
    # the request is the template filled with the context and the question, as one message
    msg = _Fake.asked[0]["messages"]
    assert len(msg) == 1 and msg[0]["role"] == "user"
    assert "- " + TURNS["c:1"] in msg[0]["content"]
    assert "What is the name of Ann's cat?" in msg[0]["content"]
    assert _Fake.asked[0]["temperature"] == 0.0 and _Fake.asked[0]["max_tokens"] == 64


def test_stratified_sample_is_even_seeded_and_ordered() -> None:
    qs = [Query(f"q{i}", "c", "?", "a", cat, ()) for i, cat in
          enumerate(["x"] * 10 + ["y"] * 10 + ["z"] * 2)]
    a = stratified_sample(qs, 9, seed=3)
    # 9 over three strata: 3 each; z has only 2, so its third goes to x (first in order)
    cats = [qs[int(q[1:])].category for q in a]
    assert sorted(cats) == ["x"] * 4 + ["y"] * 3 + ["z"] * 2
    assert a == sorted(a, key=lambda q: int(q[1:]))  # in the queries' order
    assert stratified_sample(qs, 9, seed=3) == a and stratified_sample(qs, 9, seed=4) != a
    assert stratified_sample(qs, 2, keep=lambda q: q.category == "z") == ["q20", "q21"]
    with pytest.raises(TiapError, match="only 22 queries"):
        stratified_sample(qs, 23)
