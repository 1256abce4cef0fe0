"""Answers and judges: fixed answers, their verdicts, and what moves the score.

An answer set (:mod:`tiap.answers.records`) holds one answer per (dataset, system, query),
the context each was given as (store, item) ids, and verdicts under named judge
configurations. Importers read the formats systems publish; judges (offline and LLM) add
verdicts; the analysis says how much of an accuracy, and of a ranking of systems, is the
judge (docs/answers.md).

>>> from tiap.answers import Answer, AnswerSet
>>> AnswerSet((Answer("locomo", "A", "conv-26:q0", "7 May 2023"),)).systems
('A',)
"""

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
