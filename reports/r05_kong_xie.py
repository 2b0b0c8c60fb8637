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
# # Report r05 — Kong et al. 2019 and Xie et al. 2017: do data noising and variational smoothing beat a regularized LSTM?
#
# Data noising (Xie et al.) replaces input words by random draws while training; VS-KN is Kong et al.'s
# variational smoothing with the same Kneser-Ney noise, which draws embedding vectors instead of words and predicts
# with their mean; element-wise VS draws each element of a vector on its own (chapter 05 builds all three).
#
# With the paper's recipe at 2 x 200 and $\lambda = 10^{-4}$, data noising ends 7.1% above a tied LSTM whose
# tuned dropout came out at zero (*inconclusive*), and VS-KN and element-wise smoothing 20.9% and 21.5% above it
# (*worse*), in trials that *handicap the paper*: the regularizers ran untuned. With $\lambda = 0$ on both sides
# VS-KN gains 7.2% (*holds*, *handicaps the control*), in a trial designed after a diagnostic run.
#
# Under the book's matched recipe VS-KN gains 6.5% over a tied LSTM without any regularizer (*holds*,
# *handicaps the control*). The trial that tunes both sides waits for runs, and nothing ran at the paper's
# size; chapter 05 builds the models, this report holds the runs.

# %% tags=[]
import json
import math
import statistics
from pathlib import Path

import matplotlib.pyplot as plt

from mlm.claims import awaits_runs, relative_change, show_markdown
from mlm.evidence import COMPARISONS, paper_numbers, stored_claims
from mlm.manifests import full
from mlm.plots import diagnostic_curves, kong_protocol_panels, kong_verdict_figure, overfitting_panels, valid_by_seed
from mlm.plots.noising import kong_name
from mlm.report import (compact_verdicts, provenance_line, show_provenance, show_seeds, show_waiting,
                        verdict_rows)
from mlm.stored import machine_label
from mlm.training import read_metrics

RESULTS = Path(results_dir)


def seeds_of(settings, run):
    """The epochs (metrics.jsonl rows) of every stored seed of one run of a group."""
    return [settings[run].metrics(i) for i in range(len(settings[run].seeds))]


def stored_seeds(group, run):
    """The epochs of every stored seed of ``group/run``, read from its folders."""
    return [read_metrics(p) for p in sorted((RESULTS / group / run).glob("seed*"))]


def numbers(values, spec=".1f"):
    """Numbers as one table cell: "112.6, 112.7"."""
    return ", ".join(format(v, spec) for v in values)


def best(history):
    """The epoch with the lowest validation perplexity."""
    return min(history, key=lambda h: h["valid_ppl"])


def span(values):
    """The smallest and largest of ``values``, rounded: the range the text quotes ("65 to 69")."""
    values = list(values)
    return round(min(values)), round(max(values))


# %% [markdown] tags=[]
# ## 1. The verdicts
#
# Every decided claim of the two papers: the paper's change of test perplexity, ours with the 95% interval the
# rule reads (report r00), the seeds of each side and the label, with the side an unequal trial handicaps. The
# notes under the table say what each comparison asks and how each side was tuned; "the paper's recipe" means
# sections 2 to 4. The figure shows the decided rows: our change of test perplexity with its 95% interval, the
# paper's change (◇) and the ±1% margin (grey). The matched-recipe row stands, and is counted, until the row that
# tunes both sides has its runs (section 10); that row then replaces it.

# %% tags=[]
rows = [r for r in verdict_rows("05", results_dir) if not awaits_runs(r[2])]  # the decided rows


def comparison(manifest, claim) -> str:
    """A row's comparison, the lambda-0 trial named as such."""
    if claim.group.endswith("lambda0"):
        return "the paper's recipe, λ = 0"
    return COMPARISONS.get(manifest, manifest)


show_markdown(compact_verdicts(rows, kong_name, comparison=comparison))
kong_verdict_figure(rows, manifests=("cpu", "compare"),
                    title="Kong et al.'s claims, decided rows: test perplexity against each row's control")
