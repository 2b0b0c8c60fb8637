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
# # Chapter 3 — Frustratingly short attention spans (Daniluk, Rocktäschel, Welbl & Riedel, 2017)
#
# Chapter 2 let an LSTM attend over everything it had said earlier in the sentence. Daniluk et al. ask two
# sharper questions. First: when one output vector $h_t$ is used to *predict* the next word, to *look up*
# earlier outputs and to *be looked up* later, is it asked to do too much? Splitting it into parts with one
# job each gives the key-value and key-value-predict models. Second: do these models actually use a long
# history? Their answer is in the title, and their last model, an "N-gram RNN" with no attention at all,
# makes the point.
#
# This chapter derives the four heads from the paper, computes them for all time steps at once with the
# attention window carried across truncated-BPTT segments, trains every variant in a reduced size on
# WikiText-2's articles, and measures how far back the trained models look.
#
# Paper: *Frustratingly Short Attention Spans in Neural Language Modeling*, ICLR 2017 (equation and figure
# numbers below are the paper's).

# %% tags=["parameters"]
size = "reduced"  # "reduced" (minutes on a CPU) or "full" (the paper's settings; a GPU is advised)
device = "auto"  # "auto", "cpu", "cuda" or "mps"
seed = 0
data_dir = None  # None: $MLM_DATA_DIR, then ~/.cache/mlm
runs_dir = "../runs"  # run folders; a finished run is loaded, not retrained

# %%
import inspect
import json
import math
from pathlib import Path

import matplotlib.pyplot as plt
import torch

import mlm
from mlm.analysis.history import window_attention_profile
from mlm.book import record
from mlm.configs import apply_overrides
from mlm.data import DocumentBatches
from mlm.models.short_attention import NgramHead, WindowAttentionHead, window_mask
from mlm.plots import attention_heatmap, learning_curves
from mlm.presets.daniluk2017 import DANILUK_RESULTS
from mlm.utils import set_seed

set_seed(seed)

# %% [markdown]
# ## 1. One vector, three jobs
#
# Start from the attention of chapter 2, restricted to a **sliding window**: at step $t$ the memory is the
# matrix of the previous $L$ outputs of the LSTM's top layer, $Y_t = [h_{t-L} \cdots h_{t-1}] \in \mathbb{R}^{k\times L}$.
# The current output is compared with each of them, the comparison becomes a distribution over the window,
# and the weighted sum $r_t$ is mixed back into the prediction:
#
# $$ M_t = \tanh\big(W^Y Y_t + (W^h h_t)\,\mathbf{1}^\top\big) \quad (1), \qquad \alpha_t = \mathrm{softmax}(w^\top M_t) \quad (2), \qquad r_t = Y_t\,\alpha_t^\top \quad (3) $$
#
# $$ h^*_t = \tanh(W^r r_t + W^x h_t) \quad (4), \qquad y_t = \mathrm{softmax}(W^* h^*_t + b) \quad (5). $$
#
# Count the roles of $h_t$. It is the **query** in (1) at step $t$; it is a **key**, compared against later
# queries, in (1) at steps $t+1 \dots t+L$; it is a **value**, summed into $r$, in (3) at those same steps; and it
# **predicts** the next word through (4)-(5). One vector of size $k$ must serve all of these, and gradient
# from each role pulls on it.
#
# **Key-value attention** (Eq. 6-10) gives the LSTM twice the output size and splits it,
# $h_t = [k_t; v_t] \in \mathbb{R}^{2k}$. Keys meet keys in the scores, $M_t = \tanh(W^Y [k_{t-L}\cdots k_{t-1}] + (W^h k_t)\mathbf{1}^\top)$,
# the values are what is read, $r_t = [v_{t-L}\cdots v_{t-1}]\,\alpha_t^\top$, and $h^*_t = \tanh(W^r r_t + W^x v_t)$.
# The value still does two jobs: it is read from memory later *and* it predicts now.
#
# **Key-value-predict attention** (Eq. 11-12) takes the last step, $h_t = [k_t; v_t; p_t] \in \mathbb{R}^{3k}$, and
# only the predict part enters the output: $h^*_t = \tanh(W^r r_t + W^x p_t)$. Now every part has one job.
#
# **The N-gram RNN** (Eq. 13) drops attention altogether. Split the output into $N-1$ parts
# $h_t = [h^1_t; \dots; h^{N-1}_t]$ and predict from the concatenation of *part $j$ of the output $j-1$ steps back*:
#
# $$ h^*_t = \tanh\Big(W^N \big[h^1_t;\ h^2_{t-1};\ \dots;\ h^{N-1}_{t-N+2}\big]\Big) \quad (13). $$
#
# Part 1 of $h_t$ helps predict the next word, part 2 the word after it, and so on: each output is written
# for several future predictions at once. (The extracted equation ends at $t-N+1$; the paper's text, "the
# previous N-1 output vectors" with part $j$ predicting the $j$-th next word, fixes it at $t-N+2$, which is
# what we implement and test.)
#
# All four heads end in a vector of size $k$ (the part size) that the softmax reads. The paper keeps the
# *total* parameter count fixed across models by choosing the LSTM's hidden size: 300 for the plain LSTM,
# 296 for attention, 560 for key-value (two parts of 280), 834 for key-value-predict (three of 278), and
# 564 / 786 / 968 / 1120 for the 2- to 5-gram RNNs (Figure 2b-c). 968 does not split into three equal parts;
# our 4-gram preset uses 969.

