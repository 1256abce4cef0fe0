"""The audit's steps end to end: read the inputs, check them, compute, write the output with
its manifest, and return what was done.

One function per ``tiap audit`` command; the command parses its options, calls the function
and prints the result, and ``tiap audit-run`` calls the same functions in this process:

- :func:`find_cases` (``tiap audit cases``): the contested credits of a rescoring, written
  to a cases file with a ``.manifest.json`` beside it;
- :func:`judge_cases` (``tiap audit judge``): every case judged by every judge, with the
  verdict cache, an optional local model server and an engine, into an output folder
  replaced whole; the judging itself is :func:`judge` (``tiap.judge``), which works in
  memory and returns the labels;
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
import math
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tiap.audit.agreement import AGREEMENT_COMMAND, AgreementReport, agreement, write_agreement
from tiap.audit.cases import (
    Case,
    RescoreDir,
    RescoreInputs,
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
from tiap.audit.labels import LabelRecord, label_rows, read_labels, write_labels
from tiap.audit.paper import read_paper_cases, read_paper_labels
from tiap.audit.run import JudgeRun, JudgeStats, VerdictCache, run_judges
from tiap.engine import make_engine, use_engine
from tiap.errors import TiapError
from tiap.io import check_output_folder, output_folder, sha256_file, split_named, write_jsonl
from tiap.llm.local import CLIENT_DEFAULTS, LocalServer, local_endpoint
from tiap.provenance import Manifest, input_entry
from tiap.scoring.measures import parse_measure

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
    stratum (:func:`~tiap.audit.cases.strata_counts`), and the sidecar manifest; ``cases``
    and ``sha256``: the cases written and the file's sha256 (:func:`judge_cases`, given
    this result, judges them without reading the file back while it is unchanged)."""

    out: Path
    found: int
    written: int
    strata: list[dict[str, Any]]
    manifest: dict[str, Any]
    cases: tuple[Case, ...] = field(default=(), repr=False, compare=False)
    sha256: str | None = field(default=None, repr=False)


