"""No module of ``src/tiap`` runs TIAP's own command line as a subprocess: a stage calls the
API function of another stage in its process (the CLI is a shell over the API).

The one child process of TIAP's own code that is allowed is the local model server,
``python -m tiap.llm.local``: a server, not the command line. Read from the source with
:mod:`ast`, so a call inside a function counts too; docstrings and comments do not.
"""

from __future__ import annotations

import ast
import itertools
import re
from pathlib import Path

import tiap

ROOT = Path(tiap.__file__).parent

#: ``-m MODULE`` of TIAP that a module may start: the local model server only.
ALLOWED = {"tiap.llm.local"}

_SHELL = re.compile(r"(?:^|\s)-m\s+(tiap(?:\.[\w.]+)?)(?=\s|$)|(?:^|[\s;&|])tiap\s+\w")


def _strings(node: ast.AST) -> list[ast.Constant]:
    return [n for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def _module_of(name: str) -> str | None:
    """The TIAP module a ``-m`` argument names, or None for another program's."""
    return name if name == "tiap" or name.startswith("tiap.") else None


#: Functions that start a process (subprocess's, os's and asyncio's).
_LAUNCHERS = {"run", "Popen", "call", "check_call", "check_output", "system", "popen",
              "getoutput", "getstatusoutput", "create_subprocess_exec",
              "create_subprocess_shell"}


def _launches(call: ast.Call) -> bool:
    f = call.func
    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
    return name in _LAUNCHERS or name.startswith(("exec", "spawn"))


def offences(source: str) -> list[str]:
    """Where ``source`` starts TIAP's command line as a process: ``-m tiap[...]`` in any
    list or tuple (an argv built before the call counts), other than :data:`ALLOWED`; and,
    in the arguments of a call that starts a process, a program named ``tiap`` or a shell
    command string that runs it."""
    tree = ast.parse(source)
    found: list[str] = []
    for seq in (n for n in ast.walk(tree) if isinstance(n, ast.List | ast.Tuple)):
        items = [e.value if isinstance(e, ast.Constant) else None for e in seq.elts]
        for v, nxt in itertools.pairwise(items):
            if v == "-m" and isinstance(nxt, str) and _module_of(nxt) and nxt not in ALLOWED:
                found.append(f"line {seq.lineno}: -m {nxt}")
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call) and _launches(n)):
        for arg in [*call.args, *(k.value for k in call.keywords)]:
            for seq in (n for n in ast.walk(arg) if isinstance(n, ast.List | ast.Tuple)):
                first = seq.elts[0] if seq.elts else None
                if isinstance(first, ast.Constant) and first.value == "tiap":
                    found.append(f"line {seq.lineno}: program 'tiap'")
            for const in _strings(arg):
                for m in _SHELL.finditer(const.value):
                    if m.group(1) is None or m.group(1) not in ALLOWED:
                        found.append(f"line {const.lineno}: {const.value!r}")
    return found


def test_no_module_runs_tiap_as_a_subprocess() -> None:
    bad = {str(p.relative_to(ROOT)): got for p in sorted(ROOT.rglob("*.py"))
           if (got := offences(p.read_text(encoding="utf-8")))}
    assert bad == {}


def test_the_check_finds_each_form() -> None:
    # each form of starting the CLI is found; the local model server and a docstring are not
    assert offences("subprocess.run([sys.executable, '-m', 'tiap', 'audit', 'cases'])")
    assert offences("subprocess.run([sys.executable, '-m', 'tiap.cli.main', 'rescore'])")
    assert offences("subprocess.Popen(('tiap', 'rescore', '--run', r))")
    assert offences("os.system('python -m tiap audit judge x')")
    assert offences("subprocess.run(f'tiap rescore --out {o}', shell=True)")
    assert offences("subprocess.run(['python3', '-m', 'tiap', *argv])")
    assert not offences("subprocess.Popen([sys.executable, '-m', 'tiap.llm.local', '--x'])")
    assert not offences('"""Run ``python -m tiap audit cases`` by hand."""')
    assert offences("cmd = [sys.executable, '-m', 'tiap']\nsubprocess.run([*cmd, 'x'])")
    assert not offences("subprocess.run(['git', '-C', root, 'rev-parse', 'HEAD'])")
    assert not offences("provenance.command_line = ['tiap', *args]")
    assert not offences("raise TiapError('judge them with tiap audit judge')")
