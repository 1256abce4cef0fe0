"""Entry point of the ``tiap`` command."""

from __future__ import annotations

import signal
import sqlite3
import sys
import threading
from collections.abc import Callable

import typer
from rich.markup import escape

import tiap.provenance
from tiap import __version__
from tiap.cli import (
    answers,
    audit,
    cache,
    datasets,
    imports,
    llm,
    measures,
    mem0,
    memory,
    pipeline,
    report,
    rescore,
    retrieval,
    sensitivity,
    table,
    targets,
)
from tiap.cli.common import err_console
from tiap.errors import TiapError

app = typer.Typer(
    name="tiap",
    context_settings={"help_option_names": ["-h", "--help"]},  # inherited by every command
    help="TIAP: audit what conversational-memory benchmarks credit "
    "(Raw, Source and Canonical targets on fixed ranked traces).",
    no_args_is_help=True,
    rich_markup_mode=None,  # plain help: no boxes, wrapped to the terminal
    pretty_exceptions_enable=False,
    add_completion=False,
)
# In the order of the work: the whole audit, its stages one by one, then the tools around it.
# A short help per command keeps `tiap --help` to one line each at 80 columns.
app.command("audit-run", short_help="The whole audit from a TOML config (resumable).")(
    pipeline.audit_run_cmd)
app.add_typer(datasets.app, name="datasets", short_help="List, inspect and export benchmarks.")
app.command("build-store", short_help="Build a memory store with lineage.")(
    memory.build_store_cmd)
app.command("retrieve", short_help="Rank a store for each query (BM25, dense, hybrid).")(
    retrieval.retrieve_cmd)
app.add_typer(imports.app, name="import",
              short_help="Import other systems' traces with their lineage.")
app.command("targets", short_help="Export Raw/Source/Canonical targets (qrels, groups).")(
    targets.targets_cmd)
app.command("rescore", short_help="Score fixed runs under every target.")(rescore.rescore_cmd)
app.command("sensitivity", short_help="What the target changes: flips, tests, stability.")(
    sensitivity.sensitivity_cmd)
app.command("report", short_help="HTML report, tables and the target card.")(
    report.report_cmd)
app.command("table", short_help="The compact comparison table (bold best, significance).")(
    table.table_cmd)
app.add_typer(answers.app, name="answers",
              short_help="Answers and judges: import, generate, judge, analyze.")
app.add_typer(audit.app, name="audit", short_help="Judge contested credits (LLM, offline).")
app.command("measures", short_help="The measures and their spellings.")(
    measures.measures_cmd)
app.command("mem0-run", short_help="Run a real Mem0 over a dataset, offline.")(
    mem0.mem0_run_cmd)
app.add_typer(llm.app, name="llm", short_help="Serve a small local LLM (llama.cpp).")
app.add_typer(cache.app, name="cache", short_help="Merge caches filled on other machines.")


def _version(value: bool) -> None:
    if value:
        print(f"tiap {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print the version and exit."),
) -> None:
    """TIAP command line."""


#: What an interrupted or disk-full command keeps, by command: printed with the error.
_KEPT = {
    "audit judge": "every verdict received so far is in the verdict cache",
    "build-store": "every LLM reply received so far is in the parser cache",
    "retrieve": "every finished collection is in the work folder, every embedding in the "
                "embedding cache",
    "audit-run": "every finished step and every cached reply or embedding",
    "mem0-run": "every finished collection, and of an unfinished one every finished "
                "add() call (with --infer; without, at most 30 s of calls are redone)",
}


#: The help pages' value names, by parameter type (typer would print ``<list[str]>``).
_METAVARS = {"<str>": "TEXT", "<list[str]>": "TEXT", "<int>": "INT", "<float>": "NUM",
             "<path>": "PATH", "<list[path]>": "PATH", "<list[int]>": "INT",
             "<list[float]>": "NUM", "<list[Path]>": "PATH", "<Path>": "PATH"}


def _plain_metavars(cmd: typer.core.TyperGroup) -> typer.core.TyperGroup:
    """Give every option and argument of the command tree a plain value name (``PATH``,
    ``INT``, ``TEXT``; an argument its own name in capitals), as help pages usually read;
    flags and choices keep theirs."""
    stack = [cmd]
    while stack:
        c = stack.pop()
        stack.extend(getattr(c, "commands", {}).values())
        for p in c.params:
            if p.metavar is not None or getattr(p, "is_flag", False):
                continue
            if p.param_type_name == "argument":  # its name says it: no type after it
                p.metavar = p.name.upper()
                p.display_type_rich = lambda ctx: None
            else:
                p.metavar = _METAVARS.get(p.display_type(None))
    return cmd


def _command(argv: list[str]) -> str:
    """The (sub)command path of ``argv`` as the user typed it, e.g. ``audit judge``."""
    words = [a for a in argv if not a.startswith("-")][:2]
    if words and words[0] in ("audit", "datasets", "import"):
        return " ".join(words)
    return words[0] if words else ""


