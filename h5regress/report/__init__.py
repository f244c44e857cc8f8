"""``h5regress report``: the night's report as Markdown, self-contained HTML and JUnit XML.

Input: the gate's result (``h5regress gate --json``), the history (for the
plots), tonight's records (handed over by the gate that judged them, else read
from the night's run reports or perflogs) and, when found, the builds manifest
(for where the metrics ran: node list, file system, data size, command; and
whether the builds are stand-ins). Output in one directory:

* ``report.md``: verdict, builds, where, and the other tables, for merge
  requests and mail;
* ``report.html``: its first screen answers the night: the verdict in words,
  a forest plot of each gated metric's ratio and interval against
  1 - margin and 1.0, the builds (HDF5 commits) and where each metric ran;
  then the tables (every column labelled) and one interactive history plot per
  gated metric. Plots by plotly; plotly.js is inlined once, so the file opens
  offline (an artifact store, a mail);
* ``junit.xml``: one test case per gated metric (FAIL -> failure,
  INCONCLUSIVE/DEGRADED -> skipped with the reason), for CI test views.

``h5regress report --index --history DIR --out SITE`` writes ``SITE/index.html``,
every night of the history, linking ``SITE/<night>/report.html`` where a
night's report was kept.

Modules: ``text`` (words and tables), ``context`` (where, builds), ``jobs`` (each
run's job script, output and launcher line, from the night's run reports),
``links`` (a FAIL's links and reproduce command),
``markdown``, ``plots``, ``page`` (HTML), ``cli`` (JUnit, files, command line).
"""

from h5regress.report.cli import (junit, main_publish, main_report, missing_inputs, write_all,
                                  write_index)
from h5regress.report.context import (BUILD_COLUMNS, WHERE_COLUMNS, build_rows,
                                      collect_context, find_context, where_rows)
from h5regress.report.markdown import markdown, summary_markdown
from h5regress.report.page import first_screen, index_html, to_html
from h5regress.report.plots import (FOREST_RIGHT_OF_ONE, forest_figure, history_figure,
                                    plotly_js)
from h5regress.report.site import publish
from h5regress.report.text import (MEASURED_RATES, NO_SLOWDOWN_SEEN, blind_spot_text,
                                   change_point_text, summary, verdict_word)

__all__ = ['BUILD_COLUMNS', 'FOREST_RIGHT_OF_ONE', 'MEASURED_RATES', 'NO_SLOWDOWN_SEEN',
           'WHERE_COLUMNS', 'blind_spot_text', 'build_rows', 'change_point_text',
           'collect_context', 'find_context', 'first_screen', 'forest_figure', 'history_figure',
           'index_html', 'junit', 'main_publish', 'main_report', 'markdown', 'missing_inputs',
           'plotly_js', 'publish', 'summary', 'summary_markdown', 'to_html', 'verdict_word',
           'where_rows', 'write_all', 'write_index']
