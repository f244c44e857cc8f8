"""MACSio parser against the project's own real outputs in tests/fixtures/macsio (own-*,
fail-own-*: recorded by tests/fixtures/record-tools.sh, numbers checked by hand), and
:func:`check_files` against real runs whose log lines and file listing are inline.
Extra, when present: the same every-case tests over ../shared/fixtures/macsio."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from h5regress.parsers import macsio, parser_for
from h5regress.parsers.base import ParseError, RunFailed
from reframe_run import FIXTURES as SHARED_FIXTURES, OWN_FIXTURES

QUOTED = Path(__file__).resolve().parent / 'fixtures' / 'macsio' / 'quoted'
OWN = OWN_FIXTURES / 'macsio'
SHARED = SHARED_FIXTURES / 'macsio'
extra = pytest.mark.shared_fixtures      # reads ../shared/fixtures: deselected without it

OWN_CASES = sorted(p.name for p in OWN.iterdir() if p.name.startswith(('own-', 'fail-own-')))
SHARED_CASES = sorted(p.name for p in SHARED.iterdir() if p.is_dir()) if SHARED.is_dir() else []
GI = 1024.0            # MiB per GiB
MI = 1024.0 * 1024.0   # bytes per MiB


def case_dir(case: str) -> Path:
    """An own case (tests/fixtures/macsio) or, for the extras, a shared one."""
    return OWN / case if case.startswith(('own-', 'fail-own-')) else SHARED / case


def files_of(case: str) -> dict[str, str]:
    root = case_dir(case)
    return {str(p.relative_to(root)): p.read_text(errors='replace')
            for p in root.rglob('*') if p.is_file() and macsio.wanted(str(p.relative_to(root)))}


def command_of(case: str) -> str:
    """The exact command line from the case's README."""
    readme = (case_dir(case) / 'README.md').read_text()
    return re.search(r'```\n(.*?)\n```', readme, re.S).group(1).strip()


def written_of(case: str) -> dict[str, int]:
    """Data files and sizes from the case's ``ls -l`` listing."""
    out = {}
    for line in (case_dir(case) / 'files.txt').read_text().splitlines():
        parts = line.split()
        if len(parts) >= 7 and parts[0].startswith('-'):
            out[parts[-1]] = int(parts[4])
    return out


def one(case: str, with_command: bool = True) -> macsio.MacsioRun:
    runs = macsio.parse(files_of(case), command=command_of(case) if with_command else None)
    assert len(runs) == 1
    return runs[0]


def value(run, metric: str, operation: str = 'write') -> float:
    return run.measurement(operation, metric).value


def cases(names, failures):
    return [c for c in names if c.startswith('fail-') == failures]


def test_registry_finds_module():
    assert parser_for('macsio') is macsio


def test_wanted():
    assert macsio.wanted('macsio-log.log') and macsio.wanted('x/macsio-timings.log')
    assert macsio.wanted('stderr.txt') and macsio.wanted('rfm_job.err')
    assert macsio.wanted('rfm_job.sh')
    assert not macsio.wanted('macsio_hdf5_000.h5') and not macsio.wanted('README.md')


@pytest.mark.parametrize('case', cases(OWN_CASES, True) + [
    pytest.param(c, marks=extra) for c in cases(SHARED_CASES, True)])
def test_every_failure_fixture_is_run_failed(case):
    with pytest.raises(RunFailed):
        macsio.parse(files_of(case), command=command_of(case))
    with pytest.raises(RunFailed):          # without the command line too
        macsio.parse(files_of(case))


@pytest.mark.parametrize('case', cases(OWN_CASES, False) + [
    pytest.param(c, marks=extra) for c in cases(SHARED_CASES, False)])
def test_every_success_fixture_parses_and_matches_its_files(case):
    run = one(case)
    assert run.tool == 'macsio'
    assert run.params['num_ranks'] == 2
    assert len(run.measurement('write', 'bw').samples) == run.params['num_dumps']
    assert value(run, 'bw_dump_min') <= value(run, 'bw_dump_max')
    assert macsio.check_files(run, written_of(case)) == []
    records = run.to_records(run_id='r1', timestamp='2026-11-21T00:00:00+00:00')
    assert {r.metric for r in records} == {'bw', 'bw_dump_min', 'bw_dump_max', 'bw_summed',
                                           'size', 'time'}
    assert all(r.unit in ('MiB/s', 'B', 's') for r in records)


