"""Targets: named predicates over item fields, applied to a source unit's family.

A :class:`Target` decides which members of a family receive credit. The three built-ins
follow docs/targets-and-scoring.md ("Targets"):

=============  ===========================  ==========================================
name           spec                         credits
=============  ===========================  ==========================================
``raw``        ``kind == raw``              the raw turn(s) of the family
``source``     ``true``                     the whole family
``canonical``  ``kind != raw and serving``  non-raw members that are serving forms
=============  ===========================  ==========================================

so Raw ⊆ Source, Canonical ⊆ Source and Raw ∩ Canonical = ∅ hold by construction.

Users define more targets as ``name=spec`` strings (the same text on the CLI and in Python)::

    facts=kind in {fact, observation}
    served=serving
    nonraw=kind != raw
    strict=kind in {fact} and not (collection == conv-26 or flagged)

Spec grammar (parsed by a small recursive-descent parser, never ``eval``)::

    spec       := or_expr
    or_expr    := and_expr ("or" and_expr)*
    and_expr   := not_expr ("and" not_expr)*
    not_expr   := "not" not_expr | "(" spec ")" | "true" | "false" | test
    test       := FIELD                             -- the field is truthy
                | FIELD ("==" | "=" | "!=") VALUE
                | FIELD ["not"] "in" "{" VALUE ("," VALUE)* [","] "}"
    FIELD      := [A-Za-z_][A-Za-z0-9_]*            -- item_id, kind, sources, parents,
                                                       serving, text, collection, or any
                                                       extra field of items.jsonl
    VALUE      := a bare word (no spaces, quotes, brackets, commas, '=' or '!')
                | "double-quoted" | 'single-quoted'

Values are compared as text (booleans as ``true``/``false``, numbers as written in the
JSON); a list-valued field (``sources``, ``parents``, a list extra field) matches when any
of its elements does. ``serving`` is the effective flag (derived items serve by default). A
missing extra field is falsy and equals nothing, so ``x != v`` is true when ``x`` is absent.
Keywords (``and``, ``or``, ``not``, ``in``, ``true``, ``false``) are case-insensitive.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from tiap.errors import Problem, TiapError
from tiap.memory.store import RAW_KIND, Item
from tiap.targets.granularity import TURN, parse_granularity, split_name

__all__ = [
    "BUILTIN_TARGETS",
    "CANONICAL",
    "RAW",
    "SOURCE",
    "Target",
    "TargetRegistry",
    "DEFAULT_REGISTRY",
    "get_target",
    "list_targets",
    "parse_spec",
    "parse_target",
    "register_target",
    "resolve_targets",
]

# ----------------------------------------------------------------------------- expressions

_KEYWORDS = frozenset({"and", "or", "not", "in", "true", "false"})
_FIELD_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_BARE_RE = re.compile(r"[^\s(){},=!\"']+\Z")
TARGET_NAME_RE = re.compile(r"[a-z][a-z0-9_-]*(@[a-z0-9]+)?(~[a-z][a-z0-9_-]*)?\Z")
_DEF_RE = re.compile(
    r"\s*([A-Za-z][A-Za-z0-9_-]*(?:@[A-Za-z0-9]+)?(?:~[A-Za-z][A-Za-z0-9_-]*)?)\s*=(?!=)(.*)\Z",
    re.S)
_MAX_SPEC_CHARS = 4000
_MAX_DEPTH = 50


def _fmt_value(v: str) -> str:
    if _BARE_RE.match(v) and (v.lower() not in _KEYWORDS or v in ("true", "false")):
        return v
    return f"'{v}'" if '"' in v else f'"{v}"'


def _as_text(v: Any) -> str | None:
    if v is None:
        return None
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _is_list(v: Any) -> bool:
    return isinstance(v, (list, tuple, set, frozenset))


@dataclass(frozen=True)
class Const:
    """``true`` or ``false``."""

    value: bool

    def __str__(self) -> str:
        return "true" if self.value else "false"

    def evaluate(self, item: Item) -> bool:
        return self.value

    def fields(self) -> frozenset[str]:
        return frozenset()


@dataclass(frozen=True)
class Truthy:
    """A bare field: true when the field's value is truthy (non-empty, non-zero, true)."""

    field: str

    def __str__(self) -> str:
        return self.field

    def evaluate(self, item: Item) -> bool:
        return bool(item.get(self.field))

    def fields(self) -> frozenset[str]:
        return frozenset({self.field})


