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
# An LSTM carries the whole history of a sentence in one fixed-size vector. Salton et al. keep every
# output of the top LSTM layer instead, and before predicting the next word the model looks back over all
# earlier outputs of the *same sentence* with attention. This chapter derives the model from the paper,
# computes every time step at once, trains a small one on PTB, reads the stored multi-seed runs that test
# the paper's claim, and asks on the key-value recall task whether the memory does what it is for.
#
# Paper: *Attentive Language Models*, IJCNLP 2017 (equation numbers below are the paper's).

# %% tags=["parameters"]
size = "reduced"  # "reduced" (minutes on a CPU) or "full" (the paper's settings; a GPU is advised)
device = "auto"  # "auto", "cpu", "cuda" or "mps"
seed = 0
data_dir = None  # None: $MLM_DATA_DIR, then ~/.cache/mlm
runs_dir = "../runs"  # run folders; a finished run is loaded, not retrained

# %%
import math
import statistics
from pathlib import Path

import matplotlib.pyplot as plt
import torch

import mlm
from mlm.models.attentive import AttentiveHead, causal_memory_mask, masked_softmax
from mlm.utils import set_seed

set_seed(seed)

# %% [markdown]
# ## 1. Why a memory of the sentence
#
# The LSTM of chapter 01 reads $w_1, \dots, w_t$ and must squeeze everything it may need later into its
# output $h_t$ and its cell. What is not refreshed fades through the forget gates, and so does the gradient
# that would teach the network to keep it. Attention sidesteps the squeeze: instead of hoping that $h_t$
# still holds what $h_3$ knew, the model keeps $h_3$ itself and reads it back when it helps.
#
# The key-value recall task of chapter 00 (section 5) makes the difference measurable. A line names a key with
# a value, then filler words and distractor pairs, then the key again; the value after it, the *critical
# token*, must be recalled from the source $d$ steps back, and values are random, so a model that cannot see
# the source is at chance.
#
# Salton et al. put a *head* on top of the LSTM: attention over every earlier output of the line, so no $d$ is
# out of its reach. It comes with two scores, defined in section 2: the *single* score rates each stored
# output on its own, the *combined* score also looks at the current output. The stored runs (`python -m mlm
# reproduce recall`: 64 units, Adam, 15 epochs, three seeds each) put the plain LSTM beside both (grey: the
# LSTM's mean):

# %%
from mlm.manifests.recall import FAMILY_RUNS
from mlm.plots import recall_panels
from mlm.table import load_stored_recall

families = ("LSTM", "Attentive, single", "Attentive, combined")
recall = load_stored_recall({label: FAMILY_RUNS[label] for label in families}, "../results")
chance = recall["LSTM"].extras[0]["chance"]
recall_panels(recall, chance, reference="LSTM", width=10, columns=4, title="Key-value recall, one line per seed")
plt.show()

# %%
d_edges, matched = [2, 21, 41, 61], [40, 80]  # d bins; positions 40-79, where every d occurs
print(f"{'':<28}{'':>9}   {'accuracy at positions 40-79':<28}{'weight on the source':>21}{'source is':>12}")
print(f"{'':<28}{'accuracy':>9}   {'d = 2-20 / 21-40 / 41-60':<28}{'/ uniform weight':>21}{'the largest':>12}")
for label, entry in recall.items():
    for seed_, scores, extra in zip(entry.seeds, entry.scores, entry.extras):
        by_d = " / ".join(f"{row[0][0]:.2f}" for row in scores.table(d_edges, matched))  # (accuracy, count)
        source = extra.get("source_attention")  # None for a model without attention
        ratio = f"{source['weight'] / source['uniform']:.1f}" if source else "-"
        largest = f"{source['is_max']:.0%}" if source else "-"
        print(f"{label + ', seed ' + str(seed_):<28}{scores.accuracy:>9.2f}   {by_d:<28}{ratio:>21}{largest:>12}")

# %% tags=["remove-input"] jupyter={"source_hidden": true}
# The two paragraphs below rest on these facts of the stored runs.
learned = {label: [s for s in entry.scores if s.accuracy > 3 * chance] for label, entry in recall.items()}
assert len(learned["LSTM"]) == 3, learned
single = [s.accuracy for s in recall["Attentive, single"].scores]
assert min(single) < 1.5 * chance and max(single) > 0.6, single  # one seed at chance, one above every LSTM seed
assert max(single) < max(s.accuracy for s in learned["LSTM"]) + 0.1, single  # "no better than the LSTM"
for label, scores in learned.items():
    for s in scores:
        bins = [acc for _, _, acc, _, _ in s.binned(10)]
        assert max(bins) - min(bins) < 0.25, (label, bins)  # flat in d
        at_matched = [row[0][0] for row in s.table(d_edges, matched)]
        assert max(at_matched) - min(at_matched) < 0.15, (label, at_matched)  # flat in d at matched positions
ratios = {label: [(e["source_attention"]["weight"] / e["source_attention"]["uniform"], e["source_attention"]["is_max"])
                  for e in recall[label].extras] for label in families[1:]}
assert all(2 < r < 6 and is_max < 0.015 for r, is_max in ratios["Attentive, single"]), ratios
combined = recall["Attentive, combined"]
assert all(s.accuracy > 0.95 and min(acc for _, _, acc, _, _ in s.binned(10)) > 0.9 for s in combined.scores), combined
assert all(r > 30 and is_max > 0.75 for r, is_max in ratios["Attentive, combined"]), ratios
assert all(0.65 < e["source_attention"]["weight"] < 0.95 for e in combined.extras), combined.extras

# %% [markdown]
# Reach is not what limits the LSTM. It recalls between a third and two thirds of the critical values, seed by
# seed, far above chance (the dashed line), and about as well at $d = 60$ as at $d = 5$: a state that holds the
# pair at all holds it for sixty steps. The single score, whose memory does hold the source, does no better on
# average: its best seed is a little above the LSTM's best, and one seed never leaves chance in 15 epochs. The
# combined score is another matter: it recalls almost every value, at every distance.
#
# The table checks the curves and says why the scores differ. At roughly matched positions, the critical
# token 40 to 79 words into its line, where every $d$ occurs (a larger $d$ still sits a few words later on
# average), accuracy is as flat in $d$ as over the whole line, so the flat curves are not a position effect
# in disguise.
#
# At each step the head gives every earlier output a weight, and the weights sum to 1 (section 2 derives them).
# The single score leans toward the output read at the source, two to five times the uniform weight (the weight
# every earlier output would get if attention were spread evenly), yet that output gets the largest weight of its
# step in about 1% of the lines or fewer: it rates each output on its own, without knowing which key the current
# word asks for.
#
# The combined score puts more than thirty times the uniform weight on the source, and it is the
# largest weight in four lines of five or more. Because the combined score also reads the current output (Eq. 10
# in section 2), the head can compare the question with each stored output and pick the one that answers it: a
# lookup.

