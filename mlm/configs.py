"""The configuration system: dataclasses, overrides, validation and the registry of presets.

A configuration is three plain dataclasses (data, model, train) inside a :class:`Config`.
Configurations are printable (``print(cfg)``), serialisable (``cfg.to_json()``) and overridable
with dotted keys, from Python, papermill parameters or the command line::

    cfg = get_preset("zaremba2014-small", size="reduced", overrides=["train.lr=0.5"])

An unknown key is an error that lists the valid ones. The presets themselves live in
``mlm/presets/``, one module per paper (``salton2017.py`` holds Salton et al.'s full and
reduced configurations and reported numbers); each registers its presets here with
:func:`register` when ``mlm`` is imported. ``size="full"`` is the paper's configuration;
``size="reduced"`` applies the preset's ``reduced`` overrides, chosen so a chapter runs in
minutes on two CPU cores (fewer training tokens, fewer epochs), and says so in ``cfg.notes``.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import typing
from dataclasses import asdict, dataclass, field
from typing import Any, Callable


class ConfigError(ValueError):
    """A malformed preset name, key or value; the message lists the valid choices."""


@dataclass
class DataConfig:
    corpus: str = "ptb"  # "ptb", "wikitext-2", "holmes" (MSR sentence completion novels), "synthetic"
    # or "recall" (the key-value recall task of mlm/data/tasks.py)
    data_dir: str | None = None  # None: $MLM_DATA_DIR, then $XDG_CACHE_HOME/mlm or ~/.cache/mlm
    download: bool = True  # fetch missing files when online (MLM_NO_DOWNLOAD=1 forbids)
    protocol: str = "stream"  # "stream", "sentence" or "document" (docs/design.md, section 4)
    batch_size: int = 20
    eval_batch_size: int = 64  # evaluation scores every token whatever the batch size
    bptt: int = 20  # truncated-BPTT window (stream and document protocols)
    max_len: int | None = None  # sentence protocol: truncate training sentences to this many inputs
    eval_max_len: int | None = None  # sentence protocol: the same for validation/test (None: full sentences)
    pad_to: int | None = None  # sentence protocol: pad every batch to this width
    buckets: bool = False  # sentence protocol: group sentences of similar length
    max_train_tokens: int | None = None  # reduced runs: use only the first lines of train
    max_eval_tokens: int | None = None  # reduced runs: use only the first lines of valid/test
    max_document_tokens: int | None = None  # document protocol: keep only the first lines of each document
    split_sentences: bool = False  # WikiText: paragraphs split at . ? ! into sentences, blank and heading
    # lines dropped, in every split (mlm/data/sentences.py; Salton et al.'s sentence protocol on WikiText-2)
    vocab_size: int | None = None  # keep the most frequent training words, the rest become <unk>
    # (None: every word; for "holmes" None means 30,000)
    task_min_distance: int = 2  # "recall": the distance d of each example is uniform in min..max
    task_max_distance: int = 60
    task_max_prefix: int | None = None  # "recall": tokens before the source pair, 0..this (None: as task_max_distance)
    task_examples: int = 20000  # "recall": training examples (validation and test have 1,000 each)


@dataclass
class ModelConfig:
    head: str = "identity"  # the memory head; "identity" is the plain LSTM
    embed_size: int = 200
    hidden_size: int = 200
    num_layers: int = 2
    dropout: float = 0.0  # on non-recurrent connections (Zaremba et al. 2014)
    tie_weights: bool = False  # share input and output embeddings (Press & Wolf 2017)
    init_range: float = 0.1  # uniform initialisation in [-init_range, init_range]
    zero_bias: bool = False  # biases start at 0 instead of uniform
    forget_bias: float | None = None  # forget-gate bias, None: as initialised
    # head "attentive" (Salton et al. 2017, chapter 2)
    attention_score: str = "single"  # "single" (Eq. 9) or "combined" (Eq. 10)
    attention_size: int | None = None  # rows of W_s and W_q (None: hidden_size)
    attention_merge: str = "tanh"  # "tanh" (Eq. 7) or "linear" (the official code)
    attention_zero_slot: bool = False  # the official code's all-zero first memory slot
    attention_disabled: bool = False  # ablation: the context vector is fixed to zero
    # heads "window" and "ngram" (Daniluk et al. 2017, chapter 3)
    window_kind: str = "attention"  # "attention" (Eq. 1-5), "key-value" (Eq. 6-10), "key-value-predict" (Eq. 11-12)
    window_size: int = 5  # L: how many previous outputs the attention sees
    ngram_n: int = 4  # N of the N-gram RNN (Eq. 13): the prediction reads N-1 steps
    # heads "rm" and "rmr" (Tran et al. 2016, chapter 4): the Memory Block over the last n input words
    memory_size: int = 15  # n: words in memory, the current input included
    memory_temporal: bool = True  # the temporal matrix T of Eq. 2 ("+tM")
    memory_composition: str = "gating"  # "gating" (Eq. 4-7), "linear" (s + h, section 3.1) or "linear-code" (W h + s)
    memory_alignment: str = "paper"  # "paper": T[1:t] at a sentence start; "code": newest word on T's last row + T_C
    # embedding regularizers (Xie et al. 2017, Kong et al. 2019, chapter 5; mlm/regularizers/)
    regularizer: str = "none"  # "none", "dropout" (embed_dropout only), "noise" (data noising), "smooth" (variational)
    noise_scheme: str = "kneser-ney"  # Table 1 row: "blank", "unigram" (linear interp.), "absolute", "kneser-ney"
    noise_gamma: float = 0.2  # gamma (paper's grid 0.1-0.4); per-word gamma_i for "absolute"/"kneser-ney"
    embed_dropout: float = 0.0  # alpha of Eq. 6: element-wise embedding dropout, one mask per word type per sequence
    smoothing_elementwise: bool = False  # "smooth": draw every embedding dimension independently (section 4.3)
    smooth_output: bool | None = None  # "smooth": also draw output rows (Eq. 5); None: if tied or Kneser-Ney
    smoothing_coupled: bool = True  # "smooth" with output rows: replace a target's output row exactly where its
    # input word is replaced (Kong et al. section 4.2, "Training"); False: each output row drawn on its own (Eq. 5)
    smoothing_sigma: float = 0.0  # "smooth": std of the Gaussians of Eq. 2 (0: the small-sigma limit)
    smoothing_l2: bool = True  # "smooth": the KL term's data-dependent L2, scaled by train.weight_decay
    recurrent_dropout: float = 0.0  # dropout on the LSTM's hidden-to-hidden weights (DropConnect), per batch


@dataclass
class TrainConfig:
    optimizer: str = "sgd"  # "sgd", "adam" or "rmsprop"
    lr: float = 1.0
    weight_decay: float = 0.0
    epochs: int = 13
    schedule: str = "decay"  # "constant", "decay" (after decay_start) or "plateau"
    decay_start: int = 4  # "decay": lr is constant for this many epochs, then divided ...
    decay_factor: float = 2.0  # ... by this factor after every further epoch
    plateau_patience: int = 0  # "plateau": epochs without improvement before a decay + rollback
    early_stop_patience: int = 0  # stop after this many epochs without improvement (0: never)
    clip: float = 5.0  # max global gradient norm (0: no clipping)
    head_lr_scale: float = 1.0  # learning rate of the memory head's parameters / lr (1: as the papers)
    loss_reduction: str = "sequence_sum"  # "sequence_sum": NLL summed over time / batch rows
    # (Zaremba's Lua code, Salton's code); "token_mean": mean NLL per scored token
    seed: int = 0
    device: str = "auto"  # "auto" picks cuda, then mps, then cpu
    precision: str = "fp32"  # "fp32"; "tf32": TF32 matrix products on CUDA; "bf16": the training forward passes
    # under bfloat16 autocast, softmax and loss in fp32 (mlm.training.autocast)
    log_interval: int = 50  # batches between progress-bar updates (each one syncs the device)
    threads: int = 0  # CPU threads for torch (0: leave torch's default)
    checkpoint_minutes: float = 0.0  # also checkpoint inside an epoch every this many minutes (0: at epoch ends
    # only); the run resumes at the next batch and computes what an uninterrupted one does
    # speed switches (docs/cluster.md): the same arithmetic with less overhead per step, off by default
    fused_optimizer: bool = False  # torch's fused optimizer step (SGD, Adam; foreach for RMSprop)
    compile: str = "none"  # torch.compile the model: "none", "default", "reduce-overhead" (CUDA graphs on a GPU)


@dataclass
class Config:
    name: str = "custom"
    description: str = ""
    size: str = "full"
    data: DataConfig = field(default_factory=DataConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    # What the paper reports for this configuration (valid/test perplexity, parameters, source).
    paper: dict = field(default_factory=dict)
    notes: str = ""

    def to_dict(self) -> dict:
        return asdict(self)

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_dict(cls, d: dict) -> "Config":
        d = dict(d)
        unknown = set(d) - {f.name for f in dataclasses.fields(cls)}
        if unknown:
            raise ConfigError(f"unknown config sections {sorted(unknown)}; valid: "
                              f"{[f.name for f in dataclasses.fields(cls)]}")
        sections = {"data": DataConfig, "model": ModelConfig, "train": TrainConfig}
        for key, klass in sections.items():
            if key in d:
                d[key] = _section_from_dict(klass, d[key], key)
        return cls(**d)

    def __str__(self) -> str:
        lines = [f"{self.name} ({self.size}): {self.description}"]
        if self.name in PRESETS:
            lines.append(f"  defined in: {PRESETS[self.name].source}")
        for section in ("data", "model", "train"):
            values = asdict(getattr(self, section))
            lines.append(f"  {section}: " + ", ".join(f"{k}={v!r}" for k, v in values.items()))
        if self.paper:
            lines.append(f"  paper: {self.paper}")
        if self.notes:
            lines.append(f"  notes: {self.notes}")
        return "\n".join(lines)


def _section_from_dict(klass, values: dict, prefix: str):
    valid = [f.name for f in dataclasses.fields(klass)]
    unknown = sorted(set(values) - set(valid))
    if unknown:
        raise ConfigError(f"unknown keys {', '.join(prefix + '.' + k for k in unknown)}; "
                          f"valid keys: {', '.join(prefix + '.' + k for k in valid)}")
    return klass(**values)


def valid_keys() -> list[str]:
    keys = [f.name for f in dataclasses.fields(Config) if f.name in ("name", "description", "notes")]
    for section, klass in (("data", DataConfig), ("model", ModelConfig), ("train", TrainConfig)):
        keys += [f"{section}.{f.name}" for f in dataclasses.fields(klass)]
    return keys


_TRUE, _FALSE, _NONE = {"true", "1", "yes", "on"}, {"false", "0", "no", "off"}, {"none", "null", ""}


def _coerce(value: Any, annotation, key: str):
    """Convert a command-line string to the field's declared type."""
    if not isinstance(value, str):
        return value
    types = typing.get_args(annotation) or (annotation,)
    if type(None) in types and value.strip().lower() in _NONE:
        return None
    for t in types:
        if t is bool:
            if value.lower() in _TRUE:
                return True
            if value.lower() in _FALSE:
                return False
        elif t is int:
            try:
                return int(value)
            except ValueError:
                pass
        elif t is float:
            try:
                return float(value)
            except ValueError:
                pass
        elif t is str:
            return value
    raise ConfigError(f"{key}: cannot read {value!r} as {annotation}")


