"""Running rows against a coverage build of HDF5, and ``h5regress coverage``.

The operations of issue 28 (:mod:`h5regress.coverage` holds the map, the diff and
the regression-prone set): build a commit of HDF5 with ``--coverage`` from a Spack
source mirror, run the checks' rows once against it through ReFrame (untimed, never
in a store the gate reads), and read each row's counters with gcov's JSON (or gcovr).
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import glob
import json
import os
import pathlib
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence

from h5regress import buildid, manifest, runreport
from h5regress.nightrun import NIGHT_SELECTION, NIGHT_SETVARS, build_filter
from h5regress.coverage import (PRONE_FILE, CoverageError, CoverageMap, RowCoverage,
                                blind_spot_line, changes_between, failing_rows_line,
                                load_prone, map_summary, merge_maps, merge_rows,
                                parse_gcov_json, parse_gcovr_json, prone_commits,
                                prone_functions, prone_report, replay_pair)


# ------------------------------------------------------------------ collecting
def link_notes(gcda_root: pathlib.Path, build_dir: pathlib.Path,
               notes: Sequence[pathlib.Path] | None = None) -> int:
    """Link every ``.gcno`` of ``build_dir`` (``notes``, when listed before) beside where
    ``GCOV_PREFIX=gcda_root`` put the counters (``gcda_root/<absolute build path>``);
    gcov needs both."""
    build_dir = build_dir.resolve()
    mirror = gcda_root / str(build_dir).lstrip('/')
    count = 0
    for note in build_dir.rglob('*.gcno') if notes is None else notes:
        target = mirror / note.relative_to(build_dir)
        if target.parent.is_dir() and not target.exists():
            target.symlink_to(note)
            count += 1
    return count


def gcovr_command() -> str:
    """gcovr of this Python environment (a dependency of the package), else PATH's."""
    beside = pathlib.Path(sys.executable).with_name('gcovr')
    found = str(beside) if beside.exists() else shutil.which('gcovr')
    if not found:
        raise CoverageError('gcovr not found: pip install gcovr (a dependency of h5regress)')
    return found


def collect_row(gcda_root: pathlib.Path, build_dir: pathlib.Path,
                source_root: pathlib.Path, reader: str = 'gcov',
                notes: Sequence[pathlib.Path] | None = None) -> RowCoverage:
    """A row's coverage from the counters one run left under ``gcda_root``, read by gcov's
    JSON (``reader='gcov'``) or by gcovr."""
    counters = sorted(str(p) for p in gcda_root.rglob('*.gcda'))
    if not counters:
        raise CoverageError(f'{gcda_root}: no .gcda counters (was the run made with '
                            f'GCOV_PREFIX={gcda_root} against a --coverage build?)')
    link_notes(gcda_root, build_dir, notes)
    # gcov writes its .gcov files into its working directory, which gcovr makes the
    # --object-directory, else --root: the build's source root, shared by every run of
    # the build, where one run's clean-up removed another's files. A directory of
    # this run's own keeps two mappings of one build apart (gcov --stdout writes none).
    with tempfile.TemporaryDirectory(prefix='h5regress-gcov-') as scratch:
        cmd = ([shutil.which('gcov') or 'gcov', '--json-format', '--stdout', *counters]
               if reader == 'gcov' else
               [gcovr_command(), '--root', str(source_root), '--object-directory', scratch,
                '--json', '-', str(gcda_root)])
        out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    # gcov says what it could not read on stderr and goes on: a counter without its
    # notes would be a function silently missing from the map
    unread = [line for line in out.stderr.splitlines()
              if 'cannot open' in line or 'mismatch' in line]
    if out.returncode != 0 or unread:
        raise CoverageError(f'{reader} on {gcda_root} exited {out.returncode}: '
                            f'{(unread[0] if unread else out.stderr.strip())[-500:]}')
    if reader == 'gcov':
        return parse_gcov_json(out.stdout, str(source_root.resolve()), f'gcov on {gcda_root}')
    return parse_gcovr_json(out.stdout, f'gcovr on {gcda_root}')


