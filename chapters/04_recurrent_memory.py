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
# # Chapter 4 — Recurrent Memory Networks (Tran, Bisazza & Monz, 2016)
#
# The attentive models of chapters 02 and 03 look back at earlier *LSTM outputs*. Tran et al. look back at
# the earlier *words* themselves: beside the LSTM sits a small memory network that holds the last $n$ input
# words, and at every step the LSTM state decides which of them to read. Because the memory holds words, its
# attention can be read directly: which earlier word did the model consult to predict this one?
#
# This chapter opens with the key-value recall task, where a memory of the last $n$ words has an exact
# reach, derives the Memory Block from end-to-end memory networks, trains a reduced Recurrent-Memory model on
# PTB and looks inside its memory, and ends with the stored multi-seed runs that test the paper's claims.
#
# Paper: *Recurrent Memory Networks for Language Modeling*, NAACL 2016 (equation, table and figure numbers
# below are the paper's).

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
from matplotlib.ticker import ScalarFormatter

import mlm
from mlm.analysis.memory_block import average_by_position, collect_memory_attention, sample_words
from mlm.baselines import count_baseline
from mlm.book import record
from mlm.claims import show_claims, spread
from mlm.manifests import compare, cpu
from mlm.manifests.recall import FAMILY_RUNS
from mlm.models.recurrent_memory import MemoryBlock, memory_window, temporal_rows
from mlm.plots import attention_by_position, learning_curves, memory_block_diagram, recall_panels, sampled_attention
from mlm.sampling import sample_text
from mlm.table import chapter_evidence, load_settings, load_stored_recall, show_pending
from mlm.training import build_batches, build_model
from mlm.utils import set_seed

set_seed(seed)
results = Path("../results")

# %% [markdown]
# ## 1. Why a memory of words
#
# An LSTM predicts the next word from its state $h_t$ alone, so every earlier word it will need must be squeezed
# into that one vector as it goes by. The **key-value recall** task of chapter 00 (section 5) measures how well
# that works: a line names a key with a value, later the key comes back, and the model must say the value again,
# $d$ words after it first appeared. That second value is the *critical token*, the first its *source*; values are
# random, so a model that cannot recall the source is at chance, one in the number of values.
#
# The Memory Block of this chapter holds the last $n = 15$ input words themselves, so while the source value
# is among them ($d \le 15$) it can read it back directly, without the LSTM having carried it; beyond that
# **reach** only the LSTM can help.
#
# Section 2 builds two models on the block: **RM** puts it on top of the LSTM, **RMR** between two LSTM
# layers; "+tM-g" names the variant (positions in the keys, a gate; section 2). The runs below are stored
# (`python -m mlm reproduce recall`): three seeds of each model at the same small size (64 units), with Adam
# on 20,000 lines, scored on the critical tokens of 1,000 test lines. *Uniform* attention, $1/15$ on each
# word in memory, is the weight of a block that does not choose.

# %%
recall_labels = {"LSTM": "LSTM", "RM(+tM-g)": "RM(+tM-g), n = 15", "RMR(+tM-g)": "RMR(+tM-g), n = 15"}
recall = load_stored_recall({short: FAMILY_RUNS[family] for short, family in recall_labels.items()}, results)
chance = recall["LSTM"].extras[0]["chance"]
n_memory = 15
recall_panels(recall, chance, reach={k: n_memory for k in recall if k != "LSTM"}, reference="LSTM", columns=3,
              width=7, title="Key-value recall: accuracy on the critical token (d in bins 2-8, 9-15, 16-22, ...)")
plt.show()

# %% [markdown]
# The plain LSTM recalls far above chance at every distance, and no worse at $d = 50$ than at $d = 5$:
# what it keeps in its state does not fade over this range. Its seeds differ widely, one recalling far less
# than the other two. Within the block's reach RM recalls more than the LSTM on average, and RMR recalls least.
# Section 2 builds the block, and its last part reads these runs seed by seed, with the block's attention.

# %% [markdown]
# ## 2. The Memory Block, equation by equation
#
# An end-to-end memory network (Sukhbaatar et al., 2015) answers a query $u$ from stored items
# $x_1, \dots, x_n$. Every item is embedded twice: by a table $M$ as a **key** $m_i$, which is compared with
# the query, and by a table $C$ as a **value** $c_i$, which is returned. Two tables separate *where to look*
# from *what to read*: a word can signal that something relevant is here without being the most useful
# content itself.
#
# The **Memory Block** is one such read. The items are the $n$ most recent input words
# $x_{t-n+1}, \dots, x_t$, the current word included; the query is the LSTM output $h_t$. With the keys
# stacked into the matrix $M_i$ ($n \times d$, where $d$ is the width of the vectors, as in the paper, not
# section 1's distance; the subscript names the set of words $\{x_i\}$, not the $i$-th key $m_i$) and the
# values into $C_i$:
#
# $$ p_t = \mathrm{softmax}(M_i h_t) \quad (1), \qquad s_t = C_i^\top p_t \quad (3). $$
#
# **The temporal matrix.** A set of words has no order, but the previous word usually matters more than the
# word twelve back. A learned matrix $T$ ($n \times d$) adds one vector per memory position to the keys,
#
# $$ p_t = \mathrm{softmax}\big((M_i + T)\, h_t\big) \quad (2), $$
#
# so the attention can prefer positions as well as words. Variants with $T$ are written "+tM", without "–tM".
# At a sentence start the memory holds only $t < n$ words, and the paper uses the slice $T[1:t]$ (section
# 4.2). We read it as the sentence's first word taking row 1 and the current word row $t$, so until the memory
# fills, a row of $T$ means a different distance back at every step. The official code aligns the rows
# differently (end of this section).
#
# **The gate.** A memory network adds what it read to the query, $s_t + h_t$. In a language model $h_t$ is the
# LSTM's whole summary of the sentence, and a blind sum can overwrite it. Tran et al. compose the two with a
# GRU-like unit that decides per dimension how much of each to pass on:
#
# $$ z_t = \sigma(W_{sz} s_t + U_{hz} h_t) \;(4), \quad r_t = \sigma(W_{sr} s_t + U_{hr} h_t) \;(5), $$
# $$ \tilde h_t = \tanh\big(W s_t + U (r_t \odot h_t)\big) \;(6), \qquad
#    h^m_t = (1 - z_t) \odot h_t + z_t \odot \tilde h_t \;(7). $$
#
# With the update gate $z_t$ closed the block passes $h_t$ on unchanged; open, it replaces $h_t$ by a
# candidate built from the context and a reset-gated $h_t$. Variants "-g" use the gate, "-l" the sum.
#
# **RM and RMR.** In **RM** (Recurrent-Memory) the softmax reads $h^m_t$ directly, and what the block read at
# step $t$ is forgotten at step $t+1$. **RMR** (Recurrent-Memory-Recurrent) puts a second LSTM on top of the
# block, which can carry the readings forward. Neither feeds anything back into the lower LSTM, so the LSTM
# can first run over the whole sentence, and the block then reads all steps at once.

