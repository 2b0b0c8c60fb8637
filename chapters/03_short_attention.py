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
# # Chapter 3 — Frustratingly short attention spans (Daniluk, Rocktäschel, Welbl & Riedel, 2017)
#
# Chapter 02 let an LSTM attend over everything it had said earlier in the sentence. Daniluk et al. keep the
# attention but give it a **sliding window** of the last $L$ outputs, and ask two questions: is the output
# vector asked to do too much, and do such models use a long history at all? Their answer to the second is
# the title, and their simplest model, an "N-gram RNN" with no attention, makes the point.
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
import math
from pathlib import Path

import matplotlib.pyplot as plt
import torch

import mlm
from mlm.baselines import count_baseline
from mlm.claims import show_claims
from mlm.evaluation import evaluation_pass
from mlm.manifests.recall import FAMILY_RUNS
from mlm.models.attentive import masked_softmax
from mlm.models.short_attention import NgramHead, WindowAttentionHead, window_mask
from mlm.plots import (interval_plot, learning_curves, ngram_head_diagram, recall_panels, window_head_diagram,
                       window_heatmap)
from mlm.sampling import sample_text
from mlm.table import chapter_evidence, load_stored_recall, show_pending
from mlm.utils import set_seed

set_seed(seed)

# %% [markdown]
# ## 1. Why: one vector, three jobs
#
# An LSTM carries the past only in its state, a vector of fixed size that each step overwrites in part.
# Attention (chapter 02) lets a step read earlier outputs directly. Over a window of the last $L$ outputs
# the cost per step stays fixed however long the text, and the window can be carried across the cuts of
# truncated backpropagation.
#
# Daniluk et al. point at a second problem. In plain attention the LSTM's output $h_t$ has three jobs: it
# **predicts** the next word, it is a **key** that later steps compare themselves with, and it is a
# **value** that later steps read. One vector serves all three, and the gradient of each job pulls on it.
# Their remedy is to split $h_t$ into parts with one job each. Their finding is that the split models read
# mostly the last few outputs, and that a model which simply concatenates the last three outputs does as
# well.
#
# Section 2 derives the heads, section 3 trains one, section 4 measures how far back each reaches on
# a task with a known answer, and section 5 puts the paper's claims to stored multi-seed runs.

# %% [markdown]
# ## 2. Derive
#
# ### Attention over a window (Eq. 1-5)
#
# At step $t$ the memory is the matrix of the previous $L$ outputs of the LSTM's top layer, $Y_t = [h_{t-L} \cdots
# h_{t-1}] \in \mathbb{R}^{k\times L}$ for outputs of size $k$; the current output $h_t$ is not in its own window.
# It is compared with each of them, the comparison becomes a distribution over the window, and the weighted sum
# $r_t$ is mixed back into the prediction:
#
# $$ M_t = \tanh\big(W^Y Y_t + (W^h h_t)\,\mathbf{1}^\top\big) \quad (1), \qquad \alpha_t = \mathrm{softmax}(w^\top M_t) \quad (2), \qquad r_t = Y_t\,\alpha_t^\top \quad (3) $$
#
# $$ h^*_t = \tanh(W^r r_t + W^x h_t) \quad (4), \qquad y_t = \mathrm{softmax}(W^* h^*_t + b) \quad (5). $$
#
# **Key-value attention** (Eq. 6-10) gives the LSTM twice the output size and splits it, $h_t = [k_t; v_t]$ (6). Keys
# meet keys in the scores, $M_t = \tanh(W^Y [k_{t-L}\cdots k_{t-1}] + (W^h k_t)\mathbf{1}^\top)$ (7) with
# $\alpha_t = \mathrm{softmax}(w^\top M_t)$ (8), the values are what is read, $r_t = [v_{t-L}\cdots v_{t-1}]\,\alpha_t^\top$ (9), and $h^*_t = \tanh(W^r r_t + W^x v_t)$ (10). The
# value still does two jobs. **Key-value-predict attention** splits once more,
# $h_t = [k_t; v_t; p_t] \in \mathbb{R}^{3k}$ (11), and only the predict part enters the output,
# $h^*_t = \tanh(W^r r_t + W^x p_t)$ (12). Now every part has one job. The figure draws the key-value-predict head with the shape of each tensor ($K_t$ in the
# figure is the window's keys $[k_{t-L}\cdots k_{t-1}]$).

# %%
window_head_diagram(window=3)
plt.show()

# %% [markdown]
# The step-by-step definition below follows the equations line by line for one article from its first
# word. `head.split` returns the parts (one vector three times for plain attention, the value twice for
# key-value). The window is a stack of rows rather than the paper's columns. Before $L$ outputs exist the
# window holds only those that do; the paper does not say what happens there.

# %%
def window_attention_step_by_step(head, h):
    """Eq. 1-12, one step at a time, for one article from its first word. h: (time, parts * k)."""
    L, outputs, weights = head.window, [], []
    for t in range(h.size(0)):
        k_t, v_t, p_t = head.split(h[t])  # Eq. 6 / 11: (k,) each
        alpha = h.new_zeros(L)  # (L,) oldest slot first; slots that do not exist yet stay 0
        r = h.new_zeros(head.part_size)  # (k,) the first word has nothing to read
        if t > 0:
            keys, values, _ = head.split(h[max(0, t - L):t])  # (n, k) each: h_{t-L} .. h_{t-1}, n = min(t, L)
            M = torch.tanh(head.W_Y(keys) + head.W_h(k_t))  # (n, k)   Eq. 1 / 7, one row per slot
            a = torch.softmax(head.w(M)[:, 0], dim=0)  # (n,)     Eq. 2 / 8
            r = a @ values  # (k,)     Eq. 3 / 9
            alpha[L - len(a):] = a
        outputs.append(torch.tanh(head.W_r(r) + head.W_x(p_t)))  # (k,)  Eq. 4 / 10 / 12
        weights.append(alpha)
    return torch.stack(outputs), torch.stack(weights)  # (time, k), (time, L)


# %% [markdown]
# ### All steps at once
#
# No head feeds back into the LSTM, so the LSTM runs once over a segment and the head sees all $T$ outputs
# together. Put $L$ empty slots in front of them: the window of step $t$ is then rows $t \dots t+L-1$ of
# one `(batch, L+T, parts·k)` sequence, and slot $j$ of *every* window is one shifted slice, rows
# $j \dots j+T-1$. The fast version loops over the $L$ slots, never over time, and projects each key with
# $W^Y$ once, not once per window that holds it. `masked_softmax` gives a row with no slot all zeros.

