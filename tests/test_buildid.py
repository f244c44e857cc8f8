"""The HDF5 build id is spelled in h5regress/buildid.py only (issue 26)."""

import re
from pathlib import Path

from h5regress import buildid
from h5regress.parsers import base

REPO = Path(__file__).resolve().parents[1]
SOURCES = [*(REPO / 'h5regress').rglob('*.py'), *(REPO / 'reframe' / 'checks').glob('*.py'),
           *(REPO / 'benchmarks').glob('*.py')]
#: a build id put together or taken apart by hand: f'hdf5-{...}', 'hdf5-' + ...,
#: .removeprefix('hdf5-'), .startswith('hdf5-')
BY_HAND = re.compile(r'''f["']hdf5-\{|["']hdf5-["']\s*\+|(removeprefix|startswith)\(["']hdf5-["']''')


def test_build_ids_are_made_and_read_by_buildid_only():
    spelled = [f'{p.relative_to(REPO)}:{n}' for p in SOURCES if p.name != 'buildid.py'
               for n, line in enumerate(p.read_text(encoding='utf-8').splitlines(), 1)
               if BY_HAND.search(line)]
    assert spelled == []


def test_a_parsed_run_without_a_build_says_no_build():
    run = base.ParsedRun(tool='ior', params={}, provenance={},
                         measurements=[base.Measurement('write', 'bw', 1.0, 'MiB/s', True)])
    assert [r.hdf5_build for r in run.to_records()] == [buildid.NO_BUILD]
