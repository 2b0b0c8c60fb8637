"""The MSR sentence completion scorer: question files and their errors, exact sentence scores under a
stub model with known log-probabilities, batching that changes no score, a tiny trained LSTM that
answers hand-made questions, and ``python -m mlm complete`` on a run folder."""

from __future__ import annotations

import json
import math
from collections import Counter
from types import SimpleNamespace

import pytest
import torch
from torch import nn

from mlm.cli import main
from mlm.completion import UnigramLM, complete, oov_stats, sentence_log_probs, uniform_unk_penalty
from mlm.data.batching import SentenceBatches
from mlm.data.corpora import DataError
from mlm.data.holmes import LETTERS, Question, load_questions, read_questions
from mlm.data.vocab import BOS, EOS, PAD, UNK, Vocabulary
from mlm.models import LanguageModel
from test_holmes import _REAL, fake_holmes  # noqa: F401  (fixture)

pytestmark = pytest.mark.usefixtures("no_data_env")

HEADER_Q = "id,question,a),b),c),d),e)\n"
HEADER_A = "id,answer\n"


def write_questions(tmp_path, questions: str, answers: str):
    q, a = tmp_path / "testing_data.csv", tmp_path / "test_answer.csv"
    q.write_text(questions)
    a.write_text(answers)
    return q, a


# -- reading the question files -----------------------------------------------------------------
def test_read_questions_parses_quoted_rows_and_answer_letters(tmp_path):
    q, a = write_questions(
        tmp_path,
        HEADER_Q + '7,"Well , Watson , _____ it.",see,saw,seen,seeing,sees\n8,The _____ sat.,cat,dog,man,hat,mat\n',
        HEADER_A + "8,e\n7,b\n")
    questions = read_questions(q, a)
    assert questions == [Question(7, "Well , Watson , _____ it.", ("see", "saw", "seen", "seeing", "sees"), 1),
                         Question(8, "The _____ sat.", ("cat", "dog", "man", "hat", "mat"), 4)]
    assert questions[0].candidate_tokens(1) == ["well", ",", "watson", ",", "saw", "it", "."]
    assert questions[0].blank_index == 4 and questions[1].blank_index == 1


@pytest.mark.parametrize("questions, answers, message", [
    ("id,question,a,b,c,d,e\n1,The _____ sat.,a,b,c,d,e\n", HEADER_A + "1,a\n", "expected the header"),
    (HEADER_Q + "1,The _____ sat.,a,b,c,d\n", HEADER_A + "1,a\n", "line 2: expected 7 fields"),
    (HEADER_Q + "1,The cat sat.,a,b,c,d,e\n", HEADER_A + "1,a\n", "exactly one blank"),
    (HEADER_Q + "1,The _____ _____.,a,b,c,d,e\n", HEADER_A + "1,a\n", "exactly one blank"),
    (HEADER_Q + "1,The _____ sat.,a,b,,d,e\n", HEADER_A + "1,a\n", "candidate.*c hold no word"),
    (HEADER_Q + "x,The _____ sat.,a,b,c,d,e\n", HEADER_A + "1,a\n", "not a number"),
    (HEADER_Q + "1,The _____ sat.,a,b,c,d,e\n1,A _____.,a,b,c,d,e\n", HEADER_A + "1,a\n", "appears twice"),
    (HEADER_Q + "1,The _____ sat.,a,b,c,d,e\n", HEADER_A + "1,f\n", "not one of a, b, c, d, e"),
    (HEADER_Q + "1,The _____ sat.,a,b,c,d,e\n", HEADER_A + "2,a\n", "question 1 has no answer"),
    (HEADER_Q + "1,The _____ sat.,a,b,c,d,e\n", HEADER_A + "1,a\n3,b\n", r"answers question\(s\) \[3\]"),
    (HEADER_Q, HEADER_A, "holds no questions"),
])
def test_malformed_question_files_give_clear_errors(tmp_path, questions, answers, message):
    q, a = write_questions(tmp_path, questions, answers)
    with pytest.raises(DataError, match=message) as err:
        read_questions(q, a)
    assert "testing_data.csv" in str(err.value) or "test_answer.csv" in str(err.value)


# -- exact scores under a stub model ------------------------------------------------------------------
WORDS = ["the", "cat", "dog", "sat", "ran", "on", "mat", ".", "a"]
VOCAB = Vocabulary([PAD, EOS, UNK, BOS] + WORDS)


class UnigramStub(nn.Module):
    """Every position predicts the same fixed distribution: a sentence's log-probability is the sum
    of its targets' log-probabilities, computable by hand."""

    def __init__(self, probs: dict[str, float]):
        super().__init__()
        p = torch.tensor([probs.get(w, 0.0) for w in VOCAB.itos], dtype=torch.float64)
        self.log_p = nn.Parameter(torch.log(p / p.sum()).float(), requires_grad=False)

    def forward(self, tokens, state=None, reset=None, mask=None, memory=None):
        return SimpleNamespace(logits=self.log_p.expand(*tokens.shape, -1))  # (batch, time, vocab)


