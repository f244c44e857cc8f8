"""The report on a real night's layout (issue 29): the launcher line in "Where", a FAIL's
job script and output, its records, a reproduce command that runs its case only, and a
merge-request summary whose words a reader can search.

The night is laid out as ``ci/nightly --out NIGHT`` leaves it: ReFrame's run reports in
``NIGHT/reports/<attempt>/``, its output in ``NIGHT/output/<system>/<partition>/<environ>/
<case>/`` (job script ``rfm_job.sh``, ``rfm_job.out``, ``rfm_job.err``), the records'
provenance naming the job script by its bare file name, as a real night's does.
"""

import copy
import json
import re
import types
from html import unescape
from pathlib import Path

from reframe.frontend.filters import have_any_name

from h5regress import history, report, runrecords
from h5regress.report import links
from h5regress.report.text import short_label

from test_report import CAND, _section, _with_provenance, gated_night, night  # noqa: F401

ATTEMPT = 'a1'
#: where ReFrame wrote the night (the night's directory has moved since: copied, served)
WROTE_AT = '/nights/gone/output'
EXE = '/spack/opt/ior-abc/bin/ior'


def _job_script(command: str) -> str:
    """A job script as checkjob writes it: the probe names the tool as an option's
    value before the launcher line runs it."""
    return ('#!/bin/bash\nexport OMPI_MCA_io=ompio\n'
            f'/venv/bin/python3 -m h5regress.probe h5r-probe.json --binary {EXE}\n'
            'touch h5r-tool-start\n'
            f'mpirun -np 2 {command}\nh5r_rc=$?\n'
            'if [ "$h5r_rc" -eq 0 ]; then for r in $(seq 3); do sync; '
            f'mpirun -np 2 {EXE} -a HDF5 -r || h5r_rc=$?; done; fi\n')


def _real_night(tmp_path: Path):
    """Tonight's records of the gated_night FAIL, with a real night's job files: one
    output directory per test case and build, a run report per build."""
    recs = _with_provenance(night(15, ratio_slow=0.7, seed=15))
    nightdir = tmp_path / 'night'
    cases = {}
    for r in recs:
        r.pair_id = f'{ATTEMPT}-p{r.pair_id.rsplit("-", 1)[1]}'
        r.provenance['command_line'] = f'{EXE} -a HDF5 -w -o /scratch/{r.run_id}'
        r.provenance['job_script'] = 'rfm_job.sh'          # as a real record says it
        case = f'ior_check_{r.config_hash}_{r.hdf5_build}'
        outdir = nightdir / 'output' / 'local' / 'default' / 'gnu' / case
        outdir.mkdir(parents=True, exist_ok=True)
        (outdir / 'rfm_job.sh').write_text(_job_script(r.provenance['command_line']))
        (outdir / 'rfm_job.out').write_text('h5regress-exit-code: 0\n')
        (outdir / 'rfm_job.err').write_text('')
        cases.setdefault(r.hdf5_build, {})[r.run_id] = {
            'run_id': r.run_id, 'outputdir': f'{WROTE_AT}/local/default/gnu/{case}',
            'job_stdout': 'rfm_job.out', 'job_stderr': 'rfm_job.err'}
    reports = nightdir / 'reports' / ATTEMPT
    reports.mkdir(parents=True)
    for build, by_run in cases.items():
        (reports / f'{ATTEMPT}-p01-{build}.json').write_text(json.dumps({
            'session_info': {'prefix_output': WROTE_AT},
            'runs': [{'testcases': list(by_run.values())}]}))
    return recs, nightdir


def _context(res, recs, nightdir, monkeypatch):
    """What the report finds in the night's directory (its run reports read as ``recs``)."""
    (nightdir / 'perflogs' / ATTEMPT).mkdir(parents=True, exist_ok=True)
    monkeypatch.setattr(runrecords, 'read', lambda **paths: runrecords.RunRecords(recs))
    return report.find_context(res, nightdir)


def test_where_shows_the_launcher_line_as_the_job_ran_it(gated_night, tmp_path,
                                                         monkeypatch):
    res, _, _ = gated_night
    res = {**copy.deepcopy(res), 'attempt': ATTEMPT}
    recs, nightdir = _real_night(tmp_path)
    rows = report.where_rows(res, _context(res, recs, nightdir, monkeypatch))
    col = report.WHERE_COLUMNS.index(next(c for c in report.WHERE_COLUMNS
                                          if c.startswith('command')))
    assert len(rows) == 2
    for row in rows:
        assert row[col].startswith(f'mpirun -np 2 {EXE} -a HDF5 -w -o /scratch/'), row[col]


def test_launcher_is_read_from_the_line_that_runs_the_tool():
    from h5regress.report import jobs
    script = _job_script(f'{EXE} -a HDF5 -w')
    assert jobs.launcher_of(script, f'{EXE} -a HDF5 -w') == 'mpirun -np 2'
    # a postrun execution's command carries its launcher: nothing to add
    assert jobs.launcher_of(script, f'mpirun -np 2 {EXE} -a HDF5 -r') == ''
    # named only as the probe's --binary: no line runs it
    assert jobs.launcher_of(f'probe --binary {EXE}\n', EXE) is None
    assert jobs.launcher_of(f'srun --mpi=pmix {EXE} -x 1\n', f'{EXE} -x 1') == \
        'srun --mpi=pmix'


