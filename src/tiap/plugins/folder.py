"""A ``tiap targets`` folder as the plug-ins read it (docs/plugins.md).

:class:`TargetsFolder` opens a folder that ``tiap targets`` (:func:`tiap.targets.write_targets`)
wrote and hands out what the ir_datasets, ir_measures and PyTerrier plug-ins need: the stores
and targets its manifest lists, each (store, target)'s *group qrels*, the stores' items (the
documents) and the queries. It reads only files the manifest vouches for: a qrels file must
still have the sha256 the manifest records, and an items or queries file read from a recorded
path must be the file ``tiap targets`` read.

The group qrels are the folder's ``subtopic_qrels/<store>.<target>.qrels``: TREC qrels
``qid group docid 1``, one line per (group, member), column 2 naming the group (the evidence
unit). Every tool that reads TREC qrels reads them as set-credit qrels (column 2 is ignored,
and an item in two groups is one relevant item), and the group-credit measures of
:mod:`tiap.plugins.ir_measures` read column 2 to walk the groups. Standard library only: no
plug-in's tool is imported here.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tiap.datasets.queryfile import read_queries
from tiap.datasets.records import Query
from tiap.errors import Problem, TiapError
from tiap.io import sha256_file
from tiap.memory.store import Store, read_store
from tiap.provenance import peek_manifest

__all__ = ["GroupQrel", "TargetsFolder", "find_folder", "folder_names", "remember_folder"]

_COMMAND = "targets"  # the manifest's "command" of a tiap targets folder


@dataclass(frozen=True)
class GroupQrel:
    """One line of a group qrels file: ``query_id group doc_id relevance``.

    >>> GroupQrel("q1", "d1:1", "m1", 1)
    GroupQrel(query_id='q1', group='d1:1', doc_id='m1', relevance=1)
    """

    query_id: str
    group: str
    doc_id: str
    relevance: int


class TargetsFolder:
    """A folder written by ``tiap targets``, opened for the plug-ins.

    Args:
        path: the folder (it holds the ``manifest.json`` of ``tiap targets``).
        items: store name -> its items (an ``items.jsonl`` path or a
            :class:`~tiap.memory.store.Store`), for stores whose items file the manifest
            does not record or that moved since; a path must be the file ``tiap targets``
            read (same sha256).
        queries: the queries file (or the queries), where the manifest records none or it
            moved; the same check.

    Recorded paths are tried as written (relative to the current folder), then relative to
    the folder's parent; a file found there whose sha256 differs from the record is an
    error, never read.

    >>> from tiap.datasets.queryfile import query_from_json
    >>> from tiap.memory.store import Item, Store
    >>> from tiap.targets import write_targets
    >>> store = Store("f1", (Item("t1", "raw", ("d1:1",), text="I moved to Oslo."),
    ...                      Item("t2", "raw", ("d1:2",), text="In May."),
    ...                      Item("m1", "fact", ("d1:1", "d1:2"), text="Moved to Oslo in May.")))
    >>> queries = [query_from_json({"query_id": "q1", "question": "When did I move?",
    ...                             "evidence": ["d1:1", "d1:2"]})]
    >>> _ = write_targets("targets", [store], queries)
    >>> folder = TargetsFolder("targets", items={"f1": store}, queries=queries)
    >>> folder.stores, folder.targets
    (('f1',), ('raw', 'source', 'canonical'))
    >>> for row in folder.group_qrels("f1", "source"):
    ...     print(row.query_id, row.group, row.doc_id, row.relevance)
    q1 d1:1 m1 1
    q1 d1:1 t1 1
    q1 d1:2 m1 1
    q1 d1:2 t2 1
    >>> [(q.query_id, q.question) for q in folder.queries()]
    [('q1', 'When did I move?')]
    >>> [(it.item_id, it.text) for it in folder.store("f1").items][:1]
    [('t1', 'I moved to Oslo.')]
    """

    def __init__(self, path: str | Path, *, items: Mapping[str, str | Path | Store] | None = None,
                 queries: str | Path | Iterable[Query] | None = None) -> None:
        self.path = Path(path)
        man = peek_manifest(self.path / "manifest.json")
        if man is None or man.get("command") != _COMMAND:
            raise TiapError("not a folder written by `tiap targets` (no manifest.json of it)",
                            file=self.path)
        self.manifest: Mapping[str, Any] = man
        self.stores: tuple[str, ...] = tuple(str(s["name"]) for s in man.get("stores", ()))
        self.targets: tuple[str, ...] = tuple(str(t["name"]) for t in man.get("targets", ()))
        unknown = sorted(set(items or ()) - set(self.stores))
        if unknown:
            raise TiapError(f"items given for stores the folder does not hold: "
                            f"{', '.join(unknown)} (it holds {', '.join(self.stores)})",
                            file=self.path / "manifest.json")
        self.items: dict[str, str | Path | Store] = dict(items or {})
        self.queries_given: str | Path | list[Query] | None = (queries if queries is None or isinstance(queries, str | Path)
                              else list(queries))
        self._stores: dict[str, Store] = {}
        self._queries: list[Query] | None = None

    def __repr__(self) -> str:
        return f"TargetsFolder({str(self.path)!r})"

    # --------------------------------------------------------------------------------
    # qrels

    def check(self, store: str, target: str) -> None:
        """An error unless the folder holds ``target`` of ``store``.

        >>> folder = TargetsFolder.__new__(TargetsFolder)
        >>> folder.path, folder.stores, folder.targets = Path("t"), ("f1",), ("raw",)
        >>> folder.check("f1", "raw")
        >>> folder.check("f2", "raw")
        Traceback (most recent call last):
        tiap.errors.TiapError: t: no store 'f2' in this targets folder (it holds f1)
        """
        if store not in self.stores:
            raise TiapError(f"no store {store!r} in this targets folder (it holds "
                            f"{', '.join(self.stores)})", file=self.path)
        if target not in self.targets:
            raise TiapError(f"no target {target!r} in this targets folder (it holds "
                            f"{', '.join(self.targets)})", file=self.path)

    def qrels_file(self, store: str, target: str, *, groups: bool = True) -> Path:
        """The qrels file of ``target`` of ``store``: the group qrels
        (``subtopic_qrels/<store>.<target>.qrels``) or, with ``groups=False``, the set
        qrels (``qrels/<store>.<target>.qrels``); an error if the file is missing or no
        longer what the manifest records.

        >>> from tiap.datasets.queryfile import query_from_json
        >>> from tiap.memory.store import Item, Store
        >>> from tiap.targets import write_targets
        >>> _ = write_targets("targets", [Store("f1", (Item("t1", "raw", ("d1:1",)),))],
        ...                   [query_from_json({"query_id": "q1", "evidence": ["d1:1"]})])
        >>> TargetsFolder("targets").qrels_file("f1", "raw")
        PosixPath('targets/subtopic_qrels/f1.raw.qrels')
        """
        self.check(store, target)
        rel = f"{'subtopic_qrels' if groups else 'qrels'}/{store}.{target}.qrels"
        entry = self.manifest.get("outputs", {}).get(rel)
        p = self.path / rel
        if not isinstance(entry, dict):
            raise TiapError(f"the manifest lists no {rel} (written by an older TIAP? run "
                            "`tiap targets` again)", file=self.path / "manifest.json")
        if not p.is_file():
            raise TiapError("qrels file not found (the manifest lists it)", file=p)
        if sha256_file(p) != entry.get("sha256"):
            raise TiapError("the qrels file changed since `tiap targets` wrote it (its sha256 "
                            "is not the manifest's)", file=p)
        return p

    def group_qrels(self, store: str, target: str) -> Iterator[GroupQrel]:
        """The group qrels of ``target`` of ``store``, line by line (see
        :meth:`qrels_file`; the class's example)."""
        p = self.qrels_file(store, target)
        with open(p, encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                parts = line.split()
                if not parts:
                    continue
                if len(parts) != 4 or not parts[3].lstrip("-").isdigit():
                    raise TiapError("not a qrels line `qid group docid relevance`", file=p,
                                    line=n)
                yield GroupQrel(parts[0], parts[1], parts[2], int(parts[3]))

    # --------------------------------------------------------------------------------
    # documents and queries

    def store(self, name: str) -> Store:
        """The store ``name`` (its items are the documents): given to the constructor, or
        read from the items file the manifest records (see the class's example)."""
        if name not in self.stores:
            raise TiapError(f"no store {name!r} in this targets folder (it holds "
                            f"{', '.join(self.stores)})", file=self.path)
        if name not in self._stores:
            given = self.items.get(name)
            if isinstance(given, Store):
                self._stores[name] = given
            else:
                entry = next(s for s in self.manifest["stores"] if s["name"] == name)["items"]
                path = self._input(given, entry, f"the items of store {name!r}",
                                   f"items={{{name!r}: PATH}}")
                self._stores[name] = read_store(path, name)
        return self._stores[name]

    def queries(self) -> list[Query]:
        """The queries ``tiap targets`` read: given to the constructor, or read from the
        queries file the manifest records (see the class's example)."""
        if self._queries is None:
            given = self.queries_given
            if given is not None and not isinstance(given, str | Path):
                self._queries = list(given)
            else:
                entry = self.manifest.get("inputs", {}).get("queries", {})
                self._queries = read_queries(self._input(given, entry, "the queries file",
                                                         "queries=PATH"))
        return self._queries

    def _input(self, given: str | Path | None, entry: Mapping[str, Any], what: str,
               how: str) -> Path:
        """The input file ``tiap targets`` read (``entry``: its manifest record), at
        ``given`` or where the record says; checked by sha256 where it is recorded."""
        digest = entry.get("sha256")
        if given is not None:
            candidates = [Path(given)]
        elif entry.get("path"):
            recorded = Path(str(entry["path"]))
            candidates = [recorded] if recorded.is_absolute() else [
                recorded, self.path.parent / recorded]
        else:
            raise TiapError(f"the manifest records no file for {what}; give it ({how})",
                            file=self.path / "manifest.json")
        problems = []
        for c in candidates:
            if not c.is_file():
                continue
            if digest is None or sha256_file(c) == digest:
                return c
            problems.append(Problem(f"{what}: this is not the file `tiap targets` read (its "
                                    "sha256 differs from the manifest's)", file=str(c)))
        if not problems:
            problems.append(Problem(f"{what}: file not found; give it ({how})",
                                    file=str(candidates[0])))
        raise TiapError(problems=problems)


# ------------------------------------------------------------------------------------------
# folders known by name (the plug-ins' registrations)

_FOLDERS: dict[str, TargetsFolder] = {}


def remember_folder(name: str, folder: TargetsFolder) -> None:
    """Know ``folder`` as ``name`` (:func:`find_folder`); a name is given once, unless to
    the same folder again.

    >>> f = TargetsFolder.__new__(TargetsFolder)
    >>> f.path = Path("targets")
    >>> remember_folder("demo-doc", f); find_folder("demo-doc") is f
    True
    """
    if not name or "/" in name or ":" in name or any(c.isspace() for c in name):
        raise TiapError(f"invalid name {name!r} for a targets folder: no '/', ':' or "
                        "whitespace", code="invalid-value")
    prev = _FOLDERS.get(name)
    if prev is not None and prev.path.resolve() != folder.path.resolve():
        raise TiapError(f"the name {name!r} is registered already for {prev.path}",
                        code="invalid-value")
    _FOLDERS[name] = folder


def find_folder(name: str) -> TargetsFolder:
    """The folder registered as ``name``, else the folder at the path ``name``.

    >>> find_folder("no/such/folder")
    Traceback (most recent call last):
    tiap.errors.TiapError: no/such/folder: no targets folder registered under this name, ...
    """
    if name in _FOLDERS:
        return _FOLDERS[name]
    if not (Path(name) / "manifest.json").is_file():
        raise TiapError("no targets folder registered under this name, and no folder "
                        "`tiap targets` wrote at this path", file=name)
    return TargetsFolder(name)


def folder_names() -> list[str]:
    """The names of the folders registered in this process, sorted.

    >>> isinstance(folder_names(), list)
    True
    """
    return sorted(_FOLDERS)
