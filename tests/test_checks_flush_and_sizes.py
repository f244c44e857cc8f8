"""Issue 13: what the FLASH-IO and MACSio checks' jobs do so that their write figures
include getting the data to storage, and the sizes ``local`` gives FLASH-IO (dry runs:
stub binaries, no benchmark runs)."""

import importlib.util
import re
import sys
from pathlib import Path

import pytest

from h5regress.durability import write_flush_of
from h5regress.parsers import RunFailed, macsio
from h5regress.parsers.base import MIB
from reframe_run import OWN_FIXTURES, REPO, run_reframe, stub_path

MACSIO_CASE = OWN_FIXTURES / 'macsio' / 'own-hdf5-mif2-p1M-d3'


def job_scripts(workdir, prefix):
    return [p.read_text() for p in (workdir / 'stage').rglob('rfm_job.sh')
            if p.parent.name.startswith(prefix)]


def test_flashio_fsyncs_and_takes_locals_size(tmp_path):
    out = run_reframe(['-c', 'reframe/checks/flashio.py', '--dry-run', '-n', 'flashio_check'],
                      tmp_path, env=stub_path(tmp_path, 'flash-io'))
    scripts = job_scripts(tmp_path, 'flashio_check')
    assert len(scripts) == 4, out.stdout + out.stderr
    for script in scripts:
        line = next(line for line in script.splitlines() if '/flash-io ' in line)
        # every rank fsyncs each file before the kernel's clock stops (write_flush: fsync)
        assert ' --fsync ' in line
        # local's extras.flashio_blocks_per_rank: a checkpoint long enough to time
        assert re.search(r' --blocks-per-rank 2000 ', line), line


def test_macsio_flushes_its_files_after_the_run(tmp_path):
    out = run_reframe(['-c', 'reframe/checks/macsio.py', '--dry-run', '-n',
                       'macsio_check.*hdf5-SIF-collective$'],
                      tmp_path, env=stub_path(tmp_path, 'macsio'))
    scripts = job_scripts(tmp_path, 'macsio_check')
    assert len(scripts) == 1, out.stdout + out.stderr
    lines = scripts[0].splitlines()
    run = next(i for i, line in enumerate(lines) if '/macsio ' in line)
    timed = next(i for i, line in enumerate(lines) if '-m h5regress.flush ' in line)
    listed = next(i for i, line in enumerate(lines) if line.startswith('find '))
    # after MACSio, before the files are listed (and long before the trap removes them)
    assert run < timed < listed


def macsio_checks():
    """reframe/checks/macsio.py as a module (its classes, not run by ReFrame)."""
    spec = importlib.util.spec_from_file_location('macsio_checks_under_test',
                                                  REPO / 'reframe' / 'checks' / 'macsio.py')
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module     # ReFrame reads the classes' source
    spec.loader.exec_module(module)
    return module


def test_macsio_bw_flushed_adds_the_timed_flush():
    run = macsio.parse({p.name: p.read_text() for p in MACSIO_CASE.iterdir()
                        if macsio.wanted(p.name)})[0]
    size, time = run.measurement('write', 'size').value, run.measurement('write', 'time').value
    run = macsio_checks().macsio_base.with_flush(
        run, 'h5regress-flush: seconds=0.250000 bytes=335544320 files=4\n')
    assert run.measurement('flush', 'time').value == 0.25
    assert run.measurement('write', 'bw_flushed').value == \
        pytest.approx(size / MIB / (time + 0.25))
    assert write_flush_of(run.provenance, 'write', 'bw_flushed') == 'fsync'
    assert write_flush_of(run.provenance, 'write', 'bw') == 'none'
    with pytest.raises(RunFailed, match='flush'):
        macsio_checks().macsio_base.with_flush(
            run, 'h5regress-flush-failed: /scr/x: Input/output error\n')
