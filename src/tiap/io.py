"""Small I/O helpers shared by every stage.

- :func:`open_text` reads plain or gzip-compressed text transparently (by magic bytes, not
  by file name) and turns a truncated gzip stream into a clear :class:`TiapError`.
- :func:`atomic_write` / :func:`atomic_dir` write to a temporary name and rename, so a
  failure never leaves a half-written file behind.
- :func:`iter_jsonl` yields ``(line_number, object)`` and names the file and line of a
  malformed record.
"""

from __future__ import annotations

import contextlib
import glob
import gzip
import hashlib
import json
import os
import shutil
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from tiap.errors import TiapError

GZIP_MAGIC = b"\x1f\x8b"


def sha256_file(path: str | Path, chunk: int = 1 << 20) -> str:
    """Hex sha256 of a file's bytes."""
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
        raise TiapError("file not found", file=path)
    if path.is_dir():
        raise TiapError("expected a file, found a directory", file=path)
    if is_gzip(path):
        return _GzipTextReader(path)  # type: ignore[return-value]
    return open(path, encoding="utf-8")


class _GzipTextReader:
    """Iterates the lines of a gzip file; a truncated or corrupt stream is a TiapError."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh = gzip.open(path, "rt", encoding="utf-8")

    def _wrap(self, exc: Exception) -> TiapError:
        return TiapError(f"corrupt or truncated gzip file ({exc})", file=self.path)

    def read(self, n: int = -1) -> str:
        try:
            return self._fh.read(n)
        except (EOFError, OSError, zlib.error) as exc:
            raise self._wrap(exc) from exc

    def __iter__(self) -> Iterator[str]:
        try:
            yield from self._fh
        except (EOFError, OSError, zlib.error) as exc:
            raise self._wrap(exc) from exc

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> _GzipTextReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_json(path: str | Path) -> Any:
    """Parse one JSON document (plain or gzip); errors name the file, line and column."""
    with open_text(path) as fh:
        text = fh.read()
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise TiapError(
            json_error(exc), file=path, line=exc.lineno
        ) from exc


def json_error(exc: json.JSONDecodeError) -> str:
    """``invalid JSON (<what> at column <n>)`` for a decoding error (its line goes in the
    error's location)."""
    what = exc.msg.removesuffix(" at")  # "Invalid control character at": the column follows
    return f"invalid JSON ({what} at column {exc.colno})"


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, object)`` for each non-blank line of a JSONL file (plain or gzip)."""
    with open_text(path) as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                yield lineno, json.loads(line)
            except json.JSONDecodeError as exc:
                raise TiapError(
                    json_error(exc), file=path, line=lineno
                ) from exc


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
def atomic_write(path: str | Path, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO[Any]]:
    """Write ``path`` through a temporary file in the same directory, renamed on success.

    On any exception the temporary file is removed and ``path`` is left as it was; one left
    by a killed run is removed by the next write of ``path``.
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


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_jsonl(path: str | Path, rows: Any) -> int:
    """Atomically write an iterable of JSON-serialisable rows; returns the row count."""
    n = 0
    with atomic_write(path) as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")))
            fh.write("\n")
            n += 1
    return n
