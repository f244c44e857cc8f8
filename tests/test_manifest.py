"""h5regress.manifest: generate from `spack find --json`, write atomically,
load and validate; the checks' parameterisation over the manifest's builds.

Fixtures (tests/fixtures/manifest/): the real output of
`spack -e spack-env find --json` and `spack -e spack-env find --format
'{hash} {prefix}'` after installing the environment with Spack 0.23 on a
Debian 12 workstation, with the machine's paths replaced: install prefixes by
@PREFIX@ and the repository by /src/h5regress.  The tests lay out a fake
install tree under tmp_path (empty files where the tools are).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import pathlib
import stat
import sys

import pytest

from h5regress import manifest as mf

FIX = pathlib.Path(__file__).resolve().parent / "fixtures" / "manifest"
BASELINE = "hdf5-1.14.1"
CANDIDATE = "hdf5-1.15.0"
ALL_TOOLS = {"ior", "mdtest", "macsio", "h5bench_write", "h5bench_read",
             "h5bench_write_var_normal_dist", "h5bench_exerciser", "h5bench_hdf5_iotest",
             "flash-io", "h5paths"}


def find_json() -> list[dict]:
    return json.loads((FIX / "spack-find.json").read_text())


def prefixes(root: pathlib.Path) -> dict[str, str]:
    out = {}
    for line in (FIX / "prefixes.txt").read_text().splitlines():
        h, p = line.split(None, 1)
        out[h] = p.replace("@PREFIX@", str(root))
    return out


def lay_out_install(root: pathlib.Path, records, pfx, skip=()):
    """Empty executables where the environment installs its tools, and the
    HDF5 header the version comes from."""
    layout = {
        "ior": ["bin/ior", "bin/mdtest"],
        "macsio": ["macsio"],
        "h5bench": ["bin/h5bench_write", "bin/h5bench_read", "bin/h5bench_exerciser",
                    "bin/h5bench_hdf5_iotest", "bin/h5bench_write_var_normal_dist"],
        "flash-io": ["bin/flash-io"],
        "h5paths": ["bin/h5paths"],
        mf.DARSHAN_PACKAGE: [mf.DARSHAN_LIBRARY],
        mf.ASYNC_PACKAGE: [mf.ASYNC_LIBRARY],
    }
    for rec in records:
        prefix = pathlib.Path(pfx[rec["hash"]])
        if rec["name"] == "hdf5":
            label = rec["version"].split("=")[1]
            major, minor, release = label.split(".")
            (prefix / "include").mkdir(parents=True, exist_ok=True)
            (prefix / "include" / "H5public.h").write_text(
                f'#define H5_VERS_MAJOR {major}\n#define H5_VERS_MINOR {minor}\n'
                f'#define H5_VERS_RELEASE {release}\n#define H5_VERS_SUBRELEASE ""\n')
        for rel in layout.get(rec["name"], []):
            if rel in skip:
                continue
            f = prefix / rel
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text("#!/bin/sh\n")
            f.chmod(f.stat().st_mode | stat.S_IXUSR)


@pytest.fixture
def env(tmp_path):
    """(env dir with a spack.lock, records, prefixes) over a fake install tree."""
    env_dir = tmp_path / "spack-env"
    env_dir.mkdir()
    (env_dir / "spack.lock").write_text('{"_meta": {"file-type": "spack-lockfile"}}\n')
    records = find_json()
    pfx = prefixes(tmp_path / "install")
    lay_out_install(tmp_path / "install", records, pfx)
    return env_dir, records, pfx


def gen(env_dir, records, pfx, **kw):
    return mf.generate(records, env_dir, env_dir / "spack.lock", prefixes=pfx,
                       spack_version="0.23.0.dev0 (test)", **kw)


# --------------------------------------------------------------- generate


def test_fixture_is_real_spack_output():
    records = find_json()
    names = sorted({r["name"] for r in records})
    assert {"hdf5", "ior", "macsio", "h5bench", "flash-io", "h5paths",
            mf.DARSHAN_PACKAGE} <= set(names)
    for r in records:
        assert len(r["hash"]) == 32 and "parameters" in r and "version" in r
    text = (FIX / "spack-find.json").read_text() + (FIX / "prefixes.txt").read_text()
    for local in ("/work/", "/opt/", "/root/", "/tmp/"):
        assert local not in text


def test_generate_from_spack_find(env):
    env_dir, records, pfx = env
    m = gen(env_dir, records, pfx, now=dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc))
    assert m["schema"] == 1
    assert m["generated"] == "2026-01-02T03:04:05Z"
    assert m["spack_version"] == "0.23.0.dev0 (test)"
    assert m["environment"] == str(env_dir)
    assert m["lock_sha256"] == mf.sha256_file(env_dir / "spack.lock")
    assert sorted(m["builds"]) == [BASELINE, CANDIDATE]
    b = m["builds"][BASELINE]
    assert b["hdf5"]["commit"] == "577c192518598c7e2945683655feffcdbdf5a91b"
    assert b["hdf5"]["label"] == "1.14.1" and b["hdf5"]["version"] == "1.14.1"
    assert b["hdf5"]["variants"].startswith("~cxx~fortran+hl")
    for v in ("+mpi", "+hl", "+subfiling", "+shared"):
        assert v in b["hdf5"]["variants"]
    assert "api=default" in b["hdf5"]["variants"]
    assert len(b["hdf5"]["hash"]) == 32
    assert b["hdf5"]["prefix"] == pfx[b["hdf5"]["hash"]]
    c = m["builds"][CANDIDATE]
    assert c["hdf5"]["commit"] == "b382a8ef85acaedb63d05fc29305ac24d9b1805a"
    for build in m["builds"].values():
        assert set(build["tools"]) == ALL_TOOLS
        for tool, path in build["tools"].items():
            assert os.path.isabs(path) and os.path.exists(path), (tool, path)
        assert build["tools"]["macsio"].endswith("/macsio")
        assert "/bin/" not in build["tools"]["macsio"]
    # the tools of a build are the ones linked with that build's HDF5
    ior = {r["hash"]: r for r in records if r["name"] == "ior"}
    for build in m["builds"].values():
        ior_prefix = build["tools"]["ior"].rsplit("/bin/", 1)[0]
        (rec,) = [r for h, r in ior.items() if pfx[h] == ior_prefix]
        (dep,) = [d for d in rec["dependencies"] if d["name"] == "hdf5"]
        assert dep["hash"] == build["hdf5"]["hash"]


def async_records(root: pathlib.Path, pfx: dict[str, str]) -> list[dict]:
    """The async VOL connector's records (issue 30), laid out under ``root``."""
    records = json.loads((FIX / "spack-find-async.json").read_text())
    for line in (FIX / "prefixes-async.txt").read_text().splitlines():
        h, p = line.split(None, 1)
        pfx[h] = p.replace("@PREFIX@", str(root))
    lay_out_install(root, records, pfx)
    return records