# %%
def window_attention_all_steps(head, h):
    """The same for every step of a batch of articles at once. h: (batch, time, parts * k)."""
    batch, time, _ = h.shape
    L = head.window
    seq = torch.cat([h.new_zeros(batch, L, h.size(-1)), h], dim=1)  # (batch, L + time, parts * k)
    exists = torch.arange(L + time) >= L  # (L + time,) the L slots in front are empty
    keys, values, _ = head.split(seq)  # (batch, L + time, k) each
    query, _, predict = head.split(h)  # (batch, time, k) each
    projected, asked = head.W_Y(keys), head.W_h(query)  # W^Y once per output, reused by L windows
    scores = torch.stack([torch.tanh(projected[:, j:j + time] + asked) @ head.w.weight[0]
                          for j in range(L)], dim=-1)  # (batch, time, L)   Eq. 1-2 / 7-8
    allowed = torch.stack([exists[j:j + time] for j in range(L)], dim=-1)  # (time, L)
    alpha = masked_softmax(scores, allowed.expand(batch, -1, -1))  # (batch, time, L)
    r = sum(alpha[..., j, None] * values[:, j:j + time] for j in range(L))  # (batch, time, k)   Eq. 3 / 9
    return torch.tanh(head.W_r(r) + head.W_x(predict)), alpha  # (batch, time, k)   Eq. 4 / 10 / 12


torch.manual_seed(0)
head = WindowAttentionHead(hidden_size=12, kind="key-value-predict", window=4).double()  # k = 4, L = 4
h = torch.randn(1, 9, 12, dtype=torch.double)  # one article of 9 steps: (batch 1, time 9, 3 parts of 4)
slow_out, slow_alpha = window_attention_step_by_step(head, h[0])
fast_out, fast_alpha = window_attention_all_steps(head, h)
assert torch.allclose(slow_out, fast_out[0]) and torch.allclose(slow_alpha, fast_alpha[0])

# %%
# NBVAL_CHECK_OUTPUT
print("weights of the first 6 steps (slots oldest first; 0: the slot does not exist yet)")
for t in range(6):
    print(f"  t={t}: {[round(a, 2) for a in fast_alpha[0, t].tolist()]}")

# %% [markdown]
# ### A window that survives the cut (the document protocol)
#
# Under the document protocol (chapter 00, section 3) each article is read as one stream. The paper trains with
# truncated backpropagation through time, 20 steps at a time, inside each article, and the LSTM state flows from one
# segment to the next. The book carries the window too (the paper does not say what it does at a segment boundary);
# otherwise the first words of every segment would see a shorter history.
#
# The book's `WindowAttentionHead` (`mlm/models/short_attention.py`) computes what
# `window_attention_all_steps` does, but starts from the **carried memory**, the previous segment's last $L$
# outputs and their validity, detached like the LSTM state. Where a batch row starts a new article
# (`reset`), its carried slots become invalid. The validity mask for a window of 3 over 5 steps, for a batch
# row that carries a full window and for one that starts an article:

# %%
# NBVAL_CHECK_OUTPUT
valid = torch.tensor([[True, True, True, True, True, True, True, True],     # 3 carried + 5 new, all valid
                      [False, False, False, True, True, True, True, True]])  # carried slots reset: a new article
allowed = window_mask(valid, window=3, time=5)  # (batch, time, L): slot j of step t, oldest first
for row, name in enumerate(["continuing row", "new article"]):
    print(name, allowed[row].int().tolist())

# %% [markdown]
# Cut the 9-step article `h` of the check above into three segments of 3 steps and hand each segment the
# memory the previous one returned: the outputs are those of the whole article at once.

# %%
memory, pieces = None, []
for start in range(0, 9, 3):
    segment = head(h[:, start:start + 3], memory=memory, reset=torch.tensor([start == 0]))
    pieces.append(segment.output)  # (batch 1, 3, k)
    memory = segment.memory  # the last L outputs and their validity, carried to the next segment
assert torch.allclose(torch.cat(pieces, dim=1), fast_out)

# %% [markdown]
# ### The N-gram RNN (Eq. 13)
#
# The last model drops attention altogether. Split the output into $N-1$ parts
# $h_t = [h^1_t; \dots; h^{N-1}_t]$ and predict from *part $j$ of the output $j-1$ steps back*:
#
# $$ h^*_t = \tanh\Big(W^N \big[h^1_t;\ h^2_{t-1};\ \dots;\ h^{N-1}_{t-N+2}\big]\Big) \quad (13, \text{as read here}). $$
#
# Part 1 of $h_t$ helps predict the next word, part 2 the word after it, and so on.
#
# *A note on the indices.* As printed, Eq. (13) ends at $t-N+1$. The paper's prose fixes it otherwise: part
# $j$ of $h_t$ serves the $j$-th word ahead, so it is read $j-1$ steps later and the last index is
# $t-N+2$. The printed index is one step too far back.
#
# With outputs that encode their own step and part (part $j$ of $h_t$ holds $100t + 10j$), the vector
# Eq. (13) builds at each step shows the alignment. Parts from before the article's start are zero:

# %%
# NBVAL_CHECK_OUTPUT
ngram = NgramHead(hidden_size=3, n=4)  # three parts of size 1
h_codes = torch.tensor([[[100.0 * t + 10 * j for j in (1, 2, 3)] for t in range(5)]])  # (1, time 5, 3 parts)
seen = []
hook = ngram.W_N.register_forward_hook(lambda module, inputs, output: seen.append(inputs[0]))
ngram(h_codes)
hook.remove()
print("step t: [part 1 of h_t, part 2 of h_{t-1}, part 3 of h_{t-2}]")
for t, row in enumerate(seen[0][0].tolist()):
    print(f"  t={t}: {[int(v) for v in row]}")

# %%
ngram_head_diagram(n=4)
plt.show()

# %% [markdown]
# Every head ends in a vector of size $k$ that the softmax reads. The paper sets the LSTM's hidden size so
# that every model has about the same number of parameters: 300 for the LSTM, 296 for attention, 560 for
# key-value (two parts of 280), 834 for key-value-predict (three of 278), 564 / 786 / 968 / 1120 for the 2-
# to 5-gram RNNs (Figure 2b-c). 968 does not split into three equal parts; the book's 4-gram RNN uses 969.
#
# The paper reports 23.9M parameters without word vectors for all of them. Counting the book's models at
# these widths with the paper's 77k-word vocabulary (built on PyTorch's `meta` device: shapes, no memory):

# %%
widths_77k = {}
for name in ("lstm", "attention-L5", "kv-L5", "kvp-L5", "ngram2", "ngram3", "ngram4", "ngram5"):
    with torch.device("meta"):
        m = mlm.build_model(mlm.get_preset(f"daniluk2017-wt2-{name}", "full"), vocab_size=77_000)
    widths_77k[name] = (sum(p.numel() for p in m.parameters()) - m.embedding.weight.numel()) / 1e6
    print(f"{name:<13} hidden {m.hidden_size:>4}, softmax input {m.decoder.in_features:>3}: "
          f"{widths_77k[name]:.1f}M parameters without word vectors")

