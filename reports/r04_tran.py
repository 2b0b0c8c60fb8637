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

# %% [markdown] tags=[]
# # Report r04 — Tran, Bisazza & Monz (2016): does a memory of the last words make an LSTM a better language model?
#
# Tran et al. put a Memory Block, attention over the last $n = 15$ input words, on top of an LSTM (RM) or
# between two LSTM layers (RMR), and report lower perplexity than LSTMs of the same width $d = 128$: on English
# news RM(+tM-g) gains 11.2% and RMR(-tM-g) 9.6% over the 1-layer LSTM, and on Penn Treebank (PTB) RM(+tM-g)
# gains 2.1% over a 3-layer LSTM.
#
# On PTB at the paper's width and schedule, three seeds a side, RM gains 2.3% over the 1-layer LSTM (*smaller gain*
# than the paper's English-news gain; the paper trains no 1- or 2-layer LSTM on PTB) and RMR loses 3.4% (*worse*);
# against a 2-layer LSTM, RMR's depth, RMR's change is +0.5% (95% interval −1.5% to +2.5%) where the paper reports a
# 6.1% gain on English news (*inconclusive*). RM's 12.0% over the 3-layer LSTM is flagged (*larger than reported:
# check the control*): our deeper LSTMs end behind our 1-layer one, which the paper's Table 2 LSTMs do not; on one
# seed, a schedule that lets each depth train to its own plateau narrows that gap without closing it. At an equal
# parameter count, the book's question, RM and RMR both read *worse* (+4.6%, +16.4%). The report also reads what the
# block attends to, beside the paper's Figures 3 to 5 and Table 3, and on the recall task of chapter 00.

# %% tags=["parameters"]
results_dir = "../results"

# %% jupyter={"source_hidden": true} tags=["remove-input"]
import json
import re
import statistics
from pathlib import Path

import matplotlib.pyplot as plt
import torch

from mlm.claims import relative_change, show_markdown, spread
from mlm.manifests import tuned
from mlm.manifests.recall import FAMILY_RUNS
from mlm.plots import (RUN_LABELS, attention_by_position, memory_seed_curves, memory_verdicts, recall_panels,
                       sampled_attention)
from mlm.report import compact_verdicts, provenance_line, show_full_size, show_provenance, show_seeds, show_waiting, verdict_rows
from mlm.reproduce import load_manifest
from mlm.stored import load_settings, load_stored_recall

results = Path(results_dir)


def name(run: str) -> str:
    """A run as the text names it: "RM(+tM-g)", "1-layer LSTM"."""
    return RUN_LABELS.get(run, run)


evidence = verdict_rows("04", results_dir)
by_pair = {(m, c.model, c.control): r for m, c, r in evidence}
quoted = {("cpu", "rm-tm-g", "lstm1"): ("smaller gain", -2.3), ("cpu", "rmr-notm-g", "lstm1"): ("worse", 3.4),
          ("cpu", "rm-tm-g", "lstm3"): ("larger than reported: check the control", -12.0),
          ("compare", "rm-tm-g", "lstm"): ("worse", 4.6), ("compare", "rmr-notm-g", "lstm"): ("worse", 16.4),
          ("cpu", "rmr-notm-g", "lstm2"): ("inconclusive", 0.5)}
for key, (label, change_pct) in quoted.items():  # the summary above
    row = by_pair[key]
    assert row.verdict == label and round(100 * relative_change(*row.seeds[:2])[0], 1) == change_pct, (key, row)
assert [round(100 * by_pair["cpu", run, control].seeds[2], 1) for run, control in (
    ("rm-tm-g", "lstm1"), ("rmr-notm-g", "lstm1"), ("rm-tm-g", "lstm3"), ("rmr-notm-g", "lstm2"))] == [
    -11.2, -9.6, -2.1, -6.1]
assert all(len(by_pair[key].seeds[0]) == len(by_pair[key].seeds[1]) == 3 for key in list(quoted)[:3])

# %% [markdown] tags=[]
# ## 1. The verdicts
#
# One row per claim: the paper's change of test perplexity, ours with the 95% interval the rule reads, the seeds
# of each side and the rule's label ([report r00](r00_deciding_a_claim.ipynb) explains the rule). The paper's
# English-news changes are set beside our PTB runs as relative changes only: the corpora differ in size (26M
# against 0.9M training words) and vocabulary (77k against 10k words). The notes under the table say what each
# comparison asks and how each side was tuned. "Handicaps the control" on the row against the 3-layer LSTM means
# that the control is known to be weak here: it fails to reproduce the paper's 3-layer result (section 3).

# %% tags=[]
QUESTION = {"cpu": "equal width", "compare": "equal parameters"}
show_markdown(compact_verdicts(evidence, name, QUESTION));

# %% tags=[]
memory_verdicts(evidence, panels={"cpu": "The paper's question: equal width (d = 128)",
                                  "compare": "The book's question: an equal parameter count (2.70M)"},
                title="Tran et al.'s claims on PTB: change of test perplexity against the control")
plt.show()

# %% [markdown] tags=[]
# The flagged row is RM against the paper's own PTB control, a 3-layer LSTM. Our gain over it is far larger
# than the paper's because our 3-layer LSTM ends behind our 1-layer one (section 3). Against the 2-layer LSTM,
# of RMR's depth, RMR's interval runs from a 1.5% gain to a 2.5% loss: it excludes the paper's 6.1% gain but
# does not fit inside the 1% margin of *no effect*, so more seeds could still move the label.

# %% jupyter={"source_hidden": true} tags=["remove-input"]
ptb_size = json.loads((results / "cpu-tran2016-ptb" / "baseline.json").read_text())["train_tokens"]
assert round(ptb_size / 1e6, 1) == 0.9, ptb_size  # section 1: "0.9M training words"
deep = by_pair["cpu", "rm-tm-g", "lstm3"]
assert deep.verdict == "larger than reported: check the control" and deep.handicaps == "the control", deep
level = by_pair["cpu", "rmr-notm-g", "lstm2"]
assert [round(100 * x, 1) for x in relative_change(*level.seeds[:2])] == [0.5, -1.5, 2.5] and level.machine == 0, level