def collect_rows(rows: Mapping[str, pathlib.Path], build_dir: pathlib.Path,
                 source_root: pathlib.Path, reader: str = 'gcov',
                 jobs: int = 1) -> dict[str, RowCoverage]:
    """Each row's coverage (:func:`collect_row`), ``jobs`` rows read at once: each row's
    reader is a process of its own, and the build's notes are listed once, not per row."""
    notes = sorted(build_dir.resolve().rglob('*.gcno'))
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        read = {name: pool.submit(collect_row, path, build_dir, source_root, reader, notes)
                for name, path in rows.items()}
        return {name: future.result() for name, future in read.items()}


# ------------------------------------------------------------------ the build
#: where coverage builds live (outside any checkout, like Spack's install tree)
DEFAULT_WORK = pathlib.Path('~/.cache/h5regress/coverage').expanduser()
#: HDF5's CMake options of a coverage build: parallel like the timed builds, -O0 so
#: that no static function is inlined away from the map, NDEBUG as in a release
CMAKE_OPTIONS = ('-DCMAKE_BUILD_TYPE=Release', '-DCMAKE_C_FLAGS_RELEASE=-O0 -DNDEBUG',
                 '-DCMAKE_C_FLAGS=--coverage', '-DCMAKE_EXE_LINKER_FLAGS=--coverage',
                 '-DCMAKE_SHARED_LINKER_FLAGS=--coverage', '-DBUILD_STATIC_LIBS=OFF',
                 '-DHDF5_ENABLE_PARALLEL=ON', '-DBUILD_TESTING=OFF', '-DHDF5_BUILD_TOOLS=OFF',
                 '-DHDF5_BUILD_EXAMPLES=OFF', '-DHDF5_BUILD_CPP_LIB=OFF',
                 '-DHDF5_BUILD_FORTRAN=OFF', '-DHDF5_BUILD_HL_LIB=ON',
                 '-DHDF5_ENABLE_Z_LIB_SUPPORT=ON', '-DHDF5_ENABLE_SUBFILING_VFD=ON')


@dataclasses.dataclass(frozen=True)
class CoverageBuild:
    """A coverage build's directory: the sources it compiled, its build tree (the
    ``.gcno`` notes) and its install prefix."""
    work: pathlib.Path

    @property
    def source(self) -> pathlib.Path:
        return self.work / 'src'

    @property
    def build_dir(self) -> pathlib.Path:
        return self.work / 'build'

    @property
    def prefix(self) -> pathlib.Path:
        return self.work / 'install'


def build_hdf5(commit: str, mirror: pathlib.Path, cov: CoverageBuild, jobs: int) -> None:
    """Unpack HDF5 at ``commit`` from a Spack source mirror and build it for coverage."""
    from h5regress.sources import Pin
    tarball = Pin('hdf5', commit, 'cov').mirror_path(mirror)
    if not tarball.is_file():
        raise CoverageError(f'{tarball}: no tarball of HDF5 {commit} in the source mirror '
                            f'{mirror} (spack-env/install --create-mirror, or a tarball of a '
                            f'clone, see README "Coverage")')
    shutil.rmtree(cov.work, ignore_errors=True)
    cov.source.mkdir(parents=True)
    steps = [['tar', '-xzf', str(tarball), '-C', str(cov.source), '--strip-components=1'],
             ['cmake', '-S', str(cov.source), '-B', str(cov.build_dir), *CMAKE_OPTIONS,
              f'-DCMAKE_INSTALL_PREFIX={cov.prefix}'],
             ['cmake', '--build', str(cov.build_dir), f'-j{jobs}'],
             ['cmake', '--install', str(cov.build_dir)]]
    log = cov.work / 'build.log'
    with open(log, 'w') as out:
        for step in steps:
            done = subprocess.run(step, stdout=out, stderr=subprocess.STDOUT,
                                  env=dict(os.environ, CC=os.environ.get('CC', 'mpicc')))
            if done.returncode:
                raise CoverageError(f'{" ".join(step[:2])} exited {done.returncode}: see {log}')


