"""h5regress refs: envelopes from history, ReFrame external reference files, round trip."""

import math
import os
import random
import subprocess

import pytest
import yaml

from h5regress import gate, gateconfig, history, refs, stats
from h5regress.record import Record

BASE, CAND = 'hdf5-1.14.6', 'hdf5-develop'

EXISTING = """\
# hand-written
ior_check:
  $index: ['$partition', 'case']
  'local:default':
    '.*':
      write_bw_mean: [300, -0.95, 30.0, 'MiB/s']
    'MPIIO-collective-ssf':
      write_bw_mean: ['$xfail', 'known issue', [500, -0.1, 0.1, 'MiB/s']]
  'example-lustre:compute':
    'MPIIO-collective-ssf':
      write_bw_mean: [21193, -0.15, 0.5, 'MiB/s']
other_check:
  'local:default':
    time: [10, -0.1, 0.1, 's']
"""


def make_history(root, nights=12, level=1000.0, cv=0.08):
    rng = random.Random(1)
    s = math.sqrt(math.log1p(cv * cv))
    cfg = gate.load_config()
    all_values = []
    for k in range(1, nights + 1):
        recs = []
        for api in ('HDF5', 'MPIIO'):
            params = {'api': api, 'preset': 'collective', 'layout': 'ssf'}
            for p in range(10):
                for build in (BASE, CAND):
                    v = level * math.exp(rng.gauss(0, s))
                    if api == 'HDF5':
                        all_values.append(v)
                    recs.append(Record(
                        tool='ior', operation='write', metric='bw_mean', value=v,
                        unit='MiB/s', higher_is_better=True, params=params, provenance={},
                        hdf5_build=build, config_hash=f'h-{api}', run_id=f'{k}-{api}-{p}-{build}',
                        timestamp=f'2025-04-{k:02d}T03:00:00+00:00', test='ior_check_12ab34cd',
                        system='local:default', pair_id=f'{k}-{p}'))
        res = gate.run_gate(recs, BASE, CAND, cfg)
        history.write_night(root, *gate.history_lines(res))
    return all_values


def test_envelope_rounding():
    ref, lo, hi = refs.envelope([90, 95, 100, 105, 110] * 4, slack=0.05)
    assert ref == 100
    assert lo == pytest.approx(-0.15) and hi == pytest.approx(0.15)
    ref, lo, hi = refs.envelope([1234.567, 1300.1, 1190.2])
    assert ref == 1230
    assert -1 <= lo <= 0 <= hi
    assert round(lo, 2) == lo and round(hi, 2) == hi


def test_round_trip_keeps_existing_entries(tmp_path):
    hdir, rdir = tmp_path / 'hist', tmp_path / 'refs'
    rdir.mkdir()
    (rdir / 'ior.yaml').write_text(EXISTING)
    values = make_history(hdir)
    files, notes = refs.derive(history.load(hdir), rdir, window=30)
    assert set(files) == {rdir / 'ior.yaml'}
    for f, data in files.items():
        refs.write(f, data)
    assert not [p for p in rdir.iterdir() if p.name.startswith('.')]   # no temp files left
    data = refs.load_file(rdir / 'ior.yaml')
    body = data['ior_check']
    assert body['$index'] == ['$partition', 'case']
    # kept: the fallback row, the $xfail entry, the other system, the other class
    assert body['local:default']['.*']['write_bw_mean'] == [300, -0.95, 30.0, 'MiB/s']
    assert body['local:default']['MPIIO-collective-ssf']['write_bw_mean'][0] == '$xfail'
    assert body['example-lustre:compute']['MPIIO-collective-ssf']['write_bw_mean'][0] == 21193
    assert data['other_check']['local:default']['time'] == [10, -0.1, 0.1, 's']
    assert any('$xfail entry kept' in n for n in notes)
    # derived: the HDF5 row, median and widened percentiles of the history
    new = body['local:default']['HDF5-collective-ssf']['write_bw_mean']
    assert new[3] == 'MiB/s'
    assert new[0] == pytest.approx(stats.median(values), rel=0.01)
    low, high = refs.bounds(tuple(new))
    assert low <= stats.percentile(values, 5) and high >= stats.percentile(values, 95)
    # what the gate applies is what was written
    R = refs.References.load([rdir])
    params = {'api': 'HDF5', 'preset': 'collective', 'layout': 'ssf'}
    assert R.lookup('ior_check', 'write_bw_mean', 'local:default', params) == tuple(new)
    # regex fallback row, as ReFrame matches it
    other = dict(params, api='POSIX')
    assert R.lookup('ior_check', 'write_bw_mean', 'local:default', other)[0] == 300
    # a second run over the same history is stable
    files2, _ = refs.derive(history.load(hdir), rdir, window=30)
    assert files2[rdir / 'ior.yaml'] == data