# %% [markdown]
# ## 2. All steps at once, and a window that survives the cut
#
# None of these heads feeds back into the LSTM, so the LSTM runs once over a segment (one fused call), and
# the head works on all $T$ outputs together. The window of step $t$ is a slice of one sequence: the $L$ outputs
# carried over from the previous segment followed by this segment's $T$ outputs, `(batch, L+T, k)`. Slot $j$ of
# *every* step's window is then one shifted slice of that sequence, rows $j \dots j+T-1$. The head loops over
# the $L$ slots, never over time, and each iteration is one batched operation over all $T$ steps. (The first
# version built all windows at once as a `(batch, T, L, k)` view with `Tensor.unfold`; it computes the same
# numbers, but its forward and backward pass took 1.8 times as long on a CPU: the strided view is copied and its backward
# pass scatters.) `window_mask` still uses `unfold`, on booleans that need no gradient:

# %%
print(inspect.getsource(WindowAttentionHead.forward))

# %% [markdown]
# The extended sequence starts with the **carried memory**. The paper trains with truncated
# backpropagation through time, 20 steps at a time, inside each article; the LSTM state flows from one
# segment to the next, and so must the window, or the first words of every segment would see a shorter
# history than the rest. The head returns its last $L$ outputs as `memory`; the training loop detaches it
# (like the LSTM state) and hands it back with the next segment of the same row. Where a row starts a new
# article (`reset`), the carried slots are marked invalid.
#
# What the window holds at the **start of a document**, before $L$ outputs exist, the paper does not say. We
# *mask* the missing slots: the softmax runs over the slots that exist, and the very first word of an article
# gets the context $r_t = 0$. (Two public re-implementations differ here and elsewhere; one lets the current
# output attend to itself, the other normalises the softmax over the batch. Both are bugs the masks below
# rule out.) Here is the validity mask for a window of 3 over a segment of 5 steps, for a row that carries a
# full window and a row that starts a new article:

# %%
# NBVAL_CHECK_OUTPUT
valid = torch.tensor([[True, True, True, True, True, True, True, True],     # 3 carried + 5 new, all valid
                      [False, False, False, True, True, True, True, True]])  # carried slots reset: a new article
allowed = window_mask(valid, window=3, time=5)  # (batch, time, L): slot j of step t, oldest first
for row, name in enumerate(["continuing row", "new article"]):
    print(name)
    print(allowed[row].int())

# %% [markdown]
# The step-by-step definition is in `ReferenceWindowAttentionHead`: a loop over rows and steps with a Python
# list as the window. The tests compare the two in outputs, attention weights, carried memory and gradients,
# across three segments with a document reset and padding in between, for every kind and several windows.
# One comparison here, with gradients flowing through the carried window:

# %%
# NBVAL_CHECK_OUTPUT
torch.manual_seed(0)
head = WindowAttentionHead(hidden_size=12, kind="key-value-predict", window=4).double()
segments = [torch.randn(2, 6, 12, dtype=torch.double, requires_grad=True) for _ in range(3)]
resets = [torch.tensor([True, True]), torch.tensor([False, False]), torch.tensor([False, True])]


def run_segments(module):
    memory, outputs = None, []
    for h, reset in zip(segments, resets):
        out = module(h, memory=memory, reset=reset)
        outputs.append(out)
        memory = out.memory
    return outputs


fast, slow = run_segments(head), run_segments(head.reference())
# The differences are rounding errors of about 1e-16 whose last digit depends on the CPU: the cell prints
# whether they stay far below anything that matters.
print("fast == reference to 1e-12, outputs:",
      max((f.output - s.output).abs().max().item() for f, s in zip(fast, slow)) < 1e-12)
print("fast == reference to 1e-12, attention:",
      max((f.attention - s.attention).abs().max().item() for f, s in zip(fast, slow)) < 1e-12)
grads = [torch.autograd.grad(sum(o.output.sum() for o in outs), segments) for outs in (fast, slow)]
print("fast == reference to 1e-12, gradients:", max((a - b).abs().max().item() for a, b in zip(*grads)) < 1e-12)
print("no weight on the current step, rows sum to one where a window exists:",
      bool(torch.allclose(fast[1].attention.sum(-1), torch.ones(2, 6, dtype=torch.double))))

# %% [markdown]
# The N-gram head needs no attention, only the right parts of the right outputs. With outputs that encode
# their own step and part (`100 * step + 10 * part`), the vector Eq. (13) concatenates at each step shows the
# alignment directly; parts from before the document start are zero:

# %%
# NBVAL_CHECK_OUTPUT
ngram = NgramHead(hidden_size=3, n=4)  # three parts of size 1
h = torch.tensor([[[100.0 * t + 10 * j for j in range(3)] for t in range(5)]])  # (1, time 5, 3 parts)
seen = []
hook = ngram.W_N.register_forward_hook(lambda module, inputs, output: seen.append(inputs[0]))
ngram(h)
hook.remove()
print("step t: [part 1 of h_t, part 2 of h_{t-1}, part 3 of h_{t-2}]")
for t, row in enumerate(seen[0][0].tolist()):
    print(f"  t={t}: {[int(v) for v in row]}")

# %% [markdown]
# ## 3. The protocol and the corpus
#
# Section 4.1: Adam with a learning rate of 0.001, batches of 64, gradient norm clipped at 5, forget-gate
# bias 1, every other weight uniform in $[-0.1, 0.1]$, truncated BPTT over 20 steps, and the LSTM state reset
# between articles. Word vectors have 300 dimensions. The paper does not mention dropout, the number of
# epochs or a stopping rule; our full presets use no dropout and stop after 3 epochs without a better
# validation perplexity (at most 20).
#
# The paper's corpus, 7,500 Wikipedia articles (22.5M training words, a 77k vocabulary), is not available. Its
# closest public relative is **WikiText-2**: 600 / 60 / 60 Wikipedia articles, 2.1M training tokens, a 33k
# vocabulary. The articles are the documents; the `document` protocol of chapter 0 finds their boundaries at
# the ` = Title = ` lines. PTB, which has no documents, is the second corpus: its presets run as one stream
# with the window carried throughout.

# %%
common = {"train.seed": seed, "train.device": device}
if data_dir:
    common["data.data_dir"] = data_dir
