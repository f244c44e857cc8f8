"""The report as Markdown (report.md)."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

from h5regress.report.context import WHERE_COLUMNS, _commit_label, collect_context, where_rows
from h5regress.report.text import (NO_SLOWDOWN_SEEN, _interval, _perf, _ratio, _rows, _rule,
                                   _skipped_text, _tables, _title, blind_spot_text,
                                   change_point_text, sensitivity_pct, short_label, slowdown_words,
                                   summary, verdict_word)
from h5regress.report.links import fail_links, links_markdown


# ------------------------------------------------------------------ Markdown
def _md_cell(s: str) -> str:
    return str(s).replace('|', '\\|').replace('\n', ' ')


def _md_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    if not rows:
        return ['(none)']
    out = ['| ' + ' | '.join(header) + ' |', '|' + '---|' * len(header)]
    out += ['| ' + ' | '.join(_md_cell(c) for c in r) + ' |' for r in rows]
    return out


def markdown(result: Mapping[str, Any], ctx: Mapping[str, Any] | None = None,
             url: str = '') -> str:
    cfg = result['config']
    ctx = ctx or collect_context(result)
    lines = [f'# {_title(result)}', '', f'**{summary(result).split(": ", 1)[1]}**', '']
    lines += [f'{text}\n' for text in (change_point_text(result),
                                       change_point_text(result, 'better'),
                                       blind_spot_text(result)) if text]
    lines += [f'- candidate: `{result["candidate"]}` at '
              f'`{_commit_label(result, "candidate", ctx)}`',
              f'- baseline: `{result["baseline"]}` at `{_commit_label(result, "baseline", ctx)}`',
              f'- rule: {_rule(cfg)}',
              f'- records: {_skipped_text(result)}']
    lines += links_markdown(fail_links(result, ctx, url))
    if ctx.get('perflogs'):
        lines.append(f'- perflogs: `{ctx["perflogs"]}`')
    if result.get('error'):
        lines.append(f'- **error**: {result["error"]}')
    if result['overall'] == 'DEGRADED':
        lines.append('- **degraded night**: a canary fell far below its history; '
                     'no verdict, rerun.')
    lines += ['', '## Where', ''] + _md_table(WHERE_COLUMNS, where_rows(result, ctx))
    for title, header, rows, note in _tables(result):
        lines += ['', f'## {title}', '']
        if note:
            lines += [note, '']
        lines += _md_table(header, rows)
    if result.get('problems'):
        lines += ['', '## Problems (first of them)', '']
        lines += [f'- {_md_cell(p)}' for p in result['problems'][:20]]
    return '\n'.join(lines) + '\n'




#: width of the merge-request summary: a comment box shows it without a scroll bar
SUMMARY_COLUMNS = 59


def _fit(word: str, room: int) -> str:
    """A word too long for a line, its middle elided: a Markdown renderer joins a
    word broken across lines with a space ('collect ive'), which no reader can search."""
    parts = word.split('-')
    lo = hi = len(parts) // 2               # whole middle parts of a row name go first
    while len(word) > room and (lo > 1 or hi < len(parts) - 1):
        if hi - lo <= 0 or (hi < len(parts) - 1 and hi - len(parts) // 2 <= len(parts) // 2 - lo):
            hi += 1
        else:
            lo -= 1
        word = '-'.join(parts[:lo] + ['…'] + parts[hi:])
    if len(word) <= room:
        return word
    tail = (room - 1) // 2
    return word[:room - 1 - tail] + '…' + word[-tail:]


def _fill(text: str, first: str = '', rest: str = '  ') -> list[str]:
    room = SUMMARY_COLUMNS - max(len(first), len(rest))
    text = ' '.join(_fit(w, room) for w in text.split())
    return textwrap.wrap(text, SUMMARY_COLUMNS, initial_indent=first, subsequent_indent=rest,
                         break_long_words=False, break_on_hyphens=False)


def _metric_line(m: Mapping[str, Any]) -> str:
    word = verdict_word(m['verdict'])
    if m['verdict'] == 'FAIL':
        return f'{word}: {slowdown_words(m)}'
    if m['verdict'] == NO_SLOWDOWN_SEEN:
        return f'{word}: {short_label(m)}, a slowdown of {sensitivity_pct(m)} or more would ' \
               'have been seen'
    r, lo, hi = _perf(m)
    pairs = m.get('n_pairs')
    return f'{word}: {short_label(m)}, ratio {_ratio(r)} {_interval(lo, hi)}, ' \
           f'{pairs} pair{"" if pairs == 1 else "s"}'


def summary_markdown(result: Mapping[str, Any]) -> str:
    """The night in at most SUMMARY_COLUMNS columns, for a merge-request comment."""
    out = [f'### h5regress {result["night"]}: {verdict_word(result["overall"])}', '']
    out += _fill(f'{result["candidate"]} ({str(result.get("candidate_commit") or "?")[:12]}) '
                 f'vs {result["baseline"]} ({str(result.get("baseline_commit") or "?")[:12]})',
                 rest='')
    out.append('')
    out += _fill(summary(result).split(': ', 1)[1], rest='')
    out.append('')
    for m in _rows(result, 'gated'):
        out += _fill(_metric_line(m), '- ', '  ')
    out += ['', 'Details: report.html, report.md beside this file.']
    return '\n'.join(out) + '\n'
