"""The main job: build stores, retrieve, rescore (and, where installed, the later stages).

A pipeline is a small TOML file (``configs/*.toml``)::

    name = "locomo"
    dataset = "locomo"
    retrievers = ["bm25"]             # bm25, dense, hybrid
    k = 60
    targets = ["raw", "source", "canonical"]
    measures = ["nDCG@20", "nDCG@40", "nDCG@60", "R@60", "RR@60", "Success@60", "Success@1"]
    credit = "group"

    [[stores]]                        # one per store design
    name = "f1"
    parser = "heuristic"
    max_facts = 1

    [[stores]]
    name = "native"
    parser = "native"

    [design]                          # optional: configurations compared in Stage III
    density = ["f1", "f5", "f8"]

    sensitivity = true                # Stage III and the HTML report (default true)
    seed = 0                          # seed of the sign-flip tests
    resamples = 10000                 # random sign vectors per shared subset
    alpha = 0.05                      # family-wise level
    correction = "holm"               # holm, bh or none
    min_effect = 0.0                  # smallest gap (measure units) a headline flip needs

Every step writes into ``OUT/<name>/`` and records a fingerprint of what it was asked to do
(``.steps/<step>.json``: the step's spec, TIAP's version and a hash of its source files); a
rerun skips a step whose fingerprint and outputs are unchanged, so an interrupted run
resumes without repeating finished work (the steps themselves write atomically, and
retrieval also resumes inside a step, collection by collection).
"""

from __future__ import annotations

import functools
import hashlib
import json
import time
import tomllib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tiap.errors import TiapError
from tiap.io import atomic_write

Progress = Callable[[Iterable[Any], str, "int | None"], Iterable[Any]]
Log = Callable[[str], None]


@dataclass(frozen=True)
class StoreSpec:
    name: str
    parser: str
    args: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PipelineConfig:
    name: str
    dataset: str
    stores: tuple[StoreSpec, ...]
    retrievers: tuple[str, ...] = ("bm25",)
    k: int = 60
    targets: tuple[str, ...] = ("raw", "source", "canonical")
    measures: tuple[str, ...] = ("nDCG@20", "nDCG@40", "nDCG@60", "R@60", "RR@60",
                                 "Success@60", "Success@1")
    credit: str = "group"
    design: dict[str, tuple[str, ...]] = field(default_factory=dict)
    collections: tuple[str, ...] = ()  # empty: all
    sensitivity: bool = True
    seed: int = 0
    resamples: int = 10_000
    alpha: float = 0.05
    correction: str = "holm"
    min_effect: float = 0.0
    source: str = ""

    def systems(self) -> list[tuple[str, StoreSpec, str]]:
        """``(system name, store, retriever)`` for every store x retriever."""
        return [(f"{s.name}-{r}", s, r) for s in self.stores for r in self.retrievers]


_KNOWN_KEYS = {"name", "dataset", "stores", "retrievers", "k", "targets", "measures", "credit",
               "design", "collections", "sensitivity", "seed", "resamples", "alpha",
               "correction", "min_effect"}


