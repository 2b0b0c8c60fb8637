"""Checks for assignment 01: ``zaremba_forward``, ``detach_state``, ``sequence_loss`` and ``tie_weights``.

References: ``torch.nn.LSTM`` (a stack without dropout), :func:`mlm.models.lstm_cell.lstm_cell_step`,
:func:`mlm.evaluation.masked_nll` and :func:`mlm.evaluation.detach_state`, and the loss of
``mlm.training`` (``train.loss_reduction``).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from mlm.evaluation import detach_state, masked_nll
from mlm.models.lstm_cell import lstm_cell_step

from exercises.checks.common import (CheckFailed, as_float, check, expect, expect_pair, expect_tensor, generator,
                                      get_function, hidden_offset, max_diff)

BANNED = {name: "write it with the functions of the assignment" for name in
          ("LSTM", "LSTMCell", "RNN", "GRU", "lstm", "cross_entropy", "linear_cross_entropy", "nll_loss",
           "CrossEntropyLoss", "NLLLoss")}

# ----------------------------------------------------------------------------- helpers


def _stack(seed: int, layers: int, embed: int, hidden: int) -> nn.LSTM:
    """An ``nn.LSTM`` stack (no dropout) with weights from a private seed."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed + hidden_offset())
        return nn.LSTM(embed, hidden, num_layers=layers, batch_first=True).double()


def _layers(lstm: nn.LSTM) -> list[tuple]:
    return [tuple(getattr(lstm, f"{name}_l{k}").detach().clone() for name in ("weight_ih", "weight_hh", "bias_ih",
                                                                              "bias_hh"))
            for k in range(lstm.num_layers)]


def _inputs(seed: int, batch: int, time: int, embed: int, layers: int, hidden: int):
    g = generator(seed)
    x = torch.randn(batch, time, embed, generator=g, dtype=torch.float64)
    state = tuple(torch.randn(layers, batch, hidden, generator=g, dtype=torch.float64) for _ in range(2))
    return x, state


class MarkingDrop:
    """A deterministic stand-in for dropout: call k multiplies by a fixed 0/2 mask of its own; calls are recorded."""

    def __init__(self, seed: int):
        self.seed, self.shapes = seed, []

    def __call__(self, t: torch.Tensor) -> torch.Tensor:
        g = generator(self.seed + len(self.shapes))
        self.shapes.append(tuple(t.shape))
        mask = (torch.rand(t.shape, generator=g) > 0.3).to(t.dtype) / 0.7
        return t * mask


def _reference_forward(x, state, layers, drop):
    inputs, hs, cs = drop(x), [], []
    for k, params in enumerate(layers):
        h, c, outs = state[0][k], state[1][k], []
        for t in range(inputs.size(1)):
            h, c = lstm_cell_step(inputs[:, t], h, c, *params)
            outs.append(h)
        inputs = drop(torch.stack(outs, 1))
        hs.append(h)
        cs.append(c)
    return inputs, torch.stack(hs), torch.stack(cs)


def _forward(module, x, state, layers, drop):
    fn = get_function(module, "zaremba_forward")
    output, final = expect_pair(fn(x, state, layers, lstm_cell_step, drop), "zaremba_forward")
    h_T, c_T = expect_pair(final, "zaremba_forward's final state")
    batch, time, _ = x.shape
    hidden = state[0].shape[-1]
    expect_tensor(output, (batch, time, hidden), "output")
    expect_tensor(h_T, tuple(state[0].shape), "h_T")
    expect_tensor(c_T, tuple(state[1].shape), "c_T")
    return output, h_T, c_T


# ----------------------------------------------------------------------------- zaremba_forward


@check("zaremba_forward without dropout matches a torch.nn.LSTM stack (outputs and final state)", points=3)
def forward_matches_lstm(module):
    for seed, (batch, time, embed, layers, hidden) in enumerate([(3, 6, 4, 2, 5), (2, 4, 3, 3, 4), (1, 1, 2, 1, 3)]):
        lstm = _stack(10 + seed, layers, embed, hidden)
        x, state = _inputs(20 + seed, batch, time, embed, layers, hidden)
        output, h_T, c_T = _forward(module, x, state, _layers(lstm), lambda t: t)
        with torch.no_grad():
            ref, (h_ref, c_ref) = lstm(x, state)
        if max_diff(output, ref) > 1e-9 and layers > 1:
            lower = nn.LSTM(embed, hidden, batch_first=True).double()
            with torch.no_grad():
                for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
                    getattr(lower, f"{name}_l0").copy_(getattr(lstm, f"{name}_l0"))
                first, _ = lower(x, (state[0][:1], state[1][:1]))
            if max_diff(output, first) < 1e-9:
                raise CheckFailed("the output is the first layer's: feed each layer's output sequence to the next layer")
        expect(max_diff(output, ref) < 1e-9,
               f"the output differs from nn.LSTM with {layers} layer(s); layer k starts from state[0][k], state[1][k] "
               "and reads the output sequence of layer k-1")
        expect(max_diff(h_T, ref.new_tensor(h_ref)) < 1e-9 and max_diff(c_T, c_ref) < 1e-9,
               "the outputs are right but (h_T, c_T) is not: stack every layer's last h and c, layer 0 first")