print(mlm.get_preset("daniluk2017-wt2-kvp-L5", overrides=common))

# %%
# NBVAL_CHECK_OUTPUT
wt2 = mlm.load_data(mlm.get_preset("daniluk2017-wt2-lstm", overrides=common))
print({split: f"{len(wt2.documents[split])} articles, {wt2.num_tokens(split):,} tokens" for split in ("train", "valid", "test")})
print(f"vocabulary: {len(wt2.vocab):,} types")

# %% [markdown]
# **The reduced size.** A CPU cannot train 17 models on 2M tokens in minutes, so the `reduced` variants cut
# every article to its first 100 tokens (600 short documents for training, 60 each for validation and test;
# whole articles of very different lengths would leave most batch rows empty), keep the 5k most frequent
# words (the softmax over 33k dominates the cost; about one test token in five becomes `<unk>`), divide every
# width by 3 (so the parameter budget stays balanced the same way), and train for five epochs with batches of
# 8 rows (the paper's batch is 64) and
# Adam at a higher rate than the paper's, to get as many useful updates as possible out of little text (the
# training cell prints the updates and the settings of each run). Every segment of 20 tokens still carries the state and the window from the segment before, and
# the window still resets at every article.

# %%
reduced_cfg = mlm.get_preset("daniluk2017-wt2-kvp-L15", size, overrides=common)
corpus = mlm.load_data(reduced_cfg)
test_batches = mlm.build_batches(reduced_cfg, corpus, "test")
print(f"{size}: vocabulary {len(corpus.vocab):,}; test: {len(test_batches)} batches of "
      f"{tuple(test_batches.batches[0].inputs.shape)}, {test_batches.num_tokens:,} scored tokens")

# %% [markdown]
# ## 4. Training every variant
#
# The paper trains seventeen models: the three attention models with windows of 1, 5, 10 and 15 (Figure 2a),
# the N-gram RNNs with $N = 2 \dots 5$ (Figure 2b) and the plain LSTM (Figure 2c). The reduced run keeps nine
# of them, so that each can train long enough to beat a count model: windows of 5 and 15, the 2-gram RNN (the
# control without memory, see below) and the 4-gram RNN (the paper's best), and the LSTM. `size = "full"`
# trains all seventeen. Each model runs **one seed**; the chapter says so wherever it compares two of them.
# Each run folder is reused when it exists.

# %%
def run(preset):
    cfg = mlm.get_preset(preset, size, overrides=common)
    return mlm.train(cfg, run_dir=Path(runs_dir) / f"{preset}-{size}-seed{seed}")


WINDOWS = (1, 5, 10, 15) if size == "full" else (5, 15)
NGRAMS = (2, 3, 4, 5) if size == "full" else (2, 4)
KINDS = {"attention": "Attention", "kv": "Key-Value", "kvp": "Key-Value-Predict"}
runs = {("lstm", None): run("daniluk2017-wt2-lstm")}
for kind in KINDS:
    for window in WINDOWS:
        runs[kind, window] = run(f"daniluk2017-wt2-{kind}-L{window}")
for n in NGRAMS:
    runs["ngram", n] = run(f"daniluk2017-wt2-ngram{n}")
assert all(r.result.get("finished") for r in runs.values()), "a run did not finish"
train_cfg = runs["lstm", None].config.train
print(f"{len(runs)} runs; batch {runs['lstm', None].config.data.batch_size}, {train_cfg.optimizer} at {train_cfg.lr}, "
      f"{train_cfg.epochs} epochs, {runs['lstm', None].result.get('updates', '?')} updates each")

# %%
learning_curves({"LSTM": runs["lstm", None].history, "Attention L=15": runs["attention", 15].history,
                 "Key-Value L=15": runs["kv", 15].history, "Key-Value-Predict L=5": runs["kvp", 5].history,
                 "2-gram RNN": runs["ngram", 2].history, "4-gram RNN": runs["ngram", 4].history},
                title=f"WikiText-2 ({size}): learning curves")
plt.show()

# %% [markdown]
# ### The Figure 2 analogues
#
# Test perplexity by model and window (Figure 2a), by $N$ (2b), and the summary with parameter counts (2c).
# The paper's numbers are on its Wikipedia corpus with the full-size models; ours are on WikiText-2 in the
# reduced size, so only the *pattern* across rows is comparable, never the values.

# %%
def ppl(key, which="test_ppl"):
    return runs[key].result[which]


from mlm.baselines import count_baseline

baseline = count_baseline(runs["lstm", None].config, corpus)  # the bigram of the same training tokens
label_w = "/".join(str(w) for w in WINDOWS)
lines = [f"{'model':<20}" + "".join(f"{'L=' + str(w):>10}" for w in WINDOWS) + f"      paper (test, L={label_w})"]
for kind, label in KINDS.items():
    ours = "".join(f"{ppl((kind, w)):>10.1f}" for w in WINDOWS)
    paper = " / ".join(f"{DANILUK_RESULTS[kind, w][1]}" for w in WINDOWS)
    lines.append(f"{label:<20}{ours}      {paper}")
lines.append(f"{'LSTM (no window)':<20}{ppl(('lstm', None)):>10.1f}{'':>{10 * len(WINDOWS) - 10}}      {DANILUK_RESULTS['lstm', None][1]}")
lines.append(f"{'bigram counts':<20}{baseline['bigram_test']:>10.1f}      (same {baseline['train_tokens']:,} training tokens and vocabulary)")
print("\n".join(lines))
def model_name(key):
    return {"lstm": "LSTM", "ngram": f"{key[1]}-gram RNN"}.get(key[0]) or f"{KINDS[key[0]]} L={key[1]}"


learned = [key for key in runs if ppl(key) < baseline["bigram_test"]]
print(f"beat the bigram of their own tokens ({baseline['bigram_test']:.1f}): "
      + (", ".join(model_name(k) for k in learned) or "none"))
