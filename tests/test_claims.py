"""The claims tables' verdict rule: the interval of the relative change decides, one seed ranks nothing."""

import math
import statistics

import pytest

from mlm.claims import (CONTRADICTED, NO_DIFFERENCE, NOT_SETTLED, ONE_SEED, SMALLER, SMALLER_GAIN, SUPPORTED,
                        Claim, claims_markdown, interval_text, relative_change, spread, t_quantile, verdict)

LSTM = [117.6, 118.3, 118.3]  # chapter 06's control, three seeds


def test_t_quantiles_match_the_tables():
    """Two-sided 95% critical values of Student's t (any table): df 1, 2, 4, 10, 30, and the normal's 1.96."""
    for df, value in ((1, 12.706), (2, 4.303), (4, 2.776), (10, 2.228), (30, 2.042), (1e6, 1.960)):
        assert t_quantile(0.975, df) == pytest.approx(value, abs=1e-3)
    assert t_quantile(0.5, 3) == pytest.approx(0, abs=1e-9)
    with pytest.raises(ValueError, match="df > 0"):
        t_quantile(0.975, 0)


def test_welch_interval_by_hand():
    """Welch's interval for [1, 2, 3] against [2, 4, 6]: difference -2, standard error sqrt(1/3 + 4/3), 2.94
    degrees of freedom; divided by the control's mean, 4."""
    change, low, high = relative_change([1, 2, 3], [2, 4, 6])
    se, df = math.sqrt(5 / 3), (5 / 3) ** 2 / ((1 / 3) ** 2 / 2 + (4 / 3) ** 2 / 2)
    half = t_quantile(0.975, df) * se
    assert change == -0.5 and low == pytest.approx((-2 - half) / 4) and high == pytest.approx((-2 + half) / 4)
    assert df == pytest.approx(2.94, abs=0.01)


def test_a_clear_gain_as_large_as_the_papers_is_supported():
    tied = [112.4, 112.9, 113.4]  # -4.4%, interval about -5.3% to -3.5%
    assert verdict(tied, LSTM, paper=-0.018) == SUPPORTED  # beyond the paper's gain
    assert verdict(tied, LSTM, paper=-0.05) == SUPPORTED  # the paper's gain inside the interval
    assert verdict(tied, LSTM) == SUPPORTED  # no reported size: a gain is enough


def test_a_gain_that_excludes_the_papers_is_smaller_than_reported():
    kvp = [115.74, 114.95, 115.27]  # -2.3%, interval -3.1% to -1.6%, the paper -11%
    assert verdict(kvp, LSTM, paper=-0.11) == SMALLER_GAIN


def test_no_gain_as_large_as_the_papers():
    """Window attention: +0.1% with an interval from -0.8% to +1.0%, which holds 0 but not the paper's -3.5%."""
    window = [117.8, 118.1, 118.8]
    assert interval_text(window, LSTM) == "+0.1% (95% interval -0.8% to +1.0%)"
    assert verdict(window, LSTM, paper=-0.035) == SMALLER
    assert verdict(window, LSTM, paper=-0.005) == NOT_SETTLED  # the paper's change is inside too
    assert verdict(window, LSTM) == NOT_SETTLED


def test_a_tight_interval_around_zero_is_no_difference():
    same = [118.0, 118.1, 118.2]
    assert verdict(same, LSTM, paper=-0.1) == NO_DIFFERENCE
    assert verdict(same, LSTM, paper=0.0) == SUPPORTED  # the paper reported no difference either


def test_a_claim_that_the_model_does_not_help_turns_the_roles():
    """Daniluk's "a window of fifteen gains nothing over five": a gain tells against it, a loss does not; the
    default reading of a claim of no difference ("the model does no worse") is the other way round."""
    from mlm.claims import CONTRADICTED_GAIN

    gain, loss, same = [112.4, 112.9, 113.4], [119.0, 119.4, 119.2], [118.0, 118.1, 118.2]
    assert verdict(gain, LSTM, paper=0.0, no_gain=True) == CONTRADICTED_GAIN
    assert verdict(loss, LSTM, paper=0.0, no_gain=True) == verdict(same, LSTM, paper=0.0, no_gain=True) == SUPPORTED
    assert verdict([117.8, 118.1, 118.8], LSTM, paper=0.0, no_gain=True) == NOT_SETTLED
    assert verdict(gain, LSTM, paper=0.0) == SUPPORTED and verdict(loss, LSTM, paper=0.0) == CONTRADICTED
    with pytest.raises(ValueError, match="claim of no difference"):
        verdict(gain, LSTM, paper=-0.05, no_gain=True)


