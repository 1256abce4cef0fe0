"""Runs given as ``[NAME=]PATH`` specs (``tiap rescore --run``): one rule for every caller."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from tiap.errors import TiapError
from tiap.io import split_named
from tiap.runs.columnar import read_run_columnar
from tiap.runs.formats import Dedup, Order, read_run

__all__ = ["read_named_run"]


def read_named_run(spec: str | Path | tuple[str | None, str | Path], *, dedup: Dedup = "error",
                   order: Order = "rank", columnar: bool = False, option: str = "run",
                   ) -> list[Any]:
    """The runs of one ``[NAME=]PATH`` spec (:func:`tiap.io.split_named`), or of a
    ``(NAME, PATH)`` pair already split (NAME ``None``: a plain PATH).

    A plain ``PATH`` gives every system of the file (:func:`~tiap.runs.formats.read_run`).
    ``NAME=PATH`` renames the file's only system to ``NAME``, or, when the file holds
    several, picks the one called ``NAME``: an error when none is (naming the file and its
    systems). ``columnar`` reads :class:`~tiap.runs.columnar.ColumnarRun` values instead
    (:func:`~tiap.runs.columnar.read_run_columnar`); ``dedup`` and ``order`` are the
    readers'. ``option`` names the spec in an error about its form.

        >>> _ = Path("two.trec").write_text("q1 Q0 a 1 2.0 bm25\\nq1 Q0 b 1 2.0 dense\\n")
        >>> [r.system for r in read_named_run("two.trec")]
        ['bm25', 'dense']
        >>> [r.system for r in read_named_run("dense=two.trec")]
        ['dense']
        >>> _ = Path("one.trec").write_text("q1 Q0 a 1 2.0 run1\\n")
        >>> [(r.system, r.rankings[0].system) for r in read_named_run("bm25=one.trec")]
        [('bm25', 'bm25')]
        >>> [r.system for r in read_named_run(("bm25", "two.trec"))]
        ['bm25']
        >>> read_named_run("splade=two.trec")
        Traceback (most recent call last):
        tiap.errors.TiapError: two.trec: splade=: the file holds 2 systems (bm25, dense); ...
    """
    if isinstance(spec, tuple):
        name, path = spec[0], Path(spec[1])
    else:
        name, path = split_named(spec, option)
    read = read_run_columnar if columnar else read_run
    got: list[Any] = list(read(path, dedup=dedup, order=order))
    if name is None:
        return got
    if len(got) == 1:
        run = got[0]
        if columnar:
            return [dataclasses.replace(run, system=name)]
        return [dataclasses.replace(run, system=name, rankings=tuple(
            dataclasses.replace(r, system=name) for r in run.rankings))]
    chosen = [r for r in got if r.system == name]
    if not chosen:
        raise TiapError(f"{name}=: the file holds {len(got)} systems "
                        f"({', '.join(r.system for r in got)}); name one of them", file=path)
    return chosen
