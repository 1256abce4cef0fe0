"""The paper's audit artifacts as TIAP cases and labels (MTEL-Mem ``semantic_audit/``).

``judged_cases.csv`` holds the paper's 1,902 contested credits with the verdict of its
judge (``anthropic/claude-sonnet-4``): one row per (run, query, audit target), columns
``run_label, query_index, tenant_id, query, reference_answer, audit_target, raw_ndcg,
target_ndcg, credited_rank, credited_memory_id, credited_kind, credited_content,
raw_support_content, judge_model, judge_semantic_label, judge_serving_label, judge_notes,
judge_raw_response``. The ``*_audit_cases.csv`` files hold the same cases without verdicts
(plus the query-view text, the source fixture and the candidate answers).

Mapping to TIAP:

- ``case_id`` = ``RUN:QUERY_INDEX:TARGET`` with ``audit_target`` ``source_family`` ->
  ``source`` and ``canonical`` -> ``canonical``; ``system`` = the run label; ``query_id`` =
  the run's ``query_index`` (a per-run position, not a stable id: docs/paper-traces.md);
- ``dataset`` = ``locomo`` or ``longmemeval/s`` from the run label's prefix;
- the measure is the paper's nDCG@60 under group credit (``raw_ndcg``, ``target_ndcg``);
- the serving label ``raw_required`` reads as ``raw_needed`` (:mod:`tiap.audit.labels`).

The validation files name the BGE-M3 LoCoMo run ``locomo_bge`` where the audit files say
``locomo_bge_m3`` (:data:`RUN_ALIASES`; all 60 such rows of the 120-row validation sample
name a ``source_memory_id`` of ``locomo_bge_m3``'s audit cases at the same query index).
"""

from __future__ import annotations

import csv
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from tiap.audit.cases import Case
from tiap.audit.labels import (
    UNSCORED,
    LabelRecord,
    normalize_label,
    normalize_serving,
)
from tiap.errors import Problem, TiapError

__all__ = [
    "PAPER_LABEL_COUNTS",
    "REVIEWER_ALIASES",
    "RUN_ALIASES",
    "paper_case_id",
    "paper_dataset",
    "read_paper_cases",
    "read_paper_human",
    "read_paper_labels",
]

#: The label counts the paper's judged_cases.csv must give (issue 6; paper section 5.5).
PAPER_LABEL_COUNTS: Mapping[str, int] = {"supports": 504, "partial": 759,
                                         "does_not_support": 639}
TARGETS: Mapping[str, str] = {"source_family": "source", "source": "source",
                              "canonical": "canonical"}
RUN_ALIASES: Mapping[str, str] = {"locomo_bge": "locomo_bge_m3"}
#: The external reviewer's spellings (external_semantic_review_set_36.csv), read explicitly.
REVIEWER_ALIASES: Mapping[str, str] = {
    "support_ok": "supports", "suport_ok": "supports", "partial_ok": "partial",
    "does_not_suipport": "does_not_support",
}
_DATASET_PREFIX = {"locomo": "locomo", "longmemeval": "longmemeval/s", "beam": "beam"}
_REVIEW_DATASET = {"locomo": "locomo", "longmemeval-s": "longmemeval"}
_REVIEW_PROVIDER = {"bge-m3": "bge_m3", "all-minilm": "allminilm", "lexical": "lexical",
                    "mxbai": "mxbai"}
_CASE_COLUMNS = {"run_label", "query_index", "audit_target", "query", "reference_answer",
                 "credited_rank", "credited_memory_id", "credited_content"}


def paper_case_id(run_label: str, query_index: str | int, audit_target: str) -> str:
    """``RUN:QUERY_INDEX:TARGET`` (``source_family`` -> ``source``)."""
    run = RUN_ALIASES.get(run_label, run_label)
    target = TARGETS.get(audit_target)
    if target is None:
        raise TiapError(f"unknown audit_target {audit_target!r} (source_family, canonical)")
    return f"{run}:{int(query_index)}:{target}"


def paper_dataset(run_label: str) -> str:
    """``locomo`` or ``longmemeval/s`` from a run label such as ``longmemeval_bge_m3``."""
    return _DATASET_PREFIX.get(run_label.split("_", 1)[0], run_label.split("_", 1)[0])


