# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: jupyter,tags,-all
#     formats: ipynb,py:percent
#     notebook_metadata_filter: kernelspec,jupytext,-jupytext.text_representation.jupytext_version
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Chapter 0 — Language modelling, perplexity, and the LSTM
#
# Every model in this book does one thing: it reads a text one word at a time and, before each word, says how
# likely every word of the vocabulary is to come next. This chapter sets up what the rest of the book needs:
#
# 1. what a language model computes, and why **perplexity** is the number everyone reports;
# 2. the two corpora we train on (Penn Treebank and WikiText-2), and the count models that set the first bar;
# 3. the three ways the papers feed a corpus to a recurrent network (the **training protocols**);
# 4. the LSTM, built here from its equations and checked against PyTorch's fused version;
# 5. the key-value recall task, on which later chapters watch a memory work;
# 6. how many runs it takes to say that one model beats another.

# %% tags=["parameters"]
# The parameters every chapter takes (papermill can set them).
size = "reduced"  # "reduced" (minutes on a CPU) or "full"
device = "auto"  # "auto", "cpu", "cuda" or "mps"
seed = 0
data_dir = None  # None: $MLM_DATA_DIR, then ~/.cache/mlm

# %%
import math

import matplotlib.pyplot as plt
import numpy as np
import torch
from torch import nn

from mlm.data import DocumentBatches, SentenceBatches, StreamBatches, load_corpus
from mlm.models import LanguageModel
from mlm.utils import set_seed

set_seed(seed)

# %% [markdown]
# ## 1. What a language model computes
#
# A sentence is a sequence of words $w_1, \dots, w_n$. By the chain rule of probability its probability
# factorises into one prediction per position:
#
# $$ p(w_1, \dots, w_n) = \prod_{t=1}^{n} p(w_t \mid w_1, \dots, w_{t-1}). $$
#
# A *language model* is anything that produces those conditional distributions. A recurrent language model
# summarises the history $w_{<t}$ in a vector $h_{t-1}$ and turns it into a distribution over the vocabulary
# $V$ with a softmax: $p(\cdot \mid w_{<t}) = \mathrm{softmax}(W_{\text{out}} h_{t-1} + b_{\text{out}})$, where the
# output matrix $W_{\text{out}}$ has one row per word of $V$. Every sentence is followed by an
# end symbol `<eos>`, which the model must predict too, so a sentence of $n$ words costs $n + 1$ predictions.
#
# ### Perplexity
#
# We judge a model by the probability it gives to held-out text. Over a test set of $N$ predicted tokens, the
# average negative log-likelihood (the cross-entropy, in nats) is
#
# $$ \mathcal{L} = -\frac{1}{N} \sum_{t=1}^{N} \log p(w_t \mid w_{<t}), \qquad \text{perplexity} = e^{\mathcal{L}}. $$
#
# Perplexity reads as an *effective branching factor*: a model with perplexity 100 is, on average, as uncertain
# as if it chose uniformly among 100 words. A model that spreads its probability evenly over $|V|$ words has
# perplexity exactly $|V|$; a perfect model has perplexity 1.
#
# Two perplexities can be compared only if three things agree: **which tokens are counted** (the book counts
# every word and every `<eos>`, never padding), **which vocabulary** maps them (a smaller one turns more words
# into `<unk>`, the token that stands for every word outside it, and makes the task easier), and **what the
# model may condition on** (the protocol, section 3). A quick check of the uniform model:

# %%
vocab_size = 10_000
targets = torch.randint(vocab_size, (1000,))
uniform_logits = torch.zeros(1000, vocab_size)  # equal scores for every word
nll = nn.functional.cross_entropy(uniform_logits, targets)  # mean negative log-likelihood
print(f"uniform model over {vocab_size} words: perplexity {math.exp(nll.item()):.1f}")

