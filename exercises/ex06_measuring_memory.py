"""Assignment 06: measuring memory, by distance and by the history a model is given.

Chapter 06 asks the same two questions of every family of the book. How far back can a model
fetch one word it needs (the key-value recall task: accuracy on the *critical* token, the value
whose key occurred d words earlier)? And on real text, how much history does it actually use
(perplexity when each prediction may see only its k previous inputs, Khandelwal et al. 2018)?
You write the three tensor operations behind those measurements; the book's versions are in
``mlm.long_range`` and ``mlm.context``.

What you will implement
-----------------------
1. ``accuracy_by_distance``: from the model's logits at the critical positions, the accuracy
   and the count for every distance d = 0 .. max_distance, with one ``bincount`` instead of a
   loop over d.
2. ``sequence_starts``: positions are stored flat, one sequence after another (a sentence, a
   document, or a row of the stream); for every position, the flat index of the first position
   of its sequence.
3. ``history_windows``: for some positions, the window of at most k inputs that ends at the
   position and never reaches back into the previous sequence, right-padded to one width, with
   the mask of real tokens and the index of the position inside its window. Run the model on
   these windows from a zero state and read the logits at that index: that is the prediction
   with the history cut to k.

Replace each ``raise NotImplementedError(...)`` with your code and keep the names and arguments.
Grade your work from the repository root with::

    python -m exercises.grader 06

Work on whole tensors: the grader reads your source for ``for``/``while`` loops,
comprehensions, ``map``-like calls and recursion. Do not import ``mlm`` (that is the answer); use it to compare in the experiment.

An example for 2 and 3: two sequences of lengths 3 and 4 stored flat::

    inputs   = [a, b, c, d, e, f, g]        sequence = [0, 0, 0, 1, 1, 1, 1]
    starts   = [0, 0, 0, 3, 3, 3, 3]
    k = 2, positions = [0, 2, 4, 6]:
    windows  = [[a, pad], [b, c], [d, e], [f, g]]
    valid    = [[T, F],   [T, T], [T, T], [T, T]]
    last     = [0, 1, 1, 1]

Position 0 has only itself (its sequence starts there); position 4 would reach back to c with a
larger k, but c belongs to the previous sequence, so with k = 3 its window is [d, e] and not
[c, d, e].
"""

from __future__ import annotations

import torch