def apply_overrides(cfg: Config, overrides) -> Config:
    """Return a copy of ``cfg`` with ``overrides`` applied.

    ``overrides`` is a dict ``{"train.lr": 0.5}`` or a list of ``"train.lr=0.5"`` strings.
    """
    if isinstance(overrides, dict):
        items = list(overrides.items())
    else:
        items = []
        for text in overrides or []:
            if "=" not in text:
                raise ConfigError(f"override {text!r} is not of the form key=value (e.g. train.lr=0.5)")
            key, value = text.split("=", 1)
            items.append((key.strip(), value.strip()))
    cfg = Config.from_dict(json.loads(cfg.to_json()))  # a deep copy
    keys = valid_keys()
    for key, value in items:
        if key not in keys:
            raise ConfigError(f"unknown config key {key!r}; valid keys:\n  " + "\n  ".join(keys))
        if "." in key:
            section, name = key.split(".", 1)
            target = getattr(cfg, section)
        else:
            target, name = cfg, key
        hints = typing.get_type_hints(type(target))
        setattr(target, name, _coerce(value, hints[name], key))
    validate(cfg)
    return cfg


# The memory heads (model.head); mlm.training.HEADS builds each one.
HEAD_NAMES = ("identity", "attentive", "window", "ngram", "rm", "rmr")