def test_async_h5bench_goes_to_its_builds_async_entry(env, tmp_path):
    """h5bench +async and its thread-safe HDF5 are not builds of their own: each is
    the ``async`` entry of the build of the same commit, with the connector."""
    env_dir, records, pfx = env
    m = gen(env_dir, records + async_records(tmp_path / "install", pfx), pfx)
    assert sorted(m["builds"]) == [BASELINE, CANDIDATE]
    for build in m["builds"].values():
        assert set(build["tools"]) == ALL_TOOLS
        assert "~threadsafe" in build["hdf5"]["variants"]
        entry = build["async"]
        assert entry["hdf5"]["commit"] == build["hdf5"]["commit"]
        assert entry["hdf5"]["label"] == build["hdf5"]["label"]
        assert "+threadsafe" in entry["hdf5"]["variants"]
        assert entry["hdf5"]["hash"] != build["hdf5"]["hash"]
        assert set(entry["tools"]) == {"h5bench_write", "h5bench_read",
                                       "h5bench_write_var_normal_dist"}
        assert all("/h5bench-" in p for p in entry["tools"].values())
        connector = entry["connector"]
        assert (connector["name"], connector["version"]) == ("async", "1.7")
        assert connector["commit"] == "70a22cf9863a7c1386d97be865342deb751ca501"
        assert connector["plugin_path"] == os.path.join(connector["prefix"], "lib")
    path = env_dir / "manifest.json"
    mf.write(path, m)
    loaded = mf.load(path)[BASELINE].async_io
    assert loaded.connector_version == "1.7" and loaded.plugin_path.endswith("/lib")
    assert loaded.hdf5_hash == m["builds"][BASELINE]["async"]["hdf5"]["hash"]


