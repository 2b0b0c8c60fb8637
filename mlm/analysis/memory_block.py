"""Looking inside a Recurrent Memory Network (Tran et al. 2016, section 5).

The Memory Block's attention at step t is a distribution over the memory slots
x_{t-n+1} .. x_t (the current word in the last slot). These helpers collect it over a data
set: the average weight per memory position (the paper's Figure 3), the attention of randomly
sampled words (Figure 4), the cases where the attention lands on a distant word, with the
model's top predictions (Figure 5), and the training-set frequency of the (attended word,
predicted word) pairs by distance (Table 3).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import torch

from mlm.analysis.common import run_sentence, top_words
from mlm.data.batching import Batches
from mlm.evaluation import evaluation_pass


@dataclass
class MemoryAttention:
    """Every scored position of a data set whose memory is full (t >= n-1)."""

    weights: torch.Tensor  # (positions, n): attention per slot, the current word last
    windows: torch.Tensor  # (positions, n): the word ids in memory
    targets: torch.Tensor  # (positions,): the word to predict
    log_probs: torch.Tensor  # (positions, top): log-probabilities of the top predictions
    top_ids: torch.Tensor  # (positions, top): their ids
    target_log_prob: torch.Tensor  # (positions,)


@torch.no_grad()
def collect_memory_attention(model, batches: Batches, top: int = 5, device=None) -> MemoryAttention:
    """Run ``model`` (an RM/RMR language model) over ``batches`` and keep every full-memory position."""
    from mlm.models.recurrent_memory import memory_window

    n = model.head.block.memory_size
    keep = {k: [] for k in ("weights", "windows", "targets", "log_probs", "top_ids", "target_log_prob")}
    for _, batch, out in evaluation_pass(model, batches, device):
        log_probs = torch.log_softmax(out.logits.float(), dim=-1)  # (batch, time, vocab)
        ids, present = memory_window(batch.inputs, batch.mask, n)  # (batch, time, n)
        full = batch.mask & present.all(-1)  # (batch, time): a scored step with n words in memory
        top_lp, top_i = log_probs[full].topk(top, dim=-1)
        keep["weights"].append(out.attention[full].cpu())
        keep["windows"].append(ids[full].cpu())
        keep["targets"].append(batch.targets[full].cpu())
        keep["log_probs"].append(top_lp.cpu())
        keep["top_ids"].append(top_i.cpu())
        keep["target_log_prob"].append(log_probs[full].gather(-1, batch.targets[full][:, None]).squeeze(-1).cpu())
    return MemoryAttention(**{k: torch.cat(v) for k, v in keep.items()})


def average_by_position(collected: MemoryAttention) -> list[float]:
    """Mean weight of each memory position, oldest (-n) first, the current word (-1) last (Figure 3)."""
    return collected.weights.double().mean(0).tolist()


def sample_words(collected: MemoryAttention, count: int = 100, seed: int = 0) -> torch.Tensor:
    """Indices of ``count`` randomly sampled positions (Figure 4 shows their attention side by side)."""
    g = torch.Generator().manual_seed(seed)
    return torch.randperm(len(collected.targets), generator=g)[:count]


def distant_examples(collected: MemoryAttention, vocab, min_distance: int = 7, count: int = 3,
                     min_weight: float = 0.3) -> list[dict]:
    """Positions whose most attended word is at least ``min_distance`` words back (Figure 5).

    Distance 1 is the current word, so ``min_distance=7`` means more than six positions to the
    left of the word to predict, as in section 5.1. Examples are ranked by the weight on that
    word; each holds the memory words, the attended one, the target and the top predictions.
    """
    n = collected.weights.size(1)
    best_w, best_slot = collected.weights.max(-1)  # (positions,)
    distance = n - best_slot  # 1 = the current word
    candidates = ((distance >= min_distance) & (best_w >= min_weight)).nonzero().squeeze(-1)
    candidates = candidates[best_w[candidates].argsort(descending=True)]
    examples, seen = [], set()
    for i in candidates.tolist():
        key = (int(collected.windows[i, best_slot[i]]), int(collected.targets[i]))
        if key in seen:  # one example per (attended word, target) pair
            continue
        seen.add(key)
        examples.append({
            "memory": [vocab.itos[int(w)] for w in collected.windows[i]],
            "weights": collected.weights[i].tolist(),
            "attended": vocab.itos[key[0]], "distance": int(distance[i]), "weight": float(best_w[i]),
            "target": vocab.itos[key[1]], "target_log_prob": float(collected.target_log_prob[i]),
            "top": [(vocab.itos[int(w)], float(lp)) for w, lp in zip(collected.top_ids[i], collected.log_probs[i])],
        })
        if len(examples) == count:
            break
    return examples


def pair_frequency_by_distance(collected: MemoryAttention, train_lines, min_distance: int = 7,
                               window: int | None = None) -> dict[int, tuple[float, int]]:
    """Table 3: for positions attending most to a word ``d >= min_distance`` back, the mean number of
    times (attended word, target) occur together in the training sentences, d positions apart.

    Returns {d: (mean frequency, number of positions)}.
    """
    n = collected.weights.size(1)
    window = window or n
    best_slot = collected.weights.argmax(-1)
    distance = n - best_slot  # 1 = the current word, which is 1 word before the target
    wanted: dict[int, list[tuple[int, int]]] = {}
    for i in (distance >= min_distance).nonzero().squeeze(-1).tolist():
        d = int(distance[i])
        wanted.setdefault(d, []).append((int(collected.windows[i, best_slot[i]]), int(collected.targets[i])))
    pairs = {(a, b, d) for d, items in wanted.items() for a, b in items}
    counts: Counter = Counter()
    if pairs:
        for line in train_lines:  # ids of one training sentence
            for j, b in enumerate(line):
                for d in range(min_distance, window + 1):
                    if j - d >= 0 and (line[j - d], b, d) in pairs:
                        counts[line[j - d], b, d] += 1
    return {d: (sum(counts[a, b, d] for a, b in items) / len(items), len(items)) for d, items in sorted(wanted.items())}


def probe_memory_sentence(model, vocab, words: list[str], top: int = 5, device=None) -> dict:
    """Attention of an RM/RMR model over the inputs of one sentence, and its top predictions.

    ``attention`` is (predictions, inputs): row t spreads over inputs t-n+1 .. t (the current
    word included); inputs outside the window get 0.
    """
    run = run_sentence(model, vocab, words, device)
    log_probs = torch.log_softmax(run.logits, dim=-1)  # (time, vocab)
    time, n = run.attention.shape
    attention = torch.zeros(time, time)
    for t in range(time):
        for j in range(n):
            position = t - (n - 1) + j
            if position >= 0:
                attention[t, position] = run.attention[t, j]
    target_log_prob = [float(log_probs[t, target]) for t, target in enumerate(run.target_ids)]
    return {
        "inputs": run.inputs,
        "targets": run.targets,
        "attention": attention,
        "target_log_prob": target_log_prob,
        "top": top_words(vocab, log_probs, top),
        "log_prob": float(sum(target_log_prob)),
    }


def perplexity_of(collected: MemoryAttention) -> float:
    """Perplexity over the collected (full-memory) positions only; a sanity number for the analyses."""
    return math.exp(-float(collected.target_log_prob.double().mean()))