print("do not beat it: " + (", ".join(f"{model_name(k)} ({ppl(k):.1f})" for k in runs if k not in learned) or "none"))
assert ("lstm", None) in learned, "the notes say that the reduced LSTM beats the bigram of its own tokens"

# %%
fig, (ours_ax, paper_ax) = plt.subplots(1, 2, figsize=(10, 3.8))
for i, (kind, label) in enumerate(KINDS.items()):
    ours_ax.plot(WINDOWS, [ppl((kind, w)) for w in WINDOWS], "-o", color=f"C{i}", label=label)
    paper_ax.plot(WINDOWS, [DANILUK_RESULTS[kind, w][1] for w in WINDOWS], "-o", color=f"C{i}", label=label)
ours_ax.axhline(ppl(("lstm", None)), color="k", lw=1, ls="--", label="LSTM")
ours_ax.axhline(ppl(("ngram", 2)), color="gray", lw=1, ls=":", label="2-gram RNN (no memory)")
ours_ax.axhline(baseline["bigram_test"], color="r", lw=1, ls="-.", label="bigram counts, same tokens")
paper_ax.axhline(DANILUK_RESULTS["lstm", None][1], color="k", lw=1, ls="--", label="LSTM")
ours_ax.set_title(f"ours: WikiText-2, {size}", fontsize=10)
paper_ax.set_title("paper: Wikipedia, full size (Figure 2a)", fontsize=10)
for ax in (ours_ax, paper_ax):
    ax.set_xlabel("attention window L")
    ax.set_ylabel("test perplexity")
    ax.set_xticks(WINDOWS)
    ax.legend(fontsize=7)
    ax.grid(True, alpha=0.3)
plt.tight_layout()
plt.show()

# %%
print(f"{'model':<12}{'hidden':>8}{'parts':>7}{'params':>12}{'valid':>9}{'test':>9}     paper dev / test")
for n in NGRAMS:
    r = runs["ngram", n]
    m = r.config.model
    paper = DANILUK_RESULTS["ngram", n]
    print(f"{str(n) + '-gram RNN':<12}{m.hidden_size:>8}{n - 1:>7}{r.result['parameters']:>12,}"
          f"{r.result['best_valid_ppl']:>9.1f}{r.result['test_ppl']:>9.1f}     {paper[0]} / {paper[1]}")

# %%
best_window = {kind: min(WINDOWS, key=lambda w: runs[kind, w].result["best_valid_ppl"]) for kind in KINDS}
summary = [("LSTM", ("lstm", None), ("lstm", None), "-"),
           *[(label, (kind, best_window[kind]), (kind, {"attention": 10, "kv": 10, "kvp": 5}[kind]), best_window[kind])
             for kind, label in KINDS.items()],
           ("4-gram RNN", ("ngram", 4), ("ngram", 4), "-")]
print(f"{'model':<20}{'k (LSTM)':>9}{'L':>4}{'params':>12}{'valid':>9}{'test':>9}     paper: L, dev / test")
for label, key, paper_key, window in summary:
    r = runs[key]
    paper_window = paper_key[1] if paper_key[0] in KINDS else "-"
    print(f"{label:<20}{r.config.model.hidden_size:>9}{str(window):>4}{r.result['parameters']:>12,}"
          f"{r.result['best_valid_ppl']:>9.1f}{r.result['test_ppl']:>9.1f}     "
          f"{paper_window}, {DANILUK_RESULTS[paper_key][0]} / {DANILUK_RESULTS[paper_key][1]}")

# %% [markdown]
# Parameter counts here include the input embeddings (the paper's $\theta_{W+M}$). With the widths divided by 3
# and a 5k vocabulary the 2-gram RNN is the largest model of the reduced run (the tables print every count):
# the softmax reads the head's output, the part size, and for the 2-gram RNN that is the whole 188-wide LSTM
# output. The paper reports the
# same total (23.9M without word vectors) for every model of Figure 2b-c; with its stated hidden sizes that
# cannot hold for the N-gram RNNs under our reading of Eq. (13) (a 77k x 564 softmax alone is 43M), nor under
# any other reading we tried. We keep the paper's hidden sizes and print our counts.
#
# **Reading the reduced tables.** One row is a control in disguise: the **2-gram RNN** is
# $h^*_t = \tanh(W^N h_t)$, the LSTM with one extra $\tanh$ layer and *no memory at all*. Every model of this
# chapter has such a layer between the LSTM and the softmax (Eq. 4, 10, 12, 13), and in a short run
# that layer alone costs perplexity: compare the 2-gram RNN with the LSTM. The attentive models should
# therefore be compared with the 2-gram RNN first, and the question "does the memory help" becomes "does
# a model beat the 2-gram RNN". Chapter 2 met the same effect with Salton et al.'s merge layer. The next cell
# answers it for the reduced runs (one seed each, so a gap of a few points may be noise).

# %%
control = ppl(("ngram", 2))
print(f"2-gram RNN (the control: same extra layer, no memory) {control:.1f}; LSTM {ppl(('lstm', None)):.1f}")
for key in runs:
    if key[0] in KINDS or (key[0] == "ngram" and key[1] != 2):
        name = f"{KINDS[key[0]]} L={key[1]}" if key[0] in KINDS else f"{key[1]}-gram RNN"
        print(f"{name:<24} {ppl(key):7.1f}  {'beats' if ppl(key) < control else 'does not beat'} the 2-gram control "
              f"({ppl(key) - control:+.1f})")

# %% [markdown]
# ## 5. Where does the attention go? (Figure 3)
#
# Figure 3b of the paper averages the attention weights by position in the window over the whole test set.
# We do the same with the $L = 15$ models: every scored test position whose window is full, state and window
# carried exactly as in evaluation. The rightmost slot is the previous step.

