"""Importers of published answer sets: each maps the source's question ids to TIAP's query
ids and reports every id it cannot map.

- :func:`import_memory_benchmarks`: Mem0's memory-benchmarks results JSON
  (``evaluations[]``: answers, their judgment and the ranking the answer was given);
- :func:`import_memos`: MemOS / EverMemOS judged results (``llm_judgments.judgment_1..n``
  are runs 0..n-1 of one judge);
- :func:`import_longmemeval`: LongMemEval's hypothesis JSONL and its judged log
  (``autoeval_label``);
- the mnemoverse reproduction kit: :func:`tiap.answers.kit.import_kit`.

What an importer could not use is never dropped in silence: it is counted in
``AnswerSet.warnings`` under a code of :data:`tiap.errors.CODES` (a message, a count and up
to five located examples): ``unmapped_answer`` (an id or question names no query of the
dataset, or names one ambiguously; the answer and its verdicts are left out),
``remapped_by_text`` (the id's position names another question; the answer is kept under
the one query whose text it asks). When nothing maps, the importer stops with a located
error. Nothing is invented: an answer the file does not give is not in the set, a verdict
the file does not give is not either.

No real results file of memory-benchmarks or MemOS was available when these importers were
written: their tests build fixtures from the fields the formats document (the field names
above). LongMemEval's judged log follows its evaluation script (``evaluate_qa.py``: each
line is the hypothesis line with ``autoeval_label = {"model": ..., "label": true/false}``,
judged at temperature 0 with at most 10 reply tokens).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from tiap.answers.records import (
    CORRECT,
    WRONG,
    Answer,
    AnswerSet,
    AnswerVerdict,
    Context,
    JudgeConfig,
)
from tiap.datasets import Bundle, Query, load
from tiap.datasets.locomo import read_locomo
from tiap.errors import Problems, TiapError
from tiap.io import iter_jsonl, json_error, open_text, strict_json, type_name

__all__ = [
    "import_longmemeval",
    "import_memory_benchmarks",
    "import_memos",
]

#: examples kept per warning code
EXAMPLES = 5


class Warnings:
    """Counted warnings of one import: ``{code: {message, count, examples}}``."""

    def __init__(self) -> None:
        self._d: dict[str, dict[str, Any]] = {}

    def add(self, code: str, message: str, example: str) -> None:
        w = self._d.setdefault(code, {"message": message, "count": 0, "examples": []})
        w["count"] += 1
        if len(w["examples"]) < EXAMPLES:
            w["examples"].append(example)

    def also(self, code: str, message: str, key: str) -> None:
        """Count one more ``key`` (e.g. ``verdicts``) left out with the warning's items."""
        w = self._d.setdefault(code, {"message": message, "count": 0, "examples": []})
        w[key] = w.get(key, 0) + 1

    def to_json(self) -> dict[str, dict[str, Any]]:
        return {k: dict(v, examples=list(v["examples"])) for k, v in self._d.items()}


def read_json_file(path: str | Path, *, nan_at: re.Pattern[str] | None = None) -> Any:
    """One JSON document under TIAP's policy (:func:`tiap.io.strict_json`: a key twice,
    ``NaN``, a lone surrogate are located problems), every failure located. ``NaN`` is
    read as ``None`` where its record path matches ``nan_at`` (the kit's verdict files
    hold it as the score of an unparseable judge reply)."""
    p = Path(path)
    if not p.is_file():
        raise TiapError("no such file", file=p, code="io")
    with open_text(p) as fh:
        text = fh.read()
    try:
        value, found = strict_json(text)
    except json.JSONDecodeError as exc:
        raise TiapError(json_error(exc), file=p, line=exc.lineno) from None
    except (ValueError, RecursionError) as exc:
        raise TiapError(f"invalid JSON ({str(exc)[:120]})", file=p) from None
    problems = Problems(p)
    for f in found:
        if not (nan_at is not None and f.code == "invalid-value"
                and f.message.startswith("NaN") and nan_at.fullmatch(f.record or "")):
            problems.add(f.message, record=f.record, code=f.code)
    problems.raise_if_any()
    return value