# %% [markdown]
# ## 2. The corpora
#
# Apart from the synthetic task of section 5, every model in this book trains on one of two standard corpora,
# both tokenized, with rare words already replaced by `<unk>`:
#
# * **Penn Treebank (PTB)**, in the version prepared by Mikolov et al. (2010): Wall Street Journal text,
#   lower-cased, numbers replaced by `N`, a 10,000-word vocabulary, one sentence per line.
# * **WikiText-2** (Merity et al., 2017): Wikipedia "Good" and "Featured" articles, case and punctuation kept,
#   a 33,278-word vocabulary, one *paragraph* per line, each article opened by a ` = Title = ` line.
#
# `mlm.data.load_corpus` finds the files in the data directory, checks each against its published checksum
# (a missing file gets an error that says where to put it) and reads it. The vocabulary adds two symbols of
# ours: `<pad>` for padding and `<bos>`, the start symbol of the sentence protocol.

# %%
ptb = load_corpus("ptb", data_dir)
wt2 = load_corpus("wikitext-2", data_dir)
print(f"{'corpus':<11} {'split':<6} {'lines':>7} {'tokens':>10} {'types':>7} {'<unk> %':>8} {'docs':>5}")
for corpus in (ptb, wt2):
    for split, s in corpus.stats().items():
        print(f"{corpus.name:<11} {split:<6} {s['lines']:>7,} {s['tokens']:>10,} {s['types']:>7,} "
              f"{100 * s['unk'] / s['words']:>8.2f} {s['documents']:>5}")

# %% tags=["remove-input"] jupyter={"source_hidden": true}
stats = {c.name: c.stats() for c in (ptb, wt2)}
assert [stats["ptb"][s]["tokens"] for s in ("train", "valid", "test")] == [929_589, 73_760, 82_430]
assert [stats["wikitext-2"][s]["tokens"] for s in ("train", "valid", "test")] == [2_088_628, 217_646, 245_569]
assert stats["ptb"]["train"]["types"] == 9_999 and stats["wikitext-2"]["train"]["types"] == 33_277
assert [stats["wikitext-2"][s]["documents"] for s in ("train", "valid", "test")] == [600, 60, 60]
assert len(ptb.vocab) == 10_002 and len(wt2.vocab) == 33_280
top = sorted(range(len(ptb.vocab)), key=lambda i: -ptb.vocab.counts[i])[:3]
assert [ptb.vocab.itos[i] for i in top] == ["the", "<unk>", "<eos>"]  # "<unk> (rank 2) ... <eos> (rank 3)"

# %% [markdown]
# *tokens* is words plus one `<eos>` per line: the number of predictions a model makes on that split, the $N$
# of perplexity (PTB: 929,589 / 73,760 / 82,430, the "929k / 73k / 82k" papers quote). *types* counts distinct
# words: PTB's vocabulary of 10,000 is 9,999 words and `<eos>`, to which ours adds `<pad>` and `<bos>`.
# WikiText-2 is about twice as large as PTB, has a vocabulary more than three times larger, and comes in
# 600 / 60 / 60 articles, which the document protocol (section 3) relies on; PTB, which has no article
# boundaries, counts as one document.
#
# Word frequencies fall off roughly as a power of their rank. In its simplest form, Zipf's law, the word of rank
# $r$ is $r$ times rarer than the most frequent one: a straight line of slope $-1$ on a log-log plot. The middle
# ranks run roughly parallel to it; the head is flatter, and the tail stops at the vocabulary cut, where rarer
# words became `<unk>`. Two of PTB's three most frequent types are not words: `<unk>` (rank 2) stands for every
# rare word and `<eos>` (rank 3) ends every sentence. This is why a softmax layer spends most of its parameters
# on words it rarely sees, and why smoothing (chapter 05) matters.

# %%
from mlm.plots import zipf

fig, ax = plt.subplots(figsize=(6.5, 4.2))
zipf({"PTB": ptb.vocab.counts, "WikiText-2": wt2.vocab.counts}, ax=ax)
ranks = np.arange(1, 10_001)
ax.loglog(ranks, max(ptb.vocab.counts) / ranks, "k:", label="1 / rank")  # from the most frequent type, "the"
ax.legend()
ax.set_title("Zipf plot of the training sets")
plt.show()

# %% [markdown]
# The two corpora also cut their text differently, which matters for the protocols of chapters 02 and 03:

# %%
lengths = {"PTB sentences": np.array([len(line) for line in ptb.lines["train"]]),
           "WikiText-2 paragraphs": np.array([len(l) for l in wt2.lines["train"] if l and l[0] != "="])}  # no headings