def test_a_fail_links_its_job_script_and_output_where_the_night_keeps_them(
        gated_night, tmp_path, monkeypatch):
    res, _, root = gated_night
    res = {**copy.deepcopy(res), 'attempt': ATTEMPT}
    recs, nightdir = _real_night(tmp_path)
    out = nightdir / 'report'
    files = report.write_all(res, history.load(root / 'hist'), out,
                             _context(res, recs, nightdir, monkeypatch))
    hrefs = [unescape(h) for h in
             re.findall(r'href="([^"]+)"', _section(files['html'].read_text(), 'fail-links'))]
    named = {Path(h).name: h for h in hrefs}
    for name in ('rfm_job.sh', 'rfm_job.out', 'rfm_job.err'):
        assert name in named, hrefs
        assert not named[name].startswith('file:'), named[name]
        target = (out / named[name]).resolve()
        assert target.is_file() and CAND in str(target)       # the candidate's run
    assert 'file://rfm_job.sh' not in hrefs


def test_records_link_reaches_the_perflogs_from_wherever_the_report_is_written(gated_night,
                                                                               tmp_path):
    res, _, root = gated_night
    res = {**copy.deepcopy(res), 'attempt': ATTEMPT}
    nightdir = tmp_path / 'night'
    (nightdir / 'perflogs' / ATTEMPT).mkdir(parents=True)
    (nightdir / 'gate.json').write_text(json.dumps(res))
    out = tmp_path / 'elsewhere' / 'qs-report'
    assert report.main_report([str(nightdir / 'gate.json'), '--out', str(out)]) == 0
    site = tmp_path / 'site'          # the night's page in a dashboard
    assert report.main_publish(['--history', str(root / 'hist'), '--out', str(site),
                                '--night', str(nightdir)]) == 0
    for page in (out / 'report.html', site / 'nights' / res['night'] / 'report.html'):
        hrefs = [unescape(h) for h in re.findall(r'href="([^"]+)"', page.read_text())
                 if 'perflogs' in h]
        assert hrefs, page
        for h in hrefs:
            assert (page.parent / h).resolve() == (nightdir / 'perflogs' / ATTEMPT).resolve(), h


def _case(name):
    """A test case as ReFrame's name filter sees it."""
    return types.SimpleNamespace(check=types.SimpleNamespace(
        display_name=name, unique_name=name.split()[0], hashcode='0', variant_num=0))


def test_reproduce_runs_the_failing_case_on_both_builds_only():
    row = 'compound-subset-hdf5-collective-contiguous-earliest-warm'
    name = 'h5paths_check %num_nodes=1 %tasks_per_node=2 %hdf5_build={} %benchmark={}'
    m = {'key': 'bae53cf69961a6fd|h5paths|read|bw', 'tool': 'h5paths',
         'test_class': 'h5paths_check', 'test': name.format('hdf5-1.14.1', row),
         'perf_ratio': 0.652478}
    res = {'baseline': 'hdf5-1.14.1', 'candidate': 'hdf5-1.15.0',
           'baseline_commit': '577c1925', 'candidate_commit': 'b382a8ef'}
    command = links.reproduce_command(res, m, 'https://github.com/HDFGroup/hdf5')
    pattern = re.search(r"ci/run-suite -n '([^']+)'", command).group(1)
    selects = have_any_name([pattern])
    assert selects(_case(name.format('hdf5-1.14.1', row)))
    assert selects(_case(name.format('hdf5-1.15.0', row)))
    for other in ('compound-subset-hdf5-collective-contiguous-earliest',
                  'compound-superset-hdf5-collective-contiguous-earliest-warm',
                  'many-datasets-hdf5-collective-contiguous-earliest'):
        assert not selects(_case(name.format('hdf5-1.15.0', other))), other
    # the bisect as ci/nightly --bisect runs it: this case, its tool, tonight's ratio
    assert f"--checks '{pattern}' --tool h5paths" in command
    assert command.endswith('--bad-ratio 0.652478')


def test_merge_request_summary_breaks_no_word_across_lines(gated_night):
    """A real night's h5paths rows are 50-61 characters long; broken at column 59,
    a Markdown list item renders them 'compound-superset-hdf5-collect ive-...'."""
    res, _, _ = gated_night
    rows = ['compound-superset-hdf5-collective-contiguous-earliest-warm',
            'convert-float-double-hdf5-collective-contiguous-earliest-warm']
    res = copy.deepcopy(res)
    gated = [m for m in res['metrics'] if m['role'] == 'gated']
    for m, row in zip(gated, rows):
        m.update(tool='h5paths', operation='read', metric='bw', params={'case': row})
    text = report.summary_markdown(res)
    assert max(len(line) for line in text.splitlines()) < 60
    words = text.split()
    for m, row in zip(gated, rows):
        shown = [w for w in words if w.startswith(row.split('-')[0] + '-')]
        assert shown, (row, text)
        for w in shown:
            w = w.rstrip(',:')
            assert w == row or ('…' in w and row.startswith(w.split('…')[0])
                                and row.endswith(w.split('…')[1])), (w, text)
    assert short_label(gated[0]).split()[1] == rows[0]       # the report keeps it whole


