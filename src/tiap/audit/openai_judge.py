"""The ``openai`` judge: any OpenAI-compatible chat-completions endpoint, with the rubric.

``POST {base_url}/chat/completions`` with the rubric's messages
(:func:`tiap.audit.rubric.render_messages`), ``temperature`` 0 by default, and the reply's
``choices[0].message.content`` parsed by :func:`tiap.audit.rubric.parse_verdict`. Works with
hosted APIs (OpenAI, OpenRouter), vLLM, llama.cpp's server and Ollama
(``http://127.0.0.1:11434/v1``).

- **Retries**: HTTP 429 and 5xx answers, timeouts and connection errors are retried up to
  ``max_retries`` times, waiting ``backoff * 2**attempt`` seconds (at most ``max_backoff``)
  or the server's ``Retry-After``. When they are exhausted the case is ``unscored`` with
  the reason (``HTTP 500 after 5 attempts``); the run goes on. (Until a mode of structured
  output got a reply, a 400, 422, 500 or 501 is a refusal of the mode, below, not retried.)
- **Bad requests for one case** (HTTP 400, 413, 422) make that case ``unscored``.
  **Configuration errors** (401, 403, 404 and other 4xx) stop the run with a
  :class:`~tiap.errors.TiapError` naming the status: every case would fail the same way.
- **Structured output** (``response_format``, default ``json_schema``): the request asks
  for the rubric's verdict as a JSON schema (:data:`tiap.audit.rubric.VERDICT_SCHEMA`), or
  any JSON object (``json_object``), or neither (``none``: the rubric's text alone asks for
  JSON). A server that refuses the mode (HTTP 400, 422, 500, 501: llama-cpp-python answers
  ``json_schema`` with 500) is asked the same request at once with the next weaker mode, and
  the mode that worked is kept for the run (:class:`tiap.llm.client.StructuredOutput`). The
  verdict's ``response`` names the mode its reply was asked with; the settings name the mode
  asked for; the run's manifest records both and the refusals (``counts[].response_format``, and
  ``warnings.response_format`` when the server refused one).
- **Length**: ``max_tokens`` (default 400) caps every reply; a reply the cap cut
  (``finish_reason`` ``length``) is ``unscored`` (``cut at max_tokens=400``).
- **Unparseable replies** (not JSON, no label, a label outside the rubric, an empty reply,
  a body that is not a chat completion) are ``unscored`` with the reason; the reply is kept
  in ``raw_response``. Invalid JSON whose label pairs can still be read (an unescaped quote
  in the notes) gives the label, without notes, and says so in the reason
  (:func:`tiap.audit.rubric.parse_verdict`).
- **Only valid replies are cached** (:meth:`OpenAIJudge.reusable`: scored verdicts): an
  unscored verdict (an unparseable reply, an error status after the retries) is written to
  ``labels.jsonl`` and counted (``warnings.invalid_reply``), never cached, so the next run
  asks again. A run where more than ``max_invalid`` (default a half) of the replies are
  invalid stops with ``error[endpoint]`` (:class:`tiap.llm.client.InvalidReplies`) and writes no
  labels.
- **Concurrency**: the judge is thread-safe; :func:`tiap.audit.run.run_judges` keeps up to
  ``concurrency`` requests in flight.
- **Key**: read from the environment variable named ``api_key_env`` (default
  ``OPENAI_API_KEY``) when the request is made, sent as ``Authorization: Bearer``, and never
  recorded: the settings name the variable only, and every reply is redacted
  (:func:`tiap.llm.client.redact`), so an endpoint that echoes the header cannot put the key in
  ``raw_response``, the cache or a message.
- **Request** (:meth:`OpenAIJudge.request`, the verdict's key): ``{"base_url": ..., "body":
  ...}`` with the endpoint (:func:`tiap.llm.client.endpoint_id`: a password in the URL redacted)
  and the exact body POSTed: ``model``, the rendered ``messages``, ``temperature``,
  ``max_tokens``, ``seed`` when set, and the ``response_format`` of the mode asked for
  (none for ``none``; the key stays the same when the server makes the judge fall back to
  a weaker mode). Timeouts, retries, concurrency, the key's variable and the judge's name
  are not part of it.

- **Settings** are a declared schema (:class:`OpenAISettings`, through :mod:`tiap.config`):
  ``timeout="60"``, ``max_retries=True``, ``concurrency=0`` or ``response_format="json"`` is
  ``error[config]`` naming the key and what it expects (``error[usage]`` naming the option
  when a command option gave it), an unknown key names the known ones with a did-you-mean,
  and a ``user_template`` with a placeholder the rubric does not fill is refused before any
  request.

Needs the ``llm`` extra (``httpx``).
"""