# %% [markdown]
# The LSTM, attention and key-value fit the 23.9M. Key-value-predict (25.6M) and every N-gram RNN (28.3M to
# 45.8M) do not, and the cause is in the paper's own shapes, not in our reading of the indices: $W^N \in
# \mathbb{R}^{k \times (N-1)k}$ makes the softmax read a part of $k = $ hidden$/(N-1)$ units (the 2-gram RNN's
# 77k × 564 softmax alone has 43M), and the wider LSTMs cost more than the narrower softmax saves.

# %% tags=["remove-input"] jupyter={"source_hidden": true}
assert all(abs(widths_77k[n] - 23.9) < 0.06 for n in ("lstm", "attention-L5", "kv-L5")), widths_77k
assert 25.55 <= widths_77k["kvp-L5"] < 25.65 and min(widths_77k[f"ngram{n}"] for n in (2, 3, 4, 5)) == widths_77k["ngram5"]
assert 28.25 <= widths_77k["ngram5"] < 28.35 and 45.75 <= widths_77k["ngram2"] < 45.85, widths_77k

# %% [markdown]
# ## 3. Watch it train
#
# Section 4.1 of the paper gives Adam with a learning rate of 0.001, batches of 64, gradient norm clipped at
# 5, forget-gate bias 1, other weights uniform in $[-0.1, 0.1]$, truncated BPTT over 20 steps and the state
# reset between articles; Figure 2 adds 300-dimensional word vectors. Dropout, epochs and a stopping rule
# are not given; section 5 says what the book chose.
#
# The paper's corpus, 7,500 Wikipedia articles (22.5M training words, a 77k vocabulary), is not among the
# book's corpora: the paper gives only a short link to it. Its closest public relative is **WikiText-2**:
# Wikipedia articles too, ten times less text. The articles are the documents of the `document` protocol
# (chapter 00, section 3), found at their ` = Title = ` lines.

# %%
# NBVAL_CHECK_OUTPUT
common = {"train.seed": seed, "train.device": device}
if data_dir:
    common["data.data_dir"] = data_dir
wt2 = mlm.load_data(mlm.get_preset("daniluk2017-wt2-lstm", overrides=common))
for split in ("train", "valid", "test"):
    print(f"{split}: {len(wt2.documents[split])} articles, {wt2.num_tokens(split):,} tokens")
print(f"vocabulary: {len(wt2.vocab):,} types")

# %% [markdown]
# **The reduced run** trains the key-value-predict model in a few minutes on a CPU, with the longest window of Figure
# 2a, $L = 15$, so that we can cut it shorter below. Every article is cut to its first 100 tokens (equal lengths keep
# every row of a batch filled), the vocabulary to the 5k most frequent words, every width to a third of the paper's.
# It makes five passes over the 60k training tokens in batches of 8, for many updates out of little text, with Adam at
# twice the paper's rate, for more progress per update. Segments of 20 tokens still carry the state and the window,
# and the window still resets at every article. The cell prints what the run is:

# %%
cfg = mlm.get_preset("daniluk2017-wt2-kvp-L15", size, overrides=common)
corpus = mlm.load_data(cfg)
test_batches = mlm.build_batches(cfg, corpus, "test")
unk = corpus.vocab.stoi["<unk>"]
unk_share = sum(int(((b.targets == unk) & b.mask).sum()) for b in test_batches) / test_batches.num_tokens
m, d, t = cfg.model, cfg.data, cfg.train
print(f"{m.window_kind}, L = {m.window_size}: LSTM {m.hidden_size} = 3 parts of {m.hidden_size // 3}, "
      f"word vectors {m.embed_size}")
print(f"vocabulary {len(corpus.vocab):,} ({unk_share:.0%} of the test tokens are <unk>); "
      f"batches of {d.batch_size} x {d.bptt} steps; {t.optimizer} at {t.lr}, {t.epochs} epochs")

# %%
run = mlm.train(cfg, run_dir=Path(runs_dir) / f"daniluk2017-wt2-kvp-L15-{size}-seed{seed}")
model = run.model
baseline = count_baseline(cfg, corpus)  # the interpolated bigram of the same training tokens (chapter 00, section 2)
print(f"{run.result['updates']:,} updates, {run.result['parameters']:,} parameters")
print(f"test perplexity {run.result['test_ppl']:.1f}; the bigram of the same {baseline['train_tokens']:,} "
      f"tokens {baseline['bigram_test']:.1f}")
ax = learning_curves({"key-value-predict, L = 15": run.history}, title=f"WikiText-2 ({size})")
ax.axhline(baseline["bigram_valid"], color="k", lw=1, ls=":", label="bigram counts (valid)")
ax.legend(fontsize=8)
plt.show()

# %% tags=["remove-input"] jupyter={"source_hidden": true}
assert run.result["finished"] and run.result["test_ppl"] < baseline["bigram_test"], (run.result["test_ppl"], baseline)

# %% [markdown]
# The model beats the bigram counted on its own tokens, so what follows looks inside a head that has
# learned something, after five short epochs. Its text, sampled at temperature 0.8 from the start of a
# title, `= Robert` (`<unk>` left out of the draw, since a fifth of the test tokens are `<unk>`):

# %%
print(sample_text(model, corpus.vocab, "= Robert", length=50, temperature=0.8, seed=seed, protocol="document",
                  exclude=("<pad>", "<unk>")))

# %% [markdown]
# ### Where does the attention go? (Figure 3)
#
# The paper's Figure 3a shows the key-value-predict model's weights word by word over one article, and
# Figure 3b their average by position in the window. We collect the weights over the test set as the run
# sees it (the first 100 tokens of each of the 60 test articles), with the state and the window carried
# exactly as in evaluation, article by article:

# %%
def window_weights(model, batches):
    """Every test article's inputs, targets and window weights (steps, L), in the evaluation's order."""
    articles, current = [], {}
    with torch.no_grad():
        for batch, _, out in evaluation_pass(model, batches):
            for b in range(batch.inputs.size(0)):
                if batch.reset[b]:  # this row starts a new article here
                    current[b] = {"inputs": [], "targets": [], "alpha": []}
                    articles.append(current[b])
                real = batch.mask[b]  # (time,) padding after the article's end is not scored
                current[b]["inputs"] += batch.inputs[b, real].tolist()
                current[b]["targets"] += batch.targets[b, real].tolist()
                current[b]["alpha"].append(out.attention[b, real].cpu())  # (real steps, L)
    return [{**a, "alpha": torch.cat(a["alpha"])} for a in articles if a["inputs"]]


articles = window_weights(model, test_batches)
L = model.head.window
first, steps = articles[0], 30
itos = corpus.vocab.itos
grid = torch.zeros(steps, steps)  # row t: the word predicted at step t; column i: input i
for t in range(steps):
    for j in range(L):  # slot j of step t reads the output of input t - L + j
        if t - L + j >= 0:
            grid[t, t - L + j] = first["alpha"][t, j]
