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
# # Chapter 6 — Every family on the same tests
#
# Each paper compared its model with its own LSTM, under its own recipe, on its own data, and each chapter
# of this book followed its paper. This chapter puts every family through the same two tests, so that
# differences come from the models and not from the recipes:
#
# * **Part 1, memory.** The key-value recall task of chapter 00, section 5: can a model bring back a word
#   seen $d$ words earlier, and does its reach end where its head's reach ends?
# * **Part 2, language.** All of Penn Treebank under one recipe at one parameter count: which heads lower
#   the perplexity, at what cost in time, and how much of the history each model really uses.
#
# The chapter ends with the verdict on every paper's claim. It trains nothing: every number comes from
# runs stored in `results/` by one command per part, three seeds each (five for part 2's LSTM control).

# %% tags=["parameters"]
size = "reduced"  # the chapter reads stored runs: "reduced" and "full" read the same ones
device = "auto"  # unused: models are only rebuilt on the CPU to count their parameters
seed = 0  # unused: every stored seed is read
data_dir = None  # unused: the recall task is generated, PTB's runs are stored
results_dir = "../results"  # where `python -m mlm reproduce recall` and `... compare` store their runs

# %%
import json
import statistics
from collections import Counter
from pathlib import Path

import matplotlib.pyplot as plt

import mlm
from mlm.claims import show_claims, show_markdown, spread
from mlm.data.tasks import critical_chance
from mlm.manifests import compare
from mlm.manifests.recall import FAMILY_RUNS, PROBES
from mlm.plots import history_curves, interval_plot, recall_panels
from mlm.table import decided_compare, load_settings, load_stored_recall
from mlm.training import build_model, load_task
from mlm.utils import machine_kind as machine

# %% [markdown]
# ## Part 1. Memory on the recall task
#
# ### 1. The families
#
# Every family is an LSTM of 64 units (66 where a head splits its output in three parts) with its paper's
# head on top, trained on the same 20,000 lines with the same optimiser: Adam at 0.01 for 15 epochs. Each
# keeps its paper's protocol: Salton's and Tran's models read one line at a time from a zero state, Daniluk's
# window heads read the lines in segments of 20 words with the state carried. The seed draws both the lines
# and the initial weights, so three seeds are three tasks and three initialisations.
#
# Some heads have a bounded **reach**: Daniluk's window of $L = 5$ outputs reads the source only while
# $d \le L + 1 = 6$ (the output at the source word is still in the window), his 4-gram RNN, which reads
# $h_t$, $h_{t-1}$ and $h_{t-2}$, while $d \le 3$ (chapter 03, section 4), Tran's memory of $n = 15$ input
# words while $d \le 15$. Beyond its reach a head sees the source only if the LSTM under it carries the pair.
#
# RM(+tM-g) and RMR(+tM-g) are chapter 04's two models: +tM or -tM says whether the memory's keys carry
# positions (a temporal matrix), and g names the gating composition (-l would be the sum). Part 2 uses
# RMR(-tM-g), without positions, Tran's best RMR on news.
#
# ```bash
# python -m mlm reproduce recall --jobs 2      # trains what is missing and scores each run (critical.json)
# ```

# %%
stored = load_stored_recall(FAMILY_RUNS, results_dir)
task = load_task(mlm.get_preset("recall-lstm", size))
chance = critical_chance(task.spec)[0]
REACH = {"window attention, L = 5": 6, "key-value, L = 5": 6, "key-value-predict, L = 5": 6,
         "4-gram RNN": 3, "RM(+tM-g), n = 15": 15, "RMR(+tM-g), n = 15": 15}
CHAPTER = {"LSTM": "01", "tied LSTM": "01", "Attentive, single": "02", "Attentive, combined": "02",
           "window attention, L = 5": "03", "key-value, L = 5": "03", "key-value-predict, L = 5": "03",
           "4-gram RNN": "03", "RM(+tM-g), n = 15": "04", "RMR(+tM-g), n = 15": "04"}
parameters = {}
for label, entry in stored.items():
    cfg = mlm.get_preset(entry.preset, size)
    parameters[label] = build_model(cfg, len(task.corpus.vocab), corpus=task.corpus).num_parameters()
print(f"{'family':<26} {'chapter':>7} {'units':>5} {'protocol':>9} {'parameters':>10} {'reach':>6}  seeds")
for label, entry in stored.items():
    cfg = mlm.get_preset(entry.preset, size)
    print(f"{label:<26} {CHAPTER[label]:>7} {cfg.model.hidden_size:>5} {cfg.data.protocol:>9} "
          f"{parameters[label]:>10,} {REACH.get(label, '–'):>6}  {entry.seeds}")
print(f"vocabulary {len(task.corpus.vocab)} words; {len(task.corpus.lines['test']):,} test lines per seed's task")

# %% tags=["remove-input"] jupyter={"source_hidden": true}
for label, entry in stored.items():  # the stored runs trained these very models, for the epochs asked
    cfg = mlm.get_preset(entry.preset, size)
    assert all(r["parameters"] == parameters[label] and r["epochs_run"] == cfg.train.epochs
               for r in entry.results), label
    assert len(entry.seeds) == 3, (label, entry.seeds)
assert round(max(parameters.values()) / min(parameters.values()), 1) == 3.2  # "up to 3.2 times"
stored_bigram = [x["bigram_totals"]["accuracy"] for e in stored.values() for x in e.extras]
assert all(abs(a - chance) < 0.05 for a in stored_bigram)  # the bigram count model is at chance on every task

