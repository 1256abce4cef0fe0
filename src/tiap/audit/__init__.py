"""Stage III audit: contested credits judged for semantic support, and judge agreement.

Lineage gives a derived memory credit for a query whenever it derives from an evidence
turn; the audit asks whether that memory actually supports the answer (the paper's
section 3.3). The steps, each a function here and a ``tiap audit`` subcommand:

1. :func:`contested_cases` (``tiap audit cases``): from a rescoring, the retrieved items a
   relaxed target (Source, Canonical) credits and Raw does not, one case per (query,
   system, target), with :func:`sample_cases` for stratified samples;
2. judges (``tiap audit judge``): registered factories (:func:`make_judge`: ``openai`` for
   any OpenAI-compatible endpoint, offline ``lexical`` and ``embedding``) run by
   :func:`run_judges` with a crash-safe verdict cache keyed by the request each judge makes
   (:func:`request_key`), writing ``labels.jsonl``;
3. :func:`agreement` (``tiap audit agreement``): Fleiss' κ, Cohen's κ, Krippendorff's α,
   percent agreement (three classes and binary), majority vote, label distributions and
   agreement with human labels (:func:`read_human_labels`);
4. :func:`graded_rescore` (``tiap audit graded``): labels as graded relevance, and how much
   of a relaxed target's nDCG gain survives them, with graded qrels per store.

Each command's whole step (read the inputs, check them, compute, write the output and its
manifest) is one function of :mod:`tiap.audit.steps`: :func:`find_cases`,
:func:`judge_cases` (local model server, engine, verdict cache, output folder swap),
:func:`graded_audit`, :func:`judge_agreement` and :func:`import_paper`; the commands and
``tiap audit-run`` call them.

Item ids are unique only within a store: cases and labels name their store, and labels
grade ``(store, query_id, item_id)`` (:class:`tiap.ids.ItemKey`).

:func:`read_paper_cases` and :func:`read_paper_labels` read the paper's own audit files
(``tiap audit import-paper``). Nothing heavy is imported here: ``httpx`` loads with the
``openai`` judge, ``sentence-transformers`` with the ``embedding`` judge, ``statsmodels``
with the agreement report.
"""

from tiap.audit.agreement import (
    TIE_RULES,
    AgreementReport,
    RatingTable,
    agreement,
    binary_codes,
    category_counts,
    cohen_kappa,
    cohen_kappa_interval,
    fleiss_kappa,
    krippendorff_alpha,
    majority_vote,
    percent_agreement,
    rating_table,
    write_agreement,
)
from tiap.audit.cases import (
    RANK_BUCKETS,
    Case,
    ContestedItem,
    RescoreDir,
    contested_cases,
    rank_bucket,
    read_cases,
    sample_cases,
    write_cases,
)
from tiap.audit.graded import (
    UNJUDGED,
    GradedResult,
    RelevanceKey,
    graded_rescore,
    item_relevance,
    qrels_name,
    write_graded,
)
from tiap.audit.human import read_human_labels
from tiap.audit.judges import (
    EmbeddingJudge,
    Judge,
    LexicalJudge,
    Request,
    list_judges,
    make_judge,
    parse_judge_spec,
    register_judge,
    request_key,
)
from tiap.audit.labels import (
    BINARY_LABELS,
    DOES_NOT_SUPPORT,
    GRADES,
    PARTIAL,
    SEMANTIC_LABELS,
    SERVING_LABELS,
    SUPPORTS,
    UNSCORED,
    LabelRecord,
    Verdict,
    normalize_label,
    normalize_serving,
    read_labels,
    write_labels,
)
from tiap.audit.paper import PAPER_LABEL_COUNTS, label_counts, read_paper_cases, read_paper_labels
from tiap.audit.rubric import PARSE_PATTERN, RUBRIC_VERSION, parse_verdict, render_messages
from tiap.audit.run import JudgeRun, VerdictCache, run_judges
from tiap.audit.steps import (
    AgreementResult,
    CasesResult,
    GradedAudit,
    JudgeResult,
    PaperImport,
    find_cases,
    graded_audit,
    import_paper,
    judge_agreement,
    judge_cases,
)

__all__ = [  # noqa: RUF022 - names the CLI needs are appended (parallel edits merge)
    "BINARY_LABELS",
    "DOES_NOT_SUPPORT",
    "GRADES",
    "PAPER_LABEL_COUNTS",
    "PARSE_PATTERN",
    "PARTIAL",
    "RANK_BUCKETS",
    "RUBRIC_VERSION",
    "SEMANTIC_LABELS",
    "SERVING_LABELS",
    "SUPPORTS",
    "TIE_RULES",
    "UNSCORED",
    "AgreementReport",
    "AgreementResult",
    "Case",
    "CasesResult",
    "ContestedItem",
    "EmbeddingJudge",
    "GradedAudit",
    "GradedResult",
    "Judge",
    "JudgeResult",
    "JudgeRun",
    "LabelRecord",
    "LexicalJudge",
    "PaperImport",
    "RatingTable",
    "RelevanceKey",
    "Request",
    "RescoreDir",
    "Verdict",
    "VerdictCache",
    "agreement",
    "binary_codes",
    "category_counts",
    "cohen_kappa",
    "cohen_kappa_interval",
    "contested_cases",
    "find_cases",
    "fleiss_kappa",
    "graded_audit",
    "graded_rescore",
    "import_paper",
    "item_relevance",
    "judge_agreement",
    "judge_cases",
    "krippendorff_alpha",
    "list_judges",
    "majority_vote",
    "make_judge",
    "normalize_label",
    "normalize_serving",
    "parse_judge_spec",
    "parse_verdict",
    "percent_agreement",
    "qrels_name",
    "rank_bucket",
    "rating_table",
    "read_cases",
    "read_human_labels",
    "read_labels",
    "read_paper_cases",
    "read_paper_labels",
    "register_judge",
    "render_messages",
    "request_key",
    "run_judges",
    "sample_cases",
    "write_agreement",
    "write_cases",
    "write_graded",
    "write_labels",
    "UNJUDGED",
    "label_counts",
]