# %%
profiles = {}
for kind, label in KINDS.items():
    r = runs[kind, 15]
    profiles[label] = window_attention_profile(r.model, test_batches)
fig, ax = plt.subplots(figsize=(6.5, 3.5))
for i, (label, prof) in enumerate(profiles.items()):
    ax.plot(range(-15, 0), prof["weight_by_slot"], "-o", ms=3, color=f"C{i}", label=label)
ax.axhline(1 / 15, color="gray", lw=0.8, ls="--", label="uniform (1/15)")
ax.set_xlabel("position in the window (-1 = previous step)")
ax.set_ylabel("mean attention weight")
ax.set_title(f"Figure 3b analogue: WikiText-2 test ({size}), L = 15", fontsize=10)
ax.legend(fontsize=8)
ax.grid(alpha=0.3)
plt.show()
for label, prof in profiles.items():
    print(f"{label:<18} weight on the previous step {prof['weight_by_slot'][-1]:.3f}, "
          f"on slots more than 5 back {prof['mass_beyond_5']:.3f} (uniform: {10 / 15:.3f}); "
          f"{prof['positions']:,} positions")

# %% [markdown]
# Figure 3a shows the weights of the key-value-predict model word by word over one article. Here is the
# beginning of the first test article: row $t$ is the word being predicted, and the 15 cells to the left of
# the diagonal are its window.

# %%
def article_probe(model, batches, row=0, steps=40):
    """The first ``steps`` inputs of one batch row's first article, the words they predict, and a
    (steps, steps) matrix that puts each step's window weights on the inputs they belong to."""
    model.eval()
    state = memory = None
    inputs, targets, weights = [], [], []
    with torch.no_grad():
        for batch in batches:  # the row's article continues in the next batches until its next reset
            if batch.reset[row] and inputs:
                break
            out = model(batch.inputs, state=state, reset=batch.reset, mask=batch.mask, memory=memory)
            state, memory = out.state, out.memory
            real = batch.mask[row]
            inputs += batch.inputs[row, real].tolist()
            targets += batch.targets[row, real].tolist()
            weights.append(out.attention[row, real])  # (real steps, L)
            if len(inputs) >= steps:
                break
    weights = torch.cat(weights)[:steps]  # (n, L): slot j of step t holds input t - L + j
    n, L = weights.shape
    padded = torch.zeros(n, L + n)  # column L + i is input i; the first L columns lie before the article
    for j in range(L):  # one window slot at a time, all steps at once
        padded[torch.arange(n), torch.arange(n) + j] = weights[:, j]
    itos = corpus.vocab.itos
    return {"attention": padded[:, L:], "inputs": [itos[i] for i in inputs[:n]], "targets": [itos[i] for i in targets[:n]]}


probe = article_probe(runs["kvp", 15].model, test_batches)
attention_heatmap(probe, title=f"Figure 3a analogue: Key-Value-Predict, L = 15, first test article ({size}); "
                  "weight against uniform over the window", relative=True)
plt.show()

# %% [markdown]
# ## 6. Does the model use a long history?
#
# The paper ends on this question: its attention mass concentrates on the last few outputs, and a 4-gram RNN
# does as well as the attentive models. Two measurements make it concrete for our models.
#
# **Truncating the window at test time.** Take each model trained with $L = 15$ and let it see only its $m$
# most recent slots at evaluation, without retraining (`head.eval_window = m`). If the perplexity does not move
# until $m$ is small, the older slots carried nothing the model relied on.

# %%
truncations = (1, 2, 3, 5, 10, 15)
truncated = {}
for kind, label in KINDS.items():
    model = runs[kind, 15].model
    row = []
    for m in truncations:
        model.head.eval_window = m
        row.append(mlm.evaluate(model, test_batches).perplexity)
    model.head.eval_window = None
    truncated[label] = row
print(f"{'trained with L=15':<20}" + "".join(f"{'m=' + str(m):>9}" for m in truncations))
for label, row in truncated.items():
    print(f"{label:<20}" + "".join(f"{v:>9.1f}" for v in row))
assert all(abs(row[-1] - runs[k, 15].result["test_ppl"]) < 1e-6 * row[-1]
           for k, row in zip(KINDS, truncated.values())), "m = 15 must reproduce the test perplexity"

# %%
fig, ax = plt.subplots(figsize=(6, 3.5))
for i, (label, row) in enumerate(truncated.items()):
    full = row[-1]
    ax.plot(truncations, [100 * (v / full - 1) for v in row], "-o", color=f"C{i}", label=label)
ax.axhline(0, color="k", lw=0.8)
ax.set_xlabel("slots the model may use at test time (m most recent)")
ax.set_ylabel("test perplexity change (%)")
ax.set_xticks(truncations)
ax.set_title(f"Cutting the window of L = 15 models at test time ({size})", fontsize=10)
ax.legend(fontsize=8)
ax.grid(alpha=0.3)
plt.show()

# %% [markdown]
# **What the two measurements say.** Every $L = 15$ model of the reduced run beats the bigram of its own tokens
# (section 4), so these are measurements of heads that have learned something, after five short epochs (not
# converged). The two disagree in an instructive way. The *weights* are nearly uniform: every slot gets within
# about 0.01 of $1/15 \approx 0.067$, with at most a slight tilt toward the recent slots, and the slots more than
# 5 back keep about the uniform share of the mass. Yet the
# *window is used*: cut to the most recent slot, each model's perplexity rises by 8% or more, while cut to
# the 5 most recent slots it loses only a few per cent, and to 10 almost nothing. A near-uniform average over the
# window is itself useful (a smoothed summary of the recent outputs); what the models rely on sits mostly in the
# last 5 slots. That is the paper's short-span finding seen through the truncation test, not through the
# weights: at this budget the heads have not learned to *point* at particular slots, which is what Figure 3b
# shows for the paper's trained models.

