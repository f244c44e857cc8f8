"""``h5regress gate``: the nightly verdict on a candidate HDF5 build.

Input: records (JSON lines of :class:`h5regress.record.Record`, ``--records``)
and/or ReFrame perflogs (``--perflogs``, read by :mod:`h5regress.perflog`).
Records of the build named by ``--baseline`` are the baseline, those of
``--candidate`` the candidate; they share ``config_hash`` per test and carry
``pair_id`` (one baseline and one candidate run back to back, ABBA order).

Roles (rules in ``ci/gate.yaml``, the one place of the gate's configuration: see
:mod:`h5regress.gateconfig`):

* ``gated``: the one primary metric per test (IOR HDF5 write ``bw_max``,
  FLASH-IO checkpoint and MACSio write ``bw``, h5bench ``observed_rate``):
  gets a verdict;
* ``canary``: the same pattern through MPI-IO (``api: MPIIO``): HDF5/MPI-IO
  ratio (WARN below 1 - ``hdf5_overhead``), night DEGRADED when a canary
  falls far below its own history; its A/B comparison is a control;
* ``control``: metrics HDF5 does not touch (POSIX, fio): their true A/B ratio
  is 1, so they are judged like gated metrics only to measure false alarms;
* ``reported``: everything else: ratio and interval, no verdict.

Per gated metric (see :mod:`h5regress.stats`): log performance ratios of the
pairs, Wilcoxon signed-rank p-value (one-sided, slowdown) and Hodges-Lehmann
estimate with its exact 95 % interval; Benjamini-Hochberg across the night's
gated metrics. With 10-14 pairs (``tonight_t_test``) and no usable history,
Student's t test on the pair log-ratios instead (``method: student-t``): the
exact test's p cannot go below 2^-n, so at the loop's first look no slowdown
of a night of several metrics could FAIL.

Two modes (``modes`` in the config): when the night's runs fall in two modes
(runs landing near one of two levels, as IOR's 4 MiB writes do on a VM:
:func:`h5regress.stats.two_modes`, on each build's runs or on both builds') and
each build's runs split cleanly into two groups as far apart as the other
build's, the modes' gap is taken out of each high-mode run, each build's level
kept, and those pairs are tested beside the exact sign test of the modes'
shares (p = twice the smaller; a shift toward the slow mode also lowers the
PASS bound to that of the pairs as they are). A build whose runs lie in one mode
(a slowdown about the modes' distance) is compared as it is (``modes`` in each
metric's result says what was found and done, ``centred`` whether the gap was
taken out).

Variance from history (``history_variance`` in the config): when at least
``min_nights`` (8) of the newest ``window`` (20) past nights of the same
metric key had at least ``min_pairs`` (10) pairs, the variance of their pair
log-ratios is pooled (outlier nights screened out, df = sum(n_i - 1)) and,
if tonight's own variance passes an upper F test against it at
``consistency_level`` (0.2: a night even somewhat noisier than its history
judges itself), tonight is judged by a one-sided t test of the mean
log-ratio with that variance and the pooled df (interval mean +- t * sigma /
sqrt(n)): ``method: pooled-t``. Otherwise, and without history, the
signed-rank method; ``variance`` in each metric's result says which was used
and why (pooled sigma, df, nights, tonight's sigma, F and its p).

Verdicts (:func:`decide`), with m = margin (5 %), alpha the FDR level (1 %):

* FAIL: BH-adjusted p <= alpha (its alpha-spending share at an early look)
  and the one-sided ``margin_confidence`` (95 %) upper bound of the ratio
  below 1 - m: significantly slower, and shown slower than the margin allows;
* PASS: the lower end of the 95 % interval above 1 - m (at an early look the
  lower bound at 1 - its share of 2.5 %: a stricter one);
* INCONCLUSIVE otherwise (the nightly script runs more pairs, up to its last
  look); ``slower: true`` marks "significantly slower, not shown beyond the
  margin". Each metric's result carries ``fail_bound`` (the upper bound FAIL
  compares), ``noise_sigma`` and ``pairs_for_pass``: how many pairs a PASS
  would need on 9 of 10 unchanged nights at that noise.

With ``--looks 10,15,20`` (the pair counts at which the nightly's rerun loop
gates), a FAIL at look k needs q <= the k-th level of an alpha-spending
boundary (:func:`h5regress.stats.sequential_levels`: alpha * (n_k/n_K)^2
spent by look k, exact under the normal approximation), and a PASS the lower
bound at the k-th level of the same spending of 2.5 %: a strong, early
regression (or a clear PASS) stops the reruns, and the whole loop keeps the
error rates of a single look; weaker evidence stays INCONCLUSIVE until more
pairs come.

Contended pairs (``contention`` in the config, :mod:`h5regress.gate.contention`): a
pair one of whose sides ran while other processes took the machine is left out of
every metric, judged from what the sides recorded (wall time against the same build's
sides of the night, the CPU taken outside the night's process tree:
:mod:`h5regress.sideload`), never from a measured ratio; ``contention`` in the result
names the pairs and why, and a metric left with fewer pairs than the first look is
never PASS.

Write flush (:mod:`h5regress.durability`): each write figure's records say where its
timed phase ends, ``write_flush``: ``fsync``, ``O_SYNC``, ``O_DIRECT`` or ``none`` (the
page cache). A judged metric (gated, canary, control) whose records disagree on it --
baseline ``fsync``, candidate ``none``; a side that mixes values; a side whose records
do not say it against one that does -- compares two different things: its verdict is
ERROR, naming both sides' values, and a gated one makes the night ERROR (exit 4: the
configuration of the two builds' runs differs; fix it and rerun, whatever the other
metrics said). A gated write figure of ``none`` is judged as usual (both sides hand
their data to the page cache alike) but is not called a storage figure: the row says
``flushed: false`` and its reason "not flushed to storage", the night lists it in
``not_flushed`` and the text output in a ``NOT FLUSHED`` line. Each row carries
``write_flush`` (None for reads and records made before the key existed).

No candidate samples: a gated metric whose baseline has samples and whose
candidate has none (each candidate run failed its sanity and left no record, or
measured <= 0) is ERROR, naming the failed runs: the candidate breaks the
benchmark, and no number of pairs would decide it (the night ERRORs, exit 4).

Exit codes (:data:`EXIT_CODES`): 0 PASS, 1 FAIL, 2 INCONCLUSIVE (a possible
slowdown), 3 DEGRADED (a canary far below its history: no verdict, rerun), 5
NO-SLOWDOWN-SEEN (no sign of a slowdown, no PASS: every gated metric carries
``sensitivity``, the smallest slowdown the night would have seen; :func:`decide`),
4 ERROR (bad usage,
unreadable input, nothing to gate, a gated metric without candidate samples). argparse's own exit code 2 is replaced
by 4 so that a usage error never reads as INCONCLUSIVE.

Also: reference envelopes applied to the candidate (reported, not gating),
change points in the history of main (Apache Otava on nightly log medians,
:mod:`h5regress.creep`, with the commit range), the false-alarm rate per metric and per
night where the true ratio is known, and malformed records skipped and counted.
"""

