"""MACSio parser against the real outputs in ../shared/fixtures/macsio (numbers checked by hand)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from h5regress.parsers import macsio, parser_for
from h5regress.parsers.base import ParseError, RunFailed

FIXTURES = Path(__file__).resolve().parents[1].parent / 'shared' / 'fixtures' / 'macsio'
pytestmark = pytest.mark.skipif(not FIXTURES.is_dir(),
                                reason=f'MACSio fixtures not found at {FIXTURES}')

CASES = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir()) if FIXTURES.is_dir() else []
FAIL_CASES = [c for c in CASES if c.startswith('fail-')]
OK_CASES = [c for c in CASES if not c.startswith('fail-')]
GI = 1024.0            # MiB per GiB
MI = 1024.0 * 1024.0   # bytes per MiB


def files_of(case: str) -> dict[str, str]:
    root = FIXTURES / case
    return {str(p.relative_to(root)): p.read_text(errors='replace')
            for p in root.rglob('*') if p.is_file() and macsio.wanted(str(p.relative_to(root)))}


def command_of(case: str) -> str:
    """The exact command line from the case's README."""
    readme = (FIXTURES / case / 'README.md').read_text()
    return re.search(r'```\n(.*?)\n```', readme, re.S).group(1).strip()


def written_of(case: str) -> dict[str, int]:
    """Data files and sizes from the case's ``ls -la`` listing."""
    out = {}
    for line in (FIXTURES / case / 'files.txt').read_text().splitlines():
        parts = line.split()
        if len(parts) >= 9 and parts[0].startswith('-'):
            out[parts[-1]] = int(parts[4])
    return out


def one(case: str, with_command: bool = True) -> macsio.MacsioRun:
    runs = macsio.parse(files_of(case), command=command_of(case) if with_command else None)
    assert len(runs) == 1
    return runs[0]


def value(run, metric: str, operation: str = 'write') -> float:
    return run.measurement(operation, metric).value


def test_registry_finds_module():
    assert parser_for('macsio') is macsio


def test_wanted():
    assert macsio.wanted('macsio-log.log') and macsio.wanted('x/macsio-timings.log')
    assert macsio.wanted('stderr.txt') and macsio.wanted('rfm_job.err')
    assert macsio.wanted('rfm_job.sh')
    assert not macsio.wanted('macsio_hdf5_000.h5') and not macsio.wanted('README.md')


@pytest.mark.parametrize('case', FAIL_CASES)
def test_every_failure_fixture_is_run_failed(case):
    with pytest.raises(RunFailed):
        macsio.parse(files_of(case), command=command_of(case))
    with pytest.raises(RunFailed):          # without the command line too
        macsio.parse(files_of(case))


@pytest.mark.parametrize('case', OK_CASES)
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


def test_mif_numbers_by_hand():
    run = one('hdf5-mif2-p2M-d4')
    # Total Bytes: 303.4423 Mi; Last finisher - First starter = 218.3613 msecs; BW = 1.3571 Gi/sec
    assert value(run, 'bw') == pytest.approx(1.3571 * GI)
    assert value(run, 'size') == round(303.4423 * MI) == 318182313
    assert value(run, 'time') == pytest.approx(0.2183613)
    assert value(run, 'bw_summed') == pytest.approx(1.5568 * GI)
    # dump 03: both ranks 37.9303 Mi, slowest 97.8001 msecs; dump 01: slowest 14.8744 msecs
    assert value(run, 'bw_dump_min') == pytest.approx(2 * 37.9303 / 0.0978001)
    assert value(run, 'bw_dump_max') == pytest.approx(2 * 37.9303 / 0.0148744)
    assert run.measurement('write', 'bw').samples[0] == pytest.approx(2 * 37.9303 / 0.0536508)
    p = run.params
    assert (p['interface'], p['parallel_file_mode'], p['file_count']) == ('hdf5', 'MIF', 2)
    assert p['part_size'] == 2 * 1024 * 1024 and p['num_dumps'] == 4
    assert p['avg_num_parts'] == 1.0 and p['vars_per_part'] == 20


def test_seconds_unit_is_normalised():
    run = one('hdf5-sif1-coll-p2M-d4-hdf5-1.14.6')
    # ... Last finisher - First starter =   2.4139 secs; BW = 125.7085 Mi/sec
    assert value(run, 'time') == pytest.approx(2.4139)
    assert value(run, 'bw') == pytest.approx(125.7085)
    miftmpl = one('miftmpl-mif2-p2M-d4')
    assert value(miftmpl, 'time') == pytest.approx(13.3534)
    # dump 00: rank 1 slowest at 3.3293 secs
    assert miftmpl.measurement('write', 'bw').samples[0] == pytest.approx(2 * 37.9303 / 3.3293)