plt.show()

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# The summary above: each decided row's label, handicapped side and change.
decided = {}
for m, c, r in rows:  # keyed by (manifest, group, model), with the control where it is not the tied LSTM
    control = c.control if isinstance(c.control, str) else "tuned"
    decided[(m, c.group, c.model if isinstance(c.model, str) else "tuned")
            + (() if control in ("vanilla-tied", "tied") else (control,))] = r
expected = {("cpu", "cpu-kong2019-ptb", "dn-kn"): ("inconclusive", "the paper", 7.1),
            ("cpu", "cpu-kong2019-ptb", "vs-kn"): ("worse", "the paper", 20.9),
            ("cpu", "cpu-kong2019-ptb", "vs-elementwise"): ("worse", "the paper", 21.5),
            ("cpu", "cpu-kong2019-ptb", "vs-kn", "dn-kn"): ("worse", "", 12.9),
            ("cpu", "cpu-kong2019-ptb-lambda0", "vs-kn"): ("holds", "the control", -7.2),
            ("compare", "compare-ptb", "vs-kn-tied"): ("holds", "the control", -6.5)}
assert set(decided) == set(expected), decided.keys()
for key, (label, side, change) in expected.items():
    row = decided[key]
    assert (row.verdict, row.handicaps, round(100 * relative_change(*row.seeds[:2])[0], 1)) == (label, side, change), key
waiting = [r for m, c, r in verdict_rows("05", results_dir) if r.verdict == "not run yet"]
assert len(waiting) == 5  # the compare grid and the four tuned claims
assert "superseded by the row that tunes both sides" in decided["compare", "compare-ptb", "vs-kn-tied"].tuning
assert "±" in decided["compare", "compare-ptb", "vs-kn-tied"].evidence

# %% [markdown] tags=[]
# ## 2. The paper's recipe at 2 × 200, $\lambda = 10^{-4}$
#
# Two layers of 200 units instead of 512, the stream protocol, RMSprop with the plateau schedule, DropConnect of
# 0.2 on the recurrent weights, $\gamma = 0.2$ and $\lambda = 10^{-4}$, the smallest L2 weight of the paper's
# grid, on a loss averaged per token. The paper set its embedding and output dropout (0.5 at 512 units) from
# preliminary experiments; here the control's dropout is chosen on validation from five values, and the four
# models share the choice. The groups' prefix "cpu" names the manifest (reduced widths meant for a CPU), not
# the device: every run of sections 2 and 3 trained on an NVIDIA GPU (cuda; section 9).
#
# ### The control's dropout grid (seed 0)

# %% tags=[]
grid = {float(p.parent.name.removeprefix("dropout")): json.loads(p.read_text())
        for p in sorted((RESULTS / "cpu-kong2019-ptb-grid").glob("dropout*/result.json"))}
show_markdown("| dropout | best validation | test | best epoch / epochs run | machine |\n|---|---|---|---|---|\n" + "\n".join(
    f"| {d} | {r['best_valid_ppl']:.1f} | {r['test_ppl']:.1f} | {r['best_epoch']} / {r['epochs_run']} | {machine_label(r)} |"
    for d, r in sorted(grid.items())));

# %% [markdown] tags=[]
# No dropout wins. It is the grid's edge, but one that cannot move: validation rises at every step away from it.
# 0.0 and 0.05 are 0.4% apart, inside the spread of the control's three seeds at 0.0 (below), so the two tie;
# 0.1 and above lose. The grid's first runs at 0.2 and 0.5, cut before they finished, are a dead end: 0.5 sat 15
# points behind 0.35 after eleven halvings of its learning rate (their epochs are kept under `cut-runs/`). Dropout
# 0.35 ran on another GPU than the other four; it is 13 points behind 0.2, far more than a change of machine
# moves a run (report r00, section 5).
#
# ### The four models, three seeds each

