"""The audit's steps end to end: read the inputs, check them, compute, write the output with
its manifest, and return what was done.

One function per ``tiap audit`` command; the command parses its options, calls the function
and prints the result, and ``tiap audit-run`` calls the same functions in this process:

- :func:`find_cases` (``tiap audit cases``): the contested credits of a rescoring, written
  to a cases file with a ``.manifest.json`` beside it;
- :func:`judge_cases` (``tiap audit judge``): every case judged by every judge, with the
  verdict cache, an optional local model server and an engine, into an output folder
  replaced whole;
- :func:`graded_audit` (``tiap audit graded``): labels as graded relevance;
- :func:`judge_agreement` (``tiap audit agreement``): agreement between judges and with
  human labels;
- :func:`import_paper` (``tiap audit import-paper``): the paper's audit files as cases and
  labels.

The lower-level pieces they combine (:func:`~tiap.audit.cases.contested_cases`,
:func:`~tiap.audit.run.run_judges`, :func:`~tiap.audit.graded.graded_rescore`,
:func:`~tiap.audit.agreement.agreement`) work in memory and write nothing.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tiap.audit.agreement import AGREEMENT_COMMAND, AgreementReport, agreement, write_agreement
from tiap.audit.cases import (
    RescoreDir,
    contested_cases,
    load_rescore_inputs,
    measure_cutoff,
    read_cases,
    sample_cases,
    strata_counts,
    write_cases,
)
from tiap.audit.graded import (
    GRADED_COMMAND,
    SUPPORT_POLICIES,
    GradedResult,
    graded_rescore,
    item_relevance,
    write_graded,
)
from tiap.audit.human import read_human_labels
from tiap.audit.judges import make_judge, parse_judge_spec
from tiap.audit.labels import LabelRecord, read_labels, write_labels
from tiap.audit.paper import read_paper_cases, read_paper_labels
from tiap.audit.run import JudgeStats, VerdictCache, run_judges
from tiap.errors import TiapError
from tiap.io import check_output_folder, output_folder, split_named
from tiap.provenance import Manifest, input_entry

#: The manifest ``command`` of :func:`judge_cases` (``tiap audit judge``).
JUDGE_COMMAND = "audit judge"
#: The manifest ``command`` of :func:`find_cases` (``tiap audit cases``).
CASES_COMMAND = "audit cases"
#: The manifest ``command`` of :func:`import_paper` (``tiap audit import-paper``).
IMPORT_PAPER_COMMAND = "audit import-paper"

#: ``progress(judge, done, total)``: called as verdicts come in.
Progress = Callable[[str, int, int], None]
#: ``log(message)``: a line for the user (a local model server's start and stop).
Log = Callable[[str], None]


def _write_sidecar(path: Path, man: Manifest) -> Path:
    """``PATH.manifest.json`` beside an output file."""
    return man.write(path.with_name(path.name + ".manifest.json"))


def _option_measure(option: str, measure: str) -> Any:
    """The measure an option gives; a bad one is an error naming the option."""
    from tiap.scoring.measures import parse_measure

    try:
        return parse_measure(measure)
    except TiapError as exc:
        p = exc.problems[0]
        raise TiapError(f"{option}: {p.message}", code=p.code) from None


# ------------------------------------------------------------------------------------------
# cases


@dataclass(frozen=True)
class CasesResult:
    """What :func:`find_cases` wrote: ``written`` of the ``found`` contested credits, by
    stratum (:func:`~tiap.audit.cases.strata_counts`), and the sidecar manifest."""

    out: Path
    found: int
    written: int
    strata: list[dict[str, Any]]
    manifest: dict[str, Any]


def find_cases(
    rescore_dir: str | Path,
    out: str | Path,
    *,
    items: Sequence[str] = (),
    queries: str | Path | None = None,
    runs: Sequence[str] = (),
    targets: Sequence[str] = ("source", "canonical"),
    raw: str = "raw",
    measure: str | None = None,
    k: int | None = None,
    sample: str = "all",
    per_stratum: int = 10,
    seed: int = 0,
    dataset: str | None = None,
    each: bool = False,
) -> CasesResult:
    """The contested credits of the rescoring in ``rescore_dir`` (retrieved items a relaxed
    target credits and Raw does not), written to ``out`` (cases.jsonl) with
    ``out.manifest.json`` beside it.

    ``items`` and ``runs`` are ``[NAME=]PATH`` specs (default: the stores and runs the
    rescoring's manifest names, checked against their recorded sha256); ``measure`` (or
    ``k``: nDCG@k, not both) is the measure whose values the cases carry and whose cutoff
    bounds the walk (default: the rescoring's headline measure). ``each``: one case per
    contested credit instead of one per (query, system, target). ``sample="stratified"``
    draws ``per_stratum`` cases per stratum with ``seed``.
    """
    from tiap.scoring.rescore import store_lineages

    if measure is not None and k is not None:
        raise TiapError(f"give --measure or --k, not both (--k {k} means --measure nDCG@{k})",
                        code="invalid-value")
    opt = "--k" if k is not None else "--measure"
    if k is not None:
        measure = f"nDCG@{k}"
    out = Path(out)
    rd = RescoreDir.open(rescore_dir)
    m = str(_option_measure(opt, measure)) if measure else rd.default_measure()
    cut = measure_cutoff(m)
    if measure is not None and m not in rd.measures:
        given = f"--k: {m!r}" if opt == "--k" else f"--measure {m!r}"
        raise TiapError(f"{given} is not a measure of the rescoring in {rd.path} "
                        f"(its measures: {', '.join(rd.measures) or 'none'})",
                        code="invalid-value")
    if cut is None:
        raise TiapError(f"the measure {m!r} has no cutoff; pass e.g. --measure nDCG@60")
    stores, qs, loaded, inputs = load_rescore_inputs(rd, items=list(items), queries=queries,
                                                     runs=list(runs))
    tlist = list(targets)
    found = contested_cases(loaded, qs, stores, targets=tlist, raw_target=raw,
                            target_defs=rd.target_defs or None, k=cut, credit=rd.credit,
                            values=rd.values(m), measure=m, dataset=dataset, each=each)
    chosen = sample_cases(found, sample, per_stratum=per_stratum, seed=seed)  # type: ignore[arg-type]
    n = write_cases(out, chosen)
    strata = strata_counts(chosen)
    man = Manifest.new(
        CASES_COMMAND,
        inputs={"rescore_manifest": input_entry(rd.path / "manifest.json"),
                "per_query": input_entry(rd.path / "per_query.csv"),
                **{k2: input_entry(p) for k2, p in inputs.items()}},
        options={"targets": tlist, "raw": raw, "measure": m, "k": cut,
                 "credit": rd.credit, "each": each,
                 "sample": sample, "per_stratum": per_stratum if sample != "all" else None,
                 "seed": seed if sample != "all" else None},
        extra={"stores": {s: name for s, (name, _) in store_lineages(loaded, stores).items()},
               "counts": {"contested": len(found), "written": n, "strata": strata}})
    _write_sidecar(out, man)
    return CasesResult(out, len(found), n, strata, man.to_json())


# ------------------------------------------------------------------------------------------
# judge


@dataclass(frozen=True)
class JudgeResult:
    """What :func:`judge_cases` wrote into ``out``: the verdicts of ``n_cases`` cases
    (``records``, as in labels.jsonl), each judge's counts (``stats``) and the manifest."""

    out: Path
    n_cases: int
    records: list[LabelRecord]
    stats: list[JudgeStats]
    manifest: dict[str, Any] = field(repr=False)

    def label_counts(self, judge: str) -> dict[str, int]:
        """``{label: count}`` of one judge's verdicts, unscored ones included."""
        recs = [r for r in self.records if r.judge == judge]
        return {lab: sum(1 for r in recs if r.label == lab)
                for lab in ("supports", "partial", "does_not_support", "unscored")}


def judge_cases(
    cases: str | Path,
    out: str | Path,
    judges: Sequence[str],
    *,
    model: str | None = None,
    base_url: str | None = None,
    api_key_env: str | None = None,
    concurrency: int | None = None,
    max_retries: int | None = None,
    timeout: float | None = None,
    backoff: float | None = None,
    max_invalid: float | None = None,
    response_format: str | None = None,
    local_model: str | None = None,
    local_port: int = 8089,
    cache: str | Path | None = None,
    retry_unscored: bool = False,
    limit: int | None = None,
    engine: str = "local",
    force: bool = False,
    progress: Progress | None = None,
    log: Log | None = None,
) -> JudgeResult:
    """Judge every case of ``cases`` (cases.jsonl) with every judge spec of ``judges``
    (``lexical``, ``embedding``, ``openai`` or ``NAME(key=value, ...)``); writes
    ``out/labels.jsonl`` and ``out/manifest.json``, replacing ``out`` whole (a foreign
    folder is refused unless ``force``).

    The verdict cache (``cache``, default ``out/cache.sqlite``, kept across the swap) holds
    every finished verdict: a rerun asks only for the ones it lacks. ``local_model`` serves
    that model on 127.0.0.1:``local_port`` for the run and gives it to the openai judges.
    The endpoint options (``model`` ... ``response_format``) are the defaults of openai
    judges that do not set them. ``engine`` is where the requests run (``local``, ``ray``,
    ``ray://HOST:PORT``).
    """
    from tiap.memory.build import cache_entries

    out = Path(out)
    cases = Path(cases)
    cache_path = Path(cache) if cache is not None else out / "cache.sqlite"
    keep = cache_entries(cache_path, out)  # used in place, kept across the swap
    check_output_folder(out, JUDGE_COMMAND, force=force, keep=keep)  # before any request
    all_cases = read_cases(cases)
    if not all_cases:
        raise TiapError("no cases in the file: nothing to judge (did `tiap audit cases` find "
                        "no contested credit?)", file=cases)
    if limit is not None:
        all_cases = all_cases[:limit]
    stack = contextlib.ExitStack()
    local: dict[str, Any] | None = None
    if local_model is not None:
        from tiap.llm.local import CLIENT_DEFAULTS, LocalServer, local_endpoint

        _, served = local_endpoint(local_model, local_port, base_url=base_url, model=model)
        if not any(parse_judge_spec(j)[0] == "openai" for j in judges):
            raise TiapError("--local-model is for openai judges; none of the --judge "
                            "specs is one", code="usage")
        for spec in judges:  # an openai judge aimed elsewhere would not judge with the model
            name, kw = parse_judge_spec(spec)
            if name != "openai":
                continue
            if "base_url" in kw:
                raise TiapError(f"judge {spec!r} names its own base_url, so it would not use "
                                f"the --local-model server: drop one of the two",
                                code="usage")
            if kw.get("model", served) != served:
                raise TiapError(f"judge {spec!r} asks for model {kw['model']!r}, but "
                                f"--local-model serves {served!r}", code="usage")

        srv = stack.enter_context(LocalServer(local_model, port=local_port,
                                              log=log or (lambda m: None)))
        local = srv.settings()
        base_url, model = srv.base_url, model or srv.model
        concurrency = concurrency or CLIENT_DEFAULTS["concurrency"]
        timeout = timeout or CLIENT_DEFAULTS["timeout"]
    defaults = {"model": model, "base_url": base_url, "api_key_env": api_key_env,
                "concurrency": concurrency, "max_retries": max_retries, "timeout": timeout,
                "backoff": backoff, "max_invalid": max_invalid,
                "response_format": response_format}
    from tiap.engine import make_engine, use_engine

    with stack:
        eng = stack.enter_context(contextlib.closing(make_engine(engine)))
        with use_engine(eng):
            return _judge_run(cases, out, judges, defaults, all_cases, cache_path, keep,
                              retry_unscored, limit, force, local, progress)


def _judge_run(cases: Path, out: Path, specs: Sequence[str], defaults: dict[str, Any],
               all_cases: list[Any], cache_path: Path, keep: Any, retry_unscored: bool,
               limit: int | None, force: bool, local: dict[str, Any] | None,
               progress: Progress | None) -> JudgeResult:
    """The judging of :func:`judge_cases`, with the endpoints up."""
    judges = [make_judge(spec, defaults) for spec in specs]
    endpoint_only = [f for f, key in (("--max-invalid", "max_invalid"),
                                      ("--response-format", "response_format"))
                     if defaults[key] is not None]
    if endpoint_only and not any(j.endpoint for j in judges):
        for j in judges:
            j.close()
        raise TiapError(f"{' and '.join(endpoint_only)} "
                        f"{'are' if len(endpoint_only) > 1 else 'is'} for judges that call an "
                        f"endpoint (openai); none of {', '.join(j.name for j in judges)} does",
                        code="usage")
    try:
        with VerdictCache(cache_path) as vc:
            result = run_judges(all_cases, judges, vc, retry_unscored=retry_unscored,
                                progress=progress)
    finally:
        for j in judges:
            j.close()
    man = Manifest.new(JUDGE_COMMAND, inputs={"cases": input_entry(cases)},
                       options={"limit": limit, "retry_unscored": retry_unscored,
                                "cache": str(cache_path), "local_model": local},
                       extra={"judges": list(result.judges),
                              "counts": [s.to_json() for s in result.stats]},
                       outputs=["labels.jsonl"])
    with output_folder(out, JUDGE_COMMAND, force=force, keep=keep) as tmp:
        write_labels(tmp / "labels.jsonl", result.records)
        man.write(tmp / "manifest.json")
    return JudgeResult(out, len(all_cases), list(result.records), list(result.stats),
                       man.to_json())


# ------------------------------------------------------------------------------------------
# agreement


@dataclass(frozen=True)
class AgreementResult:
    """What :func:`judge_agreement` wrote into ``out``: the report and the manifest."""

    out: Path
    report: AgreementReport
    manifest: dict[str, Any] = field(repr=False)


def judge_agreement(
    labels: Sequence[str | Path],
    out: str | Path,
    *,
    human: Sequence[str] = (),
    tie_rule: str = "conservative",
    judges: Sequence[str] | None = None,
    force: bool = False,
) -> AgreementResult:
    """Agreement between the judges of ``labels`` (labels.jsonl files) and with ``human``
    labels (``[NAME=]CSV`` specs), written into ``out`` (replaced whole; a foreign folder is
    refused unless ``force``). ``judges``: only these, in this order."""
    out = Path(out)
    named = [split_named(spec, "--human") for spec in human]
    check_output_folder(out, AGREEMENT_COMMAND, force=force)  # before anything is read
    paths = [Path(p) for p in labels]
    recs = read_labels(paths)
    hum = []
    inputs: dict[str, Path] = {f"labels:{i}": p for i, p in enumerate(paths)}
    for name, path in named:
        hum.extend(read_human_labels(path, name))
        inputs[f"human:{name or path.name}"] = path
    rep = agreement(recs, human=hum, tie_rule=tie_rule,  # type: ignore[arg-type]
                    raters=None if judges is None else list(judges))
    man = write_agreement(rep, out, inputs=inputs, force=force)
    return AgreementResult(out, rep, man)


# ------------------------------------------------------------------------------------------
# graded


@dataclass(frozen=True)
class GradedAudit:
    """What :func:`graded_audit` wrote into ``out``: the result and the manifest."""

    out: Path
    result: GradedResult
    manifest: dict[str, Any] = field(repr=False)


def graded_audit(
    rescore_dir: str | Path,
    labels: Sequence[str | Path],
    out: str | Path,
    *,
    items: Sequence[str] = (),
    queries: str | Path | None = None,
    runs: Sequence[str] = (),
    targets: Sequence[str] = ("source", "canonical"),
    raw: str = "raw",
    k: int | None = None,
    unjudged: str | None = None,
    judges: Sequence[str] | None = None,
    tie_rule: str = "conservative",
    force: bool = False,
) -> GradedAudit:
    """The labels of ``labels`` (labels.jsonl files) as graded relevance on the rescoring in
    ``rescore_dir``: how much of each relaxed target's nDCG@``k`` gain over Raw survives
    them, and composed support at the same k, written into ``out`` (replaced whole).

    ``items`` and ``runs`` are ``[NAME=]PATH`` specs (default: the rescoring's); ``k``
    defaults to the cutoff of the rescoring's headline measure; ``unjudged`` is keep,
    partial, drop or unknown (default: keep for nDCG, unknown for composed support);
    ``judges``: use only these judges' labels."""
    from tiap.scoring.rescore import store_lineages

    if unjudged is not None and unjudged not in SUPPORT_POLICIES:
        raise TiapError(f"--unjudged {unjudged!r}: expected one of "
                        f"{', '.join(SUPPORT_POLICIES)}", code="invalid-value")
    out = Path(out)
    tlist = list(targets)
    check_output_folder(out, GRADED_COMMAND, force=force)
    rd = RescoreDir.open(rescore_dir)
    cut = (_option_measure("--k", f"nDCG@{k}").cutoff if k is not None
           else measure_cutoff(rd.default_measure()))
    if cut is None:
        raise TiapError("pass --k: the rescoring's nDCG measure has no cutoff")
    stores, qs, loaded, inputs = load_rescore_inputs(rd, items=list(items), queries=queries,
                                                     runs=list(runs))
    for r in loaded:
        if r.system not in stores and None not in stores:
            raise TiapError(f"no store for run {r.system!r}: pass --items {r.system}=PATH")
    names = {name for name, _ in store_lineages(loaded, stores).values()}
    paths = [Path(p) for p in labels]
    rel = item_relevance(read_labels(paths), tie_rule=tie_rule,  # type: ignore[arg-type]
                         judges=None if judges is None else list(judges), stores=names)
    result = graded_rescore(loaded, qs, stores, rel, targets=tlist, raw_target=raw,
                            target_defs=rd.target_defs or None, k=cut,
                            unjudged=unjudged)  # type: ignore[arg-type]
    for i, p in enumerate(paths):
        inputs[f"labels:{i}"] = p
    per_store = {n: sum(1 for key in rel if key[0] == n) for n in sorted(names)}
    man = write_graded(result, out, inputs=inputs,
                       options={"targets": tlist, "raw": raw,
                                "judges": None if judges is None else ",".join(judges),
                                "tie_rule": tie_rule, "labelled_items": per_store,
                                "labelled_items_of_other_stores": len(rel) - sum(
                                    per_store.values())}, force=force)
    return GradedAudit(out, result, man)


# ------------------------------------------------------------------------------------------
# the paper's files


@dataclass(frozen=True)
class PaperImport:
    """What :func:`import_paper` wrote: ``n_cases`` cases to ``cases_out`` and ``labels``
    to ``out`` (each None when not asked for)."""

    cases_out: Path | None
    n_cases: int | None
    out: Path | None
    labels: list[LabelRecord] | None


def import_paper(csv_path: str | Path, *, out: str | Path | None = None,
                 cases_out: str | Path | None = None) -> PaperImport:
    """The paper's audit CSV (judged_cases.csv or an ``*_audit_cases.csv``) as TIAP cases
    (``cases_out``) and labels (``out``, judged_cases.csv only), each with a
    ``.manifest.json`` beside it."""
    csv_path = Path(csv_path)
    if out is None and cases_out is None:
        raise TiapError("nothing to write: pass --out LABELS.jsonl and/or --cases-out "
                        "CASES.jsonl")
    n: int | None = None
    if cases_out is not None:
        cases_out = Path(cases_out)
        n = write_cases(cases_out, read_paper_cases(csv_path))
        _write_sidecar(cases_out, Manifest.new(IMPORT_PAPER_COMMAND,
                                               inputs={"csv": input_entry(csv_path)}))
    labs: list[LabelRecord] | None = None
    if out is not None:
        out = Path(out)
        labs = list(read_paper_labels(csv_path))
        write_labels(out, labs)
        _write_sidecar(out, Manifest.new(IMPORT_PAPER_COMMAND,
                                         inputs={"csv": input_entry(csv_path)}))
    return PaperImport(cases_out, n, out, labs)
