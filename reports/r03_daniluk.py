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
# # Report r03 — Daniluk et al. 2017: do split outputs and short windows beat the LSTM?
#
# The paper (ICLR 2017, Figure 2, on its 22.5M-word Wikipedia corpus) reports that attention over the last
# $L$ outputs beats the LSTM, that splitting each output into key, value and predict parts beats it by 11%,
# that a 4-gram RNN with no attention does as well as key-value-predict, and that the window's length hardly
# matters.
#
# With every family at 2.7M parameters under one training schedule on PTB, key-value-predict beats the LSTM
# by 2.2%, lower in every seed, about a fifth of the paper's gain, and the 4-gram RNN by 1.8%, within 0.3% of
# key-value-predict; $L = 1$ and $L = 15$ cannot be told from $L = 5$, as in the paper. Every one of these rows
# reads *inconclusive*. Key-value-predict and the 4-gram RNN clear the ±1% margin (report r00, section 3) on
# their seeds alone, but two of each head's three seeds ran on another kind of processor than the control's
# five, and the hardware allowance (r00, section 5) carries their intervals into the margin; the other rows
# cross a border of the margin on their seeds alone, and the heads without the predict part gain nothing
# measurable.
#
# Against a plain LSTM as wide as those two heads (4.5M parameters), both end about 2% higher (*inconclusive*):
# the heads add no measurable gain over it, so their gain over the budget's LSTM need not come from the head.
#
# Under the paper's own recipe at a third of its widths, the LSTM control at best ties the bigram count model
# (one seed of three) and the heads overfit: *inconclusive*. The tuned runs of the paper's recipe are listed
# under *What waits*.

# %% tags=["parameters"]
results_dir = "../results"

# %%
import statistics

import matplotlib.pyplot as plt
import torch

import mlm
from mlm.claims import relative_change, show_markdown
from mlm.evidence import group_baseline, kind_shifts, machine_pairs, machine_shift
from mlm.manifests.recall import FAMILY_RUNS
from mlm.plots import interval_plot, own_protocol_curves, recall_panels
from mlm.report import (compact_verdicts, show_full_size, show_provenance, show_seeds, show_waiting,
                        verdict_rows)
from mlm.reproduce import load_manifest
from mlm.stored import load_stored_recall, read_json

# %% [markdown]
# ## 1. The verdicts
#
# Three sets of runs ask three questions. The **paper's recipe** rows keep what the paper states (Adam at
# 0.001, batches of 64, 20 steps of backpropagation, the state reset between articles) on WikiText-2 with the
# 10,000 most frequent words, at a third of the paper's widths, with early stopping after three epochs
# without improvement (at most 20) and no dropout, neither of which the paper gives. The **matched recipe**
# rows give every family about 2.70M parameters under one schedule (Tran et al.'s SGD, no dropout) on PTB
# sentences. The **tuned** rows retrain the paper's recipe with a patience of six epochs and every model's
# dropout chosen on validation from 0, 0.2 and 0.4 (not run yet; section 8).
#
# Each row's change is that of our mean test perplexity against the control's, with the 95% interval of that
# change over the seeds; where the two sides ran on different mixes of machines, the interval widened by the
# hardware allowance follows, and the label reads that one (section 4). The notes under the table give each row's
# question and how each side was tuned.

# %%
rows = [r for r in verdict_rows("03", results_dir) if r[2].decided and r[2].seeds]
names = {"lstm": "LSTM", "window-L5": "attention L = 5", "kv-L5": "key-value L = 5",
         "kvp-L5": "key-value-predict L = 5",
         "ngram4": "4-gram RNN", "kvp-L1": "key-value-predict L = 1", "kvp-L15": "key-value-predict L = 15",
         "attention-L10": "attention L = 10", "kv-L10": "key-value L = 10", "lstm-h279": "LSTM, width 279"}
questions = {"cpu": "the paper's recipe", "compare": "matched recipe"}
show_markdown(compact_verdicts(rows, lambda run: names[run], questions))
compare = [r for m, c, r in rows if m == "compare"]
interval_plot(compare, [f"{names[r.model_run]} vs {names[r.control_run]}" for r in compare],
              title="The matched recipe's rows: our change with its 95% interval, ◇ the paper's")
plt.show()