# %% tags=[]
own = show_seeds("cpu-kong2019-ptb", "cpu", results_dir)

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# The paragraph above: 0.0 chosen, every larger value worse, 0.0 and 0.05 0.4% apart inside the control's seeds.
valid = {d: r["best_valid_ppl"] for d, r in grid.items()}
assert sorted(valid) == [0.0, 0.05, 0.1, 0.2, 0.35] and all(valid[a] < valid[b] for a, b in zip(sorted(valid), sorted(valid)[1:]))
control_valid = own["vanilla-tied"].values("best_valid_ppl")
assert round(100 * (valid[0.05] / valid[0.0] - 1), 1) == 0.4 and min(control_valid) < valid[0.05] < max(control_valid)
assert valid[0.1] > max(control_valid) + 3
grid_kinds = {d: machine_label(r) for d, r in grid.items()}  # "another GPU", "13 points behind 0.2"
assert len({k for d, k in grid_kinds.items() if d != 0.35}) == 1 and grid_kinds[0.35] != grid_kinds[0.0], grid_kinds
assert round(valid[0.35] - valid[0.2]) == 13
cut = [read_metrics(p) for p in sorted((RESULTS / "cut-runs").glob("*/cpu-kong2019-ptb-grid/dropout0.5*"))]
assert cut and round(min(h["valid_ppl"] for h in cut[0]) - valid[0.35]) == 15, cut and min(h["valid_ppl"] for h in cut[0])
assert round(math.log2(cut[0][0]["lr"] / cut[0][-1]["lr"])) == 11  # "eleven halvings"

# %% [markdown] tags=[]
# ### How each model fits at its best epoch
#
# Training perplexity is measured under each model's own noise, which raises it. The control's training
# perplexity ends far below its validation; the smoothed models' sits within about 3 points of theirs, and data
# noising's about 7 points *above*. None of the regularized models overfits; with the noise on top of
# $\lambda = 10^{-4}$ they plausibly underfit.

# %% tags=[]
fit = {run: [best(h) for h in seeds_of(own, run)] for run in own}
show_markdown("| run | best epochs | training at the best epoch | validation | validation − training |\n"
              "|---|---|---|---|---|\n" + "\n".join(
                  f"| {run} | {', '.join(str(h['epoch']) for h in hs)} | {numbers(h['train_ppl'] for h in hs)} | "
                  f"{numbers(h['valid_ppl'] for h in hs)} | "
                  f"{numbers((h['valid_ppl'] - h['train_ppl'] for h in hs), '+.1f')} |"
                  for run, hs in fit.items()));

# %% jupyter={"source_hidden": true} tags=["remove-input"]
gap = {run: [h["valid_ppl"] - h["train_ppl"] for h in hs] for run, hs in fit.items()}
assert all(24 < g < 28 for g in gap["vanilla-tied"])  # "far below": 26 points
assert all(abs(g) < 3.5 for run in ("vs-kn", "vs-elementwise") for g in gap[run])  # "within about 3 points"
assert all(-8.5 < g < -6 for g in gap["dn-kn"])  # "about 7 points above"

# %% [markdown] tags=[]
# ### VS-KN against data noising
#
# Kong et al. put VS-KN 0.14% ahead of data noising with the same Kneser-Ney noise (70.6 against 70.7). Here, in
# an equal trial (both at $\gamma = 0.2$ with the control's dropout), VS-KN is 12.9% behind (95% interval +8.1%
# to +17.7%, *worse*), every VS-KN seed above every data-noising seed. Section 3 asks what the shared
# $\lambda$ has to do with it.

# %% jupyter={"source_hidden": true} tags=["remove-input"]
versus = decided["cpu", "cpu-kong2019-ptb", "vs-kn", "dn-kn"]
assert [round(100 * v, 1) for v in relative_change(*versus.seeds[:2])] == [12.9, 8.1, 17.7]
assert max(versus.seeds[1]) < min(versus.seeds[0]) and versus.tuning.startswith("neither side tuned")
assert "0.0" in versus.tuning and "gamma 0.2" in versus.tuning
vs_paper, dn_paper = paper_numbers(next(c for m, c, r in rows if r is versus))[:2]
assert (vs_paper, dn_paper) == (70.6, 70.7) and round(100 * (1 - vs_paper / dn_paper), 2) == 0.14

