"""The training engine on the synthetic corpus: learning, run files, exact resume, clear failures,
and perplexity exactly as docs/design.md, section 4 defines it."""

from __future__ import annotations

import contextlib
import json
import math
import os

import pytest
import torch
import torch.nn.functional as F

import mlm.training
from mlm.configs import Config, get_preset
from mlm.data.batching import DocumentBatches, SentenceBatches, StreamBatches
from mlm.data.synthetic import synthetic_corpus
from mlm.evaluation import evaluate, masked_nll
from mlm.models import LanguageModel
from mlm.checkpoints import load_checkpoint
from mlm.training import CheckpointError, TrainingDiverged, train

pytestmark = pytest.mark.usefixtures("no_data_env")

# Smaller than synthetic-tiny: a seventh of its training text and a 16-unit LSTM.
SMALL = ["data.max_train_tokens=3000", "model.embed_size=16", "model.hidden_size=16", "train.epochs=3"]


def tiny(*overrides: str) -> Config:
    return get_preset("synthetic-tiny", overrides=[*SMALL, *overrides])


# -- a whole run of the synthetic-tiny preset (shared by several tests) -------------------------
@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    run_dir = tmp_path_factory.mktemp("tiny-run")
    result = train(get_preset("synthetic-tiny"), run_dir, progress=False)
    torch.set_num_threads(threads)
    return result


def test_synthetic_run_learns(tiny_run):
    """Training perplexity falls from the first to the last epoch; validation ends far below |V|."""
    history = tiny_run.history
    assert len(history) == 3
    assert history[-1]["train_ppl"] < history[0]["train_ppl"]
    assert history[-1]["valid_ppl"] < 0.5 * len(tiny_run.corpus.vocab)
    assert all(math.isfinite(h["valid_ppl"]) for h in history)


def test_run_dir_files(tiny_run):
    """config.json, metrics.jsonl (one line per epoch), result.json and the checkpoints are written."""
    run_dir = tiny_run.run_dir
    cfg = Config.from_dict(json.loads((run_dir / "config.json").read_text()))
    assert cfg == tiny_run.config
    metrics = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [m["epoch"] for m in metrics] == [1, 2, 3]
    assert [m["valid_ppl"] for m in metrics] == [h["valid_ppl"] for h in tiny_run.history]
    result = json.loads((run_dir / "result.json").read_text())
    assert result["finished"] is True and result["epochs_run"] == 3
    assert result["test_ppl"] == pytest.approx(tiny_run.result["test_ppl"])
    assert result["test_tokens"] == tiny_run.corpus.num_tokens("test")
    assert result["best_valid_ppl"] == min(h["valid_ppl"] for h in tiny_run.history)
    assert result["parameters"] == tiny_run.model.num_parameters()
    best = torch.load(run_dir / "checkpoint.pt", weights_only=False)["best_model"]  # one file holds them
    for k, v in tiny_run.model.state_dict().items():  # the returned model holds the best weights
        assert torch.equal(best[k], v)
    assert not (run_dir / "best.pt").exists()
    assert not list(run_dir.glob(".*"))  # no temporary files left


def test_finished_run_is_loaded_not_retrained(tiny_run):
    """Calling train again on a finished run folder trains nothing and reports the same test ppl."""
    metrics_before = (tiny_run.run_dir / "metrics.jsonl").read_bytes()
    again = train(tiny_run.config, tiny_run.run_dir, progress=False)
    assert (tiny_run.run_dir / "metrics.jsonl").read_bytes() == metrics_before
    assert [h["valid_ppl"] for h in again.history] == [h["valid_ppl"] for h in tiny_run.history]
    assert again.result["test_ppl"] == tiny_run.result["test_ppl"]


# -- exact resume ----------------------------------------------------------------------------
RESUME_CASES = {
    # stream with dropout (global RNG restored) and a decaying lr (lr schedule restored)
    "stream": ["model.dropout=0.3", "train.schedule=decay", "train.decay_start=1", "train.decay_factor=2"],
    # sentence batches are shuffled: the shuffle generator must be restored too
    "sentence": ["data.protocol=sentence", "model.dropout=0.3"],
}


