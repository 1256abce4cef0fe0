"""Reading dataset files: bytes to JSON with located errors, and typed access to records.

Every dataset reader goes through the two halves of this module, so that a bad file is never
a traceback and never silently wrong, with or without ``--no-verify``:

- :func:`load_json` turns a file's bytes (plain or gzip) into JSON. Invalid UTF-8 is an
  ``encoding`` error with the byte offset (and line); a JSON syntax error names the line and
  column; a key given twice in one object (JSON would keep only the last) is a ``duplicate``
  problem at its record path; ``NaN`` / ``Infinity`` (not JSON) and strings that cannot be
  written back as UTF-8 (lone surrogate escapes such as ``"\\ud800"``) are problems too.
- :class:`Checker` gives typed access to the parsed records: ``checker.str(obj, "text", at)``
  returns the string or records a located problem (file, record path such as
  ``.[3].conversation.session_2[4].text``, query id) and returns a harmless placeholder, so
  one pass collects every problem of a file; :meth:`Checker.raise_if_any` then raises them
  together as one :class:`~tiap.errors.TiapError`. A string where a list is expected is an
  error (never iterated character by character); ``null`` where text is expected is an error
  (never the text ``"None"``); a boolean is never a number. Text a loader makes ids of
  (unit, query, collection ids) goes through :meth:`Checker.ident`, one rule for every
  dataset (:func:`tiap.ids.id_problem`).

Record paths are jq paths: ``jq '.[3].conversation.session_2[4].text' locomo10.json`` shows
the value a message is about.
"""

from __future__ import annotations

import gzip
import json
import math
import zlib
from pathlib import Path
from typing import Any, NoReturn

from tiap.errors import Problems, TiapError
from tiap.ids import id_problem
from tiap.io import jq_path, strict_json, type_name, utf8_error


# -- locations -----------------------------------------------------------------------------
class At:
    """Where a value is: its jq path, a human label (``conv-26 session_2 turn 5``) and the
    query it belongs to, if any. The path is built only when a problem is reported."""

    __slots__ = ("_parent", "_step", "_path", "label", "query_id")

    def __init__(self, path: str = ".", label: str = "", query_id: str | None = None,
                 *, _parent: At | None = None, _step: str | int | None = None) -> None:
        self._parent = _parent
        self._step = _step
        self._path = path if _parent is None else None
        self.label = label
        self.query_id = query_id

    @property
    def path(self) -> str:
        if self._path is None:
            self._path = jq_path(self._parent.path, self._step)  # type: ignore[union-attr,arg-type]
        return self._path

    def key(self, key: str, label: str | None = None, query_id: str | None = None) -> At:
        return At("", self.label if label is None else label,
                  self.query_id if query_id is None else query_id, _parent=self, _step=key)

    def index(self, i: int, label: str | None = None, query_id: str | None = None) -> At:
        return At("", self.label if label is None else label,
                  self.query_id if query_id is None else query_id, _parent=self, _step=i)

    def __repr__(self) -> str:
        return f"At({self.path!r}, {self.label!r}, {self.query_id!r})"


# -- bytes to JSON ---------------------------------------------------------------------------
def read_bytes(path: str | Path) -> bytes:
    """The bytes of a file, gunzipped when it starts with the gzip magic (not by name)."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError as exc:
        raise TiapError("file not found", file=path, code="io") from exc
    except IsADirectoryError as exc:
        raise TiapError("expected a file, found a directory", file=path, code="io") from exc
    except OSError as exc:
        raise TiapError(f"cannot read the file ({exc.strerror or exc})", file=path,
                        code="io") from exc
    if raw[:2] != b"\x1f\x8b":
        return raw
    try:
        return gzip.decompress(raw)
    except EOFError as exc:
        raise TiapError(f"corrupt or truncated gzip file ({exc})", file=path,
                        code="truncated") from exc
    except (OSError, zlib.error, ValueError) as exc:
        raise TiapError(f"corrupt or truncated gzip file ({exc})", file=path) from exc


def decode_utf8(raw: bytes, path: str | Path) -> str:
    """Strict UTF-8 (a leading byte-order mark is allowed); an ``encoding`` error names the
    byte offset and line of the first invalid byte."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise utf8_error(path, raw, exc) from None
    return text.removeprefix("\ufeff")


