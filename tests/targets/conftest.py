"""Fixtures of the targets tests that need real data."""

from __future__ import annotations

from pathlib import Path

import pytest
from locomo_conv26 import build_all


@pytest.fixture(scope="session")
def conv26(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Path:
    """LoCoMo conv-26 as :mod:`locomo_conv26` lays it out (stores f1 and f5, queries, BM25
    runs, targets/ of both stores), built once per test process. Read it; copy it to
    change it."""
    return build_all(tmp_path_factory.mktemp("conv26"), data_dir)
