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
# # Chapter 4 — Recurrent Memory Networks (Tran, Bisazza & Monz, 2016)
#
# The attentive models of chapters 2 and 3 look back at earlier *LSTM states*. Tran et al. look back at
# the earlier *words* themselves: next to the LSTM sits a small memory network that holds the last
# $n$ input words, and at every step the LSTM state decides which of them to read. Because the memory
# holds words and not hidden vectors, its attention weights can be read directly: which earlier word
# did the model consult to predict this one? The paper uses this for a linguistic analysis of what the
# network has learned, and applies the model to the MSR Sentence Completion Challenge.
#
# This chapter derives the Memory Block from end-to-end memory networks, implements it so that all time
# steps are computed at once, trains a 1-layer LSTM and RM(+tM-g) in a reduced size on PTB (all eight
# variants and the 1-3 layer LSTMs in the full size), puts every model beside a bigram counted on the same
# tokens, repeats the attention analyses of section 5 against uniform attention, and ends with a table of the
# paper's claims and what our runs say about them.
#
# Paper: *Recurrent Memory Networks for Language Modeling*, NAACL 2016 (equation numbers below are the paper's).

# %% tags=["parameters"]
size = "reduced"  # "reduced" (minutes on a CPU) or "full" (the paper's settings; a GPU is advised)
device = "auto"  # "auto", "cpu", "cuda" or "mps"
seed = 0
data_dir = None  # None: $MLM_DATA_DIR, then ~/.cache/mlm
runs_dir = "../runs"  # run folders; a finished run is loaded, not retrained

# %%
import inspect
import json
from pathlib import Path

import matplotlib.pyplot as plt
import torch

import mlm
from mlm.analysis.memory_block import (average_by_position, collect_memory_attention, distant_examples,
                                       pair_frequency_by_distance, sample_words)
from mlm.book import record
from mlm.data import truncate_lines
from mlm.models.recurrent_memory import MemoryBlock, RecurrentMemoryHead, memory_window, temporal_rows
from mlm.plots import learning_curves
from mlm.presets.tran2016 import tran_preset_name
from mlm.training import build_batches
from mlm.utils import set_seed

set_seed(seed)

# %% [markdown]
# ## 1. From end-to-end memory networks to the Memory Block
#
# An end-to-end memory network (Sukhbaatar et al., 2015) answers a query $u$ from a set of stored items
# $x_1, \dots, x_n$. Every item is embedded twice: once by a table $M$ as a **key** $m_i$ that is compared
# with the query, and once by a table $C$ as a **value** $c_i$ that is returned. One "hop" is
#
# $$ p_i = \mathrm{softmax}_i(m_i^\top u), \qquad o = \sum_i p_i c_i, \qquad u' = u + o \;(\text{or } H u + o). $$
#
# Two tables instead of one separate *where to look* from *what to read*: a word can be a good key (it
# signals that something relevant is here) without being the most useful content, and the other way round.
#
# Tran et al. build a language model around one hop of this network, the **Memory Block** (MB). The
# stored items are the $n$ most recent input words $x_{t-n+1}, \dots, x_t$, the current word included;
# the query is the LSTM state $h_t$. Stacking the rows $m_i = M(x_i)$ into the $n \times d$ matrix $M_i$
# (and $c_i = C(x_i)$ into $C_i$):
#
# $$ p_t = \mathrm{softmax}(M_i h_t) \quad (1), \qquad s_t = C_i^\top p_t \quad (3). $$
#
# **The temporal matrix.** A set of words has no order, but in language *where* a word sits matters as
# much as *which* word it is: the previous word is usually more useful than the word twelve positions
# back. A learned matrix $T \in \mathbb{R}^{n \times d}$ adds one vector per memory position to the keys,
#
# $$ p_t = \mathrm{softmax}\big((M_i + T)\, h_t\big) \quad (2), $$
#
# so the attention can prefer positions as well as words (memory networks call this temporal encoding).
# The paper's variants are written "+tM" (with $T$) and "–tM" (without).
#
# **Why a gate.** The memory network combines the context with the query by a sum, $s_t + h_t$. In a
# language model $h_t$ is not a throw-away query, it is the LSTM's whole summary of the sentence, and adding
# $s_t$ to it blindly can overwrite what the LSTM knows. Tran et al. compose the two with a GRU-like unit
# instead, which decides per dimension how much of each to pass on:
#
# $$ z_t = \sigma(W_{sz} s_t + U_{hz} h_t) \;(4), \quad r_t = \sigma(W_{sr} s_t + U_{hr} h_t) \;(5), $$
# $$ \tilde h_t = \tanh\big(W s_t + U (r_t \odot h_t)\big) \;(6), \quad h^m_t = (1 - z_t) \odot h_t + z_t \odot \tilde h_t \;(7). $$
#
# When the update gate $z_t$ is closed, the block passes $h_t$ through unchanged; when it is open, it
# replaces $h_t$ by a candidate built from the context and a reset-gated $h_t$. The variants "-g" (gating)
# and "-l" (linear: $s_t + h_t$) compare the two.
#
# **RM and RMR.** In **RM** (Recurrent-Memory) the block sits on top of the LSTM and the softmax reads
# $h^m_t$. The blocks of different steps never talk to each other: what the block read at step $t$ is
# forgotten at step $t+1$. **RMR** (Recurrent-Memory-Recurrent) puts one more LSTM on top of the block, so
# that the memory's readings can be carried forward in time. Neither feeds anything back into the lower
# LSTM, so both can be computed for all steps at once after the fused LSTM call.
#
# The implementation, `mlm.models.recurrent_memory.MemoryBlock`:

# %%
print(inspect.getsource(MemoryBlock.forward))
print(inspect.getsource(MemoryBlock.compose))

# %% [markdown]
# ## 2. The memory at a sentence start
#
# The paper trains one sentence at a time, and the memory never reaches into the previous sentence. At step
# $t < n$ it therefore holds only $t$ words. The paper does not pad it: it uses the slice $T[1:t]$ of the
# temporal matrix (section 4.2), so the oldest word of the sentence gets row 1 and the current word row $t$.
#
# All steps at once, the window is one `unfold` of the input ids over a front-padded copy, and a boolean
# mask marks the slots that hold a real word. Slot $j$ of step $t$ holds the input at position
# $t - (n-1) + j$, so the current word is always in the last slot. For a 6-word input and $n = 4$:

# %%
# NBVAL_CHECK_OUTPUT
tokens = torch.tensor([[11, 12, 13, 14, 15, 16]])  # <bos> w1 .. w5 as ids
ids, present = memory_window(tokens, mask=None, size=4)
for t in range(6):
    slots = [f"{int(i):>3}" if p else "  ." for i, p in zip(ids[0, t], present[0, t])]
    print(f"step {t}: memory slots {' '.join(slots)}   T rows (paper) {temporal_rows(6, 4, 'paper')[t].tolist()}"
          f"   T rows (code) {temporal_rows(6, 4, 'code')[t].tolist()}")

