"""Checks for assignment 00: ``masked_perplexity``, ``lstm_cell`` and ``run_lstm``.

References: :func:`mlm.evaluation.masked_nll` (perplexity as the book computes it),
:func:`mlm.models.lstm_cell.lstm_cell_step` and ``torch.nn.LSTM``.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from mlm.evaluation import masked_nll
from mlm.models.lstm_cell import lstm_cell_step

from exercises.checks.common import (
    CheckFailed,
    as_float,
    check,
    close,
    expect,
    expect_pair,
    expect_tensor,
    generator,
    get_function,
    max_diff,
)

BANNED = {name: "write the LSTM and the log-likelihood yourself" for name in
          ("LSTM", "LSTMCell", "RNN", "lstm", "lstm_cell_step", "lstm_cell", "cross_entropy", "linear_cross_entropy",
           "nll_loss", "CrossEntropyLoss", "NLLLoss", "masked_nll")}

# ----------------------------------------------------------------------------- helpers


def _lm_batch(seed: int, batch: int = 4, time: int = 7, vocab: int = 11, scale: float = 3.0):
    """Random logits, targets and a padding mask shaped like a sentence batch."""
    g = generator(seed)
    logits = torch.randn(batch, time, vocab, generator=g) * scale  # (batch, time, vocab)
    targets = torch.randint(vocab, (batch, time), generator=g)  # (batch, time)
    lengths = torch.randint(1, time + 1, (batch,), generator=g)
    lengths[0] = time  # one full row, the others padded at the end
    mask = torch.arange(time)[None, :] < lengths[:, None]  # (batch, time)
    return logits, targets, mask


def _reference_perplexity(logits, targets, mask) -> float:
    nll = masked_nll(logits.double(), targets, mask)
    return math.exp(nll.item() / int(mask.sum()))


def _perplexity(module, logits, targets, mask) -> float:
    fn = get_function(module, "masked_perplexity")
    return as_float(fn(logits.clone(), targets.clone(), mask.clone()), "masked_perplexity's result")


def _lstm_params(seed: int, input_size: int, hidden: int, dtype=torch.float32):
    g = generator(seed)
    k = 1.0 / math.sqrt(hidden)  # nn.LSTM's initialisation range

    def uniform(*shape):
        return ((torch.rand(*shape, generator=g) * 2 - 1) * k).to(dtype)

    return (uniform(4 * hidden, input_size), uniform(4 * hidden, hidden),
            uniform(4 * hidden), uniform(4 * hidden))


def _cell(module, *args):
    fn = get_function(module, "lstm_cell")
    h_new, c_new = expect_pair(fn(*args), "lstm_cell")
    batch, hidden = args[1].shape
    expect_tensor(h_new, (batch, hidden), "h_new")
    expect_tensor(c_new, (batch, hidden), "c_new")
    return h_new, c_new


def _nn_lstm(seed: int, input_size: int, hidden: int) -> nn.LSTM:
    """An ``nn.LSTM`` whose parameters come from a private seed (the global one is left alone)."""
    lstm = nn.LSTM(input_size, hidden, batch_first=True)
    with torch.no_grad():
        for p, value in zip((lstm.weight_ih_l0, lstm.weight_hh_l0, lstm.bias_ih_l0, lstm.bias_hh_l0),
                            _lstm_params(seed, input_size, hidden)):
            p.copy_(value)
    return lstm


def _run(module, lstm: nn.LSTM, x, h0, c0, copy_inputs: bool = True):
    """The student's run_lstm, calling the reference cell: a mistake in lstm_cell is charged to lstm_cell only.
    ``copy_inputs=False``: what it does to x, h0 and c0 in place is made to them here too."""
    fn = get_function(module, "run_lstm", in_place=not copy_inputs)
    original = getattr(module, "lstm_cell", None)
    module.lstm_cell = lstm_cell_step
    try:
        return _run_with_cell(fn, lstm, x, h0, c0)
    finally:
        module.lstm_cell = original


def _run_with_cell(fn, lstm: nn.LSTM, x, h0, c0):
    params = [p.detach().clone() for p in
              (lstm.weight_ih_l0, lstm.weight_hh_l0, lstm.bias_ih_l0, lstm.bias_hh_l0)]
    result = expect_pair(fn(x, h0, c0, *params), "run_lstm")
    outputs, final = result
    batch, time, _ = x.shape
    expect_tensor(outputs, (batch, time, lstm.hidden_size), "outputs")
    h_T, c_T = expect_pair(final, "the second element of run_lstm's result (h_T, c_T)")
    expect_tensor(h_T, (batch, lstm.hidden_size), "h_T")
    expect_tensor(c_T, (batch, lstm.hidden_size), "c_T")
    return outputs, h_T, c_T


def _reference_run(lstm: nn.LSTM, x, h0, c0):
    with torch.no_grad():
        outputs, (h_T, c_T) = lstm(x, (h0.unsqueeze(0), c0.unsqueeze(0)))
    return outputs, h_T.squeeze(0), c_T.squeeze(0)


# ----------------------------------------------------------------------------- perplexity


def _expect_a_perplexity(module, seed: int) -> None:
    """The property checks below count for a function that behaves like a perplexity, which a constant does not:
    finite, at least 1, higher when the score of a scored target is lowered and lower when it is raised. They
    do not ask for the exact value, so a mistake there costs the value checks' points only."""
    logits, targets, mask = _lm_batch(seed)
    base = _perplexity(module, logits, targets, mask)
    expect(math.isfinite(base) and base >= 1 - 1e-9, f"got {base}: a perplexity is a finite number of at least 1")
    moved = []
    for change in (-3.0, 3.0):
        changed = logits.clone()
        changed[0, 0, targets[0, 0]] += change  # row 0 is full: position (0, 0) is scored
        moved.append(_perplexity(module, changed, targets, mask))
    expect(moved[0] > base > moved[1], "your masked_perplexity does not follow the model's scores: lowering the "
           "score of a scored target should raise it, raising that score should lower it")