# %% tags=["remove-input"] jupyter={"source_hidden": true}
label_of = {(m, r.model_run, r.control_run): r.verdict for m, c, r in rows}
assert all(v == "inconclusive" for v in label_of.values()), label_of  # the summary: "every one of these rows"
assert all("does not beat the interpolated bigram" in r.reason for m, c, r in rows if m == "cpu"), rows
assert all((m == "cpu") == bool(r.reason) for m, c, r in rows)

# %% [markdown]
# The figure draws the matched rows only; the rows of the paper's recipe are *inconclusive* whatever their
# interval, because their control did not beat counting (section 3; the rule is report r00's, section 7). That rule
# comes before the count of seeds: the two rows with one seed of the model (attention and key-value at $L = 10$)
# read *inconclusive*, not *waiting for seeds*, and show their change alone; key-value's seed ran on the AMD EPYC,
# the control on the NVIDIA H200. Read a matched row by its relative change, not its perplexities: the paper's are
# on its own corpus (a 77k vocabulary, 47M parameters), ours on PTB at 2.70M. The perplexities of every run follow
# in sections 3 and 4.
#
# The two rows against the LSTM of width 279 give the paper's change in brackets and draw no ◇: the paper's heads
# face an LSTM of 300 units (theirs are 834 and 968 wide, meant to match it in parameters), so its 11% answers
# another question, and the rule reads these rows' intervals alone.

# %% [markdown]
# ## 2. Full size
#
# The paper's widths on all of WikiText-2, for a GPU; each row reads *not run yet* until its runs are stored.

# %%
show_full_size("03", results_dir);

# %% [markdown]
# ## 3. The paper's recipe on WikiText-2 (`cpu-daniluk2017-wt2`)
#
# Each head runs at the window the paper found best for it (Figure 2c): $L = 10$ for attention and key-value,
# $L = 5$ for key-value-predict. Attention and key-value at $L = 10$ have one seed each: with the control no
# better than the bigram, no seed of a head could change a verdict. The second table gives each setting's
# size.

# %%
own = show_seeds("cpu-daniluk2017-wt2", "cpu", results_dir)
sizes = {name: s.results[0]["parameters"] for name, s in own.items()}
show_markdown("| run | parameters | against the LSTM |\n|---|---:|---:|\n" + "\n".join(
    f"| {name} | {n:,} | {n / sizes['lstm'] - 1:+.0%} |" for name, n in sizes.items()))
own_specs = [s for s in load_manifest("cpu") if s.group == "cpu-daniluk2017-wt2"]
bigram = group_baseline(own_specs, results_dir)
print(f"interpolated bigram of the same tokens: validation {bigram['bigram_valid']:.1f}, "
      f"test {bigram['bigram_test']:.1f}")
last = [own[run].metrics(i)[-1] for run in own if run != "lstm" for i in range(len(own[run].seeds))]
print(f"the heads' last epoch: training perplexity {min(e['train_ppl'] for e in last):.0f} to "
      f"{max(e['train_ppl'] for e in last):.0f}, validation {min(e['valid_ppl'] for e in last):.0f} to "
      f"{max(e['valid_ppl'] for e in last):.0f}")
shown = {"LSTM": "lstm", "key-value-predict, L = 5": "kvp-L5", "4-gram RNN": "ngram4"}
curves = {label: [own[run].metrics(i) for i in range(len(own[run].seeds))] for label, run in shown.items()}
own_protocol_curves(curves, bigram["bigram_valid"],
                    title="The paper's recipe: validation stays above the bigram's in every run")
plt.show()

# %% [markdown]
# No run beats counting: every best validation and every test perplexity lies above the interpolated
# bigram's. The LSTM, the control of every claim here, scores 190.2 on average against the bigram's 150.4,
# so the rule reads its rows *inconclusive*: a control no better than word-pair counts has not learned what
# a memory head could add to. The heads have 1% to 28% more parameters than the LSTM.
#
# **Our reading.** Early stopping after three epochs without improvement applies to control seeds and heads
# alike, so the procedure is equal, but not how long each side trained; it explains the spread between the
# control's seeds. Seeds 0 and 1 reached
# their best validation at epoch 3 and stopped at epoch 6; seed 2, whose validation swung without three bad
# epochs in a row, ran all 20 epochs and reached its best at epoch 18. Yet even that full-length seed only
# ties the bigram, 151.0 against 150.4 on test.
#
# The split heads, wider LSTMs without dropout, overfit (training perplexity 80 to 104 at their last epoch against
# validation 309 to 432) and stopped after 4 to 7 epochs. The 4-gram RNN's interval, +13.8% to +91.6%, sets
# three such seeds against a control whose mean owes much to one seed that trained 20 epochs. The tuned
# manifest retrains every model with a patience of six and a dropout chosen on validation (section 8); until it
# lands, these rows test nothing.