# %% [markdown]
# ## 2. The model, equation by equation
#
# Salton et al. store the top-layer outputs of the current sentence, $h_1, \dots, h_{t-1}$, in a buffer
# that grows with the sentence and is emptied at its end (the *sentence protocol* of chapter 00). At step
# $t$ the buffer is read with attention:
#
# $$ c_t = \sum_{i=1}^{t-1} a_i h_i \quad (3), \qquad a_i = \frac{\exp \mathrm{score}(h_i, h_t)}{\sum_{j=1}^{t-1} \exp \mathrm{score}(h_j, h_t)} \quad (4) $$
#
# with one of two score functions (Eq. 5 and 6 choose between them):
#
# $$ \mathrm{single}(h_i) = v_s^\top \tanh(W_s h_i) \quad (9), \qquad \mathrm{combined}(h_i, h_t) = v_s^\top \tanh(W_s h_i + W_q h_t) \quad (10). $$
#
# The **single** score judges each stored output on its own, a fixed "absolute relevance"; its weights still
# change from step to step because the softmax renormalises over a growing buffer. The **combined** score
# asks how relevant $h_i$ is *to the current output* $h_t$. The context is then merged with $h_t$, and the
# softmax, with its weights $E$ tied to the input embeddings as in chapter 01, reads the result:
#
# $$ h'_t = \tanh(W_c [h_t; c_t] + b_c) \quad (7), \qquad p(w_{t+1} \mid w_{\le t}) = \mathrm{softmax}(E\, h'_t + b) \quad (8). $$
#
# The paper writes the bias of (7) as $b_t$ and the predicted word of (8) as $w_t$; we write $b_c$, index the
# word by the step that predicts it, and call the tied output matrix $E$. The weights depend on the step too,
# so below we write $a_{t,i}$ for the weight of $h_i$ at step $t$ (the paper drops the $t$).
#
# With $n$ the LSTM's width (`hidden` in the code) and $n_a$ the head's attention width (`attn`), the head's
# parameters are $W_s, W_q \in \mathbb{R}^{n_a \times n}$ ($W_q$ for the combined score only),
# $v_s \in \mathbb{R}^{n_a}$, $W_c \in \mathbb{R}^{n \times 2n}$ and $b_c \in \mathbb{R}^{n}$; the LSTM and $E$ are
# the network it sits on. $h_t$ enters the buffer only *after* it has been used, so the model never attends to its
# current output (it has it already, in the first half of $[h_t; c_t]$). The paper is not consistent here: its
# prose on the single score takes the softmax over a set that includes the new state's score, while Eq. 3-4 and its
# section 2 score only $h_1, \dots, h_{t-1}$; we follow the equations. Written as a loop over the steps of one
# sentence, each line is one equation:

# %%
def attentive_head_loop(head, h):
    """The head on one sentence, step by step: h (time, hidden) -> h' (time, hidden)."""
    outputs, memory = [], []  # memory: the outputs h_1 .. h_{t-1} read so far
    for h_t in h:  # (hidden,)
        if memory:
            stored = torch.stack(memory)  # (slots, hidden)
            keys = head.W_s(stored)  # (slots, attn)
            if head.W_q is not None:
                keys = keys + head.W_q(h_t)  # combined score: the same query for every slot
            scores = head.v(torch.tanh(keys)).squeeze(-1)  # (slots,)       Eq. 9 or 10
            a = torch.softmax(scores, dim=0)  # (slots,)                    Eq. 4
            c_t = a @ stored  # (hidden,)                                    Eq. 3
        else:
            c_t = torch.zeros_like(h_t)  # the first step has an empty memory
        outputs.append(torch.tanh(head.W_c(torch.cat([h_t, c_t]))))  # (hidden,)   Eq. 7
        memory.append(h_t)  # h_t is stored only after it has been used
    return torch.stack(outputs)  # (time, hidden)


# %% [markdown]
# At the first step the memory is empty and Eq. (3)-(4) are undefined; the paper does not say what happens
# there. We take a zero context, which is also what the official code computes at $t = 1$ (its buffer starts
# with one all-zero slot, which the configuration option `model.attention_zero_slot`, off by default, reproduces,
# including the share of attention that slot keeps taking at later steps). The official code also merges
# linearly, without the $\tanh$ of Eq. 7; `model.attention_merge="linear"` offers that variant.
#
# ### All steps at once
#
# Nothing in the head feeds back into the LSTM, so the LSTM can run once over the whole batch of sentences
# and the head can then compute every step together. The scores of all (query $t$, slot $i$) pairs form a
# `(batch, time, time)` tensor, and a **causal mask** keeps the pairs with $i < t$ whose slot is a word, not
# padding. Row $t$ of the mask says which slots step $t$ may read; the first row is empty:

# %%
# NBVAL_CHECK_OUTPUT
pad = torch.tensor([[True, True, True, True, False, False]])  # a 4-word sentence padded to 6 steps
print("query step t (rows) may attend memory slot i (columns):")
print(causal_memory_mask(pad, batch=1, time=6, device="cpu")[0].int())

# %% [markdown]
# With the mask, the loop becomes a few batched operations. `masked_softmax` is a softmax over the allowed
# slots only; a row with none, the first step, gets all-zero weights and so a zero context. $W_q h_t$ is
# computed once per step and broadcast against every slot, as the paper suggests:

