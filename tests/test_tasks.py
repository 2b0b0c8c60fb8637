"""The key-value recall task, scoring on its critical tokens, and evaluation with a cut history."""

from __future__ import annotations

import math
from collections import Counter

import pytest
import torch
from torch import nn

import mlm
from mlm.configs import ModelConfig
from mlm.context import evaluate_with_history, protocol_histories
from mlm.data.batching import SentenceBatches
from mlm.data.tasks import RecallSpec, critical_ceiling, critical_chance, recall_by_rule, recall_task
from mlm.evaluation import evaluate
from mlm.data.batching import protocol_batches
from mlm.long_range import count_scores, critical_scores
from mlm.models.language_model import LMOutput
from mlm.training import build_model, load_data, load_task


@pytest.fixture(scope="module")
def task():
    return recall_task(train_examples=600, eval_examples=300, seed=3, min_distance=2, max_distance=40)


# -- the generator ---------------------------------------------------------------------------------
def test_the_key_determines_the_critical_token_d_steps_back(task):
    for split in ("train", "test"):
        lines = task.corpus.lines[split]
        assert len(task.critical[split]) == len(lines)
        for c in task.critical[split]:
            line, p, d = lines[c.line], c.position, c.distance
            assert p == len(line) - 1 and line[p].startswith("v") and line[p - 1].startswith("k")
            assert line[p - d] == line[p] and line[p - d - 1] == line[p - 1]  # the pair, d steps back
            assert line.count(line[p - 1]) == 2  # the key occurs at the source and the query only
            assert recall_by_rule(line, p) == line[p]
    assert critical_ceiling(task) == (1.0, 0.0)


def test_d_is_what_is_asked():
    spec = dict(min_distance=7, max_distance=7)
    fixed = recall_task(50, 50, seed=1, **spec)
    assert {c.distance for c in fixed.critical["test"]} == {7}
    spread = recall_task(3000, 10, seed=1, min_distance=2, max_distance=60)
    seen = Counter(c.distance for c in spread.critical["train"])
    assert set(seen) == set(range(2, 61))  # every d in the range, uniformly (about 51 each)
    assert min(seen.values()) > 25
    with pytest.raises(ValueError):
        RecallSpec(min_distance=1)


def test_the_prefix_is_drawn_apart_from_d():
    """The source's position (the prefix length) does not depend on d: at every d the query can come early
    or late in the line. Its correlation with d is near 0 (the old task, whose prefix was at most 6 tokens,
    had d and the query's position correlated at 0.99), and the position's correlation with d is near
    1/sqrt(2), the share of d in prefix + d + 1 when both have the same range."""
    big = recall_task(4000, 10, seed=0)
    d = torch.tensor([float(c.distance) for c in big.critical["train"]])
    position = torch.tensor([float(c.position) for c in big.critical["train"]])
    prefix = position - d - 1
    corr = lambda a, b: float(torch.corrcoef(torch.stack([a, b]))[0, 1])  # noqa: E731
    assert abs(corr(d, prefix)) < 0.05 and abs(corr(d, position) - 2 ** -0.5) < 0.05
    assert prefix.min() == 0 and prefix.max() == 60
    for low in (2, 30, 55):  # short and long distances alike reach early and late positions
        near = prefix[(d >= low) & (d < low + 6)]
        assert near.min() <= 3 and near.max() >= 57
    assert recall_task(20, 5, seed=0, max_prefix=0).critical["train"][0].position \
        == recall_task(20, 5, seed=0, max_prefix=0).critical["train"][0].distance + 1
    with pytest.raises(ValueError, match="max_prefix"):
        RecallSpec(max_prefix=-1)


def test_generation_is_seeded_and_splits_differ(task):
    again = recall_task(train_examples=600, eval_examples=300, seed=3, min_distance=2, max_distance=40)
    assert again.corpus.lines == task.corpus.lines and again.critical == task.critical
    assert task.corpus.lines["valid"] != task.corpus.lines["test"]
    assert task.corpus.documents["test"] == list(range(300))  # one example per document


def test_chance_is_exact_and_the_values_are_uniform():
    spec = RecallSpec(num_values=8)
    assert critical_chance(spec) == (1 / 8, math.log(8))
    big = recall_task(4000, 10, seed=0, num_values=8)
    values = Counter(big.corpus.lines["train"][c.line][c.position] for c in big.critical["train"])
    assert len(values) == 8 and max(values.values()) / 4000 < 1 / 8 + 0.025


