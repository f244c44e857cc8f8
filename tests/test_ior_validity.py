"""IOR's figures mean what their labels say (issue 13, items 1 and 2).

- Every recorded read repetition follows a page-cache drop on one node (one IOR
  execution per read repetition); one that did not is labelled cached and kept out of
  the figure. Proved on ``local`` from the per-repetition samples (slow) and on real
  executions kept in tests/fixtures/ior (fast).
- Each phase's record carries its own execution's command line, parameters and source
  (:class:`h5regress.runresults.PhasedRun`, laid over by :mod:`h5regress.perflog`).
"""

from __future__ import annotations

import functools
import json
import os
import re
from pathlib import Path

import pytest

from h5regress import perflog, runresults
from h5regress.parsers import ior
from h5regress.parsers.base import Measurement, ParsedRun
from reframe_run import REPO, UNDER_LOAD, load_check_file, path_with_tools, run_reframe

FIXTURE = Path(__file__).resolve().parent / 'fixtures' / 'ior' / \
    'json-one-read-execution-per-repetition'
READS = [f'ior-read-{i}.json' for i in (1, 2, 3)]


@functools.cache
def ior_checks():
    """reframe/checks/ior.py as a module (its check classes, not run by ReFrame)."""
    return load_check_file('ior.py', 'ior_checks_under_test')


def read_runs() -> list[ParsedRun]:
    return [run for name in READS
            for run in ior.parse({name: (FIXTURE / name).read_text()})]


def cold_reads(stdout: str) -> ParsedRun:
    checks = ior_checks()
    # the method reads only what the job's stdout says: no ReFrame test needed
    return checks.cold_reads(read_runs(), checks.ior_base.cache_states(stdout))


def marks(*states: str) -> str:
    return ''.join(f'h5regress-page-cache: {s}\nWriting output to ior-read.json\n'
                   for s in states)


# ------------------------------------------------------------------------------------
# item 1: the read phase of real executions, each after a drop

def test_every_read_repetition_is_its_own_execution_after_a_drop():
    stdout = (FIXTURE / 'stdout.txt').read_text()
    run = cold_reads(stdout)
    samples = [r.measurement('read', 'bw_mean').value for r in read_runs()]
    bw = run.measurement('read', 'bw_mean')
    assert bw.samples == samples and len(samples) == 3
    assert bw.value == pytest.approx(sum(samples) / 3)
    assert run.params['repetitions'] == 3 and run.params['readFile'] == 1
    assert run.params['writeFile'] == 0
    assert run.provenance['read_page_cache'] == 'dropped'
    assert run.provenance['read_page_cache_repetitions'] == ['dropped'] * 3
    assert run.provenance['source'] == ', '.join(READS)
    assert run.provenance['executions'] == 3
    assert runresults.CACHE_DEFEATED in run.provenance
    assert not any('cached' in w for w in run.warnings)


def test_a_repetition_without_a_drop_is_labelled_and_left_out():
    run = cold_reads(marks('dropped', 'kept', 'dropped'))
    samples = [r.measurement('read', 'bw_mean').value for r in read_runs()]
    bw = run.measurement('read', 'bw_mean')
    assert bw.samples == [samples[0], samples[2]]
    assert bw.value == pytest.approx((samples[0] + samples[2]) / 2)
    assert run.measurement('read', 'bw_max').value == max(samples[0], samples[2])
    left = run.provenance['uncounted_samples']
    assert left['bw_mean'] == [samples[1]] and left['source'] == ['ior-read-2.json']
    assert 'cached' in left['reason']
    assert run.provenance['read_page_cache_repetitions'] == ['dropped', 'kept', 'dropped']
    assert any('1 of 3 read repetitions' in w for w in run.warnings)


def test_no_drop_at_all_labels_the_whole_read_phase_cached():
    run = cold_reads(marks('kept', 'kept (extras.drop_caches is off)', 'kept'))
    assert len(run.measurement('read', 'bw_mean').samples) == 3
    assert run.provenance['read_page_cache'] == 'kept'
    assert runresults.CACHE_DEFEATED not in run.provenance
    assert any(w.startswith('read figures are cached') for w in run.warnings)
    # and so the suite's memory warning stays on the record
    assert any('mostly page cache' in w for w in
               runresults.record_warnings(run, 2 * 2**26, 2**34, 1))


def test_a_missing_drop_line_is_a_parse_error():
    with pytest.raises(ior.ParseError, match='3 IOR read executions but 2'):
        cold_reads(marks('dropped', 'dropped'))