# %%
# The paragraph above describes the numbers of this run; the assertions keep it true.
for (label, prof), row in zip(profiles.items(), truncated.values()):
    cut = dict(zip(truncations, row))
    assert max(abs(w - 1 / 15) for w in prof["weight_by_slot"]) < 0.012, (label, prof["weight_by_slot"])
    assert abs(prof["mass_beyond_5"] - 10 / 15) < 0.05, (label, prof["mass_beyond_5"])
    assert cut[1] > 1.08 * cut[15] and cut[5] < 1.06 * cut[15] and cut[10] < 1.02 * cut[15], (label, cut)

# %% [markdown]
# ### Memory you can watch work: recall at a distance
#
# A window of $L$ outputs can only *read* the last $L$ steps. Does that bound how far back the model remembers?
# The key-value recall task (`mlm/data/tasks.py`) asks exactly that: a line names a key with a value, then
# filler words and other pairs, then the same key again, and the next word must be the value said $d$ steps
# before. Values are random, so a model that cannot see the source is at chance (one in ten). The source
# output is inside a window of $L = 5$ while $d \le L + 1 = 6$. We train the attention model with $L = 5$ and the
# plain LSTM at the same small size (64 units, one layer) on 20,000 lines with $d$ from 2 to 60 (presets
# `recall-window` and `recall-lstm`, one seed, Adam, 15 epochs; the window model reads each line as a document
# with truncated BPTT of 20 steps, as in this chapter), score the critical tokens of 1,000 test lines by $d$,
# and then evaluate the window model again with its window cut to the most recent slot, and switched off.

# %%
from mlm.long_range import recall_comparison, run_critical_scores
from mlm.plots import recall_by_distance

comparison = recall_comparison({"LSTM": "recall-lstm", "Attention L=5": "recall-window"}, size, runs_dir, seed, device)
recall, chance = comparison.scores, comparison.chance
window_run = comparison.runs["Attention L=5"]
for slots, label in ((1, "Attention L=5, most recent slot only"), (0, "Attention L=5, window switched off")):
    window_run.model.head.eval_window = slots
    recall[label] = run_critical_scores(window_run, comparison.task)
window_run.model.head.eval_window = None
reach = window_run.config.model.window_size + 1
print(f"{'model':<38}{'all d':>7}{f'd <= {reach}':>8}{f'd > {reach + 5}':>8}     (chance {chance:.2f}, one seed)")
for label, s in recall.items():
    print(f"{label:<38}{s.accuracy:>7.2f}{s.accuracy_within(0, reach):>8.2f}{s.accuracy_within(reach + 6):>8.2f}")
recall_by_distance({label: recall[label] for label in ("LSTM", "Attention L=5", "bigram counts")}, chance,
                   reach={"Attention L=5": reach},
                   title=f"Key-value recall: accuracy on the critical token by distance (one seed, {size})")
plt.show()

# %% [markdown]
# **What this shows** (one seed each, not converged). The window does not bound the memory: the attention model
# recalls about as often beyond its window as inside it, far above chance, because the LSTM under the head
# carries the pair in its state and the window reads that state. (The plain LSTM recalls far above chance too;
# how far varies a lot from run to run at this budget, as it learns the task abruptly, so one seed does not
# rank the two.) Cut to its most recent
# slot at test time, the window model recalls just as well: the older slots add nothing here, the short span
# of sections 5 and 6 again. Switched off, it loses much of its recall, since its output layer was trained to
# read that slot. For this task, as in the paper's conclusion, the attention reads the recent past and the
# recurrent state does the long-range work.

# %%
# The paragraph above describes these numbers; the assertions keep it true.
window_near, window_far = recall["Attention L=5"].accuracy_within(0, reach), recall["Attention L=5"].accuracy_within(reach + 6)
assert window_far > max(4 * chance, window_near - 0.1) and recall["LSTM"].accuracy_within(reach + 6) > 4 * chance
assert abs(recall["Attention L=5, most recent slot only"].accuracy - recall["Attention L=5"].accuracy) < 0.03
assert recall["Attention L=5, window switched off"].accuracy < recall["Attention L=5"].accuracy - 0.1

# %% [markdown]
# ## 7. Longer runs
#
# The reduced runs see 60k tokens three times. Six of the models were also trained for one epoch with every
# WikiText-2 article cut to its first 1,000 tokens instead of 100 (587k training tokens, ten times as much text;
# about 59k tokens each for validation and test), with the paper's batch of 64 and learning rate of 0.001.
# With the larger batch and a single epoch that is only 487 updates, fewer than a quarter of the reduced run's,
# at half the learning rate: more text, not more training. They keep the widths / 3 of the reduced run but the
# 10k most frequent words (the reduced run keeps 5k), so their perplexities are on another vocabulary. The command is in `results/README.md`;
# the runs were made on one CPU thread and are read here, not retrained. Their validation and test sets are
# the first 1,000 tokens of each article, not the reduced run's first 100, so the two columns measure
# different text as well as different training.

# %%
medium_dir = Path("../results/daniluk2017-wt2-medium")
medium = {}
medium_analysis = {}
for name in ("lstm", "attention-L10", "kv-L10", "kvp-L5", "ngram4", "kvp-L15"):
    path = medium_dir / name / "result.json"
    if path.exists():
        medium[name] = json.loads(path.read_text())
    if (medium_dir / name / "analysis.json").exists():
        medium_analysis[name] = json.loads((medium_dir / name / "analysis.json").read_text())