def test_reframe_reads_the_written_file(tmp_path):
    pipeline = pytest.importorskip('reframe.core.pipeline',
                                   reason='ReFrame not importable in this interpreter')
    hdir, rdir = tmp_path / 'hist', tmp_path / 'refs'
    rdir.mkdir()
    (rdir / 'ior.yaml').write_text(EXISTING)
    make_history(hdir)
    for f, data in refs.derive(history.load(hdir), rdir)[0].items():
        refs.write(f, data)
    d = pipeline._ReferenceDict.__new__(pipeline._ReferenceDict)
    d._ReferenceDict__test_entry_name = 'ior_check'
    parsed = d._read_ref_file(str(rdir / 'ior.yaml'))
    assert parsed['$index'] == ('$partition', 'case')
    ref = parsed['local:default']['HDF5-collective-ssf']['write_bw_mean']
    assert isinstance(ref, tuple) and len(ref) == 4


def test_malformed_yaml_names_file_and_key(tmp_path):
    f = tmp_path / 'ior.yaml'
    f.write_text('ior_check: [unclosed\n')
    with pytest.raises(refs.RefsError, match=r'ior\.yaml: not valid YAML'):
        refs.load_file(f)
    f.write_text("ior_check:\n  $index: ['$partition', 'case']\n  'local:default':\n"
                 "    '.*':\n      write_bw_mean: [fast, -0.1, 0.1, 'MiB/s']\n")
    with pytest.raises(refs.RefsError) as err:
        refs.load_file(f)
    assert str(f) in str(err.value)
    assert "ior_check.local:default..*.write_bw_mean" in str(err.value)
    assert 'ref is not a number' in str(err.value)
    f.write_text("ior_check:\n  'local:default':\n    write_bw_mean: [100, 0.2, 0.1]\n")
    with pytest.raises(refs.RefsError, match=r"ior_check.local:default.write_bw_mean.*lower"):
        refs.load_file(f)
    f.write_text("ior_check:\n  $index: partition\n")
    with pytest.raises(refs.RefsError, match=r'ior_check\.\$index'):
        refs.load_file(f)


def test_scope_lookup_without_index(tmp_path):
    (tmp_path / 'x.yaml').write_text(
        "t:\n  'sys:part':\n    v: [1, -0.1, 0.1, s]\n  'sys':\n    v: [2, -0.1, 0.1, s]\n"
        "  '*':\n    v: [3, -0.1, 0.1, s]\n")
    R = refs.References.load([tmp_path])
    assert R.lookup('t', 'v', 'sys:part', {})[0] == 1
    assert R.lookup('t', 'v', 'sys:other', {})[0] == 2
    assert R.lookup('t', 'v', 'else:where', {})[0] == 3
    assert R.lookup('t', 'missing', 'sys:part', {}) is None
    assert R.lookup('nope', 'v', 'sys:part', {}) is None


