"""The exit codes of every ``h5regress`` command and ``ci/`` script, and their
argument parsing.

One convention (README, "Exit codes"): the verdicts 0 PASS, 1 FAIL, 2 INCONCLUSIVE,
3 DEGRADED, 4 ERROR, 5 NO-SLOWDOWN-SEEN; a command that gives no verdict uses 0 done,
1 a failed run found (``parse``, ``perflog``), 4 ERROR (an input missing, unreadable
or malformed; a step failed). A wrong command line is 64 (``EX_USAGE`` of
sysexits.h) everywhere: argparse's own 2 would read as INCONCLUSIVE, so
:class:`ArgParser` never exits and :func:`parse_args` turns its errors into 64, and
:class:`UsageExitParser` exits 64 for the commands that let argparse exit.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

EXIT_PASS, EXIT_FAIL, EXIT_INCONCLUSIVE, EXIT_DEGRADED, EXIT_ERROR = 0, 1, 2, 3, 4
#: no slowdown detected at tonight's sensitivity (INCONCLUSIVE: a possible slowdown)
EXIT_NO_SLOWDOWN_SEEN = 5
#: a wrong command line (unknown option, missing or invalid value, conflicting options):
#: nothing was read or run; sysexits.h's EX_USAGE, clear of every verdict
EXIT_USAGE = 64
#: a step-limited run stopped before its end (``bisect --steps``): rerun to resume;
#: sysexits.h's EX_TEMPFAIL
EXIT_RESUMABLE = 75
EXIT_CODES = {'PASS': EXIT_PASS, 'FAIL': EXIT_FAIL, 'INCONCLUSIVE': EXIT_INCONCLUSIVE,
              'DEGRADED': EXIT_DEGRADED, 'ERROR': EXIT_ERROR,
              'NO-SLOWDOWN-SEEN': EXIT_NO_SLOWDOWN_SEEN}


#: ``--config`` of gate, report, refs and publish: the gate's YAML (ci/nightly's
#: ``--reframe-config`` and ci/run-suite's ``-C`` take ReFrame's configuration instead)
GATE_CONFIG_HELP = ("a site's gate config YAML, layered over ci/gate.yaml (keys it leaves "
                    "out keep the shipped values); not a ReFrame configuration, which "
                    "ci/nightly --reframe-config and ci/run-suite -C take")


class UsageError(Exception):
    pass


class _ParserExit(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


class UsageExitParser(argparse.ArgumentParser):
    """argparse whose usage errors exit :data:`EXIT_USAGE` (its own 2 means
    INCONCLUSIVE here); for the commands whose parser may exit the process."""

    def error(self, message: str):   # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f'{self.prog}: error: {message}\n')


class ArgParser(argparse.ArgumentParser):
    """argparse that never calls sys.exit (its exit code 2 means INCONCLUSIVE here)."""

    def error(self, message: str):   # type: ignore[override]
        raise UsageError(message)

    def exit(self, status: int = 0, message: str | None = None):   # type: ignore[override]
        if message:
            sys.stderr.write(message)
        raise _ParserExit(status)


def deprecated_alias(new: str) -> type[argparse.Action]:
    """An argparse action for an old option name: it stores as ``new`` does and says,
    on stderr, to give ``new``."""
    class _Alias(argparse.Action):
        def __call__(self, parser, namespace, values, option_string=None):
            print(f'{parser.prog}: warning: {option_string} is deprecated here (elsewhere '
                  f'it names the gate YAML): give {new}', file=sys.stderr)
            setattr(namespace, self.dest, values)
    return _Alias


def parse_args(parser: ArgParser, argv: Sequence[str] | None):
    """(namespace, None) or (None, exit code) after --help or a usage error."""
    try:
        return parser.parse_args(argv), None
    except _ParserExit as ex:
        return None, (0 if ex.status == 0 else EXIT_USAGE)
    except UsageError as err:
        parser.print_usage(sys.stderr)
        print(f'{parser.prog}: error: {err}', file=sys.stderr)
        return None, EXIT_USAGE


def duration_arg(text: str) -> float:
    """A positive duration in seconds, in ReFrame's ``time_limit`` syntax (its
    ``Duration``: ``25m``, ``1h30m``, ``1500``), for argparse's ``type``."""
    # here, not at the top: importing reframe takes 0.3 s that other commands would pay
    from reframe.utility.typecheck import Duration
    try:
        seconds = float(Duration(text))
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f'{text!r} is not a duration (25m, 1h30m, 1500)') \
            from None
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f'{text!r}: a duration above 0 is needed')
    return seconds


def config_files(chain: str, option: str = '--config') -> list[str]:
    """The files of a ReFrame configuration chain ``FILE[:FILE...]``, absolute.

    An empty member (``settings.py:`` from an unset ``$SITE_CONFIG``) or a missing
    file is a :class:`UsageError` naming it: ReFrame would otherwise fail later with a
    message about something else (no test matched).
    """
    files = []
    for i, name in enumerate(chain.split(':'), 1):
        if not name:
            raise UsageError(f'{option} {chain!r}: file {i} of the chain is empty (an '
                             f'unset variable?); give FILE[:FILE...]')
        if not Path(name).is_file():
            raise UsageError(f'{option} {chain!r}: {name} is not a file')
        files.append(str(Path(name).resolve()))
    return files