@pytest.mark.parametrize("case", sorted(RESUME_CASES))
def test_resume_gives_the_same_result(tmp_path, case):
    """3 epochs in one go == 1 epoch, stop, resume for the rest: identical weights and history."""
    cfg = tiny(*RESUME_CASES[case])
    whole = train(cfg, tmp_path / "a", progress=False)
    part = train(cfg, tmp_path / "b", progress=False, max_epochs=1)
    assert len(part.history) == 1 and part.result["finished"] is False
    assert not (tmp_path / "b" / "result.json").exists()
    resumed = train(cfg, tmp_path / "b", progress=False)
    assert [h["epoch"] for h in resumed.history] == [1, 2, 3]
    for key in ("valid_ppl", "train_ppl", "lr"):
        assert [h[key] for h in resumed.history] == [h[key] for h in whole.history], key
    for (name, p), (name2, q) in zip(whole.model.state_dict().items(), resumed.model.state_dict().items()):
        assert name == name2 and torch.equal(p, q), name
    last_a = torch.load(tmp_path / "a" / "checkpoint.pt", weights_only=False)["model"]
    last_b = torch.load(tmp_path / "b" / "checkpoint.pt", weights_only=False)["model"]
    assert all(torch.equal(last_a[k], last_b[k]) for k in last_a)
    assert resumed.result["test_ppl"] == whole.result["test_ppl"]
    if case == "stream":
        assert [h["lr"] for h in whole.history] == [0.01, 0.005, 0.0025]


@pytest.fixture
def one_epoch_run(tmp_path):
    """A run folder holding the checkpoint of epoch 1 of a 3-epoch run."""
    cfg = tiny("train.epochs=3")
    train(cfg, tmp_path / "run", progress=False, max_epochs=1)
    return cfg, tmp_path / "run"


@pytest.mark.filterwarnings("ignore:.*to a meta parameter")
def test_resume_on_another_device_hands_cpu_rng_states_to_the_setters(one_epoch_run, monkeypatch):
    """Resuming on a device other than the CPU (here "meta": tensors without data, where no epoch can run)
    restores the weights on that device and the random states as CPU byte tensors, as torch's setters need
    (a checkpoint loaded onto a GPU used to crash every resume there)."""
    cfg, run_dir = one_epoch_run
    handed = []
    real = torch.set_rng_state
    monkeypatch.setattr(torch, "set_rng_state", lambda state: (handed.append(state), real(state)))
    run = train(tiny("train.epochs=3", "train.device=meta"), run_dir, progress=False, max_epochs=0)
    assert [h["epoch"] for h in run.history] == [1] and not run.result["finished"]
    assert {p.device.type for p in run.model.parameters()} == {"meta"}
    [state] = handed
    assert state.device.type == "cpu" and state.dtype == torch.uint8


def test_wall_time_counts_every_session(one_epoch_run):
    """result.json's wall_seconds adds the sessions of a resumed run; a checkpoint from before the wall
    time was kept resumes too, counting its training seconds."""
    cfg, run_dir = one_epoch_run
    first = torch.load(run_dir / "checkpoint.pt", weights_only=False)
    assert first["wall_seconds"] >= first["train_seconds"] > 0
    result = train(cfg, run_dir, progress=False).result
    assert result["wall_seconds"] > first["wall_seconds"] and result["wall_seconds"] >= result["train_seconds"]
    old = dict(first)
    del old["wall_seconds"]
    torch.save(old, run_dir / "checkpoint.pt")
    (run_dir / "result.json").unlink()
    result = train(cfg, run_dir, progress=False).result
    assert result["wall_seconds"] > first["train_seconds"]


def test_resume_with_changed_config_is_refused(one_epoch_run):
    """A different configuration raises CheckpointError naming the key; nothing is modified."""
    cfg, run_dir = one_epoch_run
    before = {name: (run_dir / name).read_bytes() for name in ("checkpoint.pt", "config.json")}
    with pytest.raises(CheckpointError, match="train.lr"):
        train(tiny("train.lr=0.02"), run_dir, progress=False)
    for name, data in before.items():
        assert (run_dir / name).read_bytes() == data, name


def test_resume_may_extend_the_epoch_budget(one_epoch_run):
    """Only train.epochs may change between sessions: a longer budget continues the run."""
    cfg, run_dir = one_epoch_run
    longer = tiny("train.epochs=2")
    result = train(longer, run_dir, progress=False)
    assert [h["epoch"] for h in result.history] == [1, 2] and result.result["finished"]