def test_an_async_entry_of_another_commit_is_refused(env, tmp_path):
    env_dir, records, pfx = env
    m = gen(env_dir, records + async_records(tmp_path / "install", pfx), pfx)
    m["builds"][BASELINE]["async"]["hdf5"]["commit"] = "0" * 40
    with pytest.raises(mf.ManifestError, match=r"builds\['hdf5-1.14.1'\].async.hdf5: 'commit'"):
        mf.write(env_dir / "manifest.json", m)
    m["builds"][BASELINE].pop("async")
    m["builds"][CANDIDATE]["async"]["connector"]["library"] = "lib/libh5async.so"
    with pytest.raises(mf.ManifestError, match="not an absolute path"):
        mf.write(env_dir / "manifest.json", m)


def test_a_missing_connector_library_is_named(env, tmp_path):
    env_dir, records, pfx = env
    m = gen(env_dir, records + async_records(tmp_path / "install", pfx), pfx)
    path = env_dir / "manifest.json"
    mf.write(path, m)
    library = pathlib.Path(m["builds"][CANDIDATE]["async"]["connector"]["library"])
    library.unlink()
    with pytest.raises(mf.ManifestError, match="async VOL connector does not exist at"):
        mf.load(path)


def test_macsio_in_bin_is_found_too(env, tmp_path):
    env_dir, records, pfx = env
    for rec in records:
        if rec["name"] == "macsio":
            p = pathlib.Path(pfx[rec["hash"]])
            (p / "macsio").unlink()
            (p / "bin").mkdir()
            (p / "bin" / "macsio").write_text("")
    m = gen(env_dir, records, pfx)
    assert all(b["tools"]["macsio"].endswith("/bin/macsio") for b in m["builds"].values())


def test_a_tool_missing_from_its_prefix_is_an_error(env):
    env_dir, records, pfx = env
    rec = next(r for r in records if r["name"] == "h5bench")
    missing = pathlib.Path(pfx[rec["hash"]]) / "bin" / "h5bench_exerciser"
    missing.unlink()
    with pytest.raises(mf.ManifestError) as e:
        gen(env_dir, records, pfx)
    msg = str(e.value)
    assert "h5bench_exerciser" in msg and str(missing) in msg and "build hdf5-" in msg


def test_h5bench_absent_for_a_build_is_not_an_error(env):
    """The matrix excludes h5bench for a 2.x HDF5: that build has no h5bench_*."""
    env_dir, records, pfx = env
    candidate_hash = next(r["hash"] for r in records
                          if r["name"] == "hdf5" and r["version"].endswith("=1.15.0"))
    records = [r for r in records if not (r["name"] == "h5bench" and any(
        d["hash"] == candidate_hash for d in r["dependencies"]))]
    m = gen(env_dir, records, pfx)
    assert set(m["builds"][CANDIDATE]["tools"]) == ALL_TOOLS - {
        "h5bench_write", "h5bench_read", "h5bench_exerciser", "h5bench_hdf5_iotest",
        "h5bench_write_var_normal_dist"}
    assert set(m["builds"][BASELINE]["tools"]) == ALL_TOOLS