@dataclass(frozen=True)
class Equals:
    """``field == value`` (or ``!=`` when ``negate``), compared as text."""

    field: str
    value: str
    negate: bool = False

    def __str__(self) -> str:
        return f"{self.field} {'!=' if self.negate else '=='} {_fmt_value(self.value)}"

    def evaluate(self, item: Item) -> bool:
        v = item.get(self.field)
        if _is_list(v):
            hit = any(_as_text(e) == self.value for e in v)
        else:
            hit = _as_text(v) == self.value
        return hit != self.negate

    def fields(self) -> frozenset[str]:
        return frozenset({self.field})


@dataclass(frozen=True)
class Member:
    """``field in {v1, v2}`` (or ``not in`` when ``negate``), compared as text."""

    field: str
    values: frozenset[str]
    negate: bool = False

    def __str__(self) -> str:
        vals = ", ".join(_fmt_value(v) for v in sorted(self.values))
        return f"{self.field} {'not in' if self.negate else 'in'} {{{vals}}}"

    def evaluate(self, item: Item) -> bool:
        v = item.get(self.field)
        if _is_list(v):
            hit = any(_as_text(e) in self.values for e in v)
        else:
            hit = _as_text(v) in self.values
        return hit != self.negate

    def fields(self) -> frozenset[str]:
        return frozenset({self.field})


@dataclass(frozen=True)
class Not:
    """``not operand``."""

    operand: Expr

    def __str__(self) -> str:
        inner = str(self.operand)
        if isinstance(self.operand, (And, Or)):
            inner = f"({inner})"
        return f"not {inner}"

    def evaluate(self, item: Item) -> bool:
        return not self.operand.evaluate(item)

    def fields(self) -> frozenset[str]:
        return self.operand.fields()


@dataclass(frozen=True)
class And:
    """``a and b and ...``."""

    operands: tuple[Expr, ...]

    def __str__(self) -> str:
        return " and ".join(f"({o})" if isinstance(o, Or) else str(o) for o in self.operands)

    def evaluate(self, item: Item) -> bool:
        return all(o.evaluate(item) for o in self.operands)

    def fields(self) -> frozenset[str]:
        return frozenset().union(*(o.fields() for o in self.operands))


@dataclass(frozen=True)
class Or:
    """``a or b or ...``."""

    operands: tuple[Expr, ...]

    def __str__(self) -> str:
        return " or ".join(str(o) for o in self.operands)

    def evaluate(self, item: Item) -> bool:
        return any(o.evaluate(item) for o in self.operands)

    def fields(self) -> frozenset[str]:
        return frozenset().union(*(o.fields() for o in self.operands))


Expr = Const | Truthy | Equals | Member | Not | And | Or

# ----------------------------------------------------------------------------- parser

_TOKEN_RE = re.compile(
    r"""(?P<op>==|!=|=|\(|\)|\{|\}|,)
      | "(?P<dq>[^"]*)"
      | '(?P<sq>[^']*)'
      | (?P<word>[^\s(){},=!"']+)""",
    re.X,
)


@dataclass(frozen=True)
class _Tok:
    kind: str  # "op", "str" (quoted), "word", "end"
    text: str
    col: int  # 1-based column


