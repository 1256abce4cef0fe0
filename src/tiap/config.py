"""Declared config schemas: pydantic models validated strictly, problems located.

Every configuration TIAP reads from a user file or from command options is a pydantic model
deriving from :class:`Schema`: strict types (a TOML ``true`` is not an integer, the string
``"false"`` is not a boolean), unknown keys forbidden, values frozen. :func:`validate` turns
pydantic's ``ValidationError`` into ONE :class:`~tiap.errors.TiapError` (code ``config``)
with one problem per wrong key: the file, the TOML line where it is cheaply found, the dotted
key path (``stores[2].max_facts``), what was expected and what was given; an unknown key gets
a did-you-mean when one of the known keys is close.

>>> class Demo(Schema):
...     k: int = 60
>>> validate(Demo, {"k": True}, file="demo.toml")
Traceback (most recent call last):
...
tiap.errors.TiapError: demo.toml: key k: expected an integer, got true (a boolean)

Checks beyond a type (ranges, cross-key rules) live in the schema too: Field constraints, or
validators that raise :class:`Invalid` (which may name a key below the one validated, so a
rule on the whole model can still point at ``design.density``).

:func:`read_toml` reads a TOML file whole: a missing file is ``io``, bytes that are not UTF-8
are ``encoding`` (with the byte offset), a syntax error is ``config`` with its line.

Only modules that declare a schema import this one (it imports pydantic).
"""

from __future__ import annotations

import datetime as _dt
import difflib
import json
import re
import tomllib
import types
import typing
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Annotated, Any, ClassVar, TypeVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    TypeAdapter,
    ValidationError,
    WrapValidator,
)

from tiap.errors import Problem, TiapError
from tiap.io import read_text_file
from tiap.limits import LIMITS

__all__ = ["Invalid", "Schema", "Seq", "Settings", "command_options", "ranged", "read_toml",
           "toml_value", "validate"]

Loc = tuple[str | int, ...]
M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")

#: The model configuration every schema shares.
STRICT = ConfigDict(strict=True, extra="forbid", frozen=True, validate_default=False)


class Schema(BaseModel):
    """Base of every config and settings object: strict, unknown keys forbidden, frozen.

    Example:
        >>> class Store(Schema):
        ...     name: str
        ...     max_facts: int = 8
        >>> Store(name="f8")
        Store(name='f8', max_facts=8)
        >>> validate(Store, {"name": "f8", "max_fact": 3}, file="c.toml")
        Traceback (most recent call last):
        ...
        tiap.errors.TiapError: c.toml: key max_fact: unknown key (did you mean 'max_facts'?);
        known: max_facts, name
    """

    model_config = STRICT