def validate(cfg: Config) -> None:
    choices = {
        "data.protocol": (cfg.data.protocol, ("stream", "sentence", "document")),
        "train.optimizer": (cfg.train.optimizer, ("sgd", "adam", "rmsprop")),
        "train.schedule": (cfg.train.schedule, ("constant", "decay", "plateau")),
        "train.loss_reduction": (cfg.train.loss_reduction, ("sequence_sum", "token_mean")),
        "train.precision": (cfg.train.precision, ("fp32", "tf32", "bf16")),
        "train.compile": (cfg.train.compile, ("none", "default", "reduce-overhead", "max-autotune")),
        "size": (cfg.size, ("full", "reduced")),
        "model.head": (cfg.model.head, HEAD_NAMES),
        "model.window_kind": (cfg.model.window_kind, ("attention", "key-value", "key-value-predict")),
        "model.attention_score": (cfg.model.attention_score, ("single", "combined")),
        "model.attention_merge": (cfg.model.attention_merge, ("tanh", "linear")),
        "model.memory_composition": (cfg.model.memory_composition, ("gating", "linear", "linear-code")),
        "model.memory_alignment": (cfg.model.memory_alignment, ("paper", "code")),
        "model.regularizer": (cfg.model.regularizer, ("none", "dropout", "noise", "smooth")),
        "model.noise_scheme": (cfg.model.noise_scheme, ("blank", "unigram", "absolute", "kneser-ney")),
    }
    for key, (value, allowed) in choices.items():
        if value not in allowed:
            raise ConfigError(f"{key}={value!r} is not one of {', '.join(allowed)}")
    positive = {"data.batch_size": cfg.data.batch_size, "data.bptt": cfg.data.bptt,
                "data.eval_batch_size": cfg.data.eval_batch_size, "model.hidden_size": cfg.model.hidden_size,
                "model.embed_size": cfg.model.embed_size, "model.num_layers": cfg.model.num_layers,
                "model.memory_size": cfg.model.memory_size,
                "train.epochs": cfg.train.epochs}
    for key, value in positive.items():
        if value < 1:
            raise ConfigError(f"{key} must be at least 1, got {value}")
    if not (cfg.train.lr > 0 and cfg.train.head_lr_scale > 0):
        raise ConfigError(f"train.lr and train.head_lr_scale must be positive, got {cfg.train.lr} and "
                          f"{cfg.train.head_lr_scale}")
    if cfg.train.checkpoint_minutes < 0:
        raise ConfigError(f"train.checkpoint_minutes must be 0 (at epoch ends only) or positive, got "
                          f"{cfg.train.checkpoint_minutes}")
    if not 0.0 <= cfg.model.dropout < 1.0:
        raise ConfigError(f"model.dropout must be in [0, 1), got {cfg.model.dropout}")
    m = cfg.model
    for key, value in (("model.embed_dropout", m.embed_dropout), ("model.recurrent_dropout", m.recurrent_dropout)):
        if not 0.0 <= value < 1.0:
            raise ConfigError(f"{key} must be in [0, 1), got {value}")
    if not 0.0 <= m.noise_gamma <= 1.0:
        raise ConfigError(f"model.noise_gamma must be in [0, 1], got {m.noise_gamma}")
    if m.regularizer == "none" and m.embed_dropout > 0:
        raise ConfigError("model.embed_dropout needs model.regularizer='dropout' (or 'noise'/'smooth'); "
                          "with 'none' the model stays the plain pipeline")
    if m.regularizer == "smooth" and m.noise_scheme == "blank":
        raise ConfigError("model.regularizer='smooth' needs a proposal over words (noise_scheme unigram, absolute "
                          "or kneser-ney); blank noising is embedding dropout (regularizer='dropout')")
    if cfg.model.tie_weights and cfg.model.embed_size != cfg.model.hidden_size and cfg.model.head == "identity":
        raise ConfigError("model.tie_weights needs model.embed_size == model.hidden_size for the plain LSTM "
                          f"(got {cfg.model.embed_size} and {cfg.model.hidden_size})")