# %% [markdown] tags=[]
# ## 3. $\lambda = 0$ for both sides
#
# The control trains with $\lambda = 10^{-4}$ too, so a second trial retrains the control and VS-KN without it,
# three seeds each, everything else as above. We designed this trial after the seed-0 diagnostic of section 4
# showed $\lambda$ holding VS-KN back: it is exploratory, chosen after seeing the losses.
#
# On validation both sides prefer $\lambda = 0$ (the table below), and there VS-KN gains 7.2% (interval −10.6%
# to −3.8%), the paper's −4.6% inside the interval, every smoothed seed below every control seed. The control's
# dropout was chosen at $\lambda = 10^{-4}$ and not again: without $\lambda$ it overfits (best at epochs 29 to 43,
# training perplexity about 45, 65 to 69 points below its validation), so this trial handicaps the control.
# VS-KN overfits less but also opens a gap, 43 to 44 points at its best epoch.

# %% tags=[]
zero = show_seeds("cpu-kong2019-ptb-lambda0", "cpu", results_dir)
mean_best = {(run, lam): statistics.fmean(s[run].values("best_valid_ppl"))
             for lam, s in (("1e-4", own), ("0", zero)) for run in ("vanilla-tied", "vs-kn")}
show_markdown("| run | mean best validation, λ = 1e-4 | λ = 0 |\n|---|---|---|\n" + "\n".join(
    f"| {run} | {mean_best[run, '1e-4']:.1f} | {mean_best[run, '0']:.1f} |" for run in ("vanilla-tied", "vs-kn")));

# %% jupyter={"source_hidden": true} tags=["remove-input"]
assert all(mean_best[run, "0"] < mean_best[run, "1e-4"] for run in ("vanilla-tied", "vs-kn"))
lambda0 = decided["cpu", "cpu-kong2019-ptb-lambda0", "vs-kn"]
change, low, high = relative_change(*lambda0.seeds[:2])
assert [round(100 * v, 1) for v in (change, low, high, lambda0.seeds[2])] == [-7.2, -10.6, -3.8, -4.6]
assert max(lambda0.seeds[0]) < min(lambda0.seeds[1])
control0 = [best(h) for h in seeds_of(zero, "vanilla-tied")]
assert sorted(h["epoch"] for h in control0) == [29, 32, 43] and all(44 < h["train_ppl"] < 46 for h in control0)
assert span(h["valid_ppl"] - h["train_ppl"] for h in control0) == (65, 69)
smoothed0 = [best(h) for h in seeds_of(zero, "vs-kn")]  # "43 to 44 points"
assert span(h["valid_ppl"] - h["train_ppl"] for h in smoothed0) == (43, 44)
# The open question below: what lambda costs each side.
cost = {run: mean_best[run, "1e-4"] - mean_best[run, "0"] for run in ("vanilla-tied", "vs-kn")}
assert (round(cost["vanilla-tied"], 1), round(cost["vs-kn"])) == (4.5, 38), cost
assert not (RESULTS / "cpu-kong2019-ptb-lambda0" / "dn-kn").exists()  # "data noising has no runs at lambda = 0"

# %% tags=[]
kong_protocol_panels({
    "λ = 1e-4, the paper's smallest": {"the control: tied LSTM": seeds_of(own, "vanilla-tied"),
                                       "VS-KN": seeds_of(own, "vs-kn"), "data noising (KN)": seeds_of(own, "dn-kn"),
                                       "element-wise VS": seeds_of(own, "vs-elementwise")},
    "λ = 0 for both (the control's dropout not chosen again)": {
        "the control: tied LSTM": seeds_of(zero, "vanilla-tied"), "VS-KN": seeds_of(zero, "vs-kn")}},
    title="The paper's recipe at 2 × 200 on PTB, validation by epoch (dot: each seed's best)")
plt.show()

