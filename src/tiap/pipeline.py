"""The main job: build stores, retrieve, rescore (and, where installed, the later stages).

A pipeline is a small TOML file (``configs/*.toml``)::

    name = "locomo"
    dataset = "locomo"
    retrievers = ["bm25"]             # bm25, dense, hybrid
    k = 60
    targets = ["raw", "source", "canonical"]
    measures = ["nDCG@20", "nDCG@40", "nDCG@60", "R@60", "RR@60", "Success@60", "Success@1"]
    credit = "group"

    collections = ["conv-26"]         # optional: only these collections (default: all)
    sessions = 5                      # optional: the first N sessions of each collection
    local_model = "qwen2.5-coder-1.5b"  # optional: serve it for the llm stores (below)
    local_port = 8089
    local_threads = 1                 # llama.cpp threads (2 on an otherwise idle 2-core machine)

    sensitivity = true                # Stage III and the HTML report (default true)
    audit = ["lexical"]               # optional: judge every contested credit offline and
                                      # report what survives (graded nDCG, Coverage@k)
    engine = "local"                  # where the work runs: local, ray (a local
                                      # instance), ray://HOST:PORT or ray:auto (a cluster)
    query_shard = 50000               # optional: queries per rescoring task (default: a
                                      # task per run); the outputs are the same
    seed = 0                          # seed of the sign-flip tests
    resamples = 10000                 # random sign vectors per shared subset
    alpha = 0.05                      # family-wise level
    correction = "holm"               # holm, bh or none
    min_dz = 0.2                      # smallest |d_z| of both gaps a headline flip needs
                                      # (default 0.2, Cohen's "small"; 0: none)
    min_effect = 0.0                  # smallest |gap| (measure units) it needs (0: none)

    # tables come after every plain key (TOML puts a key below a table into it)
    [[stores]]                        # one per store design
    name = "f1"
    parser = "heuristic"
    max_facts = 1

    [[stores]]
    name = "native"
    parser = "native"

    [design]                          # optional: configurations compared in Stage III
    density = ["f1", "f5", "f8"]

    [answers]                         # optional: TIAP's own answers (docs/answers.md)
    systems = ["f1-bm25", "native-bm25"]  # default: every system
    sample = 30                       # a stratified sample of queries (by category)
    k = 10                            # items per context, at most
    judges = ["locomo-f1", "llm"]     # answer judges (an llm one uses the local model)
    local_model = "qwen2.5-coder-1.5b"

The file is checked against the schema :class:`PipelineConfig` before anything is read or
written (:mod:`tiap.config`): types are strict (``k = true`` and ``sensitivity = "false"``
are errors, not 1 and true), an unknown key is an error with a did-you-mean, a store's other
keys are its parser's arguments and are checked against the parser (name, type, range), and
every problem is reported at once as ``error[config]: FILE:LINE: key stores[1].max_facts:
expected an integer, got "5" (a string)``, exit 2. The rules beyond types:

=============  =====================================================================
key            rule
=============  =====================================================================
name           a folder name (letters, digits, ``_ . -``; no ``/``)
dataset        a registered dataset id
stores         at least one; names unique; parser registered; its arguments valid
retrievers     at least one of bm25, dense, hybrid, none twice (``--retriever``)
k              1 to 1,000,000, and no measure's cutoff above it (``R@100`` with
               ``k = 60``)
targets        known target names or ``name=spec`` definitions, none twice
measures       known measures, none twice
credit         group or set
design         every group names at least 2 of the stores above
collections    ids, none twice, none empty (``--collections``); each must exist in the
               dataset (checked before the first step writes)
sessions       1 to 10^9: the first N sessions of each collection (by position) are stored,
               and the queries whose evidence lies wholly in them are asked
local_model    a model of ``tiap llm models``; at least one store uses parser ``llm``,
               and none names another ``base_url`` or ``model``
local_port     1 to 65,535 (default 8089)
local_threads  1 to 512 (default 1)
seed           0 to 2^63 - 1
resamples      1 to 10,000,000 (``--resamples``), and what fits the machine's memory
alpha          a finite number with 0 < alpha < 1
correction     holm, bh or none (any case)
audit          offline judges only (lexical, embedding), none twice
engine         local, ray, ray://HOST:PORT or ray:auto (``--engine``); outputs the same
query_shard    1 to 10^9 (``--query-shard``); outputs the same
min_dz         a number from 0 to 10 (default 0.2: docs/sensitivity.md says why)
min_effect     a number from 0 to 1 (default 0)
answers        systems of this config; sample 1 to 10^9 (default 30), seed, k (default
               10), token_budget (default 1,024) and max_tokens (default 64) in their
               ranges; judges: answer judge specs that build (default ``locomo-f1``), none
               twice; local_model a model of ``tiap llm models``; local_port 1 to 65,535
=============  =====================================================================

With ``[answers]``, a step ``answers`` after rescoring writes ``OUT/<name>/answers/``:
``generated`` (answers by the local model, served for the step, from each system's top
``k`` items under the token budget), ``judged``, ``evidence`` (the evidence-in-context x
judged-correct tables per target) and ``analysis`` (what moves the score); the report gets
an "Answers and judges" section. Its answer and verdict caches stay in the folder, so an
interrupted step resumes asking only what is not finished.

With ``local_model``, TIAP serves that model on ``127.0.0.1:local_port``
(:class:`tiap.llm.local.LocalServer`) while the ``llm`` stores are built, and only then (a
rerun whose stores are up to date starts no server); each ``llm`` store gets its
``base_url`` and ``model``, and ``concurrency = 1`` and ``timeout = 600`` unless it sets
them. The port is fixed so that the parser cache's keys, which name the endpoint, hold
across runs.

The ranges are declared once (:data:`tiap.limits.LIMITS`, ``docs/limits.md``) and shared
with the command options. A bad value given by an option is reported as ``error[usage]:
option --resamples: ...``.

Every step writes into ``OUT/<name>/`` and records what it did in ``.steps/<step>.json``:
its settings, the sha256 of every file of an earlier step it reads, TIAP's version and a
hash of its source files, and the sha256 of every file it wrote. A rerun skips a step only
when all of these match; so an interrupted run resumes without repeating finished work
(the steps themselves write atomically, and retrieval also resumes inside a step,
collection by collection). A step whose output was deleted or edited (``runs/<system>.jsonl``
edited by hand, ``rescore/pairwise.csv`` deleted) is run again, and so is every later step
whose input files then differ; the run says why, e.g. ``rescore: recomputed:
rescore/pairwise.csv was deleted since the step wrote it`` or ``sensitivity: recomputed:
its input rescore/manifest.json changed``. A step run again that writes the same bytes as
before leaves the steps after it up to date (a run file edited by hand is retrieved again,
byte for byte the retriever's; the rescoring of it stands). The steps, and the steps whose
files each reads: ``queries``; ``store-<name>``; ``retrieve-<system>`` (queries, its
store); ``rescore`` (queries, every store and run); ``audit`` and ``sensitivity`` (the
rescoring, and what it read); ``report`` (the rescoring, the stores, Stage III and the
audit). The audit's verdict cache is not an output (a rerun reuses its verdicts). A rerun
with nothing changed recomputes nothing and says so; checking hashes every output once
(about 0.2 s for the 100 MB of the LoCoMo demo).
"""

