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
# # Chapter 2 — Attentive language models (Salton, Ross & Kelleher, 2017)
#
# An LSTM carries the whole history of a sentence in one vector of fixed size. Salton et al. keep every output
# of the LSTM's top layer instead, and before predicting the next word the model looks back over the earlier
# outputs of the *same sentence* with attention. This chapter builds their attention *head*, a module between
# the LSTM's top layer and the softmax, from the paper's equations, trains a small one on PTB, looks at where
# its attention goes, and ends with what the book's runs say about the paper's claim.
#
# Paper: *Attentive Language Models*, IJCNLP 2017 (equation numbers below are the paper's).

# %% tags=["parameters"]
size = "reduced"  # "reduced" (minutes on a CPU) or "full" (the paper's settings; a GPU is advised)
device = "auto"  # "auto", "cpu", "cuda" or "mps"
seed = 0
data_dir = None  # None: $MLM_DATA_DIR, then ~/.cache/mlm
runs_dir = "../runs"  # run folders; a finished run is loaded, not retrained

# %%
import itertools
import math
from pathlib import Path

import matplotlib.pyplot as plt
import torch
from torch import nn

import mlm
from mlm.models.attentive import causal_memory_mask, masked_softmax
from mlm.utils import choose_device, set_seed

set_seed(seed)

# %% tags=["remove-input"] jupyter={"source_hidden": true}
from mlm.book import size_note
from mlm.utils import smoke_tokens

size_note(size)  # shows nothing at the reduced size
trained = not smoke_tokens()  # False in a smoke run (python -m mlm book --smoke): its models learned nothing

# %% [markdown]
# ## 1. Why a memory of the sentence
#
# The LSTM of chapter 01 reads $w_1, \dots, w_t$ and must squeeze everything it may need later into its output
# $h_t$ and its cell. What is not refreshed fades through the forget gates, and so does the gradient that would
# teach the network to keep it. Salton et al. name two costs: a dependency that spans many words is lost by
# the time it is needed, and one wrong guess lingers in the state and disturbs the next predictions.
#
# Attention sidesteps the squeeze. Instead of hoping that $h_t$ still holds what $h_3$ knew, the model keeps
# $h_3$ itself and reads it back when it helps. Salton et al. keep the outputs of the current sentence only:
# under the *sentence protocol* of chapter 00 the LSTM state starts from zero at every sentence, and so does
# this memory.

# %% [markdown]
# ## 2. Build it
#
# ### The memory and its weights (Eq. 3-4)
#
# At step $t$ the memory holds $h_1, \dots, h_{t-1}$. The head gives each stored output a weight $a_{t,i}$ and
# reads their weighted sum, the *context* $c_t$:
#
# $$ c_t = \sum_{i=1}^{t-1} a_{t,i}\, h_i \quad (3), \qquad a_{t,i} = \frac{\exp \mathrm{score}(h_i, h_t)}{\sum_{j=1}^{t-1} \exp \mathrm{score}(h_j, h_t)} \quad (4). $$
#
# The weights of a step are positive and sum to 1 (the paper writes $a_i$; the weights change with $t$, so we
# keep both indices). $h_t$ enters the memory only *after* it has been used: the model never attends to its
# current output, which it has anyway. At $t = 1$ the memory is empty and the paper does not say what happens;
# we take a zero context.
#
# All steps of a batch are computed at once. The weights of every (step $t$, slot $i$) pair form a
# `(batch, time, time)` tensor, and a **memory mask** keeps the pairs with $i < t$ whose slot is a word, not
# padding. Row $t$ of the mask lists the slots step $t$ may read; the first row is empty:

# %%
pad = torch.tensor([[True, True, True, True, False, False]])  # 4 real steps, padded to 6
print(causal_memory_mask(pad, batch=1, time=6, device="cpu")[0].int())  # rows: step t, columns: slot i