def test_a_stop_between_checkpoint_and_metrics_loses_no_epoch(one_epoch_run):
    """The checkpoint is written before the epoch's metrics line: a run stopped between the two writes gets the
    line back from the checkpoint's history when it resumes."""
    cfg, run_dir = one_epoch_run
    written = (run_dir / "metrics.jsonl").read_text()
    (run_dir / "metrics.jsonl").write_text("")  # stopped after the checkpoint, before its line
    result = train(cfg, run_dir, progress=False)
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["epoch"] for line in lines] == [1, 2, 3] and lines[0] + "\n" == written
    assert [json.loads(line) for line in lines] == result.history


def test_restart_ignores_the_old_checkpoint(one_epoch_run):
    """resume=False starts over with a new configuration, deleting the stale run files."""
    cfg, run_dir = one_epoch_run
    result = train(tiny("train.lr=0.02"), run_dir, progress=False, resume=False, max_epochs=1)
    assert len(result.history) == 1
    assert load_checkpoint(run_dir / "checkpoint.pt", tiny("train.lr=0.02"),
                            result.corpus.vocab.fingerprint())["epoch"] == 1
    assert len((run_dir / "metrics.jsonl").read_text().splitlines()) == 1


def test_corrupt_checkpoint_raises(one_epoch_run):
    cfg, run_dir = one_epoch_run
    (run_dir / "checkpoint.pt").write_bytes(b"\x00garbage, not a checkpoint" * 10)
    with pytest.raises(CheckpointError, match="checkpoint.pt"):
        train(cfg, run_dir, progress=False)


def test_foreign_checkpoint_raises_checkpoint_error(one_epoch_run):
    """A readable torch file that is not a checkpoint (e.g. a state dict saved over it) is a CheckpointError."""
    cfg, run_dir = one_epoch_run
    torch.save(torch.load(run_dir / "checkpoint.pt", weights_only=False)["model"], run_dir / "checkpoint.pt")
    with pytest.raises(CheckpointError):
        train(cfg, run_dir, progress=False)


def test_checkpoint_with_other_vocabulary_is_refused(one_epoch_run):
    cfg, run_dir = one_epoch_run
    ckpt = torch.load(run_dir / "checkpoint.pt", weights_only=False)
    ckpt["vocab_fingerprint"] = "0123456789abcdef"
    torch.save(ckpt, run_dir / "checkpoint.pt")
    with pytest.raises(CheckpointError, match="vocabulary"):
        train(cfg, run_dir, progress=False)


@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_divergence_stops_and_keeps_last_good_checkpoint(one_epoch_run, monkeypatch, bad):
    """A NaN/inf training loss raises TrainingDiverged; epoch 1's checkpoint stays intact and loads."""
    cfg, run_dir = one_epoch_run
    before = (run_dir / "checkpoint.pt").read_bytes()
    real = mlm.training.masked_nll
    calls = []

    def poisoned(logits, targets, mask):
        calls.append(1)
        nll = real(logits, targets, mask)
        return nll * bad if len(calls) > 3 else nll

    monkeypatch.setattr(mlm.training, "masked_nll", poisoned)
    with pytest.raises(TrainingDiverged, match="epoch 2"):
        train(cfg, run_dir, progress=False)
    assert len(calls) > 3
    assert (run_dir / "checkpoint.pt").read_bytes() == before
    vocab = synthetic_corpus(seed=cfg.train.seed).vocab
    ckpt = load_checkpoint(run_dir / "checkpoint.pt", cfg, vocab.fingerprint())
    assert ckpt["epoch"] == 1
    assert all(torch.isfinite(v).all() for v in ckpt["model"].values())
    assert len((run_dir / "metrics.jsonl").read_text().splitlines()) == 1
    monkeypatch.setattr(mlm.training, "masked_nll", real)
    assert train(cfg, run_dir, progress=False, max_epochs=1).history[-1]["epoch"] == 2  # can go on


def test_document_protocol_trains():
    result = train(tiny("data.protocol=document", "train.epochs=1"), progress=False)
    assert math.isfinite(result.history[0]["valid_ppl"])
    assert result.result["test_tokens"] == result.corpus.num_tokens("test")