# %%
def attentive_head_all_steps(head, h, mask):
    """The same head on a padded batch, every step at once: h (batch, time, hidden) -> h', weights."""
    keys = head.W_s(h)[:, None, :, :]  # (batch, 1, time i, attn)
    if head.W_q is not None:
        keys = keys + head.W_q(h)[:, :, None, :]  # (batch, time t, time i, attn)
    scores = head.v(torch.tanh(keys)).squeeze(-1)  # (batch, 1 or time t, time i)   Eq. 9 or 10
    allowed = causal_memory_mask(mask, *h.shape[:2], h.device)  # (batch, time t, time i)
    a = masked_softmax(scores.expand_as(allowed), allowed)  # (batch, time t, time i)   Eq. 4
    c = a @ h  # (batch, time, hidden)                                                   Eq. 3
    return torch.tanh(head.W_c(torch.cat([h, c], dim=-1))), a  # (batch, time, hidden)   Eq. 7


# %% [markdown]
# The book's head, `mlm.models.attentive.AttentiveHead`, is this function with one economy: for the combined
# score it puts only the pairs $i < t$ through the $\tanh$, under half of the `(time, time)` grid. All three
# versions must agree, on a batch whose second sentence is padded:

# %%
# NBVAL_CHECK_OUTPUT
torch.manual_seed(0)
h = torch.randn(3, 9, 16, dtype=torch.double)  # (batch, time, hidden): LSTM outputs of 3 sentences
mask = torch.ones(3, 9, dtype=torch.bool)
mask[1, 6:] = False  # the second sentence has 6 words
for score in ("single", "combined"):
    head = AttentiveHead(hidden_size=16, score=score).double()
    fast, _ = attentive_head_all_steps(head, h, mask)  # (batch, time, hidden)
    package = head(h, mask=mask).output  # (batch, time, hidden)
    for b, length in enumerate(mask.sum(1).tolist()):
        loop = attentive_head_loop(head, h[b, :length])  # (length, hidden)
        assert torch.allclose(loop, fast[b, :length]) and torch.allclose(fast[b, :length], package[b, :length])
    print(f"{score:<8} score: the loop, the batched function and AttentiveHead agree on every real step")

# %% [markdown]
# The figure follows one batch through the head, with the shape of every tensor: B sentences of T steps,
# H = $n$ hidden units, A = $n_a$ attention units, V words. The dashed branch exists for the combined score
# only.

# %%
from mlm.plots import attentive_head_diagram

attentive_head_diagram()
plt.show()

# %% [markdown]
# ## 3. Watch it train
#
# Section 4.1 of the paper trains on PTB one sentence per row: the LSTM state and the memory start from zero in every
# sentence, training sentences are cut at 35 words, batches hold 32 sentences. SGD starts at a learning rate of 1 and
# halves it for every epoch after the 12th, until validation has not improved for 10 epochs. Weights start uniform in
# $[-0.05, 0.05]$, dropout is 50%, gradients "normalized by mini-batch size" are clipped at norm 5, and embeddings are
# tied.
#
# The loss is summed over each sentence and averaged over the batch: the paper's clipping phrase hints at it,
# the official code does it, and the paper itself says only "average negative log probability". The presets
# `salton2017-ptb-single`, `-combined` and `-lstm` (the same network without the head) hold these settings; the
# reduced size shrinks them to minutes:

# %%
for which in ("full", "reduced"):
    c = mlm.get_preset("salton2017-ptb-single", which)
    print(f"{which:<8} {c.model.num_layers} x {c.model.hidden_size}, batches of {c.data.batch_size} sentences, "
          f"training tokens: {c.data.max_train_tokens or 'all'}, epochs: {c.train.epochs} (at most), "
          f"lr {c.train.lr:g}, head lr x {c.train.head_lr_scale:g}, dropout {c.model.dropout:g}")

# %% [markdown]
# The reduced size is 2 x 256 instead of 2 x 650 and trains on about 80,000 tokens for 4 epochs, halving the
# rate from the third; batches of 8 sentences instead of 32 give it four times as many updates per epoch.
# The last change, a tenth of the learning rate for the head, needs a measurement.
#
# ### The head's learning rate
#
# With one learning rate of 1 for every parameter, the attentive model falls far behind the LSTM over the first four
# epochs on all of PTB (the stored runs below, one seed each). Under the book's matched recipe of section 4, where the rate decays, the
# full-rate heads still end about 1% behind.
#
# To see why, we train a fresh LSTM and a fresh single-score model for 150 updates, the latter once with the
# paper's learning rate everywhere and once with the head at a tenth. Every 10 updates we look at the head's
# output on a fixed batch of validation sentences (the LSTM's output for the LSTM): with $h'_p$ the output at each
# of the batch's $N$ word positions $p$, all sentences together, we measure how much of it is the same at every
# position, the share of its energy carried by its mean:
#
# $$\text{mean share} = \frac{\lVert \bar h' \rVert^2}{\frac1N \sum_p \lVert h'_p \rVert^2}, \qquad
# \bar h' = \frac1N \sum_p h'_p .$$
#
# At 1 the output is the same vector wherever it is, whatever the input; behind a softmax that gives one
# distribution at every position, as a unigram model does. Near 0 the output changes from word to word.

# %%
from mlm.baselines import count_baseline
from mlm.evaluation import masked_nll
from mlm.training import build_batches, build_optimizer

common = {"train.seed": seed, "train.device": device, **({"data.data_dir": data_dir} if data_dir else {})}
ptb = mlm.load_data(mlm.get_preset("salton2017-ptb-single", size, overrides=common))
probe_batch = next(iter(build_batches(mlm.get_preset("salton2017-ptb-single", size, overrides=common), ptb, "valid")))


@torch.no_grad()
def mean_share(model, batch):
    """Share of the energy of the head's output (batch.mask's positions) carried by its mean over positions."""
    model.eval()
    out = model.features(batch.inputs, mask=batch.mask)[0].output[batch.mask]  # (positions, units)
    model.train()
    return float(out.mean(0).square().sum() / out.square().sum(1).mean())