from __future__ import annotations

import os
import string
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import field_validator, model_validator

from tiap.audit.judges import Judge, Request
from tiap.audit.labels import UNSCORED, Verdict
from tiap.audit.rubric import (
    LABEL_PAIR_PATTERN,
    PARSE_PATTERN,
    RUBRIC_VERSION,
    SYSTEM_TEMPLATE,
    USER_TEMPLATE,
    VERDICT_SCHEMA,
    VERDICT_SCHEMA_NAME,
    parse_verdict,
    render_messages,
)
from tiap.config import Invalid, Settings, ranged
from tiap.errors import TiapError
from tiap.llm.client import (
    MAX_INVALID,
    BaseUrl,
    ChatClient,
    ChatReply,
    EnvName,
    ResponseFormat,
    Retries,
    Seconds,
    Seed,
    Share,
    StructuredOutput,
    Wait,
    body_start,
    endpoint_id,
)

__all__ = ["DEFAULT_BASE_URL", "OpenAIJudge", "OpenAISettings"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_CASE_ERRORS = frozenset({400, 413, 422})
#: The fields :func:`~tiap.audit.rubric.render_messages` fills into the user template.
TEMPLATE_FIELDS = ("question", "answer", "item_text", "item_kind", "raw_support_text")


class OpenAISettings(Settings):
    """The ``openai`` judge's settings (the arguments of :class:`OpenAIJudge`)."""

    subject = "judge 'openai'"

    model: str | None = None
    base_url: BaseUrl | None = None
    api_key_env: EnvName | None = "OPENAI_API_KEY"
    temperature: Annotated[float, ranged("temperature")] = 0.0
    max_tokens: Annotated[int, ranged("max_tokens")] = 400
    seed: Seed | None = None
    response_format: ResponseFormat = "json_schema"
    timeout: Seconds = 60.0
    max_retries: Retries = 4
    backoff: Wait = 1.0
    max_backoff: Wait = 30.0
    concurrency: Annotated[int, ranged("concurrency")] = 4
    max_invalid: Share = MAX_INVALID
    name: str | None = None
    system_template: str = SYSTEM_TEMPLATE
    user_template: str = USER_TEMPLATE
    rubric_version: str = RUBRIC_VERSION

    @field_validator("name")
    @classmethod
    def _name(cls, v: str | None) -> str | None:
        if v is not None and not v.strip():
            raise Invalid("expected a judge name, got an empty string")
        return v

    @field_validator("user_template")
    @classmethod
    def _template(cls, v: str) -> str:
        try:
            names = {f for _, f, _, _ in string.Formatter().parse(v) if f is not None}
        except ValueError as exc:
            raise Invalid(f"not a format template ({exc}); write {{{{ and }}}} for literal "
                          "braces") from None
        unknown = sorted(n for n in names if n not in TEMPLATE_FIELDS)
        if unknown:
            raise Invalid(f"unknown placeholder {', '.join('{' + n + '}' for n in unknown)}; "
                          f"the template is filled with {', '.join(TEMPLATE_FIELDS)}")
        return v

    @model_validator(mode="after")
    def _needs_a_model(self) -> OpenAISettings:
        if not self.model or not self.model.strip():
            raise Invalid("the openai judge needs a model: openai(model=\"NAME\"), or --model "
                          "NAME on the command line", at=("model",))
        return self


class OpenAIJudge(Judge):
    """An LLM judge over an OpenAI-compatible chat-completions endpoint (module docstring).

    Args:
        model: the model name the endpoint knows (required).
        base_url: the API root (``.../v1``); default ``$OPENAI_BASE_URL``, else OpenAI's.
        api_key_env: the environment variable holding the key (it may be unset for local
            servers).
        temperature: sampling temperature (0: the paper's setting).
        max_tokens: the reply's length limit (a reply it cuts is ``unscored``).
        seed: sent when given (servers that honour it make replies reproducible).
        response_format: ``json_schema`` (the verdict's schema), ``json_object`` or
            ``none``; a server that refuses it gets the next weaker (module docstring).
        timeout: seconds per request.
        max_retries: retries after the first attempt, on 429 / 5xx / timeouts.
        backoff, max_backoff: the retry waits, in seconds.
        concurrency: requests in flight.
        max_invalid: the largest share of invalid replies a run tolerates (module
            docstring; 1: never stop).
        name: the judge's name in labels (default ``openai/<model>``).
        system_template, user_template: the rubric's text (default the versioned rubric).
        rubric_version: the version recorded with the template.
    """

    factory = "openai"
    schema = OpenAISettings

    def __init__(
        self,
        model: str | None = None,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        temperature: float = 0.0,
        max_tokens: int = 400,
        seed: int | None = None,
        response_format: str = "json_schema",
        timeout: float = 60.0,
        max_retries: int = 4,
        backoff: float = 1.0,
        max_backoff: float = 30.0,
        concurrency: int = 4,
        max_invalid: float = MAX_INVALID,
        name: str | None = None,
        system_template: str = SYSTEM_TEMPLATE,
        user_template: str = USER_TEMPLATE,
        rubric_version: str = RUBRIC_VERSION,
    ) -> None:
        s = OpenAISettings(
            model=model, base_url=base_url or os.environ.get("OPENAI_BASE_URL") or None,
            api_key_env=api_key_env, temperature=temperature, max_tokens=max_tokens, seed=seed,
            response_format=response_format, timeout=timeout, max_retries=max_retries,
            backoff=backoff, max_backoff=max_backoff, concurrency=concurrency,
            max_invalid=max_invalid, name=name, system_template=system_template,
            user_template=user_template, rubric_version=rubric_version)
        self.model = str(s.model)
        self.base_url = (s.base_url or DEFAULT_BASE_URL).rstrip("/")
        self.api_key_env = s.api_key_env
        self.temperature = s.temperature
        self.max_tokens = s.max_tokens
        self.seed = s.seed
        self.response_format = s.response_format
        self.timeout = s.timeout
        self.max_retries = s.max_retries
        self.backoff = s.backoff
        self.max_backoff = s.max_backoff
        self.concurrency = s.concurrency
        self.max_invalid = s.max_invalid
        self.name = s.name or f"openai/{self.model}"
        self.system_template = s.system_template
        self.user_template = s.user_template
        self.rubric_version = s.rubric_version
        self.http = ChatClient(self.base_url, api_key_env=api_key_env, timeout=self.timeout,
                               max_retries=self.max_retries, backoff=self.backoff,
                               max_backoff=self.max_backoff)
        self.structured = StructuredOutput(self.http, self.response_format,
                                           VERDICT_SCHEMA_NAME, VERDICT_SCHEMA)
        self.endpoint = endpoint_id(self.http.url)

    def settings(self) -> dict[str, Any]:
        return {
            "factory": self.factory,
            "name": self.name,
            "model": self.model,
            "base_url": endpoint_id(self.base_url),
            "api_key_env": self.api_key_env,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
            "response_format": self.response_format,
            "max_invalid": self.max_invalid,
            "rubric_version": self.rubric_version,
            "template": {"system": self.system_template, "user": self.user_template},
            "parse_pattern": PARSE_PATTERN,
            "label_pair_pattern": LABEL_PAIR_PATTERN,
        }

    # -- transport --------------------------------------------------------------------------

    def close(self) -> None:
        self.http.close()

    def payload(self, case: Any) -> dict[str, Any]:
        """The request body POSTed for one case."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": render_messages(case.judged_fields(), system=self.system_template,
                                        user=self.user_template),
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }
        if self.seed is not None:
            body["seed"] = self.seed
        return self.structured.body(body)  # the response_format of the mode asked for

    def request(self, case: Any) -> Request:
        """The endpoint and the exact body POSTed for ``case``."""
        return {"base_url": endpoint_id(self.base_url), "body": self.payload(case)}

    def reusable(self, verdict: Verdict) -> bool:
        """Only a verdict read from a valid reply (a scored one) is cached."""
        return verdict.scored

    def ask(self, request: Request) -> Verdict:
        if request.get("base_url") != endpoint_id(self.base_url):
            raise TiapError(f"this openai judge posts to {endpoint_id(self.base_url)}, not to "
                            f"{request.get('base_url')!r}")
        reply = self.structured.post(request["body"])
        if reply.status == 200:
            return self._verdict(reply)
        if reply.status is None or reply.retryable:
            return Verdict(label=UNSCORED, reason=f"{reply.error} after {reply.attempts} attempts",
                           attempts=reply.attempts)
        text = reply.text[:300]
        if reply.status in _CASE_ERRORS:
            return Verdict(label=UNSCORED, reason=f"HTTP {reply.status}: {text}",
                           raw_response=reply.text, attempts=reply.attempts,
                           response={"status": reply.status,
                                     "response_format": reply.response_format})
        raise TiapError(f"the endpoint {self.endpoint} answered HTTP {reply.status} (body "
                        f"{body_start(reply.text)}); check --base-url, --model and the API key "
                        f"variable {self.api_key_env}", code="endpoint")

    def parse_reply(self, content: str) -> Verdict:
        """The verdict a reply's content gives (the rubric's :func:`parse_verdict`; a judge
        asking for another answer, :mod:`tiap.answers.llm_judge`, reads its own)."""
        return parse_verdict(content)

    def _verdict(self, reply: ChatReply) -> Verdict:
        meta: dict[str, Any] = {"status": reply.status,
                                "response_format": reply.response_format}
        attempts = reply.attempts
        data, content = reply.data, reply.content
        if content is None:
            return Verdict(label=UNSCORED, reason="the body is not a chat completion",
                           raw_response=reply.text, attempts=attempts, response=meta)
        choice = data["choices"][0]
        if isinstance(data, Mapping):  # a chat completion: its metadata
            if data.get("model"):
                meta["model"] = data["model"]
            if isinstance(data.get("usage"), Mapping):
                meta["usage"] = dict(data["usage"])
            if choice.get("finish_reason"):
                meta["finish_reason"] = choice["finish_reason"]
        if reply.finish_reason == "length":  # the JSON is cut, or the model was looping
            return Verdict(label=UNSCORED, reason=f"cut at max_tokens={self.max_tokens}",
                           raw_response=content, attempts=attempts, response=meta)
        try:
            v = self.parse_reply(content)
        except RecursionError:  # json.loads of a reply nested thousands deep
            return Verdict(label=UNSCORED, reason="the reply is JSON nested too deeply",
                           raw_response=content, attempts=attempts, response=meta)
        return Verdict(label=v.label, serving_label=v.serving_label, reason=v.reason,
                       notes=v.notes, raw_response=content, attempts=attempts, response=meta)
