"""The project's YAML data files through one loader (issue 31, item 8): a byte that is
not UTF-8, a key given twice, aliases expanded into a "YAML bomb" are errors naming the
file and the line, in ``refs --check``, ``gate`` (reference files and a site's config)
and the presets, never a traceback or a silently changed value."""

import re

import pytest

from h5regress import gate, gateconfig, presets, refs, yamlfile
from test_gate import BASE, CAND, paired, write_jsonl

FLOOR = "ior_check:\n  $index: ['$partition', 'case']\n  'local:default':\n    '.*':\n"
NOT_UTF8 = (FLOOR + "      # caf\xe9\n      write_bw_mean: [300, -0.95, null, 'MiB/s']\n"
            ).encode('latin-1')
DUPLICATE = (FLOOR + "      write_bw_mean: [300, -0.95, null, 'MiB/s']\n"
             "      write_bw_mean: [1, -0.95, null, 'MiB/s']\n").encode()
LEVELS = 'abcdefghi'
BOMB = ("a: &a [" + ', '.join(['lol'] * 9) + "]\n" + ''.join(
    f"{b}: &{b} [" + ', '.join([f'*{a}'] * 9) + "]\n" for a, b in zip(LEVELS, LEVELS[1:]))
        ).encode()

BAD = {
    'not-utf8': (NOT_UTF8, r'line 5, column 12 \(byte \d+\): byte 0xe9 is not UTF-8'),
    'duplicate': (DUPLICATE, r"line 6: duplicate key 'write_bw_mean' \(first given at "
                             r'line 5'),
    'bomb': (BOMB, r'more than 1000000 nodes once its aliases are expanded'),
}


@pytest.mark.parametrize('case', sorted(BAD))
def test_refs_check_names_the_file_and_line(tmp_path, capsys, case):
    text, said = BAD[case]
    f = tmp_path / 'ior.yaml'
    f.write_bytes(text)
    assert refs.main_refs(['--check', str(f)]) == 4
    err = capsys.readouterr().err
    assert f'h5regress refs: error: {f}: ' in err
    assert re.search(said, err), err
    assert 'Traceback' not in err


@pytest.mark.parametrize('case', sorted(BAD))
def test_gate_with_a_bad_reference_file_is_an_error(tmp_path, capsys, case):
    rdir = tmp_path / 'refs'
    rdir.mkdir()
    (rdir / 'ior.yaml').write_bytes(BAD[case][0])
    path = write_jsonl(tmp_path / 'n.jsonl', paired(10, 1.0))
    assert gate.main_gate(['--baseline', BASE, '--candidate', CAND, '--records', path,
                           '--refs', str(rdir), '--quiet']) == gate.EXIT_ERROR
    assert f'{rdir / "ior.yaml"}: ' in capsys.readouterr().err


@pytest.mark.parametrize('case', sorted(BAD))
def test_a_site_gate_config_and_the_presets_name_the_file(tmp_path, case):
    text = {'not-utf8': b'# caf\xe9\nmargin: 0.1\n',
            'duplicate': b'margin: 0.1\nalpha: 0.05\nmargin: 0.5\n',
            'bomb': BOMB}[case]
    f = tmp_path / 'site.yaml'
    f.write_bytes(text)
    with pytest.raises(gateconfig.ConfigError, match=f'site.yaml: .*'):
        gateconfig.load_config(f)
    with pytest.raises(presets.PresetError, match=f'site.yaml: .*'):
        presets.load('ior', str(f))


def test_aliases_and_merges_within_the_cap_still_load(tmp_path):
    f = tmp_path / 'x.yaml'
    f.write_text('a: &x {p: 1, q: [1, 2]}\nb: *x\nc: {<<: *x, p: 2}\n')
    assert yamlfile.load(f) == {'a': {'p': 1, 'q': [1, 2]}, 'b': {'p': 1, 'q': [1, 2]},
                                'c': {'p': 2, 'q': [1, 2]}}
    f.write_text('a: &a [*a]\n')
    with pytest.raises(yamlfile.YamlFileError, match='alias inside its own anchor'):
        yamlfile.load(f)
    f.write_text('[' * 50000)
    with pytest.raises(yamlfile.YamlFileError, match='x.yaml: nested too deeply'):
        yamlfile.load(f)