def test_own_cases_cover_the_modes_and_failures():
    assert {'own-hdf5-mif2-p1M-d3', 'own-hdf5-sif1-p1M-d3', 'own-hdf5-sif1-indep-p1M-d3',
            'own-hdf5-miffpp-p1M-d3', 'own-miftmpl-mif2-p2M-d2'} <= set(OWN_CASES)
    assert len(cases(OWN_CASES, True)) >= 4


def test_mif_numbers_by_hand():
    run = one('own-hdf5-mif2-p1M-d3')
    # Total Bytes: 113.6872 Mi; Last finisher - First starter = 597.3211 msecs;
    # BW = 190.3284 Mi/sec; Summed BW: 248.2248 Mi/sec
    assert value(run, 'bw') == pytest.approx(190.3284)
    assert value(run, 'size') == round(113.6872 * MI) == 119209669
    assert value(run, 'time') == pytest.approx(0.5973211)
    assert value(run, 'bw_summed') == pytest.approx(248.2248)
    # every dump: both ranks 18.9479 Mi; dump 00 slowest rank 1, 309.4297 msecs;
    # dump 02 slowest rank 0, 135.5748 msecs (the fastest dump)
    assert value(run, 'bw_dump_min') == pytest.approx(2 * 18.9479 / 0.3094297)
    assert value(run, 'bw_dump_max') == pytest.approx(2 * 18.9479 / 0.1355748)
    assert run.measurement('write', 'bw').samples == pytest.approx(
        [2 * 18.9479 / t for t in (0.3094297, 0.1823098, 0.1355748)])
    p = run.params
    assert (p['interface'], p['parallel_file_mode'], p['file_count']) == ('hdf5', 'MIF', 2)
    assert p['part_size'] == 1024 * 1024 and p['num_dumps'] == 3
    assert p['avg_num_parts'] == 1.0 and p['vars_per_part'] == 20


def test_seconds_unit_is_normalised():
    run = one('own-hdf5-sif1-p1M-d3')
    # ... Last finisher - First starter =   6.5188 secs; BW =  17.4399 Mi/sec
    assert value(run, 'time') == pytest.approx(6.5188)
    assert value(run, 'bw') == pytest.approx(17.4399)
    miftmpl = one('own-miftmpl-mif2-p2M-d2')
    assert value(miftmpl, 'time') == pytest.approx(26.0737)
    # dump 00: rank 1 slowest at 13.1418 secs
    assert miftmpl.measurement('write', 'bw').samples[0] == pytest.approx(2 * 37.9303 / 13.1418)


def test_plugin_args_and_modes():
    assert one('own-hdf5-sif1-indep-p1M-d3').params['collective'] is False
    sif = one('own-hdf5-sif1-p1M-d3').params
    assert sif['collective'] is True and sif['parallel_file_mode'] == 'SIF'
    assert sif['file_count'] == 1 and sif['compression'] is None
    fpp = one('own-hdf5-miffpp-p1M-d3').params
    assert fpp['parallel_file_mode'] == 'MIFFPP' and fpp['file_count'] is None
    assert one('own-hdf5-mif2-p1M-d3').params['part_size'] == 1024 * 1024
    assert one('own-miftmpl-mif2-p2M-d2').params['interface'] == 'miftmpl'


def test_params_from_compression_command():
    params, prov = macsio.params_from_args(macsio.command_args(
        'srun -n 4 /opt/macsio --interface hdf5 --parallel_file_mode SIF 1 --part_size 10K '
        '--filebase /scratch/x/run --plugin_args --compression gzip level=9 --show_errors'))
    assert params['compression'] == 'gzip' and params['compression_params'] == 'level=9'
    assert params['collective'] is True and params['part_size'] == 10240
    assert prov == {'filebase': '/scratch/x/run', 'show_errors': True}


def test_without_command_only_what_the_output_says():
    run = one('own-hdf5-sif1-p1M-d3', with_command=False)
    assert run.params == {'interface': 'hdf5', 'parallel_file_mode': 'SIF',
                          'num_ranks': 2, 'num_dumps': 3}
    assert value(run, 'bw') == pytest.approx(17.4399)


def test_command_from_job_script():
    files = files_of('own-hdf5-mif2-p1M-d3')
    files['rfm_job.sh'] = '#!/bin/bash\ncd /x\n' + command_of('own-hdf5-mif2-p1M-d3') + '\n'
    run = macsio.parse(files)[0]
    assert run.params['file_count'] == 2 and run.params['part_size'] == 1024 * 1024


