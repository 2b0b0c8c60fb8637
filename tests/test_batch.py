"""A batch in a short GPU allocation, on the CPU: the speeds that plan it (the stored per-preset H200 file
included), its priority order, the runs that fit its time budget under the model of sharing, its deadline, the
archive of its results and their safe unpacking, and results/scripts/gpu_batch.sh end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from mlm import archive as ar
from mlm import budget as bd
from mlm import reproduce as rp
from mlm.cli import build_parser
from mlm.launch import Deadline

pytestmark = pytest.mark.usefixtures("no_data_env")

REPO = Path(__file__).resolve().parents[1]
TINY = ["data.max_train_tokens=600", "data.max_eval_tokens=300", "model.embed_size=16", "model.hidden_size=16"]


def spec(name: str, tokens: float = 1e6, preset: str = "synthetic-tiny", seed: int | None = None, **fields):
    return rp.RunSpec("g", name if seed is None else f"{name}/seed{seed}", preset, seed=seed, tokens=tokens, **fields)


# -- speeds ----------------------------------------------------------------------------------------
def test_the_stored_per_preset_speeds_give_the_full_manifest_its_gpu_hours(capsys):
    """results/bench-h200.json (rows per preset, as `bench PRESET ...` writes them): each run of the full manifest
    that is a measured preset as it stands (its size; no setting of its own that changes the model, so not the
    Holmes run of Tran's PTB preset) gets its GPU hours (before, every run was 'without a speed')."""
    rows = json.loads((REPO / "results" / "bench-h200.json").read_text())
    measured = {(r["preset"], r["size"]): r["train_tokens_per_second"] for r in rows}
    specs = rp.load_manifest("full")
    timed = [s for s in specs if (s.preset, s.size) in measured and not bd.cost_settings(s.all_overrides())]
    hours = sum(s.tokens / measured[s.preset, s.size] / 3600 for s in timed)
    assert len(timed) >= 19 and hours > 1
    assert any(s.preset == "tran2016-ptb-rm-tm-g" and "data.corpus=holmes" in s.overrides for s in specs)
    args = build_parser().parse_args(["reproduce", "full", "--list", "--speeds", str(REPO / "results" /
                                                                                   "bench-h200.json")])
    assert args.func(args) == 0
    totals = next(line for line in capsys.readouterr().out.splitlines() if "GPU hours" in line)
    assert totals.endswith(f"{hours:.1f} GPU hours of training at the measured speeds "
                           f"({len(specs) - len(timed)} runs without a speed or tokens)")


def test_a_setting_row_comes_before_a_preset_row_and_settings_must_match(tmp_path):
    path = tmp_path / "speeds.json"
    path.write_text(json.dumps([
        {"preset": "synthetic-tiny", "size": "full", "overrides": ["train.device=cuda"],
         "train_tokens_per_second": 1.0},
        {"preset": "synthetic-tiny", "size": "full", "overrides": ["train.device=cuda", "train.compile=default"],
         "variant": "fast", "train_tokens_per_second": 2.0},
        {"preset": "synthetic-tiny", "size": "full", "overrides": [], "concurrent": 14, "train_tokens_per_second": 9.0},
        {"preset": "g/own", "train_tokens_per_second": 3.0},
        {"preset": "synthetic-tiny (reference)", "size": "full", "train_tokens_per_second": 9.0}]))
    speeds = bd.read_speeds(path)
    assert len(speeds.rows) == 3  # neither several at once nor a reference head is one run's speed alone
    assert speeds.of(spec("other")) == 1.0 and speeds.of(spec("other"), ["train.compile=default"]) == 2.0
    assert speeds.of(spec("own", seed=2)) == 3.0 and speeds.of(spec("x", preset="zaremba2014-small")) is None
    path.write_text("not json")
    with pytest.raises(ValueError, match="bench"):
        bd.read_speeds(path)


def test_one_row_per_model_plans_every_seed_and_every_point_of_a_grid():
    """A setting's row benched at seed 0 plans its other seeds; a grid's points that differ only in rates,
    dropout, weight decay or noise level share one row of the same preset; a different width does not."""
    base = ["model.hidden_size=16"]
    speeds = bd.Speeds([bd.Speed("g/a", "full", frozenset([*base, "train.seed=0", "model.dropout=0.1"]), 5.0,
                                 "synthetic-tiny")])
    assert speeds.of(spec("a", seed=2, overrides=base + ["model.dropout=0.1"])) == 5.0  # another seed
    assert speeds.of(spec("b", overrides=base + ["model.dropout=0.3", "train.lr=2", "train.weight_decay=1e-4",
                                                 "model.noise_gamma=0.2"])) == 5.0  # another grid point
    assert speeds.of(spec("c", overrides=["model.hidden_size=32"])) is None  # another model
    assert speeds.of(spec("d", preset="zaremba2014-small", overrides=base)) is None  # another preset
    assert speeds.of(spec("b", overrides=base), ["train.compile=default"]) is None  # another speed switch
    assert bd.cost_settings(["train.device=cuda", "train.seed=3", "model.head=attentive"]) == {"model.head=attentive"}


def test_a_preset_row_never_stands_in_for_another_width_or_device(tmp_path):
    """The stored H200 rows time Kong's 2 x 512 and Salton's 2 x 650 presets: the tuned manifest's runs of the same
    presets at 2 x 200 get no speed from them (they would be planned at a wrong size); and a batch reads only the
    rows of the kind of device it trains on."""
    h200 = bd.read_speeds(REPO / "results" / "bench-h200.json")
    tuned = [s for s in rp.load_manifest("tuned") if s.preset in {r.key for r in h200.rows}]
    assert len(tuned) >= 15 and {h200.of(s) for s in tuned} == {None}
    path = tmp_path / "speeds.json"
    path.write_text(json.dumps([{"preset": "synthetic-tiny", "device": "cpu", "train_tokens_per_second": 1.0},
                                {"preset": "synthetic-tiny", "device": "cuda:0", "train_tokens_per_second": 2.0}]))
    assert bd.read_speeds(path, device="cuda").of(spec("a")) == 2.0
    assert bd.read_speeds(path, device="cpu").of(spec("a")) == 1.0 and bd.read_speeds(path).of(spec("a")) == 1.0


def test_the_tuned_manifest_is_planned_from_one_bench_row_per_model(tmp_path):
    """`bench --manifest tuned` benches one run per model (not one per grid point), and rows written as it writes
    them give every run of the manifest a speed: one GPU allocation can bench it, the next ones train it."""
    from mlm.manifests import tuned

    specs = rp.load_manifest("tuned")
    bench = rp.bench_specs("tuned")
    assert len(bench) < len(specs) / 3 and len({(s.group, s.base) for s in bench}) == len(bench)
    assert {s.group for s in bench} == {s.group for s in specs} and {s.seed for s in bench} == {0}
    models = {(s.preset, s.size, bd.cost_settings(s.all_overrides())) for s in specs}
    assert len(bench) == len(models)  # every model once
    rows = [{"preset": f"{s.group}/{s.base}", "model": s.preset, "size": s.size, "overrides": s.all_overrides(),
             "train_tokens_per_second": 1e5, "concurrent": 1} for s in bench]
    path = tmp_path / "bench-tuned.json"
    path.write_text(json.dumps(rows))
    speeds = bd.read_speeds(path)
    assert all(speeds.of(s) == 1e5 for s in specs)
    assert len(rp.bench_specs("tuned", [f"{tuned.KONG}/vanilla-tied-wd0.0001-do0.2"])) == 1  # --only, then once
    order = bd.priority_order(specs, *rp.manifest_priority("tuned"))
    assert [s.group for s in order[:48]] == [tuned.KONG] * 48 and {"-wd0-" in s.base for s in order[:12]} == {True}
    assert [s.group for s in order[48:63]] == [tuned.DANILUK] * 15 and {s.seed for s in order[:63]} == {0}


# -- the order and the plan --------------------------------------------------------------------------
def test_priority_puts_one_seed_of_each_headline_setting_first():
    specs = [spec(n, seed=k) for n in ("a", "b", "c") for k in range(3)] + [spec("big"), spec("d")]
    order = [s.id for s in bd.priority_order(specs, first=["g/c", "g/a"], last=["g/big"])]
    assert order == ["g/c/seed0", "g/a/seed0", "g/c/seed1", "g/c/seed2", "g/a/seed1", "g/a/seed2",
                     "g/b/seed0", "g/b/seed1", "g/b/seed2", "g/d", "g/big"]


def test_the_full_manifest_starts_with_the_headline_claims():
    from mlm.manifests import full

    specs = rp.load_manifest("full")
    settings = {f"{s.group}/{s.base}" for s in specs}
    assert all(any(bd.fnmatch.fnmatch(k, p) for k in settings) for p in full.PRIORITY + full.LAST)
    order = bd.priority_order(specs, full.PRIORITY, full.LAST)
    head = order[:len(full.PRIORITY)]
    assert [f"{s.group}/{s.base}" for s in head] == full.PRIORITY and {s.seed for s in head} == {0}
    seeds = order[len(full.PRIORITY):3 * len(full.PRIORITY)]
    assert {f"{s.group}/{s.base}" for s in seeds} == set(full.PRIORITY) and {s.seed for s in seeds} == {1, 2}
    last = [s for s in specs if f"{s.group}/{s.base}" not in full.PRIORITY
            and any(bd.fnmatch.fnmatch(f"{s.group}/{s.base}", p) for p in full.LAST)]
    assert order[-len(last):] == last and order[-len(last) - 1] not in last
    assert {"full-zaremba2014/large", "full-kong2019-ptb-1024/vs-kn", "full-salton2017-wt2/single",
            "full-kong2019-wt2-512/vs-kn"} <= {f"{s.group}/{s.base}" for s in last}


def test_runs_sharing_the_gpu_progress_at_the_modelled_rate():
    assert bd.finish_times([60, 60], jobs=2, slowdown=0.5) == [90, 90]  # each at 1 / 1.5 of its speed
    assert bd.finish_times([60, 60], jobs=1, slowdown=0.5) == [60, 120]
    assert bd.finish_times([30, 60, 60], jobs=2, slowdown=0.0) == [30, 60, 90]  # the third waits for a slot


def test_a_plan_starts_only_the_runs_that_end_within_the_budget():
    """One minute alone each (no start-up time, no validation); two at a time at 1 / 1.25 of their speed. The
    long run is left; a run that would push an earlier one past the budget is left; a later, shorter one that
    still fits is started; a run without a measured speed is left."""
    sharing = bd.Sharing(slowdown=0.25, start_seconds=0, eval_share=0)
    speeds = bd.Speeds([bd.Speed("synthetic-tiny", "full", None, 1000.0)])
    specs = [spec("a", 60_000), spec("long", 600_000), spec("b", 60_000), spec("c", 90_000), spec("d", 30_000),
             spec("e", 60_000, preset="zaremba2014-small")]
    plan = bd.plan_batch(specs, speeds, budget_seconds=150, jobs=2, sharing=sharing)
    assert [s.name for s, _ in plan.start] == ["a", "b", "d"]
    assert [end for _, end in plan.start] == pytest.approx([1.25, 1.25, 1.75])
    assert [(s.name, reason) for s, reason, _ in plan.left] == [("long", "does not fit"), ("c", "does not fit"),
                                                                ("e", "no measured speed")]
    text = bd.format_plan(plan, 2.5, 2)
    assert "[left] g/long: does not fit (10.0 min alone)" in text and "[plan] g/d: ends at about 1.8 min" in text


# -- the archive ---------------------------------------------------------------------------------------
def stored(results: Path, folder: str, value: float = 100.0) -> None:
    run = results / folder
    run.mkdir(parents=True)
    for name, text in (("command.txt", "python -m mlm train x\n"), ("config.json", "{}"), ("metrics.jsonl", "{}\n"),
                       ("result.json", json.dumps({"test_ppl": value}))):
        (run / name).write_text(text)
    (run / "checkpoint.pt").write_bytes(b"weights")


def test_an_archive_holds_the_small_files_and_unpacks_into_results(tmp_path):
    stored(tmp_path / "a" / "results", "g/one")
    stored(tmp_path / "a" / "results", "g/two/seed0")
    pack = ar.BatchArchive(tmp_path / "out" / "r.tar.gz", tmp_path / "a" / "results")
    assert tarfile.open(pack.path).getnames() == []  # written from the start
    for folder in ("g/one", "g/two/seed0", "g/one"):
        pack.add(folder, rp.run_files(spec("one")))
    names = tarfile.open(pack.path).getnames()
    assert len(names) == 8 and "g/two/seed0/result.json" in names and not any(n.endswith(".pt") for n in names)
    results = tmp_path / "b" / "results"
    assert ar.unpack(pack.path, results, rp.unpacked_names()) == ["added g/one (4 files)",
                                                                  "added g/two/seed0 (4 files)"]
    assert (results / "g/two/seed0/result.json").read_text() == '{"test_ppl": 100.0}'
    assert ar.unpack(pack.path, results, rp.unpacked_names()) == ["unchanged g/one", "unchanged g/two/seed0"]


def test_unpack_refuses_to_overwrite_a_different_result_without_replace(tmp_path, capsys):
    stored(tmp_path / "a" / "results", "g/one", 100.0)
    stored(tmp_path / "a" / "results", "g/new", 90.0)
    pack = ar.BatchArchive(tmp_path / "r.tar.gz", tmp_path / "a" / "results")
    pack.add("g/new", rp.run_files(spec("new")))
    pack.add("g/one", rp.run_files(spec("one")))
    stored(tmp_path / "results", "g/one", 101.0)
    argv = ["unpack", str(pack.path), "--root", str(tmp_path)]
    from mlm.cli import main

    assert main(argv) == 1
    assert "differs from the stored g/one/result.json" in capsys.readouterr().err
    assert not (tmp_path / "results" / "g" / "new").exists()  # nothing written
    assert main([*argv, "--replace"]) == 0
    assert capsys.readouterr().out.splitlines() == ["added g/new (4 files)", "replaced g/one (4 files)"]
    assert json.loads((tmp_path / "results/g/one/result.json").read_text()) == {"test_ppl": 100.0}


def archive_of(path: Path, members: dict[str, bytes], link: str | None = None) -> Path:
    import io

    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        if link:
            info = tarfile.TarInfo(link)
            info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
            tar.addfile(info)
    return path


@pytest.mark.parametrize("members, link, message", [
    ({"../escape/g/result.json": b"{}"}, None, "not a path GROUP/RUN/FILE"),
    ({"/tmp/g/r/result.json": b"{}"}, None, "not a path GROUP/RUN/FILE"),
    ({"g/r/result.json": b"{}"}, "g/r/metrics.jsonl", "not a plain file"),
    ({"g/r/result.json": b"{}", "g/r/evil.sh": b"rm -rf"}, None, "not a results file"),
    ({"g/r/metrics.jsonl": b"{}"}, None, "holds no result.json"),
])
def test_unpack_refuses_what_is_not_a_run_folder_under_results(tmp_path, members, link, message):
    path = archive_of(tmp_path / "bad.tar.gz", members, link)
    with pytest.raises(ar.ArchiveError, match=message):
        ar.unpack(path, tmp_path / "results", rp.unpacked_names())
    assert not (tmp_path / "results").exists() and not (tmp_path / "escape").exists()


def test_unpack_refuses_a_path_that_a_link_in_results_leads_out(tmp_path):
    (tmp_path / "results").mkdir()
    (tmp_path / "outside").mkdir()
    os.symlink(tmp_path / "outside", tmp_path / "results" / "g")
    path = archive_of(tmp_path / "a.tar.gz", {"g/r/result.json": b"{}"})
    with pytest.raises(ar.ArchiveError, match="outside"):
        ar.unpack(path, tmp_path / "results", rp.unpacked_names())
    assert not list((tmp_path / "outside").iterdir())


# -- a batch, end to end ---------------------------------------------------------------------------------
def tiny_manifest(tmp_path: Path, runs: dict[str, int]) -> Path:
    """A JSON manifest of synthetic runs (name -> epochs), the last ones given priority."""
    path = tmp_path / "batch.json"
    path.write_text(json.dumps({"priority": [f"g/{n}" for n in reversed(list(runs))], "runs": [
        {"group": "g", "name": name, "preset": "synthetic-tiny", "set": [*TINY, f"train.epochs={epochs}"],
         "tokens": 600 * epochs} for name, epochs in runs.items()]}))
    return path


def test_a_batch_stops_what_outlasts_its_budget_and_archives_what_finished(tmp_path):
    """A run the speeds call quick but that trains for thousands of epochs is stopped when the deadline comes
    (here: once the quick run is stored, however long the machine took for it); the quick run is done and in
    the archive, and the batch ends then."""
    import threading

    path = tiny_manifest(tmp_path, {"slow": 100_000, "quick": 1})
    specs, layout = rp.load_manifest(path), rp.Layout(tmp_path)
    speeds = bd.Speeds([bd.Speed("synthetic-tiny", "full", frozenset(TINY), 1e9, "synthetic-tiny")])
    budget = rp.Budget(Deadline(time.time() + 600), speeds, bd.Sharing(start_seconds=1))
    pack = ar.BatchArchive(tmp_path / "out.tar.gz", tmp_path / "results")

    def expire_once_quick_is_stored():
        while not (tmp_path / "results" / "g" / "quick" / "result.json").is_file():
            time.sleep(0.1)
        budget.deadline.expire()

    threading.Thread(target=expire_once_quick_is_stored, daemon=True).start()
    messages, start = [], time.perf_counter()
    states = rp.reproduce(specs, str(path), layout, jobs=2, cores=2, echo=messages.append, budget=budget,
                          archive=pack, priority=rp.manifest_priority(path))
    budget.deadline.cancel()
    assert time.perf_counter() - start < 300
    assert states["g/quick"] == "done" and states["g/slow"] != "done"
    assert "[stopped] g/slow: the batch's time ran out" in messages
    assert messages[0].splitlines()[1:3] == ["  [plan] g/quick: ends at about 0.0 min",
                                             "  [plan] g/slow: ends at about 0.0 min"]
    assert sorted(tarfile.open(pack.path).getnames()) == [f"g/quick/{n}" for n in sorted(rp.run_files(specs[1]))]


def test_a_budget_needs_speeds_and_the_jobs_launcher(tmp_path):
    path = tiny_manifest(tmp_path, {"one": 1})
    for extra, message in ((["--budget-minutes", "1"], "needs --speeds"),
                           (["--budget-minutes", "1", "--speeds", "x.json", "--launcher", "local"], "launcher jobs")):
        args = build_parser().parse_args(["reproduce", str(path), "--root", str(tmp_path), *extra])
        with pytest.raises(rp.ConfigError, match=message):
            args.func(args)


def test_the_gpu_batch_script_runs_a_batch_end_to_end_on_the_cpu(tmp_path):
    """results/scripts/gpu_batch.sh with DEVICE=cpu and a budget of 3 minutes: the two runs that fit (45 s of
    start-up each in the plan) train two at a time, the third (4 minutes alone at the speed given) is left, the
    archive and the log come back, the script exits 0, and the archive unpacks into another clone's results/."""
    path = tiny_manifest(tmp_path, {"left": 40, "b": 1, "a": 1})
    speeds = tmp_path / "speeds.json"
    speeds.write_text(json.dumps([{"preset": "synthetic-tiny", "size": "full", "overrides": TINY,
                                   "train_tokens_per_second": 100.0}]))
    out = tmp_path / "out"
    env = {**os.environ, "OUT": str(out), "MANIFEST": str(path), "DEVICE": "cpu", "BUDGET_MINUTES": "3",
           "JOBS": "2", "SPEEDS": str(speeds), "ROOT": str(tmp_path / "root"), "PYTHON": sys.executable}
    (tmp_path / "root").mkdir()
    done = subprocess.run(["bash", str(REPO / "results" / "scripts" / "gpu_batch.sh")], env=env, capture_output=True,
                          text=True, timeout=400)
    assert done.returncode == 0, done.stderr
    log = (out / "log.txt").read_text()
    assert "[left] g/left: does not fit" in log and "batch: 2 of 2 started runs done" in log
    assert "exit status 0" in log and "Python" in log.splitlines()[0]
    names = tarfile.open(out / "results.tar.gz").getnames()
    assert {n.rsplit("/", 1)[0] for n in names} == {"g/a", "g/b"}
    assert ar.unpack(out / "results.tar.gz", tmp_path / "clone" / "results", rp.unpacked_names()) == [
        "added g/a (4 files)", "added g/b (4 files)"]


def test_the_gpu_batch_script_benches_then_trains_in_one_allocation(tmp_path):
    """MODE=bench-batch on the CPU: the bench times one run of the manifest's one model (the last of its settings,
    which differ in their epochs only), writes its row, and the batch planned with it trains both runs within what
    is left of the budget (the stored speeds know no synthetic model: without the bench nothing would start)."""
    path = tiny_manifest(tmp_path, {"b": 1, "a": 1})
    out = tmp_path / "out"
    env = {**os.environ, "OUT": str(out), "MANIFEST": str(path), "DEVICE": "cpu", "BUDGET_MINUTES": "3",
           "BENCH_MINUTES": "1", "JOBS": "2", "MODE": "bench-batch", "ROOT": str(tmp_path / "root"),
           "PYTHON": sys.executable}
    (tmp_path / "root").mkdir()
    done = subprocess.run(["bash", str(REPO / "results" / "scripts" / "gpu_batch.sh")], env=env, capture_output=True,
                          text=True, timeout=400)
    assert done.returncode == 0, done.stderr
    rows = json.loads((out / "bench-batch.json").read_text())
    assert [(r["preset"], r["model"]) for r in rows] == [("g/a", "synthetic-tiny")]
    log = (out / "log.txt").read_text()
    assert "benching 1 model(s)" in log and "# bench ended with exit status 0" in log and "1 model(s) benched" in log
    left = float(log.split(" minutes left for the batch")[0].rsplit(" ", 1)[1])
    assert 1 < left < 3 and f"budget {left:.1f} min" in log and "batch: 2 of 2 started runs done" in log
    assert {n.rsplit("/", 1)[0] for n in tarfile.open(out / "results.tar.gz").getnames()} == {"g/a", "g/b"}