# %%
memory_block_diagram(n=15, d=128)
plt.show()

# %% [markdown]
# One step at a time, for one sentence, the block is a loop over the words, one line per equation
# (`MemoryBlock` holds the tables and the gate's weights; each $W$ carries a bias, as in the official code):

# %%
def memory_block_loop(block: MemoryBlock, h: torch.Tensor, words: torch.Tensor):
    """RM(+tM-g)'s Memory Block step by step: h (time, d) LSTM outputs of one sentence, words (time,) its input ids."""
    n, outputs, weights = block.memory_size, [], []
    for t in range(len(words)):
        ids = words[max(0, t - n + 1): t + 1]  # (m,): the m <= n newest inputs, the current word last
        keys = block.M(ids) + block.T[: len(ids)]  # (m, d): M_i + T, the paper's slice T[1:m]
        p = torch.softmax(keys @ h[t], dim=0)  # (m,): Eq. 1-2
        s = p @ block.C(ids)  # (d,): s_t = C_i^T p_t, Eq. 3
        z = torch.sigmoid(block.W_z(s) + block.U_z(h[t]))  # (d,): update gate, Eq. 4
        r = torch.sigmoid(block.W_r(s) + block.U_r(h[t]))  # (d,): reset gate, Eq. 5
        h_tilde = torch.tanh(block.W_h(s) + block.U_h(r * h[t]))  # (d,): candidate, Eq. 6
        outputs.append((1 - z) * h[t] + z * h_tilde)  # (d,): h^m_t, Eq. 7
        weights.append(torch.cat([p.new_zeros(n - len(ids)), p]))  # (n,): empty slots first, current word last
    return torch.stack(outputs), torch.stack(weights)  # (time, d), (time, n)


# %% [markdown]
# **All steps at once.** The fast version builds every step's memory from one `unfold` of the input ids over
# a front-padded copy; a boolean mask marks the slots that hold a word, and a missing slot gets weight
# exactly 0. Slot $j$ of step $t$ holds input $t - (n-1) + j$, so the current word is always in the last
# slot. For six inputs and $n = 4$ (a dot is a missing slot), with the row of $T$ each slot uses (counted
# from 0, so the paper's row 1 prints as 0):

# %%
# NBVAL_CHECK_OUTPUT
tokens = torch.tensor([[11, 12, 13, 14, 15, 16]])  # (batch, time): <bos> w1 .. w5 as ids
ids, present = memory_window(tokens, mask=None, size=4)  # (batch, time, n) each
for t in range(6):
    slots = " ".join(f"{int(i):>3}" if p else "  ." for i, p in zip(ids[0, t], present[0, t]))
    rows = " ".join(f"{int(r):>2}" if p else " ." for r, p in zip(temporal_rows(6, 4, "paper")[t], present[0, t]))
    print(f"step {t}: memory {slots}   rows of T {rows}")

# %% [markdown]
# The scores of every step are then one band of a single matrix product, and Eq. 3 one more product:

# %%
print(inspect.getsource(MemoryBlock.forward))

# %% [markdown]
# The two agree to floating-point precision on a random block (outputs and attention weights);
# `tests/test_recurrent_memory.py` also compares the whole head with padding, RMR's top LSTM, gradients, and
# all eight variants of Table 2.

# %%
torch.manual_seed(0)
block = MemoryBlock(vocab_size=50, hidden_size=16, memory_size=5).double()  # +tM, gating, the paper's T slice
for parameter in block.parameters():
    torch.nn.init.uniform_(parameter, -0.5, 0.5)
h = torch.randn(2, 9, 16, dtype=torch.double)  # (batch, time, d): LSTM outputs of two sentences
words = torch.randint(1, 50, (2, 9))  # (batch, time)
fast_out, fast_p = block(h, words)  # (batch, time, d), (batch, time, n)
loop = [memory_block_loop(block, h[b], words[b]) for b in range(2)]
assert all(torch.allclose(fast_out[b], out) and torch.allclose(fast_p[b], p) for b, (out, p) in enumerate(loop))
print("fast == loop for both sentences; attention shape (batch, time, n):", tuple(fast_p.shape))

# %% [markdown]
# **What the official code does differently** (docs/design.md, section 10). It aligns the *newest* word with
# the *last* row of $T$ at every step, so a row always means "so many words back", and adds a second temporal
# table to the values; both are `model.memory_alignment="code"`. Its linear composition is $W h_t + s_t$
# (`"linear-code"`). This chapter follows the paper.
#
# ### The block on the recall task
#
# Back to the runs of section 1, with what the block puts on the source word when the key comes back. Here
# $d$ is again the recall distance, not the width.

# %%
for label, entry in recall.items():
    print(f"{label:<11} d <= {n_memory}: {spread(entry.within(2, n_memory), 2)}   d > {n_memory}: "
          f"{spread(entry.within(n_memory + 1), 2)}   (chance {chance:.2f})")
    print(f"{'':<11} seed by seed, d <= {n_memory} -> d > {n_memory}: " + ", ".join(
        f"{a:.2f} -> {b:.2f}" for a, b in zip(entry.within(2, n_memory), entry.within(n_memory + 1))))