# %% [markdown]
# The last two rows are padding: they still read the four words, but their predictions are never scored.
# `masked_softmax(scores, allowed)` is Eq. 4 restricted to the allowed slots; a row with none gets all-zero
# weights, hence the zero context at $t = 1$. Exercise 02 asks you to write both functions.
#
# ### Two scores (Eq. 9-10)
#
# The paper offers two score functions (its Eq. 5 and 6 choose one):
#
# $$ \mathrm{single}(h_i) = v_s^\top \tanh(W_s h_i) \quad (9), \qquad \mathrm{combined}(h_i, h_t) = v_s^\top \tanh(W_s h_i + W_q h_t) \quad (10). $$
#
# The **single** score rates each stored output on its own, a fixed "absolute relevance"; its weights still
# move from step to step because the softmax renormalises over a memory that grows. The **combined** score
# asks how relevant $h_i$ is *to the current output* $h_t$, so the head can compare what it is looking for with
# what each slot holds. $W_q h_t$ is the same for every slot, so it is computed once per step.
#
# ### The merge (Eq. 7-8)
#
# The context is merged with the current output, and the softmax reads the result with its weights $E$ tied to
# the input embeddings (chapter 01):
#
# $$ h'_t = \tanh(W_c [h_t; c_t] + b_c) \quad (7), \qquad p(w_{t+1} \mid w_{\le t}) = \mathrm{softmax}(E\, h'_t + b) \quad (8). $$
#
# With $d$ the LSTM's width and $d_a$ the head's attention width, $W_s, W_q \in \mathbb{R}^{d_a \times d}$,
# $v_s \in \mathbb{R}^{d_a}$, $W_c \in \mathbb{R}^{d \times 2d}$ and $b_c \in \mathbb{R}^{d}$ (the paper writes
# $b_t$ and $W$, and calls the predicted word $w_t$). The paper does not give $d_a$; the book takes $d_a = d$.
# The whole head is one module:

# %%
class AttentiveHead(nn.Module):
    """Salton et al.'s head: attention over the sentence's earlier outputs, then the merge of Eq. 7."""

    def __init__(self, hidden: int, attn: int, score: str = "single"):
        super().__init__()
        self.W_s = nn.Linear(hidden, attn, bias=False)  # Eq. 9 and 10
        self.W_q = nn.Linear(hidden, attn, bias=False) if score == "combined" else None  # Eq. 10 only
        self.v = nn.Linear(attn, 1, bias=False)  # v_s
        self.W_c = nn.Linear(2 * hidden, hidden)  # W_c and b_c of Eq. 7

    def forward(self, h, mask):
        """h: (batch, time, hidden), the LSTM's top outputs; mask: (batch, time), True at words."""
        keys = self.W_s(h)[:, None]  # (batch, 1, time i, attn): the same for every step t
        if self.W_q is not None:
            keys = keys + self.W_q(h)[:, :, None]  # (batch, time t, time i, attn)
        scores = self.v(torch.tanh(keys)).squeeze(-1)  # (batch, 1 or time t, time i)    Eq. 9 or 10
        allowed = causal_memory_mask(mask, *h.shape[:2], h.device)  # (batch, time t, time i)
        a = masked_softmax(scores.expand_as(allowed), allowed)  # (batch, time t, time i)  Eq. 4
        c = a @ h  # (batch, time t, hidden)                                                Eq. 3
        return torch.tanh(self.W_c(torch.cat([h, c], dim=-1))), a  # (batch, time, hidden)  Eq. 7


# %% [markdown]
# A tiny example: one sentence of five steps, four units, the combined score. Row $t$ of the weights holds
# $a_{t,1}, \dots, a_{t,t-1}$: the first row is empty, the second puts everything on $h_1$, and every later row
# sums to 1. Untrained, every score is near zero, so the weights are near uniform.

# %%
torch.manual_seed(0)
head = AttentiveHead(hidden=4, attn=3, score="combined")
h = torch.randn(1, 5, 4)  # (batch, time, hidden)
h_out, a = head(h, mask=torch.ones(1, 5, dtype=torch.bool))
print("h':", tuple(h_out.shape), " weights:", tuple(a.shape))
print(a[0].detach().numpy().round(2))

# %% [markdown]
# The figure follows one batch through the head with the shape of every tensor: B sentences of T steps,
# H = $d$ hidden units, A = $d_a$ attention units, V words. The dashed branch is the combined score's.

# %%
from mlm.plots import attentive_head_diagram

attentive_head_diagram()
plt.show()

