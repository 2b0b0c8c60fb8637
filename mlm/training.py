"""The training engine: one function, :func:`train`, for every model of the book.

It builds the data and the model from a :class:`~mlm.configs.Config`, runs the epochs with
the paper's optimiser and learning-rate schedule, evaluates validation perplexity after each
epoch, keeps the best weights, and finally scores the test set with them. A run folder holds

* ``config.json``    the exact configuration,
* ``metrics.jsonl``  one JSON line per epoch (learning rate, train/valid perplexity, speed),
* ``checkpoint.pt``  the full training state after the latest epoch (or, with ``train.checkpoint_minutes``,
                     inside one), the weights with the best validation perplexity so far included
                     (one atomic write; resuming continues from it, :mod:`mlm.checkpoints`),
* ``result.json``    the summary: best validation and test perplexity, parameters, tokens/second,
                     epochs, updates, threads and the machine (host, CPU model, GPU, torch version).

A NaN or infinite loss stops the run with :class:`TrainingDiverged`; the checkpoint of the
last good epoch is left untouched.
"""

from __future__ import annotations

import json
import math
import platform
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from mlm.configs import Config, ConfigError, smoke_config
from mlm.data import (Batches, Corpus, load_corpus, protocol_batches, synthetic_corpus, truncate_documents,
                      truncate_lines)
from mlm.data.sentences import split_corpus
from mlm.data.tasks import TaskCorpus, recall_task
from mlm.evaluation import EvalResult, detach_state, evaluate, masked_nll
from mlm.models import IdentityHead, LanguageModel
from mlm.models.attentive import AttentiveHead
from mlm.regularizers import build_regularizer
from mlm.models.recurrent_memory import RecurrentMemoryHead
from mlm.models.short_attention import NgramHead, WindowAttentionHead
from mlm.checkpoints import (BEST_FILE, CheckpointError, TrainingState, best_weights, load_checkpoint, map_tensors,
                             restore_rng, save_checkpoint, training_state)
from mlm.utils import (atomic_write_bytes, atomic_write_json, choose_device, deterministic_on_cpu, headless, machine_info,
                       set_seed, smoke_tokens)


class TrainingDiverged(RuntimeError):
    """The loss became NaN or infinite."""


# -- building blocks --------------------------------------------------------------------
def load_task(cfg: Config) -> TaskCorpus:
    """The key-value recall task of ``cfg`` (``data.corpus="recall"``) with its critical tokens."""
    d = cfg.data
    return recall_task(d.task_examples, seed=cfg.train.seed, min_distance=d.task_min_distance,
                       max_distance=d.task_max_distance, max_prefix=d.task_max_prefix)


def load_data(cfg: Config) -> Corpus:
    """The corpus of ``cfg``: its vocabulary (``data.vocab_size``) and, with ``data.split_sentences``, its
    paragraphs split into sentences (after the vocabulary is fixed, so ids do not change)."""
    if cfg.data.corpus == "synthetic":
        corpus = synthetic_corpus(seed=cfg.train.seed)
    elif cfg.data.corpus == "recall":
        corpus = load_task(cfg).corpus
    elif cfg.data.corpus == "holmes":
        # Reads only the novels that max_train_tokens needs; the vocabulary comes from that text.
        from mlm.data.holmes import DEFAULT_VOCAB_SIZE, load_holmes

        corpus = load_holmes(cfg.data.data_dir, cfg.data.download,
                             vocab_size=cfg.data.vocab_size or DEFAULT_VOCAB_SIZE,
                             max_train_tokens=cfg.data.max_train_tokens)
    else:
        corpus = load_corpus(cfg.data.corpus, cfg.data.data_dir, cfg.data.download)
        corpus = corpus.limit_vocabulary(cfg.data.vocab_size) if cfg.data.vocab_size else corpus
    return split_corpus(corpus) if cfg.data.split_sentences else corpus


