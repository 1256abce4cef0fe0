"""Errors that reach the user.

Every error TIAP raises for bad input is a :class:`TiapError`: it names the file, the line
(or record) and the query it concerns, so the CLI can print one clear line per problem
instead of a traceback. Every error and every counted warning carries a stable *code*
registered in :data:`CODES` (what it means, what the user does); ``docs/errors.md`` lists
them all, and a test keeps the two in step.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CODES", "Problem", "TiapError"]

#: Every error and warning code: code -> (what it means, what the user does). Errors are
#: printed ``error[code]: ...`` and exit with status 2; warnings are counted in the output's
#: manifest under their code. ``docs/errors.md`` renders this table (a test checks it).
CODES: dict[str, tuple[str, str]] = {
    # -- errors: the command line and configs ----------------------------------------------
    "usage": ("A command, option or argument of the command line is wrong or missing.",
              "Read the one-line message (it names the option) and `tiap <command> --help`."),
    "config": ("A key of a configuration file has the wrong type or value, or is unknown.",
               "Fix the key the message names (file, key, expected type) and rerun."),
    # -- errors: inputs --------------------------------------------------------------------
    "input": ("An input file or value is malformed: the message names the file, line, "
              "record or query.",
              "Fix the input at the place named, or pass the right file."),
    "encoding": ("An input file is not valid UTF-8.",
                 "Re-save the file as UTF-8; the message gives the byte offset."),
    "duplicate": ("Two records of an input claim the same identity (query, item, row key).",
                  "Remove or rename one of them; TIAP never keeps one silently."),
    "invalid-value": ("A value cannot be right: not finite, out of range, empty, or "
                      "naming something defined nowhere.",
                      "Pass a value in the range the message states."),
    "truncated": ("A file ends in the middle of a record or misses rows a header or "
                  "manifest announces.",
                  "Rerun the step that wrote it; TIAP writes files whole, so a truncated "
                  "file was cut by something else."),
    "checksum": ("A data file does not match the sha256 it is pinned to.",
                 "Download it again (`tiap datasets download`), or pass `--no-verify` for "
                 "data you changed on purpose."),
    "input-changed": ("An input of an earlier step changed after that step read it (its "
                      "sha256 no longer matches the step's manifest).",
                      "Rerun the earlier step on the current input, or restore the input."),
    "missing-extra": ("An optional dependency is not installed.",
                      "Install the extra the message names: pip install -e '.[extra]'."),
    # -- errors: outputs -------------------------------------------------------------------
    "stale-output": ("The output folder holds files of another run.",
                     "Pass an empty or new --out, or --force to replace the folder whole."),
    "disk-full": ("The disk filled up while writing; finished work already written is "
                  "kept.",
                  "Free space and rerun the same command: it resumes."),
    "io": ("A path cannot be read or written (missing, permissions).",
           "Check the path the message names."),
    "cache": (("A cache file (verdicts, LLM parser facts, embeddings) is not SQLite, is "
               "another cache's file, or has another schema version."),
              ("Move the file the message names away, or give another cache file; the "
               "work it held is then done again.")),
    # -- errors: services ------------------------------------------------------------------
    "endpoint": ("An LLM or embedding endpoint answered with something that is not a "
                 "valid reply (an HTML page, a wrong schema, an error status).",
                 "Check --base-url and the server; invalid replies are not cached, so a "
                 "rerun against the right endpoint starts clean."),
    "interrupted": ("The command was interrupted (Ctrl-C); exit status 130.",
                    "Rerun the same command: finished work is kept and is not repeated."),
    # -- warnings (counted in the manifest, never fatal) -----------------------------------
    "duplicate_dropped": ("A ranking repeated an item; only its first occurrence was kept "
                          "and later items moved up one rank.",
                          "Fix the run if the repeat is a bug of the system that wrote it."),
    "score_order": ("Scores rise along the given ranks; TIAP keeps the rank order, "
                    "trec_eval would re-sort by score.",
                    "Nothing, unless you meant the scores to define the order: then "
                    "pass --order score (trec_eval's order)."),
    "query_not_judged": ("A run ranks queries the queries file (or the qrels) does not "
                         "hold; they are left out of every score.",
                         "Check that the run and the queries are of the same dataset; "
                         "nothing, if the run ranks more queries on purpose."),
    "query_not_ranked": ("Queries of the queries file have no ranking in the run; with "
                         "--missing skip they are left out, with zero they score 0.",
                         "Rerun the retriever on those queries, or choose --missing."),
    "unknown_ranked_item": ("Ranked ids are not items of the store; they earn nothing "
                            "under every target.",
                            "Pass the store the run ranked (--items), or fix the run's ids."),
    "unreachable_evidence": ("Queries name evidence units that no item of the store "
                             "reaches; no target can credit them fully.",
                             "Nothing, if the store holds part of the dataset; else check "
                             "the store's lineage."),
    "score_ties": ("Rankings hold tied scores; TIAP keeps the given rank order, trec_eval "
                   "breaks ties by docno.",
                   "Nothing, unless you compare against trec_eval's own ordering: then "
                   "pass --order score."),
    "invalid_reply": ("An LLM endpoint's reply for a turn or case was not usable (not a chat "
                      "completion, not the expected JSON); the turn has no fact, the case is "
                      "unscored, and the reply was not cached.",
                      "Rerun the same command: those requests are asked again. Many of them "
                      "stop the run with error[endpoint]."),
    "answer_cut": ("An answer the model wrote was cut at max_tokens; it is kept as given "
                   "and counted.",
                   "Raise max_tokens if the cut answers matter, and run again (another "
                   "max_tokens asks again)."),
    "response_format": (("An LLM endpoint refused a structured output mode "
                         "(response_format); the requests were asked with the next mode "
                         "(json_schema, json_object, none)."),
                        ("Nothing; --response-format asks for a mode the server supports "
                         "from the start.")),
    "overlay_unknown_query": (("Rows of an evidence overlay name queries the queries file "
                               "does not hold; they change nothing."),
                              ("Check that the overlay is of this dataset; nothing, if the "
                               "queries file holds part of it on purpose.")),
    "unmapped_id": (("An item of an overlay's source has an id that names no question of "
                     "the dataset; it is left out of the overlay (problems.jsonl)."),
                    "Check the source file against the pinned one."),
    "question_mismatch": (("An item of an overlay's source asks another question than the "
                           "one its id names; it is left out of the overlay "
                           "(problems.jsonl)."),
                          "Check the source file and the dataset are the pinned ones."),
    "unresolvable_evidence": (("An overlay's evidence id names a turn the conversation "
                               "does not hold; the id is dropped (problems.jsonl)."),
                              "Nothing: the item's other evidence ids are used."),
    "malformed_evidence": (("An overlay's evidence is not a list, or an id of it is not "
                            "`D<session>:<turn>`; the item or the id is dropped "
                            "(problems.jsonl)."),
                           "Nothing; the message names a close id when one exists."),
    "unmatched_label": (("Labels name cases (human labels) or items (graded targets) the "
                         "audit does not hold; they are left out of every figure."),
                        ("Check the labels are of this audit (its cases.jsonl and "
                         "rescoring); nothing, if they label more on purpose.")),
    "unmapped_answer": (("An imported answer (or its verdict) names a question the dataset "
                         "does not hold, or whose text is another's or several's; it is "
                         "left out of the answer set and counted in its warnings."),
                        ("Check the file is of this dataset (its version and question "
                         "order); the examples name the ids.")),
    "remapped_by_text": (("An imported answer's id names another question than the one it "
                          "asks; it is kept under the one question with its exact text."),
                         "Nothing; check the examples if the source's ids should agree."),
    "no_answer": (("Answers with no text (the system gave none) were judged by no judge; "
                   "they have no verdict and are counted."),
                  "Nothing; count them as wrong yourself if your benchmark does."),
    "template_text": (("A judge prompt template holds {name} text that is no placeholder; "
                       "it was sent to the model as it is."),
                      ("Nothing if it is meant literally; else use {question}, {answer} or "
                       "{response}.")),
    "judge_provenance": (("Verdicts under a judge name the source uses for another "
                          "configuration (its notes say so); they get their own judge "
                          "configuration."),
                         "Nothing; compare them with the other configuration knowingly."),
}


@dataclass(frozen=True)
class Problem:
    """One located problem: what is wrong, where, and its code (a key of :data:`CODES`).

        >>> str(Problem("score is NaN", file="run.trec", line=3, query_id="q1"))
        'run.trec:3, query q1: score is NaN'
    """

    message: str
    file: str | None = None
    line: int | None = None
    query_id: str | None = None
    record: str | None = None
    code: str = "input"

    def __str__(self) -> str:
        where = []
        if self.file:
            where.append(self.file + (f":{self.line}" if self.line is not None else ""))
        if self.record:
            where.append(f"record {self.record}")
        if self.query_id:
            where.append(f"query {self.query_id}")
        return (", ".join(where) + ": " if where else "") + self.message


class TiapError(Exception):
    """An error caused by input or configuration, reported to the user without a traceback.

    A single error may carry several :class:`Problem` entries, so that all problems found in
    one pass are reported together. ``code`` (a key of :data:`CODES`) defaults to the
    class's :attr:`code`.

        >>> err = TiapError("no such store", file="items.jsonl", code="io")
        >>> err.code, str(err)
        ('io', 'items.jsonl: no such store')
        >>> len(TiapError(problems=[Problem("a"), Problem("b")]).problems)
        2
    """

    code = "input"

    def __init__(
        self,
        message: str | None = None,
        *,
        file: str | Path | None = None,
        line: int | None = None,
        query_id: str | None = None,
        record: str | None = None,
        problems: Iterable[Problem] = (),
        code: str | None = None,
    ) -> None:
        if code is not None:
            if code not in CODES:
                raise ValueError(f"unregistered error code {code!r}")
            self.code = code
        probs = list(problems)
        if message is not None:
            probs.insert(
                0,
                Problem(
                    message,
                    file=str(file) if file is not None else None,
                    line=line,
                    query_id=query_id,
                    record=record,
                    code=self.code,
                ),
            )
        if not probs:
            probs = [Problem("unknown error")]
        self.problems: tuple[Problem, ...] = tuple(probs)
        super().__init__("\n".join(str(p) for p in self.problems))


#: At most this many problems are listed in one error (the rest are counted).
MAX_PROBLEMS = 50


class Problems:
    """Located problems collected over a whole input, then raised together as one
    :class:`TiapError`: the first ``limit`` are listed, the rest counted.

    ``file`` is where problems are located unless :meth:`add` names another file.
    """

    def __init__(self, file: str | Path | None = None, limit: int = MAX_PROBLEMS) -> None:
        self.file = None if file is None else str(file)
        self.limit = limit
        self.items: list[Problem] = []
        self.total = 0

    def add(self, message: str, line: int | None = None, query_id: str | None = None,
            record: str | None = None, *, file: str | Path | None = None,
            code: str = "input") -> None:
        if code not in CODES:
            raise ValueError(f"unregistered error code {code!r}")
        self.total += 1
        if len(self.items) < self.limit:
            where = self.file if file is None else str(file)
            self.items.append(Problem(message, file=where, line=line, query_id=query_id,
                                      record=record, code=code))

    def extend(self, exc: TiapError) -> None:
        """Collect the problems of an error raised by a reader of one record."""
        for p in exc.problems:
            self.total += 1
            if len(self.items) < self.limit:
                self.items.append(p)

    def raise_if_any(self) -> None:
        if not self.total:
            return
        problems = list(self.items)
        if self.total > len(problems):
            problems.append(Problem(f"... and {self.total - len(problems)} more problems",
                                    file=self.file, code=problems[0].code))
        codes = {p.code for p in problems}
        raise TiapError(problems=problems, code=codes.pop() if len(codes) == 1 else None)


class ChecksumError(TiapError):
    """A data file does not match the checksum it is pinned to."""

    code = "checksum"


class MissingExtraError(TiapError):
    """An optional dependency is not installed."""

    code = "missing-extra"

    def __init__(self, module: str, extra: str) -> None:
        super().__init__(
            f"this feature needs the Python package {module!r}; install it with "
            f"{install_hint(extra)}"
        )


def install_hint(extra: str) -> str:
    """How to install one of TIAP's extras (TIAP is installed from its checkout)."""
    return f"pip install -e '.[{extra}]' (in TIAP's folder; .venv/bin/pip after make)"


def require(module: str, extra: str):  # type: ignore[no-untyped-def]
    """Import an optional module or raise :class:`MissingExtraError` naming the extra."""

    try:
        return importlib.import_module(module)
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise MissingExtraError(module, extra) from exc