# %% [markdown]
# A dot is a missing slot: its attention weight is exactly zero, and the softmax runs over the present slots
# only. The T rows of missing slots are placeholders and never used.
#
# **The official code does it differently** (docs/design.md, section 10): it aligns the *newest* word with the
# *last* row of $T$ at every step (the "code" column above), so a row always means "so many words back",
# and it also adds a second temporal table $T_C$ to the values, $s_t = \sum_i p_i (c_i + T_{C,i})$. With the
# paper's slice, row 1 means "the first word of the sentence" for the first $n-1$ steps and "$n-1$ words
# back" afterwards. Both are options here (`model.memory_alignment = "paper"` or `"code"`); this chapter uses
# the paper's. The official code also composes linearly as $W h_t + s_t$ (`"linear-code"`), where the paper
# writes the plain sum.
#
# The step-by-step reference keeps the memory as a queue of word ids and loops over the words; the tests
# compare it with the fast head (outputs, attention weights and gradients) for all eight variants and the
# code's options. One of those comparisons:

# %%
# NBVAL_CHECK_OUTPUT
torch.manual_seed(0)
head = RecurrentMemoryHead(vocab_size=50, hidden_size=16, memory_size=5, temporal=True, composition="gating",
                           recurrent_top=True).double()
for p in head.parameters():
    torch.nn.init.uniform_(p, -0.5, 0.5)
h = torch.randn(3, 9, 16, dtype=torch.double)  # (batch, time, hidden): LSTM outputs of 3 sentences
words = torch.randint(1, 50, (3, 9))
pad = torch.ones(3, 9, dtype=torch.bool)
pad[1, 6:] = False
fast, slow = head(h, tokens=words, mask=pad), head.reference()(h, tokens=words, mask=pad)
real = pad[..., None]
print("fast == reference (outputs):", bool(torch.allclose(fast.output * real, slow.output * real, atol=1e-10)))
print("fast == reference (attention):", bool(torch.allclose(fast.attention * real, slow.attention * real, atol=1e-10)))
print("attention shape (batch, time, n):", tuple(fast.attention.shape))
print("first step: all weight on the current word:", bool((fast.attention[:, 0, -1] == 1).all()))

# %% [markdown]
# ## 3. The protocol
#
# Section 4.2: embeddings, LSTM states and both memory tables have $d = 128$; the memory holds $n = 15$
# words; the forget-gate bias starts at 1, every other weight uniform in $(-0.05, 0.05)$. Plain SGD at a
# learning rate of 1, halved after every epoch from the fifth, 15 epochs, gradients clipped at norm 5.
# Sentences of equal length are grouped into buckets and batched 20 at a time; each sentence is
# back-propagated in full and the LSTM state (and the memory) start from zero in every batch. The
# paper's corpora (news and Wikipedia text of about 25M words each) are not freely available; PTB is our
# main corpus. The paper reports two numbers on PTB with the same setting: 123.5 for RM(+tM-g) and 126.1
# for a 3-layer LSTM. The presets hold the eight variants and the 1-, 2- and 3-layer LSTMs:

# %%
print(mlm.get_preset("tran2016-ptb-rm-tm-g"))

# %% [markdown]
# Our bucketing sorts the sentences by length and cuts the sorted list into batches of 20, so a batch holds
# sentences of the same or nearly the same length (a little padding at the end of some rows; the memory
# and the loss ignore it). Every prediction of a sentence is scored, `<eos>` included.
#
# **What the official code does besides.** Tran et al.'s data loader (docs/design.md, section 10) keeps only
# sentences of 10 to 80 tokens and only words seen more than 5 times, and drops the sentences left over when a
# length bucket does not fill its last batch; on PTB that moves perplexity by about 1%. We score every sentence
# and keep PTB's own 10k-word vocabulary, so the paper's numbers below and ours are not measured on exactly the
# same token set.
#
# ## 4. Training the models
#
# **The reduced size** trains each model for 3 epochs on the first 30k tokens of PTB's training text (3% of
# it), in batches of 5 sentences instead of 20 (four times the updates for the same text), with the learning
# rate halved after every epoch from the first; validation and test use their first 10k tokens. That is
# about 820 updates. An earlier reduced size (20k tokens, batches of 20, about 120 updates) left every model
# far behind a bigram counted on the same tokens, so it showed models that had not learned. Even now only the
# shallow models get there: in the trials made for this edition (not rerun here) RMR(-tM-g), an LSTM on top of
# the block, stayed well behind the bigram at this budget, and the deeper models need more updates than a few
# minutes give. The reduced chapter therefore trains two models, **the 1-layer LSTM and RM(+tM-g)** (the same
# LSTM with the block on top), with three seeds each. The paper's PTB comparison is RM(+tM-g) against a
# *3-layer* LSTM; `size = "full"` trains all eight variants and the 1-, 2- and 3-layer LSTMs with the paper's
# settings.
#
# Every model is compared with the **count baseline of its own training tokens**
# (`mlm.baselines.count_baseline`): a unigram and an interpolated bigram counted on exactly the (history,
# target) events the models trained on, with the interpolation weight tuned on validation. A model that does
# not beat the bigram has learned less than word-pair counts, and nothing about its memory is worth reading.

# %%
from mlm.baselines import count_baseline

common = {"train.seed": seed, "train.device": device}
if data_dir:
    common["data.data_dir"] = data_dir
variants = {"LSTM 1 layer": tran_preset_name("ptb", "lstm", layers=1)}
if size == "full":
    variants.update({f"LSTM {k} layers": tran_preset_name("ptb", "lstm", layers=k) for k in (2, 3)})
for arch in ("rm", "rmr"):
    for temporal in (True, False):
        for composition in ("linear", "gating"):
            label = f"{arch.upper()}({'+' if temporal else '-'}tM-{composition[0]})"
            if size == "full" or label == "RM(+tM-g)":
                variants[label] = tran_preset_name("ptb", arch, temporal, composition)
ptb_seeds = (seed, seed + 1, seed + 2) if size == "reduced" else (seed,)  # three seeds of the two reduced models
runs, seed_runs = {}, {}
for label, preset in variants.items():
    for s in ptb_seeds:
        cfg = mlm.get_preset(preset, size, overrides={**common, "train.seed": s})
        seed_runs[label, s] = mlm.train(cfg, run_dir=Path(runs_dir) / f"{preset}-{size}-seed{s}")
    runs[label] = seed_runs[label, seed]  # the analyses below read seed 0
baseline = count_baseline(runs["LSTM 1 layer"].config, runs["LSTM 1 layer"].corpus)  # the same tokens for every model
whole_ptb = count_baseline(mlm.get_preset(tran_preset_name("ptb", "lstm", layers=1), overrides=common))

# %%
fig, ax = plt.subplots(figsize=(7, 4))
learning_curves({k: v.history for k, v in runs.items()}, title=f"PTB, {size} size", ax=ax)
ax.axhline(baseline["bigram_valid"], color="k", ls=":", lw=1, label="bigram, same tokens (valid)")
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# ### The Table 2 analogue