# ------------------------------------------------------------------ running rows
def coverage_manifest(src: pathlib.Path, build: str, hdf5_prefix: pathlib.Path,
                      out: pathlib.Path) -> tuple[pathlib.Path, str]:
    """A manifest of one build, ``<build>-cov``, whose tools run against the coverage
    build of the same commit at ``hdf5_prefix``: each tool's wrapper preloads its
    ``libhdf5`` (the tools' RPATH names the timed build's; the same soname, loaded
    first, serves them) and sends the counters to ``out/gcda/<the job's stage
    directory name>``, one tree per test case."""
    data = json.loads(src.read_text())
    try:
        entry = data['builds'][build]
    except KeyError:
        raise CoverageError(f'{src}: no build {build!r} (it has: '
                            f'{", ".join(data.get("builds", {}))})') from None
    libs = sorted((hdf5_prefix / 'lib').glob('libhdf5.so.*'), key=lambda p: len(p.name))
    if not libs:
        raise CoverageError(f'{hdf5_prefix}/lib: no libhdf5.so.* (the coverage build\'s '
                            f'install prefix?)')
    label = entry['hdf5']['label'] + '-cov'
    entry['hdf5'].update(label=label, prefix=str(hdf5_prefix),
                         variants=entry['hdf5']['variants'] + ' +coverage')
    entry.pop('darshan', None)
    # the ASYNC rows' h5bench links the thread-safe HDF5 build, which has no coverage
    # twin: without the entry they are skipped saying why, never run uncovered
    entry.pop('async', None)
    gcda = out / 'gcda'
    manifest.wrap_tools(entry['tools'], out / 'wrappers', [
        f'export GCOV_PREFIX={shlex.quote(str(gcda))}/"$(basename "$PWD")"',
        f'export LD_PRELOAD={shlex.quote(str(libs[0]))}${{LD_PRELOAD:+:$LD_PRELOAD}}'],
        'the tool against a coverage build of its HDF5 (never a timed run)')
    data['builds'] = {buildid.of_label(label): entry}
    return manifest.write(out / 'manifest.json', data), buildid.of_label(label)


def stage_names(report_text: str, where: str) -> dict[str, str]:
    """ReFrame run report -> {stage directory name: display name} of the cases that
    passed (a failed run's counters are not a row's coverage)."""
    try:
        cases = runreport.testcases(report_text)
    except ValueError as err:
        raise CoverageError(f'{where}: not a ReFrame run report ({err})') from None
    return {pathlib.Path(c['stagedir']).name: c['display_name'] for c in cases
            if c.get('result') == 'pass' and c.get('stagedir')}


#: ReFrame variables of a coverage run: one pass over each code path is what a map
#: needs (the night's three iterations of an h5paths or FLASH-IO row, or repetitions of
#: an IOR row, execute the same functions)
RUN_SETVARS = ('h5paths_check.iterations=1', 'flashio_check.iterations=1',
               'ior_check.repetitions=1')


def run_rows(manifest_path: pathlib.Path, build: str, checks: str,
             out: pathlib.Path, system: str | None = None,
             setvars: Sequence[str] = RUN_SETVARS,
             night: bool = False) -> dict[str, pathlib.Path]:
    """One untimed ReFrame run of the selected checks (``night``: of those, the night's
    rows) against the coverage build; {row: its counters' directory}."""
    root = manifest.repo_root()
    report = out / 'report.json'
    cmd = [str(pathlib.Path(sys.executable).with_name('reframe')), '-c',
           str(root / 'reframe' / 'checks'), '-n', checks,
           *(NIGHT_SELECTION if night else ()), *build_filter(build),
           # untimed: a coverage build at -O0 is slow by design, and a row that misses
           # its reference envelope ran its code all the same
           '--skip-performance-check',
           '-r', '-s', str(out / 'stage'), '-o', str(out / 'output'),
           '--report-file', str(report)]
    if system:
        cmd += ['--system', system]
    cmd += [arg for var in (*(NIGHT_SETVARS if night else ()), *setvars)
            for arg in ('-S', var)]
    env = dict(os.environ, H5REGRESS_MANIFEST=str(manifest_path),
               H5REGRESS_PERFLOG_DIR=str(out / 'perflogs'))   # never a gate's samples
    env.setdefault('RFM_CONFIG_FILES', str(root / 'reframe' / 'config' / 'settings.py'))
    subprocess.run(cmd, env=env, check=False)
    try:
        names = stage_names(report.read_text(), str(report))
    except OSError as err:
        raise CoverageError(f'{report}: {err.strerror} (did ReFrame run?)') from None
    return row_counters(names, out / 'gcda')