def first_updates(preset, head_lr_scale, updates=150, every=10):
    """Training perplexity of each of the first ``updates`` batches, and the mean share every ``every``."""
    cfg = mlm.get_preset(preset, size, overrides={**common, "train.head_lr_scale": head_lr_scale})
    set_seed(seed)
    model = mlm.build_model(cfg, len(ptb.vocab), ptb.vocab.pad_id)
    optimizer = build_optimizer(cfg, model)
    trace = {"ppl": [], "step": [], "share": [], "saturated": 0.0}
    for step, batch in enumerate(build_batches(cfg, ptb, "train")):
        if step % every == 0:
            trace["step"].append(step)
            trace["share"].append(mean_share(model, probe_batch))
        if step == updates:
            break
        out = model(batch.inputs, mask=batch.mask)  # (batch, time, vocab) logits
        nll = masked_nll(out.logits, batch.targets, batch.mask)
        optimizer.zero_grad()
        (nll / batch.inputs.size(0)).backward()  # summed over time, averaged over the sentences
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.train.clip)
        optimizer.step()
        trace["ppl"].append(math.exp(nll.item() / batch.num_tokens))
    with torch.no_grad():  # share of the head's units near +-1, where a tanh stops passing gradient
        model.eval()
        out = model.features(probe_batch.inputs, mask=probe_batch.mask)[0].output[probe_batch.mask]
        trace["saturated"] = float((out.abs() > 0.99).float().mean())
    return trace


traces = {"LSTM": first_updates("salton2017-ptb-lstm", 1.0),
          "single, one learning rate": first_updates("salton2017-ptb-single", 1.0),
          "single, head at 0.1x": first_updates("salton2017-ptb-single", 0.1)}
baseline = count_baseline(mlm.get_preset("salton2017-ptb-lstm", size, overrides=common), ptb)  # same tokens

# %%
from mlm.plots import first_updates_panels

first_updates_panels(traces, unigram=baseline["unigram_valid"])
plt.show()
for label, trace in traces.items():
    shares = dict(zip(trace["step"], trace["share"]))
    print(f"{label:<26} mean share at 0 / 50 / 150 updates: {shares[0]:.2f} / {shares[50]:.2f} / {shares[150]:.2f};"
          f" last 20 batches' median perplexity {sorted(trace['ppl'][-20:])[10]:.0f}")
print(f"units of the output near +-1 after 150 updates: at most {max(t['saturated'] for t in traces.values()):.1%}")

# %% tags=["remove-input"] jupyter={"source_hidden": true}
# The paragraphs below rest on these facts of the traces.
share = {label: dict(zip(t["step"], t["share"])) for label, t in traces.items()}
assert all(0.3 < s[0] < 0.6 for s in share.values()), share
assert all(s[50] > 0.9 for s in share.values()), share
assert share["single, one learning rate"][150] > 0.99, share
assert share["LSTM"][150] < share["single, head at 0.1x"][150] < share["single, one learning rate"][150], share
assert share["LSTM"][150] < 0.9, share
assert max(t["saturated"] for t in traces.values()) < 0.01, traces
late = {label: sorted(t["ppl"][-20:])[10] for label, t in traces.items()}  # median of the last 20 batches
assert late["single, one learning rate"] > 1.5 * late["LSTM"], late  # "far above the LSTM's"
assert late["single, one learning rate"] > baseline["unigram_valid"], late  # "not yet as good as the unigram counts"
assert late["single, head at 0.1x"] < 1.3 * late["LSTM"], late  # "follows the LSTM's"

# %% [markdown]
# At the start, a third to a half of each network's output energy sits in its mean (it has random weights,
# and the input moves its output only a little). Within 50 updates every network moves toward the same
# output everywhere, a share near 1: predicting the frequent words is the quickest gain in the loss. The LSTM
# then leaves that stage, and its share falls as its output starts to depend on the words read.
#
# With one learning rate the single-score model goes the other way: its share climbs to 1.00 and stays near
# it, and after 150 updates its batch perplexity is still far above the LSTM's. Its head emits nearly the
# same vector wherever it is, whatever it has read, so the model predicts nearly one distribution everywhere,
# as a unigram model does, and its batch perplexity is still above the unigram counts' validation perplexity
# (dashed; another split, so a rough floor). We call this the *unigram stage*. Almost none of the head's outputs
# sit near $\pm 1$, so this is not a $\tanh$ stuck there.
#
# One hypothesis, not tested here: the merge layer's $W_c$ and $b_c$ act at every position of every sentence, and the
# loss is summed over the sentence, so at a learning rate of 1 their steps toward "the frequent words everywhere" are
# large.
#
# With the head at a tenth of the rate the batch perplexity follows the LSTM's, half that of the one-rate
# model, though its share after 150 updates (0.98) is hardly below the one-rate model's (1.00): the share
# does not tell these two runs apart, only the perplexity does. The reduced presets use the smaller rate.
#
# On all of PTB at 2 x 256, with one learning rate and the paper's dropout, the stored runs in
# `results/salton2017-ptb-256-4ep/` show how far the one-rate model still trails after four epochs (they
# record perplexities only, so they cannot show that the unigram stage is the cause):

# %%
import json

longer = {label: json.loads(Path(f"../results/salton2017-ptb-256-4ep/{label}/result.json").read_text())
          for label in ("lstm", "single")}
for label, result in longer.items():
    print(f"{label:<7} 2 x 256, 4 epochs on all of PTB, one learning rate: test perplexity {result['test_ppl']:.1f}")

# %% tags=["remove-input"] jupyter={"source_hidden": true}
assert 1.8 < longer["single"]["test_ppl"] / longer["lstm"]["test_ppl"] < 2.3, longer  # "about twice"

# %% [markdown]
# After four epochs, in one seed each, the single-score model's test perplexity is still about twice the LSTM's.
#
# ### One reduced run
#
# We train the single-score model for 4 epochs on about the first 80,000 training tokens (whole sentences),
# with the head at a tenth of the learning rate; validation and test use the whole sets. The floor it must
# clear is the interpolated bigram of chapter 00 counted on the same tokens: what counting pairs of words gets
# from this data.

# %%
cfg = mlm.get_preset("salton2017-ptb-single", size, overrides=common)
run = mlm.train(cfg, run_dir=Path(runs_dir) / f"salton2017-ptb-single-{size}-seed{seed}")
print(f"{'model':<14} {'parameters':>11} {'valid':>7} {'test':>7}")
print(f"{'single score':<14} {run.result['parameters']:>11,} {run.result['best_valid_ppl']:>7.1f} "
      f"{run.result['test_ppl']:>7.1f}")
print(f"{'bigram':<14} {'counts':>11} {baseline['bigram_valid']:>7.1f} {baseline['bigram_test']:>7.1f}"
      f"   (counted on the same {baseline['train_tokens']:,} training tokens)")

