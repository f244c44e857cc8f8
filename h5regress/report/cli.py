"""JUnit XML, writing the files, and the ``h5regress report`` command line."""

from __future__ import annotations

import html
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from xml.sax.saxutils import quoteattr

from h5regress import atomic
from h5regress import history as hist_mod
from h5regress import followup
from h5regress.cmdline import EXIT_ERROR, EXIT_USAGE, GATE_CONFIG_HELP, ArgParser, parse_args
from h5regress.gateconfig import ConfigError, load_config
from h5regress.record import Record
from h5regress.report.context import find_context
from h5regress.report.markdown import markdown, summary_markdown
from h5regress.report.page import index_html, to_html
from h5regress.report.text import (NO_SLOWDOWN_SEEN, _interval, _num, _ratio, _rows,
                                   drawn_interval, no_slowdown_text)
from h5regress.report.links import REPO_URL_ENV, repo_url
from h5regress.report.site import SiteError, publish


# ------------------------------------------------------------------ JUnit
def junit(result: Mapping[str, Any]) -> str:
    cases = []
    fails = skips = errors = 0
    degraded = result['overall'] == 'DEGRADED'
    for m in _rows(result, 'gated'):
        name = quoteattr(m['label'])
        cls = quoteattr(f'h5regress.gate.{m["tool"]}')
        detail = (f'ratio {_ratio(m["ratio"])} {_interval(*drawn_interval(m))}, '
                  f'{m["n_pairs"]} pairs, q={_num(m["q"], 2)}: {m["reason"]}')
        body = ''
        if degraded:
            skips += 1
            body = f'<skipped message={quoteattr("degraded night, no verdict: " + detail)}/>'
        elif m['verdict'] == 'FAIL':
            fails += 1
            body = (f'<failure message={quoteattr(detail)} type="performance-regression">'
                    f'{html.escape(detail)}</failure>')
        elif m['verdict'] == NO_SLOWDOWN_SEEN:
            body = (f'<system-out>{html.escape(no_slowdown_text([m]))}: '
                    f'{html.escape(detail)}</system-out>')
        elif m['verdict'] != 'PASS':
            skips += 1
            body = f'<skipped message={quoteattr("possible slowdown (INCONCLUSIVE): " + detail)}/>'
        else:
            body = f'<system-out>{html.escape(detail)}</system-out>'
        cases.append(f'  <testcase classname={cls} name={name}>{body}</testcase>')
    for c in result['canary']:
        if c['verdict'] == 'WARN':
            cases.append(f'  <testcase classname="h5regress.canary" name={quoteattr(c["metric"])}>'
                         f'<system-out>{html.escape(c["reason"])}</system-out></testcase>')
    cases += followup.junit_cases(result)
    if result['overall'] == 'ERROR':
        errors += 1
        cases.append(f'  <testcase classname="h5regress.gate" name="gate"><error message='
                     f'{quoteattr(result.get("error") or "error")}/></testcase>')
    head = (f'<?xml version="1.0" encoding="UTF-8"?>\n<testsuites>\n'
            f'<testsuite name={quoteattr("h5regress gate " + str(result["night"]))} '
            f'tests="{len(cases)}" failures="{fails}" errors="{errors}" skipped="{skips}">')
    return head + '\n' + '\n'.join(cases) + '\n</testsuite>\n</testsuites>\n'


def write_all(result: Mapping[str, Any], history: hist_mod.History | None,
              outdir: str | Path, ctx: Mapping[str, Any] | None = None,
              url: str | None = None, *,
              records: Sequence[Record] | None = None) -> dict[str, Path]:
    """report.md, report.html, junit.xml and summary.md (a merge-request comment) in
    ``outdir``. Without ``ctx``, the context is found beside ``outdir`` (the night's
    directory: ``../manifest.json``, its job files, ``../perflogs/<attempt>/`` linked)
    from ``records``, tonight's records as the gate read them; without those, the
    records are read again where the nightly leaves them."""
    outdir = Path(outdir)
    history = history or hist_mod.History()
    # the page's links to a run's files are relative to where it is written
    ctx = {'link_base': str(outdir.resolve()),
           **(ctx or find_context(result, outdir.parent, records=records))}
    files = {'md': outdir / 'report.md', 'html': outdir / 'report.html',
             'junit': outdir / 'junit.xml', 'summary': outdir / 'summary.md'}
    url = repo_url(url)
    atomic.write_text(files['md'], markdown(result, ctx, url))
    atomic.write_text(files['html'], to_html(result, history, ctx, url))
    atomic.write_text(files['junit'], junit(result))
    atomic.write_text(files['summary'], summary_markdown(result))
    return files


def write_index(history: hist_mod.History, outdir: str | Path,
                link: str | None = '{night}/report.html') -> Path:
    """``outdir/index.html``: every night, linked to ``outdir/<night>/report.html`` when
    that report is there."""
    outdir = Path(outdir)
    path = outdir / 'index.html'
    atomic.write_text(path, index_html(history, link, outdir))
    return path


