"""Issue 31 (items 3-6) and 29: nothing written is lost or cut, nothing stored is
replaced, a dry run stores nothing, two runs never share a stage or a measurement.

Full disks are small tmpfs mounts the tests make and unmount (root only; skipped with
the reason otherwise).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from h5regress import perflog
from test_reliability import needs_fio, run_suite


@pytest.fixture
def small_fs(tmp_path, request):
    """mount(size) -> a tmpfs of ``size`` under tmp_path, unmounted after the test."""
    if os.geteuid() != 0:
        pytest.skip('mounting a small tmpfs (a real "No space left on device") needs root')
    mounts = []

    def mount(size: str, name: str = 'small-fs') -> Path:
        mnt = tmp_path / name
        mnt.mkdir()
        out = subprocess.run(['mount', '-t', 'tmpfs', '-o', f'size={size}', 'h5r-small',
                              str(mnt)], capture_output=True, text=True)
        if out.returncode != 0:
            pytest.skip(f'cannot mount a tmpfs: {out.stderr.strip()}')
        mounts.append(mnt)
        return mnt

    yield mount
    for mnt in mounts:
        if subprocess.run(['umount', str(mnt)], capture_output=True).returncode != 0:
            subprocess.run(['umount', '-l', str(mnt)], capture_output=True)


def fill(mnt: Path, leave: int = 0) -> None:
    """Fill ``mnt`` up to ``leave`` free bytes (a page, 4 KiB, is the unit)."""
    st = os.statvfs(mnt)
    free = st.f_bavail * st.f_frsize
    with open(mnt / 'filler', 'wb') as fp:
        fp.write(b'\0' * max(free - leave, 0))


# ------------------------------------------------------------------------------------
# item 3: a perflog disk that fills mid-run

def test_a_perflog_line_that_does_not_fit_is_cut_back_and_named(small_fs):
    from h5regress import perfloghandler
    mnt = small_fs('64k')
    log = mnt / 'check.log'
    perfloghandler.append_whole(str(log), b'header\nfirst line\n')
    fill(mnt, leave=4096)
    with pytest.raises(OSError) as err:
        perfloghandler.append_whole(str(log), b'x' * 10000 + b'\n')
    assert err.value.filename == str(log) and err.value.errno == 28
    assert log.read_bytes() == b'header\nfirst line\n'       # no cut line


@needs_fio
def test_run_suite_with_a_full_perflog_disk_fails_naming_the_file(tmp_path, small_fs):
    mnt = small_fs('256k')
    fill(mnt, leave=4096)
    out = run_suite(['-n', 'fio_check.*direct', '--perflogdir', str(mnt)], tmp_path)
    log = mnt / 'local' / 'default' / 'fio_check.log'
    assert out.returncode == 4, out.stdout + out.stderr
    assert f'{log} could not be written (No space left on device' in out.stderr
    assert 'the results of fio_check' in out.stderr
    assert '\npass ' not in out.stdout and 'fail    fio_check' in out.stdout
    if log.exists():                    # whole lines only
        text = log.read_text()
        assert text == '' or text.endswith('\n')
        assert perflog.read([str(mnt)])[1] == []
