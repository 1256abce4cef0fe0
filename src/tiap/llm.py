"""One client for OpenAI-compatible chat-completions endpoints (``POST {base_url}/chat/completions``).

Shared by the ``llm`` parser (:mod:`tiap.memory.llm`) and the ``openai`` judge
(:mod:`tiap.audit.openai_judge`), which decide what a failure means for their own work; the
transport and its retry rules live here:

- HTTP 429 and 5xx answers, timeouts and connection errors are retried up to
  ``max_retries`` times, waiting ``backoff * 2**attempt`` seconds (at most ``max_backoff``)
  or the server's ``Retry-After``;
- any other answer (200, or a 4xx other than 429) is returned at once;
- the API key is read from the environment variable named ``api_key_env`` when a request
  is made, sent as ``Authorization: Bearer``, and never stored;
- a ``stop`` event cuts a wait short and raises :class:`Interrupted` (a build being shut
  down), so no thread sleeps through a Ctrl-C.

The client is thread-safe (one ``httpx.Client`` shared by all threads). Needs the ``llm``
extra (``httpx``).
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from typing import Any

from tiap.errors import require

#: Statuses worth another attempt besides 5xx.
RETRYABLE = frozenset({429})


class Interrupted(Exception):
    """The client's stop event was set while it waited or before a request."""


@dataclass(frozen=True)
class ChatReply:
    """The outcome of one request, after its retries.

    ``status`` is the last HTTP status (``None`` when no answer came: ``error`` then says
    why); ``text`` the last answer's body; ``data`` and ``content`` the parsed chat
    completion and its ``choices[0].message.content`` (a string: JSON text for a structured
    content, empty for a null one), set only for a 200 answer that is a chat completion.
    """

    status: int | None
    attempts: int
    text: str = ""
    data: Any = None
    content: str | None = None
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.status == 200 and self.content is not None

    @property
    def retryable(self) -> bool:
        """Whether the last failure was of a kind that was retried (retries ran out)."""
        return self.status is None or self.status in RETRYABLE or self.status >= 500


def _content(data: Any) -> str | None:
    import json

    try:
        content = data["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        return None
    if content is None:  # a completion with no text: an empty reply
        return ""
    return content if isinstance(content, str) else json.dumps(content)


class ChatClient:
    """Posts chat-completion bodies to ``{base_url}/chat/completions`` with retries."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key_env: str | None = "OPENAI_API_KEY",
        timeout: float = 60.0,
        max_retries: int = 3,
        backoff: float = 1.0,
        max_backoff: float = 30.0,
        stop: threading.Event | None = None,
    ) -> None:
        self.httpx = require("httpx", "llm")
        self.base_url = base_url.rstrip("/")
        self.url = f"{self.base_url}/chat/completions"
        self.api_key_env = api_key_env
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self.stop = stop
        self._client: Any = None
        self._lock = threading.Lock()

    @property
    def version(self) -> str:
        return str(getattr(self.httpx, "__version__", "unknown"))

    def _http(self) -> Any:
        with self._lock:
            if self._client is None:
                self._client = self.httpx.Client(timeout=self.timeout)
            return self._client

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _wait(self, attempt: int, retry_after: str | None) -> None:
        delay = self.backoff * (2 ** attempt)
        if retry_after:
            try:
                delay = float(retry_after)
            except ValueError:
                pass
        delay = max(0.0, min(delay, self.max_backoff))
        if self.stop is None:
            time.sleep(delay)
        elif self.stop.wait(delay):
            raise Interrupted("interrupted")

    def post(self, body: dict[str, Any]) -> ChatReply:
        """Send ``body``; retry what is worth retrying; return the last outcome."""
        httpx = self.httpx
        client = self._http()
        reply = ChatReply(status=None, attempts=0, error="no attempt made")
        for attempt in range(self.max_retries + 1):
            if self.stop is not None and self.stop.is_set():
                raise Interrupted("interrupted")
            retry_after = None
            try:
                resp = client.post(self.url, json=body, headers=self._headers())
            except httpx.TimeoutException:
                reply = ChatReply(None, attempt + 1, error=f"timeout after {self.timeout:g} s")
            except httpx.TransportError as exc:
                reply = ChatReply(None, attempt + 1,
                                  error=f"connection error ({type(exc).__name__})")
            else:
                status = resp.status_code
                if status == 200:
                    try:
                        data = resp.json()
                    except ValueError:
                        data = None
                    content = _content(data)
                    return ChatReply(status, attempt + 1, resp.text, data, content,
                                     "" if content is not None
                                     else "the body is not a chat completion")
                reply = ChatReply(status, attempt + 1, resp.text, error=f"HTTP {status}")
                if not reply.retryable:
                    return reply
                retry_after = resp.headers.get("retry-after")
            if attempt < self.max_retries:
                self._wait(attempt, retry_after)
        return reply
