"""ReFrame loads the checks with their parameters, and --dry-run writes the job scripts."""

import re

from reframe_run import REPO, run_reframe, stub_path, two_build_manifest


def job_scripts(workdir):
    return {p.parent.name: p.read_text() for p in (workdir / 'stage').rglob('rfm_job.sh')}


def test_checks_list_with_their_parameters(tmp_path):
    out = run_reframe(['-c', 'reframe/checks/ior.py', '-c', 'reframe/checks/fio.py', '-l'],
                      tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    rows = re.findall(r'^- (ior_check|fio_check) (.*?) /[0-9a-f]{8}$', out.stdout, re.M)
    ior = [params for name, params in rows if name == 'ior_check']
    fio = [params for name, params in rows if name == 'fio_check']
    assert len(ior) == 8 and len(fio) == 2
    for api in ('POSIX', 'MPIIO', 'HDF5'):
        assert any(f'%benchmark={api}-' in p for p in ior)
    assert any('%benchmark=HDF5-collective-ssf' in p for p in ior)
    assert any('%benchmark=MPIIO-independent-fpp' in p for p in ior)
    assert all('%num_nodes=1' in p and '%tasks_per_node=2' in p for p in ior + fio)
    assert {p.split('%benchmark=')[1] for p in fio} == {'direct', 'buffered'}


def test_dry_run_on_local(tmp_path):
    out = run_reframe(['-c', 'reframe/checks/fio.py', '-c', 'reframe/checks/ior.py',
                       '--dry-run', '-n', 'fio_check|ior_check.*HDF5-collective-ssf'],
                      tmp_path, env=stub_path(tmp_path, 'ior'))
    scripts = job_scripts(tmp_path)
    fio = [s for name, s in scripts.items() if name.startswith('fio_check')]
    assert len(fio) == 2, out.stdout
    for script in fio:
        assert 'fio --rw=write' in script and '--fallocate=native' in script
        assert "trap 'rm -rf " in script and 'h5regress-exit-code: $h5r_rc' in script
        assert 'drop_caches' in script and 'fio --rw=read' in script
    ior = [s for name, s in scripts.items() if name.startswith('ior_check')]
    assert len(ior) == 1
    script = ior[0]
    assert 'export OMPI_MCA_io=ompio' in script
    assert re.search(r'mpirun -np 2 \S+/ior -a HDF5 .* -c -e -w -k ', script)
    # on one node each read repetition is an execution of its own after a cache drop
    assert re.search(r'for h5r_rep in \$\(seq 3\); do sync; if echo 3 > '
                     r'/proc/sys/vm/drop_caches .*; mpirun -np 2 \S+/ior -a HDF5 '
                     r'.* -i 1 -C -c -r -k ', script)


def test_dry_run_on_the_example_slurm_cluster(tmp_path):
    out = run_reframe(['-c', 'reframe/checks/fio.py', '-c', 'reframe/checks/ior.py',
                       '--system', 'example-lustre:compute', '--dry-run',
                       '-n', 'fio_check|ior_check.*MPIIO-collective-ssf'],
                      tmp_path, env=stub_path(tmp_path, 'ior'))
    scripts = job_scripts(tmp_path)
    assert scripts, out.stdout + out.stderr
    for name, script in scripts.items():
        for directive in ('#SBATCH --partition=compute', '#SBATCH --account=io-bench',
                          '#SBATCH --exclusive', '#SBATCH --time=0:30:0'):
            assert directive in script, (name, directive)
        assert 'lfs setstripe -c 8 "/lustre/scratch/$USER/h5regress/' in script
    ior = [s for name, s in scripts.items() if name.startswith('ior_check')]
    assert len(ior) == 2
    for script in ior:
        assert 'export OMPI_MCA_io=romio321' in script
        assert 'export ROMIO_HINTS=' in script
        assert re.search(r'^srun \S+/ior -a MPIIO -b 1073741824 -t 1073741824 -s 8 ',
                         script, re.M)
    assert {re.search(r'--ntasks=(\d+)', s).group(1) for s in ior} == {'32', '128'}


def test_checks_are_parameterised_over_the_manifest_builds(tmp_path):
    """One run compares HDF5 A against HDF5 B: every HDF5 check has a test per build."""
    path = two_build_manifest(tmp_path, ('ior', 'flash-io'))
    out = run_reframe(['-c', 'reframe/checks/ior.py', '-c', 'reframe/checks/flashio.py',
                       '-l'], tmp_path, env={'H5REGRESS_MANIFEST': str(path)})
    assert out.returncode == 0, out.stdout + out.stderr
    for check, rows in (('ior_check', 8), ('flashio_check', 4)):
        for build_id in ('hdf5-1.14.1', 'hdf5-1.15.0'):
            names = re.findall(rf'^- {check} .*%hdf5_build={build_id} ', out.stdout, re.M)
            assert len(names) == rows, (check, build_id)
    # the fixture-built kernel stands down when the manifest provides one
    assert 'flashio_build_check' not in out.stdout


def test_every_srun_partition_ends_the_step_when_a_task_dies():
    """srun leaves the other tasks of a step running when one dies (a segfault in
    MPI_Init on the test SLURM: the survivors waited in MPI_Init until the 10-minute
    limit); every srun partition of the configuration sets SLURM_KILL_BAD_EXIT=1."""
    import runpy
    conf = runpy.run_path(str(REPO / 'reframe' / 'config' / 'settings.py'))['site_configuration']
    parts = [(s['name'], p) for s in conf['systems'] for p in s['partitions']
             if p.get('launcher') == 'srun']
    assert parts
    for system, part in parts:
        env = dict(map(tuple, part.get('env_vars', [])))
        assert env.get('SLURM_KILL_BAD_EXIT') == '1', (system, part['name'])
