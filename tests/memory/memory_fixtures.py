"""Helpers for the memory tests: inline datasets and a local OpenAI-compatible server."""

from __future__ import annotations

import hashlib
import json
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tiap.datasets.base import Bundle, InlineDataset
from tiap.datasets.records import Collection, DerivedMemory, Session, Turn

TURN_MARK = "Turn to extract facts from:\n"


def make_bundle(
    cid: str,
    turns: list[tuple[str, str]],
    *,
    speakers: tuple[str, ...] = ("Caroline", "Melanie"),
    date: str | None = "1:56 pm on 8 May, 2023",
    memories: tuple[DerivedMemory, ...] = (),
) -> Bundle:
    """One collection, one session; ``turns`` are ``(speaker, text)``; unit ids ``<cid>:D1:<i>``."""
    ts = tuple(Turn(f"{cid}:D1:{i}", cid, "session_1", i, spk, text)
               for i, (spk, text) in enumerate(turns, start=1))
    return Bundle(
        collection=Collection(cid, 1, len(ts), speakers),
        sessions=(Session(cid, "session_1", 1, date),),
        turns=ts,
        queries=(),
        memories=memories,
    )


def small_dataset() -> InlineDataset:
    return InlineDataset([
        make_bundle("c1", [
            ("Caroline", "Hey Mel! Good to see you! How have you been?"),
            ("Melanie", "I ran a charity race for mental health last Saturday. My kids loved it."),
            ("Caroline", "I went to a LGBTQ support group yesterday and it was so powerful."),
        ]),
        make_bundle("c2", [
            ("user", "I adopted a beagle named Max in March 2023. Can you suggest dog food?"),
            ("assistant", "Sure! Here are some options you might like."),
        ], speakers=("user", "assistant"), date="2023/05/20 (Sat) 00:31"),
    ])


# -- a local OpenAI-compatible chat-completions server ------------------------------------

Reply = tuple[int, Any, dict[str, str]]  # status, body (dict: JSON; str: raw text), headers


def turn_text(body: dict[str, Any]) -> str:
    """The turn a request asks about (the line after the prompt's turn marker)."""
    user = body["messages"][1]["content"]
    return user.split(TURN_MARK, 1)[1]


def chat_reply(content: str, finish_reason: str | None = None) -> Reply:
    choice: dict[str, Any] = {"message": {"role": "assistant", "content": content}}
    if finish_reason is not None:
        choice["finish_reason"] = finish_reason
    return 200, {"choices": [choice]}, {}


def format_of(body: dict[str, Any]) -> str:
    """The ``response_format`` type a request asks for (``none``: it asks for none)."""
    rf = body.get("response_format")
    return rf.get("type", "?") if isinstance(rf, dict) else "none"


def refusing(statuses: dict[str, int],
             then: Callable[[dict[str, Any], int], Reply] = lambda body, n: default_reply(body),
             ) -> Callable[[dict[str, Any], int], Reply]:
    """A script answering ``statuses[type]`` to every request asking for that
    ``response_format`` type (a server that does not support it), else ``then``."""
    def script(body: dict[str, Any], n: int) -> Reply:
        status = statuses.get(format_of(body))
        if status is not None:
            return status, f"{format_of(body)} is not supported", {}
        return then(body, n)
    return script


def default_reply(body: dict[str, Any]) -> Reply:
    """Two facts per turn, made from the turn's text (deterministic)."""
    turn = turn_text(body)
    digest = hashlib.sha256(turn.encode()).hexdigest()[:8]
    return chat_reply(json.dumps([f"Fact {digest} one.", f"Fact {digest} two."]))


@dataclass
class FakeServer:
    url: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    #: decides the reply; gets the request body and how often this turn was asked before
    script: Callable[[dict[str, Any], int], Reply] = lambda body, n: default_reply(body)
    #: once set, every request blocks until ``release`` is set (for the kill test)
    block_after: int | None = None
    blocked: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    seen: Counter[str] = field(default_factory=Counter)

    def turns_asked(self) -> list[str]:
        return [turn_text(b) for b in self.requests]


def serve_fake_llm() -> Iterator[FakeServer]:
    server_state: dict[str, FakeServer] = {}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # keep test output quiet
            pass

        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            state = server_state["s"]
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length))
            if self.path != "/v1/chat/completions":
                self._send(404, {"error": "not found"}, {})
                return
            with state.lock:
                state.requests.append(body)
                state.headers.append(dict(self.headers))
                turn = turn_text(body)
                n = state.seen[turn]
                state.seen[turn] += 1
                block = state.block_after is not None and len(state.requests) > state.block_after
            if block:
                state.blocked.set()
                state.release.wait(30)
                return
            status, payload, headers = state.script(body, n)
            self._send(status, payload, headers)

        def _send(self, status: int, payload: Any, headers: dict[str, str]) -> None:
            data = (payload if isinstance(payload, str) else json.dumps(payload)).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    state = FakeServer(url=f"http://127.0.0.1:{httpd.server_address[1]}/v1")
    server_state["s"] = state
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.release.set()
        httpd.shutdown()
        httpd.server_close()


def read_rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