from __future__ import annotations

# the exit codes, the configuration and the argument parser are the gate's API too
# (gate.EXIT_FAIL, gate.load_config, ...): imported from where they live; and the
# stages, a module each, whose names stay the gate's (gate.run_gate, ...)
from h5regress import stats  # noqa: F401
from h5regress.cmdline import (  # noqa: F401
    EXIT_CODES, EXIT_DEGRADED, EXIT_ERROR, EXIT_FAIL, EXIT_INCONCLUSIVE, EXIT_NO_SLOWDOWN_SEEN,
    EXIT_PASS, EXIT_USAGE, ArgParser, GATE_CONFIG_HELP, UsageError, parse_args)
from h5regress.gateconfig import (  # noqa: F401
    CONFIG_FILE, INTERVAL_KINDS, REFERENCES_DIR, ConfigError, GateConfig, load_config,
    looks_arg)
from h5regress.record import (  # noqa: F401
    Record, read_jsonl)
from h5regress.gate.records import (  # noqa: F401
    _Group, _Night, _admit, _commit, _label, _match_value, _night_of, _true_ratio, check_builds,
    collect, default_night, load_records, of_attempt, role_of, rule_matches)
from h5regress.gate.modes import (  # noqa: F401
    _modes, _modes_disagree)
from h5regress.gate.comparing import (  # noqa: F401
    MetricComparison, NOT_FLUSHED, _compare_samples, _comparison_fields, _describe, _flush_fields,
    _fmt_ratio, _known_ratio, _lr_var_from_samples, _no_candidate_samples, _tonight_test,
    _value_ratio, _variance_choice, compare, compare_pairs, night_pools, pair_log_ratios,
    pooled_from_history)
from h5regress.gate.verdicts import (  # noqa: F401
    NO_SLOWDOWN_SEEN, SLOWER, DrawnInterval, VerdictBound, decide, decide_all, drawn_interval,
    fail_confidence, is_slower,
    judge, pairs_for_pass, sensitivity)
from h5regress.gate.night import (  # noqa: F401
    _canary_ratios, _ceiling, _change_points, _degraded, _envelope, _signature, annotate,
    false_alarm_rates, history_lines)
from h5regress.gate.cli import (  # noqa: F401
    GateRequest, append_history, build_parser, dumps, format_text, gate_request, main_gate,
    run_gate)
