"""A long-range task with a known answer: key-value recall at a chosen distance d.

Each example is one line. A key ``k<a>`` is said with a value ``v<x>``; then come filler words and
*distractor* pairs (other keys with their own values); then the key is said again and its value
must be recalled::

    f3 k5 v2 f0 |k7 v3| f1 k2 v8 f4 f4 k0 v3 f2 |k7 v3|        (d = 13: the second v3 is 13 steps
                  ^ source                            ^ critical     after the first)

The **critical token** is the second value. It is exactly the token ``d`` steps back, the one after
the previous occurrence of its key (the key occurs only twice in a line; distractor keys are all
different). Values are drawn uniformly and independently, so nothing else in the line or the corpus
says anything about it: every predictor that cannot see the source is at **chance**, accuracy
``1 / num_values`` and loss ``log(num_values)`` at best (:func:`critical_chance`, exact). The
**ceiling** is accuracy 1 and loss 0: a perfect memory of the line, the rule "the token after the
previous occurrence of this key", gets every critical token right (:func:`critical_ceiling` applies
the rule to the generated data and measures it). What the book's models can do:

* a **unigram** count model puts its mass on frequent words (fillers, ``<eos>``): accuracy 0, loss
  about ``log(tokens / count of one value)``, worse than chance;
* a **bigram** (any n-gram with n - 1 < d) sees the key, learns that a value follows, and is at
  chance; both are computed by counting in :func:`mlm.long_range.count_scores`;
* an **LSTM** must carry the pair in its state across the d steps; how well, and how that changes
  with d, is measured, not assumed (:mod:`mlm.presets.recall` gives one seed's numbers);
* a head with a memory of n input words (Tran) cannot read a source more than n steps back, and its
  prediction falls to chance there unless the LSTM under it carries the pair; a window of L outputs
  (Daniluk) reads LSTM outputs, which can carry it from further back; Salton's memory of the whole
  sentence reaches any d.

The distance d of every example is drawn uniformly from ``min_distance .. max_distance`` (d >= 2:
``k v k v`` is d = 2), and the length of the *prefix* before the source pair independently of it, uniformly
from ``0 .. max_prefix`` (by default the same range as d). The critical token sits at position
``prefix + d + 1``, so at every d the query falls anywhere from early to late in the line, and a model's
accuracy can be read by d at matched positions (:meth:`mlm.long_range.CriticalScores.table`): a model that
merely does worse near the start of a line shows it by position, not by d. Line ``i`` of a split starts a
new document, so the document protocol resets
at every example; the sentence protocol reads one example per row; the stream protocol reads them
one after another (a key may then recur in an earlier line, but the most recent occurrence is always
the source). :func:`recall_task` returns the :class:`~mlm.data.corpora.Corpus` together with the
position and distance of every critical token in every split.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from mlm.data.corpora import Corpus
from mlm.data.vocab import Vocabulary


@dataclass(frozen=True)
class RecallSpec:
    """The generator's settings (all that defines a task besides the seed)."""

    num_keys: int = 16
    num_values: int = 10
    num_fillers: int = 16
    min_distance: int = 2
    max_distance: int = 60
    distractors: int = 2  # at most this many distractor pairs before the source, and as many after it
    max_prefix: int | None = None  # 0..max_prefix tokens before the source pair, drawn apart from d;
    # None: max_distance, so the query's position varies as much as d does

    def __post_init__(self):
        if not 2 <= self.min_distance <= self.max_distance:
            raise ValueError(f"need 2 <= min_distance <= max_distance, got {self.min_distance}, {self.max_distance}")
        if self.num_keys < 2 * self.distractors + 1 or self.num_values < 2 or self.num_fillers < 1:
            raise ValueError(f"need num_keys >= 2 x distractors + 1, num_values >= 2 and a filler; got {self}")
        if self.max_prefix is not None and self.max_prefix < 0:
            raise ValueError(f"max_prefix must be >= 0 (or None for max_distance), got {self.max_prefix}")

    @property
    def prefix_range(self) -> int:
        """The largest prefix: ``max_prefix``, or ``max_distance`` where it is None."""
        return self.max_distance if self.max_prefix is None else self.max_prefix


@dataclass(frozen=True)
class Critical:
    """One critical token: ``lines[split][line][position]``, recalled from ``distance`` steps back."""

    line: int
    position: int  # the critical token's index in its line: prefix + d + 1
    distance: int


@dataclass
class TaskCorpus:
    """A generated corpus and, per split, its critical tokens."""

    corpus: Corpus
    critical: dict[str, list[Critical]]
    spec: RecallSpec