def test_generate_rejects_what_it_cannot_name(env):
    env_dir, records, pfx = env
    # an HDF5 that is not a commit pin
    bad = json.loads(json.dumps(records))
    next(r for r in bad if r["name"] == "hdf5")["version"] = "1.14.3"
    with pytest.raises(mf.ManifestError, match="not a commit pin"):
        gen(env_dir, bad, pfx)
    # two builds with one label
    bad = json.loads(json.dumps(records))
    for r in bad:
        if r["name"] == "hdf5":
            r["version"] = r["version"].split("=")[0] + "=1.14.1"
    with pytest.raises(mf.ManifestError, match="used by two HDF5 builds"):
        gen(env_dir, bad, pfx)
    # a tool linked with an HDF5 that is none of the builds
    bad = json.loads(json.dumps(records))
    tool = next(r for r in bad if r["name"] == "ior")
    next(d for d in tool["dependencies"] if d["name"] == "hdf5")["hash"] = "x" * 32
    with pytest.raises(mf.ManifestError, match="none of the environment's HDF5 builds"):
        gen(env_dir, bad, pfx)
    # nothing installed
    with pytest.raises(mf.ManifestError, match="no installed hdf5"):
        gen(env_dir, [r for r in records if r["name"] != "hdf5"], pfx)
    # no prefix for a record
    with pytest.raises(mf.ManifestError, match="no install prefix"):
        gen(env_dir, records, {})
    # no lock
    with pytest.raises(mf.ManifestError, match="no spack.lock"):
        mf.generate(records, env_dir, env_dir / "nope.lock", prefixes=pfx)


# ------------------------------------------------------------ write, load


def test_write_then_load(env):
    env_dir, records, pfx = env
    m = gen(env_dir, records, pfx)
    path = mf.write(env_dir / "manifest.json", m)
    assert json.loads(path.read_text()) == m
    assert [p.name for p in env_dir.iterdir() if p.name.endswith(".tmp")] == []
    builds = mf.load(path)
    assert sorted(builds) == [BASELINE, CANDIDATE]
    b = builds[BASELINE]
    assert isinstance(b, mf.Build)
    assert (b.id, b.hdf5_version, b.hdf5_label) == (BASELINE, "1.14.1", "1.14.1")
    assert b.hdf5_commit == "577c192518598c7e2945683655feffcdbdf5a91b"
    assert b.spec_hash == m["builds"][BASELINE]["hdf5"]["hash"]
    assert b.prefix == m["builds"][BASELINE]["hdf5"]["prefix"]
    assert b.variants == m["builds"][BASELINE]["hdf5"]["variants"]
    assert set(b.tools) == ALL_TOOLS
    with pytest.raises(Exception):
        b.id = "other"  # frozen


def test_write_is_atomic(env, monkeypatch):
    env_dir, records, pfx = env
    path = env_dir / "manifest.json"
    good = gen(env_dir, records, pfx)
    mf.write(path, good)
    before = path.read_text()

    def boom(*a, **k):
        raise OSError("disk full")

    # the disk fills while the new manifest is being written
    monkeypatch.setattr(mf.atomic.os, "fsync", boom)
    with pytest.raises(OSError, match="disk full"):
        mf.write(path, good)
    assert path.read_text() == before, "the old manifest is intact"
    assert [p.name for p in env_dir.iterdir() if p.name.endswith(".tmp")] == []


def test_write_refuses_an_invalid_manifest(env):
    env_dir, records, pfx = env
    m = gen(env_dir, records, pfx)
    m["builds"][BASELINE]["hdf5"]["commit"] = "577c192"
    with pytest.raises(mf.ManifestError, match="commit"):
        mf.write(env_dir / "manifest.json", m)
    assert not (env_dir / "manifest.json").exists()