if medium:
    from mlm.configs import Config  # noqa: E402

    medium_cfg = Config.from_dict(next(iter(medium.values()))["config"])
    medium_cfg = apply_overrides(medium_cfg, {"data.data_dir": data_dir} if data_dir else {"data.data_dir": None})
    medium_baseline = count_baseline(medium_cfg)  # the bigram of the longer runs' own training tokens
    print(f"{'model':<16}{'params':>12}{'valid':>9}{'test':>9}{'train min':>11}")
    for name, r in medium.items():
        print(f"{name:<16}{r['parameters']:>12,}{r['best_valid_ppl']:>9.1f}{r['test_ppl']:>9.1f}"
              f"{r['train_seconds'] / 60:>11.1f}")
    print(f"{'bigram counts':<16}{'':>12}{medium_baseline['bigram_valid']:>9.1f}{medium_baseline['bigram_test']:>9.1f}"
          f"   (the same {medium_baseline['train_tokens']:,} training tokens)")
    beaten = [name for name, r in medium.items() if r["test_ppl"] < medium_baseline["bigram_test"]]
    print(f"longer runs that beat the bigram of their own tokens: {', '.join(beaten) if beaten else 'none'}")
else:
    print("no stored medium runs found in", medium_dir)

# %% [markdown]
# The same two span measurements for the longer runs' window models, computed by the script on their test
# set (`analysis.json`): the attention profile and the test perplexity with the window cut at evaluation.

# %%
for name, a in medium_analysis.items():
    prof = a["profile"]
    L = len(prof["weight_by_slot"])
    cut = "  ".join(f"m={m}: {v:.1f}" for m, v in a["test_ppl_by_window"].items())
    print(f"{name:<14} weight on the previous step {prof['weight_by_slot'][-1]:.3f} (uniform {1 / L:.3f}); "
          f"beyond 5 back {prof['mass_beyond_5']:.3f} (uniform {max(L - 5, 0) / L:.3f})")
    print(f"{'':<14} test perplexity with the window cut to m slots: {cut}")
if medium_analysis:
    fig, ax = plt.subplots(figsize=(6.5, 3.5))
    for i, (name, a) in enumerate(medium_analysis.items()):
        weights = a["profile"]["weight_by_slot"]
        ax.plot(range(-len(weights), 0), weights, "-o", ms=3, color=f"C{i}", label=name)
        ax.hlines(1 / len(weights), -len(weights), -1, color=f"C{i}", lw=0.8, ls="--")  # uniform over its window
    ax.set_xlabel("position in the window (-1 = previous step)")
    ax.set_ylabel("mean attention weight")
    ax.set_title("Figure 3b analogue for the longer runs (WikiText-2 test, articles cut at 1,000 tokens);\n"
                 "dashed: uniform attention over each model's window", fontsize=9)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    plt.show()

# %% [markdown]
# None of the longer runs beats the bigram of its own tokens (the table above): with a quarter of the reduced
# run's updates they are earlier in training, so what follows describes heads that have barely started, not
# what a trained model prefers; sections 5 and 6 are the measurements on models that have learned. In the longer runs the plain attention model
# has started to lean on its window: cut to the most recent slot,
# its test perplexity rises, while cut to the 5 most recent slots it barely moves. Its weights are still close
# to uniform, so what it reads is close to an average of the recent outputs. The key-value and key-value-predict
# models have not started to use their memory at all: cutting their windows changes nothing. A small, early
# echo of the paper's finding that the useful history is short, and no evidence yet for the key-value split.

# %%
# The paragraph above describes these stored measurements; the assertions keep it true.
if "attention-L10" in medium_analysis:
    cut = {int(m): v for m, v in medium_analysis["attention-L10"]["test_ppl_by_window"].items()}
    assert cut[1] > 1.05 * cut[10] and cut[5] < 1.01 * cut[10], cut
for name in ("kv-L10", "kvp-L5", "kvp-L15"):
    if name in medium_analysis:
        values = list(medium_analysis[name]["test_ppl_by_window"].values())
        assert max(values) < 1.01 * min(values), (name, values)

# %% [markdown]
# ## 8. Paper vs ours
#
# The paper's models are full size on its Wikipedia corpus (7,500 articles, 22.5M training words, a 77k
# vocabulary); ours are on WikiText-2 (600 articles, 2.1M tokens, 33k words), in the reduced size (articles cut
# to 100 tokens, 5k words, widths / 3, 5 short epochs) and, for six models, the longer runs of section 7.
# The values cannot be compared across the columns; the ordering of the rows can.
#
# The last rows of the table are the paper's claims at a width that converges on a CPU, read from the runs
# that `python -m mlm reproduce cpu` stores in `results/` (the README's *Reproduction status* shows the same
# rows). A claim whose runs are not stored yet says so, with the command that trains them.

# %%
medium_names = {("lstm", None): "lstm", ("attention", 10): "attention-L10", ("kv", 10): "kv-L10",
                ("kvp", 5): "kvp-L5", ("ngram", 4): "ngram4"}
print(f"{'model':<26}{'paper dev / test':>18}{'reduced valid / test':>24}{'longer valid / test':>24}")
for key, name in medium_names.items():
    label = {"lstm": "LSTM", "ngram": "4-gram RNN"}.get(key[0]) or f"{KINDS[key[0]]} L={key[1]}"
    paper_dev, paper_test = DANILUK_RESULTS[key]
    r = runs[key].result if key in runs else None
    longer = medium.get(name)
    longer_text = f"{longer['best_valid_ppl']:.1f} / {longer['test_ppl']:.1f}" if longer else "not run"
    paper_text = f"{paper_dev} / {paper_test}"
    reduced_text = f"{r['best_valid_ppl']:.1f} / {r['test_ppl']:.1f}" if r else "not run (full only)"
    print(f"{label:<26}{paper_text:>18}{reduced_text:>24}{longer_text:>24}")

# %%
from mlm.claims import UNTESTABLE, Claim, show_claims, verdict
from mlm.manifests import cpu
from mlm.table import stored_claims