# %%
from mlm.claims import spread

rows = []
for label, run in runs.items():
    paper = run.config.paper
    rows.append({"model": label, "params": run.result["parameters"], "updates": run.result.get("updates"),
                 "valid": run.result["best_valid_ppl"], "test": run.result["test_ppl"], "paper_ptb": paper.get("test"),
                 "paper_news": paper["test_en_news"], "tests": [seed_runs[label, s].result["test_ppl"] for s in ptb_seeds]})
fmt = lambda x: "    -" if x is None else f"{x:6.1f}"  # noqa: E731
print(f"{'model':<30} {'params':>10} {'updates':>8} {'valid':>7} {'test':>7} {'test, all seeds':>22}"
      f"   {'paper PTB test':>14} {'paper news test':>15}")
for r in rows:
    print(f"{r['model']:<30} {r['params']:>10,} {r['updates'] or 0:>8,} {fmt(r['valid']):>7} {fmt(r['test']):>7} "
          f"{spread(r['tests']):>22}   {fmt(r['paper_ptb']):>14} {fmt(r['paper_news']):>15}")
print(f"{'unigram, same tokens':<30} {'':>10} {'':>8} {fmt(baseline['unigram_valid']):>7} {fmt(baseline['unigram_test']):>7}")
print(f"{'bigram, same tokens':<30} {'':>10} {'':>8} {fmt(baseline['bigram_valid']):>7} {fmt(baseline['bigram_test']):>7}")
print(f"{'bigram, whole PTB (reference)':<30} {'':>10} {'':>8} {fmt(whole_ptb['bigram_valid']):>7} {fmt(whole_ptb['bigram_test']):>7}"
      "   (chapter 00: 208.6)")
print(f"\nours: {size} runs (valid and test: seed {seed}; all seeds: mean ± sd), trained on {baseline['train_tokens']:,} tokens; test perplexity over "
      f"{baseline['test_tokens']:,} scored tokens")

# %%
by_label = {r["model"]: r for r in rows}
for r in rows:  # every model shown, every seed, has learned more than word-pair counts of its own training tokens
    assert max(r["tests"]) < baseline["bigram_test"], f"{r['model']} does not beat the bigram of its tokens {r['tests']}"
gaps = [a - b for a, b in zip(by_label["RM(+tM-g)"]["tests"], by_label["LSTM 1 layer"]["tests"])]
print(f"RM(+tM-g) minus the 1-layer LSTM, test perplexity, seed by seed: {', '.join(f'{g:+.1f}' for g in gaps)} "
      f"(RM has {by_label['RM(+tM-g)']['params'] / by_label['LSTM 1 layer']['params']:.1f} times the parameters)")
for r in rows:
    print(f"{r['model']:<14} {100 * (1 - max(r['tests']) / baseline['bigram_test']):4.1f}% or more below the bigram of its tokens")

# %% [markdown]
# Both models beat the bigram counted on their 30k training tokens in every seed, the LSTM by a wider
# margin. At this budget RM(+tM-g) is *behind* the 1-layer LSTM (the per-seed differences are printed above;
# the claims table at the end decides whether the three seeds agree). That is no verdict on the paper: the runs
# are far from converged, and RM has twice the parameters to train: its memory tables $M$ and $C$ are two more $|V| \times d$ matrices (2.6M parameters for PTB's 10k
# words, while the block's gates add only $6 d^2 \approx 0.1$M), and each word's rows learn only while that
# word is in memory, so on a small budget they lag the rest of the network. *paper PTB test* are the two PTB
# numbers of section 4.3 (15 epochs on all of PTB); *paper news test* is Table 2's English column, on a
# different corpus (26M words of news, 77k-word vocabulary). Neither is reachable from 820 updates on 3% of
# PTB: the reduced run is evidence that the code trains models that learn, not of how the variants rank.
#
# ### Longer runs
#
# Does the memory help once the models see more data? We trained the 1-layer LSTM, RM(+tM-g) and RMR(-tM-g)
# on the **whole** PTB training set (about 30 times the reduced slice) for the epochs printed below (learning rate 1
# in the first, halved after it, batches of 20), everything else as in the paper, with
# `python -m mlm reproduce stored --only 'tran2016-ptb-128-whole/*'` (one thread, one model after the other,
# on the shared machine). The results are stored in `results/tran2016-ptb-128-whole/`; the cell reads them,
# it does not retrain. Their floor is the bigram counted on the whole training set (printed in the table above).

# %%
longer_dir = Path("../results/tran2016-ptb-128-whole")
longer = {}
for label in ("lstm1", "rm-tm-g", "rmr-notm-g"):
    folder = longer_dir / label
    if (folder / "result.json").exists():
        longer[label] = (json.loads((folder / "result.json").read_text()),
                         [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()])
for label, (res, history) in longer.items():
    print(f"{label:<10} whole PTB, {len(history)} epoch(s), 1 seed: best valid {res['best_valid_ppl']:6.1f}, "
          f"test {res['test_ppl']:6.1f} ({res['parameters']:,} parameters, {res['train_seconds'] / 60:.0f} min on {res['device']})")
    assert res["test_ppl"] < whole_ptb["bigram_test"], f"{label} does not beat the whole-PTB bigram"
print(f"{'bigram':<10} whole PTB: test {whole_ptb['bigram_test']:6.1f}")
if not longer:
    print("no stored longer runs found in", longer_dir)
if "lstm1" in longer and "rm-tm-g" in longer:
    long_gap = longer["rm-tm-g"][0]["test_ppl"] - longer["lstm1"][0]["test_ppl"]
    ratio = longer["rm-tm-g"][0]["parameters"] / longer["lstm1"][0]["parameters"]
    print(f"RM(+tM-g) minus the 1-layer LSTM, test perplexity after the same training (1 seed each): {long_gap:+.1f}")
    print(f"parameters: RM(+tM-g) {longer['rm-tm-g'][0]['parameters']:,}, 1-layer LSTM {longer['lstm1'][0]['parameters']:,} "
          f"({ratio:.1f} times as many in RM)")
    assert long_gap < 0, "the note below says RM(+tM-g) is ahead of the LSTM after the same training"

# %% [markdown]
# On the whole training set every model is far better than in the reduced runs and far better than the
# whole-PTB bigram. After two epochs RM(+tM-g) is ahead of the **1-layer** LSTM by the margin printed above,
# but that LSTM has about half RM's parameters (the memory tables), and the paper's PTB comparison is with a
# **3-layer** LSTM (126.1 against RM's 123.5, after 15 epochs). RMR(-tM-g) is still well behind both. These are
# one seed each, two of the paper's fifteen epochs: a first indication, not the paper's comparison.
#
# ## 5. What does the memory attend to?
#
# Section 5 of the paper reads the attention weights of trained models. We repeat three of its analyses on
# the test set with the reduced RM(+tM-g) (it beats its bigram above) and with the stored whole-PTB RM(+tM-g)
# and RMR(-tM-g) (they beat the whole-PTB bigram), counting only predictions whose memory is full
# (step $t \ge n$), so that every position $-15 \dots -1$ exists. The yardstick is **uniform attention**: a
# block that has learned nothing about where to look spreads $1/15 \approx 0.067$ over every slot.
#
# **Average attention per position (Figure 3).** Position $-1$ is the current word, $-15$ the oldest in memory.

