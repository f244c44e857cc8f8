"""The report's sections on what follows a FAIL (issue 15): the bisect's first bad
commit and the Darshan counter diff, from the gate result's ``bisect`` and
``darshan`` keys (written by the nightly after a FAIL). Rendering only: tables in
the report's own form (title, header, rows, note) and JUnit test cases."""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any
from xml.sax.saxutils import quoteattr

BISECT_COLUMNS = ('commit', 'subject', 'date', 'step verdict', 'gate', 'ratio [95% interval]',
                  'pairs', 'build', 'why')
DARSHAN_COLUMNS = ('counter', 'what', 'baseline', 'candidate', 'candidate/baseline')


def _num(x: Any) -> str:
    if x is None:
        return '-'
    if isinstance(x, float) and not x.is_integer():
        return f'{x:.4g}'
    return f'{int(x):,}' if abs(x) >= 1 else f'{x:g}'


def answer(b: Mapping[str, Any]) -> str:
    """The bisect's answer in a sentence, saying when it rests on a --bad this bisect
    did not measure (--bad-ratio: the FAIL night's word for it)."""
    fb = b['first_bad']
    untested = ('' if fb.get('tested') else
                f'; {fb["commit"][:12]} is the --bad commit, taken as bad and not measured '
                'by this bisect' + ('' if b.get('bad_ratio') is None else
                                    f' (given ratio {b["bad_ratio"]:.3f})'))
    merges = ''.join(f'; the merge {d["merge"][:12]} "{d["subject"]}" brought in '
                     f'{d["commits"]} commit(s), bisected too' for d in b.get('descended', []))
    if b['found']:
        return (f'{first_words(b)} {fb["commit"]} "{fb["subject"]}" ({fb["date"]})'
                + ('' if fb.get('tested') else ', every commit before it tested good')
                + untested + merges)
    return (f'the {first_words(b)} is one of ' + ', '.join(c[:12] for c in b['candidates'])
            + ' (skipped commits in the way, as git bisect skip)' + untested)


def first_words(b: Mapping[str, Any]) -> str:
    """What the bisect looked for: the first bad commit, or (``--speedup``) the first
    commit with the speed-up."""
    if b.get('broke'):
        return 'first commit that breaks the row(s)'
    return 'first commit with the speed-up' if b.get('speedup') else 'first bad commit'


def bisect_summary(b: Mapping[str, Any]) -> str:
    if b.get('error'):
        return f'no bisect: {b["error"]}'
    chain = 'commit(s)' if b.get('descended') else 'first-parent commit(s)'
    return (f'{answer(b)}; {len(b["steps"])} step(s) over {b["commits"]} {chain} '
            f'after {b["good"][:12]}, {b["builds"]} build(s) ({bound_words(b)} = '
            f'{b["bound_builds"]}; {b["build_seconds"]:.0f} s building), '
            f'{b["wall_seconds"]:.0f} s in all; builder {b["builder"]}; looks '
            f'{"/".join(map(str, b["looks"]))} pairs' + margin_clause(b))


def bound_words(b: Mapping[str, Any]) -> str:
    """The bound on a bisect's builds, in words: the good build and one per halving of
    the first-parent chain, --bad's when it was measured first, and one per halving of
    the commits of each merge the search went into."""
    return ('ceil(log2 K)+1' + (', +1 for --bad measured' if b.get('bad_measured') else '')
            + (', +ceil(log2(k+1)) for each merge of k commits gone into'
               if b.get('descended') else ''))


def margin_clause(b: Mapping[str, Any]) -> str:
    """How the steps were judged: at the midpoint of 1 and --bad's ratio, or (a bisect
    for what broke rows) by whether their runs broke as --bad's did."""
    if b.get('broke'):
        return ('; each step judged by whether its runs of the row(s) --bad broke left '
                'samples (good) or failed as --bad\'s did (bad)')
    if b.get('step_margin') is None:        # a result of before the midpoint margin
        return ''
    source = 'measured first' if b.get('bad_measured') else 'given by --bad-ratio'
    return (f'; each step judged at the margin {b["step_margin"]:.1%}, the midpoint of 1 '
            f'and --bad\'s performance ratio {b["bad_ratio"]:.3f} ({source})')


def _step_row(s: Mapping[str, Any]) -> list[str]:
    ratio = '-' if s.get('ratio') is None else \
        f'{s["ratio"]:.3f} [{s["ratio_lo"]:.3f}, {s["ratio_hi"]:.3f}]'
    return [s['commit'][:12], s['subject'], s['date'], s['verdict'], s.get('gate') or '-',
            ratio, str(s['pairs']), s.get('build') or '-', s['reason']]


def _ratio(r: Mapping[str, Any]) -> str:
    if r['ratio'] is None:
        return 'new (baseline 0)'
    return f'{r["ratio"]:.3g}'


def tables(result: Mapping[str, Any]) -> list[tuple[str, tuple, list[list[str]], str]]:
    """The sections, for the report's Markdown and HTML (none when the night has none)."""
    out = []
    b = result.get('bisect')
    if b:
        rows = [] if b.get('error') else [_step_row(s) for s in b['steps']]
        out.append(('Bisect: the first bad commit', BISECT_COLUMNS, rows, bisect_summary(b)))
    d = result.get('darshan')
    if d and not d.get('available'):
        out.append(('What changed (Darshan)', DARSHAN_COLUMNS, [],
                    f'no Darshan counter diff: {d.get("reason")}'))
    elif d:
        for m in d['metrics']:
            title = f'What changed (Darshan): {m["metric"]}'
            if m.get('error'):
                out.append((title, DARSHAN_COLUMNS, [], f'no diff: {m["error"]}'))
                continue
            rows = [[r['counter'], r['category'], _num(r['baseline']), _num(r['candidate']),
                     _ratio(r)] for r in m['changes']]
            note = (f'One untimed run of each build under Darshan (never a sample); counters '
                    f'summed over files and ranks, read with PyDarshan; the {len(rows)} '
                    f'largest changes of {m["counters"]} counters, counts first, time '
                    f'counters (perturbed by the instrumentation) last. Logs: '
                    f'{", ".join(m.get("baseline_logs", []) + m.get("candidate_logs", []))}')
            out.append((title, DARSHAN_COLUMNS, rows, note))
    return out


def junit_cases(result: Mapping[str, Any]) -> list[str]:
    """JUnit test cases: the bisect (an error when it could not run) and the diff."""
    cases = []
    b = result.get('bisect')
    if b:
        text = bisect_summary(b)
        body = (f'<error message={quoteattr(text)}/>' if b.get('error')
                else f'<system-out>{html.escape(text)}</system-out>')
        cases.append(f'  <testcase classname="h5regress.bisect" name="first bad commit">'
                     f'{body}</testcase>')
    d = result.get('darshan')
    if d:
        if not d.get('available'):
            text = f'no Darshan counter diff: {d.get("reason")}'
        else:
            text = '\n'.join(
                f'{m["metric"]}: ' + (m['error'] if m.get('error') else '; '.join(
                    f'{r["counter"]} {_ratio(r)}' for r in m['changes'][:8]))
                for m in d['metrics'])
        cases.append(f'  <testcase classname="h5regress.darshan" name="what changed">'
                     f'<system-out>{html.escape(text)}</system-out></testcase>')
    return cases
