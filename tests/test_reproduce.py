"""``python -m mlm reproduce`` (here, and through submitit's local executor as on Slurm) and ``python -m mlm
table`` on tiny synthetic runs, and a build check of every run of the shipped manifests (config valid, model
constructs, one training batch) without training."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import statistics
from pathlib import Path

import pytest
import torch
from conftest import fake_lock

from mlm import launch
from mlm import reproduce as rp
from mlm.cli import build_parser
from mlm.configs import get_preset
from mlm.table import collect_rows, format_markdown, plot_rows
from mlm.training import build_batches, build_model, build_optimizer, load_data, train, training_forward

pytestmark = pytest.mark.usefixtures("no_data_env")

TINY = ["data.max_train_tokens=3000", "model.embed_size=16", "model.hidden_size=16", "train.epochs=3"]


def tiny_manifest(tmp_path) -> tuple[str, list[rp.RunSpec]]:
    """A JSON manifest: one single-seed run and one setting with two seeds."""
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps({"runs": [
        {"group": "g", "name": "plain", "preset": "synthetic-tiny", "set": TINY},
        {"group": "g", "name": "wide", "preset": "synthetic-tiny", "set": [*TINY, "model.hidden_size=24"],
         "seeds": [0, 1]},
    ]}))
    return str(path), rp.load_manifest(path)


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """The tiny manifest reproduced once, two runs at a time: (manifest, specs, layout, states)."""
    root = tmp_path_factory.mktemp("repro")
    manifest, specs = tiny_manifest(root)
    layout = rp.Layout(root)
    states = rp.reproduce(specs, manifest, layout, jobs=2, cores=2, echo=lambda s: None)
    return manifest, specs, layout, states


def test_manifest_expands_seeds(tmp_path):
    _, specs = tiny_manifest(tmp_path)
    assert [s.id for s in specs] == ["g/plain", "g/wide/seed0", "g/wide/seed1"]
    assert specs[2].config().train.seed == 1 and specs[2].base == "wide"
    assert [s.id for s in rp.select(specs, ["g/wide"])] == ["g/wide/seed0", "g/wide/seed1"]
    assert [s.id for s in rp.select(specs, ["*seed1"])] == ["g/wide/seed1"]


def test_manifest_rejects_duplicates_and_unknown_post_steps(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"runs": [{"group": "g", "name": "a", "preset": "synthetic-tiny"}] * 2}))
    with pytest.raises(ValueError, match="used twice"):
        rp.load_manifest(path)
    path.write_text(json.dumps({"runs": [{"group": "g", "name": "a", "preset": "synthetic-tiny", "post": ["x"]}]}))
    with pytest.raises(ValueError, match="unknown post-steps"):
        rp.load_manifest(path)


def test_a_run_of_the_same_configuration_is_copied_not_trained(tmp_path):
    """``same_as``: the run waits for its source, is then stored as a copy (with a command.txt that says so)
    without training, and costs nothing in the listing; a source of another configuration is refused."""
    plain = {"group": "g", "name": "plain", "preset": "synthetic-tiny", "set": TINY}
    path = tmp_path / "same.json"
    path.write_text(json.dumps({"runs": [plain, {"group": "h", "name": "control", "preset": "synthetic-tiny",
                                                 "set": TINY, "seeds": [0], "same_as": "g/plain", "hours": 1}]}))
    specs = rp.load_manifest(path)
    layout = rp.Layout(tmp_path)
    copy = rp.select(specs, ["h/*"])
    messages = []  # its source not stored yet: it waits (a dry run prints no command for it)
    assert rp.reproduce(copy, str(path), layout, dry_run=True, echo=messages.append) == {"h/control/seed0": "missing"}
    assert messages == []
    assert "copy" in rp.format_list(copy, layout) and "estimated 0 CPU hours" in rp.format_list(copy, layout)
    source = tmp_path / "results" / "g" / "plain"  # a stored run (files as store_result writes them)
    source.mkdir(parents=True)
    for name, text in (("command.txt", "python -m mlm train synthetic-tiny\n"), ("config.json", "{}"),
                       ("metrics.jsonl", "{}\n"), ("result.json", '{"test_ppl": 9.5}')):
        (source / name).write_text(text)
    messages = []
    states = rp.reproduce(copy, str(path), layout, jobs=1, cores=1, echo=messages.append)
    assert states == {"h/control/seed0": "done"}
    assert messages[0] == "[copy] g/plain -> h/control/seed0 (the same configuration)"
    out = layout.result_dir(copy[0])
    assert json.loads((out / "result.json").read_text()) == {"test_ppl": 9.5}
    assert (out / "command.txt").read_text().startswith("(the run stored as g/plain, copied")
    assert not layout.run_dir(copy[0]).exists()  # nothing trained
    both = rp.Layout(tmp_path / "both")  # the source trained by the same call: copied once it is stored
    assert rp.reproduce(specs, str(path), both, jobs=2, cores=2, echo=lambda m: None) == dict.fromkeys(
        ["g/plain", "h/control/seed0"], "done")
    copied, trained = (both.result_dir(s) / "result.json" for s in (specs[1], specs[0]))
    assert copied.read_text() == trained.read_text()
    assert not both.run_dir(specs[1]).exists()
    stale = rp.Layout(tmp_path / "stale")  # a copy with a run folder of its own (partial) is copied over
    shutil.copytree(both.root / "results" / "g", stale.root / "results" / "g")
    stale.run_dir(specs[1]).mkdir(parents=True)
    (stale.run_dir(specs[1]) / "checkpoint.pt").write_bytes(b"")
    assert rp.run_state(specs[1], stale, {}) == "partial"
    assert rp.reproduce(copy, str(path), stale, jobs=1, cores=1, echo=lambda m: None) == {"h/control/seed0": "done"}
    path.write_text(json.dumps({"runs": [plain, {"group": "h", "name": "control", "preset": "synthetic-tiny",
                                                 "set": [*TINY, "model.hidden_size=24"], "same_as": "g/plain"}]}))
    with pytest.raises(ValueError, match="not the same configuration"):
        rp.load_manifest(path)
    path.write_text(json.dumps({"runs": [{**plain, "same_as": "g/other"}]}))
    with pytest.raises(ValueError, match="must be a run of the manifest"):
        rp.load_manifest(path)


def test_reproduce_trains_and_stores_results(finished):
    _, specs, layout, states = finished
    assert states == {s.id: "done" for s in specs}
    for spec in specs:
        out = layout.result_dir(spec)
        assert sorted(p.name for p in out.iterdir()) == ["command.txt", "config.json", "metrics.jsonl", "result.json"]
        assert (layout.run_dir(spec) / "checkpoint.pt").is_file()  # checkpoints stay in runs/
        result = json.loads((out / "result.json").read_text())
        assert result["finished"] and result["epochs_run"] == 3
        assert result["threads"] == 1 and result["updates"] > 0 and result["hostname"] and "cpu_model" in result
        command = (out / "command.txt").read_text()
        assert command.startswith("OMP_NUM_THREADS=1 python -m mlm train synthetic-tiny") and "runs/g/" in command
    assert not list(layout.root.joinpath("results").rglob("*.pt"))
    seeds = [json.loads((layout.result_dir(s) / "config.json").read_text())["train"]["seed"] for s in specs[1:]]
    assert seeds == [0, 1]


def test_load_settings_reads_each_seed_once_its_files_exist(finished):
    from mlm.stored import load_settings

    _, specs, layout, _ = finished
    results = layout.result_dir(specs[0]).parent.parent
    settings = load_settings(specs, results)
    assert [(k, v.expected, v.seeds) for k, v in settings.items()] == [("plain", 1, [0]), ("wide", 2, [0, 1])]
    assert settings["wide"].values("test_ppl") == [
        json.loads((layout.result_dir(s) / "result.json").read_text())["test_ppl"] for s in specs[1:]]
    assert all(not v.seeds for v in load_settings(specs, results, files=["history.json"]).values())
    assert [epoch["epoch"] for epoch in settings["wide"].metrics(1)] == [
        json.loads(line)["epoch"] for line in (layout.result_dir(specs[2]) / "metrics.jsonl").read_text().splitlines()]
    optional = load_settings(specs, results, optional=["history.json"])["wide"]
    assert optional.seeds == [0, 1] and optional.files == {"history.json": [None, None]}
    other = [dataclasses.replace(s, group="h") for s in specs]
    with pytest.raises(ValueError, match="one group at a time"):
        load_settings(specs + other, results)


def test_runs_are_grouped_by_the_kind_of_machine_that_ran_them():
    from mlm.stored import StoredSetting
    from mlm.utils import machine_kind

    xeon = {"cpu_model": "Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz", "gpu": None, "test_ppl": 118.3}
    epyc = {"cpu_model": "AMD EPYC 7R13 Processor", "gpu": None, "test_ppl": 117.3}
    h200 = {"cpu_model": "AMD EPYC 9654", "gpu": "NVIDIA H200", "test_ppl": 117.9}
    other = {"cpu_model": "Apple M2", "test_ppl": 120.0}
    assert [machine_kind(r) for r in (xeon, epyc, h200, other, {})] == ["Xeon", "EPYC", "NVIDIA H200", "Apple M2", ""]
    setting = StoredSetting("g", "lstm", results=[epyc, xeon, dict(epyc, test_ppl=118.6), h200])
    assert setting.by_machine() == {"EPYC": [117.3, 118.6], "Xeon": [118.3], "NVIDIA H200": [117.9]}
    assert list(setting.by_machine()) == ["EPYC", "Xeon", "NVIDIA H200"]  # in the order the seeds name them


def test_finished_runs_are_skipped(finished, monkeypatch):
    manifest, specs, layout, _ = finished
    monkeypatch.setattr(rp, "run_logged", lambda *a, **k: pytest.fail("a finished run was started again"))
    lines = []
    assert rp.reproduce(specs, manifest, layout, echo=lines.append) == {s.id: "done" for s in specs}
    assert lines[0].startswith("0 of 3 runs to train")


def test_list_states(tmp_path):
    manifest, specs = tiny_manifest(tmp_path)
    layout = rp.Layout(tmp_path)
    plain, seed0, seed1 = specs
    assert {rp.run_state(s, layout) for s in specs} == {"missing"}
    # partial: a checkpoint of an interrupted run; running: a live pid holds the lock; a dead pid does not
    layout.run_dir(plain).mkdir(parents=True)
    (layout.run_dir(plain) / "checkpoint.pt").write_bytes(b"")
    fake_lock(layout.run_dir(seed0), os.getpid())
    fake_lock(layout.run_dir(seed1), 2**22 + 12345)  # beyond Linux's default pid_max: not alive
    assert [rp.run_state(s, layout) for s in specs] == ["partial", "running", "missing"]
    listing = rp.format_list(specs, layout)
    assert listing.splitlines()[-1].startswith("0 done, 1 running, 0 submitted, 1 partial, 1 missing")
    assert "[" not in listing  # no metrics yet: no epochs to show
    # a running or partial run shows its epochs so far against its config's limit
    for spec, epochs in ((plain, 2), (seed0, 1)):
        (layout.run_dir(spec) / "metrics.jsonl").write_text('{"epoch": 1}\n' * epochs)
    limit = plain.config().train.epochs
    lines = rp.format_list(specs, layout).splitlines()
    assert lines[0].startswith("partial") and lines[0].endswith(f"  [2 of {limit} epochs]")
    assert lines[1].startswith("running") and lines[1].endswith(f"  [1 of {seed0.config().train.epochs} epochs]")
    assert "[" not in lines[2]
    (layout.run_dir(plain) / "result.json").write_text("{}")  # finished, waiting for its copy or post-steps
    assert "[" not in rp.format_list(specs, layout).splitlines()[0]


def test_list_ends_with_each_claims_verdict(tmp_path, capsys):
    """``reproduce compare --list`` shows, after the runs, every claim of the manifest with its verdict now."""
    from mlm.claims import NOT_RUN
    from mlm.manifests import compare

    (tmp_path / "results").mkdir()
    for seed in range(3):
        for run, value in (("lstm", 118 + 0.3 * seed), ("tied", 115.5 + 0.3 * seed)):
            folder = tmp_path / "results" / "compare-ptb" / run / f"seed{seed}"
            folder.mkdir(parents=True)
            (folder / "result.json").write_text(json.dumps({"test_ppl": value, "best_valid_ppl": value,
                                                            "best_epoch": 5, "epochs_run": 15}))
    args = build_parser().parse_args(["reproduce", "compare", "--list", "--root", str(tmp_path)])
    assert args.func(args) == 0
    out = capsys.readouterr().out.splitlines()
    start = out.index(next(line for line in out if line.startswith("claims of compare")))
    claims = out[start + 1:]
    assert len(claims) == len(compare.CLAIMS) and "(1 of" in out[start]
    assert any(line.split()[0] == "holds" and "compare-ptb: tied vs lstm" in line for line in claims)
    assert sum(NOT_RUN in line for line in claims) == len(compare.CLAIMS) - 1


def test_a_run_another_process_holds_is_not_started_twice(tmp_path, monkeypatch):
    manifest, specs = tiny_manifest(tmp_path)
    layout, spec = rp.Layout(tmp_path), specs[0]
    fake_lock(layout.run_dir(spec), os.getppid())  # a live process (this one's parent) trains it
    monkeypatch.setattr(rp, "run_logged", lambda *a, **k: pytest.fail("a run held elsewhere was started"))
    lines = []
    assert rp.execute(spec, manifest, layout, 1, None, echo=lines.append) == "running"
    assert lines == [f"[skip] {spec.id}: process {os.getppid()} is training it"]
    assert launch.running_pid(layout.run_dir(spec)) == os.getppid()  # its lock is left alone


def test_interrupted_run_resumes(tmp_path):
    manifest, specs = tiny_manifest(tmp_path)
    layout, spec = rp.Layout(tmp_path), specs[0]
    train(spec.config(), layout.run_dir(spec), progress=False, max_epochs=1)  # stopped after epoch 1
    assert rp.run_state(spec, layout) == "partial"
    assert rp.reproduce([spec], manifest, layout, echo=lambda s: None) == {spec.id: "done"}
    metrics = (layout.result_dir(spec) / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["epoch"] for line in metrics] == [1, 2, 3]  # epoch 1 was not trained again


@pytest.mark.parametrize("cores", [1, 2, 3, 8, 16])
@pytest.mark.parametrize("jobs", [1, 2, 3, 5, 16, 40])
def test_threads_never_exceed_cores(jobs, cores):
    n, threads = launch.plan_jobs(jobs, cores, "cpu")
    assert n * threads <= cores and n >= 1 and threads >= 1
    assert n == min(jobs, cores) and threads == cores // n
    n, threads = launch.plan_jobs(jobs, cores, "cuda")
    assert n == jobs and threads >= 1  # several runs share one GPU


def test_dry_run_prints_the_command_that_builds_the_config(tmp_path, capsys):
    manifest, specs = tiny_manifest(tmp_path)
    lines = []
    rp.reproduce(specs, manifest, rp.Layout(tmp_path), jobs=2, cores=4, dry_run=True, echo=lines.append)
    assert len(lines) == 3 and not (tmp_path / "runs").exists()
    env, *argv = lines[2].split()
    assert env == "OMP_NUM_THREADS=2" and argv[:3] == ["python", "-m", "mlm"]
    args = build_parser().parse_args(argv[3:])
    assert get_preset(args.preset, args.size, args.overrides) == specs[2].config(["train.threads=2"])


def write_result(folder, valid, test, paper=None):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "result.json").write_text(json.dumps({"best_valid_ppl": valid, "test_ppl": test, "name": "p",
                                                     "paper": paper or {}}))


def test_table_marks_missing_runs_and_averages_seeds(tmp_path):
    _, specs = tiny_manifest(tmp_path)
    results = tmp_path / "results"
    write_result(results / "g" / "wide" / "seed0", 10.0, 20.0)
    write_result(results / "g" / "wide" / "seed1", 12.0, 23.0)
    write_result(results / "old" / "run", 5.0, 6.0, {"test": 7.5})  # a stored result no manifest names
    (results / "old" / "run" / "completion.json").write_text(json.dumps({"accuracy": 0.25}))
    rows = collect_rows(specs, results)
    assert [(r.group, r.run, r.status, r.n) for r in rows] == [
        ("g", "plain", "missing", 0), ("g", "wide", "done", 2), ("old", "run", "done", 1)]
    table = format_markdown(rows)
    assert f"| 21.5 ± {statistics.stdev([20.0, 23.0]):.1f} | 2 | done |" in table
    assert "| missing | missing | 0 | missing |" in table
    assert "| 7.5 | 5.0 | 6.0 (MSR accuracy 25.0%) | 1 | done |" in table
    assert plot_rows(rows, tmp_path / "t.png").stat().st_size > 0
    (results / "g" / "wide" / "seed1" / "result.json").unlink()
    assert collect_rows(specs, results)[1].status == "1 of 2 seeds"


def _build_once(spec: rp.RunSpec) -> None:
    """Build ``spec``'s model at its configured width on the synthetic corpus; one short training step."""
    small_data = ["data.corpus=synthetic", "data.vocab_size=none", "data.max_train_tokens=none",
                  "data.max_eval_tokens=none", "data.max_document_tokens=none", "data.batch_size=2", "data.bptt=5",
                  "data.max_len=5", "data.pad_to=none", "train.device=cpu"]
    cfg = spec.config(small_data)
    corpus = load_data(cfg)
    model = build_model(cfg, len(corpus.vocab), corpus.vocab.pad_id, corpus)
    optimizer = build_optimizer(cfg, model)
    batch = next(iter(build_batches(cfg, corpus, "train")))
    model.train()
    _, nll, penalty = training_forward(model, batch)
    loss = nll / max(batch.num_tokens, 1) + (penalty if penalty is not None else 0.0)
    loss.backward()
    optimizer.step()
    assert torch.isfinite(loss)
    # the model is built at the manifest's width, not the synthetic preset's
    assert model.num_parameters() > 4 * cfg.model.hidden_size ** 2