def _inputs(shared: RescoreInputs | None, rd: RescoreDir, items: Sequence[str],
            queries: str | Path | None, runs: Sequence[str]
            ) -> tuple[dict[str | None, Any], list[Any], list[Any], dict[str, Path]]:
    """The stores, queries, runs and input paths of rescoring ``rd``: ``shared``'s, else
    read (:func:`tiap.audit.cases.load_rescore_inputs`)."""
    if shared is None:
        return load_rescore_inputs(rd, items=list(items), queries=queries, runs=list(runs))
    return shared.stores, shared.queries, shared.runs, dict(shared.inputs)


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
    preloaded: RescoreInputs | None = None,
) -> CasesResult:
    """The contested credits of the rescoring in ``rescore_dir`` (retrieved items a relaxed
    target credits and Raw does not), written to ``out`` (cases.jsonl) with
    ``out.manifest.json`` beside it.

    ``items`` and ``runs`` are ``[NAME=]PATH`` specs (default: the stores and runs the
    rescoring's manifest names, checked against their recorded sha256); ``measure`` (or
    ``k``: nDCG@k, not both) is the measure whose values the cases carry and whose cutoff
    bounds the walk (default: the rescoring's headline measure). ``each``: one case per
    contested credit instead of one per (query, system, target). ``sample="stratified"``
    draws ``per_stratum`` cases per stratum with ``seed``. ``preloaded``: the rescoring's
    inputs already read (:class:`~tiap.audit.cases.RescoreInputs`, for several steps; then
    ``items``, ``queries`` and ``runs`` are not given).

    Example: a store with a raw turn and a derived fact for each of two evidence turns, and
    a run ``A`` that ranks the fact ``m1`` above the turn ``t1`` for ``q1`` and the fact
    ``m2`` alone for ``q2``, rescored into the folder ``rs`` (the inputs recorded, so the
    audit finds them). Each fact earns the gain at rank 1 under Source and Canonical and is
    no Raw member: four cases; Raw finds ``t1`` at rank 2 for ``q1`` (``raw_hit``) and
    nothing for ``q2`` (``raw_miss``).

    >>> import json
    >>> from pathlib import Path
    >>> import tiap
    >>> def jsonl(path, rows):
    ...     return Path(path).write_text("".join(json.dumps(r) + "\\n" for r in rows))
    >>> Path("s1").mkdir()  # the store's folder names it
    >>> _ = jsonl("s1/items.jsonl", [
    ...     {"item_id": "t1", "kind": "raw", "sources": ["d1:1"], "text": "Caroline: I went to the park."},
    ...     {"item_id": "m1", "kind": "fact", "sources": ["d1:1"], "text": "Caroline visited the park."},
    ...     {"item_id": "t2", "kind": "raw", "sources": ["d1:2"], "text": "Melanie: our dog is Max."},
    ...     {"item_id": "m2", "kind": "fact", "sources": ["d1:2"], "text": "Melanie has a dog."}])
    >>> _ = jsonl("queries.jsonl", [
    ...     {"query_id": "q1", "question": "Where did Caroline go?", "answer": "the park",
    ...      "evidence": ["d1:1"]},
    ...     {"query_id": "q2", "question": "What is the dog called?", "answer": "Max",
    ...      "evidence": ["d1:2"]}])
    >>> _ = jsonl("A.jsonl", [{"query_id": "q1", "system": "A", "ranking": ["m1", "t1"]},
    ...                       {"query_id": "q2", "system": "A", "ranking": ["m2"]}])
    >>> scores = tiap.rescore("A.jsonl", "queries.jsonl", "s1/items.jsonl", measures="nDCG@5",
    ...                       tokenizer="none")
    >>> _ = scores.to_folder("rs", inputs={"queries": "queries.jsonl", "items": "s1/items.jsonl",
    ...                                    "run:A": "A.jsonl"})
    >>> found = find_cases("rs", "cases.jsonl")
    >>> found.found, found.written, found.manifest["options"]["measure"]
    (4, 4, 'nDCG@5')
    >>> found.manifest["stores"]
    {'A': 's1'}
    >>> [(s["case_type"], s["rank_bucket"], s["n"]) for s in found.strata]
    [('raw_hit', '1-5', 2), ('raw_miss', '1-5', 2)]
    >>> sorted(p.name for p in Path(".").glob("cases.jsonl*"))
    ['cases.jsonl', 'cases.jsonl.manifest.json']
    """
    from tiap.scoring.rescore import store_lineages

    if measure is not None and k is not None:
        raise TiapError(f"give --measure or --k, not both (--k {k} means --measure nDCG@{k})",
                        code="invalid-value")
    opt = "--k" if k is not None else "--measure"
    if k is not None:
        measure = f"nDCG@{k}"
    out = Path(out)
    shared = (None if preloaded is None
              else preloaded.of(rescore_dir, bool(items or runs or queries is not None)))
    rd = RescoreDir.open(rescore_dir) if shared is None else shared.rescore
    m = str(_option_measure(opt, measure)) if measure else rd.default_measure()
    cut = measure_cutoff(m)
    if measure is not None and m not in rd.measures:
        given = f"--k: {m!r}" if opt == "--k" else f"--measure {m!r}"
        raise TiapError(f"{given} is not a measure of the rescoring in {rd.path} "
                        f"(its measures: {', '.join(rd.measures) or 'none'})",
                        code="invalid-value")
    if cut is None:
        raise TiapError(f"the measure {m!r} has no cutoff; pass e.g. --measure nDCG@60")
    stores, qs, loaded, inputs = _inputs(shared, rd, items, queries, runs)
    tlist = list(targets)
    found = contested_cases(loaded, qs, stores, targets=tlist, raw_target=raw,
                            target_defs=rd.target_defs or None, k=cut, credit=rd.credit,
                            values=rd.values(m, shared.per_query if shared else None),
                            measure=m, dataset=dataset, each=each, shared=shared)
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
        extra={"stores": {s: name for s, (name, _) in (
                   shared.lineages() if shared else store_lineages(loaded, stores)).items()},
               "counts": {"contested": len(found), "written": n, "strata": strata}})
    _write_sidecar(out, man)
    return CasesResult(out, len(found), n, strata, man.to_json(), tuple(chosen),
                       sha256_file(out))


