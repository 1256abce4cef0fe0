"""The local model server (tiap.llm.local): pinned model files, a real llama.cpp server on
127.0.0.1 that starts, answers and stops, and ``tiap llm``."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import httpx
import pytest

from tiap.cli.main import main
from tiap.errors import TiapError
from tiap.llm import local as local_llm
from tiap.llm.local import MODELS, LocalModel, LocalServer, model_file, read_gguf_meta


def _socket_peers(pid: int) -> list[tuple[str, str, str]]:
    """(local, remote, state) of every TCP socket the process ``pid`` holds, from /proc."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])

    def addr(hexaddr: str) -> str:
        ip, port = hexaddr.split(":")
        if len(ip) == 8:  # IPv4, little-endian
            parts = [str(int(ip[i:i + 2], 16)) for i in (6, 4, 2, 0)]
            return f"{'.'.join(parts)}:{int(port, 16)}"
        return f"[{ip}]:{int(port, 16)}"

    out = []
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            f = line.split()
            if f[9] in inodes:
                out.append((addr(f[1]), addr(f[2]), f[3]))
    return out


def test_server_starts_answers_with_a_schema_and_stops(local_llm) -> None:
    srv = local_llm
    assert srv.base_url.startswith("http://127.0.0.1:") and srv.model == "smollm2-135m"
    schema = {"type": "object", "properties": {"answer": {"type": "string",
                                                          "enum": ["yes", "no"]}},
              "required": ["answer"], "additionalProperties": False}
    body = {"model": srv.model, "temperature": 0, "max_tokens": 30,
            "messages": [{"role": "user", "content": "Is Paris in France? Answer in JSON."}],
            "response_format": {"type": "json_schema",
                                "json_schema": {"name": "a", "schema": schema, "strict": True}}}
    resp = httpx.post(f"{srv.base_url}/chat/completions", json=body, timeout=120)
    assert resp.status_code == 200
    data = resp.json()
    assert data["model"] == "smollm2-135m"
    # the schema is enforced by the server's grammar: the reply parses and holds an enum value
    reply = json.loads(data["choices"][0]["message"]["content"])
    assert reply["answer"] in ("yes", "no")
    # the server listens on 127.0.0.1 only and talks to nobody else
    peers = _socket_peers(srv.proc.pid)
    assert peers, "the server holds no TCP socket"
    for local, remote, _state in peers:
        assert local.startswith("127.0.0.1:"), peers
        assert remote.startswith(("127.0.0.1:", "0.0.0.0:")), peers


def test_a_second_server_starts_and_stops_cleanly() -> None:
    t0 = time.monotonic()
    with LocalServer("smollm2-135m", ctx=512) as srv:
        pid = srv.proc.pid
        assert httpx.get(f"{srv.url}/health", timeout=10).json() == {"status": "ok"}
        assert srv.settings()["sha256"] == MODELS["smollm2-135m"].sha256
    assert srv.proc is None and srv.url is None
    # the child is gone (reaped), not left serving
    assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()
    assert time.monotonic() - t0 < 120
    with pytest.raises(TiapError, match="not running"):
        _ = srv.base_url


def test_gguf_metadata_of_the_real_file() -> None:
    meta = read_gguf_meta(model_file("smollm2-135m"))
    # read by hand from the file's header (gguf version 3, 272 tensors)
    assert meta["gguf.version"] == 3 and meta["gguf.tensors"] == 272
    assert meta["general.architecture"] == "llama"
    assert meta["general.license"] == "apache-2.0"
    assert meta["general.size_label"] == "135M"
    assert meta["llama.context_length"] == 8192


def _fake_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pieces: list[bytes],
                *, sha: str | None = None) -> LocalModel:
    """A model shipped in pieces by a package on sys.path, with its pin."""
    pkg = tmp_path / "site" / "fake_model_pkg"
    (pkg / "data").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    for i, b in enumerate(pieces):
        (pkg / "data" / f"p{i}.bin").write_bytes(b)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    whole = b"".join(pieces)
    m = LocalModel(name="fake", title="a fake", parts=tuple(
        ("fake_model_pkg", f"data/p{i}.bin") for i in range(len(pieces))),
        size=len(whole), sha256=sha or hashlib.sha256(whole).hexdigest(), licence="none",
        install="pip install fake-model", trained_context=1024)
    monkeypatch.setitem(MODELS, "fake", m)
    monkeypatch.setenv("TIAP_CACHE", str(tmp_path / "cache"))
    return m


def test_pieces_are_assembled_checked_and_hashed_once(tmp_path, monkeypatch) -> None:
    _fake_model(tmp_path, monkeypatch, [b"GGUF" + b"a" * 100, b"b" * 50, b"c"])
    path = model_file("fake")
    assert path == tmp_path / "cache" / "models" / "fake.gguf"
    assert path.read_bytes() == b"GGUF" + b"a" * 100 + b"b" * 50 + b"c"
    assert list(path.parent.glob("*.part")) == []  # no temporary file left
    # verified once: a second call does not hash again
    monkeypatch.setattr(local_llm, "_sha256", lambda p: pytest.fail("hashed again"))
    assert model_file("fake") == path


