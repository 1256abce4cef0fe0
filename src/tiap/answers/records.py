"""Answer sets: fixed answers, the context they were given, and verdicts on them.

One answer per (dataset, system, query): the text a memory system answered, optionally the
context it was given (item ids of one named store, best first), and any verdicts judges gave
it. An answer set is read from and written to one JSON Lines file, ``answers.jsonl``, one
answer per line::

    {"dataset": "locomo", "system": "mem0", "query_id": "conv-26:q0",
     "answer": "7 May 2023", "question": "When did Caroline go to the support group?",
     "reference": "7 May 2023", "category": "temporal", "source_id": "conv0_q0",
     "context": {"store": "mem0", "items": ["m12", "m7"]},
     "verdicts": [{"judge": "gpt-4o|mem0|r0", "model": "gpt-4o",
                   "prompt": "judge_mem0_generous", "prompt_sha256": "3f0c...",
                   "temperature": 0.0, "run": 0, "label": "correct"}]}

Fields of an answer (``dataset``, ``system``, ``query_id`` and ``answer`` required):

- ``answer``: the text (``null`` when the system gave none: counted, and judged wrong by
  no one: such an answer has no verdict unless a file gives one);
- ``question``, ``reference`` (the gold answer), ``category``: as the benchmark states them;
- ``source_id``: the question's id in the file it was imported from (``conv0_q0``);
- ``context``: ``{"store": name, "items": [ids]}``; identity is (store, item), so the store
  is named even when only one is in play;
- ``verdicts``: a list of verdict objects (below).

A *verdict* is a judge configuration and a label. The configuration is named by ``judge``
(unique within the set) and described by ``kind`` (``llm``, ``offline`` or ``human``),
``model``, ``prompt`` (the template's name), ``prompt_sha256`` (of the template file's
bytes), ``temperature``, ``run`` (the repetition, from 0) and ``settings`` (anything else
that changes the verdict: thresholds, ``max_tokens``); every verdict of one ``judge`` must
describe the same configuration (else a located error). ``label`` is ``correct``, ``wrong``,
``ambiguous`` (a human label that is neither) or ``null`` (the judge gave no usable verdict:
``reason`` says why); ``score`` is 1 for ``correct``, 0 for ``wrong`` and null otherwise.

Reading checks every line and reports every problem together (file, line, field): an
unknown key (with the nearest known one), a missing or mistyped field, a label outside the
four, two answers for one (dataset, system, query), two verdicts of one judge on one answer,
two descriptions of one judge.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tiap.errors import Problems, TiapError, require
from tiap.fields import key_problems
from tiap.io import iter_jsonl, write_jsonl

__all__ = [
    "AMBIGUOUS",
    "CORRECT",
    "LABELS",
    "WRONG",
    "Answer",
    "AnswerSet",
    "AnswerVerdict",
    "Context",
    "JudgeConfig",
    "prompt_sha256",
    "read_answers",
    "write_answers",
]

CORRECT, WRONG, AMBIGUOUS = "correct", "wrong", "ambiguous"
#: the labels a verdict may carry (``None``: no usable verdict)
LABELS = (CORRECT, WRONG, AMBIGUOUS)
KINDS = ("llm", "offline", "human")
_SCORE = {CORRECT: 1.0, WRONG: 0.0}

_ANSWER_KEYS = ("dataset", "system", "query_id", "answer", "question", "reference", "category",
                "source_id", "context", "verdicts")
_CONFIG_KEYS = ("judge", "kind", "model", "prompt", "prompt_sha256", "temperature", "run",
                "settings")
_VERDICT_KEYS = (*_CONFIG_KEYS, "label", "score", "reason")


def prompt_sha256(path: str | Path) -> str:
    """The sha256 (hex) of a prompt template file's bytes: what a verdict records.

    >>> _ = Path("judge.txt").write_text("Is {answer} right?\\n")
    >>> prompt_sha256("judge.txt")[:12]
    'b524ca10774b'
    """
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@dataclass(frozen=True)
class JudgeConfig:
    """One judge configuration: (model, prompt, decoding, run), under a unique name.

    >>> JudgeConfig("gpt-4o|mem0|r0", kind="llm", model="gpt-4o", prompt="mem0",
    ...             temperature=0.0, run=0).factors()
    {'model': 'gpt-4o', 'prompt': 'mem0', 'temperature': 0.0, 'run': 0}
    """

    judge: str
    kind: str = "llm"
    model: str | None = None
    prompt: str | None = None
    prompt_sha256: str | None = None
    temperature: float | None = None
    run: int = 0
    settings: Mapping[str, Any] = field(default_factory=dict)

    def factors(self) -> dict[str, Any]:
        """The crossed factors a decomposition of variance can use."""
        return {"model": self.model, "prompt": self.prompt, "temperature": self.temperature,
                "run": self.run}

    def to_json(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["settings"] = dict(self.settings)
        return d


@dataclass(frozen=True)
class AnswerVerdict:
    """One judge's label on one answer (``judge`` names a :class:`JudgeConfig`).

    >>> AnswerVerdict("strict", "correct").score, AnswerVerdict("strict", None).score
    (1.0, None)
    """

    judge: str
    label: str | None
    reason: str | None = None

    def __post_init__(self) -> None:
        if self.label is not None and self.label not in LABELS:
            raise TiapError(f"verdict label {self.label!r}: expected one of "
                            f"{', '.join(LABELS)} or null", code="invalid-value")

    @property
    def score(self) -> float | None:
        """1 for correct, 0 for wrong, ``None`` for ambiguous or no verdict."""
        return None if self.label is None else _SCORE.get(self.label)


@dataclass(frozen=True)
class Context:
    """The context an answer was given: item ids of one named store, best first.

    >>> Context("mem0", ("m12", "m7")).keys()
    [('mem0', 'm12'), ('mem0', 'm7')]
    """

    store: str
    items: tuple[str, ...]

    def keys(self) -> list[tuple[str, str]]:
        """(store, item) of each item: identity where two stores meet."""
        return [(self.store, i) for i in self.items]


@dataclass(frozen=True)
class Answer:
    """One system's answer to one query, with its context and verdicts.

    >>> a = Answer("locomo", "mem0", "conv-26:q0", "7 May 2023", reference="7 May 2023",
    ...            verdicts=(AnswerVerdict("strict", "correct"),))
    >>> a.key, a.verdict("strict").label, a.verdict("mem0") is None
    (('locomo', 'mem0', 'conv-26:q0'), 'correct', True)
    """

    dataset: str
    system: str
    query_id: str
    answer: str | None
    question: str | None = None
    reference: str | None = None
    category: str | None = None
    source_id: str | None = None
    context: Context | None = None
    verdicts: tuple[AnswerVerdict, ...] = ()

    @property
    def key(self) -> tuple[str, str, str]:
        """(dataset, system, query id): an answer's identity."""
        return (self.dataset, self.system, self.query_id)

    def verdict(self, judge: str) -> AnswerVerdict | None:
        """This answer's verdict by ``judge`` (``None``: not judged by it)."""
        for v in self.verdicts:
            if v.judge == judge:
                return v
        return None

    def with_verdicts(self, verdicts: Iterable[AnswerVerdict]) -> Answer:
        """This answer with ``verdicts`` added (a judge it already has is replaced)."""
        new = {v.judge: v for v in verdicts}
        kept = tuple(v for v in self.verdicts if v.judge not in new)
        return dataclasses.replace(self, verdicts=kept + tuple(new.values()))

    def to_json(self, configs: Mapping[str, JudgeConfig]) -> dict[str, Any]:
        d: dict[str, Any] = {"dataset": self.dataset, "system": self.system,
                             "query_id": self.query_id, "answer": self.answer}
        for k in ("question", "reference", "category", "source_id"):
            if getattr(self, k) is not None:
                d[k] = getattr(self, k)
        if self.context is not None:
            d["context"] = {"store": self.context.store, "items": list(self.context.items)}
        if self.verdicts:
            d["verdicts"] = []
            for v in self.verdicts:
                row = configs[v.judge].to_json()
                row.update(label=v.label, score=v.score)
                if v.reason is not None:
                    row["reason"] = v.reason
                d["verdicts"].append(row)
        return d


