# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: tags,-all
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
# # Chapter 5 — Data noising and variational smoothing (Xie et al., 2017; Kong et al., 2019)
#
# The earlier chapters gave the LSTM more memory. This one gives it less certainty about its *input*: while
# training, words are swapped for other words drawn from a corpus statistic. Xie et al. (2017) showed that
# such *data noising* behaves like the smoothing of classical n-gram models. Kong et al. (2019) read the same
# recipe as a Bayesian neural network whose embedding matrix has a mixture-of-Gaussians posterior, and the
# reading pays off: it says how to predict at test time (with the mean of the posterior, not its mode), it
# yields a data-dependent L2 penalty, and it suggests two new variants (tied embeddings with separate draws,
# and element-wise smoothing). We go from n-gram smoothing to noising to the Bayesian view, implement all of it
# in `mlm/regularizers/`, and train five rows of Kong et al.'s Table 2 in a reduced size (all seven at full size).
#
# Papers: *Data Noising as Smoothing in Neural Network Language Models* (ICLR 2017) and *Variational
# Smoothing in Recurrent Neural Network Language Models* (ICLR 2019). Equation and table numbers are Kong et
# al.'s.

# %% tags=["parameters"]
size = "reduced"  # "reduced" (minutes on a CPU) or "full" (the paper's settings; a GPU is advised)
device = "auto"  # "auto", "cpu", "cuda" or "mps"
seed = 0
data_dir = None  # None: $MLM_DATA_DIR, then ~/.cache/mlm
runs_dir = "../runs"  # run folders; a finished run is loaded, not retrained

# %%
import json
import math
from pathlib import Path

import matplotlib.pyplot as plt
import torch

import mlm
from mlm.baselines import count_baseline
from mlm.book import record
from mlm.claims import UNTESTABLE, Claim, show_claims, spread, verdict
from mlm.data import Vocabulary
from mlm.manifests import cpu
from mlm.regularizers import (DataNoising, VariationalSmoothing, bigram_counts, evaluate_sampled, l2_coefficients,
                              noising_scheme, row_types, training_stream)
from mlm.table import stored_claims
from mlm.training import build_batches
from mlm.utils import set_seed
from mlm.widgets import noising_explorer

set_seed(seed)

# %% [markdown]
# ## 1. Smoothing an n-gram model
#
# A bigram model estimated by counting, $p(w \mid v) = c(v, w) / c(v)$, gives probability zero to every pair it
# has not seen. Smoothing moves a little mass from seen pairs to unseen ones, in three classic ways:
#
# * **Linear interpolation** mixes in the unigram distribution with a fixed weight:
#   $p(w \mid v) = (1 - \lambda)\, c(v, w) / c(v) + \lambda\, U(w)$.
# * **Absolute discounting** subtracts a constant $D$ from every seen count and gives the freed mass to the
#   unigram distribution. A context $v$ followed by $N_{1+}(v, \cdot)$ *different* words frees
#   $D\, N_{1+}(v, \cdot) / c(v)$, so contexts with many different continuations back off more:
#   $p(w \mid v) = \max(c(v, w) - D, 0) / c(v) + D\, N_{1+}(v, \cdot)/c(v) \cdot U(w)$.
# * **Kneser-Ney** keeps the discount but backs off to a different lower-order distribution. A word is a likely
#   continuation of an *unseen* context if it follows many different words, not if it is frequent:
#   $K(w) = N_{1+}(\cdot, w) / \sum_u N_{1+}(\cdot, u)$, the *continuation* probability. "Francisco" is frequent
#   but nearly always follows "San", so $K$(francisco) is small.
#
# All of these need three counts, computed in `mlm.regularizers.proposals` on the training stream exactly as
# the stream protocol reads it (with `<eos>` between sentences). A tiny corpus by hand:

# %%
# NBVAL_CHECK_OUTPUT
toy_text = ["san francisco is foggy", "san francisco is big", "san francisco has fog", "los angeles is sunny",
            "the city is big"]
toy_vocab = Vocabulary.build([s.split() for s in toy_text])
toy_stream = training_stream([toy_vocab.encode(s.split()) for s in toy_text], toy_vocab.eos_id)
toy = bigram_counts(toy_stream, len(toy_vocab))
toy_schemes = {name: noising_scheme(name, toy, 0.2) for name in ("unigram", "absolute", "kneser-ney")}
print(f"stream of {len(toy_stream)} ids: {' '.join(toy_vocab.decode(toy_stream))}")
print(f"{'word':<10} {'count':>5} {'N(.,w)':>6} {'N(w,.)':>6} {'unigram':>8} {'KN cont.':>8} {'gamma_i abs.':>12}")
for w in range(len(toy_vocab)):
    if toy.count[w] == 0:
        continue
    print(f"{toy_vocab.itos[w]:<10} {int(toy.count[w]):>5} {int(toy.distinct_before[w]):>6} "
          f"{int(toy.distinct_after[w]):>6} {float(toy_schemes['unigram'].proposal[w]):>8.3f} "
          f"{float(toy_schemes['kneser-ney'].proposal[w]):>8.3f} {float(toy_schemes['absolute'].gamma[w]):>12.3f}")