for name, n in lengths.items():
    print(f"{name:<22} mean {n.mean():5.1f} words, median {np.median(n):3.0f}, longest {n.max():3d}, "
          f"longer than 35: {(n > 35).mean():.0%}")

# %% tags=["remove-input"] jupyter={"source_hidden": true}
ptb_n, wt2_n = lengths.values()
assert 20.5 < ptb_n.mean() < 21.5 and (ptb_n > 35).mean() < 0.1 and wt2_n.mean() > 100 and wt2_n.max() > 300

# %% [markdown]
# PTB lines are sentences of about 21 words, and fewer than one in ten is longer than 35 words, the length at
# which Salton et al. (chapter 02) cut sentences. WikiText-2 lines are whole paragraphs, over a hundred words on
# average and sometimes several hundred: a "sentence" protocol on WikiText-2 first has to decide what a sentence
# is.
#
# ### Count-based baselines
#
# Before any neural network, two classic models give reference points. A **unigram** model ignores the
# history, $p(w_t \mid w_{<t}) = c(w_t) / N_{\text{train}}$, where $c(\cdot)$ counts occurrences in the training
# stream of $N_{\text{train}}$ tokens. An interpolated **bigram** model looks one word back and mixes in the
# unigram, so that pairs it never saw still get some probability:
# $p(w_t \mid w_{t-1}) = \lambda \, c(w_{t-1} w_t) / c(w_{t-1}) + (1 - \lambda)\, c(w_t) / N_{\text{train}}$,
# with $\lambda$ chosen on the validation set. `mlm.baselines` holds the counts, and every later chapter
# computes the same baseline on exactly the tokens its models train on: a neural model that does not beat it
# has learned nothing a table of word pairs could not.

# %%
from mlm.baselines import BigramCountModel, tune_lambda


def stream_events(corpus, split):
    """(history, target) pairs of the stream <eos> w1 w2 ... <eos> ... (section 3): every word and <eos>."""
    ids = [corpus.vocab.eos_id]
    for line in corpus.ids(split):
        ids += line + [corpus.vocab.eos_id]
    ids = np.array(ids)
    return ids[:-1], ids[1:]  # (N,), (N,)


ngram = {}
for corpus in (ptb, wt2):
    counts = BigramCountModel.fit(*stream_events(corpus, "train"), len(corpus.vocab))  # c(w), c(v w), c(v)
    lam = tune_lambda(counts, *stream_events(corpus, "valid"))  # the validation likelihood's maximum
    test = stream_events(corpus, "test")
    ngram[corpus.name] = {"unigram": counts.perplexity(*test, 0.0), "bigram": counts.perplexity(*test, lam)}
    print(f"{corpus.name:<11} test perplexity: unigram {ngram[corpus.name]['unigram']:6.1f}, "
          f"interpolated bigram (lambda = {lam:.2f}) {ngram[corpus.name]['bigram']:6.1f}")

# %% tags=["remove-input"] jupyter={"source_hidden": true}
from mlm.configs import get_preset

assert all(2.5 < r["unigram"] / r["bigram"] < 3.5 for r in ngram.values())  # "a factor of about three"
assert get_preset("zaremba2014-small").paper["test"] == 114.5  # Zaremba et al.'s Table 1, as cited
assert 0.5 < 114.5 / ngram["ptb"]["bigram"] < 0.6, ngram["ptb"]  # "a little over half"

# %% [markdown]
# Looking a single word back cuts perplexity by a factor of about three. Zaremba et al. (2014, Table 1) report a
# test perplexity of 114.5 for their small LSTM on the same PTB test set, a little over half the bigram's
# (chapter 01 trains it); the memory-augmented models of later chapters try to push further by looking further
# back.
#
# ## 3. Three training protocols
#
# A recurrent network is trained on windows of text: it is unrolled over a window of `bptt` steps, and the
# gradient flows back (backpropagation through time, BPTT) only within that window. When the state is carried
# into the next window but the gradient is cut at its start, that is *truncated* BPTT. The papers of this book
# cut the corpus into windows in three ways. `mlm.data` implements each as a *batcher* that builds its batches
# as tensors and marks every scored target in a boolean `mask`:
#
# | protocol | used by | a row of a batch is | the state between batches |
# |---|---|---|---|
# | **stream** | Zaremba et al., Press & Wolf, Xie et al., Kong et al. | a window of `bptt` tokens from one long stream | carried over (truncated BPTT) |
# | **sentence** | Salton et al., Tran et al. | one sentence: `<bos> w1 .. wn` predicting `w1 .. wn <eos>` | reset to zero |
# | **document** | Daniluk et al. | a window inside one document | carried within a document, reset at a new one |
#
# The stream protocol reads the corpus as `<eos> w1 w2 … <eos> w1 …`; the leading `<eos>` gives the very first
# word a history. The sentence protocol starts every sentence from `<bos>` instead, so a sentence of $n$ words
# again contributes $n + 1$ predictions. Here are the first rows of a small batch of each: stream on PTB's first
# validation sentences, sentence on two short ones (a padded, unscored position shows as `·`), and document on
# WikiText-2, since PTB has no articles. WikiText-2 separates its paragraphs and headings with blank lines, and
# a blank line, like any line, ends with an `<eos>`: hence the doubled `<eos>` around a heading.

