"""Assignment 01: the baselines, Zaremba et al.'s regularized LSTM and Press & Wolf's weight tying.

Every model of the book is compared with the baselines of chapter 1. Four details make them
work, and each is a line or two of code that is easy to get wrong:

1. ``zaremba_forward``: a stack of LSTM layers with dropout on the *vertical* connections
   only (the embedded input, between layers, before the softmax), never on the recurrent
   state h_{t-1} -> h_t.
2. ``detach_state``: truncated backpropagation through time. The state at the end of one
   window of ``bptt`` steps starts the next window (the model sees an unbroken history), but
   the gradient must stop at the window boundary.
3. ``sequence_loss``: the loss of a window, either summed over time and averaged over the
   rows (``"sequence_sum"``, Zaremba's code, with a learning rate of 1) or averaged over every
   token (``"token_mean"``, used with Adam in later chapters).
4. ``tie_weights``: the output layer reuses the input embedding matrix (Press & Wolf, 2017).

How to work
-----------
Replace each ``raise NotImplementedError(...)`` with your code; keep the names and arguments.
Grade your work from the repository root with::

    python -m exercises.grader 01

Rules: import only ``torch``, ``math`` and the standard helpers; no ``torch.nn.LSTM`` /
``LSTMCell``, no ``cross_entropy`` / ``nll_loss`` in your functions. The experiment at the end
of the file (under ``if __name__ == "__main__":``) is never graded and may use anything.
"""

from __future__ import annotations

import torch
from torch import nn


def zaremba_forward(x, state, layers, cell, drop):
    """A stack of LSTM layers with dropout on the vertical connections only.

    Args:
        x: (batch, time, embed) the embedded input words.
        state: ``(h0, c0)``, each (layers, batch, hidden): the state carried from the last window.
        layers: a list with one ``(w_ih, w_hh, b_ih, b_hh)`` per layer, in ``nn.LSTM``'s layout.
        cell: ``cell(x_t, h, c, w_ih, w_hh, b_ih, b_hh) -> (h, c)``, one LSTM step (the one of
            assignment 00); x_t (batch, in), h and c (batch, hidden).
        drop: the dropout function, ``drop(tensor) -> tensor`` (in training ``nn.Dropout``).

    Returns:
        ``(output, (h_T, c_T))``: ``output`` (batch, time, hidden) is the top layer's output
        sequence *after* the last dropout (it goes to the softmax); ``h_T``, ``c_T`` (layers,
        batch, hidden) the state after the last step, which the next window starts from.

    Notes:
        * Run one layer over the whole window, then the next one on its output sequence.
        * Call ``drop`` exactly ``len(layers) + 1`` times, each time on a whole sequence
          (batch, time, features): on ``x``, on the output of every layer but the top one, and
          on the top layer's output. Never on a state: h and c are not dropped, neither between
          time steps nor in what is returned.
    """
    ### BEGIN SOLUTION: run the layers one after the other, dropping only between them
    inputs = drop(x)  # (batch, time, embed): dropout on the embeddings
    finals_h, finals_c = [], []
    for layer, params in enumerate(layers):
        h, c = state[0][layer], state[1][layer]  # (batch, hidden)
        outputs = []
        for t in range(inputs.size(1)):
            h, c = cell(inputs[:, t], h, c, *params)  # the recurrent state is never dropped
            outputs.append(h)
        inputs = drop(torch.stack(outputs, dim=1))  # (batch, time, hidden): the vertical connection
        finals_h.append(h)
        finals_c.append(c)
    return inputs, (torch.stack(finals_h), torch.stack(finals_c))
    ### END SOLUTION


def detach_state(state):
    """The state to start the next truncated-BPTT window from: same values, no gradient history.

    Args:
        state: ``(h, c)``, two tensors of any shape (the LSTM stack's final state).

    Returns:
        A new pair ``(h, c)`` with the same values that no longer requires grad, so the next
        window's backward pass stops here. ``state`` itself is left as it is (the current
        window's graph still needs it).
    """
    ### BEGIN SOLUTION: cut the gradient, keep the values
    h, c = state
    return h.detach(), c.detach()
    ### END SOLUTION


def sequence_loss(logits: torch.Tensor, targets: torch.Tensor, reduction: str) -> torch.Tensor:
    """The training loss of a window, as a 0-dim tensor that gradients flow through.

    Args:
        logits: (batch, time, vocab) unnormalised scores.
        targets: (batch, time) the next words.
        reduction: ``"sequence_sum"``: the negative log-likelihood summed over all positions and
            divided by ``batch`` (the rows); ``"token_mean"``: divided by ``batch * time``.
            Anything else: ``ValueError``.
    """
    ### BEGIN SOLUTION: sum the NLL of the targets and divide it
    if reduction not in ("sequence_sum", "token_mean"):
        raise ValueError(f"reduction must be 'sequence_sum' or 'token_mean', got {reduction!r}")
    log_probs = torch.log_softmax(logits, dim=-1)  # (batch, time, vocab), stable for large logits
    nll = -log_probs.gather(-1, targets.unsqueeze(-1)).sum()
    batch, time = targets.shape
    return nll / batch if reduction == "sequence_sum" else nll / (batch * time)
    ### END SOLUTION