def _tokenize(spec: str) -> list[_Tok]:
    toks: list[_Tok] = []
    pos, n = 0, len(spec)
    while True:
        while pos < n and spec[pos].isspace():
            pos += 1
        if pos >= n:
            break
        m = _TOKEN_RE.match(spec, pos)
        if m is None:
            ch = spec[pos]
            if ch in "\"'":
                hint = " (an unterminated quoted value?)"
            elif ch == "!":
                hint = " (use 'not' or '!=')"
            else:
                hint = ""
            raise _SpecError(f"unexpected character {ch!r}{hint}", pos + 1)
        if m.group("op") is not None:
            toks.append(_Tok("op", m.group("op"), pos + 1))
        elif m.group("dq") is not None:
            toks.append(_Tok("str", m.group("dq"), pos + 1))
        elif m.group("sq") is not None:
            toks.append(_Tok("str", m.group("sq"), pos + 1))
        else:
            toks.append(_Tok("word", m.group("word"), pos + 1))
        pos = m.end()
    toks.append(_Tok("end", "", len(spec.rstrip()) + 1))
    return toks


class _SpecError(Exception):
    def __init__(self, message: str, col: int) -> None:
        super().__init__(message)
        self.message = message
        self.col = col


def _describe(t: _Tok) -> str:
    if t.kind == "end":
        return "end of spec"
    if t.kind == "str":
        return f"quoted value {t.text!r}"
    return repr(t.text)


def _flatten(parts: list[Expr], kind: type[And] | type[Or]) -> tuple[Expr, ...]:
    out: list[Expr] = []
    for part in parts:
        if isinstance(part, kind):
            out.extend(part.operands)
        else:
            out.append(part)
    return tuple(out)


class _Parser:
    def __init__(self, spec: str) -> None:
        self.toks = _tokenize(spec)
        self.i = 0
        self.depth = 0

    @property
    def tok(self) -> _Tok:
        return self.toks[self.i]

    def _is_kw(self, kw: str) -> bool:
        return self.tok.kind == "word" and self.tok.text.lower() == kw

    def _is_op(self, op: str) -> bool:
        return self.tok.kind == "op" and self.tok.text == op

    def _fail(self, expected: str) -> _SpecError:
        return _SpecError(f"expected {expected}, found {_describe(self.tok)}", self.tok.col)

    def parse(self) -> Expr:
        if self.tok.kind == "end":
            raise _SpecError("empty spec", 1)
        expr = self.or_expr()
        if self.tok.kind != "end":
            raise self._fail("'and', 'or' or end of spec")
        return expr

    def or_expr(self) -> Expr:
        parts = [self.and_expr()]
        while self._is_kw("or"):
            self.i += 1
            parts.append(self.and_expr())
        if len(parts) == 1:
            return parts[0]
        # a or (b or c) is a or b or c: flatten, so str() re-parses to an equal expression
        return Or(_flatten(parts, Or))

    def and_expr(self) -> Expr:
        parts = [self.not_expr()]
        while self._is_kw("and"):
            self.i += 1
            parts.append(self.not_expr())
        if len(parts) == 1:
            return parts[0]
        return And(_flatten(parts, And))

    def not_expr(self) -> Expr:
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise _SpecError(f"spec nested more than {_MAX_DEPTH} levels deep", self.tok.col)
        try:
            if self._is_kw("not"):
                self.i += 1
                return Not(self.not_expr())
            if self._is_op("("):
                self.i += 1
                inner = self.or_expr()
                if not self._is_op(")"):
                    raise self._fail("')'")
                self.i += 1
                return inner
            if self._is_kw("true") or self._is_kw("false"):
                value = self.tok.text.lower() == "true"
                self.i += 1
                return Const(value)
            return self.test()
        finally:
            self.depth -= 1

    def test(self) -> Expr:
        t = self.tok
        if t.kind != "word" or t.text.lower() in _KEYWORDS:
            raise self._fail("a field name, 'not', 'true', 'false' or '('")
        if not _FIELD_RE.match(t.text):
            raise _SpecError(
                f"{t.text!r} is not a field name (letters, digits and '_', not starting "
                "with a digit)",
                t.col,
            )
        field = t.text
        self.i += 1
        if self._is_op("==") or self._is_op("=") or self._is_op("!="):
            negate = self.tok.text == "!="
            self.i += 1
            return Equals(field, self.value(), negate)
        negate = False
        if self._is_kw("not"):
            self.i += 1
            negate = True
            if not self._is_kw("in"):
                raise self._fail("'in' after 'not'")
        if self._is_kw("in"):
            self.i += 1
            return Member(field, self.value_set(), negate)
        return Truthy(field)

    def value(self) -> str:
        t = self.tok
        if t.kind == "str":
            self.i += 1
            return t.text
        if t.kind == "word" and t.text.lower() not in (_KEYWORDS - {"true", "false"}):
            self.i += 1
            return t.text.lower() if t.text.lower() in ("true", "false") else t.text
        raise self._fail("a value (quote values that are keywords or contain spaces)")

    def value_set(self) -> frozenset[str]:
        if not self._is_op("{"):
            raise self._fail("'{' to open a set of values")
        self.i += 1
        values: list[str] = []
        while True:
            if self._is_op("}") and values:
                self.i += 1
                break
            values.append(self.value())
            if self._is_op(","):
                self.i += 1
                continue
            if self._is_op("}"):
                self.i += 1
                break
            raise self._fail("',' or '}'")
        return frozenset(values)


