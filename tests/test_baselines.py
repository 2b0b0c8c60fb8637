"""The count-based baselines (mlm/baselines.py): a hand-computed bigram, the same tokens as `evaluate` under
every protocol, lambda tuned inside (0, 1), and chapter 00's inline numbers reproduced."""

from __future__ import annotations

import math
from collections import Counter
from typing import Sequence

import numpy as np
import pytest

from mlm.baselines import BigramCountModel, batch_events, count_baseline, tune_lambda
from mlm.configs import get_preset
from mlm.data import Corpus, Vocabulary
from mlm.evaluation import evaluate
from mlm.training import build_batches, build_model, load_data

PROTOCOLS = {  # synthetic-tiny under each protocol, with the truncations reduced presets use
    "stream": ["data.max_train_tokens=3000", "data.max_eval_tokens=400"],
    "sentence": ["data.protocol=sentence", "data.max_len=6", "data.eval_max_len=9", "data.max_train_tokens=3000"],
    "document": ["data.protocol=document", "data.max_document_tokens=40", "data.bptt=7"],
}


def bigram_events(lines: Sequence[Sequence[int]], protocol: str, eos_id: int, bos_id: int | None = None,
                  max_len: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """A reference derived from the lines, independently of the batchers: (history, target) id arrays,
    (n,) each, for token ``lines`` read under ``protocol``.

    stream / document: the stream ``<eos> line1 <eos> line2 <eos> ..`` (a document adds nothing:
    its leading ``<eos>`` is the previous line's); sentence: ``<bos> w1 .. wn`` predicting
    ``w1 .. wn <eos>`` per line, cut at ``max_len`` inputs like :class:`~mlm.data.SentenceBatches`.
    """
    if protocol in ("stream", "document"):
        stream = [eos_id]
        for line in lines:
            stream.extend(line)
            stream.append(eos_id)
        ids = np.asarray(stream, dtype=np.int64)
        return ids[:-1], ids[1:]
    if protocol != "sentence":
        raise ValueError(f"unknown protocol {protocol!r}; choose stream, sentence or document")
    if bos_id is None:
        raise ValueError("the sentence protocol needs the <bos> id")
    history, target = [], []
    for line in lines:
        seq = [bos_id, *line, eos_id]
        n = len(seq) - 1 if max_len is None else min(len(seq) - 1, max_len)
        history.extend(seq[:n])
        target.extend(seq[1:n + 1])
    return np.asarray(history, dtype=np.int64), np.asarray(target, dtype=np.int64)


def test_bigram_equals_a_hand_computation():
    # ids: <eos>=1, a=4, b=5, c=6; training stream <eos> a b <eos> a c <eos>
    history, target = bigram_events([[4, 5], [4, 6]], "stream", eos_id=1)
    assert history.tolist() == [1, 4, 5, 1, 4, 6] and target.tolist() == [4, 5, 1, 4, 6, 1]
    model = BigramCountModel.fit(history, target, vocab_size=7, never_targets=[0, 3])  # <pad>, <bos>
    # <unk>=2 is in the support but never seen: one word seen once (b, c: two) -> reserve 2 / 6
    assert model.unseen_mass == pytest.approx(2 / 6)
    lam = 0.75
    # p(b | a) = 0.75 * c(a b) / c(a) + 0.25 * p1(b) = 0.75 * 1/2 + 0.25 * (4/6 * 1/6)
    p_b_after_a = 0.75 * 0.5 + 0.25 * (4 / 6) * (1 / 6)
    # p(<unk> | <eos>): no such pair; p1(<unk>) is the whole reserve
    p_unk_after_eos = 0.25 * (2 / 6)
    # p(a | b): b was seen as a history (followed by <eos>) -> 0.25 * p1(a) = 0.25 * 4/6 * 2/6
    p_a_after_b = 0.25 * (4 / 6) * (2 / 6)
    got = np.exp(model.log_probs(np.array([4, 1, 5]), np.array([5, 2, 4]), lam))
    np.testing.assert_allclose(got, [p_b_after_a, p_unk_after_eos, p_a_after_b])
    # an unseen history (<unk>) falls back to the unigram, so every history's distribution sums to one
    support = np.array([1, 2, 4, 5, 6])
    for v in (1, 2, 4, 5, 6):
        total = np.exp(model.log_probs(np.full(5, v), support, lam)).sum()
        assert total == pytest.approx(1.0), v


def test_sentence_events_start_from_bos_and_are_cut_like_the_batches():
    history, target = bigram_events([[4, 5, 6], []], "sentence", eos_id=1, bos_id=3, max_len=2)
    assert history.tolist() == [3, 4, 3] and target.tolist() == [4, 5, 1]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_line_events_are_the_batch_events(protocol):
    overrides = {"stream": [], "sentence": ["data.max_len=6"], "document": []}[protocol]
    cfg = get_preset("synthetic-tiny", overrides=[f"data.protocol={protocol}", "data.bptt=5", *overrides])
    corpus = load_data(cfg)
    lines = corpus.ids("train")
    from_batches = batch_events(build_batches(cfg, corpus, "train", shuffle=False))
    from_lines = bigram_events(lines, protocol, corpus.vocab.eos_id, corpus.vocab.bos_id, cfg.data.max_len)
    assert Counter(zip(*map(np.ndarray.tolist, from_batches))) == Counter(zip(*map(np.ndarray.tolist, from_lines)))


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_baseline_scores_the_tokens_evaluate_scores(protocol):
    cfg = get_preset("synthetic-tiny", overrides=PROTOCOLS[protocol])
    corpus = load_data(cfg)
    result = count_baseline(cfg, corpus)
    model = build_model(cfg, len(corpus.vocab), corpus.vocab.pad_id)
    for split in ("valid", "test"):
        assert result[f"{split}_tokens"] == evaluate(model, build_batches(cfg, corpus, split)).tokens
    assert result["train_tokens"] == build_batches(cfg, corpus, "train").num_tokens
    assert 0.0 < result["lambda"] < 1.0
    assert result["bigram_valid"] < result["unigram_valid"]
    assert result["bigram_test"] < result["unigram_test"] < len(corpus.vocab)


def test_bisection_finds_the_best_lambda():
    cfg = get_preset("synthetic-tiny", overrides=PROTOCOLS["stream"])
    corpus = load_data(cfg)
    train = batch_events(build_batches(cfg, corpus, "train"))
    valid = batch_events(build_batches(cfg, corpus, "valid"))
    model = BigramCountModel.fit(*train, len(corpus.vocab), never_targets=[corpus.vocab.pad_id, corpus.vocab.bos_id])
    lam = tune_lambda(model, *valid)
    best_of_grid = min(np.linspace(0.01, 0.99, 99), key=lambda x: model.perplexity(*valid, x))
    assert abs(lam - best_of_grid) <= 0.01
    assert model.perplexity(*valid, lam) <= model.perplexity(*valid, best_of_grid) + 1e-9


def chapter00_ngram_perplexities(corpus, lambdas=(0.5, 0.6, 0.7, 0.8, 0.9)):
    """Chapter 00's inline version (its "Count-based baselines" cell), kept here as the reference."""
    def stream_ids(split):
        ids = [corpus.vocab.eos_id]
        for line in corpus.ids(split):
            ids += line + [corpus.vocab.eos_id]
        return np.array(ids)

    V = len(corpus.vocab)
    train = stream_ids("train")
    unigram = np.bincount(train[1:], minlength=V) / (len(train) - 1)
    pair_counts = Counter(zip(train[:-1].tolist(), train[1:].tolist()))
    history_counts = np.bincount(train[:-1], minlength=V)

    def perplexity(split, lam):
        ids = stream_ids(split)
        prev, nxt = ids[:-1], ids[1:]
        pair = np.array([pair_counts.get(p, 0) for p in zip(prev.tolist(), nxt.tolist())])
        p_bigram = np.divide(pair, history_counts[prev], out=np.zeros(len(pair)), where=history_counts[prev] > 0)
        p = lam * p_bigram + (1 - lam) * unigram[nxt]
        return float(np.exp(-np.log(p).mean())), len(nxt)

    best_lam = min(lambdas, key=lambda lam: perplexity("valid", lam)[0])
    return {"unigram": perplexity("test", 0.0), "bigram": perplexity("test", best_lam), "lambda": best_lam}


def test_chapter00_numbers_are_reproduced_on_the_synthetic_corpus():
    cfg = get_preset("synthetic-tiny")
    lines = load_data(cfg).lines
    lines["train"][0] = lines["train"][0] + ["<unk>"]  # closed vocabulary, <unk> included, as PTB
    corpus = Corpus("synthetic", lines, {split: [0] for split in lines}, Vocabulary.build(lines["train"]))
    ours = count_baseline(cfg, corpus, lambdas=(0.5, 0.6, 0.7, 0.8, 0.9))
    inline = chapter00_ngram_perplexities(corpus)
    assert ours["unseen_mass"] == 0.0  # every word of the vocabulary occurs in training
    assert ours["lambda"] == inline["lambda"]
    assert math.isclose(ours["unigram_test"], inline["unigram"][0], rel_tol=1e-12)
    assert math.isclose(ours["bigram_test"], inline["bigram"][0], rel_tol=1e-12)
    assert ours["test_tokens"] == inline["bigram"][1]


def test_chapter00_ptb_numbers_are_reproduced(shared_data):
    """Chapter 00 prints unigram 639.3 and bigram (lambda 0.7) 208.6 over 82,430 PTB test tokens."""
    cfg = get_preset("zaremba2014-small", overrides=[f"data.data_dir={shared_data}", "data.download=false"])
    ours = count_baseline(cfg, lambdas=(0.5, 0.6, 0.7, 0.8, 0.9))
    assert (round(ours["unigram_test"], 1), round(ours["bigram_test"], 1), ours["lambda"]) == (639.3, 208.6, 0.7)
    assert ours["test_tokens"] == 82_430
    tuned = count_baseline(cfg)  # the exact maximiser moves lambda a little and the test score barely
    assert 0.6 < tuned["lambda"] < 0.8 and abs(tuned["bigram_test"] - 208.6) < 0.5
