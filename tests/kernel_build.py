"""This tree's C kernels built with CMake for the tests that run them."""

import subprocess
from pathlib import Path


def cmake_build(source: Path, build: Path, *defines: str) -> None:
    """Configure ``source`` into ``build`` (Release, and ``-D`` ``defines``) and build it;
    a failure fails the test with the tail of CMake's output."""
    for cmd in (['cmake', '-S', str(source), '-B', str(build), '-DCMAKE_BUILD_TYPE=Release',
                 *defines], ['cmake', '--build', str(build), '-j', '2']):
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, \
            f'{" ".join(cmd)} failed:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}'