# %% tags=["remove-input"] jupyter={"source_hidden": true}
lstm = own["lstm"]
assert [round(v, 1) for v in (bigram["bigram_valid"], bigram["bigram_test"])] == [162.5, 150.4], bigram
assert round(statistics.fmean(lstm.values("test_ppl")), 1) == 190.2
assert lstm.values("best_epoch")[:2] == [3, 3] and lstm.values("epochs_run")[:2] == [6, 6], lstm.results
assert lstm.values("best_epoch")[2] == 18 and lstm.values("epochs_run")[2] == 20
assert round(lstm.values("test_ppl")[2], 1) == 151.0
assert all(v > bigram["bigram_valid"] for s in own.values() for v in s.values("best_valid_ppl"))
assert all(v > bigram["bigram_test"] for s in own.values() for v in s.values("test_ppl"))
assert all(run == "lstm" or max(s.values("epochs_run")) < 20 for run, s in own.items())  # stopped early, heads too
assert {e for run, s in own.items() if run != "lstm" for e in s.values("epochs_run")} <= set(range(4, 8))  # "4 to 7"
assert len(own["attention-L10"].seeds) == len(own["kv-L10"].seeds) == 1
assert own["kv-L10"].machine_kinds() == ["EPYC"] and set(own["lstm"].machine_kinds()) == {"NVIDIA H200"}
assert [round(v) for v in (min(e["train_ppl"] for e in last), max(e["train_ppl"] for e in last),
                           min(e["valid_ppl"] for e in last), max(e["valid_ppl"] for e in last))] == [80, 104, 309, 432]
assert [round(100 * (min(v for n, v in sizes.items() if n != "lstm") / sizes["lstm"] - 1)),
        round(100 * (max(sizes.values()) / sizes["lstm"] - 1))] == [1, 28], sizes  # "1% to 28% more"
ngram_row = next(r for m, c, r in rows if m == "cpu" and r.model_run == "ngram4")
assert [round(100 * x, 1) for x in relative_change(*ngram_row.seeds[:2])[1:]] == [13.8, 91.6]

# %% [markdown]
# ### The paper's widths
#
# The paper sets each model's LSTM width so that all have about the same parameter count: 300 for the LSTM,
# 296 for attention, 560 for key-value, 834 for key-value-predict, 564 to 1,120 for the 2- to 5-gram RNNs
# (Figure 2b-c), and reports 23.9M parameters without word vectors for all of them. Counted with its 77k-word
# vocabulary (the models built without allocating weights, on PyTorch's `meta` device):

# %%
counts, widths = {}, {}
for name in ("lstm", "attention-L5", "kv-L5", "kvp-L5", "ngram2", "ngram3", "ngram4", "ngram5"):
    with torch.device("meta"):
        m = mlm.build_model(mlm.get_preset(f"daniluk2017-wt2-{name}", "full"), vocab_size=77_000)
    counts[name] = (sum(p.numel() for p in m.parameters()) - m.embedding.weight.numel()) / 1e6
    widths[name] = m.hidden_size
    print(f"{name:<13} LSTM {m.hidden_size:>4}, softmax input {m.decoder.in_features:>3}: "
          f"{counts[name]:.1f}M parameters without word vectors")

# %% [markdown]
# The LSTM, attention and key-value fit the 23.9M; key-value-predict (25.6M) and every N-gram RNN (28.3M to
# 45.8M) do not. Under our reading of Eq. 13, each of the $N-1$ parts is width/$(N-1)$ units and $W^N$ maps
# them to one such part, which the softmax reads; the wider LSTMs cost more than the narrower softmax saves. The book's 4-gram RNN
# is 969 wide, since 968 does not split into three parts.