def accuracy_by_distance(logits: torch.Tensor, targets: torch.Tensor, distances: torch.Tensor,
                         max_distance: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Accuracy on the critical tokens for every distance d.

    Args:
        logits: (n, vocab) the model's scores at the n critical positions.
        targets: (n,) the values to recall (word ids).
        distances: (n,) how many words back each value's key stood, integers in 0 .. max_distance.
        max_distance: the largest distance to report.

    Returns:
        ``(accuracy, count)``, two tensors of shape (max_distance + 1,): ``count[d]`` the number
        of critical tokens at distance d (int64), ``accuracy[d]`` the share of them whose argmax
        is the target (float64), 0 where ``count[d]`` is 0 (never NaN).

    Notes:
        * A hit is ``logits.argmax(-1) == targets``.
        * ``torch.bincount(distances, weights=..., minlength=...)`` adds up per distance.
    """
    raise NotImplementedError("TODO: count the critical tokens and the hits per distance with bincount")


def sequence_starts(sequence: torch.Tensor) -> torch.Tensor:
    """For every flat position, the flat index of the first position of its sequence.

    Args:
        sequence: (N,) int64 sequence ids, each sequence's positions together and in time order
            (ids need not be sorted or consecutive: [7, 7, 2, 2, 2] is two sequences).

    Returns:
        (N,) int64 tensor ``starts`` with ``starts[i]`` the smallest j such that positions j .. i all
        belong to the sequence of position i.

    Notes:
        * A position starts a sequence when it is the first one or its id differs from the previous.
        * ``torch.cummax`` of "my index where I start a sequence, else 0" carries each start forward.
    """
    raise NotImplementedError("TODO: mark the starts, then carry each start forward with a running maximum")


def history_windows(inputs: torch.Tensor, starts: torch.Tensor, k: int, positions: torch.Tensor,
                    pad_id: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The windows of at most k inputs that end at ``positions``, cut at their sequence's start.

    Args:
        inputs: (N,) the flat input ids.
        starts: (N,) from :func:`sequence_starts`.
        k: how many inputs a window may hold (k >= 1), the position's own input included.
        positions: (n,) flat positions, in any order.
        pad_id: the id written into unused slots.

    Returns:
        ``(windows, valid, last)``:

        * ``windows`` (n, width) int64: row r holds the inputs from
          ``max(starts[p], p - k + 1)`` to ``p`` (p = ``positions[r]``), in order, then ``pad_id``;
          ``width`` is the longest window among the rows (at most k).
        * ``valid`` (n, width) bool: True at real inputs.
        * ``last`` (n,) int64: the column of position p in its row (the window's length - 1).

    Notes:
        * Build an (n, width) table of flat indices ``first + arange(width)`` and mask the ones past p.
        * Indices past the end of ``inputs`` must not be read (clamp them before indexing).
    """
    raise NotImplementedError("TODO: first index of each window, a table of indices, mask those past the position")


# ============================================================================ written questions
#
# Q1 (predict). On the recall task the value is uniform over V = 10 words and independent of
# everything else in the line. What accuracy and what loss (in nats) does the best model that
# cannot see the key get at the critical token? What does a bigram count model get, and why?
# YOUR ANSWER HERE
#
# Q2 (explain). Daniluk et al.'s window head attends over only the last L = 5 outputs, yet in
# chapter 03 it recalls values whose key is 30 words back about as often as those 3 words back. How can
# it? What would you change to test whether the attention itself, not the LSTM, does the recall?
# YOUR ANSWER HERE
#
# Q3 (training experiment: deciding a claim). Run this file (a few minutes on two cores; MLM_EXERCISE_TINY=1
# checks in seconds that it runs). It trains the small LSTM of chapter 01 tied and untied, three seeds each
# (2 x 128 units, 60k words of PTB, two epochs), and decides Press & Wolf's claim that tying lowers the test
# perplexity with the book's rule: mlm.claims.relative_change gives the change of the mean and its 95% interval,
# mlm.claims.verdict the label, given the paper's own change (ex06_experiment.json, .png). What label did you
# get, and which numbers decide it? Would one seed a side have been enough, and what would the rule say about a
# change whose interval lies inside +-1%? Your sequence_starts and accuracy_by_distance also measured each
# model's next-word accuracy by position in the test sentences (accuracy_by_position): which words are easiest?
# YOUR ANSWER HERE


if __name__ == "__main__":
    # Experiment (not graded): the windows of the example, letters as ids 0 .. 6, pad = -1
    letters = "abcdefg"
    inputs = torch.arange(7)
    starts = sequence_starts(torch.tensor([0, 0, 0, 1, 1, 1, 1]))
    print("starts", starts.tolist())
    for k in (1, 2, 3):
        windows, valid, last = history_windows(inputs, starts, k, torch.tensor([0, 2, 4, 6]), pad_id=-1)
        rows = ["".join(letters[i] if i >= 0 else "." for i in row) for row in windows.tolist()]
        print(f"k = {k}: windows {rows}, last {last.tolist()}")

    # The training experiment of Q3: experiments.py trains with the book's package and writes its numbers
    import sys
    from pathlib import Path

    sys.path.insert(0, str(next(p for p in Path(__file__).resolve().parents if (p / "exercises").is_dir())))
    from exercises import experiments

    experiments.ex06(sequence_starts=sequence_starts, accuracy_by_distance=accuracy_by_distance,
                      folder=Path(__file__).parent)
