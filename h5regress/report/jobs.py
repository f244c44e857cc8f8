"""What each run's job really ran, for the report's "Where" and a FAIL's links.

A record carries the tool's command line without the launcher (``mpirun -np 2``
is ReFrame's, added when it writes the job script) and its job script by file
name only. ReFrame's run report names each run's output directory, where the job
script, its stdout and its stderr are kept; the job script's line that runs the
tool holds the launcher as the job ran it. A night's directory may have moved
since (copied, served): paths under the report's output prefix are looked for
under the night's own ``output/`` first.

ReFrame keeps one output directory per test case, so the files are those of the
case's last run tonight (the launcher line is the same in every run).
"""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from h5regress import runreport


@dataclasses.dataclass(frozen=True)
class JobFiles:
    """A run's job script, stdout and stderr (paths, possibly absent)."""
    script: str
    stdout: str
    stderr: str


def _moved(path: str, prefix: str, output_dir: Path | None) -> str:
    """``path`` under ``output_dir`` when it lies under ReFrame's ``prefix`` and the
    night's copy is there; else ``path`` as the report wrote it."""
    if output_dir is None or not prefix:
        return path
    try:
        rel = Path(path).relative_to(prefix)
    except ValueError:
        return path
    here = output_dir / rel
    return str(here) if here.exists() else path


def job_files_of_report(text: str, output_dir: Path | None = None) -> dict[str, JobFiles]:
    """Run id -> its job's files, from one ReFrame run report's JSON text (nothing
    when it is not one)."""
    try:
        report = runreport.load(text)
    except ValueError:
        return {}
    prefix, out = report.prefix_output, {}
    for case in report.cases:
        run_id, outdir = case.get('run_id'), case.get('outputdir')
        if not (run_id and outdir and isinstance(case, Mapping)):
            continue
        where = Path(_moved(str(outdir), prefix, output_dir))
        out[str(run_id)] = JobFiles(script=str(where / 'rfm_job.sh'),
                                    stdout=str(where / (case.get('job_stdout') or 'rfm_job.out')),
                                    stderr=str(where / (case.get('job_stderr') or 'rfm_job.err')))
    return out


_SEPARATORS = re.compile(r';|&&|\|\||\bthen\b|\bdo\b|\belse\b')


def _words(command: Any) -> list[str]:
    try:
        return shlex.split(str(command or ''))
    except ValueError:
        return str(command or '').split()


def launcher_of(script: str, command: Any) -> str | None:
    """The words before the tool on the job script's first line that runs the
    record's ``command`` (its executable and first argument): ``mpirun -np 2``, or ''
    when it runs bare; None when no line does. The executable named as an option's
    value (the probe's ``--binary PATH``) is not a run of it."""
    words = _words(command)
    if not words:
        return None
    exe = r'(?:%s|%s)' % (re.escape(words[0]), re.escape(shlex.quote(words[0])))
    arg = (r'\s+(?:%s|%s)' % (re.escape(words[1]), re.escape(shlex.quote(words[1])))
           if len(words) > 1 else '')
    needle = re.compile(r'(?:^|\s)' + exe + arg + r'(?=\s|$)')
    for line in script.splitlines():
        for hit in needle.finditer(line):
            before = _SEPARATORS.split(line[:hit.start()])[-1].split()
            if arg or not (before and before[-1].startswith('--')):
                return ' '.join(before)
    return None


def read_job_files(reports_dir: Path, output_dir: Path | None) -> dict[str, JobFiles]:
    """Run id -> its job's files, of every run report (``*.json``) in ``reports_dir``."""
    out: dict[str, JobFiles] = {}
    if not reports_dir.is_dir():
        return out
    for path in sorted(reports_dir.glob('*.json')):
        try:
            out.update(job_files_of_report(path.read_text(encoding='utf-8'), output_dir))
        except (OSError, UnicodeDecodeError):
            continue
    return out


def launchers(jobs: Mapping[str, JobFiles],
              commands: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str | None]:
    """(run id, a record's command line) -> the launcher before it in the run's job
    script (:func:`launcher_of`; '' when the command carries its own, as a postrun
    execution's does), each script read once."""
    scripts: dict[str, str] = {}
    out: dict[tuple[str, str], str | None] = {}
    for run_id, command in set(commands):
        job = jobs.get(run_id)
        if job is None:
            continue
        if job.script not in scripts:
            try:
                scripts[job.script] = Path(job.script).read_text(encoding='utf-8')
            except (OSError, UnicodeDecodeError):
                scripts[job.script] = ''
        out[(run_id, command)] = launcher_of(scripts[job.script], command)
    return out


def link(path: str, base: str | None) -> str:
    """A link to a file: relative to ``base`` (the page's directory) when given, so a
    night copied with its report keeps its links; else a file URI."""
    if base:
        return os.path.relpath(path, base).replace(os.sep, '/')
    return Path(path).resolve().as_uri()
