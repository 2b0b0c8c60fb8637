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

# %% tags=["parameters"]
results_dir = "../results"

# %% [markdown] tags=[]
# # Report r02 — Salton et al. 2017: does attention over the sentence beat the same LSTM?
#
# Salton, Ross & Kelleher (2017) report the single-score Attentive LM at 70.1 test perplexity on PTB (about 86 per
# predicted token) beside an LSTM trained under another protocol. We set it against the same network without the
# head. With the paper's recipe at 2 x 200, except that the head trains at a tenth of the learning rate, it gains
# 8.4% (*holds*), in a trial that *handicaps the control*, whose rate was not tuned. Under the book's matched
# recipe both sides' rates are tuned on validation and it gains about 3%: the combined score *holds*, the single
# score reads *inconclusive* once the hardware allowance (report r00, section 5) is added. Trained at one rate,
# as in the paper, both scores end about 1% behind the LSTM under the matched recipe (*inconclusive*; rows
# computed here, not in the book's table). The paper's one-rate recipe with both sides tuned, and the ablation
# of the merge layer, are not run yet.

# %% tags=[]
import statistics

import matplotlib.pyplot as plt

from mlm.claims import (HOLDS, INCONCLUSIVE, MARGIN, NOT_RUN, interval_text, relative_change, show_markdown, spread,
                        verdict)
from mlm.configs import get_preset
from mlm.evidence import choose, machine_term, paper_numbers, without_superseded
from mlm.manifests import cpu
from mlm.manifests.recall import FAMILY_RUNS
from mlm.plots import (matched_recipe_panels, protocol_curves, recall_panels, salton_claims_figure,
                       valid_by_seed)
from mlm.presets.salton2017 import PTB_PER_TOKEN, SALTON_RESULTS
from mlm.report import (provenance_line, show_full_size, show_provenance, show_seeds, show_waiting,
                        verdict_rows)
from mlm.stored import load_stored_recall


# %% [markdown] tags=[]
# ## 1. The verdicts
#
# Each claim with its runs stored: the comparison, how each side was tuned, our test perplexities (mean ± sd over
# seeds), the relative change of the means with its 95% interval, and the rule's label (report r00). "Handicaps
# the control" marks a trial whose model was tuned and whose control was not. Under the matched recipe the rows
# that tuned only the head's rate are replaced by the rows that tune both sides' rates: validation keeps the
# LSTM's rate of 1 (section 4), so both read the same runs, now without the handicap.

# %% tags=[]
every = verdict_rows("02", results_dir)  # (manifest, claim, row) for every claim of the paper
rows = without_superseded(every)  # the decided rows, each replaced by a fairer trial of it once that has its runs
where = {"cpu": "the paper's recipe, 2 x 200", "compare": "the book's matched recipe"}

# %% jupyter={"source_hidden": true} tags=["remove-input"]
_table = ["| comparison | model vs control | how each side was tuned | ours: model vs control | change | verdict |",
          "|---|---|---|---|---|---|"]
for m, c, r in rows:
    _table.append(f"| {where[m]} | {r.model_run} vs {r.control_run} | {r.tuning.split('; unequal')[0]} | "
                  f"{spread(r.seeds[0])} vs {spread(r.seeds[1])} | "
                  f"{interval_text(r.seeds[0], r.seeds[1], r.machine)} | **{r.label_text}** |")
show_markdown("\n".join(_table));

# %% [markdown] tags=[]
# The paper's pairs are 70.1 (single) and 70.7 (combined) against Zaremba et al.'s medium LSTM at 82.7, -15.2%
# and -14.5%. That LSTM ran under the stream protocol, and the paper's numbers skip each sentence's first word
# (about 86 and 87 per predicted token, section 6), so the rule reads their direction only, not their size:
# with no size to compare, *holds* needs only a gain beyond −1%. The figure's diamonds show the paper's changes
# for orientation, not as a yardstick.
#
# The paper trains the whole network at one rate. The matched recipe also ran both scores that way, against the
# same LSTM; no claim row reads these runs, so the rule is applied to them here:

# %% tags=[]
matched_runs = ["lstm", "lstm-lr0.5", "lstm-lr2.0", "attentive-single", "attentive-combined",
                "attentive-single-headlr0.1", "attentive-combined-headlr0.1"]