def test_count_models_cannot_see_the_source(task):
    """The bigram sees the key and is at chance; the unigram is below it (its mass is on fillers)."""
    accuracy, loss = critical_chance(task.spec)
    bigram, unigram = count_scores(task, 2), count_scores(task, 1)
    assert abs(bigram.accuracy - accuracy) < 0.06 and loss <= bigram.loss < loss + 0.1
    assert unigram.accuracy < 0.02 and unigram.loss > loss + 1
    assert sum(c for _, _, c in bigram.by_distance.values()) == 300


# -- scoring on the critical tokens ----------------------------------------------------------------
class Recaller(nn.Module):
    """A hand-made model: logits from a function of the inputs seen so far in the row (and carried
    ``memory`` of earlier segments: the inputs since the row's last reset)."""

    def __init__(self, vocab_size: int, rule):
        super().__init__()
        self.vocab_size, self.rule = vocab_size, rule
        self.dummy = nn.Parameter(torch.zeros(()))

    def forward(self, tokens, state=None, reset=None, mask=None, memory=None):
        batch, time = tokens.shape
        past = memory if memory is not None else [[] for _ in range(batch)]
        past = [[] if reset is not None and bool(reset[b]) else list(past[b]) for b in range(batch)]
        logits = torch.full((batch, time, self.vocab_size), -30.0)
        for b in range(batch):
            for t in range(time):
                past[b].append(int(tokens[b, t]))
                self.rule(past[b], logits[b, t])
        return LMOutput(logits, state, memory=past)


def perfect_memory(task):
    """Predicts the value after the previous occurrence of the current key (what a perfect memory does)."""
    keys = {i for w, i in task.corpus.vocab.stoi.items() if w.startswith("k")}

    def rule(seen, out):
        if seen[-1] in keys and seen[-1] in seen[:-1]:
            out[seen[len(seen) - 2 - seen[-2::-1].index(seen[-1]) + 1]] = 0.0
    return rule


def uniform_values(task):
    values = [i for w, i in task.corpus.vocab.stoi.items() if w.startswith("v")]

    def rule(seen, out):
        out[values] = 0.0
    return rule


@pytest.mark.parametrize("protocol", ["sentence", "document", "stream"])
def test_a_perfect_memory_scores_one_and_a_uniform_guess_scores_chance(task, protocol):
    V = len(task.corpus.vocab)
    rows = 1 if protocol == "stream" else 7  # a stream row starts from zero mid-line: its first key is lost
    perfect = critical_scores(Recaller(V, perfect_memory(task)), task, "test", protocol, batch_size=rows, bptt=9)
    assert perfect.accuracy == 1.0 and perfect.loss < 1e-6 and perfect.totals["count"] == 300
    assert perfect.overall.tokens == task.corpus.num_tokens("test")
    assert all(acc == 1.0 for acc, _, _ in perfect.by_distance.values())
    assert sorted(perfect.tokens["position"]) == sorted(c.position for c in task.critical["test"])
    assert all(acc == 1.0 for _, _, acc, _ in perfect.by_position(10))
    guess = critical_scores(Recaller(V, uniform_values(task)), task, "test", protocol, batch_size=rows, bptt=9)
    accuracy, loss = critical_chance(task.spec)
    assert guess.loss == pytest.approx(loss, rel=1e-5)
    assert abs(guess.accuracy - accuracy) < 0.06  # argmax picks one fixed value: right 1 in V times


def test_a_trained_lstm_beats_chance_at_short_distance():
    """A few seconds of training on d = 2..4 (15,000 examples seen): the LSTM recalls far better than chance."""
    cfg = mlm.get_preset("recall-lstm", overrides={"data.task_min_distance": 2, "data.task_max_distance": 4,
                                                        "data.task_examples": 3000, "train.epochs": 5})
    run = mlm.training.train(cfg, progress=False)
    scores = critical_scores(run.model, load_task(cfg), "test", "sentence")
    assert scores.accuracy > 0.5 > 2 * critical_chance(load_task(cfg).spec)[0]
    assert set(scores.by_distance) == {2, 3, 4}