# ------------------------------------------------------------------ CLI
def _parser() -> ArgParser:
    parser = ArgParser(
        prog='h5regress report',
        description="Write the night's report (report.md, report.html, junit.xml, "
                    "summary.md) from the gate's JSON result and the history; or, with "
                    '--index, a page '
                    'listing every night of the history (OUT/index.html).')
    parser.add_argument('result', nargs='?', help='gate result JSON (h5regress gate --json)')
    parser.add_argument('--history', help=f'history directory (default ${hist_mod.ENV})')
    parser.add_argument('--config', metavar='GATE_YAML',
                        help=GATE_CONFIG_HELP + ' (read for "history:")')
    parser.add_argument('--out', default='report', help='output directory (./report)')
    parser.add_argument('--perflogs', help="tonight's perflog directory, read for where "
                        "the metrics ran (default: the attempt's run reports, reports/<attempt> "
                        'beside the result; its perflogs/<attempt> linked)')
    parser.add_argument('--manifest', help='the builds manifest (default: manifest.json '
                        'beside the result)')
    parser.add_argument('--repo-url', metavar='URL',
                        help='web URL of the HDF5 repository, for commit and compare links '
                             f'(default ${REPO_URL_ENV})')
    parser.add_argument('--index', action='store_true',
                        help='write OUT/index.html of all nights of the history instead; '
                             'each night links to OUT/<night>/report.html when present')
    return parser


def missing_inputs(args: Any) -> list[str]:
    """``--perflogs`` and ``--manifest`` given on the command line that do not exist
    (the report would only lack the "Where" it was asked for)."""
    given = [('--perflogs', args.perflogs), ('--manifest', args.manifest)]
    return [f'{option} {path}: no such file or directory' for option, path in given
            if path is not None and not Path(path).exists()]


def _main_index(args: Any) -> int:
    try:
        hdir = hist_mod.resolve_dir(args.history, load_config(args.config))
        if not hdir:
            raise ValueError(f'--index needs --history or ${hist_mod.ENV}')
        if not Path(hdir).is_dir():
            raise ValueError(f'history {hdir}: no such directory (an index of no night '
                             f'would be an empty page)')
        path = write_index(hist_mod.load(hdir), args.out)
    except (OSError, ValueError, ConfigError) as err:
        print(f'h5regress report: error: {err}', file=sys.stderr)
        return EXIT_ERROR
    print(f'wrote {path}')
    return 0


def main_report(argv: Sequence[str] | None = None) -> int:
    """``h5regress report``: 0 written, 4 error (an input missing or malformed), 64 usage."""
    args, code = parse_args(_parser(), argv)
    if args is None:
        return code
    for problem in missing_inputs(args):
        print(f'h5regress report: error: {problem}', file=sys.stderr)
    if missing_inputs(args):
        return EXIT_ERROR
    if args.index:
        return _main_index(args)
    if not args.result:
        print('h5regress report: error: give the gate result JSON (or --index)',
              file=sys.stderr)
        return EXIT_USAGE
    try:
        result = json.loads(Path(args.result).read_text(encoding='utf-8'))
        if not isinstance(result, dict) or 'metrics' not in result or 'overall' not in result:
            raise ValueError('not a gate result (no "metrics"/"overall")')
        cfg = load_config(args.config)
        hdir = hist_mod.resolve_dir(args.history, cfg)
        history = hist_mod.load(hdir, exclude_night=result['night'])
        ctx = find_context(result, Path(args.result).resolve().parent, args.perflogs,
                           args.manifest)
        files = write_all(result, history, args.out, ctx, args.repo_url)
    except (OSError, ValueError, KeyError, ConfigError) as err:
        print(f'h5regress report: error: {args.result}: {err}', file=sys.stderr)
        return EXIT_ERROR
    for f in files.values():
        print(f'wrote {f}')
    return 0


def _publish_parser() -> ArgParser:
    parser = ArgParser(prog='h5regress publish',
                       description='Write one static site across nights: a dashboard of the '
                                   'gated metrics, a page per metric on a commit axis, the '
                                   "regressions with their triage, and the nights' reports.")
    parser.add_argument('--history', help=f'history directory (default ${hist_mod.ENV})')
    parser.add_argument('--config', metavar='GATE_YAML', help=GATE_CONFIG_HELP)
    parser.add_argument('--out', default='site', help='site directory (./site)')
    parser.add_argument('--night', action='append', default=[], metavar='DIR',
                        help="a nightly's --out (gate.json beside perflogs/), repeatable")
    parser.add_argument('--triage', metavar='YAML', help='triage of the regressions: a list '
                        'of {metric, night, state: acknowledged|ignored, who, why}')
    parser.add_argument('--repo-url', metavar='URL', help='web URL of the HDF5 repository, '
                        f'for commit and compare links (default ${REPO_URL_ENV})')
    return parser


def main_publish(argv: Sequence[str] | None = None) -> int:
    """``h5regress publish``: 0 written, 4 error (an input missing or malformed, named),
    64 usage."""
    args, code = parse_args(_publish_parser(), argv)
    if args is None:
        return code
    try:
        cfg = load_config(args.config)
        hdir = hist_mod.resolve_dir(args.history, cfg)
        if not hdir:
            print(f'h5regress publish: error: give --history or ${hist_mod.ENV}',
                  file=sys.stderr)
            return EXIT_USAGE
        if args.triage and not Path(args.triage).is_file():
            raise SiteError(f'--triage {args.triage}: no such file')
        files = publish(hdir, args.out, args.night, args.triage, cfg, repo_url(args.repo_url))
    except (SiteError, ConfigError, OSError, ValueError, KeyError) as err:
        print(f'h5regress publish: error: {err}', file=sys.stderr)
        return EXIT_ERROR
    print(f'wrote {len(files)} files; open {Path(args.out) / "index.html"}')
    return 0
