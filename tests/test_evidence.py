"""Claims rows from stored runs (mlm.evidence): missing runs said, verdicts decided, a tuned side chosen on
validation, the machine term measured and applied, untrained controls read as inconclusive."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mlm.claims import FEW_SEEDS, HOLDS, INCONCLUSIVE, NOT_RUN, SMALLER_GAIN, WORSE, PaperClaim
from mlm.evidence import (BASELINE_DATA, BASELINE_FILE, MachinePair, choose, group_baseline, machine_pairs,
                          machine_shift, machine_term, paper_evidence, shift_bound, stored_claims,
                          train_command, with_choices)
from mlm.stored import load_settings, load_stored_recall

ROOT = Path(__file__).resolve().parents[1]
TYING = PaperClaim("tying helps", "compare-ptb", "tied", "lstm", "press2017-small-tied", "zaremba2014-small",
                   tuning="neither side tuned")


def store(root, run, seed, test_ppl, best_epoch=5, valid=None, machine="Intel(R) Xeon(R) Processor", **extra):
    folder = root / "compare-ptb" / run / f"seed{seed}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "result.json").write_text(json.dumps({
        "test_ppl": test_ppl, "best_valid_ppl": valid if valid is not None else test_ppl + 4,
        "best_epoch": best_epoch, "epochs_run": 15, "cpu_model": machine, **extra}))
    return folder


def test_stored_claims_say_what_is_missing_and_decide_what_is_stored(tmp_path):
    """No runs: "not run yet" with the command; one seed: waiting; three a side: the verdict; a seed whose best
    epoch is its last while its learning rate was still high: said in the evidence; an unknown run: an error."""
    [row] = stored_claims([TYING], "compare", tmp_path)
    assert row.verdict == NOT_RUN and row.command in row.evidence
    assert row.command == "`python -m mlm reproduce compare --only 'compare-ptb/tied' --only 'compare-ptb/lstm'`"
    assert "seeds stored: tied 0/3, lstm 0/5" in row.evidence and "paper 112.4 vs 114.5 (-1.8%)" in row.evidence
    assert row.cost == "8 runs, about 5 h on one CPU thread"  # the manifest's estimates: 3 x 0.8 h + 5 x 0.5 h
    for seed in range(3):
        store(tmp_path, "lstm", seed, 118 + seed)
    store(tmp_path, "tied", 0, 112)
    [row] = stored_claims([TYING], "compare", tmp_path)
    assert row.verdict == FEW_SEEDS and "112.0 (1 seed) vs 119.0 ± 1.0 (3 seeds), -5.9%" in row.evidence
    store(tmp_path, "tied", 1, 113)
    store(tmp_path, "tied", 2, 114)
    [row] = stored_claims([TYING], "compare", tmp_path)
    assert row.verdict == HOLDS and "-5.0% (95% interval -6.9% to -3.1%)" in row.evidence and row.machine == 0
    assert row.tuning == "neither side tuned" and row.model_run == "tied" and row.control_run == "lstm"
    assert "still improving" not in row.evidence
    store(tmp_path, "tied", 2, 114, best_epoch=15, config={"train": {"lr": 1.0}})
    (tmp_path / "compare-ptb" / "tied" / "seed2" / "metrics.jsonl").write_text(
        json.dumps({"epoch": 15, "lr": 0.02, "valid_ppl": 118}) + "\n")
    assert "a seed was still improving at its last epoch" in stored_claims([TYING], "compare", tmp_path)[0].evidence
    (tmp_path / "compare-ptb" / "tied" / "seed2" / "metrics.jsonl").write_text(
        json.dumps({"epoch": 15, "lr": 0.002, "valid_ppl": 118}) + "\n")  # annealed to under 1%: it had stopped
    assert "still improving" not in stored_claims([TYING], "compare", tmp_path)[0].evidence
    with pytest.raises(ValueError, match="does not run in 'compare-ptb'"):
        stored_claims([PaperClaim("x", "compare-ptb", "nosuch", "lstm", "press2017-small-tied",
                                  "zaremba2014-small")], "compare", tmp_path)


def test_arms_on_different_machines_widen_the_interval(tmp_path):
    """The same seeds read as a gain on one machine are widened by the machine term when one arm ran on another
    kind of processor; the row names the machines."""
    for seed in range(3):
        store(tmp_path, "lstm", seed, 118 + 0.3 * seed)
        store(tmp_path, "tied", seed, 115.5 + 0.3 * seed)
    assert stored_claims([TYING], "compare", tmp_path)[0].verdict == HOLDS  # -2.1%, one machine
    store(tmp_path, "tied", 2, 116.1, machine="AMD EPYC 7B13")
    [row] = stored_claims([TYING], "compare", tmp_path)
    assert row.machine > 0 and row.verdict == INCONCLUSIVE and "(runs on EPYC, Xeon)" in row.evidence


def test_the_machine_shift_is_measured_from_reruns(tmp_path):
    """Reruns under results/machine-check/ pair with their stored twins; three pairs of two kinds give a bound
    (|mean| + t sd / sqrt(n)); fewer fall back to the largest single shift; one kind needs none."""
    shifts = (0.011, -0.004, 0.006)
    for seed, shift in enumerate(shifts):
        store(tmp_path, "lstm", seed, 100.0)
        store(tmp_path / "machine-check" / "epyc", "lstm", seed, 100.0 * (1 + shift), machine="AMD EPYC 7B13")
    pairs = machine_pairs(tmp_path)
    assert [p.run for p in pairs] == [f"compare-ptb/lstm/seed{s}" for s in range(3)]
    assert pairs[0].kinds == ("EPYC", "Xeon") and pairs[0].shift == pytest.approx(0.011)
    assert machine_shift(["Xeon", "Xeon"], tmp_path) == 0.0
    assert machine_shift(["Xeon", "EPYC"], tmp_path) == pytest.approx(shift_bound(shifts))
    # not measured: as wide as the widest measured bound (here wider than any single shift)
    assert machine_shift(["Xeon", "NVIDIA H200"], tmp_path) == pytest.approx(max(shift_bound(shifts), 0.011))
    assert shift_bound([0.01, 0.01, 0.01]) == pytest.approx(0.01)
    with pytest.raises(ValueError, match="three pairs"):
        shift_bound([0.01])
    assert isinstance(pairs[0], MachinePair)
    bound = shift_bound(shifts)
    # the term weighs the bound by how unevenly the two sides hold each kind
    assert machine_term(["Xeon"] * 3, ["Xeon"] * 5, tmp_path) == 0.0
    assert machine_term(["EPYC"] * 3, ["Xeon"] * 3, tmp_path) == pytest.approx(bound)  # each side on its own kind
    assert machine_term(["EPYC", "EPYC", "Xeon"], ["EPYC", "EPYC", "Xeon"], tmp_path) == 0.0  # the same shares
    assert machine_term(["EPYC", "EPYC", "Xeon"], ["EPYC", "EPYC", "Xeon", "Xeon", "Xeon"], tmp_path) == \
        pytest.approx((2 / 3 - 2 / 5) * bound)


def test_a_tuned_side_reads_its_best_candidate_on_validation(tmp_path):
    """Candidates are compared on the seeds they share (seed 0 of a grid): the best validation perplexity is
    the side's run, and the row says how it was chosen; until each candidate has a run the claim waits."""
    tuned = PaperClaim("tying helps", "compare-ptb", "tied", ("lstm", "lstm-lr0.5", "lstm-lr2.0"),
                       "press2017-small-tied", "zaremba2014-small", tuning="control: lr from 0.5, 1, 2")
    for seed in range(3):
        store(tmp_path, "tied", seed, 112 + 0.5 * seed)
        store(tmp_path, "lstm", seed, 118 + 0.5 * seed, valid=122 + seed)
        store(tmp_path, "lstm-lr0.5", seed, 117 + 0.5 * seed, valid=121 + seed)
    [row] = stored_claims([tuned], "compare", tmp_path)
    assert row.verdict == NOT_RUN  # lr 2 has no run; once it has, the choice's two more seeds are in the manifest
    assert row.cost.endswith(", then 2 more seeds of the tuned side's choice") and row.cost.startswith("5 runs, ")
    store(tmp_path, "lstm-lr2.0", 0, 130, valid=140)
    [row] = stored_claims([tuned], "compare", tmp_path)
    assert row.control_run == "lstm-lr0.5" and row.verdict in (HOLDS, SMALLER_GAIN)
    assert row.tuning == ("control: lr from 0.5, 1, 2, picked lstm-lr0.5 (validation over seed 0: lstm 122.0, "
                          "lstm-lr0.5 121.0, lstm-lr2.0 140.0)")
    settings = load_settings([s for s in __import__("mlm.manifests.compare", fromlist=["RUNS"]).RUNS
                              if s.base in ("lstm", "lstm-lr0.5", "lstm-lr2.0")], tmp_path)
    assert choose(settings, "lstm")[0].run == "lstm"