def parse_spec(spec: str) -> Expr:
    """Parse a target spec (the part after ``name=``) into an expression.

    Raises:
        TiapError: saying what was expected, where (1-based column), in which spec.
    """
    if not isinstance(spec, str):
        raise TiapError(f"a target spec must be a string, got {type(spec).__name__}")
    if len(spec) > _MAX_SPEC_CHARS:
        raise TiapError(f"target spec is longer than {_MAX_SPEC_CHARS} characters")
    try:
        return _Parser(spec).parse()
    except _SpecError as exc:
        raise TiapError(
            f"invalid target spec {spec!r}: {exc.message} at column {exc.col}"
        ) from None


# ----------------------------------------------------------------------------- targets


@dataclass(frozen=True)
class Target:
    """A named predicate over item fields; ``str()`` gives the canonical ``name=spec``.

    Two targets are equal when their names and parsed expressions are equal.

    >>> from tiap.memory.store import Item
    >>> facts = parse_target("facts=kind in {fact, observation}")
    >>> facts.name, facts.spec
    ('facts', 'kind in {fact, observation}')
    >>> facts.matches(Item("m1", "fact")), facts.matches(Item("t1", "raw"))
    (True, False)
    >>> str(facts.at("session"))
    'facts@session=kind in {fact, observation}'
    """

    name: str
    expr: Expr
    description: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not TARGET_NAME_RE.match(self.name):
            raise TiapError(
                f"invalid target name {self.name!r}: use lower-case letters, digits, '_' and "
                "'-', starting with a letter (names become file names), then optionally a "
                "granularity (@session, @windowN) and an evidence overlay (~name)"
            )
        split_name(self.name)  # an unknown granularity is an error

    @property
    def base(self) -> str:
        """The name without its granularity (``raw`` of ``raw@session``)."""
        return split_name(self.name)[0]

    @property
    def overlay(self) -> str | None:
        """The evidence overlay the target reads (``corrected`` of ``raw~corrected``;
        :mod:`tiap.datasets.overlays`), or ``None``: the queries' own evidence."""
        return self.name.partition("~")[2] or None

    def under(self, overlay: str | None) -> Target:
        """This target read under the evidence overlay ``overlay`` (``None``: none)."""
        name = self.name.partition("~")[0] + (f"~{overlay}" if overlay else "")
        desc = self.description.split(" (under evidence overlay")[0]
        return Target(name, self.expr, desc + (f" (under evidence overlay {overlay})"
                                               if overlay else ""))

    @property
    def granularity(self) -> str:
        """``turn`` (the default), ``session`` or ``windowN``
        (:mod:`tiap.targets.granularity`)."""
        return split_name(self.name)[1]

    def at(self, granularity: str) -> Target:
        """This target rolled up to ``granularity`` (``turn``: the target itself)."""

        g = parse_granularity(granularity)
        name = self.base if g == TURN else f"{self.base}@{g}"
        desc = self.description if g == TURN else f"{self.description} ({g} granularity)"
        return Target(name, self.expr, desc.strip()).under(self.overlay)

    @property
    def spec(self) -> str:
        """The canonical spec text (re-parses to an equal expression)."""
        return str(self.expr)

    @property
    def fields(self) -> frozenset[str]:
        """The item fields the spec reads."""
        return self.expr.fields()

    def matches(self, item: Item) -> bool:
        """Whether ``item`` receives credit under this target (given it is in the family)."""
        return self.expr.evaluate(item)

    def select(self, items: Iterable[Item]) -> Iterator[Item]:
        """The items that match, in the given order."""
        return (it for it in items if self.expr.evaluate(it))

    def __str__(self) -> str:
        return f"{self.name}={self.spec}"

    def to_json(self) -> dict[str, str]:
        """``{"name", "spec"}`` (plus ``granularity`` when not ``turn``, and
        ``description`` when set)."""
        row = {"name": self.name, "spec": self.spec}
        if self.granularity != "turn":
            row["granularity"] = self.granularity
        if self.overlay:
            row["overlay"] = self.overlay
        if self.description:
            row["description"] = self.description
        return row