# ------------------------------------------------------------------------------------------
# judge


#: The labels a judge gives, in the order its counts are shown.
_LABEL_ORDER = ("supports", "partial", "does_not_support", "unscored")


def _label_counts(records: Sequence[LabelRecord], judge: str) -> dict[str, int]:
    recs = [r for r in records if r.judge == judge]
    return {lab: sum(1 for r in recs if r.label == lab) for lab in _LABEL_ORDER}


@dataclass(frozen=True)
class LabelSet:
    """What :func:`judge` returns: one label per (judge, case) (``records``, as in
    labels.jsonl: judges in the order given, cases in input order), each judge's counts
    (``stats``: requests, verdicts from the cache, scored and unscored) and settings
    (``judges``), and the local model server's settings when one served the run
    (``local_model``).

    >>> from tiap.audit import Case, judge
    >>> labels = judge([Case("c1", "A", "q1", "canonical", "m1", "Mel paints sunsets.",
    ...                      "What does Mel paint?", "sunsets", 1)])
    >>> print(labels)
    verdicts on 1 case
    judge    supports  partial  does_not_support  unscored
    lexical         1        0                 0         0
    >>> labels.write("labels.jsonl")
    1
    """

    n_cases: int
    records: tuple[LabelRecord, ...]
    stats: tuple[JudgeStats, ...]
    judges: tuple[dict[str, Any], ...] = field(repr=False)
    local_model: dict[str, Any] | None = field(default=None, repr=False)

    def label_counts(self, judge: str) -> dict[str, int]:
        """``{label: count}`` of one judge's verdicts, unscored ones included.

        >>> from tiap.audit import Case, judge
        >>> cases = [Case("c1", "A", "q1", "canonical", "m1", "Mel paints sunsets.",
        ...               "What does Mel paint?", "sunsets", 1),
        ...          Case("c2", "A", "q2", "canonical", "m2", "Mel has a dog.",
        ...               "Where did Mel go?", "the lake", 1)]
        >>> judge(cases).label_counts("lexical")
        {'supports': 1, 'partial': 0, 'does_not_support': 1, 'unscored': 0}
        """
        return _label_counts(self.records, judge)

    def write(self, path: str | Path) -> int:
        """Write the labels as ``labels.jsonl`` (:func:`~tiap.audit.labels.write_labels`,
        what :func:`judge_cases` writes, every row redacted); returns the number of rows.

        >>> from tiap.audit import Case, judge, read_labels
        >>> judge([Case("c1", "A", "q1", "canonical", "m1", "Mel paints sunsets.",
        ...             "What does Mel paint?", "sunsets", 1)]).write("labels.jsonl")
        1
        >>> [(r.case_id, r.judge, r.label) for r in read_labels(["labels.jsonl"])]
        [('c1', 'lexical', 'supports')]
        """
        return write_labels(path, self.records)

    def __str__(self) -> str:
        head = ("judge", *_LABEL_ORDER)
        grid = [list(head)] + [[s.judge, *(f"{n:,}" for n in self.label_counts(
            s.judge).values())] for s in self.stats]
        widths = [max(len(line[i]) for line in grid) for i in range(len(head))]
        lines = [f"verdicts on {self.n_cases:,} case{'s' if self.n_cases != 1 else ''}"]
        lines += ["  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                            for i, (c, w) in enumerate(zip(line, widths, strict=True)))
                  for line in grid]
        return "\n".join(lines)