@check("zaremba_forward calls drop once on the input and once on each layer's output sequence", points=2)
def forward_drop_calls(module):
    batch, time, embed, layers, hidden = 2, 5, 3, 3, 4
    x, state = _inputs(30, batch, time, embed, layers, hidden)
    drop = MarkingDrop(31)
    _forward(module, x, state, _layers(_stack(32, layers, embed, hidden)), drop)
    want = [(batch, time, embed)] + [(batch, time, hidden)] * layers
    if any(len(shape) == 2 for shape in drop.shapes):
        raise CheckFailed(f"drop was called on (batch, features) tensors {sorted(set(drop.shapes))}: one time step or a "
                          "state at a time; call it once per whole sequence, and never on h or c")
    expect(drop.shapes == want, f"drop was called on shapes {drop.shapes}, expected {want}: the embedded input, then "
           "the output of every layer (the top one included, before the softmax)")


@check("zaremba_forward drops the vertical connections only, never the recurrent state", points=3,
       requires="forward_drop_calls")
def forward_vertical_only(module):
    batch, time, embed, layers, hidden = 3, 6, 4, 2, 5
    x, state = _inputs(40, batch, time, embed, layers, hidden)
    params = _layers(_stack(41, layers, embed, hidden))
    output, h_T, c_T = _forward(module, x, state, params, MarkingDrop(42))
    ref, h_ref, c_ref = _reference_forward(x, state, params, MarkingDrop(42))
    expect(max_diff(output, ref) < 1e-9, "with dropout the output differs from applying each mask to the whole "
           "input, to each layer's whole output sequence and to the top output, in that order")
    expect(max_diff(h_T, h_ref) < 1e-9 and max_diff(c_T, c_ref) < 1e-9,
           "the returned state must be the undropped last h and c of every layer: the next window starts from it")


# ----------------------------------------------------------------------------- detach_state


@check("detach_state keeps the values and stops the gradient at the window boundary", points=2)
def detach_cuts_gradient(module):
    w = torch.randn(4, 4, dtype=torch.float64, requires_grad=True)
    h, c = torch.randn(2, 3, 4, dtype=torch.float64) @ w, torch.randn(2, 3, 4, dtype=torch.float64) @ w
    new = expect_pair(get_function(module, "detach_state")((h, c)), "detach_state")
    want = detach_state((h, c))
    for got, ref, name in zip(new, want, "hc"):
        expect(isinstance(got, torch.Tensor) and got.shape == ref.shape and torch.equal(got, ref),
               f"the new {name} should hold the same values, same shape")
        expect(not got.requires_grad, f"the new {name} still requires grad: the next window would backpropagate "
               "into this one")


@check("detach_state leaves the current window's state attached to its graph", points=1,
       requires="detach_cuts_gradient")
def detach_leaves_input(module):
    w = torch.randn(4, 4, requires_grad=True)
    h, c = torch.randn(3, 4) @ w, torch.randn(3, 4) @ w
    get_function(module, "detach_state", in_place=True)((h, c))
    expect(h.requires_grad and c.requires_grad and h.grad_fn is not None,
           "the state passed in lost its graph (an in-place detach_()?): this window's backward pass still needs it")


# ----------------------------------------------------------------------------- sequence_loss


def _loss_inputs(seed: int, batch=4, time=7, vocab=11, scale=3.0):
    g = generator(seed)
    logits = torch.randn(batch, time, vocab, generator=g, dtype=torch.float64) * scale
    return logits, torch.randint(vocab, (batch, time), generator=g)