def test_sequence_sum_loss_trains():
    """The Zaremba-style loss (summed over time, averaged over rows) with SGD runs and learns."""
    result = train(tiny("train.loss_reduction=sequence_sum", "train.optimizer=sgd", "train.lr=0.5",
                        "train.epochs=2"), progress=False)
    assert result.history[-1]["train_ppl"] < result.history[0]["train_ppl"]


def test_bf16_on_a_cpu_without_bfloat16_kernels_is_a_clear_error(monkeypatch):
    """oneDNN has no bfloat16 LSTM on a CPU without AVX-512 BF16 (an AMD EPYC of this project's): the run stops
    before reading any data, saying what to do, instead of failing deep in the LSTM."""
    monkeypatch.setattr(mlm.training, "cpu_bf16_supported", lambda: False)
    with pytest.raises(mlm.configs.ConfigError, match="fp32 here"):
        train(tiny("train.precision=bf16", "train.device=cpu"), progress=False)
    with pytest.raises(mlm.configs.ConfigError, match="train.precision"):
        tiny("train.precision=fp16")


@pytest.mark.skipif(not mlm.training.cpu_bf16_supported(), reason="this CPU's oneDNN has no bfloat16 kernels")
def test_bf16_autocast_trains_within_a_tolerance_of_fp32(monkeypatch):
    """train.precision=bf16 runs the training forward passes under bfloat16 autocast (the logits come out in
    bf16) with the softmax and loss in fp32, and learns as fp32 does, within 1%; validation is scored in fp32."""
    fp32 = train(tiny(), progress=False)
    dtypes = []
    real = mlm.training.masked_nll
    monkeypatch.setattr(mlm.training, "masked_nll",
                        lambda logits, *a: (dtypes.append(logits.dtype), real(logits, *a))[1])
    real_forward = mlm.training.training_forward

    def forward(model, *args):
        out, nll, penalty = real_forward(model, *args)
        dtypes.append(out.logits.dtype)
        return out, nll, penalty

    monkeypatch.setattr(mlm.training, "training_forward", forward)
    bf16 = train(tiny("train.precision=bf16"), progress=False)
    assert dtypes[:2] == [torch.float32, torch.bfloat16]  # the loss's logits, then the model's
    assert bf16.history[-1]["train_ppl"] < bf16.history[0]["train_ppl"]
    for a, b in zip(fp32.history, bf16.history):
        assert b["valid_ppl"] == pytest.approx(a["valid_ppl"], rel=0.01) and b["valid_ppl"] != a["valid_ppl"]


# Validation perplexity after epochs 1 and 2, and test perplexity, of two-epoch runs on 1,500 synthetic tokens
# (16 units, fp32, one thread), as the code computed them before its GPU paths were added (commit 7551f0d):
# stored runs resume from their checkpoints, so on a CPU the engine must go on computing exactly this. Any
# change to the draws of dropout, noise or smoothing moves these numbers by far more than the tolerance.
CPU_RUNS = {
    "plain": ([], (34.669346927431796, 34.11665595205334, 34.73411322531493)),
    "dropout-recurrent": (["model.regularizer=dropout", "model.embed_dropout=0.3", "model.recurrent_dropout=0.2",
                           "model.dropout=0.2", "model.num_layers=2"],
                          (35.564950850456725, 34.22234618941299, 35.08793707801634)),
    "noise-kn": (["model.regularizer=noise", "model.embed_dropout=0.3", "model.tie_weights=true"],
                 (34.912362602729864, 34.725104641468725, 35.1553382990792)),
    "smooth-kn": (["model.regularizer=smooth", "model.embed_dropout=0.3", "model.tie_weights=true",
                   "train.weight_decay=0.001"], (34.9730431828579, 34.80894325575642, 35.5399373234662)),
    "smooth-uncoupled": (["model.regularizer=smooth", "model.embed_dropout=0.3", "model.tie_weights=true",
                          "model.smoothing_coupled=false"],
                         (34.663585470893956, 34.608219950448486, 35.27464547679042)),
    "smooth-elementwise": (["model.regularizer=smooth", "model.smoothing_elementwise=true", "model.tie_weights=true",
                            "model.embed_dropout=0.3"], (34.4105623266505, 34.53547269876955, 35.92598732076405)),
    "sentence-attentive": (["data.protocol=sentence", "model.head=attentive", "model.dropout=0.3"],
                           (34.780287977966516, 32.42613053653441, 32.66767993954737)),
    "document-window": (["data.protocol=document", "model.head=window", "model.window_kind=key-value-predict",
                         "model.embed_size=24", "model.hidden_size=24"],
                        (34.498666709361096, 34.27490494527635, 35.7198199413624)),
    "sentence-rm": (["data.protocol=sentence", "model.head=rm", "model.memory_size=4", "model.dropout=0.2"],
                    (34.29252585703815, 30.71764736680773, 31.152764344960787)),
}