window_heatmap(grid, [itos[i] for i in first["inputs"][:steps]], [itos[i] for i in first["targets"][:steps]], L,
               title=f"Figure 3a analogue: key-value-predict, L = {L}, first test article ({size})")
plt.show()

# %% [markdown]
# Read the heatmap by columns. A column is one output, and its cells are the weights it receives from the
# $L$ steps whose window holds it: a red column is an output that gets more than its share for its whole
# time in the window, a blue one (the `<eos>` outputs) is one that the head skips.
#
# Three numbers measure this over the test set, at every step whose window is full. The **normalised
# entropy** $H(\alpha_t) / \log L$ (as in chapter 02, section 3) is 1 for uniform weights and 0 when one
# slot takes all. The largest weight of a step, as a multiple of the uniform share $1/L$, says how far its
# favourite slot stands out.
#
# The third number asks what the head chooses by. Group the log-weights $\log(L\,\alpha_{t,j})$ once by *which
# output* sits in the slot and once by *how far back* it is: the share of their variance that each grouping
# explains on its own says whether the head chooses by content or by recency.

# %%
full = torch.cat([a["alpha"][L:] for a in articles])  # (steps, L): every step with a full window
entropy = -(full * full.clamp_min(1e-12).log()).sum(-1) / math.log(L)  # (steps,) 1 = uniform
log_ratio, source, slot = [], [], []  # one entry per (step, slot): log(L alpha), which output, how far back
for n, a in enumerate(articles):
    for t in range(L, len(a["inputs"])):
        log_ratio += (L * a["alpha"][t]).log().tolist()
        source += [(n, t - L + j) for j in range(L)]
        slot += list(range(L))


def explained(values, groups):
    """Share of the variance of ``values`` explained by the mean of each group."""
    values, index = torch.tensor(values, dtype=torch.double), {}
    ids = torch.tensor([index.setdefault(g, len(index)) for g in groups])
    means = torch.zeros(len(index), dtype=torch.double).index_add_(0, ids, values) / torch.bincount(ids)
    return float(means[ids].var() / values.var())


by_source, by_slot = explained(log_ratio, source), explained(log_ratio, slot)
shuffled = torch.randperm(len(log_ratio), generator=torch.Generator().manual_seed(0)).tolist()
by_chance = explained([log_ratio[i] for i in shuffled], source)  # the same groups, the values shuffled
top = full.max(-1).values * L  # (steps,) the largest weight of each step against uniform
print(f"{len(full):,} steps with a full window: normalised entropy median {entropy.median():.3f} "
      f"(10% of the steps below {entropy.quantile(0.1):.3f})")
print(f"largest weight of a step: median {top.median():.1f}x uniform; half the window's weight or more "
      f"in {(full.max(-1).values >= 0.5).double().mean():.1%} of the steps")
print(f"variance of log(L * weight) explained by which output is read: {by_source:.0%} "
      f"(the same groups by chance: {by_chance:.0%}); by how far back: {by_slot:.0%}")

# %% [markdown]
# Which outputs does the head prefer? The mean weight each word's output receives, against uniform
# (geometric mean over every step that reads it; words read at least 225 times):

# %%
by_word = {}
for value, (n, i) in zip(log_ratio, source):
    by_word.setdefault(articles[n]["inputs"][i], []).append(value)
salience = sorted((sum(v) / len(v), itos[w]) for w, v in by_word.items() if len(v) >= 15 * L)
print("most read:  " + ", ".join(f"{w} {math.exp(s):.1f}x" for s, w in salience[::-1][:6]))
print("least read: " + ", ".join(f"{w} {math.exp(s):.1f}x" for s, w in salience[:6]))

# %%
fig, (slots_ax, entropy_ax) = plt.subplots(1, 2, figsize=(10, 3.6))
slots_ax.plot(range(-L, 0), full.mean(0), "-o", ms=4, label="key-value-predict")
slots_ax.axhline(1 / L, color="k", lw=1, ls="--", label=f"uniform (1/{L})")
slots_ax.set_ylim(0, 2.5 / L)
slots_ax.set_xlabel("position in the window (-1 = previous step)")
slots_ax.set_ylabel("mean attention weight")
slots_ax.set_title("Figure 3b analogue: the mean by position", fontsize=10)
slots_ax.legend(fontsize=8)
entropy_ax.hist(entropy, bins=50, range=(0.0, 1.0), color="C0")
entropy_ax.axvline(1.0, color="k", lw=1, ls="--", label="uniform")
entropy_ax.axvline(float(entropy.median()), color="C3", lw=1.5, label=f"median {float(entropy.median()):.2f}")
entropy_ax.set_xlabel(r"normalised entropy $H(\alpha_t) / \log L$ of one step")
entropy_ax.set_ylabel("steps")
entropy_ax.set_title("Each step on its own", fontsize=10)
entropy_ax.legend(fontsize=8)
for ax in (slots_ax, entropy_ax):
    ax.grid(alpha=0.3)
plt.tight_layout()
plt.show()

# %% [markdown]
# **What the numbers say.** The weights are spread over the window at most steps, not only on average:
# a typical step has a normalised entropy above 0.9, and its largest weight is a few times the uniform
# share of $1/L$. A single slot takes half the weight in about one step in thirty (3.3%).
#
# What structure there is belongs to the outputs, not to their distance: which output sits in a slot explains
# about three quarters of the variance of the log-weights (a random grouping of the same sizes explains under a
# tenth, printed above), its position none, so the mean by position is nearly flat. (The paper's model, by
# contrast, mainly used the five most recent outputs: its section 2.4 and Figure 3b.)
#
# The head has learned a fixed preference for some outputs (those computed at full stops and at "a" and "an"),
# kept for their whole time in the window. The variance that neither grouping explains, about a quarter, holds
# each step's normalisation and any lookup directed by the current step; the recall task of section 4 tests for
# such a lookup directly.

# %% tags=["remove-input"] jupyter={"source_hidden": true}
# The paragraphs above describe these numbers; the assertions keep them true when the chapter is re-executed.
assert 0.9 < float(entropy.median()) < 0.99, float(entropy.median())
assert by_chance < 0.1 and 0.65 < by_source < 0.8, (by_chance, by_source)  # "under a tenth", "three quarters"
half = float((full.max(-1).values >= 0.5).double().mean())  # "about one step in thirty (3.3%)"
assert 1.5 < float(top.median()) < 5 and 0.02 < half < 0.05, (top.median(), half)
assert 0.6 < by_source < 0.85 and by_slot < 0.015, (by_source, by_slot)  # "three quarters", "none"
assert len(articles) == 60 and len(full) == 60 * (100 - L), (len(articles), len(full))  # 60 articles of 100 tokens
assert max(abs(float(w) - 1 / L) for w in full.mean(0)) < 0.35 / L, full.mean(0)
assert {w for _, w in salience[::-1][:6]} & {".", "a", "an", "the"}, salience[::-1][:6]

