"""One client for OpenAI-compatible chat-completions endpoints
(``POST {base_url}/chat/completions``).

Shared by the ``llm`` parser (:mod:`tiap.memory.llm_parser`) and the ``openai`` judge
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

Structured output (:class:`StructuredOutput`): a caller that wants JSON sends a JSON schema
(``response_format: json_schema``); a server that refuses it is asked again with
``json_object``, then with the prompt alone, and the mode that worked is kept for the run and
recorded. A reply cut by ``max_tokens`` has :attr:`ChatReply.finish_reason` ``length``.

The client is thread-safe (one ``httpx.Client`` shared by all threads). Needs the ``llm``
extra (``httpx``). Its settings are a declared schema (:class:`ClientSettings`, through
:mod:`tiap.config`): ``timeout="60"`` or ``max_retries=True`` is ``error[config]`` naming the
key and the type expected, never a ``TypeError``; the value types shared by every endpoint
user (:data:`BaseUrl`, :data:`EnvName`, :data:`Seconds`, :data:`Wait`, :data:`Share`) are
declared here once.

Three rules every endpoint user here shares:

- **Redaction** (:func:`redact`): the value of every configured key variable
  (:func:`add_secret`; the client registers its own), every ``Bearer`` token and every
  ``Authorization``/``api-key`` value is replaced by ``[redacted]`` in every reply the client
  returns, so an endpoint that echoes its request headers cannot put the key in a cache, a
  label file, a store, a manifest or an error message. The writers of those files apply
  :func:`redact` again. Values shorter than :data:`MIN_SECRET` characters (``EMPTY``,
  ``ollama``) are not treated as secrets: replacing them everywhere would garble text.
- **Endpoint identity** (:func:`endpoint_id`): the base URL, without a trailing ``/`` and with
  any password in it redacted; cache keys include it and the model, never the key.
- **Invalid replies** (:class:`InvalidReplies`): a reply that is not usable (HTTP 200 with a
  body that is not a chat completion, a content outside the expected schema, an error
  status after the retries) is counted, never cached as a result, and a run whose replies
  are mostly invalid stops with ``error[endpoint]`` naming the URL and the start of the
  first bad body: when more than ``max_invalid`` of its replies are invalid (default
  :data:`MAX_INVALID`, a half; 1: never stop), checked after every reply from the
  :data:`PROBE`-th on (replies of this run only, leaving out invalid replies to requests an
  earlier run recorded as invalid: a broken endpoint is caught early, whatever the cache
  holds), and once more at the end of the run over all replies, with the results reused
  from the cache counted as valid (so a short run whose every reply is invalid stops too,
  while a rerun that asks again only for a few turns the model cannot answer does not).
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from dataclasses import dataclass, field, replace
from typing import Annotated, Any, Literal, TypeVar

from pydantic import AfterValidator

from tiap.config import Invalid, Settings, ranged
from tiap.errors import Problem, TiapError, require

#: Statuses worth another attempt besides 5xx.
RETRYABLE = frozenset({429})

# -- redaction -----------------------------------------------------------------------------

REDACTED = "[redacted]"
#: Configured values shorter than this are not secrets (``EMPTY``, ``ollama``, ``none``).
MIN_SECRET = 8
_SECRETS: set[str] = set()
_SECRETS_LOCK = threading.Lock()
# a bearer token: 8+ token characters with a digit (so "the bearer of news" is left alone)
_BEARER = re.compile(r"(?i)\b(bearer)(\s+)(?!\[redacted\])"
                     r"(?=[A-Za-z0-9._~+/=-]*\d)[A-Za-z0-9._~+/=-]{8,}")
# a header or field naming a key, as text or (escaped) JSON: "Authorization: Basic xyz",
# "x-api-key": "xyz", api_key=xyz (bearer tokens are left to _BEARER)
_HEADER = re.compile(r"(?i)\b((?:proxy-)?authorization|x-api-key|api[-_]?key)"
                     r"(\\?[\"']?\s*[:=]\s*\\?[\"']?(?:(?:basic|token|digest)\s+)?)"
                     r"(?!bearer\b|\[redacted\])([^\s\"',;}\]\\]+)")
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^/\s:@]*:)[^@\s/]+@")

T = TypeVar("T")


def add_secret(value: str | None) -> None:
    """Register a configured secret: :func:`redact` replaces it from now on."""
    if value and len(value.strip()) >= MIN_SECRET:
        with _SECRETS_LOCK:
            _SECRETS.add(value.strip())


def secret_from_env(name: str | None) -> str | None:
    """The value of the environment variable ``name`` (registered as a secret), or None."""
    value = os.environ.get(name) if name else None
    if value:
        add_secret(value)
    return value or None


def redact(value: T) -> T:
    """``value`` with every secret replaced by ``[redacted]``: strings, and the strings
    inside lists, tuples and dicts (keys too), at any depth; other values as they are.

        >>> redact("sent Authorization: Bearer sk-abc123")
        'sent Authorization: Bearer [redacted]'
        >>> redact([1, "no secret here"])
        [1, 'no secret here']
    """
    if isinstance(value, str):
        return _redact_text(value)  # type: ignore[return-value]
    if isinstance(value, dict):
        return {redact(k): redact(v) for k, v in value.items()}  # type: ignore[return-value]
    if isinstance(value, list):
        return [redact(v) for v in value]  # type: ignore[return-value]
    if isinstance(value, tuple):
        return tuple(redact(v) for v in value)  # type: ignore[return-value]
    return value


def _redact_text(text: str) -> str:
    with _SECRETS_LOCK:
        secrets = sorted(_SECRETS, key=len, reverse=True)
    for s in secrets:
        if s in text:
            text = text.replace(s, REDACTED)
    low = text.lower()
    if "bearer" in low:
        text = _BEARER.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)
    if "authorization" in low or "key" in low:
        text = _HEADER.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)
    if "@" in text:
        text = _USERINFO.sub(lambda m: f"{m.group(1)}{REDACTED}@", text)
    return text


def endpoint_id(base_url: str) -> str:
    """The identity of an endpoint in cache keys: its base URL without a trailing ``/`` and
    with any password redacted (the key never enters a cache key)."""
    return _USERINFO.sub(lambda m: f"{m.group(1)}{REDACTED}@", base_url.strip().rstrip("/"))


def body_start(text: str, limit: int = 200) -> str:
    """The first ``limit`` characters of a reply, on one line and redacted (for messages)."""
    one = " ".join(redact(text).split())
    return repr(one if len(one) <= limit else one[:limit] + " ...")


# -- settings --------------------------------------------------------------------------------

_URL = re.compile(r"https?://[^\s/]\S*")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _base_url(v: str) -> str:
    if not _URL.fullmatch(v.strip()):
        raise Invalid(f"expected an http:// or https:// URL (the API root, e.g. "
                      f"http://127.0.0.1:11434/v1), got {endpoint_id(v)!r}")
    return v.strip()


def _env_name(v: str) -> str:
    if not _ENV_NAME.fullmatch(v):
        # never echoed: a key pasted here by mistake must not reach a message
        raise Invalid("expected the NAME of an environment variable (letters, digits and _, "
                      "not starting with a digit), not the key itself; the value given is not "
                      "repeated here")
    return v


#: An endpoint's API root: an http(s) URL (a password in it is never echoed).
BaseUrl = Annotated[str, AfterValidator(_base_url)]
#: The name of the environment variable holding a key (never the key).
EnvName = Annotated[str, AfterValidator(_env_name)]
#: Seconds > 0 (a timeout), at most a day (:data:`tiap.limits.LIMITS`).
Seconds = Annotated[float, ranged("timeout")]
#: Seconds >= 0 (a wait), at most an hour.
Wait = Annotated[float, ranged("wait")]
#: A share in [0, 1].
Share = Annotated[float, ranged("share")]
#: Retries of a request.
Retries = Annotated[int, ranged("retries")]
#: A seed sent to an endpoint.
Seed = Annotated[int, ranged("seed")]


class ClientSettings(Settings):
    """The transport settings of :class:`ChatClient` (module docstring)."""

    subject = "endpoint client"

    base_url: BaseUrl
    api_key_env: EnvName | None = "OPENAI_API_KEY"
    timeout: Seconds = 60.0
    max_retries: Retries = 3
    backoff: Wait = 1.0
    max_backoff: Wait = 30.0


# -- invalid replies -------------------------------------------------------------------------

#: Replies looked at before the share of invalid ones can stop a run.
PROBE = 10
#: Default largest share of invalid replies a run tolerates.
MAX_INVALID = 0.5
#: Located examples kept per warning.
MAX_EXAMPLES = 5


@dataclass
class InvalidReplies:
    """The invalid replies of one run against one endpoint (see the module docstring).

    :meth:`add` counts each answered request and :meth:`finish` ends the run; both raise
    ``error[endpoint]`` when the run's replies are mostly invalid. :meth:`warning` is the
    manifest entry of the invalid ones (code ``invalid_reply``), ``None`` when there were
    none.
    """

    url: str
    max_invalid: float = MAX_INVALID
    what: str = "turn"
    answered: int = 0
    invalid: int = 0
    repeats: int = 0  # invalid replies to requests already recorded invalid in an earlier run
    reasons: dict[str, int] = field(default_factory=dict)
    examples: list[Problem] = field(default_factory=list)
    first_body: str | None = None

    def add(self, ok: bool, *, where: str = "", reason: str = "", body: str | None = None,
            query_id: str | None = None, repeat: bool = False) -> None:
        """Count one reply. ``repeat``: an invalid reply to a request an earlier run recorded
        as invalid too (a turn or case the model cannot answer, asked again): counted, but
        left out of the early check, so a rerun that asks again only for such requests
        is judged by the check at :meth:`finish` alone."""
        self.answered += 1
        if not ok:
            self.invalid += 1
            self.repeats += bool(repeat)
            reason = redact(reason) or "invalid reply"
            short = reason.split(":")[0][:80]
            self.reasons[short] = self.reasons.get(short, 0) + 1
            if len(self.examples) < MAX_EXAMPLES:
                self.examples.append(Problem(reason, record=where or None, query_id=query_id,
                                             code="invalid_reply"))
            if self.first_body is None and body:
                self.first_body = body_start(body)
        fresh, bad = self.answered - self.repeats, self.invalid - self.repeats
        if bad and fresh >= PROBE and bad / fresh > self.max_invalid:
            raise self.error()

    def finish(self, reused: int = 0) -> None:
        """The end of the run: ``reused`` results came from the cache (valid replies)."""
        if self.invalid and self.invalid / (self.answered + reused) > self.max_invalid:
            raise self.error(reused)

    def error(self, reused: int = 0) -> TiapError:
        first = self.examples[0] if self.examples else None
        msg = (f"the endpoint {endpoint_id(self.url)} gave {self.invalid} invalid replies in "
               f"{self.answered} (the {self.what}s asked in this run")
        msg += f"; {reused} more came from the cache)" if reused else ")"
        if first is not None:
            msg += f"; the first, for {self.what} {first.record or '?'}"
            msg += f", query {first.query_id}: " if first.query_id else ": "
            msg += first.message
        if self.first_body is not None:
            msg += f"; its body starts {self.first_body}"
        msg += (". Nothing was written; valid replies are cached, invalid ones are not, so a "
                "rerun against the right endpoint asks for them again. Check --base-url and "
                f"--model (a run stops when more than a share of {self.max_invalid:g} of its "
                "replies are invalid: --max-invalid)")
        return TiapError(msg, code="endpoint")

    def warning(self) -> dict[str, Any] | None:
        if not self.invalid:
            return None
        return {"message": f"{self.invalid} of {self.answered} replies of {endpoint_id(self.url)} "
                           f"were invalid: those {self.what}s were not cached, and the next run "
                           "asks for them again",
                "count": self.invalid, "reasons": dict(sorted(self.reasons.items())),
                "examples": [str(e) for e in self.examples]}


def read_completion(body: bytes | str) -> tuple[str, Any, str | None]:
    """A 200 answer's body -> (text, parsed JSON or None, ``choices[0].message.content``
    or None), all redacted. Never raises: a body that is not a chat completion (not JSON,
    not UTF-8, nested too deep, another shape) has ``content`` ``None``."""
    if isinstance(body, bytes):
        text = body.decode("utf-8", errors="replace")
    else:
        text = body
    try:
        data = redact(json.loads(body))
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        data = None
    return redact(text), data, _content(data)


class Interrupted(Exception):
    """The client's stop event was set while it waited or before a request."""


