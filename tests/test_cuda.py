"""The GPU paths on a real CUDA device (skipped where there is none, as on CI's CPU machines).

Run on a GPU machine with ``python -m pytest tests/test_cuda.py``. Three kinds of check:

* every model family computes on CUDA what it computes on the CPU: the same weights, batch and targets give
  the same summed NLL and the same gradients (fp32, TF32 off), dropout and noise switched off;
* every family of ``tests/test_training.py``'s ``CPU_RUNS`` trains on CUDA: two epochs, the training
  perplexity falls and the validation perplexity lands near the CPU's (dropout and noise draw from CUDA's
  generator there, so the numbers differ by the draws, not by more);
* a run stopped after one epoch on CUDA resumes from its checkpoint, on CUDA and on the CPU, and ends where
  the uninterrupted run ends (to float32 rounding: cuDNN's and the embedding's backward sum in another order),
  and so does a run stopped in the middle of an epoch (a mid-epoch checkpoint);
* the speed switches (the fused optimiser, ``torch.compile`` with CUDA graphs) train what the default path does.
"""

from __future__ import annotations

import copy
import os

import pytest
import torch

from mlm.configs import get_preset
from mlm.training import build_batches, build_model, load_data, set_matmul_precision, train, training_forward

from test_checkpoints import interrupt_at
from test_training import CPU_RUNS

# MLM_TEST_DEVICE=cpu runs the same checks with the CPU in CUDA's place (a dry run of this file's own code)
DEVICE = os.environ.get("MLM_TEST_DEVICE", "cuda")
pytestmark = [pytest.mark.usefixtures("no_data_env"),
              pytest.mark.skipif(DEVICE == "cuda" and not torch.cuda.is_available(), reason="needs a CUDA device")]

BASE = ["data.max_train_tokens=1500", "data.max_eval_tokens=400", "model.embed_size=16", "model.hidden_size=16",
        "train.epochs=2"]
# overrides that switch off every random draw of a family (dropout, noise), for the exact comparison
NO_DRAWS = ["model.dropout=0", "model.embed_dropout=0", "model.recurrent_dropout=0", "model.noise_gamma=0"]


def _cfg(overrides, device):
    return get_preset("synthetic-tiny", overrides=[*BASE, *overrides, f"train.device={device}"])


@pytest.mark.parametrize("case", list(CPU_RUNS))
def test_every_family_computes_on_cuda_what_it_computes_on_the_cpu(case):
    set_matmul_precision("fp32")
    overrides = [o for o in CPU_RUNS[case][0] if not o.startswith(("model.dropout", "model.embed_dropout",
                                                                   "model.recurrent_dropout"))]
    cfg = _cfg([*overrides, *NO_DRAWS[:3]], "cpu")
    corpus = load_data(cfg)
    torch.manual_seed(0)
    cpu_model = build_model(cfg, len(corpus.vocab), corpus.vocab.pad_id, corpus)
    cuda_model = copy.deepcopy(cpu_model).to(DEVICE)
    batch = next(iter(build_batches(cfg, corpus, "train", shuffle=False)))
    results = []
    for model, device in ((cpu_model, "cpu"), (cuda_model, DEVICE)):
        model.train()  # cuDNN's LSTM has a backward pass in training mode only
        for module in (m for m in model.modules() if m is not model):
            if isinstance(module, torch.nn.Dropout) or module is getattr(model, "regularizer", None):
                module.eval()  # no dropout, no noise: a regularizer draws nothing outside training
        out, nll, penalty = training_forward(model, batch.to(device))
        loss = nll + (penalty if penalty is not None else 0)
        loss.backward()
        results.append((nll.item(), {n: p.grad.detach().cpu() for n, p in model.named_parameters()
                                     if p.grad is not None}, out.logits.detach().cpu()))
    (nll_a, grads_a, logits_a), (nll_b, grads_b, logits_b) = results
    assert nll_b == pytest.approx(nll_a, rel=1e-5)
    torch.testing.assert_close(logits_b, logits_a, rtol=1e-4, atol=1e-4)
    assert grads_a.keys() == grads_b.keys() and grads_a
    for name in grads_a:
        torch.testing.assert_close(grads_b[name], grads_a[name], rtol=1e-3, atol=1e-5, msg=name)