from __future__ import annotations

import contextlib
import functools
import gc
import hashlib
import inspect
import json
import time
import typing
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field, PrivateAttr, field_validator, model_validator

import tiap
from tiap import __version__, provenance
from tiap.config import (
    Invalid,
    Schema,
    Seq,
    check_nested,
    did_you_mean,
    ranged,
    read_toml,
    toml_value,
    validate,
)
from tiap.config import validate_value as check_type
from tiap.engine import make_engine, use_engine
from tiap.errors import MissingExtraError, TiapError
from tiap.io import atomic_write, sha256_file
from tiap.llm.local import CLIENT_DEFAULTS, DEFAULT_PORT, MODELS, LocalServer, local_base_url
from tiap.provenance import manifest_warnings

if TYPE_CHECKING:
    from tiap.report import FlipSummary

__all__ = ["load_config", "run_pipeline"]

Progress = Callable[[Iterable[Any], str, "int | None"], Iterable[Any]]
Log = Callable[[str], None]


STORE_KEYS = ("name", "parser")


class StoreSpec(Schema):
    """One store of a pipeline: its name, its parser and the parser's arguments.

    The TOML table of a store holds ``name``, ``parser`` and the parser's arguments as keys
    of their own (``max_facts = 5``); every argument is checked against the parser's factory
    (its name, its type, then the factory's own checks), so a typo or a wrong type is an
    error before anything is built.
    """

    name: str
    parser: str
    args: dict[str, Any] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return _folder_name(v, "store name")

    @field_validator("parser")
    @classmethod
    def _parser(cls, v: str) -> str:
        from tiap.memory.parsers import parser_names

        known = parser_names()
        if v.strip().lower() not in known:
            raise Invalid(f"unknown parser {v!r}{did_you_mean(v, known)}; known: "
                          f"{', '.join(known)}")
        return v

    @model_validator(mode="after")
    def _args(self) -> StoreSpec:
        from tiap.memory.parsers import make_parser, parser_factory, parser_schema

        factory = parser_factory(self.parser)
        params = inspect.signature(factory).parameters
        hints = typing.get_type_hints(factory)
        problems: list[tuple[tuple[str, ...], str]] = []
        for key, value in self.args.items():
            if key not in params:
                takes = ", ".join(params) or "no arguments"
                problems.append(((key,), f"unknown key for parser {self.parser!r}"
                                 f"{did_you_mean(key, params)}; it takes: {takes}"))
                continue
            wrong = check_type(hints.get(key, Any), value)
            if wrong:
                problems.append(((key,), wrong))
        if problems:
            raise Invalid(problems=problems)
        schema = parser_schema(self.parser)
        if schema is not None:  # the declared schema: ranges, required keys, at their keys
            check_nested(schema, self.args)
        try:  # the factory's own checks beyond its schema, nothing is run
            make_parser(self.parser, **self.args).close()
        except TiapError as exc:
            raise Invalid(problems=[((), p.message) for p in exc.problems]) from None
        return self


