"""The speed switches (docs/cluster.md, "Speed"): each computes what the default path computes, within the
float tolerance stated, on the CPU; and ``python -m mlm bench`` reports them beside the default, alone and N at
a time."""

from __future__ import annotations

import json

import pytest
import torch

from mlm.cli import build_parser
from mlm.configs import ConfigError, get_preset
from mlm.training import build_optimizer, train

pytestmark = pytest.mark.usefixtures("no_data_env")

SMALL = ["data.max_train_tokens=1500", "data.max_eval_tokens=400", "model.embed_size=16", "model.hidden_size=16",
         "train.epochs=2", "train.device=cpu"]


def run(*overrides: str):
    return train(get_preset("synthetic-tiny", overrides=[*SMALL, *overrides]), progress=False)


def assert_same_training(a, b, rel: float):
    assert [h["valid_ppl"] for h in a.history] == pytest.approx([h["valid_ppl"] for h in b.history], rel=rel)
    assert a.result["test_ppl"] == pytest.approx(b.result["test_ppl"], rel=rel)
    for (name, p), q in zip(a.model.state_dict().items(), b.model.state_dict().values()):
        torch.testing.assert_close(p, q, rtol=rel, atol=rel, msg=name)


@pytest.mark.parametrize("optimizer", [["train.optimizer=sgd", "train.weight_decay=1e-3"],
                                       ["train.optimizer=adam", "train.lr=0.003"],
                                       ["train.optimizer=rmsprop", "train.lr=0.001"]])
def test_the_fused_optimizer_trains_what_the_default_one_does(optimizer):
    """train.fused_optimizer: the same update, summed in another order: two epochs agree to 1e-5."""
    cfg = get_preset("synthetic-tiny", overrides=[*SMALL, *optimizer, "train.fused_optimizer=true"])
    from mlm.training import build_model

    step = build_optimizer(cfg, build_model(cfg, 30)).defaults
    assert step.get("fused") or step.get("foreach")
    assert_same_training(run(*optimizer, "model.dropout=0.3", "train.fused_optimizer=true"),
                         run(*optimizer, "model.dropout=0.3"), rel=1e-5)


def test_the_compiled_model_trains_what_the_eager_one_does(tmp_path):
    """train.compile (torch.compile through inductor; its dropout masks drawn as eager draws them): two epochs
    agree to 1e-4, and the checkpoint keeps the model's own parameter names (a run resumes compiled or not)."""
    compiled = train(get_preset("synthetic-tiny", overrides=[*SMALL, "model.dropout=0.3", "train.compile=default"]),
                     tmp_path / "run", progress=False)
    assert_same_training(compiled, run("model.dropout=0.3"), rel=1e-4)
    saved = torch.load(tmp_path / "run" / "checkpoint.pt", weights_only=False)["model"]
    assert list(saved) == list(compiled.model.state_dict())


def test_an_unknown_compile_mode_is_refused():
    with pytest.raises(ConfigError, match="train.compile"):
        get_preset("synthetic-tiny", overrides=["train.compile=fast"])


def test_bench_reports_each_variant_alone_and_several_at_a_time(tmp_path, capsys):
    """``bench PRESET --variant fast=... --concurrent 1 --concurrent 2``: a row per variant and concurrency; the
    concurrent rows time every process over the same seconds and report each process's speed and their sum."""
    out = tmp_path / "bench.json"
    args = build_parser().parse_args(
        ["bench", "synthetic-tiny", "--device", "cpu", "--threads", "1", "--batches", "3",
         "--set", "data.max_train_tokens=1500", "--variant", "fused=train.fused_optimizer=true",
         "--concurrent", "1", "--concurrent", "2", "--seconds", "1", "--out", str(out)])
    assert args.func(args) == 0
    rows = json.loads(out.read_text())
    assert [(r["variant"], r["concurrent"]) for r in rows] == [("default", 1), ("fused", 1), ("default", 2),
                                                               ("fused", 2)]
    assert rows[1]["overrides"][-1] == "train.fused_optimizer=true" and "fused" in capsys.readouterr().out
    for row in rows[2:]:
        assert len(row["processes"]) == 2 and all(p["train_tokens_per_second"] > 0 for p in row["processes"])
        assert row["total_train_tokens_per_second"] == pytest.approx(
            sum(p["train_tokens_per_second"] for p in row["processes"]))
        assert row["train_tokens_per_second"] == min(p["train_tokens_per_second"] for p in row["processes"])
