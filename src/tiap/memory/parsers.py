"""Parsers: registered factories that derive memories from a dataset's turns.

As in inspect_ai, a parser is made by a *registered factory* whose arguments are recorded:
:func:`make_parser` binds the arguments given (filling in the defaults), builds the parser
and attaches a :class:`ParserSpec` (name and every argument), which the store's manifest
keeps, so any store can be rebuilt from its manifest.

>>> p = make_parser("heuristic", max_facts=5)
>>> str(p.spec)
'heuristic(max_facts=5)'

Built-in parsers (their modules register them on first use of the registry):

- ``heuristic`` (:mod:`tiap.memory.heuristic`): deterministic, offline, extractive facts;
- ``native`` (:mod:`tiap.memory.native`): the derived memories a dataset ships (LoCoMo);
- ``llm`` (:mod:`tiap.memory.llm_parser`): facts from any OpenAI-compatible chat endpoint.

A factory's arguments are a declared schema (:class:`tiap.config.Settings`, registered with
the factory: ``register_parser("llm", schema=LlmSettings)``): the factory validates them
before it builds anything, so a wrong type, a value out of range or an unknown key is ONE
:class:`~tiap.errors.TiapError` naming the parser and the key (``parser 'heuristic': key
max_facts: expected a value >= 1, got 0 (an integer)``, code ``config``), never a
``TypeError``. Factories speak their argument names only; a command that passes its options
as arguments names them with :func:`tiap.config.command_options` (then the problem is
``error[usage]: option --max-facts: ...``), and a config file's keys are located by its
schema (:class:`tiap.pipeline.StoreSpec`, through :func:`parser_schema`).

A parser sees one collection at a time (:meth:`Parser.derive` takes a
:class:`~tiap.datasets.Bundle`) and yields derived :class:`~tiap.memory.store.Item` records
whose ``sources`` are the turns' unit ids; the builder adds the raw items.
"""

from __future__ import annotations

import importlib
import inspect
import os
from collections.abc import Callable, Hashable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import date
from typing import Any, TypeVar

from tiap.datasets.base import Bundle, Dataset
from tiap.datasets.records import Turn
from tiap.errors import Problem, TiapError
from tiap.memory.dates import parse_session_date
from tiap.memory.store import Item

__all__ = [
    "FACT_KIND", "Parser", "ParserSpec", "TurnContext", "display_name", "make_parser",
    "parser_factory", "parser_names", "parser_schema", "register_parser", "turn_contexts",
]

FACT_KIND = "fact"
ROLES = frozenset({"user", "assistant", "system", "human", "ai", "bot", "tool"})

_BUILTIN_MODULES = ("tiap.memory.heuristic", "tiap.memory.native", "tiap.memory.llm_parser")
_REGISTRY: dict[str, Callable[..., Parser]] = {}
_SCHEMAS: dict[str, type[Any]] = {}

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class ParserSpec:
    """A parser's registered name and every argument of its factory (defaults included).

    >>> spec = make_parser("heuristic").spec
    >>> spec
    ParserSpec(name='heuristic', args={'max_facts': 5})
    >>> str(spec), spec.to_json()
    ('heuristic(max_facts=5)', {'name': 'heuristic', 'args': {'max_facts': 5}})
    """

    name: str
    args: Mapping[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self.args.items())
        return f"{self.name}({inner})"

    def to_json(self) -> dict[str, Any]:
        """The spec as JSON values (a path given from Python, ``cache=Path(...)``, as text)."""
        return {"name": self.name, "args": {k: os.fspath(v) if isinstance(v, os.PathLike)
                                            else v for k, v in self.args.items()}}


