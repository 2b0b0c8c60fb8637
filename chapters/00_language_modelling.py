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
# Every model in this book does one thing: it reads a text one word at a time and, before each
# word, says how likely every word of the vocabulary is to come next. This chapter builds the
# vocabulary we need for the rest of the book:
#
# 1. what a language model computes, and why **perplexity** is the number everyone reports;
# 2. the two corpora we train on (Penn Treebank and WikiText-2), with their statistics;
# 3. the three ways the papers feed a corpus to a recurrent network (the **training protocols**);
# 4. the LSTM cell, written out equation by equation and checked against PyTorch's fused `nn.LSTM`;
# 5. the key-value recall task, on which later chapters watch a memory work;
# 6. how the book decides whether a paper's claim holds.

# %% tags=["parameters"]
# The parameters every chapter takes; this one trains nothing, so it leaves size and device unused.
size = "reduced"  # "reduced" (minutes on a CPU) or "full"
device = "auto"  # "auto", "cpu", "cuda" or "mps"
seed = 0
data_dir = None  # None: $MLM_DATA_DIR, then ~/.cache/mlm

# %%
import math

import matplotlib.pyplot as plt
import numpy as np
import torch

from mlm.data import DocumentBatches, SentenceBatches, StreamBatches, load_corpus
from mlm.models import LanguageModel, ManualLSTM
from mlm.utils import set_seed

set_seed(seed)
torch.set_printoptions(precision=4, sci_mode=False)

# %% [markdown]
# ## 1. What a language model computes
#
# A sentence is a sequence of words $w_1, \dots, w_n$. By the chain rule of probability its
# probability factorises into one prediction per position:
#
# $$ p(w_1, \dots, w_n) = \prod_{t=1}^{n} p(w_t \mid w_1, \dots, w_{t-1}). $$
#
# A *language model* is anything that produces those conditional distributions. A recurrent
# language model summarises the history $w_{<t}$ in a vector $h_{t-1}$ and turns it into a
# distribution over the vocabulary $V$ with a softmax: $p(\cdot \mid w_{<t}) = \mathrm{softmax}(W h_{t-1} + b)$.
#
# To say where a sentence ends, every sentence is followed by an end symbol `<eos>`, which the model
# must predict too. A sentence of $n$ words therefore costs $n + 1$ predictions.
#
# ### Perplexity
#
# We judge a model by the probability it gives to held-out text. Over a test set of $N$ predicted
# tokens, the average negative log-likelihood (the cross-entropy, in nats) is
#
# $$ \mathcal{L} = -\frac{1}{N} \sum_{t=1}^{N} \log p(w_t \mid w_{<t}), \qquad \text{perplexity} = e^{\mathcal{L}}. $$
#
# Perplexity reads as an *effective branching factor*: a model with perplexity 100 is, on average, as
# uncertain as if it were choosing uniformly among 100 words. A model that knows nothing and spreads
# its probability evenly over $|V|$ words has perplexity exactly $|V|$; a perfect model has perplexity 1.
#
# Three details decide whether two perplexities can be compared at all: **which tokens are counted** (the book
# always counts every word and every `<eos>`, never padding), **which vocabulary** maps them (a smaller one turns
# more words into `<unk>`, the one token that stands for every word outside it, and makes the task easier), and
# **what the model may condition on** (the protocol, section 3, which every result names). Let us check the
# uniform-model claim numerically.

# %%
vocab_size = 10_000
targets = torch.randint(vocab_size, (1000,))
uniform_logits = torch.zeros(1000, vocab_size)  # equal scores for every word
nll = torch.nn.functional.cross_entropy(uniform_logits, targets)  # mean negative log-likelihood
print(f"uniform model over {vocab_size} words: perplexity {math.exp(nll.item()):.1f}")

# %% [markdown]
# ## 2. The corpora
#
# Apart from the synthetic task of section 5, every model in this book is trained on one of two standard
# corpora, both already tokenized and with rare words replaced by `<unk>`. (Some papers also used others, such
# as Daniluk et al.'s Wikipedia corpus and Tran et al.'s news text; each chapter says how its paper's setting
# maps onto these two.)
#
# * **Penn Treebank (PTB)**, in the version prepared by Mikolov et al. (2010): Wall Street Journal text,
#   lower-cased, numbers replaced by `N`, a 10,000-word vocabulary. One sentence per line.
# * **WikiText-2** (Merity et al., 2017): Wikipedia "Good" and "Featured" articles, case and punctuation
#   kept, a 33,278-word vocabulary. One *paragraph* per line, articles introduced by a ` = Title = ` line.
#
# `mlm.data.load_corpus` finds the files in the data directory, checks each one against its published
# sha256 checksum and reads it. (If the files are missing, the error message says exactly which files
# to put where.) The vocabulary adds two symbols of ours to the corpus's own types: `<pad>` for padding
# and `<bos>`, the start symbol of the sentence protocol.