def test_missing_directory_fails_although_macsio_exits_0_with_a_bandwidth():
    case = 'fail-own-sif-nonexistent-dir'
    assert '- Exit code: 0' in (case_dir(case) / 'README.md').read_text()
    assert 'BW =  29.7434 Mi/sec' in files_of(case)['macsio-log.log']
    with pytest.raises(RunFailed, match='errno 2 .No such file or directory'):
        macsio.parse(files_of(case))


def test_crash_before_log_and_unknown_interface():
    with pytest.raises(RunFailed, match='unknown argument'):
        macsio.parse(files_of('fail-own-miffpp-missing-count'))
    files = files_of('fail-own-unknown-interface')
    del files['stderr.txt']
    with pytest.raises(RunFailed, match='Total Bytes'):
        macsio.parse(files)


def test_not_macsio_output():
    with pytest.raises(ParseError):
        macsio.parse({'notes.md': 'hello'})
    with pytest.raises(ParseError) as err:
        macsio.parse({'macsio-log.log': 'just text\n'})
    assert not isinstance(err.value, RunFailed)


def test_fewer_dumps_than_asked_fails():
    cmd = command_of('own-hdf5-mif2-p1M-d3').replace('--num_dumps 3', '--num_dumps 4')
    with pytest.raises(RunFailed, match='3 dumps logged'):
        macsio.parse(files_of('own-hdf5-mif2-p1M-d3'), command=cmd)


def test_check_files_finds_problems():
    run = one('own-hdf5-mif2-p1M-d3')
    written = written_of('own-hdf5-mif2-p1M-d3')
    missing = {k: v for k, v in written.items() if k != 'macsio_hdf5_00001_002.h5'}
    assert any('expected 2 file(s) per dump' in p for p in macsio.check_files(run, missing))
    shrunk = dict(written, **{'macsio_hdf5_00000_001.h5': 1000})
    problems = macsio.check_files(run, shrunk)
    assert any('more than macsio_hdf5_00000_001.h5 has (1000 B)' in p for p in problems)
    empty = dict(written, **{'macsio_hdf5_00000_001.h5': 0})
    assert any('empty file' in p for p in macsio.check_files(run, empty))
    assert macsio.check_files(run, {'macsio-log.log': 24576})[0].startswith('no data files')


def test_wrapped_log_warns():
    """A rank section that wrapped (oldest dump lines overwritten) keeps the totals."""
    text = (OWN / 'own-hdf5-mif2-p1M-d3' / 'macsio-log.log').read_text()
    lines = text.splitlines()
    # rank 1's first dump line overwritten by a later one, as the circular log does
    i = next(k for k, ln in enumerate(lines) if 'Processor 000001' in ln)
    first = next(k for k in range(i, len(lines)) if 'Dump 00 BW' in lines[k])
    last = next(k for k in range(i, len(lines)) if 'Dump 02 BW' in lines[k])
    lines[first] = lines[last].replace('Dump 02', 'Dump 03')
    run = macsio.parse({'macsio-log.log': '\n'.join(lines)})[0]
    assert any('wrapped' in w for w in run.warnings)
    assert value(run, 'bw') == pytest.approx(190.3284)


# ----------------------------------------------------------------------------- shared files
# Real runs (MACSio from LLNL/MACSio master, HDF5 1.10 from Debian, Open MPI, one node):
# the log's dump and total lines (padding and other lines dropped) and ``ls -l`` of the
# data directory. MACSio stat()s a dump's files as soon as the rank is done with them.

# mpirun -np 2 macsio --interface hdf5 --parallel_file_mode MIF 1 --part_size 256K
#   --num_dumps 4 --filebase DATA/macsio --log_line_cnt 80 64
HDF5_MIF1_CMD = ('mpirun -np 2 /opt/iotools/macsio/bin/macsio --interface hdf5 '
                 '--parallel_file_mode MIF 1 --part_size 256K --num_dumps 4 '
                 '--filebase /data/macsio --log_line_cnt 80 64')
HDF5_MIF1_LOG = (QUOTED / 'hdf5-mif1-log.txt').read_text()
HDF5_MIF1_FILES = {f'macsio_hdf5_00000_00{d}.h5': 9919008 for d in range(4)}

# mpirun -np 4 macsio --interface miftmpl --parallel_file_mode MIF 2 --part_size 64K
#   --num_dumps 2 --filebase DATA/macsio --log_line_cnt 72 64
MIFTMPL_MIF2_CMD = ('mpirun -np 4 /opt/iotools/macsio/bin/macsio --interface miftmpl '
                    '--parallel_file_mode MIF 2 --part_size 64K --num_dumps 2 '
                    '--filebase /data/macsio --log_line_cnt 72 64')
