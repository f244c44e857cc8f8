"""``h5regress``: the suite's command line.

    h5regress parse TOOL PATH...     outputs made outside ReFrame -> records (JSON lines)
    h5regress perflog PATH...        ReFrame perflogs -> records (JSON lines)
    h5regress gate ...               the nightly statistical verdict
    h5regress report ...             Markdown/HTML/JUnit report of a night
    h5regress publish ...            one static site across nights (dashboard, triage)
    h5regress refs ...               reference envelopes from history
    h5regress manifest ...           the Spack environment's tool manifest
    h5regress bisect ...             the first HDF5 commit behind a FAIL (noise-aware)
    h5regress coverage ...           which HDF5 functions each row executes; changed ones no row runs
    h5regress replay ...             a regression of regressions/ replayed: caught or missed

Exit codes (one convention for every command: README, "Exit codes"); ``parse`` and
``perflog``: 0 all runs parsed; 1 some output shows a failed or incomplete run (named
on stderr; the good ones are still printed); 4 unreadable, missing or malformed input,
or a summary file that alone cannot show its run succeeded (``parse``: without the
run's stdout/stderr beside it, unless ``--trust-summary``); 64 a wrong command line
(an unknown tool included).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from h5regress.buildid import NO_BUILD
from h5regress.cmdline import EXIT_ERROR, EXIT_USAGE, UsageExitParser
from h5regress.parsers import ParseError, RunFailed, parser_for, tools

#: largest file ``parse`` reads: a tool's output is far smaller; benchmark data files (in
#: a run directory) are skipped, a file named on the command line is refused (exit 4)
MAX_OUTPUT_BYTES = 64 * 1024 * 1024


class InputRefused(OSError):
    """An input ``parse`` will not read (named, with the reason)."""


def read_text(path: str) -> str:
    size = os.path.getsize(path)
    if size > MAX_OUTPUT_BYTES:
        raise InputRefused(f'{path}: {size} B, larger than the {MAX_OUTPUT_BYTES} B an '
                           f'output of a tool may have: not read')
    with open(path, errors='replace') as fp:
        return fp.read()


def read_outputs(path: str, wanted) -> dict[str, str]:
    """A file, or the files of a directory the parser wants, as ``{relpath: text}``.

    A file named directly above :data:`MAX_OUTPUT_BYTES` is refused
    (:class:`InputRefused`); in a directory it is skipped with a note on stderr.
    """
    if os.path.isfile(path):
        return {os.path.basename(path): read_text(path)}
    if not os.path.isdir(path):
        raise FileNotFoundError(f'{path}: no such file or directory')
    files = {}
    for root, _, names in os.walk(path):
        for name in sorted(names):
            full = os.path.join(root, name)
            rel = os.path.relpath(full, path)
            if not wanted(rel):
                continue
            try:
                files[rel] = read_text(full)
            except InputRefused as err:
                print(f'h5regress parse: skipped {err}', file=sys.stderr)
    return files


def is_capture_name(name: str) -> bool:
    """A job's stdout or stderr capture (``stdout*``, ``stderr*``, ``*.out``, ``*.err``)."""
    return name.startswith(('stdout', 'stderr')) or name.endswith(('.out', '.err'))


def captures_beside(path: str, wanted) -> dict[str, str]:
    """The stdout/stderr captures in the directory of the file ``path`` (not itself)."""
    folder = os.path.dirname(path) or '.'
    names = sorted(n for n in os.listdir(folder) if is_capture_name(n) and wanted(n)
                   and n != os.path.basename(path)
                   and os.path.isfile(os.path.join(folder, n)))
    captures = {}
    for name in names:
        try:
            captures[name] = read_text(os.path.join(folder, name))
        except InputRefused as err:
            print(f'h5regress parse: skipped {err}', file=sys.stderr)
    return captures


class SummaryUnproven(ValueError):
    """A summary file whose run's stdout/stderr are not beside it (named, with the fix)."""


def file_failure(path: str, files: dict[str, str], parser, tool: str,
                 trust_summary: bool) -> None:
    """For a file named on the command line: :class:`RunFailed` when the captures beside
    it show a failed run (the directory form's sanity); :class:`SummaryUnproven` when the
    tool's summary files cannot show a failure and no capture is there."""
    (name, text), = files.items()
    captures = captures_beside(path, parser.wanted)
    if captures:
        try:
            parser.parse({name: text, **captures})
        except ParseError as err:
            if isinstance(err, RunFailed):
                raise
        return
    if is_capture_name(name) or trust_summary or \
            getattr(parser, 'SUMMARY_SHOWS_FAILURE', True):
        return
    raise SummaryUnproven(
        f'{path}: a summary file alone cannot show the run succeeded ({tool} writes a '
        f'full summary after failed writes, and says so only on stdout/stderr), and no '
        f'stdout/stderr capture (stdout*, stderr*, *.out, *.err) is beside it: parse the '
        f'run directory, keep the captures beside the file, or pass --trust-summary')