PROBS = {EOS: 4, UNK: 1, PAD: 1, BOS: 1, "the": 8, "cat": 3, "dog": 2, "sat": 4, "ran": 1, "on": 4, "mat": 1,
         ".": 4, "a": 6}


def _by_hand(words) -> float:
    total = sum(PROBS.values())
    return sum(math.log(PROBS.get(w, PROBS[UNK]) / total) for w in list(words) + [EOS])


def test_scores_are_sentence_log_probabilities_and_accuracy_is_exact():
    """The unigram stub prefers the candidate with the largest probability: questions 1 and 2 have it
    as the answer, question 3 does not, so the accuracy is exactly 2/3."""
    questions = [Question(1, "The _____ sat on the mat.", ("dog", "cat", "mat", "ran", "zebra"), 1),
                 Question(2, "A cat _____.", ("ran", "sat", "mat", "dog", "cat"), 1),
                 Question(3, "The dog _____ on a mat.", ("sat", "ran", "mat", "dog", "a"), 1)]
    result = complete(UnigramStub(PROBS), VOCAB, questions)
    for q, d in zip(questions, result.details):
        expected = [_by_hand(q.candidate_tokens(k)) for k in range(5)]
        assert d.scores == pytest.approx(expected, abs=1e-5)
    assert [d.chosen for d in result.details] == [1, 1, 4]  # "a" (6) beats "sat" (4) in question 3
    assert [d.correct for d in result.details] == [True, True, False]
    assert result.num_correct == 2 and result.total == 3 and result.accuracy == pytest.approx(2 / 3)
    # "zebra" is outside the vocabulary and scores as <unk>
    assert result.details[0].scores[4] == pytest.approx(_by_hand(["the", UNK, "sat", "on", "the", "mat", "."]), abs=1e-5)
    assert "accuracy 0.6667 (2/3)" in str(result)
    assert result.to_dict()["questions"][2] == {"id": 3, "chosen": "e", "answer": "b", "correct": False,
                                                "scores": result.details[2].scores}


def test_unk_penalty_and_the_in_vocabulary_accuracy():
    """The penalty is subtracted once per scored <unk> target; questions with an unknown candidate
    are left out of accuracy_in_vocab."""
    questions = [Question(1, "The _____ sat.", ("zebra", "cat", "dog", "ran", "mat"), 1),
                 Question(2, "A _____.", ("cat", "dog", "sat", "ran", "mat"), 3)]
    plain = complete(UnigramStub(PROBS), VOCAB, questions)
    penalised = complete(UnigramStub(PROBS), VOCAB, questions, unk_penalty=2.5)
    assert penalised.details[0].scores[0] == pytest.approx(plain.details[0].scores[0] - 2.5)
    assert penalised.details[0].scores[1:] == pytest.approx(plain.details[0].scores[1:])
    assert plain.details[0].oov == (True, False, False, False, False) and not any(plain.details[1].oov)
    assert [d.correct for d in plain.details] == [True, False]
    assert len(plain.in_vocab) == 1 and plain.accuracy_in_vocab == 0.0 and plain.accuracy == 0.5
    corpus = SimpleNamespace(lines={"train": [["the", "zebra", "okapi", "gnu"]]}, vocab=VOCAB)
    assert uniform_unk_penalty(corpus) == pytest.approx(math.log(3))


def test_unigram_baseline_prefers_the_frequent_candidate():
    vocab = Vocabulary([PAD, EOS, UNK, BOS, "the", "cat", "dog"], [0, 10, 2, 0, 30, 5, 1])
    q = Question(1, "The _____.", ("dog", "cat", "the", "zebra", "dog"), 1)
    d = complete(UnigramLM(vocab), vocab, [q]).details[0]
    total = 11 + 3 + 31 + 6 + 2  # add-one counts of the five symbols that can be targets (not <pad>, <bos>)
    # "the X ." -> the, X, <unk> (the period is not in this vocabulary), <eos>
    expected = [math.log(31 * c * 3 * 11 / total ** 4) for c in (2, 6, 31, 3, 2)]
    assert d.scores == pytest.approx(expected, abs=1e-5) and d.chosen == 2


def test_from_blank_scope_drops_the_words_before_the_blank():
    q = Question(1, "The cat _____ on the mat.", ("sat", "ran", "dog", "the", "a"), 0)
    full = complete(UnigramStub(PROBS), VOCAB, [q]).details[0]
    tail = complete(UnigramStub(PROBS), VOCAB, [q], scope="from-blank").details[0]
    prefix = _by_hand(["the", "cat"]) - _by_hand([])  # the two words before the blank, without <eos>
    assert tail.scores == pytest.approx([s - prefix for s in full.scores], abs=1e-5)
    assert tail.chosen == full.chosen
    with pytest.raises(ValueError, match="scope"):
        complete(UnigramStub(PROBS), VOCAB, [q], scope="words")