for label, entry in recall.items():  # the Memory Block's weight on the source word when the key comes back
    found = [x["source_attention"] for x in entry.extras if x["source_attention"]]
    if found:
        print(f"{label:<11} source in memory: weight on it " + ", ".join(f"{f['weight']:.2f}" for f in found)
              + f" (uniform {found[0]['uniform']:.2f}), seed by seed;")
        print(f"{'':<11} the largest of all slots in " + ", ".join(f"{f['is_max']:.0%}" for f in found) + " of the lines")

# %% [markdown]
# RM's three seeds show both ways a model with a memory can recall. In seed 2 the LSTM under the block never
# learned to carry the pair: within the block's reach ($d \le 15$) the model recalls about two values in three
# by reading the source, half of its weight on it against 0.07 for uniform, and beyond the reach it falls to
# chance. In seeds 0 and 1 the LSTM carries the pair, so recall drops by at most 8 points at the reach (under
# one point in seed 1), though the block still puts three times the uniform weight on the source.
#
# Why does reading the source directly give only two values in three? A slot's score is $M$'s row for the
# word in it plus $T$'s row for the slot. Up to two other pairs sit between the source and the question, so
# their value tokens are in memory too, and no slot's score records which key token came before it. The block
# can single out the source only by its slot, that is, only if $h_t$ encodes how far back the key token was.
#
# RMR's block, below a second LSTM layer, gives the source about the uniform weight or less (0.07, 0.09 and
# 0.00, seed by seed); its recall is its LSTMs', high in one seed and at chance in another.
#
# **At matched positions.** The critical token's position in its line is the prefix (the words before the
# source pair, chapter 00, section 5) plus $d$ plus one (the source's key), so the larger distances are also asked
# later in the line. The table holds the position fixed and compares $d \le 15$ with $d > 15$. A model
# without a memory should score the two rows alike; for a memory of $n = 15$ words, the gap between them at
# the same position is what reading the source directly adds.

# %%
d_edges, position_edges = [2, 16, 61], [0, 20, 40, 60, 80]  # d <= 15 and d > 15; the critical token's position


def matched(entry, i, j):
    """(accuracy, count) over all seeds of the critical tokens in d bin i and position bin j."""
    cells = [scores.table(d_edges, position_edges)[i][j] for scores in entry.scores]  # (accuracy, count) per seed
    count = sum(n for _, n in cells)
    return sum(accuracy * n for accuracy, n in cells) / max(count, 1), count


print(f"{'all seeds together':<20}" + "".join(f"{f'position {lo}-{hi - 1}':>16}"
                                              for lo, hi in zip(position_edges, position_edges[1:])))
for label, entry in recall.items():
    for i, name in enumerate((f"d <= {n_memory}", f"d > {n_memory}")):
        cells = [matched(entry, i, j) for j in range(len(position_edges) - 1)]
        print(f"{label + ', ' + name:<20}" + "".join(f"{accuracy:>16.2f}" if count >= 30 else f"{'-':>16}"
                                                     for accuracy, count in cells))
print("('-': fewer than 30 critical tokens)")

# %% [markdown]
# The LSTM does several points worse when the question comes in the first forty words of a line, and at the
# same position the two ranges of $d$ are close. RM's rows part at every position from 20 on (the first
# twenty words hold too few questions with $d > 15$); the per-seed figure above shows that the gap comes from
# seed 2, the seed whose LSTM does not carry the pair. RM also recalls less in a line's first twenty words,
# where its memory is not yet full and, with the paper's slice $T[1:t]$, a row of $T$ does not yet mean a fixed
# distance (section 2); the counts there are small, and the cause is not tested here.

# %% tags=["remove-input"] jupyter={"source_hidden": true}
# The paragraphs above, pinned on the stored LSTM seeds.
lstm_near, lstm_far = recall["LSTM"].within(2, n_memory), recall["LSTM"].within(n_memory + 1)
assert min(lstm_near + lstm_far) > 3 * chance and abs(sum(lstm_near) - sum(lstm_far)) / 3 < 0.1, (lstm_near, lstm_far)
assert max(lstm_far) - min(lstm_far) > 0.15, "the seeds differ widely"
early = [matched(recall["LSTM"], i, j)[0] for i, j in ((0, 0), (0, 1), (1, 1))]
late = [matched(recall["LSTM"], i, j)[0] for i, j in ((0, 2), (0, 3), (1, 2), (1, 3))]
assert sum(late) / len(late) - sum(early) / len(early) > 0.03, (early, late)
assert all(abs(matched(recall["LSTM"], 0, j)[0] - matched(recall["LSTM"], 1, j)[0]) < 0.1 for j in (1, 2, 3))
# RM and RMR, seed by seed (the paragraph after the figure)
rm_recall, rmr_recall = recall["RM(+tM-g)"], recall["RMR(+tM-g)"]
rm_near, rm_far = rm_recall.within(2, n_memory), rm_recall.within(n_memory + 1)
rm_source = [x["source_attention"] for x in rm_recall.extras]
assert rm_recall.seeds == [0, 1, 2] and 0.6 < rm_near[2] < 0.75 and rm_far[2] < 2 * chance  # reads within reach only
assert rm_source[2]["weight"] > 0.45 and 0.06 < rm_source[2]["uniform"] < 0.08
assert all(abs(rm_near[i] - rm_far[i]) < 0.1 and rm_far[i] > 0.5 for i in (0, 1))  # the LSTM carries the pair
assert round(100 * (rm_near[0] - rm_far[0])) == 8 and 0 < rm_near[1] - rm_far[1] < 0.01  # "at most 8", "under 1"
assert all(2.5 < rm_source[i]["weight"] / rm_source[i]["uniform"] < 3.5 for i in (0, 1))
mean_all = {label: sum(entry.within(2)) / 3 for label, entry in recall.items()}  # section 1: "RMR recalls least"
assert sum(rm_near) / 3 > sum(lstm_near) / 3 + 0.1 and mean_all["RMR(+tM-g)"] == min(mean_all.values()), mean_all
rmr_source = [x["source_attention"]["weight"] / x["source_attention"]["uniform"] for x in rmr_recall.extras]
assert max(rmr_source) < 1.5  # about uniform
assert [round(x["source_attention"]["weight"], 2) for x in rmr_recall.extras] == [0.07, 0.09, 0.00], rmr_recall.extras
assert all(matched(rm_recall, 0, j)[0] - matched(rm_recall, 1, j)[0] > 0.1 for j in (1, 2, 3))  # RM's rows part
assert matched(rm_recall, 0, 0)[0] < min(matched(rm_recall, 0, j)[0] for j in (1, 2, 3)) - 0.1  # "recalls less"
rmr_all = rmr_recall.within(2)
assert max(rmr_all) > 0.55 and min(rmr_all) < 2 * chance
assert all(abs(rmr_recall.within(2, n_memory)[i] - rmr_recall.within(n_memory + 1)[i]) < 0.05 for i in range(3))

