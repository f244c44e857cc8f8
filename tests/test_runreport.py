"""ReFrame's run report -> records (issue 26: ReFrame carries the record): the same
records as the perflog's lines, samples kept, failures and bad input skipped and named."""

import dataclasses
import json
import sys
from pathlib import Path

import pytest

from h5regress import perflog, runrecords, runreport
from h5regress.report import find_context
from reframe_run import run_reframe
from test_perflog import CONTEXT, HEADER, line


def case(result='pass', fail_phase=None, var='write_bw_mean', context=CONTEXT, **extra):
    """A test case of a run report holding what :func:`test_perflog.line` logs."""
    return {'name': 'ior_check %api=HDF5', 'system': 'local', 'partition': 'default',
            'environ': 'gnu-openmpi', 'result': result, 'fail_phase': fail_phase,
            'job_completion_time': '2026-11-21T00:00:00+00:00', 'hdf5_build': 'hdf5-1.14.6',
            'config_hash': 'c0ffee', 'run_id': 'run1', 'h5r_context': context,
            'perfvalues': {f'local:default:{var}': [1.5, 300, -0.95, 30.0, 'MiB/s', 'pass']},
            **extra}


def report(*cases):
    return json.dumps({'session_info': {'num_cases': len(cases)},
                       'runs': [{'run_index': 0, 'testcases': list(cases)}]})


def as_dicts(records):
    return sorted((dataclasses.asdict(r) for r in records), key=json.dumps)


def test_a_report_gives_the_records_its_perflog_lines_give():
    text = report(case(), case(result='fail', fail_phase='performance'),
                  case(result='fail', fail_phase='sanity'), case(perfvalues={}))
    records, problems = runreport.parse_text(text, 'r.json')
    logged, _ = perflog.parse_text('\n'.join([HEADER, line(), line(result='fail',
                                   fail_phase='performance'), line(result='fail',
                                   fail_phase='sanity'), line(var='null')]), 'p.log')
    assert problems == [] and [r.result for r in records] == ['pass', 'perf_fail']
    assert as_dicts(records) == as_dicts(logged)
    assert records[0].provenance['reference'] == {'value': 300.0, 'lower': -0.95,
                                                  'upper': 30.0, 'result': 'pass'}


def test_bad_reports_and_cases_are_skipped_and_named(tmp_path):
    (tmp_path / 'a.json').write_text(report(case(), case(context='{oops'),
                                            case(var='read_bw_mean')))
    (tmp_path / 'b.json').write_text('{"runs": ')
    records, problems = runreport.read([str(tmp_path)])
    assert len(records) == 1 and len(problems) == 3
    assert 'a.json: ior_check %api=HDF5 write_bw_mean: h5r_context is not JSON' in problems[0]
    assert "no perfvars entry for 'read_bw_mean'" in problems[1]
    assert 'b.json: not a ReFrame run report' in problems[2]