# %% [markdown]
# "francisco" occurs three times, always after "san"; "is" follows three different words. The unigram
# distribution ranks them almost alike, the continuation distribution gives "is" three times the probability of
# "francisco". "san" has one continuation in three occurrences, so absolute discounting noises it with only a
# third of $\gamma$; "is" has three different continuations in four occurrences and is noised with $0.75\gamma$.
#
# ## 2. Data noising
#
# Xie et al. turn these recipes into a data augmentation. While training, each input word $x_t = i$ is, with
# probability $\gamma_i$, replaced by a word drawn from a proposal $q$ (Kong et al.'s Table 1):
#
# | name | noised | $\gamma_i$ | proposal $q$ |
# |---|---|---|---|
# | blank noising | input | $\gamma$ | the blank word "_" |
# | linear interpolation | input | $\gamma$ | unigram $U$ |
# | absolute discounting | input | $\gamma\, N_{1+}(i, \cdot) / c(i)$ | unigram $U$ |
# | Kneser-Ney | input and target | $\gamma\, N_{1+}(i, \cdot) / c(i)$ | continuation $K$ |
#
# In expectation over the noise, a bigram model trained on noised data sees the pseudo-counts of the
# corresponding smoothed model: the context $i$ is "forgotten" with probability $\gamma_i$ and the
# prediction must fall back on what the replacement tells, on average the proposal. For Kneser-Ney, replacing
# only the input would leave "francisco" as the target of a random context, so the target is redrawn as well.
# `DataNoising` does this for a whole batch with two random draws and one `searchsorted`; evaluation never
# noises. The blank word reuses the `<pad>` row of the embedding, which the stream protocol never reads or
# predicts.

# %%
common = {"train.seed": seed, "train.device": device}
if data_dir:
    common["data.data_dir"] = data_dir
# Sections 2, 3 and 7 look at the paper's corpus: all of PTB's training text with its 10k-word vocabulary.
base_cfg = mlm.get_preset("kong2019-ptb-512-dn-kn", "full", overrides=common)
ptb = mlm.load_data(base_cfg)
vocab = ptb.vocab
full_counts = bigram_counts(training_stream(ptb.ids("train"), vocab.eos_id), len(vocab))
schemes = {name: noising_scheme(name, full_counts, 0.2, blank_id=vocab.pad_id)
           for name in ("blank", "unigram", "absolute", "kneser-ney")}

torch.manual_seed(seed)
batch = next(iter(build_batches(base_cfg, ptb, "train")))
noiser = DataNoising(schemes["kneser-ney"]).train()
noised_inputs, noised_targets = noiser.prepare(batch.inputs, batch.targets, batch.mask)
show = lambda ids: " ".join(vocab.itos[i] if i != vocab.pad_id else "_" for i in ids.tolist())  # noqa: E731
print("inputs :", show(batch.inputs[0, :18]))
print("noised :", show(noised_inputs[0, :18]))
print("targets:", show(noised_targets[0, :18]))

# %%
# The empirical noising rate over many batches matches gamma_i (1 - q_i), word by word (the tests check it
# for every scheme with fixed seeds; here for the twenty most frequent words under Kneser-Ney).
torch.manual_seed(seed)
inputs = batch.inputs.repeat(40, 1)  # 40 copies of the batch: about 90k positions
changed = (noiser.prepare(inputs, batch.targets.repeat(40, 1), None)[0] != inputs)
worst = 0.0
for word in range(4, 24):
    at = inputs == word
    if at.sum() < 500:
        continue
    expected = float(noiser.gamma[word] * (1 - noiser.proposal[word]))
    se = math.sqrt(expected * (1 - expected) / int(at.sum()))
    worst = max(worst, abs(float(changed[at].double().mean()) - expected) / se)
print(f"largest deviation from gamma_i (1 - q_i) over the frequent words: {worst:.1f} standard errors")
assert worst < 5

# %% [markdown]
# ## 3. The Bayesian view (Kong et al., section 4)
#
# Replacing input word $i$ by $v$ is the same as using the embedding $e_v$ where $e_i$ would have been.
# So instead of noising the data we can put a distribution on the embedding of every word, a mixture of
# Gaussians centred on the rows of one base matrix (Eq. 2 for the unigram proposal, Eq. 4 for Kneser-Ney):
#
# $$ q(e_i) = (1 - \gamma_i)\, \mathcal N(e_i, \sigma I) + \gamma_i \sum_{v} q_v\, \mathcal N(e_v, \sigma I). $$
#
# Training a Bayesian RNN maximises the evidence lower bound: the expected log-likelihood under $q$, estimated
# with one sample, minus $\mathrm{KL}(q \,\|\, p)$ to the prior $p(e) = \mathcal N(0, I)$. Three consequences:
#
# 1. **One sample per sequence.** The Monte Carlo estimate draws one embedding matrix for a whole sequence,
#    so every occurrence of a word in it uses the same draw ("a b a c" becomes "d b d c", never "d b a c").
#    In the stream protocol a sequence is one row of one batch (its `bptt` tokens). Only the (row, word type)
#    pairs that occur are drawn: `row_types` finds them with one `torch.unique`.
# 2. **A data-dependent L2 penalty from the KL term** (derived below).
# 3. **Prediction with the mean.** Xie et al. evaluate on clean inputs: the embedding $e_i$ itself, the *mode*
#    of $q(e_i)$ whenever $1 - \gamma_i > \gamma_i$. A Bayesian model predicts with the posterior's mean,
#    $\bar e_i = (1 - \gamma_i) e_i + \gamma_i \sum_v q_v e_v$: each word is pulled toward the
#    proposal-weighted average embedding, more strongly the more often it is noised.
#
# The same reading extends data noising in three ways the paper uses: the output embedding $O$ gets the same
# mixture (Eq. 5, needed for Kneser-Ney, where targets are noised too); with tied embeddings, $E$ and $O$ are
# *separate* draws from the one base matrix (section 4.3); and element-wise embedding dropout joins the
# mixture as a Gaussian at zero, one mask entry per word and dimension (Eq. 6). Drawing the keep/replace decision
# and the replacing word per *dimension* instead of per vector gives **element-wise smoothing**, whose vectors
# mix elements of several words; its mean is the same as the vector-wise one.