def _loss(module, logits, targets, reduction):
    value = get_function(module, "sequence_loss")(logits, targets, reduction)
    expect(isinstance(value, torch.Tensor) and value.dim() == 0,
           "sequence_loss should return a 0-dim tensor (keep it a tensor: the training loop calls backward on it)")
    return value


@check("sequence_loss 'token_mean' is the mean NLL per token", points=2)
def loss_token_mean(module):
    for seed in (1, 2):
        logits, targets = _loss_inputs(seed)
        got = as_float(_loss(module, logits, targets, "token_mean"), "the loss")
        want = masked_nll(logits, targets, torch.ones_like(targets, dtype=torch.bool)).item() / targets.numel()
        expect(math.isclose(got, want, rel_tol=1e-9), "differs from the NLL of the targets averaged over batch * time")


@check("sequence_loss 'sequence_sum' sums over time and averages over rows", points=2)
def loss_sequence_sum(module):
    logits, targets = _loss_inputs(3, batch=5, time=6)
    got = as_float(_loss(module, logits, targets, "sequence_sum"), "the loss")
    total = masked_nll(logits, targets, torch.ones_like(targets, dtype=torch.bool)).item()
    if math.isclose(got, total, rel_tol=1e-9):
        raise CheckFailed("you return the total NLL: divide it by the number of rows (batch)")
    if math.isclose(got, total / targets.numel(), rel_tol=1e-9):
        raise CheckFailed("this is the per-token mean; 'sequence_sum' divides the total by the rows only")
    expect(math.isclose(got, total / targets.shape[0], rel_tol=1e-9), "differs from total NLL / batch")


@check("sequence_loss is stable for large logits, lets gradients flow, and rejects an unknown reduction", points=1)
def loss_stable_and_strict(module):
    logits, targets = _loss_inputs(4, scale=1e4)
    logits.requires_grad_()
    value = _loss(module, logits, targets, "token_mean")
    expect(bool(torch.isfinite(value)), "the loss is not finite for logits of size 1e4: use log_softmax")
    (grad,) = torch.autograd.grad(value, logits)
    expect(bool(torch.isfinite(grad).all()), "the gradient is not finite")
    # a loss, whatever its reduction's exact value: lowering the score of a target raises it (a constant does not)
    lowered = logits.detach().clone()
    lowered[0, 0, targets[0, 0]] -= 1e3
    expect(float(_loss(module, lowered, targets, "token_mean")) > float(value),
           "the loss does not rise when the score of a target is lowered: it should be the targets' negative "
           "log-likelihood")
    try:
        get_function(module, "sequence_loss")(logits.detach(), targets, "mean")
    except ValueError:
        return
    raise CheckFailed("reduction='mean' should raise a ValueError (a typo must not silently pick a loss)")


# ----------------------------------------------------------------------------- tie_weights


@check("tie_weights makes the decoder and the embedding share one parameter", points=2)
def tie_shares_parameter(module):
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(50 + hidden_offset())
        embedding, decoder = nn.Embedding(9, 4), nn.Linear(4, 9)
    bias = decoder.bias
    get_function(module, "tie_weights", in_place=True)(embedding, decoder)
    expect(decoder.weight is embedding.weight, "decoder.weight should be the very same Parameter as embedding.weight "
           "(copying the values is not tying: the two would drift apart after one update)")
    expect(decoder.bias is bias, "the decoder keeps its own bias")
    model = nn.ModuleList([embedding, decoder])
    expect(sum(p.numel() for p in model.parameters()) == 9 * 4 + 9, "the model should count the tied matrix once")
    loss = decoder(embedding(torch.tensor([1, 2]))).logsumexp(-1).sum()
    loss.backward()
    expect(embedding.weight.grad is not None and bool(embedding.weight.grad[5].abs().sum() > 0),
           "the output side's gradient should reach the shared matrix (row 5 is never an input here)")


@check("tie_weights refuses matrices of different shapes", points=1, requires="tie_shares_parameter")
def tie_shape_error(module):
    try:
        get_function(module, "tie_weights")(nn.Embedding(9, 4), nn.Linear(5, 9))
    except ValueError:
        return
    raise CheckFailed("a (9, 4) embedding and a decoder reading 5 features cannot be tied; raise a ValueError")


CHECKS = [
    forward_matches_lstm,
    forward_drop_calls,
    forward_vertical_only,
    detach_cuts_gradient,
    detach_leaves_input,
    loss_token_mean,
    loss_sequence_sum,
    loss_stable_and_strict,
    tie_shares_parameter,
    tie_shape_error,
]
