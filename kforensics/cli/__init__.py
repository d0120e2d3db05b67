"""The ``kforensics`` command line (click): thin commands that call the library and render its results.

Exit codes: 0 clean, 1 findings (at or above ``--fail-on``), 2 usage, I/O or
refusal, 3 internal error (a one-line message; the traceback with
``--debug``).  Commands are imported only when run, so ``--help`` starts
fast and imports nothing heavy.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any, NoReturn

import click

from .. import __version__
from ..collector import tune as tune_collector
from ..errors import ExitCode, KforensicsError, exit_code_for

# the exit codes under the names the commands use; defined once, in kforensics.errors
EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR, EXIT_INTERNAL = (int(c) for c in ExitCode)

#: command -> (module, one line of help shown by --help without importing the module)
COMMANDS = {
    "dump": ("kforensics.cli.dump", "Decode Kafka files: segments, indexes, checkpoints, snapshots, metadata files."),
    "scan": ("kforensics.cli.scan", "Scan a broker's log dir(s) as forensic evidence."),
    "replay": ("kforensics.cli.replay", "Replay leader-epoch truncation across brokers: loss and fork verdicts."),
    "timeline": ("kforensics.cli.timeline", "Leader elections per partition, from a KRaft metadata log."),
    "spark": ("kforensics.cli.spark", "Scan and replay many archived broker snapshots on Spark."),
    "report": ("kforensics.cli.report", "The incident report: self-contained HTML, and Markdown for tickets."),
    "salvage": ("kforensics.cli.salvage", "Export the records a restart will destroy; put them back (--produce)."),
}


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        command: click.Command = getattr(importlib.import_module(COMMANDS[name][0]), name)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, short) for name, (_mod, short) in COMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def main(self, *args: Any, **kwargs: Any) -> Any:
        given = kwargs.get("args", args[0] if args else None)
        argv = sys.argv[1:] if given is None else list(given)
        command = next((a for a in argv if a in COMMANDS), None)
        # the process's own command line (not a caller's args): once the heavy modules are loaded, end it without
        # the interpreter's teardown, which then costs a quarter of a second with the compiled kernels, and 0.1 s
        # freeing a fleet's results (one broker's scan of 10 000 partition dirs; see _exit_now); --help and small
        # dumps, which load neither, exit as before
        fast = given is None and command in FAST_EXIT
        try:
            rv = self._main(argv, *args, **kwargs)
        except SystemExit as e:
            if fast and _loaded_heavy():
                _exit_now(e.code)
            raise
        if fast and _loaded_heavy():
            _exit_now(rv)
        return rv

    def _main(self, argv: list[str], *args: Any, **kwargs: Any) -> Any:
        debug = "--debug" in argv or bool(os.environ.get("KFORENSICS_DEBUG"))
        try:
            # (mypy: the positional args could also fill standalone_mode; main is only called with keywords or argv)
            return super().main(*args, standalone_mode=False, **kwargs)  # type: ignore[call-overload]
        except click.exceptions.Exit as e:
            sys.exit(e.exit_code)
        except click.ClickException as e:
            e.show()
            sys.exit(EXIT_ERROR)
        except click.exceptions.Abort as e:
            if isinstance(e.__cause__, EOFError):
                # click turns an EOFError into Abort (it takes it for end of input at a prompt); no command
                # prompts, so it escaped from the code: an internal error, not the user's
                _internal(e.__cause__, debug)
            _say("aborted")
            sys.exit(EXIT_ERROR)
        except BrokenPipeError:
            # the reader went away (| head): not an error of ours
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(EXIT_CLEAN)
        except (KforensicsError, OSError) as e:
            code = exit_code_for(e)
            if code == ExitCode.INTERNAL:
                _internal(e, debug)
            _say(str(e))
            sys.exit(int(code))
        except Exception as e:  # noqa: BLE001 - an internal error: one line, the traceback only on request
            _internal(e, debug)


#: commands that start no subprocess or service and whose outputs are closed when they return
FAST_EXIT = frozenset({"dump", "scan", "replay", "timeline"})


def _loaded_heavy() -> bool:
    """Whether the compiled kernels (numba) or numpy, which every scan and replay loads, are loaded."""
    return "numba" in sys.modules or "numpy" in sys.modules


def _exit_now(code: str | int | None) -> NoReturn:
    """End the process with ``code`` (as ``sys.exit`` takes it) once stdout and stderr are flushed.

    Skips the interpreter's teardown (freeing every module and object, and
    the compiled kernels' code): every file the command wrote is closed when
    it returns and no thread has work left, so nothing is lost.  The exit
    handlers registered with ``atexit`` still run.
    """
    import atexit

    if code is None:
        status = EXIT_CLEAN
    elif isinstance(code, int):
        status = code
    else:
        print(code, file=sys.stderr)
        status = 1
    atexit._run_exitfuncs()  # noqa: SLF001 - what the teardown would run first; cheap, unlike the rest
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, ValueError):
            pass  # the reader went away, or the stream is closed: nothing more to show
        except OSError:
            status = status or EXIT_ERROR
    os._exit(status)


def _say(message: str) -> None:
    """One line on stderr, escaped: messages may quote the evidence (file names, ids)."""
    from .common import printable

    click.echo(f"kforensics: {printable(message)}", err=True)


def _internal(e: BaseException, debug: bool) -> NoReturn:
    """Exit 3 for an internal error: one line, or the traceback and that line with ``--debug``."""
    if debug:
        import traceback

        traceback.print_exception(e, file=sys.stderr)
        _say(f"internal error: {type(e).__name__}: {e}")
    else:
        _say(f"internal error: {type(e).__name__}: {e} (run with --debug for the traceback)")
    sys.exit(EXIT_INTERNAL)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="kforensics")
@click.option("--debug", is_flag=True, help="Show the traceback of an internal error.")
def main(debug: bool) -> None:
    """Kafka log-segment forensics: decode, scan and replay broker log dirs as evidence (read-only)."""
    tune_collector()


if __name__ == "__main__":  # pragma: no cover
    main()