def test_a_change_inside_the_margin_is_no_difference_whatever_its_sign():
    """A tight interval that excludes 0 but stays inside +-1% is a change too small to count: no difference
    (supported where the paper reported none), never a gain or a loss."""
    control = [118.0, 118.05, 118.1]
    above, below = [118.55, 118.6, 118.65], [117.7, 117.75, 117.8]  # about +0.5% and -0.3%, tight
    for seeds in (above, below):
        change, low, high = relative_change(seeds, control)
        assert -0.01 < low and high < 0.01 and (low > 0 or high < 0), (change, low, high)
        assert verdict(seeds, control, paper=-0.035) == NO_DIFFERENCE
        assert verdict(seeds, control, paper=0.004) == verdict(seeds, control, paper=0.0, no_gain=True) == SUPPORTED


def test_a_loss_contradicts():
    assert verdict([119.0, 119.4, 119.2], LSTM, paper=-0.15) == CONTRADICTED
    assert verdict([110, 111, 112], [100, 101, 99]) == CONTRADICTED


def test_wide_seeds_settle_nothing():
    assert verdict([90, 102, 95], [100, 101, 99], paper=-0.05) == NOT_SETTLED


def test_one_seed_ranks_nothing_however_large_the_gap():
    assert verdict([50], [500]) == ONE_SEED
    assert verdict([50, 51], [500, 501]) == "not settled (2 seeds)"
    assert interval_text([50], [500, 400]) == "-88.9%"


def test_not_converged_is_said():
    assert verdict([90, 91, 92], [100, 101, 99], converged=False) == f"{SUPPORTED}, not converged"


def test_bad_input_is_refused_with_a_reason():
    with pytest.raises(ValueError, match="diverged"):
        verdict([math.nan, 1, 2], [3, 4, 5])
    with pytest.raises(ValueError, match="at least one"):
        verdict([], [1])
    with pytest.raises(ValueError, match="two runs a side"):
        relative_change([1], [2, 3])


def test_spread_and_markdown():
    assert spread([1.0, 2.0, 3.0]) == "2.0 ± 1.0 (3 seeds)"
    assert spread([7.25]) == "7.2 (1 seed)" or spread([7.25]) == "7.3 (1 seed)"
    table = claims_markdown([Claim("a | b", "x", SUPPORTED)])
    assert table.splitlines()[2] == "| a \\| b | x | **supported** |"
    asked = claims_markdown([Claim("a", "x", SUPPORTED, question="equal width"), Claim("b", "y", SUPPORTED)])
    assert asked.splitlines()[0].count("|") == 5 and asked.splitlines()[3] == "| b | – | y | **supported** |"


def test_a_count_baseline_is_one_exact_number():
    """Against a count baseline (no seeds) the interval is the one-sample t interval of the model's mean."""
    assert verdict([90, 91, 92], 100.0) == SUPPORTED
    assert verdict([90], 100.0) == ONE_SEED
    assert verdict([99, 101, 95], 100.0) == NOT_SETTLED
    change, low, high = relative_change([99, 101, 95], 100.0)
    half = t_quantile(0.975, 2) * statistics.stdev([99, 101, 95]) / math.sqrt(3)
    mean = statistics.fmean([99, 101, 95])
    assert change == pytest.approx(mean / 100 - 1) and high == pytest.approx((mean - 100 + half) / 100)


def test_awaits_runs_holds_back_verdicts_without_three_seeds_a_side():
    from mlm.claims import NOT_RUN, awaits_runs

    assert awaits_runs(NOT_RUN) and awaits_runs(ONE_SEED)
    assert awaits_runs(verdict([118.0, 118.2], [118.1, 118.3, 117.9]))  # "not settled (2 seeds)"
    assert not awaits_runs(NOT_SETTLED)  # three seeds a side that cannot tell: a verdict, shown
    assert not awaits_runs(verdict([110.0, 110.2, 109.9], [118.1, 118.3, 117.9], paper=-0.05))


def test_interval_plot_draws_only_rows_with_a_verdict():
    """A row whose runs are too few (two seeds) is left out of the figure; a decided row is drawn with its
    verdict beside its bar."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from mlm.plots import interval_plot

    decided_seeds = ([110.0, 110.2, 109.9], LSTM, -0.05)
    decided = Claim("a head helps", "", verdict(*decided_seeds[:2], paper=-0.05), seeds=decided_seeds)
    waiting = Claim("another helps", "", verdict([110.0, 110.2], LSTM), seeds=([110.0, 110.2], LSTM, -0.05))
    ax = interval_plot([waiting, decided], ["waiting", "decided"])
    assert [t.get_text() for t in ax.get_yticklabels()] == ["decided"]
    assert [t.get_text() for t in ax.texts] == [decided.verdict]
    plt.close(ax.figure)