def _stretch(rng: random.Random, length: int, pairs: int, keys: list[str], spec: RecallSpec) -> list[str]:
    """``length`` tokens: ``pairs`` key-value pairs (keys taken from ``keys``) among fillers, shuffled."""
    items = [[keys.pop(), f"v{rng.randrange(spec.num_values)}"] for _ in range(pairs)]
    items += [[f"f{rng.randrange(spec.num_fillers)}"] for _ in range(length - 2 * pairs)]
    rng.shuffle(items)
    return [token for item in items for token in item]


def recall_example(rng: random.Random, distance: int, spec: RecallSpec) -> tuple[list[str], int]:
    """One line whose last token is recalled from ``distance`` steps back; returns (tokens, its position)."""
    keys = [f"k{i}" for i in rng.sample(range(spec.num_keys), 2 * spec.distractors + 1)]  # all different
    key, value = keys.pop(), f"v{rng.randrange(spec.num_values)}"
    prefix_len = rng.randint(0, spec.prefix_range)  # drawn apart from the distance
    prefix = _stretch(rng, prefix_len, rng.randint(0, min(spec.distractors, prefix_len // 2)), keys, spec)
    gap_len = distance - 2  # source at p - d, key at p - 1: d - 2 tokens between
    gap = _stretch(rng, gap_len, rng.randint(0, min(spec.distractors, gap_len // 2)), keys, spec)
    line = prefix + [key, value] + gap + [key, value]
    return line, len(line) - 1


def recall_lines(num_examples: int, spec: RecallSpec, seed: int = 0) -> tuple[list[list[str]], list[Critical]]:
    """``num_examples`` lines with d uniform in ``spec.min_distance .. spec.max_distance``."""
    rng = random.Random(seed)
    lines, critical = [], []
    for i in range(num_examples):
        d = rng.randint(spec.min_distance, spec.max_distance)
        line, position = recall_example(rng, d, spec)
        lines.append(line)
        critical.append(Critical(i, position, d))
    return lines, critical


def recall_task(train_examples: int = 4000, eval_examples: int = 1000, seed: int = 0, **spec) -> TaskCorpus:
    """The key-value recall corpus (train/valid/test seeded ``seed``, ``seed + 1``, ``seed + 2``).

    ``spec`` holds :class:`RecallSpec` fields (``min_distance=2, max_distance=60, max_prefix=None``, ...). Every
    line is its own document. The vocabulary has every key, value and filler, whether seen or not.
    """
    spec_ = RecallSpec(**spec)
    lines, critical = {}, {}
    for offset, (split, n) in enumerate((("train", train_examples), ("valid", eval_examples),
                                         ("test", eval_examples))):
        lines[split], critical[split] = recall_lines(n, spec_, seed + offset)
    every_word = ([f"k{i}" for i in range(spec_.num_keys)] + [f"v{i}" for i in range(spec_.num_values)]
                  + [f"f{i}" for i in range(spec_.num_fillers)])
    vocab = Vocabulary.build(lines["train"] + lines["valid"] + lines["test"] + [every_word])
    documents = {split: list(range(len(split_lines))) for split, split_lines in lines.items()}
    return TaskCorpus(Corpus("recall", lines, documents, vocab), critical, spec_)


def value_words(spec: RecallSpec) -> list[str]:
    """The words a critical token can be."""
    return [f"v{i}" for i in range(spec.num_values)]


def critical_chance(spec: RecallSpec) -> tuple[float, float]:
    """(accuracy, loss in nats) of the best predictor that cannot see the source: the value is
    uniform over ``num_values`` and independent of every other token, so 1/V and log V, exactly."""
    return 1.0 / spec.num_values, math.log(spec.num_values)


def recall_by_rule(line: list[str], position: int) -> str | None:
    """What a perfect memory predicts at ``position``: the token after the previous occurrence of the
    key at ``position - 1`` (None if the key did not occur before)."""
    key = line[position - 1]
    for i in range(position - 2, -1, -1):
        if line[i] == key:
            return line[i + 1]
    return None


def critical_ceiling(task: TaskCorpus, split: str = "test") -> tuple[float, float]:
    """(accuracy, loss) of a perfect memory on ``split``, measured by applying :func:`recall_by_rule`
    to the generated lines: accuracy 1 and loss 0 when the key determines every critical token."""
    lines = task.corpus.lines[split]
    hits = [recall_by_rule(lines[c.line], c.position) == lines[c.line][c.position] for c in task.critical[split]]
    accuracy = sum(hits) / max(len(hits), 1)
    return accuracy, (0.0 if accuracy == 1.0 else math.inf)

