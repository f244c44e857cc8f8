"""The Spack environment (spack-env/): its files, the install command's
input handling, and a real concretization when Spack is available."""

from __future__ import annotations

import ast
import importlib.machinery
import importlib.util
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest
import yaml
from h5regress import catalog
from reframe_run import skip_without_spack

REPO = pathlib.Path(__file__).resolve().parent.parent
ENV = REPO / "spack-env"
HEX40 = re.compile(r"^[0-9a-f]{40}$")
#: the project's own kernels, built from this tree (spack.yaml `develop:`)
KERNELS = ("flash-io", "h5paths")
#: Darshan 3.4.7 (tag darshan-3.4.7), whose source the offline bundle's mirror carries
DARSHAN = "darshan-runtime@git.ba0b5b1b72151cb4398909ba218dcd774bffe1c1=3.4.7"
PIN = re.compile(r"^(?P<name>[a-z0-9-]+)@git\.(?P<sha>[^=\s]+)=(?P<label>\S+)")


def installed_manifest() -> pathlib.Path:
    """The manifest of the environment installed in this checkout, else the test is
    skipped (failed where the environment must be there)."""
    path = ENV / "manifest.json"
    if not path.exists():
        skip_without_spack(f"no {path}: the environment is not installed here (spack-env/install)")
    return path


def spack_yaml() -> dict:
    with open(ENV / "spack.yaml") as f:
        return yaml.safe_load(f)["spack"]


def definitions(doc: dict) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for d in doc["definitions"]:
        for name, specs in d.items():
            if name == "when":
                continue
            out.setdefault(name, []).extend(specs)
    return out


def install_module():
    loader = importlib.machinery.SourceFileLoader("h5regress_spack_install", str(ENV / "install"))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


# ---------------------------------------------------------------- the files


def test_spack_yaml_parses():
    doc = spack_yaml()
    for key in ("include", "repos", "definitions", "specs", "develop", "concretizer"):
        assert key in doc, key
    assert doc["concretizer"]["unify"] is False
    # a lock follows from the files, not from what is installed (README: Locks)
    assert doc["concretizer"]["reuse"] is False
    assert doc["view"] is False


def test_every_hdf5_pin_is_a_full_commit_with_a_label():
    builds = definitions(spack_yaml())["hdf5_builds"]
    assert len(builds) >= 2
    labels = []
    for spec in builds:
        m = PIN.match(spec)
        assert m and m.group("name") == "hdf5", f"not a commit pin: {spec!r}"
        assert HEX40.match(m.group("sha")), f"not a full 40-hex commit: {spec!r}"
        assert m.group("label"), spec
        for variant in ("+mpi", "+hl"):
            assert variant in spec.split(), (spec, variant)
        labels.append(m.group("label"))
    assert len(labels) == len(set(labels)), f"labels must be unique (build ids): {labels}"
    text = (ENV / "spack.yaml").read_text()
    assert text.count("# h5regress:baseline") == 1
    assert text.count("# h5regress:candidate") == 1


def test_subfiling_only_where_the_version_allows_it():
    for spec in definitions(spack_yaml())["hdf5_builds"]:
        label = PIN.match(spec).group("label")
        major, minor = (int(x) for x in label.split(".")[:2])
        if "+subfiling" in spec:
            assert (major, minor) >= (1, 14), spec


def test_every_tool_is_pinned_by_commit_or_built_from_this_tree():
    doc = spack_yaml()
    tools = definitions(doc)["tools"]
    names = set()
    for spec in tools:
        name = re.match(r"[a-z0-9-]+", spec).group(0)
        names.add(name)
        if name in KERNELS:
            assert doc["develop"][name]["path"] == f"../kernels/{name}"
            assert doc["develop"][name]["spec"] == spec == f"{name}@=main"
            continue
        m = PIN.match(spec)
        assert m and HEX40.match(m.group("sha")), f"{spec!r} is not pinned by full commit"
    # the environment installs the catalog's packages, no more, no fewer
    assert names == {b.package for b in catalog.BENCHMARKS.values() if b.package}
    assert set(doc["develop"]) == set(KERNELS)
    assert "+hdf5" in next(s for s in tools if s.startswith("ior@")).split()
    assert "+hdf5" in next(s for s in tools if s.startswith("macsio@")).split()
    h5bench = next(s for s in tools if s.startswith("h5bench@")).split()
    assert h5bench[0] == "h5bench@git.675c86d11832c625f1d71e63d7626308170ba8c5=1.6"
    assert {"+metadata", "+exerciser"} <= set(h5bench)
    json_cwx = doc["packages"]["json-cwx"]["require"][0]
    assert HEX40.match(re.search(r"git\.([^=]+)=", json_cwx).group(1))


def _version_tuple(label: str) -> tuple:
    return tuple(int(x) if x.isdigit() else 0 for x in re.split(r"[.-]", label))


def test_darshan_runtime_is_pinned_by_commit_with_its_hdf5_module():
    """Issue 15: Darshan's runtime (for the untimed run of a FAIL metric), tag
    darshan-3.4.7 pinned by full commit, with the HDF5 module."""
    (spec,) = definitions(spack_yaml())["instrumentation"]
    words = spec.split()
    assert words[0] == DARSHAN
    assert HEX40.match(PIN.match(spec).group("sha"))
    assert "+hdf5" in words
    # no +apmpi/+apxc: those need the autoperf submodule, which the mirror lacks
    assert not {"+apmpi", "+apmpi_sync", "+apxc"} & set(words)


