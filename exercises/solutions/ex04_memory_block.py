"""Assignment 04: the Memory Block of the Recurrent Memory Network (Tran et al. 2016).

The Recurrent Memory Network puts a small memory network on top of an LSTM. At step t its
Memory Block looks at the n most recent *input words* x_{t-n+1} .. x_t (the current word
included), looks each one up in two tables M and C, and lets the LSTM state h_t decide how much
each word matters::

    p_t = softmax((M_i + T) h_t)          attention over the n words   (Eq. 2)
    s_t = C_i^T p_t                       context vector               (Eq. 3)
    hm_t = g(s_t, h_t)                    composition, here a gate     (Eq. 4-7)

T is the temporal matrix: one learned vector per memory position. The book's version is
``mlm.models.recurrent_memory``. In this assignment you write the four pieces that are easy
to get subtly wrong.

What you will implement
-----------------------
1. ``memory_window``: which word ids sit in the memory at every step, computed for all steps
   at once, and which slots are really filled. At a sentence start (t < n) the memory holds
   fewer than n words; the missing slots are marked absent, never filled with padding.
2. ``temporal_rows``: which row of T each memory slot uses. The paper (section 4.2) uses the
   slice T[1:m] when the memory holds m < n words, oldest word first.
3. ``memory_attention``: the attention itself, Eq. 2-3: scores (M_i + T) h_t over the present
   slots only, their softmax p_t, and the context s_t = C_i^T p_t.
4. ``gated_composition``: the gating unit of Eq. 4-7, a GRU-like mix of h_t and s_t.

How to work
-----------
Replace each ``raise NotImplementedError(...)`` with your code; do not rename the functions
or change their arguments. Check your progress from the repository root with::

    python -m exercises.grader 04

Do not use ``mlm`` (``recurrent_memory``, ``masked_softmax``) inside your functions (you may compare against it
in your own experiments).

Conventions
-----------
Positions count from 0. Slot j = 0 .. n-1 of step t holds the word at position
t - (n-1) + j: the newest word (the current input x_t) is in the **last** slot, n-1, and
slot 0 holds the oldest. Padding (``mask`` False) sits at the end of shorter rows.
"""

from __future__ import annotations

import torch