# %% tags=["remove-input"] jupyter={"source_hidden": true}
assert all(abs(counts[n] - 23.9) < 0.06 for n in ("lstm", "attention-L5", "kv-L5")), counts
assert round(counts["kvp-L5"], 1) == 25.6 and min(counts[f"ngram{n}"] for n in (2, 3, 4, 5)) == counts["ngram5"]
assert round(counts["ngram5"], 1) == 28.3 and round(counts["ngram2"], 1) == 45.8, counts
assert list(widths.values()) == [300, 296, 560, 834, 564, 786, 969, 1120], widths  # the paper's, 969 for its 968

# %% [markdown]
# ## 4. The matched recipe on PTB (`compare-ptb`)
#
# Every family at about 2.70M parameters, under Tran et al.'s SGD schedule without dropout, on PTB sentences,
# so that a window never reaches past the start of its sentence. The LSTM control has five seeds.

# %%
matched = show_seeds("compare-ptb", "compare", results_dir,
                     runs=["lstm", "window-L5", "kv-L5", "kvp-L5", "ngram4", "lstm-h279"])
pairs = [(run, "lstm") for run in ("window-L5", "kv-L5", "kvp-L5", "ngram4")] + [("ngram4", "kvp-L5")] + [
    ("kvp-L5", "lstm-h279"), ("ngram4", "lstm-h279"), ("lstm-h279", "lstm")]
changes = {pair: relative_change(matched[pair[0]].values("test_ppl"), matched[pair[1]].values("test_ppl"))
           for pair in pairs}
for (run, control), (change, low, high) in changes.items():
    print(f"{run:<10} vs {control:<10} {change:+.1%} (95% interval of the seeds alone {low:+.1%} to {high:+.1%})")

# %% [markdown]
# Key-value-predict and the 4-gram RNN beat the LSTM in every seed, by a fifth to a sixth of the paper's 11%:
# -2.2% and -1.8%. Both intervals clear the ±1% band on the seeds alone, but the two sides ran on different
# kinds of machine in different shares, and the hardware allowance carries them into the band (the machines,
# below): *inconclusive*.
#
# Our runs are consistent with the paper's main finding: the 4-gram RNN, which attends to nothing, does about
# as well as key-value-predict (+0.3%), a claim of its own row; but a claim of *no effect* needs the whole
# interval inside ±1%, and three seeds a side give one from -0.5% to +1.2%: *inconclusive*. Window attention
# and key-value gain nothing measurable (+0.3% and +0.0%), against the paper's 3.5% and 7.3%.
#
# **The same-width LSTM.** The key-value-predict and 4-gram LSTMs are 279 wide against the control's 128,
# so part of their gain may be width rather than the head. The 279-wide LSTM without a head tests this, though
# not cleanly: it lacks the split output too, so its softmax reads all 279 units where the heads' reads a part
# (4.5M parameters against 2.7M). It is 4.0% below the 128-wide control, about twice what either head gains, and the
# heads end above it, key-value-predict by 1.9% and the 4-gram RNN by 2.3%. On the seeds alone the two
# intervals start at +0.6% and +0.9%, short of the +1% that *worse* needs; widened by the hardware allowance
# (the heads' seeds partly on the EPYC) they start at about no change (+0.0%) and +0.4%. Both rows read
# *inconclusive*; neither interval reaches a gain for the head (key-value-predict's only just), so nothing here
# shows a head adding to width, and the heads' 2% over the budget's LSTM need not come from the head.

# %% tags=["remove-input"] jupyter={"source_hidden": true}
lstm_ptb = matched["lstm"].values("test_ppl")
assert len(lstm_ptb) == 5
assert [round(100 * changes[p][0], 1) for p in pairs] == [0.3, 0.0, -2.2, -1.8, 0.3, 1.9, 2.3, -4.0], changes
same_width = {r.model_run: r for m, c, r in rows if m == "compare" and r.control_run == "lstm-h279"}
assert {run: row.verdict for run, row in same_width.items()} == {"kvp-L5": "inconclusive", "ngram4": "inconclusive"}
assert [f"{changes[run, 'lstm-h279'][1]:+.1%}" for run in ("kvp-L5", "ngram4")] == ["+0.6%", "+0.9%"]  # seeds alone
assert [f"{changes[run, 'lstm-h279'][1] - same_width[run].machine:+.1%}" for run in ("kvp-L5", "ngram4")] == [
    "+0.0%", "+0.4%"]  # "reach down to": no gain for the head inside either