def test_matrix_every_tool_against_every_build_h5bench_not_against_2x():
    doc = spack_yaml()
    matrices = [s["matrix"] for s in doc["specs"] if isinstance(s, dict) and "matrix" in s]
    assert len(matrices) == 3
    assert matrices[0] == [["$tools"], ["$^hdf5_builds"]]
    # Darshan's runtime against every HDF5 build too, nothing excluded
    assert matrices[1] == [["$instrumentation"], ["$^hdf5_builds"]]
    assert "exclude" not in doc["specs"][2]
    excludes = next(s for s in doc["specs"] if isinstance(s, dict))["exclude"]
    assert excludes == ["h5bench ^hdf5@2:"], excludes
    assert "$hdf5_builds" in doc["specs"], "the HDF5 builds themselves are roots"
    # h5bench's recipe declares hdf5@1.12.0:1: the exclusion must cover
    # exactly the labels outside that range, so today nothing is excluded.
    for spec in definitions(doc)["hdf5_builds"]:
        label = PIN.match(spec).group("label")
        assert (1, 12, 0) <= _version_tuple(label) < (2,), (
            f"{label}: h5bench is excluded for it; update the note in spack.yaml"
        )


#: the async VOL connector (tag v1.7) and Argobots (tag v1.2), whose sources the
#: offline bundle's mirror carries (issue 30)
ASYNC_PINS = {"hdf5-vol-async": "@git.70a22cf9863a7c1386d97be865342deb751ca501=1.7",
              "argobots": "@git.6d216a9f546f0a0024a4fe0e8548aeaf51520d4a=1.2"}


def test_async_h5bench_against_every_build_with_the_pinned_connector():
    """Issue 30: h5bench +async against every HDF5 build (a thread-safe build of the
    same commit comes with the connector), the connector and Argobots pinned by commit."""
    doc = spack_yaml()
    (spec,) = definitions(doc)["async_io"]
    assert spec.split()[0] == definitions(doc)["tools"][2].split()[0]  # the same h5bench
    assert "+async" in spec.split()
    matrix = [s for s in doc["specs"] if isinstance(s, dict) and "matrix" in s][2]
    assert matrix["matrix"] == [["$async_io"], ["$^hdf5_builds"]]
    assert matrix["exclude"] == ["h5bench ^hdf5@2:"]
    for name, pin in ASYNC_PINS.items():
        assert doc["packages"][name]["require"] == [pin], name


def test_argobots_git_tree_is_bootstrapped_with_autogen():
    """A git tree of Argobots has no configure: the recipe declares autogen's tools
    for every version (the builtin one only for @main) and runs autogen.sh."""
    tree = _package_ast("argobots")
    deps = {ast.literal_eval(n.args[0]): {k.arg: ast.literal_eval(k.value) for k in n.keywords}
            for n in ast.walk(tree) if isinstance(n, ast.Call)
            and getattr(n.func, "id", "") == "depends_on"}
    for tool in ("m4", "autoconf", "automake", "libtool"):
        assert deps[tool] == {"type": "build"}, (tool, "declared for every version")
    assert "./autogen.sh" in ast.unparse(tree)
    assert ast.literal_eval(_class_assignments(tree)["sanity_check_is_file"]) == ["include/abt.h"]


def test_connector_1_7_is_patched_so_a_finished_task_does_not_block_the_next():
    """vol-async 1.7 counted a task as running until its Argobots thread ended, after its
    last push: a task queued in between was never pushed and its caller waited forever
    (spack-env/README.md). The recipe patches 1.7 so that only a task not yet done counts,
    in each of the three places that count running tasks."""
    tree = _package_ast("hdf5-vol-async")
    patches = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
               and getattr(n.func, "id", "") == "patch"]
    assert [(ast.literal_eval(n.args[0]), {k.arg: ast.literal_eval(k.value)
                                           for k in n.keywords}) for n in patches] == [
        ("finished-task-not-running.patch", {"when": "@1.7"})]
    diff = (ENV / "repo/packages/hdf5-vol-async/finished-task-not-running.patch").read_text()
    removed = [l for l in diff.splitlines() if l.startswith("-") and not l.startswith("---")]
    added = [l for l in diff.splitlines() if l.startswith("+") and not l.startswith("+++")]
    assert len(removed) == len(added) == 3
    assert all("thread_state != ABT_THREAD_STATE_TERMINATED" in l for l in removed)
    assert all("thread_state != ABT_THREAD_STATE_TERMINATED && task_elt->is_done == 0" in l
               for l in added)


class _FakeDependency:
    def __init__(self, spec: str):
        name, _, version = spec.partition("@")
        self.spec = type("S", (), {"versions": version, "name": name})()