def build_batches(cfg: Config, corpus: Corpus, split: str, shuffle: bool | None = None) -> Batches:
    """Batches of ``split`` under the configured protocol (train uses ``batch_size``)."""
    cfg = smoke_config(cfg)  # a smoke run's data caps (python -m mlm book --smoke)
    d, vocab = cfg.data, corpus.vocab
    train = split == "train"
    limit = d.max_train_tokens if train else d.max_eval_tokens
    lines = truncate_lines(corpus.ids(split), limit)
    batch_size = d.batch_size if train else d.eval_batch_size
    starts, options = None, {}
    if d.protocol == "document":
        starts = [s for s in corpus.documents[split] if s < len(lines)]
        if d.max_document_tokens:
            lines, starts = truncate_documents(lines, starts, d.max_document_tokens)
    elif d.protocol == "sentence":
        # every sentence starts from a zero state, so grouping sentences of similar length for
        # evaluation changes no score, only the padding
        options = dict(max_len=d.max_len if train else d.eval_max_len, pad_to=d.pad_to if train else None,
                       buckets=d.buckets or not train, shuffle=train if shuffle is None else shuffle,
                       seed=cfg.train.seed)
    return protocol_batches(lines, d.protocol, starts, vocab.bos_id if d.protocol == "sentence" else None,
                            vocab.eos_id, vocab.pad_id, batch_size, d.bptt, **options)


def _attentive_head(cfg: Config, vocab_size: int) -> AttentiveHead:
    m = cfg.model
    return AttentiveHead(m.hidden_size, score=m.attention_score, attention_size=m.attention_size,
                         merge=m.attention_merge, zero_slot=m.attention_zero_slot,
                         disable_attention=m.attention_disabled)


def _recurrent_memory_head(cfg: Config, vocab_size: int) -> RecurrentMemoryHead:
    m = cfg.model
    return RecurrentMemoryHead(vocab_size, m.hidden_size, memory_size=m.memory_size, temporal=m.memory_temporal,
                               composition=m.memory_composition, alignment=m.memory_alignment,
                               recurrent_top=m.head == "rmr")


# model.head -> a function building the memory head (docs/design.md, section 2: one module per model).
HEADS = {
    "identity": lambda cfg, vocab_size: IdentityHead(cfg.model.hidden_size),
    "attentive": _attentive_head,
    "rm": _recurrent_memory_head,
    "rmr": _recurrent_memory_head,
    "window": lambda cfg, vocab_size: WindowAttentionHead(cfg.model.hidden_size, cfg.model.window_kind,
                                                          cfg.model.window_size),
    "ngram": lambda cfg, vocab_size: NgramHead(cfg.model.hidden_size, cfg.model.ngram_n),
}


def build_model(cfg: Config, vocab_size: int, pad_id: int = 0, corpus: Corpus | None = None) -> LanguageModel:
    """The model of ``cfg``. An embedding regularizer other than "dropout" counts words in the
    training data, so it needs ``corpus`` (the lines it trains on, after ``data.max_train_tokens``)."""
    m = cfg.model
    if m.head not in HEADS:
        raise ValueError(f"unknown model.head {m.head!r}; known heads: {', '.join(HEADS)}")
    head = HEADS[m.head](cfg, vocab_size)
    regularizer = None
    if m.regularizer != "none":
        lines = truncate_lines(corpus.ids("train"), cfg.data.max_train_tokens) if corpus is not None else None
        eos_id = corpus.vocab.eos_id if corpus is not None else 1
        regularizer = build_regularizer(cfg, lines, vocab_size, eos_id, blank_id=pad_id)
    model = LanguageModel(vocab_size, m.embed_size, m.hidden_size, m.num_layers, dropout=m.dropout,
                          tie_weights=m.tie_weights, init_range=m.init_range, zero_bias=m.zero_bias,
                          forget_bias=m.forget_bias, head=head, pad_id=pad_id, regularizer=regularizer,
                          recurrent_dropout=m.recurrent_dropout)
    if m.forget_bias is not None and hasattr(head, "set_forget_bias"):
        head.set_forget_bias(m.forget_bias)  # a head's own LSTM (RMR's top layer) gets the same forget bias
    return model