def test_the_write_phase_fsyncs_every_repetition_inside_the_timer():
    doc = json.loads((FIXTURE / 'ior-write.json').read_text())
    params = doc['tests'][0]['Parameters']
    # one execution, 3 repetitions, each removes and rewrites the file and fsyncs it
    assert params['fsync'] == 1 and params['repetitions'] == 3
    assert params['writeFile'] == 1 and params['readFile'] == 0
    assert ' -e ' in doc['Command line']
    assert len([r for r in doc['tests'][0]['Results'] if r['access'] == 'write']) == 3


# ------------------------------------------------------------------------------------
# item 2: each phase's record names its own execution

def phased_run() -> runresults.PhasedRun:
    write = ior.parse({'ior-write.json': (FIXTURE / 'ior-write.json').read_text()})[0]
    read = cold_reads((FIXTURE / 'stdout.txt').read_text())
    return runresults.merge_phases('ior', [runresults.Phase(write, 'mpirun ior -w ...'),
                                           runresults.Phase(read, 'mpirun ior -r ...')])


def perflog_records(run: runresults.PhasedRun) -> dict[str, object]:
    """The run through the perflog context and back, one record per variable."""
    contexts = [({**p.run.params, 'case': 'POSIX'},
                 {**p.run.provenance, 'command_line': p.command}) for p in run.phases]
    table = {'write_bw_mean': ('write', 'bw_mean'), 'read_bw_mean': ('read', 'bw_mean')}
    context = runresults.context_json('ior', *contexts[0],
                                      runresults.perfvars(run, table, contexts))
    header = '|'.join(perflog.COLUMNS)
    lines = [header] + [
        '|'.join(['2026-11-24T00:00:00', 'ior_check', 'local:default', 'gnu', var, '1.0',
                  'MiB/s', '0', '', '', 'pass', 'pass', '', 'path', 'abc', 'id', context])
        for var in table]
    records, problems = perflog.parse_text('\n'.join(lines), 'test')
    assert not problems
    return {r.provenance['perf_var']: r for r in records}


def test_each_phase_record_names_its_own_execution():
    records = perflog_records(phased_run())
    write, read = records['write_bw_mean'], records['read_bw_mean']
    assert write.provenance['source'] == 'ior-write.json'
    assert write.provenance['command_line'] == 'mpirun ior -w ...'
    assert write.params['writeFile'] == 1 and write.params['readFile'] == 0
    assert 'read_page_cache' not in write.provenance
    assert read.provenance['source'] == ', '.join(READS)
    assert read.provenance['command_line'] == 'mpirun ior -r ...'
    assert read.params['readFile'] == 1 and read.params['writeFile'] == 0
    assert read.provenance['read_page_cache_repetitions'] == ['dropped'] * 3
    assert read.provenance['tool_version'] == write.provenance['tool_version'] == '4.0.0'
    assert read.params['case'] == write.params['case'] == 'POSIX'


def test_a_key_only_the_first_phase_has_is_not_on_the_others():
    first = ParsedRun('t', {'a': 1, 'only_first': 2}, {'source': 'w'},
                      [Measurement('write', 'bw', 1.0, 'MiB/s', True)])
    second = ParsedRun('t', {'a': 1}, {'source': 'r'},
                       [Measurement('read', 'bw', 2.0, 'MiB/s', True)])
    run = runresults.merge_phases('t', [runresults.Phase(first, 'w'),
                                        runresults.Phase(second, 'r')])
    contexts = [(p.run.params, p.run.provenance) for p in run.phases]
    out = runresults.perfvars(run, {'w': ('write', 'bw'), 'r': ('read', 'bw')}, contexts)
    assert 'params' not in out['w']
    assert runresults.lay_over(first.params, out['r']['params']) == {'a': 1}
    assert runresults.lay_over(first.provenance, out['r']['provenance']) == {'source': 'r'}


# ------------------------------------------------------------------------------------
# on local, for real

