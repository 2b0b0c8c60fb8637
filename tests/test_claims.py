"""The claims tables' verdict rule: the numbers decide, one seed ranks nothing."""

import math

import pytest

from mlm.claims import (CONTRADICTED, ONE_SEED, OVERLAP, SUPPORTED, Claim, claims_markdown, spread,
                        verdict)


def test_separated_seeds_decide_the_direction():
    assert verdict([90, 91, 92], [100, 101, 99]) == SUPPORTED
    assert verdict([110, 111, 112], [100, 101, 99]) == CONTRADICTED


def test_overlapping_seeds_settle_nothing():
    assert verdict([90, 102, 95], [100, 101, 99]) == OVERLAP


def test_one_seed_ranks_nothing_however_large_the_gap():
    assert verdict([50], [500]) == ONE_SEED
    assert verdict([50, 51], [500, 501]) == "not settled (2 seeds)"


def test_not_converged_is_said():
    assert verdict([90, 91, 92], [100, 101, 99], converged=False) == f"{SUPPORTED}, not converged"


def test_bad_input_is_refused_with_a_reason():
    with pytest.raises(ValueError, match="diverged"):
        verdict([math.nan, 1, 2], [3, 4, 5])
    with pytest.raises(ValueError, match="at least one"):
        verdict([], [1])


def test_spread_and_markdown():
    assert spread([1.0, 2.0, 3.0]) == "2.0 ± 1.0 (3 seeds)"
    assert spread([7.25]) == "7.2 (1 seed)" or spread([7.25]) == "7.3 (1 seed)"
    table = claims_markdown([Claim("a | b", "x", SUPPORTED)])
    assert table.splitlines()[2] == "| a \\| b | x | **supported** |"


def test_a_count_baseline_is_one_exact_number():
    assert verdict([90, 91, 92], 100.0) == SUPPORTED
    assert verdict([90], 100.0) == ONE_SEED
    assert verdict([99, 101, 95], 100.0) == OVERLAP