matched = show_seeds("compare-ptb", "compare", results_dir, runs=matched_runs)
one_rate = {}
for score in ("attentive-single", "attentive-combined"):
    model, control = matched[score].values("test_ppl"), matched["lstm"].values("test_ppl")
    shift = machine_term(matched[score].machine_kinds(), matched["lstm"].machine_kinds(), results_dir)
    one_rate[score] = (model, control, shift, verdict(model, control, machine=shift))
    print(f"{score} vs lstm (paper's single rate): {interval_text(model, control, shift)}: {one_rate[score][3]}")

# %% tags=[]
entries = [(f"{where[m]}:\n{r.model_run} vs {r.control_run}", r.seeds[0], r.seeds[1], r.machine, r.label_text,
            paper_numbers(c)[0] / paper_numbers(c)[1] - 1) for m, c, r in rows]
entries += [(f"the book's matched recipe:\n{k} vs lstm (paper's single rate)", model, control, shift, label,
             SALTON_RESULTS["ptb", k.split("-")[1]][1] / get_preset("zaremba2014-medium").paper["test"] - 1)
            for k, (model, control, shift, label) in one_rate.items()]
salton_claims_figure(entries, title="Salton et al.'s claims: change of test perplexity against the LSTM")
plt.show()

# %% jupyter={"source_hidden": true} tags=["remove-input"]
decided = {(m, c.model if isinstance(c.model, str) else c.model[0]): r for m, c, r in rows}
own = decided["cpu", "single-headlr0.1"]
single = decided["compare", "attentive-single"]  # both sides tuned: the head's rate chose 0.1x, the LSTM's 1
combined = decided["compare", "attentive-combined"]
assert len(rows) == 3, [(m, c.model) for m, c, _ in rows]
assert (own.verdict, single.verdict, combined.verdict) == (HOLDS, INCONCLUSIVE, HOLDS), rows
assert own.handicaps == "the control" and not single.handicaps and not combined.handicaps, rows
assert (single.model_run, single.control_run, combined.model_run, combined.control_run) == (
    "attentive-single-headlr0.1", "lstm", "attentive-combined-headlr0.1", "lstm"), rows  # "the same runs"
replaced = [(c, r) for m, c, r in every if r.decided and (m, c, r) not in rows]
assert [(c.model, c.control, r.handicaps, r.seeds[:2]) for c, r in replaced] == [
    (r.model_run, "lstm", "the control", r.seeds[:2]) for r in (single, combined)], replaced
assert [round(100 * relative_change(*r.seeds[:2])[0], 1) for r in (own, single, combined)] == [-8.4, -3.0, -2.8]
assert own.machine == 0 and single.machine > 0 and combined.machine > 0, (own.machine, single.machine)
assert relative_change(*combined.seeds[:2])[2] + combined.machine < -MARGIN, combined  # "still clears"
assert relative_change(*single.seeds[:2])[2] < -MARGIN < relative_change(*single.seeds[:2])[2] + single.machine
assert single.machine == combined.machine == machine_term(["EPYC"], ["Xeon"], results_dir)  # "that pair of machines"
assert f"{100 * single.machine:.1f}" == "0.9", single.machine  # "±0.9%"
assert max(own.seeds[0]) < min(own.seeds[1]), own.seeds  # every seed below every seed
assert round(SALTON_RESULTS["ptb", "single"][1] ** PTB_PER_TOKEN) == 86
assert round(SALTON_RESULTS["ptb", "combined"][1] ** PTB_PER_TOKEN) == 87
assert SALTON_RESULTS["ptb", "single"][1] == 70.1 and get_preset("zaremba2014-medium").paper["test"] == 82.7
assert [round(100 * e[5], 1) for e in entries] == [-15.2, -15.2, -14.5, -15.2, -14.5], entries  # the paper's pairs
assert (own.seeds[2], single.seeds[2], combined.seeds[2]) == (None, None, None)  # "direction only"
assert [round(100 * relative_change(*v[:2])[0], 1) for v in one_rate.values()] == [1.1, 1.4], one_rate  # "1.1% and 1.4"
assert all(v[3] == INCONCLUSIVE for v in one_rate.values()), one_rate  # "inconclusive"
assert cpu.SALTON_WIDTH == 200 and cpu.SALTON_EPOCHS == 24

