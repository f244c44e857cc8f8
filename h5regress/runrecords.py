"""The one reader of raw run records: every part that needs the records of runs (the
gate, the report's "where", ``h5regress study``, ``h5regress perflog``) calls it.

Three stores hold them, read by their own parsers and returned alike, as a
:class:`RunRecords`:

- ReFrame's run reports (:mod:`h5regress.runreport`): what the nightly writes per side
  and its gate reads; preferred wherever they are at hand;
- ReFrame's perflogs (:mod:`h5regress.perflog`): the same values, written for people
  as each test ends, read where a user names them;
- JSON-lines record files (:func:`h5regress.record.read_jsonl`): records kept by hand
  or by ``h5regress parse``.

A path that does not exist is an error naming it (:class:`MissingInput`); a malformed
line or test case is a problem naming its file and is skipped.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from h5regress import perflog, runreport
from h5regress.record import Record, read_jsonl

#: where the nightly leaves an attempt's records under its --out: run reports, perflogs
REPORTS, PERFLOGS = 'reports', 'perflogs'


class MissingInput(FileNotFoundError):
    """A path given to read does not exist; the message names the option and the path."""


@dataclasses.dataclass
class RunRecords:
    """The records read and the problems of what was skipped (file and line or case)."""
    records: list[Record] = dataclasses.field(default_factory=list)
    problems: list[str] = dataclasses.field(default_factory=list)

    def add(self, records: Sequence[Record], problems: Sequence[str]) -> None:
        self.records.extend(records)
        self.problems.extend(str(p) for p in problems)


def of_attempt(pair_id: Any, attempt: str) -> bool:
    """Whether a record's pair id belongs to a nightly attempt (``<attempt>-p<i>``)."""
    return pair_id is not None and str(pair_id).rsplit('-p', 1)[0] == attempt


def read(*, records: Sequence[str] = (), perflogs: Sequence[str] = (),
         reports: Sequence[str] = ()) -> RunRecords:
    """The records of the JSON-lines record files, perflogs and run reports (each a file
    or a directory of them) the arguments name, in that order (the first record of a
    metric is the one that describes it to the gate)."""
    for option, paths in (('--records', records), ('--perflogs', perflogs),
                          ('--reports', reports)):
        for path in paths:
            if not Path(path).exists():   # not a malformed line: nothing to read at all
                raise MissingInput(f'{option} {path}: no such file or directory')
    out = RunRecords()
    for given in records:
        path = Path(given)
        for f in sorted(path.rglob('*.jsonl')) if path.is_dir() else [path]:
            out.add(*read_jsonl(f.read_text(encoding='utf-8', errors='replace'), str(f)))
    if perflogs:
        out.add(*perflog.read(list(perflogs)))
    if reports:
        out.add(*runreport.read(list(reports)))
    return out


def of_night(night_dir: Path, attempt: str) -> RunRecords:
    """The records of one nightly attempt where the nightly leaves them: its run reports
    (those its gate read), else, for a directory without them, its perflogs; none when
    neither is there."""
    for kind, suffix in ((REPORTS, '.json'), (PERFLOGS, '.log')):
        where = night_dir / kind / attempt
        if where.is_dir() and any(where.rglob(f'*{suffix}')):
            return read(**{kind: [str(where)]})
    return RunRecords()