def row_counters(names: Mapping[str, str], gcda: pathlib.Path) -> dict[str, pathlib.Path]:
    """{row: its counters' directory} of {stage directory name: row}. The wrappers name
    it after the directory the tool ran in: the stage directory, or the data directory
    ``<stage>-<run id>`` for the checks whose job runs the tool there (h5bench's
    exerciser and metadata). A row whose counters are in several is refused, naming
    them: its coverage would be split."""
    out = {}
    for stage, row in names.items():
        found = [d for d in (gcda / stage, *gcda.glob(f'{glob.escape(stage)}-*')) if d.is_dir()]
        if len(found) > 1:
            raise CoverageError(f'{row}: counters in {len(found)} directories '
                                f'({", ".join(d.name for d in found)}): one run per row')
        if found:
            out[row] = found[0]
    return out


# ------------------------------------------------------------------ command line
def _row_arg(text: str) -> tuple[str, pathlib.Path]:
    # a ReFrame test's name holds '=' (its parameters): the directory is after the last
    name, sep, path = text.rpartition('=')
    if not sep or not name or not path:
        raise CoverageError(f'--row {text!r}: give NAME=DIR (the GCOV_PREFIX of that row\'s run)')
    return name, pathlib.Path(path)


def _write_map(build: str, rows: Mapping[str, pathlib.Path], build_dir: pathlib.Path,
               source: pathlib.Path, output: pathlib.Path, commit: str | None = None,
               reader: str = 'gcov', jobs: int = 1) -> int:
    if not rows:
        raise CoverageError('no row left counters: nothing to map')
    cmap = merge_rows(build, collect_rows(rows, build_dir, source, reader, jobs), commit)
    tmp = output.with_name(output.name + '.tmp')
    tmp.write_text(cmap.to_json())
    os.replace(tmp, output)
    print(f'{output}: {len(rows)} row(s), {len(cmap.extents)} function(s) seen')
    return 0


def _coverage_build(args) -> CoverageBuild:
    return CoverageBuild((args.work or DEFAULT_WORK / f'{args.build}-cov').resolve())


def _commit_of(manifest_path: pathlib.Path, build: str) -> str:
    try:
        return json.loads(manifest_path.read_text())['builds'][build]['hdf5']['commit']
    except OSError as err:
        raise CoverageError(f'--manifest {manifest_path}: {err.strerror}') from None
    except (ValueError, KeyError, TypeError):
        raise CoverageError(f'{manifest_path}: no build {build!r} with an HDF5 commit') from None


def _cmd_build(args) -> int:
    cov = _coverage_build(args)
    build_hdf5(_commit_of(args.manifest, args.build), args.mirror, cov, args.jobs)
    print(f'{cov.prefix}: HDF5 of {args.build} built for coverage (sources {cov.source})')
    return 0


def _cmd_run(args) -> int:
    cov = _coverage_build(args)
    if not cov.prefix.is_dir():
        raise CoverageError(f'{cov.prefix}: no coverage build (h5regress coverage build '
                            f'--build {args.build} first)')
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    path, build = coverage_manifest(args.manifest, args.build, cov.prefix, out)
    rows = run_rows(path, build, args.checks, out, args.system,
                    [*RUN_SETVARS, *args.setvar], args.night)
    return _write_map(build, rows, cov.build_dir, cov.source, args.output or out / 'map.json',
                      _commit_of(args.manifest, args.build), args.reader, args.jobs)


def _cmd_diff(args) -> int:
    cmap = _read_map(args.map)
    good, bad, failing = args.good, args.bad, None
    if args.replay:
        try:
            result = json.loads(args.replay.read_text())
        except OSError as err:
            raise CoverageError(f'--replay {args.replay}: {err.strerror}') from None
        except ValueError as err:
            raise CoverageError(f'--replay {args.replay}: not JSON ({err})') from None
        pair = replay_pair(result, args.mode, str(args.replay))
        good, bad, failing = pair.baseline, pair.candidate, pair.failing
    changes = changes_between(args.repo, good, bad, cmap, args.paths)
    for c in changes.functions:
        print(json.dumps(dataclasses.asdict(c)) if args.json else
              f'{c.file}:{c.name}: {", ".join(c.rows) or "NOT EXERCISED"}')
    summary = sys.stderr if args.json else sys.stdout
    if changes.followed:
        print(f'the map is of {cmap.commit[:12]}, not of {bad[:12]}: the changed lines were '
              f'followed to it; {changes.lost} of them changed again since (not placed)',
              file=summary)
    print(blind_spot_line(changes.functions), file=summary)
    if failing is not None:
        print(failing_rows_line(changes.functions, failing, cmap.rows), file=summary)
    return 0