# %% [markdown]
# The package's `mlm.models.attentive.AttentiveHead` is the same head with one economy: for the combined score
# it puts only the pairs $i < t$ through the $\tanh$, under half of the `(time, time)` grid. Given the same
# parameters, both must compute the same outputs, here on three sentences, one of them padded:

# %%
h = torch.randn(3, 9, 16, dtype=torch.double)  # (batch, time, hidden)
mask = torch.ones(3, 9, dtype=torch.bool)
mask[1, 6:] = False  # the second sentence has 6 words, then padding
for score in ("single", "combined"):
    fast = mlm.models.attentive.AttentiveHead(hidden_size=16, score=score).double()
    ours = AttentiveHead(hidden=16, attn=16, score=score).double()
    ours.load_state_dict(fast.state_dict())  # the same parameters
    assert torch.allclose(ours(h, mask)[0], fast(h, mask=mask).output)
    print(f"{score:<8} score: the notebook's head and the package's agree")

# %% [markdown]
# **The official code.** Salton et al.'s published code departs from these equations; above all, its training
# loop builds the attention step only once, so during training the memory never holds an earlier output and the
# attention weights get no gradient; only at test time does the memory fill, and the model then attends with
# weights still at their random start. The book follows the equations, so its attention is trained;
# [report r02](../reports/r02_salton.ipynb) lists every departure and the options that reproduce them.

# %% [markdown]
# ## 3. Watch it train
#
# The paper trains on PTB one sentence per row (cut at 35 words, batches of 32), with SGD at a learning rate
# of 1 that halves every epoch after the 12th, 50% dropout on the non-recurrent connections, gradients clipped at
# norm 5 and tied embeddings. It minimises the mean negative log probability of the target words; its official
# code sums the loss over each sentence and averages over the batch, as the book does. The reduced size
# keeps the recipe but shrinks it to minutes: 2 x 256 units instead of 2 x 650, the first 80,000 training tokens,
# batches of 8 sentences, 4 epochs with the rate halving from the third. Validation and test use the whole sets.
#
# ### The head's learning rate
#
# One change is not about size: the head learns at a tenth of the rate. To see the need for it, we train a fresh
# LSTM and a fresh single-score model for their first 150 updates, the latter once with one rate everywhere and
# once with the head at a tenth, and record each batch's training perplexity (the figure draws its running
# median over 9 batches, so that one odd batch does not stretch the axis). The dashed line is a *unigram* model, the
# word frequencies counted on the same tokens and scored on validation: roughly the best a model can do that
# ignores the words read.

# %%
from mlm.baselines import count_baseline
from mlm.evaluation import masked_nll
from mlm.training import build_batches, build_optimizer

common = {"train.seed": seed, "train.device": device, **({"data.data_dir": data_dir} if data_dir else {})}
ptb = mlm.load_data(mlm.get_preset("salton2017-ptb-single", size, overrides=common))
baseline = count_baseline(mlm.get_preset("salton2017-ptb-lstm", size, overrides=common), ptb)  # same tokens


def first_updates(preset, head_lr_scale, updates=150):
    """Training perplexity of each of a fresh model's first ``updates`` batches."""
    cfg = mlm.get_preset(preset, size, overrides={**common, "train.head_lr_scale": head_lr_scale})
    set_seed(seed)
    on = choose_device(device)  # "auto": a GPU when there is one
    model = mlm.build_model(cfg, len(ptb.vocab), ptb.vocab.pad_id).to(on)
    optimizer = build_optimizer(cfg, model)  # the head's parameters at head_lr_scale x the rate
    perplexities = []
    for batch in itertools.islice(build_batches(cfg, ptb, "train").to(on), updates):
        nll = masked_nll(model(batch.inputs, mask=batch.mask).logits, batch.targets, batch.mask)
        optimizer.zero_grad()
        (nll / batch.inputs.size(0)).backward()  # summed over each sentence, averaged over the batch
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.train.clip)
        optimizer.step()
        perplexities.append(math.exp(nll.item() / batch.num_tokens))
    return perplexities


traces = {"LSTM": first_updates("salton2017-ptb-lstm", 1.0),
          "single score, one rate": first_updates("salton2017-ptb-single", 1.0),
          "single score, head at 0.1x": first_updates("salton2017-ptb-single", 0.1)}

