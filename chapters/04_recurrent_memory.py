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
# This chapter builds the paper's **Memory Block** from its seven equations, checks it against the package's
# fast version, stacks it on an LSTM in two ways (RM and RMR), trains RM on a slice of Penn Treebank, looks at
# what its memory reads, and ends with our verdict on the paper's claims.
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
from pathlib import Path

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from torch import nn

import mlm
from mlm.analysis.memory_block import average_by_position, collect_memory_attention
from mlm.baselines import count_baseline
from mlm.evidence import paper_evidence
from mlm.plots import memory_block_diagram, memory_verdicts, train_valid_panels
from mlm.sampling import sample_text
from mlm.training import build_batches
from mlm.utils import set_seed
from mlm.widgets import memory_explorer

set_seed(seed)

# %% tags=["remove-input"] jupyter={"source_hidden": true}
from mlm.book import size_note
from mlm.utils import smoke_tokens

size_note(size)  # shows nothing at the reduced size
trained = not smoke_tokens()  # False in a smoke run (python -m mlm book --smoke): its models learned nothing

# %% [markdown]
# ## 1. Why a memory of words
#
# An LSTM predicts the next word from its state $h_t$ alone, a vector of $d$ numbers, where $d$ is the model's
# **width**. Every earlier word it will need must be squeezed into that vector as it goes by, and kept there
# until it is needed. The key-value recall task of chapter 00 makes the demand exact: a line names a key with a
# value, the key comes back $\Delta$ words later, and the model must say the value again. An LSTM can answer
# only if its state carried the value across all $\Delta$ steps.
#
# A model that also holds the last $n$ input words *as words* has a second route while $\Delta \le n$: the
# value is still in its memory, and the state need only point at the right slot, not carry the value itself
# (section 2 says what that pointing takes). Beyond that **reach** (chapter 06 measures it) only the LSTM
# can help. In ordinary text the
# memory can hold the word a verb agrees with or the unit a number needs. And the reading is visible: the
# weights say which earlier word was read at each step, a window onto what a language model uses.

# %% [markdown]
# ## 2. The Memory Block, equation by equation
#
# The figure shows where the block sits and the shape of every tensor in it; this section builds it from the
# paper's equations, then places it in the two models the paper compares, RM and RMR.

# %%
memory_block_diagram(n=15, d=128)
plt.show()

# %% [markdown]
# **A memory network** (Sukhbaatar et al., 2015) answers a query from stored items. Every item is embedded
# twice: by a table $M$ as a **key** $m_i$, compared with the query, and by a table $C$ as a **value** $c_i$,
# returned. Two tables separate *where to look* from *what to read*. In the Memory Block the items are the $n$
# most recent input words $x_{t-n+1}, \dots, x_t$, the current word included, and the query is the LSTM output
# $h_t$. Stacking the keys of the words in memory into the matrix $M_i$ and their values into $C_i$ (both
# $n \times d$, from $|V| \times d$ tables over the vocabulary $V$; the subscript names the set $\{x_i\}$ of
# words in memory), one read is
#
# $$ p_t = \mathrm{softmax}(M_i h_t) \quad (1), \qquad s_t = C_i^\top p_t \quad (3): $$
#
# a weight for each word in memory, and the values averaged by those weights, the **context** $s_t$.

# %%
def read_memory(keys, values, h):
    """One read: keys and values (batch, m, d) of the m words in memory, query h (batch, d)."""
    p = torch.softmax((keys @ h[:, :, None]).squeeze(-1), dim=-1)  # (batch, m): Eq. 1, a weight per word
    s = (p[:, None, :] @ values).squeeze(1)  # (batch, d): Eq. 3, s_t = C_i^T p_t
    return p, s


