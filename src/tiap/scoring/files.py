"""Rescoring from files to a folder, every check included: what ``tiap rescore`` does.

:func:`rescore_files` takes the paths and options of ``tiap rescore``, checks them all
before anything is read, reads the runs with the stores and queries file (or with TREC
qrels files), rescores, writes the folder (:func:`tiap.scoring.folder.write_rescore`) and
returns a :class:`RescoredFolder`: the scores and what the command prints. A Python caller
gets the folder the command writes, byte for byte.

An error about a parameter names it as the Python caller spelled it (``measures``); inside
:func:`tiap.config.command_options` (the command) it names the option (``--measures``).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tiap.config import option_name as _opt
from tiap.engine import make_engine, use_engine
from tiap.errors import TiapError
from tiap.io import split_named
from tiap.scoring.measures import DEFAULT_K, default_measures, parse_measures

if TYPE_CHECKING:  # pragma: no cover
    from tiap.scoring.scores import Scores

__all__ = ["CONCURRENT_READ_BYTES", "RescoredFolder", "rescore_files"]

#: Runs up to this size are read while the qrels files are read in a second thread.
CONCURRENT_READ_BYTES = 512 * 2**20


@dataclasses.dataclass(frozen=True)
class RescoredFolder:
    """What :func:`rescore_files` wrote and found.

    ``scores``: the rescoring (a :class:`~tiap.scoring.scores.Scores`); ``out``: the folder;
    ``manifest``: its ``manifest.json``; ``run_warnings``: per system, its run reader's
    counted warnings (the manifest's ``systems.SYSTEM.run_warnings``); ``overlays``: per
    evidence overlay, its rows, the queries it changes and its rows for queries the queries
    file does not hold (the manifest's ``options.overlays``).

        >>> _ = Path("run.trec").write_text("q1 Q0 a 1 2.0 bm25\\n")
        >>> _ = Path("gold.qrels").write_text("q1 0 a 1\\n")
        >>> done = rescore_files(["run.trec"], "scored", qrels=["gold.qrels"], measures="RR@5")
        >>> done.out, done.scores.systems, done.overlay_findings()
        (PosixPath('scored'), ('bm25',), [])
    """

    scores: Scores
    out: Path
    manifest: Mapping[str, Any]
    run_warnings: Mapping[str, Any]
    overlays: Mapping[str, Any]

    def overlay_findings(self) -> list[tuple[str, str]]:
        """``(code, text)`` per overlay with rows for queries the queries file does not
        hold: they change nothing, and are counted in the manifest, never dropped in
        silence (``overlay_unknown_query``)."""
        where = self.out / "manifest.json"
        return [("overlay_unknown_query",
                 (f"overlay {name}: {r['not_in_queries_file']:,} of its {r['rows']:,} "
                  "queries are not in the queries file and change nothing (e.g. "
                  f"{', '.join(r['examples'][:3])}; counted in {where})"))
                for name, r in self.overlays.items() if r["not_in_queries_file"]]


def rescore_files(
    runs: str | Path | Sequence[str | Path],
    out: str | Path,
    *,
    items: str | Path | Sequence[str | Path] = (),
    queries: str | Path | None = None,
    qrels: str | Path | Sequence[str | Path] = (),
    targets: Sequence[str] | None = None,
    overlays: str | Sequence[str] = (),
    engine: str = "local",
    query_shard: int | None = None,
    tokenizer: str | None = None,
    k: int | None = None,
    measures: str | None = None,
    credit: str = "group",
    shared: bool = False,
    missing: str = "skip",
    dedup: str = "error",
    order: str = "rank",
    depth: int | None = None,
    parquet: bool = False,
    force: bool = False,
) -> RescoredFolder:
    """Rescore saved run files into the folder ``out``, as ``tiap rescore`` does.

    Args:
        runs: run files as ``[NAME=]PATH`` specs (:func:`tiap.runs.read_named_run`: a NAME
            renames a file's only system or picks one of several).
        out: the output folder, replaced whole (:func:`tiap.scoring.check_rescore_folder`
            is checked before anything is read; ``force`` replaces a folder that is not a
            rescoring's).
        items: store ``items.jsonl`` files; ``NAME=PATH`` pairs a store with the run called
            NAME, a plain PATH serves every other run (given once). Needs ``queries``.
        queries: the queries file. Needs ``items``.
        qrels: TREC qrels files as targets instead of ``items``/``queries``/``targets``/
            ``overlays``/``tokenizer``: ``NAME=PATH``, or a PATH named by its file (a qrels
            file of ``tiap targets`` by its target); names are unique.
        targets: target names or ``name=spec`` definitions (default: raw, source, canonical,
            and each of them under each overlay).
        overlays: evidence overlays, ``NAME=PATH`` (:func:`tiap.targets.read_overlays`).
        engine, query_shard: where the runs are scored (:func:`tiap.engine.make_engine`).
        k, measures: the cutoff of the default measures (:func:`default_measures`), or the
            measures; not both.
        tokenizer, credit, missing, depth: as :func:`tiap.rescore` (qrels:
            :func:`tiap.scoring.rescore_qrels`).
        dedup, order: the run readers' (:func:`tiap.runs.read_run`).
        shared, parquet: as :func:`tiap.scoring.write_rescore`.

    Every check of the arguments comes before any file is read: ``k`` with ``measures``,
    measures that do not parse, ``qrels`` with the options it replaces, neither ``qrels``
    nor ``items`` and ``queries``, an ``out`` that may not be replaced. Rows of an overlay
    for queries the queries file does not hold are counted
    (:meth:`RescoredFolder.overlay_findings`).

        >>> _ = Path("run.trec").write_text("q1 Q0 a 1 2.0 bm25\\nq1 Q0 b 2 1.0 bm25\\n")
        >>> _ = Path("gold.qrels").write_text("q1 0 b 1\\n")
        >>> done = rescore_files(["run.trec"], "scored", qrels=["gold.qrels"], measures="RR@10")
        >>> Path("scored/summary.csv").read_text().splitlines()[1]
        'bm25,gold,RR@10,1,1,0,0.5,0.5,0.5,0'
        >>> sorted(done.manifest["inputs"])
        ['qrels:gold', 'run:run.trec']
        >>> rescore_files(["run.trec"], "again", qrels=["gold.qrels"], k=10, measures="R@10")
        Traceback (most recent call last):
        tiap.errors.TiapError: give k or measures, not both (k 10 means measures nDCG@10,...)
    """
    from tiap.scoring.folder import check_rescore_folder, write_rescore

    run_specs, item_specs = _specs(runs), _specs(items)
    qrels_specs, overlay_specs = _specs(qrels), _specs(overlays)
    measures = _check_measures(measures, k)
    tlist = list(targets) if targets is not None else None
    if qrels_specs:
        given = [_opt(o) for o, v in (("items", item_specs), ("queries", queries),
                                      ("targets", targets), ("overlays", overlay_specs),
                                      ("tokenizer", tokenizer)) if v]
        if given:
            raise TiapError(f"{_opt('qrels')} replaces {', '.join(given)}: give one or the "
                            "other (each qrels file is a target)")
    else:
        absent = [_opt(o) for o, v in (("items", item_specs), ("queries", queries)) if not v]
        if absent:
            raise TiapError(f"missing {' and '.join(absent)}: rescoring needs a store and a "
                            f"queries file ({_opt('items')}, {_opt('queries')}), or qrels "
                            f"files ({_opt('qrels')})")
    if not run_specs:
        raise TiapError(f"no run given ({_opt('runs')})", code="invalid-value")
    check_rescore_folder(out, force=force)
    out = Path(out)

    overlay_report: dict[str, Any] = {}
    eng = make_engine(engine, query_shard=query_shard)
    read = {"dedup": dedup, "order": order}
    score = {"measures": measures, "credit": credit, "missing": missing, "depth": depth}
    with contextlib.closing(eng), use_engine(eng):
        if qrels_specs:
            result, inputs, runs_read = _rescore_qrels(run_specs, qrels_specs, read, score)
            judged: dict[str, None] = {}
            for s in result.systems:
                judged.update(dict.fromkeys(result.query_ids[s]))
            query_rows: list[Any] = [_JudgedQuery(q) for q in judged]
        else:
            from tiap.targets import read_overlays

            evidence, overlay_files = read_overlays(overlay_specs, _opt("overlays"))
            names = tlist or ["raw", "source", "canonical"]
            if tlist is None:  # each target under each overlay too
                names = [*names, *(f"{t}~{o}" for o in evidence for t in names)]
            result, inputs, runs_read = _rescore_lineage(
                run_specs, item_specs, Path(queries), names, read,  # type: ignore[arg-type]
                {**score, "overlays": evidence, "tokenizer": tokenizer})
            query_rows = list(result.queries)
            inputs.update({f"overlay:{o}": p for o, p in overlay_files.items()})
            overlay_report = _overlay_report(evidence, query_rows)
    opts: dict[str, Any] = {"missing": missing, "dedup": dedup, "order": order,
                            "depth": depth}
    if overlay_report:
        opts["overlays"] = overlay_report
    manifest = write_rescore(result, out, queries=query_rows, inputs=inputs, shared=shared,
                             parquet=parquet, options=opts, force=force)
    return RescoredFolder(scores=result, out=out, manifest=manifest,
                          run_warnings=_warnings_of(runs_read), overlays=overlay_report)


def _specs(value: Any) -> list[Any]:
    """A spec or a sequence of specs as a list (``None``: none)."""
    if value is None:
        return []
    if isinstance(value, str | Path):
        return [value]
    return list(value)


def _check_measures(measures: str | None, k: int | None) -> str:
    """The measures to compute: ``measures``, else ``k``'s default ones; they parse (an
    error names the parameter; nothing is read before)."""
    if measures is not None and k is not None:
        raise TiapError(f"give {_opt('k')} or {_opt('measures')}, not both ({_opt('k')} {k} "
                        f"means {_opt('measures')} {default_measures(k)})",
                        code="invalid-value")
    spec = measures if measures is not None else default_measures(k or DEFAULT_K)
    try:
        parse_measures(spec)
    except TiapError as exc:
        raise TiapError(problems=[dataclasses.replace(p, message=f"{_opt('measures')}: "
                                                      f"{p.message}", code="invalid-value")
                                  for p in exc.problems], code="invalid-value") from exc
    return spec


@dataclasses.dataclass(frozen=True)
class _JudgedQuery:
    """A query of the qrels path in ``queries.csv`` (no category or collection is known)."""

    query_id: str


def _warnings_of(runs: Any) -> dict[str, Any]:
    """system -> the manifest entries of its run reader's warnings (notes left out)."""
    from tiap.runs import warnings_json
    from tiap.scoring.rescore import NOTE_CODES

    return {r.system: warnings_json(w for w in r.warnings if w.code not in NOTE_CODES)
            for r in runs}


def _overlay_report(overlays: Mapping[str, Any], queries: Any) -> dict[str, Any]:
    """Per overlay, for the manifest: its rows, the queries whose evidence it changes, and
    its rows for queries the queries file does not hold, which change nothing."""
    own = {q.query_id: tuple(dict.fromkeys(q.evidence)) for q in queries}
    report: dict[str, Any] = {}
    for name, ev in overlays.items():
        stray = [q for q in ev if q not in own]
        changed = [q for q, e in ev.items() if q in own and set(e) != set(own[q])]
        report[name] = {"rows": len(ev), "changed_queries": len(changed),
                        "not_in_queries_file": len(stray), "examples": stray[:5]}
    return report


def _rescore_lineage(run: list[Any], items: list[Any], queries: Path, targets: list[str],
                     read: dict[str, Any], score: dict[str, Any],
                     ) -> tuple[Scores, dict[str, Path], list[Any]]:
    from tiap.runs import read_named_run
    from tiap.scoring.rescore import rescore

    stores: dict[str | None, Path] = {}
    inputs: dict[str, Path] = {"queries": queries}
    for spec in items:
        name, path = split_named(spec, _opt("items"))
        if name in stores:
            raise TiapError(f"two stores given for {name or 'every run'}", file=path)
        stores[name] = path
        inputs[f"items:{name}" if name else "items"] = path
    runs = []
    for spec in run:  # recorded under each system's name, so later steps find its run
        got = read_named_run(spec, **read, option=_opt("runs"))
        runs.extend(got)
        for r in got:
            inputs[f"run:{r.system}"] = split_named(spec, _opt("runs"))[1]
    return rescore(runs, queries, stores, targets=targets, **score), inputs, runs


def _read_qrels(specs: list[Any], option: str) -> dict[str, Any]:
    """``NAME=PATH`` (or a plain PATH, named by its file name) -> {name: Qrels}."""
    from tiap.runs import read_qrels, system_from_path
    from tiap.targets import qrels_store

    out = {}
    for spec in specs:
        name, path = split_named(spec, option)
        if name is None:
            name = system_from_path(path)
            store = qrels_store(path) if path.exists() else None
            if store is not None:  # TIAP's qrels/<store>.<target>.qrels: named by the target
                name = name.removeprefix(f"{store}.")
        if name in out:
            raise TiapError(f"two qrels files are named {name!r}; name them with NAME=PATH",
                            file=path)
        out[name] = read_qrels(path)
    return out


def _rescore_qrels(run: list[Any], qrels: list[Any], read: dict[str, Any],
                   score: dict[str, Any]) -> tuple[Scores, dict[str, Path], list[Any]]:
    from concurrent.futures import ThreadPoolExecutor

    from tiap.runs import read_named_run
    from tiap.scoring.rescore import rescore_qrels

    run_opt, qrels_opt = _opt("runs"), _opt("qrels")  # a worker thread has no options

    def read_runs() -> list[Any]:
        return [r for spec in run for r in read_named_run(spec, **read, columnar=True,
                                                          option=run_opt)]

    # the qrels files are read while the runs are (pyarrow parses without the GIL), unless
    # the runs are large: then one file at a time keeps the peak memory down
    paths = [split_named(r, run_opt)[1] for r in run]
    run_bytes = sum(p.stat().st_size for p in paths if p.is_file())
    if run_bytes <= CONCURRENT_READ_BYTES:
        with ThreadPoolExecutor(1) as pool:
            pending = pool.submit(_read_qrels, qrels, qrels_opt)
            runs = read_runs()
            judgments = pending.result()
    else:
        runs = read_runs()
        judgments = _read_qrels(qrels, qrels_opt)
    inputs: dict[str, Path] = {}
    for spec, name in zip(qrels, judgments, strict=True):
        inputs[f"qrels:{name}"] = split_named(spec, qrels_opt)[1]
    for spec in run:
        name, path = split_named(spec, run_opt)
        inputs[f"run:{name or path.name}"] = path
    return rescore_qrels(runs, judgments, **score), inputs, runs