def test_h5bench_takes_the_connector_version_the_environment_pins():
    """The builtin recipe's +async asks for hdf5-vol-async@1.5, which would conflict
    with the pinned 1.7: the project's recipe declares 1.7 and drops the 1.5 entry
    (new dicts: the builtin class keeps its own)."""
    tree = _package_ast("h5bench")
    deps = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
            and getattr(n.func, "id", "") == "depends_on"
            and ast.literal_eval(n.args[0]).startswith("hdf5-vol-async")]
    assert [ast.literal_eval(n.args[0]) for n in deps] == ["hdf5-vol-async@1.7:"]
    func = next(n for n in tree.body if isinstance(n, ast.FunctionDef)
                and n.name == "_without_builtin_async_pin")
    namespace: dict = {}
    exec(compile(ast.Module([func], []), "h5bench/package.py", "exec"), namespace)
    builtin = {"+async": {"hdf5-vol-async": _FakeDependency("hdf5-vol-async@1.5")},
               "@1.6: +async": {"hdf5-vol-async": _FakeDependency("hdf5-vol-async@1.7:")},
               "": {"mpi": _FakeDependency("mpi"), "cmake": _FakeDependency("cmake@3.10:")}}
    kept = namespace["_without_builtin_async_pin"](builtin)
    assert set(kept) == {"@1.6: +async", ""}
    assert set(kept[""]) == {"mpi", "cmake"}
    assert "hdf5-vol-async" in builtin["+async"], "the builtin dicts are not changed"
    assert "ASYNC_HOME" in ast.unparse(tree), "h5bench's CMakeLists.txt reads $ASYNC_HOME"


def test_sites_are_config_scopes_chosen_by_env_var():
    doc = spack_yaml()
    assert doc["include"] == ["sites/${H5REGRESS_SITE}"]
    assert doc["repos"] == ["repo"]
    sites = sorted(p.name for p in (ENV / "sites").iterdir() if p.is_dir())
    assert {"workstation", "cluster-example"} <= set(sites)
    for site in sites:
        for f in (ENV / "sites" / site).glob("*.yaml"):
            with open(f) as fh:
                assert isinstance(yaml.safe_load(fh), dict), f
    ws = yaml.safe_load((ENV / "sites/workstation/packages.yaml").read_text())["packages"]
    assert ws["openmpi"]["buildable"] is False
    assert ws["openmpi"]["externals"][0]["prefix"] == "/usr"
    assert ws["gcc"]["externals"][0]["extra_attributes"]["compilers"]["c"]
    cl = yaml.safe_load((ENV / "sites/cluster-example/packages.yaml").read_text())["packages"]
    assert cl["openmpi"].get("buildable", True) is True and "externals" not in cl["openmpi"]
    # the environment itself names no MPI, compiler or external
    assert "openmpi" not in doc.get("packages", {})
    assert "externals" not in json.dumps(doc)
    assert "compilers" not in doc, "compilers are the site's (sites/<site>/)"


def test_each_site_gives_spack_023_its_compiler_in_compilers_yaml():
    """Spack 0.23 writes the compilers it finds on PATH into spack.yaml when
    it concretizes an environment that has no compilers.yaml entry (the gcc
    external of packages.yaml does not count there): every site keeps its
    compiler in both files, with the same paths."""
    for site in (p for p in (ENV / "sites").iterdir() if p.is_dir()):
        packages = yaml.safe_load((site / "packages.yaml").read_text())["packages"]
        externals = {e["spec"].split()[0]: e["extra_attributes"]["compilers"]
                     for e in packages.get("gcc", {}).get("externals", [])}
        if not externals:
            continue
        compilers = yaml.safe_load((site / "compilers.yaml").read_text())["compilers"]
        legacy = {c["compiler"]["spec"].replace("@=", "@"): c["compiler"]["paths"]
                  for c in compilers}
        assert legacy.keys() == externals.keys(), site
        for spec, paths in externals.items():
            assert legacy[spec]["cc"] == paths["c"], (site, spec)
            assert legacy[spec]["cxx"] == paths["cxx"], (site, spec)
            assert legacy[spec]["fc"] == legacy[spec]["f77"] == paths["fortran"], (site, spec)


def test_package_repo():
    repo = yaml.safe_load((ENV / "repo/repo.yaml").read_text())
    assert repo["repo"]["namespace"] == "h5regress"
    for pkg in ("flash-io", "h5paths", "h5bench", "ior", "json-cwx", "argobots",
                "hdf5-vol-async"):
        src = (ENV / "repo/packages" / pkg / "package.py").read_text()
        compile(src, f"{pkg}/package.py", "exec")
    h5bench = (ENV / "repo/packages/h5bench/package.py").read_text()
    assert 'version(\n        "1.6",\n        commit="675c86d11832c625f1d71e63d7626308170ba8c5"' in h5bench


def _package_ast(name: str) -> ast.Module:
    return ast.parse((ENV / "repo/packages" / name / "package.py").read_text())


def _class_assignments(tree: ast.Module) -> dict:
    # the package's class is the module's last: any base it builds on comes first
    cls = [n for n in tree.body if isinstance(n, ast.ClassDef)][-1]
    return {t.id: n.value for n in cls.body if isinstance(n, ast.Assign)
            for t in n.targets if isinstance(t, ast.Name)}