@dataclass(frozen=True)
class ChatReply:
    """The outcome of one request, after its retries.

    ``status`` is the last HTTP status (``None`` when no answer came: ``error`` then says
    why); ``text`` the last answer's body (redacted, as everything here); ``data`` and
    ``content`` the parsed chat completion and its ``choices[0].message.content`` (a string:
    JSON text for a structured content, empty for a null one), set only for a 200 answer
    that is a chat completion. ``attempts`` counts every request made for the reply;
    through :class:`StructuredOutput`, ``response_format`` is the mode of the last one
    (:data:`RESPONSE_FORMATS`) and ``refused`` how many of them the server refused for their
    ``response_format`` (counted in ``attempts``).
    """

    status: int | None
    attempts: int
    text: str = ""
    data: Any = None
    content: str | None = None
    error: str = ""
    response_format: str | None = None
    refused: int = 0

    @property
    def ok(self) -> bool:
        return self.status == 200 and self.content is not None

    @property
    def finish_reason(self) -> str | None:
        """``choices[0].finish_reason`` of a chat completion (``length``: cut by
        ``max_tokens``)."""
        try:
            reason = self.data["choices"][0].get("finish_reason")
        except (KeyError, IndexError, TypeError, AttributeError):
            return None
        return reason if isinstance(reason, str) else None

    @property
    def retryable(self) -> bool:
        """Whether the last failure was of a kind that was retried (retries ran out)."""
        return self.status is None or self.status in RETRYABLE or self.status >= 500


