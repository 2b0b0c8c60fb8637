"""Prediction by sampling (Kong et al. section 5.4): score a split with S draws W_s ~ q(W).

Two ways to combine the draws, chosen with ``average``:

    "probability"     p(y_t | y_<t) = 1/S sum_s p(y_t | y_<t; W_s)        (the Monte Carlo predictive)
    "log-likelihood"  log p(y_t | y_<t) := 1/S sum_s log p(y_t | y_<t; W_s)

Section 5.4 of the paper says it averages the log-likelihood of twenty samples. By Jensen's
inequality that average is never above the log of the averaged probability, so "log-likelihood"
gives the higher (worse) perplexity of the two; "probability" is the proper predictive distribution
of the Bayesian model and the default here.

Each draw is a whole model run over the split: S recurrent states are carried side by side, and
each batch row draws a fresh sample per segment, as in training (for data noising the inputs are
noised, for variational smoothing the embedding and output rows are drawn; dropout stays off).
"""

from __future__ import annotations

import math

import torch

from mlm.data.batching import Batches
from mlm.evaluation import EvalResult

AVERAGES = ("probability", "log-likelihood")


@torch.no_grad()
def evaluate_sampled(model, batches: Batches, samples: int = 20, device=None,
                     average: str = "probability", draw_outputs: bool = True) -> EvalResult:
    """Total NLL and token count over ``samples`` draws, averaged per token as ``average`` says
    ("probability" or "log-likelihood", the paper's section 5.4). ``draw_outputs=False``: variational
    smoothing draws its input rows only and keeps every output row at the mean of q (data noising draws
    no output row either way)."""
    if average not in AVERAGES:
        raise ValueError(f"average must be one of {', '.join(AVERAGES)}, got {average!r}")
    reg = getattr(model, "regularizer", None)
    if reg is None:
        raise ValueError("the model has no embedding regularizer to sample from; use mlm.evaluate")
    if samples < 1:
        raise ValueError(f"samples must be at least 1, got {samples}")
    device = device or next(model.parameters()).device
    was_training = model.training
    model.eval()
    reg.sampling = True
    kept_outputs = getattr(reg, "draw_outputs", None)
    if kept_outputs is not None:
        reg.draw_outputs = draw_outputs
    total = torch.zeros((), dtype=torch.float64, device=device)
    tokens = 0
    states = [None] * samples
    try:
        for batch in batches:
            tokens += batch.num_tokens
            batch = batch.to(device)
            log_probs = []
            for s in range(samples):
                inputs, targets = reg.prepare(batch.inputs, batch.targets, batch.mask)
                out = model(inputs, state=states[s], reset=batch.reset, mask=batch.mask)
                lp = torch.log_softmax(out.logits.double(), -1).gather(-1, batch.targets[..., None])[..., 0]
                log_probs.append(lp)  # (batch, time)
                if batches.carry_state:
                    states[s] = out.state
            stacked = torch.stack(log_probs)  # (samples, batch, time)
            if average == "probability":
                mean_lp = torch.logsumexp(stacked, 0) - math.log(samples)  # (batch, time): log mean_s p_s
            else:
                mean_lp = stacked.mean(0)  # (batch, time): mean_s log p_s
            total -= (mean_lp * batch.mask).sum()
    finally:
        reg.sampling = False
        if kept_outputs is not None:
            reg.draw_outputs = kept_outputs
        model.train(was_training)
    return EvalResult(float(total), tokens)