# %% [markdown] tags=[]
# The paper's recipe gives the largest gain, with every seed of the model below every seed of the control.
# The matched rows gain less. Their models ran on the AMD EPYC and their control on the Intel Xeon, so the rule
# widens each interval by the allowance for that pair of machines, ±0.9% (measured on reruns of the LSTM and the
# tied LSTM and assumed to hold for the heads; report r00, section 5): the combined score still clears the
# margin, the single score, clear of it on its seeds alone, no longer does. At the paper's single rate both scores are worse than
# the LSTM on average (by 1.1% and 1.4%), but their intervals, widened for the machines, reach inside the ±1%
# margin: *inconclusive*.

# %% [markdown] tags=[]
# ## 2. At the paper's size
#
# The paper's runs are 2 x 650 on all of PTB. The book's full-size manifest declares them; they are not run yet.

# %% tags=[]
show_full_size("02", results_dir);

# %% [markdown] tags=[]
# ## 3. The paper's recipe at 2 x 200
#
# The paper's recipe (two tied layers, 50% dropout, the sentence protocol, SGD at rate 1 halved every epoch from
# the 13th) at 2 x 200 units, stopped after 24 epochs, when the rate is 1/4096 of its start; each run's test
# perplexity is that of its best validation epoch. The control is the same network without the head; the head
# learns at a tenth of the rate (section 5). The group is named "cpu" after its manifest, whose reduced widths
# are meant for a CPU; these runs were trained on a GPU (section 9).

# %% tags=[]
own_settings = show_seeds("cpu-salton2017-ptb", "cpu", results_dir)

# %% tags=[]
protocol_curves({"LSTM": own_settings["lstm"], "single score, head at 0.1x": own_settings["single-headlr0.1"]},
                title="cpu-salton2017-ptb: validation perplexity, one line per seed")
plt.show()

# %% jupyter={"source_hidden": true} tags=["remove-input"]
lstm_v, head_v = ([[m["valid_ppl"] for m in own_settings[k].metrics(i)] for i in range(3)]
                  for k in ("lstm", "single-headlr0.1"))
lstm_lr = [m["lr"] for m in own_settings["lstm"].metrics(0)]
own_recipe = own_settings["lstm"].results[0]["config"]
assert (own_recipe["model"]["num_layers"], own_recipe["model"]["tie_weights"], own_recipe["model"]["dropout"],
        own_recipe["data"]["protocol"], own_recipe["model"]["hidden_size"]) == (2, True, 0.5, "sentence", 200), own_recipe
assert all(r["device"] == "cuda" for s in own_settings.values() for r in s.results)  # "trained on a GPU"
assert all(h[e] > l[e] for l in lstm_v for h in head_v for e in range(2))  # "leads for the first two epochs"
assert [f"{min(v[0] for v in vs):.0f} to {max(v[0] for v in vs):.0f}" for vs in (lstm_v, head_v)] == \
    ["242 to 251", "274 to 297"]
assert all(h[e] < l[e] for l in lstm_v for h in head_v for e in range(5, 24))  # "from the sixth, every seed"
gap = [statistics.fmean(l[e] for l in lstm_v) - statistics.fmean(h[e] for h in head_v) for e in range(24)]
assert 12.5 < gap[11] < 14 and lstm_lr[11] == 1, gap  # "about 13 points at epoch 12"
assert lstm_lr.index(0.5) == 12 and lstm_lr[17] == 1 / 64 and lstm_lr[-1] == 1 / 4096, lstm_lr
assert [f"{min(v[-1] for v in vs):.0f}-{max(v[-1] for v in vs):.0f}" for vs in (lstm_v, head_v)] == ["121-122", "110-110"]
own_train = [[own_settings[k].metrics(i)[-1]["train_ppl"] for i in range(3)] for k in ("lstm", "single-headlr0.1")]
assert 130 < min(own_train[0]) and max(own_train[0]) < 132 and 110 < min(own_train[1]) and max(own_train[1]) < 111.5
own_params = [own_settings[k].results[0]["parameters"] for k in ("lstm", "single-headlr0.1")]
assert [round(x / 1e6, 2) for x in own_params] == [2.65, 2.77] and round(100 * (own_params[1] / own_params[0] - 1), 1) == 4.5