# %%
ptb = load_corpus("ptb", data_dir)
wt2 = load_corpus("wikitext-2", data_dir)
print(ptb.vocab)
print(wt2.vocab)

# %%
# NBVAL_CHECK_OUTPUT
def corpus_table(corpora):
    header = f"{'corpus':<11} {'split':<6} {'lines':>7} {'words':>10} {'tokens':>10} {'types':>7} {'<unk> %':>8} {'docs':>5}"
    print(header)
    for corpus in corpora:
        for split, s in corpus.stats().items():
            unk = 100 * s["unk"] / s["words"]
            print(f"{corpus.name:<11} {split:<6} {s['lines']:>7,} {s['words']:>10,} {s['tokens']:>10,} "
                  f"{s['types']:>7,} {unk:>8.2f} {s['documents']:>5}")


corpus_table([ptb, wt2])

# %% [markdown]
# *tokens* is words plus one `<eos>` per line: the number of predictions a model makes on that split, and the
# denominator $N$ of perplexity. These are the standard counts (PTB: 929,589 / 73,760 / 82,430, usually quoted
# as 929k / 73k / 82k; WikiText-2: 2,088,628 / 217,646 / 245,569). *types* counts words only: PTB's 10,000 are
# 9,999 words plus `<eos>`, and 10,002 with our `<pad>` and `<bos>` (the `Vocabulary` printed above);
# WikiText-2's 33,278 are 33,277 plus `<eos>`, and 33,280 with ours.
#
# WikiText-2 is about twice as large as PTB, has a vocabulary more than three times larger, and comes in
# 600 / 60 / 60 articles, which the document protocol of Daniluk et al. (chapter 03) relies on. (`docs` counts
# PTB as a single document: Mikolov's version has no article boundaries.)
#
# ### Zipf's law
#
# Word frequencies in natural text fall off roughly as a power of their rank. In its simplest form, Zipf's law,
# frequency is proportional to 1/rank: the word of rank $r$ is $r$ times rarer than the most frequent one, and
# on a log-log plot that is a straight line of slope $-1$. The plot shows the middle ranks falling roughly
# parallel to it; the head is flatter, and the tail stops at the vocabulary cut, where rarer words became
# `<unk>` (PTB's last step down to a count of 1 comes from about 30 words that occur once, most of them on
# the corpus's first line). This is why a softmax layer spends most of its parameters on words it rarely sees, and why
# smoothing (chapter 05) matters.

# %%
from mlm.plots import zipf

fig, ax = plt.subplots(figsize=(6.5, 4.2))
zipf({"PTB": ptb.vocab.counts, "WikiText-2": wt2.vocab.counts}, ax=ax)
ranks = np.arange(1, 10_001)
ax.loglog(ranks, max(ptb.vocab.counts) / ranks, "k:", label="1 / rank")  # from the most frequent type, "the"
ax.legend()
ax.set_title("Zipf plot of the training sets")
plt.tight_layout()
plt.show()

# %% tags=["remove-input"] jupyter={"source_hidden": true}
# The Zipf paragraph: PTB's last step, to a count of 1, is about 30 words, most of them on the first line.
once = {w for w, c in zip(ptb.vocab.itos, ptb.vocab.counts) if c == 1}
assert 25 <= len(once) <= 35 and len(once & set(ptb.lines["train"][0])) > len(once) / 2, len(once)

# %% [markdown]
# ### Lines: sentences or paragraphs
#
# The two corpora also cut their text differently, which matters for the protocols of chapters 02 and 03: the
# histogram and the summary below compare the lengths of their lines.

# %%
ptb_lengths = [len(line) for line in ptb.lines["train"]]
wt2_lengths = [len(line) for line in wt2.lines["train"] if line and line[0] != "="]  # paragraphs, no headings
fig, ax = plt.subplots(figsize=(6.5, 4.2))
for lengths, alpha, label in ((ptb_lengths, 0.7, "PTB sentences"), (wt2_lengths, 0.5, "WikiText-2 paragraphs")):
    ax.hist(lengths, bins=range(0, 305, 5), alpha=alpha, weights=np.full(len(lengths), 1 / len(lengths)),
            label=label)
ax.axvline(35, color="k", linestyle="--", label="35 (Salton et al.'s cut)")
ax.set_xlabel("words per line")
ax.set_ylabel("share of lines (5-word bins)")
ax.legend()
ax.set_title("Line lengths in the training sets")
plt.tight_layout()
plt.show()

