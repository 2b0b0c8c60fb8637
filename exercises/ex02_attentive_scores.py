"""Assignment 02: the Attentive LM, its combined score and its causal memory mask.

The Attentive LM of Salton, Ross & Kelleher (2017) adds a small attention head on top of an
LSTM. At step t the head looks back at the LSTM outputs of the earlier steps of the same
sentence, h_1 .. h_{t-1} (its "memory"), decides how much each of them matters for the
current prediction, and mixes them into a context vector c_t that is merged with h_t before
the softmax over the vocabulary. In this assignment you write the three pieces of that head
that are easy to get subtly wrong; the book's version is ``mlm.models.attentive``.

What you will implement
-----------------------
1. ``causal_memory_mask``: which memory slots each step may look at. A step only sees steps
   that came strictly before it (its own output is not in the memory yet) and never a
   padding position.
2. ``combined_scores``: the paper's "combined" score (Eq. 10), which lets the relevance of a
   memory slot depend on the step that asks (the query). You compute it for every
   (query, slot) pair at once, without a Python loop over time.
3. ``attend``: turn the scores into attention weights with a softmax restricted to the
   allowed slots (Eq. 4), and the weights into context vectors (Eq. 3). The very first step
   has an empty memory: it gets all-zero weights and a zero context, and nothing may become
   NaN on the way, not even in the backward pass.

How to work
-----------
Replace each ``raise NotImplementedError(...)`` with your code; do not rename the functions
or change their arguments. Check your progress at any time from the repository root with::

    python -m exercises.grader 02

You may use anything from ``torch``, but not the answers in ``mlm.models.attentive``
(``causal_memory_mask``, ``masked_softmax``, ``AttentiveHead``) inside your functions; do
use them in your own experiments to compare against.

Background
----------
All steps of a batch are processed together. For every query step t and memory slot i the
head needs one score, so the scores form a tensor of shape (batch, time, time): the middle
axis is the query step t, the last axis the memory slot i. The paper's two scores are::

    single   score(h_i, h_t) = v . tanh(W_s h_i)               (Eq. 9)
    combined score(h_i, h_t) = v . tanh(W_s h_i + W_q h_t)     (Eq. 10)

with W_s and W_q matrices of shape (attn, hidden) and v a vector of size attn. The single
score is the same for every query; the combined one is not. Then, for each query step t::

    a_i = exp(score_i) / sum_j exp(score_j)    over the allowed slots i, j only   (Eq. 4)
    c_t = sum_i a_i h_i                                                           (Eq. 3)

Only the pairs allowed by the mask take part: slot i must be strictly earlier than t and not
padding. Positions are counted from 0 here, so step 0 has an empty memory, step 1 may look
at slot 0, and so on. A padding mask of shape (batch, time) is True at real tokens; padding
sits at the end of the shorter sequences.
"""

from __future__ import annotations

import torch


def causal_memory_mask(mask: torch.Tensor | None, batch: int, time: int) -> torch.BoolTensor:
    """Which memory slot each query step may attend to.

    Args:
        mask: (batch, time) bool tensor, True at real tokens and False at padding, or
            ``None`` when nothing is padded.
        batch: the batch size.
        time: the number of time steps.

    Returns:
        A (batch, time, time) bool tensor ``allowed`` with ``allowed[b, t, i]`` True exactly
        when query step t may attend to memory slot i of sequence b, that is when

        * i < t: the slot is strictly earlier than the query (a step never attends to itself
          nor to the future), and
        * slot i is not padding (``mask[b, i]`` is True; always the case when ``mask`` is None).

    Notes:
        * Padding is a property of the memory slot i. A padded query step t still follows
          the causal rule (its output is ignored by the loss anyway).
        * Build it without loops: ``torch.tril`` / ``torch.triu`` (mind their ``diagonal``
          argument) or a comparison of two ``torch.arange`` vectors, then broadcasting.
        * Return a result on the same device as ``mask`` (CPU when ``mask`` is None).
    """
    # causal: (time, time) -> (batch, time, time); padding: mask (batch, time) seen as (batch, 1, time)
    raise NotImplementedError("TODO: build the causal memory mask")