# %% [markdown]
# The parameter counts differ by up to 3.2 times, because the heads add matrices of their own and the
# vocabulary is tiny:
# this part compares heads on the same LSTM width, not at a matched budget (part 2 does that).
#
# ### 2. Accuracy by distance
#
# One panel per family, one line per seed: the accuracy on the critical token by distance, on the test lines
# of each seed's task. The bins end at the reaches (2-3, 4-6, 7-11, 12-15, then five wide), so no bin straddles
# a dotted line. The grey line is the plain LSTM's mean over its seeds. Accuracy by distance alone mixes in the
# question's position, so the next section compares distances at matched positions.

# %%
fig = recall_panels(stored, chance, reach=REACH, reference="LSTM", starts=[2, 4, 7, 12, *range(16, 61, 5)],
                    title="Key-value recall: accuracy on the critical token against the distance d")
plt.show()

# %% [markdown]
# ### 3. Distance at matched positions
#
# Accuracy by $d$ alone still mixes in the position of the question in its line, which grows with $d$ (chapter
# 00, section 5). The table below compares distances at matched positions: only questions asked at positions 40
# to 79 of their line, where every distance range below occurs often. *d 2-6* is within the reach of every
# window head of $L = 5$ (the 4-gram RNN reaches only $d \le 3$); *d 7-15* is beyond the windows but within the
# 15-word memory of RM and RMR; *d 21-39* is beyond every bounded head's reach. The column *position < 30* holds
# the questions asked early in a line, at any distance that fits there; the last column holds every question.

# %%
D_RANGES = {"d 2-6": (2, 7), "d 7-15": (7, 16), "d 21-39": (21, 40)}
POSITIONS = (40, 80)


def matched(entry) -> dict[str, list[float]]:
    """Accuracy per d range at positions 40-79, per seed, and the accuracy of early questions (position < 30)."""
    table = {name: [s.table([lo, hi], list(POSITIONS))[0][0][0] for s in entry.scores]
             for name, (lo, hi) in D_RANGES.items()}
    table["early, any d"] = [s.table([2, 61], [0, 30])[0][0][0] for s in entry.scores]
    return table


recall = {label: matched(entry) for label, entry in stored.items()}
columns = [*D_RANGES, "early, any d"]
lines = ["| family | " + " | ".join(f"{c} (positions 40-79)" if c in D_RANGES else "position < 30"
                                     for c in columns) + " | all questions |", "|---|" + "---:|" * (len(columns) + 1)]
for label, table in recall.items():
    overall = [s.accuracy for s in stored[label].scores]
    lines.append(f"| {label} | " + " | ".join(spread(table[c], 2).replace(" (3 seeds)", "") for c in columns)
                 + f" | {spread(overall, 2).replace(' (3 seeds)', '')} |")
show_markdown("\n".join(lines) + f"\n\nMean ± sd over three seeds; chance {chance:.2f}.");

# %% [markdown]
# For each attention head, the weight it puts on the source when the question comes, against uniform
# attention, and how often the source gets the largest weight of that step's attention, seed by seed:

# %%
for label, entry in stored.items():
    found = [x["source_attention"] for x in entry.extras if x["source_attention"]]
    if found:
        print(f"{label:<26} weight on the source / uniform: "
              + ", ".join(f"{f['weight'] / f['uniform']:.1f}" for f in found)
              + ";  largest weight of its row in " + ", ".join(f"{f['is_max']:.0%}" for f in found) + " of the lines")

# %% [markdown]
# **What the recall task shows.** Five things follow:
#
# * **Salton's combined score solves the task, and the single score cannot.** The combined score (Eq. 10)
#   recalls nearly every value at every distance, with most of its weight on the source. The single score
#   (Eq. 9) rates each slot without the query, so it cannot tell which key the question asks for: it puts
#   two to six times the uniform weight on the source but almost never the largest, and its seeds recall
#   anywhere from chance to 0.7.
# * **Where recall comes through the LSTM, distance barely matters.** At matched positions the plain LSTM, the
#   window families and the Attentive single score recall about as well at $d \le 6$ as at $d$ of 21 to 39: what
#   an LSTM carries, it carries over this whole range. The window heads could find the source at $d \le 6$, within
#   their reach, yet recall no better there (chapter 03).
# * **In the one seed whose LSTM does not carry the pair, Tran's memory reaches as far as it should.** In RM's seed 2, whose LSTM never learned to carry
#   the pair, recall holds within the memory's 15 words and falls to chance right after them (chapter 04);
#   in its other seeds the LSTM carries the pair past the reach. RMR's block gives the source about the uniform
#   weight or less (1.0, 1.3 and 0.0 times it), and its recall is its LSTMs'.
# * **Daniluk's heads recall less than the plain LSTM**, in every family on average. The heads that
#   split the output recall least, plausibly because each part is too small to carry the pair (chapter 03);
#   the protocols differ too (section 1).
# * **The tied LSTM stays near chance in every seed** under the shared recipe (Adam at 0.01); the probes
#   below find out why. For RMR and the single score, whether a seed learns the task at all is the largest
#   effect; the plain LSTM's seeds differ widely too (the probes print them).

# %% tags=["remove-input"] jupyter={"source_hidden": true}
source = {label: [x["source_attention"] for x in stored[label].extras] for label in stored
          if stored[label].extras[0]["source_attention"]}
overall = {label: [s.accuracy for s in entry.scores] for label, entry in stored.items()}
combined, single = "Attentive, combined", "Attentive, single"
assert min(min(v) for v in recall[combined].values()) > 0.95
assert all(f["weight"] > 0.6 and f["is_max"] > 0.75 for f in source[combined])
assert all(2 < f["weight"] / f["uniform"] < 6 and f["is_max"] < 0.05 for f in source[single])
assert min(overall[single]) < 0.15 and 0.65 < max(overall[single]) < 0.75
for label in ("LSTM", "window attention, L = 5", "key-value, L = 5", "key-value-predict, L = 5", "4-gram RNN", single):
    near, far = (statistics.mean(recall[label][name]) for name in ("d 2-6", "d 21-39"))
    assert near < far + 0.08, label  # no better within reach than far beyond it, at matched positions
