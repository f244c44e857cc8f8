"""The parsers on the project's own real outputs (tests/fixtures/<tool>/own-* and
fail-own-*, recorded here by tests/fixtures/record-tools.sh; each case's README.md gives
the command, the versions and how a failure was produced). They run in a clone without
../shared: every tool has successes and failures of its own here."""

import json
import re

import pytest

from h5regress.parsers import parser_for
from h5regress.parsers.base import RunFailed
from reframe_run import OWN_FIXTURES

TOOLS = ('ior', 'mdtest', 'macsio', 'h5bench', 'flash-io')
CASES = [(tool, d) for tool in TOOLS for d in sorted((OWN_FIXTURES / tool).glob('*own-*'))]
#: what each failure must be named by (the tool's own words)
CAUSES = {
    ('ior', 'fail-own-hdf5-nonexistent-dir'): 'cannot create file',
    ('ior', 'fail-own-hdf5-full-disk'): 'cannot write to data set',
    ('ior', 'fail-own-mpiio-full-disk'): 'the file system is full (ENOSPC)',
    ('ior', 'fail-own-bad-option'): 'invalid argument: --no-such-option',
    ('mdtest', 'fail-own-full-disk'): 'No space left on device',
    ('macsio', 'fail-own-mif2-full-disk'): 'crash',
    ('macsio', 'fail-own-sif-nonexistent-dir'): 'errno 2 (No such file or directory)',
    ('macsio', 'fail-own-miffpp-missing-count'): 'unknown argument',
    ('macsio', 'fail-own-unknown-interface'): 'crash',
    ('h5bench', 'fail-own-direct-write-nonexistent-dir'): 'unable to asynchronously create',
    ('h5bench', 'fail-own-runner-interleaved-read'): 'unsupported value/patterns',
    ('h5bench', 'fail-own-runner-exerciser-not-on-PATH'): 'h5bench_exerciser is not available',
    ('h5bench', 'fail-own-runner-write-bad-path'): 'Error detected in HDF5',
    ('flash-io', 'fail-own-hdf5-full-disk'): 'HDF5',
    ('flash-io', 'fail-own-hdf5-nonexistent-dir'): 'HDF5 errors',
}


def files_of(tool, case):
    module = parser_for(tool)
    return {str(p.relative_to(case)): p.read_text(errors='replace') for p in case.rglob('*')
            if p.is_file() and module.wanted(str(p.relative_to(case)))}


def command_of(case):
    return re.search(r'```\n(.*?)\n```', (case / 'README.md').read_text(), re.S).group(1)


def parse(tool, case):
    module = parser_for(tool)
    if tool == 'macsio':
        return module.parse(files_of(tool, case), command=command_of(case))
    return module.parse(files_of(tool, case))


def test_every_tool_has_own_successes_and_failures():
    for tool in TOOLS:
        names = [d.name for t, d in CASES if t == tool]
        assert any(n.startswith('own-') for n in names), tool
        assert any(n.startswith('fail-own-') for n in names), tool
    assert set(CAUSES) == {(t, d.name) for t, d in CASES if d.name.startswith('fail-')}


@pytest.mark.parametrize('tool, case', [c for c in CASES if c[1].name.startswith('own-')],
                         ids=lambda x: getattr(x, 'name', x))
def test_every_own_success_parses_into_samples(tool, case):
    readme = (case / 'README.md').read_text()
    assert '- Exit code: 0' in readme
    runs = parse(tool, case)
    assert runs and all(run.measurements for run in runs)
    for run in runs:
        # rates and bandwidths (a phase time may print as 0.000)
        assert all(m.value > 0 for m in run.measurements if m.higher_is_better)
        assert run.params.get('num_ranks', 2) == 2


@pytest.mark.parametrize('tool, case', [c for c in CASES if c[1].name.startswith('fail-')],
                         ids=lambda x: getattr(x, 'name', x))
def test_every_own_failure_is_a_failed_run_naming_its_cause(tool, case):
    with pytest.raises(RunFailed) as failed:
        parse(tool, case)
    assert CAUSES[(tool, case.name)] in str(failed.value)


def test_ior_values_are_the_summary_files():
    """The parser's numbers are IOR's own (its JSON summary), per operation."""
    case = OWN_FIXTURES / 'ior' / 'own-hdf5-coll-ssf-b16m'
    run, = parse('ior', case)
    summary = {s['operation']: s for s in json.loads((case / 'summary.json').read_text())
               ['summary']}
    for op in ('write', 'read'):
        assert run.measurement(op, 'bw_max').value == summary[op]['bwMaxMIB']
        assert run.measurement(op, 'bw_mean').value == summary[op]['bwMeanMIB']
    assert run.params['api'] == 'HDF5' and run.params['blockSize'] == 16 * 2 ** 20
    assert run.params['transferSize'] == 2 ** 20 and run.params['repetitions'] == 2


def test_flashio_values_are_the_kernels_json():
    case = OWN_FIXTURES / 'flash-io' / 'own-hdf5-collective-iter2'
    runs = parse('flash-io', case)
    kernel = json.loads((case / 'flashio.json').read_text())
    assert runs and kernel
    assert all(run.params.get('api') in ('hdf5', None) for run in runs)
