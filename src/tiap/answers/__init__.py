"""Answers and judges: fixed answers, their verdicts, and what moves the score.

An answer set (:mod:`tiap.answers.records`) holds one answer per (dataset, system, query),
the context each was given as (store, item) ids, and verdicts under named judge
configurations. Importers read the formats systems publish; judges (offline and LLM) add
verdicts; the analysis says how much of an accuracy, and of a ranking of systems, is the
judge (docs/answers.md). The stage's steps write folders (:mod:`tiap.answers.files`).

>>> from tiap.answers import Answer, AnswerSet
>>> AnswerSet((Answer("locomo", "A", "conv-26:q0", "7 May 2023"),)).systems
('A',)
"""

from typing import TYPE_CHECKING

from tiap.answers.records import (
    AMBIGUOUS,
    CORRECT,
    LABELS,
    WRONG,
    Answer,
    AnswerSet,
    AnswerVerdict,
    Context,
    JudgeConfig,
    prompt_sha256,
    read_answers,
    write_answers,
)
from tiap.lazy import lazy_exports

__all__ = [
    "AMBIGUOUS",
    "ANSWERS_FILE",
    "CORRECT",
    "FORMATS",
    "KIT_SYSTEMS",
    "LABELS",
    "WRONG",
    "Answer",
    "AnswerSet",
    "AnswerVerdict",
    "Context",
    "JudgeConfig",
    "AnswerAnalysis",
    "AnswerCache",
    "analyze_answers",
    "analyze_files",
    "answer_counts",
    "answer_evidence",
    "evidence_files",
    "generate_answers",
    "generate_files",
    "stratified_sample",
    "import_answers",
    "judge_answers",
    "judge_files",
    "make_answer_judge",
    "import_kit",
    "import_longmemeval",
    "import_memory_benchmarks",
    "import_memos",
    "judge_name",
    "load_answers",
    "prompt_sha256",
    "read_answers",
    "save_answers",
    "write_answer_analysis",
    "write_answers",
]

#: name -> home module: imported on first use, so ``import tiap.answers`` stays light
_HOMES = {
    "ANSWERS_FILE": "tiap.answers.files",
    "FORMATS": "tiap.answers.files",
    "answer_counts": "tiap.answers.files",
    "import_answers": "tiap.answers.files",
    "load_answers": "tiap.answers.files",
    "save_answers": "tiap.answers.files",
    "KIT_SYSTEMS": "tiap.answers.kit",
    "import_kit": "tiap.answers.kit",
    "judge_name": "tiap.answers.kit",
    "import_longmemeval": "tiap.answers.importers",
    "import_memory_benchmarks": "tiap.answers.importers",
    "import_memos": "tiap.answers.importers",
    "AnswerAnalysis": "tiap.answers.analysis",
    "analyze_answers": "tiap.answers.analysis",
    "analyze_files": "tiap.answers.analysis",
    "write_answer_analysis": "tiap.answers.analysis",
    "answer_evidence": "tiap.answers.evidence",
    "evidence_files": "tiap.answers.evidence",
    "generate_answers": "tiap.answers.generate",
    "AnswerCache": "tiap.answers.generate",
    "generate_files": "tiap.answers.generate",
    "stratified_sample": "tiap.answers.generate",
    "judge_answers": "tiap.answers.judges",
    "judge_files": "tiap.answers.judges",
    "make_answer_judge": "tiap.answers.judges",
}

if TYPE_CHECKING:  # pragma: no cover
    from tiap.answers.analysis import (
        AnswerAnalysis,
        analyze_answers,
        analyze_files,
        write_answer_analysis,
    )
    from tiap.answers.evidence import answer_evidence, evidence_files
    from tiap.answers.files import (
        ANSWERS_FILE,
        FORMATS,
        answer_counts,
        import_answers,
        load_answers,
        save_answers,
    )
    from tiap.answers.generate import (
        AnswerCache,
        generate_answers,
        generate_files,
        stratified_sample,
    )
    from tiap.answers.importers import import_longmemeval, import_memory_benchmarks, import_memos
    from tiap.answers.judges import judge_answers, judge_files, make_answer_judge
    from tiap.answers.kit import KIT_SYSTEMS, import_kit, judge_name

__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
