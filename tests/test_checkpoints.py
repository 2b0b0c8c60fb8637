"""The checkpoint of a run (mlm/checkpoints.py): one atomic file with the best weights inside, mid-epoch
checkpoints that resume at the next batch bit for bit, the random state of the run's own GPU only, and run
folders of the older layout (best.pt beside the checkpoint) still resumed and read."""

from __future__ import annotations

import pytest
import torch

import mlm.training
from mlm import checkpoints
from mlm.checkpoints import CheckpointError
from mlm.configs import get_preset
from mlm.training import load_run, train

pytestmark = pytest.mark.usefixtures("no_data_env")

SMALL = ["data.max_train_tokens=3000", "model.embed_size=16", "model.hidden_size=16", "train.epochs=3"]
# families whose epochs carry something a mid-epoch checkpoint must keep: dropout's random state and the LSTM
# state (stream), the shuffled order (sentence), a head's memory (document), the regularizer's noise
MID_EPOCH_CASES = {
    "stream": ["model.dropout=0.3", "train.schedule=decay", "train.decay_start=1"],
    "sentence": ["data.protocol=sentence", "model.dropout=0.3"],
    "document-window": ["data.protocol=document", "model.head=window", "model.window_kind=key-value-predict",
                        "model.embed_size=24", "model.hidden_size=24"],
    "noise-kn": ["model.regularizer=noise", "model.embed_dropout=0.3", "model.tie_weights=true"],
}


def tiny(*overrides: str):
    return get_preset("synthetic-tiny", overrides=[*SMALL, *overrides])


def interrupt_at(monkeypatch, call: int):
    """Stop training (as a kill would) at the ``call``-th training forward pass from now."""
    real, calls = mlm.training.training_forward, []

    def forward(*args, **kwargs):
        calls.append(1)
        if len(calls) == call:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(mlm.training, "training_forward", forward)
    return lambda: monkeypatch.setattr(mlm.training, "training_forward", real)