# %% [markdown] tags=[]
# ## 2. Full size
#
# Tran et al.'s models are small, and section 3 already runs them at the paper's size: $d = 128$ on PTB, with
# the presets the `full` manifest uses too. Its rows below repeat that comparison on a GPU, beside the other
# RM and RMR variants of Table 2 and the sentence-completion models, and read *not run yet* until such runs are
# stored; the paper's English-news corpus is not available.

# %% tags=[]
show_full_size("04", results_dir);

# %% [markdown] tags=[]
# ## 3. The paper's recipe at its width
#
# Every model at $d = 128$ (embeddings, LSTM layers and both memory tables), $n = 15$, SGD at learning rate
# 1 for four epochs, then halved at every epoch from the fifth, 15 epochs in all, gradients clipped at 5,
# batches of 20 sentences of one length, the state and memory reset with every sentence, no dropout; the test
# perplexity is read at each seed's best validation epoch. Each seed:

# %% tags=[]
own = show_seeds("cpu-tran2016-ptb", "cpu", results_dir)


# %% tags=[]
def describe(settings: dict) -> str:
    """Per run: width, LSTM weights, parameters, last epoch's training perplexity, best epochs, test perplexity."""
    lines = ["| run | width d | LSTM weights | parameters | last training ppl (seeds) | best epochs | "
             "test ppl (mean ± sd) |",
             "|---|---|---|---|---|---|---|"]
    for run, setting in settings.items():
        if not setting.seeds:
            lines.append(f"| {name(run)} | | | | not run yet | | |")
            continue
        model = setting.results[0]["config"]["model"]
        d, layers = model["hidden_size"], model["num_layers"] + (model["head"] == "rmr")
        train = [setting.metrics(i)[-1]["train_ppl"] for i in range(len(setting.seeds))]
        best = ", ".join(str(r["best_epoch"]) for r in setting.results)
        lines.append(f"| {name(run)} | {d} | {layers * 4 * d * 2 * d:,} | {setting.results[0]['parameters']:,} | "
                     f"{min(train):.1f} to {max(train):.1f} | {best} | {spread(setting.values('test_ppl'))} |")
    return "\n".join(lines)


show_markdown(describe(own));

# %% tags=[]
memory_seed_curves(own)
plt.show()

# %% [markdown] tags=[]
# In every panel the seeds overlap: the differences between the models are far larger than between seeds.

# %% jupyter={"source_hidden": true} tags=["remove-input"]
train_last = {run: [s.metrics(i)[-1]["train_ppl"] for i in range(len(s.seeds))] for run, s in own.items() if s.seeds}
means = {run: statistics.fmean(s.values("test_ppl")) for run, s in own.items() if s.seeds}
params = {run: s.results[0]["parameters"] for run, s in own.items() if s.seeds}
rm_test, lstm1_test, rmr_test = (own[r].values("test_ppl") for r in ("rm-tm-g", "lstm1", "rmr-notm-g"))
assert max(rm_test) < min(lstm1_test) and min(rmr_test) > max(lstm1_test), "every seed below / above every LSTM seed"
assert 1.95 < params["rm-tm-g"] / params["lstm1"] < 2 and 1.0 < params["rmr-notm-g"] / params["rm-tm-g"] < 1.05
assert all(r["best_epoch"] == 5 for r in own["rm-tm-g"].results) and all(
    r["best_epoch"] == 7 for r in own["lstm1"].results + own["rmr-notm-g"].results)
assert [round(min(train_last[r])) for r in ("rm-tm-g", "lstm1", "rmr-notm-g", "lstm3")] == [40, 56, 66, 85], train_last
assert [round(max(train_last[r])) for r in ("rm-tm-g", "lstm1", "rmr-notm-g", "lstm3")] == [41, 57, 70, 88], train_last
assert [f"{means[r]:.1f}" for r in ("lstm1", "rm-tm-g", "rmr-notm-g", "lstm3")] == ["118.1", "115.3", "122.1", "131.1"]
assert all(8 <= r["best_epoch"] <= 10 for r in own["lstm3"].results)
assert min(own["lstm3"].values("test_ppl")) > max(lstm1_test) + 10
assert all(r["epochs_run"] == 15 for s in own.values() for r in s.results)

# %% [markdown] tags=[]
# **RM gains, less than reported.** Every RM seed scores below every 1-layer LSTM seed (mean 115.3 against 118.1),
# with nearly twice the LSTM's parameters: the memory's two vocabulary-sized tables come on top. RM fits the training
# text far better (a last training perplexity of 40 to 41 against 56 to 57), and overfits sooner: its best
# validation epoch is 5, the LSTM's 7. Without dropout, the test perplexity is read before the overfitting, so the
# gain is what the memory adds at the best epoch of a schedule no side tuned.
#
# **RMR loses to one layer; against two, inconclusive.** RMR(-tM-g), with about as many parameters as RM, scores above every
# 1-layer LSTM seed (mean 122.1) and fits the training text less well (66 to 70), although it has one more layer
# and twice the parameters. The 2-layer LSTM, of RMR's depth without the block, ends at nearly the same test and
# training perplexity (121.5; 68 to 72), so RMR's loss looks like the cost of its second layer under this
# schedule (next paragraph), not of the block.
#
# **The 3-layer control does not reproduce the paper's.** Tran et al.'s PTB comparison sets RM against a 3-layer
# LSTM (123.5 against 126.1), and their Table 2 trains 3-layer LSTMs better than 1-layer ones under this same
# schedule on all three corpora (test perplexity 136.6 against 145.1 in English, 125.1 against 135.8 in German,
# 106.5 against 108.0 in Italian). Ours scores 131.1, worse than our 1-layer LSTM by more than ten points in
# every seed, and ends at a training perplexity of 85 to 88, with its best epochs at 8 to 10 of 15. RM's 12% gain
# over it measures mostly this failure, not the memory.
#
# The 2-layer LSTM lands between the two: 121.5, behind the 1-layer LSTM in every seed, with a last training
# perplexity of 68 to 72. So under this schedule every added layer costs test perplexity and fits the training text
# less: depth under-fits under this schedule, and the 3-layer runs are the extreme of that, not an accident of one
# seed. Why is untested. Candidates: a corpus 28 times smaller than the paper's news corpus (0.9M training words
# against 26M), so far fewer updates per epoch in batches of 20 sentences; the loss summed over each sentence at
# learning rate 1; the length buckets. The next paragraphs test whether the schedule halves the rate too early for
# so few updates.

