"""TIAP: target-invariance audits for conversational-memory benchmarks.

The front door: the main tasks as a few functions and one score model, in memory, with
files as one serialization (``docs/api.md``)::

    import tiap

    scores = tiap.rescore(runs, queries, stores)   # Stage II: a tiap.Scores
    result = tiap.analyze(scores)                   # Stage III: flips, tests, design changes
    table = tiap.compare(scores)                    # per pair of systems: means, tests, flips

=================  ============================================================
``load``           a benchmark with its evidence labels (:func:`tiap.datasets.load`)
``build_store``    a memory store with lineage (:func:`tiap.memory.build_store`)
``read_store``     a store's ``items.jsonl`` (:func:`tiap.memory.store.read_store`)
``read_queries``   a queries file (:func:`tiap.datasets.queryfile.read_queries`)
``read_runs``      a run file, any format (:func:`tiap.runs.read_run`)
``rescore``        runs scored under each target (:func:`tiap.scoring.rescore.rescore`)
``Scores``         the per-query score model (:class:`tiap.scoring.scores.Scores`)
``analyze``        every sensitivity table (:func:`tiap.sensitivity.analyze`)
``compare``        each pair of systems under each target: means, difference, adjusted
                   p-value, effect size, winner flips, with table and LaTeX renderings
                   (:func:`tiap.sensitivity.compare.compare`)
``judge``          contested credits judged in memory: cases in, labels and their
                   counts out (:func:`tiap.audit.steps.judge`)
``build_report``   the HTML report and target card (:func:`tiap.report.build_report`;
                   not ``report``, the name of the package :mod:`tiap.report`)
=================  ============================================================

Each name is imported on first use (PEP 562), so ``import tiap`` loads none of the stages.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tiap.errors import TiapError  # a tiny module, no heavy imports
from tiap.lazy import lazy_exports

__all__ = [
    "PUBLIC_MODULES",
    "Scores",
    "TiapError",
    "__version__",
    "analyze",
    "build_report",
    "build_store",
    "compare",
    "judge",
    "load",
    "read_queries",
    "read_runs",
    "read_store",
    "rescore",
]

__version__ = "0.1.0"

#: The public API: the names in the ``__all__`` of these modules, the front door first. Every
#: function and class among them has a docstring with an example that runs as written
#: (``tests/docs/test_docstrings.py``), and the CLI imports nothing else of TIAP
#: (``tests/test_structure.py``). Any other module is internal and may change.
PUBLIC_MODULES = (
    "tiap",
    "tiap.datasets", "tiap.memory", "tiap.retrieval", "tiap.runs", "tiap.importers",
    "tiap.targets", "tiap.scoring", "tiap.sensitivity", "tiap.audit", "tiap.answers",
    "tiap.report",
    "tiap.llm", "tiap.cache", "tiap.config", "tiap.engine", "tiap.errors", "tiap.io",
    "tiap.pipeline", "tiap.limits", "tiap.provenance",
    "tiap.plugins", "tiap.plugins.ir_measures", "tiap.plugins.ir_datasets",
    "tiap.plugins.pyterrier",
)

#: front-door name -> (module, attribute): the one home of each
_HOMES = {
    "load": ("tiap.datasets", "load"),
    "build_store": ("tiap.memory", "build_store"),
    "read_store": ("tiap.memory.store", "read_store"),
    "read_queries": ("tiap.datasets.queryfile", "read_queries"),
    "read_runs": ("tiap.runs", "read_run"),
    "rescore": ("tiap.scoring.rescore", "rescore"),
    "Scores": ("tiap.scoring.scores", "Scores"),
    "analyze": ("tiap.sensitivity.analyze", "analyze"),
    "compare": ("tiap.sensitivity.compare", "compare"),
    "judge": ("tiap.audit.steps", "judge"),
    "build_report": ("tiap.report", "build_report"),
}

if TYPE_CHECKING:  # pragma: no cover
    from tiap.audit.steps import judge
    from tiap.datasets import load
    from tiap.datasets.queryfile import read_queries
    from tiap.memory import build_store
    from tiap.memory.store import read_store
    from tiap.report import build_report
    from tiap.runs import read_run as read_runs
    from tiap.scoring.rescore import rescore
    from tiap.scoring.scores import Scores
    from tiap.sensitivity.analyze import analyze
    from tiap.sensitivity.compare import compare


__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