def test_a_paper_pair_without_a_control_is_read_for_its_direction_only(tmp_path):
    """Salton et al.'s pair sets their model beside another paper's LSTM: a 3% gain against its 15% holds (the
    direction), and the row says why; a claim whose paper pair is controlled is weighed against its size."""
    for run, values in (("lstm", (118.0, 118.5, 117.5)), ("attentive-single-headlr0.1", (114.0, 114.5, 113.5)),
                        ("tied", (114.0, 114.5, 113.5))):
        for seed, value in enumerate(values):
            store(tmp_path, run, seed, value)
    salton = PaperClaim("attention helps", "compare-ptb", "attentive-single-headlr0.1", "lstm",
                        "salton2017-ptb-single", "zaremba2014-medium")
    [row] = stored_claims([salton], "compare", tmp_path)
    assert row.verdict == HOLDS and row.seeds[2] is None, row
    assert "paper 70.1 vs 82.7 (-15.2%; 70.1 is about 86 per predicted token" in row.evidence
    assert "its LSTM is Zaremba et al.'s, stream protocol: direction only" in row.evidence
    sized = PaperClaim("a 28% gain", "compare-ptb", "tied", "lstm", "zaremba2014-medium", "zaremba2014-small")
    assert stored_claims([sized], "compare", tmp_path)[0].verdict == SMALLER_GAIN
    level = PaperClaim("level", "compare-ptb", "tied", "lstm", "salton2017-ptb-single", "salton2017-ptb-combined")
    with pytest.raises(ValueError, match="reports none"):  # an uncontrolled pair must report a gain
        stored_claims([level], "compare", tmp_path)