# %%
# NBVAL_CHECK_OUTPUT
for name, lengths in (("PTB sentences", ptb_lengths), ("WikiText-2 paragraphs", wt2_lengths)):
    lengths = np.array(lengths)
    print(f"{name:<22} mean {lengths.mean():6.1f} words, median {np.median(lengths):5.0f}, "
          f"longest {lengths.max():4d}, longer than 35: {100 * (lengths > 35).mean():5.1f}%, "
          f"longer than 300 (off the chart): {100 * (lengths > 300).mean():4.1f}%")

# %% [markdown]
# PTB lines are sentences of about 21 words, and fewer than one in ten is longer than 35 words, the length at
# which Salton et al. (chapter 02) cut sentences. WikiText-2 lines are whole paragraphs (or headings, which
# the plot leaves out), well over a hundred words on average and sometimes several hundred: a "sentence"
# protocol on WikiText-2 first has to decide what a sentence is.
#
# ### Count-based baselines
#
# Before any neural network, two classic models give reference points. A **unigram** model ignores the
# history entirely, $p(w_t \mid w_{<t}) = c(w_t) / N_{\text{train}}$, where $c(\cdot)$ counts occurrences in the
# training stream and $N_{\text{train}}$ is its number of tokens. An interpolated **bigram** model looks one word
# back and always mixes in the unigram, so that word pairs it never saw still get some probability:
# $p(w_t \mid w_{t-1}) = \lambda \, c(w_{t-1} w_t) / c(w_{t-1}) + (1 - \lambda)\, c(w_t) / N_{\text{train}}$,
# with $\lambda$ chosen to maximise the likelihood of the validation set. Perplexity is computed exactly as for
# the neural models, over the same tokens.
#
# Counting takes a few lines; `mlm.baselines` holds the counts and
# tunes $\lambda$, and every later chapter uses the same code on exactly the tokens its models train on.

# %%
from mlm.baselines import BigramCountModel, tune_lambda


def stream_events(corpus, split):
    """(history, target) pairs of the stream <eos> w1 w2 ... <eos> ... (section 3): every word and <eos>."""
    ids = [corpus.vocab.eos_id]
    for line in corpus.ids(split):
        ids += line + [corpus.vocab.eos_id]
    ids = np.array(ids)
    return ids[:-1], ids[1:]  # (N,), (N,)


def ngram_perplexities(corpus):
    counts = BigramCountModel.fit(*stream_events(corpus, "train"), len(corpus.vocab))  # c(w), c(v w), c(v)
    lam = tune_lambda(counts, *stream_events(corpus, "valid"))  # the validation likelihood's maximum
    test = stream_events(corpus, "test")
    return {"unigram": counts.perplexity(*test, 0.0), "bigram": counts.perplexity(*test, lam),
            "lambda": lam, "tokens": len(test[1])}


# %%
# NBVAL_CHECK_OUTPUT
ngram_results = {}
for corpus in (ptb, wt2):
    r = ngram_perplexities(corpus)
    ngram_results[corpus.name] = r
    print(f"{corpus.name:<11} test perplexity: unigram {r['unigram']:7.1f}, "
          f"interpolated bigram (lambda = {r['lambda']:.2f}) {r['bigram']:6.1f}  over {r['tokens']:,} tokens")

# %% [markdown]
# Looking a single word back cuts perplexity by a factor of about three. Zaremba et al.'s small LSTM, trained
# on all of PTB (chapter 01), roughly halves the bigram's perplexity again; the memory-augmented models of
# later chapters are attempts to push further by looking further back.

# %%
import json
from pathlib import Path

small = json.loads(Path("../results/cpu-press2017-small/untied/seed0/result.json").read_text())
print(f"the small LSTM of chapter 01 on all of PTB: test perplexity {small['test_ppl']:.1f}, "
      f"{small['test_ppl'] / ngram_results['ptb']['bigram']:.2f} of the bigram's")

# %% [markdown]
# ## 3. Three training protocols
#
# A recurrent network is trained on windows of text: it is unrolled over a window of `bptt` steps, and the
# gradient flows back (backpropagation through time, BPTT) only within that window. When the state is carried
# into the next window but the gradient is cut at its start, that is *truncated* BPTT. The papers in this book
# cut the corpus into windows in three different ways. `mlm.data` implements each one as a *batcher* that builds
# all its batches once, as tensors, and marks every scored target in a boolean `mask`:
#
# | protocol | used by | a row of a batch is | the state between batches |
# |---|---|---|---|
# | **stream** | Zaremba et al., Press & Wolf, Xie et al., Kong et al. | a window of `bptt` tokens from one long stream | carried over (truncated BPTT) |
# | **sentence** | Salton et al., Tran et al. | one sentence: `<bos> w1 .. wn` predicting `w1 .. wn <eos>` | reset to zero |
# | **document** | Daniluk et al. | a window inside one document | carried within a document, reset at a new one |
#
# The stream protocol treats the corpus as `<eos> w1 w2 … <eos> w1 …`; the leading `<eos>` gives the
# very first word a history to be predicted from. The sentence protocol starts every sentence from the
# start symbol `<bos>` instead, so each sentence of $n$ words contributes $n + 1$ predictions, exactly as
# in the stream. Here are the first rows of one small batch of each: stream and sentence on the first four PTB
# validation sentences, document on WikiText-2's validation set, since PTB has no articles (the first twelve
# positions of each row; a padded, unscored position would show as `·`):