RAW = Target("raw", Equals("kind", RAW_KIND), "family members of kind raw (the source turns)")
SOURCE = Target("source", Const(True), "the whole family: every item whose lineage reaches it")
CANONICAL = Target(
    "canonical",
    And((Equals("kind", RAW_KIND, negate=True), Truthy("serving"))),
    "family members that are not raw and are serving forms",
)
BUILTIN_TARGETS: tuple[Target, ...] = (RAW, SOURCE, CANONICAL)


def parse_target(definition: str, *, description: str = "") -> Target:
    """Parse ``name=spec`` into a :class:`Target` (names are lower-cased).

    >>> str(parse_target("facts = kind in {observation, fact}"))
    'facts=kind in {fact, observation}'
    """
    if not isinstance(definition, str):
        raise TiapError(f"a target definition must be a string, got {type(definition).__name__}")
    m = _DEF_RE.match(definition)
    if m is None:
        raise TiapError(
            f"invalid target definition {definition!r}: expected 'name=spec', "
            "e.g. 'facts=kind in {fact, observation}'"
        )
    name, spec = m.group(1).lower(), m.group(2)
    try:
        expr = parse_spec(spec)
    except TiapError as exc:
        raise TiapError(f"target {name!r}: {exc.problems[0].message}") from None
    return Target(name, expr, description)


# ----------------------------------------------------------------------------- registry