# %%
# Per-sequence draws: every occurrence of a word in a row reads the same vector.
torch.manual_seed(seed)
smoother = VariationalSmoothing(schemes["kneser-ney"], embed_dropout=0.5).train()
embedding = torch.nn.Embedding(len(vocab), 8)
tokens = batch.inputs[:4]
x = smoother.embed(embedding, tokens)  # (4, bptt, 8)
words, rows, inverse = row_types(tokens, len(vocab))
same = all(torch.equal(x[r, t], x[r, u]) for r in range(4) for t in range(tokens.size(1))
           for u in range(tokens.size(1)) if tokens[r, t] == tokens[r, u])
print(f"{tokens.numel()} positions, {words.numel()} (row, word) pairs drawn; repeated words share their draw: {same}")
assert same

# %%
# The mean of q in closed form against the average of many draws (vector-wise and element-wise).
for elementwise in (False, True):
    torch.manual_seed(seed)
    sm = VariationalSmoothing(schemes["unigram"], elementwise=elementwise).train()
    word = vocab.stoi["stock"]
    draws = sm.embed(embedding, torch.full((20000, 1), word))[:, 0]
    closed_form = sm.eval().embed(embedding, torch.tensor([[word]]))[0, 0]
    gap = (draws.mean(0) - closed_form).abs().max().item()
    print(f"element-wise={elementwise!s:<5}: largest gap between the mean of 20000 draws and the closed form {gap:.4f}")
    assert gap < 0.01

# %% [markdown]
# ### The KL term, worked out
#
# Kong et al. approximate the KL of a mixture of narrow Gaussians to $\mathcal N(0, I)$ with Gal &
# Ghahramani's Proposition 1: up to constants, $\mathrm{KL}(q(e_i) \| p) \approx \sum_v \tfrac{\theta^i_v}{2}
# \lVert e_v \rVert^2$, where $\theta^i_v$ are the mixture weights of $q(e_i)$. Written out, they are
# $\theta^i_i = 1 - \gamma_i + \gamma_i q_i$ and $\theta^i_v = \gamma_i q_v$ for $v \neq i$. (The paper's
# text says "$\gamma$ otherwise", dropping $q_v$, and the printed Eq. 3 does not survive text extraction;
# with $\gamma$ alone every word would get a coefficient of order $V\gamma$, a penalty that has nothing to do
# with the data. We therefore derive the coefficient ourselves.) The KL of the whole matrix sums over the
# words $i$, and a vector $e_v$ appears in every mixture that can pick it:
#
# $$ c_v = \frac12 \sum_i \theta^i_v = \frac12 \Big[ (1 - \gamma_v + \gamma_v q_v) + \sum_{i \neq v} \gamma_i q_v \Big]
#        = \frac12 \Big[ 1 - \gamma_v + q_v \sum_i \gamma_i \Big], $$
#
# and the regulariser is $\lambda \sum_v c_v \lVert e_v \rVert^2$. For linear interpolation
# ($\gamma_i = \gamma$, $q = U$) this is $c_v = \tfrac12 (1 - \gamma + \gamma V U_v)$: a word drawn more often
# than under a uniform proposal ($U_v > 1/V$) is pulled harder toward zero and a rare word less, which is the
# paper's footnote 5. A uniform proposal gives $c_v = 1/2$, the plain Gaussian prior, i.e. ordinary weight
# decay. The dropout component of Eq. 6 multiplies every $c_v$ by $1 - \alpha$, a constant we fold into
# $\lambda$. In `mlm`, $\lambda$ is `train.weight_decay` (the L2 the paper tunes for every model), and
# variational smoothing adds $\frac{\lambda}{2} \sum_v (2 c_v - 1) \lVert e_v \rVert^2$ to the loss, so that the
# total gradient on $e_v$ is $2 \lambda c_v e_v$.

# %%
fig, ax = plt.subplots(figsize=(7, 4))
ranks = torch.arange(1, len(vocab) + 1)
for name in ("unigram", "kneser-ney"):
    coef = 2 * l2_coefficients(schemes[name].gamma, schemes[name].proposal)  # 1 = plain weight decay
    order = torch.argsort(full_counts.count, descending=True)
    ax.loglog(ranks, coef[order], ".", ms=2, label=f"{name} proposal")
ax.axhline(1.0, color="k", ls=":", lw=1, label="plain weight decay")
ax.set_xlabel("frequency rank of the word in PTB train")
ax.set_ylabel("2 c_v (L2 weight relative to weight decay)")
ax.set_title("data-dependent L2 coefficient, gamma = 0.2")
ax.legend()
plt.show()
for name in ("unigram", "kneser-ney"):
    coef = 2 * l2_coefficients(schemes[name].gamma, schemes[name].proposal)
    print(f"{name:<11} 2 c_v: 'the' {coef[vocab.stoi['the']]:.1f}, 'stock' {coef[vocab.stoi['stock']]:.2f}, "
          f"'francisco' {coef[vocab.stoi['francisco']]:.2f}")