# %%
def show_batch(batch, vocab, rows=2, width=12):
    for r in range(min(rows, batch.inputs.size(0))):
        inputs = [vocab.itos[i] if m else "·" for i, m in zip(batch.inputs[r, :width].tolist(), batch.mask[r, :width].tolist())]
        targets = [vocab.itos[i] if m else "·" for i, m in zip(batch.targets[r, :width].tolist(), batch.mask[r, :width].tolist())]
        reset = "" if batch.reset is None else f"   reset={bool(batch.reset[r])}"
        print(f"  row {r} inputs : {' '.join(inputs)}{reset}")
        print(f"        targets: {' '.join(targets)}")


v = ptb.vocab
few = ptb.ids("valid")[:4]
print("stream (batch 2, bptt 12):")
show_batch(next(iter(StreamBatches(few, v.eos_id, v.pad_id, batch_size=2, bptt=12))), v)
print("sentence (batch 2, padded to the longest sentence):")
show_batch(next(iter(SentenceBatches(few, v.bos_id, v.eos_id, v.pad_id, batch_size=2))), v)
print("document (WikiText-2 valid, 2 rows, bptt 12; the first window of each article has reset=True):")
w = wt2.vocab
show_batch(next(iter(DocumentBatches(wt2.ids("valid"), wt2.documents["valid"], w.eos_id, w.pad_id, 2, 12))), w)

# %% [markdown]
# The stream batcher cuts the token stream into `batch_size` equal parts, one per row, so row 1 starts halfway
# through the text and the next batch continues every row where it stopped; that is what lets the state carry
# over. In WikiText-2, empty lines become lone `<eos>` tokens and headings are lines like any other, so both
# are scored.
#
# Whatever the protocol, every token of a split is scored exactly once. This is what makes the
# perplexities of models trained under different protocols comparable in what they count (not in what
# they can see: a sentence model never sees the previous sentence).

# %%
# NBVAL_CHECK_OUTPUT
for corpus in (ptb, wt2):
    lines = corpus.ids("valid")
    V = corpus.vocab
    counts = {
        "stream": StreamBatches(lines, V.eos_id, V.pad_id, 20, 35).num_tokens,
        "sentence": SentenceBatches(lines, V.bos_id, V.eos_id, V.pad_id, 32).num_tokens,
        "document": DocumentBatches(lines, corpus.documents["valid"], V.eos_id, V.pad_id, 20, 35).num_tokens,
    }
    print(f"{corpus.name:<11} valid: words + lines = {corpus.num_tokens('valid'):,};  scored per protocol: {counts}")

# %% [markdown]
# ## 4. The LSTM, equation by equation
#
# All models in this book share a long short-term memory network (Hochreiter & Schmidhuber, 1997) as
# their recurrent core. Zaremba et al. (2014, section 3) write one step of it as follows. From the input
# $x_t$ (the embedding of word $w_t$) and the previous output $h_{t-1}$, four vectors are computed, each with its
# own weights ($\sigma$ is the logistic sigmoid, $\odot$ the element-wise product):
#
# $$
# \begin{aligned}
# i_t &= \sigma(W_{i} x_t + U_{i} h_{t-1} + b_i) && \text{input gate: how much of the candidate to write}\\
# f_t &= \sigma(W_{f} x_t + U_{f} h_{t-1} + b_f) && \text{forget gate: how much of the old cell to keep}\\
# g_t &= \tanh(W_{g} x_t + U_{g} h_{t-1} + b_g) && \text{candidate values}\\
# o_t &= \sigma(W_{o} x_t + U_{o} h_{t-1} + b_o) && \text{output gate: how much of the cell to show}\\
# c_t &= f_t \odot c_{t-1} + i_t \odot g_t && \text{the memory cell}\\
# h_t &= o_t \odot \tanh(c_t) && \text{the output}
# \end{aligned}
# $$
#
# The cell $c_t$ is updated additively, so information (and gradient) can pass many steps unchanged when
# $f_t \approx 1$ and $i_t \approx 0$. That is the LSTM's answer to vanishing gradients. How far back it
# carries a piece of information in practice is a question of training, not of the equations: section 5
# sets up the task on which the later chapters measure it.
#
# `mlm.models.lstm_cell.lstm_cell_step` is this step in code, with PyTorch's parameter layout (the four
# weight matrices stacked in the order $i, f, g, o$):
#
# ```python
# gates = x @ w_ih.T + b_ih + h @ w_hh.T + b_hh   # (batch, 4 * hidden)
# i, f, g, o = gates.chunk(4, dim=-1)
# i, f, g, o = sigmoid(i), sigmoid(f), tanh(g), sigmoid(o)
# c = f * c + i * g
# h = o * tanh(c)
# ```
#
# PyTorch keeps two bias vectors, `b_ih` and `b_hh`; their sum is the $b$ of the equations.
#
# `ManualLSTM` loops this step over time and layers. It is the slow reference; every model of the book
# calls the fused `nn.LSTM` instead, which runs the same equations as one optimised kernel (cuDNN on a
# GPU, a compiled CPU kernel otherwise). They must agree:

