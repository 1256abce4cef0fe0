"""A local stand-in for an OpenAI-compatible chat-completions endpoint (tests only).

No LLM weights can be downloaded where the tests run, so the ``openai`` judge is exercised
against this server: the real client (httpx) over real HTTP on 127.0.0.1, speaking the
chat-completions protocol (``POST /v1/chat/completions`` -> ``{"choices": [{"message":
{"content": ...}}]}``). Its behaviour per case is scripted by tags in the question text:

    [label=partial]   verdict label (default supports)     [serving=raw_needed]
    [429x2]           the first 2 requests answer 429      [500x1] / [500-always]
    [slow-once]       the first request sleeps ``slow`` s  [garbage] prose, no JSON
    [badjson]         JSON cut inside the label            [fence] verdict in ```json
    [empty]           empty content                        [notchat] an HTML body
    [badlabel]        a label outside the rubric           [401] / [400]
    [unescaped]       a verdict whose notes hold an unescaped quote (invalid JSON)
    [length]          a verdict cut short, ``finish_reason`` ``length``
    [echo-auth]       the verdict's notes, and the body, repeat the Authorization header

``refuse`` maps a ``response_format`` type (``json_schema``, ``json_object``; ``none``: a
request without one) to the status answered to every request asking for it, as a server
that does not support it does (llama-cpp-python answers ``json_schema`` with 500).

It counts every request per question, the successful replies, the requests in flight at
once, and the Authorization headers it received.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_TAG = re.compile(r"\[([a-z0-9=_\-]+)\]")


def _question(body: dict[str, Any]) -> str:
    for m in body.get("messages", []):
        if m.get("role") == "user":
            for line in m.get("content", "").splitlines():
                if line.startswith("Question: "):
                    return line[len("Question: "):]
    return ""


def format_of(body: dict[str, Any]) -> str:
    """The ``response_format`` type a request asks for (``none``: it asks for none)."""
    rf = body.get("response_format")
    return rf.get("type", "?") if isinstance(rf, dict) else "none"


class StubServer:
    def __init__(self, *, delay: float = 0.0, slow: float = 1.0,
                 refuse: Mapping[str, int] | None = None) -> None:
        self.delay = delay
        self.slow = slow
        self.refuse = dict(refuse or {})
        self.lock = threading.Lock()
        self.requests: list[tuple[str, int]] = []  # (question, status), as answered
        self.arrivals: dict[str, int] = {}
        self.completed: list[str] = []  # questions answered with a verdict (200)
        self.auth: set[str] = set()
        self.bodies: list[dict[str, Any]] = []
        self.inflight = 0
        self.max_inflight = 0
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # noqa: N802
                n = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(n) or b"{}")
                if not self.path.endswith("/chat/completions"):
                    self._send(404, b'{"error": "not found"}')
                    return
                with stub.lock:
                    stub.inflight += 1
                    stub.max_inflight = max(stub.max_inflight, stub.inflight)
                try:
                    stub._handle(self, body)
                finally:
                    with stub.lock:
                        stub.inflight -= 1

            def _send(self, status: int, data: bytes, headers: dict[str, str] | None = None,
                      ) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    # -- behaviour --------------------------------------------------------------------------

    def _handle(self, h: Any, body: dict[str, Any]) -> None:
        q = _question(body)
        tags = set(_TAG.findall(q))
        with self.lock:
            seen = self.arrivals.get(q, 0)  # requests for this question that came before
            self.arrivals[q] = seen + 1
            self.bodies.append(body)
            if h.headers.get("Authorization"):
                self.auth.add(h.headers["Authorization"])

        def log(status: int) -> None:
            with self.lock:
                self.requests.append((q, status))

        refused = self.refuse.get(format_of(body))
        if refused is not None:
            log(refused)
            h._send(refused, b'{"error": "response_format is not supported"}')
            return
        for t in tags:
            m = re.fullmatch(r"(429|500)x(\d+)", t)
            if m and seen < int(m.group(2)):
                log(int(m.group(1)))
                h._send(int(m.group(1)), b'{"error": "try again"}', {"Retry-After": "0"})
                return
        if "500-always" in tags:
            log(500)
            h._send(500, b'{"error": "boom"}')
            return
        for code in ("401", "400"):
            if code in tags:
                log(int(code))
                h._send(int(code), b'{"error": "no"}')
                return
        if "slow-once" in tags and seen == 0:
            time.sleep(self.slow)
        if self.delay:
            time.sleep(self.delay)
        label = next((t.split("=", 1)[1] for t in tags if t.startswith("label=")), "supports")
        serving = next((t.split("=", 1)[1] for t in tags if t.startswith("serving=")),
                       "either_ok")
        notes = f"stub verdict for: {q[:40]}"
        if "echo-auth" in tags:
            notes += f" (you sent Authorization: {h.headers.get('Authorization')})"
        verdict = json.dumps({"semantic_support_label": label,
                              "serving_semantics_label": serving, "notes": notes})
        if "badlabel" in tags:
            verdict = json.dumps({"semantic_support_label": "maybe"})
        content: str | None = verdict
        finish = "stop"
        if "garbage" in tags:
            content = "I think the memory supports the answer."
        elif "badjson" in tags:
            content = '{"semantic_support_label": "supp'
        elif "unescaped" in tags:
            content = ('{"semantic_support_label": "supports", "serving_semantics_label": '
                       '"either_ok", "notes": "she said "yes" to it"}')
        elif "length" in tags:
            content, finish = verdict[:60], "length"
        elif "fence" in tags:
            content = f"Here is my verdict:\n```json\n{verdict}\n```"
        elif "empty" in tags:
            content = ""
        if "notchat" in tags:
            data = b"<html>upstream error</html>"
        else:
            data = json.dumps({
                "id": "stub-1", "object": "chat.completion", "model": body.get("model"),
                "choices": [{"index": 0, "finish_reason": finish,
                             "message": {"role": "assistant", "content": content}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                **({"echo": {"headers": dict(h.headers)}} if "echo-auth" in tags else {}),
            }).encode()
        log(200)
        h._send(200, data)
        with self.lock:
            self.completed.append(q)

    # -- control ----------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def count(self, question: str) -> int:
        """Requests received for ``question`` (answered or not)."""
        with self.lock:
            return self.arrivals.get(question, 0)

    def __enter__(self) -> StubServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