def _rows(path: str | Path) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    p = Path(path)
    if not p.exists():
        raise TiapError("file not found", file=p)
    with open(p, newline="", encoding="utf-8-sig") as fh:
        reader = csv.DictReader(fh)
        header = list(reader.fieldnames or [])
        # csv line numbers: the row's last physical line (fields may span lines)
        rows = [(reader.line_num, row) for row in reader]
    return header, rows


def _float(v: str | None) -> float | None:
    return None if v in (None, "") else float(v)


def read_paper_cases(path: str | Path) -> list[Case]:
    """The cases of ``judged_cases.csv`` or of an ``*_audit_cases.csv`` file."""
    header, rows = _rows(path)
    missing = sorted(_CASE_COLUMNS - set(header))
    if missing:
        raise TiapError(f"not a paper audit-case CSV: no column {', '.join(missing)}",
                        file=path)
    out: list[Case] = []
    problems: list[Problem] = []
    seen: set[str] = set()
    for line, r in rows:
        try:
            cid = paper_case_id(r["run_label"], r["query_index"], r["audit_target"])
            rank = int(r["credited_rank"])
        except (TiapError, ValueError) as exc:
            problems.append(Problem(str(exc).split("\n")[0], file=str(path), line=line))
            continue
        if cid in seen:
            problems.append(Problem("duplicate case", file=str(path), line=line, record=cid))
            continue
        seen.add(cid)
        rsr = r.get("raw_support_rank") or ""
        out.append(Case(
            case_id=cid,
            system=RUN_ALIASES.get(r["run_label"], r["run_label"]),
            query_id=str(int(r["query_index"])),
            target=TARGETS[r["audit_target"]],
            item_id=r["credited_memory_id"],
            item_text=r["credited_content"],
            item_kind=r.get("credited_kind") or "",
            question=r["query"],
            answer=r["reference_answer"],
            credited_rank=rank,
            dataset=paper_dataset(r["run_label"]),
            case_type="raw_hit" if (rsr or r.get("raw_support_content")) else "raw_miss",
            measure="nDCG@60",
            credit="group",
            k=60,
            raw_value=_float(r.get("raw_ndcg")),
            target_value=_float(r.get("target_ndcg")),
            raw_support_rank=int(rsr) if rsr else None,
            raw_support_item_id=r.get("raw_support_memory_id") or None,
            raw_support_text=r.get("raw_support_content") or None,
            collection=r.get("tenant_id") or "",
            extra={"paper_file": Path(path).name, "paper_audit_target": r["audit_target"]},
        ))
    if problems:
        raise TiapError(problems=problems)
    return out


def read_paper_labels(path: str | Path) -> list[LabelRecord]:
    """The verdicts of ``judged_cases.csv`` as label records (judge = ``judge_model``)."""
    header, rows = _rows(path)
    need = {"judge_model", "judge_semantic_label"}
    if not need <= set(header):
        raise TiapError("not the paper's judged_cases.csv: no column "
                        f"{', '.join(sorted(need - set(header)))}", file=path)
    cases = {c.case_id: c for c in read_paper_cases(path)}
    out: list[LabelRecord] = []
    for (_line, r), (cid, case) in zip(rows, cases.items(), strict=True):
        settings = {"factory": "paper", "name": r["judge_model"], "model": r["judge_model"],
                    "source": Path(path).name, "rubric_version": "paper (prompt not released)",
                    "temperature": 0.0}
        label = normalize_label(r["judge_semantic_label"])
        reason = None
        if label is None:
            reason = f"label {r['judge_semantic_label']!r} is not in the rubric"
            label = UNSCORED
        out.append(LabelRecord(
            case_id=cid, judge=r["judge_model"], label=label,
            serving_label=normalize_serving(r.get("judge_serving_label")), reason=reason,
            notes=r.get("judge_notes") or None, raw_response=r.get("judge_raw_response"),
            dataset=case.dataset, system=case.system, query_id=case.query_id,
            target=case.target, item_id=case.item_id, settings=settings, timing={}))
    return out


