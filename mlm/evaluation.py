"""Perplexity, exactly as docs/design.md, section 4 defines it.

    perplexity = exp( total negative log-likelihood / number of scored targets )

Scored targets are the positions where ``Batch.mask`` is True: every word and every
``<eos>``, never padding. The state is carried between batches for the stream and
document protocols, exactly as in training.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from mlm.data.batching import Batches


@dataclass
class EvalResult:
    nll: float  # total negative log-likelihood (nats)
    tokens: int  # number of scored targets

    @property
    def loss(self) -> float:
        return self.nll / max(self.tokens, 1)

    @property
    def perplexity(self) -> float:
        return math.exp(self.loss)


def masked_nll(logits: torch.Tensor, targets: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Summed negative log-likelihood over the scored positions (a 0-dim tensor).

    Padded positions are multiplied by zero, so models must give finite logits there (a
    memory head whose window is empty returns zeros, never the NaN of a softmax over nothing).
    """
    nll = F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1), reduction="none")
    return (nll * mask.reshape(-1).to(nll.dtype)).sum()


def detach_state(state):
    if state is None:
        return None
    if isinstance(state, torch.Tensor):
        return state.detach()
    if isinstance(state, (tuple, list)):
        return type(state)(detach_state(s) for s in state)
    if isinstance(state, dict):
        return {k: detach_state(v) for k, v in state.items()}
    return state


@torch.no_grad()
def evaluation_pass(model, batches: Batches, device=None):
    """Yield ``(batch, on_device, output)`` for every batch, the model in evaluation mode (dropout off).

    The one evaluation loop of the book: the LSTM state and the head's memory are carried from batch
    to batch when the protocol carries them (``batches.carry_state``) and reset where a batch says so.
    ``batch`` is the batch as given (its token count was made on the host: reading it costs no device
    sync), ``on_device`` the same on the model's device; the model's training mode is restored at the end.
    """
    device = device or next(model.parameters()).device
    was_training = model.training
    model.eval()
    state = memory = None
    try:
        for batch in batches:
            moved = batch.to(device)
            out = model(moved.inputs, state=state, reset=moved.reset, mask=moved.mask, memory=memory)
            if batches.carry_state:
                state, memory = out.state, out.memory
            yield batch, moved, out
    finally:
        model.train(was_training)


@torch.no_grad()
def evaluate(model, batches: Batches, device=None) -> EvalResult:
    """Total NLL and token count of ``model`` on ``batches`` (dropout off)."""
    device = device or next(model.parameters()).device
    total = torch.zeros((), dtype=torch.float64, device=device)
    tokens = 0
    for batch, moved, out in evaluation_pass(model, batches, device):
        tokens += batch.num_tokens  # counted when the batch was made: no device sync
        total += masked_nll(out.logits.float(), moved.targets, moved.mask).double()
    return EvalResult(float(total), tokens)