# %% [markdown]
# ## 3. Watch it train
#
# The paper's setting (section 4.2): $d = 128$ for the embeddings, the LSTM and both memory tables,
# $n = 15$, plain SGD at learning rate 1, halved after every epoch from the fourth, 15 epochs, gradients
# clipped at 5, batches of 20 sentences of equal length, and the state and memory reset with every sentence.
# The preset:

# %%
paper_cfg = mlm.get_preset("tran2016-ptb-rm-tm-g")
for key in ("model.hidden_size", "model.memory_size", "train.lr", "train.epochs", "train.decay_start",
            "train.clip", "data.batch_size", "data.protocol"):
    section, name = key.split(".")
    print(f"{key:<20} {getattr(getattr(paper_cfg, section), name)}")

# %% [markdown]
# The **reduced size** trains RM(+tM-g) for 3 epochs on the first 60k tokens of PTB's training text (6% of
# it), in batches of 5 sentences (four times the updates of 20), with the learning rate halved after every
# epoch from the first; validation and test use their first 10k tokens. Its yardstick is the **count
# baseline of its own tokens** (`mlm.baselines.count_baseline`): an interpolated bigram counted on exactly
# the (history, target) pairs the model trained on. A network that does not beat it has learned less than
# word-pair counts, and nothing in its memory is worth reading.

# %%
common = {"train.seed": seed, "train.device": device, **({"data.data_dir": data_dir} if data_dir else {})}
more_text = {"data.max_train_tokens": 60_000} if size == "reduced" else {}  # twice the preset's reduced slice
cfg = mlm.get_preset("tran2016-ptb-rm-tm-g", size, overrides={**common, **more_text})
rm = mlm.train(cfg, run_dir=Path(runs_dir) / f"tran2016-ptb-rm-tm-g-{size}-seed{seed}")
baseline = count_baseline(rm.config, rm.corpus)  # unigram and bigram counted on the same training tokens
fig, ax = plt.subplots(figsize=(7, 3.8))
learning_curves({"RM(+tM-g)": rm.history}, title=f"RM(+tM-g) on PTB, {size} size", ax=ax)
ax.set_xticks([h["epoch"] for h in rm.history])
ax.yaxis.set_major_formatter(ScalarFormatter())
ax.yaxis.set_minor_formatter(ScalarFormatter())
ax.axhline(baseline["bigram_valid"], color="k", ls=":", lw=1, label="bigram of the same tokens (valid)")
ax.legend(fontsize=8)
plt.show()
print(f"RM(+tM-g): {rm.result['parameters']:,} parameters, {rm.result['updates']:,} updates on "
      f"{baseline['train_tokens']:,} tokens")
print(f"test perplexity over {baseline['test_tokens']:,} tokens: RM(+tM-g) {rm.result['test_ppl']:.1f}, "
      f"bigram {baseline['bigram_test']:.1f}, unigram {baseline['unigram_test']:.1f}")

# %% tags=["remove-input"] jupyter={"source_hidden": true}
# The reduced model beats the bigram of its own tokens (on any CPU or thread count: a margin, not digits).
gain = 1 - rm.result["test_ppl"] / baseline["bigram_test"]
assert 0.10 < gain < 0.30, f"the prose says 'about a fifth below the bigram': {gain:.1%}"
lstm_parameters = sum(p.numel() for p in build_model(mlm.get_preset("tran2016-ptb-lstm1"),
                                                        len(rm.corpus.vocab)).parameters())
assert 1.9 < rm.result["parameters"] / lstm_parameters < 2.1, "'twice the parameters of a plain LSTM of its width'"

# %% [markdown]
# The model ends about a fifth below the bigram: it has learned more than word pairs. It has twice the
# parameters of a plain LSTM of its width, because $M$ and $C$ are two more $|V| \times d$ tables, while the
# gate adds only $6d^2$. Sentences sampled from it at temperature 0.8 (`mlm.sampling.sample_text`; each line
# starts from `<bos>` with an empty memory):

# %%
print(sample_text(rm.model, rm.corpus.vocab, length=60, temperature=0.8, seed=seed, protocol="sentence"))

# %% [markdown]
# ### What the memory attends to
#
# Section 5.1 of the paper reads the attention weights of its trained models. We repeat three of its
# analyses (Figures 3 to 5) on the test set with the reduced model and with the stored RM(+tM-g) and
# RMR(-tM-g), the two variants of the paper's Figure 3 (the best RMR in all three languages and the best RM
# in German and Italian, Table 2), trained for two epochs on the whole of PTB (learning rate 1, then 0.5;
# `results/tran2016-ptb-128-whole/`, one seed each). The yardstick is uniform attention, $1/15 \approx 0.067$
# per slot (section 1).
#
# Only steps whose memory is full count, from a sentence's fifteenth word on: before that the memory has fewer
# slots, and a position would not mean the same at every step. That keeps about two predictions in five of the
# whole-PTB test set (printed below); the reduced model is read on its own smaller test set.
#
# **Average attention per position (Figure 3).** Position $-1$ is the current word, $-15$ the oldest; the
# weight axis is logarithmic, so weights far below uniform stay readable.

