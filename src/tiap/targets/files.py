"""Targets from files to a folder, every check included: what ``tiap targets`` does."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from tiap.datasets.queryfile import read_queries
from tiap.errors import Problem, TiapError
from tiap.memory.store import read_store
from tiap.targets.folder import TargetsExport, check_targets_folder, read_overlays, write_targets
from tiap.targets.groups import DEFAULT_TARGETS
from tiap.targets.targets import Target

__all__ = ["targets_files"]


def targets_files(
    items: str | Path | Sequence[str | Path],
    queries: str | Path,
    out: str | Path,
    targets: Iterable[Target | str] = DEFAULT_TARGETS,
    *,
    overlays: str | Sequence[str] = (),
    force: bool = False,
) -> TargetsExport:
    """Read the stores' ``items.jsonl`` files and a queries file, and write the targets
    folder (:func:`write_targets`), as ``tiap targets`` does.

    The folder is checked first (:func:`check_targets_folder`; ``force`` replaces a folder
    that is not a ``tiap targets`` output), then the inputs: an ``items`` path that does
    not exist and holds ``=`` is named with a hint (a store is named by its rows, never
    ``NAME=PATH``). ``overlays`` are ``NAME=PATH`` evidence overlays (:func:`read_overlays`)
    that targets ``T~NAME`` read. The queries file and the overlays are recorded in the
    manifest's ``inputs``.

        >>> import json
        >>> Path("store").mkdir()
        >>> rows = [{"item_id": "t1", "kind": "raw", "sources": ["d1:1"]},
        ...         {"item_id": "m1", "kind": "fact", "sources": ["d1:1"]}]
        >>> _ = Path("store/items.jsonl").write_text("".join(json.dumps(r) + "\\n" for r in rows))
        >>> _ = Path("queries.jsonl").write_text('{"query_id": "q1", "evidence": ["d1:1"]}\\n')
        >>> written = targets_files("store/items.jsonl", "queries.jsonl", "targets")
        >>> print(written.qrels["store", "canonical"].read_text(), end="")
        q1 0 m1 1
        >>> targets_files("f5=store/items.jsonl", "queries.jsonl", "targets")
        Traceback (most recent call last):
        tiap.errors.TiapError: f5=store/items.jsonl: file not found; items takes a path only ...
    """
    from tiap.config import option_name

    paths = [Path(items)] if isinstance(items, str | Path) else [Path(p) for p in items]
    check_targets_folder(out, force=force)
    hints = [Problem(f"file not found; {option_name('items')} takes a path only (a store is "
                     "named by its rows' 'store' field, else its folder)", file=str(p))
             for p in paths if "=" in str(p) and not p.exists()]
    if hints:
        raise TiapError(problems=hints)
    evidence, overlay_files = read_overlays([overlays] if isinstance(overlays, str)
                                            else overlays, option_name("overlays"))
    stores = [read_store(p) for p in paths]
    return write_targets(out, stores, read_queries(queries), list(targets),
                         input_files={"queries": Path(queries),
                                      **{f"overlay:{o}": p for o, p in overlay_files.items()}},
                         force=force, overlays=evidence)