def _written(env):
    env_dir, records, pfx = env
    path = env_dir / "manifest.json"
    mf.write(path, gen(env_dir, records, pfx))
    return path


def _edit(path, fn):
    data = json.loads(path.read_text())
    fn(data)
    path.write_text(json.dumps(data))


def test_missing_manifest(tmp_path):
    with pytest.raises(mf.ManifestError) as e:
        mf.load(tmp_path / "manifest.json")
    assert str(tmp_path / "manifest.json") in str(e.value)
    assert "spack-env/install" in str(e.value)


def test_not_json(tmp_path):
    p = tmp_path / "manifest.json"
    p.write_text('{"schema": 1,\n "builds": ')
    with pytest.raises(mf.ManifestError, match=r"manifest.json: not valid JSON \(line 2"):
        mf.load(p)


@pytest.mark.parametrize("edit, words", [
    (lambda d: d.pop("lock_sha256"), ["'lock_sha256'"]),
    (lambda d: d.update(schema=2), ["'schema'", "2"]),
    (lambda d: d.update(builds={}), ["'builds'"]),
    (lambda d: d["builds"][BASELINE]["hdf5"].update(commit="zz" * 20), ["commit", "zz"]),
    (lambda d: d["builds"][BASELINE]["hdf5"].pop("hash"), [BASELINE, "'hash'"]),
    (lambda d: d["builds"][BASELINE]["hdf5"].update(label="9.9.9"),
     [BASELINE, "9.9.9"]),
    (lambda d: d["builds"][BASELINE]["tools"].update(ior="bin/ior"), ["'ior'", "bin/ior"]),
])
def test_malformed_manifest_names_the_key(env, edit, words):
    path = _written(env)
    _edit(path, edit)
    with pytest.raises(mf.ManifestError) as e:
        mf.load(path)
    msg = str(e.value)
    assert str(path) in msg
    for w in words:
        assert w in msg, (w, msg)


def test_a_tool_that_disappeared(env):
    path = _written(env)
    ior = json.loads(path.read_text())["builds"][CANDIDATE]["tools"]["ior"]
    os.unlink(ior)
    with pytest.raises(mf.ManifestError) as e:
        mf.load(path)
    assert CANDIDATE in str(e.value) and "'ior'" in str(e.value) and ior in str(e.value)


def test_stale_manifest(env):
    path = _written(env)
    mf.load(path)
    (path.parent / "spack.lock").write_text('{"re": "concretized"}\n')
    with pytest.raises(mf.ManifestError) as e:
        mf.load(path)
    msg = str(e.value)
    assert "stale" in msg and str(path) in msg and "spack.lock" in msg
    assert "spack-env/install --manifest-only" in msg
    assert mf.load(path, check_stale=False)


def test_a_copied_manifest_without_its_lock_is_not_stale(env, tmp_path):
    path = _written(env)
    data = json.loads(path.read_text())
    data["environment"] = str(tmp_path / "gone")
    copy = tmp_path / "artifacts" / "manifest.json"
    copy.parent.mkdir()
    copy.write_text(json.dumps(data))
    assert sorted(mf.load(copy)) == [BASELINE, CANDIDATE]


def test_default_path(monkeypatch, tmp_path):
    monkeypatch.delenv(mf.ENV_VAR, raising=False)
    repo = pathlib.Path(mf.__file__).resolve().parent.parent
    assert mf.default_path() == repo / "spack-env" / "manifest.json"
    monkeypatch.setenv(mf.ENV_VAR, str(tmp_path / "m.json"))
    assert mf.default_path() == tmp_path / "m.json"


# ----------------------------------------------------------- command line