def shape_error(path: str | Path, expected: str, got: Any, record: str | None = None
                ) -> TiapError:
    """A located error for a file (or record) of the wrong shape."""
    return TiapError(f"expected {expected}, got {type_name(got)}", file=path, record=record)


def locomo_bundles(locomo: str | Path | Iterable[Bundle] | None = None) -> list[Bundle]:
    """LoCoMo's conversations, read with the project's loader: ``locomo`` is a
    ``locomo10.json`` file, a data folder holding ``locomo/locomo10.json``, bundles already
    read, or ``None`` (the data folder: ``$TIAP_DATA``)."""
    if locomo is None:
        return list(load("locomo").bundles())
    if isinstance(locomo, (str, Path)):
        p = Path(locomo)
        if p.is_dir():
            return list(load("locomo", p).bundles())
        return read_locomo(p)
    return list(locomo)


def _norm(text: str) -> str:
    return " ".join(text.split())


class QuestionIndex:
    """A dataset's queries by id and by question text (whitespace collapsed)."""

    def __init__(self, queries: Iterable[Query]) -> None:
        self.by_id: dict[str, Query] = {}
        self.by_text: dict[str, list[Query]] = {}
        for q in queries:
            self.by_id[q.query_id] = q
            self.by_text.setdefault(_norm(q.question), []).append(q)

    def by_question(self, question: str) -> tuple[Query | None, str]:
        """The one query asking ``question``, or ``None`` and why not."""
        hits = self.by_text.get(_norm(question), [])
        if len(hits) == 1:
            return hits[0], ""
        if not hits:
            return None, "no question of the dataset has this text"
        return None, (f"{len(hits)} questions have this text "
                      f"({', '.join(q.query_id for q in hits[:3])})")


UNMAPPED = "answers whose id or question names no question of the dataset (left out with " \
    "their verdicts)"
REMAPPED = "answers whose id's position names another question; kept under the one " \
    "question with their text"
#: Mem0's memory-benchmarks LoCoMo question id (the kit keeps it): conversation, position
LOCOMO_QID = re.compile(r"conv([0-9]+)_q([0-9]+)")


class LocomoIndex:
    """LoCoMo's non-adversarial questions per conversation (file order), for ids that
    count positions among them (``conv<N>_q<M>``): each mapping is checked by question text;
    where the position names another question, the one question of the conversation with
    the answer's text is used (``remapped_by_text``); else the answer is unmapped."""

    def __init__(self, bundles: Iterable[Bundle], warn: Warnings) -> None:
        self.convs = [[q for q in b.queries if q.category != "adversarial"] for b in bundles]
        self.text = [QuestionIndex(c) for c in self.convs]
        self.all = QuestionIndex(q for c in self.convs for q in c)
        self.warn = warn

    def query(self, conv: int, pos: int, question: str | None, where: str) -> Query | None:
        """The query (conversation ``conv``, non-adversarial position ``pos``) names."""
        if not 0 <= conv < len(self.convs):
            self.warn.add("unmapped_answer", UNMAPPED, f"{where}: conversation {conv}; "
                          f"LoCoMo has {len(self.convs)}")
            return None
        qs = self.convs[conv]
        if 0 <= pos < len(qs) and (question is None or _norm(qs[pos].question)
                                    == _norm(question)):
            return qs[pos]
        if question is None:
            self.warn.add("unmapped_answer", UNMAPPED, f"{where}: position {pos}; "
                          f"conversation {conv} has {len(qs)} non-adversarial questions")
            return None
        q, why = self.text[conv].by_question(question)
        if q is None:
            self.warn.add("unmapped_answer", UNMAPPED,
                          f"{where}: {why} in conversation {conv} ({question[:50]!r})")
            return None
        self.warn.add("remapped_by_text", REMAPPED,
                      f"{where}: position {pos} is {q.query_id} by its text")
        return q

    def by_id(self, qid: str, question: str | None, where: str) -> Query | None:
        """A ``conv<N>_q<M>`` id checked by text, else the one question with the text."""
        m = LOCOMO_QID.fullmatch(qid)
        if m is not None:
            return self.query(int(m.group(1)), int(m.group(2)), question, where)
        if question is None:
            self.warn.add("unmapped_answer", UNMAPPED,
                          f"{where}: id {qid!r} is not conv<N>_q<M> and has no question")
            return None
        q, why = self.all.by_question(question)
        if q is None:
            self.warn.add("unmapped_answer", UNMAPPED, f"{where}: {why} ({question[:50]!r})")
        return q