def tie_weights(embedding: nn.Embedding, decoder: nn.Linear) -> None:
    """Make ``decoder`` use the embedding matrix as its weight (Press & Wolf), in place.

    Afterwards the two modules hold the *same* parameter: an update through one is seen by the
    other, an optimiser sees one tensor, and its gradient is the sum of both uses. The
    decoder's bias stays its own. Raise ``ValueError`` if the shapes do not fit.
    """
    ### BEGIN SOLUTION: share one Parameter between the two modules
    if embedding.weight.shape != decoder.weight.shape:
        raise ValueError(f"cannot tie an embedding of shape {tuple(embedding.weight.shape)} to a decoder of "
                         f"shape {tuple(decoder.weight.shape)}: the hidden size must equal the embedding size")
    decoder.weight = embedding.weight
    ### END SOLUTION


# ============================================================================ written questions
#
# Q1 (derive). With bptt = 35 and batch = 20, by what factor is the gradient of the
# "sequence_sum" loss larger than that of "token_mean"? Why does Zaremba et al.'s learning rate
# of 1 suit one and not the other?
### BEGIN ANSWER
# By bptt = 35: both divide the same summed NLL, one by batch, the other by batch * bptt, so the
# gradients differ by exactly the number of time steps (the experiment prints 35.0). Plain SGD with
# lr = 1 on the summed loss moves the weights as much as lr = 35 on the mean: it is the step size
# the official code was tuned for; with the per-token mean the same lr is 35 times too small.
### END ANSWER
#
# Q2 (explain). A piece of information written to the cell at step t and read at step t + 100
# by the top of a two-layer stack: how many dropout masks does it cross with Zaremba's scheme,
# and how many if the recurrent h_{t-1} -> h_t were dropped as well?
### BEGIN ANSWER
# Vertical only: at most L + 1 = 3 (embedding, between the layers, before the softmax), however
# long it is remembered. Dropping the recurrent connection adds one mask per step and layer, about
# 100 more here, so the memory is corrupted in proportion to how long it is kept.
### END ANSWER
#
# Q3 (experiment). Run this file. What does the second part print, and which part of your code
# makes the difference between the two lines?
### BEGIN ANSWER
# Without detach_state the second window's backward pass reaches the first window's parameters
# through the carried state: the gradient of window 1's input is non-zero, and in a real training
# loop (where window 1's graph was already freed) backward would fail. With detach_state it is None: the gradient stops at the window boundary, as truncated BPTT requires.
### END ANSWER
#
# Q4 (training experiment). Run this file (a few minutes on two cores; MLM_EXERCISE_TINY=1 checks in seconds
# that it runs). It trains four 2 x 128 LSTMs for three epochs on 60k words of PTB: untied, tied (by *your*
# tie_weights: the book's model is built untied and your function ties it), with dropout 0.5 between the layers,
# and with dropout 0.5 on the recurrent weights (ex01_experiment.json, ex01_experiment.png). How large is the gap
# between validation and training perplexity in each run, and how does each change move it? How many parameters
# did tying save? Why should you not rank the four validation perplexities from these runs?
### BEGIN ANSWER
# Read the last train_ppl and valid_ppl of each run, and parameters. Without dropout the gap grows every epoch
# (the model memorises 60k words); dropout between the layers raises the training perplexity and narrows the
# gap, by far more than seeds move it; tying removes |V| x 128 parameters (the parameters column, if the
# student's tie_weights shares one matrix). Dropout on the recurrent weights (one mask per batch, as in Kong et
# al.'s code) regularizes too but perturbs the state at every step (Q2). One run a setting ranks nothing: a
# second seed can move the validation perplexities by as much as they differ (chapter 06 decides such
# questions with three seeds and an interval). Grade: the gaps and parameter counts are quoted from the file,
# and the answer does not rank the settings by single validation numbers.
### END ANSWER


if __name__ == "__main__":
    # Experiment (not graded): the two losses, and what detaching does.
    torch.manual_seed(0)
    batch, vocab = 20, 50
    for bptt in (5, 20, 35):
        logits = torch.randn(batch, bptt, vocab, requires_grad=True)
        targets = torch.randint(vocab, (batch, bptt))
        norms = []
        for reduction in ("sequence_sum", "token_mean"):
            (grad,) = torch.autograd.grad(sequence_loss(logits, targets, reduction), logits)
            norms.append(grad.norm().item())
        print(f"bptt={bptt:2d}: |grad sequence_sum| / |grad token_mean| = {norms[0] / norms[1]:.1f}")

    def step(x_t, h, c, w_ih, w_hh, b_ih, b_hh):  # PyTorch's LSTM step (exercise 00 writes it by hand)
        return torch.lstm_cell(x_t, (h, c), w_ih, w_hh, b_ih, b_hh)

    hidden = 8
    layers = [tuple(torch.randn(*shape) * 0.3 for shape in [(4 * hidden, hidden), (4 * hidden, hidden),
                                                           (4 * hidden,), (4 * hidden,)]) for _ in range(2)]
    for detach in (False, True):
        first = torch.randn(3, 5, hidden, requires_grad=True)
        state = (torch.zeros(2, 3, hidden), torch.zeros(2, 3, hidden))
        _, state = zaremba_forward(first, state, layers, step, lambda t: t)
        if detach:
            state = detach_state(state)
        out, _ = zaremba_forward(torch.randn(3, 5, hidden, requires_grad=True), state, layers, step, lambda t: t)
        out.sum().backward()
        print(f"detach={detach}: gradient on window 1's input: "
              f"{None if first.grad is None else round(first.grad.abs().sum().item(), 3)}")

    # The training experiment of Q4: experiments.py trains with the book's package and writes its numbers
    import sys
    from pathlib import Path

    sys.path.insert(0, str(next(p for p in Path(__file__).resolve().parents if (p / "exercises").is_dir())))
    from exercises import experiments

    experiments.ex01(tie_weights=tie_weights, folder=Path(__file__).parent)