# %% tags=["remove-input"] jupyter={"source_hidden": true}
assert run.result["test_ppl"] < baseline["bigram_test"], (run.result["test_ppl"], baseline["bigram_test"])
valid = [h["valid_ppl"] for h in run.history]  # "starts above the bigram, ends below it, still improving"
assert valid[0] > baseline["bigram_valid"] > valid[-1] and valid[-1] < valid[-2], (valid, baseline["bigram_valid"])

# %%
from mlm.plots import learning_curves

ax = learning_curves({"single score": run.history}, title=f"PTB, sentence protocol, {size} size")
ax.axhline(baseline["bigram_valid"], color="k", ls=":", lw=1, label="bigram counts (valid)")
ax.set_xticks(range(1, len(run.history) + 1))
ax.set_yticks([200, 300, 400, 600, 1000], ["200", "300", "400", "600", "1000"])
ax.minorticks_off()
ax.legend(fontsize=9)
plt.show()

# %% [markdown]
# The model starts above the bigram, ends below it, and is still improving at the last epoch: a network this
# small, on this little text, is far from converged. One seed and four epochs on a tenth of PTB give a direction, not
# a verdict on the paper; section 4 has the stored runs for that.
#
# **What it writes.** Sentences sampled from the single-score model at temperature 0.7 (chapter 01), each from
# `<bos>` with an empty memory, with random draws of this chapter's own:

# %%
from mlm.sampling import sample_text

sample_seed = 2  # chapter 01 samples with seed 1: another seed gives other draws, hence other sentences
print(sample_text(run.model, ptb.vocab, length=60, temperature=0.7, seed=sample_seed, protocol="sentence"))

# %% [markdown]
# Word order holds for a few words at a time, and nothing holds across a sentence: what 80,000 words and four
# epochs can give.
#
# ### A look inside: where the attention goes
#
# Salton et al. (section 5, Figures 2 and 3, from their WikiText-2 models, which they say behave like the PTB
# ones) plot the weights while the model reads a sentence and find them spread over many earlier outputs rather
# than on one ("none of the attention mechanisms worked as a proper attention mechanism"): a *smoothing* of the
# history, which they compare with a residual connection.
#
# Plain weights shrink from row to row simply because
# later rows share the weight among more slots, so the explorer shows each weight against uniform attention over
# its row, on a log scale: white is uniform, red up to four times more, blue up to four times less. Type a
# sentence (lower case, numbers as `N`) or pick one; the table lists each word's probability and the model's five
# best guesses.

# %%
from mlm.widgets import attention_explorer

test_sentences = [" ".join(ptb.lines["test"][i][:20]) for i in (12, 40, 100)]
attention_explorer({"single": run.model}, ptb.vocab,
                   test_sentences + ["the company said it expects to report a loss for the third quarter"])

# %% [markdown]
# The whole test set tells more than one sentence. We measure how spread out each step's weights are with the entropy
# of the step's weights $a_t = (a_{t,1}, \dots, a_{t,k_t})$ divided by that of uniform weights over the same slots,
# $H(a_t) / \log k_t$ with $k_t$ the number of stored outputs: 1 when the weight is spread evenly, 0 when one output
# takes it all (steps with fewer than two stored outputs are skipped). We also average the weight given to the output
# $d$ steps back, beside what uniform attention would give.

# %%
from mlm.analysis.history import attention_stats
from mlm.plots import attention_spread

test_batches = build_batches(run.config, ptb, "test")
stats = attention_stats(run.model, test_batches)
attention_spread({"single": stats})
plt.show()
positions = [t for t in range(2, 35) if stats.count_by_position[t] > 0]
spread = sum(stats.entropy_ratio[t] for t in positions) / len(positions)
print(f"mean normalised entropy {spread:.3f}; weight on the previous output {stats.weight_by_distance[1]:.3f} "
      f"(uniform attention: {stats.uniform_by_distance[1]:.3f})")

# %% tags=["remove-input"] jupyter={"source_hidden": true}
assert spread > 0.95, spread  # "close to uniform"
assert abs(stats.weight_by_distance[1] / stats.uniform_by_distance[1] - 1) < 0.25, stats.weight_by_distance[1]

# %% [markdown]
# Individual outputs do get more or less than their share (the red and blue cells above), but on average the
# weights are close to uniform at every position and at every distance: the young model spreads its attention
# evenly, as the paper describes. Whether that is the paper's smoothing or scores that have not learned
# anything yet, one small model cannot tell; a converged model would be needed.

# %% [markdown]
# ## 4. The evidence
#
# The reduced run gives a direction. Whether attention beats the LSTM is decided on stored runs with at least
# three seeds a side (five for the book's LSTM control), by the rule of chapter 00, section 6. First, the paper's own
# numbers need a reading. The official code never predicts the first word of a sentence, yet divides the
# summed loss by all the tokens, first words included. Its perplexity is therefore lower than the one the book
# computes (every word and `<eos>` predicted and counted); converted, the reported numbers become:

# %%
sentences, tokens = len(ptb.lines["test"]), sum(len(line) + 1 for line in ptb.lines["test"])
per_token = tokens / (tokens - sentences)  # the official code's divisor over the tokens it predicts
print(f"PTB test: {tokens:,} tokens, {tokens - sentences:,} of them predicted by the official code "
      f"(it skips the first word of each of the {sentences:,} sentences)")
for name, (valid, test) in {"single": (71.7, 70.1), "combined": (72.6, 70.7)}.items():
    print(f"paper, {name:<8}: test {test} reported, about {test ** per_token:.0f} per predicted token")