# %% [markdown]
# ### Cutting the window at test time
#
# How much of the window does the trained model need? Let it see only its $m$ most recent slots at
# evaluation (`head.eval_window = m`), without retraining. Read the result with care: this is not the
# paper's experiment. Daniluk et al. *retrain* each model with $L = 1, 5, 10, 15$ (Figure 2a), and a model
# trained with a window of 1 learns to do without the rest. A model trained with 15 slots and shown fewer
# meets short windows that in training it saw only at an article's first steps, where they held the title's
# outputs. So the loss below mixes what the older slots carried with the cost of that **distribution shift**,
# and likely overstates what a retrained short window would lose.

# %%
cuts = (1, 2, 3, 5, 10, 15)
cut_ppl = {}
for m in cuts:
    model.head.eval_window = m
    cut_ppl[m] = mlm.evaluate(model, test_batches).perplexity
model.head.eval_window = None
print("test perplexity with the window cut to its m most recent slots:")
print("  " + "   ".join(f"m={m}: {p:.1f} ({p / cut_ppl[L] - 1:+.1%})" for m, p in cut_ppl.items()))

# %% [markdown]
# Cut to its last slot the model's perplexity rises by about a tenth, to its last 5 by 4%, to its last 10 by
# about 1%. The smaller windows cost more per slot dropped, but they also move the weights furthest from
# training (one slot left takes all the weight, against about $1/15$ at most training steps), so this probe
# cannot say whether the recent outputs carry more.
#
# Section 5 retrains the window instead, as the paper does.

# %% tags=["remove-input"] jupyter={"source_hidden": true}
assert abs(cut_ppl[L] - run.result["test_ppl"]) < 1e-6 * cut_ppl[L], "m = L must reproduce the test perplexity"
assert 1.075 * cut_ppl[L] < cut_ppl[1] < 1.115 * cut_ppl[L], cut_ppl  # "+9.3%", "about a tenth"
assert 1.03 * cut_ppl[L] < cut_ppl[5] < 1.05 * cut_ppl[L] and 1.005 * cut_ppl[L] < cut_ppl[10] < 1.02 * cut_ppl[L], cut_ppl
assert cut_ppl[1] > cut_ppl[3] > cut_ppl[5] > cut_ppl[10], cut_ppl

# %% [markdown]
# ## 4. How far back does each head reach? (recall at a distance)
#
# The key-value recall task (chapter 00, section 5) asks the model to predict a value, the **critical token**,
# that followed the same key $d$ words earlier, at the **source**; $d$ runs from 2 to 60, and the number of
# words before the source is drawn independently of $d$. A model that cannot see the source is at chance, 0.10. If step $t$ predicts the critical token, the output computed at the source is
# $h_{t+1-d}$. A window of $L$ outputs holds it while $d \le L + 1$; the 4-gram RNN's head, which reads
# $h_t$, $h_{t-1}$ and $h_{t-2}$, while $d \le 3$. That is each head's **reach**. Beyond it, the head sees
# the source only through what the LSTM's state carried.
#
# The book stores three seeds of the LSTM and of each of Daniluk's heads on this task (`python -m mlm
# reproduce recall`): the same 20,000 training lines, an LSTM of 64 units (66 where the output splits in
# three parts, so a part has 22), Adam at 0.01 for 15 epochs, windows of $L = 5$. The LSTM reads each line
# whole; the heads keep Daniluk's protocol, each line a document cut into 20-step segments, so no gradient
# links a critical token to a source more than 20 words back, and a head takes more, shorter updates (printed
# below). The gap to the LSTM mixes the head with that cut.

# %%
FAMILIES = {"LSTM": None, "window attention, L = 5": 6, "key-value, L = 5": 6, "key-value-predict, L = 5": 6,
            "4-gram RNN": 3}  # label -> reach: a window of L outputs reads d <= L + 1, the 4-gram RNN d <= 3
recall = load_stored_recall({label: FAMILY_RUNS[label] for label in FAMILIES}, "../results")
chance = recall["LSTM"].extras[0]["chance"]
print(f"{'':<26}accuracy on the critical token, one value per seed")
print(f"{'family':<26}{'all d':<20}{'within reach':<20}{'beyond reach':<20}{'parameters':>10}{'updates':>9}")
for label, entry in recall.items():
    reach = FAMILIES[label]
    columns = [[s.accuracy for s in entry.scores]]
    columns += [entry.within(0, reach), entry.within(reach + 1)] if reach else [[], []]
    print(f"{label:<26}" + "".join(f"{' '.join(f'{a:.2f}' for a in column):<20}" for column in columns)
          + f"{entry.results[0]['parameters']:>10,}{entry.results[0]['updates']:>9,}")
recall_panels(recall, chance, {k: v for k, v in FAMILIES.items() if v}, reference="LSTM", columns=3,
              starts=[2, 4, *range(7, 61, 5)],  # bin edges at both reaches, d = 3 and d = 6
              title="Recall by distance d (bins 2-3, 4-6, then five wide); grey: the LSTM's mean")
plt.show()

# %% [markdown]
# **What the panels show.** The LSTM recalls well above chance at every distance and does not get worse as $d$
# grows, though its seeds differ (the table): one seed of three learned less in 15 epochs. Each of Daniluk's heads
# recalls less than the LSTM, on average over its seeds: window attention about 0.37 of the values, the key-value,
# key-value-predict and 4-gram heads about 0.2 (key-value-predict 0.17), with one seed of key-value and of the
# 4-gram RNN near chance and two of key-value-predict.
#
# The heads that split the output, whose softmax reads a part of 32 or 22 units instead of 64, recall least; these
# runs do not tell whether the split or the narrower part is the cause, nor how much of window attention's lead
# comes from its larger size (about half again the LSTM's parameters at this width).
#
# Do the heads at least use their reach? Within it, the output computed at the source is one of those the
# head reads directly. A question's position in its line grows with $d$, so the next table compares
# questions asked at the same positions (10 to 59), within each head's reach and just beyond it.

# %%
# NBVAL_CHECK_OUTPUT
def pooled(entry, d_low, d_high, p_low=10, p_high=60):
    """Accuracy over every seed's critical tokens with d_low <= d <= d_high, asked at positions p_low .. p_high-1."""
    cells = [s.table([d_low, d_high + 1], [p_low, p_high])[0][0] for s in entry.scores]  # (accuracy, count)
    count = sum(n for _, n in cells)
    return sum(a * n for a, n in cells if n) / count, count


def with_error(accuracy, count):
    """The accuracy and its binomial standard error, sqrt(a (1 - a) / count)."""
    return f"{accuracy:.2f} ± {math.sqrt(accuracy * (1 - accuracy) / count):.2f}"