def test_a_claim_whose_control_does_not_beat_the_bigram_is_inconclusive(tmp_path):
    """With the group's count baseline stored, a control at or above the interpolated bigram makes the claim
    inconclusive whatever the seeds say, with the reason; a model above it keeps its verdict, with a note."""
    from mlm.manifests.compare import RUNS

    for run, values in (("lstm", (150, 151, 152)), ("tied", (160, 161, 162))):
        for seed, value in enumerate(values):
            store(tmp_path, run, seed, value, valid=value)
    assert stored_claims([TYING], "compare", tmp_path)[0].verdict == WORSE  # no baseline stored
    data = {k: getattr(RUNS[0].config().data, k) for k in BASELINE_DATA}
    path = tmp_path / "compare-ptb" / BASELINE_FILE
    path.write_text(json.dumps({"bigram_test": 151.0, "data": data}))
    [row] = stored_claims([TYING], "compare", tmp_path)
    assert row.verdict == INCONCLUSIVE and "does not beat the interpolated bigram of the same data (151.0)" in row.reason
    path.write_text(json.dumps({"bigram_test": 155.0, "data": data}))
    [row] = stored_claims([TYING], "compare", tmp_path)
    assert row.verdict == WORSE and not row.reason and "the model does not beat the interpolated bigram" in row.evidence
    path.write_text(json.dumps({"bigram_test": 151.0, "data": {**data, "vocab_size": 5000}}))  # other data: ignored
    assert stored_claims([TYING], "compare", tmp_path)[0].verdict == WORSE
    path.write_text(json.dumps({"bigram_test": 151.0, "data": data}))
    untested = PaperClaim("the head helps", "compare-ptb", "kvp-L5", "lstm", "daniluk2017-wt2-kvp-L5",
                          "daniluk2017-wt2-lstm")
    assert stored_claims([untested], "compare", tmp_path)[0].verdict == NOT_RUN  # 3 of the control's 5 seeds
    for seed in (3, 4):
        store(tmp_path, "lstm", seed, 152, valid=152)
    [row] = stored_claims([untested], "compare", tmp_path)  # no run of the model, the whole control: it decides
    assert row.verdict == INCONCLUSIVE and "no run of kvp-L5 can test the claim" in row.evidence and row.reason


