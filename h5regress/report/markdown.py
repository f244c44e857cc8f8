"""The report as Markdown (report.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from h5regress.report.context import WHERE_COLUMNS, _commit_label, collect_context, where_rows
from h5regress.report.text import (_rule, _skipped_text, _tables, _title, blind_spot_text,
                                   change_point_text, summary)
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


