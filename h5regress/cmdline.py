"""Exit codes and argument parsing of ``h5regress gate``, ``refs`` and ``report``.

Exit codes: 0 PASS, 1 FAIL, 2 INCONCLUSIVE, 3 DEGRADED, 4 ERROR (bad usage,
unreadable or malformed input). ``refs`` and ``report`` use 0 and 4 only.
argparse exits with 2 on a usage error, which would read as INCONCLUSIVE:
:class:`ArgParser` never exits, and :func:`parse_args` turns a usage error
into 4.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

EXIT_PASS, EXIT_FAIL, EXIT_INCONCLUSIVE, EXIT_DEGRADED, EXIT_ERROR = 0, 1, 2, 3, 4
#: no slowdown detected at tonight's sensitivity (INCONCLUSIVE: a possible slowdown)
EXIT_NO_SLOWDOWN_SEEN = 5
EXIT_CODES = {'PASS': EXIT_PASS, 'FAIL': EXIT_FAIL, 'INCONCLUSIVE': EXIT_INCONCLUSIVE,
              'DEGRADED': EXIT_DEGRADED, 'ERROR': EXIT_ERROR,
              'NO-SLOWDOWN-SEEN': EXIT_NO_SLOWDOWN_SEEN}


#: ``--config`` of gate, report and refs: the gate's YAML (ci/nightly's ``--config`` and
#: ci/run-suite's ``-C`` take ReFrame's configuration instead)
GATE_CONFIG_HELP = ("a site's gate config YAML, layered over ci/gate.yaml (keys it leaves "
                    "out keep the shipped values); not a ReFrame configuration, which "
                    "ci/nightly --config and ci/run-suite -C take")


class UsageError(Exception):
    pass


class _ParserExit(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


class ArgParser(argparse.ArgumentParser):
    """argparse that never calls sys.exit (its exit code 2 means INCONCLUSIVE here)."""

    def error(self, message: str):   # type: ignore[override]
        raise UsageError(message)

    def exit(self, status: int = 0, message: str | None = None):   # type: ignore[override]
        if message:
            sys.stderr.write(message)
        raise _ParserExit(status)


def parse_args(parser: ArgParser, argv: Sequence[str] | None):
    """(namespace, None) or (None, exit code) after --help or a usage error."""
    try:
        return parser.parse_args(argv), None
    except _ParserExit as ex:
        return None, (0 if ex.status == 0 else EXIT_ERROR)
    except UsageError as err:
        parser.print_usage(sys.stderr)
        print(f'{parser.prog}: error: {err}', file=sys.stderr)
        return None, EXIT_ERROR


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
