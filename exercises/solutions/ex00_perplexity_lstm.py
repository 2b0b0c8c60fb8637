"""Assignment 00: measuring a language model, and an LSTM built by hand.

Every chapter of the book reports one number, perplexity, and every model in it starts with
the same building block, an LSTM. In this assignment you write both yourself, so that nothing
in the later chapters is a black box.

What you will implement
-----------------------
1. ``masked_perplexity``: the score of a language model on a batch that contains padding.
   Batches in this book are rectangles ``(batch, time)``, but sentences and documents have
   different lengths, so the empty places are filled with padding and a boolean ``mask``
   says which positions are real predictions. Padding must never influence the score.
2. ``lstm_cell``: one time step of an LSTM, using exactly the parameter layout of
   ``torch.nn.LSTM`` so that you can plug in the weights of a real model.
3. ``run_lstm``: a whole sequence, one step at a time, built from your ``lstm_cell``.
   Your result must agree with ``torch.nn.LSTM(batch_first=True)``.

How to work
-----------
Replace each ``raise NotImplementedError(...)`` with your code; do not rename the
functions or change their arguments. Check your progress at any time from the repository
root with::

    python -m exercises.grader 00

The grader runs a series of checks and prints a hint for each one that fails. You may use
anything from ``torch`` except the ready-made answers: no ``torch.nn.LSTM``,
``torch.nn.LSTMCell`` or ``torch.nn.functional.cross_entropy`` / ``nll_loss`` inside your
functions (you may of course use them in your own experiments to compare against).

Background
----------
Perplexity is the exponential of the average negative log-likelihood (NLL) per predicted
token. If the model gives the correct next token probability p at every scored position,
the perplexity is 1/p: it reads as "the model is as unsure as if it picked uniformly among
that many words". The average runs over the scored positions only, so two batches with
different amounts of padding are measured the same way.

The LSTM keeps two vectors per sequence, the hidden state ``h`` and the cell ``c``. At each
step four gates are computed from the input ``x_t`` and the previous hidden state::

    i_t = sigmoid(W_ii x_t + b_ii + W_hi h_{t-1} + b_hi)    input gate
    f_t = sigmoid(W_if x_t + b_if + W_hf h_{t-1} + b_hf)    forget gate
    g_t = tanh   (W_ig x_t + b_ig + W_hg h_{t-1} + b_hg)    candidate cell
    o_t = sigmoid(W_io x_t + b_io + W_ho h_{t-1} + b_ho)    output gate
    c_t = f_t * c_{t-1} + i_t * g_t
    h_t = o_t * tanh(c_t)

``torch.nn.LSTM`` stores the four input matrices stacked on top of each other in one tensor
``weight_ih_l0`` of shape ``(4 * hidden, input)``, in the order i, f, g, o; likewise
``weight_hh_l0`` ``(4 * hidden, hidden)`` and the two bias vectors ``(4 * hidden,)``.
"""

from __future__ import annotations

import math

import torch


def masked_perplexity(logits: torch.Tensor, targets: torch.Tensor, mask: torch.Tensor) -> float:
    """Perplexity of a batch, counting only the positions where ``mask`` is True.

    perplexity = exp( total NLL over the scored positions / number of scored positions )

    where the NLL of a position is ``-log p(target | context)`` under the model's softmax.

    Args:
        logits: (batch, time, vocab) float tensor of unnormalised scores, one row per position.
        targets: (batch, time) long tensor, the correct next token at each position.
            At padded positions it may hold any valid token id.
        mask: (batch, time) bool tensor, True where the position is a real prediction.
            You may assume at least one position is True.

    Returns:
        The perplexity as a plain Python ``float``.

    Notes:
        * Padding must never count: changing ``logits`` or ``targets`` where ``mask`` is False
          must not change the result, and the average divides by the number of True entries.
        * Be numerically stable. Logits can be large (think 1e4); taking ``softmax`` and then
          ``log`` turns small probabilities into ``log(0) = -inf``. Work with log-probabilities
          directly (``torch.log_softmax``).
        * ``Tensor.gather`` is a handy way to pick one entry per row.
    """
    # log_probs: (batch, time, vocab); target_log_probs: (batch, time)
    ### BEGIN SOLUTION: compute the masked perplexity
    # log_softmax subtracts the row maximum before exponentiating, so no probability underflows
    log_probs = torch.log_softmax(logits.double(), dim=-1)  # (batch, time, vocab)
    target_log_probs = log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)  # (batch, time)
    mask = mask.bool()  # (batch, time)
    # Boolean indexing keeps only the scored positions: padding can hold anything
    total_nll = -target_log_probs[mask].sum()
    count = int(mask.sum())
    return math.exp(total_nll.item() / count)
    ### END SOLUTION