def nothing_mapped(path: str | Path, what: str, warnings: Warnings) -> TiapError:
    """The located error of an import where no id mapped (with the first reasons)."""
    first = [e for w in warnings.to_json().values() for e in w["examples"]][:3]
    return TiapError(f"no {what} of the file maps to a query of the dataset"
                     + ("; first: " + "; ".join(first) if first else ""), file=path,
                     code="invalid-value")


def _label_from_bool(value: Any) -> str | None:
    if value is True:
        return CORRECT
    if value is False:
        return WRONG
    return None


# ------------------------------------------------------------------------------------------
# Mem0's memory-benchmarks results JSON


def _judgment_label(value: Any) -> tuple[str | None, str | None] | None:
    """(label, reason) of a memory-benchmarks judgment; ``None`` if it is not one."""
    if isinstance(value, bool):
        return _label_from_bool(value), None
    if isinstance(value, str) and value.strip().upper() in ("CORRECT", "WRONG"):
        return (CORRECT if value.strip().upper() == "CORRECT" else WRONG), None
    if isinstance(value, (int, float)) and value in (0, 1):
        return (CORRECT if value == 1 else WRONG), None
    if isinstance(value, dict):
        for key in ("label", "judgment", "verdict"):
            if key in value:
                got = _judgment_label(value[key])
                if got is not None:
                    reason = value.get("reasoning") or value.get("reason")
                    return got[0], reason if isinstance(reason, str) else None
    return None