rm = stored["RM(+tM-g), n = 15"]
assert rm.within(2, 15)[2] > 0.6 and rm.within(16)[2] < 0.2 and min(rm.within(16)[:2]) > 0.5
assert max(f["weight"] / f["uniform"] for f in source["RMR(+tM-g), n = 15"]) < 1.5
assert [f"{f['weight'] / f['uniform']:.1f}" for f in source["RMR(+tM-g), n = 15"]] == ["1.0", "1.3", "0.0"]
for label in ("window attention, L = 5", "key-value, L = 5", "key-value-predict, L = 5", "4-gram RNN"):
    assert statistics.mean(overall[label]) < statistics.mean(overall["LSTM"]) - 0.15, label
assert max(overall["tied LSTM"]) < 0.2

# %% [markdown]
# #### Why the tied LSTM does not learn the task
#
# The tied LSTM differs from the plain one in two ways: its embedding is 64 wide instead of 32 (tying shares
# it with the 64-unit softmax), and one matrix receives the gradients of both the input and the output. Three
# probes, three seeds each, change one thing at a time: the tied LSTM trained for 40 epochs at the same
# learning rate, the same at a third of the learning rate, and the plain LSTM with a 64-wide embedding.

# %%
probes = {"tied LSTM (Adam 0.01, 15 epochs)": stored["tied LSTM"], "LSTM (embedding 32)": stored["LSTM"],
          **load_stored_recall({PROBES[name][0]: name for name in PROBES}, results_dir)}
for label, entry in probes.items():
    print(f"{label:<38} recall " + "  ".join(f"{s.accuracy:.2f}" for s in entry.scores))
print(f"{'chance':<38} recall {chance:.2f}")

# %% tags=["remove-input"] jupyter={"source_hidden": true}
probe_accuracy = {label: [s.accuracy for s in entry.scores] for label, entry in probes.items()}
assert all(len(v) == 3 for v in probe_accuracy.values()), probe_accuracy
assert max(probe_accuracy["tied LSTM, Adam at 0.01, 40 epochs"]) < 0.25
assert min(probe_accuracy["tied LSTM, Adam at 0.003, 40 epochs"]) > 0.6
assert min(probe_accuracy["LSTM with a 64-wide embedding"]) > 0.45

# %% [markdown]
# The learning rate decides it. At Adam's 0.01 the tied LSTM stays near chance even after 40 epochs; at 0.003
# every seed learns the task, as well as the plain LSTM's better seeds. The wider embedding is not the cause: the
# plain LSTM with a 64-wide embedding recalls about as well as with 32. Plausibly a shared matrix, which takes
# both the input's and the output's gradients, needs a smaller step; no probe here isolates that. Under one shared
# recipe a family can lose for a reason that has nothing to do with its idea; part 2 meets the same problem in the
# Attentive head's learning rate.

# %% [markdown]
# ## Part 2. Every family on real text, one recipe
#
# ### 4. The recipe and the budget
#
# The recall task rewards one skill. On text, each paper trained its model with its own recipe, so the papers'
# numbers cannot be set side by side. Here every family is trained the same way:
#
# * **data and protocol**: all of PTB, one sentence at a time from a zero state, a protocol every head of
#   the book is defined for;
# * **optimiser and schedule**: Tran et al.'s (chapter 04): SGD at rate 1 for four epochs, then halved at every
#   epoch (0.5 in the fifth, 0.125 in the seventh), 15 epochs, no dropout; the test perplexity is that of the
#   epoch with the best validation;
# * **budget**: the parameter count of Tran's 1-layer LSTM at $d = 128$ (here $d$ is the LSTM's width, as in
#   Tran et al., not part 1's distance), 2.70M. Each family gets the width that brings it within 10% of that
#   count: some heads get a narrower LSTM, others (and the tied LSTM, which saves the output matrix) a wider
#   one, as section 5 lists; Tran's Memory Block, which keeps two tables the size of the vocabulary, leaves RM
#   and RMR an LSTM of 66 and 65 units.
#
# Chapter 05's variational smoothing (VS-KN: each word's embedding drawn, while training, from a mixture that
# keeps its own vector or, with a probability set by γ = 0.2 and Kneser-Ney counts, takes another word's; the
# test uses the mixture's mean) is trained on the tied LSTM, its paper's control; it adds no parameters. This
# recipe has no weight decay, so smoothing's data-dependent L2 penalty (chapter 05, section 3) is off.
#
# Beside these, the **fair trials** ask each paper's own question where it differs from the book's (tying at
# equal width; Daniluk's window retrained at $L = 1$ and 15) or remove a handicap of this recipe (Salton's head
# at a tenth of the learning rate). The control, the LSTM, has five seeds, so that these rows have more power.
#
# ```bash
# python -m mlm reproduce compare --jobs 2      # trains what is missing, then cuts each run's history (history.json)
# ```

# %%
settings = load_settings(compare.RUNS, results_dir, files=["history.json"])
stored_families = {name: s for name, s in settings.items() if s.seeds}
LABEL = compare.LABELS
VOCAB = 10_002  # PTB's 10,000 words and the book's <pad> and <bos>
counts = {name: build_model(next(r for r in compare.RUNS if r.base == name)
                            .config(["model.regularizer=none", "train.device=cpu"]), VOCAB).num_parameters()
          for name in stored_families}  # smoothing adds no parameters

# %% tags=["remove-input"] jupyter={"source_hidden": true}
for name, s in stored_families.items():  # the stored runs trained these very models, for the epochs asked
    assert all(r["parameters"] == counts[name] and r["epochs_run"] == 15 for r in s.results), name
    assert name in compare.OFF_BUDGET or abs(counts[name] / counts["lstm"] - 1) < 0.10, name