# %% [markdown] tags=[]
# - The LSTM leads for the first two epochs (validation 242 to 251 after the first, against 274 to 297): even at
#   a tenth of the rate, the head starts slower.
# - From the sixth epoch every seed with the head is ahead of every seed without, by about 13 points at epoch 12.
# - Both level off, at 121 to 122 (LSTM) and 110 (head); by epoch 18 the rate is 1/64 of its start, so the tails
#   cannot show whether more learning was left.
# - The head also fits the training text better (training perplexity with dropout on: 110 to 111 against 130 to
#   132).
# - The head adds 4.5% to the parameters (2.77M against 2.65M).

# %% [markdown] tags=[]
# ## 4. The matched recipe
#
# The book's own comparison (chapter 06): Tran et al.'s recipe, one LSTM layer of 128 units with an untied
# softmax, no dropout, batches of 20 sentences from all of PTB, SGD at rate 1 halved for every epoch after the
# fourth, 15 epochs, the test perplexity of the best validation epoch. The heads add about 2% to the parameters.
# Each side's learning rate is chosen on validation: the head's from the full rate and a tenth of it (the model's
# LSTM stays at rate 1), the LSTM's from 0.5, 1 and 2, three seeds each; the extra candidate, if anything, favours
# the control. The seeds are listed in section 1.

# %% tags=[]
labels = {"lstm": "LSTM", "attentive-single": "single, full rate", "attentive-combined": "combined, full rate",
          "attentive-single-headlr0.1": "single, head 0.1x", "attentive-combined-headlr0.1": "combined, head 0.1x"}
curves = {labels[k]: [matched[k].metrics(i) for i in range(len(matched[k].seeds))] for k in labels}
matched_recipe_panels(curves, title="compare-ptb: validation and training perplexity by epoch, one colour per seed")
plt.show()

# %% [markdown] tags=[]
# Seed 1 jumps back at epoch 4, the last at rate 1, in every attentive setting: by about half at the full rate,
# by 12% to 16% with the head at a tenth, while the LSTM's seed 1 barely moves. The close-up shows epochs 5 to 15,
# where the differences the verdicts read lie; the combined score at the full rate, whose lines run with the
# single score's, is left out to keep the lines apart:

# %% tags=[]
fig, ax = plt.subplots(figsize=(9, 4.5))
valid_by_seed({"LSTM": curves["LSTM"], "single, full rate": curves["single, full rate"],
               "single, head 0.1x": curves["single, head 0.1x"], "combined, head 0.1x": curves["combined, head 0.1x"]},
              ax=ax, ylim=(114, 132), first_epoch=5)
ax.set_title("compare-ptb, epochs 5-15: validation perplexity by seed (dot: each seed's best)", fontsize=10)
plt.show()

# %% tags=[]
print(f"{'':<24}{'seed':>5}{'valid, epoch 1':>16}{'best valid':>12}{'train, last epoch':>19}")
for label, seeds in curves.items():
    for i, metrics in enumerate(seeds):
        print(f"{label:<24}{i:>5}{metrics[0]['valid_ppl']:>16.0f}{min(m['valid_ppl'] for m in metrics):>12.1f}"
              f"{metrics[-1]['train_ppl']:>19.1f}")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
