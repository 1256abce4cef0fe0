"""TIAP's exported targets as ir_datasets datasets (docs/plugins.md).

:func:`register` registers a folder that ``tiap targets`` wrote in ir_datasets' registry,
under a name of your choice:

- ``tiap/<name>/<store>``: the store's items as docs (``doc_id`` = item id, ``text``) and
  the queries (``query_id``, ``text`` = the question);
- ``tiap/<name>/<store>/<target>``: the same docs and queries, and the target's qrels.

The qrels are the *group qrels* (``subtopic_qrels/<store>.<target>.qrels``): one
``TrecQrel(query_id, doc_id, relevance, iteration)`` per (group, member), ``iteration``
naming the group (the evidence unit). ir_measures reads them as they are: its set-credit
measures (``nDCG@60`` through trec_eval) see each relevant item once, and the group-credit
measures of :mod:`tiap.plugins.ir_measures` (``GroupNDCG@60``) read the groups. A query
without a group (a zero-target case, or one whose groups partial lineage leaves open) has no
qrels line. ir_datasets has no plug-in entry point: the datasets exist once
:func:`register` ran in the process. The items and queries files are the ones ``tiap
targets`` read, found where its manifest records them (or given), checked by sha256.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from tiap.datasets.records import Query
from tiap.errors import require
from tiap.memory.store import Store
from tiap.plugins.folder import TargetsFolder, find_folder, remember_folder

__all__ = ["register"]

_EXTRA = "plugins"
_CLASSES: dict[str, Any] = {}
_REGISTERED: set[str] = set()  # the dataset ids registered here


def _classes() -> dict[str, Any]:
    """ir_datasets components over the :class:`TargetsFolder` registered under a name
    (looked up on each use, so registering a rewritten folder again takes effect), made
    once."""
    if _CLASSES:
        return _CLASSES
    irds = require("ir_datasets", _EXTRA)
    fmt = irds.formats

    class Docs(fmt.BaseDocs):  # type: ignore[misc,name-defined]
        def __init__(self, name: str, store: str) -> None:
            self._name, self._store = name, store

        def docs_iter(self) -> Iterator[Any]:
            for it in find_folder(self._name).store(self._store).items:
                yield fmt.GenericDoc(it.item_id, it.text or "")

        def docs_count(self) -> int:
            return len(find_folder(self._name).store(self._store).items)

        def docs_cls(self) -> type:
            return fmt.GenericDoc

        def docs_namespace(self) -> str:
            return f"tiap/{self._name}/{self._store}"

        def docs_lang(self) -> None:
            return None

        def docs_store(self) -> Any:
            return Docstore(self)

    class Docstore(irds.indices.Docstore):  # type: ignore[misc,name-defined]
        def __init__(self, docs: Docs) -> None:
            super().__init__(fmt.GenericDoc, "doc_id")
            self._docs = docs
            self._by_id: dict[str, Any] | None = None

        def get_many_iter(self, doc_ids: Iterable[str]) -> Iterator[Any]:
            if self._by_id is None:
                self._by_id = {d.doc_id: d for d in self._docs.docs_iter()}
            for d in doc_ids:
                if d in self._by_id:
                    yield self._by_id[d]

    class Queries(fmt.BaseQueries):  # type: ignore[misc,name-defined]
        def __init__(self, name: str) -> None:
            self._name = name

        def queries_iter(self) -> Iterator[Any]:
            for q in find_folder(self._name).queries():
                yield fmt.GenericQuery(q.query_id, q.question)

        def queries_cls(self) -> type:
            return fmt.GenericQuery

        def queries_namespace(self) -> str:
            return f"tiap/{self._name}"

        def queries_lang(self) -> None:
            return None

    class Qrels(fmt.BaseQrels):  # type: ignore[misc,name-defined]
        def __init__(self, name: str, store: str, target: str) -> None:
            self._name, self._store, self._target = name, store, target

        def qrels_iter(self) -> Iterator[Any]:
            for r in find_folder(self._name).group_qrels(self._store, self._target):
                yield fmt.TrecQrel(r.query_id, r.doc_id, r.relevance, r.group)

        def qrels_cls(self) -> type:
            return fmt.TrecQrel

        def qrels_defs(self) -> dict[int, str]:
            return {1: f"credited under the target {self._target!r}: a member of the group "
                       "(evidence unit) named in `iteration`"}

        def qrels_path(self) -> str:
            return str(find_folder(self._name).qrels_file(self._store, self._target))

    _CLASSES.update(Docs=Docs, Queries=Queries, Qrels=Qrels, Dataset=irds.Dataset,
                    registry=irds.registry)
    return _CLASSES


def register(folder: str | Path, name: str | None = None, *,
             items: Mapping[str, str | Path | Store] | None = None,
             queries: str | Path | Iterable[Query] | None = None) -> list[str]:
    """Register the targets folder ``folder`` in ir_datasets as ``tiap/<name>/<store>`` and
    ``tiap/<name>/<store>/<target>`` (default ``name``: the folder's name); returns the
    dataset ids, stores then targets in the manifest's order.

    ``items`` (store name -> ``items.jsonl`` path or store) and ``queries`` (a path or the
    queries) are needed only where the manifest records no file (stores and queries given
    to :func:`tiap.targets.write_targets` in memory) or a recorded file moved. Registering
    one folder again reads it anew (after a rerun of ``tiap targets``); a name taken by
    another folder is an error. The folder's qrels files are checked against its manifest
    now and when read, the docs and queries when read.

    >>> import ir_datasets
    >>> from tiap.datasets.queryfile import query_from_json
    >>> from tiap.memory.store import Item, Store
    >>> from tiap.targets import write_targets
    >>> store = Store("f1", (Item("t1", "raw", ("d1:1",), text="I moved to Oslo."),
    ...                      Item("t2", "raw", ("d1:2",), text="In May."),
    ...                      Item("m1", "fact", ("d1:1", "d1:2"), text="Moved to Oslo in May.")))
    >>> queries = [query_from_json({"query_id": "q1", "question": "When did I move?",
    ...                             "evidence": ["d1:1", "d1:2"]})]
    >>> _ = write_targets("targets", [store], queries)
    >>> register("targets", "doc-example", items={"f1": store}, queries=queries)
    ['tiap/doc-example/f1', 'tiap/doc-example/f1/raw', 'tiap/doc-example/f1/source',
     'tiap/doc-example/f1/canonical']
    >>> ds = ir_datasets.load("tiap/doc-example/f1/canonical")
    >>> ds.docs_count(), list(ds.queries_iter())
    (3, [GenericQuery(query_id='q1', text='When did I move?')])
    >>> list(ds.qrels_iter())
    [TrecQrel(query_id='q1', doc_id='m1', relevance=1, iteration='d1:1'),
     TrecQrel(query_id='q1', doc_id='m1', relevance=1, iteration='d1:2')]
    """
    tf = TargetsFolder(folder, items=items, queries=queries)
    name = Path(folder).resolve().name if name is None else name
    parts = _classes()
    for store in tf.stores:
        for target in tf.targets:
            tf.qrels_file(store, target)  # present and unchanged, or an error now
    remember_folder(name, tf)
    ids: list[str] = []
    for store in tf.stores:
        base = f"tiap/{name}/{store}"
        docs, qs = parts["Docs"](name, store), parts["Queries"](name)
        datasets = {base: parts["Dataset"](docs, qs)}
        for target in tf.targets:
            datasets[f"{base}/{target}"] = parts["Dataset"](docs, qs,
                                                            parts["Qrels"](name, store, target))
        for did, ds in datasets.items():
            if did not in _REGISTERED:  # else: the same folder (remember_folder checked)
                parts["registry"].register(did, ds)
                _REGISTERED.add(did)
            ids.append(did)
    return ids
