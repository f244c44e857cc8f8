"""A check's sanity: the tool's outputs parsed once, its exit code and error lines,
the proof of the work in the data directory, the HDF5 it loaded
(:class:`SanityProof`, a mixin of :class:`h5regress.checkbase.IOBenchmark`).
Sanity comes from what the tool says it did and what it left, never from an exit code
alone."""

from __future__ import annotations

import os

import reframe as rfm
import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ
from reframe.core.builtins import deferrable, variable
from reframe.core.exceptions import SanityError

from h5regress import proof, runresults
from h5regress.checkjob import CACHE_MARK, EXIT_MARK, FILES_LIST, SETUP_MARK
from h5regress.parsers import ParsedRun, ParseError, parser_for
from h5regress.parsers import base as parser_base


class SanityProof(rfm.RegressionTestPlugin):
    """What the run says and what it left, held to what its row asked for."""

    #: Files the parser reads, relative to the stage directory.
    #:
    #: :type: list of str
    #: :default: ``['stdout']`` meaning the job's standard output
    output_files = variable(typ.List[str], value=['stdout'])

    def read_outputs(self) -> dict[str, str]:
        """``output_files`` that exist, by name; ``stdout`` and ``stderr`` are the job's."""
        job_files = {'stdout': self.stdout.evaluate(), 'stderr': self.stderr.evaluate()}
        files = {}
        for name in self.output_files:
            path = os.path.join(self.stagedir, job_files.get(name, name))
            if os.path.exists(path):
                with open(path, errors='replace') as fp:
                    files[name] = fp.read()
        return files

    def parse_output(self, files: dict[str, str]) -> ParsedRun:
        """The run as the tool's parser reads it; checks with several outputs override."""
        runs = parser_for(self.parser or self.tool).parse(files)
        if len(runs) != 1:
            raise ParseError(f'{self.tool}: expected one run in {sorted(files)}, '
                             f'found {len(runs)}')
        return runs[0]

    def parse_phases(self, names: list[str], files: dict[str, str], cache_matters: bool,
                     commands: dict[str, str] | None = None) -> ParsedRun:
        """One run from several executions (a write phase, a read phase, ...), each
        output file ``names`` one execution, run by ``commands[name]`` (the first by
        default the job's own): each record names its own execution
        (:class:`h5regress.runresults.PhasedRun`).

        ``cache_matters``: the phases after the first (the reads) could be served by
        this node's page cache (one node); unless the job says it dropped the cache,
        their figures are labelled as cached.
        """
        parser = parser_for(self.parser or self.tool)
        commands = {names[0]: self.main_command(), **(commands or {})}
        phases = [runresults.Phase(run, commands.get(name, ''))
                  for name in names for run in parser.parse({name: files.get(name, '')})]
        if cache_matters:
            for phase in phases[1:]:
                self.label_cache(phase.run, files.get('stdout', ''))
        return runresults.merge_phases(self.tool, phases)

    @staticmethod
    def cache_states(stdout: str) -> list[str]:
        """What each :meth:`drop_caches_command` of the job said, in order."""
        return [line.split(':', 1)[1].strip() for line in stdout.splitlines()
                if line.startswith(CACHE_MARK)]

    @classmethod
    def label_cache(cls, run: ParsedRun, stdout: str) -> None:
        """Record whether the page cache was dropped before the read phase (the
        :meth:`drop_caches_command` line in ``stdout``); if not, say the reads are cached."""
        cache = (cls.cache_states(stdout) or ['kept'])[0]
        run.provenance['read_page_cache'] = cache
        if cache != 'dropped':
            run.warnings.append('read figures are cached: the page cache was not '
                                'dropped between the write and read phases')

    def parsed_run(self) -> ParsedRun:
        """The tool's results, parsed once."""
        if getattr(self, '_parsed_run', None) is None:
            self._parsed_run = self.parse_output(self.read_outputs())
        return self._parsed_run

    @deferrable
    def assert_parsed(self):
        try:
            self.parsed_run()
        except ParseError as err:
            raise SanityError(str(err)) from None
        return True

    @deferrable
    def assert_tool_exit(self):
        """The tool ran to its end and exited 0, as the job script echoed it.

        Not the scheduler's exit code: SLURM's ``squeue`` backend never sees it. A
        job killed by the scheduler (time limit, cancellation) never echoes it.
        """
        stdout = sn.evaluate(sn.extractall(rf'^{EXIT_MARK} (\d+)$', self.stdout, 1, int))
        if not stdout:
            stderr_path = os.path.join(self.stagedir, self.stderr.evaluate())
            lines = []
            if os.path.exists(stderr_path):
                with open(stderr_path, errors='replace') as fp:
                    lines = [line.strip() for line in fp]
            killed = next((line for line in lines if 'CANCELLED' in line or
                           'TIME LIMIT' in line or line.startswith(SETUP_MARK)), '')
            if killed.startswith(SETUP_MARK):
                why = [line for line in lines if line.startswith('mkdir:')]
                raise SanityError(f'{self.tool} never ran: '
                                  f'{": ".join([killed[len(SETUP_MARK):].strip()] + why)}')
            raise SanityError(f'the job ended before {self.tool} finished: '
                              f'{killed or "killed, cancelled or timed out"}')
        if stdout[-1] != 0:
            raise SanityError(f'{self.tool} exited with {stdout[-1]}{self.failure_cause()}')
        return True

    def error_line(self) -> str | None:
        """The tool's error line on the job's stdout or stderr (its parser's
        ``error_line``; the operating system's errors for tools without one)."""
        streams = {}
        for name in ('stdout', 'stderr'):
            path = os.path.join(self.stagedir, getattr(self, name).evaluate())
            if os.path.exists(path):
                with open(path, errors='replace') as fp:
                    streams[name] = fp.read()
        parser = parser_for(self.parser or self.tool)
        return getattr(parser, 'error_line', parser_base.error_line)(streams)

    def failure_cause(self) -> str:
        """``': <cause>'`` as the tool's output names it (the parser's reason, the tool's
        error line on stdout or stderr), or ``''``."""
        causes = []
        try:
            self.parsed_run()
        except ParseError as err:
            causes.append(str(err))
        line = self.error_line()
        if line and not any(line in cause for cause in causes):
            causes.append(line)
        return f': {"; ".join(causes)}' if causes else ''

    @deferrable
    def assert_no_error_lines(self):
        """No error line of the tool on the job's stdout or stderr, whatever its exit
        code: several tools exit 0 after failing (IOR through OMPIO on a full file system,
        fio after one of its workers was killed)."""
        line = self.error_line()
        if line:
            raise SanityError(f'{self.tool} failed: {line}')
        return True

    def expected_output(self, params: dict[str, object]) -> proof.Expectation | None:
        """What the run of a row with ``params`` must leave in its data directory,
        from the parameters alone (never from what the tool printed). Every check
        declares it: ``None`` fails sanity."""
        return None

    def stage_text(self, name: str) -> str | None:
        """A file of the stage directory, or ``None`` when the job did not write it."""
        try:
            with open(os.path.join(self.stagedir, name), errors='replace') as fp:
                return fp.read()
        except FileNotFoundError:
            return None

    def proof_problems(self) -> list[str]:
        """What the listing of the data directory lacks against :meth:`expected_output`."""
        expectation = self.expected_output(self.test_params)
        if expectation is None:
            return [f'{type(self).__name__} declares nothing its run must leave '
                    '(expected_output)']
        return proof.check(expectation, self.stage_text(FILES_LIST),
                           self.stage_text(proof.CHANGED_MARK), where=self.data_dir)

    @deferrable
    def assert_proof_of_work(self):
        """The run left what its row asked for: a summary alone is no proof."""
        problems = self.proof_problems()
        if problems:
            raise SanityError(f'{self.tool}: no proof of the work in the data directory: '
                              + '; '.join(problems))
        return True

    def loaded_hdf5_problems(self) -> list[str]:
        """How the HDF5 the run loaded differs from its build's (HDF5 tools only)."""
        return []

    @deferrable
    def assert_loaded_hdf5(self):
        """The run loaded the HDF5 of the build its records are labelled with."""
        problems = self.loaded_hdf5_problems()
        if problems:
            raise SanityError('the wrong HDF5 ran: ' + '; '.join(problems))
        return True