def test_refs_cli(tmp_path, capsys):
    hdir, rdir = tmp_path / 'hist', tmp_path / 'refs'
    rdir.mkdir()
    make_history(hdir)
    assert refs.main_refs(['--history', str(hdir), '--out', str(rdir)]) == 0
    written = yaml.safe_load((rdir / 'ior.yaml').read_text())
    assert 'HDF5-collective-ssf' in written['ior_check']['local:default']
    assert refs.main_refs(['--history', str(tmp_path / 'nothing'), '--out', str(rdir)]) == 4
    (rdir / 'ior.yaml').write_text('ior_check: {local: [1, 2]}\n')
    assert refs.main_refs(['--history', str(hdir), '--out', str(rdir)]) == 4
    assert 'ior.yaml' in capsys.readouterr().err


# ------------------------------------------------------- which file the checks read
def flashio_history(root, nights=3):
    cfg = gate.load_config()
    rng = random.Random(2)
    for k in range(1, nights + 1):
        recs = []
        for p in range(5):
            for build in (BASE, CAND):
                recs.append(Record(
                    tool='flash-io', operation='checkpoint', metric='bw',
                    value=300 * math.exp(rng.gauss(0, 0.05)), unit='MiB/s',
                    higher_is_better=True, params={'api': 'hdf5', 'case': 'hdf5-collective'},
                    provenance={}, hdf5_build=build, config_hash='h-flashio',
                    run_id=f'{k}-{p}-{build}', timestamp=f'2025-05-{k:02d}T03:00:00+00:00',
                    test='flashio_check_0a1b2c3d', system='local:default',
                    pair_id=f'{k}-{p}'))
        history.write_night(root, *gate.history_lines(gate.run_gate(recs, BASE, CAND, cfg)))


def test_refs_writes_the_reference_file_the_checks_read(tmp_path):
    # the records' tool is 'flash-io'; the FLASH-IO checks read flashio.yaml
    hdir, rdir = tmp_path / 'hist', tmp_path / 'refs'
    rdir.mkdir()
    flashio_history(hdir)
    files, _ = refs.derive(history.load(hdir), rdir)
    assert set(files) == {rdir / 'flashio.yaml'}
    assert refs.main_refs(['--history', str(hdir), '--out', str(rdir)]) == 0
    assert sorted(p.name for p in rdir.iterdir()) == ['flashio.yaml']
    written = refs.load_file(rdir / 'flashio.yaml')
    assert written['flashio_check']['local:default']['checkpoint_bw'][0] == pytest.approx(
        300, rel=0.05)


def test_reference_file_names_come_from_the_checks():
    files = refs.ReferenceFiles.from_checks()
    assert files.by_tool['flash-io'] == 'flashio.yaml'
    assert files.by_class['flashio_build_check'] == 'flashio.yaml'       # inherited
    assert files.by_class['h5bench_write_check'] == 'h5bench.yaml'       # two levels up
    assert files.name('flashio_check', 'flash-io') == 'flashio.yaml'
    assert files.name('renamed_check', 'flash-io') == 'flashio.yaml'     # by its tool
    assert files.name('x_check', 'newtool') == 'newtool.yaml'            # no check runs it
    # every file a check names exists, and every shipped file is named by a check
    named = set(files.by_class.values())
    shipped = {p.name for p in gateconfig.REFERENCES_DIR.glob('*.yaml')}
    assert named == shipped


def test_refs_cli_bad_config_is_an_error(tmp_path, capsys):
    hdir = tmp_path / 'hist'
    make_history(hdir, nights=1)
    (tmp_path / 'site.yaml').write_text('refs: {index: [ior_check]}\n')
    assert refs.main_refs(['--history', str(hdir), '--out', str(tmp_path),
                           '--config', str(tmp_path / 'site.yaml'), '--dry-run']) == 4
    assert "site.yaml: key 'refs.index' must be a mapping" in capsys.readouterr().err


# ------------------------------------------------------- refs --check refuses (issue 14)
def ior_entry(value):
    return ("ior_check:\n  $index: ['$partition', 'case']\n  'local:default':\n"
            f"    '.*':\n      {value}\n")