# %% [markdown] tags=[]
# **An open question.** The same $\lambda = 10^{-4}$ costs the control 4.5 points of mean best validation
# perplexity and VS-KN 38. The book applies $\lambda$ as RMSprop's weight decay, which adds $\lambda w$ to the
# gradient *before* the step divides by the running root mean square of the gradients, so the decay a weight feels
# depends on how large its gradients are, and smoothing changes those. The paper does not say how it applied
# $\lambda$. Whether this explains the gap is untested (a decay applied outside the adaptive step would test it),
# and so is data noising at $\lambda = 0$: it has no runs there.

# %% [markdown] tags=[]
# ## 4. Diagnostic: what holds VS-KN back at $\lambda = 10^{-4}$
#
# Seed 0 of the stored VS-KN command, with one setting changed per run (`diagnostics/kong-vs-kn-l2/`). These are
# one-seed runs cut after 5 to 30 epochs, evidence for a question and not verdicts: the five-epoch run trained on
# a CPU, the others on a GPU, and a change of machine alone moves a run by about 1%.

# %% tags=[]
DIAGNOSTIC = RESULTS / "diagnostics" / "kong-vs-kn-l2"
diagnostic = {"VS-KN as stored (γ 0.2, λ 1e-4)": seeds_of(own, "vs-kn")[0],
              "γ 0.1": read_metrics(DIAGNOSTIC / "gamma0.1"), "γ 0.05": read_metrics(DIAGNOSTIC / "gamma0.05"),
              "the KL term's extra L2 off": read_metrics(DIAGNOSTIC / "smoothing_l2-off"),
              "λ 0": read_metrics(DIAGNOSTIC / "weight_decay0"),
              "λ 0 and γ 0.1": read_metrics(DIAGNOSTIC / "weight_decay0-gamma0.1")}
at = {label: {h["epoch"]: h["valid_ppl"] for h in history} for label, history in diagnostic.items()}
show_markdown("| seed 0 | validation, epoch 5 | epoch 28 |\n|---|---|---|\n" + "\n".join(
    f"| {label} | {v[5]:.1f} | {f'{v[28]:.1f}' if 28 in v else '–'} |" for label, v in at.items()));
control_best = statistics.fmean(own["vanilla-tied"].values("best_valid_ppl"))
diagnostic_curves(diagnostic, control_best, "the control's best (mean of three seeds)", ylim=(95, 200),
                  title="VS-KN at 2 × 200, seed 0, one setting changed per run")
plt.show()

# %% jupyter={"source_hidden": true} tags=["remove-input"]
vs, no_l2, extra_off = at["VS-KN as stored (γ 0.2, λ 1e-4)"], at["λ 0"], at["the KL term's extra L2 off"]
assert (round(vs[5], 1), round(extra_off[5], 1), round(no_l2[5], 1)) == (182.0, 175.8, 126.3)
assert max(extra_off) == 5 and round(100 * (1 - no_l2[28] / control_best)) == 11
assert min(e for e, v in no_l2.items() if v < control_best) == 8
for label in ("γ 0.1", "γ 0.05"):
    assert vs[28] > at[label][28] > max(control_valid) + 5, label
assert (vs[5] - extra_off[5]) < (extra_off[5] - no_l2[5]) / 2

# %% [markdown] tags=[]
# - A weaker noise (γ 0.1 or 0.05) helps but stays behind the control at epoch 28.
# - Switching off the part of the KL term beyond plain weight decay lowers the epoch-5 validation from 182.0 to
#   175.8; setting $\lambda = 0$, which drops plain weight decay too, lowers it to 126.3. The model then passes the
#   control's best by epoch 8 and sits 11% below it at epoch 28.
# - So, at epoch 5 of these runs, the L2 penalty holds VS-KN back more than the noise level, and most of it
#   looks like plain weight decay, not the data-dependent extra. That rests on one point: the run without the
#   extra stopped at epoch 5, on another machine. This is what led to section 3's trial.
#
# **Which $\lambda$?** The paper does not say how its loss is reduced. The book averages it per token; a loss
# summed over the 35 steps of each row, as in Zaremba et al.'s code, makes the same $\lambda$ 35 times weaker
# against the data, so the paper's $10^{-4}$ may be the book's $10^{-4}/35$. The fair trial (section 10) takes
# $\lambda$ from $\{0, 10^{-4}/35, 10^{-3}/35, 10^{-4}\}$: both of the paper's values under the summed reading,
# and the smaller under ours; our reading of $10^{-3}$, ten times the value that already held VS-KN back, is
# left out.
#
# ## 5. The matched recipe (chapter 06's comparison)
#
# Every family of the book under one recipe at 2.70M parameters (Tran's SGD, single sentences from a zero
# state, no dropout). Its VS-KN is a one-layer LSTM of 228 units with $\lambda = 0$ and no dropout, so the KL term
# is off: the row tests the mixture draws and the prediction with the mean alone, one draw per sentence.