@pytest.mark.parametrize("case", list(CPU_RUNS))
def test_every_family_trains_on_cuda(case):
    overrides, expected = CPU_RUNS[case]
    run = train(_cfg(overrides, DEVICE), progress=False)
    assert run.result["device"].startswith(DEVICE) and (DEVICE != "cuda" or run.result.get("gpu"))
    assert run.history[-1]["train_ppl"] < run.history[0]["train_ppl"]
    # the CPU's numbers, within what other dropout/noise draws move a 1,500-token run
    got = (*(h["valid_ppl"] for h in run.history), run.result["test_ppl"])
    assert got == pytest.approx(expected, rel=0.05)


@pytest.mark.parametrize("case", ["plain", "sentence-attentive", "smooth-kn"])
@pytest.mark.parametrize("resume_on", [DEVICE, "cpu"])
def test_a_cuda_run_resumes_from_its_checkpoint(tmp_path, case, resume_on):
    overrides = [*CPU_RUNS[case][0], "train.epochs=3"]
    whole = train(_cfg(overrides, DEVICE), tmp_path / "whole", progress=False)
    part = train(_cfg(overrides, DEVICE), tmp_path / "part", progress=False, max_epochs=1)
    assert part.result["finished"] is False
    resumed = train(_cfg(overrides, resume_on), tmp_path / "part", progress=False)
    assert [h["epoch"] for h in resumed.history] == [1, 2, 3]
    assert resumed.result["device"].startswith(resume_on)
    if resume_on == DEVICE:  # the same generators: the same draws, the same run to rounding
        for a, b in zip(whole.history, resumed.history):
            assert b["valid_ppl"] == pytest.approx(a["valid_ppl"], rel=1e-4)
        assert resumed.result["test_ppl"] == pytest.approx(whole.result["test_ppl"], rel=1e-4)
    else:  # epochs 2-3 draw from the CPU's generator: the same model family, other draws
        assert resumed.history[0] == part.history[0]
        assert resumed.result["test_ppl"] == pytest.approx(whole.result["test_ppl"], rel=0.05)


def test_bf16_trains_on_cuda():
    fp32 = train(_cfg(["train.epochs=2"], DEVICE), progress=False)
    bf16 = train(_cfg(["train.epochs=2", "train.precision=bf16"], DEVICE), progress=False)
    assert bf16.history[-1]["train_ppl"] < bf16.history[0]["train_ppl"]
    assert bf16.history[-1]["valid_ppl"] == pytest.approx(fp32.history[-1]["valid_ppl"], rel=0.02)


@pytest.mark.parametrize("case", ["plain", "sentence-attentive", "smooth-kn"])
def test_the_speed_switches_train_on_cuda_what_the_default_path_does(case):
    """Fused optimiser steps and the compiled forward pass replayed as CUDA graphs: the same draws (eager's
    generator), so two epochs end where the default path ends, to float32 rounding."""
    default = train(_cfg(CPU_RUNS[case][0], DEVICE), progress=False)
    fast = train(_cfg([*CPU_RUNS[case][0], "train.fused_optimizer=true", "train.compile=reduce-overhead"], DEVICE),
                 progress=False)
    for a, b in zip(default.history, fast.history):
        assert b["valid_ppl"] == pytest.approx(a["valid_ppl"], rel=1e-3)
    assert fast.result["test_ppl"] == pytest.approx(default.result["test_ppl"], rel=1e-3)


@pytest.mark.parametrize("case", ["plain", "document-window"])
def test_a_cuda_run_stopped_inside_an_epoch_resumes_at_the_next_batch(tmp_path, monkeypatch, case):
    overrides = [*CPU_RUNS[case][0], "train.checkpoint_minutes=1e-9"]
    whole = train(_cfg(overrides, DEVICE), tmp_path / "whole", progress=False)
    batches = len(build_batches(whole.config, whole.corpus, "train"))
    restore = interrupt_at(monkeypatch, batches + batches // 2 + 1)
    with pytest.raises(KeyboardInterrupt):
        train(_cfg(overrides, DEVICE), tmp_path / "part", progress=False)
    restore()
    resumed = train(_cfg(overrides, DEVICE), tmp_path / "part", progress=False)
    for a, b in zip(whole.history, resumed.history):
        assert b["valid_ppl"] == pytest.approx(a["valid_ppl"], rel=1e-4)
    assert resumed.result["test_ppl"] == pytest.approx(whole.result["test_ppl"], rel=1e-4)