# %% [markdown]
# ### 5. Quality, size and speed
#
# Test perplexity over the stored seeds, the epoch of the best validation perplexity (after it the training perplexity
# keeps falling while the validation perplexity slowly rises: without dropout every model fits PTB's training
# text far better than its test text), and the speed measured by one bench run: training tokens per second, the
# time against the LSTM of the budget and against a plain LSTM of the head's own width.

# %%
bench = {row["preset"]: row for row in json.loads((Path(results_dir) / "bench-compare-cpu.json").read_text())}
repeat = {row["preset"]: row for row in json.loads((Path(results_dir) / "bench-compare-cpu-repeat.json").read_text())}
test = {name: s.values("test_ppl") for name, s in stored_families.items()}
peaks = {name: [r["best_epoch"] for r in s.results] for name, s in stored_families.items()}
final_train = {name: [s.metrics(i)[-1]["train_ppl"] for i in range(len(s.seeds))]
               for name, s in stored_families.items()}


def time_ratio(runs: dict, name: str, reference: str | None = "compare-ptb/lstm") -> float | None:
    """The training time of bench row ``name`` against ``reference`` (the budget's LSTM unless named) in one
    bench run; None where either row is missing."""
    if name not in runs or reference not in runs:
        return None
    return runs[reference]["train_tokens_per_second"] / runs[name]["train_tokens_per_second"]


def speed(name: str) -> str:
    row = f"compare-ptb/{name}"
    same = time_ratio(bench, row, compare.SAME_SIZE[name])
    if same is None:
        return "– | – | –"
    return f"{bench[row]['train_tokens_per_second']:,.0f} | {time_ratio(bench, row):.2f}x | {same:.2f}x"


lines = ["| family | width | parameters | test perplexity | best epoch | final train perplexity "
         "| train tok/s | time × LSTM | time × same-width LSTM |", "|---|" + "---:|" * 8]
for name in stored_families:
    lines.append(f"| {LABEL[name]} | {compare.WIDTHS[name]} | {counts[name]:,} | {spread(test[name])} | "
                 f"{', '.join(map(str, peaks[name]))} | {min(final_train[name]):.0f}-{max(final_train[name]):.0f} | "
                 f"{speed(name)} |")
show_markdown("\n".join(lines))
def moves_between_bench_runs(reference_of) -> list[float]:
    """How far each time ratio moved between the two bench runs; ``reference_of(row)`` names its reference row."""
    pairs = [(time_ratio(bench, row, reference_of(row)), time_ratio(repeat, row, reference_of(row)))
             for row in bench if row in repeat]
    return [abs(a - b) for a, b in pairs if None not in (a, b)]


moves = moves_between_bench_runs(lambda row: "compare-ptb/lstm")
width_moves = moves_between_bench_runs(lambda row: compare.SAME_SIZE.get(row.removeprefix("compare-ptb/")))
print(f"speeds from one bench run; run again, the time ratios moved by up to {max(moves):.2f} against the LSTM "
      f"and {max(width_moves):.2f} against the LSTM of the same width")

# %%
machines = Counter(machine(r) for s in stored_families.values() for r in s.results)
print("machines of the stored runs (seeds in order):")
for name, s in stored_families.items():
    print(f"  {LABEL[name]:<33} {', '.join(machine(r) for r in s.results)}")
on_cpu = settings["lstm"].results[0]  # the LSTM's seed 0
lstm_by_machine = settings["lstm"].by_machine("test_ppl")
print("the LSTM's seeds by machine: " + "; ".join(
    f"{where} {', '.join(f'{p:.1f}' for p in values)} (mean {statistics.fmean(values):.1f})"
    for where, values in lstm_by_machine.items()))
print(f"the LSTM's seed 0: test {on_cpu['test_ppl']:.1f} on the {machine(on_cpu)} (torch {on_cpu['torch']}); "
      f"all five seeds {spread(test['lstm'])}")
rerun = {kind: json.loads((Path(results_dir) / f"machine-check/{kind}/compare-ptb/lstm/seed0/result.json").read_text())
         for kind in ("epyc", "h200")}
for kind, again in rerun.items():
    moved = again["test_ppl"] / on_cpu["test_ppl"] - 1
    print(f"  the same command on the {machine(again)} (torch {again['torch']}): {again['test_ppl']:.1f} ({moved:+.1%}, "
          f"{abs(again['test_ppl'] - on_cpu['test_ppl']) / statistics.stdev(test['lstm']):.1f} times that sd)")

# %% [markdown]
# **What the table says.** Every run reached its best validation perplexity by epoch 11 of 15 and ran its schedule
# out, so these are finished runs of this recipe. Four things matter for reading them:
#
# * **Width follows the budget.** The tied LSTM is 228 wide against 128; the heads that split their output
#   (key-value 214, key-value-predict and the 4-gram RNN 279) are wider than the window head (123) and the
#   Attentive heads (128). Where perplexity follows width, the head may not be the cause.
# * **RMR cannot fit the training text.** Two layers of 65 units end at a training perplexity of 92-94, where
#   every other model without smoothing reaches 41-66.
# * **At this size the softmax dominates the time.** Its 10,000-word matrix is ten times the LSTM's weights, so
#   every head trains within 1.25x the LSTM's time. A second bench run moved the time ratios by up to 0.2 against
#   the LSTM and 0.3 against the LSTM of the same width (printed under the table): read only larger differences.
#   Key-value-predict and the 4-gram RNN run faster than a plain LSTM of their width because their softmax
#   reads one part of the split output; key-value's and the window head's ratios below 1 are within the noise.
# * **The machine moves a single run by about 1%.** The runs come from two kinds of CPU (printed above). The
#   LSTM's seeds average 118.1 on one and 118.0 on the other, so no systematic shift shows, yet the same command
#   rerun for seed 0 ended 1.1% lower on the other kind of CPU and 1.2% lower on a GPU (with torch 2.11 there),
#   more than twice the standard deviation of the five seeds. The intervals count the seeds' spread only, so a
#   verdict that rests on a change near 1% is fragile: the tied LSTM's +0.8% at hidden size 128, and the Attentive
#   scores' +1.0% and +1.2% at the full learning rate.