@pytest.mark.parametrize("case", list(CPU_RUNS))
def test_cpu_training_computes_what_it_always_did(case):
    overrides, expected = CPU_RUNS[case]
    cfg = get_preset("synthetic-tiny", overrides=["data.max_train_tokens=1500", "data.max_eval_tokens=400",
                                                  "model.embed_size=16", "model.hidden_size=16", "train.epochs=2",
                                                  "train.device=cpu", *overrides])
    run = train(cfg, progress=False)
    got = (*(h["valid_ppl"] for h in run.history), run.result["test_ppl"])
    assert got == pytest.approx(expected, rel=1e-6)


def _weights(case, threads, monkeypatch, kernels=mlm.training.deterministic_on_cpu):
    """The weights after one epoch of a CPU_RUNS family, at batch 64 x 35 (large enough for parallel kernels)."""
    monkeypatch.setattr(mlm.training, "deterministic_on_cpu", kernels)
    cfg = get_preset("synthetic-tiny", overrides=[
        "data.max_train_tokens=20000", "data.batch_size=64", "data.bptt=35", "model.embed_size=64",
        "model.hidden_size=64", "train.epochs=1", "train.device=cpu", *CPU_RUNS[case][0], f"train.threads={threads}"])
    return train(cfg, progress=False).model.state_dict()


def _need_two_idle_cores():
    """Two threads on cores that other processes keep busy spin at every barrier and slow down a hundredfold:
    skip, asked when the test runs (the one-minute load average counts this test's own process)."""
    cores = os.cpu_count() or 1
    if cores < 2 or os.getloadavg()[0] > cores - 0.5:
        pytest.skip("two threads need two cores that nothing else is using (the load average says they are busy)")


@pytest.mark.parametrize("case", list(CPU_RUNS))
def test_a_seed_trains_the_same_weights_every_time_on_two_threads(case, monkeypatch):
    """Two threads twice give the same weights bit for bit, and one thread close ones (within 1e-3 after an
    epoch): on some processors the matrix library splits a product's sums between the threads, which changes the
    last digits, and training magnifies them a little."""
    _need_two_idle_cores()
    two = _weights(case, 2, monkeypatch)
    again, one = _weights(case, 2, monkeypatch), _weights(case, 1, monkeypatch)
    for name, value in two.items():
        assert torch.equal(value, again[name]), name
        assert (value - one[name]).abs().max() < 1e-3, (name, (value - one[name]).abs().max())
    assert not torch.are_deterministic_algorithms_enabled()  # train() restores the setting after each epoch


def test_without_deterministic_kernels_two_threads_train_other_weights(monkeypatch):
    """Why train() asks for them: the smoothing regularizer's row lookups sum their gradients in an order that
    races between the threads (so the test above can fail). A race can come out in the same order by chance, so
    four runs are allowed to find two that differ."""
    _need_two_idle_cores()
    default = lambda device: contextlib.nullcontext()  # noqa: E731
    first = _weights("smooth-kn", 2, monkeypatch, kernels=default)
    for _ in range(3):
        two = _weights("smooth-kn", 2, monkeypatch, kernels=default)
        if any(not torch.equal(value, first[name]) for name, value in two.items()):
            return
    pytest.fail("four two-thread runs with the default kernels trained the same weights")


def test_deterministic_on_cpu_restores_the_setting():
    """On the CPU the block turns deterministic kernels on and restores the caller's setting (warn-only mode
    included), also after an exception; on other devices it changes nothing."""
    from mlm.utils import deterministic_on_cpu

    assert not torch.are_deterministic_algorithms_enabled()
    for device in ("cpu", torch.device("cpu")):
        with deterministic_on_cpu(device):
            assert torch.are_deterministic_algorithms_enabled()
            assert not torch.is_deterministic_algorithms_warn_only_enabled()
        assert not torch.are_deterministic_algorithms_enabled()
    with pytest.raises(RuntimeError, match="inside"):
        with deterministic_on_cpu("cpu"):
            raise RuntimeError("inside")
    assert not torch.are_deterministic_algorithms_enabled()
    for device in ("cuda", "mps", torch.device("meta")):  # nothing runs there: only the setting is read
        with deterministic_on_cpu(device):
            assert not torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        with deterministic_on_cpu("cpu"):
            assert torch.is_deterministic_algorithms_warn_only_enabled()
        assert torch.are_deterministic_algorithms_enabled() and torch.is_deterministic_algorithms_warn_only_enabled()
    finally:
        torch.use_deterministic_algorithms(False)