def test_ties_pick_the_first_candidate_and_are_counted():
    q = Question(1, "The _____.", ("zebra", "okapi", "mat", "ran", "dog"), 0)  # zebra = okapi = <unk>
    result = complete(UnigramStub({**PROBS, UNK: 10}), VOCAB, [q])
    assert result.details[0].chosen == 0 and result.details[0].tie and result.ties == 1


def test_candidates_that_encode_alike_tie_exactly_under_a_real_model():
    """Two out-of-vocabulary candidates are the same sentence once encoded: equal scores, first one wins,
    even when the batching would otherwise put them in differently padded batches."""
    torch.manual_seed(0)
    model = LanguageModel(len(VOCAB), 8, 8, 2)
    q = Question(1, "The _____ sat on the mat.", ("dog", "zebra", "okapi", "cat", "a"), 2)
    result = complete(model, VOCAB, [q], max_batch_tokens=9)
    d = result.details[0]
    assert d.scores[1] == d.scores[2]
    if d.chosen in (1, 2):
        assert d.chosen == 1 and d.tie


def test_batching_changes_no_score():
    """Length-sorted, padded batches of any size give each sentence's own log-probability."""
    torch.manual_seed(0)
    model = LanguageModel(len(VOCAB), 8, 8, 2)
    sentences = [["the", "cat", "sat"], ["a"], ["the", "dog", "ran", "on", "the", "mat", "."], [], ["mat", "x"]]
    one_batch = sentence_log_probs(model, VOCAB, sentences, max_batch_tokens=10_000)
    tiny_batches = sentence_log_probs(model, VOCAB, sentences, max_batch_tokens=7)
    per_target = []  # log-probability of each target, one sentence at a time
    with torch.no_grad():
        for s in sentences:
            ids = [VOCAB.bos_id] + VOCAB.encode(s) + [VOCAB.eos_id]
            logits = model(torch.tensor([ids[:-1]])).logits[0]  # (time, vocab)
            per_target.append(torch.log_softmax(logits, -1).gather(1, torch.tensor(ids[1:])[:, None])[:, 0].tolist())
    assert one_batch.tolist() == pytest.approx([sum(t) for t in per_target], abs=1e-4)
    assert tiny_batches.tolist() == pytest.approx([sum(t) for t in per_target], abs=1e-4)
    starts = [1, 0, 3, 0, 2]  # skip the first targets of each sentence
    later = sentence_log_probs(model, VOCAB, sentences, start=starts, max_batch_tokens=7)
    assert later.tolist() == pytest.approx([sum(t[k:]) for t, k in zip(per_target, starts)], abs=1e-4)


@pytest.mark.parametrize("preset", ["tran2016-ptb-rm-tm-g", "tran2016-ptb-rmr-notm-l"])
def test_memory_models_score_padded_batches_like_single_sentences(preset):
    """RM and RMR work with the scorer: a sentence scores the same alone and in a padded batch."""
    from mlm.configs import get_preset
    from mlm.training import build_model

    torch.manual_seed(0)
    cfg = get_preset(preset, overrides={"model.embed_size": 8, "model.hidden_size": 8, "model.memory_size": 3})
    model = build_model(cfg, len(VOCAB), VOCAB.pad_id)
    sentences = [["the", "cat", "sat", "on", "the", "mat", "."], ["a"], ["dog", "ran", "."], []]
    batched = sentence_log_probs(model, VOCAB, sentences)
    alone = [float(sentence_log_probs(model, VOCAB, [s])[0]) for s in sentences]
    assert batched.tolist() == pytest.approx(alone, abs=1e-5)


def test_a_tiny_trained_lstm_answers_hand_made_questions():
    """Trained on three sentence patterns, an LSTM fills each blank with the verb of its pattern."""
    torch.manual_seed(0)
    lines = [s.split() for s in ("the cat sat on the mat .", "the dog ran to a tree .", "a bird flew over the house .")] * 20
    vocab = Vocabulary.build(lines)
    model = LanguageModel(len(vocab), 16, 32, 1)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
    batches = SentenceBatches([vocab.encode(s) for s in lines], vocab.bos_id, vocab.eos_id, vocab.pad_id, 12,
                              shuffle=True)
    for _ in range(15):
        for batch in batches:
            logits = model(batch.inputs, mask=batch.mask).logits
            loss = nn.functional.cross_entropy(logits[batch.mask], batch.targets[batch.mask])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    questions = [Question(1, "The cat _____ on the mat.", ("ran", "flew", "sat", "house", "tree"), 2),
                 Question(2, "The dog _____ to a tree.", ("ran", "flew", "sat", "house", "mat"), 0),
                 Question(3, "A bird _____ over the house.", ("sat", "ran", "cat", "dog", "flew"), 4)]
    result = complete(model, vocab, questions)
    assert result.accuracy == 1.0, [d.scores for d in result.details]
    assert oov_stats(questions, vocab) == {"token_oov_rate": 0.0, "candidate_oov_rate": 0.0, "answer_oov": 0,
                                           "any_candidate_oov": 0}