def test_binned_scores_weight_each_distance_by_its_count():
    from mlm.long_range import CriticalScores
    scores = CriticalScores({2: (1.0, 0.0, 3), 3: (0.0, 2.0, 1), 7: (0.5, 1.0, 2)})
    assert scores.binned(5) == [(2, 6, 0.75, 0.5, 4), (7, 11, 0.5, 1.0, 2)]
    assert [row[:2] for row in scores.binned(1)] == [(2, 2), (3, 3), (7, 7)]
    assert scores.binned(starts=[2, 3, 6]) == [(2, 2, 1.0, 0.0, 3), (3, 5, 0.0, 2.0, 1), (6, 7, 0.5, 1.0, 2)]
    with pytest.raises(ValueError, match="must increase"):
        scores.binned(starts=[3, 5])
    assert scores.accuracy_within(0, 3) == 0.75 and scores.accuracy_within(3) == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="no critical token"):
        scores.accuracy_within(8, 20)
    with pytest.raises(ValueError, match="per-token record"):
        scores.table([2, 10], [0, 100])


def test_recall_panels_draw_each_seed_at_the_centres_of_the_bins_asked_for():
    """With ``starts`` the panels' points sit at the centres of those bins (a bin edge at each reach), and
    the reach is drawn between the bins it separates."""
    from types import SimpleNamespace

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from mlm.long_range import CriticalScores
    from mlm.plots import recall_panels

    scores = CriticalScores({d: (0.5, 1.0, 2) for d in range(2, 12)})
    entry = SimpleNamespace(seeds=[0], scores=[scores])
    fig = recall_panels({"LSTM": entry, "head": entry}, 0.1, reach={"head": 3}, reference="LSTM", columns=2,
                        starts=[2, 4, 7])
    seed_line = next(line for line in fig.axes[1].lines if line.get_label() == "seed 0")
    assert list(seed_line.get_xdata()) == [2.5, 5.0, 9.0]
    assert any(list(line.get_xdata()) == [3.5, 3.5] for line in fig.axes[1].lines)
    plt.close(fig)


def test_the_table_reads_distance_at_matched_positions():
    """Rows are d bins, columns position bins; a token outside every bin is left out, an empty cell is NaN."""
    from mlm.long_range import CriticalScores
    tokens = {"d": [2, 3, 30, 31, 70], "position": [5, 40, 35, 60, 80], "correct": [1, 0, 1, 1, 1],
              "loss": [0.1, 2.0, 0.2, 0.1, 0.0]}
    scores = CriticalScores({}, tokens=tokens)
    table = scores.table([2, 20, 60], [0, 30, 90])
    assert table[0][0] == (1.0, 1) and table[0][1] == (0.0, 1) and table[1][1] == (1.0, 2)
    assert math.isnan(table[1][0][0]) and table[1][0][1] == 0
    assert scores.by_position(50) == [(0, 49, 2 / 3, 3), (50, 99, 1.0, 2)]
    assert CriticalScores.from_json(scores.to_json()).tokens == tokens


def test_source_attention_reads_the_slot_that_holds_the_source(task):
    """The weight source_attention reports is the one probe_memory_sentence puts on the source word."""
    from mlm.analysis.memory_block import probe_memory_sentence
    from mlm.long_range import source_attention
    torch.manual_seed(0)
    cfg = mlm.get_preset("recall-rm", overrides={"model.memory_size": 6, "model.hidden_size": 8, "model.embed_size": 8})
    model = build_model(cfg, len(task.corpus.vocab))
    found = source_attention(model, task, "test", limit=40)
    assert len(found) == 40 and {f["reachable"] for f in found} == {True, False}
    for c, f in zip(task.critical["test"], found):
        line = task.corpus.lines["test"][c.line]
        attention = probe_memory_sentence(model, task.corpus.vocab, line)["attention"]  # (targets, inputs)
        source = c.position - c.distance + 1  # input index of the source word (after <bos>)
        assert f["reachable"] == (c.distance <= 6)
        assert f["weight"] == pytest.approx(float(attention[c.position, source]) if f["reachable"] else 0.0)
        assert f["is_max"] == (f["reachable"] and float(attention[c.position].max()) == float(attention[c.position, source]))
        assert f["uniform"] == pytest.approx(1 / int((attention[c.position] > 0).sum()))


def test_source_attention_of_the_attentive_lm_reads_the_output_at_the_source(task):
    """For Salton's head the source is the output at the source word's input: probe_sentence's column p - d + 1."""
    from mlm.analysis.history import probe_sentence
    from mlm.long_range import source_attention
    torch.manual_seed(0)
    for zero_slot in (False, True):
        cfg = mlm.get_preset("recall-attentive", overrides={"model.hidden_size": 8, "model.embed_size": 8,
                                                              "model.attention_zero_slot": zero_slot})
        model = build_model(cfg, len(task.corpus.vocab))
        found = source_attention(model, task, "test", limit=20)
        assert all(f["reachable"] for f in found)
        for c, f in zip(task.critical["test"], found):
            attention = probe_sentence(model, task.corpus.vocab, task.corpus.lines["test"][c.line])["attention"]
            row = attention[c.position]
            assert f["weight"] == pytest.approx(float(row[c.position - c.distance + 1]))
            assert f["uniform"] == pytest.approx(1 / int((row > 0).sum()))
            assert f["is_max"] == (float(row.max()) == f["weight"])
    with pytest.raises(TypeError, match="Attentive or Recurrent Memory"):
        source_attention(build_model(mlm.get_preset("recall-lstm"), len(task.corpus.vocab)), task)