# %%
test_batches = {label: build_batches(runs[label].config, runs[label].corpus, "test")
                for label in ("RM(+tM-g)", "RMR(-tM-g)") if label in runs}  # RMR: full size only
collected = {label: collect_memory_attention(runs[label].model, batches) for label, batches in test_batches.items()}
positions = list(range(-15, 0))
uniform = 1 / len(positions)
fig, ax = plt.subplots(figsize=(8, 3.5))
for label, c in collected.items():
    ax.plot(positions, average_by_position(c), "-o", ms=3, label=f"{label}, {size}")
stored_all = {label: json.loads((longer_dir / name / "attention.json").read_text())
              for label, name in (("RM(+tM-g)", "rm-tm-g"), ("RMR(-tM-g)", "rmr-notm-g"))
              if (longer_dir / name / "attention.json").exists()}
for label, stored in stored_all.items():
    ax.plot(positions, stored["average_by_position"], "--o", ms=3, label=f"{label}, whole PTB")
stored_attention = stored_all.get("RM(+tM-g)")
ax.axhline(uniform, color="k", ls=":", lw=1, label="uniform attention (1/15)")
ax.set_xlabel("memory position (-1 = current word)")
ax.set_ylabel("mean attention weight")
ax.set_title("Average attention per memory position (Figure 3 analogue)")
ax.legend(fontsize=8)
ax.grid(alpha=0.3)
plt.show()


def describe(avg):
    """(weight on the current word, weight on the 7 oldest positions, peak position, peak / uniform)."""
    return avg[-1], sum(avg[:7]), positions[avg.index(max(avg))], max(avg) / uniform


attention_summary = {f"{label}, {size}": describe(average_by_position(c)) for label, c in collected.items()}
attention_summary.update({f"{label}, whole PTB": describe(s["average_by_position"]) for label, s in stored_all.items()})
print(f"uniform attention: {uniform:.3f} per position, {7 * uniform:.2f} on the 7 oldest together")
for label, (current, oldest, peak, ratio) in attention_summary.items():
    print(f"{label:<22} current word {current:.3f} ({current / uniform:.1f} x uniform), 7 oldest together {oldest:.2f}, "
          f"peak at position {peak} ({ratio:.1f} x uniform)")
if "RM(+tM-g)" in stored_all:  # section 8 describes this shape
    avg = stored_all["RM(+tM-g)"]["average_by_position"]
    assert avg.index(max(avg)) == len(avg) - 1 and avg[-2] > avg[0], "the whole-PTB RM no longer peaks on the current word"
    if "RMR(-tM-g)" in stored_all:  # and that RMR is the less concentrated one after the same training
        assert stored_all["RMR(-tM-g)"]["average_by_position"][-1] < avg[-1], "section 8's RM/RMR note is out of date"

# %% [markdown]
# The paper's trained models put the most weight on the current word and less and less on older positions.
# The whole-PTB RM(+tM-g) has that shape clearly: several times the uniform weight on the current word and far
# less than uniform on the oldest positions. The whole-PTB RMR(-tM-g) is close to uniform except on the
# current word. The reduced RM has the same shape after 820 updates, even more peaked on the current word (the
# printed lines give each curve against uniform); a peaked attention does not mean the block adds anything the
# LSTM state does not already carry, and at this size RM trails the LSTM (section 4). Keep in mind a
# detail of the paper's alignment: during the first $n-1$ steps of every sentence, row 1 of $T$ belongs to the
# *first word of the sentence*, and only later to the word 15 positions back; the curves average full-memory
# steps only, but what $T$'s first row learned at the sentence starts carries over to position $-15$.
#
# **Attention of 100 sampled words (Figure 4).** Each column is one randomly drawn test prediction, each row a
# memory position, the current word at the bottom as in the paper. The colour is the *deviation from uniform
# attention* (weight minus 1/15): red above uniform, blue below, white uniform; a model that has not learned
# where to look is a white picture.

# %%
stored_sampled = torch.tensor(stored_attention["sampled_weights"]) if stored_attention else None
panels = [(f"RM(+tM-g), {size}: 100 sampled test words", collected["RM(+tM-g)"].weights[
    sample_words(collected["RM(+tM-g)"], 100, seed=seed)])] if "RM(+tM-g)" in collected else []
if stored_sampled is not None:
    panels.append(("RM(+tM-g), whole PTB", stored_sampled))
fig, axes = plt.subplots(1, len(panels), figsize=(7 * len(panels), 3.5), squeeze=False)
for ax, (title, weights) in zip(axes[0], panels):
    deviation = (weights - uniform).T.numpy()  # (n, 100)
    limit = max(abs(deviation).max(), 1e-6)
    image = ax.imshow(deviation, cmap="RdBu_r", aspect="auto", vmin=-limit, vmax=limit)
    ax.set_title(title, fontsize=10)
    ax.set_yticks([0, 7, 14])
    ax.set_yticklabels(["-15", "-8", "-1"])
    ax.set_xlabel("sampled word")
    ax.set_ylabel("memory position")
    plt.colorbar(image, ax=ax, fraction=0.03, label="weight - 1/15")
plt.tight_layout()
plt.show()
for title, weights in panels:
    tv = 0.5 * (weights - uniform).abs().sum(1)  # (100,) total-variation distance of each column from uniform
    print(f"{title}: distance from uniform (total variation, 0 = uniform, 1 = one slot) mean {tv.mean():.2f}, "
          f"median {tv.median():.2f}")

# %% [markdown]
# **Attention on a distant word (Figure 5).** The predictions whose most attended word lies at least 7
# positions back (more than six to the left of the word to predict), with the model's top five guesses and
# their log-probabilities. We keep one example per (attended word, predicted word) pair.

# %%
def show_examples(examples):
    for e in examples:
        words = " ".join(f"[{w}]" if i == len(e["memory"]) - e["distance"] else w for i, w in enumerate(e["memory"]))
        top = ", ".join(f"{w} ({lp:.1f})" for w, lp in e["top"])
        print(f"{words}  ->  {e['target']} ({e['target_log_prob']:.1f})")
        print(f"    attends '{e['attended']}' {e['distance']} back with weight {e['weight']:.2f}; top 5: {top}")


vocab = runs["RM(+tM-g)"].corpus.vocab
print(f"RM(+tM-g), {size}:")
show_examples(distant_examples(collected["RM(+tM-g)"], vocab, count=4, min_weight=0.2))
if stored_attention:
    print("\nRM(+tM-g), whole PTB:")
    distinct = {e["attended"]: e for e in reversed(stored_attention["distant_examples"])}  # one per attended word
    show_examples(sorted(distinct.values(), key=lambda e: -e["weight"])[:4])

