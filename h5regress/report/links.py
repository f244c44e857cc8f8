"""Where a FAIL leads: its history plot, Darshan diff, records, job script and
output, a command that reproduces it, and the commits (with a repository URL)."""

from __future__ import annotations

import html
import os
import re
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from h5regress.report.jobs import link
from h5regress.report.text import _rows, short_label

#: environment variable naming the HDF5 repository's web URL (``--repo-url`` wins)
REPO_URL_ENV = 'H5REGRESS_REPO_URL'


def repo_url(given: str | None = None) -> str:
    """The repository's web URL (``--repo-url``, else $H5REGRESS_REPO_URL), no trailing /."""
    return (given or os.environ.get(REPO_URL_ENV) or '').rstrip('/')


def anchor(title: str) -> str:
    """The id of a report section from its title."""
    return re.sub(r'[^a-z0-9]+', '-', title.lower()).strip('-')


def commit_urls(result: Mapping[str, Any], url: str) -> list[tuple[str, str]]:
    """('candidate commit', URL) and ('compare', URL) when the site set a repository URL."""
    base, cand = result.get('baseline_commit'), result.get('candidate_commit')
    out = []
    if url and cand:
        out.append(('candidate commit', f'{url}/commit/{cand}'))
    if url and cand and base and base != cand:
        out.append(('compare', f'{url}/compare/{base}...{cand}'))
    return out


def _regex_text(text: str) -> str:
    return re.sub(r'([.^$*+?{}\[\]\\|()])', r'\\\1', text)


def case_name_pattern(m: Mapping[str, Any]) -> str:
    """``-n`` selecting the metric's test case, whatever its build: ReFrame searches it
    in the case's name without spaces (``h5paths_check%num_nodes=1...%benchmark=ROW``);
    the check's class alone when the name has no build parameter."""
    name = str(m.get('test') or '').replace(' ', '')
    parts = re.split(r'%hdf5_build=[^%]*', name)
    if len(parts) != 2:
        return '^' + str(m.get('test_class') or m['tool'])
    return f'^{_regex_text(parts[0])}%hdf5_build=[^%]*{_regex_text(parts[1])}$'


def reproduce_command(result: Mapping[str, Any], m: Mapping[str, Any], url: str = '') -> str:
    """Tonight's test case of this metric again on both builds, then the bisect between
    the two commits."""
    builds = ' or '.join(f'hdf5_build=="{result[side]}"' for side in ('baseline', 'candidate'))
    run = f'ci/run-suite -n {shlex.quote(case_name_pattern(m))} -E {shlex.quote(builds)}'
    base, cand = result.get('baseline_commit'), result.get('candidate_commit')
    if not (base and cand) or base == cand:
        return run
    # as ci/nightly --bisect asks it: only this case run and its tool built per step,
    # and tonight's ratio as --bad's (not measured again)
    ratio = m.get('perf_ratio')
    bad_ratio = f' --bad-ratio {ratio:.6g}' if isinstance(ratio, (int, float)) and ratio < 1 else ''
    return (run + f' && h5regress bisect --good {base} --bad {cand} '
            f'--repo {shlex.quote(url or "HDF5_REPO")} '
            f'--checks {shlex.quote(case_name_pattern(m))} --tool {shlex.quote(m["tool"])} '
            f'--metric {shlex.quote(m["key"])}{bad_ratio}')


def records_href(ctx: Mapping[str, Any]) -> str | None:
    """A link to tonight's perflogs: relative to the page when ``ctx`` says where it is
    written (``link_base``), else as the nightly lays them out (``report/`` beside
    ``perflogs/``)."""
    if ctx.get('perflogs_dir') and ctx.get('link_base'):
        return link(ctx['perflogs_dir'], ctx['link_base']) + '/'
    if ctx.get('perflogs'):
        return f'../{ctx["perflogs"]}/'.replace('\\', '/')
    return None


def _record_files(m: Mapping[str, Any], ctx: Mapping[str, Any],
                  build: str) -> list[tuple[str, str]]:
    """The job script, stdout and stderr of a candidate run of the metric: where the
    night's run reports put them (linked relative to the page when ``ctx`` says where
    it is written), else where its record says, if that is a full path."""
    recs = [r for r in ctx['records'].get(m['key']) or [] if r.hdf5_build == build]
    jobs = ctx.get('jobs') or {}
    for job in (jobs[r.run_id] for r in recs if r.run_id in jobs):
        if os.path.isfile(job.script):
            return [(text, link(path, ctx.get('link_base')))
                    for text, path in (('job script', job.script), ('output', job.stdout),
                                       ('error output', job.stderr)) if os.path.isfile(path)]
    script = next(((r.provenance or {}).get('job_script') for r in recs
                   if os.path.isabs(str((r.provenance or {}).get('job_script') or ''))), None)
    if not script:
        return []      # a bare file name (ReFrame's) would be a link to nothing
    return [('job script', f'file://{script}'),
            ('output', f'file://{re.sub(r"[.]sh$", "", script)}.out')]


def fail_links(result: Mapping[str, Any], ctx: Mapping[str, Any],
               url: str = '') -> list[dict[str, Any]]:
    """Per FAIL: its short label, (text, href) links and the reproduce command."""
    gated = _rows(result, 'gated')
    darshan = {d.get('metric') for d in (result.get('darshan') or {}).get('metrics') or []}
    out = []
    for i, m in enumerate(gated):
        if m['verdict'] != 'FAIL':
            continue
        links = [('history plot', f'#history-{i}')]
        for name in (m['key'], m['label']):
            if name in darshan:
                links.append(('Darshan diff', '#' + anchor(f'What changed (Darshan): {name}')))
        if records_href(ctx):
            links.append(('records', records_href(ctx)))
        links += _record_files(m, ctx, result['candidate']) + commit_urls(result, url)
        out.append({'label': short_label(m), 'name': m['label'], 'links': links,
                    'reproduce': reproduce_command(result, m, url)})
    return out


def links_html(items: Sequence[Mapping[str, Any]]) -> str:
    """The FAILs' links as a list under the verdict."""
    if not items:
        return ''
    e = html.escape
    out = ['<ul id="fail-links">']
    for it in items:
        links = ' · '.join(f'<a href="{e(href)}">{e(text)}</a>' for text, href in it['links'])
        out.append(f'<li><b title="{e(it["name"])}">{e(it["label"])}</b>: {links}<br>'
                   f'reproduce: <code>{e(it["reproduce"])}</code></li>')
    out.append('</ul>')
    return '\n'.join(out)


def links_markdown(items: Sequence[Mapping[str, Any]]) -> list[str]:
    """The FAILs' links as Markdown lines (web links only: anchors and files stay in HTML)."""
    out = []
    for it in items:
        web = [f'[{text}]({href})' for text, href in it['links'] if href.startswith('http')]
        out.append(f'- **{it["label"]}**' + (': ' + ', '.join(web) if web else ''))
        out.append(f'  reproduce: `{it["reproduce"]}`')
    return out