# %% tags=["remove-input"] jupyter={"source_hidden": true}
original = [n for n in stored_families if n in ("lstm", "tied", "attentive-single", "attentive-combined", "window-L5",
                                                 "kv-L5", "kvp-L5", "ngram4", "rm-tm-g", "rmr-notm-g", "vs-kn-tied")]
assert len(original) == 11 and max(max(peaks[n]) for n in stored_families) <= 11
assert all(91.5 <= v < 94.5 for v in final_train["rmr-notm-g"]) and 0.15 < max(moves) < 0.25  # "up to 0.2"
assert 0.25 < max(width_moves) < 0.35, width_moves  # "0.3 against the LSTM of the same width"
assert max(max(v) for n, v in final_train.items() if n not in ("rmr-notm-g", "vs-kn-tied")) <= 66.5
assert min(min(v) for v in final_train.values()) >= 40.5
heads = ["attentive-single", "attentive-combined", "window-L5", "kv-L5", "kvp-L5", "ngram4", "rm-tm-g", "rmr-notm-g"]
lstm_speed = bench["compare-ptb/lstm"]["train_tokens_per_second"]
assert all(lstm_speed / bench[f"compare-ptb/{n}"]["train_tokens_per_second"] <= 1.25 for n in heads)
same_width = {n: time_ratio(bench, f"compare-ptb/{n}", compare.SAME_SIZE[n]) for n in ("kv-L5", "kvp-L5", "ngram4", "window-L5")}
assert all(same_width[n] < 1 - max(width_moves) for n in ("kvp-L5", "ngram4")), same_width  # faster than the noise
assert all(1 - max(width_moves) <= same_width[n] < 1 for n in ("kv-L5", "window-L5")), same_width  # within it
machine_move = rerun["h200"]["test_ppl"] / on_cpu["test_ppl"] - 1
cpu_move = rerun["epyc"]["test_ppl"] / on_cpu["test_ppl"] - 1
assert machine(rerun["epyc"]) == "EPYC" and rerun["epyc"]["torch"] == on_cpu["torch"] and -0.0115 < cpu_move < -0.0105
for name in ("tied", "vs-kn-tied"):
    assert {machine(r) for r in stored_families[name].results} == {"Xeon"}, name
assert [machine(r) for r in stored_families["lstm"].results] == ["Xeon"] * 3 + ["EPYC"] * 2
assert [round(statistics.fmean(lstm_by_machine[m]), 1) for m in ("EPYC", "Xeon")] == [118.0, 118.1], lstm_by_machine
for name in heads:
    assert [machine(r) for r in stored_families[name].results] == ["Xeon", "EPYC", "EPYC"], name
fair = [name for name in stored_families if name not in original]
assert fair and all({machine(r) for r in stored_families[name].results} == {"EPYC"} for name in fair), fair
for again in rerun.values():  # the same configuration, but for the device the GPU's run named
    same = {**again["config"], "train": {**again["config"]["train"], "device": "auto"}}
    assert all(same[part][key] == value for part in ("data", "model", "train")
               for key, value in on_cpu["config"][part].items())
lstm_sd = statistics.stdev(test["lstm"])
assert len(test["lstm"]) == 5 and -0.0125 < machine_move < -0.0115
assert all(2 < abs(a["test_ppl"] - on_cpu["test_ppl"]) / lstm_sd < 3 for a in rerun.values())  # "more than twice"
assert set(machines) == {"Xeon", "EPYC"}

# %% [markdown]
# ### 6. How much history each model uses
#
# Perplexity says how well a model predicts, not from how far back. Following Khandelwal et al. (2018), each
# stored model is scored again with its history cut: to predict a word it sees only the last $k$ words before
# it, from a zero state. Where the curve reaches 1, words further back no longer help. This is the book's own
# question about the whole model, not Daniluk et al.'s claim about the attention window, which the fair
# trials test by retraining the window (section 7).
#
# One panel per kind of model, the mean over seeds with the range of the seeds as a band. The LSTM is drawn in
# black in every panel for reference, a family keeps its colour in every panel it appears in, and the two
# Attentive curves at the full learning rate nearly coincide. The panel "the window retrained" holds one model
# retrained with three windows.

# %%
curves = {LABEL[name]: [h["test_ppl_by_history"] for h in s.files["history.json"]]
          for name, s in stored_families.items()}
groups = {"no attention or memory block": ["LSTM", "tied LSTM", "tied LSTM, d = 128", "4-gram RNN"],
          "smoothing": ["LSTM", "tied LSTM", "tied LSTM + VS-KN"],
          "attention over the sentence": ["LSTM", "Attentive, single", "Attentive, combined"],
          "the same, head at a tenth of the rate": ["LSTM", "Attentive, single, head lr 0.1x",
                                                    "Attentive, combined, head lr 0.1x"],
          "attention over a window": ["LSTM", "window attention, L = 5", "key-value, L = 5", "key-value-predict, L = 5"],
          "the window retrained": ["LSTM", "key-value-predict, L = 1", "key-value-predict, L = 5",
                                   "key-value-predict, L = 15"],
          "memory of 15 words": ["LSTM", "RM(+tM-g), n = 15", "RMR(-tM-g), n = 15"]}