# %% [markdown]
# **Frequent pairs or more (Table 3)?** If the distant attention only memorised frequent co-occurrences, the
# (attended word, predicted word) pairs would be frequent in the training data, more so at some distances
# than others. For each distance $d \ge 7$ we count how often each such pair occurs $d$ positions apart in
# the training sentences of the model (its 30k-token slice in the reduced size), and average.

# %%
rm_run = runs["RM(+tM-g)"]
train_ids = truncate_lines(rm_run.corpus.ids("train"), rm_run.config.data.max_train_tokens)  # what it trained on
freq = pair_frequency_by_distance(collected["RM(+tM-g)"], train_ids)
print("distance d      " + " ".join(f"{d:>6}" for d in freq))
print("mean frequency  " + " ".join(f"{m:>6.1f}" for m, _ in freq.values()))
print("predictions     " + " ".join(f"{k:>6}" for _, k in freq.values()))
if stored_attention:
    stored_freq = stored_attention["pair_frequency_by_distance"]
    print("\nRM(+tM-g), whole PTB (pairs counted in the whole training set):")
    print("distance d      " + " ".join(f"{d:>6}" for d in stored_freq))
    print("mean frequency  " + " ".join(f"{m:>6.1f}" for m, _ in stored_freq.values()))
print("paper (German, Table 3): d 7-15, mean frequency 54 63 42 67 87 47 67 44 24")

# %% [markdown]
# ### Memory you can watch work: recall at a distance
#
# On PTB the memory is worth a few points of perplexity at best, and the analyses above have to squint to see
# it. A task built so that only memory helps makes it plain. In the **key-value recall** task
# (`mlm/data/tasks.py`) a line names a key with a value, then filler words and other pairs, then the same key
# again; the word after it must be the value said $d$ steps before. Values are drawn at random, so nothing but
# the earlier pair predicts this *critical* token: a model that cannot see the source is at chance, one in ten.
#
# The Memory Block holds the last $n = 15$ input words. When the key comes back, the source value is among them
# if $d \le 15$ and has left the memory if $d > 15$; the LSTM under the block could still carry it in its
# state. We train RM(+tM-g) and the plain LSTM at the same small size (64 units, one layer) on 20,000 lines with
# $d$ drawn from 2 to 60 (presets `recall-rm` and `recall-lstm`, one seed, Adam, 15 epochs) and score the
# critical tokens of 1,000 test lines by $d$. A bigram count model of the same lines marks chance from below.

# %%
from mlm.analysis.memory_block import memory_heatmap, probe_memory_sentence
from mlm.long_range import recall_comparison, source_attention
from mlm.plots import recall_by_distance

comparison = recall_comparison({"LSTM": "recall-lstm", "RM(+tM-g)": "recall-rm"}, size, runs_dir, seed, device)
recall_runs, task, recall, chance = comparison.runs, comparison.task, comparison.scores, comparison.chance
n_memory = recall_runs["RM(+tM-g)"].config.model.memory_size
print(f"critical tokens: {recall['LSTM'].totals['count']} test lines; chance {chance:.2f}")
print(f"{'model':<16}{'all d':>8}{f'd <= {n_memory}':>10}{f'd > {n_memory + 5}':>10}{'train s':>9}")
for label, s in recall.items():
    seconds = recall_runs[label].result.get("train_seconds") if label in recall_runs else None
    print(f"{label:<16}{s.accuracy:>8.2f}{s.accuracy_within(0, n_memory):>10.2f}{s.accuracy_within(n_memory + 6):>10.2f}"
          f"{seconds or 0:>9.0f}")
recall_by_distance(recall, chance, reach={"RM(+tM-g)": n_memory},
                   title=f"Key-value recall: accuracy on the critical token by distance (one seed, {size})")
plt.show()

# %% [markdown]
# **Where the memory looks.** For every test line whose source is still in memory ($d \le 15$), the weight
# the block puts on the source word when the key comes back, against uniform attention over the words in
# memory, and how often the source gets the largest weight of all slots.

# %%
found = source_attention(recall_runs["RM(+tM-g)"].model, task, "test")
reachable = [f for f in found if f["reachable"]]
print(f"{len(reachable)} critical tokens with the source in memory: mean weight on the source "
      f"{sum(f['weight'] for f in reachable) / len(reachable):.2f} (uniform {sum(f['uniform'] for f in reachable) / len(reachable):.2f}); "
      f"the source has the largest weight in {sum(f['is_max'] for f in reachable) / len(reachable):.0%} of them")
example = next(c for c in task.critical["test"] if c.distance == 9)
words = task.corpus.lines["test"][example.line][:example.position + 1]
probe = probe_memory_sentence(recall_runs["RM(+tM-g)"].model, task.corpus.vocab, words)
memory_heatmap(probe, title=f"RM(+tM-g) on one test line: the row that predicts {words[-1]!r} after the key "
               f"{words[-2]!r} should weigh the earlier {words[-1]!r}, 9 steps back")
plt.show()

# %% [markdown]
# **What this shows** (one seed each, 15 epochs, not converged: the validation perplexity was still falling).
# While the source is in memory, the Memory Block recalls most values; once the source has left the memory,
# RM drops to chance, at exactly the block's reach, while the plain LSTM keeps recalling far above chance at
# every distance. (How well the LSTM does varies a lot from run to run at this budget: it learns the task
# abruptly, after epochs at chance; the same seed on one or two CPU threads gave noticeably different
# accuracies. So one seed does not rank RM and the LSTM where both can reach the source.) The attention does what it was built for: when the key
# comes back, the block puts about half its weight on the source word, several times the uniform share, and the
# source gets the largest weight in most cases (in the example above, the row that predicts the value looks
# straight at its earlier occurrence). Why does RM not fall back on its own LSTM beyond $d = 15$? For short
# distances the memory is the easier path, and within this budget the LSTM under it does not learn to carry
# the pair. In miniature this is the chapter's picture of the Memory Block: it reads the recent words directly;
# it does not extend how far back the model can remember.

# %%
# The paragraph above describes these numbers; the assertions keep it true.
rm_near, rm_far = recall["RM(+tM-g)"].accuracy_within(0, n_memory), recall["RM(+tM-g)"].accuracy_within(n_memory + 6)
lstm_far = recall["LSTM"].accuracy_within(n_memory + 6)
assert rm_near > 0.5 and rm_far < 2 * chance and lstm_far > max(4 * chance, rm_far + 0.3), (rm_near, rm_far, lstm_far)
source_weight = sum(f["weight"] for f in reachable) / len(reachable)
assert source_weight > 3 * sum(f["uniform"] for f in reachable) / len(reachable) and 0.35 < source_weight < 0.65
assert sum(f["is_max"] for f in reachable) > 0.5 * len(reachable)
assert probe["attention"][example.position, example.position - 9 + 1] == probe["attention"][example.position].max()