# %% tags=[]
matched = show_seeds("compare-ptb", "compare", results_dir, runs=["tied", "vs-kn-tied"])
ax = valid_by_seed({"tied LSTM without dropout: the control": seeds_of(matched, "tied"),
                    "tied LSTM + VS-KN": seeds_of(matched, "vs-kn-tied")}, ylim=(100, 150), first_epoch=3)
ax.set_title("The matched recipe on PTB (dot: each seed's best epoch)", fontsize=10)
plt.show()

# %% jupyter={"source_hidden": true} tags=["remove-input"]
row = decided["compare", "compare-ptb", "vs-kn-tied"]
assert max(row.seeds[0]) < min(row.seeds[1]) and round(100 * row.seeds[2], 1) == -4.6
assert 105 < statistics.fmean(row.seeds[0]) < 106.5 and 112 < statistics.fmean(row.seeds[1]) < 113.5
assert all(best(h)["epoch"] in (5, 6) and h[-1]["valid_ppl"] > best(h)["valid_ppl"] + 3 for h in seeds_of(matched, "tied"))
assert all(best(h)["epoch"] >= 10 and h[-1]["valid_ppl"] < best(h)["valid_ppl"] + 1
           for h in seeds_of(matched, "vs-kn-tied"))
for path in sorted((RESULTS / "compare-ptb" / "vs-kn-tied").glob("seed*/config.json")):
    m, t = (json.loads(path.read_text())[k] for k in ("model", "train"))
    assert (m["num_layers"], m["hidden_size"], t["weight_decay"], m["regularizer"]) == (1, 228, 0.0, "smooth"), path
    assert m["dropout"] == m["embed_dropout"] == m["recurrent_dropout"] == 0.0, path

# %% [markdown] tags=[]
# The paper's pair (VS-KN 70.6 against the tied LSTM's 74.0 at 2 × 512) and ours (105.6 against 112.9) score the
# same tokens, every word and `<eos>` of PTB's test set, at different sizes and with different regularization:
# −4.6% reported over a control with dropout, −6.5% here over one without dropout, which overfits after its fifth
# or sixth epoch while the smoothed model is still improving at its tenth. Other noise on the control's inputs
# might lower its validation perplexity as well, so this row says that smoothing regularizes, not that it beats
# the regularizers the paper compares it with. A dropout-tuned control and a γ grid for VS-KN are declared and
# wait for runs (section 10).
#
# **Overfitting across families.** Chapter 05 opens on the tied LSTM of this recipe. The other families overfit in
# the same way: validation at the last epoch (15) minus its best, per seed:

# %% tags=[]
families = {"LSTM": "lstm", "tied LSTM": "tied", "Attentive LM, single (head at 0.1x)": "attentive-single-headlr0.1",
            "key-value-predict, L = 5": "kvp-L5", "RM(+tM-g)": "rm-tm-g", "tied LSTM + VS-KN": "vs-kn-tied"}
curves = {run: stored_seeds("compare-ptb", run) for run in families.values()}
rises = {label: [h[-1]["valid_ppl"] - best(h)["valid_ppl"] for h in curves[run]] for label, run in families.items()}
show_markdown("| family | validation at epoch 15 minus its best, per seed |\n|---|---|\n" + "\n".join(
    f"| {label} | {numbers(rs, '+.1f')} |" for label, rs in rises.items()));