def build_optimizer(cfg: Config, model) -> torch.optim.Optimizer:
    """The optimiser of ``cfg.train``; the memory head's parameters form a second group whose
    learning rate is ``train.head_lr_scale`` times the rest (each group keeps its ``scale``).
    ``train.fused_optimizer`` takes torch's fused step (one kernel for all parameters: SGD, Adam) or its
    multi-tensor step (RMSprop): the same update, with the last digits rounded in another order."""
    t = cfg.train
    head_ids = {id(p) for p in model.head.parameters()}
    groups = [{"params": [p for p in model.parameters() if id(p) not in head_ids], "scale": 1.0}]
    if head_ids:
        groups.append({"params": list(model.head.parameters()), "scale": t.head_lr_scale})
    kind = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "rmsprop": torch.optim.RMSprop}[t.optimizer]
    fused = {"fused": True} if t.optimizer in ("sgd", "adam") else {"foreach": True}
    optimizer = kind(groups, lr=t.lr, weight_decay=t.weight_decay, **(fused if t.fused_optimizer else {}))
    set_lr(optimizer, t.lr)
    return optimizer


def compile_model(model: LanguageModel, mode: str):
    """The forward pass that training steps call: ``model`` itself for ``train.compile="none"``, else
    ``torch.compile(model, mode=...)`` ("reduce-overhead" replays CUDA graphs on a GPU: fewer kernel launches
    per step). It shares the model's parameters; evaluation and checkpoints use the model itself. Random draws
    (dropout, the regularizers' noise) fall back to eager's generator, so a seed draws the same masks either way."""
    if mode == "none":
        return model
    import torch._inductor.config

    torch._inductor.config.fallback_random = True
    return torch.compile(model, mode=None if mode == "default" else mode)


def set_lr(optimizer: torch.optim.Optimizer, lr: float) -> None:
    """Set the base learning rate; groups with a ``scale`` get ``scale * lr``."""
    for group in optimizer.param_groups:
        group["lr"] = lr * group.get("scale", 1.0)


def scheduled_lr(cfg: Config, epoch: int) -> float:
    """Learning rate of ``epoch`` (1-based) under the "decay" schedule.

    Constant for the first ``decay_start`` epochs, then divided by ``decay_factor`` after
    each further epoch: Zaremba et al.'s small model uses lr 1 for epochs 1-4, 0.5 in
    epoch 5, 0.25 in epoch 6, ...
    """
    t = cfg.train
    return t.lr / t.decay_factor ** max(0, epoch - t.decay_start)


def set_matmul_precision(precision: str) -> None:
    """TF32 matrix products (CUDA on Ampere and later, cuDNN's LSTM included) for ``train.precision`` "tf32"
    and "bf16"; "fp32" turns them off, cuDNN's default included. Nothing changes on a CPU."""
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = precision != "fp32"


def cpu_bf16_supported() -> bool:
    """Whether this CPU's oneDNN has bfloat16 kernels (AVX-512 BF16 or AMX), which the LSTM needs under bf16
    autocast; True where torch cannot tell."""
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return True


def autocast(cfg: Config, device):
    """The context of a training forward pass: bfloat16 autocast for ``train.precision="bf16"`` (the logits are
    cast to fp32 before the softmax and the loss, :func:`training_forward`), else plain fp32."""
    return torch.autocast(torch.device(device).type, dtype=torch.bfloat16, enabled=cfg.train.precision == "bf16")


# -- one epoch --------------------------------------------------------------------------
def training_forward(model, batch, state=None, memory=None, forward=None):
    """One training forward pass: ``(output, summed NLL, regularizer penalty or None)``; ``forward``: the
    model's forward pass to call (a compiled one, :func:`compile_model`), else the model.

    An embedding regularizer (chapter 5) first draws its noise: data noising replaces the inputs
    (and, for Kneser-Ney, the targets); smoothing notes the targets whose output rows it draws.
    """
    inputs, targets = batch.inputs, batch.targets
    reg = getattr(model, "regularizer", None)
    if reg is not None:
        inputs, targets = reg.prepare(inputs, targets, batch.mask)
    forward = model if forward is None else forward
    out = forward(inputs, state=state, reset=batch.reset, mask=batch.mask, memory=memory)
    nll = masked_nll(out.logits.float(), targets, batch.mask)
    return out, nll, (reg.penalty(model) if reg is not None else None)