# %% [markdown]
# Under the unigram proposal "the" is penalised over a hundred times more than plain weight decay would; under
# Kneser-Ney the ordering follows how many different words precede a word, not its frequency. With the
# paper's small $\lambda$ (1e-4 or 1e-3) even the largest coefficients stay moderate.
#
# ## 4. Training the rows of Table 2 (reduced)
#
# The presets `kong2019-{ptb,wt2}-{512,1024}-{model}` hold the paper's settings (section 5.1): a two-layer
# LSTM on the stream protocol, batch 64, RMSprop with a point of the paper's grid (lr 0.003, $\lambda$ = 1e-4,
# $\gamma$ = 0.2), recurrent dropout 0.2, element-wise embedding dropout 0.5 (512) or 0.7 (1024), tied embeddings
# except for the untied vanilla LSTM. The paper tunes lr, $\lambda$ and $\gamma$ on the validation set; the
# command `python -m mlm sweep PRESET --grid train.lr=0.002,0.003,0.004 --grid train.weight_decay=1e-4,1e-3
# --grid model.noise_gamma=0.1,0.2,0.3,0.4` does that and picks the best point by validation perplexity.
#
# Three settings are not in the paper and are our choices: the recurrent dropout is a DropConnect mask on the
# hidden-to-hidden weights (one per batch; Semeniuta et al.'s dropout on the cell update would need an LSTM
# loop and lose the fused kernel), `model.dropout` between the layers and before the softmax uses the embedding
# rate, and the output side of tied embedding dropout is that dropout on the softmax input.
#
# **The reduced size** (printed below) is a documented departure chosen so that every model shown here has
# learned something: 2 x 128 models on the first 40k training tokens of PTB with the vocabulary cut to its
# 2,000 most frequent words (the rest become `<unk>`, for the models and the baseline alike), batch 10,
# learning rate 0.006 (twice the paper's), 8 epochs. With the paper's 10k vocabulary, batch 20 and lr 0.003, four epochs
# left every model far above the interpolated bigram counted on the same tokens (test 550-650 against 458),
# and a model that loses to a bigram says nothing about regularizing an LSTM. The floor every model must beat is
# that bigram (`mlm.baselines.count_baseline`): it sees exactly the models' training tokens and vocabulary.
#
# Five of the seven rows run here: the two vanilla LSTMs, data noising and variational smoothing with the
# Kneser-Ney proposal, and element-wise smoothing (the paper's best). Vanilla tied and element-wise smoothing,
# the comparison the paper's headline rests on, run with three seeds; the others with one. The two
# linear-interpolation rows are printed with the paper's numbers and "not run here"; at `size = "full"` the
# chapter trains all seven.

# %%
ALL_MODELS = ["vanilla-untied", "vanilla-tied", "dn-linear", "dn-kn", "vs-linear", "vs-kn", "vs-elementwise"]
MODELS = ALL_MODELS if size == "full" else ["vanilla-untied", "vanilla-tied", "dn-kn", "vs-kn", "vs-elementwise"]
SEEDED = {"vanilla-tied": [seed, seed + 1, seed + 2], "vs-elementwise": [seed, seed + 1, seed + 2]}
runs, seed_runs = {}, {}
for model_name in MODELS:
    for s in SEEDED.get(model_name, [seed]):
        cfg = mlm.get_preset(f"kong2019-ptb-512-{model_name}", size, overrides={**common, "train.seed": s})
        seed_runs.setdefault(model_name, []).append(
            mlm.train(cfg, run_dir=Path(runs_dir) / f"{cfg.name}-{size}-seed{s}"))
    runs[model_name] = seed_runs[model_name][0]
run_cfg = runs["vanilla-tied"].config
print(run_cfg.notes)
corpus = mlm.load_data(run_cfg)  # the models' vocabulary (2,000 words at the reduced size)
baseline = count_baseline(run_cfg, corpus)
print(f"interpolated bigram on the same {baseline['train_tokens']:,} training tokens and {len(corpus.vocab):,} words: "
      f"valid {baseline['bigram_valid']:.1f}, test {baseline['bigram_test']:.1f} "
      f"(chapter 00's bigram on all of PTB, 10k words: test 208.6)")

# %%
fig, ax = plt.subplots(figsize=(8, 4.5))
for i, (label, run) in enumerate(runs.items()):
    epochs = [h["epoch"] for h in run.history]
    ax.plot(epochs, [h["valid_ppl"] for h in run.history], "-o", ms=3, color=f"C{i}", label=f"{label} (valid)")
    ax.plot(epochs, [h["train_ppl"] for h in run.history], "--", color=f"C{i}", alpha=0.5)
ax.axhline(baseline["bigram_valid"], color="k", ls=":", lw=1, label="bigram, same tokens (valid)")
ax.set_yscale("log")
ax.set_xlabel("epoch")
ax.set_ylabel("perplexity (dashed: training, noised)")
ax.set_title(f"PTB, 2 layers, {size} size, seed {seed}")
ax.grid(True, which="both", alpha=0.3)
ax.legend(fontsize=7, ncol=2)
plt.show()