def label_counts(labels: Iterable[LabelRecord], by: str | None = None) -> dict[str, Any]:
    """``{label: count}``, or ``{value of field by: {label: count}}``.

        >>> from tiap.audit import LabelRecord
        >>> labels = [LabelRecord("c1", "j", "supports", dataset="locomo"),
        ...           LabelRecord("c2", "j", "partial", dataset="beam"),
        ...           LabelRecord("c3", "j", "supports", dataset="locomo")]
        >>> label_counts(labels)
        {'supports': 2, 'partial': 1}
        >>> label_counts(labels, "dataset")
        {'beam': {'partial': 1}, 'locomo': {'supports': 2}}
    """
    if by is None:
        return dict(Counter(r.label for r in labels))
    out: dict[str, Counter[str]] = {}
    for r in labels:
        out.setdefault(str(getattr(r, by)), Counter())[r.label] += 1
    return {k: dict(v) for k, v in sorted(out.items())}


# ------------------------------------------------------------------------------------------
# the paper's human validation files


def _human_record(name: str, run: str, qi: str, target: str, item_id: str, raw_label: str,
                  notes: str | None, file: str, line: int,
                  aliases: Mapping[str, str] | None) -> LabelRecord:
    label = normalize_label(raw_label, aliases)
    reason = None
    if label is None:
        label, reason = UNSCORED, f"label {raw_label!r} is not in the rubric"
    system = RUN_ALIASES.get(run, run)
    return LabelRecord(
        case_id=paper_case_id(run, qi, target), judge=name, label=label, reason=reason,
        notes=notes or None, dataset=paper_dataset(system), system=system,
        query_id=str(int(qi)), target=TARGETS[target], item_id=item_id,
        unit=f"{system}:{int(qi)}", origin=(file, line),
        settings={"factory": "human", "name": name, "source": Path(file).name})


def read_paper_human(path: str | Path, name: str | None = None) -> list[LabelRecord] | None:
    """Human labels of the paper's validation files, one record per audit target, or
    ``None`` when the file is in none of their formats. Each row is one judgment of one
    memory, copied to the Source and the Canonical case it stands for; both records carry
    the judgment's ``unit`` (``RUN:QUERY_INDEX``, the same for every rater), so that
    agreement counts the judgment once (:func:`tiap.audit.agreement.agreement`):

    - ``semantic_validation_sample_115.csv`` (``sample_id, run_label, query_index,
      source_memory_id, canonical_memory_id, semantic_support_label``, the primary
      annotator): each row labels the case under Source and under Canonical (the sample
      holds only cases where both targets credit the same memory);
    - ``external_semantic_review_set_36.csv`` (``review_id, dataset, provider, query_index,
      semantic_support_label``, the external reviewer; their spellings ``support_ok``,
      ``partial_ok`` ... are read through :data:`REVIEWER_ALIASES`);
    - ``external_semantic_review_set_36.answer_key.csv`` (``review_id, run_label,
      query_index, internal_semantic_support_label``: the internal labels of those 36).
    """
    header, rows = _rows(path)
    cols = set(header)
    file = str(path)
    out: list[LabelRecord] = []
    if {"sample_id", "run_label", "query_index", "source_memory_id",
            "semantic_support_label"} <= cols:
        who = name or "human:primary"
        for line, r in rows:
            for target, mem in (("source_family", r["source_memory_id"]),
                                ("canonical", r.get("canonical_memory_id")
                                 or r["source_memory_id"])):
                out.append(_human_record(who, r["run_label"], r["query_index"], target, mem,
                                         r["semantic_support_label"],
                                         r.get("semantic_support_notes"), file, line, None))
        return out
    if {"review_id", "run_label", "query_index", "internal_semantic_support_label"} <= cols:
        who = name or "human:internal"
        for line, r in rows:
            for target in ("source_family", "canonical"):
                out.append(_human_record(who, r["run_label"], r["query_index"], target, "",
                                         r["internal_semantic_support_label"],
                                         r.get("internal_semantic_support_notes"), file, line,
                                         None))
        return out
    if {"review_id", "dataset", "provider", "query_index", "semantic_support_label"} <= cols:
        who = name or "human:external"
        for line, r in rows:
            ds = _REVIEW_DATASET.get(r["dataset"].strip().lower())
            pv = _REVIEW_PROVIDER.get(r["provider"].strip().lower())
            if ds is None or pv is None:
                raise TiapError(f"unknown dataset/provider {r['dataset']!r}/{r['provider']!r}",
                                file=path, line=line)
            for target in ("source_family", "canonical"):
                out.append(_human_record(who, f"{ds}_{pv}", r["query_index"], target, "",
                                         r["semantic_support_label"],
                                         r.get("semantic_support_notes"), file, line,
                                         REVIEWER_ALIASES))
        return out
    return None