@pytest.mark.slow
def test_ior_reads_on_local_are_cold_and_named_by_their_own_execution(ior_on_local):
    """The 320 MiB rows (2 ranks x 160 MiB at local's size factor) through POSIX and
    HDF5: every read repetition after a drop (what proves it: each repetition's own
    drop line), so the samples of one record are of one order: within 5x (cold reads
    spread up to 3.5x here at load 13; a page-cache read was 4 to 30 times the cold
    one on a quiet machine, less under load); each record's command line, source and
    parameters are its own execution's. The rows of conftest.py's run of every IOR row."""
    out, workdir = ior_on_local
    assert out.returncode == 0, out.stdout + out.stderr
    records, problems = perflog.read([str(workdir / 'perflogs')])
    assert not problems
    records = [r for r in records if re.search(r'(POSIX|HDF5)-independent-ssf$', r.test)]
    dropped = os.geteuid() == 0
    by_key = {(r.params['api'], r.operation): r for r in records if r.metric == 'bw_mean'}
    assert sorted(by_key) == [('HDF5', 'read'), ('HDF5', 'write'), ('POSIX', 'read'),
                              ('POSIX', 'write')]
    # the reads first: their samples are the defect's evidence
    for (api, op), r in sorted(by_key.items(), key=lambda item: item[0][1] == 'write'):
        assert len(r.samples) == 3 and min(r.samples) > 0
        prov = r.provenance
        if op == 'read':
            if dropped:
                assert max(r.samples) / min(r.samples) < 5, (api, r.samples)
            assert prov.get('read_page_cache_repetitions') == (
                ['dropped'] * 3 if dropped else ['kept'] * 3), (api, r.samples, prov)
            assert prov['source'] == ', '.join(READS)
            assert ' -r ' in prov['command_line'] and ' -w ' not in prov['command_line']
            assert ' -i 1 ' in prov['command_line'] and ' -e ' not in prov['command_line']
            assert r.params['readFile'] == 1 and r.params['writeFile'] == 0
        else:
            assert 'read_page_cache' not in prov
            assert prov['source'] == 'ior-write.json'
            assert ' -w ' in prov['command_line'] and ' -e ' in prov['command_line']
            assert r.params['writeFile'] == 1 and r.params['readFile'] == 0
            assert prov[runresults.CACHE_DEFEATED].startswith('fsync')
        # the two phases are one run: one run id and config hash
    assert len({(r.run_id, r.config_hash) for r in records
                if r.params['api'] == 'POSIX'}) == 1


@pytest.mark.slow
@pytest.mark.beside
@pytest.mark.spack_env
def test_mdtest_stat_and_read_on_one_node_are_labelled_cached(tmp_path):
    """mdtest stats and reads back the files it has just made: on one node that is this
    node's caches, and its records say so."""
    path = path_with_tools('mdtest')
    out = run_reframe(['-c', 'reframe/checks/mdtest.py', '-r', '-n',
                       '^mdtest_check.*unique_dir'] + UNDER_LOAD, tmp_path, env={'PATH': path})
    assert out.returncode == 0, out.stdout + out.stderr
    records, problems = perflog.read([str(tmp_path / 'perflogs')])
    assert not problems and {r.operation for r in records} >= {'file_stat', 'file_read'}
    for r in records:
        assert r.provenance['stat_read_cache'].startswith('kept')
        assert any(w.startswith('file_stat and file_read rates on one node')
                   for w in r.provenance['warnings'])


def test_on_several_nodes_one_execution_reads_another_nodes_data():
    """Several nodes: write and read in one execution (-C); its records say where the
    reads come from and that the writes were fsynced (a real -w -r JSON summary)."""
    from types import SimpleNamespace

    from h5regress.checkbase import IOBenchmark
    summary = REPO / 'tests' / 'fixtures' / 'ior' / 'own-posix-indep-fpp-b16m' / 'summary.json'
    job = SimpleNamespace(num_nodes=2, test_params={'fsync': True}, parser='', tool='ior',
                          executable='ior', executable_opts=['-w', '-r', '-C', '-e'],
                          read_phase=True)
    job.main_command = lambda: IOBenchmark.main_command(job)
    job.parse_phases = lambda *args, **kw: IOBenchmark.parse_phases(job, *args, **kw)
    run = ior_checks().ior_base.parse_output(job, {'ior.json': summary.read_text()})
    phase, = run.phases
    assert phase.command == 'ior -w -r -C -e'
    assert {m.operation for m in run.measurements} == {'write', 'read'}
    assert phase.run.provenance['read_page_cache'].startswith("another node's data")
    assert phase.run.provenance[runresults.CACHE_DEFEATED].startswith('fsync')


@pytest.mark.parametrize('nodes, summary', [(1, 'ior-write.json'), (2, 'ior.json')])
def test_a_row_without_its_read_phase_has_write_figures_and_says_why(nodes, summary):
    """Issue 25: the night runs IOR with -S read_phase=false. The record has the write
    phase's figures only, its provenance says the reads were not run, and no read
    variable is declared (ReFrame would fail a missing one). Fails on the old code: yes
    (no read_phase)."""
    from types import SimpleNamespace

    from h5regress.checkbase import IOBenchmark
    checks = ior_checks()
    job = SimpleNamespace(num_nodes=nodes, test_params={'fsync': True}, parser='',
                          tool='ior', executable='ior', read_phase=False,
                          executable_opts=['-w', '-e'])
    job.main_command = lambda: IOBenchmark.main_command(job)
    job.parse_phases = lambda *args, **kw: IOBenchmark.parse_phases(job, *args, **kw)
    run = checks.ior_base.parse_output(job, {summary: (FIXTURE / 'ior-write.json').read_text()})
    phase, = run.phases
    assert {m.operation for m in run.measurements} == {'write'}
    assert phase.run.provenance['read_phase'] == checks.READS_OFF
    assert 'read_page_cache' not in phase.run.provenance
    assert phase.run.provenance[runresults.CACHE_DEFEATED].startswith('fsync')
    assert set(checks.ior_base.perf_table(job)) == {
        'write_bw_mean', 'write_bw_max', 'write_bw_min', 'write_bw_std'}