# %% [markdown]
# ## 6. Sentence completion
#
# The MSR Sentence Completion Challenge (Zweig & Burges, 2012) takes 1,040 sentences from Sherlock Holmes
# novels, removes one content word from each and offers five candidates; the candidates were chosen so that
# the words right around the gap do not give the answer away. A language model answers by filling in each
# candidate and picking the sentence it finds most probable (`mlm.completion`); chance is 20%. The paper
# trains on the challenge's 522 Gutenberg novels (47M tokens, a 64k vocabulary), with a 3-layer LSTM as the
# baseline and RM(+tM-g) on top of three LSTM layers, $d = 256$ or $512$, dropout 0.3 (its Table 4).
#
# Our data are a 53-novel subset of those novels (`mlm.data.holmes`: Gutenberg headers stripped, sentences
# split, tokenized like the questions). In the `reduced` size both models have one LSTM layer of 128 units
# and train for 2 epochs on the first 50k tokens (batches of 5, as above). The vocabulary is every word seen
# **at least twice** in those tokens; the words seen once become `<unk>`, so that `<unk>` occurs in training
# and a rare candidate is scored by a trained `<unk>` (Tran's loader does the same with a threshold of 5). Two
# count models trained on the same Holmes tokens are the floor: a **unigram** (the candidates' frequencies,
# no context) and the **interpolated bigram** of section 4. One seed per model (the budget went to PTB's seeds).
# `full` uses the paper's three layers, $d = 256$ and dropout 0.3 on the whole subset.

# %%
from collections import Counter

from mlm.claims import spread
from mlm.completion import UnigramLM, bigram_lm, binomial_stderr, complete, format_question
from mlm.data.holmes import load_holmes, load_questions, tokenize

completion_seeds = (seed,)
if size == "reduced":
    holmes_tokens = 50_000
    counts = Counter(w for line in load_holmes(data_dir, vocab_size=None, max_train_tokens=holmes_tokens).lines["train"]
                     for w in line)
    holmes = {"data.corpus": "holmes", "data.max_train_tokens": holmes_tokens, "data.max_eval_tokens": 10_000,
              "data.vocab_size": sum(c >= 2 for c in counts.values()), "train.epochs": 2, "train.decay_start": 1}
    print(f"{len(counts):,} word types in the first {holmes_tokens:,} training tokens; "
          f"{holmes['data.vocab_size']:,} seen at least twice form the vocabulary; "
          f"{sum(c for c in counts.values() if c < 2):,} training tokens become <unk>")
else:
    holmes = {"data.corpus": "holmes", "model.embed_size": 256, "model.hidden_size": 256, "model.num_layers": 3,
              "model.dropout": 0.3}
completion_models = {"LSTM": "tran2016-ptb-lstm1" if size == "reduced" else "tran2016-ptb-lstm3",
                     "RM(+tM-g)": "tran2016-ptb-rm-tm-g"}
questions = load_questions(data_dir)
completion_runs, completion = {}, {}
for label, preset in completion_models.items():
    for s in completion_seeds:
        cfg = mlm.get_preset(preset, size, overrides={**common, **holmes, "train.seed": s})
        completion_runs[label, s] = mlm.train(cfg, run_dir=Path(runs_dir) / f"{preset}-holmes-{size}-seed{s}")
        completion[label, s] = complete(completion_runs[label, s].model, completion_runs[label, s].corpus.vocab, questions)
holmes_run = completion_runs["LSTM", seed]
holmes_baseline = count_baseline(holmes_run.config, holmes_run.corpus)
vocab_h = holmes_run.corpus.vocab
count_completion = {"unigram": complete(UnigramLM(vocab_h), vocab_h, questions),
                    "bigram": complete(bigram_lm(holmes_run.config, holmes_run.corpus), vocab_h, questions)}

# %%
paper_table4 = {"LSTM": "56.0 (3 layers, d=256)", "RM(+tM-g)": "64.3 (n=15, d=256); 69.2 (d=512)"}
accuracy = {label: [100 * completion[label, s].accuracy for s in completion_seeds] for label in completion_models}
holmes_ppl = {label: [completion_runs[label, s].result["test_ppl"] for s in completion_seeds] for label in completion_models}
print(f"{'model':<11} {'params':>10} {'updates':>8} {'Holmes test ppl':>22} {'accuracy %':>22}   paper (Table 4)")
for label in completion_models:
    run = completion_runs[label, seed]
    print(f"{label:<11} {run.result['parameters']:>10,} {run.result.get('updates') or 0:>8,} {spread(holmes_ppl[label]):>22} "
          f"{spread(accuracy[label]):>22}   {paper_table4[label]}")
stderr = 100 * binomial_stderr(count_completion["bigram"].accuracy, len(questions))
for label, key in (("unigram", "unigram_test"), ("bigram", "bigram_test")):
    print(f"{label + ' (counts)':<11} {'':>10} {'':>8} {holmes_baseline[key]:>22.1f} "
          f"{100 * count_completion[label].accuracy:>22.1f}")
print(f"\nchance 20.0%; {len(questions)} questions; one accuracy has a binomial standard error of about {stderr:.1f} points")
oov = completion["LSTM", seed].notes["oov"]
print(f"with our vocabulary of {len(vocab_h):,} symbols, {oov['answer_oov']} correct answers and "
      f"{100 * oov['candidate_oov_rate']:.0f}% of all candidates are out of vocabulary (read as the trained <unk>)")
in_vocab = lambda word: all(w in vocab_h for w in tokenize(word))  # noqa: E731
known = [i for i, q in enumerate(questions) if all(in_vocab(c) for c in q.candidates)]
merged = sum(len({tuple(vocab_h.encode(tokenize(c))) for c in q.candidates}) < 5 for q in questions)
print(f"{merged} questions have two or more candidates that read the same after the vocabulary lookup (all <unk>)")
on_known = {label: [100 * sum(completion[label, s].details[i].correct for i in known) / max(len(known), 1)
                    for s in completion_seeds] for label in completion_models}
on_known.update({label: [100 * sum(r.details[i].correct for i in known) / max(len(known), 1)]
                 for label, r in count_completion.items()})
print(f"on the {len(known)} questions whose five candidates are all in the vocabulary:")
for label, values in on_known.items():
    print(f"    {label:<11} {spread(values)}%")

# %%
for label in completion_models:  # the Holmes models also beat the bigram of their own tokens
    assert max(holmes_ppl[label]) < holmes_baseline["bigram_test"], (label, holmes_ppl[label], holmes_baseline)
for result in completion.values():  # a trained model does at least as well as chance, give or take noise
    assert result.total == 1040 and 0.10 < result.accuracy < 0.95, result
best_count = max(100 * r.accuracy for r in count_completion.values())
beats_counts = {label: min(values) > best_count for label, values in accuracy.items()}
print("above the better count model "
      f"({best_count:.1f}%): " + ", ".join(f"{label} {'yes' if v else 'no'}" for label, v in beats_counts.items()))