def test_data_per_run_of_an_ior_read_is_one_execution_of_it():
    """The check writes with one execution of ``-i 3`` and reads with three of ``-i 1``
    (params say repetitions 3 for both): a real night's read rows said 960.0 MiB, three
    times what one read execution reads."""
    from h5regress.record import Record
    from h5regress.report.context import _data_bytes
    params = {'blockSize': 167772160, 'segmentCount': 1, 'numTasks': 2, 'repetitions': 3}
    base = f'{EXE} -a HDF5 -b 167772160 -t 16777216 -s 1 -i {{}} -C -F -e {{}} -k -o f'
    got = {}
    for op, reps, flag, launcher in (('write', 3, '-w', ''), ('read', 1, '-r', 'mpirun -np 2 ')):
        rec = Record(tool='ior', operation=op, metric='bw_max', value=1.0, unit='MiB/s',
                     higher_is_better=True, params=params,
                     provenance={'command_line': launcher + base.format(reps, flag)},
                     hdf5_build='b', config_hash='c', run_id='r', timestamp='t')
        got[op] = _data_bytes(rec)
    assert got == {'write': 3 * 320 * 2 ** 20, 'read': 320 * 2 ** 20}


def test_builds_give_each_builds_spack_spec(gated_night):
    """The baseline's Spack spec was nowhere in the report (Where gives the candidate's)."""
    res, _, _ = gated_night
    man = {'builds': {b: {'hdf5': {'version': v, 'variants': '+mpi~threadsafe',
                                   'hash': f'{v}abcdefgh'}}
                      for b, v in ((res['baseline'], '1.14.6'), (res['candidate'], '2.0'))}}
    ctx = report.collect_context(res, [], man)
    assert report.BUILD_COLUMNS[-1].startswith('Spack spec')
    assert [r[-1] for r in report.build_rows(res, ctx)] == [
        'hdf5@1.14.6 +mpi~threadsafe /1.14.6a', 'hdf5@2.0 +mpi~threadsafe /2.0abcd']


def test_the_darshan_rerun_keeps_its_job_files_apart_from_the_nights(gated_night, tmp_path,
                                                                     monkeypatch):
    """After a FAIL the nightly reruns the FAIL's test case under Darshan; with the
    night's ReFrame output directory, ReFrame replaced the job script and output the
    report links with the Darshan run's."""
    from h5regress import darshan, nightly
    res, _, _ = gated_night
    out = tmp_path / 'night'
    out.mkdir()
    (out / 'gate.json').write_text(json.dumps(res))
    seen = []
    monkeypatch.setattr(nightly, 'run_once', lambda build, pair_id, args, env, reports=None,
                        output=None: seen.append((reports, output)) or 0)

    def night_diff(result, manifest_path, darshan_out, run_check):
        for build in (result['baseline'], result['candidate']):
            run_check(build, 'ior_check %hdf5_build=x', 'darshan-m0', {})
        return {'available': False, 'reason': 'test'}
    monkeypatch.setattr(darshan, 'night_diff', night_diff)
    args = nightly.NightRequest(out=out, history=None, select=('-t', 'nightly'), attempt='a1')
    nightly.after_fail(tmp_path / 'manifest.json', args, {})
    assert len(seen) == 2
    for reports, output in seen:
        assert reports == out / 'darshan' / 'reports'
        assert output is not None and Path(output).resolve() != (out / 'output').resolve()


def test_a_real_nights_no_slowdown_sentence_does_not_list_every_metric(gated_night):
    """The 22 gated metrics of the real 2026-11-27 night made the first screen's
    sentence (and summary.md's paragraph) list all 22 sensitivities; the verdicts'
    table and summary.md's list say each one."""
    res, _, _ = gated_night
    res = copy.deepcopy(res)
    gated = [m for m in res['metrics'] if m['role'] == 'gated']
    many = [copy.deepcopy(gated[0]) for _ in range(22)]
    for i, m in enumerate(many):
        m.update(key=f'k{i}', label=f'h5paths_check %benchmark=row-{i}', tool='h5paths',
                 params={'case': f'row-{i}'}, operation='read', metric='bw',
                 verdict='NO-SLOWDOWN-SEEN', sensitivity=0.05 + i / 100)
    res['metrics'] = [m for m in res['metrics'] if m['role'] != 'gated'] + many
    res['overall'] = 'NO-SLOWDOWN-SEEN'
    text = report.summary(res)
    assert 'a slowdown of 26 % or more would have been seen' in text
    assert 'h5paths row-21 read the least sensitive' in text
    assert sum(f'row-{i} ' in text for i in range(22)) == 1, text
    assert len(text) < 400