converged = size == "full"
all_learned = all((k, 15) in learned for k in KINDS)  # span measurements mean something only then
# Weights "concentrate" when every L=15 model puts clearly less than the uniform share beyond 5 slots back,
# and are "uniform" when every model stays within 0.05 of it; the history "is short" when cutting the window
# to 5 slots costs every model less than 10% while cutting it to 1 slot costs more than cutting it to 5 (the
# window is used, and its last 5 slots carry almost all of what it gives).
weights_short = all(p["mass_beyond_5"] < 10 / 15 - 0.1 for p in profiles.values())
weights_uniform = all(abs(p["mass_beyond_5"] - 10 / 15) < 0.05 for p in profiles.values())
history_short = all(row[3] < 1.10 * row[-1] and row[0] > row[3] for row in truncated.values())


def span_verdict(holds, fails):
    text = UNTESTABLE if not all_learned else "supported" if holds else "contradicted" if fails else "not settled"
    return text if converged or text == UNTESTABLE else f"{text}, not converged"


best_attentive = min((k for k in runs if k[0] in KINDS), key=ppl)
claims = [
    Claim("Daniluk et al. (Figure 2a): every attentive model beats the LSTM (test 85.2)",
          f"{size}, one seed: best attentive model {model_name(best_attentive)} {ppl(best_attentive):.1f} vs LSTM "
          f"{ppl(('lstm', None)):.1f}", verdict([ppl(best_attentive)], [ppl(("lstm", None))], converged=converged)),
    Claim("Figure 2a: splitting the output into key, value (and predict) parts helps",
          f"Key-Value-Predict L=5 {ppl(('kvp', 5)):.1f} vs Attention L=5 {ppl(('attention', 5)):.1f}, one seed",
          verdict([ppl(("kvp", 5))], [ppl(("attention", 5))], converged=converged)),
    Claim("Figure 2b-c: a 4-gram RNN, with no attention, does about as well as the attentive models",
          f"4-gram RNN {ppl(('ngram', 4)):.1f} vs Key-Value-Predict L=5 {ppl(('kvp', 5)):.1f}, one seed",
          verdict([ppl(("ngram", 4))], [ppl(("kvp", 5))], converged=converged)),
    Claim("Section 5, Figure 3b: the attention weights concentrate on the last few steps",
          "mass on slots more than 5 back, L=15 models (uniform 0.667): "
          + ", ".join(f"{label} {prof['mass_beyond_5']:.3f}" for label, prof in profiles.items()) + "; one seed each",
          span_verdict(weights_short, weights_uniform)),
    Claim("Section 5: the history the models use is short (a few steps)",
          "test perplexity with the L=15 window cut to its 5 most recent slots: "
          + ", ".join(f"{label} {100 * (row[3] / row[-1] - 1):+.1f}%" for label, row in truncated.items())
          + " (to 1 slot: " + ", ".join(f"{100 * (row[0] / row[-1] - 1):+.0f}%" for row in truncated.values())
          + "); one seed each", span_verdict(history_short, not history_short)),
    Claim("(our check) every network beats the bigram of its own training tokens",
          f"bigram {baseline['bigram_test']:.1f}; {len(learned)} of {len(runs)} networks beat it",
          "supported" if len(learned) == len(runs) else "contradicted"),
]
claims += stored_claims([c for c in cpu.CLAIMS if c.chapter == "03"], "cpu", "../results")  # converged on CPU
show_claims(claims);

# %%
headline = {
    **{f"{model_name(key)}_test_ppl": round(ppl(key), 1) for key in runs},
    "baseline_test_ppl": round(baseline["bigram_test"], 1),
    **{f"{label}_mass_beyond_5": round(prof["mass_beyond_5"], 3) for label, prof in profiles.items()},
    **{f"recall_{label}_accuracy": round(s.accuracy, 3) for label, s in recall.items()},
}
record("03_short_attention", headline)
print(headline)

# %% [markdown]
# **Honest notes.**
#
# * *What the reduced run is.* Nine models, one seed each, five epochs over 60k tokens with the 5k most
#   frequent words (the cell in section 4 prints the updates); every one of them beats the bigram counted on
#   the same tokens (section 4 prints the list), so the span measurements of sections 5 and 6 are made on heads
#   that have learned something. It is **not** a test of the paper's ranking: the runs are short, not
#   converged, and one seed each, so the claims table marks every ranking as not testable with one seed. The
#   tries that did not get the window models past the bigram (10k words, more text per article, a higher
#   learning rate, dropout with more epochs) are listed beside the reduced preset in
#   `mlm/presets/daniluk2017.py`; the one that did is the smaller vocabulary with two more epochs.
# * *The 2-gram control.* Section 4 compares every model with the 2-gram RNN, the same extra layer without
#   memory; with one seed, a gap of a few points is noise.
# * *The longer runs* of section 7 read ten times as much text for one epoch, with a quarter of the updates;
#   none of them beats the bigram counted on its own 587k tokens, so they are a record of early training, not
#   evidence. The full
#   presets (`python -m mlm book 03 --size full --device cuda`, or `python -m mlm reproduce full --only
#   'full-daniluk2017-wt2/*'`), many epochs on all of WikiText-2, are the real test. We have not run them.
# * *Corpus.* WikiText-2 is ten times smaller than the paper's corpus and its vocabulary has a different
#   cut-off (and the reduced runs keep only 5k words), so no value in our tables is comparable with the
#   paper's; only the patterns are.
# * *Choices the paper leaves open*: masked slots at an article start (documented above), the window carried
#   across BPTT segments (the paper's setup implies it but does not say), no dropout, our stopping rule, the
#   4-gram hidden size of 969, and the index $t-N+2$ in Eq. (13). Each is a preset setting or a documented,
#   tested line of code.
#
# **Exercise 03** ([`exercises/ex03_short_attention.py`](../exercises/ex03_short_attention.py)) asks you to implement the key-value-predict split and
# the window mask; `python -m exercises.grader 03` checks them against `mlm`.