@dataclass(frozen=True)
class AnswerSet:
    """Answers with the judge configurations of their verdicts, and what importing them
    left out (``warnings``: counted, each with examples).

    >>> cfg = JudgeConfig("strict", model="gpt-5", prompt="strict")
    >>> s = AnswerSet((Answer("locomo", "A", "q1", "Paris", verdicts=(AnswerVerdict("strict",
    ...                       "correct"),)),
    ...                Answer("locomo", "B", "q1", "Rome", verdicts=(AnswerVerdict("strict",
    ...                       "wrong"),))), {"strict": cfg})
    >>> s.systems, s.judges, len(s)
    (('A', 'B'), ('strict',), 2)
    >>> [(r["system"], r["score"]) for r in s.verdict_rows()]
    [('A', 1.0), ('B', 0.0)]
    """

    answers: tuple[Answer, ...]
    configs: Mapping[str, JudgeConfig] = field(default_factory=dict)
    warnings: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        seen: set[tuple[str, str, str]] = set()
        problems = Problems()
        for a in self.answers:
            if a.key in seen:
                problems.add(f"two answers of system {a.system!r} to query {a.query_id!r} "
                             f"of {a.dataset!r}", query_id=a.query_id, code="duplicate")
            seen.add(a.key)
            for v in a.verdicts:
                if v.judge not in self.configs:
                    problems.add(f"verdict of judge {v.judge!r}, which the set does not "
                                 "describe", query_id=a.query_id)
        problems.raise_if_any()

    def __len__(self) -> int:
        return len(self.answers)

    def __iter__(self) -> Iterator[Answer]:
        return iter(self.answers)

    @property
    def systems(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(a.system for a in self.answers))

    @property
    def judges(self) -> tuple[str, ...]:
        """The judge configurations with at least one verdict, in first-seen order."""
        return tuple(dict.fromkeys(v.judge for a in self.answers for v in a.verdicts))

    @property
    def datasets(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(a.dataset for a in self.answers))

    def select(self, *, systems: Sequence[str] | None = None,
               judges: Sequence[str] | None = None) -> AnswerSet:
        """The answers of ``systems`` with the verdicts of ``judges`` (``None``: all)."""
        for what, asked, known in (("system", systems, self.systems),
                                   ("judge", judges, tuple(self.configs))):
            missing = [x for x in (asked or ()) if x not in known]
            if missing:
                raise TiapError(f"no {what} {', '.join(map(repr, missing))} in the answer "
                                f"set; it has {', '.join(known) or 'none'}", code="usage")
        keep_j = None if judges is None else set(judges)
        out = []
        for a in self.answers:
            if systems is not None and a.system not in systems:
                continue
            if keep_j is not None:
                a = dataclasses.replace(a, verdicts=tuple(v for v in a.verdicts
                                                          if v.judge in keep_j))
            out.append(a)
        configs = {k: c for k, c in self.configs.items() if keep_j is None or k in keep_j}
        return AnswerSet(tuple(out), configs, self.warnings)

    def with_verdicts(self, configs: Iterable[JudgeConfig],
                      verdicts: Mapping[tuple[str, str, str], Iterable[AnswerVerdict]]
                      ) -> AnswerSet:
        """This set with more verdicts (keyed by answer key) under more configurations."""
        cfgs = dict(self.configs)
        for c in configs:
            old = cfgs.get(c.judge)
            if old is not None and old != c:
                raise TiapError(f"judge {c.judge!r} is already in the set with another "
                                "configuration; give the new one another name", code="usage")
            cfgs[c.judge] = c
        answers = tuple(a.with_verdicts(verdicts.get(a.key, ())) for a in self.answers)
        return AnswerSet(answers, cfgs, self.warnings)

    def verdict_rows(self) -> list[dict[str, Any]]:
        """One row per (answer, verdict): the long table statistics are computed from."""
        rows = []
        for a in self.answers:
            for v in a.verdicts:
                rows.append({"dataset": a.dataset, "system": a.system, "query_id": a.query_id,
                             "category": a.category, "judge": v.judge, "label": v.label,
                             "score": v.score})
        return rows

    def to_frame(self) -> Any:
        """:meth:`verdict_rows` as a pandas DataFrame (the ``frames`` extra)."""
        pd = require("pandas", "frames")
        return pd.DataFrame(self.verdict_rows(),
                            columns=["dataset", "system", "query_id", "category", "judge",
                                     "label", "score"])