print("questions asked at positions 10-59 of a line, all seeds pooled (the LSTM split at d = 6); ± one standard error")
print(f"{'family':<26}{'within reach':>14}{'reach < d <= 20':>17}{'difference':>12}{'tokens':>15}")
matched = {}
for label, entry in recall.items():
    reach = FAMILIES[label] or 6
    (near, n_near), (far, n_far) = matched[label] = pooled(entry, 2, reach), pooled(entry, reach + 1, 20)
    print(f"{label:<26}{with_error(near, n_near):>14}{with_error(far, n_far):>17}{near - far:>+12.2f}"
          f"{n_near:>9} / {n_far}")

# %% [markdown]
# No head recalls better within its reach than beyond it by more than its standard errors: the values the
# heads recall come mostly through the LSTM's state, as the LSTM's do. One caution: the LSTM itself does
# about 0.08 worse at $d \le 6$ than beyond, so measured against that, the heads' differences could hide a
# small benefit of reach, too small for a few hundred questions a cell to show. It is consistent with the
# WikiText-2 head of section 3, which kept a fixed preference for some outputs. At this size and training budget, a
# window's reach is not a memory the model has learned to use much.

# %% tags=["remove-input"] jupyter={"source_hidden": true}
# The two paragraphs above describe the stored recall runs; the assertions keep them true.
assert all(e.results[0]["updates"] > 3 * recall["LSTM"].results[0]["updates"] for e in recall.values()
           if e is not recall["LSTM"]), "more, shorter updates"
mean = {label: sum(s.accuracy for s in entry.scores) / len(entry.scores) for label, entry in recall.items()}
heads = [label for label in FAMILIES if label != "LSTM"]
assert all(len(entry.seeds) == 3 for entry in recall.values()), {k: e.seeds for k, e in recall.items()}
for scores in recall["LSTM"].scores:
    bins = [acc for _, _, acc, _, _ in scores.binned(5)]
    assert min(bins) > 2 * chance and scores.accuracy_within(41) > scores.accuracy_within(0, 20) - 0.05, bins
assert max(s.accuracy for s in recall["LSTM"].scores) - min(s.accuracy for s in recall["LSTM"].scores) > 0.15
assert all(mean[label] < mean["LSTM"] - 0.1 for label in heads), mean
assert 0.3 < mean["window attention, L = 5"] < 0.45 and all(0.12 < mean[label] < 0.26 for label in heads[1:]), mean
assert all(min(s.accuracy for s in recall[label].scores) < 1.6 * chance for label in heads[1:]), mean
near_chance = {label: sum(s.accuracy < 1.6 * chance for s in recall[label].scores) for label in heads[1:]}
assert list(near_chance.values()) == [1, 2, 1] and 0.165 <= mean["key-value-predict, L = 5"] < 0.175, near_chance
assert all(matched[label][0][0] < matched[label][1][0] + 0.05 for label in heads), matched
assert -0.12 < matched["LSTM"][0][0] - matched["LSTM"][1][0] < -0.04, matched["LSTM"]  # "about 0.08 worse"
sizes = {label: entry.results[0]["parameters"] for label, entry in recall.items()}
assert 1.4 < sizes["window attention, L = 5"] / sizes["LSTM"] < 1.7, sizes  # "about half again"

# %% [markdown]
# ## 5. The evidence
#
# The paper's claims are decided on stored runs, by the rule of chapter 00, section 6. Two sets of runs ask two
# questions. The paper's own protocol (`cpu-daniluk2017-wt2`) keeps the recipe the paper states (Adam at 0.001,
# batches of 64, 20 steps of backpropagation, the state reset between articles) on WikiText-2, with the 10,000
# most frequent words, at a third of the paper's widths, where the heads have 1% to 28% more parameters than the
# LSTM. The book adds early stopping after three epochs without improvement (at most 20 epochs) and no dropout,
# neither of which the paper specifies.
#
# Each head runs at the window the paper found best for it (Figure 2c): $L = 10$ for attention and key-value, $L =
# 5$ for key-value-predict, so their paper numbers differ from the $L = 5$ ones of Figure 2a quoted for the
# matched recipe. Attention and key-value with $L = 10$ have one stored seed each.
#
# The book's matched recipe (`compare-ptb`) gives every family about 2.70M parameters under one schedule
# (Tran et al.'s SGD, chapter 02, section 4; no dropout) on PTB sentences.
#
# ### The paper's protocol on WikiText-2

# %%
rows, pending = chapter_evidence("03", "../results")
own_rows = [row for row in rows if "cpu-daniluk2017-wt2" in row.evidence]
retrained = [row for row in rows if row.claim.startswith("A window of")]  # the window L against L = 5
matched_rows = [row for row in rows if row not in own_rows + retrained]
show_claims(own_rows);

# %% tags=["remove-input"] jupyter={"source_hidden": true}
from matplotlib.lines import Line2D  # noqa: E402

from mlm.manifests import cpu as cpu_manifest  # noqa: E402
from mlm.table import group_baseline, load_settings  # noqa: E402

own_specs = [s for s in cpu_manifest.RUNS if s.group == "cpu-daniluk2017-wt2"]
own = load_settings(own_specs, "../results")
own_floor = group_baseline(own_specs, "../results")
shown = {"LSTM": own["lstm"], "key-value-predict, L = 5": own["kvp-L5"], "4-gram RNN": own["ngram4"]}
fig, axes = plt.subplots(1, 3, figsize=(12, 3.8), sharey=True)
for ax, (label, setting) in zip(axes, shown.items()):
    for i, seed in enumerate(setting.seeds):
        epochs = setting.metrics(i)
        ax.plot([e["epoch"] for e in epochs], [e["valid_ppl"] for e in epochs], "-o", ms=3, color=f"C{i}")
        ax.plot([e["epoch"] for e in epochs], [e["train_ppl"] for e in epochs], "--", color="0.5", lw=1)
    ax.axhline(own_floor["bigram_valid"], color="k", ls=":")
    ax.set_yscale("log")
    ax.set_yticks([60, 100, 150, 200, 300, 400], ["60", "100", "150", "200", "300", "400"])
    ax.minorticks_off()
    ax.set_title(label, fontsize=11)
    ax.set_xlabel("epoch")
    ax.grid(True, alpha=0.3)
axes[0].set_ylabel("perplexity")
fig.legend([*(Line2D([], [], color=f"C{i}", marker="o", ms=3) for i in range(3)),
            Line2D([], [], color="0.5", ls="--"), Line2D([], [], color="k", ls=":")],
           ["seed 0, validation", "seed 1, validation", "seed 2, validation", "training (every seed)",
            "interpolated bigram, validation"], fontsize=9, loc="lower center", ncol=5, bbox_to_anchor=(0.5, 0))
