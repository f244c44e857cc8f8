"""The verdict of each metric: FAIL, PASS, INCONCLUSIVE, NO-SLOWDOWN-SEEN."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

from h5regress import stats
from h5regress.gateconfig import INTERVAL_KINDS
from h5regress.gate.comparing import MetricComparison, NOT_FLUSHED, _fmt_ratio, _value_ratio


# ------------------------------------------------------------------ decide
@dataclasses.dataclass(frozen=True)
class VerdictBound:
    """The bound of the performance ratio a verdict compared with 1 - margin: the
    ``upper`` one of a FAIL (and of "significantly slower"), the ``lower`` one of a
    PASS (and of NO-SLOWDOWN-SEEN), at one-sided ``confidence``."""
    side: str
    confidence: float
    perf_ratio: float

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class DrawnInterval:
    """The two-sided interval of the ratio that each metric of a family (the night's
    gated metrics) draws and that its verdict reads: ``confidence`` per metric, so
    that the ``metrics`` intervals together hold ``family_confidence`` (``kind``
    ``simultaneous``: Bonferroni, each at 1 - (1 - family_confidence) / metrics;
    ``fcr``: Benjamini-Yekutieli's false-coverage-rate intervals, each at 1 - (1 -
    family_confidence) * max(selected, 1) / metrics, ``selected`` the metrics whose
    q is at most :func:`suspect_level`; ``marginal``: each at family_confidence)."""
    kind: str
    confidence: float
    family_confidence: float
    metrics: int
    selected: int | None = None

    @property
    def label(self) -> str:
        """What the report says of the interval it draws."""
        family = f'{self.family_confidence * 100:g} %'
        if self.kind == 'marginal' or self.metrics <= 1:
            return family
        each = f'each {self.confidence * 100:.4g} %'
        if self.kind == 'fcr':
            return (f'{family} false-coverage-rate over {self.metrics} metrics '
                    f'({each}, {self.selected} suspected)')
        return f'simultaneous {family} over {self.metrics} metrics ({each})'

    def as_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), 'label': self.label}


def drawn_interval(qs: Sequence[float], cfg: Mapping[str, Any]) -> DrawnInterval:
    """The interval every metric of a family of BH q values ``qs`` draws and reads."""
    kind = cfg.get('intervals') or 'marginal'   # ci/gate.yaml's default
    if kind not in INTERVAL_KINDS:
        raise ValueError(f'intervals must be one of {INTERVAL_KINDS}, got {kind!r}')
    family, m = float(cfg['confidence']), max(len(qs), 1)
    selected = sum(q <= suspect_level(cfg) for q in qs) if kind == 'fcr' else None
    share = {'marginal': 1.0, 'simultaneous': 1.0 / m,
             'fcr': max(selected or 0, 1) / m}[kind]
    return DrawnInterval(kind, 1.0 - (1.0 - family) * share, family, len(qs), selected)


def decide(comp: stats.Comparison, q: float, cfg: Mapping[str, Any],
           looks: Sequence[int] | None, pairs_run: int | None = None,
           drawn: DrawnInterval | None = None) -> tuple[str, str]:
    """Verdict and reason for one judged metric (:func:`judge`, without its bound)."""
    return judge(comp, q, cfg, looks, pairs_run, drawn)[:2]


def judge(comp: stats.Comparison, q: float, cfg: Mapping[str, Any],
          looks: Sequence[int] | None, pairs_run: int | None = None,
          drawn: DrawnInterval | None = None) -> tuple[str, str, VerdictBound | None]:
    """Verdict, reason and the bound compared with 1 - m for one judged metric; m =
    margin, ``q`` its BH-adjusted p-value of a slowdown.

    * FAIL: ``q`` <= the look's level (alpha, or its alpha-spending share at an
      early look) *and* the one-sided ``margin_confidence`` upper bound of the
      ratio below 1 - m: significantly slower, and the data make a slowdown
      within the margin unlikely (0.5: the estimate alone, the rule before issue
      19); at an early look its error is spent like alpha;
    * PASS: the one-sided lower bound of the ratio above 1 - m, at 1 - the look's
      share of (1 - confidence) / 2 (the lower end of the two-sided
      ``confidence`` interval at a single or the last look; stricter at an early
      look, so a loop of looks keeps the error of a wrong PASS);
    * INCONCLUSIVE otherwise; "significantly slower, not shown beyond the margin"
      is one (``slower`` in the row), and more pairs decide. Never
      NO-SLOWDOWN-SEEN when the interval the row draws (``drawn``: the family's,
      adjusted for its number of metrics; None: the marginal ``confidence`` one)
      lies below 1 ("slowdown suspected"); a PASS beside one says so.
    """
    margin, alpha = cfg['margin'], cfg['alpha']
    log_floor = math.log(1.0 - margin)
    if comp.n < cfg['min_pairs']:
        return 'INCONCLUSIVE', f'{comp.n} pair(s), fewer than {cfg["min_pairs"]}', None
    level = stats.look_level(comp.n, looks, alpha, pairs_run=pairs_run)
    mconf = fail_confidence(comp.n, looks, cfg, pairs_run)
    upper = comp.upper(mconf)
    up = VerdictBound('upper', mconf, math.exp(upper))
    if q <= level and upper < log_floor:
        return 'FAIL', (f'significant slowdown (BH q={q:.2g} <= {level:.2g}) beyond the '
                        f'{margin:.0%} margin: the {mconf:.1%} upper bound of the ratio, '
                        f'{math.exp(upper):.3f}, is below {1 - margin:.2f}'), up
    pass_level = stats.look_level(comp.n, looks, (1.0 - cfg['confidence']) / 2.0,
                                  pairs_run=pairs_run)
    lower = comp.lower(1.0 - pass_level)
    low = VerdictBound('lower', 1.0 - pass_level, math.exp(lower))
    drawn = drawn or DrawnInterval('marginal', cfg['confidence'], cfg['confidence'], 1)
    drawn_hi = comp.upper((1.0 + drawn.confidence) / 2.0)
    if lower > log_floor:
        return 'PASS', _pass_reason(comp.n, looks, pairs_run, low, margin,
                                    None if drawn_hi >= 0.0 else drawn), low
    more = ('more pairs decide' if looks and max(comp.n, pairs_run or 0) < looks[-1] else
            'undecided at the last look' if looks else 'more pairs decide')
    if q <= level:
        return 'INCONCLUSIVE', (f'{SLOWER} (BH q={q:.2g}), not shown beyond the '
                                f'{margin:.0%} margin (the {mconf:.1%} upper bound '
                                f'{math.exp(upper):.3f} >= {1 - margin:.2f}): {more}'), up
    suspected = _slowdown_suspected(comp, q, cfg, level, looks, (drawn, drawn_hi))
    if suspected:
        return 'INCONCLUSIVE', f'slowdown suspected ({suspected}): {more}', None
    if lower == -math.inf:
        return 'INCONCLUSIVE', f'too few pairs ({comp.n}) for a {1 - pass_level:.1%} bound', None
    # NO-SLOWDOWN-SEEN: no FAIL, no PASS, no sign of a slowdown (q > suspect_level),
    # and a finite lower bound: at the PASS bound's confidence the night excludes
    # every slowdown of sensitivity = 1 - exp(lower) or more.
    return NO_SLOWDOWN_SEEN, (f'no slowdown detected at tonight\'s sensitivity: a slowdown '
                              f'of {-math.expm1(lower):.0%} or more would have been seen '
                              f'(the {1 - pass_level:.2%} lower bound {math.exp(lower):.3f} '
                              f'< {1 - margin:.2f}, so no PASS): {more}'), low


def _pass_reason(n: int, looks: Sequence[int] | None, pairs_run: int | None,
                 low: VerdictBound, margin: float, below: DrawnInterval | None) -> str:
    """Why a metric PASSes; ``below``: the drawn interval, when it lies below 1. PASS
    says "within the margin", not "no slowdown": a slowdown measured inside the
    margin PASSes, and its reason says it is one."""
    early = '' if not looks or max(n, pairs_run or 0) >= looks[-1] else \
        f' (the stricter bound of an early look at {n} of up to {looks[-1]} pairs)'
    slower = '' if below is None else \
        f'; slower, within the margin: the {below.label} interval lies below 1'
    return (f'{low.confidence:.2%} lower bound of the ratio {low.perf_ratio:.3f} '
            f'> {1 - margin:.2f}{early}{slower}')


def _slowdown_suspected(comp: stats.Comparison, q: float, cfg: Mapping[str, Any],
                        level: float, looks: Sequence[int] | None,
                        drawn: tuple[DrawnInterval, float]) -> str | None:
    """Why a metric that neither FAILs nor PASSes shows a sign of a slowdown, or None.
    q at most the suspect level; or the drawn interval (:class:`DrawnInterval` and
    its upper end) below 1 though q is above it: never "no slowdown seen" beside
    either."""
    suspect = suspect_level(cfg)
    if q <= suspect:
        at = (f'> {level:.2g}, the level of a look at {comp.n} of up to {looks[-1]} pairs'
              if q <= cfg['alpha'] and looks else
              f'<= {suspect:.2g}, the level of a {cfg["confidence"]:.0%} interval')
        return f'q={q:.2g} {at}'
    interval, upper = drawn
    if upper < 0.0:
        return (f'the {interval.label} interval of the ratio lies below 1, upper end '
                f'{math.exp(upper):.3f}; BH q={q:.2g} over the night\'s metrics')
    return None


def _bound_row(bound: VerdictBound | None, higher_is_better: bool) -> dict[str, Any] | None:
    """The row's ``verdict_bound``: the bound as the performance ratio it compared
    with 1 - margin, and as the ratio of the values (``ratio``, what the row's
    ``ratio_lo``/``ratio_hi`` are: inverted for a metric where lower is better)."""
    if bound is None or not math.isfinite(bound.perf_ratio) or bound.perf_ratio <= 0:
        return None
    return {**bound.as_dict(), 'perf_ratio': _fmt_ratio(bound.perf_ratio),
            'ratio': _fmt_ratio(bound.perf_ratio if higher_is_better else 1 / bound.perf_ratio)}


def _interval_row(comp: stats.Comparison, drawn: DrawnInterval, higher_is_better: bool
                  ) -> dict[str, Any]:
    """The row's ``interval``: the interval the report draws and the verdict read
    (:class:`DrawnInterval`), as performance ratios (``perf_lo``, ``perf_hi``) and as
    ratios of the values (``ratio_lo``, ``ratio_hi``, as the row's own marginal
    ``ratio_lo``/``ratio_hi``); None where an end is infinite."""
    one_sided = (1.0 + drawn.confidence) / 2.0
    lo, hi = comp.lower(one_sided), comp.upper(one_sided)
    values = (lo, hi) if higher_is_better else (-hi, -lo)
    return {**drawn.as_dict(),
            'perf_lo': _fmt_ratio(math.exp(lo)), 'perf_hi': _fmt_ratio(math.exp(hi)),
            'ratio_lo': _fmt_ratio(math.exp(values[0])),
            'ratio_hi': _fmt_ratio(math.exp(values[1]))}


def sensitivity(comp: stats.Comparison, cfg: Mapping[str, Any], looks: Sequence[int] | None,
                pairs_run: int | None = None) -> float | None:
    """The smallest slowdown the night would have seen: 1 - the PASS bound of the
    performance ratio at this look (:func:`decide`), 0 when that bound is above 1;
    None without a finite bound."""
    if comp.n < cfg['min_pairs']:
        return None
    pass_level = stats.look_level(comp.n, looks, (1.0 - cfg['confidence']) / 2.0,
                                  pairs_run=pairs_run)
    lower = comp.lower(1.0 - pass_level)
    if not math.isfinite(lower):
        return None
    return round(max(0.0, -math.expm1(lower)), 6)


def suspect_level(cfg: Mapping[str, Any]) -> float:
    """The q above which a metric shows no sign of a slowdown: the larger of alpha and
    1 - ``confidence`` (the two-sided level of the interval the report draws). A
    metric's q is adjusted over the night's metrics, so :func:`judge` also checks the
    drawn interval itself: NO-SLOWDOWN-SEEN never stands beside one below 1."""
    return max(float(cfg['alpha']), 1.0 - float(cfg['confidence']))


def fail_confidence(n: int, looks: Sequence[int] | None, cfg: Mapping[str, Any],
                    pairs_run: int | None = None) -> float:
    """Confidence of the upper bound a FAIL at ``n`` pairs compares with 1 - margin:
    ``margin_confidence``, its error spent over the looks like alpha."""
    return 1.0 - stats.look_level(n, looks, 1.0 - float(cfg['margin_confidence']),
                                  pairs_run=pairs_run)


#: the verdict of a metric with no sign of a slowdown and no PASS (:func:`decide`)
NO_SLOWDOWN_SEEN = 'NO-SLOWDOWN-SEEN'

#: how :func:`decide` begins the reason of "significantly slower, not shown beyond the margin"
SLOWER = 'significantly slower'


def is_speed(unit: Any) -> bool:
    """Whether a metric's figure is a speed or a time (``MiB/s``, ``1/s``, ``s``), which
    "slowdown" describes; a peak memory (``MiB``) is none."""
    return unit == 's' or str(unit).endswith('/s')


def in_words_of(reason: str, unit: Any, higher_is_better: bool) -> str:
    """A verdict's reason in the words of its metric: a figure that is no speed (peak
    memory) gets worse, not slower; where lower is better, the reason's ratios are
    performance ratios, the baseline's figure over the candidate's (the row's ``ratio``
    is the candidate's over the baseline's)."""
    if not is_speed(unit):
        reason = reason.replace('slowdown', 'regression').replace('slower', 'worse')
    if not higher_is_better:
        reason += (' [lower is better: the ratios in this reason are the baseline\'s '
                   'figure over the candidate\'s]')
    return reason


def is_suspected(reason: str) -> bool:
    """Whether a reason says a slowdown is suspected, in either words of
    :func:`in_words_of` (a regression, for a figure that is no speed)."""
    return any(f'{word} suspected' in reason for word in ('slowdown', 'regression'))


def is_slower(verdict: str, reason: str) -> bool:
    """Whether an INCONCLUSIVE verdict is a significant slowdown not shown beyond the margin."""
    return verdict == 'INCONCLUSIVE' and reason.startswith(SLOWER)


def pairs_for_pass(sigma: float | None, cfg: Mapping[str, Any], looks: Sequence[int] | None,
                   rank: bool, power: float = 0.9) -> int | None:
    """Pairs a PASS would need on ``power`` of nights when nothing changed, at the
    noise ``sigma`` (SD of the pair log-ratios): the lower bound (level of the
    last look) clears ln(1 - m) when ``sqrt(n) >= (z_level + z_power) sigma /
    -ln(1 - m)`` (normal approximation; the signed-rank test needs 1/0.955 times
    as many pairs, its efficiency relative to the mean under normal noise)."""
    if sigma is None or not math.isfinite(sigma) or sigma <= 0:
        return None
    level = stats.look_level(looks[-1] if looks else 1, looks,
                             (1.0 - cfg['confidence']) / 2.0)
    z = stats.norm_ppf(1.0 - level) + stats.norm_ppf(power)
    n = (z * sigma / -math.log(1.0 - cfg['margin'])) ** 2 / (3.0 / math.pi if rank else 1.0)
    return max(int(cfg['min_pairs']), math.ceil(n))


def decide_all(metrics: Sequence[MetricComparison], cfg: Mapping[str, Any],
               looks: Sequence[int] | None, pairs_run: int | None = None) -> None:
    """Verdicts into the rows: BH within the gated family and, apart, the controls;
    ``pairs_run``: the pairs the nightly's loop has run at this look (see
    :func:`h5regress.stats.look_level`)."""
    for m in metrics:
        if m.role != 'reported' and m.row['flush_conflict']:
            m.row['verdict'], m.row['reason'] = 'ERROR', m.row['flush_conflict']
        elif m.row['no_candidate']:
            m.row['verdict'], m.row['reason'] = 'ERROR', m.row['no_candidate']
    for family in (('gated',), ('canary', 'control')):
        judged = [m for m in metrics if m.role in family and m.comp is not None
                  and not m.row['flush_conflict']]
        qs = stats.benjamini_hochberg([m.comp.p_worse for m in judged])
        drawn = drawn_interval(qs, cfg)
        for m, q in zip(judged, qs):
            m.row['q'] = q
            m.row['verdict'], m.row['reason'], bound = judge(m.comp, q, cfg, looks, pairs_run,
                                                             drawn)
            m.row['interval'] = _interval_row(m.comp, drawn, m.row['higher_is_better'])
            m.row['verdict_bound'] = _bound_row(bound, m.row['higher_is_better'])
            m.row['slower'] = is_slower(m.row['verdict'], m.row['reason'])
            m.row['reason'] = in_words_of(m.row['reason'], m.row.get('unit'),
                                          m.row['higher_is_better'])
            m.row['sensitivity'] = sensitivity(m.comp, cfg, looks, pairs_run)
            m.row['fail_bound'] = _fmt_ratio(_value_ratio(
                m.comp.upper(fail_confidence(m.comp.n, looks, cfg, pairs_run)),
                m.row['higher_is_better']))
            var = m.row.get('variance') or {}
            sigma = var.get('pooled_sigma') if var.get('source') == 'history' \
                else var.get('tonight_sigma')
            m.row['noise_sigma'] = sigma
            m.row['pairs_for_pass'] = pairs_for_pass(sigma, cfg, looks,
                                                     m.comp.method != 'pooled-t')
            if m.row['flushed'] is False:
                m.row['reason'] += (f' [{NOT_FLUSHED}: write_flush none, the figure ends '
                                    f'in the page cache]')
    for m in metrics:
        row = m.row
        row.setdefault('q', None)
        for k in ('fail_bound', 'noise_sigma', 'pairs_for_pass', 'sensitivity', 'verdict_bound',
                  'interval'):
            row.setdefault(k, None)
        row.setdefault('slower', False)
        if 'verdict' not in row:
            if m.role == 'reported':
                row['verdict'], row['reason'] = None, 'reported, not gated'
            else:
                side = 'candidate' if not row['cand'] else 'baseline'
                row['verdict'], row['reason'] = 'INCONCLUSIVE', f'no {side} samples' + \
                    row.get('runs_said', {}).get(side, '')
        row['false_alarm'] = (row['verdict'] == 'FAIL' and row['true_ratio'] is not None
                              and abs(row['true_ratio'] - 1.0) < 1e-9)