@dataclass(frozen=True)
class JudgeResult:
    """What :func:`judge_cases` wrote into ``out``: the verdicts of ``n_cases`` cases
    (``records``, as in labels.jsonl), each judge's counts (``stats``) and the manifest;
    ``rows`` and ``sha256``: the rows of labels.jsonl and its sha256 (:func:`graded_audit`,
    given this result, reads the labels from memory while the file is unchanged)."""

    out: Path
    n_cases: int
    records: list[LabelRecord]
    stats: list[JudgeStats]
    manifest: dict[str, Any] = field(repr=False)
    rows: list[dict[str, Any]] = field(default_factory=list, repr=False, compare=False)
    sha256: str | None = field(default=None, repr=False)

    def label_counts(self, judge: str) -> dict[str, int]:
        """``{label: count}`` of one judge's verdicts, unscored ones included."""
        return _label_counts(self.records, judge)


def _cases_of(cases: Any) -> list[Case]:
    """The cases :func:`judge` takes: a cases file, what :func:`find_cases` wrote, or
    :class:`~tiap.audit.cases.Case` objects."""
    if isinstance(cases, CasesResult):
        cases = cases.out
    if isinstance(cases, str | Path):
        got = read_cases(cases)
        if not got:
            raise TiapError("no cases in the file: nothing to judge (did `tiap audit cases` "
                            "find no contested credit?)", file=cases)
        return got
    got = list(cases)
    bad = sorted({type(c).__name__ for c in got if not isinstance(c, Case)})
    if bad:
        raise TiapError(f"cases must be Case objects (tiap.audit.contested_cases, "
                        f"read_cases), a cases file or what find_cases returns; got "
                        f"{', '.join(bad)}", code="invalid-value")
    if not got:
        raise TiapError("no cases: nothing to judge", code="invalid-value")
    return got


def judge(
    cases: Any,
    judge: str | Sequence[str] = "lexical",
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
    progress: Progress | None = None,
    log: Log | None = None,
) -> LabelSet:
    """Judge contested credits in memory: every case with every judge spec of ``judge``
    (``lexical``, ``embedding``, ``openai`` or ``NAME(key=value, ...)``; one spec or a
    list), writing nothing unless ``cache`` names a verdict cache to keep.

    ``cases`` are :class:`~tiap.audit.cases.Case` objects
    (:func:`~tiap.audit.cases.contested_cases`), a cases file (``cases.jsonl``), or the
    :class:`CasesResult` of :func:`find_cases`; ``limit`` judges the first ``limit``.
    The options are :func:`judge_cases`'s: ``base_url`` and ``model`` aim the ``openai``
    judges at any OpenAI-compatible endpoint, ``local_model`` serves a model on
    127.0.0.1:``local_port`` for the run. ``cache`` (default: a temporary one, removed
    after the run) holds every finished verdict: a later run with the same cache asks only
    for the ones it lacks.

    >>> import tiap
    >>> from tiap.audit import Case
    >>> cases = [Case("c1", "A", "q1", "canonical", "m1", "Mel paints sunsets by the lake.",
    ...               "What does Mel paint?", "sunsets", 1),
    ...          Case("c2", "A", "q2", "canonical", "m2", "Mel went camping.",
    ...               "Where did Mel camp?", "by the lake in the mountains", 2)]
    >>> labels = tiap.judge(cases, "lexical")
    >>> [(r.case_id, r.label, round(r.score, 2)) for r in labels.records]
    [('c1', 'supports', 1.0), ('c2', 'does_not_support', 0.0)]
    """
    all_cases = _cases_of(cases)
    if limit is not None:
        all_cases = all_cases[:limit]
    specs = [judge] if isinstance(judge, str) else list(judge)
    if not specs:
        raise TiapError("no judge given: name one, e.g. judge='lexical'", code="usage")
    stack = contextlib.ExitStack()
    local: dict[str, Any] | None = None
    if local_model is not None:
        _, served = local_endpoint(local_model, local_port, base_url=base_url, model=model)
        if not any(parse_judge_spec(j)[0] == "openai" for j in specs):
            raise TiapError("--local-model is for openai judges; none of the --judge "
                            "specs is one", code="usage")
        for spec in specs:  # an openai judge aimed elsewhere would not judge with the model
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

    with stack:
        if cache is None:  # a verdict cache for this run only
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="tiap-judge-"))
            cache = Path(tmp) / "cache.sqlite"
        eng = stack.enter_context(contextlib.closing(make_engine(engine)))
        with use_engine(eng):
            run = _judge_run(all_cases, specs, defaults, Path(cache), retry_unscored,
                             progress)
    return LabelSet(len(all_cases), run.records, run.stats, run.judges, local)


