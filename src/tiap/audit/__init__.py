"""Stage III audit: contested credits judged for semantic support, and judge agreement.

Lineage gives a derived memory credit for a query whenever it derives from an evidence
turn; the audit asks whether that memory actually supports the answer (the paper's
section 3.3). The steps, each a function here and a ``tiap audit`` subcommand:

1. :func:`contested_cases` (``tiap audit cases``): from a rescoring, the retrieved items a
   relaxed target (Source, Canonical) credits and Raw does not, one case per (query,
   system, target), with :func:`sample_cases` for stratified samples;
2. judges (``tiap audit judge``): registered factories (:func:`make_judge`: ``openai`` for
   any OpenAI-compatible endpoint, offline ``lexical`` and ``embedding``) run by
   :func:`run_judges` with a crash-safe verdict cache (:class:`VerdictCache`) keyed by the
   request each judge makes (:func:`tiap.audit.judges.request_key`), writing
   ``labels.jsonl``;
3. :func:`agreement` (``tiap audit agreement``): Fleiss' κ, Cohen's κ, Krippendorff's α,
   percent agreement (three classes and binary), majority vote, label distributions and
   agreement with human labels (:func:`read_human_labels`);
4. :func:`graded_rescore` (``tiap audit graded``): labels as graded relevance, and how much
   of a relaxed target's nDCG gain survives them, with graded qrels per store.

Each command's whole step (read the inputs, check them, compute, write the output and its
manifest) is one function of :mod:`tiap.audit.steps`: :func:`find_cases`,
:func:`judge_cases` (local model server, engine, verdict cache, output folder swap),
:func:`graded_audit`, :func:`judge_agreement` and :func:`import_paper`; the commands and
``tiap audit-run`` call them. :func:`judge` (``tiap.judge``) is the judging of
:func:`judge_cases` in memory: cases in, a :class:`LabelSet` out, no file written.

Item ids are unique only within a store: cases and labels name their store, and labels
grade ``(store, query_id, item_id)`` (:class:`tiap.ids.ItemKey`).

:func:`import_paper` (``tiap audit import-paper``) reads the paper's own audit files
(:mod:`tiap.audit.paper`). Nothing heavy is imported here: ``httpx`` loads with the
``openai`` judge, ``sentence-transformers`` with the ``embedding`` judge, ``statsmodels``
with the agreement report.

The public API is the ``__all__`` below: the five steps, the in-memory functions they
combine, the records they read and write (:class:`Case`, :class:`LabelRecord`,
:class:`Verdict`), :class:`Judge` and its registry for judges of your own, and the
agreement kernels. Each has a runnable example in its docstring. The other names of the
submodules are internal.
"""

from tiap.audit.agreement import (
    agreement,
    cohen_kappa,
    fleiss_kappa,
    krippendorff_alpha,
    percent_agreement,
)
from tiap.audit.cases import (
    Case,
    RescoreInputs,
    contested_cases,
    read_cases,
    sample_cases,
    write_cases,
)
from tiap.audit.graded import UNJUDGED, graded_rescore, item_relevance
from tiap.audit.human import read_human_labels
from tiap.audit.judges import Judge, list_judges, make_judge, register_judge
from tiap.audit.labels import (
    DOES_NOT_SUPPORT,
    GRADES,
    PARTIAL,
    SEMANTIC_LABELS,
    SERVING_LABELS,
    SUPPORTS,
    UNSCORED,
    LabelRecord,
    Verdict,
    read_labels,
    write_labels,
)
from tiap.audit.paper import label_counts
from tiap.audit.run import VerdictCache, run_judges
from tiap.audit.steps import (
    LabelSet,
    find_cases,
    graded_audit,
    import_paper,
    judge,
    judge_agreement,
    judge_cases,
)

__all__ = [
    "DOES_NOT_SUPPORT",
    "GRADES",
    "PARTIAL",
    "SEMANTIC_LABELS",
    "SERVING_LABELS",
    "SUPPORTS",
    "UNJUDGED",
    "UNSCORED",
    "Case",
    "Judge",
    "LabelRecord",
    "LabelSet",
    "RescoreInputs",
    "Verdict",
    "VerdictCache",
    "agreement",
    "cohen_kappa",
    "contested_cases",
    "find_cases",
    "fleiss_kappa",
    "graded_audit",
    "graded_rescore",
    "import_paper",
    "item_relevance",
    "judge",
    "judge_agreement",
    "judge_cases",
    "krippendorff_alpha",
    "label_counts",
    "list_judges",
    "make_judge",
    "percent_agreement",
    "read_cases",
    "read_human_labels",
    "read_labels",
    "register_judge",
    "run_judges",
    "sample_cases",
    "write_cases",
    "write_labels",
]