@pytest.mark.parametrize("manifest", ["cpu", "full", "stored", "recall", "compare"])
def test_every_manifest_run_builds(manifest):
    specs = rp.load_manifest(manifest)
    assert specs and all(s.id.count("/") >= 1 for s in specs)
    if manifest == "cpu":  # every CPU run carries its measured estimate, at most about 6 h on one thread (Kong's)
        assert all(s.hours is not None and s.hours < 7 and s.tokens for s in specs)
    seen = set()
    for spec in specs:
        key = (spec.preset, spec.size, spec.overrides)
        if key not in seen:  # seeds of one setting build the same model
            seen.add(key)
            _build_once(spec)


def test_compare_manifest_matches_the_parameter_budget():
    """Chapter 06's families are within 10% of the 1-layer LSTM's parameters with PTB's 10,000 words."""
    from mlm.manifests.compare import BUDGET, OFF_BUDGET, RUNS

    for spec in RUNS:
        if spec.id.endswith("seed0") and spec.base not in OFF_BUDGET:
            cfg = spec.config(["model.regularizer=none", "train.device=cpu"])  # smoothing adds no parameters
            count = build_model(cfg, 10_000).num_parameters()
            assert abs(count / BUDGET - 1) < 0.10, (spec.id, count, BUDGET)
    lstm = next(s for s in RUNS if s.id == "compare-ptb/lstm/seed0")
    assert build_model(lstm.config(["train.device=cpu"]), 10_000).num_parameters() == BUDGET