def lstm_cell(x, h, c, w_ih, w_hh, b_ih, b_hh):
    """One LSTM time step, with parameters in ``torch.nn.LSTM``'s layout.

    Args:
        x: (batch, input) the input at this step.
        h: (batch, hidden) the previous hidden state.
        c: (batch, hidden) the previous cell.
        w_ih: (4 * hidden, input) input-to-gates weights, gate blocks ordered i, f, g, o.
        w_hh: (4 * hidden, hidden) hidden-to-gates weights, same order.
        b_ih: (4 * hidden,) input bias.
        b_hh: (4 * hidden,) hidden bias (nn.LSTM has two biases; both are added).

    Returns:
        ``(h_new, c_new)``, both (batch, hidden).

    Notes:
        * Compute all four gates with one matrix product per weight, then split the result
          into four blocks of size ``hidden`` (``Tensor.chunk`` does this).
        * Gradients must flow: do not detach, use ``.data``, numpy or ``torch.no_grad()``.
    """
    # gates: (batch, 4 * hidden) -> i, f, g, o: (batch, hidden) each
    ### BEGIN SOLUTION: implement one LSTM step
    gates = x @ w_ih.T + b_ih + h @ w_hh.T + b_hh  # (batch, 4 * hidden)
    i, f, g, o = gates.chunk(4, dim=-1)  # each (batch, hidden), in nn.LSTM's order
    i = torch.sigmoid(i)  # input gate: how much of the candidate to write
    f = torch.sigmoid(f)  # forget gate: how much of the old cell to keep
    g = torch.tanh(g)  # candidate cell content
    o = torch.sigmoid(o)  # output gate: how much of the cell to show
    c_new = f * c + i * g  # (batch, hidden)
    h_new = o * torch.tanh(c_new)  # (batch, hidden)
    return h_new, c_new
    ### END SOLUTION


def run_lstm(x, h0, c0, w_ih, w_hh, b_ih, b_hh):
    """A single-layer LSTM over a whole sequence, one ``lstm_cell`` call per time step.

    Args:
        x: (batch, time, input) the input sequence (batch first, like
            ``nn.LSTM(batch_first=True)``).
        h0: (batch, hidden) the initial hidden state.
        c0: (batch, hidden) the initial cell.
        w_ih, w_hh, b_ih, b_hh: the parameters, as in :func:`lstm_cell`.

    Returns:
        ``(outputs, (h_T, c_T))`` where ``outputs`` is (batch, time, hidden) and holds the
        hidden state after every step, and ``h_T``, ``c_T`` (batch, hidden) are the state
        after the last step.

    Notes:
        * Loop over time in Python and call your ``lstm_cell`` at each step (the grader
          checks that you do). This is slow on purpose: it is the readable version.
        * Do not modify ``h0`` or ``c0`` in place.
        * ``torch.nn.LSTM`` takes and returns states of shape (layers, batch, hidden); here,
          with one layer, the states are plain (batch, hidden).
    """
    # outputs: list of (batch, hidden), stacked along dim 1 -> (batch, time, hidden)
    ### BEGIN SOLUTION: run the LSTM over the sequence
    h, c = h0, c0  # (batch, hidden)
    outputs = []
    for t in range(x.size(1)):
        h, c = lstm_cell(x[:, t], h, c, w_ih, w_hh, b_ih, b_hh)
        outputs.append(h)
    return torch.stack(outputs, dim=1), (h, c)  # (batch, time, hidden), ((batch, hidden), (batch, hidden))
    ### END SOLUTION