# %%
def show_batch(title, batch, vocab, rows=2, width=12):
    print(title)
    for r in range(min(rows, batch.inputs.size(0))):
        words = [[vocab.itos[i] if m else "·" for i, m in zip(ids[r, :width].tolist(), batch.mask[r, :width].tolist())]
                 for ids in (batch.inputs, batch.targets)]
        reset = "" if batch.reset is None else f"   reset={bool(batch.reset[r])}"
        print(f"  row {r} inputs : {' '.join(words[0])}{reset}\n        targets: {' '.join(words[1])}")


v, w = ptb.vocab, wt2.vocab
few, short = ptb.ids("valid")[:4], [ptb.ids("valid")[i] for i in (29, 16)]  # two sentences of 7 and 10 words
show_batch("stream (bptt 12):", next(iter(StreamBatches(few, v.eos_id, v.pad_id, batch_size=2, bptt=12))), v)
show_batch("sentence (padded to the longer):", next(iter(SentenceBatches(short, v.bos_id, v.eos_id, v.pad_id, 2))), v)
show_batch("document (bptt 12; an article's first window has reset=True):",
           next(iter(DocumentBatches(wt2.ids("valid"), wt2.documents["valid"], w.eos_id, w.pad_id, 2, 12))), w)

# %% [markdown]
# The stream batcher cuts the token stream into `batch_size` equal parts, one per row, so row 1 starts halfway
# through the text and the next batch continues every row where it stopped: that is what lets the state carry
# over. Whatever the protocol, every token of a split is scored exactly once, so perplexities under different
# protocols count the same thing (not what the model can see: a sentence model never sees the previous
# sentence). On WikiText-2 the sentence batcher takes each line, a whole paragraph, as one sentence.

# %%
scored = {}
for corpus in (ptb, wt2):
    lines, V = corpus.ids("valid"), corpus.vocab
    scored[corpus.name] = {"stream": StreamBatches(lines, V.eos_id, V.pad_id, 20, 35).num_tokens,
              "sentence": SentenceBatches(lines, V.bos_id, V.eos_id, V.pad_id, 32).num_tokens,
              "document": DocumentBatches(lines, corpus.documents["valid"], V.eos_id, V.pad_id, 20, 35).num_tokens}
    print(f"{corpus.name:<11} valid tokens {corpus.num_tokens('valid'):,}; scored per protocol: {scored[corpus.name]}")

# %% tags=["remove-input"] jupyter={"source_hidden": true}
assert all(set(scored[c.name].values()) == {c.num_tokens("valid")} for c in (ptb, wt2)), scored  # "exactly once"