def load_config(path: str | Path, *, retrievers: Sequence[str] | None = None,
                collections: Sequence[str] | None = None) -> PipelineConfig:
    """Read and check a pipeline TOML file; ``retrievers``/``collections`` override it."""
    p = Path(path)
    if not p.is_file():
        raise TiapError("pipeline config not found", file=p)
    try:
        raw = tomllib.loads(p.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise TiapError(f"invalid TOML: {exc}", file=p) from exc
    unknown = sorted(set(raw) - _KNOWN_KEYS)
    if unknown:
        raise TiapError(f"unknown keys {', '.join(unknown)}; known: {', '.join(sorted(_KNOWN_KEYS))}",
                        file=p)
    for key in ("name", "dataset", "stores"):
        if key not in raw:
            raise TiapError(f"missing key {key!r}", file=p)
    stores = []
    for i, s in enumerate(raw["stores"]):
        if not isinstance(s, dict) or "name" not in s or "parser" not in s:
            raise TiapError(f"stores[{i}] needs a name and a parser", file=p)
        args = {k: v for k, v in s.items() if k not in ("name", "parser")}
        stores.append(StoreSpec(str(s["name"]), str(s["parser"]), args))
    names = [s.name for s in stores]
    if len(set(names)) != len(names):
        raise TiapError("two stores have the same name", file=p)
    design = {str(k): tuple(str(x) for x in v) for k, v in (raw.get("design") or {}).items()}
    for dname, members in design.items():
        missing = [m for m in members if m not in names]
        if missing:
            raise TiapError(f"design {dname!r} names unknown stores: {', '.join(missing)}", file=p)
    cfg = PipelineConfig(
        name=str(raw["name"]),
        dataset=str(raw["dataset"]),
        stores=tuple(stores),
        retrievers=tuple(retrievers or raw.get("retrievers") or ("bm25",)),
        k=int(raw.get("k", 60)),
        targets=tuple(raw.get("targets") or ("raw", "source", "canonical")),
        measures=tuple(raw.get("measures") or PipelineConfig.measures),
        credit=str(raw.get("credit", "group")),
        design=design,
        collections=tuple(collections or raw.get("collections") or ()),
        sensitivity=bool(raw.get("sensitivity", True)),
        seed=int(raw.get("seed", 0)),
        resamples=int(raw.get("resamples", 10_000)),
        alpha=_number(raw, "alpha", 0.05, p),
        correction=str(raw.get("correction", "holm")).lower(),
        min_effect=_number(raw, "min_effect", 0.0, p),
        source=str(p),
    )
    from tiap.sensitivity.stats import CORRECTIONS

    if cfg.correction not in CORRECTIONS:
        raise TiapError(f"correction must be one of {', '.join(CORRECTIONS)}, got "
                        f"{cfg.correction!r}", file=p)
    if not 0 < cfg.alpha < 1:
        raise TiapError(f"alpha must be between 0 and 1, got {cfg.alpha!r}", file=p)
    if cfg.min_effect < 0:
        raise TiapError(f"min_effect must be a non-negative number, got {cfg.min_effect!r}",
                        file=p)
    return cfg


def _number(raw: dict[str, Any], key: str, default: float, path: Path) -> float:
    v = raw.get(key, default)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TiapError(f"{key} must be a number, got {v!r}", file=path)
    return float(v)


@functools.cache
def _code_identity() -> str:
    """The sha256 of TIAP's own source files: a step run by changed code is run again (a
    version number does not change while one develops a parser)."""
    import tiap

    root = Path(tiap.__file__).parent
    h = hashlib.sha256()
    for f in sorted(root.rglob("*.py")):
        h.update(f.relative_to(root).as_posix().encode())
        h.update(b"\0")
        h.update(f.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def _fingerprint(spec: dict[str, Any]) -> str:
    """A step's identity: its spec, the TIAP version and the code that ran it."""
    from tiap import __version__

    blob = json.dumps({"spec": spec, "tiap": __version__, "code": _code_identity()},
                      sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


class _Steps:
    """Fingerprints of finished steps in ``<out>/.steps``."""

    def __init__(self, out: Path) -> None:
        self.dir = out / ".steps"

    def done(self, step: str, spec: dict[str, Any], outputs: Sequence[Path]) -> bool:
        f = self.dir / f"{step}.json"
        if not f.exists() or not all(o.exists() for o in outputs):
            return False
        try:
            return json.loads(f.read_text())["fingerprint"] == _fingerprint(spec)
        except (ValueError, KeyError):
            return False

    def mark(self, step: str, spec: dict[str, Any], seconds: float) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        with atomic_write(self.dir / f"{step}.json") as fh:
            json.dump({"fingerprint": _fingerprint(spec), "spec": spec,
                       "seconds": round(seconds, 3)}, fh, default=str, indent=2)


@dataclass
class PipelineResult:
    out: Path
    rescore_dir: Path
    timings: dict[str, float]
    skipped: list[str]
    result: Any = None  # the RescoreResult
    sensitivity_dir: Path | None = None
    report_dir: Path | None = None


def run_pipeline(
    cfg: PipelineConfig,
    out: str | Path,
    *,
    data: str | Path | None = None,
    progress: Progress | None = None,
    log: Log = lambda s: None,
    force: bool = False,
) -> PipelineResult:
    """Build every store, retrieve with every retriever, rescore every run under every target."""
    from tiap.datasets import DataSource, load
    from tiap.datasets.files import manifest
    from tiap.datasets.queryfile import read_queries, write_queries
    from tiap.memory import build_store
    from tiap.memory.store import read_store
    from tiap.retrieval import make_retriever, retrieve
    from tiap.scoring.output import write_rescore
    from tiap.scoring.rescore import rescore
    from tiap.traces.runs import read_run

    root = Path(out) / cfg.name
    root.mkdir(parents=True, exist_ok=True)
    steps = _Steps(root)
    timings: dict[str, float] = {}
    skipped: list[str] = []
    ds = load(cfg.dataset, source=DataSource(data))
    ds.verify()
    pinned = manifest(ds.folder)
    ds_sha = _fingerprint({p: pinned[p].stored_sha256 for p in ds.file_paths()})

    def step(name: str, spec: dict[str, Any], outputs: Sequence[Path], fn: Callable[[], None]) -> None:
        if not force and steps.done(name, spec, outputs):
            skipped.append(name)
            log(f"{name}: up to date, skipped")
            return
        t0 = time.monotonic()
        fn()
        timings[name] = time.monotonic() - t0
        steps.mark(name, spec, timings[name])
        log(f"{name}: {timings[name]:.1f} s")

    # 1. the queries, as the dataset defines them
    qpath = root / "queries.jsonl"
    wanted = set(cfg.collections)

    def write_q() -> None:
        qs = [q for q in ds.queries_iter() if not wanted or q.collection_id in wanted]
        if not qs:
            raise TiapError(f"no query in collections {', '.join(sorted(wanted))} of {cfg.dataset}")
        write_queries(qpath, qs)

    step("queries", {"dataset": cfg.dataset, "files": ds_sha, "collections": sorted(wanted)},
         [qpath], write_q)

    # 2. stores
    for s in cfg.stores:
        sdir = root / "stores" / s.name
        spec = {"dataset": cfg.dataset, "parser": s.parser, "args": s.args,
                "collections": sorted(wanted)}
        step(f"store-{s.name}", spec, [sdir / "items.jsonl"],
             lambda s=s, sdir=sdir: build_store(
                 ds, s.parser, sdir, parser_args=dict(s.args),
                 collections=list(cfg.collections) or None, progress=progress, store=s.name))

    # 3. retrieval
    for system, s, r in cfg.systems():
        trace = root / "runs" / f"{system}.jsonl"
        spec = {"store": _fingerprint_file(root / "stores" / s.name / "items.jsonl"),
                "queries": _fingerprint_file(qpath), "retriever": r, "k": cfg.k}

        def run_retrieval(s: StoreSpec = s, r: str = r, system: str = system,
                          trace: Path = trace) -> None:
            retriever = make_retriever(r)
            retrieve(root / "stores" / s.name, qpath, retriever, trace, depth=cfg.k,
                     system=system)
            for part in (retriever, *getattr(retriever, "components", ())):
                if hasattr(part, "cache_hits"):  # dense: how the embedding cache served
                    log(f"{system}: embeddings {part.cache_hits:,} cached, "
                        f"{part.encoded:,} encoded")

        step(f"retrieve-{system}", spec, [trace], run_retrieval)

    # 4. rescoring, every run under every target
    rdir = root / "rescore"
    qs = read_queries(qpath)
    stores = {}
    runs = []
    loaded: dict[str, Any] = {}
    preloaded: dict[Path, Any] = {qpath.resolve(): qs}  # for Stage III's answer alignment
    for system, s, _ in cfg.systems():
        ipath, rpath = root / "stores" / s.name / "items.jsonl", root / "runs" / f"{system}.jsonl"
        if s.name not in loaded:
            loaded[s.name] = read_store(ipath)
            preloaded[ipath.resolve()] = loaded[s.name]
        stores[system] = loaded[s.name]
        got = read_run(rpath, system=system)
        preloaded[rpath.resolve()] = got
        runs.extend(got)
    t0 = time.monotonic()
    result = rescore(runs, qs, stores, targets=cfg.targets, measures=cfg.measures,
                     credit=cfg.credit)
    inputs: dict[str, Path] = {"queries": qpath}
    for system, s, _ in cfg.systems():
        inputs[f"items:{system}"] = root / "stores" / s.name / "items.jsonl"
        inputs[f"run:{system}"] = root / "runs" / f"{system}.jsonl"
    write_rescore(result, rdir, queries=qs, inputs=inputs,
                  options={"pipeline": cfg.source, "design": {k: list(v) for k, v in cfg.design.items()}})
    timings["rescore"] = time.monotonic() - t0
    log(f"rescore: {timings['rescore']:.1f} s")

    # 5. Stage III and the report (plots need the `report` extra)
    sdir, report_dir = root / "sensitivity", root / "report"
    if cfg.sensitivity:
        from tiap.sensitivity import analyze, write_sensitivity

        t0 = time.monotonic()
        configs = {f"{d}-{r}": [f"{m}-{r}" for m in members]
                   for d, members in cfg.design.items() for r in cfg.retrievers}
        sens = analyze([(cfg.name, rdir)], seed=cfg.seed, resamples=cfg.resamples,
                       alpha=cfg.alpha, correction=cfg.correction, min_effect=cfg.min_effect,
                       configs=configs or None, preloaded=preloaded)
        write_sensitivity(sens, sdir)
        timings["sensitivity"] = time.monotonic() - t0
        log(f"sensitivity: {timings['sensitivity']:.1f} s")
        from tiap.errors import MissingExtraError

        t0 = time.monotonic()
        try:
            from tiap.report import build_report

            build_report([sdir], report_dir)
            timings["report"] = time.monotonic() - t0
            log(f"report: {timings['report']:.1f} s -> {report_dir / 'index.html'}")
        except MissingExtraError as exc:
            log(f"report skipped: {exc}")
    return PipelineResult(root, rdir, timings, skipped, result,
                          sdir if cfg.sensitivity else None,
                          report_dir if (report_dir / "index.html").exists() else None)


def _fingerprint_file(path: Path) -> str:
    """A cheap identity of a file for step fingerprints: size and mtime, or 'missing'."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return "missing"
    return f"{st.st_size}:{st.st_mtime_ns}"
