"""Entry point of the ``tiap`` command."""

from __future__ import annotations

import sys

import typer

from tiap import __version__
from tiap.cli import (
    audit,
    datasets,
    imports,
    mem0,
    memory,
    pipeline,
    report,
    rescore,
    retrieval,
    sensitivity,
    targets,
)
from tiap.cli.common import err_console
from tiap.errors import TiapError

app = typer.Typer(
    name="tiap",
    help="TIAP: audit what conversational-memory benchmarks credit "
    "(Raw, Source and Canonical targets on fixed ranked traces).",
    no_args_is_help=True,
    rich_markup_mode="markdown",  # docstrings are wrapped text: join their lines
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.add_typer(datasets.app, name="datasets")
app.add_typer(imports.app, name="import")
app.command("targets")(targets.targets_cmd)
app.command("rescore")(rescore.rescore_cmd)
app.command("audit-run")(pipeline.audit_run_cmd)
app.command("build-store")(memory.build_store_cmd)
app.command("retrieve")(retrieval.retrieve_cmd)
app.command("sensitivity")(sensitivity.sensitivity_cmd)
app.command("report")(report.report_cmd)
app.command("mem0-run")(mem0.mem0_run_cmd)
app.add_typer(audit.app, name="audit")


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


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; input errors print one line per problem and exit with status 2."""
    try:
        rc = app(args=argv, standalone_mode=False)
    except TiapError as exc:
        for p in exc.problems:
            err_console.print(f"[bold red]error[/]: {p}", highlight=False, soft_wrap=True)
        return 2
    except OSError as exc:  # a path the user gave cannot be read or written
        err_console.print(f"[bold red]error[/]: {exc}", highlight=False, soft_wrap=True)
        return 2
    except KeyboardInterrupt:
        err_console.print("[yellow]interrupted[/]")
        return 130
    except typer.Exit as exc:
        return exc.exit_code
    except typer.Abort:
        return 1
    except Exception as exc:  # click usage errors
        import click

        if isinstance(exc, click.ClickException):
            exc.show()
            return exc.exit_code
        raise
    return rc if isinstance(rc, int) else 0


if __name__ == "__main__":
    sys.exit(main())
