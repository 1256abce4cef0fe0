"""Fixtures for the memory tests (helpers live in memory_fixtures.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from memory_fixtures import FakeServer, InlineDataset, serve_fake_llm, small_dataset


@pytest.fixture
def inline_dataset() -> InlineDataset:
    return small_dataset()


@pytest.fixture
def fake_llm() -> Iterator[FakeServer]:
    yield from serve_fake_llm()