# %%
longer_dir = results / "tran2016-ptb-128-whole"
whole = {label: (json.loads((longer_dir / name / "result.json").read_text()),
                 json.loads((longer_dir / name / "attention.json").read_text()))
         for label, name in (("RM(+tM-g)", "rm-tm-g"), ("RMR(-tM-g)", "rmr-notm-g"))}
whole_bigram = count_baseline(mlm.get_preset("tran2016-ptb-lstm1", overrides=common))  # counted on all of PTB
whole_lstm = json.loads((longer_dir / "lstm1" / "result.json").read_text())
for label, (res, att) in whole.items():
    print(f"{label:<11} whole PTB, 2 epochs: test {res['test_ppl']:.1f} "
          f"(the 1-layer LSTM of the same schedule: {whole_lstm['test_ppl']:.1f}; "
          f"the bigram of all PTB: {whole_bigram['bigram_test']:.1f}); "
          f"{att['positions']:,} of {res['test_tokens']:,} test predictions with a full memory")
collected = collect_memory_attention(rm.model, build_batches(rm.config, rm.corpus, "test"))
curves = {f"RM(+tM-g), {size}": average_by_position(collected),
          **{f"{label}, whole PTB": att["average_by_position"] for label, (_, att) in whole.items()}}
attention_by_position(curves, title="Average attention per memory position (Figure 3 analogue)")
plt.show()
uniform = 1 / n_memory
for label, average in curves.items():
    print(f"{label:<22} current word {average[-1]:.2f} ({average[-1] / uniform:.1f} x uniform), "
          f"7 oldest positions together {sum(average[:7]):.2f} (uniform {7 * uniform:.2f})")

# %% tags=["remove-input"] jupyter={"source_hidden": true}
# The prose below: both RMs peak on the current word (over five times uniform) with the oldest positions
# below uniform, the whole-PTB one decaying steadily and far below uniform; RMR is near uniform except on
# the current word, and puts less weight on it than RM.
for label in (f"RM(+tM-g), {size}", "RM(+tM-g), whole PTB"):
    average = curves[label]
    assert average.index(max(average)) == n_memory - 1 and average[-1] > 5 * uniform, (label, average)
    assert sum(average[:7]) < 0.5 * 7 * uniform, (label, average)
average = curves["RM(+tM-g), whole PTB"]
assert all(a < b for a, b in zip(average[-6:], average[-5:])) and max(average[:7]) < 0.2 * uniform, average
rmr_average = curves["RMR(-tM-g), whole PTB"]
assert rmr_average[-1] < curves["RM(+tM-g), whole PTB"][-1] and rmr_average[-1] < 4 * uniform
assert (round(rmr_average[-1], 2), round(curves["RM(+tM-g), whole PTB"][-1], 2)) == (0.13, 0.48), rmr_average
assert 1.5 < rmr_average[-1] / uniform < 2.5, "'twice uniform'"
assert [round(whole[k][0]["test_ppl"], 1) for k in ("RMR(-tM-g)", "RM(+tM-g)")] == [172.3, 140.1], whole
assert all(0.7 * uniform < w < 1.3 * uniform for w in rmr_average[:-1]), rmr_average
assert all(res["test_ppl"] < whole_bigram["bigram_test"] for res, _ in whole.values())
assert whole["RMR(-tM-g)"][0]["test_ppl"] > 1.1 * whole["RM(+tM-g)"][0]["test_ppl"], "'far behind RM's'"
assert all(0.35 < att["positions"] / res["test_tokens"] < 0.45 for res, att in whole.values()), "'two in five'"

# %% [markdown]
# Both RMs put nearly half of their weight on the current word, about seven times the uniform share. The
# whole-PTB RM decays as the paper's does, less and less weight further back, but far more steeply: the colour
# scale of the paper's Figure 3 runs from 0.08 to 0.24, near the uniform 0.07 at its low end, while ours puts
# 0.48 on the current word and almost nothing on the oldest positions. The reduced RM has learned the peak, and
# to look less than uniformly at old words, but not yet a steady decay.
#
# The stored RMR does not reproduce the paper's finding that RMR concentrates *more* on the current word than RM
# (the paper: "the RM average attention mass is less concentrated to the right"). After two epochs its attention is
# nearly uniform except on the current word (0.13, twice uniform, against RM's 0.48). Being –tM, as in the paper's
# figure, its keys carry no position, so it can prefer a slot only through the word in it. Its test perplexity after
# the same two epochs, 172.3 against RM's 140.1 and the 1-layer LSTM's 145.8, is far behind, and after fifteen epochs
# (section 4) RMR still trails the LSTM, so short training may not be the whole cause.
#
# These are one seed each, after a short schedule: a direction, not a verdict. Nor does a peaked attention show that
# the block adds anything the LSTM state does not already carry.
#
# **Attention of 100 sampled words (Figure 4).** Each column is one randomly drawn test prediction, each row
# a memory position, the current word at the bottom as in the paper. A weight lies between 0 and 1, so the
# colour scale is sequential, and logarithmic so that "ten times below uniform" and "uniform" differ. Dark
# means a low weight here, the reverse of the paper's figure.

# %%
sampled = {f"RM(+tM-g), {size}": collected.weights[sample_words(collected, 100, seed=seed)],  # (100, n) each
           "RM(+tM-g), whole PTB": torch.tensor(whole["RM(+tM-g)"][1]["sampled_weights"])}
sampled_attention(sampled, title="Attention of 100 sampled test words (Figure 4 analogue)")
plt.show()
for label, weights in sampled.items():
    print(f"{label:<24} largest weight on the current word in {(weights.argmax(1) == n_memory - 1).float().mean():.0%}"
          f" of the columns; oldest five rows: median weight {weights[:, :5].median() / uniform:.3f} x uniform")

# %% tags=["remove-input"] jupyter={"source_hidden": true}
# The paragraph below: about two columns in three peak on the current word; the oldest five rows are hundreds
# of times below uniform for the whole-PTB model, a few times below for the reduced one.
for weights in sampled.values():
    assert 0.5 < (weights.argmax(1) == n_memory - 1).float().mean() < 0.85, weights.argmax(1)
