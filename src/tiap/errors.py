"""Errors that reach the user.

Every error TIAP raises for bad input is a :class:`TiapError`: it names the file, the line
(or record) and the query it concerns, so the CLI can print one clear line per problem
instead of a traceback.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Problem:
    """One located problem: what is wrong and where."""

    message: str
    file: str | None = None
    line: int | None = None
    query_id: str | None = None
    record: str | None = None

    def __str__(self) -> str:
        where = []
        if self.file:
            where.append(self.file + (f":{self.line}" if self.line is not None else ""))
        if self.record:
            where.append(f"record {self.record}")
        if self.query_id:
            where.append(f"query {self.query_id}")
        return (", ".join(where) + ": " if where else "") + self.message


class TiapError(Exception):
    """An error caused by input or configuration, reported to the user without a traceback.

    A single error may carry several :class:`Problem` entries, so that all problems found in
    one pass are reported together.
    """

    def __init__(
        self,
        message: str | None = None,
        *,
        file: str | Path | None = None,
        line: int | None = None,
        query_id: str | None = None,
        record: str | None = None,
        problems: Iterable[Problem] = (),
    ) -> None:
        probs = list(problems)
        if message is not None:
            probs.insert(
                0,
                Problem(
                    message,
                    file=str(file) if file is not None else None,
                    line=line,
                    query_id=query_id,
                    record=record,
                ),
            )
        if not probs:
            probs = [Problem("unknown error")]
        self.problems: tuple[Problem, ...] = tuple(probs)
        super().__init__("\n".join(str(p) for p in self.problems))


#: At most this many problems are listed in one error (the rest are counted).
MAX_PROBLEMS = 50


class Problems:
    """Located problems collected over a whole input, then raised together as one
    :class:`TiapError`: the first ``limit`` are listed, the rest counted.

    ``file`` is where problems are located unless :meth:`add` names another file.
    """

    def __init__(self, file: str | Path | None = None, limit: int = MAX_PROBLEMS) -> None:
        self.file = None if file is None else str(file)
        self.limit = limit
        self.items: list[Problem] = []
        self.total = 0

    def add(self, message: str, line: int | None = None, query_id: str | None = None,
            record: str | None = None, *, file: str | Path | None = None) -> None:
        self.total += 1
        if len(self.items) < self.limit:
            where = self.file if file is None else str(file)
            self.items.append(Problem(message, file=where, line=line, query_id=query_id,
                                      record=record))

    def extend(self, exc: TiapError) -> None:
        """Collect the problems of an error raised by a reader of one record."""
        for p in exc.problems:
            self.total += 1
            if len(self.items) < self.limit:
                self.items.append(p)

    def raise_if_any(self) -> None:
        if not self.total:
            return
        problems = list(self.items)
        if self.total > len(problems):
            problems.append(Problem(f"... and {self.total - len(problems)} more problems",
                                    file=self.file))
        raise TiapError(problems=problems)


class ChecksumError(TiapError):
    """A data file does not match the checksum it is pinned to."""


class MissingExtraError(TiapError):
    """An optional dependency is not installed."""

    def __init__(self, module: str, extra: str) -> None:
        super().__init__(
            f"this feature needs the Python package {module!r}; install it with "
            f"pip install 'tiap[{extra}]'"
        )


def require(module: str, extra: str):  # type: ignore[no-untyped-def]
    """Import an optional module or raise :class:`MissingExtraError` naming the extra."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise MissingExtraError(module, extra) from exc
