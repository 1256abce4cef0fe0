"""Answer judges: verdicts on fixed answers, through the audit's judges and verdict cache.

An answer judge is a :class:`tiap.audit.judges.Judge` whose request is built from an answer
(the question, the reference, the system's answer, and the judge's settings); it runs through
:func:`tiap.audit.run.run_judges` with the same :class:`~tiap.audit.run.VerdictCache`, so
judging is cached and resumable: a run started again asks only what is not in the cache.
:func:`judge_answers` adds the verdicts to an :class:`~tiap.answers.records.AnswerSet`, under
one :class:`~tiap.answers.records.JudgeConfig` per judge and run.

The offline judges every paper reports (no network; the rules of LoCoMo's
``task_eval/evaluation.py`` and LongMemEval's ``src/evaluation``, re-implemented):

``locomo-f1`` (:class:`F1Judge`)
    LoCoMo's token F1 (:func:`tiap.answers.normalize.token_f1`: its normalisation, Porter
    stems) by the question's category, as LoCoMo scores it:

    - *multi-hop* (category 1): the response and the reference are split at commas; the
      score is the mean, over the reference's parts, of the best F1 of any response part;
    - *open-domain* (category 3): only the reference's part before the first ``;`` counts;
    - *temporal*, *single-hop* (2, 4) and any other category: the F1 of the whole texts;
    - *adversarial* (5): 1 when the response says ``no information available`` or ``not
      mentioned`` (any case), else 0; the reference is not read.

    The verdict is ``correct`` when the score is at least ``threshold`` (default 0.5, a
    setting recorded with every verdict), else ``wrong``. An answer with no reference (an
    adversarial one apart) has no usable verdict (``reason``: no reference answer).
``locomo-em`` (:class:`ExactMatchJudge`)
    LoCoMo's exact match (:func:`tiap.answers.normalize.exact_match`: equal sets of
    normalised tokens, no stemming), after the same open-domain rule; adversarial answers as
    above.
``longmemeval-abstention`` (:class:`AbstentionJudge`)
    LongMemEval's abstention questions are those whose question id ends in ``_abs`` (the
    answer's ``source_id``, else its ``query_id``); only they are judged. LongMemEval asks an
    LLM whether the response identifies the question as unanswerable; this offline judge
    says ``correct`` when the response holds one of its ``phrases`` (TIAP's list,
    :data:`ABSTAIN_PHRASES`, any case; a setting), else ``wrong``.

An answer whose text is ``null`` (the system gave none) is judged by no one; they are counted
in the returned set's ``warnings`` (``no_answer``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import inspect
import json
import re
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tiap.answers.files import ANSWERS_FILE, load_answers, save_answers
from tiap.answers.generate import stratified_sample
from tiap.answers.normalize import exact_match, token_f1
from tiap.answers.records import (
    CORRECT,
    WRONG,
    Answer,
    AnswerSet,
    AnswerVerdict,
    JudgeConfig,
)
from tiap.audit.judges import Judge, Request, parse_judge_spec
from tiap.audit.labels import UNSCORED, Verdict
from tiap.audit.run import VerdictCache, run_judges
from tiap.config import did_you_mean, option_name
from tiap.errors import TiapError
from tiap.limits import check
from tiap.llm.local import DEFAULT_PORT, LocalServer

__all__ = [
    "ABSTAIN_PHRASES",
    "ANSWER_JUDGES",
    "AbstentionJudge",
    "AnswerJudge",
    "ExactMatchJudge",
    "F1Judge",
    "judge_answers",
    "judge_files",
    "locomo_category",
    "locomo_f1",
    "make_answer_judge",
]

Progress = Callable[[str, int, int], None]

#: LoCoMo's category numbers and the names TIAP gives them (:mod:`tiap.datasets.locomo`).
LOCOMO_CATEGORIES = {"1": "multi-hop", "2": "temporal", "3": "open-domain", "4": "single-hop",
                     "5": "adversarial"}
#: The phrases LoCoMo's evaluation takes as an adversarial question's right answer.
LOCOMO_ABSTAIN = ("no information available", "not mentioned")
#: The phrases :class:`AbstentionJudge` takes as declining to answer (TIAP's list).
ABSTAIN_PHRASES = (
    "not mentioned", "never mentioned", "no information", "not enough information",
    "insufficient information", "not available", "not provided", "not specified",
    "cannot answer", "can't answer", "cannot be answered", "unable to answer",
    "cannot determine", "can't determine", "cannot be determined", "don't know",
    "do not know", "unanswerable", "no record", "does not mention", "doesn't mention",
    "did not mention", "didn't mention",
)


@dataclass(frozen=True)
class _Item:
    """One answer as :func:`run_judges` sees a case (:class:`tiap.audit.run.Judged`)."""

    case_id: str
    answer: Answer

    @property
    def dataset(self) -> str:
        return self.answer.dataset

    @property
    def system(self) -> str:
        return self.answer.system

    @property
    def query_id(self) -> str:
        return self.answer.query_id

    store = target = item_id = ""


def _item(a: Answer) -> _Item:
    return _Item(json.dumps(list(a.key), ensure_ascii=False, allow_nan=False), a)


class AnswerJudge(Judge):
    """A judge of answers: its request is built from an :class:`Answer`, its labels are
    ``correct`` and ``wrong`` (module docstring).

    Subclasses implement :meth:`request_for` (the request for one answer), :meth:`ask` and
    :meth:`settings`; :meth:`applies` says which answers it judges (default: all).

    >>> class Says(AnswerJudge):  # a judge of your own: correct when the answer says "Paris"
    ...     factory = name = "says-paris"
    ...     def settings(self):
    ...         return {"factory": self.factory}
    ...     def request_for(self, answer):
    ...         return {"factory": self.factory, "response": answer.answer}
    ...     def ask(self, request):
    ...         return Verdict("correct" if "Paris" in request["response"] else "wrong")
    >>> s = judge_answers(AnswerSet((Answer("locomo", "A", "q1", "in Paris"),)), [Says()])
    >>> s.answers[0].verdict("says-paris").label
    'correct'
    """

    kind = "offline"
    batch_size: int | None = 512  # offline: lists of requests, no threads

    def applies(self, answer: Answer) -> bool:
        """Whether this judge judges ``answer`` (the others get no verdict from it)."""
        return True

    def request_for(self, answer: Answer) -> Request:
        """The request this judge makes for ``answer``."""
        raise NotImplementedError

    def request(self, case: Any) -> Request:
        return self.request_for(case.answer if isinstance(case, _Item) else case)

    def config(self) -> JudgeConfig:
        """The configuration its verdicts are recorded under (its name, settings)."""
        s = self.settings()
        return JudgeConfig(self.name, kind=self.kind,
                           settings={k: v for k, v in s.items() if k not in ("name",)})


def locomo_category(category: str | None) -> str | None:
    """The LoCoMo category name of ``category``: a number ``1``-``5`` or a name
    (``multi-hop``, ``multi_hop``, ``Temporal``); ``None`` when it is neither.

    >>> locomo_category("1"), locomo_category("Open_Domain"), locomo_category("other")
    ('multi-hop', 'open-domain', None)
    """
    if category is None:
        return None
    c = str(category).strip().lower().replace("_", "-").replace(" ", "-")
    if c in LOCOMO_CATEGORIES:
        return LOCOMO_CATEGORIES[c]
    return c if c in LOCOMO_CATEGORIES.values() else None


def _says_abstain(response: str, phrases: Iterable[str]) -> bool:
    low = response.lower()
    return any(p in low for p in phrases)


def locomo_f1(response: str, reference: str | None, category: str | None) -> float:
    """LoCoMo's score of one answer by its category (module docstring: the multi-hop,
    open-domain and adversarial rules).

    Worked examples. Multi-hop, ``"pottery, painting"`` against ``"painting, camping,
    pottery"``: the reference's parts score 1 (painting), 0 (camping), 1 (pottery), mean
    2/3. Open-domain: ``"Yes; she likes it"`` counts ``"Yes"`` only.

    >>> round(locomo_f1("pottery, painting", "painting, camping, pottery", "multi-hop"), 4)
    0.6667
    >>> locomo_f1("yes", "Yes; she likes it", "open-domain")
    1.0
    >>> locomo_f1("That is not mentioned.", None, "adversarial")
    1.0
    """
    cat = locomo_category(category)
    if cat == "adversarial":
        return 1.0 if _says_abstain(response, LOCOMO_ABSTAIN) else 0.0
    if reference is None:
        raise TiapError("no reference answer to score against", code="invalid-value")
    if cat == "open-domain":
        reference = reference.split(";")[0].strip()
    if cat == "multi-hop":
        preds = [p.strip() for p in response.split(",")]
        refs = [g.strip() for g in reference.split(",")]
        return sum(max(token_f1(p, g) for p in preds) for g in refs) / len(refs)
    return token_f1(response, reference)


def _no_reference(answer: Answer) -> bool:
    return answer.reference is None and locomo_category(answer.category) != "adversarial"


class F1Judge(AnswerJudge):
    """LoCoMo's token F1 by category, ``correct`` at ``F1 >= threshold`` (module docstring).

    Worked example: ``"went to Paris in May"`` against ``"Paris"`` (single-hop) has F1 1/3
    (:func:`tiap.answers.normalize.token_f1`): below 0.5, ``wrong``; at threshold 0.3,
    ``correct``.

    >>> j = F1Judge()
    >>> a = Answer("locomo", "A", "q1", "went to Paris in May", reference="Paris",
    ...            category="single-hop")
    >>> v = j.judge(a)
    >>> v.label, round(v.score, 4)
    ('wrong', 0.3333)
    >>> F1Judge(threshold=0.3).judge(a).label
    'correct'
    """

    factory = "locomo-f1"
    VERSION = "tiap-locomo-f1-v1"

    def __init__(self, threshold: float = 0.5, name: str | None = None) -> None:
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) \
                or not 0.0 <= threshold <= 1.0:
            raise TiapError(f"judge 'locomo-f1': threshold must be a number in [0, 1], got "
                            f"{threshold!r}", code="config")
        self.threshold = float(threshold)
        self.name = name or self.factory

    def settings(self) -> dict[str, Any]:
        return {"factory": self.factory, "name": self.name, "version": self.VERSION,
                "threshold": self.threshold}

    def request_for(self, answer: Answer) -> Request:
        return {"factory": self.factory, "version": self.VERSION, "threshold": self.threshold,
                "category": locomo_category(answer.category), "response": answer.answer or "",
                "reference": answer.reference}

    def ask(self, request: Request) -> Verdict:
        if request["reference"] is None and request["category"] != "adversarial":
            return Verdict(UNSCORED, reason="no reference answer")
        f1 = locomo_f1(request["response"], request["reference"], request["category"])
        label = CORRECT if f1 >= request["threshold"] else WRONG
        return Verdict(label, score=f1, reason=f"F1 {f1:.4f}")


class ExactMatchJudge(AnswerJudge):
    """LoCoMo's exact match (module docstring).

    >>> j = ExactMatchJudge()
    >>> j.judge(Answer("locomo", "A", "q1", "the Paris", reference="Paris")).label
    'correct'
    >>> j.judge(Answer("locomo", "A", "q1", "Paris, France", reference="Paris")).label
    'wrong'
    """

    factory = "locomo-em"
    VERSION = "tiap-locomo-em-v1"

    def __init__(self, name: str | None = None) -> None:
        self.name = name or self.factory

    def settings(self) -> dict[str, Any]:
        return {"factory": self.factory, "name": self.name, "version": self.VERSION}

    def request_for(self, answer: Answer) -> Request:
        return {"factory": self.factory, "version": self.VERSION,
                "category": locomo_category(answer.category), "response": answer.answer or "",
                "reference": answer.reference}

    def ask(self, request: Request) -> Verdict:
        cat, ref, resp = request["category"], request["reference"], request["response"]
        if cat == "adversarial":
            ok = _says_abstain(resp, LOCOMO_ABSTAIN)
        elif ref is None:
            return Verdict(UNSCORED, reason="no reference answer")
        else:
            ok = exact_match(resp, ref.split(";")[0].strip() if cat == "open-domain" else ref)
        return Verdict(CORRECT if ok else WRONG, score=1.0 if ok else 0.0)


class AbstentionJudge(AnswerJudge):
    """LongMemEval's abstention questions (ids ending in ``_abs``): ``correct`` when the
    response declines to answer (module docstring).

    >>> j = AbstentionJudge()
    >>> a = Answer("longmemeval", "A", "e3a1_abs", "You never mentioned a dog.")
    >>> j.applies(a), j.judge(a).label
    (True, 'correct')
    >>> j.applies(Answer("longmemeval", "A", "e3a1", "Max"))  # not an abstention question
    False
    """

    factory = "longmemeval-abstention"
    VERSION = "tiap-abstention-v1"

    def __init__(self, phrases: Sequence[str] = ABSTAIN_PHRASES, name: str | None = None
                 ) -> None:
        if isinstance(phrases, str) or not phrases or not all(
                isinstance(p, str) and p.strip() for p in phrases):
            raise TiapError("judge 'longmemeval-abstention': phrases must be a non-empty list "
                            "of non-empty strings", code="config")
        self.phrases = tuple(p.strip().lower() for p in phrases)
        self.name = name or self.factory

    def applies(self, answer: Answer) -> bool:
        qid = answer.source_id or answer.query_id
        return qid.endswith("_abs")

    def settings(self) -> dict[str, Any]:
        return {"factory": self.factory, "name": self.name, "version": self.VERSION,
                "phrases": list(self.phrases)}

    def request_for(self, answer: Answer) -> Request:
        return {"factory": self.factory, "version": self.VERSION, "phrases": list(self.phrases),
                "response": answer.answer or ""}

    def ask(self, request: Request) -> Verdict:
        ok = _says_abstain(request["response"], request["phrases"])
        return Verdict(CORRECT if ok else WRONG, score=1.0 if ok else 0.0)


# ------------------------------------------------------------------------------------------


def _expand(judges: Sequence[Any], runs: int, temperature: float | None) -> list[AnswerJudge]:
    out: list[AnswerJudge] = []
    for j in judges:
        if not isinstance(j, AnswerJudge):
            raise TiapError(f"{type(j).__name__} is not an answer judge: give F1Judge(), "
                            "ExactMatchJudge(), AbstentionJudge() or LLMAnswerJudge(...)",
                            code="usage")
        for_run = getattr(j, "for_run", None)
        if for_run is None:  # offline: one verdict per request, whatever the run
            out.append(j)
        else:
            out.extend(for_run(r, temperature=temperature) for r in range(runs))
    names = [j.name for j in out]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise TiapError(f"two judges are named {', '.join(map(repr, dupes))}; give one of "
                        "them another name", code="usage")
    return out


def _merge_warning(warnings: dict[str, Any], code: str, judge: str,
                   w: dict[str, Any]) -> None:
    """Add one judge's counted warning to the set's entry of ``code`` (counts summed, the
    judges named, examples prefixed with the judge)."""
    entry = warnings.setdefault(code, {"message": "", "count": 0, "examples": [],
                                       "judges": {}})
    entry["judges"] = {**entry.get("judges", {}), judge: w["count"]}
    entry["count"] = entry.get("count", 0) + w["count"]
    entry["message"] = "; ".join(x for x in (entry.get("message"), f"{judge}: {w['message']}")
                                 if x)
    entry["examples"] = [*entry.get("examples", []),
                         *(f"{judge}: {e}" for e in w.get("examples", []))][:5]


def judge_answers(
    answers: AnswerSet,
    judges: Sequence[AnswerJudge] | AnswerJudge,
    *,
    runs: int = 1,
    temperature: float | None = None,
    cache: VerdictCache | str | Path | None = None,
    progress: Progress | None = None,
) -> AnswerSet:
    """``answers`` with the verdicts of ``judges`` added (module docstring).

    Each LLM judge (:class:`tiap.answers.llm_judge.LLMAnswerJudge`) is asked ``runs`` times,
    run ``r`` a distinct request (its seed is the judge's seed + ``r``) under the
    configuration ``<model>|<prompt>|r<r>``, at ``temperature`` when given (else the
    judge's own); an offline judge is asked once. Verdicts are cached in ``cache`` (a
    :class:`~tiap.audit.run.VerdictCache` or its path; ``None``: a cache for this call
    only): a call started again asks only what the cache lacks. An LLM reply that gives no
    label is recorded with label ``null`` and its reason, and asked again next time.
    ``progress(judge, done, total)`` is told of every request asked (``total``: the requests
    this call asks, cached ones left out). Counted in the returned set's ``warnings``, each
    entry naming the judges: ``invalid_reply`` and ``response_format`` (an endpoint's
    unusable replies and refused output modes), ``template_text`` (``{name}`` text of a
    prompt sent as it is), ``no_answer`` (answers with no text, judged by no one).

    Worked example: F1 of ``"Paris"`` against ``"Paris"`` is 1 (correct); ``"Rome"`` shares no
    token with it (0, wrong); the second call asks nothing.

    >>> s = AnswerSet((Answer("locomo", "A", "q1", "Paris", reference="Paris"),
    ...                Answer("locomo", "B", "q1", "Rome", reference="Paris")))
    >>> asked = []
    >>> out = judge_answers(s, [F1Judge()], cache="verdicts.sqlite",
    ...                     progress=lambda j, done, total: asked.append(total))
    >>> [(a.system, a.verdict("locomo-f1").label) for a in out]
    [('A', 'correct'), ('B', 'wrong')]
    >>> out.configs["locomo-f1"].settings["threshold"]
    0.5
    >>> _ = judge_answers(s, [F1Judge()], cache="verdicts.sqlite",
    ...                   progress=lambda j, done, total: asked.append(total))
    >>> asked  # requests asked: 2 in the first call, none in the second
    [2, 2, 0]
    """
    if isinstance(judges, AnswerJudge):
        judges = [judges]
    check("runs", runs, option_name("runs"))
    if temperature is not None:
        check("temperature", temperature, option_name("temperature"))
    if not judges:
        raise TiapError("no judge given", code="usage")
    expanded = _expand(list(judges), runs, temperature)
    warnings = dict(answers.warnings)
    silent = [a for a in answers if a.answer is None]
    if silent:
        warnings["no_answer"] = {
            "message": f"{len(silent)} answers have no text (the system gave none): no judge "
                       "judged them", "count": len(silent),
            "examples": [f"system {a.system}, query {a.query_id}" for a in silent[:5]]}
    items = [_item(a) for a in answers if a.answer is not None]
    verdicts: dict[tuple[str, str, str], list[AnswerVerdict]] = {}
    configs = []
    with contextlib.ExitStack() as stack:
        if cache is None:
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="tiap-answers-"))
            cache = Path(tmp) / "verdicts.sqlite"
        if not isinstance(cache, VerdictCache):
            cache = stack.enter_context(VerdictCache(cache))
        for judge in expanded:
            try:
                mine = [i for i in items if judge.applies(i.answer)]
                run = run_judges(mine, [judge], cache, progress=progress)
            finally:
                if judge not in judges:  # a run's copy made here
                    judge.close()
            configs.append(judge.config())
            for i, rec in zip(mine, run.records, strict=True):
                label = None if rec.label == UNSCORED else rec.label
                # no label: why; a label: the judge's own short reason (or how it was read)
                why = rec.reason if label is None else (rec.notes or rec.reason)
                verdicts.setdefault(i.answer.key, []).append(
                    AnswerVerdict(judge.name, label, why))
            for code, w in run.stats[0].warnings.items():  # invalid_reply, response_format
                _merge_warning(warnings, code, judge.name, w)
            for w in getattr(judge, "template_warnings", ()):
                _merge_warning(warnings, "template_text", judge.name, w)
    out = answers.with_verdicts(configs, verdicts)
    return AnswerSet(out.answers, out.configs, warnings)


#: The answer judges by name (``tiap answers judge --judge NAME(key=value, ...)``)
ANSWER_JUDGES: dict[str, str] = {
    "locomo-f1": "tiap.answers.judges:F1Judge",
    "locomo-em": "tiap.answers.judges:ExactMatchJudge",
    "longmemeval-abstention": "tiap.answers.judges:AbstentionJudge",
    "llm": "tiap.answers.llm_judge:LLMAnswerJudge",
}
_SPEC = re.compile(r"\s*([a-z][a-z0-9_-]*)\s*(\(.*\))?\s*", re.DOTALL)


def make_answer_judge(spec: str, defaults: Mapping[str, Any] | None = None) -> AnswerJudge:
    """An answer judge from a spec: a name of :data:`ANSWER_JUDGES`, or a call with constant
    keyword arguments, read by the audit's spec parser (never evaluated). ``defaults`` fill
    the arguments the spec does not give, where the judge takes them (``model`` reaches an
    LLM judge, not ``locomo-f1``).

    >>> make_answer_judge("locomo-f1(threshold=0.4, name='f1@0.4')").name
    'f1@0.4'
    >>> make_answer_judge("llm(prompt='judge.txt', model='gpt-4o', base_url='http://127.0.0.1:9/v1')")
    Traceback (most recent call last):
    ...
    tiap.errors.TiapError: judge.txt: prompt template file not found
    >>> make_answer_judge("locomo-f1(treshold=0.4)")
    Traceback (most recent call last):
    ...
    tiap.errors.TiapError: judge 'locomo-f1' takes no argument 'treshold' (did you mean 'threshold'?); it takes threshold, name
    """
    m = _SPEC.fullmatch(spec or "")
    if m is None:
        raise TiapError(f"invalid judge spec {spec!r}: expected NAME or NAME(key=value, ...), "
                        "e.g. locomo-f1(threshold=0.5)", code="usage")
    name = m.group(1)
    if name not in ANSWER_JUDGES:
        raise TiapError(f"unknown answer judge {name!r}{did_you_mean(name, ANSWER_JUDGES)}; "
                        f"known: {', '.join(ANSWER_JUDGES)}", code="usage")
    kwargs = parse_judge_spec("judge" + m.group(2))[1] if m.group(2) else {}
    module, _, attr = ANSWER_JUDGES[name].partition(":")
    factory = getattr(importlib.import_module(module), attr)
    takes = [p for p in inspect.signature(factory).parameters if p != "self"]
    unknown = [k for k in kwargs if k not in takes]
    if unknown:
        hint = did_you_mean(unknown[0], takes) if len(unknown) == 1 else ""
        raise TiapError(f"judge {name!r} takes no argument {', '.join(map(repr, unknown))}"
                        f"{hint}; it takes {', '.join(takes)}", code="config")
    for key, value in (defaults or {}).items():  # what the spec does not give itself
        if key in takes and key not in kwargs and value is not None:
            kwargs[key] = value
    return factory(**kwargs)


def judge_files(path: str | Path, out: str | Path, judges: Sequence[str | AnswerJudge], *,
                runs: int = 1, temperature: float | None = None,
                cache: str | Path | None = None, systems: Sequence[str] | None = None,
                sample: int | None = None, sample_seed: int = 0,
                local_model: str | None = None, local_port: int = DEFAULT_PORT,
                force: bool = False, progress: Progress | None = None
                ) -> tuple[AnswerSet, Any]:
    """``tiap answers judge PATH --judge SPEC --out OUT``: the answers of ``path`` (an
    ``answers.jsonl`` or a folder of ``tiap answers import``, ``judge`` or ``generate``)
    judged by ``judges`` (specs, :func:`make_answer_judge`, or judges) with
    :func:`judge_answers`, saved as the folder ``out`` (the input recorded with its sha256,
    every judge configuration and counted warning in the manifest). ``cache``: the verdict
    cache file (keep it to resume a killed run; ``None``: a cache for this call only).
    ``systems``: judge only their answers. ``sample``: judge the answers to a stratified
    sample of that many queries (by category, seeded by ``sample_seed``; drawn from the
    queries the first system answered, and every selected system's answers to them, so the
    systems stay paired). ``local_model``: serve that local model for the call
    (:class:`tiap.llm.local.LocalServer` on ``local_port``) and judge with it, the model
    of every LLM judge whose spec names none.

    >>> _ = Path("a.jsonl").write_text('{"dataset": "locomo", "system": "A", '
    ...     '"query_id": "q1", "answer": "Paris", "reference": "Paris"}\\n')
    >>> s, man = judge_files("a.jsonl", "judged", ["locomo-f1", "locomo-em"])
    >>> s.answers[0].verdict("locomo-em").label, sorted(p.name for p in Path("judged").iterdir())
    ('correct', ['answers.jsonl', 'manifest.json'])
    """
    answers = load_answers(path)
    if systems is not None:
        answers = answers.select(systems=systems)
    if sample is not None:
        first = answers.systems[0] if answers.systems else None
        pool = [a for a in answers if a.system == first and a.answer is not None]
        keep = set(stratified_sample(pool, sample, seed=sample_seed))
        answers = dataclasses.replace(answers, answers=tuple(a for a in answers
                                                             if a.query_id in keep))
    with contextlib.ExitStack() as stack:
        defaults: dict[str, Any] = {}
        if local_model is not None:
            srv = stack.enter_context(LocalServer(local_model, port=local_port))
            defaults = {"model": srv.model, "port": local_port}
        built = [make_answer_judge(j, defaults) if isinstance(j, str) else j for j in judges]
        judged = judge_answers(answers, built, runs=runs, temperature=temperature,
                               cache=cache, progress=progress)
    p = Path(path)
    man = save_answers(judged, out, step="answers judge",
                       inputs={"answers": p / ANSWERS_FILE if p.is_dir() else p},
                       options={"judges": [j if isinstance(j, str) else j.name for j in judges],
                                "runs": runs, "temperature": temperature,
                                "cache": None if cache is None else str(cache),
                                "systems": None if systems is None else list(systems),
                                "sample": sample, "sample_seed": sample_seed,
                                "local_model": local_model,
                                "local_port": local_port if local_model else None},
                       force=force)
    return judged, man
