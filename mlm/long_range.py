"""Scoring the long-range task of :mod:`mlm.data.tasks` on its critical tokens, by distance d and by position.

Overall perplexity hides the few tokens that need memory, so a model is also scored on the critical
tokens alone: accuracy (argmax equals the target) and mean loss, per distance d, per position of the
critical token in its line, and per (d, position) cell, which separates memory reach from position. The model runs over
the split under a protocol exactly as :func:`mlm.evaluation.evaluate` runs it (state carried for the
stream and document protocols); :func:`count_scores` gives n-gram count models on the same tokens.

To know which batch position holds which corpus token under any protocol, the batches are built a
second time from lines of *token numbers* instead of word ids: every batcher lays lines out by their
lengths only, so position (b, r, t) of the number batches names the token at (b, r, t) of the real ones.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from mlm.analysis.common import drop_zero_slot, run_sentence
from mlm.data.batching import protocol_batches
from mlm.data.tasks import TaskCorpus
from mlm.evaluation import EvalResult, evaluation_pass


@dataclass
class CriticalScores:
    """Scores on the critical tokens, per distance, per position and in total, and the perplexity of all
    tokens. ``tokens`` keeps every critical token (its d, position, hit and loss) for finer tables."""

    by_distance: dict[int, tuple[float, float, int]]  # d -> (accuracy, mean loss in nats, count)
    overall: EvalResult | None = None  # every token of the split (None for count models)
    totals: dict = field(default_factory=dict)  # accuracy, loss and count over every critical token
    tokens: dict[str, list] = field(default_factory=dict)  # "d", "position", "correct", "loss": one entry each

    def to_json(self) -> dict:
        """``by_distance``, ``totals`` and ``tokens`` as stored in ``critical.json`` (:meth:`from_json` reads
        them back)."""
        return {"totals": self.totals, "tokens": self.tokens,
                "by_distance": {str(d): {"accuracy": a, "loss": l, "count": n}
                                for d, (a, l, n) in self.by_distance.items()}}

    @classmethod
    def from_json(cls, stored: dict) -> "CriticalScores":
        return cls({int(d): (v["accuracy"], v["loss"], v["count"]) for d, v in stored["by_distance"].items()},
                   None, stored["totals"], stored.get("tokens", {}))

    @property
    def accuracy(self) -> float:
        return self.totals["accuracy"]

    @property
    def loss(self) -> float:
        return self.totals["loss"]

    def accuracy_within(self, low: int = 0, high: int | None = None) -> float:
        """Accuracy over the critical tokens with ``low <= d <= high`` (each d weighted by its count)."""
        rows = [(acc, n) for d, (acc, _, n) in self.by_distance.items() if d >= low and (high is None or d <= high)]
        if not rows:
            raise ValueError(f"no critical token with {low} <= d <= {high}")
        return sum(acc * n for acc, n in rows) / sum(n for _, n in rows)

    def binned(self, width: int = 5, starts: list[int] | None = None) -> list[tuple[int, int, float, float, int]]:
        """(first d, last d, accuracy, loss, count) over bins of ``width`` distances (2-6, 7-11, ...), or, with
        ``starts``, over bins that begin at those distances (``[2, 4, 7]``: 2-3, 4-6, then 7 to the largest d),
        each bin's accuracy and loss weighted by the count of each d in it."""
        first, last = min(self.by_distance, default=0), max(self.by_distance, default=0)
        if starts is None:
            starts = list(range(first, last + 1, width))
            last = starts[-1] + width - 1 if starts else last
        elif list(starts) != sorted(set(starts)) or starts[0] > first:
            raise ValueError(f"bin starts {starts} must increase and begin at or below the smallest d ({first})")
        ends = [s - 1 for s in starts[1:]] + [last]
        bins: dict[int, list[float]] = {}
        for d, (accuracy, loss, count) in sorted(self.by_distance.items()):
            sums = bins.setdefault(max(i for i, s in enumerate(starts) if s <= d), [0.0, 0.0, 0])
            sums[0] += accuracy * count
            sums[1] += loss * count
            sums[2] += count
        return [(starts[b], ends[b], a / n, l / n, n) for b, (a, l, n) in sorted(bins.items())]

    def table(self, d_edges: list[int], position_edges: list[int]) -> list[list[tuple[float, int]]]:
        """Accuracy and count in each cell ``d_edges[i] <= d < d_edges[i + 1]``, ``position_edges[j] <=
        position < position_edges[j + 1]`` (rows: d, columns: position; NaN where a cell is empty). Reading
        a row at a fixed column compares distances at matched positions, and the other way round."""
        if not self.tokens:
            raise ValueError("these scores keep no per-token record (stored before positions were kept)")
        cells = [[[0, 0] for _ in position_edges[:-1]] for _ in d_edges[:-1]]
        for d, p, hit in zip(self.tokens["d"], self.tokens["position"], self.tokens["correct"]):
            i = next((i for i in range(len(d_edges) - 1) if d_edges[i] <= d < d_edges[i + 1]), None)
            j = next((j for j in range(len(position_edges) - 1) if position_edges[j] <= p < position_edges[j + 1]),
                     None)
            if i is not None and j is not None:
                cells[i][j][0] += hit
                cells[i][j][1] += 1
        return [[(h / n if n else math.nan, n) for h, n in row] for row in cells]

    def accuracy_in(self, d: tuple[int, int], position: tuple[int, int]) -> float:
        """Accuracy over the critical tokens with ``d[0] <= d < d[1]`` asked at ``position[0] <= position <
        position[1]`` (one cell of :meth:`table`; NaN where none is)."""
        return self.table(list(d), list(position))[0][0][0]

    def by_position(self, width: int = 10) -> list[tuple[int, int, float, int]]:
        """(first position, last position, accuracy, count) over bins of ``width`` positions from 0."""
        if not self.tokens:
            raise ValueError("these scores keep no per-token record (stored before positions were kept)")
        bins: dict[int, list[int]] = {}
        for p, hit in zip(self.tokens["position"], self.tokens["correct"]):
            sums = bins.setdefault(p // width, [0, 0])
            sums[0] += hit
            sums[1] += 1
        return [(b * width, b * width + width - 1, h / n, n) for b, (h, n) in sorted(bins.items())]


def _summarise(distances: torch.Tensor, positions: torch.Tensor, correct: torch.Tensor,
               nll: torch.Tensor) -> CriticalScores:
    """Group (count,) distances / positions / hits / losses by d, and keep every token."""
    by_d = {}
    for d in sorted(set(distances.tolist())):
        pick = distances == d
        by_d[d] = (float(correct[pick].double().mean()), float(nll[pick].double().mean()), int(pick.sum()))
    totals = {"accuracy": float(correct.double().mean()) if len(correct) else math.nan,
              "loss": float(nll.double().mean()) if len(nll) else math.nan, "count": len(correct)}
    tokens = {"d": distances.tolist(), "position": positions.tolist(), "correct": [int(h) for h in correct.tolist()],
              "loss": [round(float(v), 4) for v in nll.tolist()]}
    return CriticalScores(by_d, None, totals, tokens)


def critical_scores(model, task: TaskCorpus, split: str = "test", protocol: str = "sentence",
                    batch_size: int = 64, bptt: int = 35, device=None) -> CriticalScores:
    """Accuracy and loss of ``model`` on the critical tokens of ``split``, per distance d.

    The batches are those of ``protocol`` (with ``batch_size`` rows and ``bptt`` steps for stream
    and document); use the protocol the model was trained with.
    """
    corpus, vocab = task.corpus, task.corpus.vocab
    ids = corpus.ids(split)
    starts = corpus.documents[split]
    batches = protocol_batches(ids, protocol, starts, vocab.bos_id, vocab.eos_id, vocab.pad_id, batch_size, bptt)
    # Token numbers: 1 + the token's index among all words of the split; 0 for <eos>, <bos> and padding.
    offsets, total = [], 0
    for line in ids:
        offsets.append(total)
        total += len(line)
    numbers = [list(range(1 + o, 1 + o + len(line))) for o, line in zip(offsets, ids)]
    located = protocol_batches(numbers, protocol, starts, 0, 0, 0, batch_size, bptt)
    distance_of = torch.zeros(total + 1, dtype=torch.long)  # token number -> d (0: not critical)
    position_of = torch.zeros(total + 1, dtype=torch.long)  # token number -> its position in the line
    for c in task.critical[split]:
        distance_of[1 + offsets[c.line] + c.position] = c.distance
        position_of[1 + offsets[c.line] + c.position] = c.position

    nll_total, tokens = 0.0, 0
    distances, positions, hits, losses = [], [], [], []
    with torch.no_grad():
        for (batch, _, out), where in zip(evaluation_pass(model, batches, device), located.batches):
            logp = F.log_softmax(out.logits.float(), dim=-1).cpu()  # (batch, time, vocab)
            nll = -logp.gather(-1, batch.targets.unsqueeze(-1)).squeeze(-1)  # (batch, time)
            nll_total += float((nll * batch.mask).sum())
            tokens += batch.num_tokens
            d = distance_of[where.targets] * batch.mask  # (batch, time), 0 where not critical
            pick = d > 0
            distances.append(d[pick])
            positions.append(position_of[where.targets][pick])
            hits.append(logp.argmax(-1)[pick] == batch.targets[pick])
            losses.append(nll[pick])
    scores = _summarise(torch.cat(distances), torch.cat(positions), torch.cat(hits), torch.cat(losses))
    scores.overall = EvalResult(nll_total, tokens)
    return scores


def count_scores(task: TaskCorpus, n: int = 2, split: str = "test", alpha: float = 0.01) -> CriticalScores:
    """An n-gram count model (add-``alpha`` smoothing, counted on the training split) on the critical
    tokens of ``split``. The context is the previous n - 1 tokens of the stream ``<eos> line <eos> ..``.
    With n - 1 < d it cannot see the source: n = 2 is at chance, n = 1 below it."""
    corpus, vocab = task.corpus, task.corpus.vocab
    eos = vocab.eos_id

    def stream(lines):
        out = [eos] * max(n - 1, 1)
        starts = []
        for line in lines:
            starts.append(len(out))
            out.extend(line)
            out.append(eos)
        return out, starts

    train, _ = stream(corpus.ids("train"))
    counts: dict[tuple, Counter] = defaultdict(Counter)
    for i in range(n - 1, len(train)):
        counts[tuple(train[i - n + 1:i])][train[i]] += 1
    words, starts = stream(corpus.ids(split))
    V = len(vocab)
    distances, positions, hits, losses = [], [], [], []
    for c in task.critical[split]:
        i = starts[c.line] + c.position
        seen = counts.get(tuple(words[i - n + 1:i]), Counter())
        probs = torch.full((V,), alpha)
        for w, k in seen.items():
            probs[w] += k
        probs /= probs.sum()  # (vocab,)
        distances.append(c.distance)
        positions.append(c.position)
        hits.append(int(probs.argmax()) == words[i])
        losses.append(-math.log(float(probs[words[i]])))
    return _summarise(torch.tensor(distances), torch.tensor(positions), torch.tensor(hits), torch.tensor(losses))


@torch.no_grad()
def source_attention(model, task: TaskCorpus, split: str = "test", limit: int | None = None, device=None) -> list[dict]:
    """Where a head looks when it must recall a value: one dict per critical token of ``split`` (the first ``limit``).

    Each holds ``d``; ``reachable``, whether the head can see the source at all; ``weight``, the
    weight on it (0 when it cannot); ``uniform``, the weight of uniform attention over the slots
    present at that step; ``is_max``, whether the source holds the largest weight. The line is read
    as one sentence, ``<bos> line``: the row that predicts word p reads the inputs up to p, and the
    source, word p - d, is input p - d + 1. Two layouts of the weights:

    * a memory of the last n input words (Tran's RM and RMR, ``(time, n)``): slot j holds input
      p - n + 1 + j, so the source sits in slot n - d while d <= n;
    * attention over the outputs at every earlier input of the sentence (Salton's Attentive LM,
      ``(time, time)`` once the official code's zero slot is dropped): slot i is input i, so the
      source is slot p - d + 1, always reachable.
    """
    from mlm.models.attentive import AttentiveHead
    from mlm.models.recurrent_memory import RecurrentMemoryHead

    if not isinstance(model.head, (AttentiveHead, RecurrentMemoryHead)):
        raise TypeError(f"source_attention reads an Attentive or Recurrent Memory head, not {type(model.head).__name__}")
    vocab, lines = task.corpus.vocab, task.corpus.lines[split]
    found = []
    for c in task.critical[split][:limit]:
        run = run_sentence(model, vocab, lines[c.line], device)
        if isinstance(model.head, AttentiveHead):
            weights = drop_zero_slot(run.attention)[c.position, :c.position]  # (p,): inputs 0 .. p-1
            slot, present = c.position - c.distance + 1, c.position
        else:
            weights = run.attention[c.position]  # (n,): inputs p-n+1 .. p
            slot, present = weights.numel() - c.distance, min(weights.numel(), c.position + 1)
        reachable = slot >= 0
        found.append({"d": c.distance, "reachable": reachable,
                      "weight": float(weights[slot]) if reachable else 0.0, "uniform": 1 / present,
                      "is_max": reachable and int(weights.argmax()) == slot})
    return found


def run_critical_scores(run, task: TaskCorpus, split: str = "test", model=None) -> CriticalScores:
    """:func:`critical_scores` of a trained run (``mlm.train``'s result) under its own protocol, evaluation
    batch size and BPTT length; ``model`` replaces the run's model (e.g. the same model with a probe set)."""
    data = run.config.data
    return critical_scores(model if model is not None else run.model, task, split, data.protocol,
                           batch_size=data.eval_batch_size, bptt=data.bptt)


@dataclass
class RecallComparison:
    """Models trained on the same recall task, scored on its critical tokens beside a bigram count model."""

    runs: dict  # label -> the trained run (``mlm.train``'s result)
    task: TaskCorpus
    scores: dict[str, CriticalScores]  # label -> scores on the test split, then "bigram counts"
    chance: float  # accuracy of a model that cannot see the source


def recall_comparison(presets: dict[str, str], size: str = "reduced", runs_dir="runs", seed: int = 0,
                      device: str = "auto") -> RecallComparison:
    """Train (or load, when finished) each recall preset ({label: preset}) in ``runs_dir/<preset>-seed<seed>``
    and score it; the presets must generate the same task (the first one's task is scored)."""
    from pathlib import Path

    import mlm  # the registered presets and the training loop
    from mlm.data.tasks import critical_chance
    from mlm.training import load_task

    overrides = {"train.seed": seed, "train.device": device}
    runs = {label: mlm.train(mlm.get_preset(preset, size, overrides=overrides),
                             run_dir=Path(runs_dir) / f"{preset}-seed{seed}")
            for label, preset in presets.items()}
    task = load_task(next(iter(runs.values())).config)
    scores = {label: run_critical_scores(run, task) for label, run in runs.items()}
    scores["bigram counts"] = count_scores(task, n=2)
    return RecallComparison(runs, task, scores, critical_chance(task.spec)[0])