# %%
# NBVAL_CHECK_OUTPUT
set_seed(seed)
lm = LanguageModel(vocab_size=50, embed_size=16, hidden_size=24, num_layers=2, init_range=0.5).double()
x = lm.embed(torch.randint(50, (3, 9)))  # (batch=3, time=9, embed=16)
h0 = (torch.randn(2, 3, 24, dtype=torch.double), torch.randn(2, 3, 24, dtype=torch.double))

fused_out, (fused_h, fused_c) = lm.lstm(x, h0)  # one call for all steps
manual_out, (manual_h, manual_c) = ManualLSTM(lm.lstm)(x, h0)  # the equations, step by step

# The differences are rounding errors (about 1e-16); print only whether they are negligible.
for what, fused, manual in (("outputs ", fused_out, manual_out), ("final h ", fused_h, manual_h),
                            ("final c ", fused_c, manual_c)):
    print(what, "shape", tuple(fused.shape), " max |difference| < 1e-12:", bool((fused - manual).abs().max() < 1e-12))
grads = [torch.autograd.grad(out.sum(), lm.lstm.weight_hh_l0, retain_graph=True)[0] for out in (fused_out, manual_out)]
print("gradient wrt W_hh (layer 0) agrees:", torch.allclose(*grads, atol=1e-10))

# %% [markdown]
# (In double precision the two differ only in rounding: every difference lies below $10^{-12}$.)
#
# ### Speed: why the book never loops over time in a model
#
# The fused call is not only shorter, it is faster, because the input-to-hidden products of all time steps are
# one large matrix product and the loop over time happens in compiled code. Every memory head in this book
# (the module that later chapters place between the LSTM and the softmax layer) is written to keep that
# property: the LSTM runs once over the whole window, then the head works on all time steps at once with
# masks.

# %%
import time

lm32 = LanguageModel(vocab_size=10_000, embed_size=200, hidden_size=200, num_layers=2)
x = lm32.embed(torch.randint(10_000, (20, 35)))  # a Zaremba-style batch: 20 rows, 35 steps
timings = {}
with torch.no_grad():
    for name, fn in (("nn.LSTM (fused)", lm32.lstm), ("ManualLSTM (loop)", ManualLSTM(lm32.lstm))):
        fn(x)  # warm up
        start = time.perf_counter()
        for _ in range(5):
            fn(x)
        timings[name] = (time.perf_counter() - start) / 5
for name, seconds in timings.items():
    print(f"{name:<18} {1000 * seconds:7.2f} ms per batch")
print(f"speed-up of the fused kernel: {timings['ManualLSTM (loop)'] / timings['nn.LSTM (fused)']:.1f}x")

# %% [markdown]
# ## 5. A task with a known answer: key-value recall
#
# Real text mixes short- and long-range dependencies, which makes it hard to say *how far back* a model looks.
# The **key-value recall** task of `mlm.data.tasks` isolates one dependency of a chosen length. Each line
# holds a key with its value (`k7 v3`) among filler words and *distractor* pairs, and later the same key
# again; the model must predict its value. That last value is the **critical token**; the first one is the
# **source**, exactly $d$ steps back. Values are drawn at random, so nothing but the source says what the
# critical token is:
#
# * a model that cannot see the source is at **chance**, accuracy $1/10$ with ten values;
# * a bigram count model sees the key, learns that a value follows, and stays at chance;
# * a perfect memory of the line gets every critical token right.
#
# The distance $d$ is drawn uniformly from 2 to 60. The number of words *before* the source pair, the
# **prefix**, is drawn from 0 to 60 on its own, so at every $d$ the question can come early or late in the
# line. A model that merely does worse near the start of a line then shows it by position, not by $d$.
# Positions count from 0: a line's first word is at position 0.