# ------------------------------------------------------------------------------------------
# reading and writing


def _shown(value: Any) -> str:
    """A JSON value as a message shows it."""
    return json.dumps(value, allow_nan=False)


def _opt_str(d: Mapping[str, Any], key: str, problems: Problems, line: int) -> str | None:
    v = d.get(key)
    if v is None or isinstance(v, str):
        return v
    problems.add(f"field {key!r} must be a string or null, got {type(v).__name__}", line,
                 code="input")
    return None


def _req_str(d: Mapping[str, Any], key: str, problems: Problems, line: int) -> str | None:
    v = d.get(key)
    if isinstance(v, str) and v:
        return v
    problems.add(f"field {key!r} is required: a non-empty string"
                 + ("" if key not in d else f", got {_shown(v)}"), line)
    return None


def _config(d: Mapping[str, Any], problems: Problems, line: int) -> JudgeConfig | None:
    name = _req_str(d, "judge", problems, line)
    kind = d.get("kind", "llm")
    if kind not in KINDS:
        problems.add(f"field 'kind' is {kind!r}; expected one of {', '.join(KINDS)}", line,
                     code="invalid-value")
        return None
    temp = d.get("temperature")
    if temp is not None and (isinstance(temp, bool) or not isinstance(temp, (int, float))):
        problems.add(f"field 'temperature' must be a number or null, got {_shown(temp)}",
                     line)
        return None
    run = d.get("run", 0)
    if isinstance(run, bool) or not isinstance(run, int) or run < 0:
        problems.add(f"field 'run' must be an integer >= 0, got {_shown(run)}", line)
        return None
    settings = d.get("settings", {})
    if not isinstance(settings, dict):
        problems.add("field 'settings' must be an object", line)
        return None
    strs = [_opt_str(d, k, problems, line) for k in ("model", "prompt", "prompt_sha256")]
    if name is None:
        return None
    return JudgeConfig(name, kind, *strs, temperature=None if temp is None else float(temp),
                       run=run, settings=settings)