overfitting_panels(curves["rm-tm-g"], title="RM(+tM-g) under the matched recipe, three seeds")
plt.show()

# %% jupyter={"source_hidden": true} tags=["remove-input"]
assert all(len(h) == 15 for run in families.values() for h in curves[run])
assert all(r > 1.0 for label, rs in rises.items() if label != "tied LSTM + VS-KN" for r in rs), rises
assert all(r < 0.2 for r in rises["tied LSTM + VS-KN"])
one_rate = stored_seeds("compare-ptb", "attentive-single")  # the note below: flat, and less far trained
assert all(h[-1]["valid_ppl"] - best(h)["valid_ppl"] < 0.5 for h in one_rate)
assert span(h[-1]["train_ppl"] for h in one_rate) == (64, 66) and span(h[-1]["train_ppl"] for h in curves["lstm"]) == (56, 57)

# %% [markdown] tags=[]
# Every family without a regularizer climbs by more than a point after its best epoch; VS-KN on the tied LSTM does
# not climb. (The Attentive LM trained at one learning rate, the head's too, levels off instead, but it also
# trains less far: its training perplexity ends at 64 to 66, the LSTM's at 56 to 57; report r02, section 4.)
#
# ## 6. At the paper's size
#
# Kong et al.'s Table 2 claims at 2 × 512 and 2 × 1024 on PTB and WikiText-2 (the `full` manifest), one line
# per corpus and size: the paper's change for each pair, and the seeds stored so far.

# %% tags=[]
full_claims = [c for c in full.CLAIMS if c.chapter == "05"]
full_rows = stored_claims(full_claims, "full", results_dir)
groups, runs_of = {}, {}
for claim, full_row in zip(full_claims, full_rows):
    model, control, _ = paper_numbers(claim)
    groups.setdefault(claim.group, []).append(
        (f"{claim.model} vs {claim.control} {100 * (model / control - 1):+.1f}%", full_row.verdict))
    runs_of.setdefault(claim.group, set()).update((claim.model, claim.control))
stored_seeds_of = {g: sum(len(list((RESULTS / g / run).glob("seed*/result.json"))) for run in runs)
                   for g, runs in runs_of.items()}
show_markdown("| group | the paper's pairs (its change) | our verdicts | seeds stored | command |\n"
              "|---|---|---|---|---|\n"
              + "\n".join(f"| {g} | {'; '.join(p for p, _ in rs)} | {', '.join(sorted({v for _, v in rs}))} | "
                           f"{stored_seeds_of[g]} of {len(full.SEEDS) * len(runs_of[g])} | "
                           f"`python -m mlm reproduce full --only '{g}/*'` |"
                           for g, rs in groups.items()));

# %% jupyter={"source_hidden": true} tags=["remove-input"]
assert len(groups) == 4 and full_rows and all(r.verdict == "not run yet" for r in full_rows)

# %% [markdown] tags=[]
# ## 7. What the draws cost
#
# Kong et al. report about a day of training for element-wise smoothing against a couple of hours for the other
# models. The book draws only for the (sequence, word) pairs present in a batch and gathers every element at once.
# One benchmark at the paper's size (2 × 512, batch 64 × 35) on one CPU thread, shared with other jobs, so the
# ratios are rough:

# %% tags=[]
bench = {r["preset"].removeprefix("kong2019-ptb-512-"): r
         for r in json.loads((RESULTS / "bench-smoothing-cpu.json").read_text())}
show_markdown("| preset | training tokens / s | time against the vanilla tied LSTM |\n|---|---|---|\n" + "\n".join(
    f"| {name} | {r['train_tokens_per_second']:.0f} | "
    f"{bench['vanilla-tied']['train_tokens_per_second'] / r['train_tokens_per_second']:.2f}× |"
    for name, r in bench.items()));