def test_groups_declared_untestable_are_inconclusive_in_the_stored_results():
    """The cpu manifest trains fewer than three seeds of a head only where its stored control already makes
    every claim of the group inconclusive (a control that does not beat the bigram)."""
    from mlm.manifests import cpu

    assert cpu.UNTESTABLE_GROUPS
    for group in cpu.UNTESTABLE_GROUPS:
        claims = [c for c in cpu.CLAIMS if c.group == group]
        rows = stored_claims(claims, "cpu", ROOT / "results")
        assert claims and all(row.verdict == INCONCLUSIVE and row.reason for row in rows), group


def test_stored_count_baselines_are_what_the_data_gives(shared_data, monkeypatch):
    """results/GROUP/baseline.json, which decides whether a claim is testable, is recomputed from the corpus."""
    from mlm.baselines import count_baseline
    from mlm.reproduce import load_manifest

    monkeypatch.setenv("MLM_DATA_DIR", str(shared_data))
    results = ROOT / "results"
    specs = [s for s in load_manifest("cpu") if s.group == "cpu-tran2016-ptb"]
    stored = group_baseline(specs, results)
    assert stored is not None and (results / "cpu-tran2016-ptb" / BASELINE_FILE).is_file()
    fresh = count_baseline(specs[0].config())
    assert stored["bigram_test"] == pytest.approx(fresh["bigram_test"], rel=1e-9)
    assert stored["unigram_test"] == pytest.approx(fresh["unigram_test"], rel=1e-9)


def test_load_stored_recall_reads_the_manifest_seeds_that_were_scored(tmp_path):
    def put(run, seed, accuracy, critical=True):
        folder = tmp_path / "recall" / run / f"seed{seed}"
        folder.mkdir(parents=True)
        (folder / "result.json").write_text(json.dumps({"test_ppl": 5.0 + seed, "parameters": 10}))
        (folder / "metrics.jsonl").write_text("".join(json.dumps({"epoch": e, "valid_ppl": 9.0 - e}) + "\n"
                                                      for e in (1, 2)))
        if critical:
            by_d = {"2": {"accuracy": accuracy, "loss": 0.5, "count": 4}, "30": {"accuracy": 0.0, "loss": 3.0, "count": 4}}
            (folder / "critical.json").write_text(json.dumps({
                "by_distance": by_d, "totals": {"accuracy": accuracy / 2, "loss": 1.75, "count": 8},
                "chance": 0.1, "source_attention": None}))

    put("rm", 0, 1.0)
    put("rm", 1, 0.5, critical=False)  # trained but not scored: not read
    put("rm", 2, 0.75)
    put("rm", 7, 0.25)  # a seed the manifest does not list: not read
    stored = load_stored_recall({"RM": "rm"}, tmp_path)["RM"]
    assert stored.preset == "recall-rm" and stored.seeds == [0, 2]
    assert stored.within(0, 5) == [1.0, 0.75] and stored.within(21) == [0.0, 0.0]
    assert [r["test_ppl"] for r in stored.results] == [5.0, 7.0]
    assert stored.extras == [{"chance": 0.1, "source_attention": None}] * 2
    assert [e["valid_ppl"] for e in stored.metrics(1)] == [8.0, 7.0]
    with pytest.raises(ValueError, match="no run 'nosuch'"):
        load_stored_recall({"x": "nosuch"}, tmp_path)
    with pytest.raises(FileNotFoundError, match="mlm reproduce recall"):
        load_stored_recall({"RM": "rm", "tied": "tied-40ep"}, tmp_path)