class Parser:
    """Base class of parsers. Subclasses implement :meth:`derive`.

    A parser of one's own, given to :func:`~tiap.memory.build_store` as it is (or
    registered by name, :func:`register_parser`):

    >>> from tiap.datasets import Bundle, Collection, InlineDataset, Session, Turn
    >>> from tiap.memory import build_store, read_items
    >>> class FirstWords(Parser):
    ...     '''One fact per turn: its first three words.'''
    ...     def derive(self, bundle):
    ...         for t in bundle.turns:
    ...             yield Item(f"{t.unit_id}#w", "fact", (t.unit_id,),
    ...                        text=" ".join(t.text.split()[:3]), collection=t.collection_id)
    >>> turn = Turn("c1:D1:1", "c1", "s1", 1, "Ana", "I adopted a cat named Miso.")
    >>> ds = InlineDataset([Bundle(Collection("c1", 1, 1), (Session("c1", "s1", 1, None),),
    ...                            (turn,), ())])
    >>> _ = build_store(ds, FirstWords(), "stores/w3")
    >>> [(it.item_id, it.kind, it.text) for it in read_items("stores/w3/items.jsonl")]
    [('c1:D1:1', 'raw', 'Ana: I adopted a cat named Miso.'), ('c1:D1:1#w', 'fact', 'I adopted a')]
    """

    spec: ParserSpec = ParserSpec("unnamed")
    #: the kinds of the derived items this parser writes
    derived_kinds: tuple[str, ...] = (FACT_KIND,)
    #: whether collections may be parsed in worker processes (pure, CPU-bound parsers):
    #: each worker rebuilds the parser from :attr:`spec`
    parallel: bool = False

    def prepare(self, dataset: Dataset) -> None:
        """Check, before anything is written, that this parser can run on ``dataset``."""

    def derive(self, bundle: Bundle) -> Iterator[Item]:
        """The derived items of one collection, in a deterministic order."""
        raise NotImplementedError

    def memo_keys(self, bundle: Bundle) -> list[Hashable] | None:
        """Keys of the per-turn work of ``bundle`` that any collection with a turn of the
        same key can reuse (``None``: this parser shares no work, the default).

        A build in worker processes uses them to do that work once for the whole dataset
        (LongMemEval-S repeats a fifth of its turns across haystacks): the work a worker did
        (:meth:`memo`) is handed to the workers of later collections whose turns have the
        same keys. The output must not depend on whether work was handed over.
        """
        return None

    def memo(self, given: Mapping[Hashable, Any] | None = None) -> dict[Hashable, Any]:
        """Take ``given`` (work done elsewhere, by :meth:`memo_keys` key) for the next
        :meth:`derive`, and return the work this parser did since the last call, by key
        (only called on parsers whose :meth:`memo_keys` is not ``None``)."""
        return {}

    def finish(self) -> None:
        """Called once after the last collection; may raise (e.g. nothing was derived)."""

    def stats(self) -> dict[str, Any]:
        """Counters for the manifest (e.g. cache hits, invalid model outputs)."""
        return {}

    def versions(self) -> dict[str, str]:
        """Versions of the libraries this parser uses (beyond TIAP's usual list)."""
        return {}

    def close(self) -> None:
        """Release connections, caches and thread pools."""


def register_parser(name: str, *, schema: type[Any] | None = None) -> Callable[[F], F]:
    """Register a parser factory under ``name`` (a decorator); ``schema``: the declared
    schema of its arguments (a :class:`tiap.config.Settings` whose fields are the factory's
    parameters, with the same defaults).

    >>> class Echo(Parser):
    ...     def __init__(self, kind):
    ...         self.kind = kind
    ...     def derive(self, bundle):
    ...         for t in bundle.turns:
    ...             yield Item(f"{t.unit_id}#e", self.kind, (t.unit_id,), text=t.text)
    >>> @register_parser("echo")
    ... def echo(kind: str = "fact") -> Echo:
    ...     '''Each turn's text again, as a derived item of ``kind``.'''
    ...     return Echo(kind)
    >>> "echo" in parser_names()
    True
    >>> str(make_parser("echo", kind="copy").spec)
    "echo(kind='copy')"

    (The example leaves the registry as it found it:)

    >>> del _REGISTRY["echo"]
    """

    def deco(factory: F) -> F:
        _REGISTRY[name] = factory
        if schema is not None:
            _SCHEMAS[name] = schema
        else:
            _SCHEMAS.pop(name, None)
        return factory

    return deco


def _load_builtins() -> None:
    for mod in _BUILTIN_MODULES:
        importlib.import_module(mod)


def parser_names() -> list[str]:
    """Names of the registered parsers.

    >>> parser_names()
    ['heuristic', 'llm', 'native', 'turns']
    """
    _load_builtins()
    return sorted(_REGISTRY)


