"""Shared fixtures: where the real benchmark data is (skip cleanly when it is absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tiap.datasets.files import default_data_dir


@pytest.fixture(scope="session")
def data_dir() -> Path:
    d = default_data_dir()
    if d is None or not (d / "locomo" / "locomo10.json").exists():
        pytest.skip("real benchmark data not found: set TIAP_DATA or place it at ../shared/data")
    return d