def _as_tuple(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


#: ``Seq[str]``: a TOML array (a Python list or tuple) kept as a tuple; anything else is an
#: error (a string is not an array of strings).
Seq = Annotated[tuple[T, ...], BeforeValidator(_as_tuple)]


class _InRange:
    """The check of one declared range (:data:`tiap.limits.LIMITS`); ``limit`` names it."""

    def __init__(self, limit: str) -> None:
        self.limit = limit
        self.range = LIMITS[limit]

    def __call__(self, value: Any) -> Any:
        if value is None:
            return value
        wrong = self.range.problem(value)
        if wrong is not None:
            raise Invalid(f"{wrong}, got {toml_value(value)}{self.range.reason(value)}")
        return value


def _in_range(check: _InRange) -> Any:
    def validate(value: Any, handler: Any) -> Any:
        typed = handler(value)  # the type first (strict); the range names the value as given
        if typed is not None and check.range.problem(typed) is not None:
            check(value)
        return typed

    validate.limit = check.limit  # type: ignore[attr-defined]
    return validate


def ranged(limit: str) -> Any:
    """The validator of a key whose values are the declared range ``limit`` of
    :data:`tiap.limits.LIMITS`, the one the matching command option takes::

        resamples: Annotated[int, ranged("resamples")] = 10_000

    Out of range is ``key resamples: expected an integer from 1 to 10,000,000, got ...``
    (or ``option --resamples: ...`` for a key a command option set).

    Example:
        >>> from typing import Annotated
        >>> class Test(Schema):
        ...     resamples: Annotated[int, ranged("resamples")] = 10_000
        >>> validate(Test, {"resamples": 0}, file="t.toml")
        Traceback (most recent call last):
        ...
        tiap.errors.TiapError: t.toml: key resamples: expected an integer from 1 to
        10,000,000, got 0 (an integer)
    """
    return WrapValidator(_in_range(_InRange(limit)))


class Invalid(ValueError):
    """A problem a validator finds, at a key path relative to the value it validates.

    ``Invalid("unknown store 'b'", at=("density",))`` raised by a validator of ``design``
    is reported at ``design.density``; ``problems`` adds more ``(at, message)`` pairs.

    Example:
        >>> from pydantic import model_validator
        >>> class Design(Schema):
        ...     stores: Seq[str]
        ...     density: Seq[str] = ()
        ...     @model_validator(mode="after")
        ...     def known(self):
        ...         bad = [s for s in self.density if s not in self.stores]
        ...         if bad:
        ...             raise Invalid(f"unknown store {bad[0]!r}", at=("density",))
        ...         return self
        >>> text = 'stores = ["f1", "f5"]\\ndensity = ["f8"]\\n'
        >>> validate(Design, {"stores": ["f1", "f5"], "density": ["f8"]},
        ...          file="d.toml", text=text)
        Traceback (most recent call last):
        ...
        tiap.errors.TiapError: d.toml:2: key density: unknown store 'f8'
    """

    def __init__(self, message: str | None = None, *, at: Sequence[str | int] = (),
                 problems: Iterable[tuple[Sequence[str | int], str]] = ()) -> None:
        self.problems: list[tuple[Loc, str]] = (
            [(tuple(at), message)] if message is not None else [])
        self.problems.extend((tuple(a), m) for a, m in problems)
        super().__init__("; ".join(m for _, m in self.problems) or "invalid value")


# -- reading ---------------------------------------------------------------------------------

_TOML_POS = re.compile(r"\(at line (\d+), column (\d+)\)")


def read_toml(path: str | Path, what: str = "config") -> tuple[dict[str, Any], str]:
    """The table and the text of a TOML file; every failure is a located ``TiapError``.

    Example:
        >>> _ = open("run.toml", "w").write("[run]\\nseed = 1\\n")
        >>> read_toml("run.toml")
        ({'run': {'seed': 1}}, '[run]\\nseed = 1\\n')
        >>> _ = open("bad.toml", "w").write("[run]\\nseed =\\n")
        >>> read_toml("bad.toml")
        Traceback (most recent call last):
        ...
        tiap.errors.TiapError: bad.toml:2: invalid TOML: Invalid value (column 7)
    """
    p = Path(path)
    _, text = read_text_file(p, what)
    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        msg = str(exc)
        m = _TOML_POS.search(msg)
        line = int(m.group(1)) if m else None
        msg = _TOML_POS.sub("", msg).strip()
        if m:
            msg += f" (column {m.group(2)})"
        raise TiapError(f"invalid TOML: {msg}", file=p, line=line, code="config") from exc
    return table, text


# -- validating ------------------------------------------------------------------------------

def validate(model: type[M], data: Any, *, file: str | Path | None = None,
             text: str | None = None, options: Mapping[str, str] | None = None,
             context: Any = None, what: str | None = None) -> M:
    """``model`` validated from ``data``, or ONE ``TiapError`` listing every problem.

    Args:
        file: where ``data`` was read (named in every problem).
        text: the file's text, to find the line of a wrong key (cheap scan; optional).
        options: top-level keys that came from command options, ``{key: "--option"}``: a
            problem under one of them names the option (code ``usage``) instead of the file.
            Default: the options of the enclosing :func:`command_options` block, if any.
        context: passed to the model's validators (``info.context``).
        what: what the settings configure (``parser 'llm'``), named before each key.

    Example:
        >>> class Run(Schema):
        ...     seed: int = 1
        ...     label: str = "run"
        >>> validate(Run, {"seed": 7})
        Run(seed=7, label='run')
        >>> validate(Run, {"seed": "7", "label": 3}, file="run.toml")
        Traceback (most recent call last):
        ...
        tiap.errors.TiapError: run.toml: key seed: expected an integer, got "7" (a string)
        run.toml: key label: expected a string, got 3 (an integer)
    """
    try:
        return _validate_raw(model, data, context)
    except ValidationError as exc:
        raise to_error(exc, model, file=file, text=text, options=options, what=what) from None


#: The :class:`Settings` class validated by :func:`_validate_raw` right now: its
#: ``__init__`` (which pydantic calls from ``model_validate``) lets ValidationError through.
_RAW: ContextVar[type | None] = ContextVar("tiap_raw_validation", default=None)


def _validate_raw(model: type[M], data: Any, context: Any) -> M:
    token = _RAW.set(model)
    try:
        return model.model_validate(data, context=context)
    finally:
        _RAW.reset(token)


_OPTIONS: ContextVar[Mapping[str, str] | None] = ContextVar("tiap_command_options",
                                                             default=None)


@contextmanager
def command_options(options: Mapping[str, str], *, replace: bool = False) -> Iterator[None]:
    """Inside the block, the settings keys in ``options`` (``{"timeout": "--timeout"}``)
    came from command options: a problem with one of them is ``error[usage]: option
    --timeout: ...`` instead of ``error[config]: ... key timeout: ...``.

    Factories and settings objects speak their argument names only; the command layer,
    which knows its options, names them here around the call that builds the settings::

        with command_options({"max_facts": "--max-facts"}):
            parser = make_parser("heuristic", max_facts=max_facts)

    Blocks nest (the inner adds to the outer's options; ``replace``: only its own).

    Example:
        >>> class Timeouts(Settings):
        ...     timeout: float = 60.0
        >>> with command_options({"timeout": "--timeout"}):
        ...     Timeouts(timeout="60")
        Traceback (most recent call last):
        ...
        tiap.errors.TiapError: option --timeout: expected a number, got "60" (a string)
    """
    token = _OPTIONS.set(dict(options) if replace else {**(_OPTIONS.get() or {}), **options})
    try:
        yield
    finally:
        _OPTIONS.reset(token)


def active_options() -> dict[str, str]:
    """The options of the enclosing :func:`command_options` blocks (``{}`` outside)."""
    return dict(_OPTIONS.get() or {})


def option_name(key: str) -> str:
    """How the caller spells the argument ``key``: its command option inside
    :func:`command_options`, else ``key`` itself (a Python caller's keyword).

        >>> option_name("measures")
        'measures'
        >>> with command_options({"measures": "--measures"}):
        ...     option_name("measures")
        '--measures'
    """
    return (_OPTIONS.get() or {}).get(key, key)


class Settings(Schema):
    """A settings object built from keyword arguments: ``Timeouts(timeout="60")`` raises ONE
    :class:`~tiap.errors.TiapError` (code ``config``, one problem per key, prefixed by
    :attr:`subject`), or ``usage`` naming the option for keys of :func:`command_options`,
    never a pydantic ``ValidationError`` or a ``TypeError``.

    Validation from a mapping inside another schema's validator goes through
    :func:`check_nested`, which keeps the keys' paths.

    Example:
        >>> class Timeouts(Settings):
        ...     subject = "judge 'openai'"
        ...     timeout: float = 60.0
        >>> Timeouts(timeout=30.0).timeout
        30.0
        >>> Timeouts(timeout="60")
        Traceback (most recent call last):
        ...
        tiap.errors.TiapError: judge 'openai': key timeout: expected a number, got "60" (a string)
    """

    #: what the settings configure, named in every problem (``parser 'llm'``)
    subject: ClassVar[str] = ""

    def __init__(self, **data: Any) -> None:
        raw = _RAW.get() is type(self)  # called by model_validate in validate()/check_nested
        token = _RAW.set(None)  # settings built by this one's validators raise TiapError
        try:
            super().__init__(**data)
        except ValidationError as exc:
            if raw:
                raise
            raise to_error(exc, type(self), what=type(self).subject or None) from None
        finally:
            _RAW.reset(token)


def check_nested(model: type[M], data: Any, context: Any = None) -> M:
    """For a validator of another schema: ``model`` from ``data``, or an :class:`Invalid`
    with one problem per key, at its path relative to ``data`` (so the outer schema
    reports ``stores[1].max_facts`` with its line)."""
    try:
        return _validate_raw(model, data, context)
    except ValidationError as exc:
        raise Invalid(problems=_entries(exc, model)) from None


def validate_value(hint: Any, value: Any) -> str | None:
    """``None`` when ``value`` is a valid ``hint`` (strict), else what was expected."""
    try:
        TypeAdapter(hint, config=ConfigDict(strict=True)).validate_python(value)
    except ValidationError:
        return f"expected {describe(hint)}, got {toml_value(value)}"
    return None


def _entries(exc: ValidationError, model: type[BaseModel] | None) -> list[tuple[Loc, str]]:
    """``(key path, message)`` for every error of ``exc``."""
    entries: list[tuple[Loc, str]] = []
    errors = exc.errors(include_url=False)
    failed = [tuple(e["loc"]) for e in errors]
    for e in errors:
        loc = tuple(e["loc"])
        if e["type"] == "too_short" and any(f[:len(loc)] == loc and f != loc for f in failed):
            continue  # "at least 1 item, not 0" only because every item failed
        err = (e.get("ctx") or {}).get("error")
        if isinstance(err, Invalid):
            entries.extend((loc + at, msg) for at, msg in err.problems)
            continue
        entries.append((loc, _message(e, model, loc)))
    return entries


def to_error(exc: ValidationError, model: type[BaseModel] | None = None, *,
             file: str | Path | None = None, text: str | None = None,
             options: Mapping[str, str] | None = None, what: str | None = None) -> TiapError:
    """One ``TiapError`` with one problem per error of ``exc`` (code ``config``; ``usage``
    for keys of ``options``, by default those of the enclosing :func:`command_options`)."""
    entries = _entries(exc, model)
    if options is None:
        options = _OPTIONS.get()
    prefix = f"{what}: " if what else ""
    lines = _toml_lines(text) if text else {}
    problems: list[Problem] = []
    seen: set[tuple[Loc, str]] = set()
    for loc, msg in entries:
        if (loc, msg) in seen:
            continue
        seen.add((loc, msg))
        top = loc[0] if loc else None
        if options and isinstance(top, str) and top in options:
            # the message names the value; an index into the option's values would not help
            problems.append(Problem(f"option {options[top]}: {msg}", code="usage"))
            continue
        line = _line_of(lines, loc) if lines else None
        key = f"key {key_path(loc)}: " if loc else ""
        problems.append(Problem(prefix + key + msg, file=None if file is None else str(file),
                                line=line, code="config"))
    problems.sort(key=lambda p: (p.line is None, p.line or 0))  # stable: file order first
    codes = {p.code for p in problems}
    return TiapError(problems=problems or [Problem(str(exc), code="config")],
                     code=codes.pop() if len(codes) == 1 else "config")


def key_path(loc: Sequence[str | int]) -> str:
    """``("stores", 2, "max_facts")`` -> ``stores[2].max_facts``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            s = str(part)
            if not re.fullmatch(r"[A-Za-z0-9_-]+", s):
                s = json.dumps(s, ensure_ascii=False, allow_nan=False)
            out += ("." if out else "") + s
    return out


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` when one of ``choices`` is close to ``word``, else ``""``."""
    close = difflib.get_close_matches(str(word), list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def toml_value(value: Any, limit: int = 40) -> str:
    """A value as TOML writes it, and its TOML type: ``true (a boolean)``.

    Example:
        >>> print(toml_value(True), toml_value("60"), toml_value(2.5), toml_value([1, 2]), sep="; ")
        true (a boolean); "60" (a string); 2.5 (a float); an array of 2
    """
    if isinstance(value, bool):
        return f"{'true' if value else 'false'} (a boolean)"
    if isinstance(value, str):
        s = json.dumps(value, ensure_ascii=False, allow_nan=False)
        return (s if len(s) <= limit else s[:limit - 4] + '..."') + " (a string)"
    if isinstance(value, int):
        return f"{value} (an integer)"
    if isinstance(value, float):
        return f"{value!r} (a float)"
    if isinstance(value, (list, tuple)):
        return f"an array of {len(value)}"
    if isinstance(value, Mapping):
        return "a table"
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return f"{value.isoformat()} (a date/time)"
    return f"{value!r}"


def describe(hint: Any) -> str:
    """What a type hint asks for, in TOML words."""
    origin = typing.get_origin(hint)
    if origin is Annotated:
        return describe(typing.get_args(hint)[0])
    if origin in (typing.Union, types.UnionType):
        parts = [describe(a) for a in typing.get_args(hint) if a is not type(None)]
        return " or ".join(dict.fromkeys(parts))
    if origin in (tuple, list, Sequence):
        args = [a for a in typing.get_args(hint) if a is not Ellipsis]
        return "an array" + (f" of {_plural(describe(args[0]))}" if args else "")
    if origin in (dict, Mapping):
        return "a table"
    if origin is typing.Literal:
        return "one of " + ", ".join(json.dumps(a, allow_nan=False) for a in typing.get_args(hint))
    return {bool: "true or false", int: "an integer", float: "a number", str: "a string",
            Path: "a string (a path)"}.get(hint, getattr(hint, "__name__", str(hint)))


def _plural(s: str) -> str:
    for a in ("an ", "a "):
        if s.startswith(a):
            head, _, tail = s[len(a):].partition(" ")
            return head + "s" + (" " + tail if tail else "")
    return s


_EXPECTED = {
    "int_type": "expected an integer", "int_from_float": "expected an integer",
    "bool_type": "expected true or false", "string_type": "expected a string",
    "float_type": "expected a number", "tuple_type": "expected an array",
    "list_type": "expected an array", "dict_type": "expected a table",
    "model_type": "expected a table", "model_attributes_type": "expected a table",
    "finite_number": "expected a finite number",
}


def _message(e: Mapping[str, Any], model: type[BaseModel] | None, loc: Loc) -> str:
    kind = e["type"]
    ctx = e.get("ctx") or {}
    if kind == "missing":
        return "missing required key"
    if kind == "extra_forbidden":
        known = _known_keys(model, loc[:-1]) if model is not None else []
        hint = did_you_mean(str(loc[-1]), known) if known else ""
        return "unknown key" + hint + (f"; known: {', '.join(known)}" if known else "")
    if kind in _EXPECTED:
        msg = _EXPECTED[kind]
    elif kind == "too_short":
        n = ctx.get("min_length", 1)
        msg = f"expected at least {n} entr{'y' if n == 1 else 'ies'}"
    elif kind == "too_long":
        n = ctx.get("max_length")
        msg = f"expected at most {n} entr{'y' if n == 1 else 'ies'}"
    elif kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        sign = {"greater_than": ">", "greater_than_equal": ">=", "less_than": "<",
                "less_than_equal": "<="}[kind]
        bound = next(iter(ctx.values()), "?")
        msg = f"expected a value {sign} {bound}"
    elif kind == "value_error":
        msg = str(e["msg"]).removeprefix("Value error, ")
    else:
        msg = str(e["msg"]).replace("Input should be", "expected")
    return f"{msg}, got {toml_value(e.get('input'))}"


def _unwrap(hint: Any) -> Any:
    while typing.get_origin(hint) is Annotated:
        hint = typing.get_args(hint)[0]
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        models = [a for a in typing.get_args(hint) if isinstance(a, type)
                  and issubclass(a, BaseModel)]
        if models:
            return models[0]
    return hint


def _known_keys(model: type[BaseModel], loc: Loc) -> list[str]:
    """The keys of the table at ``loc`` in ``model`` (empty when it is not a model)."""
    t: Any = model
    for part in loc:
        t = _unwrap(t)
        if isinstance(t, type) and issubclass(t, BaseModel):
            field = t.model_fields.get(str(part))
            if field is None:
                return []
            t = field.annotation
        elif typing.get_origin(t) in (tuple, list):
            t = typing.get_args(t)[0]
        elif typing.get_origin(t) is dict:
            t = typing.get_args(t)[1]
        else:
            return []
    t = _unwrap(t)
    if isinstance(t, type) and issubclass(t, BaseModel):
        return sorted(t.model_fields)
    return []


# -- where a key is: a cheap scan of the TOML text --------------------------------------------

_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(?:#.*)?$")
_KEY = re.compile(r"""^\s*((?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*')"""
                  r"""(?:\s*\.\s*(?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*'))*)\s*=""")


def _split_key(key: str) -> list[str]:
    parts = re.findall(r"""[A-Za-z0-9_-]+|"[^"]*"|'[^']*'""", key)
    return [p[1:-1] if p[:1] in "\"'" else p for p in parts]


def _toml_lines(text: str) -> dict[Loc, int]:
    """First line of every table header and ``key =`` line, by key path (multi-line strings
    are skipped; keys inside inline tables are not found: their line is the table's)."""
    out: dict[Loc, int] = {}
    table: Loc = ()
    counts: dict[Loc, int] = {}
    in_string: str | None = None
    for n, line in enumerate(text.splitlines(), 1):
        if in_string:
            if line.count(in_string) % 2:
                in_string = None
            continue
        m = _HEADER.match(line)
        if m:
            path: Loc = tuple(_split_key(m.group(2)))
            if m.group(1) == "[[":
                i = counts.get(path, 0)
                counts[path] = i + 1
                out.setdefault(path, n)
                path = path + (i,)
            table = path
            out.setdefault(table, n)
            continue
        k = _KEY.match(line)
        if k:
            out.setdefault(table + tuple(_split_key(k.group(1))), n)
            rest = line[k.end():]
            for quote in ('"""', "'''"):
                if rest.count(quote) % 2:
                    in_string = quote
                    break
    return out


def _line_of(lines: Mapping[Loc, int], loc: Loc) -> int | None:
    for i in range(len(loc), 0, -1):
        if loc[:i] in lines:
            return lines[loc[:i]]
    return None