def parser_factory(name: str) -> Callable[..., Parser]:
    """The factory registered under ``name``; an unknown name is a :class:`TiapError`."""
    _load_builtins()
    key = name.strip().lower()
    if key not in _REGISTRY:
        raise TiapError(f"unknown parser {name!r}; known: {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[key]


def parser_schema(name: str) -> type[Any] | None:
    """The declared schema of the arguments of the parser ``name`` (``None``: none declared;
    its factory's signature is all there is)."""
    parser_factory(name)
    return _SCHEMAS.get(name.strip().lower())


def make_parser(name: str, /, **args: Any) -> Parser:
    """Build the parser registered under ``name`` and record its arguments in ``spec``.

    Unknown names and arguments the factory does not take are :class:`TiapError` (an
    unknown argument with a did-you-mean); the factory checks the values (module docstring).

    >>> parser = make_parser("heuristic", max_facts=3)
    >>> str(parser.spec), parser.derived_kinds
    ('heuristic(max_facts=3)', ('fact',))
    >>> make_parser("heuristic", max_fact=3)
    Traceback (most recent call last):
    ...
    tiap.errors.TiapError: parser 'heuristic': key max_fact: unknown key (did you mean
    'max_facts'?); it takes: max_facts
    >>> make_parser("heuristic", max_facts=0)
    Traceback (most recent call last):
    ...
    tiap.errors.TiapError: parser 'heuristic': key max_facts: expected an integer from 1 to
    1,000, got 0 (an integer)
    """
    factory = parser_factory(name)
    key = name.strip().lower()
    sig = inspect.signature(factory)
    unknown = [a for a in args if a not in sig.parameters]
    if unknown:
        from tiap.config import did_you_mean

        takes = ", ".join(sig.parameters) or "no arguments"
        raise TiapError(problems=[Problem(
            f"parser {key!r}: key {a}: unknown key{did_you_mean(a, sig.parameters)}; it takes: "
            f"{takes}", code="config") for a in unknown], code="config")
    try:
        bound = sig.bind(**args)
    except TypeError as exc:
        takes = ", ".join(sig.parameters) or "no arguments"
        raise TiapError(f"parser {key!r}: {exc}; it takes: {takes}", code="config") from exc
    bound.apply_defaults()
    parser = factory(*bound.args, **bound.kwargs)
    parser.spec = ParserSpec(key, dict(bound.arguments))
    return parser


# -- turn context: who speaks, to whom, when ----------------------------------------------


@dataclass(frozen=True)
class TurnContext:
    """A turn with what a parser needs to write self-contained facts about it.

    >>> from tiap.datasets import Turn
    >>> turn = Turn("c1:D1:2", "c1", "s1", 2, "user", "I moved to Lyon.")
    >>> ctx = TurnContext(turn, speaker="the user", addressee="the assistant",
    ...                   date=date(2023, 5, 20))
    >>> f"On {ctx.date:%d %B %Y}, {ctx.speaker} said: {ctx.turn.text}"
    'On 20 May 2023, the user said: I moved to Lyon.'

    :func:`turn_contexts` makes them from a collection.
    """

    turn: Turn
    speaker: str  # display name: "Caroline", "the user"
    addressee: str | None  # the other speaker ("Melanie", "the assistant"), if known
    date: date | None  # the session's calendar date, if it has one
    previous: tuple[Turn, ...] = ()  # preceding turns of the same session, oldest first


def display_name(speaker: str) -> str:
    """How a fact names a speaker: LoCoMo names stay; roles become ``the user`` etc."""
    s = speaker.strip()
    return f"the {s.lower()}" if s.lower() in ROLES else s


def _addressee(speaker: str, speakers: tuple[str, ...]) -> str | None:
    others = [s for s in dict.fromkeys(speakers) if s != speaker]
    if speaker in speakers and len(others) == 1:
        return display_name(others[0])
    low = speaker.strip().lower()
    if low in ("user", "human"):
        return "the assistant"
    if low in ("assistant", "ai", "bot"):
        return "the user"
    return None


def turn_contexts(bundle: Bundle, context_turns: int = 0) -> Iterator[TurnContext]:
    """One :class:`TurnContext` per turn of ``bundle``, in turn order.

    ``context_turns`` preceding turns of the same session are attached as ``previous``.

    >>> from tiap.datasets import Bundle, Collection, Session, Turn
    >>> turns = (Turn("c1:D1:1", "c1", "s1", 1, "user", "I moved to Lyon."),
    ...          Turn("c1:D1:2", "c1", "s1", 2, "assistant", "How do you like it?"))
    >>> bundle = Bundle(Collection("c1", 1, 2),
    ...                 (Session("c1", "s1", 1, "2023/05/20 (Sat) 00:31"),), turns, ())
    >>> for ctx in turn_contexts(bundle, context_turns=1):
    ...     print(ctx.speaker, "->", ctx.addressee, ctx.date, [t.unit_id for t in ctx.previous])
    the user -> the assistant 2023-05-20 []
    the assistant -> the user 2023-05-20 ['c1:D1:1']
    """
    dates = {s.session_id: parse_session_date(s.date) for s in bundle.sessions}
    speakers = bundle.collection.speakers
    names: dict[str, tuple[str, str | None]] = {}
    window: list[Turn] = []
    session: str | None = None
    for t in bundle.turns:
        if t.session_id != session:
            session, window = t.session_id, []
        if t.speaker not in names:
            names[t.speaker] = (display_name(t.speaker), _addressee(t.speaker, speakers))
        who, to = names[t.speaker]
        prev = tuple(window[-context_turns:]) if context_turns > 0 else ()
        yield TurnContext(t, who, to, dates.get(t.session_id), prev)
        window.append(t)