def _kept(argv: list[str]) -> str:
    command = _command(argv)
    kept = next((v for k, v in _KEPT.items() if command == k or command.startswith(k + " ")),
                "finished outputs are written whole, nothing half-written is left")
    return (f"{kept}; rerun the same command to resume"
            + (f" (tiap {command} ...)" if command else ""))


def _error(code: str, text: str) -> None:
    """One error line; any configured secret in it (an API key an endpoint echoed into a
    message) is redacted, as in everything TIAP writes."""

    from tiap.llm import redact

    err_console.print(f"[bold red]error\\[{code}][/]: {escape(redact(text))}", highlight=False,
                      soft_wrap=True)


def _given(exc: Exception, args: list[str]) -> str | None:
    """The value the user gave to the option a ``BadParameter`` names, from ``args``."""
    opts = getattr(getattr(exc, "param", None), "opts", None) or []
    for i, a in enumerate(args):
        for o in opts:
            if a == o and i + 1 < len(args):
                return args[i + 1]
            if a.startswith(o + "="):
                return a[len(o) + 1:]
    return None


def _usage_error(exc: Exception, args: list[str]) -> int:
    """One line for a usage error of typer's (or click's) parser, naming the option."""
    ctx = getattr(exc, "ctx", None)
    path = ctx.command_path if ctx is not None else "tiap"
    if type(exc).__name__ == "NoArgsIsHelpError":
        if ctx is not None:  # the help, then the one error line
            print(ctx.get_help())
        names = sorted(getattr(ctx.command, "commands", {}) or {}) if ctx is not None else []
        listed = f" (one of: {', '.join(names)})" if names else ""
        text = f"{path}: a command is missing{listed}"
    else:
        text = f"{path}: {exc.format_message().rstrip('.')}"  # type: ignore[attr-defined]
        given = _given(exc, args)
        if given is not None and repr(given) not in text:
            text += f" (given: {given!r})"
    _error("usage", f"{text}; see '{path} --help'")
    return 2


def _is_disk_full(exc: BaseException) -> bool:
    import errno

    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    return isinstance(exc, sqlite3.OperationalError) and "full" in str(exc).lower()


def main(argv: list[str] | None = None) -> int:
    """Run the CLI. Input errors print one line per problem (``error[code]: ...``, codes in
    :data:`tiap.errors.CODES`) and exit with status 2; usage errors too; an interrupt exits
    with 130 and says what was kept."""
    from typer.exceptions import TyperException  # typer's parser errors (its own click) too

    args = sys.argv[1:] if argv is None else list(argv)

    tiap.provenance.command_line = ["tiap", *args]
    terminated: list[int] = []
    restore = _unwind_on_sigterm(terminated)
    try:
        rc = _plain_metavars(typer.main.get_command(app)).main(
            args=args, prog_name="tiap", standalone_mode=False)
    except TiapError as exc:
        for p in exc.problems:
            _error(p.code, str(p))
        return 2
    except KeyboardInterrupt:
        if terminated:
            _error("interrupted", f"terminated (SIGTERM): {_kept(args)}")
            return 128 + signal.SIGTERM
        _error("interrupted", f"interrupted: {_kept(args)}")
        return 130
    except typer.Exit as exc:
        return exc.exit_code
    except typer.Abort:  # click turns Ctrl-C at a prompt into Abort
        _error("interrupted", f"interrupted: {_kept(args)}")
        return 130
    except TyperException as exc:
        if hasattr(exc, "ctx"):  # a usage error of the parser (it names its context)
            return _usage_error(exc, args)
        _error("usage", exc.format_message())  # type: ignore[attr-defined]
        return getattr(exc, "exit_code", 1) or 1
    except Exception as exc:
        if _is_disk_full(exc):
            where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
            _error("disk-full", f"the disk is full{where}: {exc}; {_kept(args)} once space "
                                "is freed")
            return 2
        if isinstance(exc, OSError):  # a path the user gave cannot be read or written
            _error("io", str(exc))
            return 2
        raise
    finally:
        restore()
    if rc == 130:  # typer turns a KeyboardInterrupt in a command into exit status 130
        if terminated:
            _error("interrupted", f"terminated (SIGTERM): {_kept(args)}")
            return 128 + signal.SIGTERM
        _error("interrupted", f"interrupted: {_kept(args)}")
    return rc if isinstance(rc, int) else 0


def _unwind_on_sigterm(terminated: list[int]) -> Callable[[], None]:
    """Make SIGTERM unwind the command as Ctrl-C does (``with`` blocks exit: a local model
    server is stopped, temporary files are removed) instead of ending the process on the
    spot; returns what restores the previous handler. Only the main thread can set it, and
    a handler someone else set is left alone."""
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL):
        return lambda: None

    def unwind(signum: int, frame: object) -> None:
        terminated.append(signum)
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, unwind)
    return lambda: signal.signal(signal.SIGTERM, signal.SIG_DFL)


if __name__ == "__main__":
    sys.exit(main())