first = {k: [m[0]["valid_ppl"] for m in seeds] for k, seeds in curves.items()}
best = {k: [min(e["valid_ppl"] for e in m) for m in seeds] for k, seeds in curves.items()}
final_train = {k: [m[-1]["train_ppl"] for m in seeds] for k, seeds in curves.items()}
full_rate, slow = ("single, full rate", "combined, full rate"), ("single, head 0.1x", "combined, head 0.1x")
assert f"{min(first['LSTM']):.0f} to {max(first['LSTM']):.0f}" == "189 to 207", first
assert f"{min(first[k][i] for k in full_rate for i in range(3)):.0f}" == "371", first
assert f"{max(first[k][i] for k in full_rate for i in range(3)):.0f}" == "670", first
jump = {k: curves[k][1][3]["valid_ppl"] / curves[k][1][2]["valid_ppl"] for k in curves}  # seed 1, epoch 4 / epoch 3
assert all(1.4 < jump[k] < 1.7 for k in full_rate) and all(1.1 < jump[k] < 1.17 for k in slow), jump  # "about half", "12% to 16%"
assert f"{100 * min(jump[k] for k in slow) - 100:.0f}-{100 * max(jump[k] for k in slow) - 100:.0f}" == "12-16", jump
assert jump["LSTM"] < 1.03 and curves["LSTM"][1][3]["valid_ppl"] > curves["LSTM"][1][2]["valid_ppl"], jump  # "barely"
assert all(curves[k][i][3]["lr"] == 1 and curves[k][i][4]["lr"] < 1 for k in curves for i in range(3))  # epoch 4
assert all(0.5 < 100 * (statistics.fmean(best[k]) / statistics.fmean(best["LSTM"]) - 1) < 1.5 for k in full_rate), best
assert all(min(final_train[k]) > max(final_train["LSTM"]) + 5 for k in full_rate), final_train
assert f"{min(v for k in full_rate for v in final_train[k]):.0f}-{max(v for k in full_rate for v in final_train[k]):.0f}" == "63-66"
assert f"{min(final_train['LSTM']):.0f}-{max(final_train['LSTM']):.0f}" == "56-57", final_train
slow_first = [v for k in slow for v in first[k]]
assert f"{min(slow_first):.0f} to {max(slow_first):.0f}" == "212 to 228", slow_first
assert all(3 < statistics.fmean(best["LSTM"]) - statistics.fmean(best[k]) < 5 for k in slow), best  # "about 4"
assert all(abs(statistics.fmean(final_train[k]) - statistics.fmean(final_train["LSTM"])) < 2 for k in slow)
params = {k: matched[k].results[0]["parameters"] for k in labels}
assert all(1.5 < 100 * (params[k] / params["lstm"] - 1) < 2.5 for k in labels if k != "lstm"), params  # "about 2%"
recipe = matched["lstm"].results[0]["config"]  # the recipe as the prose gives it
assert (recipe["model"]["num_layers"], recipe["model"]["hidden_size"], recipe["model"]["tie_weights"],
        recipe["model"]["dropout"]) == (1, 128, False, 0.0), recipe["model"]
assert (recipe["data"]["batch_size"], recipe["train"]["lr"], recipe["train"]["decay_start"], recipe["train"]["epochs"],
        recipe["data"]["max_train_tokens"]) == (20, 1.0, 4, 15, None), recipe

# %% [markdown] tags=[]
# - At the full rate the heads' first validation is 371 to 670, the LSTM's 189 to 207. Once the rate decays
#   they come close, but their best validation stays about 1% *above* the LSTM's (worse), and their training
#   perplexity ends higher (63-66 against 56-57): they fit the training text less well, the mark of a model
#   trained too little, not of one that overfits.
# - With the head at a tenth of the rate the first epoch ends at 212 to 228, close to the LSTM; the training
#   perplexity ends where the LSTM's does, and the best validation lies about 4 points below the LSTM's.
# - The claim rows of section 1 read these last two settings against the LSTM at the rate validation chose
#   (below); section 1 also applies the rule to the full-rate settings, the paper's single rate, against the same
#   LSTM.
#
# The LSTM's own rate, tuned as the head's was: each rate's mean best validation and test perplexity over the seeds
# the three rates share, the epochs of their best validation, and the choice.

# %% tags=[]
rates = {"lstm-lr0.5": 0.5, "lstm": 1, "lstm-lr2.0": 2}
shared = sorted(set.intersection(*(set(matched[run].seeds) for run in rates)))
rate_rows = []
for run, rate in rates.items():
    kept = [i for i, seed in enumerate(matched[run].seeds) if seed in shared]
    results = [matched[run].results[i] for i in kept]
    rate_rows.append((rate, statistics.fmean(r["best_valid_ppl"] for r in results),
                      statistics.fmean(r["test_ppl"] for r in results), sorted({r["best_epoch"] for r in results}),
                      [matched[run].metrics(i)[-1]["train_ppl"] for i in kept]))
print(f"seeds {', '.join(map(str, shared))}")
print(f"{'LSTM rate':<11}{'valid':>8}{'test':>8}  {'best epochs':<13}train, last epoch")
for rate, valid, test, epochs, train in rate_rows:
    print(f"{rate:<11g}{valid:>8.1f}{test:>8.1f}  {', '.join(map(str, epochs)):<13}{min(train):.0f}-{max(train):.0f}")
chosen_rate, how_chosen = choose(matched, tuple(rates))
print(how_chosen)