def train_epoch(model, batches: Batches, optimizer, cfg: Config, device, progress=None, epoch: int = 0,
                forward=None, resume: dict | None = None, on_batch=None) -> EvalResult:
    """One pass over ``batches``; returns the training NLL and token count. ``forward``: as for
    :func:`training_forward`. ``resume``: a mid-epoch checkpoint's ``in_epoch`` (batches done, the carried state
    and memory, the running loss and tokens) to go on from, the batches in their state of the epoch's start.
    ``on_batch(done, total, tokens, state, memory)`` follows every batch (mid-epoch checkpoints)."""
    model.train()
    t = cfg.train
    resume = resume or {}
    done = resume.get("batch", 0)
    total = resume.get("total", torch.zeros((), dtype=torch.float64, device=device))
    tokens = resume.get("tokens", 0)
    state, memory = resume.get("state"), resume.get("memory")
    graphs = t.compile == "reduce-overhead" and torch.device(device).type == "cuda"
    params = [p for p in model.parameters() if p.requires_grad]
    for i, batch in enumerate(batches):
        if i < done:
            continue  # trained before the mid-epoch checkpoint this epoch resumes from
        n_tokens = batch.num_tokens
        rows = batch.inputs.size(0)
        batch = batch.to(device)
        if not batches.carry_state:
            state = memory = None
        if graphs:  # a new step: the CUDA graphs may reuse the memory of the last step's outputs
            torch.compiler.cudagraph_mark_step_begin()
        with autocast(cfg, device):
            out, nll, penalty = training_forward(model, batch, state, memory, forward)
        # "sequence_sum": summed over time, averaged over rows (Zaremba's and Salton's code);
        # "token_mean": averaged over every scored token.
        loss = nll / rows if t.loss_reduction == "sequence_sum" else nll / max(n_tokens, 1)
        if penalty is not None:  # variational smoothing's data-dependent L2 (the KL term)
            loss = loss + penalty
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if t.clip > 0:
            torch.nn.utils.clip_grad_norm_(params, t.clip)
        optimizer.step()
        if batches.carry_state:
            state, memory = detach_state(out.state), detach_state(out.memory)
            if graphs:  # copied out of the graphs' memory before the next step reuses it
                state, memory = map_tensors(state, torch.clone), map_tensors(memory, torch.clone)
        total += nll.detach().double()
        tokens += n_tokens
        last = i + 1 == len(batches)
        if (i + 1) % max(t.log_interval, 1) == 0 or last:
            value = float(total)  # the only host sync, every log_interval batches
            if not math.isfinite(value):
                raise TrainingDiverged(
                    f"the training loss became {value} in epoch {epoch}, batch {i + 1}. The last good "
                    f"checkpoint is kept. Try a smaller train.lr or a tighter train.clip.")
            if progress is not None:
                progress.update((i + 1) - progress.n)
                progress.set_postfix(ppl=f"{math.exp(value / max(tokens, 1)):.1f}", refresh=False)
        if on_batch is not None:
            on_batch(i + 1, total, tokens, state, memory)
    return EvalResult(float(total), tokens)


# -- a whole run -----------------------------------------------------------------------
@dataclass
class RunResult:
    config: Config
    model: LanguageModel
    corpus: Corpus
    history: list[dict] = field(default_factory=list)
    result: dict = field(default_factory=dict)
    run_dir: Path | None = None


def _bar(total, desc, enabled, leave):
    if not enabled:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, leave=leave, mininterval=1.0)


def open_run_dir(run_dir: Path, cfg: Config, fingerprint: str, model, optimizer, batches: Batches, device,
                 resume: bool) -> TrainingState | None:
    """Prepare ``run_dir`` for :func:`train`: with ``resume``, restore its checkpoint into the model, optimiser,
    batches and random states, rewrite ``metrics.jsonl`` from the checkpoint's history and return the
    :class:`TrainingState` to go on from; without, delete an earlier run's files. Writes ``config.json``."""
    run_dir.mkdir(parents=True, exist_ok=True)
    ckpt_path, run = run_dir / "checkpoint.pt", None
    if resume and ckpt_path.exists():
        ckpt = load_checkpoint(ckpt_path, cfg, fingerprint)  # on the CPU: see load_checkpoint
        model.load_state_dict(ckpt["model"])  # copies the weights onto the model's device
        if len(ckpt["optimizer"]["param_groups"]) != len(optimizer.param_groups):
            raise CheckpointError(
                f"{ckpt_path} was written before the memory head had its own learning-rate group "
                f"(train.head_lr_scale) and cannot be resumed exactly. Start the run again with "
                f"--restart (or train(..., resume=False)), or use a new run folder.")
        optimizer.load_state_dict(ckpt["optimizer"])  # moves its state to the parameters' device
        batches.load_state_dict(ckpt["batches"])
        restore_rng(ckpt["rng"], device)
        run = training_state(ckpt, run_dir, device)
        # metrics.jsonl follows the checkpoint, which is written first: a stop between the two writes
        # would otherwise leave the file one epoch short for good
        atomic_write_bytes(run_dir / "metrics.jsonl", "".join(map(_metrics_line, run.history)).encode())
    elif not resume:
        for stale in ("checkpoint.pt", BEST_FILE, "metrics.jsonl", "result.json"):
            (run_dir / stale).unlink(missing_ok=True)
    atomic_write_bytes(run_dir / "config.json", (cfg.to_json() + "\n").encode())
    return run