# %% [markdown]
# "Holmes test ppl" is the perplexity of the 1,040 correct sentences (the first 10k tokens in the reduced size)
# over our own vocabulary; it is not comparable across vocabularies, but within this table every model and the
# two count models share it. A candidate outside the vocabulary is read as `<unk>`, now a trained symbol that
# stands for the rare words, and candidates that are all `<unk>` get the same score (the first one wins the
# tie, which is right one time in five). The challenge picks its candidates to be similar in frequency, so a
# unigram should be near chance; the bigram sees one word of context on each side of the gap. The neural models
# are worth something here only where they beat both count models; the line above says whether they do.
# **At this size the test cannot separate anything:** 50k tokens hold too few of the challenge's rare words,
# most candidates are `<unk>`, and in most questions two or more candidates tie (printed above), so every
# model, count or neural, lands near chance whatever it learned; the Holmes perplexities show that the
# networks did learn the text. With about 0.1% of the paper's training text and a 1-layer network, the paper's
# 56-69% is out of reach: this section tests the pipeline. Questions where the two models (seed 0) disagree and the
# answer and both choices are in the vocabulary (Figure 7 analogue; `*` marks the answer, `<` the model's
# choice, with the sentence log-probabilities):

# %%
shown = 0
for q, a, b in zip(questions, completion["LSTM", seed].details, completion["RM(+tM-g)", seed].details):
    readable = all(in_vocab(q.candidates[k]) for k in (q.answer, a.chosen, b.chosen))
    if a.chosen != b.chosen and (a.correct or b.correct) and readable and shown < 3:
        print("LSTM:     " + format_question(q, a).replace("\n", "\n          "))
        print("RM(+tM-g):" + format_question(q, b).split("\n", 1)[1])
        print()
        shown += 1

# %% [markdown]
# ## 7. Explore
#
# Type a sentence (PTB style: lower case, numbers as `N`) or pick one. The heatmap shows, for every predicted
# word (rows), the attention over the words in memory (columns; the current word on the diagonal, at most 15
# words back). The colour is scaled per row (1 = the row's largest weight), and each row label gives that
# largest weight and the uniform weight $1/k$ over the $k$ words in memory, so a row can be read against
# uniform attention. The table lists the most attended word and the top five predictions. (When the chapter
# runs headless, the first example is drawn.)

# %%
from mlm.widgets import memory_explorer

ptb = runs["RM(+tM-g)"].corpus
examples = [" ".join(ptb.lines["test"][i][:25]) for i in (12, 40)] + [
    "the company said it expects to report a loss for the third quarter because of higher costs"]
memory_explorer({label: runs[label].model for label in ("RM(+tM-g)", "RMR(-tM-g)") if label in runs}, vocab, examples)

# %% [markdown]
# ## 8. What the reproduction shows
#
# * **What the reduced run is evidence of.** That the code trains a 1-layer LSTM and RM(+tM-g) that learn:
#   both beat a bigram counted on their 30k training tokens, and the memory's attention can be read and
#   compared with uniform attention. It is **not** evidence of how the variants rank: 820 updates on 3% of PTB,
#   three seeds, not converged, where the paper separates models by a few perplexity points after 15 epochs on
#   corpora 25 times larger than PTB. The 3-layer LSTM and RMR are not trained at this size because they need
#   more updates than it gives; `size = "full"` trains all eight variants and the three LSTMs.
# * **The memory doubles the parameters.** $M$ and $C$ are two more vocabulary-sized tables. Each word's rows
#   learn only while that word is in memory, so on a small corpus with a short budget they train more slowly
#   than the rest of the network, and a comparison with a 1-layer LSTM compares with a model of half the size.
# * **Whole PTB, two epochs.** With about 30 times the reduced data (section 4, "Longer runs") RM(+tM-g) is ahead of
#   the 1-layer LSTM (about half its parameters), one seed each; the paper's PTB comparison is with a 3-layer
#   LSTM after 15 epochs. Its attention has the paper's shape, peaked on the current word and decaying to the
#   left, far from uniform (section 5). Many distant-attention examples of the whole-PTB model involve the number
#   patterns of financial news (PTB's `N`), where the paper found German verb particles and fixed expressions.
# * **Attention positions.** The paper finds the attention concentrated on the current word and decaying to
#   the left, more so for RMR than for RM. After two epochs on the whole of PTB our RMR is the other way round,
#   close to uniform except on the current word, and its perplexity is well behind RM's; its top LSTM may simply
#   not have learned to use the block yet. In the paper's alignment the first row of $T$ doubles as "first word
#   of the sentence" (see the note in section 5).
# * **Sentence start.** We follow the paper's $T[1:t]$ slice and offer the official code's alignment (newest
#   word on the last row, plus a temporal table on the values) as `model.memory_alignment="code"`; the paper
#   does not say which its numbers came from. The paper's Eq. 4-6 have no biases; we give each gate a bias,
#   as the official code and the GRU do.
# * **Data handling.** Tran's loader keeps sentences of 10-80 tokens and words seen more than 5 times and drops
#   each length bucket's leftover sentences (about 1% on PTB perplexity); we keep every sentence.
# * **Full size.** `size = "full"` trains the paper's setting on the whole of PTB for 15 epochs; on this
#   edition's shared 2-core CPU one epoch of a 1-layer model took several minutes (the stored whole-PTB runs
#   above record their times). The full 15-epoch runs have not been made.
# * **Sentence completion.** The paper's 69.2% comes from 47M tokens of training text and $d = 512$; our
#   reduced models see 50k tokens of a 53-novel subset, whose vocabulary leaves most candidates `<unk>` and
#   most questions with tied candidates: the reduced test cannot tell the models from unigram and bigram counts
#   or from chance. It needs a much larger slice of the novels (and a larger vocabulary) than a few minutes train.
#
# Paper: PTB test perplexity 123.5 for RM(+tM-g) and 126.1 for the 3-layer LSTM (section 4.3); Table 2 (English
# news) ranks RM(+tM-l) 127.2 and RM(+tM-g) 128.8 best, the 3-layer LSTM at 136.6, the best RMR at 131.2;
# Table 4 (sentence completion) 56.0% for the LSTM and 64.3% / 69.2% for RM(+tM-g) with d = 256 / 512.
#
# ### Claims
#
# Each verdict is computed from the numbers above (`mlm.claims`): one seed ranks nothing, and a run stopped
# after a few epochs is "not converged".
#
# The last rows of the table are the paper's claims at a width that converges on a CPU, read from the runs
# that `python -m mlm reproduce cpu` stores in `results/` (the README's *Reproduction status* shows the same
# rows). A claim whose runs are not stored yet says so, with the command that trains them.

# %%
from mlm.claims import CONTRADICTED, OVERLAP, SUPPORTED, UNTESTABLE, Claim, show_claims, verdict
from mlm.manifests import cpu
from mlm.table import stored_claims


def shape_verdict(avg):
    """Peaked on the current word (over twice uniform) and decaying over the three newest positions?"""
    return avg.index(max(avg)) == len(avg) - 1 and avg[-1] > 2 * uniform and avg[-1] > avg[-2] > avg[-3]