# %% jupyter={"source_hidden": true} tags=["remove-input"]
valid_at = {rate: valid for rate, valid, _, _, _ in rate_rows}
train_at = {rate: train for rate, _, _, _, train in rate_rows}
assert chosen_rate.run == "lstm" and valid_at[1] < valid_at[0.5] < valid_at[2], rate_rows  # "the rate of 1"
assert shared == [0, 1, 2] and all(len(matched[run].seeds) >= 3 for run in rates), shared
assert [round(valid_at[r] - valid_at[1]) for r in (0.5, 2)] == [6, 9], valid_at  # "6 and 9 points"
assert min(train_at[0.5]) > max(train_at[1]) + 15, train_at  # "fits the training text less"
assert abs(statistics.fmean(train_at[2]) - statistics.fmean(train_at[1])) < 2, train_at  # "as closely"

# %% [markdown] tags=[]
# Validation keeps the recipe's rate of 1 (Tran et al.'s). Half the rate ends 6 points higher on validation and
# fits the training text less (75-78 against 56-57 at the last epoch): the rate halves after the fourth epoch
# whatever it started at, so smaller steps leave the LSTM short. Twice the rate fits the training text as closely as the rate of 1,
# yet ends 9 points higher on validation. The choice is made on seeds 0-2, which all three rates share; the
# verdicts then read all five seeds of the LSTM at rate 1 (test 117.9), the same control as the rows that tuned
# only the head, so their labels stand without the handicap.

# %% [markdown] tags=[]
# ## 5. The head's learning rate
#
# Three pieces of evidence that the head needs a smaller step than the LSTM under these recipes:
#
# - **The first updates** (chapter 02, section 3): over a fresh model's first 150 updates at the reduced size,
#   one learning rate leaves the attentive model's batch perplexity about twice the LSTM's; with the head at a
#   tenth it falls with the LSTM's.
# - **Four epochs on all of PTB** at 2 x 256, one learning rate, the paper's dropout (one seed each, an early
#   run kept for this):

# %% tags=[]
longer = show_seeds("salton2017-ptb-256-4ep", "stored", results_dir)

# %% jupyter={"source_hidden": true} tags=["remove-input"]
assert 1.8 < longer["single"].values("test_ppl")[0] / longer["lstm"].values("test_ppl")[0] < 2.3  # "about twice"
assert [len(x.seeds) for x in longer.values()] == [1, 1] and longer["single"].results[0]["epochs_run"] == 4
early = longer["single"].results[0]["config"]
assert (early["train"].get("head_lr_scale", 1.0), early["model"]["dropout"], early["model"]["hidden_size"]) == (1.0, 0.5, 256), early
choice = [r for m, c, r in verdict_rows("02", results_dir)
          if m == "compare" and isinstance(c.model, tuple) and c.model[0] == "attentive-single"][0]
assert "attentive-single 123.3, attentive-single-headlr0.1 118.8" in choice.tuning, choice.tuning

# %% [markdown] tags=[]
# After four epochs the single-score model's test perplexity is still about twice the LSTM's.
#
# - **The matched recipe** (section 4): on validation, over the same three seeds, the single score at the full
#   rate reaches 123.3 and at a tenth 118.8, so the row that tunes both sides chooses the tenth.
#
# Why the head needs the smaller step, these runs do not measure.

# %% [markdown] tags=[]
# ## 6. The paper's numbers and the official code
#
# The official code (giancds/attentive_lm, TensorFlow) differs from the paper in ways that change what its
# numbers measure:
#
# - **Perplexity.** It never predicts the first word of a sentence but divides the summed loss by every token,
#   so its log-perplexity is scaled by predicted / all tokens. On PTB's test set the reported numbers read, per
#   predicted token (the scale of Zaremba et al.'s 82.7; the book's scale also counts each first word, so these
#   are lower bounds on it):

# %% tags=[]
for score in ("single", "combined"):
    valid, test, parameters = SALTON_RESULTS["ptb", score]
    print(f"{score:<9} reported test {test} ({parameters} parameters): about {test ** PTB_PER_TOKEN:.0f} "
          f"per predicted token")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
large = get_preset("zaremba2014-large").paper
assert large["test"] == 78.4 and large["params"] == "66M" and SALTON_RESULTS["ptb", "single"][1] ** PTB_PER_TOKEN > 78.4
assert get_preset("salton2017-ptb-single", "full").train.loss_reduction == "sequence_sum"