# %% [markdown]
# Table 1 of the paper sets its 70.1, 15% below Zaremba et al.'s medium LSTM (the same 650 units) at 82.7, and its
# abstract claims to beat the large one (66M parameters, 78.4). Read per predicted token, as Zaremba et al.'s 82.7
# already is, 70.1 is about 86: about 4% above the medium LSTM, not 15% below it, and about a tenth above the large
# one. The 86 is still a lower bound on the book's scale, which also counts each sentence's hard
# first word.
#
# The two also differ in protocol. Zaremba et al.'s LSTM is trained on the stream protocol, where the state runs on
# from one sentence into the next; it is not a control under the sentence protocol, and the paper trains none.
#
# There is a second reason the paper's numbers may not measure attention. Reading the official code, the
# training graph never grows the buffer, so the score weights ($W_s$, $v_s$, $W_q$) and the half of $W_c$ that
# reads $c_t$ receive no gradient; only the test graph attends, with those weights at their random start
# (docs/design.md, section 10, gives the details). That could also explain the near-uniform weights of the
# paper's Figures 2 and 3: with the score weights at their small initial values every score is near zero and
# the softmax near uniform, so the "smoothing" would need no learned behaviour.
#
# Two sets of stored runs therefore ask two questions. The first is the paper's own: its recipe (two tied layers,
# 50% dropout, the sentence protocol, SGD at rate 1 halved every epoch from the 13th) against the control the
# paper lacks, the same network without the head (2.65M parameters against 2.77M). It changes three things: the
# width is 2 x 200 instead of 2 x 650; training stops after at most 24 epochs, when the halved rate is 1/4096 of
# its start and the paper's stopping rule (its section 4.1) would train on for gains of hundredths; and the head
# learns at a tenth of the rate, as section 3 argues. Only the last changes the method; the paper's single rate is
# untested at this width.
#
# The second is the book's own: the same network with and without the head, under one recipe, at
# about one parameter count (2.70M for the LSTM, 2.75M and 2.77M with the two heads). The recipe is Tran et
# al.'s (chapter 04): one LSTM layer of 128 units with an untied softmax (unlike section 2 and the paper), no
# dropout, batches of 20 sentences from all of PTB, SGD at rate 1 halved for every epoch after the fourth, 15
# epochs, and the test perplexity of the epoch with the best validation. Chapter 06 trains every family of the
# book this way.

# %%
from mlm.claims import show_claims
from mlm.table import chapter_evidence, show_pending

rows, pending = chapter_evidence("02", "../results")
show_claims(rows)
show_pending(pending);

# %% tags=["remove-input"] jupyter={"source_hidden": true}
from mlm.claims import relative_change

full_rate = [r for r in rows if "full learning rate" in r.question]
assert len(full_rate) == 2 and all(r.verdict == "contradicted (a loss)" for r in full_rate), rows
# "every seed of each scores above every LSTM seed" (all five)
assert all(min(r.seeds[0]) > max(r.seeds[1]) and len(r.seeds[1]) == 5 for r in full_rate), rows
assert all(round(100 * relative_change(*r.seeds[:2])[0]) == 1 for r in full_rate), rows  # "by about 1%"
assert round(100 * (70.1 ** per_token / 82.7 - 1)) == 4, per_token  # "about 4% above that LSTM"
large = mlm.get_preset("zaremba2014-large").paper["test"]
assert large == 78.4 and 0.08 < 70.1 ** per_token / large - 1 < 0.12, large  # "exceeds by about a tenth"
matched_configs = [json.loads(c.read_text())["model"] for name in ("lstm", "attentive-single", "attentive-combined")
                   for c in Path("../results/compare-ptb", name).glob("seed*/config.json")]
assert len(matched_configs) == 11 and not any(m["tie_weights"] for m in matched_configs)  # "an untied softmax"
assert run.config.model.tie_weights, run.config.model  # "unlike section 2"

# %% [markdown]
# The first row asks the paper's own question, its recipe against the control it lacks, with the head at a tenth
# of the rate. The single score gains 8.4% on test (106.6 ± 0.3 against 116.4 ± 0.3; interval 7.8% to 9.0%), and
# every seed with the head scores below every seed without it. The paper's 15.2% is measured against another LSTM,
# so the rule weighs the direction only: *supported*. The validation curves of the six runs show when the gain
# appears:

# %%
from mlm.manifests import cpu
from mlm.table import load_settings

own = load_settings([s for s in cpu.RUNS if s.group == "cpu-salton2017-ptb"], "../results")
own_runs = {"LSTM": "lstm", "single score, head 0.1x": "single-headlr0.1"}
own_curves = {label: [own[name].metrics(i) for i in range(len(own[name].seeds))]
              for label, name in own_runs.items()}

fig, ax = plt.subplots(figsize=(8, 4.5))
for colour, (label, seeds) in zip(("C0", "C2"), own_curves.items()):  # the colours of the first-updates figure
    for i, metrics in enumerate(seeds):
        epochs = [m["epoch"] for m in metrics]
        ax.plot(epochs, [m["valid_ppl"] for m in metrics], "-o", ms=3, color=colour,
                label=label if i == 0 else None)
# the first epoch at a lower rate
halving = next(m["epoch"] for m in own_curves["LSTM"][0] if m["lr"] < 1)
ax.axvline(halving - 0.5, color="k", ls=":", lw=1)
ax.text(halving - 0.3, 270, "learning rate\nhalves from here", fontsize=10, va="top")
ax.set_yscale("log")  # the crossing near 120-200 gets room
ax.set_ylim(100, 310)
ax.set_yticks([100, 120, 150, 200, 250, 300], ["100", "120", "150", "200", "250", "300"])
ax.minorticks_off()
ax.set_xlabel("epoch")
ax.set_ylabel("validation perplexity (log scale)")
ax.set_title("The paper's recipe at 2 x 200, three seeds each (results/cpu-salton2017-ptb)",
             fontsize=11)
ax.legend(fontsize=10)
ax.grid(alpha=0.3)
plt.tight_layout()
plt.show()

# %% tags=["remove-input"] jupyter={"source_hidden": true}
from mlm.claims import SUPPORTED

own_row = rows[0]
assert "the paper's protocol" in own_row.question and own_row.verdict == SUPPORTED and own_row.seeds[2] is None
assert [len(x) for x in own_row.seeds[:2]] == [3, 3] and max(own_row.seeds[0]) < min(own_row.seeds[1]), own_row
assert [round(statistics.fmean(x), 1) for x in own_row.seeds[:2]] == [106.6, 116.4], own_row
assert [round(statistics.stdev(x), 1) for x in own_row.seeds[:2]] == [0.3, 0.3], own_row
assert [round(100 * x, 1) for x in relative_change(*own_row.seeds[:2])] == [-8.4, -9.0, -7.8], own_row
lstm_v, head_v = ([[m["valid_ppl"] for m in metrics] for metrics in own_curves[k]] for k in own_curves)
gap = [statistics.fmean(l[e] for l in lstm_v) - statistics.fmean(h[e] for h in head_v) for e in range(24)]
assert all(h[e] > l[e] for l in lstm_v for h in head_v for e in range(2))  # "leads for the first two epochs"
assert [f"{min(v[0] for v in vs):.0f} to {max(v[0] for v in vs):.0f}" for vs in (lstm_v, head_v)] == \
    ["242 to 251", "274 to 297"]