def test_paper_evidence_gives_every_claim_of_a_paper(tmp_path):
    """With no stored runs every claim of a chapter's paper waits (its own protocol's, the matched recipe's and
    the tuned trials'); with the repository's results the decided ones carry a verdict."""
    from mlm.manifests import compare, cpu, tuned

    rows = paper_evidence("01", tmp_path)
    expected = [c for c in cpu.CLAIMS + compare.CLAIMS + tuned.CLAIMS if c.chapter == "01"]
    assert [c.text for _, c, _ in rows] == [c.text for c in expected] and len(rows) >= 3
    assert all(row.verdict == NOT_RUN for _, _, row in rows)
    stored = paper_evidence("04", ROOT / "results")
    assert any(row.decided for _, _, row in stored) and {m for m, _, _ in stored} <= {"cpu", "compare", "tuned"}


def test_the_compact_verdict_table_prints_both_intervals_and_one_seed_rows():
    """Report r03's table: a widened row shows the seeds' interval, then the widened one the label reads; a side
    with one seed shows the change alone; every note is numbered once."""
    from mlm.claims import relative_change
    from mlm.report import compact_verdicts, verdict_rows

    results = Path(__file__).resolve().parent.parent / "results"
    rows = [r for r in verdict_rows("03", results) if r[2].decided and r[2].seeds]
    table = compact_verdicts(rows)
    lines = table.splitlines()
    widened = [(m, r) for m, c, r in rows if r.machine and min(map(len, r.seeds[:2])) >= 2]
    single = [(m, r) for m, c, r in rows if min(map(len, r.seeds[:2])) == 1]
    assert widened and single, "the stored results no longer hold both kinds of row"
    for _, row in widened:
        change, low, high = relative_change(*row.seeds[:2])
        cell = f"{change:+.1%} [{low:+.1%}, {high:+.1%}]; widened [{low - row.machine:+.1%}, {high + row.machine:+.1%}]"
        assert any(cell in line for line in lines), cell
    assert sum("(one seed: no interval)" in line for line in lines) == len(single)
    notes = [line for line in lines if line[:1].isdigit()]
    assert len(notes) == len(set(n.split(". ", 1)[1] for n in notes)), notes  # each note once
    other = [line for line in lines if "vs lstm-h279" in line]
    assert len(other) == 2 and all("(-11.0% against a narrower LSTM)" in line or "(-10.9% against a narrower LSTM)"
                                   in line for line in other), other  # the paper's change, named as another contrast


def test_a_paper_pair_of_another_contrast_sets_no_size_for_the_verdict():
    """The rows whose paper measured another contrast (the tied LSTM at equal width, the heads against a
    narrower LSTM) carry no paper's change: the rule reads their interval alone and figures draw no diamond."""
    from mlm.claims import HOLDS, verdict
    from mlm.evidence import paper_evidence
    from mlm.manifests import compare

    results = Path(__file__).resolve().parent.parent / "results"
    rows = {c.text: (c, r) for ch in ("01", "03", "04") for m, c, r in paper_evidence(ch, results) if m == "compare"}
    other = {t for t, (c, _) in rows.items() if c.contrast}
    assert len(other) == len(compare.OTHER_CONTRAST) == 5
    assert all(rows[t][1].seeds[2] is None and "another contrast, no yardstick" in rows[t][1].evidence for t in other)
    assert all(rows[t][1].seeds[2] is not None for t in rows if t not in other and rows[t][1].seeds)
    # a gain twice the paper's would be flagged against it; with no yardstick it reads *holds*
    assert verdict([95.0, 95.2, 94.8], [100.0, 100.2, 99.8], paper=-0.018) != HOLDS
    assert verdict([95.0, 95.2, 94.8], [100.0, 100.2, 99.8], paper=None) == HOLDS