# -- a run folder through the command line -----------------------------------------------------------
def test_complete_command_scores_a_trained_run(fake_holmes, tmp_path, capsys):  # noqa: F811
    from mlm.configs import get_preset
    from mlm.training import CheckpointError, load_run, train

    cfg = get_preset("synthetic-tiny", overrides={"data.corpus": "holmes", "data.data_dir": str(fake_holmes),
                                                  "data.protocol": "sentence", "train.epochs": 2})
    run_dir = tmp_path / "run"
    trained = train(cfg, run_dir=run_dir, progress=False)
    loaded = load_run(run_dir)
    assert loaded.config.to_dict() == cfg.to_dict() and loaded.result["best_epoch"] == trained.result["best_epoch"]
    for (name, a), b in zip(trained.model.state_dict().items(), loaded.model.state_dict().values()):
        assert torch.equal(a, b), name
    out_json = tmp_path / "completion.json"
    assert main(["complete", str(run_dir / "best.pt"), "--show", "2", "--json", str(out_json)]) == 0
    printed = capsys.readouterr().out
    saved = json.loads(out_json.read_text())
    assert saved["total"] == 2 and f"({saved['correct']}/2)" in printed and "1. Mr. Holmes _____ in." in printed
    expected = complete(loaded.model, loaded.corpus.vocab, load_questions(fake_holmes))
    assert saved["accuracy"] == expected.accuracy and saved["questions"][0]["scores"] == expected.details[0].scores
    assert main(["complete", str(run_dir), "--unk-penalty", "uniform"]) == 0
    assert main(["complete", str(run_dir), "--unk-penalty", "lots"]) == 2
    with pytest.raises(CheckpointError, match="config.json"):
        load_run(tmp_path)


# -- the real questions (skipped without the shared data) -----------------------------------------------
@pytest.mark.skipif(_REAL is None, reason="the MSR questions are not available (set MLM_DATA_DIR)")
def test_real_questions_and_answer_key():
    questions = load_questions(_REAL, download=False)
    assert len(questions) == 1040 and [q.id for q in questions] == list(range(1, 1041))
    # the answer distribution stated in SOURCE.md of the shared data
    assert Counter(LETTERS[q.answer] for q in questions) == {"a": 207, "b": 203, "c": 201, "d": 225, "e": 204}
    first = questions[0]
    assert first.candidates[first.answer] == "residing" and first.blank_index == 18
    assert all(len(q.candidate_tokens(k)) == len(q.candidate_tokens(0)) for q in questions for k in range(5))


def test_bigram_baseline_scores_sentences_like_the_counts():
    """BigramLM gives each sentence the sum of the interpolated bigram's log-probabilities, <bos> to <eos>."""
    import numpy as np

    from mlm.baselines import BigramCountModel
    from mlm.completion import BigramLM

    lines = [s.split() for s in ("the cat sat .", "the dog sat .", "a cat ran .")]
    vocab = Vocabulary.build(lines)
    events = [(vocab.bos_id if k == 0 else vocab.stoi[line[k - 1]], vocab.stoi[w])
              for line in lines for k, w in enumerate(line + [EOS])]
    history, target = (np.array(x) for x in zip(*events))
    counts = BigramCountModel.fit(history, target, len(vocab), never_targets=[vocab.pad_id, vocab.bos_id])
    lm = BigramLM(counts, lam=0.7)
    sentence = "the cat ran .".split()
    ids = [vocab.bos_id] + [vocab.stoi[w] for w in sentence] + [vocab.eos_id]
    by_hand = counts.log_probs(np.array(ids[:-1]), np.array(ids[1:]), 0.7).sum()
    assert float(sentence_log_probs(lm, vocab, [sentence])[0]) == pytest.approx(by_hand, abs=1e-4)
    # "cat ran" was seen, "dog ran" was not: the bigram picks cat; the unigram also counts "sat" twice
    q = Question(1, "The _____ ran.", ("dog", "cat", "sat", "a", "ran"), 1)
    assert complete(lm, vocab, [q]).details[0].chosen == 1
    assert complete(lm, vocab, [q]).details[0].scores[1] > complete(lm, vocab, [q]).details[0].scores[0]