@pytest.mark.slow
@pytest.mark.beside
@pytest.mark.spack_env
def test_without_a_drop_the_ior_reads_are_labelled_cached(tmp_path):
    """A partition that does not drop the page cache (``extras.drop_caches`` off, as a
    site without root sets it): every read repetition is labelled cached, the read
    phase says so, and the suite's memory warning stays on it; the fsynced writes do
    not change."""
    from test_reliability import chained_config
    env = {'PATH': path_with_tools('ior'),
           'RFM_CONFIG_FILES': chained_config(tmp_path, drop_caches=False)}
    out = run_reframe(['-c', 'reframe/checks/ior.py', '-r', '-n',
                       '^ior_check.*POSIX-independent-ssf', '-S', 'block_size=16m',
                       '-S', 'transfer_size=1m'] + UNDER_LOAD, tmp_path, env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    records, problems = perflog.read([str(tmp_path / 'perflogs')])
    assert not problems
    read = next(r for r in records if r.operation == 'read' and r.metric == 'bw_mean')
    write = next(r for r in records if r.operation == 'write' and r.metric == 'bw_mean')
    assert len(read.samples) == 3
    assert read.provenance['read_page_cache'] == 'kept'
    assert read.provenance['read_page_cache_repetitions'] == [
        'kept (extras.drop_caches is off)'] * 3
    assert runresults.CACHE_DEFEATED not in read.provenance
    warnings = read.provenance['warnings']
    assert any(w.startswith('read figures are cached') for w in warnings)
    assert any('mostly page cache' in w for w in warnings)
    assert write.provenance[runresults.CACHE_DEFEATED].startswith('fsync')
    assert not any('mostly page cache' in w for w in write.provenance['warnings'])


# ------------------------------------------------------- nonsense -S values (issue 31)
ROW = {'repetitions': 3, 'segments': 1, 'block_size': 8 << 20, 'transfer_size': 1 << 20,
       'stonewall': 0, 'hdf5_chunk_size': 0}


@pytest.mark.parametrize('change, said', [
    ({'repetitions': 0}, 'ior_check.repetitions=0: IOR needs at least one repetition'),
    ({'repetitions': -2}, 'ior_check.repetitions=-2'),
    ({'segments': -1}, 'ior_check.segments=-1'),
    ({'block_size': 0}, 'ior_check.block_size=0: the block size (-b) must be positive'),
    ({'transfer_size': 3 << 20}, 'ior_check.block_size=8388608: the block size must be a '
                                 'multiple of the transfer size (3145728)'),
    ({'stonewall': -5}, 'ior_check.stonewall=-5'),
    ({'hdf5_chunk_size': -1}, 'ior_check.hdf5_chunk_size=-1'),
])
def test_nonsense_row_values_are_refused_naming_the_variable(change, said):
    checks = ior_checks()
    checks.refuse_nonsense('ior_check', ROW)          # sensible values pass
    with pytest.raises(ValueError) as err:
        checks.refuse_nonsense('ior_check', {**ROW, **change})
    assert said in str(err.value)


def test_repetitions_zero_fails_the_test_in_its_setup_not_the_run(tmp_path):
    """``-S ior_check.repetitions=0``: IOR 4 with ``-i 0`` corrupted its heap and hung
    until the 15-minute time limit; the check now fails in its setup, naming the value,
    and IOR never starts."""
    path = path_with_tools('ior')
    out = run_reframe(['-c', 'reframe/checks/ior.py', '-r', '-n',
                       '^ior_check.*POSIX-independent-ssf', '-S', 'ior_check.repetitions=0'],
                      tmp_path, env={'PATH': path}, timeout=300)
    text = out.stdout + out.stderr
    assert out.returncode != 0, text
    assert re.search(r'Failing phase: setup', text), text[-3000:]
    assert 'ior_check.repetitions=0: IOR needs at least one repetition' in text, text[-3000:]