def import_memory_benchmarks(path: str | Path, *, dataset: str, k: int | None = None,
                             system: str = "mem0", judge_model: str | None = None,
                             locomo: Any = None) -> AnswerSet:
    """Answers, judgments and the ranking behind each answer from Mem0's
    memory-benchmarks results JSON.

    The file holds ``evaluations[]``, each with ``question_id``, ``question``,
    ``category``, ``evidence``, ``cutoff_results.top_<K>.{generated_answer, judgment}`` and
    ``retrieval.search_results[{id, memory, score}]``. ``k`` picks the cutoff (``None``:
    the file's only one). The answer's context is the search results' ids in rank order,
    in a store named after ``system``. ``question_id`` is mapped to TIAP's query ids: for
    ``dataset="locomo"`` (read from ``locomo``, as :func:`tiap.answers.kit.import_kit`
    does) an id ``conv<N>_q<M>`` names the ``M``-th non-adversarial question of
    conversation ``N``, checked by its text (:class:`LocomoIndex`), and another id maps by
    question text; for another dataset the id is the query id.
    The judgment becomes a verdict of ``<judge_model>|memory_benchmarks|r0`` (the model
    from the file's ``metadata.judge_model`` when it has one).

    >>> doc = {"metadata": {"judge_model": "gpt-5"}, "evaluations": [
    ...     {"question_id": "q1", "question": "Who?", "category": "single-hop",
    ...      "evidence": [], "cutoff_results": {"top_2": {"generated_answer": "Ana",
    ...      "judgment": "CORRECT"}},
    ...      "retrieval": {"search_results": [{"id": "m7", "memory": "Ana", "score": 0.9},
    ...                                       {"id": "m2", "memory": "x", "score": 0.1}]}}]}
    >>> _ = Path("results.json").write_text(json.dumps(doc))
    >>> s = import_memory_benchmarks("results.json", dataset="mine")
    >>> a = s.answers[0]
    >>> a.query_id, a.answer, a.context.items, a.verdicts[0].judge, a.verdicts[0].label
    ('q1', 'Ana', ('m7', 'm2'), 'gpt-5|memory_benchmarks|r0', 'correct')
    """
    p = Path(path)
    doc = read_json_file(p)
    if not isinstance(doc, dict) or not isinstance(doc.get("evaluations"), list):
        raise shape_error(p, 'an object with a list "evaluations"', doc)
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    model = judge_model or (meta.get("judge_model") if isinstance(meta.get("judge_model"),
                                                                   str) else None)
    judge = f"{model or 'unrecorded'}|memory_benchmarks|r0"
    cfg = JudgeConfig(judge, model=model, prompt="memory_benchmarks", run=0,
                      settings={"source": "memory-benchmarks judgment"})
    cut = f"top_{k}" if k is not None else None
    problems = Problems(p)
    warn = Warnings()
    index = LocomoIndex(locomo_bundles(locomo), warn) if dataset == "locomo" else None
    answers: list[Answer] = []
    seen: dict[str, int] = {}
    for i, ev in enumerate(doc["evaluations"]):
        rec = f"evaluations[{i}]"
        if not isinstance(ev, dict):
            problems.add(f"expected an object, got {type_name(ev)}", record=rec)
            continue
        sid = ev.get("question_id")
        if isinstance(sid, int) and not isinstance(sid, bool):
            sid = str(sid)
        if not isinstance(sid, str) or not sid:
            problems.add("field 'question_id' is required: a string or integer", record=rec)
            continue
        cuts = ev.get("cutoff_results")
        if not isinstance(cuts, dict) or not cuts:
            problems.add("field 'cutoff_results' is required: an object of top_<K> results",
                         record=rec)
            continue
        if cut is None and len(cuts) != 1:
            problems.add(f"the file has cutoffs {', '.join(sorted(cuts))}: pass k to pick "
                         "one", record=rec, code="usage")
            continue
        key = cut or next(iter(cuts))
        res = cuts.get(key)
        if not isinstance(res, dict):
            problems.add(f"no cutoff {key!r} (the record has {', '.join(sorted(cuts))})",
                         record=rec)
            continue
        text = res.get("generated_answer")
        if text is not None and not isinstance(text, str):
            problems.add("field 'generated_answer' must be a string or null", record=rec)
            continue
        question = ev.get("question") if isinstance(ev.get("question"), str) else None
        qid: str | None = sid
        if index is not None:
            q = index.by_id(sid, question, f"{p}, {rec} ({sid})")
            if q is None:
                if res.get("judgment") is not None:
                    warn.also("unmapped_answer", UNMAPPED, "verdicts")
                continue
            qid = q.query_id
        if qid in seen:
            problems.add(f"question {sid!r} is answered twice (also evaluations[{seen[qid]}])",
                         record=rec, code="duplicate")
            continue
        seen[qid] = i
        ctx = None
        retr = ev.get("retrieval")
        if retr is not None:
            hits = retr.get("search_results") if isinstance(retr, dict) else None
            ids = [h.get("id") for h in hits] if isinstance(hits, list) and all(
                isinstance(h, dict) for h in hits) else None
            if ids is None or not all(isinstance(x, (str, int)) and not isinstance(x, bool)
                                      and str(x) for x in ids):
                problems.add("field 'retrieval.search_results' must be a list of objects "
                             "with an 'id'", record=rec)
                continue
            ctx = Context(system, tuple(str(x) for x in ids))
        verdicts: tuple[AnswerVerdict, ...] = ()
        if "judgment" in res and res["judgment"] is not None:
            got = _judgment_label(res["judgment"])
            if got is None:
                problems.add(f"judgment {repr(res['judgment'])[:60]} is not CORRECT/"
                             "WRONG, true/false or 1/0", record=rec, code="invalid-value")
                continue
            verdicts = (AnswerVerdict(judge, got[0], got[1]),)
        cat = ev.get("category")
        answers.append(Answer(dataset, system, qid, text, question=question,
                              reference=_str_or_none(ev.get("answer", ev.get("gold"))),
                              category=None if cat is None else str(cat), source_id=sid,
                              context=ctx, verdicts=verdicts))
    problems.raise_if_any()
    if not answers:
        raise nothing_mapped(p, "answer", warn)
    configs = {judge: cfg} if any(a.verdicts for a in answers) else {}
    return AnswerSet(tuple(answers), configs, warn.to_json())