# %% jupyter={"source_hidden": true} tags=["remove-input"]
kinds = {run: sorted(set(s.machine_kinds())) for run, s in own.items() if s.seeds}
show_markdown("Kinds of machine: " + "; ".join(f"{name(run)} {', '.join(k)}" for run, k in kinds.items())
              + f". The 3-layer row's interval is widened by the hardware allowance, ±{deep.machine:.1%}, the "
              "bound on the shift between its two sides' kinds of processor (report r00); rows whose sides ran on "
              "one kind are not widened.");
assert deep.machine > 0 and by_pair["cpu", "rm-tm-g", "lstm1"].machine == 0
deep_change = relative_change(*deep.seeds[:2])[0]
assert round(100 * deep_change) == -12 and round(100 * deep.seeds[2], 1) == -2.1, deep  # "12%", the paper's 2.1%
assert round(26e6 / ptb_size) == 28, ptb_size  # "a corpus 28 times smaller"
two = own["lstm2"].values("test_ppl")  # "between the two", "behind the 1-layer LSTM in every seed"
assert f"{statistics.fmean(two):.1f}" == "121.5" and max(lstm1_test) < min(two)
assert max(two) < min(own["lstm3"].values("test_ppl"))
assert [round(f(train_last["lstm2"])) for f in (min, max)] == [68, 72], train_last["lstm2"]

# %% [markdown] tags=[]
# **A schedule for depth.** If the paper's schedule, set for a corpus 28 times larger, halves the rate before a
# deep LSTM has learned what it can, a schedule that waits for each depth should let it catch up. Seed 0 of the
# 1- and 3-layer LSTMs trained again on a *plateau* schedule: the rate stays at 1 while the validation
# perplexity falls; after an epoch without a gain the best weights come back and the rate halves; four such
# epochs in a row end the run (at most 30). Each LSTM under both schedules, seed 0 (*final rate*: the rate of
# the last epoch):

# %% tags=[]
plateau = load_settings([s for s in load_manifest("tuned") if s.group == tuned.TRAN], results_dir)


def kept_at_full_rate(rows) -> int:
    """Epochs at the first rate whose weights were kept (an epoch without a gain is undone: ``rolled_back_to``)."""
    return sum(r["lr"] == rows[0]["lr"] and "rolled_back_to" not in r for r in rows)


