"""The MSR Sentence Completion Challenge (Zweig & Burges 2012; Tran et al. 2016, section 6).

Each of the 1,040 questions is a sentence from a Sherlock Holmes novel with one word replaced
by ``_____`` and five candidate words, exactly one of them right::

    I have it from the same source that you are both an orphan and a bachelor and are _____
    alone in London.        a) crying  b) instantaneously  c) residing  d) matched  e) walking

A language model answers by filling in each candidate, scoring the whole sentence, and picking
the most probable one; chance is 20%. Sentences are tokenized like the training text
(:func:`mlm.data.holmes.tokenize`) and scored under the sentence protocol: ``<bos> w1 .. wn``
predicts ``w1 .. wn <eos>``, state reset per sentence, words outside the vocabulary read as
``<unk>``. ``scope="sentence"`` sums the log-probabilities of all n+1 targets (the paper's
criterion); ``scope="from-blank"`` sums only the targets from the filled-in word to ``<eos>``
(the words before the blank have the same probability under every candidate anyway, so the
two scopes pick the same answer for a left-to-right model; they differ in the scores shown).

    questions = load_questions()                    # mlm.data.holmes; needs $MLM_DATA_DIR/msr_sentence_completion/
    result = complete(model, vocab, questions)      # any trained LanguageModel and its vocabulary
    print(result)                                   # accuracy 0.xx (n/1040), chance 0.20
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from mlm.data.holmes import LETTERS, Question, load_questions, tokenize
from mlm.data.vocab import BOS, Vocabulary

SCOPES = ("sentence", "from-blank")


# -- scoring ---------------------------------------------------------------------------------------
@torch.no_grad()
def sentence_log_probs(model, vocab: Vocabulary, sentences: Sequence[Sequence[str]],
                       start: Sequence[int] | None = None, device=None,
                       max_batch_tokens: int = 2048, unk_penalty: float = 0.0) -> torch.Tensor:
    """Log-probability (nats, float64) of each tokenized sentence under ``model``, shape (n,).

    Sentence protocol: inputs ``<bos> w1 .. wn``, targets ``w1 .. wn <eos>``, zero start state.
    ``start[i]`` skips the first targets of sentence i (target j is w_{j+1}, target n is
    ``<eos>``); None scores all n+1. Sentences are sorted by length and packed into batches of
    at most ``max_batch_tokens`` positions (which bounds the (batch, time, vocab) logits); the
    order of the result is the order of ``sentences``. ``unk_penalty`` (nats) is subtracted for
    every scored ``<unk>`` target: log P(w) = log P(<unk>) - penalty spreads the probability of
    ``<unk>`` over the words it stands for (see :func:`uniform_unk_penalty`).
    """
    device = device or next(model.parameters()).device
    was_training = model.training
    model.eval()
    ids = [[vocab.bos_id] + vocab.encode(s) + [vocab.eos_id] for s in sentences]
    starts = [0] * len(ids) if start is None else list(start)
    if len(starts) != len(ids):
        raise ValueError(f"start has {len(starts)} entries for {len(ids)} sentences")
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    scores = torch.zeros(len(ids), dtype=torch.float64)
    i = 0
    while i < len(order):
        # Sorted by length: the last sentence of a chunk is its longest, so grow the chunk while
        # rows x width stays within the budget.
        end = i + 1
        while end < len(order) and (end + 1 - i) * (len(ids[order[end]]) - 1) <= max_batch_tokens:
            end += 1
        chunk = order[i:end]
        width = len(ids[chunk[-1]]) - 1
        inputs = torch.full((len(chunk), width), vocab.pad_id, dtype=torch.long)
        targets = torch.full((len(chunk), width), vocab.pad_id, dtype=torch.long)
        mask = torch.zeros((len(chunk), width), dtype=torch.bool)  # real input positions
        scored = torch.zeros((len(chunk), width), dtype=torch.bool)  # targets that count
        for r, j in enumerate(chunk):
            seq = ids[j]
            n = len(seq) - 1
            inputs[r, :n] = torch.tensor(seq[:-1])
            targets[r, :n] = torch.tensor(seq[1:])
            mask[r, :n] = True
            scored[r, min(starts[j], n):n] = True
        inputs, targets, mask, scored = (t.to(device) for t in (inputs, targets, mask, scored))
        out = model(inputs, mask=mask)
        logits = out.logits.float()  # (batch, time, vocab)
        nll = F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1), reduction="none")
        nll = torch.where(scored, nll.view(len(chunk), width), torch.zeros((), device=nll.device))  # padding never counts
        logp = -nll.double().sum(dim=1)  # (batch,)
        if unk_penalty:
            logp = logp - unk_penalty * ((targets == vocab.unk_id) & scored).sum(dim=1).double()
        scores[torch.tensor(chunk)] = logp.cpu()
        i += len(chunk)
    model.train(was_training)
    return scores


@dataclass
class QuestionResult:
    id: int
    candidates: tuple[str, ...]
    scores: list[float]  # log-probability of each filled-in sentence (nats)
    chosen: int  # index of the best-scoring candidate (the first one on a tie)
    answer: int
    oov: tuple[bool, ...] = ()  # per candidate: outside the vocabulary (scored as <unk>)

    @property
    def correct(self) -> bool:
        return self.chosen == self.answer

    @property
    def tie(self) -> bool:
        """The best score is shared (e.g. two candidates both outside the vocabulary)."""
        return sum(s == self.scores[self.chosen] for s in self.scores) > 1


@dataclass
class CompletionResult:
    details: list[QuestionResult]
    scope: str = "sentence"
    notes: dict = field(default_factory=dict)

    @property
    def total(self) -> int:
        return len(self.details)

    @property
    def num_correct(self) -> int:
        return sum(d.correct for d in self.details)

    @property
    def accuracy(self) -> float:
        return self.num_correct / max(self.total, 1)

    @property
    def ties(self) -> int:
        return sum(d.tie for d in self.details)

    @property
    def in_vocab(self) -> list[QuestionResult]:
        """The questions whose five candidates are all in the vocabulary (no <unk> decides)."""
        return [d for d in self.details if not any(d.oov)]

    @property
    def accuracy_in_vocab(self) -> float:
        return sum(d.correct for d in self.in_vocab) / max(len(self.in_vocab), 1)

    def __str__(self) -> str:
        return (f"accuracy {self.accuracy:.4f} ({self.num_correct}/{self.total}), chance 0.20; "
                f"{self.accuracy_in_vocab:.4f} on the {len(self.in_vocab)} questions without an unknown candidate; "
                f"scope {self.scope}, {self.ties} question(s) with a tied best score")

    def to_dict(self) -> dict:
        return {"accuracy": self.accuracy, "correct": self.num_correct, "total": self.total, "scope": self.scope,
                "ties": self.ties, "accuracy_in_vocab": self.accuracy_in_vocab, "in_vocab": len(self.in_vocab),
                **self.notes,
                "questions": [{"id": d.id, "chosen": LETTERS[d.chosen], "answer": LETTERS[d.answer],
                               "correct": d.correct, "scores": d.scores} for d in self.details]}


def complete(model, vocab: Vocabulary, questions: Sequence[Question] | None = None, scope: str = "sentence",
             data_dir=None, device=None, max_batch_tokens: int = 2048, unk_penalty: float = 0.0) -> CompletionResult:
    """Answer every question with ``model``: the candidate whose sentence is most probable.

    All 5 x len(questions) sentences are scored in length-sorted batches. ``scope`` is
    "sentence" (all targets, the paper's criterion) or "from-blank" (the targets from the
    filled-in word to ``<eos>``). ``questions`` default to the 1,040 of the challenge.
    ``unk_penalty`` (nats per ``<unk>`` target, default 0) keeps a candidate outside the
    vocabulary from borrowing the whole probability of ``<unk>``; see :func:`uniform_unk_penalty`.
    """
    if scope not in SCOPES:
        raise ValueError(f"scope must be one of {', '.join(SCOPES)}, got {scope!r}")
    if questions is None:
        questions = load_questions(data_dir)
    sentences, starts = [], []
    for q in questions:
        blank = q.blank_index if scope == "from-blank" else 0
        for k in range(len(q.candidates)):
            sentences.append(q.candidate_tokens(k))
            starts.append(blank)
    # Candidates that are the same sentence once encoded (e.g. two words both outside the vocabulary,
    # both <unk>) are scored once, so they tie exactly instead of differing by batching noise.
    index, unique = [], {}
    for tokens, start in zip(sentences, starts):
        index.append(unique.setdefault((tuple(vocab.encode(tokens)), start), len(unique)))
    first = {i: k for k, i in reversed(list(enumerate(index)))}  # one representative per unique sentence
    unique_scores = sentence_log_probs(model, vocab, [sentences[first[i]] for i in range(len(unique))],
                                       [starts[first[i]] for i in range(len(unique))], device=device,
                                       max_batch_tokens=max_batch_tokens, unk_penalty=unk_penalty)
    scores = unique_scores[torch.tensor(index, dtype=torch.long)]
    details, pos = [], 0
    for q in questions:
        s = scores[pos:pos + len(q.candidates)].tolist()
        pos += len(q.candidates)
        best = max(range(len(s)), key=lambda k: (s[k], -k))
        oov = tuple(any(w not in vocab for w in tokenize(c)) for c in q.candidates)
        details.append(QuestionResult(q.id, q.candidates, s, best, q.answer, oov))
    return CompletionResult(details, scope, {"oov": oov_stats(questions, vocab), "unk_penalty": unk_penalty})


class UnigramLM(torch.nn.Module):
    """A context-free baseline: every position predicts the training word frequencies (add-one
    smoothed ``vocab.counts``). The challenge picked candidates of similar frequency, so this
    model should be near chance; it also has the interface :func:`complete` needs."""

    def __init__(self, vocab: Vocabulary):
        super().__init__()
        counts = torch.tensor(vocab.counts, dtype=torch.float64) + 1.0
        never = [vocab.pad_id] + ([vocab.stoi[BOS]] if BOS in vocab else [])  # never a target
        counts[never] = 0.0
        log_p = torch.log(counts / counts.sum()).clamp(min=-1e9).float()  # (vocab,)
        self.log_p = torch.nn.Parameter(log_p, requires_grad=False)

    def forward(self, tokens, state=None, reset=None, mask=None, memory=None):
        from mlm.models.language_model import LMOutput

        return LMOutput(self.log_p.expand(*tokens.shape, -1), state)  # (batch, time, vocab)


class BigramLM(torch.nn.Module):
    """The interpolated bigram of :mod:`mlm.baselines` with the interface :func:`complete` needs.

    Position t predicts ``lam c(v w) / c(v) + (1 - lam) p1(w)`` from the input v at t (the
    previous token, ``<bos>`` at a sentence start); an unseen history falls back to ``p1``.
    Logits are log-probabilities, so the scorer's softmax leaves them unchanged. Build it with
    :func:`bigram_lm` to count exactly the training tokens a config's models see.
    """

    def __init__(self, counts, lam: float):
        super().__init__()
        self.counts, self.lam = counts, float(lam)
        self.anchor = torch.nn.Parameter(torch.zeros(()), requires_grad=False)  # the scorer reads the device from it

    def forward(self, tokens, state=None, reset=None, mask=None, memory=None):
        from mlm.models.language_model import LMOutput

        unique, inverse = torch.unique(tokens.cpu(), return_inverse=True)  # the distinct histories
        size = self.counts.vocab_size
        history = np.repeat(unique.numpy(), size)  # (unique * vocab,) every (history, word) pair
        word = np.tile(np.arange(size), len(unique))
        with np.errstate(divide="ignore"):  # words that are never targets get log 0
            rows = self.counts.log_probs(history, word, self.lam).reshape(len(unique), size)
        rows = torch.from_numpy(rows).clamp(min=-1e9).float()  # (unique, vocab)
        return LMOutput(rows[inverse].to(tokens.device), state)  # (batch, time, vocab)


def bigram_lm(cfg, corpus=None) -> BigramLM:
    """The interpolated bigram counted on the training events of ``cfg`` (``lam`` tuned on its
    validation events), exactly as :func:`mlm.baselines.count_baseline` counts it."""
    from mlm.baselines import fit_count_model, split_events
    from mlm.training import load_data

    corpus = corpus if corpus is not None else load_data(cfg)
    train, valid = (split_events(cfg, corpus, split) for split in ("train", "valid"))
    return BigramLM(*fit_count_model(corpus.vocab, train, valid))


def uniform_unk_penalty(corpus) -> float:
    """log(number of training word types outside the vocabulary): the penalty that shares the
    probability of ``<unk>`` equally among the words it replaced (0 when none were)."""
    types = {w for line in corpus.lines["train"] for w in line}
    outside = sum(w not in corpus.vocab for w in types)
    return math.log(outside) if outside > 1 else 0.0


def oov_stats(questions: Sequence[Question], vocab: Vocabulary) -> dict:
    """How much of the questions the vocabulary covers.

    ``token_oov_rate``: share of the tokens of the correct sentences outside the vocabulary;
    ``candidate_oov_rate``: share of the 5 x n candidate words outside it;
    ``answer_oov``: questions whose correct word is outside it; ``any_candidate_oov``:
    questions where at least one candidate is.
    """
    tokens = [t for q in questions for t in q.candidate_tokens(q.answer)]
    cand = [[tokenize(c) for c in q.candidates] for q in questions]
    out_of = lambda words: any(w not in vocab for w in words)  # noqa: E731
    cand_flat = [c for row in cand for c in row]
    return {
        "token_oov_rate": sum(t not in vocab for t in tokens) / max(len(tokens), 1),
        "candidate_oov_rate": sum(out_of(c) for c in cand_flat) / max(len(cand_flat), 1),
        "answer_oov": sum(out_of(row[q.answer]) for q, row in zip(questions, cand)),
        "any_candidate_oov": sum(any(out_of(c) for c in row) for row in cand),
    }


def format_question(q: Question, result: QuestionResult | None = None) -> str:
    """The question with its candidates; ``*`` marks the answer, ``<`` the model's choice, with scores."""
    parts = []
    for k, cand in enumerate(q.candidates):
        mark = ("*" if k == q.answer else "") + ("<" if result is not None and k == result.chosen else "")
        score = f" {result.scores[k]:.1f}" if result is not None else ""
        parts.append(f"{LETTERS[k]}) {cand}{mark}{score}")
    return f"{q.id}. {q.text}\n   " + "   ".join(parts)


def chance_accuracy() -> float:
    return 1 / len(LETTERS)


def binomial_stderr(accuracy: float, n: int) -> float:
    """Standard error of an accuracy measured on n questions (about 1.5 points for n=1040)."""
    return math.sqrt(max(accuracy * (1 - accuracy), 0.0) / max(n, 1))