# %%
fmt = lambda x: "     -" if x is None else f"{x:6.1f}"  # noqa: E731
mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
print(f"{'model':<22} {'seeds':>5} {'params':>9} {'valid':>7} {'test':>7} {'paper valid':>12} {'paper test':>11}")
print(f"{'bigram, same tokens':<22} {'-':>5} {'-':>9} {fmt(baseline['bigram_valid'])} {fmt(baseline['bigram_test'])} "
      f"{'-':>12} {'-':>11}")
print(f"{'bigram, all PTB (ch.00)':<22} {'-':>5} {'-':>9} {'     -'} {fmt(208.6)} {'-':>12} {'-':>11}")
table = {}
for label in ALL_MODELS:
    paper = mlm.get_preset(f"kong2019-ptb-512-{label}").paper
    if label not in seed_runs:
        print(f"{label:<22} {'not run here':>30} {fmt(paper['valid']):>12} {fmt(paper['test']):>11}")
        continue
    rs = seed_runs[label]
    table[label] = {"valid": [r.result["best_valid_ppl"] for r in rs], "test": [r.result["test_ppl"] for r in rs],
                    "params": rs[0].result["parameters"], "best_epoch": [r.result["best_epoch"] for r in rs]}
    print(f"{label:<22} {len(rs):>5} {rs[0].result['parameters']:>9,} {fmt(mean(table[label]['valid']))} "
          f"{fmt(mean(table[label]['test']))} {fmt(paper['valid']):>12} {fmt(paper['test']):>11}")
for label, row in table.items():
    assert max(row["test"]) < baseline["bigram_test"], f"{label} does not beat the bigram on its own tokens"

# %% [markdown]
# Every model trained here beats the bigram counted on its own tokens (the assertion above stops the chapter
# otherwise), so each has learned something a count table does not hold. The paper's numbers (2 x 512, all of
# PTB with 10k words, tuned, trained to convergence) stand beside ours for orientation only: different
# vocabularies give perplexities on different scales.
#
# ### Does the vanilla model overfit?
#
# A regularizer can only show its worth where the plain model overfits: where it fits the training text better
# and better while validation perplexity stops improving. The dashed curves above are measured *with* dropout
# and noise, so we also score the finished vanilla tied models on their training tokens with the regularizers
# off (clean), and look at the epoch with the best validation perplexity. A gap between clean training and
# validation perplexity is expected from the first epoch on 40k tokens; what a regularizer can correct is
# validation perplexity that stops falling (or rises) while training perplexity keeps falling.

# %%
train_eval = build_batches(run_cfg, corpus, "train", shuffle=False)
overfit = []
for s, run in zip(SEEDED["vanilla-tied"], seed_runs["vanilla-tied"]):
    clean_train = mlm.evaluate(run.model, train_eval).perplexity
    valid_curve = [h["valid_ppl"] for h in run.history]
    stalled = run.result["best_epoch"] < len(run.history)
    overfit.append(stalled)
    print(f"vanilla tied, seed {s}: clean training perplexity {clean_train:.1f}, "
          f"validation {run.result['best_valid_ppl']:.1f}; "
          f"best epoch {run.result['best_epoch']} of {len(run.history)}; validation by epoch "
          + " ".join(f"{v:.0f}" for v in valid_curve))
vanilla_overfits = all(overfit)
print(f"validation perplexity stopped improving before the last epoch in {sum(overfit)} of {len(overfit)} seeds: the "
      "vanilla model " + ("has begun to overfit in every seed" if vanilla_overfits else
                          "has not begun to overfit" if not any(overfit) else "has not begun to overfit in every seed"))

# %% [markdown]
# The comparison the paper's headline rests on, element-wise smoothing against the vanilla tied LSTM, per
# seed (test perplexity), and the one-seed rows against vanilla tied (one seed each: their order may be noise):

# %%
for label in table:
    rows = table[label]["test"]
    print(f"{label:<16} test {spread(rows)}   " + " ".join(f"{v:.1f}" for v in rows)
          + f"   {mean(rows) / mean(table['vanilla-tied']['test']) - 1:+.1%} against vanilla tied")

# %% [markdown]
# ## 5. Sensitivity to $\gamma$ (the paper's Figure 1)
#
# Kong et al. plot the validation perplexity of VS Kneser-Ney (512) for $\gamma$ from 0.1 to about 0.9: flat
# between 0.1 and 0.3, then worse as the noise grows. The sweep below runs at `size = "full"` only: at the
# reduced size its two extra runs would not fit the chapter's time budget, and one seed per $\gamma$ could not
# separate points a few perplexity apart. Not run here.

# %%
gamma_valid = {}
if size == "full":
    gammas = [0.1, 0.2, 0.4]
    for g in gammas:
        if g == runs["vs-kn"].config.model.noise_gamma:
            gamma_valid[g] = runs["vs-kn"].result["best_valid_ppl"]
            continue
        cfg = mlm.get_preset("kong2019-ptb-512-vs-kn", size, overrides={**common, "model.noise_gamma": g})
        run = mlm.train(cfg, run_dir=Path(runs_dir) / f"{cfg.name}-gamma{g}-{size}-seed{seed}")
        gamma_valid[g] = run.result["best_valid_ppl"]
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.plot(gammas, [gamma_valid[g] for g in gammas], "-o")
    ax.set_xlabel("gamma")
    ax.set_ylabel("best validation perplexity")
    ax.set_title(f"VS Kneser-Ney, PTB, {size} size")
    ax.grid(alpha=0.3)
    plt.show()
    print(", ".join(f"gamma {g}: {v:.1f}" for g, v in gamma_valid.items()))