def _str_or_none(v: Any) -> str | None:
    if v is None or isinstance(v, bool):
        return None
    return v if isinstance(v, str) else str(v)


# ------------------------------------------------------------------------------------------
# MemOS / EverMemOS judged results

_JUDGMENT = re.compile(r"judgment_([1-9][0-9]*)")


def _iter_memos_records(doc: Any, p: Path) -> list[tuple[str, Any]]:
    """(record path, record) of a MemOS results file: a list of records, or an object of
    lists (per user / conversation)."""
    if isinstance(doc, list):
        return [(f"[{i}]", r) for i, r in enumerate(doc)]
    if isinstance(doc, dict) and doc and all(isinstance(v, list) for v in doc.values()):
        return [(f"{k}[{i}]", r) for k, v in doc.items() for i, r in enumerate(v)]
    raise shape_error(p, "a list of judged records, or an object of such lists", doc)


def import_memos(path: str | Path, *, dataset: str = "locomo", system: str = "memos",
                 judge_model: str | None = None, queries: Iterable[Query] | None = None,
                 locomo: Any = None) -> AnswerSet:
    """Answers and verdicts from MemOS / EverMemOS judged results.

    Each record has ``question``, ``answer``, ``golden_answer``, ``category`` and
    ``llm_judgments`` (``{"judgment_1": true, ...}``): judgment ``i`` is run ``i-1`` of the
    judge ``<judge_model>|memos|r<run>``. Questions are mapped to query ids by their text
    within the dataset (``queries``, else LoCoMo's non-adversarial questions read from
    ``locomo``); a question no query asks, or several ask, is counted as unmapped.

    >>> from tiap.datasets import Query
    >>> qs = [Query("c:q0", "c", "Who came?", "Ana", "single-hop", ())]
    >>> _ = Path("memos.json").write_text(json.dumps({"u1": [
    ...     {"question": "Who came?", "answer": "Ana", "golden_answer": "Ana",
    ...      "category": 4, "llm_judgments": {"judgment_1": True, "judgment_2": False}},
    ...     {"question": "Who left?", "answer": "Ben", "golden_answer": "Ben",
    ...      "category": 4, "llm_judgments": {"judgment_1": True}}]}))
    >>> s = import_memos("memos.json", queries=qs, judge_model="gpt-4o-mini")
    >>> [(v.judge, v.label) for v in s.answers[0].verdicts]
    [('gpt-4o-mini|memos|r0', 'correct'), ('gpt-4o-mini|memos|r1', 'wrong')]
    >>> s.warnings["unmapped_answer"]["count"]
    1
    """
    p = Path(path)
    doc = read_json_file(p)
    records = _iter_memos_records(doc, p)
    if queries is None:
        queries = (q for b in locomo_bundles(locomo) for q in b.queries
                   if q.category != "adversarial")
    index = QuestionIndex(queries)
    model = judge_model or "unrecorded"
    configs: dict[str, JudgeConfig] = {}
    problems = Problems(p)
    warn = Warnings()
    answers: list[Answer] = []
    seen: dict[str, str] = {}
    for rec, r in records:
        if not isinstance(r, dict):
            problems.add(f"expected an object, got {type_name(r)}", record=rec)
            continue
        question = r.get("question")
        if not isinstance(question, str) or not question:
            problems.add("field 'question' is required: a non-empty string", record=rec)
            continue
        text = r.get("answer")
        if text is not None and not isinstance(text, str):
            problems.add("field 'answer' must be a string or null", record=rec)
            continue
        judg = r.get("llm_judgments", {})
        if not isinstance(judg, dict):
            problems.add("field 'llm_judgments' must be an object of judgment_<n>",
                         record=rec)
            continue
        verdicts = []
        bad = False
        for key, val in judg.items():
            m = _JUDGMENT.fullmatch(key)
            if m is None or not isinstance(val, bool):
                problems.add(f"llm_judgments.{key} = {val!r:.40}: expected "
                             "judgment_<n> = true/false", record=rec, code="invalid-value")
                bad = True
                continue
            run = int(m.group(1)) - 1
            name = f"{model}|memos|r{run}"
            configs.setdefault(name, JudgeConfig(name, model=model, prompt="memos", run=run,
                                                 settings={"source": "MemOS llm_judgments"}))
            verdicts.append(AnswerVerdict(name, _label_from_bool(val)))
        if bad:
            continue
        q, why = index.by_question(question)
        if q is None:
            warn.add("unmapped_answer", UNMAPPED, f"{p}, record {rec}: {why}: "
                     f"{question[:60]!r}")
            for _ in verdicts:
                warn.also("unmapped_answer", UNMAPPED, "verdicts")
            continue
        if q.query_id in seen:
            problems.add(f"question of query {q.query_id} is answered twice (also record "
                         f"{seen[q.query_id]})", record=rec, code="duplicate")
            continue
        seen[q.query_id] = rec
        cat = r.get("category")
        answers.append(Answer(dataset, system, q.query_id, text, question=question,
                              reference=_str_or_none(r.get("golden_answer")),
                              category=q.category if cat is None else str(cat),
                              source_id=rec, verdicts=tuple(verdicts)))
    problems.raise_if_any()
    if not answers:
        raise nothing_mapped(p, "question", warn)
    used = {v.judge for a in answers for v in a.verdicts}
    return AnswerSet(tuple(answers), {k: c for k, c in configs.items() if k in used},
                     warn.to_json())