# ============================================================================ written questions
#
# Q1 (derive). A model gives the correct next word probability 1/50 at half of the scored
# positions and 1/2 at the other half. What is its perplexity? Is it the mean of 50 and 2?
### BEGIN ANSWER
# exp(mean NLL) = exp((log 50 + log 2) / 2) = sqrt(100) = 10: the geometric mean of 50 and 2, not
# their arithmetic mean 26. This is also why averaging per-sentence perplexities gives another
# number: perplexity averages log-probabilities over tokens, then exponentiates once.
### END ANSWER
#
# Q2 (experiment). Run this file: it times your run_lstm against torch.nn.LSTM on the same
# weights and prints the largest difference. Explain the speed gap in one sentence.
### BEGIN ANSWER
# The differences are at rounding level (1e-7 in float32). nn.LSTM is faster: one
# fused kernel does the input projections for all steps at once and the loop in C++, while ours
# launches a handful of small operations per step from Python (the gap grows with the size).
### END ANSWER
#
# Q3 (training experiment). Run this file (about two minutes on two cores; MLM_EXERCISE_TINY=1 checks in
# seconds that it runs). It trains a one-layer LSTM on the first 60k words of PTB for two epochs and measures its
# validation perplexity with *your* masked_perplexity six times an epoch, beside the unigram and the bigram
# counted on the same words (ex00_experiment.json, ex00_experiment.png). After how many training tokens does
# the LSTM pass the unigram? Does it pass the bigram by the end? Do your column and the reference column agree?
### BEGIN ANSWER
# Read it from ex00_experiment.json: the first tokens_seen whose valid_ppl_yours is below unigram_valid,
# and the last valid_ppl_yours against bigram_valid. A network learns the words' frequencies first, so the
# unigram falls early; the bigram knows which word follows which, and a small LSTM on 60k words needs far
# more updates to learn as much (chapter 00 compares them at the book's sizes). The two columns agree to the
# printed digits exactly when masked_perplexity is right: the reference is mlm's own masked NLL.
# Grade: the numbers quoted match the file; the crossing points are read from it, not guessed.
### END ANSWER


if __name__ == "__main__":
    # Experiment (not graded): your LSTM against torch.nn.LSTM.
    import time

    torch.manual_seed(0)
    lstm = torch.nn.LSTM(32, 64, batch_first=True)
    x, h0, c0 = torch.randn(16, 100, 32), torch.zeros(16, 64), torch.zeros(16, 64)
    params = (lstm.weight_ih_l0, lstm.weight_hh_l0, lstm.bias_ih_l0, lstm.bias_hh_l0)
    with torch.no_grad():
        start = time.perf_counter()
        ours, _ = run_lstm(x, h0, c0, *params)
        middle = time.perf_counter()
        theirs, _ = lstm(x, (h0[None], c0[None]))
        end = time.perf_counter()
    print(f"largest difference {(ours - theirs).abs().max():.2e}; "
          f"run_lstm {1000 * (middle - start):.1f} ms, nn.LSTM {1000 * (end - middle):.1f} ms")

    # The training experiment of Q3: experiments.py trains with the book's package and writes its numbers
    import sys
    from pathlib import Path

    sys.path.insert(0, str(next(p for p in Path(__file__).resolve().parents if (p / "exercises").is_dir())))
    from exercises import experiments

    experiments.ex00(masked_perplexity=masked_perplexity, folder=Path(__file__).parent)