drops = [statistics.fmean(v[11] - v[12] for v in vs) for vs in (lstm_v, head_v)]
assert 8.5 < drops[0] < 9.2 and 7.2 < drops[1] < 7.8, drops  # "about 9 points and the head 7.5"
assert own_curves["LSTM"][0][17]["lr"] == 1 / 64  # "by epoch 18 the rate is 1/64 of its start"
assert all(h[e] < l[e] for l in lstm_v for h in head_v for e in range(5, 24))  # "from the sixth, every seed"
assert 12.5 < gap[11] < 14 and own_curves["LSTM"][0][11]["lr"] == 1, gap  # "about 13 points at epoch 12"
assert all(abs(v[-1] - min(v)) < 0.1 and abs(v[-1] - v[-5]) < 0.2 for v in lstm_v + head_v)  # "level off"
assert [f"{min(v[-1] for v in vs):.0f}-{max(v[-1] for v in vs):.0f}" for vs in (lstm_v, head_v)] == ["121-122", "110-110"]
own_train = [[metrics[-1]["train_ppl"] for metrics in own_curves[k]] for k in own_curves]
assert 130 < min(own_train[0]) and max(own_train[0]) < 132 and 110 < min(own_train[1]) and max(own_train[1]) < 111.5
assert halving == 13 and [m["lr"] for m in own_curves["LSTM"][0]][-1] == 1 / 4096

# %% [markdown]
# The LSTM leads for the first two epochs (242 to 251 against 274 to 297 after the first): even at a tenth of
# the rate, the head starts slower. From the sixth epoch every seed with the head is ahead of every seed without,
# by about 13 points at epoch 12. When the rate first halves, the LSTM drops about 9 points and the head 7.5, and
# both then level off, at 121 to 122 (LSTM) and 110 (head); by epoch 18 the rate is 1/64 of its start, so the
# tails cannot show whether more learning was left. The head also fits the training text better (training
# perplexity, dropout on: 110 to 111 against 131).
#
# The other four rows are the book's question. Both scores lose to the LSTM at the full learning rate (rows 2
# and 3), by about 1%; every seed of each scores above every LSTM seed, and their first epoch ends far behind
# the LSTM's. Rows 4 and 5 train both scores with the head at a tenth of the rate, the setting section 3 argues
# for. The training curves show the difference (top row: the LSTM and both scores at the full rate; bottom
# row: the head at a tenth):

# %%
from mlm.manifests import compare

families = (("LSTM", "lstm"), ("Attentive, single", "attentive-single"),
            ("Attentive, combined", "attentive-combined"), ("Attentive, single, head 0.1x", "attentive-single-headlr0.1"),
            ("Attentive, combined, head 0.1x", "attentive-combined-headlr0.1"))
stored = load_settings([s for s in compare.RUNS if s.base in dict(families).values()], "../results")
curves = {label: [stored[name].metrics(i) for i in range(len(stored[name].seeds))] for label, name in families}
fig, axes = plt.subplots(2, 3, figsize=(11, 6.5), sharex=True, sharey=True)
for ax, (label, seeds) in zip(axes.flat, curves.items()):
    if label != "LSTM":  # the LSTM's seeds in grey, for reference
        for metrics in curves["LSTM"]:
            ax.plot([m["epoch"] for m in metrics], [m["valid_ppl"] for m in metrics], color="0.7", lw=1)
            ax.plot([m["epoch"] for m in metrics], [m["train_ppl"] for m in metrics], "--", color="0.7", lw=1)
    for i, metrics in enumerate(seeds):
        epochs = [m["epoch"] for m in metrics]
        ax.plot(epochs, [m["valid_ppl"] for m in metrics], "-o", ms=3, color=f"C{i}", label=f"seed {i}, validation")
        ax.plot(epochs, [m["train_ppl"] for m in metrics], "--", color=f"C{i}", lw=1, label=f"seed {i}, training")
    ax.set_yscale("log")
    ax.set_yticks([50, 100, 200, 500, 1000], ["50", "100", "200", "500", "1000"])
    ax.minorticks_off()
    decay = next(m["epoch"] for m in seeds[0] if m["lr"] < seeds[0][0]["lr"])  # the first epoch at a lower rate
    ax.axvline(decay - 0.5, color="k", ls=":", lw=1)
    ax.set_title(label)
    ax.grid(alpha=0.3)
for ax in axes[1]:
    ax.set_xlabel("epoch")
for ax in axes[:, 0]:
    ax.set_ylabel("perplexity")
axes[0, 0].text(decay - 0.3, 700, "learning rate\nhalves from here", fontsize=10, va="top")
axes[1, 2].axis("off")  # five families: the last panel holds the legend
axes[0, 2].tick_params(labelbottom=True)  # the panel above it needs its own epoch axis
axes[0, 2].set_xlabel("epoch")
axes[1, 2].legend(*axes[0, 0].get_legend_handles_labels(), fontsize=10, loc="center")
fig.suptitle("Stored runs of the matched recipe (results/compare-ptb, about 2.7M parameters)\n"
             "grey: the LSTM's seeds", fontsize=11)
plt.tight_layout()
plt.show()

# %%
print(f"{'':<38}{'validation, epoch 1':>20}{'best validation':>17}{'training, last epoch':>22}")
for label, seeds in curves.items():
    for i, metrics in enumerate(seeds):
        print(f"{label + ', seed ' + str(i):<38}{metrics[0]['valid_ppl']:>20.0f}"
              f"{min(m['valid_ppl'] for m in metrics):>17.1f}{metrics[-1]['train_ppl']:>22.1f}")