assert round(matched["lstm-h279"].results[0]["parameters"] / 1e6, 1) == 4.5
assert set(matched["lstm-h279"].machine_kinds()) == {"Xeon"}
assert all(1.7 < changes["lstm-h279", "lstm"][0] / changes[r, "lstm"][0] < 2.3 for r in ("kvp-L5", "ngram4"))
assert all(changes[r, "lstm"][2] < -0.01 and label_of["compare", r, "lstm"] == "inconclusive" for r in ("kvp-L5", "ngram4"))
assert all(max(matched[r].values("test_ppl")) < min(lstm_ptb) for r in ("kvp-L5", "ngram4")), "every seed"
assert all(0.15 < changes[r, "lstm"][0] / p < 0.25 for r, p in (("kvp-L5", -0.110), ("ngram4", -0.109)))  # "a fifth"
assert [round(100 * x, 1) for x in changes["ngram4", "kvp-L5"][1:]] == [-0.5, 1.2], changes["ngram4", "kvp-L5"]

# %% [markdown]
# ### Machines
#
# The matched runs ran on two kinds of CPU, in different shares: the LSTM's five seeds all on the Intel Xeon
# (seeds 3 and 4, first trained on the AMD EPYC, were rerun there), each head one seed on the Xeon and two on the
# EPYC. Within one kind of machine (the columns of the table below):

# %%
by_kind = {run: {} for run in ("lstm", "window-L5", "kv-L5", "kvp-L5", "ngram4")}  # run -> kind -> test perplexities
for run, split in by_kind.items():
    for kind, ppl in zip(matched[run].machine_kinds(), matched[run].values("test_ppl")):
        split.setdefault(kind, []).append(ppl)
kinds = sorted({kind for split in by_kind.values() for kind in split})
lines = ["| run | " + " | ".join(f"{k}: test (seeds) | {k}: vs the LSTM" for k in kinds) + " |",
         "|---|" + "---|---|" * len(kinds)]
for run, split in by_kind.items():
    vs_lstm = {k: statistics.fmean(split[k]) / statistics.fmean(by_kind["lstm"][k]) - 1
               for k in split if k in by_kind["lstm"]}
    cells = [(" ".join(f"{v:.1f}" for v in split.get(k, [])) or "–", f"{vs_lstm[k]:+.1%}" if k in vs_lstm else "–")
             for k in kinds]
    lines.append(f"| {run} | " + " | ".join(f"{a} | {b}" for a, b in cells) + " |")
show_markdown("\n".join(lines))
show_markdown("| run | machines (the other run, the stored run) | shift of its test perplexity |\n|---|---|---:|\n" + "\n".join(
    f"| {p.run} | {p.kinds[0]}, {p.kinds[1]} | {p.shift:+.2%} |" for p in machine_pairs(results_dir)))
bound = machine_shift(kinds, results_dir)
print(f"the bound on one kind's shift (EPYC against Xeon): ±{bound:.2%}")
for manifest, claim, row in rows:
    if manifest == "compare":
        print(f"{row.model_run} vs {row.control_run}: the term widens the interval by ±{row.machine:.2%}")

# %% [markdown]
# On the Xeon alone, key-value-predict's one seed sits 1.8% below the LSTM's mean and the 4-gram RNN's 2.2% (over
# all seeds, 2.2% and 1.8%). The reruns (the second table) give six pairs of the two CPUs; their shifts run both
# ways, from −1.1% to +1.0%, and their bound, ±0.88% (the far end of the 95% interval of their mean shift),
# replaces the stand-in (±1.19%, the largest shift of one run). A kind's bias moves the change of the means only as
# far as the two sides hold that kind in different shares, so the allowance is the bound times that difference:
# each head (two of three seeds on the EPYC) against the LSTM (none) gets $2/3 \times 0.88\% = 0.59\%$. It carries
# key-value-predict's interval, −2.8% to −1.5% on the seeds alone, to −3.4% to −0.9%: *inconclusive*. The heads'
# EPYC seeds rerun on the Xeon would remove it.