# %%
from mlm.plots import first_updates_curves

first_updates_curves(traces, unigram=baseline["unigram_valid"])
plt.show()

# %% tags=["remove-input"] jupyter={"source_hidden": true}
assert all(t[0] > 3 * baseline["unigram_valid"] for t in traces.values()), traces  # "start far above"
if size == "reduced":  # the text reads the reduced run
    late = {label: sorted(t[-20:])[10] for label, t in traces.items()}  # median of the last 20 batches
    one, tenth, lstm = late["single score, one rate"], late["single score, head at 0.1x"], late["LSTM"]
    assert all(900 < x < 1150 for x in (tenth, lstm)) and abs(tenth / lstm - 1) < 0.15, late  # "together, about 1,000"
    unigram = baseline["unigram_valid"]
    assert unigram < min(tenth, lstm) and max(tenth, lstm) < 1.6 * unigram, late  # "close to what the frequencies give"
    assert 1.8 < one / lstm < 2.5, late  # "about twice as high"

# %% [markdown]
# All three start far above the unigram line. The LSTM and the model whose head learns at a tenth fall together,
# to about 1,000 over the last 20 updates, within 60% of what the word frequencies alone give. With one rate the
# attentive model stays about twice as high: in these first updates its head does more harm than good. The curves
# show *that* the head needs a smaller step, not why; the reduced runs give it a tenth.
#
# ### One reduced run
#
# Now the single-score model, its head at a tenth of the rate, for 4 epochs. The floor it must clear is the
# interpolated bigram of chapter 00, counted on the same 80,000 tokens: what counting pairs of words gets from
# this data.

# %%
cfg = mlm.get_preset("salton2017-ptb-single", size, overrides=common)
run = mlm.train(cfg, run_dir=Path(runs_dir) / f"salton2017-ptb-single-{size}-seed{seed}")
print(f"{'':<14}{'parameters':>11}{'valid':>8}{'test':>8}")
print(f"{'single score':<14}{run.result['parameters']:>11,}{run.result['best_valid_ppl']:>8.1f}"
      f"{run.result['test_ppl']:>8.1f}")
print(f"{'bigram':<14}{'counts':>11}{baseline['bigram_valid']:>8.1f}{baseline['bigram_test']:>8.1f}")

# %%
from mlm.plots import reduced_run_curves

reduced_run_curves(run.history, baseline["bigram_valid"], title=f"PTB, sentence protocol, {size} size")
plt.show()

# %% tags=["remove-input"] jupyter={"source_hidden": true}
assert not trained or run.result["test_ppl"] < baseline["bigram_test"], (run.result, baseline["bigram_test"])
if size == "reduced":  # the text reads the reduced run
    valid = [h["valid_ppl"] for h in run.history]  # "starts above the bigram, ends below it, still improving"
    assert valid[0] > baseline["bigram_valid"] > valid[-1] and valid[-1] < valid[-2], (valid, baseline["bigram_valid"])
    c = run.config
    assert (c.model.num_layers, c.model.hidden_size, c.data.batch_size, c.train.epochs, c.train.head_lr_scale) == \
        (2, 256, 8, 4, 0.1), c
    assert c.data.max_train_tokens == 80_000 and c.train.decay_start == 2 and c.train.lr == 1, c  # "halving from the third"
full = mlm.get_preset("salton2017-ptb-single", "full")
assert (full.model.hidden_size, full.data.batch_size, full.data.max_len, full.train.decay_start) == (650, 32, 35, 12)
assert (full.model.dropout, full.train.clip, full.model.tie_weights, full.train.head_lr_scale) == (0.5, 5, True, 1)

# %% [markdown]
# The model starts above the bigram and ends below it, still improving at the last epoch: a network this small,
# on this little text, is far from converged.
#
# **What it writes.** Sentences sampled at temperature 0.7 (chapter 01), each from `<bos>` with an empty memory:

# %%
from mlm.sampling import sample_text

print(sample_text(run.model, ptb.vocab, length=60, temperature=0.7, seed=2, protocol="sentence"))