# one colour per family in every panel it appears in, distinct within a panel (tab10 without its grey);
# the LSTM is black throughout
palette = {"LSTM": "black"}
for members in groups.values():
    taken = {palette[m] for m in members if m in palette}
    free = iter(c for c in (plt.cm.tab10(i) for i in (0, 1, 2, 3, 4, 6)) if c not in taken)
    palette.update({m: next(free) for m in members if m not in palette})
fig, axes = plt.subplots(4, 2, figsize=(11, 14), sharey=True, sharex=True)
axes.flat[-1].set_visible(False)  # seven panels
for ax, (title, members) in zip(axes.flat, groups.items()):
    history_curves({m: curves[m] for m in members if m in curves}, ax=ax, title=title, legend=False, colors=palette)
    ax.legend(fontsize=9, loc="upper right")
    ax.set_yscale("log")
    ax.set_ylim(0.97, 3.3)
    ax.set_yticks([1, 1.1, 1.25, 1.5, 2, 3], ["1", "1.1", "1.25", "1.5", "2", "3"])
    ax.minorticks_off()
    ax.set_xlabel("")
    ax.set_ylabel("")
for ax in (axes[3, 0], axes[2, 1]):
    ax.set_xlabel("k: words of history kept")
    ax.xaxis.set_tick_params(labelbottom=True)
for ax in axes[:, 0]:
    ax.set_ylabel("perplexity / with the whole sentence")
fig.suptitle("Test perplexity with the history cut to the last k words, relative to the whole sentence", fontsize=11)
fig.tight_layout(rect=(0, 0, 1, 0.98))
plt.show()


def cost(curve: dict, k: int) -> float:
    """How much worse the perplexity is with k words of history than with all of it."""
    return curve[str(k)] / curve["all"] - 1


def percent(values: list[float]) -> str:
    return f"{100 * min(values):.0f}-{100 * max(values):.0f}%"


print(f"{'family':<33}{'cut to 2 words':>16}{'to 5':>10}{'to 10':>10}{'to 20':>10}   (range over the seeds)")
for label, seeds in curves.items():
    print(f"{label:<33}" + "".join(f"{percent([cost(c, k) for c in seeds]):>{w}}"
                                   for k, w in ((2, 16), (5, 10), (10, 10), (20, 10))))

# %% [markdown]
# Every model is within 1% of its whole-sentence perplexity once it sees the last 20 words: under the
# sentence protocol, all of them use most of the sentence and nothing before it (there is nothing before it to
# use).
#
# The curves part at the short end. Cut to 2 words, the perplexity of the plain and tied LSTMs and of the
# 4-gram RNN, which reads its last outputs without attention, rises by 37-46% (smoothing aside, below); that
# of every head that attends or reads a memory rises more, from 47% (RMR) to 82% (the Attentive combined score).
#
# So the heads lean more than the plain models on the words 3 to 5 back; further back the difference shrinks (cut
# to 5 words, 8-12% for the plain models, 9-21% for the heads), and every curve reaches 1 by 20 words:
# no head extends the span, which within a sentence is the LSTM's. Leaning on recent words does not by itself
# lower the perplexity: with the whole sentence only key-value-predict (with any of its three windows) and
# Salton's two scores with the head at a tenth of the learning rate end clearly below the LSTM (the 4-gram RNN,
# which attends to nothing, does too).
#
# Smoothing, which adds no head, bends the tied LSTM's curve the way a head does (53-61% at 2 words against
# 44-45%): plausibly because, with each input word sometimes given another word's embedding, no single input can
# be trusted alone.
#
# The retrained windows (their own panel) show the same from the other side. Key-value-predict with a window of
# one output loses 48-51% when cut to 2 words, with five 56-63%, with fifteen 63-79%; cut to 5 words, 12-13%,
# 13-14% and 16-21%. The longer the window, the more the model leans on the words it can reach, yet with the
# whole sentence the three score 115.0, 115.3 and 116.0, a difference three seeds cannot settle (section 7).

# %% tags=["remove-input"] jupyter={"source_hidden": true}
for label, seeds in curves.items():
    assert all(cost(c, 20) <= 0.01 < cost(c, 10) for c in seeds), label
plain = [c for m in ("LSTM", "tied LSTM", "tied LSTM, d = 128", "4-gram RNN") for c in curves[m]]
assert all(0.365 <= cost(c, 2) <= 0.47 for c in plain) and min(cost(c, 2) for c in plain) < 0.375
attending = [c for m in curves for c in curves[m]
             if m not in ("LSTM", "tied LSTM", "tied LSTM, d = 128", "4-gram RNN", "tied LSTM + VS-KN")]
assert all(0.465 <= cost(c, 2) <= 0.825 for c in attending)
mean_test = {LABEL[n]: statistics.mean(v) for n, v in test.items()}
drawn = {m for members in groups.values() for m in members}  # the families of the figure the prose reads
below = {m for m in drawn if mean_test[m] < 0.99 * mean_test["LSTM"]}  # "clearly below the LSTM"
heads_attending = {m for m in drawn if m not in ("LSTM", "tied LSTM", "tied LSTM, d = 128", "4-gram RNN",
                                                  "tied LSTM + VS-KN")}
assert below & heads_attending == {"key-value-predict, L = 1", "key-value-predict, L = 5", "key-value-predict, L = 15",
                                   "Attentive, single, head lr 0.1x", "Attentive, combined, head lr 0.1x"}, below
assert "4-gram RNN" in below
assert max(cost(c, 2) for c in attending) == max(cost(c, 2) for m in ("Attentive, single", "Attentive, combined")
                                                 for c in curves[m])
