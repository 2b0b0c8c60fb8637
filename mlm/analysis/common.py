"""What the analyses of every memory share: one sentence through a model, and the zero slot.

Chapters 02-04 probe a trained model on a single sentence: the inputs are ``<bos> w1 .. wn``,
the targets ``w1 .. wn <eos>``, and row t of the head's attention is the distribution used to
predict target t. :func:`run_sentence` does that forward pass once for every kind of head;
each analysis module then reads the weights its own way.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class SentenceRun:
    """One tokenized sentence through a language model (batch of one)."""

    inputs: list[str]  # "<bos>" and the words as the vocabulary encodes them (unknown words -> <unk>)
    targets: list[str]  # the words and "<eos>"
    target_ids: list[int]
    logits: torch.Tensor  # (time, vocab), float32
    attention: torch.Tensor | None  # (time, slots) as the head returns it, on the CPU; None for the plain LSTM


@torch.no_grad()
def run_sentence(model, vocab, words: list[str], device=None) -> SentenceRun:
    """Run ``model`` in evaluation mode over ``<bos> words`` and keep its logits and attention."""
    device = device or next(model.parameters()).device
    model.eval()
    ids = vocab.encode(words)
    out = model(torch.tensor([[vocab.bos_id] + ids], device=device))
    attention = out.attention[0].cpu() if out.attention is not None else None
    return SentenceRun(inputs=["<bos>"] + [vocab.itos[i] for i in ids],
                       targets=[vocab.itos[i] for i in ids + [vocab.eos_id]],
                       target_ids=ids + [vocab.eos_id],
                       logits=out.logits[0].float(), attention=attention)


def top_words(vocab, scores: torch.Tensor, top: int) -> list[list[tuple[str, float]]]:
    """For each row of ``scores`` (time, vocab): the ``top`` words and their scores, best first."""
    values, ids = scores.topk(top, dim=-1)
    return [[(vocab.itos[int(i)], float(v)) for v, i in zip(values[t], ids[t])] for t in range(scores.size(0))]


def drop_zero_slot(weights: torch.Tensor) -> torch.Tensor:
    """Weights ``(..., time, slots)`` of a sentence attention without the official code's all-zero
    first slot (``model.attention_zero_slot``): with it there is one slot more than time steps."""
    return weights[..., 1:] if weights.size(-1) != weights.size(-2) else weights