# -- presets --------------------------------------------------------------------------------
@dataclass
class Preset:
    build: Callable[[], Config]
    reduced: dict  # overrides that make the CPU-sized variant
    source: str = ""  # the file that defines it, e.g. "mlm/presets/salton2017.py"


PRESETS: dict[str, Preset] = {}


def register(name: str, reduced: dict):
    """Decorator: register ``build`` (a function returning the full :class:`Config`) as preset ``name``.

    The module that calls ``register`` is recorded as the preset's source (printed with the config).
    """
    source = sys._getframe(1).f_globals.get("__name__", "?").replace(".", "/") + ".py"

    def wrap(build):
        if name in PRESETS:
            raise ConfigError(f"preset {name!r} is defined twice ({PRESETS[name].source} and {source})")
        PRESETS[name] = Preset(build, reduced, source=source)
        return build
    return wrap


def list_presets() -> list[str]:
    return sorted(PRESETS)


def get_preset(name: str, size: str = "full", overrides=None) -> Config:
    """The preset ``name`` in ``size`` "full" (the paper) or "reduced" (CPU minutes)."""
    if name not in PRESETS:
        raise ConfigError(f"unknown preset {name!r}; available presets:\n  " + "\n  ".join(list_presets()))
    if size not in ("full", "reduced"):
        raise ConfigError(f"size must be 'full' or 'reduced', got {size!r}")
    preset = PRESETS[name]
    cfg = preset.build()
    cfg.name = name
    if size == "reduced":
        cfg = apply_overrides(cfg, preset.reduced)
        cfg.size = "reduced"
        reduced_desc = ", ".join(f"{k}={v}" for k, v in preset.reduced.items())
        cfg.notes = (cfg.notes + " " if cfg.notes else "") + f"Reduced for CPU: {reduced_desc}."
    validate(cfg)
    return apply_overrides(cfg, overrides) if overrides else cfg