def train(cfg: Config, run_dir: str | Path | None = None, resume: bool = True, progress: bool | None = None,
          max_epochs: int | None = None) -> RunResult:
    """Train ``cfg`` to the end (or ``max_epochs`` more epochs), then score the test set.

    With a ``run_dir`` holding a checkpoint of the same configuration and ``resume``, the
    run continues where it stopped (inside an epoch, at the next batch, after a mid-epoch checkpoint);
    a finished run is loaded, not retrained. ``progress`` shows tqdm bars; None means yes, unless the
    book runner executes the chapter headless.
    """
    if progress is None:
        progress = not headless()
    cfg = smoke_config(cfg, announce=True)
    t = cfg.train
    if t.threads:
        torch.set_num_threads(t.threads)
    device = choose_device(t.device)
    if t.precision == "bf16" and device.type == "cpu" and not cpu_bf16_supported():
        raise ConfigError("train.precision=bf16: this CPU has no bfloat16 kernels for the LSTM (oneDNN needs "
                          "AVX-512 BF16 or AMX); train in fp32 here (the default), or in bf16 on a GPU")
    set_matmul_precision(t.precision)
    set_seed(t.seed)
    corpus = load_data(cfg)
    vocab = corpus.vocab
    train_batches = build_batches(cfg, corpus, "train").to(device)
    valid_batches = build_batches(cfg, corpus, "valid").to(device)
    model = build_model(cfg, len(vocab), vocab.pad_id, corpus).to(device)
    forward = compile_model(model, t.compile)
    optimizer = build_optimizer(cfg, model)

    run_dir = Path(run_dir) if run_dir is not None else None
    run = TrainingState(lr=t.lr)
    if run_dir is not None:
        run = open_run_dir(run_dir, cfg, vocab.fingerprint(), model, optimizer, train_batches, device, resume) or run

    stop_epoch = t.epochs if max_epochs is None else min(t.epochs, run.epoch + max_epochs)
    stopped_early = bool(run.history and run.history[-1].get("stopped_early"))
    epochs_bar = _bar(t.epochs, cfg.name, progress, leave=True)
    if epochs_bar is not None:
        epochs_bar.update(run.epoch)
    wall_start = last_save = time.perf_counter()

    def save(batches_state: dict, in_epoch: dict | None = None) -> None:
        save_checkpoint(run_dir / "checkpoint.pt", cfg, vocab.fingerprint(), model, optimizer, batches_state, run,
                        device, run.wall_before + time.perf_counter() - wall_start, in_epoch)

    def save_mid_epoch(done, total, tokens, state, memory) -> None:  # every train.checkpoint_minutes
        nonlocal last_save
        now = time.perf_counter()
        if now - last_save >= t.checkpoint_minutes * 60:
            save(order, {"batch": done, "total": total, "tokens": tokens, "state": state, "memory": memory,
                         "seconds": partial.get("seconds", 0.0) + now - start})
            last_save = now

    for epoch in range(run.epoch + 1, stop_epoch + 1):
        if stopped_early:
            break
        if t.schedule == "decay":
            run.lr = scheduled_lr(cfg, epoch)
        set_lr(optimizer, run.lr)
        partial, run.in_epoch = run.in_epoch or {}, None  # how far a mid-epoch checkpoint got
        order = train_batches.state_dict()  # before the epoch's shuffle: where a mid-epoch checkpoint resumes
        bar = _bar(len(train_batches), f"epoch {epoch}", progress, leave=False)
        start = time.perf_counter()
        with deterministic_on_cpu(device):  # the same weights from one seed, run after run
            train_res = train_epoch(model, train_batches, optimizer, cfg, device, bar, epoch, forward, partial,
                                    save_mid_epoch if run_dir is not None and t.checkpoint_minutes > 0 else None)
        if device.type == "cuda":
            torch.cuda.synchronize()
        seconds = partial.get("seconds", 0.0) + time.perf_counter() - start
        if bar is not None:
            bar.close()
        run.train_seconds += seconds
        run.train_tokens += train_res.tokens
        valid_res = evaluate(model, valid_batches, device)
        if not math.isfinite(valid_res.loss):
            raise TrainingDiverged(f"the validation loss became {valid_res.loss} after epoch {epoch}. The last good "
                                   "checkpoint is kept. Try a smaller train.lr or a tighter train.clip.")
        improved = valid_res.perplexity < run.best_valid
        if improved:
            run.best_valid, run.best_epoch, run.bad_epochs = valid_res.perplexity, epoch, 0
            run.best_model = {k: v.detach().clone() for k, v in model.state_dict().items()}
        else:
            run.bad_epochs += 1
        record = {"epoch": epoch, "lr": run.lr, "train_ppl": train_res.perplexity,
                  "valid_ppl": valid_res.perplexity, "best_valid_ppl": run.best_valid,
                  "seconds": seconds, "tokens_per_second": train_res.tokens / max(seconds, 1e-9)}
        if t.schedule == "plateau" and not improved and run.bad_epochs >= max(t.plateau_patience, 1):
            # Decay on a validation plateau and roll back to the best weights.
            run.lr = run.lr / t.decay_factor
            model.load_state_dict(run.best_model)
            record["rolled_back_to"] = run.best_epoch
        if t.early_stop_patience and run.bad_epochs >= t.early_stop_patience:
            record["stopped_early"] = stopped_early = True
        run.history.append(record)
        run.epoch = epoch
        if epochs_bar is not None:
            epochs_bar.update(1)
            epochs_bar.set_postfix(valid_ppl=f"{valid_res.perplexity:.1f}", refresh=False)
        if run_dir is not None:
            save(train_batches.state_dict())
            last_save = time.perf_counter()
            (run_dir / BEST_FILE).unlink(missing_ok=True)  # an older folder's best weights: the checkpoint has them
            with open(run_dir / "metrics.jsonl", "a") as f:
                f.write(_metrics_line(record))
    if epochs_bar is not None:
        epochs_bar.close()

    finished = stopped_early or run.epoch >= t.epochs
    if run.best_model is not None:
        model.load_state_dict(run.best_model)  # test with the best validation weights
    result = {"name": cfg.name, "size": cfg.size, "finished": bool(finished),
              "epochs_run": len(run.history), "best_epoch": run.best_epoch, "best_valid_ppl": run.best_valid,
              "parameters": model.num_parameters(),
              "train_tokens_per_second": run.train_tokens / max(run.train_seconds, 1e-9),
              "train_seconds": run.train_seconds,
              "wall_seconds": run.wall_before + time.perf_counter() - wall_start,  # every session of the run
              "device": str(device), "torch": torch.__version__, "threads": torch.get_num_threads(),
              "machine": platform.machine(), "paper": cfg.paper, "config": cfg.to_dict(),
              # every epoch runs each of its batches once (a mid-epoch checkpoint resumes after those done)
              "updates": len(run.history) * len(train_batches), **machine_info(device)}
    if smoke := smoke_tokens():  # marked, so that no reader of stored results ever takes it for a run
        result["smoke_tokens"] = smoke
    if finished:
        test_batches = build_batches(cfg, corpus, "test").to(device)
        start = time.perf_counter()
        test_res = evaluate(model, test_batches, device)
        result["test_ppl"] = test_res.perplexity
        result["test_tokens"] = test_res.tokens
        result["eval_tokens_per_second"] = test_res.tokens / max(time.perf_counter() - start, 1e-9)
        if run_dir is not None:
            atomic_write_json(run_dir / "result.json", result)
    elif run_dir is not None:
        (run_dir / "result.json").unlink(missing_ok=True)  # a result of an earlier, shorter run is stale
    return RunResult(cfg, model, corpus, run.history, result, run_dir)