def test_the_recall_corpus_is_wired_into_the_configs():
    cfg = mlm.get_preset("recall-lstm", overrides={"data.task_max_distance": 9, "data.task_examples": 500})
    corpus = load_data(cfg)
    assert corpus.name == "recall" and len(corpus.lines["train"]) == 500
    assert max(c.distance for c in load_task(cfg).critical["test"]) <= 9


# -- history cut to k tokens -----------------------------------------------------------------------
HEADS = {
    "identity": {},
    "attentive": {"attention_score": "combined"},
    "window": {"window_size": 3},
    "ngram": {"ngram_n": 3},
    "rm": {"memory_size": 4},
    "rmr": {"memory_size": 4},
}


def small_model(head: str, vocab_size: int):
    cfg = mlm.Config(model=ModelConfig(head=head, embed_size=12, hidden_size=12, num_layers=1, init_range=0.5,
                                       **HEADS[head]))
    torch.manual_seed(0)
    model = build_model(cfg, vocab_size)
    model.eval()
    return model


def sentence_batches(task, n=40):
    v = task.corpus.vocab
    return SentenceBatches(task.corpus.ids("test")[:n], v.bos_id, v.eos_id, v.pad_id, batch_size=16, buckets=True)


@pytest.mark.parametrize("head", sorted(HEADS))
def test_the_whole_history_is_the_ordinary_sentence_evaluation(task, head):
    batches = sentence_batches(task)
    model = small_model(head, len(task.corpus.vocab))
    longest = max(b.inputs.size(1) for b in batches)
    full, cut = evaluate(model, batches), evaluate_with_history(model, batches, longest, max_tokens=2000)
    assert cut.tokens == full.tokens
    assert cut.nll == pytest.approx(full.nll, rel=1e-5)
    assert evaluate_with_history(model, batches, None).nll == full.nll
    assert abs(evaluate_with_history(model, batches, 3).nll - full.nll) > 0.1  # a cut history changes the scores


@pytest.mark.parametrize("head", ["identity", "rm"])
def test_k_equal_one_is_a_model_that_sees_one_token(task, head):
    batches = sentence_batches(task)
    model = small_model(head, len(task.corpus.vocab))
    inputs, targets, _ = protocol_histories(batches)
    with torch.no_grad():
        logits = model(inputs[:, None]).logits[:, 0]  # (N, vocab): every input alone, from zero
    alone = float(nn.functional.cross_entropy(logits, targets, reduction="sum"))
    assert evaluate_with_history(model, batches, 1).nll == pytest.approx(alone, rel=1e-5)


@pytest.mark.parametrize("protocol", ["stream", "document"])
def test_windows_stop_at_the_protocols_boundaries(task, protocol):
    """k = 4 against a loop over positions: each target alone with its (at most) 4 previous inputs of
    the same document / stream row, across batch boundaries but never across a reset."""
    v = task.corpus.vocab
    ids = task.corpus.ids("test")[:30]
    batches = protocol_batches(ids, protocol, list(range(0, 30, 3)), v.bos_id, v.eos_id, v.pad_id, 4, 7)
    model = small_model("attentive", len(v))
    inputs, targets, sequence = protocol_histories(batches)
    assert inputs.numel() == sum(len(line) + 1 for line in ids)
    expected = 0.0
    with torch.no_grad():
        for p in range(inputs.numel()):
            start = p
            while start > 0 and p - start < 3 and sequence[start - 1] == sequence[p]:
                start -= 1
            logits = model(inputs[None, start:p + 1]).logits[0, -1]
            expected += float(nn.functional.cross_entropy(logits[None], targets[p:p + 1]))
    assert evaluate_with_history(model, batches, 4, max_tokens=64).nll == pytest.approx(expected, rel=1e-5)
    sequences = len(set(sequence.tolist()))
    assert sequences == (10 if protocol == "document" else 4)  # 10 documents; 4 stream rows