else:
    print("gamma sweep: not run at the reduced size")

# %% [markdown]
# ## 6. Mean or samples at test time (section 5.4)
#
# Instead of the mean (VS) or the clean input (DN), one can predict with samples: draw $S$ embedding matrices,
# run the model with each, and average over the draws. Section 5.4 averages the *log-likelihoods*,
# $\log p(y_t \mid y_{<t}) \approx \frac1S \sum_s \log p(y_t \mid y_{<t}; W_s)$, and finds this worse than the
# mean for both DN and VS Kneser-Ney with twenty samples (75.0 → 96.5 and 74.5 → 89.8 on PTB validation at
# 512). `evaluate_sampled(..., average="log-likelihood")` does that; `average="probability"` averages the
# likelihoods instead, which by Jensen's inequality can only give a lower perplexity, and we print both.
# `evaluate_sampled` carries $S$ recurrent states side by side and draws the input embeddings afresh for each
# row and segment, as in training. On the output side a test-time draw replaces *every* row of the softmax:
# drawing only the target's row, as training does, would make the probabilities of the candidate words depend
# on which word is the target, and they would not sum to one. For the VS model we also evaluate with the mode
# (the base matrix, what data noising uses) next to the mean.

# %%
samples = 5 if size == "reduced" else 20
valid_batches = build_batches(run_cfg, corpus, "valid")
assert runs["vs-kn"].config.model.smoothing_coupled, "the table uses Kong's coupled output rows (section 4.2)"
sampling = {}
for label in ("dn-kn", "vs-kn"):
    run = runs[label]
    torch.manual_seed(seed)
    scores = {"clean (mode)": mlm.evaluate(run.model, valid_batches).perplexity}
    if label.startswith("vs"):
        scores["mean"] = scores.pop("clean (mode)")
        run.model.regularizer.prediction = "mode"
        scores["mode"] = mlm.evaluate(run.model, valid_batches).perplexity
        run.model.regularizer.prediction = "mean"
    for average in ("log-likelihood", "probability"):
        torch.manual_seed(seed)
        scores[f"{samples} samples ({average})"] = evaluate_sampled(run.model, valid_batches, samples=samples,
                                                                    average=average).perplexity
    assert scores[f"{samples} samples (probability)"] <= scores[f"{samples} samples (log-likelihood)"] * 1.0001
    sampling[label] = scores
    print(f"{label}: " + ", ".join(f"{k} {v:.1f}" for k, v in scores.items())
          + f"   (paper, 512: {run.config.paper['valid']} -> {run.config.paper.get('valid_sampled_20')} "
            "with 20 samples)")

# %% [markdown]
# What these numbers say (one seed of each model, so small differences may be noise). Data noising predicted
# from samples of its noised inputs is worse than on clean inputs, the direction the paper reports. For
# variational smoothing, the mean and the mode are within a few percent of each other at this size, so the
# reduced run does not confirm the paper's argument for the mean. And our test-time draws of the *whole* output
# softmax are far worse than either: a drawn softmax copies the rows of frequent words into a fifth of the
# vocabulary. The paper's sampled perplexities are only moderately worse than its means, so its draws were
# probably narrower (the inputs, or only the target rows); the paper does not say, and we keep the
# proper-distribution version.
#
# ## 7. Explore: what does a word become?
#
# Choose a word and $\gamma$ to see the words it turns into under each scheme (with its own probability of
# staying, in orange). Blank noising sends the word to "_" with probability $\gamma$; linear interpolation draws
# frequent words; absolute discounting changes only *how often* a word is noised; Kneser-Ney draws words that
# follow many different words. Run headless (as in the book build), the panel shows one static example.

# %%
noising_explorer(full_counts, vocab, ["francisco", "stock", "the", "york", "president", "<eos>"],
                 blank_id=vocab.pad_id)

# %% [markdown]
# ## 8. Speed of element-wise smoothing
#
# The paper reports about a day of training for element-wise smoothing against a couple of hours for the other
# models: every element of every drawn vector needs its own decision and its own replacement word. Drawing only
# for the (row, word type) pairs present in the batch and gathering all elements with one indexing operation
# keeps the cost small next to the LSTM and the softmax. `python -m mlm bench` measured it at the paper's
# full size (2 x 512, batch 64 x 35) on this book's CPU:

# %%
bench_path = Path("../results/bench-smoothing-cpu.json")
if bench_path.exists():
    bench = json.loads(bench_path.read_text())
    base_speed = bench[0]["train_tokens_per_second"]
    for row in bench:
        print(f"{row['preset']:<40} {row['train_tokens_per_second']:>8,.0f} train tokens/s   "
              f"{base_speed / row['train_tokens_per_second']:.2f}x the training time of the first row")
else:
    print("results/bench-smoothing-cpu.json not found; run the bench command of results/README.md")

# %% [markdown]
# ## 9. Paper versus ours
#
# The paper's rows (2 x 512, all of PTB with 10k words, tuned, trained to convergence) beside ours (reduced:
# 2 x 128, 40k tokens, 2k words, 8 epochs; mean of the seeds where there are three). Our perplexities are on a
# smaller vocabulary and are not comparable in level with the paper's; the own-data bigram is their floor.

