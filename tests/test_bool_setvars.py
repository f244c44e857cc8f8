"""A check's yes/no variable takes ``-S NAME=false`` as no.

ReFrame converts the text of ``-S`` with the variable's type, and ``bool('false')`` is
True: declared with Python's ``bool``, ``-S ior_check.hdf5_nofill=false`` turned IOR's
``--hdf5.noFill`` on and ``-S fsync=false`` left the fsync in. ReFrame's ``typ.Bool``
parses ``false``/``no``/``0``.
"""

import json

from tests.reframe_run import run_reframe

#: every yes/no variable of the checks, each set to "no" in one of its spellings
SET_TO_NO = {'hdf5_collective_metadata': 'false', 'hdf5_nofill': 'no', 'one_transfer': '0',
             'fsync': 'false', 'read_phase': 'False', 'sync': 'n'}


def test_minus_s_false_sets_every_yes_no_variable_to_no(tmp_path):
    args = ['-c', 'reframe/checks', '-n', '^(ior_build_check|flashio|fio_check)',
            '--describe']
    for name, text in SET_TO_NO.items():
        args += ['-S', f'{name}={text}']
    result = run_reframe(args, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    tests = json.loads(result.stdout[result.stdout.index('['):])
    seen = {}
    for test in tests:
        for name in SET_TO_NO.keys() & test.keys():
            seen.setdefault(name, set()).add(test[name])
    assert seen == {name: {False} for name in SET_TO_NO}, seen
