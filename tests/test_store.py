"""``reproduce --store-from ROOT [--twin LABEL]`` (:mod:`mlm.store`): runs trained under another root stored
here, a rerun on another kind of machine keeping the stored run as its machine-check twin."""

from __future__ import annotations

import json

import pytest

from mlm import reproduce as rp
from mlm.cli import build_parser
from mlm.configs import ConfigError
from mlm.evidence import machine_pairs
from mlm.store import store_from

XEON, EPYC = "Intel(R) Xeon(R) Processor", "AMD EPYC 7B13"
TINY = ("model.embed_size=16", "model.hidden_size=16")


def spec(seed=0, overrides=TINY):
    return rp.RunSpec("g", f"wide/seed{seed}", "synthetic-tiny", overrides=overrides, seed=seed)


def finished(root, s, test_ppl, cpu=XEON, **config_changes):
    """A finished run of ``s`` stored under ``root/results`` as ``reproduce`` stores it."""
    out = rp.Layout(root).result_dir(s)
    out.mkdir(parents=True)
    config = s.config().to_dict()
    config["train"]["threads"] = 1
    for key, value in config_changes.items():
        section, name = key.split(".")
        config[section][name] = value
    (out / "config.json").write_text(json.dumps(config))
    (out / "metrics.jsonl").write_text('{"epoch": 1}\n')
    (out / "command.txt").write_text("OMP_NUM_THREADS=1 python -m mlm train synthetic-tiny ...\n")
    (out / "result.json").write_text(json.dumps({"test_ppl": test_ppl, "cpu_model": cpu, "config": config}))
    return out


def test_a_finished_run_is_stored_and_an_unfinished_one_waits(tmp_path):
    here, campaign = rp.Layout(tmp_path / "here"), tmp_path / "campaign"
    finished(campaign, spec(0), 100.0)
    report = store_from([spec(0), spec(1)], "m.json", here, campaign, echo=lambda s: None)
    assert report == [f"waiting g/wide/seed1 (not finished under {campaign})", "added g/wide/seed0"]
    stored = here.result_dir(spec(0))
    assert json.loads((stored / "result.json").read_text())["test_ppl"] == 100.0
    assert (stored / "command.txt").read_text().startswith("OMP_NUM_THREADS=1 python -m mlm train")
    assert store_from([spec(0)], "m.json", here, campaign, echo=lambda s: None) == ["unchanged g/wide/seed0"]


def test_a_run_of_other_settings_is_refused(tmp_path):
    here, campaign = rp.Layout(tmp_path / "here"), tmp_path / "campaign"
    finished(campaign, spec(0), 100.0, **{"train.lr": 0.5})
    with pytest.raises(ConfigError, match="train.lr: 0.5"):
        store_from([spec(0)], "m.json", here, campaign, echo=lambda s: None)
    assert not (tmp_path / "here").exists()


def test_other_results_are_refused_without_a_twin_and_on_the_same_kind_of_machine(tmp_path):
    here, campaign = rp.Layout(tmp_path / "here"), tmp_path / "campaign"
    finished(tmp_path / "here", spec(0), 101.0, cpu=EPYC)
    finished(campaign, spec(0), 100.0)
    finished(campaign, spec(1), 100.0)
    with pytest.raises(ConfigError, match="give --twin LABEL"):
        store_from([spec(1), spec(0)], "m.json", here, campaign, echo=lambda s: None)
    assert not here.result_dir(spec(1)).exists()  # nothing written, not even the run that had no conflict
    finished(tmp_path / "here", spec(2), 101.0)
    finished(campaign, spec(2), 100.0)
    with pytest.raises(ConfigError, match="both trained on Xeon"):
        store_from([spec(2)], "m.json", here, campaign, twin="epyc", echo=lambda s: None)


def test_a_rerun_on_another_kind_of_machine_keeps_its_twin(tmp_path):
    """The stored EPYC run moves to machine-check/epyc with its command prefixed and its seed named in the
    twins' manifest, which ``reproduce`` can read; the pair is then a measured machine shift."""
    results = tmp_path / "here" / "results"
    here, campaign = rp.Layout(tmp_path / "here"), tmp_path / "campaign"
    for seed in (0, 1):
        finished(tmp_path / "here", spec(seed), 102.0, cpu=EPYC)
        finished(campaign, spec(seed), 100.0)
    report = store_from([spec(0), spec(1)], "m.json", here, campaign, twin="epyc", echo=lambda s: None)
    assert report[0] == "twinned g/wide/seed0 (the stored run kept as machine-check/epyc/g/wide/seed0)"
    twin = results / "machine-check" / "epyc" / "g" / "wide" / "seed0"
    assert json.loads((twin / "result.json").read_text())["test_ppl"] == 102.0
    assert (twin / "command.txt").read_text().startswith("(trained on EPYC as g/wide/seed0, whose stored run is now")
    assert json.loads((here.result_dir(spec(0)) / "result.json").read_text())["test_ppl"] == 100.0
    twins = rp.load_manifest(results / "machine-check" / "machine-check.json")
    assert [s.id for s in twins] == ["machine-check/epyc/g/wide/seed0", "machine-check/epyc/g/wide/seed1"]
    assert twins[0].config() == spec(0).config()
    pairs = machine_pairs(results)
    assert [(p.run, p.kinds) for p in pairs] == [("g/wide/seed0", ("EPYC", "Xeon")), ("g/wide/seed1", ("EPYC", "Xeon"))]
    assert pairs[0].shift == pytest.approx(0.02)


def test_the_command_line_stores_from_another_root(tmp_path, capsys):
    manifest = tmp_path / "m.json"
    manifest.write_text(json.dumps({"runs": [{"group": "g", "name": "wide", "preset": "synthetic-tiny",
                                              "set": list(TINY), "seeds": [0]}]}))
    finished(tmp_path / "campaign", spec(0), 100.0)
    args = build_parser().parse_args(["reproduce", str(manifest), "--root", str(tmp_path / "here"),
                                      "--store-from", str(tmp_path / "campaign")])
    assert args.func(args) == 0
    assert "added g/wide/seed0" in capsys.readouterr().out
    args = build_parser().parse_args(["reproduce", str(manifest), "--root", str(tmp_path / "here"), "--twin", "x"])
    with pytest.raises(ConfigError, match="--twin LABEL goes with --store-from"):
        args.func(args)


def test_post_steps_run_where_missing_and_their_command_is_added(tmp_path):
    """A manifest's post-step the campaign did not run needs the run's weights; its output, once there, is
    stored with the command that wrote it."""
    here, campaign = rp.Layout(tmp_path / "here"), tmp_path / "campaign"
    post = rp.RunSpec("g", "wide/seed0", "synthetic-tiny", overrides=TINY, seed=0, post=("history-cut",))
    out = finished(campaign, post, 100.0)
    with pytest.raises(ConfigError, match="need the run's weights"):
        store_from([post], "compare", here, campaign, echo=lambda s: None)
    (out / "history.json").write_text("{}")
    store_from([post], "compare", here, campaign, echo=lambda s: None)
    command = (here.result_dir(post) / "command.txt").read_text().splitlines()
    assert command[1] == "OMP_NUM_THREADS=1 python -m mlm reproduce compare --only g/wide/seed0 --post-only"
    assert (here.result_dir(post) / "history.json").read_text() == "{}"