MIFTMPL_MIF2_LOG = (QUOTED / 'miftmpl-mif2-log.txt').read_text()
MIFTMPL_MIF2_FILES = {
    'macsio_json_00000_000.json': 7845403, 'macsio_json_00000_001.json': 7845403,
    'macsio_json_00001_000.json': 7742937, 'macsio_json_00001_001.json': 7742937,
    'macsio_json_root_000.json': 496, 'macsio_json_root_001.json': 496,
}


def stat_of(run, rank: int, dump: int) -> float:
    return next(d.stat_bytes for d in run.dumps if (d.rank, d.dump) == (rank, dump))


def problems_with(run, files: dict[str, int], name: str, size: int) -> list[str]:
    """What :func:`macsio.check_files` finds when ``name`` of ``files`` has ``size`` bytes."""
    return macsio.check_files(run, {**files, name: size})


def test_mif_group_is_macsios():
    """MACSIO_MIF_RankOfGroup: runs of consecutive ranks, the first groups one larger."""
    assert [macsio.mif_group(r, 4, 2) for r in range(4)] == [0, 0, 1, 1]
    assert [macsio.mif_group(r, 5, 2) for r in range(5)] == [0, 0, 0, 1, 1]
    assert [macsio.mif_group(r, 7, 3) for r in range(7)] == [0, 0, 0, 1, 1, 2, 2]
    assert [macsio.mif_group(r, 3, 3) for r in range(3)] == [0, 1, 2]
    assert [macsio.mif_group(r, 3, 1) for r in range(3)] == [0, 0, 0]


def test_mif_ranks_sharing_a_file_see_it_growing():
    """Two ranks take turns in one file: rank 0 looks before rank 1 has written."""
    run = macsio.parse({macsio.LOG_NAME: HDF5_MIF1_LOG}, command=HDF5_MIF1_CMD)[0]
    assert stat_of(run, 0, 0) == 7.75 * MI < 9919008       # a partial file
    assert stat_of(run, 1, 0) == pytest.approx(9919008, abs=53)
    assert macsio.check_files(run, HDF5_MIF1_FILES) == []
    # the last writer saw the final size: a file changed afterwards is a problem
    assert problems_with(run, HDF5_MIF1_FILES, 'macsio_hdf5_00000_002.h5', 9919008 + 4096) == [
        'macsio_hdf5_00000_002.h5 has 9923104 B, but the rank(s) writing it saw at most '
        '9919005 B after dump 2']
    # no rank can have seen more than the file holds in the end
    problems = problems_with(run, HDF5_MIF1_FILES, 'macsio_hdf5_00000_000.h5', 9000000)
    assert any(p.startswith('rank 1 saw 9919005 B on disk after dump 0, more than '
                            'macsio_hdf5_00000_000.h5 has (9000000 B)') for p in problems)
    assert not any(p.startswith('rank 0 ') for p in problems)     # 7.75 Mi < 9000000 B


def test_miftmpl_ranks_see_the_root_file_being_written():
    """miftmpl: ranks stat their data file and the root file, which all ranks write in
    turn; only the last rank sees both complete."""
    run = macsio.parse({macsio.LOG_NAME: MIFTMPL_MIF2_LOG}, command=MIFTMPL_MIF2_CMD)[0]
    # rank 0 (first in root) saw its data file and part of the root file
    assert 7845403 < stat_of(run, 0, 0) < 7845403 + 496 - 53
    assert stat_of(run, 3, 0) == pytest.approx(7742937 + 496, abs=53)
    assert macsio.check_files(run, MIFTMPL_MIF2_FILES) == []
    # a root file that grew after the last rank looked
    assert problems_with(run, MIFTMPL_MIF2_FILES, 'macsio_json_root_001.json', 496 + 400) == [
        'macsio_json_00001_001.json and the root file of dump 1 have 7743833 B, but rank 3, '
        'the last to write, saw 7743419 B after dump 1']
    # a data file smaller than what its ranks saw
    problems = problems_with(run, MIFTMPL_MIF2_FILES, 'macsio_json_00000_000.json', 7000000)
    assert [p.split(' saw')[0] for p in problems] == ['rank 0', 'rank 1']
    assert 'more than macsio_json_00000_000.json and the root file of dump 0 have ' \
           '(7000496 B)' in problems[0]


