"""The ``llm`` parser: facts from any OpenAI-compatible chat-completions endpoint.

For each turn the model gets the speakers' names, the session date, a few preceding turns
of the session (to resolve references) and the turn itself, and is asked for a JSON object
``{"facts": [...]}`` of at most ``max_facts`` self-contained facts (:data:`SYSTEM_PROMPT`,
version :data:`PROMPT_VERSION`). Works with Ollama (``http://127.0.0.1:11434/v1``), vLLM,
llama.cpp's server and hosted APIs: ``POST {base_url}/chat/completions``.

- **Structured output** (``response_format``, default ``json_schema``): the request asks for
  that object as a JSON schema (:func:`facts_schema`: ``facts``, an array of at most
  ``max_facts`` strings), or any JSON object (``json_object``), or neither (``none``: the
  prompt alone asks for JSON). A server that refuses the mode (HTTP 400, 422, 500, 501:
  llama-cpp-python answers ``json_schema`` with 500) is asked the same request at once with
  the next weaker mode, and the mode that worked is kept for the build
  (:class:`tiap.llm.client.StructuredOutput`); the manifest records it (``parser_stats.
  response_format``: asked, used, refusals; ``warnings.response_format`` when the server
  refused one).
- **Length**: every request sends ``max_tokens`` (default 512), so a model that loops on a
  turn stops; a reply the cap cut (``finish_reason`` ``length``) is invalid
  (``cut at max_tokens=512``), asked again and counted as below.
- **Output checking**: the reply must be JSON: ``{"facts": [...]}`` or a list of strings (a
  fenced code block is accepted too); facts beyond ``max_facts`` are dropped (counted). An
  invalid reply is asked again (``json_retries`` times, telling the model what was wrong; a
  body that is not a chat completion, such as an HTML page answered with HTTP 200, is asked
  again as it was); then the turn yields no fact, is counted as ``turns_invalid`` (with its
  reason, in the manifest's ``warnings.invalid_reply``) and is **not cached**: the next run
  asks for it again. When more than ``max_invalid`` (default a half) of the replies of a
  run are invalid (checked from the 10th reply on, and at the end counting the turns
  reused from the cache as valid), the build stops with ``error[endpoint]`` naming the URL
  and the start of the first bad body (:class:`tiap.llm.client.InvalidReplies`); nothing is
  written.
- **Retries**: HTTP 429 and 5xx, timeouts and connection errors are retried with exponential
  backoff (``backoff * 2**attempt`` seconds, at most 30, or the server's ``Retry-After``),
  up to ``max_retries`` times; then the build stops with an error (nothing is written, and
  the cache keeps every finished turn). Other 4xx answers (a wrong model name, a missing
  key) stop the build at once. (Until a mode of structured output got a reply, a 400, 422,
  500 or 501 is a refusal of the mode, above, not retried.)
- **Concurrency**: up to ``concurrency`` requests in flight (threads); the facts are put
  back in turn order, so the store does not depend on which reply came first.
- **On an engine** (:mod:`tiap.engine`, ``build-store --engine ray``): the turns the cache
  lacks are asked by the engine's workers, in tasks of up to 8 turns asked one after
  another, at most ``concurrency`` tasks in flight (the bound on what the endpoint is sent
  at once holds wherever the workers run). A worker appends each valid reply to its task's
  shard (``<cache>.shards/<sha256 of the task's keys>.jsonl``, fsynced) before its next
  request; the driver commits a finished task's turns to the cache (and counts them, and
  watches the invalid replies, exactly as locally) and removes the shard. A worker killed
  mid-task has its task run again, which asks only what its shard lacks (``parser_stats.
  tasks_retried`` counts such tasks; ``requests`` counts the replies received, so a request
  in flight when a worker died is not in it: a lower bound when ``tasks_retried`` is not 0);
  a killed driver's shards are committed by the next build before it asks anything. The workers tell the
  driver the structured output mode they settled on and the refusals they met; the store is
  byte-identical to a local build's.
- **Cache**: every turn with a valid reply is committed to an SQLite database in WAL mode
  (``cache``; default ``$TIAP_CACHE/llm/parser-cache.sqlite``) under a key that hashes the
  endpoint (its base URL, :func:`tiap.llm.client.endpoint_id`), the model, the prompt version, the
  seed, the temperature, ``max_tokens``, the ``response_format`` mode asked for (not the
  one a refusal fell back to) and the full messages (which hold the turn's text, its
  context, the speakers and the date); never the API key. A build that is interrupted and
  run again asks the endpoint only for the turns it had not finished; another endpoint or
  model asks again. An invalid reply is only noted (table ``failures``: the request's key, the turn,
  the reason and the start of the body, redacted), never served; a valid reply later
  removes the note. The cache's schema is versioned (``PRAGMA user_version`` 2): a cache written by
  TIAP before endpoint keys (its keys leave out the base URL, and it holds invalid replies
  as results) is refused with an error naming it, never reused; move it away or pass
  another ``cache``.
- **Key**: read from the environment variable named by ``api_key_env`` (``OPENAI_API_KEY``
  by default) and sent as a bearer token when set; it is never written anywhere (the
  manifest records the variable's name only), and every reply is redacted
  (:func:`tiap.llm.client.redact`) before it is parsed, so an endpoint echoing the key cannot put
  it in a fact, the cache or a message.

- **Settings**: the factory's arguments are a declared schema (:class:`LlmSettings`, through
  :mod:`tiap.config`), checked before anything is built: ``timeout="60"``, ``seed=1.5`` or
  ``response_format="json"`` is ``error[config]`` naming the key and the type expected
  (``error[usage]`` naming the option when a command option gave it), a missing
  ``base_url`` or ``model`` names the key.

Needs the ``llm`` extra (``httpx``).
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import re
import threading
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

from pydantic import field_validator, model_validator

from tiap.cache import KeyedCache, Table, cache_dir
from tiap.config import Invalid, Settings, ranged
from tiap.datasets.base import Bundle
from tiap.engine import current_engine, endpoint_tasks
from tiap.errors import TiapError
from tiap.io import append_shard, read_shard, shard_path
from tiap.llm.client import (
    MAX_INVALID,
    BaseUrl,
    ChatClient,
    EnvName,
    Interrupted,
    InvalidReplies,
    ResponseFormat,
    Retries,
    Seconds,
    Seed,
    Share,
    StructuredOutput,
    Wait,
    body_start,
    endpoint_id,
    redact,
)
from tiap.memory.dates import anchor_text
from tiap.memory.parsers import (
    FACT_KIND,
    Parser,
    TurnContext,
    display_name,
    register_parser,
    turn_contexts,
)
from tiap.memory.store import Item

__all__ = [
    "PROMPT_VERSION", "SYSTEM_PROMPT", "LlmCache", "LlmParser", "build_messages", "facts_schema",
    "llm", "parse_facts",
]

PROMPT_VERSION = "tiap-facts-v2"

SYSTEM_PROMPT = """\
You extract long-term memory facts from one turn of a conversation.
Write each fact as one short, self-contained sentence in the third person: name the speaker \
instead of "I", "me" or "my", and the other speaker instead of "you" or "your". Keep names, \
places, numbers and dates exactly as stated; when the turn uses a relative time such as \
"yesterday" or "last week", keep it and add the session date ("On 8 May 2023, ...").
Extract only what this turn states. The preceding turns are context for resolving \
references; do not extract facts from them.
Skip greetings, thanks, small talk, questions and generic advice. If the turn states \
nothing worth remembering, return {{"facts": []}}.
Reply with one JSON object {{"facts": [...]}} holding a list of at most {max_facts} strings, \
and nothing else."""

RETRY_PROMPT = ("Your reply was not usable ({reason}). Reply with only a JSON object holding a "
                "list of at most {max_facts} strings, for example "
                "{{\"facts\": [\"Caroline adopted a dog.\"]}}, or {{\"facts\": []}}.")

#: The schema's name in the request (``response_format.json_schema.name``).
FACTS_SCHEMA_NAME = "facts"

MAX_BACKOFF = 30.0
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)


def _clip(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit].rstrip() + " [...]"


def build_messages(
    ctx: TurnContext,
    max_facts: int,
    *,
    context_chars: int = 400,
    max_turn_chars: int = 6000,
) -> list[dict[str, str]]:
    """The chat messages asking for the facts of one turn."""
    who = _label(ctx.speaker)
    lines = []
    anchor = anchor_text(ctx.date)
    lines.append(f"Session date: {anchor}" if anchor else "Session date: unknown")
    speakers = f"{who} (speaking now)"
    if ctx.addressee:
        speakers += f", {_label(ctx.addressee)}"
    lines.append(f"Speakers: {speakers}")
    if ctx.previous:
        lines.append("")
        lines.append("Preceding turns (context only):")
        for t in ctx.previous:
            lines.append(f"{_label(display_name(t.speaker))}: {_clip(t.text, context_chars)}")
    lines.append("")
    lines.append("Turn to extract facts from:")
    lines.append(f"{who}: {_clip(ctx.turn.text, max_turn_chars)}")
    return [
        {"role": "system", "content": SYSTEM_PROMPT.format(max_facts=max_facts)},
        {"role": "user", "content": "\n".join(lines)},
    ]


def _label(name: str | None) -> str:
    if not name:
        return "?"
    return name[0].upper() + name[1:]


def facts_schema(max_facts: int) -> dict[str, Any]:
    """The JSON schema of a reply (sent with ``response_format`` ``json_schema``):
    ``{"facts": [...]}``, at most ``max_facts`` strings, no other key."""
    return {
        "type": "object",
        "properties": {"facts": {"type": "array", "items": {"type": "string"},
                                 "maxItems": max_facts}},
        "required": ["facts"],
        "additionalProperties": False,
    }


def parse_facts(content: str, max_facts: int) -> tuple[list[str], int]:
    """The facts in a model reply and how many were dropped beyond ``max_facts``.

    Accepts a JSON list of strings, ``{"facts": [...]}`` (or ``memories``), a list of
    objects with a ``fact``/``text``/``content`` field, and any of those inside a fenced
    code block. Anything else raises ``ValueError`` naming the problem.
    """
    text = content.strip()
    try:
        try:
            value = json.loads(text)  # JSON as it stands first: a fact may quote a fence
        except json.JSONDecodeError:
            m = _FENCE.search(text)
            if m:
                text = m.group(1).strip()
            try:
                value = json.loads(text)
            except json.JSONDecodeError:
                start, end = text.find("["), text.rfind("]")
                if start < 0 or end <= start:
                    raise ValueError("the reply is not JSON") from None
                try:
                    value = json.loads(text[start:end + 1])
                except json.JSONDecodeError as exc:
                    raise ValueError(f"the reply is not valid JSON ({exc.msg})") from None
    except RecursionError:
        raise ValueError("the reply is JSON nested too deeply") from None
    if isinstance(value, dict):
        for key in ("facts", "memories", "items"):
            if isinstance(value.get(key), list):
                value = value[key]
                break
        else:
            raise ValueError("the reply is a JSON object without a 'facts' list")
    if not isinstance(value, list):
        raise ValueError(f"the reply is JSON {type(value).__name__}, not a list")
    facts: list[str] = []
    for v in value:
        if isinstance(v, dict):
            v = next((v[k] for k in ("fact", "text", "content") if isinstance(v.get(k), str)), None)
        if not isinstance(v, str):
            raise ValueError("the list holds something other than strings")
        s = " ".join(v.split())
        if s and s not in facts:
            facts.append(s)
    dropped = max(0, len(facts) - max_facts)
    return facts[:max_facts], dropped


# -- cache -------------------------------------------------------------------------------


class LlmCache(KeyedCache):
    """Turns with a valid reply in SQLite (:class:`tiap.cache.KeyedCache`: WAL,
    ``synchronous=FULL``): ``key -> facts``; one commit per turn.

    Only valid replies are stored (``status`` ``ok``); a row of another status (none is
    written since schema 2) is never served. Used from one thread only (the builder's); the
    HTTP calls run in worker threads. Schema :attr:`SCHEMA` (``PRAGMA user_version``); a
    cache of another schema is refused (module docstring).
    """

    KIND = "LLM parser cache"
    SCHEMA = 2
    TABLES = (
        Table("facts", ("key TEXT PRIMARY KEY", "model TEXT NOT NULL",
                        "prompt_version TEXT NOT NULL", "unit_id TEXT", "status TEXT NOT NULL",
                        "facts TEXT NOT NULL", "detail TEXT", "created TEXT NOT NULL"),
              ("key",)),
        Table("failures", ("key TEXT PRIMARY KEY", "unit_id TEXT", "reason TEXT NOT NULL",
                           "body TEXT", "created TEXT NOT NULL"), ("key",)),
    )
    OLDER = ("it was written by TIAP before cache keys named the endpoint, so its turns "
             "cannot be told apart by base URL (and it holds invalid replies as results); "
             "it is not reused. ")
    ELSEWHERE = "pass --cache with another file"
    AGAIN = "the endpoint is then asked again"

    def __init__(self, path: str | Path) -> None:
        super().__init__(path)
        self.path: Path = Path(path)

    def get(self, key: str) -> list[str] | None:
        """The facts of a turn with a valid cached reply, else ``None``."""
        row = self.lookup("facts", (key,), ("status", "facts"))
        if row is None or row[0] != "ok":
            return None
        try:
            facts = json.loads(row[1])
        except (TypeError, ValueError, RecursionError):
            facts = None
        if not (isinstance(facts, list) and all(isinstance(f, str) for f in facts)):
            raise TiapError("a cached turn's facts are not a JSON list of strings (the cache "
                            "was changed by something else); move the cache away",
                            file=self.path, record=key, code="cache")
        return facts

    def put(self, key: str, *, model: str, unit_id: str, facts: list[str]) -> None:
        """Commit the facts of a valid reply (redacted)."""
        with self.transaction():
            self.store("facts", [(key, model, PROMPT_VERSION, unit_id, "ok",
                                  json.dumps(redact(facts), ensure_ascii=False,
                                             allow_nan=False), None,
                                  datetime.now(UTC).isoformat(timespec="seconds"))])
            self.remove("failures", [(key,)])

    def failed(self, key: str) -> bool:
        """Whether an earlier run recorded an invalid reply for this request."""
        return self.lookup("failures", (key,), ("1",)) is not None

    def put_failure(self, key: str, *, unit_id: str, reason: str, body: str | None) -> None:
        """Record an invalid reply (redacted, its first 500 characters): never a result, only
        the note that this request failed (:class:`tiap.llm.client.InvalidReplies` ``repeat``)."""
        self.store("failures", [(key, unit_id, redact(reason),
                                 None if body is None else redact(body)[:500],
                                 datetime.now(UTC).isoformat(timespec="seconds"))])

    def __len__(self) -> int:
        return self.count_rows("facts")


def default_cache_path() -> Path:
    """``$TIAP_CACHE/llm/parser-cache.sqlite`` (:func:`tiap.cache.cache_dir`)."""
    return cache_dir("llm", "parser-cache.sqlite")


# -- the parser ------------------------------------------------------------------------


@dataclass
class _TurnResult:
    facts: list[str]
    status: str  # "ok", "invalid" or "unavailable" (the endpoint failed for good)
    detail: str | None = None
    body: str | None = None  # the last invalid reply (redacted), for the stop message
    requests: int = 0
    http_retries: int = 0
    json_retries: int = 0
    dropped: int = 0
    cut: int = 0  # replies cut at max_tokens


class _Unavailable(Exception):
    """The endpoint failed for good (retries exhausted or a non-retryable answer)."""


@dataclass
class _Stats:
    turns: int = 0
    cache_hits: int = 0
    requests: int = 0
    http_retries: int = 0
    json_retries: int = 0
    turns_invalid: int = 0
    facts_dropped_over_cap: int = 0
    replies_cut: int = 0
    tasks_retried: int = 0  # engine tasks run again after their worker died


class LlmParser(Parser):
    """Facts from an OpenAI-compatible chat endpoint (see the module docstring)."""

    derived_kinds = (FACT_KIND,)

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        max_facts: int,
        api_key_env: str,
        temperature: float,
        seed: int | None,
        timeout: float,
        max_retries: int,
        json_retries: int,
        backoff: float,
        concurrency: int,
        context_turns: int,
        context_chars: int,
        max_turn_chars: int,
        cache: str | Path | None,
        max_invalid: float = MAX_INVALID,
        response_format: str = "json_schema",
        max_tokens: int = 512,
    ) -> None:
        # what an engine's worker builds its copy from (_parse_task)
        self._args = {k: v for k, v in locals().items() if k not in ("self", "__class__")}
        self._stop = threading.Event()
        self.http = ChatClient(base_url, api_key_env=api_key_env, timeout=timeout,
                               max_retries=max_retries, backoff=backoff,
                               max_backoff=MAX_BACKOFF, stop=self._stop)
        self.url = self.http.url
        self.model = model
        self.max_facts = max_facts
        self.response_format = response_format
        self.max_tokens = max_tokens
        self.structured = StructuredOutput(self.http, response_format, FACTS_SCHEMA_NAME,
                                           facts_schema(max_facts))
        self.api_key_env = api_key_env
        self.temperature = temperature
        self.seed = seed
        self.timeout = timeout
        self.max_retries = max_retries
        self.json_retries = json_retries
        self.backoff = backoff
        self.concurrency = concurrency
        self.context_turns = context_turns
        self.context_chars = context_chars
        self.max_turn_chars = max_turn_chars
        self.max_invalid = max_invalid
        self.cache_path = Path(cache) if cache is not None else default_cache_path()
        self._cache: LlmCache | None = None
        self._pool: ThreadPoolExecutor | None = None
        self.s = _Stats()
        self.invalid = InvalidReplies(self.url, max_invalid)

    # -- resources ----------------------------------------------------------------------
    def _open(self) -> None:
        if self._pool is not None:
            return
        self._stop.clear()
        self._cache = LlmCache(self.cache_path)
        self._merge_shards()  # what a killed driver's workers finished is not asked again
        self._pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="tiap-llm")

    def close(self) -> None:
        self._stop.set()
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        self.http.close()
        if self._cache is not None:
            self._cache.close()
            self._cache = None
            with contextlib.suppress(OSError):  # an engine's shard folder, once all are in
                self.shard_dir.rmdir()

    def versions(self) -> dict[str, str]:
        return {"httpx": self.http.version}

    def finish(self) -> None:
        """Stop the build (``error[endpoint]``) when most replies were invalid."""
        self.invalid.finish(reused=self.s.cache_hits)

    # -- one request ----------------------------------------------------------------------
    def key(self, messages: list[dict[str, str]]) -> str:
        """The cache key of a turn's request: the endpoint, the model and what is sent (the
        ``response_format`` mode asked for, whatever mode a refusal fell back to)."""
        blob = json.dumps(
            {"endpoint": endpoint_id(self.http.base_url), "model": self.model,
             "prompt_version": PROMPT_VERSION, "seed": self.seed,
             "temperature": self.temperature, "max_tokens": self.max_tokens,
             "response_format": self.response_format, "messages": messages},
            sort_keys=True, ensure_ascii=False, allow_nan=False,
        )
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def _payload(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        """The body of one request (its ``response_format`` is set when it is sent)."""
        body: dict[str, Any] = {"model": self.model, "messages": messages,
                                "temperature": self.temperature, "max_tokens": self.max_tokens}
        if self.seed is not None:
            body["seed"] = self.seed
        return body

    def _chat(self, messages: list[dict[str, str]],
              res: _TurnResult) -> tuple[str | None, bool]:
        """One completion's text (after the client's retries; ``None`` for a 200 answer
        that is not a chat completion) and whether ``max_tokens`` cut it; raises
        _Unavailable."""
        try:
            reply = self.structured.post(self._payload(messages))
        except Interrupted as exc:
            raise _Unavailable("interrupted") from exc
        res.requests += reply.attempts
        res.http_retries += max(0, reply.attempts - 1 - reply.refused)
        if reply.status == 200:
            if reply.content is None:
                res.body = reply.text
            return reply.content, reply.finish_reason == "length"
        last = reply.error
        if reply.status is not None:
            last += ": " + body_start(reply.text)
        if not reply.retryable:
            hint = ""
            if reply.status in (401, 403):
                hint = f" (is ${self.api_key_env} set to a valid key?)"
            raise _Unavailable(f"{last}{hint}")
        raise _Unavailable(f"gave up after {reply.attempts} attempts; last: {last}")

    def _turn(self, messages: list[dict[str, str]]) -> _TurnResult:
        res = _TurnResult([], "ok")
        convo = list(messages)
        reason = ""
        for attempt in range(self.json_retries + 1):
            if attempt:
                res.json_retries += 1
            content, cut = self._chat(convo, res)
            if content is None:  # not a chat completion: ask again as it was
                reason = "HTTP 200 but the body is not a chat completion"
                convo = list(messages)
                continue
            try:
                if cut:  # a cut list, or a model that loops: never read as facts
                    res.cut += 1
                    raise ValueError(f"cut at max_tokens={self.max_tokens}")
                res.facts, res.dropped = parse_facts(content, self.max_facts)
                return res
            except ValueError as exc:
                reason = str(exc)
                res.body = content
                convo = [*messages, {"role": "assistant", "content": content[:2000]},
                         {"role": "user", "content": RETRY_PROMPT.format(
                             reason=reason, max_facts=self.max_facts)}]
        res.status, res.detail = "invalid", reason
        return res

    # -- one collection -------------------------------------------------------------------
    def derive(self, bundle: Bundle) -> Iterator[Item]:
        self._open()
        assert self._cache is not None
        ctxs = list(turn_contexts(bundle, self.context_turns))
        results: dict[int, list[str]] = {}
        todo: list[tuple[int, str, str, list[dict[str, str]]]] = []
        for i, ctx in enumerate(ctxs):
            messages = build_messages(ctx, self.max_facts, context_chars=self.context_chars,
                                      max_turn_chars=self.max_turn_chars)
            key = self.key(messages)
            hit = self._cache.get(key)
            self.s.turns += 1
            if hit is not None:
                self.s.cache_hits += 1
                results[i] = hit
            else:
                todo.append((i, key, ctx.turn.unit_id, messages))
        engine = current_engine()
        replies = (self._asked_on_engine(engine, todo) if engine.name != "local"
                   else self._asked_here(todo))
        with contextlib.closing(replies):  # an error stops the requests in flight
            for i, key, uid, res in replies:
                results[i] = self._commit(key, uid, res)
        for i, ctx in enumerate(ctxs):
            uid = ctx.turn.unit_id
            for j, fact in enumerate(results[i], start=1):
                yield Item(f"{uid}#f{j}", FACT_KIND, (uid,), text=fact,
                           collection=ctx.turn.collection_id)

    def _commit(self, key: str, uid: str, res: _TurnResult) -> list[str]:
        """Count one turn's reply and commit it to the cache (an invalid one is only noted:
        the next run asks again); raises ``error[endpoint]`` when the endpoint failed for
        good or too many replies were invalid. Returns the turn's facts."""
        assert self._cache is not None
        if res.status == "unavailable":
            raise TiapError(
                f"LLM endpoint {endpoint_id(self.url)} (model {self.model!r}) failed on turn "
                f"{uid}: {redact(res.detail or '')}. Finished turns are cached in "
                f"{self.cache_path}; run the same command again to resume", code="endpoint")
        self.s.requests += res.requests
        self.s.http_retries += res.http_retries
        self.s.json_retries += res.json_retries
        self.s.facts_dropped_over_cap += res.dropped
        self.s.replies_cut += res.cut
        if res.status != "ok":  # counted, never cached: the next run asks again
            self.s.turns_invalid += 1
            repeat = self._cache.failed(key)
            self._cache.put_failure(key, unit_id=uid, reason=res.detail or "invalid",
                                    body=res.body)
            self.invalid.add(False, where=uid, reason=res.detail or "invalid", body=res.body,
                             repeat=repeat)
        else:
            self._cache.put(key, model=self.model, unit_id=uid, facts=res.facts)
            self.invalid.add(True)
        return res.facts

    def _ask(self, messages: list[dict[str, str]]) -> _TurnResult:
        """One turn's reply; an endpoint that failed for good is a result of status
        ``unavailable`` (raised by :meth:`_commit` in the caller's thread)."""
        try:
            return self._turn(messages)
        except _Unavailable as exc:
            return _TurnResult([], "unavailable", detail=str(exc))

    def _asked_here(self, todo: list[tuple[int, str, str, list[dict[str, str]]]],
                    ) -> Iterator[tuple[int, str, str, _TurnResult]]:
        """The turns of ``todo`` asked by this process's threads, up to ``concurrency`` at
        once; each reply as it comes. A turn is handed to the threads only once the caller
        has taken a reply, so that when the caller stops (an endpoint that answers garbage),
        at most ``concurrency - 1`` other turns were started, whatever the threads' timing."""
        assert self._pool is not None
        pool, window, rest = self._pool, max(1, self.concurrency), iter(todo)
        pending: dict[Future[_TurnResult], tuple[int, str, str]] = {}

        def refill() -> None:
            for i, key, uid, messages in itertools.islice(rest, window - len(pending)):
                pending[pool.submit(self._ask, messages)] = (i, key, uid)

        refill()
        try:
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for fut in done:
                    i, key, uid = pending.pop(fut)
                    yield i, key, uid, fut.result()
                refill()
        finally:  # an error or an interruption: what was not started is dropped
            if pending:
                self._stop.set()
                for fut in pending:
                    fut.cancel()

    @property
    def shard_dir(self) -> Path:
        """Where an engine's workers write their shards: ``<cache>.shards/``."""
        return self.cache_path.with_name(self.cache_path.name + ".shards")

    def _asked_on_engine(self, engine: Any,
                         todo: list[tuple[int, str, str, list[dict[str, str]]]],
                         ) -> Iterator[tuple[int, str, str, _TurnResult]]:
        """The turns of ``todo`` asked by the engine's workers (module docstring); each
        finished task's replies, then its shard removed."""

        window = max(1, self.concurrency)
        groups = endpoint_tasks(todo, window)
        make = (type(self), self._args)
        tasks = [_ParseTask(make, self.structured.used,
                            tuple((key, uid, m) for _, key, uid, m in g),
                            str(shard_path(self.shard_dir, [key for _, key, _, _ in g])))
                 for g in groups]
        with contextlib.closing(engine.imap_unordered(_parse_task, tasks, window)) as done:
            for n, (answers, report, retried) in done:
                self.structured.absorb(report)
                self.s.tasks_retried += retried
                for (i, key, uid, _), res in zip(groups[n], answers, strict=False):
                    yield i, key, uid, res  # committed before the next is read
                Path(tasks[n].shard).unlink(missing_ok=True)

    def _merge_shards(self) -> int:
        """Commit the turns of every shard a killed driver left in :attr:`shard_dir` and
        remove the shards; returns how many turns were new to the cache."""
        assert self._cache is not None
        folder = self.shard_dir
        if not folder.is_dir():
            return 0
        n = 0
        for shard in sorted(folder.glob("*.jsonl")):
            for key, d in read_shard(shard, _SHARD_KEYS, "parsed turn").items():
                if self._cache.get(key) is None:
                    self._cache.put(key, model=self.model, unit_id=d["unit_id"],
                                    facts=_TurnResult(**d["result"]).facts)
                    n += 1
            shard.unlink()
        with contextlib.suppress(OSError):
            folder.rmdir()
        return n

    def stats(self) -> dict[str, Any]:
        s = self.s
        return {
            "turns": s.turns, "cache_hits": s.cache_hits, "requests": s.requests,
            "http_retries": s.http_retries, "json_retries": s.json_retries,
            "turns_invalid": s.turns_invalid, "facts_dropped_over_cap": s.facts_dropped_over_cap,
            "replies_cut": s.replies_cut,
            # requests counts the replies received: a retried task's request in flight when
            # its worker died is not in it (a lower bound when this is not 0)
            "tasks_retried": s.tasks_retried,
            "invalid_reasons": dict(sorted(self.invalid.reasons.items())),
            "max_invalid": self.max_invalid,
            "max_tokens": self.max_tokens,
            "response_format": redact(self.structured.report()),
            "cache": str(self.cache_path), "cache_schema": LlmCache.SCHEMA,
            "prompt_version": PROMPT_VERSION,
        }

    def warnings(self) -> dict[str, dict[str, Any]]:
        """The manifest's ``warnings``: ``invalid_reply`` when some turns had no valid reply,
        ``response_format`` when the server refused a structured output mode."""
        out: dict[str, dict[str, Any]] = {}
        w = self.invalid.warning()
        if w is not None:
            out["invalid_reply"] = w
        w = self.structured.warning()
        if w is not None:
            out["response_format"] = w
        return out


