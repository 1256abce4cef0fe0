"""Helpers for the Mem0 tests: an inline dataset, a network guard, and a local stand-in for an
OpenAI-compatible chat-completions endpoint that answers Mem0's fact-extraction prompt.

No LLM weights exist where the tests run, so Mem0's ``infer=True`` path is exercised against
this server: Mem0's own ``openai`` provider (the real OpenAI client) over real HTTP on
127.0.0.1. Mem0 3 sends one extraction request per ``add()`` call; its user prompt holds the
call's messages, one ``<role>: <content>`` line each, under ``## New Messages``. The stand-in
answers ``{"memory": [{"id": "<i>", "text": "Noted: <content>"}, ...]}``, one fact per
message line, skipping lines containing ``[nofact]`` (a call with a ``[cut]`` line gets
half of that JSON, ``finish_reason`` "length", as a ``max_tokens`` cap would leave it): so
each derived memory names the turn it was made from in its text, and the test can check its
lineage by hand.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

from tiap.datasets.base import Bundle, InlineDataset
from tiap.datasets.records import Collection, Query, Session, Turn

NEW_MESSAGES = "## New Messages\n"


def inline_dataset(turns: Sequence[tuple[str, str]],
                   queries: Sequence[tuple[str, str, tuple[str, ...]]],
                   cid: str = "c1") -> InlineDataset:
    """One collection, one session; turns ``(speaker, text)`` get unit ids ``<cid>:D1:<i>``;
    queries are ``(query_id, question, evidence)``."""
    ts = tuple(Turn(f"{cid}:D1:{i}", cid, "session_1", i, spk, text)
               for i, (spk, text) in enumerate(turns, start=1))
    qs = tuple(Query(qid, cid, question, None, "1", ev) for qid, question, ev in queries)
    return InlineDataset([Bundle(Collection(cid, 1, len(ts), ("Caroline", "Melanie")),
                                 (Session(cid, "session_1", 1, "8 May, 2023"),), ts, qs)])


def new_messages(body: dict[str, Any]) -> list[str]:
    """The message lines of Mem0's extraction prompt (``<role>: <content>``)."""
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    section = user.split(NEW_MESSAGES, 1)[1].split("\n\n## ", 1)[0]
    return [line for line in section.splitlines() if line.strip()]


class Mem0StandIn:
    """``POST /v1/chat/completions`` -> Mem0's extraction JSON (see the module docstring)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(n) or b"{}")
                if not self.path.endswith("/chat/completions"):
                    self._send(404, b'{"error": "not found"}')
                    return
                with stand_in.lock:
                    stand_in.requests.append(body)
                facts: list[dict[str, str]] = []
                lines = new_messages(body)
                for line in lines:
                    content = line.split(": ", 1)[1]
                    if "[nofact]" not in content:
                        facts.append({"id": str(len(facts)), "text": f"Noted: {content}"})
                reply, finish = json.dumps({"memory": facts}), "stop"
                if any("[cut]" in line for line in lines):  # a reply the max_tokens cap cut
                    reply, finish = reply[:len(reply) // 2], "length"
                data = json.dumps({
                    "id": "standin-1", "object": "chat.completion", "created": 0,
                    "model": body.get("model"),
                    "choices": [{"index": 0, "finish_reason": finish,
                                 "message": {"role": "assistant", "content": reply}}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                }).encode()
                self._send(200, data)

            def _send(self, status: int, data: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@contextmanager
def no_network() -> Iterator[list[Any]]:
    """Record (and refuse) every socket connection to anything but the loopback address."""
    attempts: list[Any] = []
    original = socket.socket.connect

    def guarded(self: socket.socket, address: Any) -> Any:
        host = address[0] if isinstance(address, tuple) else address
        if self.family in (socket.AF_INET, socket.AF_INET6) and host not in (
                "127.0.0.1", "::1", "localhost"):
            attempts.append(address)
            raise OSError(f"test: network access to {address!r} refused")
        return original(self, address)

    socket.socket.connect = guarded  # type: ignore[method-assign,assignment]
    try:
        yield attempts
    finally:
        socket.socket.connect = original  # type: ignore[method-assign]