assert sampled["RM(+tM-g), whole PTB"][:, :5].median() < uniform / 100
assert uniform / 20 < sampled[f"RM(+tM-g), {size}"][:, :5].median() < uniform / 2

# %% [markdown]
# About two columns in three put their largest weight on the current word. The whole-PTB model spreads the
# rest over the few words before it and almost nothing further back: its oldest rows are dark, hundreds of
# times below uniform. That is the opposite of the paper's Figure 4, where many distant words receive
# noticeable weight and many predictions spread it evenly. The reduced model spreads it over the whole memory,
# a few times below uniform.
#
# **Attention on a distant word (Figure 5).** Of the whole-PTB model's test predictions whose most attended
# word lies at least 7 positions back (the paper's "more than six positions to the left"), the four with the
# highest weight, one per attended word, with the model's top five guesses and their log-probabilities.
# Positions count the current word as 1 back, so "8 back" is the seventh word before it:

# %%
def show_examples(examples):
    for e in examples:
        memory = " ".join(f"[{w}]" if i == len(e["memory"]) - e["distance"] else w for i, w in enumerate(e["memory"]))
        print(f"{memory}  ->  {e['target']} ({e['target_log_prob']:.1f})")
        print(f"    attends '{e['attended']}' {e['distance']} back with weight {e['weight']:.2f}; top 5: "
              + ", ".join(f"{w} ({lp:.1f})" for w, lp in e["top"]))


distinct = {e["attended"]: e for e in reversed(whole["RM(+tM-g)"][1]["distant_examples"])}  # one per attended word
show_examples(sorted(distinct.values(), key=lambda e: -e["weight"])[:4])

# %% tags=["remove-input"] jupyter={"source_hidden": true}
# The paragraph below reads these examples: three of the four turn on a number word (as attended word or
# target), and "million" is attended far back, then predicted with near certainty.
shown = sorted(distinct.values(), key=lambda e: -e["weight"])[:4]
number_words = {"N", "$", "million", "billion", "one", "two", "three", "four", "five", "six", "seven"}
assert len(shown) == 4 and sum(bool({e["attended"], e["target"]} & number_words) for e in shown) == 3, shown
assert any(e["attended"] == e["target"] == "million" and e["distance"] >= 7 and e["target_log_prob"] > -0.1
           for e in shown)

# %% [markdown]
# Three of the four follow the number patterns of financial news (PTB writes every number as `N`). After
# `from $ N` the model looks back at the `million` of `about $ N million` and predicts the same unit again,
# almost certainly. The paper found separable-verb particles in German and fixed expressions in German and
# Italian, on corpora of 22M to 29M tokens.
#
# **Explore.** The reduced RM trained above: type a sentence (PTB style: lower case, numbers as `N`) or pick one. Each
# row is a predicted word, each column an input in memory (the current word on the diagonal and at most 14 words
# before it; grey cells are outside the memory). Each cell shows its weight against the uniform $1/k$ over the row's
# $k$ words in memory, on a log scale: white is uniform, red more than its share, blue less. The table lists the most
# attended word and the top five predictions. (On a static page only the first example is drawn.)

# %%
from mlm.widgets import memory_explorer

examples = [" ".join(line) for line in rm.corpus.lines["test"] if 22 <= len(line) <= 26][:2] + [
    "the company said it expects to report a loss for the third quarter because of higher costs"]
memory_explorer({"RM(+tM-g), reduced": rm.model}, rm.corpus.vocab, examples)

# %% [markdown]
# ## 4. The evidence
#
# The paper's claims are tested by stored runs with three seeds a side or more (`results/`, trained by
# `python -m mlm reproduce`), each verdict decided by the rule of chapter 00, section 6:

# %%
rows, pending = chapter_evidence("04", results)
show_claims(rows)
show_pending(pending);

# %% [markdown]
# The table holds two kinds of rows. The rows whose question is *the paper's* compare as Tran et al. did, at
# **equal width**: RM(+tM-g), RMR(-tM-g) and the 1- and 3-layer LSTMs all at $d = 128$, under Tran's recipe
# (SGD, no dropout, 15 epochs) on PTB. At that width the memory's two vocabulary-sized tables come on top of
# the LSTM, so RM and RMR have about twice its parameters. The 3-layer pair is the paper's own PTB comparison
# (section 4.3); the others come from Table 2, on 26M words of English news with a 77k-word vocabulary, whose
# level is not comparable with PTB's: only their relative change is.
#
# The rows whose question is *the book's* keep the same schedule but fix the **budget** (chapter 06 compares every
# family this way): every model at the 1-layer LSTM's 2.70M parameters, its width chosen to fit. There the tables take
# the parameters the LSTM would otherwise get. The table below reads the stored runs of both comparisons: the width of
# each model, the weights in its LSTM layers, its parameters, the training perplexity of its last epoch (lowest and
# highest seed), the epochs at which validation was best, and the test perplexity there.

# %%
def describe(runs: dict) -> None:
    print(f"{'':<12} {'width d':>8} {'LSTM weights':>13} {'parameters':>11} {'train ppl':>14} "
          f"{'best epochs':>12} {'test ppl':>20}")
    for name, setting in runs.items():
        model = setting.results[0]["config"]["model"]
        d, layers = model["hidden_size"], model["num_layers"] + (model["head"] == "rmr")
        lstm_weights = layers * 4 * d * (2 * d)  # the input and recurrent matrices of every LSTM layer
        train = [setting.metrics(i)[-1]["train_ppl"] for i in range(len(setting.seeds))]
        best = ",".join(str(r["best_epoch"]) for r in setting.results)
        print(f"{name:<12} {d:>8} {lstm_weights:>13,} {setting.results[0]['parameters']:>11,} "
              f"{min(train):>6.1f} - {max(train):<5.1f} {best:>12} {spread(setting.values('test_ppl')):>20}")


own = load_settings([spec for spec in cpu.RUNS if spec.group == "cpu-tran2016-ptb"], results)
print("equal width, d = 128 (results/cpu-tran2016-ptb)")
describe({name: setting for name, setting in own.items() if setting.seeds})
waiting = [name for name, setting in own.items() if not setting.seeds]
if waiting:
    print("  waiting for runs: " + ", ".join(waiting))