#: The keys of a shard line of the llm parser: the request key, the turn, the reply.
_SHARD_KEYS = frozenset({"key", "unit_id", "result"})


@dataclass(frozen=True)
class _ParseTask:
    """One engine task: the parser to build (its class and arguments), the structured output
    mode the driver settled on (``None``: not yet), the turns to ask (request key, unit id,
    messages) and the task's shard."""

    make: tuple[type[LlmParser], dict[str, Any]]
    settled: str | None
    items: tuple[tuple[str, str, list[dict[str, str]]], ...]
    shard: str


_WORKER_PARSERS: dict[str, LlmParser] = {}


def _parse_task(task: _ParseTask) -> tuple[list[_TurnResult], dict[str, Any], bool]:
    """Ask a task's turns on a worker, one after another: a turn its shard holds (a killed
    attempt's) is not asked again, each valid reply is appended to the shard (fsynced)
    before the next request. Stops at an endpoint that failed for good (that turn's result
    says so; the rest are not asked). Returns the results in order and what the worker's
    structured output learnt (its report, with this task's refusals only), and whether an
    earlier attempt of the task had started (its shard was there: a worker died)."""
    cls, args = task.make
    wkey = json.dumps([cls.__module__, cls.__qualname__, args], sort_keys=True, default=str,
                      allow_nan=False)
    parser = _WORKER_PARSERS.get(wkey)
    if parser is None:
        parser = _WORKER_PARSERS[wkey] = cls(**args)
    if task.settled is not None:
        parser.structured.absorb({"used": task.settled})
    before = len(parser.structured.refusals)
    shard = Path(task.shard)
    retried = shard.exists()
    have = read_shard(shard, _SHARD_KEYS, "parsed turn")
    out: list[_TurnResult] = []
    shard.parent.mkdir(parents=True, exist_ok=True)
    with open(shard, "a", encoding="utf-8") as fh:
        for key, uid, messages in task.items:
            if key in have:
                res = _TurnResult(**have[key]["result"])
            else:
                res = parser._ask(messages)
                if res.status == "ok":
                    append_shard(fh, {"key": key, "unit_id": uid,
                                      "result": redact(asdict(res))})
            out.append(res)
            if res.status == "unavailable":
                break
    report = parser.structured.report()
    report["refusals"] = report["refusals"][before:]
    return out, report, retried


