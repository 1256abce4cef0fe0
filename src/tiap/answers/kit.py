"""The mnemoverse reproduction kit of LoCoMo answer judging, read as one answer set.

The kit (``mnemoverse/`` of the data folder; its README describes every file) holds fixed
LoCoMo answers, verdicts of several judges on them and human labels. :func:`import_kit`
reads them with no LLM call. Systems:

- ``mem0-platform``: Mem0 Platform's 1,539 published answers (``kit/data/mem0_oss_answers/
  conv0..9.json``), with the verdicts of ``experiments/hardening/verdicts``: ``B_*`` (gpt-5),
  ``MV_*`` (gpt-4o) and ``XB_*`` (a Claude model whose version the kit does not record) under
  the mem0 and strict prompts, ``LME_*`` (LongMemEval's rubric: gpt-4o-2024-08-06 at
  temperature 0, the template chosen by category), the conv0 single-rule ablations
  ``ABL_conv0_*`` (judge model not recorded), golden v2 (conv0 and the 54-answer validation
  set) and the human labels of the validation set;
- the six conv-26 pipelines of ``kit/data/matrix_conv26_answers.json`` under the kit's names
  (``naked_cosine``, ``mnemoverse_engine``, ``mnemoverse_http``, ``mem0_v3_cloud``,
  ``supermemory``, ``zep``) with the four judges of ``matrix_conv26_perq.json``;
- ``mem0-oss-control``: the control slice (``answers_mem0_conv26.json``, 143 answers: Mem0's
  open-source retrieval, the paper's reader) with the three gpt-5 repetitions of the mem0
  and strict prompts (``A_*_rep0..2``: runs 0-2) and its human labels;
- ``mnemoverse-engine-20260521``: the engine answers (``answers_engine_conv26.json``, 152)
  with the four judges of ``rejudge_20260521_235650.json``, golden v2 and the engine-side
  human labels (exhibits mapped to answers by question text).

Judge configurations are named ``<model>|<prompt>|r<run>`` (``gpt-5|judge_strict_ours|r0``),
the prompt being the kit's template file name: the same model, prompt and run is the same
configuration in every system. ``prompt_sha256`` is the sha256 of the template's bytes, read
at import time; ``temperature`` is what the kit states (only LongMemEval's header does), else
``None``. A model the kit does not record is ``unrecorded`` in the name and ``None`` in the
field. Human labels are the configuration ``human`` (kind ``human``; ``AMBIGUOUS`` is the
label ``ambiguous``). A verdict whose score is ``NaN`` (an unparseable judge reply) has the
label ``None`` and the file's reasoning as its reason.

Query ids: LoCoMo's ``conv-26:q<i>``, ``i`` the position in the conversation's ``qa`` list
counting adversarial questions. The kit's ids (``conv<N>_q<M>``, ``p<i>``, positions)
count only the non-adversarial questions of conversation ``N`` (LoCoMo's file order). Every
mapping is checked against the question text: where the position names another question,
the answer is kept under the one question of the conversation with its exact text (counted:
``remapped_by_text``; Mem0's conv1 ids skip a position, so two of its answers are); where
no question, or several, have the text, the answer and its verdicts are left out (counted:
``unmapped_answer``). A verdict or label whose id names no answer of its system is an error:
the file is not of these answers.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from tiap.answers.importers import (
    LOCOMO_QID,
    UNMAPPED,
    LocomoIndex,
    Warnings,
    locomo_bundles,
    read_json_file,
    shape_error,
)
from tiap.answers.records import (
    AMBIGUOUS,
    CORRECT,
    WRONG,
    Answer,
    AnswerSet,
    AnswerVerdict,
    JudgeConfig,
    prompt_sha256,
)
from tiap.datasets import Bundle, Query
from tiap.errors import Problems, TiapError

__all__ = ["KIT_SYSTEMS", "import_kit", "judge_name"]

#: the systems :func:`import_kit` reads, in order
KIT_SYSTEMS = ("mem0-platform", "naked_cosine", "mnemoverse_engine", "mnemoverse_http",
               "mem0_v3_cloud", "supermemory", "zep", "mem0-oss-control",
               "mnemoverse-engine-20260521")
PIPELINES = KIT_SYSTEMS[1:7]
HUMAN = "human"
_LABELS = {"CORRECT": CORRECT, "WRONG": WRONG, "AMBIGUOUS": AMBIGUOUS}
_SCORES = {CORRECT: 1.0, WRONG: 0.0}
_MEM0_QID = LOCOMO_QID
_VALIDATION_QID = re.compile(r"c[0-9]+_q(conv[0-9]+_q[0-9]+)")
#: the kit's judge names (matrix, rejudge) -> template
_KIT_JUDGES = {"mem0": "judge_mem0_generous", "mem0-4o": "judge_mem0_generous",
               "strict": "judge_strict_ours", "mnemoverse": "judge_mnemoverse"}
_MATRIX_MODELS = {"mem0": "gpt-5", "mem0-4o": "gpt-4o", "strict": "gpt-5",
                  "mnemoverse": "gpt-5-mini"}
_VERDICTS = "experiments/hardening/verdicts"
#: where the kit's files hold NaN: the score of a verdict record (no usable verdict)
_NAN_SCORE = re.compile(r"\.(?:records)?\[[0-9]+\]\.score")


def judge_name(model: str | None, prompt: str, run: int = 0) -> str:
    """The kit's judge configuration name: ``<model>|<prompt>|r<run>``.

    >>> judge_name("gpt-5", "judge_strict_ours"), judge_name(None, "judge_abl_no_partial")
    ('gpt-5|judge_strict_ours|r0', 'unrecorded|judge_abl_no_partial|r0')
    """
    return f"{model or 'unrecorded'}|{prompt}|r{run}"


class _Kit:
    """The state of one import: answers per system keyed by the kit's id, verdicts, configs,
    problems (errors) and warnings."""

    def __init__(self, root: Path, bundles: list[Bundle]) -> None:
        self.root = root
        self.problems = Problems()
        self.warn = Warnings()
        self.index = LocomoIndex(bundles, self.warn)
        self.answers: dict[str, dict[str, Answer]] = {s: {} for s in KIT_SYSTEMS}
        self.left_out: dict[str, set[str]] = {s: set() for s in KIT_SYSTEMS}
        #: (system, id prefix) of answer files that could not be read: their verdicts are
        #: not checked (the file's error is reported once, not once per verdict)
        self.broken: set[tuple[str, str]] = set()
        self.verdicts: dict[tuple[str, str], list[AnswerVerdict]] = {}
        self.configs: dict[str, JudgeConfig] = {}

    # -- files and configurations ---------------------------------------------------------
    def load(self, rel: str) -> Any:
        try:
            return read_json_file(self.root / rel, nan_at=_NAN_SCORE)
        except TiapError as exc:
            self.problems.extend(exc)
            return None

    def prompt_sha(self, stem: str) -> str | None:
        p = self.root / "kit" / "prompts" / f"{stem}.txt"
        if not p.is_file():
            self.problems.add(f"the kit has no prompt template {p.name}", file=p, code="io")
            return None
        return prompt_sha256(p)

    def config(self, model: str | None, prompt: str, run: int = 0, *,
               temperature: float | None = None, sha: str | None | bool = True,
               settings: dict[str, Any] | None = None) -> str:
        name = judge_name(model, prompt, run)
        if name not in self.configs:
            digest = self.prompt_sha(prompt) if sha is True else (sha or None)
            self.configs[name] = JudgeConfig(name, "llm", model, prompt, digest, temperature,
                                             run, settings or {})
        return name

    def human(self) -> str:
        self.configs.setdefault(HUMAN, JudgeConfig(HUMAN, kind="human", settings={
            "annotator": "the kit's author, blind to machine verdicts"}))
        return HUMAN

    # -- mapping ----------------------------------------------------------------------------
    def query(self, conv: int, pos: int, question: str | None, where: str) -> Query | None:
        """The LoCoMo query the kit's (conversation, non-adversarial position) names,
        checked by question text; ``None`` (counted) when it cannot be mapped."""
        return self.index.query(conv, pos, question, where)

    def add_answer(self, system: str, key: str, q: Query | None, rec: dict[str, Any],
                   text_field: str = "answer") -> None:
        if q is None:
            self.left_out[system].add(key)
            return
        if key in self.answers[system]:
            self.problems.add(f"system {system}: id {key!r} is given twice", record=key,
                              code="duplicate")
            return
        if any(a.query_id == q.query_id for a in self.answers[system].values()):
            self.problems.add(f"system {system}: two answers map to {q.query_id}", record=key,
                              query_id=q.query_id, code="duplicate")
            return
        text = rec.get(text_field)
        self.answers[system][key] = Answer(
            "locomo", system, q.query_id, text if isinstance(text, str) else None,
            question=q.question, reference=_gold(rec.get("gold"), q), category=q.category,
            source_id=key)

    # -- verdicts ---------------------------------------------------------------------------
    def verdict(self, system: str, key: str, judge: str, label: str | None,
                reason: str | None, where: str) -> None:
        if key in self.left_out[system]:
            self.warn.also("unmapped_answer", UNMAPPED, "verdicts")
            return
        if key not in self.answers[system]:
            if any(s == system and key.startswith(pre) for s, pre in self.broken):
                return
            self.problems.add(f"id {key!r} names no answer of system {system}: the file is "
                              "not of these answers", record=where)
            return
        got = self.verdicts.setdefault((system, key), [])
        if any(v.judge == judge for v in got):
            self.problems.add(f"a second verdict of judge {judge} on id {key!r}",
                              record=where, code="duplicate")
            return
        got.append(AnswerVerdict(judge, label, reason))

    def verdict_file(self, rel: str, system: str, judge: str,
                     key: Callable[[Any], str | None] = str) -> None:
        """A list of ``{qid, score, label, reasoning}`` records (NaN score: no verdict)."""
        data = self.load(rel)
        if data is None:
            return
        recs = data.get("records") if isinstance(data, dict) else data
        if not isinstance(recs, list):
            self.problems.extend(shape_error(self.root / rel, "a list of verdicts", data))
            return
        for i, r in enumerate(recs):
            where = f"{rel}[{i}]"
            if not isinstance(r, dict) or "qid" not in r:
                self.problems.add("expected a verdict object with a qid", record=where)
                continue
            k = key(r["qid"])
            if k is None:
                self.problems.add(f"qid {r['qid']!r} is not of the expected form",
                                  record=where)
                continue
            got = _label(r, where, self.problems)
            if got is not False:
                self.verdict(system, k, judge, got, _reason(r, got), where)

    def scores(self, rel: str, system: str, judge: str, values: Any,
               keys: list[str]) -> None:
        """0/1 scores given in the order of ``keys``."""
        if (system, "") in self.broken:
            return
        if not isinstance(values, list) or len(values) != len(keys):
            self.problems.add(f"expected {len(keys)} scores in the answers' order, got "
                              f"{len(values) if isinstance(values, list) else values!r}",
                              record=rel)
            return
        for k, s in zip(keys, values, strict=True):
            lab = _score_label(s)
            if lab is None:
                self.problems.add(f"score {s!r} is not 0 or 1", record=f"{rel}[{k}]",
                                  code="invalid-value")
                continue
            self.verdict(system, k, judge, lab, None, f"{rel}[{k}]")

    def answer_set(self) -> AnswerSet:
        out = []
        for system in KIT_SYSTEMS:
            for key, a in self.answers[system].items():
                vs = self.verdicts.get((system, key), ())
                out.append(a.with_verdicts(vs) if vs else a)
        used = {v.judge for a in out for v in a.verdicts}
        return AnswerSet(tuple(out), {k: c for k, c in self.configs.items() if k in used},
                         self.warn.to_json())


def _gold(gold: Any, q: Query) -> str | None:
    if isinstance(gold, str):
        return gold
    if gold is not None and not isinstance(gold, bool):
        return str(gold)
    return q.answer


def _label(r: dict[str, Any], where: str, problems: Problems) -> str | None | bool:
    """The label of a kit verdict record (``None``: no verdict), or ``False`` when the
    record is not a verdict (a problem is added)."""
    raw, score = r.get("label"), r.get("score")
    nan = isinstance(score, float) and math.isnan(score)
    if raw is None and (nan or score is None):
        return None
    lab = _LABELS.get(raw) if isinstance(raw, str) else None
    if lab is None or lab == AMBIGUOUS:
        problems.add(f"label {raw!r}: expected CORRECT, WRONG or null", record=where,
                     code="invalid-value")
        return False
    if score != _SCORES[lab]:
        problems.add(f"score {score!r} does not match label {raw!r}", record=where,
                     code="invalid-value")
        return False
    return lab


def _reason(r: dict[str, Any], label: str | None) -> str | None:
    if label is not None:
        return None
    why = r.get("reasoning")
    return "no usable verdict (label null)" + (f": {why}" if isinstance(why, str) and why
                                              else "")


def _score_label(s: Any) -> str | None:
    if isinstance(s, bool) or not isinstance(s, (int, float)):
        return None
    return CORRECT if s == 1 else WRONG if s == 0 else None


def _human_label(v: Any) -> str | None:
    return _LABELS.get(v) if isinstance(v, str) else None


def _mem0_key(qid: Any) -> str | None:
    return qid if isinstance(qid, str) and _MEM0_QID.fullmatch(qid) else None


def _validation_key(qid: Any) -> str | None:
    m = _VALIDATION_QID.fullmatch(qid) if isinstance(qid, str) else None
    return m.group(1) if m else None


def _int_key(qid: Any) -> str | None:
    return str(qid) if isinstance(qid, int) and not isinstance(qid, bool) else None


# ------------------------------------------------------------------------------------------
# the four parts of the kit


def _mem0_platform(kit: _Kit) -> None:
    system = "mem0-platform"
    for n in range(10):
        rel = f"kit/data/mem0_oss_answers/conv{n}.json"
        data = kit.load(rel)
        if not isinstance(data, list):
            if data is not None:
                kit.problems.extend(shape_error(kit.root / rel, "a list of answers", data))
            kit.broken.add((system, f"conv{n}_"))
            continue
        for i, r in enumerate(data):
            key = _mem0_key(r.get("qid")) if isinstance(r, dict) else None
            if key is None:
                kit.problems.add("expected an answer with a qid conv<N>_q<M>",
                                 record=f"{rel}[{i}]")
                continue
            m = _MEM0_QID.fullmatch(key)
            assert m is not None
            q = kit.query(int(m.group(1)), int(m.group(2)), r.get("question"),
                          f"{rel}[{i}] ({key})")
            kit.add_answer(system, key, q, r)
    lme = kit.config("gpt-4o-2024-08-06", "judge_longmemeval", temperature=0.0, sha=None,
                     settings={"templates": {s: kit.prompt_sha(s) for s in (
                         "judge_longmemeval_default", "judge_longmemeval_temporal")},
                         "routing": "judge_longmemeval_temporal for temporal questions, "
                                    "judge_longmemeval_default for the others"})
    claude = {"model_version": "not recorded in the kit"}
    for n in range(10):
        for rel, judge in (
                (f"B_conv{n}_mem0.json", kit.config("gpt-5", "judge_mem0_generous")),
                (f"B_conv{n}_strict.json", kit.config("gpt-5", "judge_strict_ours")),
                (f"MV_conv{n}_mem0-4o.json", kit.config("gpt-4o", "judge_mem0_generous")),
                (f"MV_conv{n}_strict-4o.json", kit.config("gpt-4o", "judge_strict_ours")),
                (f"XB_conv{n}_mem0-claude.json",
                 kit.config("claude", "judge_mem0_generous", settings=claude)),
                (f"XB_conv{n}_strict-claude.json",
                 kit.config("claude", "judge_strict_ours", settings=claude)),
                (f"LME_conv{n}.json", lme)):
            kit.verdict_file(f"{_VERDICTS}/{rel}", system, judge, _mem0_key)
    for rule in ("datetol", "extradetail", "paraphrase", "partial"):
        judge = kit.config(None, f"judge_abl_no_{rule}", settings={
            "model_note": "not recorded in the kit (presumably gpt-5, as the other "
                          "hardening runs)"})
        kit.verdict_file(f"{_VERDICTS}/ABL_conv0_abl-no-{rule}.json", system, judge,
                         _mem0_key)
    golden = kit.config("gpt-5", "judge_golden_v2")
    kit.verdict_file("experiments/golden_judge/fullrun_verdicts/conv0_golden2.json", system,
                     golden, _mem0_key)
    # the validation set: 54 of the published answers (checked to be the same answers)
    rel = "experiments/golden_judge/validation_set_answers.json"
    data = kit.load(rel)
    if isinstance(data, list):
        for i, r in enumerate(data):
            key = _validation_key(r.get("qid")) if isinstance(r, dict) else None
            a = kit.answers[system].get(key) if key else None
            if a is not None and a.answer != r.get("answer"):
                kit.problems.add(f"answer of {key} differs from the published one",
                                 record=f"{rel}[{i}]")
    kit.verdict_file("experiments/golden_judge/verdicts_golden2_validation_set.json", system,
                     golden, _validation_key)
    rel = "kit/judge_audit/human_labels_validation_set.json"
    _human_file(kit, rel, system, "qid", _validation_key)


def _human_file(kit: _Kit, rel: str, system: str, field: str,
                key: Callable[[Any], str | None]) -> None:
    data = kit.load(rel)
    if data is None:
        return
    labels = data.get("labels") if isinstance(data, dict) else None
    if not isinstance(labels, list):
        kit.problems.extend(shape_error(kit.root / rel, 'an object with a list "labels"',
                                        data))
        return
    judge = kit.human()
    for i, r in enumerate(labels):
        where = f"{rel}[{i}]"
        k = key(r.get(field)) if isinstance(r, dict) else None
        lab = _human_label(r.get("human_verdict")) if isinstance(r, dict) else None
        if k is None or lab is None:
            kit.problems.add(f"expected {{{field}, human_verdict: CORRECT/WRONG/AMBIGUOUS}}",
                             record=where)
            continue
        kit.verdict(system, k, judge, lab, None, where)


def _pipelines(kit: _Kit) -> None:
    rel = "kit/data/matrix_conv26_answers.json"
    data = kit.load(rel)
    ans = data.get("answers") if isinstance(data, dict) else None
    if not isinstance(ans, dict):
        if data is not None:
            kit.problems.extend(shape_error(kit.root / rel, 'an object with "answers"', data))
        kit.broken.update((system, "") for system in PIPELINES)
        ans = {}
    for system in PIPELINES:
        recs = ans.get(system)
        if not isinstance(recs, list):
            if ans:
                kit.problems.add(f"no answer list of pipeline {system}", record=rel)
            kit.broken.add((system, ""))
            continue
        for i, r in enumerate(recs):
            qid = r.get("qid") if isinstance(r, dict) else None
            m = re.fullmatch(r"p([0-9]+)", qid) if isinstance(qid, str) else None
            if m is None:
                kit.problems.add("expected an answer with a qid p<i>",
                                 record=f"{rel}:{system}[{i}]")
                continue
            q = kit.query(0, int(m.group(1)), r.get("question"), f"{rel}:{system}[{i}]")
            kit.add_answer(system, qid, q, r)
    rel = "kit/data/matrix_conv26_perq.json"
    data = kit.load(rel)
    matrix = data.get("matrix") if isinstance(data, dict) else None
    if not isinstance(matrix, dict):
        if data is not None:
            kit.problems.extend(shape_error(kit.root / rel, 'an object with "matrix"', data))
        return
    binary = kit.config("gpt-5-mini", "judge_mnemoverse_binary", sha=None, settings={
        "note": "naked_cosine's mnemoverse judge: the engine's self-evaluation binary "
                "prompt (the file's _provenance); its template is not in the kit"})
    kit.warn.add("judge_provenance", "verdicts whose judge differs from the one their "
                 "column names in the source file; given their own judge configuration",
                 f"{rel}: naked_cosine's mnemoverse column used another prompt "
                 f"(_provenance): judge {binary}, not "
                 f"{judge_name('gpt-5-mini', 'judge_mnemoverse')}")
    for system in PIPELINES:
        rows = matrix.get(system)
        if not isinstance(rows, dict):
            kit.problems.add(f"no verdicts of pipeline {system}", record=rel)
            continue
        for idx, cols in rows.items():
            where = f"{rel}:{system}[{idx}]"
            if not isinstance(cols, dict) or not idx.isdigit():
                kit.problems.add("expected {judge: 0/1} under a question index", record=where)
                continue
            for col, s in cols.items():
                if col not in _KIT_JUDGES:
                    kit.problems.add(f"unknown judge column {col!r}", record=where)
                    continue
                judge = (binary if system == "naked_cosine" and col == "mnemoverse" else
                         kit.config(_MATRIX_MODELS[col], _KIT_JUDGES[col]))
                lab = _score_label(s)
                if lab is None:
                    kit.problems.add(f"{col} score {s!r} is not 0 or 1", record=where,
                                     code="invalid-value")
                    continue
                kit.verdict(system, f"p{idx}", judge, lab, None, where)


def _control(kit: _Kit) -> None:
    system = "mem0-oss-control"
    rel = "kit/data/answers_mem0_conv26.json"
    data = kit.load(rel)
    if isinstance(data, list):
        for i, r in enumerate(data):
            key = _int_key(r.get("qid")) if isinstance(r, dict) else None
            if key is None or not isinstance(r.get("question"), str):
                kit.problems.add("expected an answer with an integer qid and a question",
                                 record=f"{rel}[{i}]")
                continue
            q, why = (kit.index.text[0].by_question(r["question"]) if kit.index.text
                      else (None, "LoCoMo has no conversation"))
            if q is None:
                kit.warn.add("unmapped_answer", UNMAPPED,
                             f"{rel}[{i}]: {why} in conversation 0")
            kit.add_answer(system, key, q, r)
    else:
        if data is not None:
            kit.problems.extend(shape_error(kit.root / rel, "a list of answers", data))
        kit.broken.add((system, ""))
    for prompt, stem in (("mem0", "judge_mem0_generous"), ("strict", "judge_strict_ours")):
        for run in range(3):
            kit.verdict_file(f"{_VERDICTS}/A_{prompt}_rep{run}.json", system,
                             kit.config("gpt-5", stem, run), _int_key)
    _human_file(kit, "kit/judge_audit/human_labels_control_slice.json", system, "qid",
                _int_key)


def _engine(kit: _Kit) -> None:
    system = "mnemoverse-engine-20260521"
    rel = "kit/data/answers_engine_conv26.json"
    data = kit.load(rel)
    recs = data.get("records") if isinstance(data, dict) else None
    keys: list[str] = []
    if isinstance(recs, list):
        for i, r in enumerate(recs):
            key = _int_key(r.get("idx")) if isinstance(r, dict) else None
            if key is None:
                kit.problems.add("expected an answer with an integer idx",
                                 record=f"{rel}[{i}]")
                continue
            keys.append(key)
            kit.add_answer(system, key, kit.query(0, int(key), r.get("question"),
                                                  f"{rel}[{i}]"), r)
    else:
        if data is not None:
            kit.problems.extend(shape_error(kit.root / rel, 'an object with "records"', data))
        kit.broken.add((system, ""))
    rel = "kit/data/rejudge_20260521_235650.json"
    data = kit.load(rel)
    judges = data.get("judges") if isinstance(data, dict) else None
    if isinstance(judges, list):
        for j in judges:
            name = j.get("judge") if isinstance(j, dict) else None
            if name not in _KIT_JUDGES or not isinstance(j.get("model"), str):
                kit.problems.add(f"expected a judge of {', '.join(_KIT_JUDGES)} with a model",
                                 record=f"{rel}:judges")
                continue
            kit.scores(f"{rel}:{name}", system, kit.config(j["model"], _KIT_JUDGES[name]),
                       j.get("scores"), keys)
    elif data is not None:
        kit.problems.extend(shape_error(kit.root / rel, 'an object with "judges"', data))
    kit.verdict_file("experiments/golden_judge/verdicts_golden2_engine_conv26.json", system,
                     kit.config("gpt-5", "judge_golden_v2"), _int_key)
    # engine-side human labels: exhibit ex<i> is mem0_over_strict_exhibits[i]
    exhibits = data.get("mem0_over_strict_exhibits") if isinstance(data, dict) else None
    by_text: dict[str, list[str]] = {}
    for key, a in kit.answers[system].items():
        by_text.setdefault(" ".join((a.question or "").split()), []).append(key)
    ex_key: dict[str, str | None] = {}
    for i, ex in enumerate(exhibits if isinstance(exhibits, list) else []):
        hits = by_text.get(" ".join(str(ex.get("question", "")).split()), []) \
            if isinstance(ex, dict) else []
        ok = len(hits) == 1 and kit.answers[system][hits[0]].answer == ex.get("answer")
        ex_key[f"ex{i}"] = hits[0] if ok else None
        if not ok:
            kit.left_out[system].add(f"ex{i}")
            kit.warn.add("unmapped_answer", UNMAPPED,
                         f"{rel}:mem0_over_strict_exhibits[{i}]: {len(hits)} engine answers "
                         "ask its question" + ("" if len(hits) != 1 else
                                               " (with another answer text)"))
    _human_file(kit, "kit/judge_audit/human_labels_engine_side.json", system, "exhibit_id",
                lambda x: (ex_key.get(x) or x) if isinstance(x, str) else None)


def import_kit(path: str | Path, *, locomo: str | Path | Iterable[Bundle] | None = None
               ) -> AnswerSet:
    """The mnemoverse kit's answers, verdicts and human labels as one answer set (module
    docstring: systems, judge names, id mapping).

    ``path`` is the kit folder (``mnemoverse/`` of the data folder); ``locomo`` is LoCoMo
    (a ``locomo10.json`` file, a data folder, read bundles, or ``None``: ``$TIAP_DATA``).
    Every problem of the kit's files is reported together; what could not be mapped is
    counted in ``warnings``.

    >>> s = import_kit(data_dir() / "mnemoverse")                         # doctest: +SKIP
    >>> len(s.select(systems=["mem0-platform"]))                          # doctest: +SKIP
    1539

    A folder that is not the kit:

    >>> Path("empty").mkdir()
    >>> import_kit("empty", locomo=[])
    Traceback (most recent call last):
    ...
    tiap.errors.TiapError: empty: not the mnemoverse kit (no kit/data/mem0_oss_answers)
    """
    root = Path(path)
    if not (root / "kit" / "data" / "mem0_oss_answers").is_dir():
        raise TiapError("not the mnemoverse kit (no kit/data/mem0_oss_answers)", file=root,
                        code="io")
    kit = _Kit(root, locomo_bundles(locomo))
    _mem0_platform(kit)
    _pipelines(kit)
    _control(kit)
    _engine(kit)
    kit.problems.raise_if_any()
    if not any(kit.answers.values()):
        raise TiapError("no answer of the kit maps to a LoCoMo question"
                        + "".join(f"; {e}" for w in kit.warn.to_json().values()
                                  for e in w["examples"][:3]), file=root,
                        code="invalid-value")
    return kit.answer_set()