def test_compare_bench_rows_and_paper_claims():
    """The bench times every family once and adds each head's same-size LSTM; the papers' own numbers
    exist for every family that has a claim."""
    from mlm.manifests import compare

    specs = rp.bench_specs("compare")
    families = [s for s in specs if s.group == "compare-ptb"]
    timed = [n for n in compare.FAMILIES if n not in compare.FAIR_CONTROLS]
    assert [s.base for s in families] == timed and all(s.seed == 0 for s in families)
    widths = {s.config().model.hidden_size for s in specs if s.config().model.head == "identity"}
    assert set(compare.WIDTHS.values()) <= widths  # every head has a plain LSTM of its width
    assert set(compare.LABELS) == set(compare.FAMILIES)
    assert {run for c in compare.CLAIMS for run in c.runs} == set(compare.FAMILIES)  # every family is read
    assert compare.same_size_lstm("kv-L5") == {"model.hidden_size": 214}


def test_compare_row_labels_name_a_control_that_is_not_the_lstm():
    """A figure's row names the family, and its control only where that is neither the LSTM nor in the name."""
    from mlm.manifests import compare

    labels = {(c.model, c.control): compare.ROW_LABELS[c.text] for c in compare.CLAIMS}
    assert labels["kvp-L1", "kvp-L5"] == "key-value-predict, L = 1 vs L = 5"
    assert labels["kvp-L15", "kvp-L5"] == "key-value-predict, L = 15 vs L = 5"
    assert labels["vs-kn-tied", "tied"] == "tied LSTM + VS-KN"  # its control, the tied LSTM, is in its name
    assert labels["kv-L5", "lstm"] == compare.LABELS["kv-L5"]
    assert labels["kvp-L5", "lstm-h279"] == "key-value-predict, L = 5 vs LSTM, width 279"
    tuned = next(c for c in compare.CLAIMS if c.model == ("attentive-single", "attentive-single-headlr0.1"))
    assert compare.ROW_LABELS[tuned.text] == "Attentive, single, both tuned"  # tuned sides: the first candidate
    odd = compare.PaperClaim("x", "compare-ptb", "ngram4", "tied", "p", "q")
    assert compare.row_label(odd) == "4-gram RNN vs tied LSTM"  # nothing shared: the control's whole name


