"""Attention over the history (chapters 02 and 03): which earlier outputs does a head read?

Salton et al.'s Attentive LM attends over every earlier output of the sentence
(:func:`attention_stats`, :func:`probe_sentence`); Daniluk et al.'s heads over a window of
the last L outputs (:func:`window_attention_profile`, the paper's Figure 3b; :func:`window_weights`, its
Figure 3a article by article).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from mlm.analysis.common import drop_zero_slot, run_sentence, top_words
from mlm.data.batching import Batches
from mlm.evaluation import evaluation_pass


@dataclass
class AttentionStats:
    """Averages over every scored position of a data set, by position in the sentence."""

    entropy_ratio: list[float]  # [t] mean H(a_t) / log(#slots) at step t (1 = uniform), t >= 2 slots
    weight_by_distance: list[float]  # [d] mean weight on the slot d steps back (d = 1 is the previous step)
    count_by_position: list[int]  # scored positions seen at each step t
    uniform_by_distance: list[float]  # [d] what weight_by_distance would be if every step attended uniformly


@torch.no_grad()
def attention_stats(model, batches: Batches, max_len: int = 35, device=None) -> AttentionStats:
    """How spread out is the attention? Entropy relative to uniform, and weight by distance.

    For step t (0-based) with n = number of real memory slots, the normalised entropy is
    H(a_t) / log n, 1 for a uniform distribution and 0 when one slot takes all the weight.
    """
    entropy_sum = torch.zeros(max_len, dtype=torch.float64)
    position_count = torch.zeros(max_len, dtype=torch.float64)
    distance_sum = torch.zeros(max_len, dtype=torch.float64)
    distance_count = torch.zeros(max_len, dtype=torch.float64)
    uniform_sum = torch.zeros(max_len, dtype=torch.float64)  # sum of 1 / #slots over the same (row, t, i)
    for batch, _, out in evaluation_pass(model, batches, device):
        weights = drop_zero_slot(out.attention.double().cpu())  # (batch, time, slots)
        mask = batch.mask
        time = min(weights.size(1), max_len)
        slots = mask[:, None, :].expand(-1, weights.size(1), -1).tril(-1).sum(-1)  # (batch, time)
        plogp = torch.where(weights > 0, weights * weights.clamp_min(1e-300).log(), torch.zeros_like(weights))
        entropy = -plogp.sum(-1)  # (batch, time)
        for t in range(2, time):
            rows = mask[:, t] & (slots[:, t] >= 2)
            if rows.any():
                entropy_sum[t] += (entropy[rows, t] / slots[rows, t].double().log()).sum()
                position_count[t] += rows.sum()
        for t in range(1, time):
            rows = mask[:, t]
            if not rows.any():
                continue
            uniform = 1.0 / slots[rows, t].double().clamp_min(1)  # uniform weight over this step's slots
            for i in range(t):
                distance_sum[t - i] += weights[rows, t, i].sum()
                distance_count[t - i] += rows.sum()
                uniform_sum[t - i] += uniform.sum()
    ratio = (entropy_sum / position_count.clamp_min(1)).tolist()
    by_distance = (distance_sum / distance_count.clamp_min(1)).tolist()
    uniform_by_distance = (uniform_sum / distance_count.clamp_min(1)).tolist()
    return AttentionStats(ratio, by_distance, position_count.long().tolist(), uniform_by_distance)


def probe_sentence(model, vocab, words: list[str], top: int = 5, device=None) -> dict:
    """Attention weights and top predictions of a sentence model for one tokenized sentence.

    The inputs are ``<bos> w1 .. wn``; row t of ``attention`` is the distribution used to
    predict the word after input t, over the inputs before it.
    """
    run = run_sentence(model, vocab, words, device)
    probs = torch.softmax(run.logits, dim=-1)  # (time, vocab)
    target_prob = [float(probs[t, target]) for t, target in enumerate(run.target_ids)]
    return {
        "inputs": run.inputs,
        "targets": run.targets,
        "attention": None if run.attention is None else drop_zero_slot(run.attention),
        "target_prob": target_prob,
        "top": top_words(vocab, probs, top),
        "log_prob": float(sum(math.log(max(p, 1e-300)) for p in target_prob)),
    }


@torch.no_grad()
def window_attention_profile(model, batches: Batches, device=None) -> dict:
    """Daniluk et al.'s Figure 3b: the mean attention weight on each slot of the window.

    Runs ``model`` over ``batches`` exactly as evaluation does (state and window carried between
    segments, reset between documents) and averages the weights ``(batch, time, L)`` over every
    scored position whose window is full, so each average is over the same positions. Slot
    ``L - 1`` is the previous step and slot 0 the oldest. Also returns the share of the weight
    that falls more than 5 steps back (the paper's "only the previous five outputs" observation).
    """
    total, count = None, 0
    for _, batch, out in evaluation_pass(model, batches, device):
        weights = out.attention.double()  # (batch, time, L)
        full = batch.mask & (weights.sum(-1) > 0.5) & (weights > 0).all(-1)  # scored, every slot filled
        if total is None:
            total = torch.zeros(weights.size(-1), dtype=torch.float64, device=weights.device)
        total += weights[full].sum(0)
        count += int(full.sum())
    profile = (total / max(count, 1)).cpu()
    window = profile.numel()
    beyond_5 = float(profile[: max(window - 5, 0)].sum())
    return {"weight_by_slot": profile.tolist(), "positions": count, "mass_beyond_5": beyond_5}


@torch.no_grad()
def window_weights(model, batches: Batches, device=None) -> list[dict]:
    """The weights of a window head on every document of ``batches``, as evaluation computes them (the LSTM
    state and the window carried from segment to segment, reset where a document starts; Daniluk et al.'s
    Figure 3a). One dict per document, in the evaluation's order: its ``inputs`` and ``targets`` (token ids,
    the padding after its end left out) and ``alpha``, a ``(steps, L)`` tensor whose row t holds the weights
    with which ``targets[t]`` is predicted, slot j (oldest first) reading the output of input t - L + j."""
    documents, current = [], {}
    for batch, _, out in evaluation_pass(model, batches, device):
        if out.attention is None:
            raise ValueError("window_weights() needs a model with a window head (model.head = 'window')")
        for row in range(batch.inputs.size(0)):
            if batch.reset[row]:  # this row starts a new document here
                current[row] = {"inputs": [], "targets": [], "alpha": []}
                documents.append(current[row])
            if row not in current:
                raise ValueError("the first batch must start a document in every row (reset), as evaluation's do")
            real = batch.mask[row]  # (T,): the padding after a document's end is not scored
            current[row]["inputs"] += batch.inputs[row, real].tolist()
            current[row]["targets"] += batch.targets[row, real].tolist()
            current[row]["alpha"].append(out.attention[row, real.to(out.attention.device)].double().cpu())
    return [{**d, "alpha": torch.cat(d["alpha"])} for d in documents if d["inputs"]]