def test_plugin_args_and_modes():
    assert one('hdf5-sif1-indep-p2M-d4').params['collective'] is False
    sif = one('hdf5-sif1-coll-p2M-d4').params
    assert sif['collective'] is True and sif['parallel_file_mode'] == 'SIF'
    assert sif['file_count'] == 1 and sif['compression'] is None
    fpp = one('hdf5-miffpp-p2M-d4').params
    assert fpp['parallel_file_mode'] == 'MIFFPP' and fpp['file_count'] is None
    assert one('hdf5-mif2-d3').params['part_size'] == 1024 * 1024
    assert one('miftmpl-mif2-p2M-d4').params['interface'] == 'miftmpl'


def test_params_from_compression_command():
    params, prov = macsio.params_from_args(macsio.command_args(
        'srun -n 4 /opt/macsio --interface hdf5 --parallel_file_mode SIF 1 --part_size 10K '
        '--filebase /scratch/x/run --plugin_args --compression gzip level=9 --show_errors'))
    assert params['compression'] == 'gzip' and params['compression_params'] == 'level=9'
    assert params['collective'] is True and params['part_size'] == 10240
    assert prov == {'filebase': '/scratch/x/run', 'show_errors': True}


def test_without_command_only_what_the_output_says():
    run = one('hdf5-sif1-coll-p2M-d4', with_command=False)
    assert run.params == {'interface': 'hdf5', 'parallel_file_mode': 'SIF',
                          'num_ranks': 2, 'num_dumps': 4}
    assert value(run, 'bw') == pytest.approx(352.5760)


def test_command_from_job_script():
    files = files_of('hdf5-mif2-p2M-d4')
    files['rfm_job.sh'] = '#!/bin/bash\ncd /x\n' + command_of('hdf5-mif2-p2M-d4') + '\n'
    run = macsio.parse(files)[0]
    assert run.params['file_count'] == 2 and run.params['part_size'] == 2 * 1024 * 1024


def test_missing_directory_fails_although_bandwidth_is_plausible():
    with pytest.raises(RunFailed, match='errno 2 .No such file or directory'):
        macsio.parse(files_of('fail-sif-nonexistent-dir'))


def test_crash_before_log_and_unknown_interface():
    with pytest.raises(RunFailed, match='unknown argument'):
        macsio.parse(files_of('fail-miffpp-missing-count'))
    files = files_of('fail-unknown-interface')
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
    cmd = command_of('hdf5-mif2-p2M-d4').replace('--num_dumps 4', '--num_dumps 5')
    with pytest.raises(RunFailed, match='4 dumps logged'):
        macsio.parse(files_of('hdf5-mif2-p2M-d4'), command=cmd)


def test_check_files_finds_problems():
    run = one('hdf5-mif2-p2M-d4')
    written = written_of('hdf5-mif2-p2M-d4')
    missing = {k: v for k, v in written.items() if k != 'macsio_hdf5_00001_003.h5'}
    assert any('expected 2 file(s) per dump' in p for p in macsio.check_files(run, missing))
    shrunk = dict(written, **{'macsio_hdf5_00000_002.h5': 1000})
    problems = macsio.check_files(run, shrunk)
    assert any('macsio_hdf5_00000_002.h5 has 1000 B' in p for p in problems)
    empty = dict(written, **{'macsio_hdf5_00000_002.h5': 0})
    assert any('empty file' in p for p in macsio.check_files(run, empty))
    assert macsio.check_files(run, {'macsio-log.log': 24576})[0].startswith('no data files')


def test_wrapped_log_warns():
    """A rank section that wrapped (oldest dump lines overwritten) keeps the totals."""
    text = (FIXTURES / 'hdf5-mif2-p2M-d4' / 'macsio-log.log').read_text()
    lines = text.splitlines()
    # rank 1's first dump line overwritten by a later one, as the circular log does
    i = next(k for k, ln in enumerate(lines) if 'Processor 000001' in ln)
    lines[i + 1] = lines[i + 7].replace('Dump 03', 'Dump 04')
    run = macsio.parse({'macsio-log.log': '\n'.join(lines)})[0]
    assert any('wrapped' in w for w in run.warnings)
    assert value(run, 'bw') == pytest.approx(1.3571 * GI)
