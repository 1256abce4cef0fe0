"""The ``native`` parser: the derived memories a dataset ships, with their lineage.

LoCoMo ships three kinds (read by :mod:`tiap.datasets.locomo` as
:class:`~tiap.datasets.DerivedMemory` records), stored under their own kind names:

- ``observation``: a fact about one speaker, with the ``dia_id`` (one or several) it was
  written from: ``sources`` are those turns;
- ``session_summary``: a summary of one session: ``sources`` are every turn of the session;
- ``event_summary``: an event of one speaker in a session; the file names no turn, so
  ``sources`` are every turn of the session.

Item ids are the dataset loader's ids (``conv-26:session_1:observation:1``,
``conv-26:session_1:session_summary``, ``conv-26:session_1:event_summary:1``). Each item
keeps the session and, where given, the speaker as extra fields. Datasets that ship no
derived memories (LongMemEval, BEAM) are an error before anything is written.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tiap.datasets.base import Bundle, Dataset
from tiap.errors import TiapError
from tiap.memory.parsers import Parser, register_parser
from tiap.memory.store import Item

__all__ = ["NATIVE_KINDS", "NativeParser", "TurnsParser", "native", "turns"]

NATIVE_KINDS = ("observation", "session_summary", "event_summary")


class NativeParser(Parser):
    """The dataset's own derived memories (see the module docstring)."""

    derived_kinds = NATIVE_KINDS

    def __init__(self, kinds: tuple[str, ...]) -> None:
        self.kinds = kinds
        self.seen = 0
        self.without_sources = 0

    def prepare(self, dataset: Dataset) -> None:
        first = next(iter(dataset.bundles()), None)
        if first is None or not first.memories:
            raise TiapError(
                f"dataset {dataset.dataset_id!r} ships no derived memories, so the native parser "
                "has nothing to store; use --parser heuristic or --parser llm"
            )

    def derive(self, bundle: Bundle) -> Iterator[Item]:
        for m in bundle.memories:
            self.seen += 1
            if m.kind not in self.kinds:
                continue
            if not m.sources:
                self.without_sources += 1
            meta: list[tuple[str, Any]] = []
            if m.session_id is not None:
                meta.append(("session_id", m.session_id))
            if m.speaker is not None:
                meta.append(("speaker", m.speaker))
            yield Item(m.item_id, m.kind, m.sources, text=m.text, collection=m.collection_id,
                       meta=tuple(meta))

    def finish(self) -> None:
        if self.seen == 0:
            raise TiapError("the dataset shipped no derived memories: "
                            "the native parser has nothing to store")

    def stats(self) -> dict[str, Any]:
        return {"memories_shipped": self.seen, "derived_without_sources": self.without_sources}


@register_parser("native")
def native(kinds: tuple[str, ...] | list[str] | str = NATIVE_KINDS) -> NativeParser:
    """The derived memories the dataset ships; ``kinds`` selects among
    ``observation``, ``session_summary`` and ``event_summary`` (all by default)."""
    chosen = tuple(k.strip() for k in kinds.split(",")) if isinstance(kinds, str) else tuple(kinds)
    unknown = [k for k in chosen if k not in NATIVE_KINDS]
    if unknown or not chosen:
        raise TiapError(f"unknown native memory kind(s) {', '.join(unknown) or '(none given)'}; "
                        f"known: {', '.join(NATIVE_KINDS)}")
    return NativeParser(chosen)


class TurnsParser(Parser):
    """No derived items: a store of the dataset's raw turns only (the retrieval corpus a
    benchmark itself defines, e.g. for LongMemEval's turn- and session-level metrics)."""

    derived_kinds = ()
    parallel = True

    def derive(self, bundle: Bundle) -> Iterator[Item]:
        return iter(())


@register_parser("turns")
def turns() -> TurnsParser:
    """The raw turns only, no derived item."""
    return TurnsParser()