fig.suptitle("WikiText-2, the paper's recipe at a third of its widths: validation never gets below the bigram's", fontsize=11)
plt.tight_layout(rect=(0, 0.08, 1, 1))
plt.show()
for label, setting in {**shown, "attention, L = 10": own["attention-L10"], "key-value, L = 10": own["kv-L10"]}.items():
    print(f"{label:<26} best validation " + ", ".join(f"{v:.1f}" for v in setting.values("best_valid_ppl"))
          + " at epochs " + ", ".join(str(e) for e in setting.values("best_epoch"))
          + " of " + ", ".join(str(e) for e in setting.values("epochs_run"))
          + " | test " + ", ".join(f"{v:.1f}" for v in setting.values("test_ppl"))
          + " | last training " + ", ".join(f"{setting.metrics(i)[-1]['train_ppl']:.0f}"
                                          for i in range(len(setting.seeds))))
print(f"interpolated bigram of the same tokens: validation {own_floor['bigram_valid']:.1f}, "
      f"test {own_floor['bigram_test']:.1f}; the LSTM's mean test perplexity "
      f"{sum(own['lstm'].values('test_ppl')) / len(own['lstm'].seeds):.1f}")

# %% [markdown]
# No run under this recipe beats counting. Every run's best validation perplexity lies above that of the
# interpolated bigram of the same tokens (the dotted line), and so does its test perplexity, though LSTM seed 2
# only just (151.0 against 150.4). The training perplexity of the families drawn keeps falling, to 58-101, while
# validation swings.
#
# In ten runs of eleven the validation perplexity rises after a best epoch of 1 to 4, and early stopping ends the
# run after 4 to 7 epochs (LSTM seeds 0 and 1: best 225.3 and 230.2, at epoch 3). The eleventh run, LSTM seed 2,
# went on: its validation swung up and down, then fell to 166.2 at epoch 18, against the bigram's 162.5. So the
# stopping rule, not only the size, may keep these runs above counting.
#
# The LSTM, the control of every claim here, scores 190.2 on average against the bigram's 150.4. A control no
# better than word-pair counts has not learned what a memory head could add to, so the book declares these
# rows *not testable at this size* (chapter 00, section 6). WikiText-2 has a tenth of the paper's 22.5M
# words; testing the claim on it would likely need a regularized recipe (dropout chosen on validation, as
# chapter 05's Kong runs do) and a looser stopping rule, both beyond what the paper states. These runs cannot
# say which of the two matters.
#
# ### The book's matched recipe on PTB

# %%
show_claims(matched_rows)
interval_plot(matched_rows, [row.claim.split(" beat")[0].rstrip(", ") for row in matched_rows],
              title="Daniluk et al.'s heads against the LSTM: ours with its 95% interval, ◇ the paper")
plt.show()
show_pending(pending);

# %% [markdown]
# The table puts the paper's perplexities beside ours, but on different scales: the paper's are on its own corpus
# (22.5M words, a 77k vocabulary) at 47M parameters, ours on PTB at 2.70M. What compares is the **relative change**
# against each side's own LSTM, the percentage in each row.
#
# Window attention and the key-value split gain nothing measurable, against the paper's 3.5% and 7.3% (its $L = 5$
# numbers, Figure 2a). Their intervals hold zero and exclude the paper's change, but reach just past the grey
# $\pm 1\%$ band of *no difference* (window attention's to +1.01%, key-value's to -1.2%), hence *smaller than reported*
# (chapter 00, section 6). Window attention's misses the band by a hundredth of a point, so one more seed could as
# well make it *no difference*: read the two verdicts as one finding, no measurable gain and less than the paper's.
#
# Key-value-predict and the 4-gram RNN gain in every seed, about a fifth of the paper's 11%. Under the book's recipe
# on PTB, the paper's main finding reappears: the 4-gram RNN, which attends to nothing, does as well as
# key-value-predict, the best attention head; each one's mean change (-2.0% and -2.3%) lies inside the other's 95%
# interval. That is a reading of the two intervals, not a verdict of the rule, which has none for two models alike.

# %% tags=["remove-input"] jupyter={"source_hidden": true}
# The paragraphs above describe these rows; the assertions keep them true when runs are added.
from mlm.claims import UNTESTABLE, relative_change  # noqa: E402

assert own_rows and all(row.verdict == UNTESTABLE for row in own_rows), [r.verdict for r in own_rows]
assert all(v > own_floor["bigram_valid"] for s in own.values() for v in s.values("best_valid_ppl"))
assert all(v > own_floor["bigram_test"] for s in own.values() for v in s.values("test_ppl"))
lstm_mean = sum(own["lstm"].values("test_ppl")) / 3
assert 185 < lstm_mean < 195 and lstm_mean > own_floor["bigram_test"] + 30, lstm_mean
lstm_best = sorted(own["lstm"].values("best_valid_ppl"))
assert 160 < lstm_best[0] < 170 and all(215 < v < 235 for v in lstm_best[1:]), lstm_best
assert min(own["lstm"].values("test_ppl")) < own_floor["bigram_test"] + 1  # "only just"
stored = [s for s in own.values() if s.seeds]
best_epochs = [e for s in stored for e in s.values("best_epoch")]
ran = [e for s in stored for e in s.values("epochs_run")]
assert len(best_epochs) == 11 and sum(e <= 4 for e in best_epochs) == 10 and sorted(ran)[-1] == 20, (best_epochs, ran)
assert all(4 <= e <= 7 for e in sorted(ran)[:-1]), ran
last_train = [s.metrics(i)[-1]["train_ppl"] for s in shown.values() for i in range(len(s.seeds))]
assert 57 < min(last_train) < 59 and 100 < max(last_train) < 102, last_train  # "to 58-101"
changes = {row.claim.split(" (Daniluk")[0]: relative_change(*row.seeds[:2]) for row in matched_rows}
verdicts = {row.claim.split(" (Daniluk")[0]: row.verdict for row in matched_rows}
every_seed = {row.claim.split(" (Daniluk")[0]: max(row.seeds[0]) < min(row.seeds[1]) for row in matched_rows}
window, kv, kvp, ngram = (changes[k] for k in (
    "Attention over the last 5 outputs beats the LSTM", "Splitting each output into key and value beats the LSTM",
    "Key, value and predict parts beat the LSTM", "The 4-gram RNN, with no attention at all, beats the LSTM"))