class LlmSettings(Settings):
    """The arguments of the ``llm`` parser (module docstring)."""

    subject = "parser 'llm'"

    base_url: BaseUrl | None = None
    model: str | None = None
    max_facts: Annotated[int, ranged("max_facts")] = 5
    api_key_env: EnvName | None = "OPENAI_API_KEY"
    temperature: Annotated[float, ranged("temperature")] = 0.0
    seed: Seed | None = 1337
    timeout: Seconds = 60.0
    max_retries: Retries = 5
    json_retries: Retries = 1
    backoff: Wait = 1.0
    concurrency: Annotated[int, ranged("concurrency")] = 4
    context_turns: Annotated[int, ranged("context_turns")] = 3
    context_chars: Annotated[int, ranged("chars")] = 400
    max_turn_chars: Annotated[int, ranged("chars")] = 6000
    cache: str | Path | None = None
    max_invalid: Share = MAX_INVALID
    response_format: ResponseFormat = "json_schema"
    max_tokens: Annotated[int, ranged("max_tokens")] = 512

    @field_validator("cache")
    @classmethod
    def _cache(cls, v: str | Path | None) -> str | Path | None:
        if v is not None and not str(v).strip():
            raise Invalid("expected the path of the SQLite cache, got an empty string")
        return v

    @model_validator(mode="after")
    def _endpoint(self) -> LlmSettings:
        problems: list[tuple[tuple[str], str]] = []
        if self.base_url is None:
            problems.append((("base_url",), "missing: the llm parser needs the endpoint's API "
                                            "root, e.g. http://127.0.0.1:11434/v1"))
        if self.model is None or not self.model.strip():
            problems.append((("model",), "missing: the llm parser needs the endpoint's model "
                                         "name"))
        if problems:
            raise Invalid(problems=problems)
        return self


