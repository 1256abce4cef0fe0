"""Answer sets on disk as a step's output folder: ``answers.jsonl`` and ``manifest.json``.

Every step of the answers stage that writes answers (``tiap answers import``, ``judge``,
``generate``) writes a folder: the answers (:mod:`tiap.answers.records`) and a manifest
with the step's inputs and options, the counts (answers per system, verdicts per judge
configuration) and the warnings the step counted (ids it could not map, replies that gave
no label), so a warning is never lost between steps: :func:`load_answers` reads them back
into :attr:`AnswerSet.warnings <tiap.answers.records.AnswerSet.warnings>`, and the next
step carries them on.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tiap.answers.records import AnswerSet, read_answers, write_answers
from tiap.errors import TiapError
from tiap.io import output_folder
from tiap.provenance import Manifest, input_entry, read_manifest

__all__ = ["ANSWERS_FILE", "answer_counts", "load_answers", "save_answers"]

ANSWERS_FILE = "answers.jsonl"
#: the steps whose folders hold an answer set
ANSWER_STEPS = ("answers import", "answers judge", "answers generate")


def answer_counts(answers: AnswerSet) -> dict[str, Any]:
    """Answers per system, answers with no text, and verdicts per judge configuration by
    label (``null``: no usable verdict).

    >>> from tiap.answers import Answer
    >>> answer_counts(AnswerSet((Answer("locomo", "A", "q1", None),)))
    {'answers': 1, 'systems': {'A': 1}, 'no_answer': 1, 'judges': {}}
    """
    judges: dict[str, Counter[str]] = {}
    for a in answers:
        for v in a.verdicts:
            judges.setdefault(v.judge, Counter())[v.label or "null"] += 1
    return {"answers": len(answers),
            "systems": dict(Counter(a.system for a in answers)),
            "no_answer": sum(a.answer is None for a in answers),
            "judges": {j: dict(sorted(c.items())) for j, c in judges.items()}}


def save_answers(answers: AnswerSet, out: str | Path, *, step: str,
                 inputs: Mapping[str, Any] | None = None,
                 options: Mapping[str, Any] | None = None, force: bool = False) -> Manifest:
    """Write ``answers`` as the output folder ``out`` of ``step`` (replaced whole; a folder
    of another step is refused unless ``force``). ``inputs``: name -> path of each file read
    (recorded with its sha256). Returns the manifest.

    >>> from tiap.answers import Answer
    >>> s = AnswerSet((Answer("locomo", "A", "q1", "Paris"),),
    ...               warnings={"unmapped_answer": {"message": "ids no query has", "count": 2}})
    >>> man = save_answers(s, "imported", step="answers import")
    >>> sorted(p.name for p in Path("imported").iterdir())
    ['answers.jsonl', 'manifest.json']
    >>> load_answers("imported").warnings["unmapped_answer"]["count"]
    2
    """
    if step not in ANSWER_STEPS:
        raise ValueError(f"not a step that writes answers: {step!r}")
    entries = {name: input_entry(p) for name, p in (inputs or {}).items()
               if Path(p).is_file()}
    with output_folder(out, step, force=force) as tmp:
        write_answers(answers, tmp / ANSWERS_FILE)
        man = Manifest.new(step, inputs=entries, options=dict(options or {}),
                           warnings=dict(answers.warnings) or None,
                           outputs=[ANSWERS_FILE],
                           extra={"counts": answer_counts(answers),
                                  "judges": {k: c.to_json() for k, c in
                                             answers.configs.items()}})
        man.write(tmp / "manifest.json")
    return man


def load_answers(path: str | Path) -> AnswerSet:
    """An answer set from an ``answers.jsonl`` file or a folder :func:`save_answers` wrote
    (its manifest's warnings come back with it).

    >>> _ = Path("a.jsonl").write_text('{"dataset": "locomo", "system": "A", '
    ...                                '"query_id": "q1", "answer": "Paris"}\\n')
    >>> load_answers("a.jsonl").systems
    ('A',)
    >>> load_answers("nowhere")
    Traceback (most recent call last):
    ...
    tiap.errors.TiapError: nowhere: no such file or folder (an answers.jsonl, or a folder of
    tiap answers import, judge or generate)
    """
    p = Path(path)
    if p.is_dir():
        f = p / ANSWERS_FILE
        if not f.is_file():
            raise TiapError(f"no {ANSWERS_FILE} in the folder (a folder of tiap answers "
                            "import, judge or generate holds one)", file=p, code="io")
        warnings: dict[str, Any] = {}
        if (p / "manifest.json").is_file():
            warnings = dict(read_manifest(p).get("warnings") or {})
        got = read_answers(f)
        return dataclasses.replace(got, warnings={**warnings, **got.warnings})
    if not p.is_file():
        raise TiapError("no such file or folder (an answers.jsonl, or a folder of tiap answers "
                        "import, judge or generate)", file=p, code="io")
    return read_answers(p)


#: ``tiap answers import FORMAT``: format -> (module, function) of its importer
FORMATS: dict[str, tuple[str, str]] = {
    "kit": ("tiap.answers.kit", "import_kit"),
    "memory-benchmarks": ("tiap.answers.importers", "import_memory_benchmarks"),
    "memos": ("tiap.answers.importers", "import_memos"),
    "longmemeval": ("tiap.answers.importers", "import_longmemeval"),
}


def import_answers(fmt: str, path: str | Path, out: str | Path, *, force: bool = False,
                   **options: Any) -> tuple[AnswerSet, Manifest]:
    """``tiap answers import FORMAT PATH --out OUT``: read ``path`` with the importer of
    ``fmt`` (:data:`FORMATS`; ``options`` are its keyword arguments) and save the answers as
    the folder ``out`` (:func:`save_answers`). Returns the set and the manifest.

    >>> import json
    >>> _ = Path("hyp.jsonl").write_text(json.dumps(
    ...     {"question_id": "q1", "hypothesis": "Paris"}) + "\\n")
    >>> s, man = import_answers("longmemeval", "hyp.jsonl", "imported", system="A")
    >>> s.systems, man["counts"]["answers"]
    (('A',), 1)
    >>> import_answers("mem0", "hyp.jsonl", "imported")
    Traceback (most recent call last):
    ...
    tiap.errors.TiapError: unknown answer format 'mem0'; known: kit, memory-benchmarks, memos,
    longmemeval
    """
    if fmt not in FORMATS:
        raise TiapError(f"unknown answer format {fmt!r}; known: {', '.join(FORMATS)}",
                        code="usage")
    module, name = FORMATS[fmt]
    reader = getattr(importlib.import_module(module), name)
    answers = reader(path, **options)
    files = {"path": path} if Path(path).is_file() else {}
    for key in ("judged",):
        if options.get(key) is not None:
            files[key] = options[key]
    shown = {k: (str(v) if isinstance(v, Path) else v) for k, v in options.items()
             if isinstance(v, (str, int, float, bool, Path, type(None)))}
    man = save_answers(answers, out, step="answers import", inputs=files,
                       options={"format": fmt, "path": str(path), **shown}, force=force)
    return answers, man