def judge_cases(
    cases: str | Path | CasesResult,
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
    folder is refused unless ``force``). The judging is :func:`judge`'s. ``cases`` may be
    what :func:`find_cases` returned: its cases are then judged as held in memory when the
    file still has the sha256 it was written with (else the file is read).

    The verdict cache (``cache``, default ``out/cache.sqlite``, kept across the swap) holds
    every finished verdict: a rerun asks only for the ones it lacks. ``local_model`` serves
    that model on 127.0.0.1:``local_port`` for the run and gives it to the openai judges.
    The endpoint options (``model`` ... ``response_format``) are the defaults of openai
    judges that do not set them. ``engine`` is where the requests run (``local``, ``ray``,
    ``ray://HOST:PORT``).

    Example: the offline lexical judge on two cases. The answer ``the park`` is covered by
    the first memory; ``Max`` is not in the second (coverage 0: ``does_not_support``).

    >>> from pathlib import Path
    >>> from tiap.audit.cases import Case
    >>> _ = write_cases("cases.jsonl", [
    ...     Case("A:q1:canonical", "A", "q1", "canonical", "m1", "Caroline visited the park.",
    ...          "Where did Caroline go?", "the park", credited_rank=1),
    ...     Case("A:q2:canonical", "A", "q2", "canonical", "m2", "Melanie has a dog.",
    ...          "What is the dog called?", "Max", credited_rank=1)])
    >>> judged = judge_cases("cases.jsonl", "judged", ["lexical"])
    >>> judged.n_cases, judged.label_counts("lexical")
    (2, {'supports': 1, 'partial': 0, 'does_not_support': 1, 'unscored': 0})
    >>> sorted(p.name for p in Path("judged").iterdir())
    ['cache.sqlite', 'labels.jsonl', 'manifest.json']
    >>> judge_cases("cases.jsonl", "judged", ["lexical"]).stats[0].cached  # a rerun asks none
    2
    """
    from tiap.memory.build import cache_entries

    out = Path(out)
    found = cases if isinstance(cases, CasesResult) else None
    cases = found.out if found is not None else Path(cases)
    cache_path = Path(cache) if cache is not None else out / "cache.sqlite"
    keep = cache_entries(cache_path, out)  # used in place, kept across the swap
    check_output_folder(out, JUDGE_COMMAND, force=force, keep=keep)  # before any request
    entry = input_entry(cases)
    held = _held_cases(found, entry["sha256"])
    labels = judge(held if held is not None else cases, judges, model=model, base_url=base_url, api_key_env=api_key_env,
                   concurrency=concurrency, max_retries=max_retries, timeout=timeout,
                   backoff=backoff, max_invalid=max_invalid,
                   response_format=response_format, local_model=local_model,
                   local_port=local_port, cache=cache_path, retry_unscored=retry_unscored,
                   limit=limit, engine=engine, progress=progress, log=log)
    man = Manifest.new(JUDGE_COMMAND, inputs={"cases": entry},
                       options={"limit": limit, "retry_unscored": retry_unscored,
                                "cache": str(cache_path), "local_model": labels.local_model},
                       extra={"judges": list(labels.judges),
                              "counts": [s.to_json() for s in labels.stats]},
                       outputs=["labels.jsonl"])
    rows = label_rows(labels.records)  # what write_labels writes
    with output_folder(out, JUDGE_COMMAND, force=force, keep=keep) as tmp:
        write_jsonl(tmp / "labels.jsonl", rows)
        man.write(tmp / "manifest.json")
    return JudgeResult(out, labels.n_cases, list(labels.records), list(labels.stats),
                       man.to_json(), rows, sha256_file(out / "labels.jsonl"))


def _held_cases(found: CasesResult | None, sha256: str) -> list[Case] | None:
    """The cases :func:`find_cases` wrote, as :func:`~tiap.audit.cases.read_cases` would read
    them back from the file (which has ``sha256``); ``None``: read the file (not the file
    written, or cases a reader would report, which it does with their lines)."""
    if found is None or not found.cases or found.sha256 != sha256:
        return None
    if len({c.case_id for c in found.cases}) != len(found.cases):
        return None
    return [_as_read(c) for c in found.cases]


_CASE_TEXTS = ("case_id", "system", "query_id", "target", "item_id", "item_text", "question",
               "answer", "item_kind", "dataset", "store", "raw_target", "case_type",
               "measure", "credit", "category", "collection")


def _as_read(c: Case) -> Case:
    """``c`` as a line of cases.jsonl reads back (:meth:`Case.from_json`): the same object
    when writing and reading change nothing (plain strings, no empty optional text, no
    NaN value), else read back from its row."""
    if (any(type(getattr(c, f)) is not str for f in _CASE_TEXTS)
            or c.raw_support_item_id == "" or c.raw_support_text == ""
            or any(v is not None and (type(v) is not float or math.isnan(v))
                   for v in (c.raw_value, c.target_value))
            or type(c.credited_rank) is not int or (c.k is not None and type(c.k) is not int)
            or any(type(x.kind) is not str or type(x.item_id) is not str
                   for x in c.contested)):
        return Case.from_json(c.to_json())
    return c


def _judge_run(all_cases: list[Case], specs: Sequence[str], defaults: dict[str, Any],
               cache_path: Path, retry_unscored: bool, progress: Progress | None) -> JudgeRun:
    """The judging of :func:`judge`, with the endpoints up and the engine in use."""
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
            return run_judges(all_cases, judges, vc, retry_unscored=retry_unscored,
                              progress=progress)
    finally:
        for j in judges:
            j.close()


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
    refused unless ``force``). ``judges``: only these, in this order.

    Example: judges ``a`` and ``b`` on three cases, and one human rater on two of them.
    The judges agree on cases 1 and 3: ``p_o = 2/3``, ``p_e = 1/9 + 0 + 2/9 = 1/3``
    (``a`` gives each label once, ``b`` supports once and does_not_support twice), so
    ``κ = (2/3 - 1/3) / (2/3) = 0.5``.

    >>> from pathlib import Path
    >>> from tiap.audit.labels import LabelRecord
    >>> for judge, labs in (("a", ["supports", "partial", "does_not_support"]),
    ...                     ("b", ["supports", "does_not_support", "does_not_support"])):
    ...     _ = write_labels(f"{judge}.jsonl", [LabelRecord(f"A:q{i}:canonical", judge, lab)
    ...                                         for i, lab in enumerate(labs, start=1)])
    >>> _ = Path("human.csv").write_text("case_id,label\\nA:q1:canonical,supports\\n"
    ...                                  "A:q2:canonical,partial\\n")
    >>> result = judge_agreement(["a.jsonl", "b.jsonl"], "agreement", human=["ann=human.csv"])
    >>> [(r["scheme"], r["agreement"], r["cohen_kappa"]) for r in result.report.pairwise]
    [('three_class', 0.666667, 0.5), ('binary', 0.666667, 0.4)]
    >>> sorted(p.name for p in Path("agreement").iterdir())
    ['agreement.json', 'confusion.csv', 'distribution.csv', 'human.csv', 'majority.jsonl',
     'manifest.json', 'pairwise.csv']
    """
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
    labels: Sequence[str | Path | JudgeResult],
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
    preloaded: RescoreInputs | None = None,
) -> GradedAudit:
    """The labels of ``labels`` (labels.jsonl files) as graded relevance on the rescoring in
    ``rescore_dir``: how much of each relaxed target's nDCG@``k`` gain over Raw survives
    them, and composed support at the same k, written into ``out`` (replaced whole).

    ``items`` and ``runs`` are ``[NAME=]PATH`` specs (default: the rescoring's); ``k``
    defaults to the cutoff of the rescoring's headline measure; ``unjudged`` is keep,
    partial, drop or unknown (default: keep for nDCG, unknown for composed support);
    ``judges``: use only these judges' labels. ``preloaded``: the rescoring's inputs
    already read (:class:`~tiap.audit.cases.RescoreInputs`, as :func:`find_cases` takes it).
    A labels entry may be what :func:`judge_cases` returned: its labels.jsonl, read from
    memory while the file has the sha256 it was written with.

    Example: the rescoring of :func:`find_cases`'s example, with labels that say the fact
    ``m1`` supports the answer of ``q1`` and ``m2`` does not support that of ``q2``. Under
    set credit (``1/log2(3) = 0.6309``), Source scores ``q1`` 1.0 and ``q2``
    ``1 / (1 + 0.6309) = 0.6131`` as a binary target (mean 0.8066); graded, ``m2`` leaves
    the target, and the share of the binary credit the labels keep is 1 and 0 (mean 0.5).

    >>> import json
    >>> from pathlib import Path
    >>> import tiap
    >>> def jsonl(path, rows):
    ...     return Path(path).write_text("".join(json.dumps(r) + "\\n" for r in rows))
    >>> Path("s1").mkdir()  # the store's folder names it
    >>> _ = jsonl("s1/items.jsonl", [
    ...     {"item_id": "t1", "kind": "raw", "sources": ["d1:1"], "text": "Caroline: I went to the park."},
    ...     {"item_id": "m1", "kind": "fact", "sources": ["d1:1"], "text": "Caroline visited the park."},
    ...     {"item_id": "t2", "kind": "raw", "sources": ["d1:2"], "text": "Melanie: our dog is Max."},
    ...     {"item_id": "m2", "kind": "fact", "sources": ["d1:2"], "text": "Melanie has a dog."}])
    >>> _ = jsonl("queries.jsonl", [
    ...     {"query_id": "q1", "question": "Where did Caroline go?", "answer": "the park",
    ...      "evidence": ["d1:1"]},
    ...     {"query_id": "q2", "question": "What is the dog called?", "answer": "Max",
    ...      "evidence": ["d1:2"]}])
    >>> _ = jsonl("A.jsonl", [{"query_id": "q1", "system": "A", "ranking": ["m1", "t1"]},
    ...                       {"query_id": "q2", "system": "A", "ranking": ["m2"]}])
    >>> scores = tiap.rescore("A.jsonl", "queries.jsonl", "s1/items.jsonl", measures="nDCG@5",
    ...                       tokenizer="none")
    >>> _ = scores.to_folder("rs", inputs={"queries": "queries.jsonl", "items": "s1/items.jsonl",
    ...                                    "run:A": "A.jsonl"})
    >>> from tiap.audit.labels import LabelRecord
    >>> _ = write_labels("labels.jsonl", [
    ...     LabelRecord("A:q1:source", "lexical", "supports", store="s1", query_id="q1",
    ...                 item_id="m1"),
    ...     LabelRecord("A:q2:source", "lexical", "does_not_support", store="s1",
    ...                 query_id="q2", item_id="m2")])
    >>> graded = graded_audit("rs", ["labels.jsonl"], "graded")
    >>> [(r["target"], round(r["binary"], 4), r["retained"]) for r in graded.result.summary]
    [('source', 0.8066, 0.5), ('canonical', 1.0, 0.5)]
    >>> sorted(p.name for p in Path("graded").iterdir())
    ['graded_per_query.csv', 'graded_summary.csv', 'manifest.json', 'qrels',
     'support_per_query.csv', 'support_summary.csv']
    """
    from tiap.scoring.rescore import store_lineages

    if unjudged is not None and unjudged not in SUPPORT_POLICIES:
        raise TiapError(f"--unjudged {unjudged!r}: expected one of "
                        f"{', '.join(SUPPORT_POLICIES)}", code="invalid-value")
    out = Path(out)
    tlist = list(targets)
    check_output_folder(out, GRADED_COMMAND, force=force)
    shared = (None if preloaded is None
              else preloaded.of(rescore_dir, bool(items or runs or queries is not None)))
    rd = RescoreDir.open(rescore_dir) if shared is None else shared.rescore
    cut = (_option_measure("--k", f"nDCG@{k}").cutoff if k is not None
           else measure_cutoff(rd.default_measure()))
    if cut is None:
        raise TiapError("pass --k: the rescoring's nDCG measure has no cutoff")
    stores, qs, loaded, inputs = _inputs(shared, rd, items, queries, runs)
    for r in loaded:
        if r.system not in stores and None not in stores:
            raise TiapError(f"no store for run {r.system!r}: pass --items {r.system}=PATH")
    names = {name for name, _ in (shared.lineages() if shared
                                  else store_lineages(loaded, stores)).values()}
    paths: list[Path] = []
    held: dict[Path, list[dict[str, Any]]] = {}
    for entry in labels:
        if isinstance(entry, JudgeResult):
            p = entry.out / "labels.jsonl"
            if entry.rows and p.is_file() and entry.sha256 == sha256_file(p):
                held[p] = entry.rows
        else:
            p = Path(entry)
        paths.append(p)
    rel = item_relevance(read_labels(paths, held=held),
                         tie_rule=tie_rule,  # type: ignore[arg-type]
                         judges=None if judges is None else list(judges), stores=names)
    result = graded_rescore(loaded, qs, stores, rel, targets=tlist, raw_target=raw,
                            target_defs=rd.target_defs or None, k=cut,
                            unjudged=unjudged, shared=shared)  # type: ignore[arg-type]
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
    ``.manifest.json`` beside it.

    Example: a one-row file in the columns of the paper's ``judged_cases.csv``; its case
    id is ``RUN:QUERY_INDEX:TARGET`` (``source_family`` reads as ``source``).

    >>> import csv
    >>> row = {"run_label": "locomo_bge_m3", "query_index": "7", "audit_target": "source_family",
    ...        "query": "Where did Caroline go?", "reference_answer": "the park",
    ...        "credited_rank": "3", "credited_memory_id": "m1",
    ...        "credited_content": "Caroline visited the park.", "judge_model": "gpt-4o-mini",
    ...        "judge_semantic_label": "partially_supports"}
    >>> with open("judged_cases.csv", "w", newline="") as fh:
    ...     w = csv.DictWriter(fh, fieldnames=list(row))
    ...     _ = w.writeheader(), w.writerow(row)
    >>> done = import_paper("judged_cases.csv", out="labels.jsonl", cases_out="cases.jsonl")
    >>> done.n_cases, [(r.case_id, r.judge, r.label) for r in done.labels]
    (1, [('locomo_bge_m3:7:source', 'gpt-4o-mini', 'partial')])
    >>> read_cases("cases.jsonl")[0].dataset
    'locomo'
    """
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
