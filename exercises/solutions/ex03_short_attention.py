"""Assignment 03: short attention spans -- the key-value-predict split and the window mask.

Daniluk, Rocktäschel, Welbl & Riedel (2017) put attention on top of an LSTM language model,
but only over a short sliding window: at step t the head looks at the L outputs just before
it, Y_t = [h_{t-L} .. h_{t-1}], and never at h_t itself (h_t asks the question). The book's
version is ``mlm.models.short_attention``; here you write its pieces.

The story of the paper
----------------------
In plain attention (Eq. 1-4) the single output vector h_t has three jobs at once:

* it is a **key**: later steps compare themselves with it to decide whether to look at it;
* it is a **value**: what a later step actually reads from it when it does look;
* it must **predict** the next word, through h*_t and the softmax of Eq. 5.

One vector serving three masters is a compromise, so the paper splits it. The key-value
model (Eq. 6-10) cuts h_t into two equal halves, h_t = [k_t; v_t]: keys are compared, values
are read, and the value also predicts. The key-value-predict model (Eq. 11-12) cuts it into
three, h_t = [k_t; v_t; p_t], so that each job gets its own vector. With k the size of one
part, the head computes, for every step t::

    M_t   = tanh(W^Y [k_{t-L} .. k_{t-1}] + W^h k_t)   one column per slot        (Eq. 1 / 7)
    a_t   = softmax(w . M_t)                          over the L slots           (Eq. 2 / 8)
    r_t   = sum_j a_t[j] v_{t-L+j}                     what is read               (Eq. 3 / 9)
    h*_t  = tanh(W^r r_t + W^x p_t)                    what predicts              (Eq. 4 / 10 / 12)

In plain attention k, v and p are all h_t; in key-value, p_t is v_t. W^Y, W^h, W^r, W^x are
(k, k) matrices and w a vector of size k; nothing has a bias.

Windows across segments, and documents that just began
------------------------------------------------------
Training cuts each document into segments of 20 steps (truncated backpropagation through
time). The first step of a segment still needs the L outputs before it, which belong to the
previous segment, so the head *carries* its last L outputs (the "memory") from one segment to
the next. Put the carried outputs in front of the segment's own, and every window becomes a
slice of one sequence of length L + T::

    position:   0 .. L-1               L .. L+T-1
    holds:      carried h_{-L}..h_{-1}  this segment's h_0 .. h_{T-1}

so the window of step t is positions t .. t+L-1 (slot 0 is the oldest, h_{t-L}; the last
slot the newest, h_{t-1}) and step t itself sits at position L + t.

At the start of a document there is nothing before it: the window of step 0 is empty and
step t < L has only t real outputs. The paper does not say what to do; the book *masks* the
missing slots. Every position of the long sequence has a validity flag, the softmax runs over
the valid slots only, and a step whose window is entirely invalid gets all-zero weights and
the context r_t = 0. Padding at the end of a short row is invalid too.

What you will implement
-----------------------
1. ``split_output``: the (key, value, predict) parts of an output for the three models.
2. ``extend_with_memory``: the carried window in front of a segment, with validity flags.
3. ``window_mask``: which slot of which step's window may be attended, without loops.
4. ``window_attention``: Eq. 1-4 / 7-10 / 12 for all steps at once.

How to work
-----------
Replace each ``raise NotImplementedError(...)`` with your code; do not rename the functions
or change their arguments. Check your progress from the repository root with::

    python -m exercises.grader 03

Do not use ``mlm.models.short_attention`` or ``mlm.models.attentive`` inside your functions
(compare against them in your own experiments if you like). Matrices are stored like
``nn.Linear.weight``, so ``W^Y k`` is ``k @ W_Y.T``.
"""

from __future__ import annotations

import torch