assert all(0.525 <= cost(c, 2) < 0.615 for c in curves["tied LSTM + VS-KN"])
assert all(0.435 <= cost(c, 2) <= 0.45 for c in curves["tied LSTM"])
windows = {L: curves[f"key-value-predict, L = {L}"] for L in (1, 5, 15)}
assert percent([cost(c, 5) for c in plain]) == "8-12%" and percent([cost(c, 5) for c in attending]) == "9-21%"
assert percent([cost(c, 2) for c in attending]) == "47-82%"  # "from 47% (RMR) to 82% (the Attentive combined score)"
assert min(cost(c, 2) for c in attending) == min(cost(c, 2) for c in curves["RMR(-tM-g), n = 15"])
assert max(cost(c, 2) for c in attending) == max(cost(c, 2) for c in curves["Attentive, combined"])
assert all(len(seeds) == 3 for seeds in windows.values())
assert [percent([cost(c, 2) for c in windows[L]]) for L in (1, 5, 15)] == ["48-51%", "56-63%", "63-79%"]
assert [percent([cost(c, 5) for c in windows[L]]) for L in (1, 5, 15)] == ["12-13%", "13-14%", "16-21%"]

# %% [markdown]
# ### 7. The verdict
#
# Each row asks one paper's question of the stored runs, decided by the book's rule (chapter 00, section 6): the
# 95% interval of the relative change, read against zero and the paper's own change. The question column says
# which comparison the runs make; where it is the book's (one recipe, 2.70M parameters), it also says where the
# paper compared differently.
#
# In the figure, each bar is our interval and each diamond the paper's reported change (none for Salton et
# al.'s rows, whose pair is no controlled comparison: only their direction is read); the grey band is ±1%.
# Left of zero the family beats its control. Chapter 00, section 6 gives the verdict for each place an
# interval can lie.

# %%
decided = decided_compare(results_dir)  # family -> claims row, three seeds a side
interval_plot(list(decided.values()), [compare.ROW_LABELS[name] for name in decided],
              title="Each family against its control under one recipe, PTB "
                    "(about 2.70M parameters; tied LSTM, d = 128: 1.42M)")
plt.show()
show_claims(list(decided.values()));

# %% [markdown]
# **The verdict.** Under one recipe and one parameter count, with three seeds a side or more:
#
# * **Tying and smoothing are supported at this budget.** The tied LSTM, wider than the control, gains 4.3% on the
#   LSTM, and smoothing 6.5% on the tied LSTM (its L2 term off), each at least its paper's margin. This recipe
#   has no dropout, so the plain models overfit from their fifth to seventh epoch, and a regularizer has room
#   that the papers' regularized controls did not leave.
# * **At equal width, Press & Wolf's comparison, tying loses a little** (+0.8%, interval 0.2% to 1.3%,
#   *contradicted (a loss)*), near what the kind of CPU moves one run (section 5): under this recipe the saved
#   matrix helps by the width it buys. At Press & Wolf's own size and protocol it gains 4.2% at equal width
#   (chapter 01). Under Kong et al.'s own protocol at 2 × 200 (chapter 05, section 5), smoothing loses to the
#   tied LSTM by about a fifth with the paper's weight decay, and gains 7.2% when both sides train without it
#   (each side's validation prefers that; the control's dropout was not chosen again, and it then overfits).
# * **Daniluk's heads gain less than reported.** These rows answer the book's question (PTB sentences, 2.70M
#   parameters); the paper's changes are on its Wikipedia documents. Key-value-predict (the paper: 11.0%) and the
#   4-gram RNN, which attends to nothing (10.9%), gain about 2% (*a gain, smaller than reported*), and land level
#   with each other, as in the paper. These two also have the widest LSTM of the budget (279 units, section 5), so
#   part of their gain may be width. Attention and key-value over the window gain nothing measurable, and their
#   intervals exclude the paper's changes, 3.5% and 7.3% (*smaller than reported*).
# * **Salton's attention and Tran's memory lose here** (*contradicted*), by about 1% (about what a rerun on
#   another machine moves one run, section 5) and by 4% and 16%. These rows answer the book's question, not the
#   papers': under this recipe the Attentive head trained at the full learning rate is still under-trained
#   (chapter 02), and the memory's tables leave RM and RMR an LSTM half as wide as the control's (chapter 04).
#   Tran's own comparison, at equal width, is chapter 04's evidence; two further rows retrain Salton's heads at a
#   tenth of the learning rate.
# * **With the head at a tenth of the learning rate, Salton's scores gain about 3%** (the book's question, with
#   the head's rate that chapter 02 argues for): the single score 3.1% (interval 1.8% to 4.5%), the combined 2.9%
#   (2.2% to 3.6%), each *supported*. The paper's 15% is no controlled effect size, so the claim is tested for its
#   direction only: it sets the model beside another paper's LSTM, trained on another protocol (chapter 02). Every
#   seed of either head (113.8 to 115.2) lies below every seed of the control (117.3 to 118.6). Under the paper's
#   protocol and schedule at a reduced width (two tied layers of 200, dropout), also with the head at a tenth of
#   the rate, chapter 02's runs give the single score 8.4%.
# * **Whether a window of one or fifteen outputs does as well as five, three seeds cannot settle** (the paper's
#   contrast under the book's recipe and parameter count). Retrained with $L = 1$, key-value-predict scores 0.3%
#   below the model with $L = 5$ (interval $-1.6\%$ to $+1.0\%$; the paper, on Wikipedia: +0.4%); with $L = 15$,
#   0.6% above it ($-1.1\%$ to $+2.2\%$; the paper: 0.0%). Both intervals reach past the $\pm 1\%$ band, so the
#   rule says *not settled* (chapter 03).

# %% tags=["remove-input"] jupyter={"source_hidden": true}
from mlm.claims import CONTRADICTED, NOT_SETTLED, SMALLER, SMALLER_GAIN, SUPPORTED
from mlm.claims import relative_change
from mlm.manifests import cpu
from mlm.table import stored_claims