class AnswersSpec(Schema):
    """The optional answer stage of a pipeline (``[answers]``): TIAP's own answers for a
    stratified sample of queries from each system's ranking, judged, tied to retrieval and
    analysed (docs/answers.md)."""

    systems: Seq[str] = ()  # empty: every system
    sample: Annotated[int, ranged("count")] = 30
    seed: Annotated[int, ranged("seed")] = 0
    k: Annotated[int, ranged("cutoff")] = 10
    token_budget: Annotated[int, ranged("max_tokens")] = 1024
    max_tokens: Annotated[int, ranged("max_tokens")] = 64
    judges: Seq[str] = Field(("locomo-f1",), min_length=1)
    local_model: str = "qwen2.5-coder-1.5b"
    local_port: Annotated[int, ranged("port")] = DEFAULT_PORT

    @field_validator("local_model")
    @classmethod
    def _model(cls, v: str) -> str:
        if v not in MODELS:
            raise Invalid(f"unknown local model {v!r}{did_you_mean(v, MODELS)}; known: "
                          f"{', '.join(MODELS)}")
        return v

    @field_validator("judges")
    @classmethod
    def _judges(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        from tiap.answers import make_answer_judge

        _once(v, "judge")
        problems = []
        for i, spec in enumerate(v):
            try:
                make_answer_judge(spec).close()
            except TiapError as exc:
                problems.extend(((i,), p.message) for p in exc.problems)
        if problems:
            raise Invalid(problems=problems)
        return v


class PipelineConfig(Schema):
    """An ``audit-run`` config (see the module docstring); :func:`load_config` reads one."""

    name: str
    dataset: str
    stores: Seq[StoreSpec] = Field(min_length=1)
    retrievers: Seq[str] = Field(("bm25",), min_length=1)
    k: Annotated[int, ranged("cutoff")] = 60
    targets: Seq[str] = Field(("raw", "source", "canonical"), min_length=1)
    measures: Seq[str] = Field(("nDCG@20", "nDCG@40", "nDCG@60", "R@60", "RR@60",
                                "Success@60", "Success@1"), min_length=1)
    credit: str = "group"
    design: dict[str, Seq[str]] = Field(default_factory=dict)
    collections: Seq[str] = ()  # empty: all
    sessions: Annotated[int | None, ranged("count")] = None  # None: all
    local_model: str | None = None
    local_port: Annotated[int, ranged("port")] = DEFAULT_PORT
    local_threads: Annotated[int, ranged("threads")] = 1
    sensitivity: bool = True
    audit: Seq[str] = ()  # offline judges of the contested credits (lexical, embedding)
    engine: str = "local"  # where the work runs: local, ray, ray://HOST:PORT, ray:auto
    # queries per rescoring task (None: a task per run)
    query_shard: Annotated[int | None, ranged("count")] = None
    seed: Annotated[int, ranged("seed")] = 0
    resamples: Annotated[int, ranged("resamples")] = 10_000
    alpha: Annotated[float, ranged("alpha")] = 0.05
    correction: str = "holm"
    min_effect: Annotated[float, ranged("min_effect")] = 0.0
    min_dz: Annotated[float, ranged("min_dz")] = 0.2  # flips.DEFAULT_MIN_DZ
    answers: AnswersSpec | None = None  # optional: the answer stage (docs/answers.md)
    _source: str = PrivateAttr("")
    _overridden: tuple[str, ...] = PrivateAttr(())

    @property
    def source(self) -> str:
        """The file the config was read from (empty when built in Python)."""
        return self._source

    @property
    def overridden(self) -> tuple[str, ...]:
        """The keys a command option set (``collections`` from ``--collections``)."""
        return self._overridden

    def systems(self) -> list[tuple[str, StoreSpec, str]]:
        """``(system name, store, retriever)`` for every store x retriever."""
        return [(f"{s.name}-{r}", s, r) for s in self.stores for r in self.retrievers]

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return _folder_name(v, "name (the folder OUT/<name>)")

    @field_validator("dataset")
    @classmethod
    def _dataset(cls, v: str) -> str:
        from tiap.datasets.registry import dataset_ids

        known = dataset_ids()
        if v.strip().lower() not in known:
            raise Invalid(f"unknown dataset {v!r}{did_you_mean(v.strip().lower(), known)}; "
                          f"known: {', '.join(known)}")
        return v

    @field_validator("retrievers")
    @classmethod
    def _retrievers(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        from tiap.retrieval.factory import RETRIEVERS

        _once(v, "retriever")
        wrong = [((i,), f"unknown retriever {r!r}{did_you_mean(r, RETRIEVERS)}; known: "
                        f"{', '.join(RETRIEVERS)}") for i, r in enumerate(v) if r not in RETRIEVERS]
        if wrong:
            raise Invalid(problems=wrong)
        return v

    @field_validator("targets")
    @classmethod
    def _targets(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        from tiap.targets.targets import resolve_targets

        _once(v, "target")
        problems = []
        for i, t in enumerate(v):
            try:
                resolve_targets([t])
            except TiapError as exc:
                problems.extend(((i,), p.message) for p in exc.problems)
        if problems:
            raise Invalid(problems=problems)
        try:  # two definitions of one name
            resolve_targets(v)
        except TiapError as exc:
            raise Invalid(problems=[((), p.message) for p in exc.problems]) from None
        return v

    @field_validator("measures")
    @classmethod
    def _measures(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        from tiap.scoring.measures import parse_measure

        _once(v, "measure")
        problems = []
        for i, m in enumerate(v):
            try:
                parse_measure(m)
            except TiapError as exc:
                problems.extend(((i,), p.message) for p in exc.problems)
        if problems:
            raise Invalid(problems=problems)
        return v

    @field_validator("credit")
    @classmethod
    def _credit(cls, v: str) -> str:
        from tiap.scoring.kernels import CREDIT_MODES

        if v not in CREDIT_MODES:
            raise Invalid(f"unknown credit mode {v!r}{did_you_mean(v, CREDIT_MODES)}; known: "
                          f"{', '.join(CREDIT_MODES)}")
        return v

    @field_validator("design")
    @classmethod
    def _design(cls, v: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
        problems = []
        for name, members in v.items():
            if len(members) < 2:
                problems.append(((name,), f"a design compares at least 2 stores, got "
                                          f"{len(members)}"))
            try:
                _once(members, "store")
            except Invalid as exc:
                problems.extend(((name, *at), m) for at, m in exc.problems)
        if problems:
            raise Invalid(problems=problems)
        return v

    @field_validator("collections")
    @classmethod
    def _collections(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        problems = [((i,), "expected a collection id, got an empty string")
                    for i, c in enumerate(v) if not c.strip()]
        try:
            _once([c for c in v if c.strip()], "collection")
        except Invalid as exc:
            problems.extend(exc.problems)
        if problems:
            raise Invalid(problems=problems)
        return v

    @field_validator("engine")
    @classmethod
    def _engine(cls, v: str) -> str:
        if v not in ("local", "ray", "ray:auto") and not v.startswith("ray://"):
            raise Invalid(f"expected local, ray, ray://HOST:PORT or ray:auto, got "
                          f"{toml_value(v)}")
        return v

    @field_validator("audit")
    @classmethod
    def _audit(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        offline = ("lexical", "embedding")
        bad = [j for j in v if j.split("(")[0].strip() not in offline]
        if bad:
            raise Invalid(f"{toml_value(bad[0])} is not an offline judge: audit-run judges with "
                          f"{' or '.join(offline)}; judge with a model by tiap audit judge "
                          "(docs/audit.md)")
        if len(set(v)) != len(v):
            raise Invalid("a judge is named twice")
        return v

    @field_validator("correction")
    @classmethod
    def _correction(cls, v: str) -> str:
        from tiap.sensitivity.stats import CORRECTIONS

        if v.lower() not in CORRECTIONS:
            raise Invalid(f"expected one of {', '.join(CORRECTIONS)}, got {toml_value(v)}")
        return v.lower()

    @model_validator(mode="before")
    @classmethod
    def _local_endpoint(cls, data: Any) -> Any:
        """With ``local_model``, an ``llm`` store that names no endpoint is given the local
        server's (and the client settings that fit a one-slot CPU server), before the store's
        arguments are checked."""
        if not isinstance(data, dict) or not isinstance(data.get("local_model"), str):
            return data

        port = data.get("local_port", DEFAULT_PORT)
        if not isinstance(port, int) or isinstance(port, bool):
            return data  # reported by the field's own check
        stores = data.get("stores")
        if not isinstance(stores, list | tuple):
            return data
        fixed = []
        for s in stores:
            if isinstance(s, dict) and s.get("parser") == "llm" and isinstance(
                    s.get("args", {}), dict):
                args = dict(s.get("args", {}))
                args.setdefault("base_url", local_base_url(port))
                args.setdefault("model", data["local_model"])
                for k, v in CLIENT_DEFAULTS.items():
                    args.setdefault(k, v)
                s = {**s, "args": args}
            fixed.append(s)
        return {**data, "stores": fixed}

    @field_validator("local_model")
    @classmethod
    def _local_model(cls, v: str | None) -> str | None:
        if v is not None and v not in MODELS:
            raise Invalid(f"unknown local model {v!r}{did_you_mean(v, list(MODELS))}; known: "
                          f"{', '.join(MODELS)} (see `tiap llm models`)")
        return v

    def llm_stores(self) -> list[StoreSpec]:
        """The stores the local model's server is for (``local_model`` set)."""
        if self.local_model is None:
            return []
        return [s for s in self.stores if s.parser == "llm"]

    @model_validator(mode="after")
    def _across_keys(self) -> PipelineConfig:
        from tiap.scoring.measures import parse_measure

        problems: list[tuple[tuple[str | int, ...], str]] = []
        if self.local_model is not None:
            mine = {"base_url": local_base_url(self.local_port), "model": self.local_model}
            for i, s in enumerate(self.stores):
                if s.parser != "llm":
                    continue
                for key, want in mine.items():
                    if str(s.args.get(key, "")).rstrip("/") != want:
                        problems.append((("stores", i, key),
                                         f"local_model gives the llm stores {key} {want!r}; "
                                         f"this store names {s.args.get(key)!r}: remove it, "
                                         "or remove local_model"))
            if not self.llm_stores():
                problems.append((("local_model",), "no store uses parser 'llm': the local "
                                                   "model would serve nothing"))
        if self.answers is not None:
            known = [system for system, _, _ in self.systems()]
            for i, name in enumerate(self.answers.systems):
                if name not in known:
                    problems.append((("answers", "systems", i),
                                     f"unknown system {name!r}{did_you_mean(name, known)}; "
                                     f"the systems are {', '.join(known)}"))
        try:
            _once([s.name for s in self.stores], "store name")
        except Invalid as exc:
            problems.extend((("stores", at[0], "name"), m) for at, m in exc.problems)
        names = {s.name for s in self.stores}
        for dname, members in self.design.items():
            for i, m in enumerate(members):
                if m not in names:
                    problems.append((("design", dname, i),
                                     f"unknown store {m!r}{did_you_mean(m, names)}; the stores "
                                     f"are {', '.join(s.name for s in self.stores)}"))
        for i, m in enumerate(self.measures):
            cutoff = parse_measure(m).cutoff
            if cutoff is not None and cutoff > self.k:
                problems.append((("measures", i),
                                 f"{m} reads deeper than the retrieval depth k = {self.k}: it "
                                 f"would score as {m.split('@')[0]}@{self.k}; raise k or lower "
                                 "the cutoff"))
        if problems:
            raise Invalid(problems=problems)
        return self


def _folder_name(v: str, what: str) -> str:
    from tiap.memory.store import check_store_name

    try:
        return check_store_name(v, what)
    except TiapError as exc:
        raise Invalid(exc.problems[0].message) from None


def _once(values: Sequence[str], what: str) -> None:
    """An :class:`Invalid` naming every value listed a second time."""
    seen: set[str] = set()
    twice = []
    for i, x in enumerate(values):
        if x in seen:
            twice.append(((i,), f"{what} {x!r} is listed twice"))
        seen.add(x)
    if twice:
        raise Invalid(problems=twice)


#: The keys command options override, and the option that sets each.
OPTIONS = {"retrievers": "--retriever", "collections": "--collections",
           "resamples": "--resamples", "engine": "--engine", "query_shard": "--query-shard"}


def load_config(path: str | Path, *, retrievers: Sequence[str] | None = None,
                collections: Sequence[str] | None = None,
                resamples: int | None = None, engine: str | None = None,
                query_shard: int | None = None) -> PipelineConfig:
    """Read and check a pipeline TOML file; ``retrievers``/``collections``/``resamples``/
    ``engine``/``query_shard`` (the command's options) override it.

    Every problem of the file (a TOML syntax error, an unknown or missing key, a wrong type,
    a value out of range, a store a design names but the file does not define) is reported
    together in one :class:`TiapError` naming the file, line and key; a wrong override
    names its option.

        >>> _ = Path("demo.toml").write_text(
        ...     'name = "demo"\\ndataset = "locomo"\\nretrievers = ["bm25"]\\n'
        ...     '[[stores]]\\nname = "raw"\\nparser = "native"\\n')
        >>> cfg = load_config("demo.toml", resamples=200)
        >>> cfg.name, cfg.dataset, [s.name for s in cfg.stores], cfg.resamples
        ('demo', 'locomo', ['raw'], 200)
    """
    p = Path(path)
    raw, text = read_toml(p, "pipeline config")
    data: dict[str, Any] = dict(raw)
    if isinstance(data.get("stores"), list):  # a store's other keys are its parser's arguments
        data["stores"] = [
            {**{k: v for k, v in s.items() if k in STORE_KEYS},
             "args": {k: v for k, v in s.items() if k not in STORE_KEYS}}
            if isinstance(s, dict) else s for s in data["stores"]]
    given = {"retrievers": list(retrievers) if retrievers else None,
             "collections": list(collections) if collections else None,
             "resamples": resamples, "engine": engine, "query_shard": query_shard}
    data.update({k: v for k, v in given.items() if v is not None})
    cfg = validate(PipelineConfig, data, file=p, text=text,
                   options={k: OPTIONS[k] for k, v in given.items() if v is not None})
    cfg._source = str(p)
    cfg._overridden = tuple(k for k, v in given.items() if v is not None)
    return cfg


@functools.cache
def _code_identity() -> str:
    """The sha256 of TIAP's own source files: a step run by changed code is run again (a
    version number does not change while one develops a parser)."""

    root = Path(tiap.__file__).parent
    h = hashlib.sha256()
    for f in sorted(root.rglob("*.py")):
        h.update(f.relative_to(root).as_posix().encode())
        h.update(b"\0")
        h.update(f.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def _files(paths: Sequence[Path], exclude: Sequence[Path]) -> list[Path]:
    """The files ``paths`` names: a file itself, a folder every file below it (at any
    depth), leaving out ``exclude`` (caches: a file, or a folder and what is below it)."""
    out: list[Path] = []
    for p in paths:
        found = sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else (
            [p] if p.is_file() else [])
        out.extend(f for f in found
                   if not any(f == x or x in f.parents for x in exclude))
    return out


def _listing(names: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``, ``a, b, c and 2 more``."""
    shown = names if len(names) <= 3 else [*names[:3], f"{len(names) - 3} more"]
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} and {shown[-1]}"


class _Steps:
    """The record of every finished step, ``<out>/.steps/<step>.json``: the step's spec
    (its options, and the sha256 of every file of an earlier step it reads), TIAP's version
    and code, and the sha256 of every file it wrote. A step is up to date only when all of
    them match; :meth:`check` says what does not."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.dir = root / ".steps"
        # step -> {path relative to root: sha256} of its outputs, as checked or written by
        # this run: what a later step that reads them records as its inputs
        self.written: dict[str, dict[str, str]] = {}

    def _rel(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    def needs(self, steps: Sequence[str]) -> dict[str, dict[str, str]]:
        """The inputs of a step that reads the outputs of ``steps``: their sha256s."""
        return {s: self.written.get(s, {}) for s in steps}

    def check(self, step: str, spec: dict[str, Any]) -> str | None:
        """``None`` when ``step`` is up to date, else why it is not (``""``: it never
        finished here)."""

        f = self.dir / f"{step}.json"
        if not f.exists():
            return ""
        try:
            rec = json.loads(f.read_text(encoding="utf-8"))
            old, outputs = rec["spec"], rec["outputs"]
            if not isinstance(outputs, dict) or not isinstance(old, dict):
                raise TypeError
        except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError):
            return f"its record {self._rel(f)} is unreadable or from an older TIAP"
        why = []
        if rec.get("tiap") != __version__ or rec.get("code") != _code_identity():
            why.append("TIAP's code changed since the step ran")
        else:
            why += _spec_change(old, json.loads(json.dumps(spec, default=str, allow_nan=False)))
        gone, changed = [], []
        for rel, sha in outputs.items():
            try:
                now = sha256_file(self.root / rel)
            except FileNotFoundError:
                gone.append(rel)
                continue
            except OSError:  # a folder where the file was, or unreadable
                now = None
            if now != sha:
                changed.append(rel)
        if changed:
            why.append(f"{_listing(changed)} changed since the step wrote "
                       f"{'it' if len(changed) == 1 else 'them'}")
        if gone:
            why.append(f"{_listing(gone)} {'was' if len(gone) == 1 else 'were'} deleted "
                       f"since the step wrote {'it' if len(gone) == 1 else 'them'}")
        if why:
            return "; ".join(why)
        self.written[step] = outputs
        return None

    def mark(self, step: str, spec: dict[str, Any], outputs: Sequence[Path],
             exclude: Sequence[Path], seconds: float) -> None:
        written = {self._rel(f): sha256_file(f) for f in _files(outputs, exclude)}
        self.written[step] = written
        self.dir.mkdir(parents=True, exist_ok=True)
        with atomic_write(self.dir / f"{step}.json") as fh:
            json.dump({"spec": spec, "tiap": __version__, "code": _code_identity(),
                       "outputs": written,
                       "seconds": round(seconds, 3)}, fh, default=str, indent=2, allow_nan=False)


def _spec_change(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """What differs between a step's recorded spec and this run's: the files of earlier
    steps it reads that changed, and the names of the settings that changed."""
    why = []
    old_in, new_in = old.get("needs") or {}, new.get("needs") or {}
    changed = sorted({rel for s in {*old_in, *new_in}
                      for rel in {*old_in.get(s, {}), *new_in.get(s, {})}
                      if old_in.get(s, {}).get(rel) != new_in.get(s, {}).get(rel)})
    if changed:
        why.append(f"its input{'s' if len(changed) > 1 else ''} {_listing(changed)} changed")
    keys = sorted(k for k in {*old, *new} if k != "needs" and old.get(k) != new.get(k))
    if keys:
        why.append(f"its settings changed ({', '.join(keys)})")
    return why


@dataclass
class PipelineResult:
    out: Path
    rescore_dir: Path
    timings: dict[str, float]
    skipped: list[str]
    result: Any = None  # the Scores, or the Summary read back when rescoring was up to date
    sensitivity_dir: Path | None = None
    report_dir: Path | None = None
    #: the winner flips on the headline measure (:func:`tiap.report.flip_summary`)
    flips: FlipSummary | None = None


def run_pipeline(
    cfg: PipelineConfig,
    out: str | Path,
    *,
    data: str | Path | None = None,
    progress: Progress | None = None,
    log: Log = lambda s: None,
    force: bool = False,
) -> PipelineResult:
    """Build every store, retrieve with every retriever, rescore every run under every target.

    Stores, retrieval (BM25), rescoring and Stage III run on ``cfg.engine`` (:mod:`tiap.engine`), made when a
    step first needs it (a rerun with every step up to date starts no Ray) and closed at the
    end.

    The config is :func:`load_config`'s; a run needs the dataset's files (``data``, else
    the data folder), so it is shown, not run, here::

        >>> _ = Path("demo.toml").write_text(
        ...     'name = "demo"\\ndataset = "locomo"\\nretrievers = ["bm25"]\\n'
        ...     '[[stores]]\\nname = "raw"\\nparser = "native"\\n')
        >>> cfg = load_config("demo.toml")
        >>> res = run_pipeline(cfg, "out", log=print)    # doctest: +SKIP
        >>> res.rescore_dir                               # doctest: +SKIP
        PosixPath('out/demo/rescore')
    """

    engines: list[Any] = []

    def engine() -> Any:
        if not engines:
            engines.append(make_engine(cfg.engine, query_shard=cfg.query_shard))
        return engines[0]

    try:
        return _run(cfg, out, data=data, progress=progress, log=log, force=force,
                    engine=engine)
    finally:
        for e in engines:
            e.close()


def _run(cfg: PipelineConfig, out: str | Path, *, data: str | Path | None,
         progress: Progress | None, log: Log, force: bool,
         engine: Callable[[], Any]) -> PipelineResult:
    from tiap.datasets import DataSource, load
    from tiap.datasets.files import manifest
    from tiap.datasets.queryfile import read_queries, write_queries
    from tiap.memory import build_store
    from tiap.memory.build import cache_entries
    from tiap.memory.store import read_store
    from tiap.retrieval import make_retriever, retrieve
    from tiap.retrieval.retrieve import trec_path_for
    from tiap.runs import read_run
    from tiap.scoring.folder import per_query_of, read_summary, write_rescore
    from tiap.scoring.rescore import rescore

    root = Path(out) / cfg.name
    steps = _Steps(root)
    timings: dict[str, float] = {}
    skipped: list[str] = []
    ds = load(cfg.dataset, source=DataSource(data))
    ds.verify()  # before anything is written: a bad --data leaves --out untouched
    if cfg.sessions is not None:
        from tiap.datasets.base import SessionSlice

        ds = SessionSlice(ds, cfg.sessions)
    pinned = manifest(ds.folder)
    ds_sha = hashlib.sha256(json.dumps({p: pinned[p].stored_sha256 for p in ds.file_paths()},
                                       sort_keys=True, allow_nan=False).encode()).hexdigest()

    def step(name: str, spec: dict[str, Any], outputs: Sequence[Path],
             fn: Callable[[], None], *, needs: Sequence[str] = (),
             exclude: Sequence[Path] = ()) -> None:
        """Run ``fn`` unless the step is up to date: its spec (with the sha256 of every
        output of the steps it ``needs``), TIAP's code, and the sha256 of every file it
        wrote (``outputs``: files, or folders and every file below them but ``exclude``)
        all as recorded. Otherwise say why, run it and record all of them again."""
        spec = {**spec, "needs": steps.needs(needs)} if needs else spec
        why = None if force else steps.check(name, spec)
        if why is None and not force:
            skipped.append(name)
            log(f"{name}: up to date, skipped")
            return
        if why:
            log(f"{name}: recomputed: {why}")
        t0 = time.monotonic()
        fn()
        timings[name] = time.monotonic() - t0
        steps.mark(name, spec, outputs, exclude, timings[name])
        log(f"{name}: {timings[name]:.1f} s")

    # 1. the queries, as the dataset defines them
    qpath = root / "queries.jsonl"
    wanted = set(cfg.collections)

    def write_q() -> None:
        every = list(ds.queries_iter())
        qs = [q for q in every if not wanted or q.collection_id in wanted]
        unknown = sorted(wanted - {q.collection_id for q in qs})
        if unknown:  # before anything is written
            known = sorted({q.collection_id for q in every})
            by_option = "collections" in cfg.overridden
            raise TiapError(f"{'option --collections' if by_option else 'key collections'}: "
                            f"{cfg.dataset} has no queries in collection(s) "
                            f"{', '.join(unknown)}{did_you_mean(unknown[0], known)}; it has "
                            f"{len(known)}: {', '.join(known[:5])}"
                            f"{', ...' if len(known) > 5 else ''}",
                            file=None if by_option else (cfg.source or None),
                            code="invalid-value")
        if not qs:
            raise TiapError(f"dataset {cfg.dataset} has no queries", code="invalid-value")
        if cfg.sessions is not None:  # the slice leaves queries out: say how many
            from tiap.datasets.base import SessionSlice

            assert isinstance(ds, SessionSlice)
            total = sum(1 for q in ds.base.queries_iter()
                        if not wanted or q.collection_id in wanted)
            log(f"sessions = {cfg.sessions}: {len(qs):,} of {total:,} queries have their "
                f"evidence wholly in the first {cfg.sessions} sessions; the other "
                f"{total - len(qs):,} are left out")
        write_queries(qpath, qs)

    step("queries", {"dataset": cfg.dataset, "files": ds_sha, "collections": sorted(wanted),
                     "sessions": cfg.sessions}, [qpath], write_q)

    # Each store is kept as it is built, or read once at the first step that needs it, for
    # the later steps (retrieval, rescoring, Stage III's alignment): one copy of its items.
    read_stores: dict[str, Any] = {}
    # what was read (or computed) here, by resolved path, for the later steps: the
    # convention of Stage III, the audit and the report (``preloaded``)
    preloaded: dict[Path, Any] = {}

    def hold(name: str, store: Any) -> Any:
        read_stores[name] = store
        preloaded[(root / "stores" / name / "items.jsonl").resolve()] = store
        gc.freeze()  # kept to the end: out of the collector's way (see below)
        return store

    def store_of(s: StoreSpec) -> Any:
        got = read_stores.get(s.name)
        if got is None:
            got = hold(s.name, read_store(root / "stores" / s.name / "items.jsonl"))
        return got

    # 2. stores; the local model is served only while an llm store is being built
    with contextlib.ExitStack() as server:
        local: list[Any] = []

        def serve() -> None:
            if cfg.local_model is None or local:
                return

            local.append(server.enter_context(LocalServer(
                cfg.local_model, port=cfg.local_port, threads=cfg.local_threads, log=log)))

        for s in cfg.stores:
            sdir = root / "stores" / s.name
            spec = {"dataset": cfg.dataset, "files": ds_sha, "parser": s.parser,
                    "args": s.args,
                    "collections": sorted(wanted), "sessions": cfg.sessions}

            def build(s: StoreSpec = s, sdir: Path = sdir) -> None:
                served = None
                if s in cfg.llm_stores():
                    serve()
                    served = local[0].settings() if local else None
                used = any(st.name == s.name for _, st, _ in cfg.systems())
                with use_engine(engine()):
                    built = build_store(ds, s.parser, sdir, parser_args=dict(s.args),
                                        collections=list(cfg.collections) or None,
                                        progress=progress, store=s.name, served=served,
                                        in_memory=used)
                if built.store is not None:  # what read_store would give, not read back
                    hold(s.name, built.store)

            step(f"store-{s.name}", spec, [sdir / "items.jsonl", sdir / "manifest.json"],
                 build)


    # 3. retrieval
    for system, s, r in cfg.systems():
        trace = root / "runs" / f"{system}.jsonl"
        spec = {"retriever": r, "k": cfg.k}

        def run_retrieval(s: StoreSpec = s, r: str = r, system: str = system,
                          trace: Path = trace) -> None:
            retriever = make_retriever(r)
            with use_engine(engine()):  # BM25 ranks there, dense encodes there
                retrieve(store_of(s), qpath, retriever, trace, depth=cfg.k, system=system)
            for part in (retriever, *getattr(retriever, "components", ())):
                if hasattr(part, "cache_hits"):  # dense: how the embedding cache served
                    log(f"{system}: embeddings {part.cache_hits:,} cached, "
                        f"{part.encoded:,} encoded" + (
                            f"; warning: {part.shard_differing:,} vectors of an interrupted "
                            "run's shards differ from the cache's (the cache's kept)"
                            if part.shard_differing else ""))

        step(f"retrieve-{system}", spec, [trace, trec_path_for(trace)], run_retrieval,
             needs=["queries", f"store-{s.name}"])

    # 4. rescoring, every run under every target (a step like the others: a rerun with the
    # same stores, runs, queries and settings reads the summary back instead)
    rdir = root / "rescore"
    inputs: dict[str, Path] = {"queries": qpath}
    for system, s, _ in cfg.systems():
        inputs[f"items:{system}"] = root / "stores" / s.name / "items.jsonl"
        inputs[f"run:{system}"] = root / "runs" / f"{system}.jsonl"
    rescore_spec = {"inputs": {k: v.relative_to(root).as_posix() for k, v in inputs.items()},
                    "targets": list(cfg.targets), "measures": list(cfg.measures),
                    "credit": cfg.credit, "pipeline": cfg.source,
                    "design": {k: list(v) for k, v in cfg.design.items()}}
    # the steps whose files rescoring reads (and, through its manifest, the audit and
    # Stage III: the run, store and queries of every system)
    store_steps = [f"store-{s.name}" for s in cfg.stores]
    scored = ["queries", *store_steps, *(f"retrieve-{system}" for system, _, _ in cfg.systems())]
    held: dict[str, Any] = {}

    def run_rescore() -> None:
        qs = read_queries(qpath)
        preloaded[qpath.resolve()] = qs
        stores, runs = {}, []
        for system, s, _ in cfg.systems():
            rpath = inputs[f"run:{system}"]
            stores[system] = store_of(s)  # read once, whatever number of runs it serves
            got = read_run(rpath, system=system)
            preloaded[rpath.resolve()] = got
            runs.extend(got)
        gc.freeze()  # what was just read: see below
        with use_engine(engine()):
            result = rescore(runs, qs, stores, targets=cfg.targets, measures=cfg.measures,
                             credit=cfg.credit)
        write_rescore(result, rdir, queries=qs, inputs=inputs, dataset=cfg.dataset,
                      options={"pipeline": cfg.source,
                               "design": {k: list(v) for k, v in cfg.design.items()}})
        held["result"] = result
        preloaded[rdir.resolve()] = result
        preloaded[(rdir / "per_query.csv").resolve()] = per_query_of(result)

    # What is read here lives until the end. Frozen out of the collector's generations, it
    # is not traversed again by each of the hundreds of cyclic collections that rescoring's
    # and Stage III's many small rows trigger (about 0.4 s of the demo's Stage III).
    with _gc_frozen():
        step("rescore", rescore_spec, [rdir], run_rescore, needs=scored)
        result = held.get("result") or read_summary(rdir)

        # 5. the semantic audit of the contested credits, by offline judges (the steps of the
        # CLI's three commands, so that their files and manifests are the same)
        adir = root / "audit"
        gdir = adir / "graded"
        if cfg.audit:
            audit_spec = {"judges": list(cfg.audit)}
            step("audit", audit_spec, [adir],
                 lambda: _offline_audit(rdir, adir, cfg.audit, log, preloaded),
                 needs=["rescore", *scored], exclude=[adir / e for e in cache_entries(
                     adir / VERDICT_CACHE, adir)])

        # 6. the answer stage: TIAP's own answers for a sample, judged, tied to retrieval
        ansdir = root / "answers"
        if cfg.answers is not None:
            ans = cfg.answers
            systems = list(ans.systems) or [system for system, _, _ in cfg.systems()]
            answers_spec = {**ans.model_dump(mode="json"), "systems": systems}
            step("answers", answers_spec, [ansdir],
                 lambda: _answer_stage(cfg, root, systems, ansdir, log),
                 needs=["rescore", *scored],
                 exclude=[ansdir / e for name in (ANSWER_CACHE, ANSWER_VERDICTS)
                          for e in cache_entries(ansdir / name, ansdir)])

        # 7. Stage III and the report (plots need the `report` extra)
        sdir, report_dir = root / "sensitivity", root / "report"
        if cfg.sensitivity:
            from tiap.sensitivity import analyze, write_sensitivity

            configs = {f"{d}-{r}": [f"{m}-{r}" for m in members]
                       for d, members in cfg.design.items() for r in cfg.retrievers}
            sens_spec = {"name": cfg.name, "seed": cfg.seed, "resamples": cfg.resamples,
                         "alpha": cfg.alpha, "correction": cfg.correction,
                         "min_effect": cfg.min_effect, "min_dz": cfg.min_dz,
                         "configs": configs}

            def run_sensitivity() -> None:
                with use_engine(engine()):
                    sens = analyze([(cfg.name, rdir)], seed=cfg.seed, resamples=cfg.resamples,
                                   alpha=cfg.alpha, correction=cfg.correction,
                                   min_effect=cfg.min_effect, min_dz=cfg.min_dz,
                                   configs=configs or None,
                                   preloaded=preloaded)
                write_sensitivity(sens, sdir)

            step("sensitivity", sens_spec, [sdir], run_sensitivity,
                 needs=["rescore", *scored])

            def run_report() -> None:
                from tiap.report import build_report

                build_report([sdir], report_dir, audits=[gdir] if cfg.audit else (),
                             answers=[ansdir / "analysis"] if cfg.answers else (),
                             preloaded=preloaded)

            try:
                step("report", {}, [report_dir], run_report,
                     needs=["rescore", *store_steps, "sensitivity",
                            *(["audit"] if cfg.audit else []),
                            *(["answers"] if cfg.answers else [])])
            except MissingExtraError as exc:
                log(f"report skipped: {exc}")
        flips = None
        if cfg.sensitivity:
            from tiap.report import flip_summary

            flips = flip_summary(sdir)
        return PipelineResult(root, rdir, timings, skipped, result,
                              sdir if cfg.sensitivity else None,
                              report_dir if (report_dir / "index.html").exists() else None,
                              flips)


#: The offline audit's verdict cache, in ``OUT/<name>/audit/``: not an output of the step
#: (a rerun reuses its verdicts), so not among the files its record hashes.
VERDICT_CACHE = "verdicts.sqlite"
#: The answer stage's caches, in ``OUT/<name>/answers/``: not outputs of the step either
ANSWER_CACHE, ANSWER_VERDICTS = "answer-cache.sqlite", "verdicts.sqlite"


def _answer_stage(cfg: PipelineConfig, root: Path, systems: Sequence[str], ansdir: Path,
                  log: Log) -> None:
    """The steps of ``tiap answers generate``, ``judge``, ``evidence`` and ``analyze`` on
    the pipeline's runs, into ``ansdir`` (``generated``, ``judged``, ``evidence``,
    ``analysis``): the local model is served for the generation and LLM judges."""
    from tiap.answers import analyze_files, evidence_files, generate_files, judge_files

    ans = cfg.answers
    assert ans is not None
    ansdir.mkdir(parents=True, exist_ok=True)
    by_system = {system: s.name for system, s, _ in cfg.systems()}
    stores = {by_system[x]: root / "stores" / by_system[x] / "items.jsonl" for x in systems}
    runs = [root / "runs" / f"{x}.jsonl" for x in systems]
    qpath = root / "queries.jsonl"
    log(f"answers: {len(systems)} systems x {ans.sample} queries with {ans.local_model} "
        "(cached: a rerun asks only what is not finished)")
    generated, man = generate_files(
        runs, ansdir / "generated", queries=qpath, stores=stores, dataset=cfg.dataset,
        k=ans.k, token_budget=ans.token_budget, max_tokens=ans.max_tokens, sample=ans.sample,
        sample_seed=ans.seed, local_model=ans.local_model, local_port=ans.local_port,
        cache=ansdir / ANSWER_CACHE, force=True)
    for code, text in manifest_warnings(man.get("warnings"), ansdir / "generated"):
        log(f"answers: warning[{code}]: {text}")
    llm = any(j.split("(")[0] == "llm" for j in ans.judges)
    _, man = judge_files(ansdir / "generated", ansdir / "judged", list(ans.judges),
                         cache=ansdir / ANSWER_VERDICTS,
                         local_model=ans.local_model if llm else None,
                         local_port=ans.local_port, force=True)
    for code, text in manifest_warnings(man.get("warnings"), ansdir / "judged"):
        log(f"answers: judge: warning[{code}]: {text}")
    evidence_files(ansdir / "judged", ansdir / "evidence", queries=qpath, stores=stores,
                   targets=[t.split("=")[0] for t in cfg.targets], force=True)
    analyze_files(ansdir / "judged", ansdir / "analysis", seed=cfg.seed,
                  resamples=cfg.resamples, alpha=cfg.alpha, correction=cfg.correction,
                  force=True)


def _offline_audit(rdir: Path, adir: Path, judges: Sequence[str], log: Log,
                   preloaded: dict[Path, Any]) -> None:
    """The steps of ``tiap audit cases --each``, ``tiap audit judge`` and ``tiap audit
    graded`` on a rescoring, into ``adir``: their files and manifests are the commands' own
    (each manifest records the command that makes it), and the warnings they would print are
    logged, each prefixed by its step. The rescoring's inputs are read once for all three
    (``preloaded``: the stores and queries the pipeline holds are not read again), and each
    step takes the one before it from memory."""
    from tiap.audit import RescoreInputs
    from tiap.audit.steps import find_cases, graded_audit, judge_cases

    cases, judged, graded = adir / "cases.jsonl", adir / "judged", adir / "graded"
    cache = adir / VERDICT_CACHE
    adir.mkdir(parents=True, exist_ok=True)
    shared = RescoreInputs.load(rdir, per_query=preloaded.get((rdir / "per_query.csv").resolve()),
                                held=preloaded)
    with _as_command(["audit", "cases", str(rdir), "--each", "--out", str(cases)]):
        found = find_cases(rdir, cases, each=True, preloaded=shared)
    with _as_command(["audit", "judge", str(cases), *[x for j in judges for x in ("--judge", j)],
                      "--cache", str(cache), "--out", str(judged)]):
        res = judge_cases(found, judged, judges, cache=cache)
    for st in res.stats:
        # information, not an error: a case the judge cannot score stays unjudged (counted
        # here and in the judged folder's manifest; the graded audit applies its policy)
        if st.unscored:
            why = "; ".join(f"{n:,} {reason}" for reason, n in st.unscored_reasons.items())
            log(f"judge: {st.judge} scored {st.scored:,} of {st.cases:,} cases; "
                f"{st.unscored:,} left unjudged ({why})")
    for entry in res.manifest["counts"]:
        for code, text in manifest_warnings(entry.get("warnings"), judged / "manifest.json",
                                            who=entry["judge"]):
            log(f"judge: warning[{code}]: {text}")
    with _as_command(["audit", "graded", str(rdir), "--labels", str(judged / "labels.jsonl"),
                      "--out", str(graded)]):
        got = graded_audit(rdir, [res], graded, preloaded=shared)
    for code, text in manifest_warnings(got.manifest.get("warnings"), graded / "manifest.json"):
        log(f"graded: warning[{code}]: {text}")


@contextlib.contextmanager
def _as_command(argv: list[str]) -> typing.Iterator[None]:
    """Inside the block, manifests record ``tiap ARGV`` as their command line: the command
    that makes the same output."""

    saved = provenance.command_line
    provenance.command_line = ["tiap", *argv]
    try:
        yield
    finally:
        provenance.command_line = saved


@contextlib.contextmanager
def _gc_frozen() -> typing.Iterator[None]:
    """Every object alive now moved to the collector's permanent generation while the block
    runs (``gc.freeze``), back in the oldest one afterwards."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