# %% [markdown]
# Word order holds for a few words at a time, and nothing holds across a sentence: what 80,000 words and four
# epochs can give. `N` is PTB's token for a number; it is so frequent that a young model, once it has written
# one, keeps writing more.
#
# ### A look inside: where the attention goes
#
# Each row of the map below is one step $t$ of a test sentence, the word being predicted; each column a stored
# output $h_i$, labelled by the word read at step $i$. Later rows share their weight among more slots, so each
# weight $a_{t,i}$ is shown against the uniform weight $1/(t-1)$: white is uniform, red up to twice as much,
# blue down to half.

# %%
from mlm.analysis.history import attention_stats, probe_sentence
from mlm.plots import attention_heatmap

probe = probe_sentence(run.model, ptb.vocab, ptb.lines["test"][12])
attention_heatmap(probe, relative=True, span=1,
                  title="single score: each weight against uniform attention over its row")
plt.show()

# %% tags=["remove-input"] jupyter={"source_hidden": true}
relative = probe["attention"] * torch.arange(len(probe["attention"]))[:, None]  # (targets, inputs): weight x (t - 1)
column = {w: relative[i + 2:, i] for i, w in enumerate(probe["inputs"][:-2])}  # rows with two slots or more
assert size != "reduced" or all(float(c.max() / c.min()) < 1.25 for c in column.values()), column  # "its colour"
assert probe["inputs"][5] == "a" and probe["inputs"][14] == "the" and probe["targets"][-1] == "<eos>", probe["inputs"]
if size == "reduced":  # the figure's reading above
    assert 0.45 < float(relative[6:, 5].min()) and float(relative[6:, 5].max()) < 0.6, relative[:, 5]  # "about half"
    assert 0.45 < float(relative[15, 14]) < 0.55, relative[15]  # "about half"
    assert float(column["<bos>"].min()) > 1.1, column["<bos>"]  # "<bos> a little more"
    others = [float(v) for i in range(1, 14) if i != 5 for v in relative[i + 1:, i]]
    assert 0.67 < min(others) and max(others) < 1.33, others  # "the others within about a third of it"

# %% [markdown]
# Each column keeps its colour down the rows: the single score rates a stored output once, and only the
# renormalisation over a growing memory moves its weight. The outputs read at "a" and "the" get about half their
# share, `<bos>` a little more than its share, the others within about a third of it.
#
# To summarise the whole test set, we take the entropy of each step's weights divided by that of uniform weights
# over the same slots, $H(a_t) / \log(t-1)$: 1 when the weight is spread evenly, 0 when one output takes it all
# (steps with fewer than two stored outputs are left out).

# %%
stats = attention_stats(run.model, build_batches(run.config, ptb, "test"))
steps = [t for t, n in enumerate(stats.count_by_position) if n > 0]
spread = sum(stats.entropy_ratio[t] for t in steps) / len(steps)
print(f"normalised entropy, mean over the sentence positions of the test set: {spread:.3f}")

# %% tags=["remove-input"] jupyter={"source_hidden": true}
assert size != "reduced" or spread > 0.95, spread  # "close to uniform": the reduced run's young model

# %% [markdown]
# On average the weights are close to uniform: the young model spreads its attention over the whole sentence,
# leaning away from a few words, as in the sentence above. Salton et al. describe the same for their models
# (section 5, Figures 2 and 3) and liken it to a smoothing of the history; in the official code, whose scores
# never trained (section 2), near-uniform weights are what one would expect.
#
# Spread-out weights on PTB do not mean the mechanism cannot aim, and aiming is what the first of section 1's
# two costs asks of it: to bridge a dependency that spans many words. On the recall task of chapter 00, where
# the value of a key named up to 60 words earlier must be recalled, the combined score recalls at least 98% of
# the values in every band of ten distances, on each of three seeds, where the LSTM recalls 38% to 64% of all values
# (printed below, from the stored runs that [report r02](../reports/r02_salton.ipynb) examines).

# %%
from mlm.manifests.recall import FAMILY_RUNS
from mlm.stored import load_stored_recall

recall = load_stored_recall({k: FAMILY_RUNS[k] for k in ("LSTM", "Attentive, combined")}, "../results")
for name, entry in recall.items():  # accuracy on the value by distance (bins of 10 words), then over all
    for seed, scores in zip(entry.seeds, entry.scores):
        bins = scores.binned(starts=[2, 12, 22, 32, 42, 52])  # (first d, last d, accuracy, loss, count) per bin
        shown = " ".join(f"{first}-{last}: {accuracy:.2f}" for first, last, accuracy, _, _ in bins)
        print(f"{name:<19} seed {seed}  {shown}  all: {scores.accuracy:.2f}")