def _metrics_line(record: dict) -> str:
    """One epoch's line of ``metrics.jsonl`` (appended after each epoch, rewritten on resume)."""
    return json.dumps(record) + "\n"


# -- reading a finished run back ---------------------------------------------------------------
def read_metrics(run_dir: str | Path) -> list[dict]:
    """The epochs of a run folder's ``metrics.jsonl``, one dict per epoch (learning rate, perplexities, speed)."""
    lines = (Path(run_dir) / "metrics.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def load_run(path: str | Path, device=None, weights: str = "best", data_dir: str | None = None) -> RunResult:
    """A trained run read back from its folder: configuration, corpus, and the model with its weights.

    ``path`` is a run folder (written by :func:`train` or ``python -m mlm train``) or a file inside one:
    ``checkpoint.pt`` (its latest weights) or ``best.pt`` (the best weights: a file of older run folders, and
    the name of the checkpoint's best weights in newer ones). ``weights="best"`` loads the weights with the best
    validation perplexity, ``"last"`` the checkpoint's latest. The corpus is rebuilt from the saved
    configuration (``data_dir`` overrides where its files are) and its vocabulary is checked against the
    checkpoint's fingerprint. The model is returned in eval mode.
    """
    path = Path(path)
    run_dir = path if path.is_dir() else path.parent
    cfg_path = run_dir / "config.json"
    if not cfg_path.is_file():
        raise CheckpointError(f"{run_dir} holds no config.json; give a run folder written by "
                              "python -m mlm train (or mlm.training.train with a run_dir), or a best.pt inside one.")
    if weights not in ("best", "last"):
        raise ValueError(f"weights must be 'best' or 'last', got {weights!r}")
    cfg = Config.from_dict(json.loads(cfg_path.read_text()))
    if data_dir is not None:
        cfg.data.data_dir = str(data_dir)
    device = choose_device(device or cfg.train.device)
    corpus = load_data(cfg)
    model = build_model(cfg, len(corpus.vocab), corpus.vocab.pad_id, corpus).to(device)
    ckpt_path = run_dir / "checkpoint.pt"
    ckpt = _read_torch_file(ckpt_path) if ckpt_path.is_file() else None
    if ckpt is not None and (not isinstance(ckpt, dict) or "vocab_fingerprint" not in ckpt):
        raise CheckpointError(f"{ckpt_path} is not an mlm training checkpoint.")
    if path.is_file() and path != ckpt_path:  # a weights file of its own: an older folder's best.pt
        state, source = _read_torch_file(path), path
    elif path.name == "checkpoint.pt" or (path.is_dir() and weights == "last"):
        if ckpt is None:
            raise CheckpointError(f"{ckpt_path} does not exist; the run has not finished an epoch yet.")
        state, source = ckpt["model"], ckpt_path
    else:  # the best weights, asked for by name (run/best.pt) or by weights="best"
        state, source = best_weights(ckpt, run_dir), run_dir
    if ckpt is not None and ckpt["vocab_fingerprint"] != corpus.vocab.fingerprint():
        raise CheckpointError(f"{run_dir} was trained with a different vocabulary than the corpus files give now "
                              "(the files or the data settings changed); its weights cannot be used with them.")
    try:
        model.load_state_dict(state)
    except (RuntimeError, KeyError, TypeError) as err:
        raise CheckpointError(f"{source} does not fit the model of {cfg_path}: {err}") from err
    model.eval()
    history = read_metrics(run_dir) if (run_dir / "metrics.jsonl").is_file() else []
    result = json.loads((run_dir / "result.json").read_text()) if (run_dir / "result.json").is_file() else {}
    return RunResult(cfg, model, corpus, history, result, run_dir)


def _read_torch_file(path: Path):
    try:
        return torch.load(path, map_location="cpu", weights_only=False)  # load_state_dict moves it
    except Exception as err:  # a truncated or foreign file
        raise CheckpointError(f"cannot read {path}: {err}") from err