def schedule_rows() -> str:
    """Seed 0 of each depth under the paper's schedule and the plateau schedule."""
    lines = ["| LSTM | schedule | epochs kept at rate 1 | epochs run | final rate | best validation ppl | test ppl |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for run in tuned.TRAN_PROBE:
        for schedule, setting in (("the paper's", own[run]), ("plateau", plateau[run])):
            i = setting.seeds.index(0)
            rows, result = setting.metrics(i), setting.results[i]
            lines.append(f"| {name(run)} | {schedule} | {kept_at_full_rate(rows)} | {result['epochs_run']} | "
                         f"1/{round(1 / rows[-1]['lr'])} | {result['best_valid_ppl']:.1f} | {result['test_ppl']:.1f} |")
    return "\n".join(lines)


show_markdown(schedule_rows());

# %% jupyter={"source_hidden": true} tags=["remove-input"]
def seed0(setting, key):
    return setting.results[setting.seeds.index(0)][key]


gap = {schedule: seed0(s["lstm3"], "best_valid_ppl") - seed0(s["lstm1"], "best_valid_ppl")
       for schedule, s in (("paper", own), ("plateau", plateau))}
assert f"{gap['plateau']:.1f}" == "5.9", gap  # "5.9 validation points behind"
deep3, deep1 = (plateau[run].metrics(0) for run in ("lstm3", "lstm1"))
assert kept_at_full_rate(deep3) == 9 and sum(r["lr"] == 1 for r in deep3) == 10  # "nine epochs (a tenth, undone)"
gain3 = seed0(own["lstm3"], "best_valid_ppl") - seed0(plateau["lstm3"], "best_valid_ppl")
gain1 = seed0(own["lstm1"], "best_valid_ppl") - seed0(plateau["lstm1"], "best_valid_ppl")
assert round(gain3) == 7 and round(gain1) == -1, (gain3, gain1)  # "7 points below", "a point worse"
early = [next(r["valid_ppl"] for r in s.metrics(0) if r["epoch"] == 4) for s in (own["lstm3"], plateau["lstm3"])]
assert f"{early[0] / early[1] - 1:.1%}" == "2.5%", early  # "differ by 2.5% after four identical epochs"
_, _, deep_high = relative_change(*deep.seeds[:2])
assert f"{deep.machine:.1%}" == "0.9%" and deep_high + 0.025 < 2 * deep.seeds[2], deep  # "its flag stands"
assert all(r["lr"] == 1 for s in (own["lstm3"], plateau["lstm3"]) for r in s.metrics(0)[:4])  # "identical"
deep_test = seed0(plateau["lstm3"], "test_ppl") / seed0(plateau["lstm1"], "test_ppl") - 1
assert f"{deep_test:.1%}" == "5.5%", deep_test  # "5.5% on the test text"
one_seed = (statistics.variance(own["lstm3"].values("best_valid_ppl"))
            + statistics.variance(own["lstm1"].values("best_valid_ppl"))) ** 0.5
assert round(one_seed, 1) == 1.1 and gap["plateau"] > 4 * one_seed, one_seed  # "near 1.1 points"
at_best = [next(r["train_ppl"] for r in rows if r["epoch"] == plateau[run].results[0]["best_epoch"])
           for run, rows in (("lstm3", deep3), ("lstm1", deep1))]
assert [f"{v:.1f}" for v in at_best] == ["71.8", "62.6"], at_best  # "fits the training text less at its best epoch"
assert {k for s in plateau.values() for k in s.machine_kinds()} == {"Xeon"} == set(own["lstm1"].machine_kinds())
assert set(own["lstm3"].machine_kinds()) == {"EPYC"}  # "That run ran on the AMD EPYC and this one on the Intel Xeon"

# %% [markdown] tags=[]
# The plateau schedule keeps the 3-layer LSTM at rate 1 for nine epochs (a tenth is undone), and its best
# validation perplexity falls to 129.1, 7 points below the same seed under the paper's schedule. That run ran on
# the AMD EPYC and this one on the Intel Xeon, and the two already differ by 2.5% after four identical epochs, so
# part of the 7 points may be the machine's. That divergence is larger than the ±0.9% allowance that widens the
# 3-layer row (section 1, from reruns of one-layer LSTMs); widened by 2.5% instead, the row's upper end would
# still lie beyond twice the paper's gain, so its flag stands. The 1-layer LSTM, on the Xeon under both
# schedules, ends a point worse.
#
# On one machine, the 3-layer LSTM stays 5.9 validation points behind the 1-layer one, and 5.5% on the test
# text. The spread of the paper-schedule seeds puts the standard deviation of a one-seed difference near 1.1
# points (from the paper-schedule seeds, three a side), so the gap's sign is likely right, though its size is
# uncertain. The deeper LSTM also fits the training text less at its best epoch (71.8 against 62.6): it
# under-fits, and a cause in the optimisation stays open. On seed 0, under the paper's schedule and one plateau
# setting (halve after one epoch without a gain, stop after four), depth does not pay at $d = 128$ on PTB
# without dropout. The block's rows keep the paper's
# schedule, and the row against the 3-layer LSTM keeps its flag *handicaps the control*.

# %% [markdown] tags=[]
# **The test text.** The paper's PTB numbers come from the authors' loader, which keeps sentences of 10 to 80
# tokens and words seen more than 5 times in training, and drops the leftover sentences of each length bucket.
# Our test text is PTB's whole test set, all 82,430 tokens, so only the relative changes compare with the
# paper's, not the perplexities.

# %% jupyter={"source_hidden": true} tags=["remove-input"]
assert all(r["test_tokens"] == 82_430 for s in own.values() for r in s.results)

# %% [markdown] tags=[]
# ## 4. At an equal parameter count
#
# Chapter 06 compares every family of the book under Tran et al.'s schedule at the 1-layer LSTM's 2.70M
# parameters, each model's width chosen to fit. That is the book's question, not the paper's: there the
# memory's tables take parameters the LSTM would otherwise get. Its control is section 3's 1-layer LSTM: seeds 0
# to 2 are the same command with the same numbers, and seeds 3 and 4 are added, so the two sections' claims
# share their control's runs and are not independent.

# %% tags=[]
matched_runs = ["lstm", "rm-tm-g", "rmr-notm-g"]
matched = show_seeds("compare-ptb", "compare", results_dir, runs=matched_runs)
show_markdown(describe(matched));

# %% jupyter={"source_hidden": true} tags=["remove-input"]
assert matched["lstm"].values("test_ppl")[:3] == own["lstm1"].values("test_ppl")  # "the same numbers"
assert matched["lstm"].seeds == [0, 1, 2, 3, 4] and own["lstm1"].seeds == [0, 1, 2]

# %% tags=[]
memory_seed_curves(matched, label=lambda run, s: f"{name(run)}, d = {s.results[0]['config']['model']['hidden_size']}")
plt.show()

# %% jupyter={"source_hidden": true} tags=["remove-input"]
widths = {run: s.results[0]["config"]["model"]["hidden_size"] for run, s in matched.items()}
matched_train = {run: [s.metrics(i)[-1]["train_ppl"] for i in range(len(s.seeds))] for run, s in matched.items()}
assert (widths["lstm"], widths["rm-tm-g"], widths["rmr-notm-g"]) == (128, 66, 65), widths
assert 0.24 < (66 / 128) ** 2 < 0.28  # "about a quarter of the control's LSTM weights"
assert max(matched_train["rm-tm-g"]) < 1.1 * max(matched_train["lstm"])
ratio = statistics.fmean(matched_train["rmr-notm-g"]) / statistics.fmean(matched_train["lstm"])
assert round(ratio, 1) == 1.6, (ratio, matched_train)  # "about 1.6 times the control's"
assert all(by_pair["compare", run, "lstm"].verdict == "worse" for run in ("rm-tm-g", "rmr-notm-g"))

# %% [markdown] tags=[]
# At 2.70M parameters RM keeps a 66-unit LSTM, about a quarter of the control's LSTM weights. It fits the
# training text about as well as the control and generalises worse. RMR's two 65-unit layers cannot fit the
# training text at all well (a last training perplexity about 1.6 times the control's). Both rows read *worse*:
# at this budget the memory's tables cost more than they give. This says nothing against the paper's claim,
# which is made at equal width.
#
# ## 5. The recall task: reading a word back
#
# The key-value recall task of chapter 00 asks for a value $\Delta$ words after it appeared (the **source**),
# when its key comes back (the **critical token**); with ten values, chance is 0.10. A memory of $n = 15$ words
# holds the source while $\Delta \le 15$, its **reach**. The stored runs train each model three times at a small
# size (an LSTM of 64 units, $n = 15$, Adam, 20,000 lines) and score it on the critical tokens of 1,000 test
# lines. The RMR here is RMR(+tM-g), the variant chapter 06 compares across the book's families; the PTB claims
# above use RMR(-tM-g), the paper's best RMR on English news.

# %% tags=[]
recall = load_stored_recall({"LSTM": FAMILY_RUNS["LSTM"], "RM(+tM-g)": FAMILY_RUNS["RM(+tM-g), n = 15"],
                             "RMR(+tM-g)": FAMILY_RUNS["RMR(+tM-g), n = 15"]}, results_dir)
chance, n_memory = recall["LSTM"].extras[0]["chance"], 15
recall_panels(recall, chance, reach={k: n_memory for k in recall if k != "LSTM"}, reference="LSTM", columns=3,
              width=7, title="Key-value recall: accuracy on the critical token (Δ in bins 2-8, 9-15, 16-22, ...)")
plt.show()

# %% tags=[]
lines = ["| model | seed | Δ ≤ 15 | Δ > 15 | weight on the source | uniform | source the largest weight |",
         "|---|---|---|---|---|---|---|"]
for label, entry in recall.items():
    for seed, near, far, extra in zip(entry.seeds, entry.within(2, n_memory), entry.within(n_memory + 1), entry.extras):
        found = extra["source_attention"]
        attention = (f"{found['weight']:.2f} | {found['uniform']:.2f} | {found['is_max']:.0%}" if found
                     else "– | – | –")
        lines.append(f"| {label} | {seed} | {near:.2f} | {far:.2f} | {attention} |")
show_markdown("\n".join(lines));

# %% [markdown] tags=[]
# The LSTM recalls far above chance at every distance, and no worse far back than near: what it keeps in its
# state does not fade over this range. RM's three seeds show both ways a model with a memory can recall. In
# seed 2 the LSTM under the block never learned to carry the pair: within the reach the model recalls about two
# values in three by reading the source (about half its weight on it, uniform being 0.07), and beyond the reach
# it falls to chance.
#
# In seeds 0 and 1 the LSTM carries the pair, so recall drops by at most 8 points at the
# reach, though the block still puts about three times the uniform weight on the source.
#
# Why does reading the source give only two values in three? A slot's score is $M$'s row for the word in it plus
# $T$'s row for the slot. Up to two other pairs sit between the source and the question, so their values are in
# memory too, and no slot records which key came before it: the block can single out the source only by its
# position, that is, only if $h_t$ encodes how far back the key was. RMR's block gives the source about the
# uniform weight or less; its recall is its LSTMs', high in one seed and at chance in another.

# %% jupyter={"source_hidden": true} tags=["remove-input"]
lstm_near, lstm_far = recall["LSTM"].within(2, n_memory), recall["LSTM"].within(n_memory + 1)
assert chance == 0.1 and min(lstm_near + lstm_far) > 3 * chance and abs(sum(lstm_near) - sum(lstm_far)) / 3 < 0.1
rm_recall, rmr_recall = recall["RM(+tM-g)"], recall["RMR(+tM-g)"]
for entry in recall.values():  # the setting section 5 names
    for r in entry.results:
        assert (r["config"]["model"]["hidden_size"], r["config"]["train"]["optimizer"],
                r["config"]["data"]["task_examples"]) == (64, "adam", 20_000), r["config"]
assert all(x["source_attention"]["lines"] == 1000 for x in rm_recall.extras)
rm_near, rm_far = rm_recall.within(2, n_memory), rm_recall.within(n_memory + 1)
rm_source = [x["source_attention"] for x in rm_recall.extras]
assert rm_recall.seeds == [0, 1, 2] and 0.6 < rm_near[2] < 0.75 and rm_far[2] < 2 * chance
assert 0.45 < rm_source[2]["weight"] < 0.6 and round(rm_source[2]["uniform"], 2) == 0.07
assert all(abs(rm_near[i] - rm_far[i]) < 0.1 and rm_far[i] > 0.5 for i in (0, 1))
assert round(100 * (rm_near[0] - rm_far[0])) == 8 and 0 <= rm_near[1] - rm_far[1] < 0.08
assert all(2.5 < rm_source[i]["weight"] / rm_source[i]["uniform"] < 3.5 for i in (0, 1))
assert max(x["source_attention"]["weight"] / x["source_attention"]["uniform"] for x in rmr_recall.extras) < 1.5
rmr_all = rmr_recall.within(2)
assert max(rmr_all) > 0.55 and min(rmr_all) < 2 * chance

# %% [markdown] tags=[]
# **At matched positions.** The critical token's position in its line is the words before the source pair plus
# $\Delta$ plus one (the source's key), so larger distances are also asked later in the line. The table holds the
# position fixed: without a memory the two rows of a model should read alike, and for a memory the gap between
# them at one position is what reading the source adds (all seeds together; a dash for fewer than 30 tokens).

# %% tags=[]
d_edges, position_edges = [2, 16, 61], [0, 20, 40, 60, 80]  # Δ <= 15 and Δ > 15; the critical token's position


def matched_cell(entry, i, j):
    """(accuracy, count) over all seeds of the critical tokens in Δ bin i and position bin j."""
    cells = [scores.table(d_edges, position_edges)[i][j] for scores in entry.scores]
    count = sum(c for _, c in cells)
    return sum(accuracy * c for accuracy, c in cells) / max(count, 1), count


header = "| model, distance | " + " | ".join(f"position {lo}-{hi - 1}" for lo, hi in zip(position_edges,
                                                                                       position_edges[1:])) + " |"
table = [header, "|---" * len(position_edges) + "|"]
for label, entry in recall.items():
    for i, span in enumerate((f"Δ ≤ {n_memory}", f"Δ > {n_memory}")):
        cells = [matched_cell(entry, i, j) for j in range(len(position_edges) - 1)]
        table.append(f"| {label}, {span} | " + " | ".join(f"{a:.2f}" if c >= 30 else "–" for a, c in cells) + " |")
show_markdown("\n".join(table));

# %% [markdown] tags=[]
# The LSTM does several points worse when the question comes in a line's first forty words, and its two rows stay
# within about 0.05 of each other at every position where both have counts. RM's rows part at every position from 20
# on; the seed table shows that the gap is seed 2's, whose LSTM does not carry the pair. RM also recalls less in a
# line's first twenty words, where its memory is not yet full and, with the paper's slice $T[1:m]$, a row of $T$
# does not yet mean a fixed distance back; the counts there are small, and the cause is not tested.

# %% jupyter={"source_hidden": true} tags=["remove-input"]
early = [matched_cell(recall["LSTM"], i, j)[0] for i, j in ((0, 0), (0, 1), (1, 1))]
late = [matched_cell(recall["LSTM"], i, j)[0] for i, j in ((0, 2), (0, 3), (1, 2), (1, 3))]
assert sum(late) / len(late) - sum(early) / len(early) > 0.03, (early, late)
assert all(abs(matched_cell(recall["LSTM"], 0, j)[0] - matched_cell(recall["LSTM"], 1, j)[0]) < 0.055
           for j in (1, 2, 3)), "within about 0.05"
assert all(matched_cell(rm_recall, 0, j)[0] - matched_cell(rm_recall, 1, j)[0] > 0.1 for j in (1, 2, 3))
assert matched_cell(rm_recall, 0, 0)[0] < min(matched_cell(rm_recall, 0, j)[0] for j in (1, 2, 3)) - 0.1

# %% [markdown] tags=[]
# ## 6. What the memory attends to, beside the paper's figures
#
# The paper's section 5.1 reads the attention of its trained models in three ways. We repeat them on PTB's test
# set with two sets of models: the three seeds of RM(+tM-g) and RMR(-tM-g) of section 3 (15 epochs), and one
# earlier run of each trained for two epochs on the whole of PTB (learning rate 1, then 0.5), with its 1-layer
# LSTM. Only steps whose memory is full count, from a sentence's fifteenth word on, so that a position means the
# same at every step.

# %% tags=[]
full_runs = {f"{name(run)}, 15 epochs": own[run] for run in ("rm-tm-g", "rmr-notm-g")}
full_attention = {label: [json.loads((folder / "attention.json").read_text()) for folder in s.folders]
                  for label, s in full_runs.items()}
short_dir = results / "tran2016-ptb-128-whole"
short = {f"{name(run)}, 2 epochs": (json.loads((short_dir / run / "result.json").read_text()),
                                    json.loads((short_dir / run / "attention.json").read_text()))
         for run in ("rm-tm-g", "rmr-notm-g")}
short_lstm = json.loads((short_dir / "lstm1" / "result.json").read_text())
bigram = json.loads((results / "cpu-tran2016-ptb" / "baseline.json").read_text())  # all of PTB, sentence protocol
show_markdown("\n".join(
    ["| run | test perplexity (mean ± sd) | test predictions with a full memory |", "|---|---|---|"]
    + [f"| {label} | {spread(full_runs[label].values('test_ppl'))} | "
       f"{full_attention[label][0]['positions']:,} of {full_runs[label].results[0]['test_tokens']:,} |"
       for label in full_runs]
    + [f"| {label} | {res['test_ppl']:.1f} | {att['positions']:,} of {res['test_tokens']:,} |"
       for label, (res, att) in short.items()]
    + [f"| 1-layer LSTM, 2 epochs | {short_lstm['test_ppl']:.1f} | |",
       f"| interpolated bigram of all PTB | {bigram['bigram_test']:.1f} | |"]));

# %% jupyter={"source_hidden": true} tags=["remove-input"]
assert bigram["data"]["max_train_tokens"] is None and bigram["data"]["protocol"] == "sentence"
assert [round(short[k][0]["test_ppl"], 1) for k in ("RM(+tM-g), 2 epochs", "RMR(-tM-g), 2 epochs")] == [140.1, 172.3]
assert round(short_lstm["test_ppl"], 1) == 145.8
assert all(0.35 < att["positions"] / res["test_tokens"] < 0.45 for res, att in short.values()), "two in five"

# %% [markdown] tags=[]
# **Average attention per position (Figure 3).** Position $-1$ is the current word, $-15$ the oldest; the weight
# axis is logarithmic, so weights far below uniform ($1/15$) stay readable. The 15-epoch lines are the mean of
# three seeds; the seeds overlap (the table under the figure).

# %% tags=[]
curves = {f"{label} (3 seeds)": torch.tensor([a["average_by_position"] for a in seeds]).mean(0).tolist()
          for label, seeds in full_attention.items()}
curves |= {label: att["average_by_position"] for label, (_, att) in short.items()}
attention_by_position(curves, title="Average attention per memory position (the paper's Figure 3 on PTB)")
plt.show()
uniform = 1 / n_memory
show_markdown("\n".join(["| run | on the current word | the seven oldest words together (uniform 0.47) |",
                         "|---|---|---|"]
                        + [f"| {label}, seed {seed} | {a['average_by_position'][-1]:.2f} | "
                           f"{sum(a['average_by_position'][:7]):.2f} |"
                           for label, seeds in full_attention.items() for seed, a in zip(full_runs[label].seeds, seeds)]
                        + [f"| {label} | {att['average_by_position'][-1]:.2f} | "
                           f"{sum(att['average_by_position'][:7]):.2f} |"
                           for label, (_, att) in short.items()]));

# %% jupyter={"source_hidden": true} tags=["remove-input"]
rm_full = [a["average_by_position"] for a in full_attention["RM(+tM-g), 15 epochs"]]
rmr_full = [a["average_by_position"] for a in full_attention["RMR(-tM-g), 15 epochs"]]
assert all(all(x < y for x, y in zip(a, a[1:])) or sum(b < c for b, c in zip(a, a[1:])) >= 13 for a in rm_full)
assert sorted(round(a[-1], 2) for a in rm_full)[::2] == [0.34, 0.42] and all(sum(a[:7]) < 0.105 for a in rm_full)
assert sorted(round(a[-1], 2) for a in rmr_full)[::2] == [0.13, 0.15]
assert all(1.9 < a[-1] / uniform < 2.4 for a in rmr_full)  # "about twice the uniform share"
assert all(0.8 * uniform < w < 1.15 * uniform for a in rmr_full for w in a[:-2])
rm_short, rmr_short = short["RM(+tM-g), 2 epochs"][1]["average_by_position"], short["RMR(-tM-g), 2 epochs"][1][
    "average_by_position"]
assert (round(rm_short[-1], 2), round(rmr_short[-1], 2)) == (0.48, 0.13)
assert max(rm_short[:7]) < 0.2 * uniform and max(a[-1] for a in rm_full) < rm_short[-1]

# %% [markdown] tags=[]
# RM's attention decays as in the paper's figure, less weight the further back, but more steeply: the paper's
# colour bar runs from 0.08 to 0.24, while our RM puts 0.34 to 0.42 on the current word and, after 15 epochs,
# a tenth of the weight or less on the seven oldest words together (their uniform share is 0.47). Two epochs give a
# steeper curve still (0.48 on the current word).
#
# RMR does not reproduce the paper's reading that RMR concentrates *more* on the current word than RM. Ours
# spreads its weight almost uniformly, with about twice the uniform share (0.13 to 0.15) on the current word, less
# than RM's. Being -tM, as in the paper's figure, its keys carry no position, so it can prefer a slot only through
# the word in it.
#
# **Attention of 100 sampled words (Figure 4).** Each column one randomly drawn test prediction, each row a
# memory position, the current word at the bottom as in the paper. The colour is logarithmic so that "ten times
# below uniform" and "uniform" differ; dark means a low weight, the reverse of the paper's figure.

# %% tags=[]
sampled = {label: torch.tensor(seeds[0]["sampled_weights"]) for label, seeds in full_attention.items()}
sampled_attention({f"{label}, seed 0": w for label, w in sampled.items()},
                  title="Attention of 100 sampled test words (the paper's Figure 4 on PTB)")
plt.show()
sampled |= {label: torch.tensor(att["sampled_weights"]) for label, (_, att) in short.items()}
sampled_header = ("| run (seed 0) | columns whose largest weight is the current word | "
                  "oldest five rows: median weight / uniform |")
show_markdown("\n".join([sampled_header, "|---|---|---|"]
                        + [f"| {label} | {(w.argmax(1) == n_memory - 1).float().mean():.0%} | "
                           f"{w[:, :5].median() / uniform:.3f} |" for label, w in sampled.items()]));

# %% jupyter={"source_hidden": true} tags=["remove-input"]
rm_sampled = sampled["RM(+tM-g), 15 epochs"]
assert 0.45 < (rm_sampled.argmax(1) == 14).float().mean() < 0.6 and rm_sampled[:, :5].median() < uniform / 20
assert sampled["RM(+tM-g), 2 epochs"][:, :5].median() < uniform / 100
assert all(0.5 < w[:, :5].median() / uniform < 1 for label, w in sampled.items() if label.startswith("RMR"))

# %% [markdown] tags=[]
# RM puts its largest weight on the current word in about half the columns and spreads the rest over the few
# words before it; its oldest rows are dark, tens to hundreds of times below uniform. The paper's Figure 4 shows
# many distant words with noticeable weight and many predictions spread evenly. Of our models it is RMR that
# spreads its weight over the whole memory (the oldest rows' median within a factor of two of uniform); the
# paper's figure is of RM.
#
# **Attention on a distant word (Figure 5).** The test predictions whose most attended word lies at least 7
# positions back (the paper's "more than six positions to the left"), the four with the highest weight, one per
# attended word, with the top five guesses and their log-probabilities. Positions count the current word as 1
# back:

# %% tags=[]
def show_examples(examples):
    for e in examples:
        memory = " ".join(f"[{w}]" if i == len(e["memory"]) - e["distance"] else w for i, w in enumerate(e["memory"]))
        print(f"{memory}  ->  {e['target']} ({e['target_log_prob']:.1f})")
        print(f"    attends '{e['attended']}' {e['distance']} back with weight {e['weight']:.2f}; top 5: "
              + ", ".join(f"{w} ({lp:.1f})" for w, lp in e["top"]))


def distinct(examples):
    """The four highest-weight examples, one per attended word."""
    best = {e["attended"]: e for e in reversed(examples)}
    return sorted(best.values(), key=lambda e: -e["weight"])[:4]


print("RM(+tM-g), 15 epochs, seed 0")
show_examples(distinct(full_attention["RM(+tM-g), 15 epochs"][0]["distant_examples"]))
print("\nRM(+tM-g), 2 epochs")
show_examples(distinct(short["RM(+tM-g), 2 epochs"][1]["distant_examples"]))

# %% jupyter={"source_hidden": true} tags=["remove-input"]
number_words = {"N", "$", "million", "billion", "cents", "month", "months", "share", "one", "two", "three", "four",
                "five", "six", "seven"}
shown = distinct(full_attention["RM(+tM-g), 15 epochs"][0]["distant_examples"]) + distinct(
    short["RM(+tM-g), 2 epochs"][1]["distant_examples"])
assert sum(bool({e["attended"], e["target"]} & number_words) for e in shown) >= 6, shown
assert any(e["attended"] == e["target"] == "million" and e["distance"] >= 7 and e["target_log_prob"] > -0.1
           for e in shown)

# %% [markdown] tags=[]
# Most examples follow the number patterns of financial news (PTB writes every number as `N`): after `from $ N`
# the model looks back at the `million` of `about $ N million` and predicts the same unit again, almost certainly.
# The paper found separable-verb particles in German and fixed expressions in German and Italian, on corpora of
# 22M to 29M tokens; PTB's financial text offers units and ranges instead.
#
# ## 7. Sentence completion and frequent pairs
#
# **Sentence completion.** The paper's best model answers 69.2% of the MSR Sentence Completion Challenge (its
# Table 4): three LSTM layers and a Memory Block at $d = 512$, dropout 0.3, trained on 47M tokens of novels. Its
# own LSTM baseline, three layers at $d = 256$, answers 56.0%, the yardstick for an LSTM. A one-epoch LSTM of the
# book's width, trained on the first 1M tokens of the book's Holmes novels with a 10,000-word vocabulary, shows
# why both are out of reach at this size; beside it, word frequency alone (a unigram model of the same tokens):

# %% tags=[]
notes = [json.loads(line) for line in (results / "holmes-notes.jsonl").read_text().splitlines()]
probe = next(r for r in notes if r["what"] == "train" and r["train_tokens"] == 999_970)  # the first 1M tokens
print(f"{probe['train_tokens']:,} training tokens, {probe['vocab']:,}-word vocabulary, one epoch")
print(f"unknown words: {probe['oov']['candidate_oov_rate']:.0%} of the candidates; "
      f"{probe['oov']['any_candidate_oov']} of the 1,040 questions hold one")
print(f"LSTM accuracy {probe['accuracy']:.1%} (chance 20%; {probe['ties']} questions tied); "
      f"{probe['accuracy_with_unk_penalty']:.1%} with the unknown word penalised")
unigram_row = next(line for line in (results / "holmes-notes.md").read_text().splitlines()
                   if line.startswith("| `UnigramLM` (training-word frequencies only) | first 1M tokens, K = 10,000 |"))
unigram, unigram_penalised = re.findall(r"\| (\d+\.\d)%", unigram_row)[:2]  # from the notes' baseline table
print(f"unigram accuracy {unigram}%; {unigram_penalised}% with the unknown word penalised")

# %% [markdown] tags=[]
# A quarter of the candidates are unknown words, most questions hold one, and the LSTM answers at chance
# (19.2%), a third of the questions tied, against the paper's LSTM's 56.0%. Penalising the unknown word lifts it
# to 25.5%, no better than word frequency alone with the same penalty (25.1%; `results/holmes-notes.md`). The
# scorer stays in `mlm.completion`, with its tests, for a larger run.

# %% jupyter={"source_hidden": true} tags=["remove-input"]
assert 0.23 < probe["oov"]["candidate_oov_rate"] < 0.27 and probe["oov"]["any_candidate_oov"] > 520
assert abs(probe["accuracy"] - 0.2) < 0.013 and 1040 / 4 < probe["ties"] < 1040 / 2.5
assert f"{probe['accuracy']:.1%}" == "19.2%" and f"{probe['accuracy_with_unk_penalty']:.1%}" == "25.5%"
assert (unigram, unigram_penalised) == ("18.6", "25.1"), unigram_row
assert abs(probe["accuracy_with_unk_penalty"] - float(unigram_penalised) / 100) < 0.013  # "no better": within 1 se

# %% [markdown] tags=[]
# **Frequent pairs (Table 3).** The paper takes the (attended word, predicted word) pairs whose attention lies
# more than six positions back, groups them by distance, and averages how often each pair occurs together in the
# training text. Its means (the first row, from its German RM(+tM-g)), 24 to 87, show no trend with distance,
# which it reads as the memory doing more than recall frequent pairs. Ours: each cell holds the pairs' mean count
# in the training text, then in brackets the number of predictions at that distance.

# %% tags=[]
pair_rows = {f"RM(+tM-g), 15 epochs, seed {seed}": a["pair_frequency_by_distance"]
             for seed, a in zip(own["rm-tm-g"].seeds, full_attention["RM(+tM-g), 15 epochs"])}
pair_rows["RM(+tM-g), 2 epochs"] = short["RM(+tM-g), 2 epochs"][1]["pair_frequency_by_distance"]
distances = list(range(7, 16))
TRAN_TABLE3 = [54, 63, 42, 67, 87, 47, 67, 44, 24]  # the paper's Table 3: mean frequency at 7 to 15 back (German)
show_markdown("\n".join(["| run | " + " | ".join(f"{d} back" for d in distances) + " |", "|---" * 10 + "|",
                         "| the paper, German RM(+tM-g) | " + " | ".join(str(m) for m in TRAN_TABLE3) + " |"]
                        + [f"| {label} | " + " | ".join(f"{p[str(d)][0]:.1f} ({p[str(d)][1]})" if str(d) in p else "–"
                                                         for d in distances) + " |"
                           for label, p in pair_rows.items()]));

# %% jupyter={"source_hidden": true} tags=["remove-input"]
assert (min(TRAN_TABLE3), max(TRAN_TABLE3)) == (24, 87)
two_epochs = pair_rows["RM(+tM-g), 2 epochs"]
assert [two_epochs[str(d)][1] for d in distances] == [57, 80, 57, 44, 29, 37, 19, 18, 5], two_epochs
fifteen = [p for label, p in pair_rows.items() if "15 epochs" in label]
assert all(p[str(d)][1] >= 75 for p in fifteen for d in distances)
assert max(p[str(d)][0] for p in fifteen for d in distances) > 5 * min(p[str(d)][0] for p in fifteen for d in distances)

# %% [markdown] tags=[]
# After two epochs the RM makes few such predictions (5 at 15 words back), too few for stable means. The 15-epoch
# seeds make 75 or more at every distance, but their means still swing more than fivefold between seeds and
# distances. Read as the paper reads its Table 3, that is no trend either; but the analysis has no yardstick (what
# means would a model that only recalled frequent pairs give?), so the book reports the numbers and decides
# nothing from them.
#
# ## 8. Protocol notes and dead ends
#
# - **The authors' code** (ketranm/RMN) differs from the paper's equations in three places: it aligns the newest
#   word with the last row of $T$ at every step, so a row always means "so many words back" (the paper slices
#   $T[1:m]$ at a sentence start); it adds a second temporal table to the values; and its linear composition is
#   $W h_t + s_t$. The package has each as an option (`model.memory_alignment="code"`, `"linear-code"`); every
#   run here follows the paper.
# - **Recall on one seed.** An early version ranked the memory against the LSTM on one seed each. The same LSTM
#   seed recalled about 0.7 or 0.9 depending on the number of threads it trained with (a change in the order
#   of floating-point sums), so no ranking rests on one seed now; section 5 reads three seeds each.
# - **The attention colour scale.** An early explorer divided each row by its own largest weight, which made a
#   near-uniform row look as peaked as a sharp one; every attention figure now shows the weight against uniform.
# - **The 3-layer row as support.** Under the earlier rule RM's 12% over the 3-layer LSTM read as support for the
#   paper; the rule's flag for a gain beyond twice the paper's now marks it, and section 3 gives the reason.
#
# ## 9. Provenance
#
# Where and how every setting ran (kind of machine, device, torch, threads, median training time), and the
# command of its first seed:

# %% tags=[]
show_provenance([("cpu-tran2016-ptb", "cpu"), ("tuned-tran2016-ptb", "tuned"), ("tran2016-ptb-128-whole", "stored")],
                results_dir)
show_markdown("\n".join(["| run | where and how |", "|---|---|"]
                        + [f"| compare-ptb/{run} | {provenance_line(s)} |" for run, s in matched.items()]
                        + [f"| recall/{s.run} | {provenance_line(s)} |" for s in recall.values()]));

# %% jupyter={"source_hidden": true} tags=["remove-input"]
def pause(setting, i):
    """How much longer the longest epoch of seed i took than its median epoch."""
    seconds = [e["seconds"] for e in setting.metrics(i)]
    return max(seconds) / statistics.median(seconds)


assert all(pause(own["rm-tm-g"], i) > 5 for i in range(3))  # "paused for a while": one epoch far longer than the rest
assert all(pause(own[run], i) > 5 for run in ("lstm2", "rmr-notm-g") for i in (0, 1))  # "seeds 0 and 1 too"
assert all(pause(s, 0) > 3 for s in plateau.values())  # the plateau runs: "paused" too
assert all(json.loads((short_dir / run / "result.json").read_text()).get("cpu_model") is None
           and not (short_dir / run / "command.txt").exists() for run in ("rm-tm-g", "lstm1", "rmr-notm-g"))

# %% [markdown] tags=[]
# RM's three runs at the paper's width were paused for a while each (one epoch of each seed took over five times
# its median epoch), and so were seeds 0 and 1 of the 2-layer LSTM and of RMR, and the two plateau runs (over
# three times), so their training times are not speeds. The two-epoch runs on the whole of PTB predate the
# manifests' command files and recorded no processor; `python -m mlm reproduce stored --only
# 'tran2016-ptb-128-whole/*'` trains them again.
#
# ## 10. What waits
#
# The full-size rows of section 2 wait for a GPU; the claims and seeds of the other sections:

# %% tags=[]
show_waiting("04", results_dir)
short_seeds = [f"- {s.group}/{run}: {len(s.seeds)} of {s.expected} seeds stored"
               for settings in (own, matched) for run, s in settings.items() if len(s.seeds) < s.expected]
show_markdown("\n".join(short_seeds) or "Every declared seed of these runs is stored.");