# %%
from mlm.data.tasks import critical_chance, recall_task

task = recall_task(train_examples=20_000, seed=seed)  # the lines the recall models of later chapters read
c = task.critical["test"][0]
line = task.corpus.lines["test"][c.line]
source = c.position - c.distance
print(f"d = {c.distance}, prefix {source - 1} words, critical token at position {c.position}:")
print(" ".join(f"[{w}]" if i in (source - 1, source, c.position - 1, c.position) else w for i, w in enumerate(line)))
print(f"chance: accuracy {critical_chance(task.spec)[0]:.2f}")

# %%
critical = task.critical["train"]
d = np.array([c.distance for c in critical])
position = np.array([c.position for c in critical])
fig, ax = plt.subplots(figsize=(6, 4))
*_, image = ax.hist2d(d, position, bins=[np.arange(1.5, 61, 1), np.arange(-0.5, 124, 4)], cmap="Greys")
fig.colorbar(image, ax=ax, label="training lines")
ax.set_xlabel("distance d to the source")
ax.set_ylabel("position of the critical token in its line")
ax.set_title("Each distance is asked over a range of positions")
plt.show()
print(f"correlation of d with the prefix length: {np.corrcoef(d, position - d - 1)[0, 1]:+.2f}; "
      f"with the critical token's position: {np.corrcoef(d, position)[0, 1]:+.2f}")
band = (position >= 40) & (position < 80)  # the positions chapters 02 and 06 compare distances at
for lo, hi in ((2, 20), (21, 40), (41, 60)):
    inside = band & (d >= lo) & (d <= hi)
    print(f"positions 40-79, d {lo}-{hi}: {inside.sum():,} questions, mean position {position[inside].mean():.0f}")

# %% tags=["remove-input"] jupyter={"source_hidden": true}
mean_position = {lo: position[band & (d >= lo) & (d <= hi)].mean() for lo, hi in ((2, 20), (41, 60))}
assert {c.position - c.distance - 1 for c in critical} == set(range(61))  # every d over 61 positions
assert round(mean_position[2]) == 56 and round(mean_position[41]) == 65 and band[d <= 20].sum() > 1000

# %% [markdown]
# The position is the prefix plus $d$ plus one (the key), so it still grows with $d$ (the grey region climbs),
# but every $d$ is asked over 61 positions. Only positions 61 to 63 hold every $d$. Positions 40 to 79, though,
# hold many questions from each of the ranges $d$ = 2-20, 21-40 and 41-60. Comparing distance ranges inside
# that position window, as chapters 02 and 06 do, keeps most of the position effect out; the longest range still sits a
# little later (about position 65 on average, against 56 for the shortest).
#
# `mlm.long_range` scores a model on the critical tokens alone, by $d$, by position, and by both at once;
# chapters 02 to 04 and 06 read those scores from stored recall runs of each paper's model (`python -m mlm
# reproduce recall`).

# %% [markdown]
# ## 6. How the book decides a claim
#
# Each paper claims that its model beats a *control*, the same network without the paper's addition (usually the
# LSTM). Daniluk et al. (chapter 03), for example, report that attention over a window of the last $L = 5$ outputs
# lowers the LSTM's test perplexity by 3.5% (printed below). (The papers' models, with their variants, are the
# book's *families*.) The book trains both sides with three *seeds* or more, runs that differ only in the random
# seed (the initial weights and the order of the batches), and compares the **relative change** of the mean test
# perplexity,
#
# $$ r = \frac{\bar{p}_{\text{model}}}{\bar{p}_{\text{control}}} - 1, $$
#
# negative when the model is better. The runs below answer the book's question, not the paper's: both sides are
# trained on PTB sentences at about the same parameter count (printed below) under one *recipe*, the same
# optimiser and schedule with no dropout (chapter 06), while the paper's numbers come from its Wikipedia corpus.
#
# Seeds differ, so $r$ comes with a 95% interval: Welch's $t$ interval for the difference of the two means,
# divided by the control's mean (treated as fixed). With $s^2$ the sample variance of a side's $n$ seeds
# (divided by $n - 1$), the standard error and the interval are
#
# $$ se = \sqrt{\frac{s^2_{\text{model}}}{n_{\text{model}}} + \frac{s^2_{\text{control}}}{n_{\text{control}}}},
#    \qquad \frac{\bar p_{\text{model}} - \bar p_{\text{control}} \pm t \cdot se}{\bar p_{\text{control}}}, $$
#
# where $t$ is the 97.5% point of Student's $t$ with the Welch-Satterthwaite degrees of freedom, not rounded
# (it does not assume the two sides vary equally):
#
# $$ \nu = se^4 \Big/ \Big[\frac{(s^2_{\text{model}}/n_{\text{model}})^2}{n_{\text{model}} - 1} +
#    \frac{(s^2_{\text{control}}/n_{\text{control}})^2}{n_{\text{control}} - 1}\Big]. $$
#
# With three to five seeds a side the interval is wide: in the example below (three seeds against five), seeds
# whose standard deviation is about half a point give an interval of about $\pm 0.9\%$. Against a count baseline,
# which has no seeds, the interval is that of the model's mean alone, $(\bar p_{\text{model}} - b \pm t \cdot
# s_{\text{model}} / \sqrt{n_{\text{model}}}) / b$ for a baseline $b$, with $n_{\text{model}} - 1$ degrees of
# freedom.