def test_a_piece_that_differs_is_refused_and_nothing_is_left(tmp_path, monkeypatch) -> None:
    _fake_model(tmp_path, monkeypatch, [b"x" * 10, b"y" * 10], sha="0" * 64)
    with pytest.raises(TiapError) as err:
        model_file("fake")
    assert err.value.code == "checksum" and "not the pinned one" in str(err.value)
    assert "0" * 64 in str(err.value)
    models = tmp_path / "cache" / "models"
    assert not (models / "fake.gguf").exists() and list(models.glob("*.part")) == []


def test_a_missing_package_names_the_install_command(tmp_path, monkeypatch) -> None:
    m = _fake_model(tmp_path, monkeypatch, [b"z"])
    monkeypatch.setitem(MODELS, "fake", LocalModel(**{**m.__dict__, "parts": (
        ("fake_model_pkg", "data/p0.bin"), ("no_such_pkg_xyz", "data/p1.bin"))}))
    with pytest.raises(TiapError) as err:
        model_file("fake")
    assert err.value.code == "missing-extra"
    assert "no-such-pkg-xyz" in str(err.value) and "pip install fake-model" in str(err.value)


def test_cli_models_and_bad_options(capsys) -> None:
    assert main(["llm", "models", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["name"] for r in rows] == ["qwen2.5-coder-1.5b", "smollm2-135m"]
    assert rows[0]["default"] and rows[0]["bytes"] == 1_117_320_768
    assert main(["llm", "serve", "--model", "qwen2.5-coder-15b"]) == 2
    err = capsys.readouterr().err
    assert "unknown local model 'qwen2.5-coder-15b'" in err and "qwen2.5-coder-1.5b" in err
    assert main(["llm", "serve", "--model", "smollm2-135m", "--ctx", "100000"]) == 2
    assert "trained for (8,192 tokens)" in capsys.readouterr().err


def test_cli_serve_check_answers(capsys) -> None:
    assert main(["llm", "serve", "--model", "smollm2-135m", "--ctx", "512", "--port", "0",
                 "--check"]) == 0
    out = capsys.readouterr().out
    assert "base_url = http://127.0.0.1:" in out and "model = smollm2-135m" in out
    assert "reply (" in out


def test_a_server_that_cannot_load_its_model_says_why(tmp_path, monkeypatch) -> None:
    _fake_model(tmp_path, monkeypatch, [b"GGUF" + b"\x03\x00\x00\x00" + b"\xff" * 64])
    srv = LocalServer("fake", ctx=512, startup_timeout=60)
    with pytest.raises(TiapError) as err:
        srv.start()
    assert err.value.code == "endpoint"
    assert "the local llama.cpp server for fake did not" in str(err.value)
    assert "its log ends:" in str(err.value)
    assert srv.proc is None  # nothing left running


def _gone(pid: int, wait: float = 30.0) -> bool:
    """True once ``pid`` has exited (a zombie nobody reaped counts as exited)."""
    deadline = time.monotonic() + wait
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in ("Z", "X"):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.2)


def test_a_request_in_progress_does_not_hold_up_the_stop() -> None:
    import threading

    srv = LocalServer("smollm2-135m", ctx=1024)
    srv.start()
    proc = srv.proc
    body = {"model": srv.model, "max_tokens": 900, "temperature": 0.8,
            "messages": [{"role": "user", "content": "Tell a very long story about a cat."}]}
    asking = threading.Thread(target=lambda: _ignore(
        lambda: httpx.post(f"{srv.base_url}/chat/completions", json=body, timeout=300)),
        daemon=True)
    asking.start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # until the slot is generating
        slots = httpx.get(f"{srv.url}/slots", timeout=10).json()
        if any(s.get("is_processing") for s in slots):
            break
        time.sleep(0.1)
    else:
        pytest.fail("the request never started")
    srv.stop()
    # the child ended itself on SIGTERM (status 0) mid-generation; it was not killed (-9)
    assert proc.returncode == 0


def _ignore(fn) -> None:
    try:
        fn()
    except httpx.HTTPError:
        pass


def test_a_parent_killed_outright_takes_its_server_with_it(tmp_path) -> None:
    import signal
    import subprocess
    import sys

    code = ("import time\nfrom tiap.llm.local import LocalServer\n"
            "s = LocalServer('smollm2-135m', ctx=512)\ns.start()\n"
            "print(s.proc.pid, flush=True)\ntime.sleep(600)\n")
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        child = int(parent.stdout.readline())
        assert not _gone(child, wait=0.5)
        parent.send_signal(signal.SIGKILL)  # no stop() runs, no handler runs
        parent.wait(30)
        assert _gone(child), f"the server {child} outlived its parent"
    finally:
        parent.kill()
        parent.wait()


def test_sigterm_unwinds_a_command_and_stops_its_server(monkeypatch, capsys) -> None:
    import signal

    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    seen: dict[str, int] = {}

    def terminated_while_serving(srv) -> None:
        seen["child"] = srv.proc.pid
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(30)  # the handler raises before this ends
        pytest.fail("SIGTERM did not interrupt the command")

    monkeypatch.setattr(local_llm, "check_server", terminated_while_serving)
    assert main(["llm", "serve", "--model", "smollm2-135m", "--ctx", "512", "--port", "0",
                 "--check"]) == 143
    assert "terminated (SIGTERM)" in capsys.readouterr().err
    assert _gone(seen["child"], wait=0.0)  # stopped by the with block, before main returned
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the handler is taken back


def test_a_port_in_use_is_named() -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        with pytest.raises(TiapError, match=f"port {port} on 127.0.0.1 is in use"):
            LocalServer("smollm2-135m", port=port).start()