def test_miftmpl_one_file_two_ranks_from_the_check():
    """As seen by the macsio check (miftmpl, MIF 1, 2 ranks): rank 0 saw 15.0963 Mi (to
    52 B), the data file had 15829383 B and the root file 418 B."""
    run = macsio.MacsioRun(
        tool='macsio',
        params={'interface': 'miftmpl', 'parallel_file_mode': 'MIF', 'file_count': 1,
                'num_ranks': 2, 'num_dumps': 1},
        provenance={}, measurements=[],
        dumps=[macsio.DumpLine(0, 0, 1.0, 1.0, 15.0963 * MI, 0.00005 * MI),
               macsio.DumpLine(1, 0, 1.0, 1.0, round(15829801 / MI, 4) * MI, 0.00005 * MI)])
    files = {'macsio_json_00000_000.json': 15829383, 'macsio_json_root_000.json': 418}
    assert 15.0963 * MI > 15829383 + 52        # more than the data file alone
    assert macsio.check_files(run, files) == []


@pytest.mark.parametrize('size, decimal, expected', [
    ('80000', False, 80000), ('2M', False, 2 * 1024 ** 2), ('10K', False, 10240),
    ('1k', False, 1024), ('3G', False, 3 * 1024 ** 3), ('10B', False, 10), ('1.5K', False, 1536),
    ('2M', True, 2_000_000), ('10K', True, 10_000), ('80000', True, 80000)])
def test_part_size_spellings(size, decimal, expected):
    """``--part_size``: binary prefixes, decimal with ``--units_prefix_system decimal``."""
    args = ['--part_size', size] + (['--units_prefix_system', 'decimal'] if decimal else [])
    params, _ = macsio.params_from_args(args)
    assert params['part_size'] == expected


def test_part_size_that_is_no_size():
    with pytest.raises(ParseError, match='part size'):
        macsio.params_from_args(['--part_size', 'big'])


def test_log_units_binary_and_decimal():
    """``Mi``/``Gi`` are powers of 1024; with decimal units MACSio prints ``Mb``/``Gb``."""
    log = macsio.parse_log(
        '-----Processor 000000-----\n'
        'Info:"macsio_main.c":556:Dump 00 BW:  37.9303 Mb/ 15.7877 msecs =   2.3462 Gb/sec:::\n'
        'Info:"macsio_main.c":561:Dump 00 Stat BW:  37.9321 Mi/ 15.7877 msecs =   1.0 Gi/sec:::\n'
        'Info:"macsio_main.c":587:Overall BW: 151.7211 Kb/181.7016 usecs = 835.0019 Mb/sec:::\n'
        'Info:"macsio_main.c":607:Summed  BW:   1.5568 Gb/sec:::\n'
        'Info:"macsio_main.c":609:Total Bytes: 303.4423 Mi; Last finisher - First starter = '
        '218.3613 msecs; BW =   1.3571 Gi/sec:::\n'
        'Info:"macsio_main.c":610:Dump 01 BW:  12.0000 b/  1.0000 secs =  12.0000 b/sec:::\n')
    dump = log.dumps[(0, 0)]
    assert dump.nbytes == pytest.approx(37.9303e6) and dump.seconds == pytest.approx(0.0157877)
    assert dump.stat_bytes == pytest.approx(37.9321 * MI)
    assert dump.stat_tol == pytest.approx(0.00005 * MI)
    assert log.overall[0] == pytest.approx((151.7211e3, 181.7016e-6))
    assert log.summed == pytest.approx(1.5568e9 / MI)
    assert log.total == pytest.approx((303.4423 * MI, 0.2183613, 1.3571 * GI))
    assert log.dumps[(0, 1)].nbytes == 12.0 and log.dumps[(0, 1)].seconds == 1.0
    with pytest.raises(ParseError, match="unknown size unit 'Qi'"):
        macsio.parse_log('-----Processor 000000-----\n'
                         'Info:"macsio_main.c":587:Overall BW: 1.0 Qi/1.0 secs = 1.0 Mi/sec:::\n')
    with pytest.raises(ParseError, match="unknown bandwidth unit 'Qi/s'"):
        macsio.parse_log('-----Processor 000000-----\n'
                         'Info:"macsio_main.c":609:Summed  BW:   1.5568 Qi/sec:::\n')