def test_packages_check_their_executables_with_sanity_check_is_file():
    """Spack's own sanity check, not a hand-written run_after("install")."""
    for name, files in (("ior", ["bin/ior", "bin/mdtest"]), ("flash-io", ["bin/flash-io"]),
                        ("h5paths", ["bin/h5paths"])):
        tree = _package_ast(name)
        assert ast.literal_eval(_class_assignments(tree)["sanity_check_is_file"]) == files
        src = ast.unparse(tree)
        assert "run_after('install')" not in src and "os.path.exists" not in src, name


def test_h5bench_is_built_optimised_with_its_asserts():
    """h5bench's CMakeLists.txt forces a Debug build: the package removes that
    line, and its optimised flags keep assert(), inside which the metadata
    benchmark does its HDF5 calls (so no -DNDEBUG)."""
    tree = _package_ast("h5bench")
    src = ast.unparse(tree)
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
             and getattr(n.func, "id", "") == "filter_file"]
    assert len(calls) == 1
    pattern, repl, path = (ast.literal_eval(a) for a in calls[0].args)
    assert path == "CMakeLists.txt" and repl == ""
    # the line of h5bench 1.6's CMakeLists.txt
    assert re.search(pattern, "set(CMAKE_BUILD_TYPE Debug)")
    assert not re.search(pattern, "set(CMAKE_BUILD_TYPE Release)")
    flags = next(ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
                 and n.targets[0].id == "_OPTIMISED_FLAGS_WITH_ASSERTS")
    assert flags["Release"] == "-O3"
    assert all("NDEBUG" not in f and "-O" in f for f in flags.values()), flags
    assert "CMAKE_{lang}_FLAGS_{build_type.upper()}" in src


def test_no_machine_paths_in_committed_files():
    """No local snapshot or install paths: the lock and configs must be
    usable from any checkout (generic /usr externals are fine)."""
    bad = re.compile(r"/work/|/opt/|/root/|/home/|/tmp/|file://")
    for f in [ENV / "spack.yaml", *ENV.glob("sites/*/*.yaml"), *ENV.glob("repo/**/*.py"),
              *ENV.glob("locks/*.lock")]:
        text = f.read_text()
        m = bad.search(text)
        assert not m, f"{f}: machine-specific path {text[max(0, m.start()-40):m.end()+40]!r}"


def test_reference_lock_matches_spack_yaml():
    lock_path = ENV / "locks" / "workstation.lock"
    lock = json.loads(lock_path.read_text())
    assert lock["_meta"]["file-type"] == "spack-lockfile"
    roots = [r["spec"] for r in lock["roots"]]
    doc = spack_yaml()
    defs = definitions(doc)
    def norm(spec):  # Spack writes "hdf5@git.X=L+hl+mpi", spack.yaml "hdf5@git.X=L +mpi +hl"
        head = re.match(r"[^\s+~]+", spec).group(0)
        return head, tuple(sorted(re.findall(r"[+~][\w-]+", spec)))

    for pin in defs["hdf5_builds"]:
        assert norm(pin) in {norm(r) for r in roots}, (
            f"{lock_path}: no root {pin!r}: refresh it (README: Locks)")
    # every tool, Darshan and the async h5bench x build (h5bench excluded for 2.x only)
    assert len(roots) == len(defs["hdf5_builds"]) * (
        1 + len(defs["tools"]) + len(defs["instrumentation"]) + len(defs["async_io"]))
    for name in ("h5paths", "darshan-runtime"):
        specs = [s for s in lock["concrete_specs"].values() if s["name"] == name]
        assert len(specs) == len(defs["hdf5_builds"]), (name, "one per HDF5 build")
        deps = {d["hash"] for s in specs for d in s["dependencies"] if d["name"] == "hdf5"}
        assert len(deps) == len(defs["hdf5_builds"]), (name, "each against another HDF5")
    darshan = next(s for s in lock["concrete_specs"].values() if s["name"] == "darshan-runtime")
    assert darshan["version"] == DARSHAN.split("@")[1] and darshan["parameters"]["hdf5"]
    hdf5 = {h: s for h, s in lock["concrete_specs"].items() if s["name"] == "hdf5"}
    threadsafe = {h for h, s in hdf5.items() if s["parameters"]["threadsafe"]}
    assert len(hdf5) == 2 * len(defs["hdf5_builds"]) == 2 * len(threadsafe), (
        "per build its HDF5 and, for the ASYNC rows, a thread-safe one")
    for s in hdf5.values():
        assert s["parameters"]["mpi"] and s["parameters"]["hl"] and s["parameters"]["subfiling"]
    _check_async_specs(lock["concrete_specs"], threadsafe)
    ompi = [s for s in lock["concrete_specs"].values() if s["name"] == "openmpi"]
    assert ompi and all(s.get("external", {}).get("path") == "/usr" for s in ompi)


def _check_async_specs(specs: dict, threadsafe: set[str]) -> None:
    """The lock's h5bench +async: each against a thread-safe HDF5 and the pinned
    connector, which uses the same HDF5; the sync tools never use a thread-safe one."""
    for spec in specs.values():
        deps = {d["name"]: d["hash"] for d in spec.get("dependencies", [])}
        if spec["name"] == "h5bench" and spec["parameters"]["async"]:
            assert deps["hdf5"] in threadsafe
            connector = specs[deps["hdf5-vol-async"]]
            assert "@" + connector["version"] == ASYNC_PINS["hdf5-vol-async"]
            # the recipe's patch (a finished task is not running) is in the build
            assert len(connector["parameters"].get("patches", [])) == 1, connector
            assert {d["hash"] for d in connector["dependencies"] if d["name"] == "hdf5"} == {
                deps["hdf5"]}
            argobots = next(specs[d["hash"]] for d in connector["dependencies"]
                            if d["name"] == "argobots")
            assert "@" + argobots["version"] == ASYNC_PINS["argobots"]
        elif "hdf5" in deps and spec["name"] != "hdf5-vol-async":
            assert deps["hdf5"] not in threadsafe, spec["name"]