# -- the loss ---------------------------------------------------------------------------------
def test_masked_nll_sums_scored_positions_only():
    torch.manual_seed(0)
    logits, targets = torch.randn(2, 4, 6), torch.randint(0, 6, (2, 4))
    mask = torch.tensor([[True, True, False, False], [True, False, True, True]])
    log_probs = F.log_softmax(logits, -1)
    expected = -sum(float(log_probs[b, t, targets[b, t]]) for b in range(2) for t in range(4) if mask[b, t])
    assert float(masked_nll(logits, targets, mask)) == pytest.approx(expected, rel=1e-6)


# -- perplexity by hand ---------------------------------------------------------------------------
EOS, PAD, BOS = 1, 0, 3


@pytest.fixture
def lines_and_model():
    corpus = synthetic_corpus(40, 12, seed=5)
    lines = corpus.ids("valid")
    torch.manual_seed(0)
    model = LanguageModel(len(corpus.vocab), 12, 12, 2, dropout=0.5)
    model.train()  # evaluate() must switch dropout off by itself
    return lines, model


def nll_of(model, inputs: list[int], targets: list[int]) -> float:
    """Summed -log p(target) for one sequence started from a zero state, a loop over positions."""
    was = model.training
    model.eval()
    with torch.no_grad():
        log_probs = F.log_softmax(model(torch.tensor([inputs])).logits[0].double(), dim=-1)
    model.train(was)
    return -sum(float(log_probs[t, y]) for t, y in enumerate(targets))


def check(result, total_nll: float, count: int):
    assert result.tokens == count
    assert result.nll == pytest.approx(total_nll, rel=1e-5)
    assert result.perplexity == pytest.approx(math.exp(total_nll / count), rel=1e-5)


def stream_of(lines):
    out = [EOS]
    for line in lines:
        out += line + [EOS]
    return out


@pytest.mark.parametrize("batch_size,bptt", [(1, 7), (3, 5)])
def test_evaluate_stream_by_hand(lines_and_model, batch_size, bptt):
    """Stream perplexity == exp(sum NLL / count), each of the batch_size rows read in one go."""
    lines, model = lines_and_model
    stream = stream_of(lines)
    n = len(stream) - 1
    row_len = math.ceil(n / batch_size)
    total = 0.0
    for r in range(batch_size):
        lo, hi = r * row_len, min((r + 1) * row_len, n)
        if lo < hi:
            total += nll_of(model, stream[lo:hi], stream[lo + 1:hi + 1])
    result = evaluate(model, StreamBatches(lines, EOS, PAD, batch_size, bptt))
    check(result, total, n)
    assert model.training  # mode restored


def test_evaluate_sentence_by_hand(lines_and_model):
    """Sentence perplexity: each sentence <bos> w1..wn -> w1..wn <eos> from a zero state; padding unscored."""
    lines, model = lines_and_model
    total = sum(nll_of(model, [BOS] + line, line + [EOS]) for line in lines)
    batches = SentenceBatches(lines, BOS, EOS, PAD, batch_size=4, pad_to=30)
    check(evaluate(model, batches), total, sum(len(line) + 1 for line in lines))


def test_evaluate_document_by_hand(lines_and_model):
    """Document perplexity: each document from a zero state, whatever row and window it lands in."""
    lines, model = lines_and_model
    starts = [0, 2, 3, 7]
    bounds = list(zip(starts, starts[1:] + [len(lines)]))
    total = 0.0
    for a, b in bounds:
        doc = stream_of(lines[a:b])
        total += nll_of(model, doc[:-1], doc[1:])
    batches = DocumentBatches(lines, starts, EOS, PAD, batch_size=2, bptt=4)
    check(evaluate(model, batches), total, sum(len(line) + 1 for line in lines))


