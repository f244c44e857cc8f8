"""Issue 13: every write figure says whether it includes the flush to storage
(``write_flush``), every record has ``tool_version`` and where it came from.

On the tools' real outputs (tests/fixtures/fio, ../shared/fixtures) and, where the
Spack environment is installed, on its real h5bench and MACSio installs.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from h5regress import durability, flush, manifest, toolversion
from h5regress.parsers import fio, flashio, h5bench, macsio
from test_parse_flashio import _summary

TESTS = Path(__file__).resolve().parent
SHARED = TESTS.parents[1] / 'shared' / 'fixtures'
OWN = TESTS / 'fixtures'
needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason=f'no fixtures at {SHARED}')


def files_in(directory: Path, wanted) -> dict[str, str]:
    return {str(p.relative_to(directory)): p.read_text(errors='replace')
            for p in sorted(directory.rglob('*')) if p.is_file() and wanted(p.name)}


# -- write_flush ----------------------------------------------------------------

def test_fio_buffered_end_fsync_is_fsync_and_direct_is_o_direct():
    buffered, = fio.parse(files_in(TESTS / 'fixtures' / 'fio' / 'seq-write-buffered-end-fsync',
                                   fio.wanted))
    direct, = fio.parse(files_in(TESTS / 'fixtures' / 'fio' / 'seq-write-direct', fio.wanted))
    assert durability.write_flush_of(buffered.provenance, 'write', 'bw') == 'fsync'
    assert durability.write_flush_of(direct.provenance, 'write', 'bw') == 'O_DIRECT'
    assert buffered.provenance['tool_version_source'] == 'tool output'


def test_fio_read_has_no_write_flush():
    read, = fio.parse(files_in(TESTS / 'fixtures' / 'fio' / 'seq-read-buffered', fio.wanted))
    assert durability.WRITE_FLUSH not in read.provenance


def _flashio_summary(fsync: bool) -> str:
    summary = _summary()
    summary['options']['fsync'] = fsync
    return json.dumps(summary)


@pytest.mark.parametrize('fsync, status', [(True, 'fsync'), (False, 'none')])
def test_flashio_write_flush_follows_its_fsync_option(fsync, status):
    run, = flashio.parse({'flashio.json': _flashio_summary(fsync)})
    assert durability.write_flush_of(run.provenance, 'checkpoint', 'bw') == status
    assert run.provenance['tool_version'] == '1.0.0'
    assert run.provenance['tool_version_source'] == 'tool output'
    assert 'version' not in run.provenance


@needs_shared
def test_flashio_original_never_flushes():
    case = next(p for p in sorted((SHARED / 'flash-io').iterdir())
                if p.is_dir() and not p.name.startswith('fail-'))
    run, = flashio.parse(files_in(case, lambda name: True))
    assert set(run.provenance['write_flush'].values()) == {'none'}


def test_h5bench_observed_rate_includes_the_flush_and_raw_rate_does_not():
    run, = h5bench.parse(files_in(OWN / 'h5bench' / 'own-direct-write-1d-contig-coll',
                                  h5bench.wanted))
    assert durability.write_flush_of(run.provenance, 'write', 'observed_rate') == 'fsync'
    assert durability.write_flush_of(run.provenance, 'write', 'raw_rate') == 'none'


def test_h5bench_read_has_no_write_flush():
    run, = h5bench.parse(files_in(OWN / 'h5bench' / 'own-direct-read-1d-contig-coll',
                                  h5bench.wanted))
    assert durability.WRITE_FLUSH not in run.provenance


def test_macsio_figures_are_page_cache():
    case = OWN / 'macsio' / 'own-hdf5-mif2-p1M-d3'
    run = macsio.parse(files_in(case, macsio.wanted))[0]
    assert durability.write_flush_of(run.provenance, 'write', 'bw') == 'none'


# -- the flush MACSio's check times -----------------------------------------------

def test_flush_fsyncs_every_file_and_says_so(tmp_path, capsys):
    (tmp_path / 'sub').mkdir()
    (tmp_path / 'a').write_bytes(b'x' * 4096)
    (tmp_path / 'sub' / 'b').write_bytes(b'y' * 100)
    assert flush.main([str(tmp_path)]) == 0
    seconds, size, files = flush.parse_line(capsys.readouterr().out)
    assert (size, files) == (4196, 2) and seconds >= 0


def test_flush_of_a_missing_directory_counts_nothing(tmp_path, capsys):
    assert flush.main([str(tmp_path / 'gone')]) == 0
    assert flush.parse_line(capsys.readouterr().out)[1:] == (0, 0)


def test_flush_line_absent():
    assert flush.parse_line('MACSio said nothing\n') is None


# -- tool_version -----------------------------------------------------------------

def _install(root: Path, version_file: str | None, spec_version: str | None) -> str:
    """A fake install: prefix/bin/tool, maybe bin/h5bench_version.py, maybe .spack/spec.json."""
    (root / 'bin').mkdir(parents=True)
    binary = root / 'bin' / 'tool'
    binary.write_text('#!/bin/sh\n')
    if version_file:
        (root / 'bin' / 'h5bench_version.py').write_text(f"__version__ = '{version_file}'\n")
    if spec_version:
        (root / '.spack').mkdir()
        (root / '.spack' / 'spec.json').write_text(json.dumps(
            {'spec': {'nodes': [{'name': 'h5bench', 'version': spec_version}]}}))
    return str(binary)


def test_version_from_output_wins(tmp_path):
    binary = _install(tmp_path, '1.4.0', 'git.abc=1.6')
    out = toolversion.describe({'tool_version': '4.0.0'}, binary)
    assert out == {'tool_version': '4.0.0', 'tool_version_source': 'tool output',
                   'tool_spack_version': 'git.abc=1.6'}


def test_version_from_the_build_file_then_the_spec(tmp_path):
    h5b = _install(tmp_path / 'h5bench', '1.4.0', 'git.abc=1.6')
    out = toolversion.describe({}, h5b)
    assert out['tool_version'] == '1.4.0'
    assert out['tool_version_source'].startswith('build file ')
    assert out['tool_spack_version'] == 'git.abc=1.6'
    macsio_bin = _install(tmp_path / 'macsio', None, 'git.7f1=master')
    out = toolversion.describe({}, macsio_bin)
    assert out['tool_version'] == 'git.7f1=master'
    assert out['tool_version_source'].startswith('Spack spec ')


def test_version_of_a_fixture_build_and_of_nothing(tmp_path):
    binary = _install(tmp_path, None, None)
    out = toolversion.describe({}, binary, {'tool_commit': 'c' * 40, 'tool_label': '1.6'})
    assert out['tool_version'] == '1.6@' + 'c' * 40
    assert 'fixture' in out['tool_version_source']
    out = toolversion.describe({}, binary)
    assert out['tool_version'] == 'unknown' and out['tool_version_source'].startswith('none')


def _spack_tool(name: str) -> str:
    try:
        builds = manifest.load(manifest.default_path())
    except (manifest.ManifestError, OSError):
        pytest.skip('no Spack manifest')
    for build in builds.values():
        if name in build.tools and os.path.exists(build.tools[name]):
            return build.tools[name]
    pytest.skip(f'{name} is not in the Spack manifest')


def test_real_h5bench_install_says_1_4_0_and_its_spec_1_6():
    out = toolversion.describe({}, _spack_tool('h5bench_write'))
    assert out['tool_version'] == '1.4.0'
    assert out['tool_version_source'].endswith('h5bench_version.py')
    assert out['tool_spack_version'].endswith('=1.6')


def test_real_macsio_install_has_its_spec_version():
    out = toolversion.describe({}, _spack_tool('macsio'))
    assert out['tool_version'].endswith('=master')
    assert out['tool_version_source'].startswith('Spack spec ')


@pytest.mark.parametrize('case, kind', [('own-runner-exerciser', 'exerciser'),
                                        ('own-runner-metadata', 'metadata')])
def test_h5bench_reads_back_in_one_execution_are_labelled_cached(case, kind):
    """The exerciser and hdf5_iotest read what they have just written, in the same
    execution: no drop can come between, so their reads say the cache was kept."""
    runs = h5bench.parse(files_in(OWN / 'h5bench' / case, h5bench.wanted))
    run = next(r for r in runs if r.params.get('benchmark') == kind)
    assert run.provenance['read_page_cache'] == 'kept'
    assert any('read figures are cached' in w for w in run.warnings)
    assert set(run.provenance['write_flush'].values()) == {'none'}