@pytest.mark.parametrize('text,key,said', [
    (ior_entry("write_bw_mean: [.nan, -0.5, null, 'MiB/s']"),
     "ior_check.local:default..*.write_bw_mean", 'ref is not a finite number: nan'),
    (ior_entry("write_bw_mean: [-300, -0.5, null, 'MiB/s']"),
     "ior_check.local:default..*.write_bw_mean", 'reference -300 is negative'),
    (ior_entry("write_bw_mean: [300, .nan, null, 'MiB/s']"),
     "ior_check.local:default..*.write_bw_mean", 'lower is not a finite number: nan'),
    (ior_entry("write_bw_mean: [300, -0.5, .inf, 'MiB/s']"),
     "ior_check.local:default..*.write_bw_mean", 'upper is not a finite number: inf'),
    (ior_entry("write_bw_mean: [300, -0.5, null, 's']"),
     "ior_check.local:default..*.write_bw_mean", "unit 's', but ior_check reports "
                                                 "write_bw_mean in MiB/s"),
    (ior_entry("write_bw_mean: ['$xfail', 'known', [300, -0.5, null, 'ops/s']]"),
     "ior_check.local:default..*.write_bw_mean", "unit 'ops/s'"),
    (ior_entry("write_bandwidth: [300, -0.5, null, 'MiB/s']"),
     "ior_check.local:default..*.write_bandwidth",
     "ior_check has no performance variable 'write_bandwidth'"),
    ("iro_check:\n  'local:default':\n    write_bw_mean: [300, -0.5, null, 'MiB/s']\n",
     'iro_check', 'no check of that name'),
    ("build_flashio:\n  'local:default':\n    checkpoint_bw: [300, -0.5, null, 'MiB/s']\n",
     'build_flashio', 'no check of that name'),
])
def test_refs_check_refuses_what_no_check_could_mean(tmp_path, capsys, text, key, said):
    f = tmp_path / 'ior.yaml'
    f.write_text(text)
    assert refs.main_refs(['--check', str(f)]) == 4
    err = capsys.readouterr().err
    assert f"{f}: key '{key}'" in err and said in err, err


def test_refs_check_passes_the_shipped_files_and_the_checks_own_variables(tmp_path, capsys):
    assert refs.main_refs(['--check', str(gateconfig.REFERENCES_DIR)]) == 0
    # variables whose names the checks build from parameters, loops and class attributes
    f = tmp_path / 'x.yaml'
    f.write_text(
        "flashio_build_check:\n  'local:default':\n    corner_time: [1, -0.5, null, s]\n"
        "h5bench_read_check:\n  'local:default':\n    read_size: [1, -0.5, null, B]\n"
        "mdtest_check:\n  'local:default':\n    file_stat_rate: [1, -0.5, null, ops/s]\n"
        "fio_check:\n  'local:default':\n    read_bw: [1, -0.5, null]\n")
    assert refs.main_refs(['--check', str(f)]) == 0, capsys.readouterr().err
    f.write_text("h5bench_read_check:\n  'local:default':\n    write_size: [1, -0.5, null, B]\n")
    assert refs.main_refs(['--check', str(f)]) == 4
    assert "has no performance variable 'write_size'" in capsys.readouterr().err


def test_check_variables_are_what_reframe_describes():
    """Declared at init, the performance variables are ReFrame's to tell: every variant
    of a parameterised check lists its own (h5bench's exerciser names its largest buffer)."""
    cv = refs.CheckVariables.from_checks()
    assert cv.units('h5bench_exerciser_check', 'write_raw_rate') == {'MiB/s'}
    assert cv.units('h5paths_check', 'write_bw') == {'MiB/s'}
    assert cv.units('flashio_check', 'plotfile_time') == {'s'}
    assert cv.units('ior_check', 'write_bandwidth') is None
    described = refs.described_checks()
    assert all(t['perf_variables'] and set(t['perf_units']) == set(t['perf_variables'])
               for t in described if t['@class'].endswith('_check'))