def load_json(path: str | Path, problems: Problems | None = None) -> Any:
    """Parse one JSON document (plain or gzip).

    Syntax and encoding errors are raised at once (nothing after them can be read). Keys given
    twice, ``NaN``/``Infinity`` and lone surrogates are added to ``problems`` at their record
    path (raised at once when ``problems`` is None), so that a reader can go on and report
    them together with the shape problems of the same file.
    """
    text = decode_utf8(read_bytes(path), path)
    try:
        data, found = strict_json(text)
    except json.JSONDecodeError as exc:
        what = exc.msg.removesuffix(" at")
        raise TiapError(f"invalid JSON ({what} at column {exc.colno})", file=path,
                        line=exc.lineno) from exc
    except RecursionError as exc:
        raise TiapError("invalid JSON (nested too deeply to read)", file=path) from exc
    except ValueError as exc:  # e.g. an integer of more than 4,300 digits
        raise TiapError(f"invalid JSON ({exc})", file=path) from exc
    if found:
        own = problems if problems is not None else Problems(path)
        for p in found:
            own.add(p.message, record=p.record, code=p.code)
        if problems is None:
            own.raise_if_any()
    return data


# -- typed access ------------------------------------------------------------------------------
_MISSING = object()


class Checker:
    """Typed access to the records of one file, collecting located problems.

    Each accessor returns the value when it has the expected type, else records a problem
    and returns a placeholder ("" for text, [] for a list, None for an object or an absent
    optional field); the placeholders never reach a caller, because the reader calls
    :meth:`raise_if_any` before it returns.
    """

    def __init__(self, file: str | Path, problems: Problems | None = None) -> None:
        self.file = str(file)
        self.problems = Problems(self.file) if problems is None else problems

    def other(self, file: str | Path) -> Checker:
        """A checker of another file that collects into the same problems (a dataset record
        kept in two files)."""
        return Checker(file, self.problems)

    # -- problems
    def add(self, message: str, at: At, *, code: str = "input") -> None:
        self.problems.add(f"{at.label}: {message}" if at.label else message,
                          record=at.path, query_id=at.query_id, file=self.file, code=code)

    def stop(self) -> NoReturn:
        """Raise the problems collected so far (there is at least one)."""
        self.problems.raise_if_any()
        raise AssertionError("Checker.stop() without a problem")  # pragma: no cover

    @property
    def ok(self) -> bool:
        return not self.problems.total

    def raise_if_any(self) -> None:
        self.problems.raise_if_any()

    def load(self, path: str | Path | None = None) -> Any:
        """:func:`load_json` of this checker's file; flagged values become problems here."""
        return load_json(self.file if path is None else path, self.problems)

    # -- values
    def _wrong(self, value: Any, expected: str, at: At, name: str | None) -> None:
        what = f"field {name!r}" if name is not None else "the value"
        found = "null" if value is None else type_name(value)
        self.add(f"{what} is {found}; expected {expected}", at)

    def _get(self, obj: dict[str, Any], key: str, at: At, expected: str,
             required: bool) -> Any:
        if key in obj:
            return obj[key]
        if required:
            self.add(f"missing field {key!r}; expected {expected}", at.key(key))
        return _MISSING

    def obj(self, value: Any, at: At, name: str | None = None) -> dict[str, Any] | None:
        """``value`` itself must be an object (else a problem, and None: skip the record,
        rather than report each of its fields missing)."""
        if isinstance(value, dict):
            return value
        self._wrong(value, "an object", at, name)
        return None

    def list(self, value: Any, at: At, name: str | None = None,
             expected: str = "a list") -> list[Any]:
        """``value`` itself must be a list."""
        if isinstance(value, list):
            return value
        self._wrong(value, expected, at, name)
        return []

    def text(self, value: Any, at: At, name: str | None = None, *,
             numbers: bool = False) -> str:
        """``value`` itself must be a string (or, with ``numbers``, a finite number, kept
        as its text)."""
        if isinstance(value, str):
            return value
        if numbers and isinstance(value, (int, float)) and not isinstance(value, bool):
            if isinstance(value, float) and not math.isfinite(value):  # pragma: no cover
                self.add("not a finite number", at, code="invalid-value")
                return ""
            return str(value)
        self._wrong(value, "a string or a number" if numbers else "a string", at, name)
        return ""

    def str(self, obj: dict[str, Any], key: str, at: At, *, required: bool = True,
            null: bool = False, numbers: bool = False) -> str | None:
        """Field ``key`` of ``obj`` (at ``at``) as a string.

        Absent: a problem when ``required``, else None. ``null``: None when ``null`` is
        allowed, else a problem. ``numbers``: integers and finite numbers are kept as their
        text (answers are numbers in some files); a boolean never is.
        """
        v = obj.get(key, _MISSING)
        if type(v) is str:  # the common case, first
            return v
        if v is _MISSING:
            if required:
                self.add(f"missing field {key!r}; expected "
                         f"{'a string or a number' if numbers else 'a string'}", at.key(key))
            return None
        if v is None and null:
            return None
        return self.text(v, at.key(key), key, numbers=numbers)

    def int(self, obj: dict[str, Any], key: str, at: At, *, required: bool = True,
            default: int | None = None) -> int | None:
        v = self._get(obj, key, at, "an integer", required)
        if v is _MISSING:
            return default
        if isinstance(v, int) and not isinstance(v, bool):
            return v
        self._wrong(v, "an integer", at.key(key), key)
        return default

    def bool(self, obj: dict[str, Any], key: str, at: At, *, default: bool = False) -> bool:
        """An optional boolean field (absent or null: ``default``); ``"true"`` is not a boolean."""
        v = obj.get(key)
        if v is None:
            return default
        if isinstance(v, bool):
            return v
        self._wrong(v, "true or false", at.key(key), key)
        return default

    def field_list(self, obj: dict[str, Any], key: str, at: At, *,
                   required: bool = True) -> list[Any] | None:
        """Field ``key`` as a list (absent and not required: None)."""
        v = self._get(obj, key, at, "a list", required)
        if v is _MISSING:
            return None
        return self.list(v, at.key(key), key)

    def field_obj(self, obj: dict[str, Any], key: str, at: At, *,
                  required: bool = True) -> dict[str, Any] | None:
        v = self._get(obj, key, at, "an object", required)
        if v is _MISSING:
            return None
        return self.obj(v, at.key(key), key)

    def ident(self, value: str | None, at: At, what: str) -> str | None:
        """``value`` (text the loader makes unit, query or collection ids of) when it can be
        part of an id (:func:`tiap.ids.id_problem`: not empty, no whitespace, no control
        character); else an ``invalid-value`` problem naming ``what`` and None. ``None``
        (already reported) passes through."""
        if value is None:
            return None
        problem = id_problem(value)
        if problem is None:
            return value
        self.add(f"{what} {value!r} {problem}; it would be copied into unit, query and "
                 "collection ids", at, code="invalid-value")
        return None

    def list_of_str(self, obj: dict[str, Any], key: str, at: At, *, required: bool = True,
                    numbers: bool = False) -> list[str] | None:
        """Field ``key`` as a list of strings: a string given instead is an error (it is
        never iterated character by character), and so is every element that is not a
        string."""
        lst = self.field_list(obj, key, at, required=required)
        if lst is None:
            return None
        where = at.key(key)
        return [self.text(v, where.index(i), numbers=numbers) for i, v in enumerate(lst)]