# -- schedules ---------------------------------------------------------------------------------------
def test_resume_accepts_settings_that_do_not_change_training(one_epoch_run):
    """Device, threads, logging and evaluation batch size may differ when a run resumes elsewhere."""
    cfg, run_dir = one_epoch_run
    moved = tiny("train.epochs=3", "train.device=cpu", "train.log_interval=7", "data.eval_batch_size=3")
    result = train(moved, run_dir, progress=False)
    assert [h["epoch"] for h in result.history] == [1, 2, 3]


def test_plateau_schedule_decays_and_rolls_back(monkeypatch):
    """Without a validation improvement the rate is divided and the best weights come back."""
    valid = iter([10.0, 12.0, 11.0, 9.0, 9.0])  # epochs 2 and 3 do not beat epoch 1; the last is the test

    def fake_evaluate(model, batches, device=None):
        return mlm.evaluation.EvalResult(math.log(next(valid)) * 100, 100)

    monkeypatch.setattr(mlm.training, "evaluate", fake_evaluate)
    cfg = tiny("train.epochs=4", "train.schedule=plateau", "train.plateau_patience=1", "train.decay_factor=4",
               "train.lr=0.01")
    run = train(cfg, None, progress=False)
    lrs = [h["lr"] for h in run.history]
    assert lrs == pytest.approx([0.01, 0.01, 0.0025, 0.000625])
    assert [h.get("rolled_back_to") for h in run.history] == [None, 1, 1, None]
    assert run.result["best_epoch"] == 4


def test_early_stopping_keeps_the_best_epoch(monkeypatch):
    """Patience 2: two epochs without improvement stop the run, which still counts as finished."""
    valid = iter([10.0, 8.0, 9.0, 9.5, 7.0, 6.0])

    def fake_evaluate(model, batches, device=None):
        return mlm.evaluation.EvalResult(math.log(next(valid)) * 100, 100)

    monkeypatch.setattr(mlm.training, "evaluate", fake_evaluate)
    cfg = tiny("train.epochs=6", "train.early_stop_patience=2")
    run = train(cfg, None, progress=False)
    assert [h["epoch"] for h in run.history] == [1, 2, 3, 4]
    assert run.history[-1]["stopped_early"] and run.result["best_epoch"] == 2
    assert run.result["finished"]


def test_resume_treats_settings_added_later_as_defaults(one_epoch_run):
    """A checkpoint written before a config field existed resumes if the field has its default value."""
    cfg, run_dir = one_epoch_run
    ckpt = torch.load(run_dir / "checkpoint.pt", weights_only=False)
    del ckpt["config"]["model"]["attention_score"]  # as if written by an older version of mlm
    torch.save(ckpt, run_dir / "checkpoint.pt")
    result = train(cfg, run_dir, progress=False)
    assert [h["epoch"] for h in result.history] == [1, 2, 3]
    ckpt = torch.load(run_dir / "checkpoint.pt", weights_only=False)
    del ckpt["config"]["model"]["attention_score"]
    torch.save(ckpt, run_dir / "checkpoint.pt")
    with pytest.raises(CheckpointError, match="attention_score"):
        train(mlm.configs.apply_overrides(cfg, {"model.attention_score": "combined"}), run_dir, progress=False)


def test_checkpoint_from_before_the_head_learning_rate_group_is_refused(tmp_path):
    """An attentive run saved with one optimiser group cannot resume exactly: a clear error, files kept."""
    cfg = tiny("train.epochs=2", "model.head=attentive", "data.protocol=sentence")
    run_dir = tmp_path / "run"
    train(cfg, run_dir, progress=False, max_epochs=1)
    ckpt = torch.load(run_dir / "checkpoint.pt", weights_only=False)
    assert len(ckpt["optimizer"]["param_groups"]) == 2  # the head's own group
    groups = ckpt["optimizer"]["param_groups"]
    groups[0]["params"] = groups[0]["params"] + groups[1]["params"]
    ckpt["optimizer"]["param_groups"] = groups[:1]  # what an older version wrote
    torch.save(ckpt, run_dir / "checkpoint.pt")
    before = (run_dir / "checkpoint.pt").read_bytes()
    with pytest.raises(CheckpointError, match="--restart"):
        train(cfg, run_dir, progress=False)
    assert (run_dir / "checkpoint.pt").read_bytes() == before