@pytest.mark.parametrize("manifest", ["cpu", "compare", "full", "tuned"])
def test_every_paper_claim_names_runs_of_its_manifest_and_numbers_of_its_paper(manifest):
    """Each claim shown in a chapter and the README pairs two runs (or two sets of candidates, each side tuned
    on validation) its manifest trains, in one group, with two numbers the paper reported (the presets'
    ``paper`` entries), and says how each side was tuned."""
    from mlm.evidence import paper_numbers

    module = rp.importlib.import_module(f"mlm.manifests.{manifest}")
    specs = rp.load_manifest(manifest)
    runs = {(s.group, s.base) for s in specs}
    assert module.CLAIMS
    for claim in module.CLAIMS:
        if not claim.pending:  # a claim whose runs wait for a grid names them once the grid has chosen
            assert {(claim.group, run) for run in claim.runs} <= runs, claim
            single = [side for side in (claim.model, claim.control) if isinstance(side, str)]  # a grid's choice
            seeds = {run: sum(1 for s in specs if (s.group, s.base) == (claim.group, run)) for run in single}
            assert not seeds or min(seeds.values()) >= 3 or claim.group in getattr(module, "UNTESTABLE_GROUPS", {}), \
                f"{claim.text}: {seeds} seeds; a verdict needs three a side"
        if manifest != "full":  # the full-size claims are the papers' own recipes, not tuned
            assert claim.tuning, f"{claim.text}: say how each side was tuned"
            assert bool(claim.handicaps) == bool(claim.unfair), f"{claim.text}: an unequal trial says why"
        assert claim.model != claim.control and claim.chapter in {f"0{i}" for i in range(7)}
        assert claim.question, f"{claim.text}: say which comparison the runs make"
        model, control, source = paper_numbers(claim)
        assert isinstance(model, float) and isinstance(control, float) and source


def test_full_manifest_has_three_seeds_where_a_claim_compares_two_runs():
    """One seed decides nothing: every run a full-size claim compares has seeds 0-2, every other run one, and
    each run knows its training tokens (for the GPU hours)."""
    from mlm.manifests.full import CLAIMS

    compared = {(c.group, run) for c in CLAIMS for run in (c.model, c.control)}
    seeds = {}
    for spec in rp.load_manifest("full"):
        seeds.setdefault((spec.group, spec.base), []).append(spec.seed)
        assert spec.tokens and spec.tokens > 1e7, spec.id
    assert compared <= set(seeds)
    assert all(found == ([0, 1, 2] if key in compared else [None]) for key, found in seeds.items())