# ------------------------------------------------------- the install command


def _inputs_copy(root: pathlib.Path) -> pathlib.Path:
    env = root / "spack-env"
    env.mkdir()
    shutil.copy(ENV / "spack.yaml", env)
    for tree in ("sites", "repo"):
        shutil.copytree(ENV / tree, env / tree, ignore=shutil.ignore_patterns("__pycache__"))
    return env


def test_the_inputs_digest_follows_the_environment_the_site_the_recipes_and_spack(tmp_path):
    inst = install_module()
    env = _inputs_copy(tmp_path)
    digest = inst.inputs_digest(env, "workstation", "0.23.1")
    (env / "repo" / "packages" / "h5paths" / "__pycache__").mkdir(exist_ok=True)
    (env / "repo" / "packages" / "h5paths" / "__pycache__" / "package.cpython.pyc").write_text("x")
    assert inst.inputs_digest(env, "workstation", "0.23.1") == digest
    assert inst.inputs_digest(env, "workstation", "1.1.0") != digest
    other_site = next(p for p in (env / "sites").iterdir() if p.name != "workstation")
    (other_site / "packages.yaml").write_text("packages: {}\n")
    assert inst.inputs_digest(env, "workstation", "0.23.1") == digest
    for changed in (env / "sites" / "workstation" / "packages.yaml",
                    env / "repo" / "packages" / "h5paths" / "package.py", env / "spack.yaml"):
        before = changed.read_bytes()
        changed.write_bytes(before + b"\n")
        assert inst.inputs_digest(env, "workstation", "0.23.1") != digest, changed
        changed.write_bytes(before)


@pytest.mark.parametrize("how", ["reconcretize", "lock"])
def test_the_digest_vouches_only_for_a_lock_concretized_from_the_inputs(tmp_path, monkeypatch,
                                                                         how):
    """--update-reference-lock writes the inputs' digest beside a lock it concretized, and
    removes it beside a lock it took (--lock): that lock came from other inputs."""
    inst = install_module()
    env = _inputs_copy(tmp_path)
    (env / "locks").mkdir()
    (env / "spack.lock").write_text("{}")
    stub = tmp_path / "spack"
    stub.write_text('#!/bin/sh\n[ "$1" = --version ] && echo "0.23.1 (stub)"\nexit 0\n')
    stub.chmod(0o755)
    monkeypatch.setattr(inst, "HERE", env)
    digest = env / "locks" / "workstation.inputs"
    digest.write_text("stale\n")
    args = inst.arg_parser().parse_args(
        ["--update-reference-lock", "--reconcretize" if how == "reconcretize" else "--lock",
         *([] if how == "reconcretize" else [str(env / "spack.lock")])])
    inst.concretize(str(stub), [], env, "workstation", args)
    assert (env / "locks" / "workstation.lock").read_text() == "{}"
    if how == "reconcretize":
        assert digest.read_text().strip() == inst.inputs_digest(env, "workstation",
                                                                "0.23.1 (stub)")
    else:
        assert not digest.exists()


def test_install_refuses_a_short_candidate():
    p = subprocess.run([sys.executable, str(ENV / "install"), "--candidate", "b382a8ef"],
                       capture_output=True, text=True)
    assert p.returncode == 64       # a wrong command line (README, "Exit codes")
    assert "full 40-hex" in p.stderr and "b382a8ef" in p.stderr


def test_install_refuses_an_unknown_site():
    p = subprocess.run([sys.executable, str(ENV / "install"), "--site", "nosuchsite"],
                       capture_output=True, text=True)
    assert p.returncode == 64
    assert "nosuchsite" in p.stderr and "workstation" in p.stderr


def test_install_exit_codes_follow_the_convention():
    """64 for argparse's own errors; 4 (ERROR) for bad input that is not the command
    line, here a site named by $H5REGRESS_SITE: never argparse's 2 (INCONCLUSIVE)."""
    p = subprocess.run([sys.executable, str(ENV / "install"), "--no-such-option"],
                       capture_output=True, text=True)
    assert p.returncode == 64 and "--no-such-option" in p.stderr
    p = subprocess.run([sys.executable, str(ENV / "install")], capture_output=True, text=True,
                       env={**os.environ, "H5REGRESS_SITE": "nosuchsite"})
    assert p.returncode == 4 and "nosuchsite" in p.stderr