def test_check_files_messages():
    """Every kind of problem, word for word (one real MIF 2 run, its listing altered):
    6 files of 19872208 B (files.txt), Total Bytes 113.6872 Mi = 119209669 B, and each
    rank's Stat line after a dump says 18.9516 Mi = 19872193 B."""
    run = one('own-hdf5-mif2-p1M-d3')
    written = written_of('own-hdf5-mif2-p1M-d3')
    assert set(written.values()) == {24576, 4202, 19872208}
    claim = 'MACSio claims 119209669 B'
    missing = {k: v for k, v in written.items() if k != 'macsio_hdf5_00001_002.h5'}
    assert macsio.check_files(run, missing) == [
        'expected 2 file(s) per dump, found 1 for dump 2',
        f'data files hold {5 * 19872208} B, {claim}']
    assert macsio.check_files(one('own-hdf5-mif2-p1M-d3', with_command=False), missing) == [
        'dumps have different file counts: 2 for dump 0, 2 for dump 1, 1 for dump 2',
        f'data files hold {5 * 19872208} B, {claim}']
    extra = dict(written, **{'macsio_hdf5_00000_003.h5': 5, 'macsio_hdf5_00001_003.h5': 5})
    assert macsio.check_files(run, extra) == ['files for unexpected dump(s) 3']
    no_first = {k: v for k, v in written.items() if not k.endswith('_000.h5')}
    assert macsio.check_files(run, no_first) == [
        'no files for dump(s) 0 of 3', f'data files hold {4 * 19872208} B, {claim}']
    empty = dict(written, **{'macsio_hdf5_00000_001.h5': 0})
    assert macsio.check_files(run, empty) == [
        'empty file(s): macsio_hdf5_00000_001.h5',
        'rank 0 saw 19872193 B on disk after dump 1, more than macsio_hdf5_00000_001.h5 '
        'has (0 B)',
        'macsio_hdf5_00000_001.h5 has 0 B, but the rank(s) writing it saw at most 19872193 B '
        'after dump 1',
        f'data files hold {5 * 19872208} B, {claim}']
    assert macsio.check_files(run, {'macsio-log.log': 24576}) == [
        'no data files named macsio_hdf5_* among the 1 files written']


def test_check_files_without_a_root_file_compares_the_data_file_alone():
    run = macsio.parse({macsio.LOG_NAME: MIFTMPL_MIF2_LOG}, command=MIFTMPL_MIF2_CMD)[0]
    files = {k: v for k, v in MIFTMPL_MIF2_FILES.items() if k != 'macsio_json_root_001.json'}
    assert macsio.check_files(run, files) == [
        'rank 0 saw 7845655 B on disk after dump 1, more than macsio_json_00000_001.json '
        'has (7845403 B)',
        'rank 1 saw 7845865 B on disk after dump 1, more than macsio_json_00000_001.json '
        'has (7845403 B)',
        'macsio_json_00000_001.json has 7845403 B, but the rank(s) writing it saw at most '
        '7845865 B after dump 1',
        'rank 2 saw 7743419 B on disk after dump 1, more than macsio_json_00001_001.json '
        'has (7742937 B)',
        'rank 3 saw 7743419 B on disk after dump 1, more than macsio_json_00001_001.json '
        'has (7742937 B)',
        'macsio_json_00001_001.json has 7742937 B, but the rank(s) writing it saw at most '
        '7743419 B after dump 1']


def test_stat_sizes_of_files_from_2_gib_are_not_compared():
    """MACSio sums st_size into an int: its Stat sizes of such files are wrapped."""
    run = macsio.parse({macsio.LOG_NAME: HDF5_MIF1_LOG}, command=HDF5_MIF1_CMD)[0]
    assert macsio.check_files(run, {k: v + 2 ** 31 for k, v in HDF5_MIF1_FILES.items()}) == []


def test_each_empty_file_is_named():
    run = one('own-hdf5-mif2-p1M-d3')
    empty = dict(written_of('own-hdf5-mif2-p1M-d3'),
                 **{'macsio_hdf5_00001_000.h5': 0, 'macsio_hdf5_00000_002.h5': 0})
    problems = macsio.check_files(run, empty)
    assert problems[:2] == ['empty file(s): macsio_hdf5_00000_002.h5',
                            'empty file(s): macsio_hdf5_00001_000.h5']


def test_figures_are_page_cache():
    """MACSio times no flush: its bandwidth says so (the check adds a timed flush)."""
    from h5regress import durability
    run = one('own-hdf5-mif2-p1M-d3')
    assert durability.write_flush_of(run.provenance, 'write', 'bw') == 'none'