def _content(data: Any) -> str | None:
    try:
        content = data["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        return None
    if content is None:  # a completion with no text: an empty reply
        return ""
    if isinstance(content, str):
        return content
    try:
        return json.dumps(content, ensure_ascii=False, allow_nan=False)
    except (ValueError, RecursionError):
        return None


class ChatClient:
    """Posts chat-completion bodies to ``{base_url}/chat/completions`` with retries
    (needs the ``llm`` extra: httpx).

        >>> client = ChatClient("http://127.0.0.1:8089/v1", api_key_env=None, max_retries=0)
        >>> client.url
        'http://127.0.0.1:8089/v1/chat/completions'
        >>> client.close()
    """

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
        s = ClientSettings(base_url=base_url, api_key_env=api_key_env, timeout=timeout,
                           max_retries=max_retries, backoff=backoff, max_backoff=max_backoff)
        self.httpx = require("httpx", "llm")
        self.base_url = s.base_url.rstrip("/")
        self.url = f"{self.base_url}/chat/completions"
        self.api_key_env = s.api_key_env
        secret_from_env(s.api_key_env)  # registered for redact() before any reply comes
        m = _USERINFO.search(self.base_url)
        if m:  # a password in the URL is a secret too
            add_secret(self.base_url[m.end(1):m.end() - 1])
        self.timeout = s.timeout
        self.max_retries = s.max_retries
        self.backoff = s.backoff
        self.max_backoff = s.max_backoff
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
        key = secret_from_env(self.api_key_env)
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

    def post(self, body: dict[str, Any], *, max_retries: int | None = None) -> ChatReply:
        """Send ``body``; retry what is worth retrying (``max_retries`` times, default the
        client's); return the last outcome."""
        httpx = self.httpx
        client = self._http()
        retries = self.max_retries if max_retries is None else max_retries
        reply = ChatReply(status=None, attempts=0, error="no attempt made")
        for attempt in range(retries + 1):
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
                    text, data, content = read_completion(resp.content)
                    return ChatReply(status, attempt + 1, text, data, content,
                                     "" if content is not None
                                     else "the body is not a chat completion")
                reply = ChatReply(status, attempt + 1, redact(resp.text),
                                  error=f"HTTP {status}")
                if not reply.retryable:
                    return reply
                retry_after = resp.headers.get("retry-after")
            if attempt < retries:
                self._wait(attempt, retry_after)
        return reply


# -- structured output -----------------------------------------------------------------------

#: The ``response_format`` modes, strongest first: a JSON schema the server enforces
#: (``{"type": "json_schema", ...}``), any JSON object (``{"type": "json_object"}``), or
#: none (the prompt alone asks for JSON).
RESPONSE_FORMATS = ("json_schema", "json_object", "none")
#: A ``response_format`` setting (:data:`RESPONSE_FORMATS`).
ResponseFormat = Literal["json_schema", "json_object", "none"]
#: The statuses with which a server refuses a ``response_format`` it does not support: a
#: bad request, or an internal error (llama-cpp-python answers ``json_schema`` with HTTP 500),
#: tried once each, never retried.
REFUSALS = frozenset({400, 422, 500, 501})


def with_format(body: dict[str, Any], mode: str, name: str,
                schema: dict[str, Any]) -> dict[str, Any]:
    """``body`` with the ``response_format`` of ``mode`` (:data:`RESPONSE_FORMATS`)."""
    out = {k: v for k, v in body.items() if k != "response_format"}
    if mode == "json_schema":
        out["response_format"] = {"type": "json_schema",
                                  "json_schema": {"name": name, "schema": schema,
                                                  "strict": True}}
    elif mode == "json_object":
        out["response_format"] = {"type": "json_object"}
    elif mode != "none":
        raise ValueError(f"response_format must be one of {', '.join(RESPONSE_FORMATS)}, "
                         f"got {mode!r}")
    return out


class StructuredOutput:
    """Posts chat bodies with the strongest ``response_format`` the server accepts.

    The first requests try ``mode`` (:data:`RESPONSE_FORMATS`); when the server refuses it
    (a status in :data:`REFUSALS`, asked once, without retries) the same request is sent with
    the next weaker mode, down to ``none``. The first mode that gets HTTP 200 is kept for every
    later request of the run (:attr:`used`), and each refusal is recorded
    (:attr:`refusals`: mode, status, start of the body), so the settings say what was really
    sent. A failure that is not a refusal (a timeout, a 429) is retried as usual (the
    client's ``max_retries`` in all, the first attempt included) and never lowers the mode.
    The reply says the mode it was asked with and counts every request made for it
    (:class:`ChatReply`). Thread-safe.
    """

    def __init__(self, client: ChatClient, mode: str, name: str,
                 schema: dict[str, Any]) -> None:
        if mode not in RESPONSE_FORMATS:
            raise ValueError(f"response_format must be one of {', '.join(RESPONSE_FORMATS)}, "
                             f"got {mode!r}")
        self.client, self.mode, self.name, self.schema = client, mode, name, schema
        self.used: str | None = None
        self.refusals: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def body(self, body: dict[str, Any], mode: str | None = None) -> dict[str, Any]:
        """``body`` with the ``response_format`` of ``mode`` (default the preferred one)."""
        return with_format(body, mode or self.mode, self.name, self.schema)

    def post(self, body: dict[str, Any]) -> ChatReply:
        with self._lock:
            settled = self.used
        if settled is not None:
            return replace(self.client.post(self.body(body, settled)), response_format=settled)
        chain = RESPONSE_FORMATS[RESPONSE_FORMATS.index(self.mode):]
        reply = ChatReply(status=None, attempts=0, error="no attempt made")
        attempts = refused = 0
        for i, mode in enumerate(chain):
            last = i == len(chain) - 1
            reply = self.client.post(self.body(body, mode), max_retries=None if last else 0)
            attempts += reply.attempts
            if not last and reply.status in REFUSALS:
                refused += reply.attempts
                with self._lock:
                    self.refusals.append({"response_format": mode, "status": reply.status,
                                          "body": body_start(reply.text)})
                continue
            retries = self.client.max_retries
            if not last and reply.status != 200 and reply.retryable and retries:
                # transport: the retries still owed, after the first wait, as usual
                self.client._wait(0, None)
                reply = self.client.post(self.body(body, mode), max_retries=retries - 1)
                attempts += reply.attempts
            if reply.status == 200:
                with self._lock:
                    if self.used is None:
                        self.used = mode
            return replace(reply, attempts=attempts, refused=refused, response_format=mode)
        return reply

    def report(self) -> dict[str, Any]:
        """What the settings and manifests record: the mode asked for, the mode used (None:
        no request answered yet) and the refusals."""
        with self._lock:
            return {"asked": self.mode, "used": self.used, "refusals": list(self.refusals)}

    def absorb(self, report: dict[str, Any]) -> None:
        """Take in what a copy of this judge learnt elsewhere (an engine's worker,
        :meth:`report`): the mode it settled on, if this one has none yet, and its refusals."""
        with self._lock:
            if self.used is None and report.get("used") is not None:
                self.used = report["used"]
            self.refusals.extend(report.get("refusals") or [])

    def warning(self) -> dict[str, Any] | None:
        """The manifest entry of the refusals (code ``response_format``), ``None`` when the
        server refused none."""
        rep = self.report()
        refusals = rep["refusals"]
        if not refusals:
            return None
        refused = sorted({r["response_format"] for r in refusals}, key=RESPONSE_FORMATS.index)
        used = rep["used"]
        then = ("no reply came" if used is None
                else "the replies were asked with no response_format (the prompt alone asks "
                     "for JSON)" if used == "none"
                else f"the replies were asked with response_format {used}")
        return {"message": f"{endpoint_id(self.client.url)} refused response_format "
                           f"{' and '.join(refused)}: {then}",
                "count": len(refusals),
                "examples": [f"{r['response_format']}: HTTP {r['status']}, body {r['body']}"
                             for r in refusals[:MAX_EXAMPLES]]}