verdicts = {name: row.verdict for name, row in decided.items()}
salton_own, = stored_claims([c for c in cpu.CLAIMS if c.group == "cpu-salton2017-ptb"], "cpu", results_dir)
assert salton_own.verdict == SUPPORTED, salton_own  # chapter 02's row of the paper's recipe
assert round(100 * relative_change(*salton_own.seeds[:2])[0], 1) == -8.4, salton_own  # "8.4%"
kong_own, kong_lambda0 = stored_claims([c for c in cpu.CLAIMS if c.model == "vs-kn" and c.group in (
    "cpu-kong2019-ptb", cpu.KONG_LAMBDA0)], "cpu", results_dir)  # chapter 05's rows of the paper's protocol
assert kong_own.verdict == CONTRADICTED and 0.17 < relative_change(*kong_own.seeds[:2])[0] < 0.24, kong_own  # "a fifth"
assert kong_lambda0.verdict == SUPPORTED and round(100 * relative_change(*kong_lambda0.seeds[:2])[0], 1) == -7.2
change = {name: relative_change(*row.seeds[:2])[0] for name, row in decided.items()}
paper = {name: row.seeds[2] for name, row in decided.items()}
assert verdicts["tied"] == verdicts["vs-kn-tied"] == SUPPORTED
assert round(100 * change["tied"], 1) == -4.3 and round(100 * change["vs-kn-tied"], 1) == -6.5
assert change["tied"] < paper["tied"] and change["vs-kn-tied"] < paper["vs-kn-tied"]
assert max(peaks["lstm"] + peaks["tied"]) <= 7 and min(peaks["lstm"] + peaks["tied"]) >= 5
assert verdicts["kvp-L5"] == verdicts["ngram4"] == SMALLER_GAIN
assert all(-0.025 < change[n] < -0.015 for n in ("kvp-L5", "ngram4"))
assert abs(statistics.mean(test["kvp-L5"]) - statistics.mean(test["ngram4"])) < 1
assert verdicts["window-L5"] == verdicts["kv-L5"] == SMALLER
assert [round(-100 * paper[n], 1) for n in ("kvp-L5", "ngram4", "window-L5", "kv-L5")] == [11.0, 10.9, 3.5, 7.3], paper
assert all(verdicts[n] == CONTRADICTED for n in ("attentive-single", "attentive-combined", "rm-tm-g", "rmr-notm-g"))
assert [round(100 * change[n]) for n in ("attentive-single", "attentive-combined", "rm-tm-g", "rmr-notm-g")] \
    == [1, 1, 4, 16]
assert verdicts["tied-d128"] == CONTRADICTED and round(100 * change["tied-d128"], 1) == 0.8
assert [round(100 * x, 1) for x in relative_change(*decided["tied-d128"].seeds[:2])[1:]] == [0.2, 1.3]
assert verdicts["attentive-single-headlr0.1"] == SUPPORTED and round(100 * change["attentive-single-headlr0.1"], 1) == -3.1
assert [round(100 * x, 1) for x in relative_change(*decided["attentive-single-headlr0.1"].seeds[:2])[1:]] == [-4.5, -1.8]
assert verdicts["attentive-combined-headlr0.1"] == SUPPORTED
assert paper["attentive-single-headlr0.1"] is None and paper["attentive-single"] is None  # "no size to compare"
assert [round(100 * x, 1) for x in relative_change(*decided["attentive-combined-headlr0.1"].seeds[:2])] == [-2.9, -3.6, -2.2]
head_seeds = test["attentive-single-headlr0.1"] + test["attentive-combined-headlr0.1"]
assert [f"{min(head_seeds):.1f}", f"{max(head_seeds):.1f}"] == ["113.8", "115.2"]
assert max(head_seeds) < min(test["lstm"])  # "below every seed of the control"
assert [f"{min(test['lstm']):.1f}", f"{max(test['lstm']):.1f}"] == ["117.3", "118.6"]
assert verdicts["kvp-L1"] == NOT_SETTLED and decided["kvp-L1"].seeds[1] == test["kvp-L5"], decided["kvp-L1"]
assert [round(100 * x, 1) for x in relative_change(*decided["kvp-L1"].seeds[:2])] == [-0.3, -1.6, 1.0]
assert verdicts["kvp-L15"] == NOT_SETTLED and decided["kvp-L15"].seeds[1] == test["kvp-L5"], decided["kvp-L15"]
assert [round(100 * x, 1) for x in relative_change(*decided["kvp-L15"].seeds[:2])] == [0.6, -1.1, 2.2]
assert [n for n in compare.LABELS if n != "lstm" and n not in decided] == []  # every family decided

# %% [markdown]
# > **Where this falls short.** Every verdict here is one recipe at one size, not the papers' own: no dropout, SGD
# > on sentences, each from a zero state, and 2.70M parameters, most of them in the embedding and the softmax,
# > which leaves a head little to work with. The papers' own comparisons at the reduced widths of chapters 01-04
# > (each chapter's evidence section) and their full sizes (a GPU's work,
# > `python -m mlm reproduce full`) can disagree with these rows. The recall task is one skill on a 46-word
# > vocabulary; a head that recalls there may still not help on text.
#
# **Exercise 06** ([`exercises/ex06_measuring_memory.py`](../exercises/ex06_measuring_memory.py)): the
# measurements of this chapter, written by hand: accuracy by distance with one `bincount`, and the windows that
# cut a model's history to $k$ words. Grade it with `python -m exercises.grader 06`.

# %% tags=["remove-input"] jupyter={"source_hidden": true}
from mlm.book import record

record("06_comparison", {
    **{f"recall_{label}_{name}": [round(x, 3) for x in values]
       for label, table in recall.items() for name, values in table.items()},
    "chance": chance,
    **{f"compare_test_ppl_{name}": [round(v, 2) for v in values] for name, values in test.items()},
})