def smoke_config(cfg: Config, announce: bool = False) -> Config:
    """``cfg`` cut to a smoke run's size when ``MLM_SMOKE_TOKENS`` is set (:func:`mlm.utils.smoke_tokens`):
    one epoch over the first N training tokens, N validation and test tokens (under the document protocol, every
    article cut to one window instead); else ``cfg`` itself. :func:`mlm.train` and
    :func:`mlm.training.build_batches` apply it; ``announce`` prints that the numbers mean nothing."""
    from mlm.utils import smoke_tokens

    n = smoke_tokens()
    if n is None:
        return cfg
    if announce:
        print(f"SMOKE RUN ({cfg.name}): one epoch over {n} training tokens; its numbers mean nothing", flush=True)
    notes = cfg.notes or ""
    notes = notes if "SMOKE RUN" in notes else f"{notes} SMOKE RUN: numbers meaningless.".strip()

    def cap(value):
        return n if value is None else min(value, n)
    caps = {"data.max_train_tokens": cap(cfg.data.max_train_tokens),
            "data.max_eval_tokens": cap(cfg.data.max_eval_tokens)}
    if cfg.data.protocol == "document":  # the first N tokens hold one or two articles and the batch's other rows
        # would be padding: every article is cut to one window instead
        caps = {"data.max_document_tokens": min(cfg.data.max_document_tokens or cfg.data.bptt, cfg.data.bptt)}
    cut = apply_overrides(cfg, {**caps, "data.task_examples": min(cfg.data.task_examples, max(n // 50, 100)),
                                "train.epochs": 1})
    cut.notes = notes  # config.json says so too
    return cut