def test_a_row_that_tunes_both_sides_replaces_the_one_it_supersedes_once_decided(tmp_path):
    """The single score at 0.1x against the LSTM at rate 1 stands until the row that also tunes the LSTM's rate
    has its runs; then the chapters show that row alone (:func:`current_rows`), and the reports keep both."""
    from mlm.evidence import current_rows, decided_rows, supersedes
    from mlm.manifests import compare

    claims = {compare.ROW_LABELS[c.text]: c for c in compare.CLAIMS}
    fair, handicapped = claims["Attentive, single, both tuned"], claims["Attentive, single, head lr 0.1x"]
    assert supersedes(fair, handicapped) and not supersedes(handicapped, fair) and not supersedes(fair, fair)
    assert not supersedes(claims["key-value-predict, L = 5"], claims["4-gram RNN"])
    for seed in range(3):
        store(tmp_path, "lstm", seed, 118.0 + seed / 10, valid=120.0)
        store(tmp_path, "attentive-single", seed, 120.0, valid=124.0)
        store(tmp_path, "attentive-single-headlr0.1", seed, 114.0 + seed / 10, valid=118.0)
    assert set(current_rows("compare", tmp_path)) == {handicapped.text}
    for seed in range(3):
        store(tmp_path, "lstm-lr0.5", seed, 125.0, valid=127.0)
        store(tmp_path, "lstm-lr2.0", seed, 117.0 + seed / 10, valid=119.0)
    assert set(decided_rows("compare", tmp_path)) == {handicapped.text, fair.text}
    assert set(current_rows("compare", tmp_path)) == {fair.text}
    assert "picked lstm-lr2.0 (validation over seeds 0, 1, 2:" in current_rows("compare", tmp_path)[fair.text].tuning


def test_a_side_s_choice_joins_the_clause_that_says_what_was_searched():
    """Each side's pick follows its own clause of the tuning text; a side the text does not name gets a clause."""
    assert with_choices("control: lr from 0.5, 1, 2; model: gamma from 0.1, 0.2",
                        {"model": "picked g0.2 (seed 0: g0.1 99.0, g0.2 98.0)", "control": ""}) == \
        "control: lr from 0.5, 1, 2; model: gamma from 0.1, 0.2, picked g0.2 (seed 0: g0.1 99.0, g0.2 98.0)"
    assert with_choices("both sides: lambda from 0, 1e-4", {"model": "picked a (...)", "control": "picked b (...)"}) \
        == "both sides: lambda from 0, 1e-4; model: picked a (...); control: picked b (...)"
    assert with_choices("", {"model": "", "control": ""}) == ""


def test_the_command_for_a_claim_trains_its_missing_runs_and_no_others():
    """A family of numbered runs, all missing, is one pattern; a family with a stored member, or a lone
    numbered run, is named run by run; no pattern is repeated; past four patterns, the whole group."""
    runs = ["lstm", "lstm-h279", "tied", "tied-dropout0.1", "tied-dropout0.2", "kv-L5", "kvp-L5"]
    assert train_command("compare", "g", ["tied-dropout0.1", "tied-dropout0.2", "lstm-h279"], runs) == \
        "`python -m mlm reproduce compare --only 'g/tied-dropout*' --only 'g/lstm-h279'`"
    assert train_command("compare", "g", ["tied-dropout0.1"], runs) == \
        "`python -m mlm reproduce compare --only 'g/tied-dropout0.1'`"
    assert train_command("compare", "g", ["kv-L5", "kvp-L5"], runs) == \
        "`python -m mlm reproduce compare --only 'g/kv-L5' --only 'g/kvp-L5'`"  # kv-L* would not match kvp-L5
    assert train_command("compare", "g", ["lstm", "tied", "kv-L5", "kvp-L5", "lstm-h279"], runs) == \
        "`python -m mlm reproduce compare --only 'g/*'`"
    assert train_command("compare", "g", [], runs) == "`python -m mlm reproduce compare --only 'g/*'`"