def test_a_real_runs_report_holds_the_records_of_its_perflog(tmp_path):
    """fio on `local`: its run report and its perflog, the same records."""
    out = run_reframe(['-c', 'reframe/checks/fio.py', '-r', '-n', 'fio_check.*buffered',
                       '-S', 'fio_check.size=8m'], tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    reported, problems = runreport.read([str(tmp_path / 'report.json')])
    logged, logged_problems = perflog.read([str(tmp_path / 'perflogs')])
    assert problems == logged_problems == [] and len(reported) == 2
    assert as_dicts(reported) == as_dicts(logged)


def test_the_report_reads_the_run_reports_its_gate_read(tmp_path):
    """A night's page finds tonight's records in the attempt's run reports (the gate's
    input), beside perflogs that hold none of them, and still links the perflogs."""
    attempt = '2026-11-21.t1'
    paired = json.dumps({**json.loads(CONTEXT), 'pair_id': f'{attempt}-p01'})
    for kind, text in (('reports', report(case(context=paired))), ('perflogs', HEADER)):
        (tmp_path / kind / attempt).mkdir(parents=True)
        (tmp_path / kind / attempt / f'a.{"json" if kind == "reports" else "log"}').write_text(
            text)
    result = {'attempt': attempt, 'baseline': 'hdf5-1.14.6', 'candidate': 'hdf5-b'}
    ctx = find_context(result, tmp_path)
    assert [r.run_id for recs in ctx['records'].values() for r in recs] == ['run1']
    assert ctx['perflogs'] == f'perflogs/{attempt}'


def test_the_one_reader_names_a_missing_path_and_keeps_the_gates_order(tmp_path):
    missing = tmp_path / 'no-such'
    with pytest.raises(runrecords.MissingInput, match=f'--reports {missing}: no such file'):
        runrecords.read(reports=[str(missing)])
    (tmp_path / 'r.json').write_text(report(case()))
    (tmp_path / 'p.log').write_text('\n'.join([HEADER, line(value='2.5')]))
    (tmp_path / 'x.jsonl').write_text('{oops\n')
    got = runrecords.read(reports=[str(tmp_path / 'r.json')], perflogs=[str(tmp_path)],
                          records=[str(tmp_path / 'x.jsonl')])
    assert [r.value for r in got.records] == [2.5, 1.5] and len(got.problems) == 1


def test_no_module_but_the_one_reader_parses_raw_run_records():
    """The gate, the report, study and ``h5regress perflog`` read through runrecords."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / 'benchmarks'))
    from redesign_figures import record_readers
    assert record_readers() == []


def test_a_run_report_is_read_once_for_its_cases_and_session(tmp_path):
    text = json.dumps({'session_info': {'num_cases': 3, 'prefix_output': '/o'},
                       'runs': [{'testcases': [case()]}, {'testcases': [case(), case()]}]})
    got = runreport.load(text)
    assert (len(got.cases), got.num_cases, got.prefix_output) == (3, 3, '/o')
    (tmp_path / 'r.json').write_text(report(case()))
    assert runreport.num_cases(tmp_path / 'r.json') == 1
    (tmp_path / 'bare.json').write_text('{"runs": []}')
    with pytest.raises(ValueError, match='num_cases'):
        runreport.num_cases(tmp_path / 'bare.json')
    with pytest.raises(ValueError):
        runreport.load('{"session_info": {}}')


def test_a_night_reads_its_run_records_once_for_its_verdict_and_report(tmp_path,
                                                                        monkeypatch):
    """The nightly's verdict, its report and the report's later rewrite (the coverage
    line) take the records the gate read: the attempt's run reports are read once."""
    from h5regress import nightly
    args = nightly.parse_args(['--stand-in', '--out', str(tmp_path), '--night', '2026-11-21'])
    nightly.start_attempt(args)
    cases = []
    for pair in range(1, 4):
        for build, value in (('hdf5-a', 300.0), ('hdf5-b', 290.0)):
            # IOR's gated statistic (ci/gate.yaml): the best write repetition
            context = json.dumps({**json.loads(CONTEXT), 'pair_id': f'{args.attempt}-p{pair}',
                                  'provenance': {'nodelist': 'node-that-ran-it'},
                                  'perfvars': {'write_bw_max': {
                                      'operation': 'write', 'metric': 'bw_max',
                                      'higher_is_better': True}}})
            cases.append(case(context=context, hdf5_build=build, run_id=f'{build}-{pair}',
                              perfvalues={'local:default:write_bw_max': [
                                  value, 300, -0.95, 30.0, 'MiB/s', 'pass']}))
    (nightly.attempt_reports(args) / 'side.json').write_text(report(*cases))
    reads = []
    real_read = runrecords.read
    monkeypatch.setattr(runrecords, 'read', lambda **kw: reads.append(kw) or real_read(**kw))
    nightly.gate_once('hdf5-a', 'hdf5-b', args, final=True)
    nightly.add_coverage(args)
    assert reads == [{'reports': [str(nightly.attempt_reports(args))]}]
    assert [r.run_id for r in args.run_records.records][:2] == ['hdf5-a-1', 'hdf5-b-1']
    assert 'node-that-ran-it' in (tmp_path / 'report' / 'report.md').read_text()