def combined_scores(h: torch.Tensor, W_s: torch.Tensor, W_q: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """The combined score of Eq. 10 for every (query step, memory slot) pair.

    Args:
        h: (batch, time, hidden) the LSTM outputs; they are both the queries and the memory.
        W_s: (attn, hidden) the matrix applied to the memory slot h_i (stored like
            ``nn.Linear.weight``, so ``W_s h_i`` is ``h_i @ W_s.T``).
        W_q: (attn, hidden) the matrix applied to the query h_t.
        v: (attn,) the scoring vector.

    Returns:
        (batch, time, time) tensor ``scores`` with
        ``scores[b, t, i] = v . tanh(W_s h[b, i] + W_q h[b, t])``: the middle axis is the query
        step t, the last axis the memory slot i. Compute every pair, masking comes later.

    Notes:
        * No Python loop over time (or batch). Compute ``W_s h_i`` once per slot and ``W_q h_t``
          once per step, each as a (batch, time, attn) tensor, then broadcast the two against
          each other with ``unsqueeze`` (or ``None`` indexing) to get every pair.
        * Gradients must flow to ``h``, ``W_s``, ``W_q`` and ``v``.
    """
    # keys: (batch, time, attn); queries: (batch, time, attn)
    # pairs: (batch, time [query t], time [slot i], attn) -> scores: (batch, time, time)
    raise NotImplementedError("TODO: compute the combined scores")


def attend(h: torch.Tensor, scores: torch.Tensor, allowed: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention weights over the allowed memory slots (Eq. 4) and the context vectors (Eq. 3).

    Args:
        h: (batch, time, hidden) the memory (the LSTM outputs).
        scores: (batch, time, time) a score for every (query t, slot i) pair, e.g. from
            :func:`combined_scores`. Scores of disallowed pairs can be anything: huge, or
            even ``inf`` or ``-inf``.
        allowed: (batch, time, time) bool tensor, e.g. from :func:`causal_memory_mask`.

    Returns:
        ``(weights, context)``:

        * ``weights`` (batch, time, time): for each query row t, a softmax of the scores over
          the allowed slots i only; disallowed slots get exactly 0. A row with no allowed
          slot at all (step 0, whose memory is empty) is all zeros.
        * ``context`` (batch, time, hidden): ``context[b, t] = sum_i weights[b, t, i] h[b, i]``
          (all zeros for an empty memory).

    Notes:
        * ``torch.softmax`` of a row that is entirely ``-inf`` is NaN, and a NaN that you
          replace afterwards can still come back in the backward pass as a NaN gradient.
          Make sure no intermediate value is NaN or infinite where it matters.
        * Large scores (think 1e4) must not overflow: ``exp`` of them is ``inf``.
        * The context for all steps at once is one batched matrix product.
    """
    # weights: (batch, time [query t], time [slot i]); context: (batch, time, hidden)
    raise NotImplementedError("TODO: compute the attention weights and the context")


# ============================================================================ written questions
#
# Q1 (explain). Why must step t not attend to its own output h_t, although h_t is available
# when the prediction is made? What would the attention learn if it could?
# YOUR ANSWER HERE
#
# Q2 (experiment). Run this file: it prints the attention weights of one short sequence with
# random parameters, before any training. Which step has an empty row, and what do the other
# rows look like? Predict before you run it.
# YOUR ANSWER HERE
#
# Q3 (training experiment). Run this file (a few minutes on two cores; MLM_EXERCISE_TINY=1 checks in seconds
# that it runs). It trains the Attentive LM (single score), its memory masked with *your* causal_memory_mask, on
# 60k words of PTB with its head at the network's learning rate and at a tenth of it, and the LSTM alone, for
# two epochs (ex02_experiment.json, ex02_experiment.png). What does chapter 02 say the head's learning rate
# protects against? Compare the first epoch of the two attentive runs: do your curves show it? What could one
# run of each setting not tell you?
# YOUR ANSWER HERE


if __name__ == "__main__":
    torch.manual_seed(0)
    hidden, attn, time = 6, 4, 5
    h = torch.randn(1, time, hidden)
    W_s, W_q, v = torch.randn(attn, hidden) * 0.1, torch.randn(attn, hidden) * 0.1, torch.randn(attn) * 0.1
    weights, _ = attend(h, combined_scores(h, W_s, W_q, v), causal_memory_mask(None, 1, time))
    print(weights[0].numpy().round(3))

    # The training experiment of Q3: experiments.py trains with the book's package and writes its numbers
    import sys
    from pathlib import Path

    sys.path.insert(0, str(next(p for p in Path(__file__).resolve().parents if (p / "exercises").is_dir())))
    from exercises import experiments

    experiments.ex02(causal_memory_mask=causal_memory_mask, folder=Path(__file__).parent)