# %% tags=["remove-input"] jupyter={"source_hidden": true}
assert kinds == ["EPYC", "Xeon"] and by_kind["lstm"].keys() == {"Xeon"} and len(by_kind["lstm"]["Xeon"]) == 5
assert all([len(by_kind[r].get(k, [])) for k in kinds] == [2, 1] for r in by_kind if r != "lstm"), by_kind
within = {r: statistics.fmean(by_kind[r]["Xeon"]) / statistics.fmean(by_kind["lstm"]["Xeon"]) - 1
          for r in ("kvp-L5", "ngram4")}
assert [round(100 * within[r], 1) for r in ("kvp-L5", "ngram4")] == [-1.8, -2.2], within
epyc_xeon = kind_shifts("EPYC", "Xeon", machine_pairs(results_dir))
assert len(epyc_xeon) == 6 and [f"{100 * f(epyc_xeon):+.1f}" for f in (min, max)] == ["-1.1", "+1.0"], epyc_xeon
stand_in = max(abs(p.shift) for p in machine_pairs(results_dir))
assert [round(100 * bound, 2), round(100 * stand_in, 2)] == [0.88, 1.19], (bound, stand_in)
kvp_row = next(r for m, c, r in rows if m == "compare" and (r.model_run, r.control_run) == ("kvp-L5", "lstm"))
_, low, high = relative_change(*kvp_row.seeds[:2])
assert round(100 * kvp_row.machine, 2) == 0.59 and abs(kvp_row.machine - 2 / 3 * bound) < 1e-12
assert [round(100 * x, 1) for x in (low, high, low - kvp_row.machine, high + kvp_row.machine)] == [-2.8, -1.5, -3.4, -0.9]

# %% [markdown]
# ### The window retrained
#
# The short-span claim is about the window itself. In the paper (Figure 2a) key-value-predict retrained with
# a window of one output scores 76.1 against 75.8 with five, and with fifteen 75.8 again. The book retrains
# its matched key-value-predict model with $L = 1$ and $L = 15$; the window adds no parameters, so the models
# differ in $L$ alone.

# %%
windows = show_seeds("compare-ptb", "compare", results_dir, runs=["kvp-L1", "kvp-L5", "kvp-L15"])
base = windows["kvp-L5"].values("test_ppl")
for run in ("kvp-L1", "kvp-L15"):
    seeds = windows[run].values("test_ppl")
    change, low, high = relative_change(seeds, base)
    print(f"{run} against kvp-L5: {change:+.1%} (seeds alone {low:+.1%} to {high:+.1%}); its own seeds lie "
          f"{(max(seeds) - min(seeds)) / statistics.fmean(base):.1%} apart")

# %% [markdown]
# Neither change is distinguishable from none: -0.3% for one slot, +0.6% for fifteen, as the paper found. But
# both claims are claims of *no effect*, and that label needs the interval inside ±1%: the seeds of one window
# alone lie 1.1% ($L = 1$) and 1.4% ($L = 15$) apart, so three seeds a side cannot tell a change under 1% from
# none, and the rule reads both *inconclusive*.

# %% tags=["remove-input"] jupyter={"source_hidden": true}
for run, pct, apart in (("kvp-L1", -0.3, 1.1), ("kvp-L15", 0.6, 1.4)):
    seeds = windows[run].values("test_ppl")
    assert round(100 * relative_change(seeds, base)[0], 1) == pct, (run, seeds)
    assert round(100 * (max(seeds) - min(seeds)) / statistics.fmean(base), 1) == apart, (run, seeds)
assert all(r.verdict == "inconclusive" for m, c, r in rows if m == "compare" and c.control == "kvp-L5")

# %% [markdown]
# ## 5. Diagnostics
#
# ### Where the stored window heads attend
#
# Each stored $L = 10$ head of the paper's recipe was probed after training: the mean weight of each window
# position over the test set, and the test perplexity with the window cut at evaluation to its $m$ most recent
# slots (without retraining). The second probe is weak evidence: a head trained with 10 slots meets shorter
# windows only at an article's first steps, so cutting its window mixes what the older slots carried with a
# shift of the inputs it was trained on (section 6).

# %%
probe_rows = ["| run | mean weight by position, oldest → newest | weight beyond the last 5 | "
              "test perplexity, window cut to m = 1, 2, 3, 5, 10 |", "|---|---|---|---|"]