def test_the_book_says_its_license_and_how_to_cite_it():
    """The package declares MIT; LICENSE carries it, and CITATION.cff is valid YAML with what GitHub reads."""
    import yaml

    root = Path(__file__).resolve().parents[1]
    assert (root / "LICENSE").read_text().startswith("MIT License")
    citation = yaml.safe_load((root / "CITATION.cff").read_text())
    assert citation["cff-version"] == "1.2.0" and citation["license"] == "MIT"
    assert citation["title"] and citation["authors"] and citation["message"]
    assert len(citation["references"]) == 7  # the six papers of the book and Xie et al.


def test_readme_claims_block_is_generated_from_the_stored_results(tmp_path):
    """results/README.md's claims table is what `python -m mlm table` makes of results/ (run it after adding runs);
    update_readme replaces only the block, and leaves a file without markers alone."""
    from mlm.evidence import pending_runs
    from mlm.table import (PAPERS_BEGIN, PAPERS_END, PENDING_BEGIN, PENDING_END, README_BEGIN, README_END, papers_block,
                           readme_block, readme_claims, update_readme)

    root = Path(__file__).resolve().parents[1]
    assert readme_block(root / "README.md", PAPERS_BEGIN, PAPERS_END) == papers_block(root / "results"), \
        "README.md's table of papers is out of date: run `python -m mlm table` and commit it"
    assert readme_block(root / "results" / "README.md") == readme_claims(root / "results"), \
        "results/README.md's claims table is out of date: run `python -m mlm table` and commit it"
    assert readme_block(root / "results" / "README.md", PENDING_BEGIN, PENDING_END) == pending_runs(root / "results"), \
        "results/README.md's list of pending runs is out of date: run `python -m mlm table`"
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n{README_BEGIN}\nold\n{README_END}\nafter\n")
    assert update_readme(readme, "new") and readme.read_text() == f"# x\n{README_BEGIN}\nnew\n{README_END}\nafter\n"
    assert readme_block(readme) == "new"
    readme.write_text("no block\n")
    assert not update_readme(readme, "new") and readme.read_text() == "no block\n"


@pytest.mark.parametrize("manifest", ["cpu", "compare", "tuned"])
def test_commands_page_states_each_campaigns_size_from_its_manifest(manifest):
    """docs/commands.md's `reproduce cpu` and `reproduce compare` lines give each manifest's run count and CPU
    hours as its stored results list it (a copy counts as a run and takes no hours), the `reproduce tuned` line
    its run count: a change to a manifest, or a grid that has chosen, which forgets the page fails here."""
    import re

    root = Path(__file__).resolve().parents[1]
    specs = rp.load_manifest(manifest, root / "results")
    line = next(l for l in (root / "docs" / "commands.md").read_text().splitlines()
                if f"reproduce {manifest} --" in l and "--jobs" in l)
    if manifest == "tuned":
        assert int(re.search(r"(\d+) runs to start", line).group(1)) == len(specs), line
        return
    runs, hours = map(int, re.search(r"(\d+) runs, about (\d+) CPU hours", line).groups())
    assert runs == len(specs) and hours == round(rp.estimated_hours(specs)), line


def test_bench_counts_scored_tokens_as_training_and_the_manifests_do(monkeypatch):
    """Sentences padded to 40 positions: the bench's tokens are the scored targets (words and <eos>), the unit
    of result.json's tokens per second and of a manifest's ``tokens``, never the padded positions."""
    import itertools

    from mlm import bench

    clock = itertools.count()
    monkeypatch.setattr(bench.time, "perf_counter", lambda: next(clock))  # every timed pass takes "1 second"
    overrides = [*TINY, "data.protocol=sentence", "data.pad_to=40"]
    row = bench.bench_preset("synthetic-tiny", overrides=overrides, batches=4, warmup=1)
    cfg = get_preset("synthetic-tiny", overrides=overrides)
    timed = list(build_batches(cfg, load_data(cfg), "train"))[1:5]
    assert row["train_tokens_per_second"] == row["eval_tokens_per_second"] == sum(b.num_tokens for b in timed)
    assert row["train_tokens_per_second"] < sum(b.inputs.numel() for b in timed) and row["precision"] == "fp32"


def test_bench_manifest_times_each_setting_once_in_its_own_process(tmp_path, capsys):
    manifest, _ = tiny_manifest(tmp_path)
    assert [s.id for s in rp.bench_specs(manifest)] == ["g/plain", "g/wide/seed0"]
    parser = build_parser()
    out = tmp_path / "bench.json"
    args = parser.parse_args(["bench", "--manifest", manifest, "--batches", "2", "--threads", "1", "--device", "cpu",
                              "--out", str(out)])  # --device as docs/cluster.md gives it (cuda there)
    assert args.func(args) == 0
    rows = json.loads(out.read_text())
    assert [r["preset"] for r in rows] == ["g/plain", "g/wide"] and {r["device"] for r in rows} == {"cpu"}
    assert rows[1]["parameters"] > rows[0]["parameters"] and rows[1]["threads"] == 1
    assert all(r["train_tokens_per_second"] > 0 and r["peak_memory_mb"] > 0 for r in rows)
    assert "model.hidden_size=24" in rows[1]["overrides"]
    with pytest.raises(rp.ConfigError, match="give no presets"):
        bad = parser.parse_args(["bench", "synthetic-tiny", "--manifest", manifest])
        bad.func(bad)