assert abs(window[0]) < 0.005 and abs(kv[0]) < 0.005 and window[1] < 0 < window[2] and kv[1] < 0 < kv[2], (window, kv)
assert -0.03 < kvp[0] < -0.015 and kvp[2] < 0 and -0.03 < ngram[0] < -0.015 and ngram[2] < 0, (kvp, ngram)
assert kvp[1] < ngram[0] < kvp[2] and ngram[1] < kvp[0] < ngram[2], "the 4-gram RNN does as well as key-value-predict"
assert [round(100 * change[0], 1) for change in (ngram, kvp)] == [-2.0, -2.3], (ngram, kvp)  # "-2.0% and -2.3%"
assert all(0.12 < ours / paper < 0.3 for (ours, *_), paper in ((kvp, -0.110), (ngram, -0.109))), "about a fifth"
assert every_seed["Key, value and predict parts beat the LSTM"] and \
    every_seed["The 4-gram RNN, with no attention at all, beats the LSTM"], every_seed
assert sorted(verdicts.values()) == ["a gain, smaller than reported"] * 2 + ["smaller than reported"] * 2, verdicts
assert not pending, pending
from mlm.manifests import compare  # noqa: E402

claim_text = {c.model: c.text for c in compare.CLAIMS if c.control == "lstm"}
window_row, kv_row = (next(r for r in matched_rows if r.claim == claim_text[m]) for m in ("window-L5", "kv-L5"))
assert f"{100 * relative_change(*window_row.seeds[:2])[2]:+.2f}" == "+1.01", window_row  # "to +1.01%"
assert f"{100 * relative_change(*kv_row.seeds[:2])[1]:+.1f}" == "-1.2", kv_row  # "to -1.2%"
assert len(own_rows) == 4 and "(1 seed)" in own_rows[-1].evidence, own_rows[-1]  # kv-L10, one seed

# %% [markdown]
# ### The window retrained
#
# Daniluk et al.'s short-span claim concerns the window itself. In the paper (Figure 2a, test perplexity on its
# Wikipedia corpus), key-value-predict retrained with a window of one output scores 76.1 against 75.8 with five
# (+0.4%); with fifteen, 75.8 again; only the relative changes compare with ours. The book retrains its matched
# key-value-predict model (279 units, the recipe above) with $L = 1$ and $L = 15$ and compares each with the $L =
# 5$ model. The window adds no parameters, so the models differ in $L$ alone. These rows put the paper's question
# under the book's recipe, on PTB sentences: a window never reaches past the start of its sentence, so fifteen
# slots fill only in a sentence's later words.
#
# Both reported changes are under 1%, claims of *no difference*, and the rule (chapter 00, section 6) reads
# them by what each claims. For $L = 1$, that the shorter window does no worse: an interval inside $\pm 1\%$
# or below 0 supports it, one above 0 contradicts it. For $L = 15$, that the longer window does not help: an
# interval inside $\pm 1\%$ or above 0 supports it, one below 0 contradicts it (a gain). Any other interval
# leaves the claim not settled.

# %%
from mlm.manifests import compare  # noqa: E402

row_labels = {claim.text: compare.ROW_LABELS[claim.model] for claim in compare.CLAIMS}  # "..., L = 1 vs L = 5"
show_claims(retrained)
for row in retrained:
    print(f"{row_labels[row.claim]}: test perplexity by seed " + ", ".join(f"{v:.1f}" for v in row.seeds[0])
          + " against " + ", ".join(f"{v:.1f}" for v in row.seeds[1]))
interval_plot(retrained, [row_labels[row.claim] for row in retrained],
              title="Key-value-predict retrained with another window, against L = 5: ours, ◇ the paper")
plt.show()

# %% [markdown]
# With $L = 1$ the model scores 115.0 on average against 115.3 with $L = 5$ ($-0.3\%$): no sign that the
# shorter window costs anything, as the paper found. With $L = 15$ it scores 116.0 ($+0.6\%$): no sign
# that the longer window helps, again as the paper found. Both intervals ($-1.6\%$ to $+1.0\%$ and
# $-1.1\%$ to $+2.2\%$) hold zero, and neither settles its claim. For $L = 1$ the upper end leaves a loss of
# about 1% possible, and the lower end keeps the interval from lying inside $\pm 1\%$; for $L = 15$ the lower
# end leaves a gain of about 1% possible. Three seeds a side cannot tell a change under 1% from none: both
# verdicts are *not settled*.
#
# The seeds of one window alone lie 1.1% apart ($L = 1$: 114.1 to 115.5) and 1.4% apart ($L = 15$: 115.4 to
# 117.0), more than the rule's 1% margin; telling a change under 1% from none would take more seeds a side than
# the book has run.

# %% tags=["remove-input"] jupyter={"source_hidden": true}
import statistics  # noqa: E402

from mlm.claims import NOT_SETTLED  # noqa: E402

one, fifteen = retrained
assert one.claim.startswith("A window of one") and fifteen.claim.startswith("A window of fifteen"), retrained
assert one.verdict == fifteen.verdict == NOT_SETTLED, (one, fifteen)
assert one.seeds[1] == fifteen.seeds[1] and len(one.seeds[0]) == len(fifteen.seeds[0]) == 3  # one control
for row, numbers, mean, (low, high), apart in ((one, [-0.3, -1.6, 1.0], 115.0, ("114.1", "115.5"), 1.1),
                                                 (fifteen, [0.6, -1.1, 2.2], 116.0, ("115.4", "117.0"), 1.4)):
    assert [round(100 * x, 1) for x in relative_change(*row.seeds[:2])] == numbers, row
    assert round(statistics.fmean(row.seeds[0]), 1) == mean and round(statistics.fmean(row.seeds[1]), 1) == 115.3
    assert [f"{min(row.seeds[0]):.1f}", f"{max(row.seeds[0]):.1f}"] == [low, high], row.seeds
    assert round(100 * (max(row.seeds[0]) - min(row.seeds[0])) / statistics.fmean(row.seeds[1]), 1) == apart

# %% [markdown]
# > **Where this falls short.** The decided rows answer the book's question (PTB sentences, 2.70M parameters, one
# > recipe), not the paper's. The paper's own recipe on WikiText-2, at a third of its widths and without dropout,
# > stopped before any model beat counting. Three seeds a side cannot settle changes under 1%. On recall, the heads
# > train on 20-step segments and the LSTM on whole lines. No full-size run exists; dropout, the stopping rule and
# > the window at an article's start are the book's choices.
#
# **Exercise 03** ([`exercises/ex03_short_attention.py`](../exercises/ex03_short_attention.py)) asks you to
# implement the output split, the carried window, the window mask and the attention itself;
# `python -m exercises.grader 03` checks them against `mlm`.

# %% tags=["remove-input"] jupyter={"source_hidden": true}
from mlm.book import record  # noqa: E402

record("03_short_attention", {
    "kvp_L15_test_ppl": round(run.result["test_ppl"], 1),
    "baseline_test_ppl": round(baseline["bigram_test"], 1),
    "entropy_median": round(float(entropy.median()), 3),
    "variance_by_source": round(by_source, 2),
    "cut_m1_ppl": round(cut_ppl[1], 1),
    "cut_m5_ppl": round(cut_ppl[5], 1),
})
