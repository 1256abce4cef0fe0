"""Small I/O helpers shared by every stage.

- :func:`open_text` reads plain or gzip-compressed text transparently (by magic bytes, not
  by file name) and turns a truncated gzip stream into a clear :class:`TiapError`.
- :func:`atomic_write` / :func:`atomic_dir` write to a temporary name and rename, so a
  failure never leaves a half-written file behind.
- :func:`output_folder` builds a step's whole output folder beside it and swaps it in, so
  the folder describes exactly one run; it refuses a folder that is not that step's output
  (:func:`check_output_folder`) unless forced.
- :func:`iter_jsonl` is the one reader of JSON Lines files, with one policy for all of them
  (gzip, UTF-8, byte-order mark, blank lines, strict JSON: :func:`strict_json`), its
  problems located by file and line and either raised at once or collected by the caller.
- :func:`shard_path`, :func:`append_shard` and :func:`read_shard`: the shards an engine's
  workers write results to, one JSON line each, fsynced, so that a killed worker's retried
  task or a killed driver's next run takes up what was finished.
"""

from __future__ import annotations

import contextlib
import csv
import fnmatch
import gc
import glob
import gzip
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import threading
import zlib
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from tiap.errors import Problem, Problems, TiapError

__all__ = ["atomic_write", "check_output_folder", "output_folder", "output_step", "split_named"]