@pytest.fixture
def read_only_dir(tmp_path):
    """A directory nobody can write, root included (a read-only tmpfs when root)."""
    d = tmp_path / 'ro'
    d.mkdir()
    if os.geteuid() == 0:
        if subprocess.run(['mount', '-t', 'tmpfs', '-o', 'ro,size=1m', 'h5r-ro', str(d)],
                          capture_output=True).returncode:
            pytest.skip('cannot mount a read-only tmpfs')
        yield d
        subprocess.run(['umount', str(d)], check=True)
    else:
        d.chmod(0o555)
        yield d
        d.chmod(0o755)


def test_refs_out_to_a_read_only_directory_names_it(tmp_path, capsys, read_only_dir):
    hdir = tmp_path / 'hist'
    make_history(hdir)
    assert refs.main_refs(['--history', str(hdir), '--out', str(read_only_dir)]) == 4
    err = capsys.readouterr().err
    assert f'cannot write ior.yaml in {read_only_dir}' in err and 'Traceback' not in err


# ------------------------------------------------------- unknown system:partition (issue 29)
@pytest.mark.parametrize('text,key', [
    (ior_entry("write_bw_mean: [300, -0.5, null, 'MiB/s']").replace('local:default',
                                                                     'lcoal:default'),
     'ior_check.lcoal:default'),
    ("mdtest_check:\n  'locla':\n    file_stat_rate: [1, -0.5, null, ops/s]\n",
     'mdtest_check.locla'),
])
def test_refs_check_refuses_a_partition_no_system_has(tmp_path, capsys, text, key):
    f = tmp_path / 'x.yaml'
    f.write_text(text)
    assert refs.main_refs(['--check', str(f)]) == 4
    err = capsys.readouterr().err
    assert f"{f}: key '{key}': no configured system:partition" in err, err
    assert 'local:default' in err      # what is configured


def test_refs_check_takes_configured_partitions_systems_and_patterns(tmp_path, capsys):
    f = tmp_path / 'x.yaml'
    f.write_text("mdtest_check:\n  'local':\n    file_stat_rate: [1, -0.5, null, ops/s]\n"
                 "  '*':\n    file_stat_rate: [1, -0.5, null, ops/s]\n"
                 "  'ci-slurm:alloc':\n    file_stat_rate: [1, -0.5, null, ops/s]\n"
                 + ior_entry("write_bw_mean: [300, -0.5, null, 'MiB/s']").replace(
                     'local:default', 'ci-slurm:.*'))
    assert refs.main_refs(['--check', str(f)]) == 0, capsys.readouterr().err
    assert refs.check_files([str(f)], partitions={'other:part'}) == 4


def test_refs_without_history_says_how_to_give_it(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv(history.ENV, raising=False)
    assert refs.main_refs(['--out', str(tmp_path)]) == 4
    err = capsys.readouterr().err
    assert 'None' not in err
    assert 'no history directory given: pass --history DIR, set $H5REGRESS_HISTORY' in err
    assert 'h5regress refs --check DIR' in err
    assert refs.main_refs(['--history', str(tmp_path / 'nothing'), '--out', str(tmp_path)]) == 4
    assert f'no history at {tmp_path / "nothing"} (no nights/ in it)' in capsys.readouterr().err


@pytest.mark.parametrize('var, measured', [('write_raw_rate', 5.858),
                                           ('write_observed_rate', 3.238)])
def test_the_local_subfiling_floor_admits_its_rate_beside_the_fast_tests(var, measured):
    # h5bench's subfiling row wrote at these rates in the CI run of 2026-11-27, its I/O
    # concentrator threads beside the fast tests on 2 cores: a false FAIL of a run that
    # wrote its file (the other write rows' floors are 10 and 5 MiB/s)
    R = refs.References.load([gateconfig.REFERENCES_DIR])
    ref = R.lookup('h5bench_write_check', var, 'local:default',
                   {'case': '1D-CONTIG-CONTIG-subfiling'})
    low, _ = refs.bounds(ref)
    assert 0 < low <= measured