# %%
lines = ["| | paper valid / test (2 x 512) | ours valid / test (" + size + ") |", "|---|---|---|",
         f"| interpolated bigram, same tokens | - | {baseline['bigram_valid']:.1f} / {baseline['bigram_test']:.1f} |",
         "| interpolated bigram, all of PTB (chapter 00) | - | - / 208.6 |"]
for label in ALL_MODELS:
    paper = mlm.get_preset(f"kong2019-ptb-512-{label}").paper
    ours = (f"{mean(table[label]['valid']):.1f} / {mean(table[label]['test']):.1f} ({len(table[label]['test'])} seed"
            + ("s)" if len(table[label]["test"]) > 1 else ")")) if label in table else "not run here"
    lines.append(f"| {label} | {paper['valid']} / {paper['test']} | {ours} |")
for label in sampling:
    paper = runs[label].config.paper
    lines.append(f"| {label}, samples at test time (valid) | "
                 f"{paper['valid']} → {paper.get('valid_sampled_20')} (20) | "
                 f"{sampling[label]['mean' if 'mean' in sampling[label] else 'clean (mode)']:.1f} → "
                 f"{sampling[label][f'{samples} samples (log-likelihood)']:.1f} ({samples}) |")
lines.append(f"| gamma sweep (Figure 1) | flat for 0.1-0.3 | "
             + (", ".join(f"{g}: {v:.1f}" for g, v in gamma_valid.items()) if gamma_valid else "not run here") + " |")
try:
    from IPython.display import Markdown, display
    display(Markdown("\n".join(lines)))
except ImportError:
    print("\n".join(lines))

# %% [markdown]
# Notes, honestly:
#
# * **What the reduced run is evidence of.** Every model trained here (2 x 128, the first 40k PTB training
#   tokens, a 2,000-word vocabulary, 8 epochs) beats the interpolated bigram counted on the same tokens, so the
#   implementations learn, and the regularizers do not break training. The curves show each regularizer's cost in
#   a short run: the noised and smoothed models learn more slowly than the vanilla ones.
# * **What it is not evidence of.** The vanilla tied LSTM has not begun to overfit: its validation perplexity
#   still falls at the last epoch in all three seeds (section 4). A regularizer only pays off where the plain
#   model overfits, so the reduced run cannot test the paper's ranking of the regularizers; that every
#   regularized model trails vanilla tied here (element-wise smoothing in all three seeds) says they slow
#   learning down, not that the paper is wrong. The runs are not converged and the perplexities are on a
#   smaller vocabulary than the paper's. Full-size presets exist for every row of Table 2 (PTB and WikiText-2,
#   512 and 1024); none has been run for this book yet.
# * **Size departures.** The reduced size cuts the vocabulary to 2,000 words, uses batch 10 and lr 0.006 (the
#   paper's grid is 0.002-0.004): with the paper's 10k words, batch 20, lr 0.003 and four epochs every model
#   stayed far above its own bigram (test 550-650 against 458). Three rows run here with one seed and two with
#   three; the two linear-interpolation rows and the $\gamma$ sweep run at full size only.
# * **Unstated settings.** The number of epochs, the learning-rate schedule, the BPTT length, gradient clipping
#   and the initialisation are not given in the paper; ours are listed in `mlm/presets/kong2019.py`. The recurrent
#   dropout is DropConnect on the recurrent weights rather than Semeniuta et al.'s, to keep the fused LSTM.
# * **The KL coefficient** is our derivation (section 3); the printed formula could not be read reliably.
# * **Output rows.** Like the paper's cheap option (end of section 4.2), only the output rows of a sequence's
#   target words are drawn; the other rows of the softmax use their base values during training. Section 4.2
#   couples the two sides: where an input word is replaced, the output row of the word it predicts is replaced
#   too. That coupling is what the table uses (`model.smoothing_coupled=True`, the default, checked in section 6);
#   `False` draws the output rows independently of the inputs. For sampling at test time we draw every row
#   (section 6), so that each draw is a proper distribution over the words, and we average log-likelihoods over
#   the draws as section 5.4 does (the average of probabilities is printed beside it).
# * **Mean versus mode.** The paper finds the mean better than the mode; in the reduced VS Kneser-Ney model
#   they are within a few percent (one seed, not converged).
# * **No official code** exists for Kong et al.; Xie et al.'s code agrees with the noising implemented here
#   (inputs only, Kneser-Ney input and target redrawn independently, absolute-discounting $\gamma_i$).

# %% [markdown]
# **Exercise 05** ([`exercises/ex05_noising_proposals.py`](../exercises/ex05_noising_proposals.py)): the
# noising proposals (unigram, absolute discounting, Kneser-Ney) and Kong et al.'s posterior mean, per-sequence
# draws and data-dependent L2, checked with `python -m exercises.grader 05`.
#
# ## 10. Claims
#
# Each verdict below is computed from the numbers above (`mlm.claims.verdict`: three seeds on both sides, every
# seed of one model better than every seed of the other). Where the vanilla model has not begun to overfit, a
# regularizer has nothing to correct, and the chapter's runs cannot test the paper's ranking of regularizers.
#
# The last rows of the table are the paper's claims at a width that converges on a CPU, read from the runs
# that `python -m mlm reproduce cpu` stores in `results/` (the README's *Reproduction status* shows the same
# rows). A claim whose runs are not stored yet says so, with the command that trains them.