@pytest.mark.parametrize("case", list(MID_EPOCH_CASES))
def test_a_run_stopped_inside_an_epoch_resumes_at_the_next_batch_bit_for_bit(tmp_path, monkeypatch, case):
    """Checkpoints every batch (train.checkpoint_minutes tiny), the run killed in the middle of epoch 2: the
    resumed run ends with the weights, history and test perplexity of a run never stopped (and never
    checkpointed inside an epoch)."""
    overrides = MID_EPOCH_CASES[case]
    whole = train(tiny(*overrides), tmp_path / "whole", progress=False)
    batches = len(mlm.training.build_batches(whole.config, whole.corpus, "train"))
    stopped = tiny(*overrides, "train.checkpoint_minutes=1e-9")
    restore = interrupt_at(monkeypatch, batches + batches // 2 + 1)  # in epoch 2, after half its batches
    with pytest.raises(KeyboardInterrupt):
        train(stopped, tmp_path / "stopped", progress=False)
    restore()
    ckpt = torch.load(tmp_path / "stopped" / "checkpoint.pt", weights_only=False)
    assert ckpt["epoch"] == 1 and ckpt["in_epoch"]["batch"] == batches // 2
    resumed = train(stopped, tmp_path / "stopped", progress=False)
    for key in ("train_ppl", "valid_ppl", "lr"):
        assert [h[key] for h in resumed.history] == [h[key] for h in whole.history], key
    for (name, a), b in zip(whole.model.state_dict().items(), resumed.model.state_dict().values()):
        assert torch.equal(a, b), name
    assert resumed.result["test_ppl"] == whole.result["test_ppl"]
    assert resumed.result["updates"] == whole.result["updates"]


def test_mid_epoch_checkpoints_are_off_by_default_and_follow_the_clock(tmp_path, monkeypatch):
    """train.checkpoint_minutes=0 (the default) writes checkpoints at epoch ends only; a positive value writes
    one when that much time has passed since the last."""
    saved = []
    real = mlm.training.save_checkpoint
    monkeypatch.setattr(mlm.training, "save_checkpoint",
                        lambda *a, **k: (saved.append(a[-1]), real(*a, **k)))  # in_epoch, or None
    assert get_preset("synthetic-tiny").train.checkpoint_minutes == 0
    train(tiny("train.epochs=1"), tmp_path / "off", progress=False)
    assert saved == [None]
    clock = iter(range(0, 10**6, 20))  # every reading of the clock 20 seconds after the last
    monkeypatch.setattr(mlm.training.time, "perf_counter", lambda: next(clock))
    saved.clear()
    train(tiny("train.epochs=1", "train.checkpoint_minutes=1"), tmp_path / "on", progress=False)
    inside = [s["batch"] for s in saved if s is not None]
    assert saved[-1] is None and len(inside) >= 2 and all(b - a >= 2 for a, b in zip(inside, inside[1:]))


def test_the_best_weights_live_inside_the_one_checkpoint(tmp_path):
    """No best.pt: checkpoint.pt holds the best weights, which load_run reads for the folder and for the name
    run/best.pt (what `python -m mlm complete RUN/best.pt` gives)."""
    run = train(tiny("model.dropout=0.3"), tmp_path / "run", progress=False)
    assert sorted(p.name for p in (tmp_path / "run").glob("*.pt")) == ["checkpoint.pt"]
    best = torch.load(tmp_path / "run" / "checkpoint.pt", weights_only=False)["best_model"]
    for path in (tmp_path / "run", tmp_path / "run" / "best.pt"):
        loaded = load_run(path).model.state_dict()
        assert all(torch.equal(loaded[k], best[k]) and torch.equal(best[k], v)
                   for k, v in run.model.state_dict().items())
    last = load_run(tmp_path / "run", weights="last").model.state_dict()
    assert all(torch.equal(last[k], v) for k, v in
               torch.load(tmp_path / "run" / "checkpoint.pt", weights_only=False)["model"].items())


def older_layout(tmp_path):
    """A run folder as the engine wrote them before: epoch 1's checkpoint without the best weights, best.pt beside."""
    cfg = tiny()
    train(cfg, tmp_path / "old", progress=False, max_epochs=1)
    ckpt = torch.load(tmp_path / "old" / "checkpoint.pt", weights_only=False)
    best = ckpt.pop("best_model")
    del ckpt["in_epoch"]
    torch.save(ckpt, tmp_path / "old" / "checkpoint.pt")
    torch.save(best, tmp_path / "old" / "best.pt")
    return cfg, tmp_path / "old", best


def test_a_folder_of_the_older_layout_is_read_and_resumed(tmp_path):
    cfg, old, best = older_layout(tmp_path)
    loaded = load_run(old).model.state_dict()
    assert all(torch.equal(loaded[k], v) for k, v in best.items())
    whole = train(cfg, tmp_path / "whole", progress=False)
    resumed = train(cfg, old, progress=False)
    assert [h["valid_ppl"] for h in resumed.history] == [h["valid_ppl"] for h in whole.history]
    assert resumed.result["test_ppl"] == whole.result["test_ppl"]
    assert not (old / "best.pt").exists()  # its weights moved into the checkpoint


def test_a_broken_best_file_of_the_older_layout_is_a_clear_error(tmp_path):
    cfg, old, _ = older_layout(tmp_path)
    (old / "best.pt").write_bytes(b"not weights")
    with pytest.raises(CheckpointError, match="best.pt"):
        load_run(old)
    with pytest.raises(CheckpointError, match="best.pt"):
        train(cfg, old, progress=False)
    (old / "best.pt").unlink()
    with pytest.raises(CheckpointError, match="no best weights"):
        load_run(old)


class FakeCuda:
    """torch.cuda's random-state functions for a machine with ``count`` GPUs (recording what is set)."""

    def __init__(self, monkeypatch, count: int, current: int = 0):
        self.set = []
        monkeypatch.setattr(torch.cuda, "get_rng_state", lambda device="cuda": torch.tensor([7], dtype=torch.uint8))
        monkeypatch.setattr(torch.cuda, "set_rng_state", lambda state, device="cuda": self.set.append(int(state[0])))
        monkeypatch.setattr(torch.cuda, "current_device", lambda: current)
        monkeypatch.setattr(torch.cuda, "device_count", lambda: count)
        for name in ("get_rng_state_all", "set_rng_state_all"):
            monkeypatch.setattr(torch.cuda, name, lambda *a: pytest.fail(f"{name}: every GPU's state"))


def test_the_random_state_is_the_run_gpus_alone(monkeypatch):
    """Saved: the CPU's and the run's own GPU's state; restored onto the current GPU, so a run resumes with fewer
    GPUs visible (a Slurm requeue onto a smaller allocation). A CPU run saves no GPU state."""
    cuda = FakeCuda(monkeypatch, count=1)
    state = checkpoints.rng_state(torch.device("cuda"))
    assert state["cuda"].tolist() == [7] and checkpoints.rng_state("cpu")["cuda"] is None
    checkpoints.restore_rng(state, torch.device("cuda"))
    assert cuda.set == [7]


def test_an_older_checkpoints_states_of_every_gpu_restore_the_runs_own(monkeypatch):
    """Checkpoints written before held one state per visible GPU: the run's own is restored, the first where
    that GPU is not visible now."""
    states = [torch.tensor([i], dtype=torch.uint8) for i in (10, 11, 12)]
    cuda = FakeCuda(monkeypatch, count=2, current=1)
    rng = {"torch": torch.get_rng_state(), "cuda": states}
    checkpoints.restore_rng(rng, torch.device("cuda"))  # the current device, 1
    checkpoints.restore_rng(rng, torch.device("cuda", 0))
    checkpoints.restore_rng({**rng, "cuda": states[:1]}, torch.device("cuda"))  # one GPU then, GPU 1 now
    assert cuda.set == [11, 10, 10]
