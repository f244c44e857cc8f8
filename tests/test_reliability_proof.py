"""Issue 31, items 1 and 2: no sample without proof of the work; the HDF5 that really ran.

A stand-in tool on ``PATH`` that writes a real run's summary (a recorded fixture) where
the check asks for it and exits 0, without writing any data, must fail sanity through
real ReFrame, naming the files and sizes expected and found; and the pure comparison of
a listing with a row's expectation (:mod:`h5regress.proof`) is tested on its own.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from h5regress import loadedhdf5, perflog, probe, proof
from reframe_run import OWN_FIXTURES, run_reframe

#: a tool that writes a recorded summary where it is asked to and nothing else:
#: ``$1`` the fixture for a write, ``$2`` the one for a read; the output file is the
#: value of IOR's ``summaryFile=`` or of fio's ``--output=``
STAND_IN = '''#!/bin/sh
out=''; kind=write
for arg in "$@"; do
  case "$arg" in
    summaryFile=*) out="${arg#summaryFile=}" ;;
    --output=*) out="${arg#--output=}" ;;
    -r|--rw=read) kind=read ;;
  esac
done
[ "$kind" = write ] && src=%(write)s || src=%(read)s
cp "$src" "$out"
exit 0
'''


def stand_in(bin_dir: Path, name: str, write: Path, read: Path) -> str:
    """A stand-in ``name`` in ``bin_dir``; the PATH that finds it first."""
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / name
    script.write_text(STAND_IN % {'write': f"'{write}'", 'read': f"'{read}'"})
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return f'{bin_dir}{os.pathsep}{os.environ["PATH"]}'


def records_of(workdir: Path) -> list:
    records, problems = perflog.read([str(workdir / 'perflogs')])
    assert not problems, problems
    return records


def test_ior_that_wrote_nothing_fails_sanity(tmp_path):
    case = OWN_FIXTURES / 'ior' / 'json-one-read-execution-per-repetition'
    path = stand_in(tmp_path / 'bin', 'ior', case / 'ior-write.json', case / 'ior-read-1.json')
    out = run_reframe(['-c', 'reframe/checks/ior.py', '-r',
                       '-n', 'ior_check.*POSIX-independent-ssf', '-S', 'repetitions=1'],
                      tmp_path, env={'PATH': path}, timeout=600)
    assert out.returncode != 0, out.stdout
    assert 'no proof of the work' in out.stdout, out.stdout
    # names the file and the sizes expected and found (2 ranks of the local preset)
    assert "IOR's shared file (ior.dat): 1 file(s) expected, 0 found (none)" in out.stdout
    assert records_of(tmp_path) == []


def test_fio_that_wrote_nothing_fails_sanity(tmp_path):
    fixtures = OWN_FIXTURES / 'fio'
    path = stand_in(tmp_path / 'bin', 'fio',
                    fixtures / 'seq-write-direct-group-reporting-output-file' / 'fio-write.json',
                    fixtures / 'seq-read-direct' / 'stdout.txt')
    out = run_reframe(['-c', 'reframe/checks/fio.py', '-r', '-n', 'fio_check.*direct'],
                      tmp_path, env={'PATH': path}, timeout=600)
    assert out.returncode != 0, out.stdout
    assert 'no proof of the work' in out.stdout, out.stdout
    assert "fio's write files, one per job (seqwrite.*.0): 2 file(s) expected, 0 found" \
        in out.stdout
    assert records_of(tmp_path) == []


# ------------------------------------------------------------------ the pure comparison

SHARED = proof.Expectation((proof.FileSet("IOR's shared file", 'ior.dat', count=1,
                                          min_each=4096),))


def test_a_listing_that_holds_the_files_asked_is_proof():
    assert proof.check(SHARED, '4096 ior.dat\n') == []
    per_rank = proof.Expectation((proof.FileSet('per rank', 'ior.dat.*', count=2,
                                                min_each=10),))
    assert proof.check(per_rank, '10 ior.dat.00000000\n12 ior.dat.00000001\n') == []


def test_a_short_or_missing_file_is_named_with_the_sizes():
    assert proof.check(SHARED, '100 ior.dat\n') == [
        "IOR's shared file: ior.dat below the 4096 B each file must hold (ior.dat 100 B)"]
    assert proof.check(SHARED, '4096 other.dat\n') == [
        "IOR's shared file (ior.dat): 1 file(s) expected, 0 found (none)"]
    total = proof.Expectation((proof.FileSet('data', 'd*', min_total=30),))
    assert proof.check(total, '10 d1\n10 d2\n') == ['data: 20 B in all, at least 30 B expected']


def test_no_listing_is_no_proof():
    problems = proof.check(SHARED, None, where='/scratch/x')
    assert problems and 'no listing of /scratch/x (h5r-files.txt)' in problems[0]


def test_a_tool_that_removes_its_files_must_leave_nothing_and_change_the_directory():
    removed = proof.Expectation(nothing_else=True, changed=True)
    assert proof.check(removed, '', '/scratch/x\n') == []
    assert proof.check(removed, '', '') == [
        'the data directory was not modified after the tool started '
        '(h5r-data-dir-changed.txt is empty): nothing was made or removed in it']
    assert proof.check(removed, '3901 t/f.0\n', '/scratch/x\n') == [
        '1 file(s) left that the run should have removed: t/f.0']


@pytest.mark.parametrize('line', ['', 'garbage', 'x y'])
def test_lines_that_are_no_listing_lines_are_ignored(line):
    assert proof.parse_listing(line + '\n5 a\n') == {'a': 5}


# ------------------------------------------------------------------ the HDF5 that really ran

def test_a_kernel_running_another_builds_hdf5_fails_naming_both(tmp_path):
    """Issue 31, item 2: the h5paths kernel of one build, made to load another build's
    libhdf5 (``LD_PRELOAD``, HDF5's own check silenced), fails sanity naming both."""
    from test_spack_tools import MANIFEST, manifest_builds

    builds = manifest_builds()
    if len(builds) < 2:
        pytest.skip(f'one HDF5 build in the manifest ({", ".join(builds)}): nothing to '
                    'preload in its place')
    labelled, other = sorted(builds)[:2]
    library = Path(builds[other].prefix) / 'lib' / 'libhdf5.so'
    out = run_reframe(['-c', 'reframe/checks/h5paths.py', '-r', '-n',
                       f'h5paths_check.*{labelled}.*%benchmark=compound-same-hdf5-collective-'
                       'contiguous-earliest$', '-S', 'iterations=1',
                       '-S', 'size_factor=0.0625'], tmp_path,
                      env={'H5REGRESS_MANIFEST': str(MANIFEST), 'H5REGRESS_REQUIRE_TOOLS': '1',
                           'LD_PRELOAD': str(library), 'HDF5_DISABLE_VERSION_CHECK': '1'},
                      timeout=600)
    assert out.returncode != 0, out.stdout
    assert 'the wrong HDF5 ran' in out.stdout, out.stdout
    assert f'loaded HDF5 {builds[other].hdf5_version} from {library}' in out.stdout
    assert f'labelled {labelled}: HDF5 {builds[labelled].hdf5_version}' in out.stdout
    assert records_of(tmp_path) == []


def test_loaded_hdf5_against_the_build():
    prefix = ('/spack/hdf5-1.14.1',)
    same = [loadedhdf5.Loaded('kernel', '1.14.1', '/spack/hdf5-1.14.1/lib/libhdf5.so.310')]
    assert loadedhdf5.problems('hdf5-1.14.1', '1.14.1', prefix, same) == []
    other = [loadedhdf5.Loaded('kernel', '1.15.0', '/spack/hdf5-1.15.0/lib/libhdf5.so')]
    assert loadedhdf5.problems('hdf5-1.14.1', '1.14.1', prefix, other) == [
        'kernel loaded HDF5 1.15.0 from /spack/hdf5-1.15.0/lib/libhdf5.so, but the records '
        'would be labelled hdf5-1.14.1: HDF5 1.14.1 of /spack/hdf5-1.14.1']
    # a pre-release build (H5_VERS_SUBRELEASE) loads as its release: the kernel's
    # H5get_libversion says 1.10.5 of the build labelled 1.10.5-snap1
    snap = ('/spack/hdf5-git.a4cfd0bf',)
    kernel = [loadedhdf5.Loaded('kernel', '1.10.5', snap[0] + '/lib/libhdf5.so.103')]
    assert loadedhdf5.problems('hdf5-x', '1.10.5-snap1', snap, kernel) == []
    assert len(loadedhdf5.problems('hdf5-x', '1.10.6-snap1', snap, kernel)) == 1
    # the same version from another prefix (another build of it) is another build
    copy = [loadedhdf5.Loaded('job', '1.14.1', '/elsewhere/lib/libhdf5.so.310')]
    assert len(loadedhdf5.problems('hdf5-1.14.1', '1.14.1', prefix, copy)) == 1
    # a source that cannot say the file is judged by its version alone
    assert loadedhdf5.problems('hdf5-1.14.1', '1.14.1', prefix,
                               [loadedhdf5.Loaded('ior', '1.14.1')]) == []


def test_the_probe_reads_a_preloaded_libhdf5_first():
    ldd = ('\tlinux-vdso.so.1 (0x00007f2ce6bf8000)\n'
           '\t/spack/hdf5-1.15.0/lib/libhdf5.so (0x00007f2ce6600000)\n'
           '\tlibhdf5.so.310 => /spack/hdf5-1.14.1/lib/libhdf5.so.310 (0x00007f2ce6200000)\n')
    assert probe.loaded_libhdf5(ldd) == '/spack/hdf5-1.15.0/lib/libhdf5.so'
    linked = ('\tlibhdf5_hl.so.310 => /spack/hdf5-1.14.1/lib/libhdf5_hl.so.310 (0x1)\n'
              '\tlibhdf5.so.310 => /spack/hdf5-1.14.1/lib/libhdf5.so.310 (0x2)\n')
    assert probe.loaded_libhdf5(linked) == '/spack/hdf5-1.14.1/lib/libhdf5.so.310'
    assert probe.loaded_libhdf5('\tlibhdf5.so.310 => not found\n') == ''


def test_the_probe_names_the_mpi_library_by_its_file_name():
    ldd = ('\tlibmpi_cxx.so.40 => /usr/lib/libmpi_cxx.so.40 (0x1)\n'
           '\tlibmpi.so.40 => /spack/openmpi-5.0.5/lib/libmpi.so.40 (0x2)\n'
           '\tlibmpich.so.12 => /usr/lib/libmpich.so.12 (0x3)\n')
    assert probe.loaded_library(ldd, r'lib(mpi|mpich)\.so') == \
        '/spack/openmpi-5.0.5/lib/libmpi.so.40'


@pytest.mark.skipif(shutil.which('mpicc') is None, reason='needs mpicc')
def test_the_probe_asks_the_mpi_library_the_binary_loads(tmp_path, monkeypatch):
    # the version of the libmpi the benchmark runs with, as that library says it, not
    # what an mpirun on PATH says (it may be another MPI's, or none)
    src = tmp_path / 'mpi.c'
    src.write_text('#include <mpi.h>\nint main(void) { int f; return MPI_Initialized(&f); }\n')
    subprocess.run(['mpicc', str(src), '-o', str(tmp_path / 'mpi')], check=True)
    other = tmp_path / 'bin'
    other.mkdir()
    (other / 'mpirun').write_text('#!/bin/sh\necho "mpirun (Another MPI) 0.1"\n')
    (other / 'mpirun').chmod(0o755)
    monkeypatch.setenv('PATH', f'{other}:{os.environ["PATH"]}')
    found = probe.probe(str(tmp_path), str(tmp_path / 'mpi'))
    assert re.match(r'(Open MPI v|MPICH)', found['mpi_library'])
    assert re.match(r'lib(mpi|mpich)\.so', os.path.basename(found['mpi_library_path']))