# %% [markdown]
# ## 4. The LSTM, built by hand
#
# All models in this book share a long short-term memory network (Hochreiter & Schmidhuber, 1997) as their
# recurrent core. Zaremba et al. (2014, section 3) write one step of it as follows. From the input $x_t$ (the
# embedding of word $w_t$) and the previous output $h_{t-1}$, four vectors are computed, each with its own
# weights ($\sigma$ is the logistic sigmoid, $\odot$ the element-wise product):
#
# $$
# \begin{aligned}
# i_t &= \sigma(W_{i} x_t + U_{i} h_{t-1} + b_i) && \text{(1) input gate: how much of the candidate to write}\\
# f_t &= \sigma(W_{f} x_t + U_{f} h_{t-1} + b_f) && \text{(2) forget gate: how much of the old cell to keep}\\
# g_t &= \tanh(W_{g} x_t + U_{g} h_{t-1} + b_g) && \text{(3) candidate values}\\
# o_t &= \sigma(W_{o} x_t + U_{o} h_{t-1} + b_o) && \text{(4) output gate: how much of the cell to show}\\
# c_t &= f_t \odot c_{t-1} + i_t \odot g_t && \text{(5) the memory cell}\\
# h_t &= o_t \odot \tanh(c_t) && \text{(6) the output}
# \end{aligned}
# $$
#
# The cell $c_t$ is updated by addition, so information (and gradient) can pass many steps unchanged when
# $f_t \approx 1$ and $i_t \approx 0$: that is the LSTM's answer to vanishing gradients. In code, the four
# $W$ matrices are stacked into one linear layer of $4d$ outputs, $d$ being the width (the number of units), and
# the four $U$ into another; one product then gives every gate, and `chunk` splits it in the order $i, f, g, o$.

# %%
class HandLSTM(nn.Module):
    """One LSTM layer, Eq. (1)-(6), looped over time."""

    def __init__(self, input_size: int, width: int):
        super().__init__()
        self.W = nn.Linear(input_size, 4 * width)  # W_i, W_f, W_g, W_o stacked, and the biases b
        self.U = nn.Linear(width, 4 * width, bias=False)  # U_i, U_f, U_g, U_o stacked

    def step(self, x, h, c):  # x: (batch, input); h, c: (batch, width)
        i, f, g, o = (self.W(x) + self.U(h)).chunk(4, dim=-1)  # four (batch, width) blocks
        i, f, g, o = torch.sigmoid(i), torch.sigmoid(f), torch.tanh(g), torch.sigmoid(o)  # Eq. (1)-(4)
        c = f * c + i * g  # Eq. (5)
        h = o * torch.tanh(c)  # Eq. (6)
        return h, c

    def forward(self, x, state):  # x: (batch, time, input); state: h and c, each (batch, width)
        h, c = state
        outputs = []
        for t in range(x.size(1)):
            h, c = self.step(x[:, t], h, c)
            outputs.append(h)
        return torch.stack(outputs, dim=1), (h, c)  # (batch, time, width), and the last state


# %% [markdown]
# A tiny worked example shows the forget gate at work. One unit, no input, the input gate shut (bias $-5$) and
# the output gate open; the cell starts at 1 and runs for 50 steps. With $f_t = \sigma(b_f)$ the cell after 50
# steps is $\sigma(b_f)^{50}$: the forget gate's bias alone decides how long the unit remembers.

# %%
tiny = HandLSTM(input_size=1, width=1)
nn.init.zeros_(tiny.U.weight)
for b_f in (0.0, 2.0, 5.0):
    with torch.no_grad():
        tiny.W.weight.zero_()
        tiny.W.bias.copy_(torch.tensor([-5.0, b_f, 0.0, 5.0]))  # biases of i, f, g, o
    _, (h, c) = tiny(torch.zeros(1, 50, 1), (torch.zeros(1, 1), torch.ones(1, 1)))  # 50 steps of no input
    print(f"forget-gate bias {b_f}: f = {torch.sigmoid(torch.tensor(b_f)):.3f}, the cell after 50 steps {c.item():.3f}")

# %% [markdown]
# Every model of the book calls PyTorch's fused `nn.LSTM` instead of a loop like ours: it runs the same
# equations as one optimised kernel. PyTorch keeps the stacked matrices as `weight_ih` ($W$) and `weight_hh`
# ($U$), and two bias vectors whose sum is our $b$. Copied into `HandLSTM`, the weights of the package's
# language model must give the same outputs:

# %%
lm = LanguageModel(vocab_size=50, embed_size=16, hidden_size=24, num_layers=1).double()
ours = HandLSTM(16, 24).double()
with torch.no_grad():
    ours.W.weight.copy_(lm.lstm.weight_ih_l0)
    ours.W.bias.copy_(lm.lstm.bias_ih_l0 + lm.lstm.bias_hh_l0)
    ours.U.weight.copy_(lm.lstm.weight_hh_l0)
