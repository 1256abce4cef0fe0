"""TIAP: target-invariance audits for conversational-memory benchmarks.

The package is split into one subpackage per stage (``tiap.datasets``, ``tiap.memory``,
``tiap.targets``, ``tiap.scoring``, ...). Importing :mod:`tiap` loads none of them, so
``import tiap`` stays light; import the stage you need.
"""

from __future__ import annotations

__all__ = ["__version__", "TiapError"]

__version__ = "0.1.0"

from tiap.errors import TiapError  # noqa: E402  (tiny module, no heavy imports)