compare_runs = load_settings([spec for spec in compare.RUNS if spec.base in ("lstm", "rm-tm-g", "rmr-notm-g")],
                             results)
print("\nmatched budget, 2.70M parameters (results/compare-ptb)")
describe(compare_runs)

# %% tags=["remove-input"] jupyter={"source_hidden": true}
# The prose around this table: at equal width RM beats the LSTM by less than the paper's gain, with twice its
# parameters, every seed below every LSTM seed, and RMR loses to it while fitting the training text less well;
# all overfit (best epoch well before the last); both matched_rows-recipe rows lose; RM keeps about a quarter of
# the control's LSTM weights; RMR cannot fit the training text; the 3-layer LSTM is worse than the 1-layer
# one and fits the training text less well, so RM's large margin over it says little.
matched_rows = [row for row in rows if "2.70M" in row.question]
assert len(matched_rows) == 2 and all(row.verdict == "contradicted (a loss)" for row in matched_rows), matched_rows
equal, equal_rmr = [row for row in rows if row.question.startswith("the paper's: equal width")]
assert equal.verdict == "a gain, smaller than reported" and max(equal.seeds[0]) < min(equal.seeds[1]), equal
assert equal_rmr.verdict == "contradicted (a loss)" and min(equal_rmr.seeds[0]) > max(equal_rmr.seeds[1]), equal_rmr
assert 121 < sum(equal_rmr.seeds[0]) / 3 < 123 and 1.9 < own["rmr-notm-g"].results[0]["parameters"] / own[
    "lstm1"].results[0]["parameters"] < 2.1
assert 1.9 < own["rm-tm-g"].results[0]["parameters"] / own["lstm1"].results[0]["parameters"] < 2.1
assert all(r["best_epoch"] == 5 for r in own["rm-tm-g"].results) and all(r["best_epoch"] == 7 for r in own["lstm1"].results)
own_train = {name: [own[name].metrics(i)[-1]["train_ppl"] for i in range(3)]
             for name in ("rm-tm-g", "lstm1", "rmr-notm-g")}
assert max(own_train["rm-tm-g"]) < 42 and 55 < min(own_train["lstm1"]) and max(own_train["lstm1"]) < 58, own_train
assert 65 < min(own_train["rmr-notm-g"]) and max(own_train["rmr-notm-g"]) < 72, own_train
assert all(r["best_epoch"] == 7 for r in own["rmr-notm-g"].results)
assert not pending and len(own["rmr-notm-g"].seeds) == 3 and len(own["lstm3"].seeds) == 3, pending
deep = next(row for row in rows if "3-layer" in row.claim)
lstm3_test, lstm1_test = own["lstm3"].values("test_ppl"), own["lstm1"].values("test_ppl")
assert deep.verdict == "supported" and max(deep.seeds[0]) < min(deep.seeds[1]), deep
assert 129 < sum(lstm3_test) / 3 < 133 and min(lstm3_test) > max(lstm1_test) + 10, (lstm3_test, lstm1_test)
lstm3_train = [own["lstm3"].metrics(i)[-1]["train_ppl"] for i in range(3)]
assert all(84 < v < 89 for v in lstm3_train) and all(8 <= r["best_epoch"] <= 10 for r in own["lstm3"].results)
assert not {r["cpu_model"] for r in own["lstm3"].results} & {r["cpu_model"] for r in own["rm-tm-g"].results}
widths = {name: setting.results[0]["config"]["model"]["hidden_size"] for name, setting in compare_runs.items()}
assert widths["lstm"] == 128 and widths["rm-tm-g"] < 70 and widths["rmr-notm-g"] < 70, widths
train_last = {name: [setting.metrics(i)[-1]["train_ppl"] for i in range(len(setting.seeds))]
              for name, setting in compare_runs.items()}
assert min(train_last["rmr-notm-g"]) > 1.4 * max(train_last["lstm"]), train_last
assert max(train_last["rm-tm-g"]) < 1.1 * max(train_last["lstm"]), train_last
assert 115 < sum(own["lstm1"].values("test_ppl")) / 3 < 121
# The interval and changes quoted, RMR's parameters against RM's, and the means set beside the paper's PTB
# numbers (123.5 for RM, 126.1 for the 3-layer LSTM).
assert "interval -3.3% to -1.3%" in equal.evidence and "(-11.2%)" in equal.evidence, equal.evidence
assert "+3.4%" in equal_rmr.evidence and "(-9.6%)" in equal_rmr.evidence, equal_rmr.evidence
assert 1.0 < own["rmr-notm-g"].results[0]["parameters"] / own["rm-tm-g"].results[0]["parameters"] < 1.05
means = {name: sum(own[name].values("test_ppl")) / 3 for name in ("lstm1", "rm-tm-g", "lstm3")}
assert [f"{means[name]:.1f}" for name in ("lstm1", "rm-tm-g", "lstm3")] == ["118.1", "115.3", "131.1"], means
assert means["rm-tm-g"] < means["lstm1"] < 123.5 and means["lstm3"] > 126.1, means