def test_bench_manifest_on_a_gpu_benches_in_this_process_and_records_each_model(tmp_path, monkeypatch):
    """On a GPU, CUDA counts each model's peak memory itself, so `bench --manifest` saves a process start per
    model (a short allocation's seconds) and benches in its own process; each row keeps the preset it trained, which
    plans the other settings of that model. The GPU is stood in for: the check sees CUDA, the bench runs here."""
    from mlm import bench, utils

    monkeypatch.setattr(utils, "choose_device", lambda name="auto": torch.device("cuda"))
    monkeypatch.setattr(bench, "bench_isolated", lambda *a, **k: pytest.fail("a child process on a GPU"))
    manifest, specs = tiny_manifest(tmp_path)
    out = tmp_path / "bench.json"
    switch = "train.compile=none"  # a speed switch, as a batch's --set gives it: the bench times the runs with it
    args = build_parser().parse_args(["bench", "--manifest", manifest, "--batches", "2", "--threads", "1",
                                      "--device", "cpu", "--set", switch, "--out", str(out)])
    assert args.func(args) == 0
    rows = json.loads(out.read_text())
    assert [(r["preset"], r["model"]) for r in rows] == [("g/plain", "synthetic-tiny"), ("g/wide", "synthetic-tiny")]
    assert all(switch in r["overrides"] for r in rows)
    speeds = rp.read_speeds(out)
    assert [speeds.of(s, [switch]) for s in specs] == [rows[0]["train_tokens_per_second"]] + \
        [rows[1]["train_tokens_per_second"]] * 2  # seed 1 of "wide" from its seed 0
    assert {speeds.of(s) for s in specs} == {None}  # a batch without the switch is not planned with its speed


def test_stored_manifest_matches_the_stored_configs():
    """The ``stored`` manifest repeats exactly the configurations of the result folders it names."""
    root = Path(__file__).resolve().parents[1]
    for spec in rp.load_manifest("stored"):
        stored = json.loads((rp.Layout(root).result_dir(spec) / "config.json").read_text())
        built = spec.config(["train.threads=1"]).to_dict()
        for section in ("data", "model", "train"):
            differ = {k for k in built[section] if k in stored[section] and stored[section][k] != built[section][k]}
            assert differ <= {"data_dir"}, (spec.id, section, differ)


def test_post_step_writes_beside_the_results(tmp_path):
    """A run with a post-step is done only once the post-step's file is in its results folder."""
    path = tmp_path / "post.json"
    path.write_text(json.dumps({"runs": [{"group": "g", "name": "win", "preset": "synthetic-tiny", "post": ["window-analysis"],
                                          "set": [*TINY[:3], "train.epochs=1", "model.head=window", "model.window_size=3"]}]}))
    specs, layout = rp.load_manifest(path), rp.Layout(tmp_path)
    assert rp.reproduce(specs, str(path), layout, cores=1, echo=lambda s: None) == {"g/win": "done"}
    out = layout.result_dir(specs[0])
    assert set(json.loads((out / "analysis.json").read_text())["test_ppl_by_window"]) == {"1", "2", "3"}
    assert "--post-only" in (out / "command.txt").read_text()
    (out / "analysis.json").unlink()
    assert rp.run_state(specs[0], layout) == "partial"


def test_history_cut_and_critical_scores_post_steps(tmp_path):
    """``history-cut`` writes a perplexity per k that ends at the ordinary evaluation; ``critical-scores``
    scores a recall run by distance, beside chance and the bigram."""
    path = tmp_path / "post.json"
    recall = ["data.task_examples=200", "data.task_max_distance=12", "train.epochs=1", "model.hidden_size=16",
              "model.embed_size=8", "model.memory_size=4"]
    path.write_text(json.dumps({"runs": [
        {"group": "g", "name": "cut", "preset": "synthetic-tiny", "post": ["history-cut"],
         "set": [*TINY[:3], "train.epochs=1"]},
        {"group": "g", "name": "recall", "preset": "recall-rm", "post": ["critical-scores"], "set": recall},
    ]}))
    specs, layout = rp.load_manifest(path), rp.Layout(tmp_path)
    assert rp.reproduce(specs, str(path), layout, cores=1, echo=lambda s: None) == {"g/cut": "done", "g/recall": "done"}
    history = json.loads((layout.result_dir(specs[0]) / "history.json").read_text())["test_ppl_by_history"]
    assert list(history) == ["1", "2", "5", "10", "20", "50", "all"]
    result = json.loads((layout.result_dir(specs[0]) / "result.json").read_text())
    assert history["all"] == pytest.approx(result["test_ppl"], rel=1e-6)
    critical = json.loads((layout.result_dir(specs[1]) / "critical.json").read_text())
    assert critical["chance"] == 0.1 and set(map(int, critical["by_distance"])) <= set(range(2, 13))
    assert sum(v["count"] for v in critical["by_distance"].values()) == critical["totals"]["count"] > 0
    assert 0 < critical["source_attention"]["uniform"] <= 1 and critical["bigram_totals"]["count"] > 0


def test_history_curves_plot_the_mean_ratio_to_the_whole_history():
    import matplotlib

    matplotlib.use("Agg")
    from mlm.plots import history_curves

    seeds = [{"1": 200.0, "5": 110.0, "all": 100.0}, {"1": 300.0, "5": 150.0, "all": 100.0}]
    ax = history_curves({"m": seeds, "one": seeds[:1]})
    line = ax.get_lines()[0]
    assert list(line.get_xdata()) == [1, 5]
    assert [round(float(y), 6) for y in line.get_ydata()] == [2.5, 1.3]
    assert [t.get_text() for t in ax.get_legend().get_texts()][:2] == ["m (2 seeds)", "one (1 seed)"]


def test_kong_dropout_is_the_grids_choice_on_validation():
    """Kong et al.'s control is regularized: once the dropout grid's runs are stored, the manifest's
    KONG_DROPOUT is the grid value with the best validation perplexity (and None before)."""
    from mlm.manifests import cpu
    from mlm.stored import load_settings

    root = Path(__file__).resolve().parents[1]
    grid = load_settings([s for s in cpu.RUNS if s.group == "cpu-kong2019-ptb-grid"], root / "results")
    valid = {float(name.removeprefix("dropout")): s.values("best_valid_ppl")[0] for name, s in grid.items()
             if s.seeds}
    if len(valid) < len(cpu.KONG_DROPOUT_GRID):
        assert cpu.KONG_DROPOUT is None
    else:
        assert cpu.KONG_DROPOUT == min(valid, key=valid.get)