# %% [markdown] tags=[]
# On a CPU, where the LSTM and the softmax dominate, the draws cost little. The benchmark does not test a GPU,
# where the softmax is cheap and the draws may weigh more.
#
# ## 8. Where this falls short
#
# - **No fair trial yet.** At $\lambda = 10^{-4}$ the control's dropout was tuned over five values and the
#   regularizers got $\gamma = 0.2$ only; at $\lambda = 0$ the control kept a dropout chosen for $10^{-4}$. The
#   `tuned` manifest gives both sides twelve settings each (γ or dropout × four values of $\lambda$), on a GPU.
#   It still leaves out two of the paper's searches: its RMSprop learning rates (0.002, 0.003, 0.004; the book
#   keeps 0.003) and $\gamma = 0.4$.
# - **VS-KN against data noising** reads *worse* here (section 2), in a trial where $\lambda$ may weigh on the two
#   unequally (section 3). The paper puts them 0.14% apart (70.7 against 70.6); the half-width of our interval
#   for this row is 34 times that, so three seeds a side can find a large difference between them, not the
#   paper's.
# - **Not the paper's dropout.** DropConnect of 0.2 on the recurrent weights stands in for the paper's recurrent
#   dropout (Semeniuta et al., 2016, dropout on the LSTM's cell update). The models share the control's chosen
#   dropout, 0.0, so the smoothed models ran without the dropout part of Eq. 6 (the paper: 0.5 at 512 units).
# - **The L2 weights are our derivation.** The printed Eq. 3 contradicts Eq. 2 (chapter 05 derives the column
#   sum we use). A tied model's two draws share one base matrix, and the book pays the KL term once.
# - **Mean against mode** rests on chapter 05's one reduced run, where the mode predicts slightly better.
# - **Sampled evaluation.** A test-time draw must score every word, so the book redraws every softmax row, where
#   training redraws only the target's; the paper does not say what its draws replaced.
# - **Width.** Every run is at 2 × 200 or smaller; the paper's 2 × 512 and 2 × 1024 wait for a GPU (section 6).

# %% jupyter={"source_hidden": true} tags=["remove-input"]
from mlm.configs import get_preset

vs_paper, dn_paper = (get_preset(f"kong2019-ptb-512-{m}", "full").paper["test"] for m in ("vs-kn", "dn-kn"))
apart = 1 - vs_paper / dn_paper
_, low, high = relative_change(*decided["cpu", "cpu-kong2019-ptb", "vs-kn", "dn-kn"].seeds[:2])
assert (vs_paper, dn_paper) == (70.6, 70.7) and round(100 * apart, 2) == 0.14 and round((high - low) / 2 / apart) == 34
from mlm.manifests import tuned

assert all(len(c.model) == len(c.control) == 12 for c in tuned.CLAIMS if c.chapter == "05")
for run in ("vs-kn", "vs-elementwise"):  # "not the paper's dropout"
    for path in sorted((RESULTS / "cpu-kong2019-ptb" / run).glob("seed*/config.json")):
        m = json.loads(path.read_text())["model"]
        assert (m["recurrent_dropout"], m["dropout"], m["embed_dropout"]) == (0.2, 0.0, 0.0), path
assert get_preset("kong2019-ptb-512-vs-kn", "full").model.embed_dropout == 0.5

# %% [markdown] tags=[]
# ## 9. Provenance
#
# Where and how every stored setting ran, and the command of its first seed.

# %% tags=[]
show_provenance([("cpu-kong2019-ptb-grid", "cpu"), ("cpu-kong2019-ptb", "cpu"), ("cpu-kong2019-ptb-lambda0", "cpu")],
                results_dir)
show_markdown("| group / run | where and how | command of the first seed |\n|---|---|---|\n" + "\n".join(
    f"| compare-ptb/{run} | {provenance_line(s)} | `{(s.folders[0] / 'command.txt').read_text().splitlines()[0]}` |"
    for run, s in matched.items() if (s.folders[0] / "command.txt").is_file()));

# %% [markdown] tags=[]
# ## 10. What waits

# %% tags=[]
show_waiting("05", results_dir);