def memory_window(tokens: torch.Tensor, mask: torch.Tensor | None, size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The word ids in memory at every step, and which slots hold a real word.

    Args:
        tokens: (batch, time) long tensor of input ids.
        mask: (batch, time) bool tensor, True at real tokens and False at padding, or ``None``
            when nothing is padded.
        size: n, the number of memory slots.

    Returns:
        ``(ids, present)``, both of shape (batch, time, size):

        * ``ids[b, t, j]`` is ``tokens[b, t - (size-1) + j]`` when that position is >= 0, and 0
          (any valid id) when it lies before the start of the row;
        * ``present[b, t, j]`` (bool) is True exactly when that position is >= 0 and is a real
          token (``mask`` True there).

    Notes:
        * No Python loop over time: pad the front of the rows with size-1 dummy entries and take
          sliding windows (``Tensor.unfold``), or build an index tensor with ``torch.arange``.
        * Return tensors on the device of ``tokens``.
    """
    # front-pad (batch, size-1 + time), then windows of `size`: (batch, time, size)
    ### BEGIN SOLUTION: build the memory window
    batch, time = tokens.shape
    real = torch.ones_like(tokens, dtype=torch.bool) if mask is None else mask.bool()
    ids = torch.cat([tokens.new_zeros(batch, size - 1), tokens], dim=1)  # (batch, size-1 + time)
    present = torch.cat([real.new_zeros(batch, size - 1), real], dim=1)
    return ids.unfold(1, size, 1), present.unfold(1, size, 1)  # (batch, time, size) each
    ### END SOLUTION


def temporal_rows(time: int, size: int, device: torch.device | str | None = None) -> torch.Tensor:
    """The row of the temporal matrix T used by slot j at step t, for every (t, j).

    Returns:
        (time, size) long tensor ``rows``, on ``device`` (the CPU for ``None``). With m = min(t + 1, size) words in memory at step t
        (they fill the last m slots), the oldest present word uses row 0, the next row 1, ...,
        and the current word (slot size-1) row m-1: the paper's slice T[1:m]. Once the memory
        is full every slot j uses row j. Rows of absent slots (j < size - m) are not used; set
        them to 0 so that they are still valid indices.

    Example (time=3, size=4)::

        [[0, 0, 0, 0],     step 0: one word, in slot 3, row 0
         [0, 0, 0, 1],     step 1: two words, rows 0 and 1
         [0, 0, 1, 2]]     step 2: three words
    """
    # m per step: (time, 1); slot index: (1, size)
    ### BEGIN SOLUTION: compute the temporal rows
    slots = torch.arange(size, device=device)[None, :]  # (1, size)
    words = (torch.arange(time, device=device) + 1).clamp(max=size)[:, None]  # (time, 1): words in memory
    return (slots - (size - words)).clamp(min=0)  # (time, size)
    ### END SOLUTION


def memory_attention(h, ids, present, rows, M, C, T):
    """The Memory Block's attention for every step at once (Eq. 2-3).

    Args:
        h: (batch, time, d) the LSTM states h_t.
        ids, present: (batch, time, n) from ``memory_window``.
        rows: (time, n) from ``temporal_rows``.
        M, C: (vocab, d) the input and output memory tables; T: (n, d) the temporal matrix.

    Returns:
        ``(s, p)``: the context vectors s (batch, time, d) and the attention p (batch, time, n)::

            p_t = softmax over the present slots j of (M[ids_tj] + T[rows_tj]) . h_t      (Eq. 2)
            s_t = sum_j p_tj C[ids_tj]                                                    (Eq. 3)

        Absent slots get weight exactly 0. A padded step attends like any other step, to the
        real words its window still holds (its prediction is not scored). Only a step with no
        present slot at all (n or more steps past the end of a shorter row) gets p = 0 and
        s = 0, never NaN.
    """
    # keys, values: (batch, time, n, d); scores: (batch, time, n)
    ### BEGIN SOLUTION: compute the attention over the present slots and the context
    keys = M[ids] + T[rows]  # (batch, time, n, d): M_i + T
    values = C[ids]  # (batch, time, n, d): C_i
    scores = (keys * h[:, :, None, :]).sum(-1)  # (batch, time, n): (M_i + T) h_t
    scores = scores.masked_fill(~present, float("-inf"))
    row_max = scores.amax(-1, keepdim=True).detach()
    row_max = torch.where(torch.isfinite(row_max), row_max, torch.zeros_like(row_max))  # an empty row: no shift
    exps = torch.exp(scores - row_max)  # exactly 0 at absent slots
    total = exps.sum(-1, keepdim=True)
    p = exps / torch.where(total > 0, total, torch.ones_like(total))  # (batch, time, n)
    s = (p[..., None] * values).sum(-2)  # (batch, time, d): C_i^T p_t
    return s, p
    ### END SOLUTION


def gated_composition(s, h, W_z, U_z, b_z, W_r, U_r, b_r, W, U, b):
    """The gating unit of Eq. 4-7 for any number of leading dimensions.

    Args:
        s: (..., d) the context vectors s_t.
        h: (..., d) the LSTM states h_t.
        W_z, U_z, W_r, U_r, W, U: (d, d) matrices, stored like ``nn.Linear.weight`` (so
            ``W_z s`` is ``s @ W_z.T``).
        b_z, b_r, b: (d,) biases, added to the s-side of each gate (W_z s + b_z, ...).

    Returns:
        (..., d) tensor::

            z  = sigm(W_z s + b_z + U_z h)          update gate   (Eq. 4)
            r  = sigm(W_r s + b_r + U_r h)          reset gate    (Eq. 5)
            h~ = tanh(W s + b + U (r * h))                        (Eq. 6)
            hm = (1 - z) * h + z * h~                             (Eq. 7)

    Notes:
        * The reset gate multiplies h *before* U is applied.
        * When z is 0 the block passes h through unchanged.
    """
    ### BEGIN SOLUTION: compute the gated composition
    z = torch.sigmoid(s @ W_z.T + b_z + h @ U_z.T)  # Eq. 4
    r = torch.sigmoid(s @ W_r.T + b_r + h @ U_r.T)  # Eq. 5
    h_tilde = torch.tanh(s @ W.T + b + (r * h) @ U.T)  # Eq. 6
    return (1 - z) * h + z * h_tilde  # Eq. 7
    ### END SOLUTION


# ============================================================================ written questions
#
# Q1 (explain). The paper's Memory Block attends to input *words* (ids looked up in M and C),
# not to earlier LSTM states as in chapters 2-3. What can the attention map tell a linguist
# that a map over hidden states cannot?
### BEGIN ANSWER
# Each slot is one word, so a weight is directly "how much word x_{t-j} mattered for predicting
# the next word": Tran et al. read syntactic dependencies (a verb attending to its subject) from
# it. A hidden state already mixes the whole prefix, so its weight cannot be pinned on one word.
### END ANSWER
#
# Q2 (experiment). Run this file: it builds a block from your functions with a temporal matrix
# that strongly favours the oldest row, T[0], and prints the attention of the first steps of a
# sentence under the paper's alignment T[1:m] (your temporal_rows) and under the official code's
# (slot j always uses row j, so the newest word is on the last row). Where does the weight go at
# steps 0, 1, 2 under each?
### BEGIN ANSWER
# Paper: the oldest present word always uses row 0, so at every step the weight goes to the first
# word of the sentence (slot n-1 at step 0, n-2 at step 1, ...). Code alignment: row 0 is only used
# once the memory is full, so at the first steps the bias does nothing and the weights stay spread.
### END ANSWER
#
# Q3 (training experiment). Run this file (a few minutes on two cores; MLM_EXERCISE_TINY=1 checks in seconds
# that it runs). It trains the Recurrent Memory Network, its Memory Block built on *your* memory_window and
# temporal_rows, on the key-value recall task with memories of n = 5, 15 and 30 words and measures the accuracy
# on the value for every distance d from its key (ex04_experiment.json, ex04_experiment.png; "reach" is the
# largest d with accuracy at least 0.5; mean_accuracy_within_n and mean_accuracy_beyond_n average the curve on
# either side of d = n). How does the reach move with n? Is the reach of n = 5 limited to 5 words, and why or
# why not?
### BEGIN ANSWER
# Read accuracy_by_distance, reach and the two means of each run (the reach, one distance at a time, is noisy;
# the means are steadier). The memory block attends only over the last n input
# words, so its direct reach grows with n; what the LSTM below it carries in its state can take a pair
# further, so accuracy need not drop to chance right past d = n (chapter 04 shows the curve against the
# LSTM's). Grade: the three reaches are quoted from the file and the answer says where each curve falls.
### END ANSWER


if __name__ == "__main__":
    torch.manual_seed(0)
    vocab, d, size, time = 20, 4, 4, 5
    M, C = torch.randn(vocab, d) * 0.1, torch.randn(vocab, d)
    T = torch.zeros(size, d)
    T[0] = 5.0  # a big bias for row 0
    tokens = torch.randint(vocab, (1, time))
    h = torch.ones(1, time, d)
    ids, present = memory_window(tokens, None, size)
    alignments = {"the paper's, T[1:m]": temporal_rows(time, size),
                  "the official code's, slot j on row j": torch.arange(size).expand(time, size)}
    for name, rows in alignments.items():
        s, p = memory_attention(h, ids, present, rows, M, C, T)
        print(f"{name}: p of steps 0-{time - 1} (rows), slots oldest to newest (columns)")
        print(p[0].numpy().round(2))

    # The training experiment of Q3: experiments.py trains with the book's package and writes its numbers
    import sys
    from pathlib import Path

    sys.path.insert(0, str(next(p for p in Path(__file__).resolve().parents if (p / "exercises").is_dir())))
    from exercises import experiments

    experiments.ex04(memory_window=memory_window, temporal_rows=temporal_rows,
                      folder=Path(__file__).parent)