@check("masked_perplexity returns a plain Python float")
def perplexity_returns_float(module):
    _expect_a_perplexity(module, 10)
    logits, targets, mask = _lm_batch(0)
    result = get_function(module, "masked_perplexity")(logits, targets, mask)
    expect(isinstance(result, float) and not isinstance(result, bool),
           f"got a {type(result).__name__}; turn a one-element tensor into a float with .item() or float()")


@check("masked_perplexity matches exp(masked mean NLL) on random batches", points=2)
def perplexity_matches_reference(module):
    for seed in (1, 2, 3):
        logits, targets, mask = _lm_batch(seed)
        got, want = _perplexity(module, logits, targets, mask), _reference_perplexity(logits, targets, mask)
        if not close(got, want, rel=1e-5):
            hint = "your value differs from the reference"
            if got < 1:
                hint += "; a perplexity is never below 1, check the sign of the log-likelihood"
            else:
                hint += ("; check that you use the log-probability of the target token, "
                         "sum it over the scored positions only and divide by how many there are")
            raise CheckFailed(hint)


@check("masked_perplexity ignores padding (changing padded logits/targets changes nothing)", points=2)
def perplexity_ignores_padding(module):
    _expect_a_perplexity(module, 11)
    logits, targets, mask = _lm_batch(4)
    expect(bool((~mask).any()), "internal: the test batch has no padding")
    before = _perplexity(module, logits, targets, mask)
    g = generator(5)
    noisy_logits = torch.where(mask[..., None], logits, torch.randn(logits.shape, generator=g) * 50)
    noisy_targets = torch.where(mask, targets, torch.randint(logits.size(-1), targets.shape, generator=g))
    after = _perplexity(module, noisy_logits, noisy_targets, mask)
    expect(close(before, after, rel=1e-6),
           "the result changed when only padded positions (mask False) were changed; "
           "padded positions must not contribute to the NLL")


@check("masked_perplexity with a single scored position")
def perplexity_single_position(module):
    logits, targets, _ = _lm_batch(6, batch=3, time=5)
    mask = torch.zeros(3, 5, dtype=torch.bool)
    mask[1, 2] = True
    got, want = _perplexity(module, logits, targets, mask), _reference_perplexity(logits, targets, mask)
    expect(close(got, want, rel=1e-5),
           "with exactly one True entry in the mask, the perplexity is exp(NLL of that one position); "
           "do you divide by the number of True entries (not by batch * time or by batch)?")