# %% [markdown] tags=[]
# - **The abstract's comparison.** Per predicted token, 70.1 is also above the 78.4 of Zaremba et al.'s large LSTM
#   (66M parameters), which the abstract says the attentive model beats.
# - **The loss.** The paper minimises "the average negative log probability of the target words"; the code sums
#   the loss over each sentence and averages over the batch. The book's presets follow the code.
# - **No trained attention.** In training and validation the graph is built with a dynamic RNN that traces the
#   cell once, so the memory never grows and the score weights and the context half of $W_c$ receive no
#   gradient (`attentive_lm.py` and `cells.py` of the official code). The test graph is unrolled statically,
#   so at test time attention is switched on with those weights at their random start. The paper's
#   near-uniform attention (its Figures 2 and 3) is consistent with such weights.
# - **The memory** starts with one all-zero slot (so step 1 attends over $[0]$ and later steps keep giving that
#   slot weight); the merge is linear, without Eq. 7's $\tanh$. The book's options `model.attention_zero_slot`
#   and `model.attention_merge="linear"` reproduce both; the book's runs use neither.
# - **The equations and the prose disagree** on whether the new state's score enters the softmax (the prose on
#   the single score includes it; Eq. 3-4 do not). The book follows the equations.
# - **The control.** Zaremba et al.'s medium LSTM is trained on the stream protocol, its state carried across
#   sentences; the paper trains no LSTM under its own sentence protocol. Its pair therefore has no size the book's
#   could be set beside: the rule weighs its direction only.
# - A public PyTorch port of the model (gautierdag/pytorch-attentive-lm) reports its attentive model worse than
#   its own LSTM baseline on PTB (test 76.6 against 65.0); we found no public reproduction of the paper's gain.

# %% [markdown] tags=[]
# ## 7. Key-value recall
#
# The paper's first hypothesis is that attention lets the model bridge long-distance dependencies (its section 1,
# (a)); PTB's perplexity cannot isolate that, the recall task of chapter 00 can. A line names a key with a value,
# then filler and distractor pairs, then the key again; the value after it, the *critical token*, must be recalled
# from the source $\Delta$ steps back.
# The stored runs (64 units, Adam, 15 epochs, three seeds each) put the plain LSTM beside both scores (grey: the
# LSTM's mean):

# %% tags=[]
families = ("LSTM", "Attentive, single", "Attentive, combined")
recall = load_stored_recall({label: FAMILY_RUNS[label] for label in families}, results_dir)
chance = recall["LSTM"].extras[0]["chance"]
recall_panels(recall, chance, reference="LSTM", width=10, columns=3, title="Key-value recall, one line per seed")
plt.show()

# %% tags=[]
edges, matched_positions = [2, 21, 41, 61], [40, 80]  # Δ bins; positions 40-79, where every Δ occurs
print(f"{'':<28}{'':>9}   {'accuracy at positions 40-79':<28}{'weight on the source':>21}{'source is':>12}")
print(f"{'':<28}{'accuracy':>9}   {'Δ = 2-20 / 21-40 / 41-60':<28}{'/ uniform weight':>21}{'the largest':>12}")
for label, entry in recall.items():
    for seed, scores, extra in zip(entry.seeds, entry.scores, entry.extras):
        by_distance = " / ".join(f"{row[0][0]:.2f}" for row in scores.table(edges, matched_positions))
        source = extra.get("source_attention")  # None for a model without attention
        ratio = f"{source['weight'] / source['uniform']:.1f}" if source else "-"
        largest = f"{source['is_max']:.0%}" if source else "-"
        print(f"{label + ', seed ' + str(seed):<28}{scores.accuracy:>9.2f}   {by_distance:<28}{ratio:>21}{largest:>12}")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
learned = {label: [s for s in entry.scores if s.accuracy > 3 * chance] for label, entry in recall.items()}
recall_config = recall["LSTM"].results[0]["config"]
assert (recall_config["model"]["hidden_size"], recall_config["train"]["optimizer"], recall_config["train"]["epochs"]) == \
    (64, "adam", 15) and all(len(entry.seeds) == 3 for entry in recall.values()), recall_config
assert len(learned["LSTM"]) == 3, learned
single_acc = [s.accuracy for s in recall["Attentive, single"].scores]
assert min(single_acc) < 1.5 * chance and max(single_acc) > max(s.accuracy for s in recall["LSTM"].scores), single_acc
assert max(single_acc) < max(s.accuracy for s in learned["LSTM"]) + 0.1, single_acc
for label, scores in learned.items():
    for s in scores:
        bins = [acc for _, _, acc, _, _ in s.binned(10)]
        assert max(bins) - min(bins) < 0.25, (label, bins)  # flat in Δ
        at_matched = [row[0][0] for row in s.table(edges, matched_positions)]
        assert max(at_matched) - min(at_matched) < 0.15, (label, at_matched)
