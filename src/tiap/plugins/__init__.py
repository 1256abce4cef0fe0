"""Plug-ins for the field's tools: TIAP's targets in ir_datasets, ir_measures and PyTerrier.

One module per tool, each importing its tool only when used (the tools are optional: the
``plugins`` extra installs them): importing this package imports none of them.

- :mod:`tiap.plugins.ir_measures`: TIAP's group credit, the paper's scorer, as ir_measures
  measures (``GroupNDCG@60``, ``GroupR@k``, ``GroupRR``, ``GroupP@k``, ``GroupSuccess@k``,
  ``GroupRall@k``), read from the group qrels that ``tiap targets`` writes
  (``subtopic_qrels/<store>.<target>.qrels``, ``qid group docid 1``);
- :mod:`tiap.plugins.ir_datasets`: a targets folder registered as ir_datasets datasets
  ``tiap/<name>/<store>/<target>`` (docs, queries, qrels);
- :mod:`tiap.plugins.pyterrier`: a PyTerrier dataset provider, found through PyTerrier's
  ``pyterrier.dataset_provider`` entry point: ``pt.get_dataset("tiap:<name>/<store>/<target>")``.

:class:`TargetsFolder` is what the three read, :class:`GroupQrel` one line of its group
qrels (docs/plugins.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tiap.lazy import lazy_exports

__all__ = ["GroupQrel", "TargetsFolder"]

__getattr__, __dir__ = lazy_exports(__name__, {"GroupQrel": "tiap.plugins.folder",
                                               "TargetsFolder": "tiap.plugins.folder"})

if TYPE_CHECKING:  # pragma: no cover
    from tiap.plugins.folder import GroupQrel, TargetsFolder