@pytest.fixture
def fake_spack(tmp_path, env):
    """A `spack` that answers find --json / find --format / --version with the fixtures."""
    env_dir, records, pfx = env
    (tmp_path / "find.json").write_text(json.dumps(records))
    (tmp_path / "prefixes.txt").write_text("".join(f"{h} {p}\n" for h, p in pfx.items()))
    exe = tmp_path / "spack"
    exe.write_text(f"""#!{sys.executable}
import sys
a = sys.argv[1:]
if a == ["--version"]:
    print("0.23.0.dev0 (fake)")
elif a[-2:] == ["find", "--json"]:
    print(open({str(tmp_path / 'find.json')!r}).read())
elif "--format" in a:
    print(open({str(tmp_path / 'prefixes.txt')!r}).read())
else:
    sys.exit("fake spack: " + " ".join(a))
""")
    exe.chmod(0o755)
    return exe


def test_main_write_and_show(env, fake_spack, capsys, monkeypatch):
    env_dir, _, _ = env
    monkeypatch.delenv(mf.ENV_VAR, raising=False)
    assert mf.main(["write", "--env", str(env_dir), "--spack", str(fake_spack)]) == 0
    out = env_dir / "manifest.json"
    data = json.loads(out.read_text())
    assert data["spack_version"] == "0.23.0.dev0 (fake)"
    assert sorted(data["builds"]) == [BASELINE, CANDIDATE]
    assert mf.main(["show", str(out)]) == 0
    text = capsys.readouterr().out
    assert BASELINE in text and "577c192518598c7e2945683655feffcdbdf5a91b" in text
    assert mf.main(["show", str(out), "--json"]) == 0


def test_main_write_reports_errors(env, tmp_path, capsys):
    env_dir, _, _ = env
    bad = tmp_path / "spack-bad"
    bad.write_text("#!/bin/sh\necho '==> Error: no environment' >&2\nexit 1\n")
    bad.chmod(0o755)
    assert mf.main(["write", "--env", str(env_dir), "--spack", str(bad)]) == 4
    err = capsys.readouterr().err
    assert "h5regress manifest write: error:" in err and "no environment" in err
    assert not (env_dir / "manifest.json").exists()


def test_show_reports_a_missing_manifest(tmp_path, capsys):
    assert mf.main(["show", str(tmp_path / "none.json")]) == 4
    assert "no manifest" in capsys.readouterr().err


# ------------------------------------- checks parameterised over the builds


def test_checks_take_the_builds_from_the_manifest(env, monkeypatch):
    from h5regress import tools

    path = _written(env)
    monkeypatch.setenv(mf.ENV_VAR, str(path))
    assert tools.builds() == [BASELINE, CANDIDATE]
    data = json.loads(path.read_text())
    for build in (BASELINE, CANDIDATE):
        t = tools.find("ior", build)
        assert t.path == data["builds"][build]["tools"]["ior"]
        assert t.build == build and t.source == "spack-manifest"
        assert t.hdf5_commit == data["builds"][build]["hdf5"]["commit"]
        assert t.spec_hash == data["builds"][build]["hdf5"]["hash"]
        assert tools.find("flash-io", build).path.endswith("/bin/flash-io")
    with pytest.raises(tools.ToolNotFound):
        tools.find("ior", "hdf5-9.9.9")


def test_an_hdf5_tool_of_the_path_build_never_comes_from_a_manifest_build(env, monkeypatch):
    """A check of build ``path`` (no manifest when the checks loaded, one when the tool
    was looked up) must not run a build's binary under the label ``path``; a tool
    that does not depend on HDF5 (mdtest) may take any build's copy."""
    from h5regress import tools

    monkeypatch.setenv(mf.ENV_VAR, str(_written(env)))
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(tools.ToolNotFound):
        tools.find("ior", tools.PATH_BUILD)
    assert tools.find("ior", tools.PATH_BUILD, any_build=True).build in (BASELINE, CANDIDATE)


def test_without_a_manifest_the_checks_use_path(monkeypatch, tmp_path):
    from h5regress import tools

    monkeypatch.setenv(mf.ENV_VAR, mf.NO_MANIFEST)
    assert tools.builds() == [tools.PATH_BUILD]