def split_output(h: torch.Tensor, kind: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The key, value and predict parts of LSTM outputs (Eq. 6 and 11).

    Args:
        h: (..., hidden) outputs, with any number of leading dimensions.
        kind: ``"attention"``, ``"key-value"`` or ``"key-value-predict"``.

    Returns:
        ``(key, value, predict)``, each (..., hidden // parts) with parts = 1, 2 or 3:

        * ``"attention"``: the whole output does every job;
        * ``"key-value"``: h = [k; v] (Eq. 6), and the value also predicts (Eq. 10);
        * ``"key-value-predict"``: h = [k; v; p] (Eq. 11).

    Raises:
        ValueError: with a clear message when ``kind`` is unknown, or when the last dimension
        does not split into ``parts`` equal pieces (a key-value-predict model needs a hidden
        size that is a multiple of 3).
    """
    ### BEGIN SOLUTION: split the output into key, value and predict
    PARTS = {"attention": 1, "key-value": 2, "key-value-predict": 3}  # kind -> equal parts of h_t
    if kind not in PARTS:
        raise ValueError(f"kind must be one of {', '.join(PARTS)}, got {kind!r}")
    parts, size = PARTS[kind], h.shape[-1]
    if size % parts:
        raise ValueError(f"a {kind} output splits into {parts} equal parts, so its last dimension must be a "
                         f"multiple of {parts} (got {size})")
    if parts == 1:
        return h, h, h
    pieces = h.split(size // parts, dim=-1)  # consecutive blocks: [k; v] or [k; v; p]
    if parts == 2:
        return pieces[0], pieces[1], pieces[1]  # key-value: the value also predicts (Eq. 10)
    return pieces[0], pieces[1], pieces[2]
    ### END SOLUTION


def extend_with_memory(h: torch.Tensor, mask: torch.Tensor | None, memory, reset: torch.Tensor | None,
                       window: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The carried window followed by this segment's outputs, and which positions are valid.

    Args:
        h: (batch, time, hidden) this segment's outputs.
        mask: (batch, time) bool, True at real tokens and False at padding, or ``None``.
        memory: ``None`` in the very first segment; otherwise the pair ``(past, past_valid)``
            handed over by the previous segment: (batch, window, hidden) outputs, oldest first,
            and their (batch, window) bool validity.
        reset: (batch,) bool, True for rows whose new document starts with this segment, or
            ``None`` (no row starts a new document).
        window: L, the number of slots.

    Returns:
        ``(seq, valid)``: ``seq`` (batch, window + time, hidden) is the carried outputs then
        ``h``; ``valid`` (batch, window + time) bool says which positions hold a real output
        of the current document:

        * without memory, the first ``window`` positions are invalid (fill them with zeros);
        * a carried slot stays valid only if it was valid and its row does not start a new
          document (``reset``);
        * the segment's own positions are valid where ``mask`` is True (all, for ``None``).

    Notes:
        * Gradients must flow into ``seq`` from both ``h`` and ``past``: build ``seq`` with
          differentiable operations and do not detach. The training loop detaches the carried
          memory itself between segments, as it does the LSTM state (chapter 03).
    """
    # past: (batch, window, hidden), past_valid: (batch, window); then concatenate along time
    ### BEGIN SOLUTION: put the carried window in front of the segment
    batch, time, hidden = h.shape
    if memory is None:  # the very first segment: nothing carried yet
        past = h.new_zeros(batch, window, hidden)
        past_valid = torch.zeros(batch, window, dtype=torch.bool, device=h.device)
    else:
        past, past_valid = memory
        past_valid = past_valid.bool()
        if reset is not None:  # a row that starts a new document forgets the previous one
            past_valid = past_valid & ~reset.bool()[:, None]
    current_valid = (torch.ones(batch, time, dtype=torch.bool, device=h.device) if mask is None
                     else mask.bool())
    seq = torch.cat([past.to(h.dtype), h], dim=1)  # (batch, window + time, hidden)
    valid = torch.cat([past_valid, current_valid], dim=1)  # (batch, window + time)
    return seq, valid
    ### END SOLUTION


def window_mask(valid: torch.Tensor, window: int, time: int) -> torch.Tensor:
    """Which slot of each step's window may be attended.

    Args:
        valid: (batch, window + time) bool, e.g. from :func:`extend_with_memory`: ``window``
            carried positions, then the ``time`` steps of the segment.
        window: L.
        time: T, the number of steps in the segment.

    Returns:
        (batch, time, window) bool ``allowed``: ``allowed[b, t, j]`` is True exactly when the
        output in slot j of step t's window is valid. Slot 0 is the oldest (h_{t-L}), slot
        L-1 the newest (h_{t-1}); step t's own output is never in its window.

    Notes:
        * No Python loop at all, neither over time nor over the L slots: take sliding windows
          of ``valid`` (``Tensor.unfold``) or index it with a (time, window) tensor of positions
          built from two ``torch.arange``.
        * Mind how many windows you keep: there are T steps, not T + 1.
    """
    # positions of step t's window in `valid`: (time, window)
    ### BEGIN SOLUTION: build the window mask
    positions = torch.arange(time, device=valid.device)[:, None] + torch.arange(window, device=valid.device)
    return valid.bool()[:, positions]  # (batch, time, window)
    ### END SOLUTION


def window_attention(key, value, predict, valid, W_Y, W_h, w, W_r, W_x) -> tuple[torch.Tensor, torch.Tensor]:
    """Window attention for every step of a segment at once (Eq. 1-4, 7-10, 12).

    Args:
        key: (batch, window + time, k) keys of the carried window and of the segment (the key
            part of ``seq`` from :func:`extend_with_memory`).
        value: (batch, window + time, k) values, laid out like ``key``.
        predict: (batch, time, k) the predict part of the segment's own outputs.
        valid: (batch, window + time) bool validity of the positions.
        W_Y, W_h, W_r, W_x: (k, k) matrices; w: (k,) the scoring vector.

    The window size is ``window = key.shape[1] - predict.shape[1]``. The query of step t is
    its own key k_t, found at position window + t of ``key``.

    Returns:
        ``(output, alpha)``:

        * ``alpha`` (batch, time, window): the attention weights a_t of Eq. 2 / 8, a softmax
          over the allowed slots of step t's window (see :func:`window_mask`); disallowed
          slots get exactly 0, and a step with no allowed slot gets all zeros;
        * ``output`` (batch, time, k): h*_t = tanh(W^r r_t + W^x p_t) with
          r_t = sum_j alpha[t, j] v_{t-window+j} (r_t = 0 for an empty window).

    Notes:
        * No Python loop at all, neither over time nor over the L slots (chapter 03's fast
          version loops over the slots; here gather the (batch, time, window, k) stacks of keys
          and values in the windows by unfold or indexing, then use broadcasting).
        * The softmax is over the window axis, separately for every sequence and step.
        * ``torch.softmax`` of a row that is entirely ``-inf`` is NaN. Replacing the NaN
          afterwards fixes the values, but not always the gradients: after ``masked_fill``
          the backward pass zeroes the masked slots, whereas an additive mask
          (``scores + mask.log()``) sends NaN into the gradients. Large scores must not
          overflow either.
    """
    # windows: (batch, time, window, k); scores and alpha: (batch, time, window); r and output: (batch, time, k)
    ### BEGIN SOLUTION: compute the window attention
    time = predict.shape[1]
    window = key.shape[1] - time
    positions = torch.arange(time, device=key.device)[:, None] + torch.arange(window, device=key.device)
    key_windows = key[:, positions]  # (batch, time, window, k): k_{t-L} .. k_{t-1}
    value_windows = value[:, positions]  # (batch, time, window, k)
    query = key[:, window:]  # (batch, time, k): the current key k_t
    M = torch.tanh(key_windows @ W_Y.T + (query @ W_h.T)[:, :, None, :])  # (batch, time, window, k), Eq. 1 / 7
    scores = M @ w  # (batch, time, window), Eq. 2 / 8 before the softmax
    allowed = window_mask(valid, window, time)  # (batch, time, window)
    # Softmax over the allowed slots only. Shift by the row maximum (no gradient needed: the softmax
    # ignores shifts); an empty row has maximum -inf and uses 0, and its total 0 is divided by 1.
    filled = scores.masked_fill(~allowed, float("-inf"))
    row_max = filled.amax(dim=-1, keepdim=True).detach()
    row_max = torch.where(torch.isfinite(row_max), row_max, torch.zeros_like(row_max))
    exps = torch.exp(filled - row_max)  # exactly 0 at disallowed slots
    total = exps.sum(dim=-1, keepdim=True)
    alpha = exps / torch.where(total > 0, total, torch.ones_like(total))  # (batch, time, window), Eq. 2 / 8
    r = (alpha[..., None] * value_windows).sum(dim=-2)  # (batch, time, k), Eq. 3 / 9
    out = torch.tanh(r @ W_r.T + predict @ W_x.T)  # (batch, time, k), Eq. 4 / 10 / 12
    return out, alpha
    ### END SOLUTION


# ============================================================================ written questions
#
# Q1 (explain). Daniluk et al. split h_t into a key, a value and a predict part. What goes wrong
# with a single vector that must at once say what to look for, what to return and what to predict?
### BEGIN ANSWER
# One vector is optimised for three jobs with different gradients: as a key it should make
# useful memories score high, as a value carry content to read, and as a predictor carry the next
# word's evidence. Separating them lets each part specialise; the paper finds that the attention
# then looks mostly at the last few steps, hence the title.
### END ANSWER
#
# Q2 (experiment). Run this file: two segments of one document go through your functions with a
# window of 3 (key-value-predict, k = 4). It prints, for the first two steps of segment 2, with
# and without a reset, the allowed slots, the attention weights and the summary r_t. Which slots
# change, and what does step 0 read from the window after a reset?
### BEGIN ANSWER
# Without a reset, step 0 of segment 2 may attend to the last three outputs of segment 1 (all
# True) and spreads its weight over them. With a reset the carried slots are invalid: step 0's
# row is empty (all False), its weights are all 0 and r_0 = 0, so its output is tanh(W^x p_0)
# alone; step 1 sees only step 0 of the new segment, which gets the whole weight.
### END ANSWER
#
# Q3 (training experiment). Run this file (a few minutes on two cores; MLM_EXERCISE_TINY=1 checks in seconds
# that it runs). It trains the key-value-predict head, its window masked with *your* window_mask, with windows of
# L = 1, 5 and 15 on 60k words of PTB for two epochs (ex03_experiment.json, ex03_experiment.png). Give the
# relative change of the last validation perplexity from L = 1 to L = 5 and from L = 5 to L = 15. What did
# Daniluk et al. conclude, and what would you need before saying these runs agree with them?
### BEGIN ANSWER
# Read the last valid_ppl of the three runs and give both relative changes. Daniluk et al. found the window's
# gains small beyond a few words (their title: frustratingly short attention spans); chapter 03 asks whether
# L = 15 helps over L = 5 at all. One run a window decides nothing: a change of a percent or two is within what
# a second seed moves; agreeing with the paper needs three seeds a side and an interval that lies inside +-1%
# (no effect) or beyond it (chapter 06's rule). Grade: both changes computed from the file, and the answer says
# that one seed cannot settle them.
### END ANSWER


if __name__ == "__main__":
    torch.manual_seed(0)
    window, k = 3, 4
    W_Y, W_h, W_r, W_x = (torch.randn(k, k) for _ in range(4))
    w = torch.randn(k)
    first = torch.randn(1, 5, 3 * k)  # key-value-predict: [key; value; predict]
    seq, valid = extend_with_memory(first, None, None, None, window)
    memory = (seq[:, -window:], valid[:, -window:])
    second = torch.randn(1, 5, 3 * k)
    numbers = lambda x: "[" + ", ".join(f"{v:.2f}" for v in x.tolist()) + "]"  # noqa: E731
    for reset in (torch.tensor([False]), torch.tensor([True])):
        seq2, valid2 = extend_with_memory(second, None, memory, reset, window)
        key, value, _ = split_output(seq2, "key-value-predict")
        _, _, predict = split_output(second, "key-value-predict")
        out, alpha = window_attention(key, value, predict, valid2, W_Y, W_h, w, W_r, W_x)
        print(f"reset={bool(reset)}")
        for t in (0, 1):
            r = (alpha[0, t, :, None] * value[0, t:t + window]).sum(0)
            print(f"  step {t}: allowed {window_mask(valid2, window, 5)[0, t].tolist()}, "
                  f"alpha {numbers(alpha[0, t])}, r_{t} {numbers(r)}")

    # The training experiment of Q3: experiments.py trains with the book's package and writes its numbers
    import sys
    from pathlib import Path

    sys.path.insert(0, str(next(p for p in Path(__file__).resolve().parents if (p / "exercises").is_dir())))
    from exercises import experiments

    experiments.ex03(window_mask=window_mask, folder=Path(__file__).parent)