probes = {}
for run in ("attention-L10", "kv-L10"):
    probes[run] = read_json(own[run].folders[0] / "analysis.json")
    profile, cut = probes[run]["profile"], probes[run]["test_ppl_by_window"]
    probe_rows.append(f"| {run} | {' '.join(f'{w:.3f}' for w in profile['weight_by_slot'])} | "
                      f"{profile['mass_beyond_5']:.0%} | "
                      f"{', '.join(f'{cut[m]:.1f}' for m in ('1', '2', '3', '5', '10'))} |")
show_markdown("\n".join(probe_rows));

# %% [markdown]
# Both heads lean on the most recent output, which gets about 0.14 against a uniform 0.10, but keep about
# half their weight beyond the last five, and cutting the window to five slots moves their test perplexity by
# under 1%. These heads belong to runs that did not beat the bigram, so the probe describes weakly trained
# models. Chapter 03's reduced key-value-predict head, trained on far less text, is flatter still: it stays
# within a few percent of uniform at every slot, a different profile from these.

# %% tags=["remove-input"] jupyter={"source_hidden": true}
for run, p in probes.items():
    slots = p["profile"]["weight_by_slot"]
    assert slots[-1] == max(slots) and 0.4 < p["profile"]["mass_beyond_5"] < 0.6, (run, slots)
    assert round(slots[-1], 2) == 0.14 and len(slots) == 10, (run, slots)  # "about 0.14 against a uniform 0.10"
    cut = p["test_ppl_by_window"]
    assert abs(cut["5"] / cut["10"] - 1) < 0.01, (run, cut)

# %% [markdown]
# ### Recall at a distance
#
# The key-value recall task (chapter 00) asks for the value that followed the same key $\Delta$ words earlier;
# a model that cannot see the source is at chance, 0.10. A window of $L$ outputs holds the source's output
# while $\Delta \le L + 1$, the 4-gram RNN's head while $\Delta \le 3$: each head's **reach**. Three seeds of
# each family, an LSTM of 64 units (66 where the output splits in three), Adam at 0.01 for 15 epochs, $L = 5$.
# The LSTM reads each line whole; the heads keep the paper's protocol, 20-step segments, so they take more,
# shorter updates (the table).

# %%
FAMILIES = {"LSTM": None, "window attention, L = 5": 6, "key-value, L = 5": 6, "key-value-predict, L = 5": 6,
            "4-gram RNN": 3}  # label -> reach: a window of L outputs reads delta <= L + 1, the 4-gram RNN delta <= 3
recall = load_stored_recall({label: FAMILY_RUNS[label] for label in FAMILIES}, results_dir)
chance = recall["LSTM"].extras[0]["chance"]
lines = ["| family | accuracy, all Δ (per seed) | within reach | beyond reach | parameters | updates |",
         "|---|---|---|---|---|---|"]
for label, entry in recall.items():
    reach = FAMILIES[label]
    by_reach = [entry.within(0, reach), entry.within(reach + 1)] if reach else [[], []]
    cells = [[s.accuracy for s in entry.scores]] + by_reach
    lines.append(f"| {label} | " + " | ".join(" ".join(f"{a:.2f}" for a in c) or "–" for c in cells)
                 + f" | {entry.results[0]['parameters']:,} | {entry.results[0]['updates']:,} |")
show_markdown("\n".join(lines))
recall_panels(recall, chance, {k: v for k, v in FAMILIES.items() if v}, reference="LSTM", columns=3,
              starts=[2, 4, *range(7, 61, 5)],
              title="Recall by distance Δ (bins 2-3, 4-6, then five wide); grey: the LSTM's mean")
plt.show()

# %% [markdown]
# Every head recalls less than the LSTM on average over its seeds: window attention about 0.37, the split
# heads and the 4-gram RNN about 0.2, with seeds near chance among them. Do the heads at least use their
# reach? Questions asked at the same positions of a line (10 to 59), within each head's reach and just beyond:

# %%
def pooled(entry, low, high, first=10, last=60):
    """Accuracy over every seed's critical tokens with low <= delta <= high, asked at positions first .. last-1."""
    cells = [s.table([low, high + 1], [first, last])[0][0] for s in entry.scores]  # (accuracy, count) per seed
    count = sum(n for _, n in cells)
    return sum(a * n for a, n in cells if n) / count, count


near_far = {label: (pooled(entry, 2, FAMILIES[label] or 6), pooled(entry, (FAMILIES[label] or 6) + 1, 20))
            for label, entry in recall.items()}