rm_red, lstm_red = by_label["RM(+tM-g)"]["tests"], by_label["LSTM 1 layer"]["tests"]
claims = [Claim("RM(+tM-g) has a lower PTB test perplexity than the LSTM (section 4.3: 123.5 vs 126.1 for a "
                "3-layer LSTM; Table 2)",
                f"reduced (30k tokens, {by_label['RM(+tM-g)']['updates']} updates): RM {spread(rm_red)} vs 1-layer "
                f"LSTM {spread(lstm_red)} (bigram {baseline['bigram_test']:.1f}); RM has "
                f"{by_label['RM(+tM-g)']['params'] / by_label['LSTM 1 layer']['params']:.1f}x the parameters"
                + (f"; whole PTB, 2 epochs, 1 seed: {longer['rm-tm-g'][0]['test_ppl']:.1f} vs "
                   f"{longer['lstm1'][0]['test_ppl']:.1f} (a 1-layer LSTM of half the parameters)" if "lstm1" in longer else ""),
                verdict(rm_red, lstm_red, converged=False))]
if "rmr-notm-g" in longer:
    claims.append(Claim("On English, RM beats RMR (Table 2: best RM 127.2, best RMR 131.2)",
                        f"whole PTB, 2 epochs, 1 seed: RM(+tM-g) {longer['rm-tm-g'][0]['test_ppl']:.1f} vs RMR(-tM-g) "
                        f"{longer['rmr-notm-g'][0]['test_ppl']:.1f}; RMR is not trained at the reduced size",
                        verdict([longer["rm-tm-g"][0]["test_ppl"]], [longer["rmr-notm-g"][0]["test_ppl"]], converged=False)))
shapes = {label: shape_verdict(avg) for label, avg in
          [(f"{label}, {size}", average_by_position(c)) for label, c in collected.items()] +
          [(f"{label}, whole PTB", s["average_by_position"]) for label, s in stored_all.items()]}
rm_shapes = {k: v for k, v in shapes.items() if k.startswith("RM(")}
claims.append(Claim("The memory's attention is far from uniform: it peaks on the current word and decays to the "
                    "left (Figure 3)",
                    "; ".join(f"{label}: current word {attention_summary[label][0]:.3f} = "
                              f"{attention_summary[label][0] / uniform:.1f}x uniform, 7 oldest {attention_summary[label][1]:.2f} "
                              f"(uniform {7 * uniform:.2f})" for label in rm_shapes) + "; one seed each",
                    (SUPPORTED if all(rm_shapes.values()) else CONTRADICTED if not any(rm_shapes.values()) else
                     "supported by the whole-PTB model only") + ", not converged"))
if "RMR(-tM-g)" in stored_all and "RM(+tM-g)" in stored_all:
    rmr_more = stored_all["RMR(-tM-g)"]["average_by_position"][-1] > stored_all["RM(+tM-g)"]["average_by_position"][-1]
    claims.append(Claim("RMR concentrates more weight on the current word than RM (section 5)",
                        f"whole PTB, 2 epochs, 1 seed: current word RMR(-tM-g) "
                        f"{stored_all['RMR(-tM-g)']['average_by_position'][-1]:.3f} vs RM(+tM-g) "
                        f"{stored_all['RM(+tM-g)']['average_by_position'][-1]:.3f}",
                        f"{SUPPORTED if rmr_more else CONTRADICTED} (one seed), not converged"))
claims.append(Claim("Attention to distant words is not explained by frequent word pairs (Table 3)",
                    "the pair frequencies by distance are printed in section 5 for the reduced and whole-PTB RM; "
                    "the paper's analysis is on German with 25M words, and our few distant examples are mostly PTB's N",
                    UNTESTABLE))
errors = {label: [100 - a for a in values] for label, values in accuracy.items()}
tied = merged / len(questions)  # share of questions where the vocabulary merges candidates
completion_evidence = (f"Holmes, 50k tokens, 1-layer d=128: RM {spread(accuracy['RM(+tM-g)'])}% vs LSTM "
                       f"{spread(accuracy['LSTM'])}% (chance 20%, unigram {100 * count_completion['unigram'].accuracy:.1f}%, "
                       f"bigram {100 * count_completion['bigram'].accuracy:.1f}%); {100 * tied:.0f}% of the questions "
                       f"have candidates merged by the vocabulary")
claims.append(Claim("RM(+tM-g) answers more completion questions than the LSTM (Table 4: 64.3-69.2% vs 56.0%)",
                    completion_evidence,
                    f"{UNTESTABLE} (ties)" if tied > 0.5 else verdict(errors["RM(+tM-g)"], errors["LSTM"], converged=False)))
above = [min(accuracy[label]) > best_count for label in accuracy]
below = [max(accuracy[label]) < best_count for label in accuracy]
claims.append(Claim("(our check) The neural models complete sentences better than word counts of the same text",
                    f"LSTM {spread(accuracy['LSTM'])}% and RM {spread(accuracy['RM(+tM-g)'])}% against the better count "
                    f"model, {best_count:.1f}%; {100 * tied:.0f}% of the questions have merged candidates",
                    f"{UNTESTABLE} (ties)" if tied > 0.5 else
                    (SUPPORTED if all(above) else CONTRADICTED if all(below) else OVERLAP) + ", not converged"))
claims += stored_claims([c for c in cpu.CLAIMS if c.chapter == "04"], "cpu", "../results")  # converged on CPU
show_claims(claims);

# %% [markdown]
# **Exercise 04** ([`exercises/ex04_memory_block.py`](../exercises/ex04_memory_block.py)): the Memory Block
# yourself, its window, the temporal rows, the attention of Eq. 2-3 and the gate, checked with
# `python -m exercises.grader 04`.

# %%
headline = record("04_recurrent_memory", {
    "baseline_test_ppl": round(baseline["bigram_test"], 1),
    "unigram_test_ppl": round(baseline["unigram_test"], 1),
    **{f"{r['model']}_test_ppl": round(r["test"], 1) for r in rows},
    "whole_ptb_bigram_test_ppl": round(whole_ptb["bigram_test"], 1),
    "holmes_baseline_test_ppl": round(holmes_baseline["bigram_test"], 1),
    **{f"holmes_{label}_test_ppl": round(sum(v) / len(v), 1) for label, v in holmes_ppl.items()},
    **{f"{label}_completion_accuracy": round(sum(v) / len(v) / 100, 4) for label, v in accuracy.items()},
    **{f"{label}_completion_accuracy": round(r.accuracy, 4) for label, r in count_completion.items()},
    **{f"recall_{label}_accuracy_d<={n_memory}": round(s.accuracy_within(0, n_memory), 3) for label, s in recall.items()},
    **{f"recall_{label}_accuracy_d>{n_memory + 5}": round(s.accuracy_within(n_memory + 6), 3) for label, s in recall.items()},
})
print(", ".join(f"{k} {v}" for k, v in headline.items()))