def test_a_manifest_variable_naming_no_file_is_an_error_not_path(monkeypatch, tmp_path):
    """It used to fall back silently to the tools on PATH (Debian's HDF5)."""
    from h5regress import tools

    missing = tmp_path / "no-such-manifest.json"
    monkeypatch.setenv(mf.ENV_VAR, str(missing))
    with pytest.raises(mf.ManifestError, match=f"H5REGRESS_MANIFEST={missing}: no such file"):
        tools.builds()
    with pytest.raises(mf.ManifestError, match="H5REGRESS_MANIFEST"):
        tools.find("ior", tools.PATH_BUILD, any_build=True)


# ------------------------------------------- Darshan's runtime library per build

DARSHAN_PIN = "git.ba0b5b1b72151cb4398909ba218dcd774bffe1c1=3.4.7"


def with_darshan(records, pfx, root):
    """The records with a darshan-runtime per HDF5 build (built against it: the
    fixture's, else made up here), and libdarshan.so in each one's prefix."""
    records = json.loads(json.dumps(records))
    if not any(r["name"] == mf.DARSHAN_PACKAGE for r in records):
        for i, hdf5 in enumerate(r for r in list(records) if r["name"] == "hdf5"):
            h = f"darshan{i}".ljust(32, "x")
            records.append({"name": mf.DARSHAN_PACKAGE, "version": DARSHAN_PIN, "hash": h,
                            "parameters": {"hdf5": True, "mpi": True},
                            "dependencies": [{"name": "hdf5", "hash": hdf5["hash"]}]})
            pfx[h] = str(root / f"darshan-runtime-{i}")
    for r in records:
        if r["name"] == mf.DARSHAN_PACKAGE:
            lib = pathlib.Path(pfx[r["hash"]]) / mf.DARSHAN_LIBRARY
            lib.parent.mkdir(parents=True, exist_ok=True)
            lib.write_text("")
    return records


def test_darshan_library_of_each_build(env, tmp_path):
    env_dir, records, pfx = env
    records = with_darshan(records, pfx, tmp_path / "install")
    m = gen(env_dir, records, pfx)
    path = mf.write(env_dir / "manifest.json", m)
    darshan = {r["hash"]: r for r in records if r["name"] == mf.DARSHAN_PACKAGE}
    assert len(darshan) == 2
    libs = set()
    for build_id, build in m["builds"].items():
        d = build["darshan"]
        assert d["version"] == "3.4.7"
        assert d["commit"] == "ba0b5b1b72151cb4398909ba218dcd774bffe1c1"
        assert d["library"] == os.path.join(pfx[d["hash"]], "lib", "libdarshan.so")
        assert "darshan" not in build["tools"], "not a tool of the checks"
        # built against this build's HDF5
        (dep,) = [x for x in darshan[d["hash"]]["dependencies"] if x["name"] == "hdf5"]
        assert dep["hash"] == build["hdf5"]["hash"]
        assert mf.darshan_library(build_id, path) == d["library"]
        assert mf.load(path)[build_id].darshan_library == d["library"]
        libs.add(d["library"])
    assert len(libs) == 2, "one library per HDF5 build"


def test_darshan_library_default_path(env, tmp_path, monkeypatch):
    env_dir, records, pfx = env
    path = mf.write(env_dir / "manifest.json",
                    gen(env_dir, with_darshan(records, pfx, tmp_path / "install"), pfx))
    monkeypatch.setenv(mf.ENV_VAR, str(path))
    assert mf.darshan_library(BASELINE).endswith("/lib/libdarshan.so")


def test_no_darshan_in_the_manifest_is_none(env):
    """An environment without darshan-runtime (or a manifest written before it)."""
    env_dir, records, pfx = env
    records = [r for r in records if r["name"] != mf.DARSHAN_PACKAGE]
    path = mf.write(env_dir / "manifest.json", gen(env_dir, records, pfx))
    assert all("darshan" not in b for b in json.loads(path.read_text())["builds"].values())
    assert mf.darshan_library(BASELINE, path) is None
    assert mf.load(path)[CANDIDATE].darshan_library is None


