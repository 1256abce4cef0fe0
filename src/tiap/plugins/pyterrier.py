"""TIAP's exported targets as PyTerrier datasets, through PyTerrier's dataset-provider entry
point (docs/plugins.md).

TIAP declares :class:`DatasetProvider` under PyTerrier's ``pyterrier.dataset_provider``
entry-point group as ``tiap``, so with TIAP installed::

    dataset = pt.get_dataset("tiap:<folder>/<store>/<target>")

gives a dataset whose ``get_topics()`` are the queries (``qid``, ``query``: the question),
``get_qrels()`` the group qrels of that store and target (``qid``, ``docno``, ``label``,
``iteration``: the group, as :mod:`tiap.plugins.ir_measures`' group-credit measures read it)
and ``get_corpus_iter()`` the store's items (``docno``, ``text``). ``<folder>`` is a folder
``tiap targets`` wrote (a path, relative to the current folder or absolute) or a name given
to :func:`register` (or :func:`tiap.plugins.ir_datasets.register`) in this process;
``tiap:<folder>/<store>`` has topics and corpus without qrels. None of this needs Java:
PyTerrier's dataset API and ``pt.Experiment`` on result frames run without it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from tiap.datasets.records import Query
from tiap.errors import TiapError, require
from tiap.memory.store import Store
from tiap.plugins.folder import TargetsFolder, find_folder, folder_names, remember_folder

__all__ = ["DatasetProvider", "register"]

_EXTRA = "plugins"
PREFIX = "tiap"  # the entry point's name: pt.get_dataset("tiap:...")
_CLASS: dict[str, type] = {}


def register(folder: str | Path, name: str | None = None, *,
             items: Mapping[str, str | Path | Store] | None = None,
             queries: str | Path | Iterable[Query] | None = None) -> list[str]:
    """Know the targets folder ``folder`` as ``name`` (default: the folder's name) in this
    process; returns the PyTerrier dataset names ``tiap:<name>/<store>/<target>``.
    ``items`` and ``queries`` as in :class:`~tiap.plugins.folder.TargetsFolder`. Needed
    only to give a folder a short name or its files: a folder's path works without it.

    >>> from tiap.datasets.queryfile import query_from_json
    >>> from tiap.memory.store import Item, Store
    >>> from tiap.targets import write_targets
    >>> _ = write_targets("targets", [Store("f1", (Item("t1", "raw", ("d1:1",)),))],
    ...                   [query_from_json({"query_id": "q1", "evidence": ["d1:1"]})])
    >>> register("targets", "pt-doc-example")
    ['tiap:pt-doc-example/f1/raw', 'tiap:pt-doc-example/f1/source',
     'tiap:pt-doc-example/f1/canonical']
    """
    tf = TargetsFolder(folder, items=items, queries=queries)
    name = Path(folder).resolve().name if name is None else name
    remember_folder(name, tf)
    return [f"{PREFIX}:{name}/{s}/{t}" for s in tf.stores for t in tf.targets]


def _dataset_class() -> type:
    """The dataset class, a ``pyterrier.datasets.Dataset``, made once."""
    if not _CLASS:
        pt = require("pyterrier", _EXTRA)
        pd = require("pandas", _EXTRA)

        class TiapDataset(pt.datasets.Dataset):  # type: ignore[misc,name-defined]
            """One store (and target) of a ``tiap targets`` folder."""

            def __init__(self, folder: TargetsFolder, store: str, target: str | None,
                         name: str) -> None:
                self._folder, self._store, self._target, self._name = (folder, store, target,
                                                                       name)

            def __repr__(self) -> str:
                return f"TiapDataset({self._name!r})"

            def _no_variant(self, variant: str | None) -> None:
                if variant is not None:
                    raise ValueError(f"{self._name}: TIAP's datasets have no variants "
                                     f"(got {variant!r})")

            def get_topics(self, variant: str | None = None) -> Any:
                self._no_variant(variant)
                rows = [(q.query_id, q.question) for q in self._folder.queries()]
                return pd.DataFrame(rows, columns=["qid", "query"])

            def get_qrels(self, variant: str | None = None) -> Any:
                self._no_variant(variant)
                if self._target is None:
                    raise NotImplementedError(f"{self._name} names no target: use "
                                              f"{PREFIX}:<folder>/<store>/<target> for qrels")
                rows = [(r.query_id, r.doc_id, r.relevance, r.group)
                        for r in self._folder.group_qrels(self._store, self._target)]
                return pd.DataFrame(rows, columns=["qid", "docno", "label", "iteration"])

            def get_corpus_iter(self, verbose: bool = True) -> Iterator[dict[str, str]]:
                for it in self._folder.store(self._store).items:
                    yield {"docno": it.item_id, "text": it.text or ""}

            def get_corpus_lang(self) -> None:
                return None

            def get_topics_lang(self) -> None:
                return None

            def _describe_component(self, component: str) -> bool | None:
                return {"topics": True, "corpus": True,
                        "qrels": self._target is not None}.get(component)

        _CLASS["dataset"] = TiapDataset
    return _CLASS["dataset"]


class DatasetProvider:
    """PyTerrier's dataset provider for TIAP's targets (the ``tiap`` entry point of the
    ``pyterrier.dataset_provider`` group); PyTerrier calls it for names ``tiap:...``.

    >>> import pyterrier as pt
    >>> from tiap.datasets.queryfile import query_from_json
    >>> from tiap.memory.store import Item, Store
    >>> from tiap.targets import write_targets
    >>> store = Store("f1", (Item("t1", "raw", ("d1:1",), text="I moved to Oslo."),
    ...                      Item("m1", "fact", ("d1:1",), text="Moved to Oslo.")))
    >>> queries = [query_from_json({"query_id": "q1", "question": "Where do I live?",
    ...                             "evidence": ["d1:1"]})]
    >>> _ = write_targets("targets", [store], queries)
    >>> _ = register("targets", "pt-provider-example", items={"f1": store}, queries=queries)
    >>> ds = DatasetProvider().get_dataset("pt-provider-example/f1/source")
    >>> ds.get_topics()
      qid             query
    0  q1  Where do I live?
    >>> ds.get_qrels()
      qid docno  label iteration
    0  q1    m1      1      d1:1
    1  q1    t1      1      d1:1
    >>> [d["docno"] for d in ds.get_corpus_iter()]
    ['t1', 'm1']
    """

    def get_dataset(self, name: str) -> Any:
        """The dataset ``<folder>/<store>/<target>`` (or ``<folder>/<store>``); a
        ``KeyError`` (what PyTerrier expects) for a name that names none."""
        problems: list[str] = []
        for prefix, store, target in _splits(name):
            try:
                folder = find_folder(prefix)
            except TiapError as exc:
                problems.append(str(exc))
                continue
            if store in folder.stores and (target is None or target in folder.targets):
                return _dataset_class()(folder, store, target, f"{PREFIX}:{name}")
            problems.append(f"{prefix}: holds stores {', '.join(folder.stores)} and targets "
                            f"{', '.join(folder.targets)}")
        raise KeyError(f"{PREFIX}:{name}: give <folder>/<store>/<target> (a folder `tiap "
                       "targets` wrote, or a name registered with tiap.plugins.pyterrier."
                       f"register); {'; '.join(problems) or 'no folder part'}")

    def list_dataset_names(self) -> list[str]:
        """The datasets of the folders registered in this process."""
        return [f"{n}/{s}/{t}" for n in folder_names() for s in find_folder(n).stores
                for t in find_folder(n).targets]


def _splits(name: str) -> Iterator[tuple[str, str, str | None]]:
    """``(folder, store, target)`` readings of ``name``, the longest target reading first."""
    parts = name.split("/")
    if len(parts) >= 3:
        yield "/".join(parts[:-2]), parts[-2], parts[-1]
    if len(parts) >= 2:
        yield "/".join(parts[:-1]), parts[-1], None