class TargetRegistry:
    """Targets by name. The built-ins are always present and cannot be replaced.

    >>> reg = TargetRegistry(["facts=kind == fact"])
    >>> reg.names()
    ('raw', 'source', 'canonical', 'facts')
    >>> [t.name for t in reg.resolve(["source", "facts", "served=serving"])]
    ['source', 'facts', 'served']
    >>> reg.register("raw=true")
    Traceback (most recent call last):
    ...
    tiap.errors.TiapError: target 'raw' is built in and cannot be redefined
    """

    def __init__(self, targets: Iterable[Target] = ()) -> None:
        self._targets: dict[str, Target] = {t.name: t for t in BUILTIN_TARGETS}
        for t in targets:
            self.register(t)

    def register(self, target: Target | str, *, replace: bool = False) -> Target:
        """Add a target (a :class:`Target` or a ``name=spec`` string); returns it.

        Re-registering an equal target is a no-op; a different target under a taken name is
        an error unless ``replace`` (built-ins can never be replaced).
        """
        t = parse_target(target) if isinstance(target, str) else target
        old = self._targets.get(t.name)
        if old is not None and old != t:
            if any(t.name == b.name for b in BUILTIN_TARGETS):
                raise TiapError(f"target {t.name!r} is built in and cannot be redefined")
            if not replace:
                raise TiapError(
                    f"target {t.name!r} is already defined as {old.spec!r}; "
                    "choose another name"
                )
        self._targets[t.name] = t
        return t

    def get(self, name: str) -> Target:
        """The target called ``name`` (case-insensitive); ``NAME@session`` or
        ``NAME@windowN`` is target ``NAME`` rolled up (:mod:`tiap.targets.granularity`)."""
        if isinstance(name, str) and "~" in name:
            base, _, overlay = name.strip().lower().partition("~")
            return self.get(base).under(overlay)
        if isinstance(name, str) and "@" in name:
            base, gran = split_name(name.strip().lower())
            return self.get(base).at(gran)
        t = self._targets.get(name.strip().lower()) if isinstance(name, str) else None
        if t is None:
            raise TiapError(
                f"unknown target {name!r}; known: {', '.join(self.names())}; "
                "define one as 'name=spec', e.g. 'facts=kind in {fact}'"
            )
        return t

    def names(self) -> tuple[str, ...]:
        """Registered names: built-ins first, then the others in registration order."""
        return tuple(self._targets)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.strip().lower() in self._targets

    def resolve(self, targets: Iterable[Target | str]) -> tuple[Target, ...]:
        """Turn names, ``name=spec`` definitions and :class:`Target` objects into targets.

        Definitions are parsed but not registered. All problems (unknown names, bad specs,
        one name used for two different targets, a built-in name redefined) are reported
        together in one :class:`TiapError`.
        """
        if isinstance(targets, str):
            targets = [targets]
        out: list[Target] = []
        by_name: dict[str, Target] = {}
        problems: list[Problem] = []
        for entry in targets:
            try:
                if isinstance(entry, Target):
                    t = entry
                elif isinstance(entry, str) and "=" in entry:
                    t = parse_target(entry)
                elif isinstance(entry, str):
                    t = self.get(entry)
                else:
                    raise TiapError(f"not a target: {entry!r}")
                builtin = next((b for b in BUILTIN_TARGETS if b.name == t.base), None)
                if builtin is not None and builtin.expr != t.expr:
                    raise TiapError(f"target {t.name!r} is built in and cannot be redefined")
            except TiapError as exc:
                problems.extend(exc.problems)
                continue
            prev = by_name.get(t.name)
            if prev is None:
                by_name[t.name] = t
                out.append(t)
            elif prev != t:
                problems.append(
                    Problem(f"target {t.name!r} defined twice: {prev.spec!r} and {t.spec!r}")
                )
        if problems:
            raise TiapError(problems=problems)
        return tuple(out)


DEFAULT_REGISTRY = TargetRegistry()


def get_target(name: str) -> Target:
    """The target called ``name`` in the default registry (``raw``, ``source``, ...).

    >>> str(get_target("canonical"))
    'canonical=kind != raw and serving'
    >>> get_target("raw@session").granularity
    'session'
    """
    return DEFAULT_REGISTRY.get(name)


def register_target(target: Target | str, *, replace: bool = False) -> Target:
    """Register a target (or ``name=spec`` string) in the default registry."""
    return DEFAULT_REGISTRY.register(target, replace=replace)


def list_targets() -> tuple[Target, ...]:
    """All targets of the default registry.

    >>> [t.name for t in list_targets()]
    ['raw', 'source', 'canonical', 'graph-edge', 'graph-node', 'graph-path']
    """
    return tuple(DEFAULT_REGISTRY.get(n) for n in DEFAULT_REGISTRY.names())


def resolve_targets(
    targets: Iterable[Target | str], registry: TargetRegistry | None = None
) -> tuple[Target, ...]:
    """Resolve names and ``name=spec`` definitions against ``registry`` (default registry).

    >>> [str(t) for t in resolve_targets(["raw", "facts=kind == fact"])]
    ['raw=kind == raw', 'facts=kind == fact']
    >>> resolve_targets(["raw", "rwa"])
    Traceback (most recent call last):
    ...
    tiap.errors.TiapError: unknown target 'rwa'; known: raw, source, canonical, ...
    """
    return (registry or DEFAULT_REGISTRY).resolve(targets)