x = lm.embedding(torch.randint(50, (3, 9)))  # (batch 3, time 9, embedding 16)
h0, c0 = torch.randn(2, 3, 24, dtype=torch.double)  # a random starting state, (batch, width) each
out, (h, c) = ours(x, (h0, c0))
fused, (h_fused, c_fused) = lm.lstm(x, (h0[None], c0[None]))  # nn.LSTM's state is (layers, batch, width)
assert torch.allclose(out, fused) and torch.allclose(c, c_fused[0])
print(f"outputs {tuple(out.shape)}, largest difference from the fused kernel {(out - fused).abs().max():.0e}")

# %% [markdown]
# The fused call is also faster: the input products of all time steps become one large matrix product, and the
# loop over time runs in compiled code. Every memory head of the book keeps that property: the LSTM runs once
# over the whole window, then the head works on all time steps at once with masks. On a batch of Zaremba's
# shape (20 rows of 35 steps, width 200):

# %%
import time

big = HandLSTM(200, 200)
fast = nn.LSTM(200, 200, batch_first=True)
x, state = torch.randn(20, 35, 200), (torch.zeros(20, 200), torch.zeros(20, 200))
timings = {}
with torch.no_grad():
    for name, run in (("HandLSTM (loop)", lambda: big(x, state)), ("nn.LSTM (fused)", lambda: fast(x))):
        run()  # warm up
        start = time.perf_counter()
        for _ in range(5):
            run()
        timings[name] = (time.perf_counter() - start) / 5
print(f"the fused nn.LSTM is {timings['HandLSTM (loop)'] / timings['nn.LSTM (fused)']:.0f} times faster than the loop")

# %% [markdown]
# ## 5. A task with a known answer: key-value recall
#
# Real text mixes short- and long-range dependencies, which makes it hard to say *how far back* a model looks.
# The **key-value recall** task of `mlm.data.tasks` isolates one dependency of a chosen length. Each line holds a
# key with its value (`k7 v3`) among filler words and *distractor* pairs, and later the same key again; the model
# must predict its value. That last value is the **critical token**; the first one is the **source**, exactly
# $\Delta$ steps back (the book writes $\Delta$ for this distance, keeping $d$ for a model's width). Values are
# drawn at random, so nothing but the source says what the critical token is:
#
# * a model that cannot see the source is at **chance**, accuracy $1/10$ with ten values;
# * a bigram count model sees the key, learns that a value follows, and stays at chance;
# * a perfect memory of the line gets every critical token right.
#
# $\Delta$ is drawn uniformly from 2 to 60. The number of words *before* the source pair, the **prefix**, is
# drawn from 0 to 60 on its own, so at every $\Delta$ the question can come early or late in the line, and a
# model that merely does worse near the start of a line shows it by position, not by $\Delta$. Positions count
# from 0.

# %%
from mlm.data.tasks import critical_chance, recall_task

task = recall_task(train_examples=20_000, seed=seed)  # the lines the recall models of later chapters read
c = task.critical["test"][0]
line = task.corpus.lines["test"][c.line]
source = c.position - c.distance
print(f"Δ = {c.distance}, prefix {source - 1} words, critical token at position {c.position}:")
print(" ".join(f"[{w}]" if i in (source - 1, source, c.position - 1, c.position) else w for i, w in enumerate(line)))
print(f"chance: accuracy {critical_chance(task.spec)[0]:.2f}")

# %%
from mlm.plots import recall_design

critical = task.critical["train"]
delta = np.array([c.distance for c in critical])
position = np.array([c.position for c in critical])
recall_design(delta, position)
plt.show()
band = (position >= 40) & (position < 80)  # the positions chapters 02 and 06 compare distances at
for lo, hi in ((2, 20), (21, 40), (41, 60)):
    asked = band & (delta >= lo) & (delta <= hi)
    print(f"Δ {lo}-{hi}: {asked.sum():,} questions at positions 40-79, mean position {position[asked].mean():.0f}")

