"""A throw-away SLURM cluster on this host, built from Debian 12 packages.

`SlurmCluster(workdir).start()` brings up, all configured under `workdir`
(never /etc, no systemd):

* ``munged`` with its own key and socket;
* ``mariadbd`` with its own data directory, socket and TCP port, and
  ``slurmdbd`` on top of it, so ``sacct`` works (``with_accounting``);
* ``slurmctld`` and one ``slurmd`` per node (``n1``, ``n2``), each started
  with ``-N <node>`` on its own port, spool directory and TmpFS directory.
  Debian's slurmd is built with multiple-slurmd support, so both "nodes"
  run on this one host (NodeAddr=127.0.0.1).

Every daemon runs in the foreground as a child started here; its PID and
kernel start time are recorded in ``workdir/pids.json``.  `stop()` cancels
the cluster's jobs, then ends exactly those processes, in reverse order,
and checks each PID's start time first, so a recycled PID is never
signalled.

By hand (as root)::

    python tests/slurm_cluster.py up /tmp/slurm    # prints SLURM_CONF
    python tests/slurm_cluster.py down /tmp/slurm
"""

import argparse
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

log = logging.getLogger(__name__)

#: Programs without which no cluster can start (Debian: munge, slurmctld,
#: slurmd, slurm-client).
REQUIRED_PROGRAMS = ("munged", "slurmctld", "slurmd", "sinfo", "srun",
                     "sbatch", "squeue", "scancel")
#: Programs needed for accounting (Debian: slurmdbd, mariadb-server).
ACCOUNTING_PROGRAMS = ("mariadb-install-db", "mariadbd", "mariadb",
                       "slurmdbd", "sacctmgr", "sacct")

CLUSTER_NAME = "h5rtest"
NODES = ("n1", "n2")
PARTITION = "debug"
# The controller's MessageTimeout: with the controller gone, clients give
# up after about this long instead of the default 10 s.
MESSAGE_TIMEOUT = 5
# Our subdirectories of workdir; start() recreates them from scratch, in a
# workdir that is new, empty, or marked as ours by _MARKER.
_SUBDIRS = ("etc", "munge", "mariadb", "ctld", "nodes", "log")
_MARKER = ".h5regress-slurm-cluster"
# The daemons live in sbin, which a non-login PATH may lack.
_PATH = os.environ.get("PATH", os.defpath) + ":/usr/sbin:/sbin"


class SlurmClusterError(RuntimeError):
    """A daemon did not start; the message names it and ends with its log."""


@dataclass
class Daemon:
    """A process started by the harness, identified by PID + start time."""
    name: str
    pid: int
    start_time: int
    log: str


def missing_programs(names):
    """The programs in `names` that are not on PATH (or in /usr/sbin)."""
    return [name for name in names if shutil.which(name, path=_PATH) is None]