# %% tags=["remove-input"] jupyter={"source_hidden": true}
first = {label: [m[0]["valid_ppl"] for m in seeds] for label, seeds in curves.items()}
final_train = {label: [m[-1]["train_ppl"] for m in seeds] for label, seeds in curves.items()}
best = {label: [min(e["valid_ppl"] for e in m) for m in seeds] for label, seeds in curves.items()}
attentive = ("Attentive, single", "Attentive, combined")
slow = ("Attentive, single, head 0.1x", "Attentive, combined, head 0.1x")
assert max(first["LSTM"]) < 210 and all(min(first[k]) > 360 for k in attentive), first
assert all(curves[k][1][3]["valid_ppl"] > 1.4 * curves[k][1][2]["valid_ppl"] for k in attentive)  # seed 1, epoch 4
assert all(min(final_train[k]) > max(final_train["LSTM"]) + 5 for k in attentive), final_train
assert all(max(best[k]) < 1.015 * min(best["LSTM"]) for k in attentive), best
assert all(curves[k][i][4]["lr"] < curves[k][i][3]["lr"] == 1.0 for k in curves for i in range(3))  # decay from epoch 5
slow_first = [v for k in slow for v in first[k]]
assert [f"{min(slow_first):.0f}", f"{max(slow_first):.0f}"] == ["212", "228"], slow_first  # "212 to 228"
assert max(slow_first) < 1.15 * max(first["LSTM"]), first  # "close to the LSTM"
assert all(3 < statistics.fmean(best["LSTM"]) - statistics.fmean(best[k]) < 5 for k in slow), best  # "about four points below"
assert all(abs(statistics.fmean(final_train[k]) - statistics.fmean(final_train["LSTM"])) < 2 for k in slow), final_train
assert len(curves["LSTM"]) == 5 and 55.5 < min(final_train["LSTM"]) and max(final_train["LSTM"]) < 58  # "56 to 58"
params = {name: stored[name].results[0]["parameters"] for _, name in families}
assert [round(params[r] / 1e6, 2) for r in ("lstm", "attentive-single", "attentive-combined")] == [2.70, 2.75, 2.77]
lstm_test = [r["test_ppl"] for r in stored["lstm"].results]
assert all(max(r["test_ppl"] for r in stored[dict(families)[k]].results) < min(lstm_test) for k in slow)  # "every seed"
steps = [curves[k][1][3]["valid_ppl"] / curves[k][1][2]["valid_ppl"] for k in slow]  # seed 1, epoch 4
assert all(1.1 < step < 1.2 for step in steps), steps  # "by an eighth to a sixth"
from mlm.claims import SUPPORTED, relative_change

slow_rows = [r for r in rows if "tenth of the learning rate" in r.question and "compare-ptb" in r.evidence]
assert [r.claim.split(" (")[0] for r in slow_rows] == ["Attention over the sentence so far, single score",
                                                       "The same with the combined score"], slow_rows
assert all(r.verdict == SUPPORTED and r.seeds[2] is None for r in slow_rows), slow_rows  # direction only
assert [[round(100 * x, 1) for x in relative_change(*r.seeds[:2])] for r in slow_rows] == \
    [[-3.1, -4.5, -1.8], [-2.9, -3.6, -2.2]], slow_rows

# %% [markdown]
# At the full rate the attentive models' validation perplexity after the first epoch is 371 to 670, the
# LSTM's 189 to 207, and seed 1 of both scores jumps back to about 330 at epoch 4, the last epoch at rate 1
# (the rate halves from epoch 5 on, dotted line). Once it decays they come within 1.5% of the LSTM on
# validation, but their training perplexity ends higher (63 to 66 against 56 to 58): they fit the training
# text less well, the mark of a model trained too little rather than one that overfits.
#
# With the head at a tenth of the rate (bottom row) the picture changes. The first epoch ends at 212 to 228, close
# to the LSTM; seed 1 of each score steps back at epoch 4 by an eighth to a sixth, not by half; the training
# perplexity ends where the LSTM's does, and validation levels off about four points below it (the printout above
# lists each seed's best).
#
# On test the single score now *gains* 3.1% on the LSTM (interval 1.8% to 4.5%) and the combined score 2.9% (2.2%
# to 3.6%), rows 4 and 5 of the table. Lowering only the head's learning rate turns the 1% loss into a 3% gain,
# so in this recipe the loss comes from how the head is trained, not from attention as such; why, these runs do
# not measure (the unigram stage of section 3 is one candidate, seen only in
# the first updates).
#
# Both rows read *supported*: the head helps, and every seed of either head lies below every seed of the
# control. The paper's own recipe (row 1) agrees in
# direction, with a larger gain; its recipe differs from the book's in too many ways (two tied layers, dropout,
# the schedule, a head that adds 4.5% to the parameters rather than 2%) to say which of them makes the difference.

# %% tags=["remove-input"] jupyter={"source_hidden": true}
# row 1's recipe; its schedule (halved from the 13th epoch, 1/4096 at the 24th) is checked on the stored runs above
own_recipe = next(s for s in cpu.RUNS if s.group == "cpu-salton2017-ptb").config()
assert own_recipe.train.epochs == cpu.SALTON_EPOCHS == 24, own_recipe.train
m = own_recipe.model
assert (m.num_layers, m.tie_weights, m.dropout, own_recipe.data.protocol) == (2, True, 0.5, "sentence"), own_recipe
assert (m.hidden_size, own_recipe.train.head_lr_scale) == (200, 1.0), own_recipe  # the lstm; the head's runs: 0.1
own_params = [own[name].results[0]["parameters"] for name in ("lstm", "single-headlr0.1")]
assert [round(x / 1e6, 2) for x in own_params] == [2.65, 2.77] and round(100 * (own_params[1] / own_params[0] - 1), 1) == 4.5
assert all(1.5 < 100 * (params[h] / params["lstm"] - 1) < 2.5 for h in ("attentive-single", "attentive-combined"))  # "2%"

# %% [markdown]
# > **Where this falls short.** No run has the paper's size (2 x 650), so its 70.1 is neither confirmed nor
# > refuted. No run
# > keeps the merge layer of Eq. 7 while zeroing the context (`model.attention_disabled`): part of either gain may
# > come from the extra $\tanh$ layer rather than from reading the buffer. On the recall task the single score's
# > seeds range from chance to a little above the LSTM's best; whether longer training teaches it the combined
# > score's lookup, the runs cannot say.
#
# **Exercise 02** ([`exercises/ex02_attentive_scores.py`](../exercises/ex02_attentive_scores.py)): the causal
# memory mask, the combined score, and the masked softmax that turns scores into a context without NaNs,
# checked with `python -m exercises.grader 02`.

# %% tags=["remove-input"] jupyter={"source_hidden": true}
from mlm.book import record

record("02_attentive_lm", {"single_test_ppl": round(run.result["test_ppl"], 1),
                           "baseline_test_ppl": round(baseline["bigram_test"], 1)})