# %% tags=["remove-input"] jupyter={"source_hidden": true}
mean_position = {lo: position[band & (delta >= lo) & (delta <= hi)].mean() for lo, hi in ((2, 20), (41, 60))}
assert {c.position - c.distance - 1 for c in critical} == set(range(61))  # every Δ over 61 positions
assert round(mean_position[2]) == 56 and round(mean_position[41]) == 65
assert all((band & (delta >= lo) & (delta <= hi)).sum() > 2000 for lo, hi in ((2, 20), (21, 40), (41, 60)))
assert abs(np.corrcoef(delta, position - delta - 1)[0, 1]) < 0.02  # the prefix is drawn apart from Δ

# %% [markdown]
# The position is the prefix plus $\Delta$ plus one (the key), so it still grows with $\Delta$ (the grey region
# climbs), but every $\Delta$ is asked over 61 positions. Positions 40 to 79 hold thousands of questions from each
# of the ranges $\Delta$ = 2-20, 21-40 and 41-60, so comparing distances inside that window, as chapters 02 and 06
# do, keeps most of the position effect out (the longest range still sits a little later on average, as the
# mean positions show). `mlm.long_range` scores a model on the critical tokens alone, by
# $\Delta$, by position, or both.
#
# ## 6. Seeds and intervals
#
# Two runs of one model that differ only in the random *seed* (the initial weights and the order of the batches)
# end at different perplexities (chapter 06 prints five seeds of one LSTM), so one run a side cannot show that a
# model beats its *control*, the same network without the paper's addition. The book trains each side with
# three seeds or more and reads the relative change of the mean test perplexities,
# $\bar p_{\text{model}} / \bar p_{\text{control}} - 1$ (negative when the model is better), with its 95% interval.
#
# A change smaller than 1% either way does not count: that is the *margin*. The same seed run on another kind
# of processor can end about 1% apart, so where the two sides ran on different kinds, the interval is widened
# by a *hardware allowance* that the book measures by running the same commands on both kinds. A fixed rule
# then gives each comparison one of five labels:
#
# | label | the interval (widened where it must be) |
# |---|---|
# | *holds* | lies beyond −1% and reaches the paper's reported gain |
# | *smaller gain* | lies beyond −1% but short of the paper's gain |
# | *no effect* | lies inside ±1% |
# | *worse* | lies beyond +1% |
# | *inconclusive* | anything else: it crosses a border of the margin |
#
# A gain more than twice the paper's is flagged *larger than reported: check the control*, since a control that
# trained badly is the likelier cause. Where a trial is unequal, one side tuned more than the other or a control
# known to be weak, the label names the side it *handicaps*. Every paper chapter ends with these labels; [report r00](../reports/r00_deciding_a_claim.ipynb)
# shows how the rule decides.

# %% tags=["remove-input"] jupyter={"source_hidden": true}
from mlm.claims import MARGIN
from mlm.evidence import machine_pairs

shifts = [abs(pair.shift) for pair in machine_pairs("../results")]  # one command on two kinds of processor
assert MARGIN == 0.01 and len(shifts) >= 3 and 0.005 < max(shifts) < 0.015, shifts  # "about 1% apart"

# %% [markdown]
# ## Summary
#
# * Perplexity is $e$ to the average negative log-likelihood per predicted token; the book counts every word and
#   every `<eos>`, never padding, and names the protocol behind each number.
# * PTB and WikiText-2 are the book's corpora; the interpolated bigram of the same tokens is the bar every neural
#   model must clear.
# * Three protocols (stream, sentence, document) feed a corpus to a recurrent network; all score the same tokens.
# * The LSTM's six equations fit in a short module that matches PyTorch's fused `nn.LSTM`; the fused call is
#   what every model uses.
# * The key-value recall task asks for a value $\Delta$ words back, with the prefix drawn apart from $\Delta$.
# * A claim is read from three seeds a side or more, as an interval of the relative change.
#
# **Exercise 00** ([`exercises/ex00_perplexity_lstm.py`](../exercises/ex00_perplexity_lstm.py)): write the masked
# perplexity, the LSTM cell and the loop that runs it over a sequence yourself, then check your work with `python -m
# exercises.grader 00`.
#
# Next, chapter 01 trains the LSTM baselines the later papers compare against.

# %% tags=["remove-input"] jupyter={"source_hidden": true}
from mlm.book import record

record("00_language_modelling", {
    "ptb_bigram_test_ppl": round(ngram["ptb"]["bigram"], 1),
    "wt2_bigram_test_ppl": round(ngram["wikitext-2"]["bigram"], 1),
})