def test_candidate_copy(tmp_path):
    inst = install_module()
    sha = "0123456789abcdef0123456789abcdef01234567"
    label = inst.derive_env(ENV, tmp_path, sha, "2.0.0")
    assert label == "2.0.0"
    doc = yaml.safe_load((tmp_path / "spack.yaml").read_text())["spack"]
    builds = definitions(doc)["hdf5_builds"]
    assert builds[1] == f"hdf5@git.{sha}=2.0.0 +mpi +hl +subfiling"
    assert builds[0] == definitions(spack_yaml())["hdf5_builds"][0], "baseline untouched"
    assert doc["include"] == [f"{ENV}/sites/${{H5REGRESS_SITE}}"]
    assert doc["repos"] == [str(ENV / "repo")]
    for name in KERNELS:
        assert doc["develop"][name]["path"] == str((REPO / "kernels" / name).resolve())
    # the label is kept when not given
    assert inst.derive_env(ENV, tmp_path / "b", sha, None) == "1.15.0"
    # the same label as the baseline: two builds would share an id
    with pytest.raises(inst.InstallError, match="also the baseline"):
        inst.derive_env(ENV, tmp_path / "c", sha, "1.14.1")


def test_candidate_copy_with_only_builds_the_candidate_and_those_packages(tmp_path):
    """--only (a bisect step): the copy holds the candidate HDF5 and the named packages
    against it, no baseline, no other tool, no Darshan, no develop entry of a package
    not kept; the rest of the file (site, repo, concretizer) as in the full copy."""
    inst = install_module()
    sha = "0123456789abcdef0123456789abcdef01234567"
    assert inst.derive_env(ENV, tmp_path, sha, None, ["h5paths"]) == "1.15.0"
    doc = yaml.safe_load((tmp_path / "spack.yaml").read_text())["spack"]
    defs = definitions(doc)
    assert defs["hdf5_builds"] == [f"hdf5@git.{sha}=1.15.0 +mpi +hl +subfiling"]
    assert defs["tools"] == ["h5paths@=main"]
    assert defs["instrumentation"] == []
    assert list(doc["develop"]) == ["h5paths"]
    assert doc["develop"]["h5paths"]["path"] == str((REPO / "kernels" / "h5paths").resolve())
    full = spack_yaml()
    assert doc["specs"] == full["specs"] and doc["concretizer"] == full["concretizer"]
    assert doc["packages"] == full["packages"]
    assert doc["include"] == [f"{ENV}/sites/${{H5REGRESS_SITE}}"]
    # two tools and Darshan: each kept, the others gone
    inst.derive_env(ENV, tmp_path / "b", sha, None, ["ior", "darshan-runtime"])
    defs = definitions(yaml.safe_load((tmp_path / "b" / "spack.yaml").read_text())["spack"])
    assert [PIN.match(t).group("name") for t in defs["tools"]] == ["ior"]
    assert defs["instrumentation"] == [DARSHAN + " +hdf5"]
    # a label equal to the dropped baseline's is no conflict in such a copy
    assert inst.derive_env(ENV, tmp_path / "c", sha, "1.14.1", ["ior"]) == "1.14.1"
    with pytest.raises(inst.InstallError, match=r"--only nosuch: not a package.*h5paths"):
        inst.derive_env(ENV, tmp_path / "d", sha, None, ["nosuch"])


def test_only_needs_a_candidate():
    p = subprocess.run([sys.executable, str(ENV / "install"), "--only", "h5paths"],
                       capture_output=True, text=True)
    assert p.returncode == 64 and "--only is only used with --candidate" in p.stderr


def test_candidate_argument():
    inst = install_module()
    sha = "0123456789ABCDEF0123456789abcdef01234567"
    assert inst.parse_candidate(sha) == (sha.lower(), None)
    assert inst.parse_candidate(sha + "=2.0.0") == (sha.lower(), "2.0.0")
    assert inst.parse_candidate(sha + "=") == (sha.lower(), None)
    for bad in ("develop", sha[:12], sha + "=a b"):
        with pytest.raises(inst.InstallError):
            inst.parse_candidate(bad)


def test_the_develop_packages_are_read_from_the_lock():
    inst = install_module()
    assert inst.develop_names((ENV / "locks/workstation.lock").read_text()) == list(KERNELS)
    assert inst.mirror_create_args(pathlib.Path("/m"), '{"concrete_specs": {}}') == [
        "mirror", "create", "-d", "/m", "--all"]