def _cmd_prone(args) -> int:
    import yaml
    rule, commits = load_prone(args.rule)
    cmap = _read_map(args.map)
    if args.refresh:
        commits = prone_commits(args.repo, args.refresh, rule)
        text = args.rule.read_text(encoding='utf-8')
        head = text[:text.index('commits:')] if 'commits:' in text else text
        args.rule.write_text(head + yaml.safe_dump({'commits': commits}, sort_keys=False,
                                                   width=100))
    lines, _ = prone_report(args.repo, commits, cmap)
    print('\n'.join(lines))
    if args.summary:
        summary = map_summary(cmap, prone_functions(args.repo, commits, cmap),
                              names=not args.counts)
        args.summary.write_text(yaml.safe_dump(summary, sort_keys=False, width=100))
        print(f'{args.summary}: {len(summary["rows"])} row(s)')
    return 0


def _cmd_merge(args) -> int:
    cmap = merge_maps([(str(p), _read_map(p)) for p in args.maps])
    tmp = args.output.with_name(args.output.name + '.tmp')
    tmp.write_text(cmap.to_json())
    os.replace(tmp, args.output)
    print(f'{args.output}: {len(cmap.rows)} row(s) of {len(args.maps)} map(s), '
          f'{len(cmap.extents)} function(s) seen')
    return 0


def _read_map(path: pathlib.Path) -> CoverageMap:
    try:
        return CoverageMap.from_json(path.read_text(), str(path))
    except OSError as err:
        raise CoverageError(f'--map {path}: {err.strerror}') from None


def _add_map_parsers(sub) -> None:
    m = sub.add_parser('map', help='per-row coverage map from the rows\' counters')
    m.add_argument('--build-dir', required=True, type=pathlib.Path,
                   help='the coverage build\'s build tree (its .gcno notes)')
    m.add_argument('--source', required=True, type=pathlib.Path,
                   help='the source tree it compiled (the map\'s paths are relative to it)')
    m.add_argument('-o', '--output', type=pathlib.Path, required=True, help='map file (JSON)')
    m.add_argument('--build', required=True, help='the coverage build\'s id (recorded)')
    m.add_argument('--row', action='append', required=True, metavar='NAME=DIR',
                   help='a row (its ReFrame test name, as the night names it) and the '
                        'GCOV_PREFIX directory of its run (repeat)')
    m.add_argument('--commit', help='the HDF5 commit the coverage build compiled (recorded; '
                                    'diff, prone and the night need it)')
    for p in (m, sub.choices['run']):
        p.add_argument('--reader', choices=('gcov', 'gcovr'), default='gcov',
                       help="what reads the counters: gcov's JSON (default; seconds a row) "
                            'or gcovr (minutes a row under load)')
        p.add_argument('--jobs', type=int, default=os.cpu_count() or 1,
                       help='rows whose counters are read at once (default: the CPUs)')
    g = sub.add_parser('merge', help='one map of several maps of one build and commit (a '
                                     'night\'s map and the map of rows added since)')
    g.add_argument('maps', nargs='+', type=pathlib.Path, help='maps; a row in several keeps '
                                                              'the last one\'s functions')
    g.add_argument('-o', '--output', type=pathlib.Path, required=True, help='merged map')