@register_parser("llm", schema=LlmSettings)
def llm(
    base_url: str | None = None,
    model: str | None = None,
    max_facts: int = 5,
    api_key_env: str = "OPENAI_API_KEY",
    temperature: float = 0.0,
    seed: int | None = 1337,
    timeout: float = 60.0,
    max_retries: int = 5,
    json_retries: int = 1,
    backoff: float = 1.0,
    concurrency: int = 4,
    context_turns: int = 3,
    context_chars: int = 400,
    max_turn_chars: int = 6000,
    cache: str | None = None,
    max_invalid: float = MAX_INVALID,
    response_format: str = "json_schema",
    max_tokens: int = 512,
) -> LlmParser:
    """Facts from an OpenAI-compatible endpoint: at most ``max_facts`` per turn."""
    s = LlmSettings(
        base_url=base_url, model=model, max_facts=max_facts, api_key_env=api_key_env,
        temperature=temperature, seed=seed, timeout=timeout, max_retries=max_retries,
        json_retries=json_retries, backoff=backoff, concurrency=concurrency,
        context_turns=context_turns, context_chars=context_chars,
        max_turn_chars=max_turn_chars, cache=cache, max_invalid=max_invalid,
        response_format=response_format, max_tokens=max_tokens)
    return LlmParser(**s.model_dump())  # type: ignore[arg-type]  # base_url, model: set