# %% [markdown]
# **At equal width RM helps, less than reported; RMR does not.** Every seed of RM scores below every seed of
# the LSTM, and the interval of the change, -3.3% to -1.3%, lies between zero and the paper's -11.2%: a real
# gain, bought with twice the parameters. RMR(-tM-g), the block without its temporal matrix, between two
# LSTM layers and with about as many parameters as RM, scores above every LSTM seed: a loss of 3.4% where
# Tran et al. report a 9.6% gain on news.
#
# RM, RMR and the 1-layer LSTM all overfit under Tran's schedule, which has no dropout; the test perplexity
# is read at the epoch of the best validation perplexity, 5 for RM and 7 for RMR and the LSTM. RM fits the
# training text far better than the LSTM (a final training perplexity near 40 against 56); RMR, with about as
# many parameters as RM, fits it less well than the LSTM (66 to 70), perhaps because its second LSTM layer is
# harder to train under this schedule.
#
# **Against the paper's 3-layer LSTM the gain is large, and says little.** Tran et al.'s PTB comparison (section
# 4.3) sets RM against a 3-layer LSTM: 123.5 against 126.1, 2.1%. Ours finds 12%, which the rule calls
# *supported*, but the control is the weak side. Our 3-layer LSTM scores about 131, worse than our 1-layer one,
# and ends at a training perplexity of 85 to 88: fifteen epochs of this schedule do not train three stacked layers
# of 128 units.
#
# The two sides trained on different kinds of CPU, which moves a run by about 1% (chapter 06, section 5), a
# tenth of this gap. The paper's test text is close to ours but not the same (the official code's loader keeps
# only sentences of 10 to 80 tokens and words seen more than 5 times; docs/design.md, section 10), so only the
# relative change compares.
#
# **At a matched budget it loses.** RM is left with a 66-unit LSTM, about a quarter of the control's LSTM
# weights; it fits the training text as well as the control but generalises worse. RMR's two 65-unit layers
# cannot even fit the training text. These rows are a statement about the budget, not about Tran's claim.

# %% [markdown]
# ### Two analyses this size cannot make
#
# **Sentence completion.** The paper's best RM answers 69.2% of the MSR Sentence Completion Challenge (Table
# 4) after training on 47M tokens of novels. A one-epoch LSTM of this chapter's width, trained on the first 1M
# tokens of the book's Holmes novels with a 10,000-word vocabulary, shows why that is out of reach here (printed
# below): a quarter of the candidates are unknown words, most questions hold one, and the model answers at
# chance, a third of the questions tied. Penalising the unknown word lifts it only to about what word frequency
# alone gives (`results/holmes-notes.md`). The scorer stays in `mlm.completion`, with its tests, for a larger
# run.

# %%
notes = [json.loads(line) for line in (results / "holmes-notes.jsonl").read_text().splitlines()]
probe = next(r for r in notes if r["what"] == "train" and r["train_tokens"] == 999_970)  # the first 1M tokens
print(f"{probe['train_tokens']:,} training tokens, {probe['vocab']:,}-word vocabulary, one epoch")
print(f"unknown words: {probe['oov']['candidate_oov_rate']:.0%} of the candidates; "
      f"{probe['oov']['any_candidate_oov']} of the 1,040 questions hold one")
print(f"accuracy {probe['accuracy']:.1%} (chance 20%; {probe['ties']} questions tied); "
      f"{probe['accuracy_with_unk_penalty']:.1%} with the unknown word penalised")

# %% tags=["remove-input"] jupyter={"source_hidden": true}
assert 0.23 < probe["oov"]["candidate_oov_rate"] < 0.27 and probe["oov"]["any_candidate_oov"] > 520  # "a quarter", "most"
assert abs(probe["accuracy"] - 0.2) < 0.013 and 1040 / 4 < probe["ties"] < 1040 / 2.5  # "at chance", "a third"

# %% [markdown]
# **Frequent pairs (Table 3).** The paper takes the (attended word, predicted word) pairs whose attention
# lies more than six positions back, groups them by distance, and averages how often each pair co-occurs in
# the training text (Table 3), to show that distant attention is more than memorised frequent pairs. Our
# whole-PTB RM makes few such predictions:

# %%
pairs = {int(d): v for d, v in whole["RM(+tM-g)"][1]["pair_frequency_by_distance"].items()}
print("words back               " + " ".join(f"{d:>5}" for d in sorted(pairs)))
print("predictions              " + " ".join(f"{pairs[d][1]:>5}" for d in sorted(pairs)))
print("mean co-occurrence count " + " ".join(f"{pairs[d][0]:>5.1f}" for d in sorted(pairs)))

# %% [markdown]
# From 57 and 80 predictions at 7 and 8 words back down to 5 at 15: so few that the means swing, 147 at 11
# words back, between 1.4 and 42 at every other distance. That is too little to test the claim.

# %% tags=["remove-input"] jupyter={"source_hidden": true}
# The counts and means of the pair-frequency analysis (Table 3), from the stored whole-PTB RM.
assert [pairs[d][1] for d in range(7, 16)] == [57, 80, 57, 44, 29, 37, 19, 18, 5], pairs
others = [mean for d, (mean, _) in pairs.items() if d != 11]
assert round(pairs[11][0]) == 147 and (round(min(others), 1), round(max(others))) == (1.4, 42), pairs

# %% [markdown]
# > **Where this falls short.** The equal-width rows come from PTB, not the paper's news corpora: RM's gain
# > is smaller than reported and RMR loses, which one schedule without dropout on a small corpus may not
# > settle. Against the 3-layer LSTM, which this schedule leaves undertrained, the verdict says little. The
# > matched-budget rows show only that at 2.70M parameters the memory's tables cost more than they give.
# > The attention analyses rest on single-seed, unconverged models: they show where the block looks, not
# > that looking helps. Sentence completion and the pair-frequency analysis are out of reach at this size
# > (above).
#
# **Exercise 04** ([`exercises/ex04_memory_block.py`](../exercises/ex04_memory_block.py)): the Memory Block
# yourself, its window, the temporal rows, the attention of Eq. 2-3 and the gate, checked with
# `python -m exercises.grader 04`.

# %% tags=["remove-input"] jupyter={"source_hidden": true}
record("04_recurrent_memory", {
    "baseline_test_ppl": round(baseline["bigram_test"], 1),
    "unigram_test_ppl": round(baseline["unigram_test"], 1),
    "RM(+tM-g)_test_ppl": round(rm.result["test_ppl"], 1),
    "whole_ptb_bigram_test_ppl": round(whole_bigram["bigram_test"], 1),
    **{f"recall_{label}_accuracy_d<={n_memory}": round(sum(e.within(2, n_memory)) / len(e.seeds), 3)
       for label, e in recall.items()},
    **{f"recall_{label}_accuracy_d>{n_memory}": round(sum(e.within(n_memory + 1)) / len(e.seeds), 3)
       for label, e in recall.items()},
})
