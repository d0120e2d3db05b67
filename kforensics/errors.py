"""The error root of kforensics, its few leaves, and the exit codes they map to.

The library raises these; the front ends map them to exit codes with
:func:`exit_code_for` (the only place that decides between 2 and 3), so no
front end looks at where an exception was raised or at its class name.

Exit codes (the contract of every command, CLI and Spark alike):
0 clean, 1 findings, 2 usage, I/O or refusal, 3 internal error.
"""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    """What a command's exit status means."""

    CLEAN = 0  # nothing at or above --fail-on
    FINDINGS = 1  # findings at or above --fail-on (or a verdict that fails the command)
    ERROR = 2  # usage, input/output, or a refused input or output
    INTERNAL = 3  # a bug of ours: one line, the traceback with --debug


class KforensicsError(Exception):
    """Root of every error kforensics raises on purpose.  ``exit_code`` says what a command exits with."""

    exit_code: ExitCode = ExitCode.ERROR


class UsageError(KforensicsError, ValueError):
    """The command was asked for something it cannot do (a bad option value, an unknown version or mode)."""


class InputError(UsageError):
    """An input is not what the command takes (missing, not a log dir, two snapshots of one broker, ...)."""


class OutputRefused(UsageError):
    """An output location that would write into, onto or above evidence, or that already exists."""


class EvidenceUnreadable(KforensicsError, OSError):
    """Evidence that could not be read (permissions, not a regular file, a damaged archive, a cap).

    Also an ``OSError``, so code that treats any I/O failure alike keeps doing so.
    """


class InternalError(KforensicsError):
    """A state the code should never reach: reported as exit 3."""

    exit_code = ExitCode.INTERNAL


def exit_code_for(error: BaseException) -> ExitCode:
    """The exit code a command ends with when ``error`` escapes it.

    Our own errors carry their code; any other ``OSError`` is input/output
    (exit 2); everything else is a bug (exit 3).
    """
    if isinstance(error, KforensicsError):
        return error.exit_code
    if isinstance(error, OSError):
        return ExitCode.ERROR
    return ExitCode.INTERNAL