lines = ["| family | within reach | reach < Δ ≤ 20 | difference | questions |", "|---|---|---|---|---|"]
for label, ((near, n_near), (far, n_far)) in near_far.items():
    se = [(a * (1 - a) / n) ** 0.5 for a, n in ((near, n_near), (far, n_far))]
    lines.append(f"| {label} | {near:.2f} ± {se[0]:.2f} | {far:.2f} ± {se[1]:.2f} | {near - far:+.2f} | "
                 f"{n_near} / {n_far} |")
show_markdown("\n".join(lines));

# %% [markdown]
# No head recalls better within its reach than beyond it by more than its standard errors (the LSTM's row
# splits at $\Delta = 6$): the values the heads recall come mostly through the LSTM's state. The LSTM itself does
# about 0.08 worse at $\Delta \le 6$ than beyond, so the heads' differences could hide a small benefit of
# reach. The gap to the LSTM mixes the head with the 20-step cut, and the split heads' softmax reads a part of
# 32 or 22 units instead of 64; these runs do not separate the causes.

# %% tags=["remove-input"] jupyter={"source_hidden": true}
mean = {label: statistics.fmean(s.accuracy for s in entry.scores) for label, entry in recall.items()}
heads = [label for label in FAMILIES if label != "LSTM"]
assert all(len(entry.seeds) == 3 for entry in recall.values())
assert all(mean[label] < mean["LSTM"] - 0.1 for label in heads), mean
assert 0.3 < mean["window attention, L = 5"] < 0.45 and all(0.12 < mean[label] < 0.26 for label in heads[1:]), mean
assert all(min(s.accuracy for s in recall[label].scores) < 1.6 * chance for label in heads[1:]), "seeds near chance"
assert all(near_far[label][0][0] < near_far[label][1][0] + 0.05 for label in heads), near_far
assert -0.12 < near_far["LSTM"][0][0] - near_far["LSTM"][1][0] < -0.04, near_far["LSTM"]  # "about 0.08 worse"
assert all(e.results[0]["updates"] > 3 * recall["LSTM"].results[0]["updates"] for e in recall.values()
           if e is not recall["LSTM"])
assert round(chance, 2) == 0.10

# %% [markdown]
# ## 6. Dead ends
#
# - **Cutting the window of a trained model at evaluation** (the second probe of section 5). A head trained
#   with 10 slots and shown fewer meets short windows only at an article's first steps, so the loss mixes
#   what the older slots carried with that shift of its inputs. It cannot say whether recent outputs carry
#   more; retraining $L$ (section 4) can, and replaced it as evidence.
# - **One epoch on articles cut to 1,000 tokens** (`daniluk2017-wt2-medium`): too short for any model to
#   settle; kept as a record, read by no verdict.
# - **Early stopping after three bad epochs** on WikiText-2 without dropout (section 3): it stopped two of
#   the three control seeds at epoch 6, and every head by epoch 7, while the one seed that ran all 20 epochs
#   only tied the bigram. The tuned manifest doubles the patience and lets each model choose its dropout.

# %% [markdown]
# ## 7. Provenance
#
# The group of the paper's recipe is named after the manifest that holds it, `cpu`: the reduced widths meant for a
# CPU. Most of its runs ran on a GPU all the same (the table says which). The matched-recipe rows all read
# the group `compare-ptb`, shared with chapters 02 and 04; only this paper's runs are listed.

# %%
show_provenance([("cpu-daniluk2017-wt2", "cpu")], results_dir)
show_provenance([("compare-ptb", "compare")], results_dir,
                runs=["lstm", "window-L5", "kv-L5", "kvp-L5", "ngram4", "kvp-L1", "kvp-L15", "lstm-h279"]);

# %% [markdown]
# ## 8. What waits
#
# The claims still waiting for runs, with the command of each:

# %%
show_waiting("03", results_dir);

# %% [markdown]
# One measurement waits too. The heads' seeds that ran on the AMD EPYC, rerun on the Intel Xeon with their
# stored commands, would put both sides of the matched rows on one kind of processor and remove their hardware
# allowance (section 4). The same-width rows would stay *inconclusive* unless the reruns move (their intervals on
# the seeds alone start at +0.6% and +0.9%); more seeds of both sides could decide them.
