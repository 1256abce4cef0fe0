"""Human labels from CSV files, for agreement with the judges.

:func:`read_human_labels` reads

- the paper's validation files (:func:`tiap.audit.paper.read_paper_human`), recognised by
  their columns; or
- a plain CSV with a ``case_id`` column and a label column (``label``,
  ``semantic_support_label`` or ``semantic_label``), optionally ``rater`` (several humans in
  one file), ``target``, ``dataset`` and ``unit`` (rows of one rater with the same unit are
  one judgment copied to several cases, counted once by the agreement report; without it
  every row is its own judgment). Labels are read by
  :func:`tiap.audit.labels.normalize_label`; a value it does not know is an error naming the
  file, line and value (so a typo is never silently dropped), unless it is empty. A file
  with no row is an error naming it.

Human raters are named ``human:NAME`` (``NAME`` from ``--human NAME=CSV``, the ``rater``
column, or the file's role in the paper's data: ``primary``, ``external``, ``internal``).
"""

from __future__ import annotations

import csv
from collections.abc import Mapping
from pathlib import Path

from tiap.audit.labels import UNSCORED, LabelRecord, normalize_label
from tiap.audit.paper import read_paper_human
from tiap.errors import Problem, TiapError

__all__ = ["read_human_labels"]

_LABEL_COLUMNS = ("label", "semantic_support_label", "semantic_label")


def read_human_labels(path: str | Path, name: str | None = None,
                      aliases: Mapping[str, str] | None = None) -> list[LabelRecord]:
    """Human label records from ``path`` (module docstring).

    Example: a plain CSV; labels are read case-blind (``Partially supports`` is
    ``partial``), an empty one is ``unscored``, and an unknown one is an error naming its
    line.

    >>> from pathlib import Path
    >>> _ = Path("human.csv").write_text("case_id,label\\n"
    ...                                  "A:q1:canonical,Supports\\n"
    ...                                  "A:q2:canonical,Partially supports\\n"
    ...                                  "A:q3:canonical,\\n")
    >>> [(r.case_id, r.judge, r.label) for r in read_human_labels("human.csv", "ann")]
    [('A:q1:canonical', 'human:ann', 'supports'),
     ('A:q2:canonical', 'human:ann', 'partial'),
     ('A:q3:canonical', 'human:ann', 'unscored')]
    >>> _ = Path("typo.csv").write_text("case_id,label\\nA:q1:canonical,suports\\n")
    >>> read_human_labels("typo.csv")
    Traceback (most recent call last):
    ...
    tiap.errors.TiapError: typo.csv:2, record A:q1:canonical: unknown label 'suports'
    """
    who = None if name is None else (name if name.startswith("human:") else f"human:{name}")
    paper = read_paper_human(path, who)
    if paper is not None:
        if not paper:
            raise TiapError("the human-label file holds no label row", file=path)
        return paper
    p = Path(path)
    with open(p, newline="", encoding="utf-8-sig") as fh:
        reader = csv.DictReader(fh)
        cols = set(reader.fieldnames or ())
        label_col = next((c for c in _LABEL_COLUMNS if c in cols), None)
        if "case_id" not in cols or label_col is None:
            raise TiapError("a human-label CSV needs a case_id column and a label column "
                            f"({', '.join(_LABEL_COLUMNS)}), or the columns of the paper's "
                            "validation files", file=p)
        out: list[LabelRecord] = []
        problems: list[Problem] = []
        for row in reader:
            line = reader.line_num
            raw = (row.get(label_col) or "").strip()
            rater = who or f"human:{row.get('rater') or p.stem}"
            label = normalize_label(raw, aliases)
            reason = None
            if label is None:
                if raw:
                    problems.append(Problem(f"unknown label {raw!r}", file=str(p), line=line,
                                            record=row["case_id"]))
                    continue
                label, reason = UNSCORED, "no label given"
            out.append(LabelRecord(case_id=row["case_id"], judge=rater, label=label,
                                   reason=reason, target=row.get("target") or "",
                                   dataset=row.get("dataset") or "",
                                   unit=row.get("unit") or "", origin=(str(p), line),
                                   settings={"factory": "human", "name": rater,
                                             "source": p.name}))
    if problems:
        raise TiapError(problems=problems)
    if not out:  # every agreement with it would be computed over nothing
        raise TiapError("the human-label file holds no label row", file=p)
    return out