def _parser():
    from h5regress.cmdline import ArgParser
    ap = ArgParser(prog='h5regress coverage', description='Which HDF5 code each row runs: '
                   'coverage builds, per-row maps, changed functions and blind spots.')
    sub = ap.add_subparsers(dest='action', required=True)
    b = sub.add_parser('build', help='build the HDF5 of a manifest build for coverage')
    b.add_argument('--mirror', required=True, type=pathlib.Path,
                   help='Spack source mirror holding the commit\'s tarball')
    b.add_argument('--jobs', type=int, default=os.cpu_count() or 1)
    r = sub.add_parser('run', help='run checks once against a coverage build and map them')
    r.add_argument('--checks', default='.', help='ReFrame -n regex of the rows (default: '
                                                 'every check)')
    r.add_argument('--night', action='store_true',
                   help='only the default night\'s rows (tagged nightly) of those checks')
    r.add_argument('--out', required=True, type=pathlib.Path,
                   help='directory of the runs, counters and map')
    r.add_argument('--system', help='ReFrame --system')
    r.add_argument('-o', '--output', type=pathlib.Path, help='map file (default OUT/map.json)')
    r.add_argument('-S', '--setvar', action='append', default=[], metavar='VAR=VAL',
                   help=f'passed to ReFrame as -S after {", ".join(RUN_SETVARS)} (one pass '
                        f'of each code path is what a map needs; repeatable)')
    for p in (b, r):
        p.add_argument('--manifest', type=pathlib.Path, default=manifest.default_path(),
                       help='the Spack manifest (default: spack-env/manifest.json)')
        p.add_argument('--build', required=True, help='the manifest\'s build whose commit '
                                                      'is built for coverage, e.g. hdf5-1.15.0')
        p.add_argument('--work', type=pathlib.Path, help='the coverage build\'s directory '
                       '(default ~/.cache/h5regress/coverage/BUILD-cov)')
    _add_map_parsers(sub)
    d = sub.add_parser('diff', help='changed functions between two commits and the rows '
                                    'that execute them')
    d.add_argument('--map', required=True, type=pathlib.Path,
                   help='coverage map of a build of --bad, or of a later (or earlier) commit: '
                        'the changed lines are then followed to it')
    d.add_argument('--repo', required=True, help='git repository of the sources')
    d.add_argument('--good', help='the baseline commit')
    d.add_argument('--bad', help='the candidate commit')
    d.add_argument('--replay', type=pathlib.Path, metavar='RESULT',
                   help='instead of --good/--bad: a replay result (regressions/replays/'
                        'CASE.json), its two commits and the rows that FAILed')
    d.add_argument('--mode', default='regression',
                   help='the replay of RESULT to read (default regression; fix, control)')
    d.add_argument('--paths', nargs='+', default=['src'],
                   help="the repository's paths to diff (default: src, HDF5's library; a "
                        "public snapshot's missing test-data blobs stay out of it)")
    d.add_argument('--json', action='store_true', help='JSON lines instead of text')
    p = sub.add_parser('prone', help='the regression-prone functions a map\'s rows execute')
    p.add_argument('--map', required=True, type=pathlib.Path, help='coverage map (with its '
                   'commit: h5regress coverage run)')
    p.add_argument('--repo', required=True, help='git repository of HDF5\'s history')
    p.add_argument('--rule', type=pathlib.Path, default=PRONE_FILE,
                   help='the rule and commits (default ci/regression-prone.yaml)')
    p.add_argument('--summary', type=pathlib.Path, help='also write the map\'s summary '
                   '(YAML: per row its number of functions and its regression-prone ones)')
    p.add_argument('--counts', action='store_true', help='the summary gives each row\'s '
                   'number of regression-prone functions, not their names (many rows)')
    p.add_argument('--refresh', metavar='HEAD', help='find the commits anew by the rule in '
                   'the first-parent history of HEAD and rewrite the file\'s list')
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    """Exit codes: 0 done, 4 bad input or a failed step (named on stderr), 64 usage."""
    from h5regress.cmdline import EXIT_USAGE, parse_args
    args, code = parse_args(_parser(), argv)
    if args is None:
        return code
    commits = (args.good, args.bad) if args.action == 'diff' else ()
    if commits and (all(commits) == bool(args.replay) or any(commits) != all(commits)):
        print('h5regress coverage diff: error: give --good and --bad, or --replay RESULT',
              file=sys.stderr)
        return EXIT_USAGE
    try:
        if args.action == 'map':
            return _write_map(args.build, dict(map(_row_arg, args.row)), args.build_dir,
                              args.source, args.output, args.commit, args.reader, args.jobs)
        return {'build': _cmd_build, 'run': _cmd_run, 'diff': _cmd_diff, 'prone': _cmd_prone,
                'merge': _cmd_merge}[args.action](args)
    except CoverageError as err:
        print(f'h5regress coverage: error: {err}', file=sys.stderr)
        return 4