# %%
import statistics

from mlm.claims import relative_change, spread, t_quantile, verdict
from mlm.manifests import compare
from mlm.table import load_settings, stored_claims

stored = load_settings([s for s in compare.RUNS if s.base in ("lstm", "window-L5")], "../results")
lstm, window = (stored[name].values("test_ppl") for name in ("lstm", "window-L5"))
change, low, high = relative_change(window, lstm)
print("LSTM seeds:           ", " ".join(f"{p:.1f}" for p in lstm))
print("window attention seeds:", " ".join(f"{p:.1f}" for p in window))
print(f"mean ± standard deviation: LSTM {spread(lstm, 2)}, window attention {spread(window, 2)}")
reported = next(row.seeds[2] for claim, row in zip(compare.CLAIMS, stored_claims(compare.CLAIMS, "compare", "../results"))
                if claim.model == "window-L5")  # the paper's own change: Daniluk et al.'s 82.2 against 85.2
parts = [statistics.variance(side) / len(side) for side in (window, lstm)]  # s^2 / n, s^2 divided by n - 1
se = sum(parts) ** 0.5
nu = se ** 4 / sum(v ** 2 / (len(side) - 1) for v, side in zip(parts, (window, lstm)))
sizes = {name: f"{stored[name].values('parameters')[0]:,.0f}" for name in ("lstm", "window-L5")}
print(f"parameters: LSTM {sizes['lstm']}, window attention {sizes['window-L5']}")
print(f"se {se:.3f}, degrees of freedom {nu:.2f}, t {t_quantile(0.975, nu):.3f}")
print(f"relative change {change:+.2%}, 95% interval {low:+.2%} to {high:+.2%}; the paper reported {reported:+.1%}")
print("verdict:", verdict(window, lstm, paper=reported))

# %% tags=["remove-input"] jupyter={"source_hidden": true}
from mlm.claims import SMALLER

assert verdict(window, lstm, paper=reported) == SMALLER and round(100 * high, 2) == 1.01 and low > reported
assert (len(window), len(lstm)) == (3, 5) and 0.8 < (high - low) / 2 * 100 < 0.95  # "about ±0.9%"
mean_w, mean_l = statistics.fmean(window), statistics.fmean(lstm)  # the formula by hand gives the interval
assert abs((mean_w - mean_l + t_quantile(0.975, nu) * se) / mean_l - high) < 1e-12 and 4 < nu < 5, nu
assert round(100 * (0.01 - (high - low) / 2), 2) == 0.14  # "under 0.14%" 