ratios = {label: [(e["source_attention"]["weight"] / e["source_attention"]["uniform"], e["source_attention"]["is_max"])
                  for e in recall[label].extras] for label in families[1:]}
assert all(2 < r < 6 and is_max < 0.015 for r, is_max in ratios["Attentive, single"]), ratios
assert all(s.accuracy > 0.95 for s in recall["Attentive, combined"].scores), recall["Attentive, combined"].scores
assert all(r > 30 and is_max > 0.75 for r, is_max in ratios["Attentive, combined"]), ratios

# %% [markdown] tags=[]
# - The LSTM recalls between a third and two thirds of the values, seed by seed, about as well at $\Delta = 60$
#   as at 5, also at matched positions (the critical token 40 to 79 words into its line): reach is not what
#   limits it.
# - The single score does no better on average: one seed never leaves chance, its best is a little above the
#   LSTM's best. It puts two to five times the uniform weight on the source, which is the largest weight of its
#   step in about 1% of lines or fewer: rating each output on its own, it cannot know which key is asked for.
# - The combined score recalls almost every value at every distance, with more than thirty times the uniform
#   weight on the source, the largest weight in four lines of five or more: it compares the question with each
#   stored output, a lookup.

# %% [markdown] tags=[]
# ## 8. Dead ends and what the runs do not say
#
# - **A mean-share diagnostic.** An earlier version of chapter 02 measured how much of the head's output is the
#   same at every position, to show the one-rate model stuck predicting frequent words. The share rose toward 1
#   for the head at both rates and could not tell them apart; the batch perplexity can, and the chapter keeps
#   only that.
# - **No run at the paper's size** (2 x 650): the 70.1 (about 86 per predicted token) is neither confirmed nor
#   refuted (section 2).
# - **The merge layer is not yet controlled for.** The LSTM has no layer like Eq. 7's, and the head's attention
#   on PTB is near uniform (chapter 02), so part of either gain may come from the extra $\tanh$ layer rather than
#   from reading the memory. The ablation is declared (the tuned manifest: the single score against the same
#   network with its context fixed to zero, `model.attention_disabled`, three seeds each at 2 x 200) and not run
#   yet (section 10).
# - **The paper's recipe and the matched one** differ in too many ways (two tied layers against one untied,
#   dropout, the schedule, a head that adds 4.5% to the parameters against 2%) to say which makes the paper's
#   protocol gain more.
# - **Recall with the single score**: its seeds range from chance to a little above the LSTM's best; whether
#   longer training teaches it the combined score's lookup, the runs cannot say.

# %% [markdown] tags=[]
# ## 9. Provenance
#
# Each setting's machines, device, precision, versions and training time, with the command that reruns it. The
# 2 x 256 runs of section 5 predate the recording of the processor ("unknown").

# %% tags=[]
show_provenance([("cpu-salton2017-ptb", "cpu"), ("salton2017-ptb-256-4ep", "stored")], results_dir);

# %% tags=[]
print("compare-ptb:")
for name in matched_runs:
    print(f"  {name:<30} {provenance_line(matched[name])}")

# %% [markdown] tags=[]
# ## 10. What waits
#
# The paper's own recipe with the control's learning rate tuned as well as the head's, and the ablation of the
# merge layer:

# %% tags=[]
waiting = show_waiting("02", results_dir)

# %% jupyter={"source_hidden": true} tags=["remove-input"]
assert {m for m, _, _ in waiting} == {"tuned"} and all(r.verdict == NOT_RUN for _, _, r in waiting), waiting
assert any(c.control == "merge-only-headlr0.1" for _, c, _ in waiting), waiting  # "the ablation of the merge layer"
from mlm.reproduce import load_manifest

ablation = [s.config() for s in load_manifest("tuned")
            if s.group == "tuned-salton2017-ptb" and s.base == "merge-only-headlr0.1"]
assert len(ablation) == 3 and all(c.model.attention_disabled and c.model.hidden_size == 200 for c in ablation)  # section 8