def _proc_stat(pid):
    """(state, start time in clock ticks) of `pid`, or None if it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # Fields after the parenthesised command: state is field 3, start
    # time field 22 (proc(5)).
    fields = text[text.rindex(")") + 2:].split()
    return fields[0], int(fields[19])


def _free_ports(count):
    """`count` distinct TCP ports that are free right now."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket()
            sock.bind(("", 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _port_open(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def _tail(path, lines=25):
    try:
        text = Path(path).read_text(errors="replace")
    except FileNotFoundError:
        return f"(no log file {path})"
    return "\n".join(text.splitlines()[-lines:]) or f"({path} is empty)"


class SlurmCluster:
    """A SLURM cluster of two slurmd nodes on this host; see module doc.

    `workdir` must be on a path whose every directory is searchable by all
    users (munged checks its socket directory's parents); start() makes
    `workdir` itself mode 0755.  Creating the object with the `workdir` of
    a running cluster (e.g. one brought up with ``up``) attaches to it, so
    that stop() ends its daemons.
    """

    def __init__(self, workdir, with_accounting=True):
        self.workdir = Path(workdir).resolve()
        self.with_accounting = with_accounting
        #: Whether slurmdbd runs (sacct works); set by start().
        self.accounting = False
        #: Why accounting is off although it was asked for, else None.
        self.accounting_error = None
        #: Seconds start() took.
        self.startup_seconds = None
        self.nodes = list(NODES)
        self.partitions = [PARTITION]
        self.cpus_per_node = len(os.sched_getaffinity(0))
        self._daemons = []
        self._popens = {}
        self._load_pids()

    # -- public interface ------------------------------------------------

    @property
    def daemons(self):
        """The running daemons started here, oldest first."""
        return list(self._daemons)

    @property
    def slurm_conf(self):
        return self.workdir / "etc" / "slurm.conf"

    @property
    def env(self):
        """Variables to add to os.environ for SLURM clients and jobs.

        Jobs here run as root, so Open MPI's mpirun needs its two
        run-as-root switches.
        """
        return {"SLURM_CONF": str(self.slurm_conf),
                "OMPI_ALLOW_RUN_AS_ROOT": "1",
                "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}

    def run(self, *args, timeout=60, check=True):
        """Run a SLURM client command against this cluster."""
        return subprocess.run(args, env=self._environ(), timeout=timeout,
                              check=check, capture_output=True, text=True)

    def start(self, timeout=60):
        """Start all daemons and wait until every node is idle.

        Raises SlurmClusterError naming the daemon that failed (and stops
        the ones already started).  If accounting was asked for but
        MariaDB or slurmdbd fail, the cluster runs without accounting and
        `accounting_error` says why.
        """
        if os.geteuid() != 0:
            raise SlurmClusterError("a SLURM cluster needs root")
        missing = missing_programs(REQUIRED_PROGRAMS)
        if missing:
            raise SlurmClusterError(f"missing programs: {', '.join(missing)}")
        if any(self._alive(d) for d in self._daemons):
            raise SlurmClusterError(
                f"a cluster is already running in {self.workdir}; stop it "
                f"first")
        self._daemons = []
        began = time.monotonic()
        deadline = began + timeout
        self._make_dirs()
        (self.ctld_port, self.dbd_port, self.db_port,
         *self.node_ports) = _free_ports(3 + len(self.nodes))
        try:
            self._start_munge(deadline)
            # sacctmgr needs slurm.conf to find slurmdbd.
            self.accounting = self.with_accounting
            self._write_slurm_conf()
            if self.with_accounting:
                # Half the time at most, so that the cluster can still come
                # up without accounting (normally ~9 s of the ~10 s).
                self._start_accounting(began + timeout / 2)
            self._start_slurm(deadline)
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - began
        log.info("SLURM cluster up in %.1f s (accounting: %s)",
                 self.startup_seconds, self.accounting)

    def stop(self):
        """Cancel all jobs, then end the daemons started here, newest first.

        Only PIDs recorded by start() whose start time still matches are
        signalled.  Safe to call more than once.
        """
        if not self._daemons:
            return
        if any(d.name == "slurmctld" and self._alive(d)
               for d in self._daemons):
            self._cancel_jobs()
        for daemon in reversed(list(self._daemons)):
            self._terminate(daemon)
            self._daemons.remove(daemon)
            self._save_pids()

    # -- start-up steps --------------------------------------------------

    def _make_dirs(self):
        self.workdir.mkdir(parents=True, exist_ok=True)
        marker = self.workdir / _MARKER
        if not marker.exists() and any(self.workdir.iterdir()):
            raise SlurmClusterError(
                f"{self.workdir} is not empty and holds no cluster of ours")
        marker.touch()
        self.workdir.chmod(0o755)
        for name in _SUBDIRS:
            shutil.rmtree(self.workdir / name, ignore_errors=True)
            (self.workdir / name).mkdir(mode=0o755)
        for node in self.nodes:
            for sub in ("spool", "tmp"):
                (self.workdir / "nodes" / node / sub).mkdir(
                    mode=0o755, parents=True)

    def _start_munge(self, deadline):
        munge = self.workdir / "munge"
        key = munge / "munge.key"
        fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(os.urandom(1024))
        self.munge_socket = munge / "munge.sock"
        self._spawn("munged", [
            "munged", "--foreground", f"--socket={self.munge_socket}",
            f"--key-file={key}", f"--pid-file={munge / 'munged.pid'}",
            f"--seed-file={munge / 'munged.seed'}",
            f"--log-file={munge / 'munged.log'}"])
        self._wait(["munged"], self.munge_socket.exists, deadline)

    def _start_accounting(self, deadline):
        """Start mariadbd and slurmdbd; on failure, stop them and rewrite
        slurm.conf without accounting."""
        missing = missing_programs(ACCOUNTING_PROGRAMS)
        try:
            if missing:
                raise SlurmClusterError(
                    f"missing programs: {', '.join(missing)}")
            self._start_mariadb(deadline)
            self._write_slurmdbd_conf()
            self._spawn("slurmdbd", ["slurmdbd", "-D"])
            self._wait(["slurmdbd"], lambda: _port_open(self.dbd_port),
                       deadline)
            self._wait(["slurmdbd"], self._register_cluster, deadline)
        except (SlurmClusterError, OSError,
                subprocess.SubprocessError) as err:
            self.accounting_error = str(err)
            log.warning("SLURM accounting disabled, sacct will not work: %s",
                        err)
            for daemon in reversed(list(self._daemons)):
                if daemon.name in ("slurmdbd", "mariadbd"):
                    self._terminate(daemon)
                    self._daemons.remove(daemon)
            self.accounting = False
            self._save_pids()
            self._write_slurm_conf()

    def _start_mariadb(self, deadline):
        db = self.workdir / "mariadb"
        self.db_socket = db / "mariadbd.sock"
        install = subprocess.run(
            ["mariadb-install-db", "--no-defaults", f"--datadir={db / 'data'}",
             "--user=root", "--auth-root-authentication-method=socket",
             "--skip-test-db"],
            env=self._environ(), capture_output=True, text=True, timeout=120)
        if install.returncode:
            raise SlurmClusterError(
                f"mariadb-install-db failed:\n{install.stdout}"
                f"{install.stderr}")
        self._spawn("mariadbd", [
            "mariadbd", "--no-defaults", f"--datadir={db / 'data'}",
            f"--socket={self.db_socket}", f"--port={self.db_port}",
            "--bind-address=127.0.0.1", f"--pid-file={db / 'mariadbd.pid'}",
            "--user=root", "--skip-log-bin", "--innodb-lock-wait-timeout=900"])
        self._wait(["mariadbd"], self._create_db_user, deadline)

    def _create_db_user(self):
        """Create slurmdbd's database user; False while mariadbd starts."""
        sql = ("CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' "
               "IDENTIFIED BY 'slurm';"
               "GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';")
        done = subprocess.run(
            ["mariadb", "--no-defaults", f"--socket={self.db_socket}",
             "--user=root", "-e", sql], env=self._environ(),
            capture_output=True, timeout=10)
        return done.returncode == 0

    def _register_cluster(self):
        done = self.run("sacctmgr", "-i", "add", "cluster", CLUSTER_NAME,
                        timeout=20, check=False)
        return done.returncode == 0 or "already exists" in done.stdout

    def _start_slurm(self, deadline):
        self._spawn("slurmctld", ["slurmctld", "-D"])
        self._wait(["slurmctld"], lambda: _port_open(self.ctld_port),
                   deadline)
        names = [f"slurmd-{node}" for node in self.nodes]
        for name, node in zip(names, self.nodes):
            self._spawn(name, ["slurmd", "-D", "-N", node])
        self._wait(["slurmctld", *names], self._nodes_idle, deadline)

    def _nodes_idle(self):
        done = self.run("sinfo", "-h", "-N", "-o", "%N %t", timeout=20,
                        check=False)
        states = dict(line.split() for line in done.stdout.splitlines())
        return all(states.get(node) == "idle" for node in self.nodes)

    # -- configuration files ---------------------------------------------

    def _write_slurm_conf(self):
        w = self.workdir
        host = socket.gethostname().split(".")[0]
        if self.accounting:
            accounting = [
                "AccountingStorageType=accounting_storage/slurmdbd",
                "AccountingStorageHost=127.0.0.1",
                f"AccountingStoragePort={self.dbd_port}",
                # For slurmdbd connections SLURM takes the munge socket
                # from here, not from AuthInfo.
                f"AccountingStoragePass={self.munge_socket}",
                "JobAcctGatherType=jobacct_gather/linux",
            ]
        else:
            accounting = ["AccountingStorageType=accounting_storage/none",
                          "JobAcctGatherType=jobacct_gather/none"]
        lines = [
            f"ClusterName={CLUSTER_NAME}",
            f"SlurmctldHost={host}(127.0.0.1)",
            f"SlurmctldPort={self.ctld_port}",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={self.munge_socket}",
            f"StateSaveLocation={w / 'ctld'}",
            f"SlurmctldPidFile={w / 'ctld' / 'slurmctld.pid'}",
            # %n is the node name given to slurmd -N.
            f"SlurmdSpoolDir={w / 'nodes' / '%n' / 'spool'}",
            f"SlurmdPidFile={w / 'nodes' / '%n' / 'slurmd.pid'}",
            f"SlurmdLogFile={w / 'log' / '%n.log'}",
            f"TmpFS={w / 'nodes' / '%n' / 'tmp'}",
            # No systemd, no cgroups.
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "SchedulerType=sched/backfill",
            "MpiDefault=none",
            "ReturnToService=2",
            f"MessageTimeout={MESSAGE_TIMEOUT}",
            "TCPTimeout=2",
            "SlurmctldTimeout=10",
            "SlurmdTimeout=30",
            "InactiveLimit=0",
            "KillWait=2",
            "MailProg=/bin/true",
            *accounting,
        ]
        for node, port in zip(self.nodes, self.node_ports):
            lines.append(
                f"NodeName={node} NodeHostname={host} NodeAddr=127.0.0.1 "
                f"Port={port} CPUs={self.cpus_per_node} State=UNKNOWN")
        lines.append(
            f"PartitionName={PARTITION} Nodes={','.join(self.nodes)} "
            f"Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES")
        self.slurm_conf.write_text("\n".join(lines) + "\n")

    def _write_slurmdbd_conf(self):
        # slurmdbd reads slurmdbd.conf next to $SLURM_CONF; it must be
        # private to SlurmUser.
        path = self.slurm_conf.parent / "slurmdbd.conf"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write("\n".join([
                "AuthType=auth/munge",
                f"AuthInfo=socket={self.munge_socket}",
                "DbdHost=localhost",
                "DbdAddr=127.0.0.1",
                f"DbdPort={self.dbd_port}",
                "SlurmUser=root",
                f"PidFile={self.workdir / 'mariadb' / 'slurmdbd.pid'}",
                "StorageType=accounting_storage/mysql",
                "StorageHost=127.0.0.1",
                f"StoragePort={self.db_port}",
                "StorageUser=slurm",
                "StoragePass=slurm",
                "StorageLoc=slurm_acct_db",
            ]) + "\n")

    # -- processes ---------------------------------------------------------

    def _environ(self):
        """os.environ without an enclosing job's SLURM_*, plus self.env."""
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("SLURM_")}
        env.update(self.env, PATH=_PATH)
        return env

    def _spawn(self, name, argv):
        logfile = self.workdir / "log" / f"{name}.log"
        with open(logfile, "ab") as out:
            popen = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=out,
                stderr=subprocess.STDOUT, env=self._environ(),
                cwd=self.workdir, start_new_session=True)
        stat = _proc_stat(popen.pid)
        if stat is None:
            raise SlurmClusterError(f"{name} exited at once:\n"
                                    f"{_tail(logfile)}")
        self._daemons.append(Daemon(name, popen.pid, stat[1], str(logfile)))
        self._popens[popen.pid] = popen
        self._save_pids()

    def _wait(self, names, ready, deadline):
        """Poll `ready()` until true; fail when a daemon named in `names`
        exits or the deadline passes."""
        watched = [d for d in self._daemons if d.name in names]
        while True:
            for daemon in watched:
                if not self._alive(daemon):
                    raise SlurmClusterError(
                        f"{daemon.name} exited during start-up; end of "
                        f"{daemon.log}:\n{_tail(daemon.log)}")
            if ready():
                return
            if time.monotonic() > deadline:
                logs = "\n".join(f"--- end of {d.log}:\n{_tail(d.log)}"
                                 for d in watched)
                raise SlurmClusterError(
                    f"{', '.join(names)} not ready within the start "
                    f"timeout\n{logs}")
            time.sleep(0.2)

    def _alive(self, daemon):
        """True while `daemon` runs (a zombie counts as ended)."""
        popen = self._popens.get(daemon.pid)
        if popen is not None and popen.poll() is not None:
            return False
        stat = _proc_stat(daemon.pid)
        return stat is not None and stat[1] == daemon.start_time \
            and stat[0] != "Z"

    def _terminate(self, daemon, grace=15):
        """SIGTERM `daemon`, SIGKILL it after `grace` seconds."""
        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5)):
            if not self._alive(daemon):
                break
            try:
                os.kill(daemon.pid, sig)
            except ProcessLookupError:
                break
            until = time.monotonic() + wait
            while self._alive(daemon) and time.monotonic() < until:
                time.sleep(0.1)
        if self._alive(daemon):
            log.error("%s (pid %d) survived SIGKILL", daemon.name, daemon.pid)
        self._popens.pop(daemon.pid, None)

    def _cancel_jobs(self, wait=15):
        """Cancel every job of this cluster and wait until they are gone,
        so no slurmstepd outlives its slurmd."""
        try:
            self.run("scancel", f"--partition={PARTITION}",
                     timeout=wait, check=False)
            until = time.monotonic() + wait
            while time.monotonic() < until:
                done = self.run("squeue", "-h", "-o", "%i", timeout=wait,
                                check=False)
                if done.returncode or not done.stdout.strip():
                    return
                time.sleep(0.5)
        except subprocess.TimeoutExpired:
            pass
        log.warning("jobs still listed by squeue after cancelling them")

    # -- PID file ----------------------------------------------------------

    @property
    def _pids_file(self):
        return self.workdir / "pids.json"

    def _save_pids(self):
        if self._daemons:
            self._pids_file.write_text(json.dumps(
                {"accounting": self.accounting,
                 "daemons": [asdict(d) for d in self._daemons]}, indent=1))
        else:
            self._pids_file.unlink(missing_ok=True)

    def _load_pids(self):
        try:
            saved = json.loads(self._pids_file.read_text())
        except FileNotFoundError:
            return
        self.accounting = saved["accounting"]
        self._daemons = [Daemon(**d) for d in saved["daemons"]]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("action", choices=("up", "down"))
    parser.add_argument("workdir")
    parser.add_argument("--no-accounting", action="store_true",
                        help="no MariaDB/slurmdbd (sacct will not work)")
    parser.add_argument("--timeout", type=float, default=60)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    cluster = SlurmCluster(args.workdir,
                           with_accounting=not args.no_accounting)
    if args.action == "down":
        cluster.stop()
        return 0
    try:
        cluster.start(timeout=args.timeout)
    except SlurmClusterError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    for name, value in cluster.env.items():
        print(f"export {name}={value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