def cmd_parse(args) -> int:
    try:
        parser = parser_for(args.tool)
    except ParseError as err:       # an unknown tool
        print(f'h5regress parse: {err}', file=sys.stderr)
        return EXIT_USAGE
    except ImportError as err:
        print(f'h5regress parse: {err}', file=sys.stderr)
        return EXIT_ERROR
    status = 0
    for path in args.paths:
        try:
            files = read_outputs(path, parser.wanted)
        except OSError as err:
            print(f'h5regress parse: {err}', file=sys.stderr)
            status = EXIT_ERROR
            continue
        except MemoryError:
            print(f'h5regress parse: {path}: out of memory reading it: not read',
                  file=sys.stderr)
            status = EXIT_ERROR
            continue
        if not files:
            print(f'h5regress parse: {path}: no {args.tool} output found', file=sys.stderr)
            status = EXIT_ERROR
            continue
        try:
            if os.path.isfile(path):
                file_failure(path, files, parser, args.tool, args.trust_summary)
            runs = parser.parse(files)
        except SummaryUnproven as err:
            print(f'h5regress parse: {err}', file=sys.stderr)
            status = EXIT_ERROR
            continue
        except RunFailed as err:
            print(f'h5regress parse: {path}: failed run: {err}', file=sys.stderr)
            status = max(status, 1)
            continue
        except ParseError as err:
            print(f'h5regress parse: {path}: {err}', file=sys.stderr)
            status = EXIT_ERROR
            continue
        for run in runs:
            for record in run.to_records(hdf5_build=args.hdf5_build,
                                         test=os.path.abspath(path)):
                print(record.to_json())
    return status


def cmd_perflog(args) -> int:
    from h5regress import runrecords
    missing = [path for path in args.paths if not os.path.exists(path)]
    for path in missing:
        print(f'h5regress perflog: {path}: no such file or directory', file=sys.stderr)
    if missing:
        return EXIT_ERROR
    got = runrecords.read(perflogs=args.paths)
    for record in got.records:
        print(record.to_json())
    for problem in got.problems:
        print(f'h5regress perflog: skipped: {problem}', file=sys.stderr)
    return 0


def package_version() -> str:
    """The installed h5regress package's version (pyproject.toml's)."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version('h5regress')
    except PackageNotFoundError:
        return 'unknown (not installed: pip install -e .)'


#: subcommands whose implementation lives in its own module: name -> (module, function)
DELEGATED = {
    'gate': ('h5regress.gate', 'main_gate'),
    'report': ('h5regress.report', 'main_report'),
    'publish': ('h5regress.report', 'main_publish'),
    'refs': ('h5regress.refs', 'main_refs'),
    'manifest': ('h5regress.manifest', 'main'),
    'bisect': ('h5regress.bisect', 'main'),
    'study': ('h5regress.study', 'main'),
    'coverage': ('h5regress.coveragerun', 'main'),
    'replay': ('h5regress.replay', 'main'),
}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in DELEGATED:
        module, func = DELEGATED[argv[0]]
        return getattr(importlib.import_module(module), func)(argv[1:])

    ap = UsageExitParser(prog='h5regress', description=__doc__,
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--version', action='version', version=f'h5regress {package_version()}')
    sub = ap.add_subparsers(dest='command', required=True)
    p = sub.add_parser('parse', help='outputs made outside ReFrame -> records')
    p.add_argument('tool', help=f'one of: {", ".join(tools())}')
    p.add_argument('paths', nargs='+', metavar='PATH', help='output file or run directory')
    p.add_argument('--hdf5-build', default=NO_BUILD,
                   help=f'HDF5 build id to put in the records (default: {NO_BUILD})')
    p.add_argument('--trust-summary', action='store_true',
                   help="take a summary file named alone (IOR's -O summaryFile) as a "
                        "successful run without its stdout/stderr beside it")
    p.set_defaults(func=cmd_parse)
    p = sub.add_parser('perflog', help='ReFrame perflogs -> records')
    p.add_argument('paths', nargs='+', metavar='PATH', help='perflog file or directory')
    p.set_defaults(func=cmd_perflog)
    for name in DELEGATED:
        sub.add_parser(name, help=f'see h5regress {name} --help')
    args = ap.parse_args(argv)
    try:
        return args.func(args)
    except BrokenPipeError:
        # the reader went away (`h5regress perflog ... | head`): not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == '__main__':
    sys.exit(main())