def test_darshan_library_errors_say_why(env, tmp_path):
    env_dir, records, pfx = env
    records = with_darshan(records, pfx, tmp_path / "install")
    # no manifest at all (the embedded default without Spack)
    with pytest.raises(mf.ManifestError, match="no manifest"):
        mf.darshan_library(BASELINE, tmp_path / "none.json")
    # a library missing from its prefix at generation
    rec = next(r for r in records if r["name"] == mf.DARSHAN_PACKAGE)
    lib = pathlib.Path(pfx[rec["hash"]]) / mf.DARSHAN_LIBRARY
    lib.unlink()
    with pytest.raises(mf.ManifestError, match="libdarshan.so") as e:
        gen(env_dir, records, pfx)
    assert str(lib) in str(e.value)
    lib.write_text("")
    path = mf.write(env_dir / "manifest.json", gen(env_dir, records, pfx))
    # a build the manifest does not have
    with pytest.raises(mf.ManifestError) as e:
        mf.darshan_library("hdf5-9.9.9", path)
    assert "hdf5-9.9.9" in str(e.value) and BASELINE in str(e.value)
    # gone since the manifest was written
    lib.unlink()
    with pytest.raises(mf.ManifestError, match="Darshan's library does not exist"):
        mf.darshan_library(BASELINE, path)
    # two darshan-runtime installs against one build
    lib.write_text("")
    twin = json.loads(json.dumps(rec))
    twin["hash"] = "twin".ljust(32, "x")
    pfx[twin["hash"]] = pfx[rec["hash"]] + "-twin"
    with pytest.raises(mf.ManifestError, match="two darshan-runtime installs"):
        gen(env_dir, [*records, twin], pfx)


@pytest.mark.parametrize("edit, words", [
    (lambda d: d["builds"][BASELINE]["darshan"].pop("library"), ["darshan", "'library'"]),
    (lambda d: d["builds"][BASELINE]["darshan"].update(library="lib/libdarshan.so"),
     ["darshan", "not an absolute path"]),
    (lambda d: d["builds"][BASELINE].update(darshan="lib"), ["'darshan' must be an object"]),
])
def test_malformed_darshan_entry_names_the_key(env, tmp_path, edit, words):
    env_dir, records, pfx = env
    path = mf.write(env_dir / "manifest.json",
                    gen(env_dir, with_darshan(records, pfx, tmp_path / "install"), pfx))
    _edit(path, edit)
    with pytest.raises(mf.ManifestError) as e:
        mf.load(path)
    for w in [BASELINE, *words]:
        assert w in str(e.value), (w, str(e.value))


def test_an_unreadable_tool_stops_only_its_own_checks(env, monkeypatch):
    """A tool whose file cannot be run (no permission) is named as such by the checks
    of that tool (ToolNotFound: skipped), not "does not exist" for every check."""
    from h5regress import tools

    path = _written(env)
    monkeypatch.setenv(mf.ENV_VAR, str(path))
    ior = json.loads(path.read_text())["builds"][CANDIDATE]["tools"]["ior"]
    os.chmod(ior, 0)
    assert sorted(mf.load(path)) == [BASELINE, CANDIDATE]
    assert tools.builds() == [BASELINE, CANDIDATE]
    with pytest.raises(tools.ToolNotFound) as e:
        tools.find("ior", CANDIDATE)
    assert f"ior of HDF5 build '{CANDIDATE}' at {ior} is not readable/executable" \
        in str(e.value)
    assert "does not exist" not in str(e.value)
    assert tools.find("ior", BASELINE).path != ior          # the other build's runs
    assert tools.find("flash-io", CANDIDATE).path.endswith("/bin/flash-io")