# %% tags=["remove-input"] jupyter={"source_hidden": true}
combined_bins = [acc for s in recall["Attentive, combined"].scores  # the printed bands of distances
                 for _, _, acc, _, _ in s.binned(starts=[2, 12, 22, 32, 42, 52])]
assert len(recall["Attentive, combined"].seeds) == 3 and min(combined_bins) >= 0.98, combined_bins  # "at least 98%"
lstm_recall = sorted(s.accuracy for s in recall["LSTM"].scores)
assert [round(100 * lstm_recall[0]), round(100 * lstm_recall[-1])] == [38, 64], lstm_recall  # "38% to 64%"
assert recall["LSTM"].results[0]["config"]["data"]["task_max_distance"] == 60  # "up to 60 words earlier"

# %% [markdown]
# ## 4. Testing the paper's claim
#
# Table 1 of the paper sets the single score's 70.1 test perplexity beside Zaremba et al.'s medium LSTM (the same
# 650 units) at 82.7: 70.1 is 15% below 82.7. The two numbers are counted differently. The official code never
# predicts the first word of a sentence, yet divides the summed loss by every token. Perplexity is the exponential
# of the mean loss, so dividing the same summed loss by the predicted tokens alone multiplies the exponent by
# tokens / predicted tokens:

# %%
sentences, tokens = len(ptb.lines["test"]), sum(len(line) + 1 for line in ptb.lines["test"])  # +1: <eos>
print(f"PTB test: {tokens:,} tokens, {tokens - sentences:,} predicted by the official code; "
      f"70.1 averaged over the predicted tokens only: {70.1 ** (tokens / (tokens - sentences)):.1f}")

# %% tags=["remove-input"] jupyter={"source_hidden": true}
per_token = 70.1 ** (tokens / (tokens - sentences))
assert round(per_token) == 86 and round(100 * (1 - 70.1 / 82.7)) == 15 and round(100 * (per_token / 82.7 - 1)) == 4
assert mlm.get_preset("zaremba2014-medium").paper["test"] == 82.7 and full.paper["test"] == 70.1
large = mlm.get_preset("zaremba2014-large").paper
assert large["test"] == 78.4 and large["params"] == "66M" and per_token > 78.4, large  # "above the large LSTM's"

# %% [markdown]
# Read per predicted token, as Zaremba et al.'s numbers already are, 70.1 is about 86: about 4% *above* the
# medium LSTM, not 15% below, and above the 78.4 of their large LSTM (66M parameters), which the paper's abstract
# says the attentive model beats. Nor is the medium LSTM a control: it was trained on the stream protocol, its
# state running on from one sentence into the next, and the paper trains no LSTM reading one sentence at a time.
#
# The book's test is the paper's recipe against the same network without the head, three seeds each. The reduced
# run above shows the model in minutes; a test needs runs that converge on all of PTB. They use 2 x 200 units,
# Zaremba et al.'s small width, at which the book tests every paper with its own recipe.
#
# Each run trains for 24 epochs, when the rate has fallen to 1/4096 of its start, and keeps its best validation
# epoch; the paper instead stops after 10 epochs without a better one. The head learns at a tenth of the rate,
# chosen in the short runs above; the LSTM keeps the paper's rate of 1. The paper trained no LSTM under its own
# protocol, so it gives no size of gain this trial could fall short of: by the book's rule ([chapter 00,
# section 6](00_language_modelling.ipynb)), a gain whose whole interval clears −1% then *holds*.

# %% tags=["remove-input"] jupyter={"source_hidden": true}
import statistics

from mlm.claims import HOLDS, MARGIN, NOT_RUN, relative_change, verdict
from mlm.evidence import machine_term, paper_evidence
from mlm.manifests import cpu
from mlm.reproduce import load_manifest
from mlm.stored import load_settings