def _verdict(d: Any, problems: Problems, line: int, configs: dict[str, JudgeConfig],
             where: dict[str, int]) -> AnswerVerdict | None:
    if not isinstance(d, dict):
        problems.add("each verdict must be an object", line)
        return None
    for msg in key_problems(d, _VERDICT_KEYS, "verdict"):
        problems.add(msg, line)
    cfg = _config(d, problems, line)
    label = d.get("label")
    if label is not None and label not in LABELS:
        problems.add(f"verdict label {label!r}: expected one of {', '.join(LABELS)} or null",
                     line, code="invalid-value")
        return None
    score = d.get("score")
    want = None if label is None else _SCORE.get(label)
    if "score" in d and score != want:
        problems.add(f"verdict score {_shown(score)} does not match its label "
                     f"{label!r} (expected {_shown(want)})", line, code="invalid-value")
    if cfg is None:
        return None
    old = configs.get(cfg.judge)
    if old is None:
        configs[cfg.judge] = cfg
        where[cfg.judge] = line
    elif old != cfg:
        problems.add(f"judge {cfg.judge!r} is described otherwise here than on line "
                     f"{where[cfg.judge]}: one name, one configuration", line,
                     code="invalid-value")
    return AnswerVerdict(cfg.judge, label, _opt_str(d, "reason", problems, line))