def test_create_mirror_leaves_out_the_develop_package(tmp_path, monkeypatch):
    """--create-mirror runs `spack mirror create --all` without the develop
    package (Spack cannot mirror a develop spec: 'DevelopStage' object has no
    attribute 'cache_mirror', exit 1), and installs nothing.  Spack is a stub
    here that records its arguments."""
    calls = tmp_path / "calls"
    stub = tmp_path / "spack" / "bin" / "spack"
    stub.parent.mkdir(parents=True)
    stub.write_text(f'#!/bin/sh\necho "$@" >> {calls}\n')
    stub.chmod(0o755)
    monkeypatch.setenv("SPACK_ROOT", str(tmp_path / "spack"))
    text = (ENV / "spack.yaml").read_text()
    sha = re.search(r"hdf5@git\.([0-9a-f]{40})=\S+ .*# h5regress:candidate", text).group(1)
    p = subprocess.run([sys.executable, str(ENV / "install"), "--candidate", sha,
                        "--env-dir", str(tmp_path / "env"),
                        "--lock", str(ENV / "locks/workstation.lock"),
                        "--create-mirror", str(tmp_path / "mirror")],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    assert calls.read_text().splitlines() == [
        f"-e {tmp_path / 'env'} mirror create -d {tmp_path / 'mirror'} --all "
        "--exclude-specs flash-io h5paths"]
    assert "@H5REGRESS_REPO@" not in (tmp_path / "env/spack.lock").read_text()


# ------------------------------------------------------------ real Spack


@pytest.fixture
def spack(monkeypatch):
    """The Spack ci/setup installed or found (h5regress.spacksetup), with the Python it
    runs with offline (SPACK_PYTHON: clingo from PyPI)."""
    from h5regress import spacksetup

    exe = spacksetup.find_spack(spacksetup.spack_dir())
    if not exe:
        why = ("spack not found: set SPACK_ROOT or put spack on PATH, or ci/setup "
               "--spack-bundle DIR (Spack is in no registry these machines reach)")
        if os.environ.get("H5REGRESS_EXPECT_SPACK"):
            pytest.fail(f"H5REGRESS_EXPECT_SPACK is set: {why}", pytrace=False)
        pytest.skip(why)
    for name, value in spacksetup.spack_env_vars().items():
        monkeypatch.setenv(name, value)
    return exe


@pytest.fixture
def env_copy(tmp_path, monkeypatch):
    """A copy of the environment (same pins) so that a test never touches
    spack-env/spack.lock."""
    inst = install_module()
    text = (ENV / "spack.yaml").read_text()
    sha, label = re.search(r"hdf5@git\.([0-9a-f]{40})=(\S+) .*# h5regress:candidate", text).groups()
    inst.derive_env(ENV, tmp_path, sha, label)
    monkeypatch.setenv("H5REGRESS_SITE", os.environ.get("H5REGRESS_SITE", "workstation"))
    return tmp_path


def test_spack_reads_the_environment(spack, env_copy):
    p = subprocess.run([spack, "-e", str(env_copy), "config", "get", "packages"],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    assert "openmpi" in p.stdout
    p = subprocess.run([spack, "-e", str(env_copy), "repo", "list"],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0 and "h5regress" in p.stdout, p.stdout + p.stderr


def test_spack_without_a_site_names_the_missing_include(spack, env_copy, monkeypatch):
    monkeypatch.delenv("H5REGRESS_SITE")
    p = subprocess.run([spack, "-e", str(env_copy), "config", "get", "packages"],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode != 0
    assert "sites/${H5REGRESS_SITE}" in p.stderr


@pytest.mark.slow
@pytest.mark.beside
@pytest.mark.spack_env
def test_spack_concretizes_the_environment(spack, env_copy):
    """The environment concretizes: the reference lock says so while the digest of its
    inputs (spack-env/install writes it with --update-reference-lock) still holds, else
    a real concretization does."""
    inst = install_module()
    site = os.environ["H5REGRESS_SITE"]
    recorded = inst.digest_file(site)
    if (recorded.is_file() and recorded.read_text().strip()
            == inst.inputs_digest(ENV, site, inst.spack_version(spack))):
        lock = json.loads((ENV / "locks" / f"{site}.lock").read_text())
    else:
        p = subprocess.run([spack, "-e", str(env_copy), "concretize", "--force"],
                           capture_output=True, text=True, timeout=3600)
        assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
        lock = json.loads((env_copy / "spack.lock").read_text())
    defs = definitions(spack_yaml())
    assert len(lock["roots"]) == len(defs["hdf5_builds"]) * (
        1 + len(defs["tools"]) + len(defs["instrumentation"]) + len(defs["async_io"]))
    names = {s["name"] for s in lock["concrete_specs"].values()}
    assert {"hdf5", "ior", "macsio", "h5bench", "json-cwx", "darshan-runtime",
            "hdf5-vol-async", "argobots", *KERNELS} <= names


@pytest.mark.slow
@pytest.mark.beside
@pytest.mark.spack_env
def test_spack_reports_a_spec_that_does_not_concretize(spack, env_copy):
    """h5bench against an HDF5 labelled 2.x (its recipe says hdf5@1.12.0:1):
    Spack must fail and name what does not fit."""
    p = subprocess.run([spack, "-e", str(env_copy), "spec",
                        "h5bench@git.675c86d11832c625f1d71e63d7626308170ba8c5=1.6"
                        " ^hdf5@git.b382a8ef85acaedb63d05fc29305ac24d9b1805a=2.0.0"],
                       capture_output=True, text=True, timeout=1800)
    assert p.returncode != 0
    assert "hdf5" in p.stderr, p.stderr


def test_the_installed_environment_manifest():
    """When the environment is installed here, its manifest loads: not stale,
    every tool of every build present, one build per HDF5 pin."""
    from h5regress import manifest as mf

    path = installed_manifest()
    builds = mf.load(path)
    labels = {PIN.match(s).group("label") for s in definitions(spack_yaml())["hdf5_builds"]}
    assert set(builds) == {f"hdf5-{label}" for label in labels}
    for b in builds.values():
        assert {"ior", "mdtest", "macsio", *KERNELS} <= set(b.tools)
        assert b.darshan_library and b.darshan_library.endswith("/lib/libdarshan.so")


@pytest.mark.slow
@pytest.mark.beside
@pytest.mark.spack_env
def test_the_installed_darshan_library_of_each_build():
    """Each build's libdarshan.so is there, a shared library, and its install is the
    darshan-runtime +hdf5 built against that build's HDF5 (Spack's own record of the
    install, <prefix>/.spack/spec.json)."""
    from h5regress import manifest as mf

    path = installed_manifest()
    data = json.loads(path.read_text())
    for build_id, build in mf.load(path).items():
        library = mf.darshan_library(build_id, path)
        assert library == build.darshan_library and os.path.isfile(library), build_id
        with open(library, "rb") as f:
            assert f.read(4) == b"\x7fELF", library
        prefix = data["builds"][build_id]["darshan"]["prefix"]
        spec = json.loads(pathlib.Path(prefix, ".spack", "spec.json").read_text())
        (node,) = [n for n in spec["spec"]["nodes"] if n["name"] == "darshan-runtime"]
        assert node["version"] == DARSHAN.split("@")[1] and node["parameters"]["hdf5"]
        (dep,) = [d for d in node["dependencies"] if d["name"] == "hdf5"]
        assert dep["hash"] == build.spec_hash, (build_id, "built against another HDF5")


def test_stale_build_stages_of_develop_packages_go_before_install(tmp_path):
    """A lock pins the develop package's hash, so a second checkout builds the same
    hash from another tree: its old stage (a CMake cache naming the other tree) must
    go, or CMake stops. Only the develop packages' stages go."""
    inst = install_module()
    lock = (ENV / "locks" / "workstation.lock").read_text()
    hashes = inst.develop_hashes(lock)
    assert hashes and all(
        "dev_path" in json.loads(lock)["concrete_specs"][h]["parameters"] for h in hashes)
    root = tmp_path / "stages"
    stale = [root / f"spack-stage-flash-io-main-{h}" for h in hashes]
    kept = root / "spack-stage-hdf5-1.14.1-someotherhash"
    for d in [*stale, kept]:
        (d / "spack-build").mkdir(parents=True)
    # Spack's links in the develop trees: one to a stage that goes, one to a
    # stage that stays, one not Spack's
    trees = tmp_path / "trees"
    lock = lock.replace(inst.REPO_PLACEHOLDER, str(trees))
    tree = trees / "kernels" / json.loads(lock)["concrete_specs"][hashes[0]]["name"]
    tree.mkdir(parents=True)
    (tree / f"build-linux-x86_64-{hashes[0][:7]}").symlink_to(stale[0])
    (tree / "build-linux-x86_64-other").symlink_to(kept)
    (tree / "notes").symlink_to(tmp_path / "nowhere")
    stub = tmp_path / "spack"
    stub.write_text(f'#!/bin/sh\necho {root}\n')   # `spack ... location --stages`
    stub.chmod(0o755)
    inst.clear_develop_stages(str(stub), [], lock)
    assert not any(d.exists() for d in stale) and kept.exists()
    # a dangling link stops whatever copies the tree (ReFrame's FLASH-IO fixture)
    assert sorted(p.name for p in tree.iterdir()) == ["build-linux-x86_64-other", "notes"]


def test_develop_builds_of_another_tree_are_rebuilt(tmp_path):
    """Two checkouts share one install tree and the lock's kernel hashes: after CI's
    fresh clone installed, the working copy's install kept the clone's build (Spack
    rebuilds a develop package only when its tree is newer than the install). The
    builds whose prefix says another tree (<prefix>/.spack/spec.json) are found;
    builds of this tree, and packages not installed, are left alone."""
    inst = install_module()
    lock_text = inst.lock_from_reference((ENV / "locks" / "workstation.lock").read_text())
    specs = json.loads(lock_text)["concrete_specs"]
    hashes = inst.develop_hashes(lock_text)
    assert len(hashes) == 2 * len(KERNELS)
    other, mine, missing = hashes[0], hashes[1], hashes[2]
    lines = []
    for h, tree in ((other, "/elsewhere/main"), (mine, None)):
        spec = specs[h]
        prefix = tmp_path / "opt" / f"{spec['name']}-{h}"
        dev_path = spec["parameters"]["dev_path"]
        if tree:
            dev_path = dev_path.replace(str(REPO), tree)
        (prefix / ".spack").mkdir(parents=True)
        (prefix / ".spack" / "spec.json").write_text(json.dumps({"spec": {"nodes": [
            {"name": "hdf5", "parameters": {}},
            {"name": spec["name"], "parameters": {"dev_path": dev_path}}]}}))
        lines.append(f"{h} {prefix}")
    hdf5 = next(h for h, s in specs.items() if s["name"] == "hdf5")
    lines.append(f"{hdf5} {tmp_path / 'opt' / 'hdf5'}")
    stub = tmp_path / "spack"
    stub.write_text("#!/bin/sh\ncat <<'EOF'\n" + "\n".join(lines) + "\nEOF\n")
    stub.chmod(0o755)
    assert missing not in inst.develop_builds_of_other_trees(str(stub), [], lock_text)
    assert inst.develop_builds_of_other_trees(str(stub), [], lock_text) == [other]
    # nothing installed yet: `spack find` fails
    stub.write_text("#!/bin/sh\necho '==> Error: no such environment' >&2\nexit 1\n")
    assert inst.develop_builds_of_other_trees(str(stub), [], lock_text) == []