# %%
converged = size == "full"
test_of = lambda label: table[label]["test"]  # noqa: E731
paper_test = lambda label: mlm.get_preset(f"kong2019-ptb-512-{label}").paper["test"]  # noqa: E731
beats_floor = all(max(row["test"]) < baseline["bigram_test"] for row in table.values())
size_note = (f"2 x 128, {baseline['train_tokens']:,} PTB tokens, {len(corpus.vocab):,} words, "
             f"{run_cfg.train.epochs} epochs" if size == "reduced" else "2 x 512, all of PTB")
overfit_note = ("the vanilla model has begun to overfit" if vanilla_overfits else
                "the vanilla model has not begun to overfit (validation still falls at the last epoch), so a "
                "regularizer has nothing to correct")


def ranked(model, control):
    return verdict(test_of(model), test_of(control), converged=converged) if vanilla_overfits else UNTESTABLE


def evidence(model, control):
    return (f"test {model} {spread(test_of(model))} vs {control} {spread(test_of(control))}; {size_note}; "
            + overfit_note)


vs_kn = sampling["vs-kn"]
claims = [
    Claim("Every model shown has learned something: it beats the interpolated bigram counted on its own "
          "training tokens (this book's floor, not the paper's claim)",
          f"worst model test {max(max(r['test']) for r in table.values()):.1f} "
          f"vs bigram {baseline['bigram_test']:.1f}; "
          f"{size_note}", "supported" if beats_floor else "contradicted"),
    Claim(f"Tying the embeddings helps (Table 2: test {paper_test('vanilla-tied')} tied vs "
          f"{paper_test('vanilla-untied')} untied)",
          f"test tied {spread(test_of('vanilla-tied'))} vs untied {spread(test_of('vanilla-untied'))}; {size_note}",
          verdict(test_of("vanilla-tied"), test_of("vanilla-untied"), converged=converged)),
    Claim(f"Element-wise smoothing is the best model of Table 2, ahead of vanilla tied (test "
          f"{paper_test('vs-elementwise')} vs {paper_test('vanilla-tied')})",
          evidence("vs-elementwise", "vanilla-tied"), ranked("vs-elementwise", "vanilla-tied")),
    Claim(f"Variational smoothing beats data noising with the Kneser-Ney proposal (test {paper_test('vs-kn')} "
          f"vs {paper_test('dn-kn')})", evidence("vs-kn", "dn-kn"), ranked("vs-kn", "dn-kn")),
    Claim("Predicting with the posterior mean beats averaging the log-likelihoods of samples (section 5.4: "
          "VS-KN valid 74.5 vs 89.8 with 20 samples)",
          f"VS-KN valid: mean {vs_kn['mean']:.1f}, {samples} samples {vs_kn[f'{samples} samples (log-likelihood)']:.1f}"
          f" (1 seed); {size_note}",
          verdict([vs_kn["mean"]], [vs_kn[f"{samples} samples (log-likelihood)"]], converged=converged)),
    Claim("The mean of the posterior predicts better than its mode (section 4)",
          f"VS-KN valid: mean {vs_kn['mean']:.1f}, mode {vs_kn['mode']:.1f} (1 seed); {size_note}",
          verdict([vs_kn["mean"]], [vs_kn["mode"]], converged=converged)),
]
claims += stored_claims([c for c in cpu.CLAIMS if c.chapter == "05"], "cpu", "../results")  # converged on CPU
show_claims(claims);

# %%
# The notes above rest on these numbers; the chapter stops here if a rerun changes them.
if size == "reduced":
    assert not vanilla_overfits, "the vanilla model overfits now: update the notes and let the claims rank"
    assert all(min(table[m]["test"]) > max(table["vanilla-tied"]["test"]) for m in ("vs-elementwise",)), \
        "element-wise smoothing no longer trails vanilla tied in every seed: update the notes"
    assert all(mean(table[m]["test"]) > mean(table["vanilla-tied"]["test"]) for m in ("dn-kn", "vs-kn")), \
        "a one-seed regularizer beats vanilla tied: update the notes"
    assert sampling["dn-kn"][f"{samples} samples (log-likelihood)"] > sampling["dn-kn"]["clean (mode)"]
    assert abs(vs_kn["mean"] / vs_kn["mode"] - 1) < 0.05, "update the note on mean versus mode"
    assert vs_kn[f"{samples} samples (log-likelihood)"] > 1.3 * vs_kn["mean"], "update the note on whole-softmax draws"
headline = {"size": size, "baseline_valid_ppl": round(baseline["bigram_valid"], 1),
            "baseline_test_ppl": round(baseline["bigram_test"], 1), "vanilla_overfits": vanilla_overfits}
for label, row in table.items():
    key = label.replace("-", "_")
    headline[f"{key}_test_ppl"] = round(mean(row["test"]), 1)
    if len(row["test"]) > 1:
        headline[f"{key}_test_ppl_seeds"] = [round(v, 1) for v in row["test"]]
for label, scores in sampling.items():
    headline[f"{label.replace('-', '_')}_valid_ppl_by_prediction"] = {k: round(v, 1) for k, v in scores.items()}
for key, value in record("05_noising_smoothing", headline).items():
    print(f"{key}: {value}")