GZIP_MAGIC = b"\x1f\x8b"


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector paused inside the block (as it was, after it).

    For readers that build many small acyclic objects (a store's million items): each
    collection the allocations trigger would walk every object read so far, about a third
    of reading a large store. Reference counting still frees what the block drops.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


#: Files at least this large have their sha256 remembered for the rest of the process.
MEMO_FROM = 16 << 20
_SHA_MEMO: dict[tuple[str, int, int, int, int, int], str] = {}


def sha256_file(path: str | Path, chunk: int = 1 << 20) -> str:
    """Hex sha256 of a file's bytes.

    A file of :data:`MEMO_FROM` bytes or more is hashed once per process while it stays the
    same file: the digest is kept under its device, inode, size and modification and change
    times (an atomic rewrite is a new inode; an edit in place changes the times), so a
    pipeline's steps that each record the sha256 of a 500 MB store do not each read it.
    """
    st = os.stat(path)
    if st.st_size < MEMO_FROM:
        return _sha256(path, chunk)
    key = (os.path.realpath(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns,
           st.st_ctime_ns)
    got = _SHA_MEMO.get(key)
    if got is None:
        got = _SHA_MEMO[key] = _sha256(path, chunk)
    return got


def _sha256(path: str | Path, chunk: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def is_gzip(path: str | Path) -> bool:
    with open(path, "rb") as fh:
        return fh.read(2) == GZIP_MAGIC


def open_text(path: str | Path) -> IO[str]:
    """Open a text file, decompressing gzip transparently (detected by magic bytes)."""
    path = Path(path)
    if not path.exists():
        raise TiapError("file not found", file=path, code="io")
    if path.is_dir():
        raise TiapError("expected a file, found a directory", file=path, code="io")
    return _TextReader(path)  # type: ignore[return-value]


class _TextReader:
    """A UTF-8 text file (plain or gzip, universal newlines) whose every failure is a
    TiapError: bytes that are not UTF-8 (code ``encoding``, naming the line and the byte
    offset of the first bad byte) and a truncated (code ``truncated``) or corrupt gzip
    stream."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._gzip = is_gzip(path)
        self._fh: IO[str] = (gzip.open(path, "rt", encoding="utf-8") if self._gzip
                             else open(path, encoding="utf-8"))

    def _wrap(self, exc: Exception) -> TiapError:
        if isinstance(exc, UnicodeDecodeError):
            try:
                return _first_bad_utf8(self.path, self._gzip)
            except (EOFError, OSError, zlib.error) as again:
                exc = again
        # a stream cut short is ``truncated``, as for :func:`tiap.datasets.reading.read_bytes`
        return TiapError(f"corrupt or truncated gzip file ({exc})", file=self.path,
                         code="truncated" if isinstance(exc, EOFError) else None)

    def read(self, n: int = -1) -> str:
        try:
            return self._fh.read(n)
        except (UnicodeDecodeError, EOFError, OSError, zlib.error) as exc:
            raise self._wrap(exc) from None

    def readline(self) -> str:
        try:
            return self._fh.readline()
        except (UnicodeDecodeError, EOFError, OSError, zlib.error) as exc:
            raise self._wrap(exc) from None

    def __iter__(self) -> Iterator[str]:
        try:
            yield from self._fh
        except (UnicodeDecodeError, EOFError, OSError, zlib.error) as exc:
            raise self._wrap(exc) from None

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> _TextReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def utf8_error(path: str | Path, data: bytes, exc: UnicodeDecodeError, *, offset: int = 0,
               line: int | None = None, decompressed: bool = False) -> TiapError:
    """The one error for bytes that are not UTF-8 (code ``encoding``): the bad bytes, their
    byte offset in the file and their line. ``data`` is what ``exc`` was decoding, starting
    at byte ``offset`` of the file (on ``line``, counted from 1, when it is not the file's
    start); ``decompressed``: offsets are of the gzip file's decompressed text."""
    bad = exc.object[exc.start:exc.end].hex(" ")
    if line is None:
        line = 1
    line += data.count(b"\n", 0, exc.start)
    where = f"byte offset {offset + exc.start:,}" + (" of the decompressed text" if decompressed
                                                      else "")
    return TiapError(f"not valid UTF-8: byte(s) {bad} at {where} ({exc.reason}); expected "
                     "UTF-8 text", file=path, line=line, code="encoding")


def _first_bad_utf8(path: Path, gz: bool) -> TiapError:
    """The :func:`utf8_error` of the first byte of ``path`` that is not UTF-8, read again in
    blocks (a text stream's decoding error does not say where in the file it is)."""
    import codecs

    decoder = codecs.getincrementaldecoder("utf-8")()
    line, offset, pending = 1, 0, b""
    with gzip.open(path, "rb") if gz else open(path, "rb") as fh:
        while True:
            block = fh.read(1 << 20)
            data = pending + block
            try:
                decoder.decode(block, final=not block)
            except UnicodeDecodeError as exc:
                # the decoder's input began with the bytes it held back from the last block
                return utf8_error(path, data, UnicodeDecodeError(
                    "utf-8", data, exc.start, exc.end, exc.reason), offset=offset - len(pending),
                    line=line - pending.count(b"\n"), decompressed=gz)
            if not block:
                break
            state = decoder.getstate()[0]
            line += block.count(b"\n")
            offset += len(block)
            pending = state
    return TiapError("not valid UTF-8", file=path, code="encoding")  # pragma: no cover


csv.field_size_limit(1 << 30)  # a cell of a TIAP table may be long


def _utf8_error(path: Path) -> TiapError:
    data = path.read_bytes()
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return utf8_error(path, data, exc)
    return TiapError("not valid UTF-8", file=path, code="encoding")  # pragma: no cover


def iter_csv(path: str | Path, header: Sequence[str] | None = None, *,
             required: Sequence[str] = ()) -> Iterator[tuple[int, list[str]]]:
    """The records of a CSV file TIAP wrote, checked for what a cut or edited file shows.

    Yields ``(1, header)`` first, then ``(line, fields)`` for every record (``line`` is the
    line it starts on). The file must be UTF-8 (code ``encoding``), end with a line end (a
    last line without one was cut: code ``truncated``, as is an empty file), have the
    ``header`` given exactly (or hold the ``required`` columns, each column once) and as
    many fields in every record as in its header (code ``input``); CSV the ``csv`` module
    cannot read (a NUL, a stray quote) is code ``input`` at its line.
    """
    path = Path(path)
    if not path.is_file():
        raise TiapError("file not found", file=path, code="io")
    size = path.stat().st_size
    if size == 0:
        raise TiapError("the file is empty (not even its header): it was truncated",
                        file=path, line=1, code="truncated")
    with open(path, "rb") as bf:
        bf.seek(size - 1)
        last = bf.read(1)
        if last not in (b"\n", b"\r"):
            bf.seek(0)
            n = sum(block.count(b"\n") for block in iter(lambda: bf.read(1 << 20), b""))
            raise TiapError("the last line ends without a line end: the file was cut in the "
                            "middle of a record", file=path, line=n + 1, code="truncated")
    fh = open(path, encoding="utf-8", newline="")
    try:
        reader = csv.reader(fh, strict=True)
        start = 1
        head: list[str] | None = None
        width = 0
        while True:
            try:
                row = next(reader)
            except StopIteration:
                break
            except csv.Error as exc:
                raise TiapError(f"malformed CSV ({exc})", file=path, line=reader.line_num,
                                code="input") from None
            if head is None:
                head = row
                if header is not None and row != list(header):
                    raise TiapError(f"unexpected header {','.join(row)!r}: expected "
                                    f"{','.join(header)!r}", file=path, line=1, code="input")
                missing = [c for c in required if c not in row]
                if missing:
                    raise TiapError(f"the header has no column {', '.join(missing)}",
                                    file=path, line=1, code="input")
                twice = sorted({c for c in row if row.count(c) > 1})
                if twice:
                    raise TiapError(f"the header repeats column {', '.join(twice)}",
                                    file=path, line=1, code="input")
                width = len(row)
                yield 1, row
            else:
                if len(row) != width:
                    raise TiapError(f"expected {width} fields, found {len(row)}", file=path,
                                    line=start, code="input")
                yield start, row
            start = reader.line_num + 1
    except UnicodeDecodeError:
        raise _utf8_error(path) from None
    finally:
        fh.close()


def read_text_file(path: str | Path, what: str) -> tuple[bytes, str]:
    """The bytes of a small text file and their UTF-8 text, every failure a located error
    that names ``what`` the file is: missing or not a file, unreadable (``io``), not UTF-8
    (``encoding``, naming the line and byte offset). Config files and prompt templates are
    read through it.

        >>> _ = Path("p.txt").write_bytes(b"Q: {question}\\n")
        >>> read_text_file("p.txt", "prompt template")[1]
        'Q: {question}\\n'
        >>> read_text_file("nowhere.txt", "prompt template")
        Traceback (most recent call last):
        ...
        tiap.errors.TiapError: nowhere.txt: prompt template file not found
    """
    p = Path(path)
    if not p.is_file():
        raise TiapError(f"{what} file not found" if not p.exists() else f"{what} is not a file",
                        file=p, code="io")
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise TiapError(f"cannot read the {what}: {exc.strerror or exc}", file=p,
                        code="io") from exc
    try:
        return data, data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise utf8_error(p, data, exc) from None


def read_json(path: str | Path) -> Any:
    """Parse one JSON document (plain or gzip) under the policy of :func:`iter_jsonl`:
    a syntax error names the file, line and column; a key given twice, ``NaN`` /
    ``Infinity`` and lone surrogates are problems at their record path
    (:func:`strict_json`), all raised together as one :class:`~tiap.errors.TiapError`.
    """
    with open_text(path) as fh:
        text = fh.read()
    try:
        value, found = strict_json(text)
    except json.JSONDecodeError:
        return _loads(text, path, None)  # raises the located syntax error
    except (ValueError, RecursionError) as exc:
        raise TiapError(f"invalid JSON ({_json_what(exc)})", file=path) from None
    if found:
        problems = Problems(path)
        for p in found:
            problems.add(p.message, record=p.record, code=p.code)
        problems.raise_if_any()
    return value


def _loads(text: str, path: str | Path, line: int | None) -> Any:
    """``json.loads`` whose every failure is a located TiapError: syntax, numbers past
    Python's digit limit, nesting too deep to parse."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise TiapError(json_error(exc), file=path,
                        line=exc.lineno if line is None else line) from None
    except (ValueError, RecursionError) as exc:
        raise TiapError(f"invalid JSON ({_json_what(exc)})", file=path, line=line) from None


def _json_what(exc: ValueError | RecursionError) -> str:
    """What :func:`json.loads` refused, beyond syntax: a number past Python's digit limit,
    nesting too deep to parse."""
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    return "a number too long to read" if "digits" in str(exc) else str(exc).split(";")[0][:120]


def json_error(exc: json.JSONDecodeError) -> str:
    """``invalid JSON (<what> at column <n>)`` for a decoding error (its line goes in the
    error's location)."""
    what = exc.msg.removesuffix(" at")  # "Invalid control character at": the column follows
    return f"invalid JSON ({what} at column {exc.colno})"


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_SURROGATE = re.compile("[\ud800-\udfff]")


def jq_path(base: str, step: str | int) -> str:
    """The jq path of ``step`` (a key or a list index) below the value at ``base`` (``"."``
    is the document): ``.[3]``, ``.conversation.session_2``, ``.["a key"]``."""
    base = "" if base == "." else base
    if isinstance(step, int):
        return f"{base or '.'}[{step}]"
    if _IDENT.fullmatch(step):
        return f"{base}.{step}"
    return f"{base or '.'}[{json.dumps(step, allow_nan=False)}]"


def type_name(value: Any) -> str:
    """The JSON name of a parsed value's type."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__  # pragma: no cover - json yields nothing else


class _Pairs(dict):  # type: ignore[type-arg]
    """An object in which a key occurred more than once (the keys are kept in ``twice``)."""

    twice: list[str]


class _NonFinite:
    def __init__(self, token: str) -> None:
        self.token = token


class _Hooks:
    """Hooks for :func:`json.loads` that remember what JSON would otherwise hide."""

    def __init__(self) -> None:
        self.flagged = False

    def pairs(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        d = dict(pairs)
        if len(d) == len(pairs):
            return d
        self.flagged = True
        out = _Pairs(d)
        seen: set[str] = set()
        out.twice = [k for k, _ in pairs if k in seen or seen.add(k)]  # type: ignore[func-returns-value]
        return out

    def constant(self, token: str) -> _NonFinite:
        self.flagged = True
        return _NonFinite(token)


_DECODERS = threading.local()


def _strict_decoder() -> tuple[_Hooks, json.JSONDecoder]:
    """This thread's hooks and the decoder that calls them: made once, not per text
    (``json.loads`` with hooks builds a decoder and its scanner on every call, which costs
    as much as parsing a store's row)."""
    got = getattr(_DECODERS, "pair", None)
    if got is None:
        hooks = _Hooks()
        got = _DECODERS.pair = (hooks, json.JSONDecoder(object_pairs_hook=hooks.pairs,
                                                        parse_constant=hooks.constant))
    return got


def strict_json(text: str) -> tuple[Any, list[Problem]]:
    """Parse one JSON text and report, as problems at their jq record paths (no file or
    line), what :func:`json.loads` would let pass: a key given twice in one object (JSON
    would keep only the last; code ``duplicate``), ``NaN`` / ``Infinity`` (not JSON;
    ``invalid-value``), a string holding a lone surrogate escape such as ``"\\ud800"``
    (not a character, cannot be written as UTF-8; ``encoding``). The value is usable only
    when there is no problem. Syntax errors raise as :func:`json.loads` raises them.
    """
    hooks, decoder = _strict_decoder()
    hooks.flagged = False
    if text.startswith("\ufeff"):  # as json.loads says it
        raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    value = decoder.decode(text)
    if not hooks.flagged and not ("\\u" in text and _SURROGATE_ESCAPE.search(text)):
        return value, []
    found: list[Problem] = []
    return _clean(value, ".", found), found


def _clean(value: Any, at: str, found: list[Problem]) -> Any:
    """Report what the hooks flagged (and lone surrogates), at their record paths; the
    values returned are plain JSON values, never used once a problem is reported."""
    if isinstance(value, _NonFinite):
        found.append(Problem(f"{value.token} is not a JSON value; expected a finite number",
                             record=at, code="invalid-value"))
        return None
    if isinstance(value, str):
        if _SURROGATE.search(value):
            found.append(Problem("the string holds a lone surrogate escape (\\ud800-\\udfff), "
                                 "which is not a character and cannot be written as UTF-8",
                                 record=at, code="encoding"))
        return value
    if isinstance(value, list):
        return [_clean(v, jq_path(at, i), found) for i, v in enumerate(value)]
    if isinstance(value, dict):
        if isinstance(value, _Pairs):
            for k in dict.fromkeys(value.twice):
                found.append(Problem(f"key {k!r} occurs more than once in this object (JSON "
                                     "would keep only the last); expected each key once",
                                     record=at, code="duplicate"))
        out = {}
        for k, v in value.items():
            if _SURROGATE.search(k):
                found.append(Problem(f"key {k.encode('utf-8', 'backslashreplace').decode()!r} "
                                     "holds a lone surrogate escape", record=at,
                                     code="encoding"))
            out[k] = _clean(v, jq_path(at, k), found)
        return out
    return value


def numbered_lines(fh: Iterable[str]) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` of an open text file (:func:`open_text`), counted from 1,
    without the byte-order mark a file may start with."""
    for lineno, line in enumerate(fh, 1):
        if lineno == 1 and line.startswith("\ufeff"):
            line = line[1:]
        yield lineno, line


def json_lines(lines: Iterable[tuple[int, str]],
               problems: Problems) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` for each numbered line (:func:`numbered_lines`) that holds
    one JSON value, by the policy of :func:`iter_jsonl`: blank lines are skipped; any other
    line that is not strict JSON is a problem added to ``problems`` (its line is skipped)."""
    for lineno, line in lines:
        if not line.strip():
            continue
        whole = line.endswith("\n")
        try:  # without its newline, so that an error at the line's end names its column
            value, found = strict_json(line[:-1] if whole else line)
        except json.JSONDecodeError as exc:
            if whole:
                problems.add(json_error(exc), lineno)
            else:  # the file's last line, with no newline after it: cut short
                what = exc.msg.removesuffix(" at")
                problems.add(f"the last line ends in the middle of a record (invalid JSON: "
                             f"{what} at column {exc.colno})", lineno, code="truncated")
            continue
        except (ValueError, RecursionError) as exc:  # a number too long, nesting too deep
            problems.add(f"invalid JSON ({_json_what(exc)})", lineno)
            continue
        if found:
            for p in found:
                problems.add(p.message, lineno, record=p.record, code=p.code)
            continue
        yield lineno, value


def iter_jsonl(path: str | Path, problems: Problems | None = None
               ) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` for each JSON line of a JSON Lines file. TIAP reads every
    JSON Lines file through this one reader (runs, items, queries, cases, labels, imports),
    so one policy holds for all of them:

    - plain or gzip (by magic bytes, not by name); bytes that are not UTF-8 are an
      ``encoding`` error, raised at once, naming the line and the byte offset;
    - a byte-order mark at the start is skipped; blank lines are skipped; a line ends at
      ``\\n``, ``\\r\\n`` or ``\\r``;
    - every other line must be one JSON value (its type is the caller's to check): a line
      that is not (a syntax error, a number too long, nesting too deep) is a problem naming
      the line and column, code ``truncated`` for a last line cut short (no newline after
      it); a key given twice, ``NaN``/``Infinity`` and lone surrogates are problems at their
      record path (:func:`strict_json`).

    With ``problems``, each problem is added there, its line is skipped and reading goes on,
    so that the caller reports every problem of the file together; without, the first one
    is raised at once as a :class:`~tiap.errors.TiapError`.
    """
    own = Problems(path) if problems is None else problems
    with open_text(path) as fh:
        for lineno, value in json_lines(numbered_lines(fh), own):
            if problems is None:
                own.raise_if_any()
            yield lineno, value
        if problems is None:
            own.raise_if_any()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def _temp_prefix(path: Path) -> str:
    """``.NAME.PID.``: the prefix of the temporary siblings this process makes for ``path``.

    The PID lets a later run remove what a killed one left (see :func:`_remove_stale`).
    """
    return f".{path.name}.{os.getpid()}."


def _remove_stale(path: Path) -> None:
    """Remove temporary siblings of ``path`` left by processes that no longer run (a run
    killed with SIGKILL or by a power cut cannot clean up after itself)."""
    try:
        siblings = list(path.parent.glob(f".{glob.escape(path.name)}.*.tmp"))
    except OSError:
        return
    for tmp in siblings:
        pid = tmp.name[len(path.name) + 2 :].split(".", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            if tmp.is_dir() and not tmp.is_symlink():
                shutil.rmtree(tmp, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    tmp.unlink()


@contextlib.contextmanager
def atomic_write(path: str | Path, mode: str = "w",
                 encoding: str | None = "utf-8") -> Iterator[IO[Any]]:
    """Write ``path`` through a temporary file in the same directory, renamed on success.

    On any exception the temporary file is removed and ``path`` is left as it was; one left
    by a killed run is removed by the next write of ``path``.

        >>> with atomic_write("out/notes.txt") as fh:
        ...     _ = fh.write("done\\n")
        >>> Path("out/notes.txt").read_text()
        'done\\n'
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale(path)
    fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(path), suffix=".tmp", dir=path.parent)
    try:
        if "b" in mode:
            fh = os.fdopen(fd, mode)
        else:
            fh = os.fdopen(fd, mode, encoding=encoding, newline="")
        with fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the usual permissions
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def atomic_dir(path: str | Path, *, overwrite: bool = True) -> Iterator[Path]:
    """Build a directory's content in a sibling temporary directory, then move it into place.

    Files already in ``path`` that the new content does not replace are kept, so several
    commands can write into one output folder; on failure nothing in ``path`` changes. A
    temporary sibling left by a killed run is removed by the next one.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale(path)
    tmp = Path(tempfile.mkdtemp(prefix=_temp_prefix(path), suffix=".tmp", dir=path.parent))
    try:
        yield tmp
        path.mkdir(parents=True, exist_ok=True)
        for child in sorted(tmp.rglob("*")):
            rel = child.relative_to(tmp)
            dest = path / rel
            if child.is_dir():
                dest.mkdir(parents=True, exist_ok=True)
            elif dest.exists() and not overwrite:
                raise TiapError("refusing to overwrite an existing file", file=dest)
            else:
                dest.parent.mkdir(parents=True, exist_ok=True)
                os.replace(child, dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


#: The file of every TIAP output folder that names the step which wrote it (``command``).
MANIFEST_FILE = "manifest.json"


def _manifest_or_none(folder: Path) -> dict[str, Any] | None:
    try:
        obj = read_json(folder / MANIFEST_FILE)
    except TiapError:
        return None
    return obj if isinstance(obj, dict) else None


def output_step(path: str | Path) -> str | None:
    """The step (the manifest's ``command``) that wrote the folder ``path``, else ``None``.

        >>> with output_folder("scored", "rescore") as tmp:
        ...     _ = (tmp / "manifest.json").write_text('{"command": "rescore"}')
        >>> output_step("scored"), output_step("nowhere")
        ('rescore', None)
    """
    man = _manifest_or_none(Path(path))
    command = man.get("command") if man is not None else None
    return command if isinstance(command, str) else None


def _listed(path: Path) -> set[str] | None:
    """The relative paths the folder's manifest lists as outputs (``None``: no list)."""
    man = _manifest_or_none(path)
    outputs = man.get("outputs") if man is not None else None
    if not isinstance(outputs, list | dict):
        return None
    return {rel.replace("\\", "/").strip("/") for rel in outputs if isinstance(rel, str)}


def _foreign(real: Path, listed: set[str], keep: tuple[str, ...],
             patterns: tuple[str, ...]) -> list[str]:
    """The files below ``real`` (at any depth) that are neither listed, below a listed
    folder, kept, nor matching a pattern: files of the user's, which a swap would delete."""
    out = []
    for f in sorted(real.rglob("*")):
        if f.is_dir() and not f.is_symlink():
            continue
        rel = f.relative_to(real).as_posix()
        top = rel.split("/", 1)[0]
        if top == MANIFEST_FILE or top in keep:
            continue
        if rel in listed or any(rel.startswith(entry + "/") for entry in listed):
            continue
        # a pattern names top-level files (``*.csv``); a file in a subfolder must be listed
        # (or match a pattern with a folder, ``qrels/*.qrels``): a name alone cannot tell a
        # file of yours in ``qrels/`` from one TIAP wrote
        if any(fnmatch.fnmatchcase(rel, pat) for pat in patterns
               if ("/" in pat) == ("/" in rel)):
            continue
        out.append(rel)
    return out


def _refuse(path: Path, what: str) -> TiapError:
    return TiapError(f"{what}; refusing to write there: pass an empty or new --out, or --force "
                     "to replace the folder whole", file=path, code="stale-output")


def _never_replace(p: Path, real: Path, step: str) -> None:
    """Refuse, even with ``--force``, to replace a folder whose loss cannot be meant."""
    here, full = Path.cwd().resolve(), real.resolve()
    why = None
    if full == Path(full.anchor):
        why = "it is the root of the file system"
    elif full == Path.home().resolve():
        why = "it is your home folder"
    elif here == full or full in here.parents:
        why = "it holds the current directory"
    elif (full / ".git").exists() and output_step(full) != step:
        why = "it holds a .git folder (a source tree)"
    if why:
        raise TiapError(f"refusing to replace this folder (even with --force): {why}; pass "
                        "a new folder with --out", file=p, code="stale-output")


def check_output_folder(path: str | Path, step: str, *, force: bool = False,
                        known: Iterable[str] = (), keep: Iterable[str] = ()) -> Path:
    """Check that the folder ``path`` may be replaced by the output of ``step``; returns it
    with symbolic links resolved (the folder that :func:`output_folder` replaces).

    The policy: a missing or empty folder is written; a folder whose ``manifest.json`` says
    ``step`` wrote it is replaced whole, provided it holds nothing but what that manifest
    lists, the names matching a pattern of ``known`` (what ``step`` may write, e.g. an
    optional output of an earlier version) and ``keep`` (which survive the swap, so a folder
    holding only them counts as empty). Anything else (a folder without a
    TIAP manifest, the output of another step, a file of the user's beside the outputs) is
    refused, code ``stale-output``, unless ``force``; ``path`` being a file is refused always.
    Always (``force`` or not, empty or not), a folder whose replacement could not be what
    was meant is refused: the file system's root, the home folder, a folder holding the
    current directory (the swap would pull it from under the shell), and a folder holding a
    ``.git`` (a source tree) that is not this step's output.

        >>> check_output_folder("new", "rescore")
        PosixPath('new')
        >>> Path("mine").mkdir(); _ = Path("mine/notes.txt").write_text("keep me")
        >>> check_output_folder("mine", "rescore")
        Traceback (most recent call last):
        tiap.errors.TiapError: mine: the output folder is not empty and holds no manifest ...
    """
    p = Path(path)
    real = p.resolve() if p.is_symlink() else p
    if real.exists() and not real.is_dir():
        raise TiapError("the output must be a folder, but this is a file: pass a folder "
                        "path with --out", file=p, code="usage")
    if real.is_dir():
        _never_replace(p, real, step)
    if force or not real.is_dir():
        return real
    keep = tuple(keep)
    names = sorted(c.name for c in real.iterdir() if c.name not in keep)  # kept: never lost
    if not names:
        return real
    found = output_step(real)
    if found is None:
        raise _refuse(p, f"the output folder is not empty and holds no manifest of `tiap "
                         f"{step}` ({len(names)} {'entry' if len(names) == 1 else 'entries'}, "
                         f"first {names[0]!r}): it may be "
                         "a folder of yours")
    if found != step:
        raise _refuse(p, f"the output folder holds the output of `tiap {found}`, not of "
                         f"`tiap {step}`")
    listed = _listed(real)
    if listed is not None:
        foreign = _foreign(real, listed, keep, tuple(known))
        if foreign:
            more = f" and {len(foreign) - 3} more" if len(foreign) > 3 else ""
            raise _refuse(p, f"the output folder of `tiap {step}` holds entries its manifest "
                             f"does not list ({', '.join(map(repr, foreign[:3]))}{more}): "
                             "they may be files of yours")
    return real


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths in one step (Linux ``renameat2(RENAME_EXCHANGE)``); ``False`` where
    the system or file system cannot, so that the caller renames twice."""
    if sys.platform != "linux":
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    rc = renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange)
    return rc == 0


def _swap_in(tmp: Path, real: Path, keep: Iterable[str]) -> None:
    """Put the finished folder ``tmp`` at ``real``: the entries ``keep`` of the folder it
    replaces move into it first, then the two are exchanged and the old one is removed."""
    if not real.exists():
        os.replace(tmp, real)
        return
    for name in keep:
        if (real / name).exists() and not (tmp / name).exists():
            os.replace(real / name, tmp / name)
    if _exchange(tmp, real):
        old = tmp
    else:
        old = real.parent / f"{_temp_prefix(real)}{os.urandom(4).hex()}.old.tmp"
        os.replace(real, old)
        try:
            os.replace(tmp, real)
        except BaseException:
            os.replace(old, real)
            raise
    shutil.rmtree(old, ignore_errors=True)


@contextlib.contextmanager
def output_folder(path: str | Path, step: str, *, force: bool = False,
                  known: Iterable[str] = (), keep: Iterable[str] = ()) -> Iterator[Path]:
    """Build the output folder of ``step`` whole in a sibling temporary folder, then swap it
    in for ``path``: the folder then describes exactly one run, never files of an earlier
    one beside the new ones.

    Which existing folders may be replaced is :func:`check_output_folder`'s policy (checked
    on entry, before any work, and again before the swap). ``keep`` names entries of the old
    folder that survive the swap (resumable caches: a rerun keeps finished work); they are
    used in place during the run. On any failure or interrupt the temporary folder is removed
    and ``path`` is left as it was; one left by a killed run is removed by the next.

        >>> with output_folder("scored", "rescore") as tmp:
        ...     _ = (tmp / "manifest.json").write_text('{"command": "rescore", "files": []}')
        ...     _ = (tmp / "summary.csv").write_text("system,mean\\n")
        >>> sorted(p.name for p in Path("scored").iterdir())
        ['manifest.json', 'summary.csv']
    """
    keep = tuple(keep)
    known = tuple(known)
    real = check_output_folder(path, step, force=force, known=known, keep=keep)
    real.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale(real)
    tmp = Path(tempfile.mkdtemp(prefix=_temp_prefix(real), suffix=".tmp", dir=real.parent))
    try:
        yield tmp
        os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes 0700; give the usual permissions
        check_output_folder(path, step, force=force, known=known, keep=keep)
        _swap_in(tmp, real, keep)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def split_named(value: str | Path, option: str) -> tuple[str | None, Path]:
    """A ``[NAME=]PATH`` value of ``option``: ``NAME=PATH`` -> (NAME, PATH), a plain
    ``PATH`` -> (None, PATH). Every option and argument that takes ``[NAME=]PATH`` reads it
    here.

    One rule: a value naming an existing file or folder is a path, even when it holds ``=``;
    otherwise the first ``=`` splits it, and neither NAME (stripped; it may hold ``/``, as a
    system name may) nor PATH is empty. Anything else is an error naming the option
    (``invalid-value``)::

        >>> split_named("bm25=runs/bm25.trec", "--run")
        ('bm25', PosixPath('runs/bm25.trec'))
        >>> split_named("runs/bm25.trec", "--run")
        (None, PosixPath('runs/bm25.trec'))
    """
    text = str(value)
    if "=" not in text or Path(text).exists():
        return None, Path(text)
    name, _, path = text.partition("=")
    name = name.strip()
    if not name or not path:
        raise TiapError(f"{option} {text!r}: no such file, and not NAME=PATH (neither NAME "
                        "nor PATH may be empty)", code="invalid-value")
    return name, Path(path)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_jsonl(path: str | Path, rows: Any) -> int:
    """Atomically write an iterable of JSON-serialisable rows; returns the row count."""
    n = 0
    with atomic_write(path) as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False, separators=(",", ":"), allow_nan=False))
            fh.write("\n")
            n += 1
    return n


def shard_path(folder: Path, keys: Iterable[str], suffix: str = ".jsonl") -> Path:
    """A task's shard in ``folder``: named by the sha256 of its request keys
    (content-addressed: a retried task finds its predecessor's), then ``suffix`` (``""``
    for a shard that is a folder, as an embedding cache is)."""
    return folder / (hashlib.sha256("\n".join(keys).encode()).hexdigest()[:32] + suffix)


def append_shard(fh: IO[str], row: dict[str, Any]) -> None:
    """One result line, flushed and fsynced before the worker asks its next request."""
    fh.write(json.dumps(row, ensure_ascii=False, allow_nan=False) + "\n")
    fh.flush()
    os.fsync(fh.fileno())


def read_shard(path: Path, required: frozenset[str], what: str) -> dict[str, dict[str, Any]]:
    """The lines of a shard by their ``key``. A last line without its newline is the one a
    killed worker was writing: skipped (its request is asked again). Any other line that is
    not an object with the ``required`` keys is an error naming the shard and the line
    (``what`` names a line's kind: ``verdict``, ``parsed turn``)."""
    out: dict[str, dict[str, Any]] = {}
    if not path.exists():
        return out
    problems = Problems(path)
    with open_text(path) as fh:
        rows = list(json_lines(numbered_lines(fh), problems))
    broken = [p for p in problems.items if p.code != "truncated"]  # truncated: cut by a kill
    if broken:
        raise TiapError(f"a {what} shard line is not JSON ({broken[0].message}); move the "
                        "shard away (its requests are then asked again)", file=path,
                        line=broken[0].line)
    for n, d in rows:
        if not (isinstance(d, dict) and required <= d.keys()):
            raise TiapError(f"a {what} shard line lacks {sorted(required - set(d))}"
                            if isinstance(d, dict) else f"a {what} shard line is not an "
                            "object", file=path, line=n)
        out[d["key"]] = d
    return out