@check("masked_perplexity of uniform logits equals the vocabulary size")
def perplexity_uniform(module):
    for vocab in (2, 10, 1000):
        logits, targets, _ = _lm_batch(7, vocab=vocab)
        mask = torch.ones(targets.shape, dtype=torch.bool)  # no padding: the division is another check's
        shift = torch.randn(logits.shape[:2], generator=generator(8))  # (batch, time)
        logits = torch.zeros_like(logits) + shift[..., None] * 5  # constant within every row
        got = _perplexity(module, logits, targets, mask)
        expect(close(got, float(vocab), rel=1e-5),
               f"when every token gets the same score, a model is as unsure as a uniform choice "
               f"among {vocab} tokens; check the normalisation over the vocabulary (last) dimension")
        sure = torch.full_like(logits, -30.0).scatter(-1, targets[..., None], 30.0)  # every target all but certain
        expect(close(_perplexity(module, sure, targets, mask), 1.0, rel=1e-5),
               "a model that puts all its probability on every target has perplexity 1: your function must "
               "read the logits and the targets, not only the vocabulary's size")


@check("masked_perplexity stays finite and exact with huge logits (1e4 scale)", points=2)
def perplexity_large_logits(module):
    batch, time, vocab = 4, 16, 50
    g = generator(9)
    logits = torch.randn(batch, time, vocab, generator=g) * 1e4  # (batch, time, vocab)
    targets = logits.argmax(-1)  # (batch, time): confident and right...
    mask = torch.ones(batch, time, dtype=torch.bool)
    # ...except at one position, where the target scores 1000 below the best token: its
    # probability is about exp(-1000), which underflows to 0 even in float64
    wrong = (targets[2, 5] + 1) % vocab
    logits[2, 5, wrong] = logits[2, 5].max() - 1000
    targets[2, 5] = wrong  # no padding here: what is divided by is the other checks' business
    got = _perplexity(module, logits, targets, mask)
    want = _reference_perplexity(logits, targets, mask)
    probs = torch.softmax(logits.double(), -1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    if not math.isfinite(got) and bool((probs[mask] == 0).any()):
        raise CheckFailed(f"got {got}: the probability of one target is about exp(-1000), which is 0 in floating point, "
                          "so its log is -inf; compute the log-probabilities directly (log_softmax) instead of "
                          "taking the log of probabilities")
    expect(math.isfinite(got), f"got {got} where the reference is finite; look for an overflow or a division by zero")
    expect(close(got, want, rel=1e-4), "finite, but the value differs from the reference; if the other "
           "perplexity checks pass, look for precision lost when exponentiating large logits")


# ----------------------------------------------------------------------------- lstm_cell


@check("lstm_cell matches the reference LSTM step (gate order i, f, g, o)", points=3)
def lstm_cell_matches_reference(module):
    for seed, (batch, input_size, hidden) in enumerate([(3, 5, 4), (1, 2, 6), (8, 7, 7)]):
        g = generator(100 + seed)
        x = torch.randn(batch, input_size, generator=g)
        h = torch.randn(batch, hidden, generator=g)
        c = torch.randn(batch, hidden, generator=g) * 2
        params = _lstm_params(200 + seed, input_size, hidden)
        h_new, c_new = _cell(module, x, h, c, *params)
        h_ref, c_ref = lstm_cell_step(x, h, c, *params)
        if max_diff(c_new, c_ref) > 1e-5:
            _diagnose_gate_order(module)
        expect(max_diff(c_new, c_ref) < 1e-5,
               f"c_new differs from the reference (batch={batch}, input={input_size}, hidden={hidden}); "
               "check which nonlinearity each gate uses and that both biases are added")
        expect(max_diff(h_new, h_ref) < 1e-5,
               "c_new is right but h_new is not; look at how h is computed from the output gate and the new cell")


@check("lstm_cell lets gradients flow to every input and parameter")
def lstm_cell_gradients(module):
    batch, input_size, hidden = 2, 3, 4
    g = generator(300)
    x, h, c = (torch.randn(batch, n, generator=g, dtype=torch.float64) for n in (input_size, hidden, hidden))
    params = _lstm_params(301, input_size, hidden, dtype=torch.float64)
    leaves = [t.clone().requires_grad_() for t in (x, h, c, *params)]
    h_new, c_new = _cell(module, *leaves)
    expect(h_new.requires_grad and c_new.requires_grad,
           "the outputs do not require grad although the inputs do; avoid .detach(), .data, "
           "numpy and torch.no_grad() inside lstm_cell")
    (h_new.sum() + 2 * c_new.sum()).backward()
    names = ["x", "h", "c", "w_ih", "w_hh", "b_ih", "b_hh"]
    missing = [n for n, t in zip(names, leaves) if t.grad is None or not bool(t.grad.abs().sum() > 0)]
    expect(not missing, f"no gradient reaches {', '.join(missing)}; every argument should take part in the computation")
    fn = get_function(module, "lstm_cell")
    inputs = tuple(t.detach().clone().requires_grad_() for t in leaves)
    expect(torch.autograd.gradcheck(lambda *a: fn(*a), inputs, raise_exception=False),
           "the gradients do not match finite differences of your own lstm_cell: something in it is not "
           "differentiable as written (an in-place change, a detached piece?)")


def _diagnose_gate_order(module):
    """Raise a gate-order hint if the cell fails on inputs where only the gate order matters."""
    batch, input_size, hidden = 3, 4, 5
    g = generator(400)
    x = torch.randn(batch, input_size, generator=g)
    h = torch.randn(batch, hidden, generator=g)
    c = torch.randn(batch, hidden, generator=g)
    w_ih, w_hh = torch.zeros(4 * hidden, input_size), torch.zeros(4 * hidden, hidden)
    closed, opened = -30.0, 30.0

    # Pattern 1: only the forget gate is open (g's pre-activation is 0). The cell is copied
    # unchanged and nothing is shown: c_new = c, h_new = 0.
    b_ih = torch.tensor([closed, opened, 0.0, closed]).repeat_interleave(hidden)  # blocks i, f, g, o
    h_new, c_new = _cell(module, x, h, c, w_ih, w_hh, b_ih, torch.zeros(4 * hidden))
    expect(max_diff(c_new, c) < 1e-6 and max_diff(h_new, torch.zeros_like(h)) < 1e-6,
           "with only the forget gate open (block 2 of 4 in the weights) the cell should pass through "
           "unchanged and h_new should be 0; are your gate blocks in the order i, f, g, o?")

    # Pattern 2: input and output gates open, forget gate closed, candidate driven by b_hh.
    b_ih = torch.tensor([opened, closed, 0.0, opened]).repeat_interleave(hidden)
    b_hh = torch.tensor([0.0, 0.0, 0.7, 0.0]).repeat_interleave(hidden)
    h_new, c_new = _cell(module, x, h, c, w_ih, w_hh, b_ih, b_hh)
    want_c = torch.full_like(c, math.tanh(0.7))
    expect(max_diff(c_new, want_c) < 1e-6 and max_diff(h_new, torch.tanh(want_c)) < 1e-6,
           "with the forget gate closed and the input/output gates open, the old cell should be "
           "replaced by the candidate; check the gate order and that both biases are added")


# ----------------------------------------------------------------------------- run_lstm


def _sequence(seed: int, batch: int, time: int, input_size: int, hidden: int):
    g = generator(seed)
    x = torch.randn(batch, time, input_size, generator=g)  # (batch, time, input)
    h0 = torch.randn(batch, hidden, generator=g)  # (batch, hidden)
    c0 = torch.randn(batch, hidden, generator=g)
    return x, h0, c0


@check("run_lstm outputs match torch.nn.LSTM(batch_first=True)", points=2)
def run_lstm_outputs(module):
    for seed, (batch, time, input_size, hidden) in enumerate([(3, 7, 6, 5), (2, 12, 3, 8)]):
        lstm = _nn_lstm(500 + seed, input_size, hidden)
        x, h0, c0 = _sequence(600 + seed, batch, time, input_size, hidden)
        outputs, _, _ = _run(module, lstm, x, h0, c0)
        ref, _, _ = _reference_run(lstm, x, h0, c0)
        if max_diff(outputs, ref) < 1e-5:
            continue
        if max_diff(outputs.reshape(time, batch, hidden), ref.transpose(0, 1)) < 1e-5:
            raise CheckFailed("the right numbers in the wrong places: your outputs are laid out time-major and "
                              "then reshaped; a reshape does not move entries, stack the steps along dim 1")
        zero_start, _, _ = _reference_run(lstm, x, torch.zeros_like(h0), torch.zeros_like(c0))
        expect(max_diff(outputs[:, 0], zero_start[:, 0]) > 1e-5,
               "the first step matches a run started from zeros: start the loop from h0 and c0")
        expect(max_diff(outputs[:, 0], ref[:, 0]) < 1e-5,
               "the first time step is already wrong: x[:, 0] with (h0, c0) gives it")
        expect(max_diff(outputs, ref) < 1e-5,
               "the first step is right but later ones are not; feed each step the state returned "
               "by the previous one, and stack the hidden states along dim 1 in time order")


@check("run_lstm final state (h_T, c_T) matches torch.nn.LSTM")
def run_lstm_final_state(module):
    batch, time, input_size, hidden = 4, 9, 5, 6
    lstm = _nn_lstm(700, input_size, hidden)
    x, h0, c0 = _sequence(701, batch, time, input_size, hidden)
    outputs, h_T, c_T = _run(module, lstm, x, h0, c0)
    _, h_ref, c_ref = _reference_run(lstm, x, h0, c0)
    after = " (if the outputs check fails too, fix that first)"
    expect(max_diff(h_T, h_ref) < 1e-5, "h_T should be the hidden state after the last time step" + after)
    expect(max_diff(c_T, c_ref) < 1e-5, "c_T should be the cell after the last time step" + after)


@check("run_lstm handles one step and one sequence, and leaves h0/c0 untouched")
def run_lstm_edge_cases(module):
    for seed, (batch, time, input_size, hidden) in enumerate([(1, 1, 3, 2), (1, 6, 4, 4), (5, 1, 2, 3)]):
        lstm = _nn_lstm(800 + seed, input_size, hidden)
        x, h0, c0 = _sequence(900 + seed, batch, time, input_size, hidden)
        saved = x.clone(), h0.clone(), c0.clone()
        ref, h_ref, c_ref = _reference_run(lstm, x, h0, c0)
        outputs, h_T, c_T = _run(module, lstm, x, h0, c0, copy_inputs=False)
        expect(all(torch.equal(a, b) for a, b in zip((x, h0, c0), saved)),
               "your run_lstm modified x, h0 or c0 in place; build new tensors instead")
        expect(max(max_diff(outputs, ref), max_diff(h_T, h_ref), max_diff(c_T, c_ref)) < 1e-5,
               f"wrong result for batch={batch}, time={time}; if the other run_lstm checks pass, "
               "look for dimensions of size 1 being squeezed away or a loop that skips a step")


@check("run_lstm calls your lstm_cell once per time step")
def run_lstm_uses_cell(module):
    fn = get_function(module, "run_lstm")
    original = getattr(module, "lstm_cell", None)
    calls = []

    def counting_cell(*args, **kwargs):
        calls.append(1)
        return lstm_cell_step(*args, **kwargs)

    batch, time, input_size, hidden = 2, 5, 3, 4
    lstm = _nn_lstm(1000, input_size, hidden)
    x, h0, c0 = _sequence(1001, batch, time, input_size, hidden)
    module.lstm_cell = counting_cell
    try:
        _run_with_cell(fn, lstm, x, h0, c0)
    finally:
        module.lstm_cell = original
    expect(len(calls) == time,
           f"lstm_cell was called {len(calls)} times for a sequence of {time} steps; "
           "write the loop over time yourself and call lstm_cell at every step")


CHECKS = [
    perplexity_matches_reference,
    perplexity_returns_float,
    perplexity_ignores_padding,
    perplexity_single_position,
    perplexity_uniform,
    perplexity_large_logits,
    lstm_cell_matches_reference,
    lstm_cell_gradients,
    run_lstm_outputs,
    run_lstm_final_state,
    run_lstm_edge_cases,
    run_lstm_uses_cell,
]