keys = torch.tensor([[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]])  # (1, 3, 2): three words in memory, d = 2
values = torch.tensor([[[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]])  # (1, 3, 2)
p, s = read_memory(keys, values, h=torch.tensor([[2.0, 0.0]]))  # a query that points along the first axis
print("weights p:", [round(w, 2) for w in p[0].tolist()], "  context s:", [round(x, 2) for x in s[0].tolist()])

# %% [markdown]
# The query agrees with the first and third keys (score 2) and not the second (score 0), so the first and third
# words share most of the weight, and the context is mostly the first word's value: the third word's value is
# zero.
#
# **The temporal matrix.** A set of words has no order, but the previous word usually matters more than the
# word twelve back. A learned matrix $T$ ($n \times d$) adds one vector per memory position to the keys,
#
# $$ p_t = \mathrm{softmax}\big((M_i + T)\, h_t\big) \quad (2), $$
#
# so the attention can prefer positions as well as words. Variants with $T$ are written "+tM", without "-tM".
# At a sentence start the memory holds only $m < n$ words, and the paper uses the slice $T[1:m]$ (its section
# 4.2): the sentence's first word takes row 1, the current word row $m$. Until the memory fills, row $j$ thus
# means "the $j$-th word of the sentence"; after that, "so many words back".
#
# **What the keys know.** $M$ embeds each word on its own, so a key says which word a slot holds, not what came
# before it. The block cannot ask for "the word that followed this key": it finds a value only where $h_t$
# already points at that word, or, through $T$, at how far back it lies. Here it differs from the attention over
# LSTM outputs of chapters 02 and 03, whose every key is a state that has read the sentence up to it.
#
# **The gate.** A memory network adds what it read to the query, $s_t + h_t$. In a language model $h_t$ is the
# LSTM's whole summary of the sentence, and a blind sum can overwrite it. Tran et al. compose the two with a
# GRU-like unit that decides, dimension by dimension, how much of each to pass on:
#
# $$ z_t = \sigma(W_{sz} s_t + U_{hz} h_t) \;(4), \quad r_t = \sigma(W_{sr} s_t + U_{hr} h_t) \;(5), $$
# $$ \tilde h_t = \tanh\big(W s_t + U (r_t \odot h_t)\big) \;(6), \qquad
#    h^m_t = (1 - z_t) \odot h_t + z_t \odot \tilde h_t \;(7). $$
#
# With the update gate $z_t$ closed the block passes $h_t$ on unchanged; open, it replaces $h_t$ by a candidate
# built from the context and a reset-gated $h_t$. After the "tM" part of a name, the hyphen only separates:
# "-g" means the gate, "-l" the sum. So RM(+tM-g) has $T$ and the gate, RMR(-tM-g) the gate without $T$. The
# whole block, one step at a time (each $W$ carries a bias, as in the authors' code):

# %%
class MemoryBlock(nn.Module):
    """Tran et al.'s Memory Block (Eq. 1-7) over the n most recent input words, one step at a time."""

    def __init__(self, vocab_size: int, d: int, n: int, gating: bool = True):
        super().__init__()
        self.n, self.gating = n, gating
        self.M = nn.Embedding(vocab_size, d)  # keys m_i (Eq. 1-2)
        self.C = nn.Embedding(vocab_size, d)  # values c_i (Eq. 3)
        self.T = nn.Parameter(torch.zeros(n, d))  # temporal matrix: a row per memory position (Eq. 2)
        self.W_z, self.U_z = nn.Linear(d, d), nn.Linear(d, d, bias=False)  # update gate (Eq. 4)
        self.W_r, self.U_r = nn.Linear(d, d), nn.Linear(d, d, bias=False)  # reset gate (Eq. 5)
        self.W_h, self.U_h = nn.Linear(d, d), nn.Linear(d, d, bias=False)  # candidate (Eq. 6)

    def compose(self, s, h):  # g(s_t, h_t): (batch, d) each
        if not self.gating:
            return s + h  # the memory network's plain sum
        z = torch.sigmoid(self.W_z(s) + self.U_z(h))  # Eq. 4
        r = torch.sigmoid(self.W_r(s) + self.U_r(h))  # Eq. 5
        h_tilde = torch.tanh(self.W_h(s) + self.U_h(r * h))  # Eq. 6
        return (1 - z) * h + z * h_tilde  # Eq. 7

    def forward(self, h, words):  # h: (batch, time, d) LSTM outputs; words: (batch, time) input ids
        outputs, attention = [], []
        for t in range(words.size(1)):
            ids = words[:, max(0, t - self.n + 1): t + 1]  # (batch, m): the m <= n newest words, current last
            keys = self.M(ids) + self.T[: ids.size(1)]  # (batch, m, d): M_i + T, the slice T[1:m]
            p, s = read_memory(keys, self.C(ids), h[:, t])  # (batch, m), (batch, d): Eq. 2-3
            outputs.append(self.compose(s, h[:, t]))  # (batch, d): h^m_t
            attention.append(F.pad(p, (self.n - p.size(1), 0)))  # (batch, n): empty slots first, weight 0
        return torch.stack(outputs, 1), torch.stack(attention, 1)  # (batch, time, d), (batch, time, n)


# %% [markdown]
# A tiny example: one sentence of six words, a memory of $n = 4$ words and width $d = 8$. Each row of the
# attention is one step; the memory fills from the right, and from the fifth word on the oldest word drops out.
# The block is untrained and $h$ random, so only the zeros matter: the empty slots of the first three steps.

# %%
torch.manual_seed(seed)
tiny = MemoryBlock(vocab_size=20, d=8, n=4)
h, words = torch.randn(1, 6, 8) / 2, torch.tensor([[3, 14, 15, 9, 2, 6]])  # (batch, time, d), (batch, time)
out, attention = tiny(h, words)
print("h^m:", tuple(out.shape), "  attention:", tuple(attention.shape), "(batch, time, n)")
print(attention[0].detach().numpy().round(2))

# %% [markdown]
# **The package's fast version.** The loop costs one small product per step. `mlm.models.recurrent_memory`
# computes every step at once: the scores of all steps are a band of one matrix product between the LSTM outputs
# and the keys of the sentence, and a mask gives the empty slots weight exactly 0. It must compute the same
# function; given the same weights, it does:

# %%
from mlm.models.recurrent_memory import MemoryBlock as FastMemoryBlock

fast = FastMemoryBlock(vocab_size=50, hidden_size=16, memory_size=5).double()  # +tM, gate, the slice T[1:m]
for parameter in fast.parameters():
    nn.init.uniform_(parameter, -0.5, 0.5)  # T starts at zero: give every weight a random value
ours = MemoryBlock(vocab_size=50, d=16, n=5).double()
ours.load_state_dict(fast.state_dict())  # the same names, so the same weights
h, words = torch.randn(2, 9, 16, dtype=torch.double), torch.randint(1, 50, (2, 9))  # two sentences of nine words
(fast_out, fast_p), (our_out, our_p) = fast(h, words), ours(h, words)
assert torch.allclose(fast_out, our_out) and torch.allclose(fast_p, our_p)
print("fast == loop: outputs", tuple(fast_out.shape), "and attention", tuple(fast_p.shape))

# %% [markdown]
# The authors' code differs from the paper in small ways (which row of $T$ the newest word takes, a second
# temporal table on the values, a linear sum $W h_t + s_t$); the package offers each as an option, and this
# chapter follows the paper.
#
# ### RM and RMR
#
# The block reads the LSTM output $h_t$ and the input words, and keeps nothing of its own from step to step.
# Tran et al. place it in two ways. In **RM** (Recurrent-Memory) the block sits on top of the LSTM and the
# softmax reads $h^m_t$ directly: what the block read at step $t$ is forgotten at step $t+1$. **RMR**
# (Recurrent-Memory-Recurrent) puts a second LSTM on top of the block, which can carry the readings forward.
# Neither feeds anything back into the lower LSTM, so the LSTM first runs over the whole sentence and the block
# then reads every step:

# %%
class RecurrentMemoryLM(nn.Module):
    """RM (embedding, LSTM, Memory Block, softmax) or, with rmr=True, RMR (a second LSTM above the block)."""

    def __init__(self, vocab_size: int, d: int, n: int, rmr: bool = False):
        super().__init__()
        self.embed, self.lstm = nn.Embedding(vocab_size, d), nn.LSTM(d, d, batch_first=True)
        self.block = MemoryBlock(vocab_size, d, n)
        self.top = nn.LSTM(d, d, batch_first=True) if rmr else None
        self.out = nn.Linear(d, vocab_size)

    def forward(self, words):  # (batch, time) -> logits (batch, time, |V|), attention (batch, time, n)
        h, _ = self.lstm(self.embed(words))  # (batch, time, d)
        hm, p = self.block(h, words)  # (batch, time, d), (batch, time, n)
        if self.top is not None:
            hm, _ = self.top(hm)  # RMR: the readings travel on in a second LSTM
        return self.out(hm), p


# %% [markdown]
# At the paper's width on Penn Treebank (PTB), the memory nearly doubles the model. The gate costs $6d^2$
# weights and $3d$ biases, and $T$ another $nd = 1{,}920$, but $M$ and $C$ are two more vocabulary-sized
# tables:

# %%
def count(module):
    return sum(p.numel() for p in module.parameters())


paper_rm = RecurrentMemoryLM(vocab_size=10_002, d=128, n=15)  # PTB's 10,000 words, <bos> and padding
paper_rmr = RecurrentMemoryLM(vocab_size=10_002, d=128, n=15, rmr=True)
block = count(paper_rm.block)
print(f"RM {count(paper_rm):,} parameters, RMR {count(paper_rmr):,}; the block {block:,}, "
      f"so an LSTM model without it has {count(paper_rm) - block:,}")

# %% tags=["remove-input"] jupyter={"source_hidden": true}
# The numbers above: the tiny read, and that this RM, RMR and the LSTM without the block have exactly the
# parameters of the package's models of the paper's presets (the training below builds those).
from mlm.training import build_model

assert [round(w, 2) for w in p[0].tolist()] == [0.47, 0.06, 0.47]
assert [round(x, 2) for x in s[0].tolist()] == [0.47, 0.06]
package_count = {name: count(build_model(mlm.get_preset(f"tran2016-ptb-{name}"), 10_002))
                 for name in ("rm-tm-g", "rmr-tm-g", "lstm1")}
assert package_count == {"rm-tm-g": count(paper_rm), "rmr-tm-g": count(paper_rmr),
                         "lstm1": count(paper_rm) - block}, package_count
assert 1.95 < count(paper_rm) / (count(paper_rm) - block) < 2  # "nearly doubles"
assert attention[0, 0, :3].sum() == attention[0, 1, :2].sum() == attention[0, 2, 0] == 0
assert attention[0, 2, 1:].min() >= 0.005 and attention[0, 3:].min() >= 0.005  # no other weight prints as 0

# %% [markdown]
# ## 3. Watch it train
#
# The paper's setting (its section 4.2): $d = 128$ for the embeddings, the LSTM and both memory tables,
# $n = 15$, plain SGD at learning rate 1 for four epochs, then halved at every epoch from the fifth, 15 epochs in
# all, gradients clipped at 5, batches of 20 sentences of equal length, and the state and memory reset with
# every sentence.
#
# The **reduced size** trains RM(+tM-g), the paper's best variant in German and Italian, for 3 epochs on the first
# 60k tokens of PTB's training text (about 6% of it), in batches of 5 sentences, with the learning rate halved at
# every epoch from the second; validation and test read their first 10k tokens. The yardstick is the **count
# baseline of its own tokens** (`mlm.baselines.count_baseline`): an interpolated bigram counted on exactly the
# word pairs the model trained on. A network that does not beat it has learned less than word-pair counts, and
# nothing in its memory is worth reading.

# %%
common = {"train.seed": seed, "train.device": device, **({"data.data_dir": data_dir} if data_dir else {})}
if size == "reduced":
    common["data.max_train_tokens"] = 60_000  # the first 60k tokens of the training text
cfg = mlm.get_preset("tran2016-ptb-rm-tm-g", size, overrides=common)
rm = mlm.train(cfg, run_dir=Path(runs_dir) / f"tran2016-ptb-rm-tm-g-{size}-seed{seed}")
baseline = count_baseline(rm.config, rm.corpus)  # unigram and bigram counted on the same training tokens
train_valid_panels({f"RM(+tM-g), {size} size": rm.history}, baseline=baseline["bigram_valid"],
                   baseline_label="bigram of the same tokens (validation)")
plt.show()
print(f"test perplexity over {baseline['test_tokens']:,} tokens: RM(+tM-g) {rm.result['test_ppl']:.1f}, "
      f"bigram {baseline['bigram_test']:.1f}, unigram {baseline['unigram_test']:.1f}")

# %% tags=["remove-input"] jupyter={"source_hidden": true}
# The settings quoted above, and the reduced model beating the bigram of its own tokens (on any CPU or
# thread count: a margin, not digits).
paper_cfg = mlm.get_preset("tran2016-ptb-rm-tm-g")
assert (paper_cfg.model.hidden_size, paper_cfg.model.memory_size, paper_cfg.train.lr, paper_cfg.train.epochs,
        paper_cfg.train.decay_start, paper_cfg.train.clip, paper_cfg.data.batch_size) == (128, 15, 1.0, 15, 4, 5.0, 20)
assert not trained or rm.result["test_ppl"] < baseline["bigram_test"], (rm.result, baseline)
if size == "reduced":
    assert (cfg.train.epochs, cfg.train.decay_start, cfg.data.batch_size, cfg.data.max_eval_tokens) == (3, 1, 5, 10_000)
    assert cfg.data.max_train_tokens == 60_000 and round(baseline["train_tokens"], -4) == 60_000
    assert 0.06 < baseline["train_tokens"] / 929_589 < 0.07, baseline["train_tokens"]  # "6% of" PTB's training text
    gain = 1 - rm.result["test_ppl"] / baseline["bigram_test"]
    assert 0.15 < gain < 0.25, f"the prose says 'about a fifth below the bigram': {gain:.1%}"

# %% [markdown]
# The model ends about a fifth below the bigram: it has learned more than word pairs. Sentences sampled from it
# at temperature 0.8 (`mlm.sampling.sample_text`; each line starts from `<bos>` with an empty memory) are locally
# plausible and ungrammatical, as expected after 60k tokens:

# %%
print(sample_text(rm.model, rm.corpus.vocab, length=60, temperature=0.8, seed=seed, protocol="sentence"))

# %% [markdown]
# ### What the memory reads
#
# The figure below is the trained block's attention over one sentence. Each row is one step, labelled by its
# current word and the word it predicts (*said → it*), and each column an input in memory: the current word on
# the diagonal and at most 14 words before it (grey cells are outside the memory).
#
# A row with $k$ words in memory would give each $1/k$ if it did not choose; each cell shows its weight against
# that uniform share, on a log scale: white is uniform, red more than its share, blue less. The table lists the
# most attended word of each row and the top five predictions. (In JupyterLab you can type your own sentence,
# PTB style: lower case, numbers as `N`.)

# %%
sentence = "the company said it expects to report a loss for the third quarter because of higher costs"
memory_explorer({f"RM(+tM-g), {size}": rm.model}, rm.corpus.vocab, [sentence])
average = average_by_position(collect_memory_attention(rm.model, build_batches(rm.config, rm.corpus, "test")))
print(f"over the test set (full memory only): current word {average[-1]:.2f}, "
      f"the seven oldest words {sum(average[:7]):.2f} together (uniform: {1 / 15:.2f} and {7 / 15:.2f})")

# %% tags=["remove-input"] jupyter={"source_hidden": true}
# The paragraph below: nearly half of the weight on the current word, the seven oldest words well under
# half of their uniform share.
if size == "reduced":  # the paragraph below reads the reduced run
    assert average.index(max(average)) == 14 and 0.42 < average[-1] < 0.52, average  # "about seven times" uniform
    assert sum(average[:7]) < 0.5 * 7 / 15, average
    from mlm.analysis.memory_block import probe_memory_sentence

    probe = probe_memory_sentence(rm.model, rm.corpus.vocab, sentence.split())  # what the figure shows
    inputs, weights = probe["inputs"], probe["attention"]  # (targets, inputs): row t reads inputs max(0, t-14) .. t
    read = [inputs[int(row.argmax())] for row in weights]  # the most attended input per row
    current = [int(row.argmax()) == t for t, row in enumerate(weights)]
    assert sum(current) > len(current) / 2 and all(0.55 < weights[t, t] < 0.75 for t in (-2, -1)), read
    assert inputs[0] == "<bos>" and round(float(weights[0, 0]), 3) == 1  # the first row: one word, all the weight

    def reads(after: str, word: str, at: int | None = None) -> bool:
        """In the row after `after` (at index `at`), `word` is among the two most attended inputs and gets more than
        twice its uniform share: a tolerant reading, since a retrained model's weights move a little."""
        t = inputs.index(after) if at is None else at
        row, j = weights[t, : t + 1], inputs.index(word)
        return inputs[t] == after and j in row.topk(2).indices.tolist() and row[j] > 2 / (t + 1)

    assert reads("said", "<bos>"), read
    assert reads("it", "said") and reads("the", "a", at=11), read

# %% [markdown]
# The current word takes the largest weight in most rows, and at the end of the sentence about two thirds of
# it. Early in the sentence a large weight is only a small multiple of a large uniform share, so those diagonal
# cells look pale; the first row, one word holding all the weight, is white. Some rows lean on the sentence
# start `<bos>`, the one after *said* among them: it serves as a default slot when nothing in memory helps. Others
# read a word further back: after *it* the verb *said*, and after the *the* of *for the third* the *a* of *a
# loss*.
#
# Over the whole test set the current word gets nearly half the weight, about seven times the uniform share,
# and the seven oldest words together get less than half of theirs: after three short epochs the block looks
# mostly at the last few words.

# %% [markdown]
# ## 4. What the paper claims
#
# Tran et al. compare their models at **equal width**: every network at $d = 128$, so RM and RMR carry the memory's
# tables on top of the LSTM's parameters. On 26M words of English news (Table 2), RM(+tM-g) reaches a test
# perplexity of 128.8 and RMR(-tM-g), the paper's best RMR, 131.2, against 145.1 for the 1-layer LSTM, 139.7 for
# a 2-layer one and 136.6 for a 3-layer one. On PTB (section 4.3) RM(+tM-g) scores 123.5 against 126.1 for a
# 3-layer LSTM, a gain of 2.1%.
#
# We train the same comparisons on PTB with the paper's width and schedule, three seeds of each model. The two
# corpora differ in size and vocabulary, so only the relative changes compare. Each gets one of the book's five
# labels ([chapter 00, section 6](00_language_modelling.ipynb)): the 95% interval of our change read against a
# ±1% margin and the paper's change, widened by the hardware allowance (the thin bar in the figure below) where
# the two sides ran on different kinds of machine.
#
# The book also asks a second question: at an equal parameter count, each width cut to fit the LSTM's 2.70M,
# does the memory still pay? Its tables have a row per word of the vocabulary, so the cut leaves RM an LSTM 66
# units wide and RMR two layers of 65.

# %% [markdown]
# ## Our verdict
#
# At the paper's width on PTB, three seeds a side, RM beats the 1-layer LSTM by 2.3%, a *smaller gain* than the
# paper's 11.2% on English news, and the 3-layer LSTM by 12.0% (the paper's: 2.1%), *larger than reported: check
# the control*, since our 3-layer LSTM ends behind our 1-layer one (131.1 against 118.1). RMR ends 3.4% *worse*
# than the 1-layer LSTM, where the paper reports a 9.6% gain, and 0.5% above the 2-layer LSTM of its own depth,
# *inconclusive*, though our interval rules out the paper's 6.1% gain. At an equal parameter count RM and RMR are
# both *worse*, by 4.6% and 16.4%; [report r04](../reports/r04_tran.ipynb) holds the runs behind every row.

# %%
rows = paper_evidence("04", "../results", manifests=("cpu", "compare"))
memory_verdicts(rows, panels={"cpu": "The paper's question: equal width (d = 128)",
                              "compare": "The book's question: an equal parameter count"}, reader=True)
plt.show()

# %% tags=["remove-input"] jupyter={"source_hidden": true}
# The verdict above reads these rows; the assertions fail when a stored run changes them.
from mlm.claims import relative_change
from mlm.evidence import paper_numbers

import json
import statistics

verdicts = {(manifest, claim.model, claim.control): row for manifest, claim, row in rows}
quoted = {("cpu", "rm-tm-g", "lstm1"): ("smaller gain", -2.3, -3.3, -1.3, -11.2),
          ("cpu", "rmr-notm-g", "lstm1"): ("worse", 3.4, 1.4, 5.4, -9.6),
          ("cpu", "rm-tm-g", "lstm3"): ("larger than reported: check the control", -12.0, None, None, -2.1),
          ("compare", "rm-tm-g", "lstm"): ("worse", 4.6, None, None, None),
          ("compare", "rmr-notm-g", "lstm"): ("worse", 16.4, None, None, None),
          ("cpu", "rmr-notm-g", "lstm2"): ("inconclusive", 0.5, -1.5, 2.5, -6.1)}
for key, (label, change_pct, low_pct, high_pct, paper_pct) in quoted.items():
    row = verdicts[key]
    change, low, high = relative_change(*row.seeds[:2])
    assert row.verdict == label, (key, row.verdict, row.evidence)
    assert round(100 * change, 1) == change_pct, (key, change)
    if paper_pct is not None:
        assert round(100 * row.seeds[2], 1) == paper_pct, (key, row.seeds[2])
    if low_pct is not None:
        assert [round(100 * (low - row.machine), 1), round(100 * (high + row.machine), 1)] == [low_pct, high_pct]
        if paper_pct is not None and key[1] == "rmr-notm-g" and key[2] == "lstm2":  # "rules out the paper's gain"
            assert low - row.machine > row.seeds[2], row
claims = {(manifest, claim.model, claim.control): paper_numbers(claim)[:2] for manifest, claim, _ in rows}
assert {key: claims[key] for key in list(quoted)[:3]} == {  # section 4's numbers
    ("cpu", "rm-tm-g", "lstm1"): (128.8, 145.1), ("cpu", "rmr-notm-g", "lstm1"): (131.2, 145.1),
    ("cpu", "rm-tm-g", "lstm3"): (123.5, 126.1)}, claims
assert mlm.get_preset("tran2016-ptb-lstm3").paper["test_en_news"] == 136.6  # the paper's 3-layer LSTM ends better
assert mlm.get_preset("tran2016-ptb-lstm1").paper["test_en_news"] == 145.1
assert mlm.get_preset("tran2016-ptb-lstm2").paper["test_en_news"] == 139.7
from mlm.manifests import compare

assert (compare.WIDTHS["rm-tm-g"], compare.WIDTHS["rmr-notm-g"]) == (66, 65), compare.WIDTHS  # "66 units", "65"
lstm1, lstm3 = verdicts["cpu", "rm-tm-g", "lstm1"].seeds[1], verdicts["cpu", "rm-tm-g", "lstm3"].seeds[1]
assert [round(statistics.fmean(x), 1) for x in (lstm3, lstm1)] == [131.1, 118.1], (lstm3, lstm1)
assert len(lstm1) == len(lstm3) == len(verdicts["cpu", "rm-tm-g", "lstm1"].seeds[0]) == 3
assert verdicts["cpu", "rm-tm-g", "lstm1"].tuning.startswith("neither side tuned") and "15 epochs" in verdicts[
    "cpu", "rm-tm-g", "lstm1"].tuning
assert round((count(paper_rm) - block) / 1e6, 2) == 2.70  # "the LSTM's 2.70M", the equal parameter count
for run in ("lstm", "rm-tm-g", "rmr-notm-g"):  # "each width cut to fit": within 1% of the LSTM's parameters
    folders = Path("../results/compare-ptb", run).glob("*/result.json")
    stored = [json.loads(f.read_text())["parameters"] for f in folders]
    assert stored and all(abs(x / (count(paper_rm) - block) - 1) < 0.01 for x in stored), (run, stored)

# %% [markdown]
# **Exercise 04** ([`exercises/ex04_memory_block.py`](../exercises/ex04_memory_block.py)): the Memory Block
# yourself, computed for all steps at once: its window, the temporal rows, the attention of Eq. 2-3 and the gate,
# checked with `python -m exercises.grader 04`.

# %% tags=["remove-input"] jupyter={"source_hidden": true}
from mlm.book import record

record("04_recurrent_memory", {
    "baseline_test_ppl": round(baseline["bigram_test"], 1),
    "unigram_test_ppl": round(baseline["unigram_test"], 1),
    "RM(+tM-g)_test_ppl": round(rm.result["test_ppl"], 1),
})