# ------------------------------------------------------------------------------------------
# LongMemEval hypotheses and judged log

#: LongMemEval's judge settings (its evaluate_qa.py): one user message, temperature 0,
#: at most 10 reply tokens, a prompt chosen by question type and abstention
LONGMEMEVAL_SETTINGS: Mapping[str, Any] = {
    "max_tokens": 10, "template": "chosen by question_type; abstention for _abs ids",
    "source": "LongMemEval src/evaluation/evaluate_qa.py"}


def _longmemeval_ids(longmemeval: Any) -> QuestionIndex | None:
    if longmemeval is None:
        return None
    if isinstance(longmemeval, str) and longmemeval.startswith("longmemeval"):
        return QuestionIndex(load(longmemeval).queries_iter())
    return QuestionIndex(longmemeval)


def import_longmemeval(hypotheses: str | Path, *, judged: str | Path | None = None,
                       longmemeval: Any = None, dataset: str = "longmemeval/s",
                       system: str = "system") -> AnswerSet:
    """Answers from LongMemEval's hypothesis JSONL (``question_id``, ``hypothesis``), with
    the verdicts of its judged log (``judged``: the same lines with ``autoeval_label``).

    TIAP's LongMemEval query id is the ``question_id``. ``longmemeval`` checks the ids:
    a dataset id (``"longmemeval/s"``, ``"longmemeval/oracle"``) or queries; an id it does
    not hold is counted as unmapped (``None``: no check). The judged label
    ``{"model": m, "label": true}`` becomes a verdict of ``<m>|longmemeval|r0`` at
    temperature 0 (a bare true/false label: model unrecorded). A judged line whose id has
    no hypothesis, or whose hypothesis differs, is an error: the log is of other answers.

    >>> from tiap.datasets import Query
    >>> _ = Path("hyp.jsonl").write_text(
    ...     '{"question_id": "q1", "hypothesis": "Paris"}\\n'
    ...     '{"question_id": "q9", "hypothesis": "Rome"}\\n')
    >>> _ = Path("hyp.jsonl.eval-results-gpt-4o").write_text(
    ...     '{"question_id": "q1", "hypothesis": "Paris", "autoeval_label": '
    ...     '{"model": "gpt-4o-2024-08-06", "label": true}}\\n')
    >>> qs = [Query("q1", "q1", "Where?", "Paris", "single-session-user", ())]
    >>> s = import_longmemeval("hyp.jsonl", judged="hyp.jsonl.eval-results-gpt-4o",
    ...                        longmemeval=qs)
    >>> a = s.answers[0]
    >>> a.query_id, a.verdicts[0].judge, a.verdicts[0].label
    ('q1', 'gpt-4o-2024-08-06|longmemeval|r0', 'correct')
    >>> s.warnings["unmapped_answer"]["count"]
    1
    """
    hp = Path(hypotheses)
    index = _longmemeval_ids(longmemeval)
    problems = Problems(hp)
    warn = Warnings()
    rows: dict[str, tuple[int, str | None]] = {}
    for line, d in iter_jsonl(hp, problems):
        if not isinstance(d, dict):
            problems.add(f"expected an object, got {type_name(d)}", line)
            continue
        qid, text = d.get("question_id"), d.get("hypothesis")
        if not isinstance(qid, str) or not qid:
            problems.add("field 'question_id' is required: a non-empty string", line)
            continue
        if text is not None and not isinstance(text, str):
            problems.add("field 'hypothesis' must be a string or null", line)
            continue
        if qid in rows:
            problems.add(f"question {qid!r} is answered twice (also line {rows[qid][0]})",
                         line, code="duplicate")
            continue
        rows[qid] = (line, text)
    problems.raise_if_any()
    verdicts: dict[str, AnswerVerdict] = {}
    configs: dict[str, JudgeConfig] = {}
    if judged is not None:
        jp = Path(judged)
        jprob = Problems(jp)
        jseen: dict[str, int] = {}
        for line, d in iter_jsonl(jp, jprob):
            if not isinstance(d, dict):
                jprob.add(f"expected an object, got {type_name(d)}", line)
                continue
            qid = d.get("question_id")
            if not isinstance(qid, str) or qid not in rows:
                jprob.add(f"question_id {qid!r} has no hypothesis in {hp.name}: "
                          "the judged log is of other answers", line)
                continue
            if "hypothesis" in d and d["hypothesis"] != rows[qid][1]:
                jprob.add(f"the judged hypothesis of {qid!r} differs from line "
                          f"{rows[qid][0]} of {hp.name}", line, query_id=qid)
                continue
            if qid in jseen:
                jprob.add(f"question {qid!r} is judged twice (also line {jseen[qid]})", line,
                          code="duplicate")
                continue
            lab = d.get("autoeval_label")
            model = None
            if isinstance(lab, dict):
                model = lab.get("model") if isinstance(lab.get("model"), str) else None
                lab = lab.get("label")
            if not isinstance(lab, bool):
                jprob.add("field 'autoeval_label' must be true/false or "
                          '{"model": ..., "label": true/false}', line, query_id=qid,
                          code="invalid-value")
                continue
            jseen[qid] = line
            name = f"{model or 'unrecorded'}|longmemeval|r0"
            configs.setdefault(name, JudgeConfig(name, model=model, prompt="longmemeval",
                                                 temperature=0.0, run=0,
                                                 settings=dict(LONGMEMEVAL_SETTINGS)))
            verdicts[qid] = AnswerVerdict(name, _label_from_bool(lab))
        jprob.raise_if_any()
    answers = []
    for qid, (line, text) in rows.items():
        q = None
        if index is not None:
            q = index.by_id.get(qid)
            if q is None:
                warn.add("unmapped_answer", UNMAPPED, f"{hp}:{line}: {qid!r}")
                if qid in verdicts:
                    warn.also("unmapped_answer", UNMAPPED, "verdicts")
                continue
        v = verdicts.get(qid)
        answers.append(Answer(dataset, system, qid, text,
                              question=None if q is None else q.question,
                              reference=None if q is None else q.answer,
                              category=None if q is None else q.category, source_id=qid,
                              verdicts=() if v is None else (v,)))
    if not answers:
        raise nothing_mapped(hp, "question id", warn)
    used = {v.judge for a in answers for v in a.verdicts}
    return AnswerSet(tuple(answers), {k: c for k, c in configs.items() if k in used},
                     warn.to_json())