def _answer(d: Any, problems: Problems, line: int, configs: dict[str, JudgeConfig],
            where: dict[str, int]) -> Answer | None:
    if not isinstance(d, dict):
        problems.add("each line must be a JSON object (one answer)", line)
        return None
    for msg in key_problems(d, _ANSWER_KEYS, "answer"):
        problems.add(msg, line)
    ds, system, qid = (_req_str(d, k, problems, line) for k in ("dataset", "system",
                                                                  "query_id"))
    if "answer" not in d:
        problems.add("field 'answer' is required (null when the system gave none)", line)
    text = _opt_str(d, "answer", problems, line)
    opt = {k: _opt_str(d, k, problems, line) for k in ("question", "reference", "category",
                                                         "source_id")}
    ctx = None
    if d.get("context") is not None:
        c = d["context"]
        ok = (isinstance(c, dict) and set(c) == {"store", "items"}
              and isinstance(c["store"], str) and c["store"]
              and isinstance(c["items"], list)
              and all(isinstance(i, str) and i for i in c["items"]))
        if not ok:
            problems.add('field \'context\' must be {"store": name, "items": [ids]} with '
                         "non-empty strings", line)
        else:
            ctx = Context(c["store"], tuple(c["items"]))
    verdicts: list[AnswerVerdict] = []
    raw = d.get("verdicts", [])
    if not isinstance(raw, list):
        problems.add("field 'verdicts' must be a list", line)
        raw = []
    for v in raw:
        got = _verdict(v, problems, line, configs, where)
        if got is None:
            continue
        if any(x.judge == got.judge for x in verdicts):
            problems.add(f"two verdicts of judge {got.judge!r} on one answer", line,
                         code="duplicate")
            continue
        verdicts.append(got)
    if ds is None or system is None or qid is None:
        return None
    return Answer(ds, system, qid, text, context=ctx, verdicts=tuple(verdicts), **opt)


def read_answers(path: str | Path) -> AnswerSet:
    """Read an ``answers.jsonl`` file (module docstring); every problem is reported together.

    >>> _ = Path("answers.jsonl").write_text(
    ...     '{"dataset": "locomo", "system": "A", "query_id": "conv-26:q0", "answer": "Paris",'
    ...     ' "verdicts": [{"judge": "f1", "kind": "offline", "label": "correct"}]}\\n')
    >>> s = read_answers("answers.jsonl")
    >>> s.systems, s.configs["f1"].kind, s.answers[0].verdict("f1").score
    (('A',), 'offline', 1.0)
    >>> _ = Path("bad.jsonl").write_text('{"dataset": "locomo", "sytem": "A", "answer": "x"}\\n')
    >>> read_answers("bad.jsonl")
    Traceback (most recent call last):
    ...
    tiap.errors.TiapError: bad.jsonl:1: unknown key 'sytem' in answer; did you mean 'system'?
    bad.jsonl:1: field 'system' is required: a non-empty string
    bad.jsonl:1: field 'query_id' is required: a non-empty string
    """
    problems = Problems(path)
    configs: dict[str, JudgeConfig] = {}
    where: dict[str, int] = {}
    answers: list[Answer] = []
    lines: dict[tuple[str, str, str], int] = {}
    for line, value in iter_jsonl(path, problems):
        a = _answer(value, problems, line, configs, where)
        if a is None:
            continue
        if a.key in lines:
            problems.add(f"a second answer of system {a.system!r} to query {a.query_id!r} "
                         f"(the first is on line {lines[a.key]})", line, code="duplicate")
            continue
        lines[a.key] = line
        answers.append(a)
    problems.raise_if_any()
    if not answers:
        raise TiapError("no answers in the file", file=path, code="invalid-value")
    return AnswerSet(tuple(answers), configs)


def write_answers(answers: AnswerSet, path: str | Path) -> int:
    """Write ``answers`` as ``answers.jsonl`` (atomically); returns the number of answers.

    >>> s = AnswerSet((Answer("locomo", "A", "q1", "Paris"),))
    >>> write_answers(s, "out/answers.jsonl"), read_answers("out/answers.jsonl") == s
    (1, True)
    """
    return write_jsonl(path, (a.to_json(answers.configs) for a in answers))