def test_kong_grid_choice_waits_for_every_grid_run(tmp_path):
    """grid_choice reads the stored grid runs: None while one is missing, then the best validation's dropout."""
    from mlm.manifests import cpu

    values = [90.0 + i for i in range(len(cpu.KONG_DROPOUT_GRID))]
    values[1] = 85.5  # the grid's second value is the best
    for d, valid in zip(cpu.KONG_DROPOUT_GRID, values):
        assert cpu.grid_choice(tmp_path) is None
        folder = tmp_path / "cpu-kong2019-ptb-grid" / f"dropout{d}"
        folder.mkdir(parents=True)
        (folder / "result.json").write_text(json.dumps({"best_valid_ppl": valid}))
    assert cpu.grid_choice(tmp_path) == cpu.KONG_DROPOUT_GRID[1]


def test_kong_vanilla_seed0_is_the_grids_chosen_run():
    """Once the grid chooses, the vanilla model's seed 0 is a copy of the chosen grid run (the same
    configuration, checked), and the other eleven runs train, with the control's and VS-KN's three seeds again
    at lambda = 0 (the same dropout); before the choice only the grid is listed."""
    from mlm.manifests import cpu

    assert [r.group for r in cpu.kong_runs(None)] == ["cpu-kong2019-ptb-grid"] * len(cpu.KONG_DROPOUT_GRID)
    for dropout in cpu.KONG_DROPOUT_GRID:
        specs = rp.check_runs(cpu.kong_runs(dropout), "cpu")
        copies = [r for r in specs if r.same_as]
        assert [(r.id, r.same_as) for r in copies] == [("cpu-kong2019-ptb/vanilla-tied/seed0",
                                                        f"cpu-kong2019-ptb-grid/dropout{dropout}")]
        assert len(specs) - len(cpu.KONG_DROPOUT_GRID) == 18 and copies[0].config().model.dropout == dropout
        no_l2 = [r for r in specs if r.group == cpu.KONG_LAMBDA0]
        assert sorted(r.name for r in no_l2) == [f"{m}/seed{s}" for m in cpu.KONG_LAMBDA0_MODELS for s in cpu.SEEDS]
        for r in no_l2:
            twin = next(t for t in specs if t.group == "cpu-kong2019-ptb" and t.name == r.name)
            config, twin_config = r.config(), twin.config()
            assert config.train.weight_decay == 0.0 and twin_config.train.weight_decay > 0
            assert config.model == twin_config.model and config.model.dropout == dropout  # lambda alone differs


def test_a_staged_manifest_trains_its_later_runs_in_the_same_call(tmp_path):
    """A manifest whose later runs depend on stored results (Kong's grid, then the four models at its choice):
    reproduce_stages trains the first stage, lists again, and trains what the stored result adds; a dry run
    stops after one stage. The cpu manifest lists Kong's models from the results folder it is given."""
    from mlm.manifests import cpu

    first = rp.RunSpec("g", "grid", "synthetic-tiny", "full", tuple(TINY))
    second = rp.RunSpec("h", "chosen", "synthetic-tiny", "full", (*TINY, "model.hidden_size=24"))
    layout = rp.Layout(tmp_path)
    load = lambda: [first] + ([second] if (layout.result_dir(first) / "result.json").is_file() else [])  # noqa: E731
    messages = []
    specs, states = rp.reproduce_stages(load, "staged", layout, dry_run=True, echo=messages.append)
    assert [s.id for s in specs] == ["g/grid"] and states == {"g/grid": "missing"}
    specs, states = rp.reproduce_stages(load, "staged", layout, jobs=1, cores=1, echo=messages.append)
    assert states == {"g/grid": "done", "h/chosen": "done"} and [s.id for s in specs] == ["g/grid", "h/chosen"]
    assert "[next] the stored runs list 1 more run(s) of staged: h/chosen" in messages
    assert json.loads((layout.result_dir(second) / "config.json").read_text())["model"]["hidden_size"] == 24

    results = tmp_path / "kong"  # the cpu manifest: the grid alone, then the grid and the four models
    assert {s.group for s in rp.load_manifest("cpu", results) if "kong" in s.group} == {"cpu-kong2019-ptb-grid"}
    for i, d in enumerate(cpu.KONG_DROPOUT_GRID):
        folder = results / "cpu-kong2019-ptb-grid" / f"dropout{d}"
        folder.mkdir(parents=True)
        (folder / "result.json").write_text(json.dumps({"best_valid_ppl": 100.0 + i}))
    kong = [s for s in rp.load_manifest("cpu", results) if s.group == "cpu-kong2019-ptb"]
    assert len(kong) == 12 and {s.config().model.dropout for s in kong} == {cpu.KONG_DROPOUT_GRID[0]}
    assert all(s.hours for s in kong)


# -- launching through submitit ----------------------------------------------------------------------
def test_local_launcher_runs_a_manifest_end_to_end_through_submitit(tmp_path, capsys):
    """``reproduce --launcher local``: each missing run becomes a submitit job on this machine, which trains it
    with the same command and stores its results; the run folder records the job."""
    path = tmp_path / "one.json"
    path.write_text(json.dumps({"runs": [{"group": "g", "name": "one", "preset": "synthetic-tiny",
                                          "set": ["data.max_train_tokens=600", "data.max_eval_tokens=300",
                                                  *TINY[1:3], "train.epochs=1"]}]}))
    argv = ["reproduce", str(path), "--launcher", "local", "--root", str(tmp_path), "--gpus-per-job", "0",
            "--cores", "1"]
    args = build_parser().parse_args(argv)
    assert args.func(args) == 0
    assert "1 of 1 runs submitted (local job" in capsys.readouterr().out
    spec, layout = rp.load_manifest(path)[0], rp.Layout(tmp_path)
    assert rp.run_state(spec, layout) == "done"
    assert (layout.result_dir(spec) / "command.txt").read_text().startswith("OMP_NUM_THREADS=")
    record = json.loads((layout.run_dir(spec) / launch.JOB).read_text())
    assert record["cluster"] == "local" and list((tmp_path / "runs" / "submitit").glob(f"{record['job']}_*"))
    assert not (layout.run_dir(spec) / launch.LOCK).exists()


@pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="finds the task's process in /proc (Linux)")
def test_a_preempted_cluster_task_is_requeued_and_resumes_its_run(tmp_path):
    """Slurm's warning signal (USR2) before a preemption or the time limit: submitit requeues the task, whose
    training process stops; the task starts again and the run resumes after its last finished epoch."""
    import signal
    import time

    path = tmp_path / "pre.json"
    path.write_text(json.dumps({"runs": [{"group": "g", "name": "pre", "preset": "synthetic-tiny",
                                          "set": ["data.max_train_tokens=1500", "data.max_eval_tokens=300",
                                                  *TINY[1:3], "train.epochs=3"]}]}))
    [spec], layout = rp.load_manifest(path), rp.Layout(tmp_path)
    run_dir = layout.run_dir(spec)
    [job] = launch.submit(rp.execute, [(spec, str(path), layout, 1, None)], [run_dir], "local",
                          launch.SlurmOptions(gpus_per_job=0), tmp_path / "submitit")
    while not (run_dir / "checkpoint.pt").is_file():  # epoch 1 is saved
        time.sleep(0.05)
    task = json.loads((run_dir / launch.LOCK).read_text())["pid"]  # the process that holds the run: the task's
    os.kill(task, signal.SIGUSR2)
    assert job.result() == "done"
    assert "this job is preempted" in job.stderr()
    assert (run_dir / "reproduce.log").read_text().count("$ OMP_NUM_THREADS=1 python -m mlm train") == 2
    metrics = (layout.result_dir(spec) / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["epoch"] for line in metrics] == [1, 2, 3]  # no epoch trained twice


def test_slurm_dry_run_prints_the_sbatch_file_and_the_commands(tmp_path):
    """No Slurm here: the dry run shows what would be submitted, one array task per missing run, each with the
    overrides of ``reproduce --set``."""
    manifest, specs = tiny_manifest(tmp_path)
    lines = []
    options = launch.SlurmOptions(partition="gpu", account="lab", time=120, gpus_per_job=1, cpus_per_job=4,
                                  parallelism=2)
    rp.reproduce(specs, manifest, rp.Layout(tmp_path), launcher="slurm", slurm=options, dry_run=True,
                 echo=lines.append, overrides=["train.precision=bf16"])
    sbatch, *commands = lines
    for flag in ("--partition=gpu", "--account=lab", "--time=120", "--gpus-per-node=1", "--cpus-per-task=4",
                 "--array=0-2%2", "--job-name=mlm-reproduce", "--signal=USR2@90"):
        assert f"#SBATCH {flag}\n" in sbatch, flag
    assert "submitit.core._submit" in sbatch and str(tmp_path / "runs" / "submitit") in sbatch
    assert len(commands) == 3 and all(c.startswith("OMP_NUM_THREADS=4 python -m mlm train") for c in commands)
    assert "--set train.precision=bf16 --set train.threads=4" in commands[0] and not (tmp_path / "runs").exists()
    if launch.shutil.which("srun") is None:  # this machine is no Slurm cluster: a clear error, nothing submitted
        with pytest.raises(rp.ConfigError, match="Slurm cluster"):
            rp.reproduce(specs, manifest, rp.Layout(tmp_path), launcher="slurm", echo=lines.append)
        assert not list(tmp_path.glob("runs/*/*/job.json"))


def test_cluster_jobs_are_listed_as_submitted_or_running_while_their_job_lives(tmp_path):
    """A queued job: submitted; a running one: running; a lock left by a job that has ended holds nothing; a
    requeued task ignores the lock of its own earlier attempt; a local job lives as long as its process."""
    _, specs = tiny_manifest(tmp_path)
    layout = rp.Layout(tmp_path)
    plain, seed0, seed1 = specs
    dirs = [layout.run_dir(s) for s in specs]
    assert rp.run_state(plain, layout, {dirs[0]: "PENDING"}) == "submitted"
    assert rp.run_state(plain, layout, {dirs[0]: "RUNNING"}) == "running"
    fake_lock(dirs[1], 1, host="another-node", job="77_1")
    assert rp.run_state(seed0, layout, {dirs[1]: "RUNNING"}) == "running"
    assert rp.run_state(seed0, layout, {dirs[1]: "CANCELLED"}) == "missing"
    assert launch.running_pid(dirs[1]) == 1 and launch.running_pid(dirs[1], own_job="77_1") is None
    for run_dir, pid in ((dirs[0], os.getpid()), (dirs[2], 2**22 + 12345)):
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / launch.JOB).write_text(json.dumps({"cluster": "local", "job": str(pid), "folder": "f",
                                                      "host": launch.socket.gethostname()}))
    assert launch.cluster_states(dirs) == {dirs[0]: "RUNNING", dirs[2]: "FINISHED"}
    assert rp.run_states(specs, layout) == {plain.id: "running", seed0.id: "running", seed1.id: "missing"}


def test_a_cluster_task_requeues_itself_with_the_same_call():
    """On preemption or near the time limit submitit calls ``checkpoint``: the same run, submitted again."""
    task = launch.ClusterTask(rp.execute)
    again = task.checkpoint("spec", "manifest")
    assert again.function is task and again.args == ("spec", "manifest")


def test_list_shows_gpu_hours_from_measured_speeds(tmp_path):
    _, specs = tiny_manifest(tmp_path)
    specs = [dataclasses.replace(s, tokens=7.2e6) for s in specs]
    speeds = tmp_path / "speeds.json"
    speeds.write_text(json.dumps([{"preset": "g/plain", "train_tokens_per_second": 1000.0},
                                  {"preset": "g/wide", "train_tokens_per_second": 2000.0}]))
    listing = rp.format_list(specs, rp.Layout(tmp_path), rp.read_speeds(speeds)).splitlines()
    assert "  2.0 h  synthetic-tiny" in listing[0] and "  1.0 h  synthetic-tiny" in listing[1]
    assert listing[-1].endswith("0.02G training tokens; 4.0 GPU hours of training at the measured speeds")
