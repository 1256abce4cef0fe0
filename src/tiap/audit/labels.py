"""Audit labels: the rubric's vocabulary, its normalisation, and the ``labels.jsonl`` rows.

The semantic label says whether a credited memory supports the query's reference answer
(the paper's Stage III rubric, section 3.3):

- ``supports``: the memory alone states what the reference answer needs;
- ``partial``: it is relevant but incomplete (part of the answer, a dropped condition, a
  changed temporal scope, an inference still needed);
- ``does_not_support``: it omits the answer or keeps only weakly related context.

A judge that cannot give one of the three (an unparseable reply, an HTTP failure after its
retries, a reference answer with nothing to compare) gives ``unscored`` with its ``reason``;
an unscored verdict is never counted as any label, it is missing data.

The serving label says which stored form a deployed system should serve for this query:
``transformed_ok`` (the derived memory serves at least as well as the raw turn),
``raw_needed`` (the transformation lost something the raw turn has), ``either_ok``, or
``unclear``. The paper's files spell ``raw_needed`` as ``raw_required``; both are read.

The binary collapse used in agreement statistics is ``supports`` + ``partial`` ->
``relevant``, ``does_not_support`` -> ``not_relevant`` (the paper's appendix G).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tiap.config import did_you_mean
from tiap.errors import Problem, TiapError
from tiap.ids import ItemKey
from tiap.io import iter_jsonl, write_jsonl
from tiap.llm.client import redact

__all__ = [
    "ANSWER_LABELS",
    "BINARY_LABELS",
    "DOES_NOT_SUPPORT",
    "GRADES",
    "PARTIAL",
    "SEMANTIC_LABELS",
    "SERVING_LABELS",
    "SUPPORTS",
    "UNSCORED",
    "LabelRecord",
    "Verdict",
    "binary_label",
    "label_rows",
    "normalize_label",
    "normalize_serving",
    "read_labels",
    "redactor",
    "select_judges",
    "write_labels",
]

SUPPORTS = "supports"
PARTIAL = "partial"
DOES_NOT_SUPPORT = "does_not_support"
UNSCORED = "unscored"

#: The three semantic labels, from most to least support (the order of every table).
SEMANTIC_LABELS: tuple[str, ...] = (SUPPORTS, PARTIAL, DOES_NOT_SUPPORT)
#: Serving labels.
SERVING_LABELS: tuple[str, ...] = ("transformed_ok", "raw_needed", "either_ok", "unclear")
#: The labels of an answer judge (:mod:`tiap.answers.judges`): a verdict on an answer, not
#: on a memory; they share the verdict cache and :func:`tiap.audit.run.run_judges`.
ANSWER_LABELS: tuple[str, ...] = ("correct", "wrong")
#: The binary collapse: supports and partial are relevant.
BINARY_LABELS: tuple[str, ...] = ("relevant", "not_relevant")
#: Graded relevance of each label (linear gains for graded nDCG).
GRADES: Mapping[str, int] = {SUPPORTS: 2, PARTIAL: 1, DOES_NOT_SUPPORT: 0}

_SEMANTIC_ALIASES: dict[str, str] = {
    "supports": SUPPORTS,
    "support": SUPPORTS,
    "supported": SUPPORTS,
    "full": SUPPORTS,
    "fully_supports": SUPPORTS,
    "support_ok": SUPPORTS,
    "partial": PARTIAL,
    "partially_supports": PARTIAL,
    "partial_support": PARTIAL,
    "partially_supported": PARTIAL,
    "partial_ok": PARTIAL,
    "does_not_support": DOES_NOT_SUPPORT,
    "doesnt_support": DOES_NOT_SUPPORT,
    "not_supported": DOES_NOT_SUPPORT,
    "no_support": DOES_NOT_SUPPORT,
    "unsupported": DOES_NOT_SUPPORT,
    "not_support": DOES_NOT_SUPPORT,
}

_SERVING_ALIASES: dict[str, str] = {
    "transformed_ok": "transformed_ok",
    "transformed": "transformed_ok",
    "raw_needed": "raw_needed",
    "raw_required": "raw_needed",
    "either_ok": "either_ok",
    "either": "either_ok",
    "unclear": "unclear",
}

_SEP = re.compile(r"[\s\-]+")


def _key(text: str) -> str:
    return _SEP.sub("_", text.strip().strip("\"'`.").lower()).replace("'", "")


def normalize_label(text: Any, aliases: Mapping[str, str] | None = None) -> str | None:
    """The semantic label ``text`` names (case, spaces and hyphens ignored), or ``None``.

    Accepted spellings are listed in ``_SEMANTIC_ALIASES`` (``support``, ``partially
    supports``, ``not supported``, ...); ``aliases`` adds more (for example a human
    annotator's typos, which :mod:`tiap.audit.human` declares explicitly).
    """
    if not isinstance(text, str) or not text.strip():
        return None
    k = _key(text)
    if aliases and k in aliases:
        return aliases[k]
    return _SEMANTIC_ALIASES.get(k)


def normalize_serving(text: Any) -> str | None:
    """The serving label ``text`` names, or ``None`` (``raw_required`` reads as ``raw_needed``)."""
    if not isinstance(text, str) or not text.strip():
        return None
    return _SERVING_ALIASES.get(_key(text))


def binary_label(label: str) -> str | None:
    """``relevant`` for supports/partial, ``not_relevant`` for does_not_support, else None."""
    if label in (SUPPORTS, PARTIAL):
        return "relevant"
    if label == DOES_NOT_SUPPORT:
        return "not_relevant"
    return None


@dataclass(frozen=True)
class Verdict:
    """What a judge says about one case.

    Attributes:
        label: a semantic label (an answer label for an answer judge), or ``unscored``.
        serving_label: a serving label, or ``None`` when the judge gives none.
        reason: why the verdict is ``unscored``; for a scored one, how its label was read
            when not as usual (``label recovered from invalid JSON: ...``), else ``None``.
        notes: the judge's own explanation, when it gives one.
        raw_response: the judge's reply exactly as received (LLM judges), else ``None``.
        score: the statistic an offline judge thresholds (coverage, cosine), else ``None``.
        attempts: requests made for this verdict (1 for offline judges).
        response: transport metadata (HTTP status, the model the server names, usage).

    Example: what a custom judge's :meth:`~tiap.audit.judges.Judge.ask` returns.

    >>> Verdict("supports", score=1.0).scored
    True
    >>> Verdict("unscored", reason="the item has no text").scored  # missing data, no label
    False
    >>> Verdict("maybe")
    Traceback (most recent call last):
    ...
    ValueError: label must be one of ('supports', 'partial', 'does_not_support', 'correct', 'wrong') or 'unscored', got 'maybe'
    """

    label: str
    serving_label: str | None = None
    reason: str | None = None
    notes: str | None = None
    raw_response: str | None = None
    score: float | None = None
    attempts: int = 1
    response: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.label not in (*SEMANTIC_LABELS, *ANSWER_LABELS, UNSCORED):
            raise ValueError(f"label must be one of {(*SEMANTIC_LABELS, *ANSWER_LABELS)} or "
                             f"'unscored', got {self.label!r}")
        if self.label == UNSCORED and not self.reason:
            raise ValueError("an unscored verdict needs its reason")

    @property
    def scored(self) -> bool:
        return self.label != UNSCORED


@dataclass(frozen=True)
class LabelRecord:
    """One row of ``labels.jsonl``: a judge's verdict on one case, with where it came from.

    ``store`` and ``item_id`` are the judged item's identity (copied from the case; item
    ids are unique only within a store); ``""`` in files written before stores were named.
    ``settings`` are the judge's recorded settings (template, rubric version, model, parse
    pattern, temperature, thresholds: everything needed to rebuild it; never an API key).
    ``request_key`` is the verdict's key: the sha256 of the request the judge made for the
    case (:meth:`tiap.audit.judges.Judge.request`), so a verdict is reused exactly for the
    same request. ``unit`` names the judgment when one judgment labels several cases (the
    paper's validation files label one memory once for its Source and its Canonical case);
    ``""``: the case itself. ``timing`` holds ``started`` (UTC, ISO 8601), ``seconds`` and
    ``attempts``. ``origin`` is where the row was read from (not part of its value).

    Example: a judge's verdict on the canonical case of query ``q1``, whose credited item is
    ``m1`` of the store ``default``.

    >>> r = LabelRecord("A:q1:canonical", "lexical", "supports", store="default",
    ...                 query_id="q1", target="canonical", item_id="m1")
    >>> r.scored, str(r.item_key), r.judgment
    (True, 'default/m1', 'A:q1:canonical')
    >>> r.to_json()["label"], r.to_json()["store"]
    ('supports', 'default')
    """

    case_id: str
    judge: str
    label: str
    serving_label: str | None = None
    reason: str | None = None
    notes: str | None = None
    raw_response: str | None = None
    score: float | None = None
    dataset: str = ""
    system: str = ""
    store: str = ""
    query_id: str = ""
    target: str = ""
    item_id: str = ""
    request_key: str = ""
    unit: str = ""
    settings: Mapping[str, Any] = field(default_factory=dict)
    timing: Mapping[str, Any] = field(default_factory=dict)
    response: Mapping[str, Any] | None = None
    origin: tuple[str, int] | None = field(default=None, compare=False, repr=False)

    @property
    def scored(self) -> bool:
        return self.label in SEMANTIC_LABELS

    @property
    def item_key(self) -> ItemKey:
        """The judged item's identity, ``(store, item_id)``."""
        return ItemKey(self.store, self.item_id)

    @property
    def judgment(self) -> str:
        """What one judgment covers: ``unit`` when given, else the case."""
        return self.unit or self.case_id

    def where(self) -> dict[str, Any]:
        """``file`` and ``line`` of the row (for :class:`~tiap.errors.TiapError`)."""
        return {"file": self.origin[0], "line": self.origin[1]} if self.origin else {}

    def to_json(self) -> dict[str, Any]:
        row: dict[str, Any] = {
            "case_id": self.case_id,
            "judge": self.judge,
            "label": self.label,
            "serving_label": self.serving_label,
            "reason": self.reason,
            "notes": self.notes,
            "raw_response": self.raw_response,
            "score": self.score,
            "dataset": self.dataset,
            "system": self.system,
            "store": self.store or None,
            "query_id": self.query_id,
            "target": self.target,
            "item_id": self.item_id,
            "request_key": self.request_key,
            "timing": dict(self.timing),
            "settings": dict(self.settings),
        }
        if self.unit:
            row["unit"] = self.unit
        if self.response is not None:
            row["response"] = dict(self.response)
        return row

    @classmethod
    def from_json(cls, obj: Any, *, file: str | Path | None = None,
                  line: int | None = None) -> LabelRecord:
        where: dict[str, Any] = {"file": file, "line": line}
        if not isinstance(obj, dict):
            raise TiapError("a label row must be a JSON object", **where)
        for key in ("case_id", "judge", "label"):
            if not isinstance(obj.get(key), str) or not obj[key]:
                raise TiapError(f"label row has no {key!r}", **where)
        label = obj["label"]
        if label not in (*SEMANTIC_LABELS, UNSCORED):
            raise TiapError(f"label {label!r} is not one of {', '.join(SEMANTIC_LABELS)}, "
                            "unscored", record=obj["case_id"], **where)
        score = obj.get("score")
        return cls(
            case_id=obj["case_id"],
            judge=obj["judge"],
            label=label,
            serving_label=obj.get("serving_label"),
            reason=obj.get("reason"),
            notes=obj.get("notes"),
            raw_response=obj.get("raw_response"),
            score=None if score is None else float(score),
            dataset=str(obj.get("dataset") or ""),
            system=str(obj.get("system") or ""),
            store=str(obj.get("store") or ""),
            query_id=str(obj.get("query_id") or ""),
            target=str(obj.get("target") or ""),
            item_id=str(obj.get("item_id") or ""),
            request_key=str(obj.get("request_key") or ""),
            unit=str(obj.get("unit") or ""),
            settings=dict(obj.get("settings") or {}),
            timing=dict(obj.get("timing") or {}),
            response=obj.get("response"),
            origin=None if file is None or line is None else (str(file), line),
        )


def iter_labels(path: str | Path) -> Iterator[LabelRecord]:
    for line, obj in iter_jsonl(path):
        yield LabelRecord.from_json(obj, file=path, line=line)


def read_labels(paths: str | Path | Iterable[str | Path], *,
                held: Mapping[Path, Sequence[Mapping[str, Any]]] | None = None,
                ) -> list[LabelRecord]:
    """Read one or more ``labels.jsonl`` files.

    ``held``: the rows of some of the files (by path, as given), already in memory (what
    :func:`label_rows` gave the writer of the file): they are read as the file's lines.

    A (case, judge) pair labelled twice, in one file or across files, is an error naming
    both places: agreement statistics need one label per rater and case. A file with no
    label is an error naming it: every figure would be computed as if it held none.

    Example: one file written and read back; the same file read twice labels each case
    twice, and both rows are reported.

    >>> rows = [LabelRecord("A:q1:canonical", "lexical", "supports", query_id="q1", item_id="m1"),
    ...         LabelRecord("A:q2:canonical", "lexical", "does_not_support", query_id="q2",
    ...                     item_id="m2")]
    >>> write_labels("labels.jsonl", rows)
    2
    >>> [(r.case_id, r.label, r.origin) for r in read_labels("labels.jsonl")]
    [('A:q1:canonical', 'supports', ('labels.jsonl', 1)),
     ('A:q2:canonical', 'does_not_support', ('labels.jsonl', 2))]
    >>> read_labels(["labels.jsonl", "labels.jsonl"])
    Traceback (most recent call last):
    ...
    tiap.errors.TiapError: labels.jsonl:1, record A:q1:canonical: judge 'lexical' labels this case twice (first at labels.jsonl:1)
    labels.jsonl:2, record A:q2:canonical: judge 'lexical' labels this case twice (first at labels.jsonl:2)
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    out: list[LabelRecord] = []
    seen: dict[tuple[str, str], str] = {}
    problems: list[Problem] = []
    for p in paths:
        before = len(out) + len(problems)
        rows = held.get(Path(p)) if held else None
        for line, obj in (enumerate(rows, start=1) if rows is not None else iter_jsonl(p)):
            rec = LabelRecord.from_json(obj, file=p, line=line)
            key = (rec.case_id, rec.judge)
            if key in seen:
                problems.append(Problem(f"judge {rec.judge!r} labels this case twice (first "
                                        f"at {seen[key]})", file=str(p), line=line,
                                        record=rec.case_id))
                continue
            seen[key] = f"{p}:{line}"
            out.append(rec)
        if len(out) + len(problems) == before:  # a figure read from it would count nothing
            problems.append(Problem("the labels file holds no label (an empty file: did "
                                    "`tiap audit judge` write it?)", file=str(p)))
    if problems:
        raise TiapError(problems=problems)
    return out


def select_judges(labels: Iterable[LabelRecord], judges: Sequence[str] | None = None, *,
                  who: str = "judge") -> list[LabelRecord]:
    """The labels of ``judges`` (every judge of ``labels`` when ``None``), checked before
    any figure is computed from them. Each of these is an error naming the files the labels
    came from and the judges each holds (all found are reported together):

    - no label at all (``error[input]``);
    - a judge asked for twice, or one that no label names (``error[invalid-value]``, with a
      did-you-mean);
    - a judge taken (asked for, or any judge when ``judges`` is ``None``) whose every label
      is ``unscored`` (``error[input]``, with its reasons): it would count nothing, and the
      figures would read as if it had been counted.

    ``who`` names the raters in the messages (``judge``, ``human rater``).
    """
    labs = list(labels)
    if not labs:
        raise TiapError(f"no labels: there is no {who} to compute anything from")
    per_file: dict[str, dict[str, int]] = {}  # file -> judge -> labels
    for r in labs:
        f = r.origin[0] if r.origin else ""
        per_file.setdefault(f, {})
        per_file[f][r.judge] = per_file[f].get(r.judge, 0) + 1
    one_file = next(iter(per_file)) if len(per_file) == 1 and "" not in per_file else None

    def held() -> str:
        def names(js: Mapping[str, int]) -> str:
            return ", ".join(f"{j} ({n:,} labels)" for j, n in js.items())
        if len(per_file) == 1:
            return f"the {who}s of the labels: {names(next(iter(per_file.values())))}"
        return f"the {who}s of the labels: " + "; ".join(
            f"{f or 'given in code'}: {names(js)}" for f, js in per_file.items())

    def files_of(judge: str) -> list[str]:
        return [f for f, js in per_file.items() if judge in js and f]

    known = list(dict.fromkeys(r.judge for r in labs))
    problems: list[Problem] = []
    wanted = known if judges is None else list(judges)
    first: dict[str, int] = {}
    for i, j in enumerate(wanted, start=1):
        if j in first:
            problems.append(Problem(f"{who} {j!r} is asked for twice (items {first[j]} and "
                                    f"{i})", file=one_file, code="invalid-value"))
        first.setdefault(j, i)

    for j in first:
        if j not in known:
            problems.append(Problem(f"{who} {j!r} is asked for, but no label names it"
                                    f"{did_you_mean(j, known)}; {held()}", file=one_file,
                                    code="invalid-value"))
    chosen = set(first)
    for j in first:
        mine = [r for r in labs if r.judge == j]
        if mine and not any(r.scored for r in mine):
            reasons = Counter(r.reason or "no reason given" for r in mine)
            why = "; ".join(f"{n:,} x {reason}" for reason, n in reasons.most_common(3))
            fs = files_of(j)
            where = f" in {', '.join(fs)}" if len(fs) > 1 else ""
            n = "1 label" if len(mine) == 1 else f"{len(mine):,} labels"
            problems.append(Problem(f"{who} {j!r} gives no scored label: its {n}{where}, all "
                                    f"unscored ({why}); judge the cases again (an endpoint's "
                                    f"invalid replies are asked again), or leave the {who} "
                                    "out",
                                    file=fs[0] if len(fs) == 1 else None, code="input"))
    if problems:
        codes = {p.code for p in problems}
        raise TiapError(problems=problems, code=codes.pop() if len(codes) == 1 else None)
    return [r for r in labs if r.judge in chosen]


def write_labels(path: str | Path, records: Iterable[LabelRecord]) -> int:
    """Atomically write ``labels.jsonl``, every row redacted (:func:`tiap.llm.client.redact`: no
    configured key, bearer token or authorization value reaches the file); returns the
    number of rows.

    Example: one row per line, in the order given.

    >>> write_labels("labels.jsonl", [LabelRecord("A:q1:canonical", "lexical", "partial")])
    1
    >>> import json
    >>> row = json.loads(open("labels.jsonl").readline())
    >>> row["case_id"], row["judge"], row["label"]
    ('A:q1:canonical', 'lexical', 'partial')
    """
    return write_jsonl(path, label_rows(records))


def label_rows(records: Iterable[LabelRecord]) -> list[dict[str, Any]]:
    """The rows :func:`write_labels` writes, one per record, redacted.

    >>> label_rows([LabelRecord("A:q1:canonical", "lexical", "partial")])[0]["label"]
    'partial'
    """
    red = redactor()
    return [red(r.to_json()) for r in records]


def redactor() -> Callable[[Any], Any]:
    """A :func:`tiap.llm.client.redact` that remembers the strings it has redacted: the
    same result, each distinct string checked once (the rows of one file repeat their
    settings, labels and ids). For one batch of rows: a secret registered later is not
    seen by the strings already remembered.

    >>> red = redactor()
    >>> red({"note": "sent Authorization: Bearer sk-abc123", "n": [1, "ok"]})
    {'note': 'sent Authorization: Bearer [redacted]', 'n': [1, 'ok']}
    """
    memo: dict[str, str] = {}

    def red(value: Any) -> Any:
        t = type(value)
        if t is str:
            got = memo.get(value)
            if got is None:
                got = memo[value] = redact(value)
            return got
        if t is dict:  # a string key or value looked up here, without a call
            return {(g if (g := memo.get(k)) is not None else red(k)):
                    (g if type(v) is str and (g := memo.get(v)) is not None else red(v))
                    for k, v in value.items()}
        if t is list:
            return [red(v) for v in value]
        if value is None or t is int or t is float or t is bool:
            return value
        return redact(value)  # tuples, subclasses: as redact treats them

    return red


def canonical_json(obj: Any) -> str:
    """Key-sorted compact JSON (the text hashed into a verdict's request key)."""
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"),
                      allow_nan=False)