# %% [markdown]
# The interval $[lo, hi]$ is read against two points: zero, and the paper's own change $r_{\text{paper}}$ (its
# model's perplexity over its control's, minus one; $-3.5\%$ in the example above). With three seeds or more a
# side, and where the paper reported a change of at least 1% or gave no size, the first row that applies decides;
# claims of no change, and too few seeds, are read below the table:
#
# | the 95% interval $[lo, hi]$ | verdict |
# |---|---|
# | 1. $-1\% < lo$ and $hi < 1\%$ | **no difference** |
# | 2. $lo > 0$ | **contradicted (a loss)** |
# | 3. $hi < 0$, and $lo \le r_{\text{paper}}$ (or the paper gave no size) | **supported** |
# | 4. $hi < 0$ and $lo > r_{\text{paper}}$ | **a gain, smaller than reported** |
# | 5. $lo \le 0 \le hi$ and $lo > r_{\text{paper}}$ | **smaller than reported** |
# | 6. $lo \le 0 \le hi$, and $lo \le r_{\text{paper}}$ (or the paper gave no size) | **not settled** |
#
# Row 5 says that no gain as large as the paper's fits the seeds, though a small gain or a small loss is not
# ruled out. The 1% margin is the book's choice of a change too small to matter for these models, so row 1
# comes first: an interval inside it is *no difference* even where it excludes 0. It takes a narrow interval:
# with the example's half-width of 0.86%, the mean change would have to lie within 0.14% of zero.
#
# Where the paper reported $|r_{\text{paper}}| < 1\%$ (in effect a claim that the addition costs nothing), an
# interval inside $\pm 1\%$ or below 0 reads **supported**, any other interval above 0 **contradicted (a loss)**,
# and the rest **not settled**. Where such a claim says the model does not *help* (a longer window, chapter 03),
# the roles turn: an interval inside the band or above 0 supports it, any other below 0 is **contradicted (a
# gain)**, and the rest is **not settled**.
#
# Each interval is a 95% interval for its own claim, the usual level, with no adjustment for the many claims
# the book reads; claims that share a control (most of chapter 06's share its five LSTM seeds) are not
# independent, so one unlucky set of control seeds would move them together. A verdict gets **, not
# converged** appended where a seed of either side had its best epoch last while its learning rate was still
# above 1% of its start.
#
# The book takes no size from a paper whose own pair is not a controlled comparison. Salton et al. set their model beside
# another paper's LSTM, trained under another protocol (chapter 02), so their gain says nothing about how much
# the head adds; for their claims only the direction of our change is read.
#
# With fewer than three seeds on a side the rule gives no verdict ("not testable with one seed", "not settled
# (2 seeds)"). Nor does it, whatever the seeds say, where the control's mean test perplexity is no better than
# that of the interpolated bigram of section 2 on the same tokens: a control no better than word-pair counts
# has not learned what a memory could add to, so the claim is **not testable at this size**.
#
# Window attention above gains nothing measurable, and its interval excludes the paper's 3.5%: *smaller than
# reported* (row 5), a stronger statement than "the seeds overlap". It is not *no difference*: the interval's
# upper end, +1.01%, lies just past the margin.
#
# Every claims table of the book prints the interval beside the verdict, and says which question its runs answer:
# the paper's own comparison, or the book's (the same parameter count under one recipe).
#
# The figure below puts every claim of the book's comparison (chapter 06) on one axis: a dot and a bar for our
# change and its interval, a diamond for the paper's change (none where the paper gave no size), the grey band for
# the $\pm 1\%$ margin, and the verdict on the right. The labels name models of chapters 01 to 05; three rows (the
# tied LSTM, whose input and output embeddings share one matrix, at hidden size 128, written $d = 128$ in its
# label, and a window head retrained with a shorter and a longer window, chapter 03) ask the paper's own question
# under the recipe, at another size. Here only
# the way to read a row matters.

# %%
from mlm.plots import interval_plot
from mlm.table import decided_compare

decided = decided_compare("../results")  # the claims with three seeds a side stored
interval_plot(list(decided.values()), [compare.ROW_LABELS[name] for name in decided],
              title="Each claim against its control under one recipe")
plt.show()

# %% [markdown]
# ## Summary
#
# * Perplexity is $e$ to the average negative log-likelihood per predicted token. The book always counts
#   every word and every `<eos>`, never padding, and says which protocol produced the number.
# * PTB (929k training tokens, 10k types) and WikiText-2 (2.1M tokens, 33k types) are the book's corpora;
#   count-based unigram and bigram models give the first reference perplexities above.
# * Three protocols (stream, sentence, document) feed a corpus to a recurrent network; all three score
#   the same tokens.
# * The LSTM equations, written out by hand, match PyTorch's fused `nn.LSTM` to floating-point precision,
#   and the fused call is what every model uses.
# * The key-value recall task asks for a value $d$ words back, with the words before the pair drawn apart
#   from $d$, so that distances can be compared at the same positions in a line.
# * A claim is decided by the 95% interval of the relative change over three seeds or more, read against
#   zero, the $\pm 1\%$ margin and the paper's own change; it is not testable where the control does not
#   beat the bigram of the same tokens.
#
# **Exercise 00** ([`exercises/ex00_perplexity_lstm.py`](../exercises/ex00_perplexity_lstm.py)): write the masked
# perplexity, the LSTM cell and the loop that runs it over a sequence yourself, then check your work with `python -m
# exercises.grader 00`.
#
# Next, chapter 01 trains the LSTM baselines the later papers compare against.

# %% tags=["remove-input"] jupyter={"source_hidden": true}
from mlm.book import record

record("00_language_modelling", {
    "ptb_bigram_test_ppl": round(ngram_results["ptb"]["bigram"], 1),
    "wt2_bigram_test_ppl": round(ngram_results["wikitext-2"]["bigram"], 1),
})