rows = {(m, c.model if isinstance(c.model, str) else c.model): (c, r) for m, c, r in paper_evidence("02", "../results")}
own_claim, own_row = rows["cpu", "single-headlr0.1"]
model_ppl, control_ppl, paper_change = own_row.seeds
assert (own_claim.model, own_claim.control) == ("single-headlr0.1", "lstm") and paper_change is None, own_claim
assert own_row.verdict == HOLDS and own_row.label_text == "holds (handicaps the control)", own_row.label_text
assert "control: lr 1 only" in own_row.tuning and own_row.machine == 0, own_row.tuning  # "whose rate was not tuned"
assert len(model_ppl) == len(control_ppl) == 3, own_row.seeds  # "three seeds each"
assert [round(statistics.fmean(x), 1) for x in (control_ppl, model_ppl)] == [116.4, 106.6], own_row.seeds
change = relative_change(model_ppl, control_ppl)
assert [round(100 * x, 1) for x in change] == [-8.4, -9.0, -7.8] and change[2] < -MARGIN, own_row.seeds
recipe = next(s for s in cpu.RUNS if s.group == own_claim.group).config()
assert (recipe.model.hidden_size, recipe.model.num_layers, recipe.train.epochs) == (200, 2, 24), recipe
assert recipe.train.lr / recipe.train.decay_factor ** (24 - recipe.train.decay_start) == 1 / 4096, recipe.train
assert full.train.early_stop_patience == 10 and mlm.get_preset("zaremba2014-small").model.hidden_size == 200
# the matched recipe: at the paper's single rate neither score beats the LSTM; with both sides' rates tuned, the
# verdict's "about 3%"
matched = load_settings([s for s in load_manifest("compare") if s.group == "compare-ptb"
                         and s.base in ("lstm", "attentive-single", "attentive-combined")], "../results")
for score in ("attentive-single", "attentive-combined"):
    one_rate, lstm = matched[score].values("test_ppl"), matched["lstm"].values("test_ppl")
    shift = machine_term(matched[score].machine_kinds(), matched["lstm"].machine_kinds(), "../results")
    assert relative_change(one_rate, lstm)[0] > 0 and verdict(one_rate, lstm, machine=shift) != HOLDS, score
fair = {c.model[0]: r for m, c, r in paper_evidence("02", "../results") if m == "compare" and c.tunes_both}
assert {k: (r.verdict, round(100 * relative_change(*r.seeds[:2])[0], 1)) for k, r in fair.items()} == {
    "attentive-single": ("inconclusive", -3.0), "attentive-combined": ("holds", -2.8)}, fair
assert fair["attentive-single"].machine > 0 and relative_change(*fair["attentive-single"].seeds[:2])[2] < -MARGIN
# "not run yet": the tuned trials (the control's rate, the merge layer) have no runs
assert rows["tuned", "single-headlr0.1"][0].control == "merge-only-headlr0.1", rows.keys()
assert all(r.verdict == NOT_RUN for (m, _), (_, r) in rows.items() if m == "tuned"), rows

# %% [markdown]
# ## Our verdict
#
# With the paper's recipe at 2 × 200 and the head at a tenth of the learning rate, the single score lowers it by
# 8.4%, from 116.4 to 106.6 (95% interval −9.0% to −7.8%, three seeds each): *holds*, in a trial that *handicaps
# the control*, whose rate was not tuned. Under chapter 06's recipe, with both sides' rates tuned, the gain shrinks
# to about 3%: the combined score *holds*, and the single score reads *inconclusive* once the hardware allowance is
# added. The paper's recipe with the LSTM's rate tuned too, and the merge layer of Eq. 7 on its own, are not run
# yet; [report r02](../reports/r02_salton.ipynb) has the runs.

# %%
from mlm.plots import own_protocol_figure

own_protocol_figure("../results")
plt.show()

# %% [markdown]
# **Exercise 02** ([`exercises/ex02_attentive_scores.py`](../exercises/ex02_attentive_scores.py)): the memory
# mask, the combined score, and the masked softmax that turns scores into a context without NaNs, checked with
# `python -m exercises.grader 02`.

# %% tags=["remove-input"] jupyter={"source_hidden": true}
from mlm.book import record

record("02_attentive_lm", {"single_test_ppl": round(run.result["test_ppl"], 1),
                           "baseline_test_ppl": round(baseline["bigram_test"], 1)})
