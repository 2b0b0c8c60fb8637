"""Named presets holding the papers' hyperparameters, each with a reduced variant.

A configuration is three plain dataclasses (data, model, train) inside a :class:`Config`.
Presets are printable (``print(cfg)``), serialisable (``cfg.to_json()``) and overridable
with dotted keys, from Python, papermill parameters or the command line::

    cfg = get_preset("zaremba2014-small", size="reduced", overrides=["train.lr=0.5"])

An unknown key is an error that lists the valid ones. ``size="full"`` is the paper's
configuration; ``size="reduced"`` applies the preset's ``reduced`` overrides, chosen so a
chapter runs in minutes on two CPU cores (fewer training tokens, fewer epochs), and says
so in ``cfg.notes``.
"""

from __future__ import annotations

import dataclasses
import json
import typing
from dataclasses import asdict, dataclass, field
from typing import Any, Callable


class ConfigError(ValueError):
    """A malformed preset name, key or value; the message lists the valid choices."""


@dataclass
class DataConfig:
    corpus: str = "ptb"  # "ptb", "wikitext-2", "holmes" (MSR sentence completion novels) or "synthetic"
    data_dir: str | None = None  # None: $MLM_DATA_DIR, then ~/.cache/mlm
    download: bool = True  # fetch missing files when online (MLM_NO_DOWNLOAD=1 forbids)
    protocol: str = "stream"  # "stream", "sentence" or "document" (DESIGN.md section 4)
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
    vocab_size: int | None = None  # keep the most frequent training words, the rest become <unk>
    # (None: every word; for "holmes" None means 30,000)


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
    log_interval: int = 50  # batches between progress-bar updates (each one syncs the device)
    threads: int = 0  # CPU threads for torch (0: leave torch's default)


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


PRESETS: dict[str, Preset] = {}


def register(name: str, reduced: dict):
    def wrap(fn):
        PRESETS[name] = Preset(fn, reduced)
        return fn
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


# The reduced baselines: the first ~9% of PTB's training text (80k tokens), 4 epochs with the
# decay starting after epoch 2, and the full validation and test sets, so the perplexities
# count the same tokens as the paper's. Medium and large shrink to 2x256.
_REDUCED_PTB = {"data.max_train_tokens": 80_000, "data.max_eval_tokens": None, "train.epochs": 4,
                "train.decay_start": 2}
_REDUCED_WIDE = {**_REDUCED_PTB, "model.embed_size": 256, "model.hidden_size": 256}


# Zaremba et al. (2014), section 4.1: the three sizes of the regularized LSTM on PTB. All use
# 2 layers, batch 20, SGD with lr 1 and the decay schedule; Press & Wolf (2017) tie the
# embeddings of the same three networks and keep every other setting.
ZAREMBA_SIZES = {
    #          units  dropout  init   epochs  decay after  decay by  clip  bptt
    "small": (200, 0.0, 0.1, 13, 4, 2.0, 5.0, 20),
    "medium": (650, 0.5, 0.05, 39, 6, 1.2, 5.0, 35),
    "large": (1500, 0.65, 0.04, 55, 14, 1.15, 10.0, 35),
}
# (valid, test, parameters, source) as the papers report them; medium + tying is not
# included because we could not verify Press & Wolf's number against their own table.
PAPER_RESULTS = {
    ("zaremba2014", "small"): (120.7, 114.5, "4.65M (as counted by Press & Wolf)", "Zaremba et al. 2014, Table 1"),
    ("zaremba2014", "medium"): (86.2, 82.7, "20M", "Zaremba et al. 2014, Table 1"),
    ("zaremba2014", "large"): (82.2, 78.4, "66M", "Zaremba et al. 2014, Table 1"),
    ("press2017", "small"): (117.5, 112.4, "2.65M", "Press & Wolf 2017, small + weight tying"),
    ("press2017", "large"): (77.7, 74.3, "51M", "Press & Wolf 2017, large + weight tying"),
}


def _zaremba_preset(paper: str, size_name: str) -> Callable[[], Config]:
    units, dropout, init, epochs, decay_start, decay_factor, clip, bptt = ZAREMBA_SIZES[size_name]
    tied = paper == "press2017"

    def build() -> Config:
        who = "Press & Wolf (2017): Zaremba et al.'s" if tied else "Zaremba et al. (2014)"
        regularized = f"dropout {dropout}" if dropout else "no dropout"
        cfg = Config(
            description=f"{who} {size_name} LSTM, 2x{units}, {regularized}{', tied embeddings' if tied else ''}, PTB",
            data=DataConfig(corpus="ptb", protocol="stream", batch_size=20, bptt=bptt),
            model=ModelConfig(embed_size=units, hidden_size=units, num_layers=2, dropout=dropout,
                              tie_weights=tied, init_range=init),
            train=TrainConfig(optimizer="sgd", lr=1.0, epochs=epochs, schedule="decay", decay_start=decay_start,
                              decay_factor=decay_factor, clip=clip, loss_reduction="sequence_sum"),
        )
        if (paper, size_name) in PAPER_RESULTS:
            valid, test, params, source = PAPER_RESULTS[paper, size_name]
            cfg.paper = {"valid": valid, "test": test, "params": params, "source": source}
        return cfg

    return build


for _paper, _suffix in (("zaremba2014", ""), ("press2017", "-tied")):
    for _size in ZAREMBA_SIZES:
        register(f"{_paper}-{_size}{_suffix}", reduced=_REDUCED_PTB if _size == "small" else _REDUCED_WIDE)(
            _zaremba_preset(_paper, _size))


# Salton et al. (2017), sections 4.1-4.2: the sentence protocol (state and memory reset per
# sentence, sentences cut and padded to 35), SGD lr 1, halving (PTB) or /1.15 (WikiText-2) after
# every epoch from epoch 13 (PTB) or 15 (WikiText-2), early stopping with patience 10 and
# rollback to the best epoch, uniform init +-0.05 with zero biases, dropout on non-recurrent
# connections, gradient norm clipped at 5 with the loss summed over time and averaged over the
# batch ("normalized by mini-batch size"), tied embeddings.
SALTON_CORPORA = {
    #              corpus        units dropout decay after  decay by
    "ptb": ("ptb", 650, 0.5, 12, 2.0),
    "wt2": ("wikitext-2", 1000, 0.65, 14, 1.15),
}
SALTON_RESULTS = {  # Table 1 (PTB) and Table 2 (WikiText-2): valid, test, parameters
    ("ptb", "single"): (71.7, 70.1, "14.5M"),
    ("ptb", "combined"): (72.6, 70.7, "14.5M"),
    ("wt2", "single"): (73.7, 69.7, "50M"),
    ("wt2", "combined"): (74.3, 70.8, "50M"),
}
# Reduced: a tenth of the data, 2 x 256, 4 epochs. At a learning rate of 1 the merge layer W_c, b_c
# (Eq. 7) swings the loss far above uniform guessing in the first hundreds of updates (chapter 02
# shows the trace); the reduced runs give the head a tenth of the learning rate, a documented
# deviation. The full presets keep the paper's single learning rate.
_REDUCED_SALTON = {"data.max_train_tokens": 80_000, "model.embed_size": 256, "model.hidden_size": 256,
                   "train.epochs": 4, "train.decay_start": 2, "train.early_stop_patience": 0,
                   "train.head_lr_scale": 0.1}


def _salton_preset(corpus_key: str, score: str | None) -> Callable[[], Config]:
    corpus, units, dropout, decay_start, decay_factor = SALTON_CORPORA[corpus_key]

    def build() -> Config:
        head = "attentive" if score else "identity"
        what = f"Attentive LM, {score} score" if score else "LSTM without attention (same protocol)"
        cfg = Config(
            description=f"Salton et al. (2017) {what}, 2x{units}, {corpus}, sentence protocol",
            data=DataConfig(corpus=corpus, protocol="sentence", batch_size=32, max_len=35, pad_to=35,
                            eval_batch_size=64),
            model=ModelConfig(head=head, embed_size=units, hidden_size=units, num_layers=2, dropout=dropout,
                              tie_weights=True, init_range=0.05, zero_bias=True,
                              attention_score=score or "single"),
            train=TrainConfig(optimizer="sgd", lr=1.0, epochs=100, schedule="decay", decay_start=decay_start,
                              decay_factor=decay_factor, early_stop_patience=10, clip=5.0,
                              loss_reduction="sequence_sum"),
        )
        if score:
            valid, test, params = SALTON_RESULTS[corpus_key, score]
            cfg.paper = {"valid": valid, "test": test, "params": params,
                         "source": f"Salton et al. 2017, Table {1 if corpus_key == 'ptb' else 2}"}
        return cfg

    return build


for _corpus in SALTON_CORPORA:
    for _score in ("single", "combined", None):
        register(f"salton2017-{_corpus}-{_score or 'lstm'}", reduced=_REDUCED_SALTON)(_salton_preset(_corpus, _score))


# Daniluk et al. (2017), section 4.1: the document protocol (truncated BPTT of 20 steps inside an
# article, state and attention window carried between segments and reset between articles), Adam
# with lr 0.001, batch 64, clipping at 5, forget-gate bias 1, other weights uniform in +-0.1, word
# vectors of size 300, one LSTM layer. The hidden size of each model keeps the total parameter count
# near the LSTM's (Figure 2b and 2c); 968 for the 4-gram RNN is not a multiple of 3 parts and is
# rounded to 969. The paper's 22.5M-word Wikipedia corpus is not available: WikiText-2's articles are
# the documents here; PTB, which has no documents, runs as one stream with the window carried through.
# The paper says nothing of dropout, epochs or stopping: no dropout, and at most 20 epochs with early
# stopping after 3 epochs without a better validation perplexity (our choice).
DANILUK_KINDS = {  # short name -> (model.window_kind, hidden size, parts the output splits into)
    "attention": ("attention", 296, 1), "kv": ("key-value", 560, 2), "kvp": ("key-value-predict", 834, 3)}
DANILUK_NGRAM_HIDDEN = {2: 564, 3: 786, 4: 969, 5: 1120}
DANILUK_WINDOWS = (1, 5, 10, 15)
DANILUK_RESULTS = {  # Figure 2a (test, by window), 2b and 2c (dev, test), Wikipedia corpus
    ("attention", 1): (None, 82.2), ("attention", 5): (None, 82.2), ("attention", 10): (80.6, 82.0),
    ("attention", 15): (None, 82.8),
    ("kv", 1): (None, 78.7), ("kv", 5): (None, 79.0), ("kv", 10): (77.1, 78.2), ("kv", 15): (None, 78.9),
    ("kvp", 1): (None, 76.1), ("kvp", 5): (74.2, 75.8), ("kvp", 10): (None, 76.0), ("kvp", 15): (None, 75.8),
    ("ngram", 2): (76.0, 77.1), ("ngram", 3): (74.9, 75.9), ("ngram", 4): (74.8, 75.9), ("ngram", 5): (76.0, 77.3),
    ("lstm", None): (83.2, 85.2),
}
DANILUK_CORPORA = {"wt2": ("wikitext-2", "document"), "ptb": ("ptb", "stream")}
# Reduced: every WikiText-2 article cut to its first ~100 tokens (60k training tokens in 600 documents,
# about 6k for validation and for test in 60 each), the 10k most frequent words (the softmax over all
# 33k dominates the cost on a CPU), every width divided by 3, batch 32 and Adam at 0.002 for more
# progress from few updates, 2 epochs.
_REDUCED_DANILUK = {"data.max_document_tokens": 100, "data.vocab_size": 10_000, "data.batch_size": 32,
                    "model.embed_size": 100, "train.lr": 0.002, "train.epochs": 2, "train.early_stop_patience": 0}
# PTB has no articles to cut: its reduced runs read the first 60k training tokens as one stream.
_REDUCED_DANILUK_CORPUS = {"wt2": {}, "ptb": {"data.max_document_tokens": None, "data.max_train_tokens": 60_000}}


def _daniluk_preset(corpus_key: str, what: str, paper_key, **model_fields) -> Callable[[], Config]:
    corpus, protocol = DANILUK_CORPORA[corpus_key]

    def build() -> Config:
        cfg = Config(
            description=f"Daniluk et al. (2017) {what}, 300-d words, 1x{model_fields['hidden_size']} LSTM, {corpus}, "
                        f"{protocol} protocol",
            data=DataConfig(corpus=corpus, protocol=protocol, batch_size=64, bptt=20, eval_batch_size=64),
            model=ModelConfig(embed_size=300, num_layers=1, dropout=0.0, init_range=0.1, forget_bias=1.0,
                              **model_fields),
            train=TrainConfig(optimizer="adam", lr=0.001, epochs=20, schedule="constant", early_stop_patience=3,
                              clip=5.0, loss_reduction="token_mean"),
        )
        valid, test = DANILUK_RESULTS[paper_key]
        cfg.paper = {"valid": valid, "test": test, "params": "47.0M with word vectors, 23.9M without",
                     "source": "Daniluk et al. 2017, Figure 2 (22.5M-word Wikipedia corpus, not WikiText-2)"}
        return cfg

    return build


def _daniluk_reduced(corpus_key: str, hidden: int, parts: int) -> dict:
    """The reduced overrides: a third of the paper's hidden size, rounded to a multiple of the head's parts."""
    return {**_REDUCED_DANILUK, **_REDUCED_DANILUK_CORPUS[corpus_key],
            "model.hidden_size": max(parts, round(hidden / 3 / parts) * parts)}


for _corpus in DANILUK_CORPORA:
    for _short, (_kind, _hidden, _parts) in DANILUK_KINDS.items():
        for _window in DANILUK_WINDOWS:
            _what = ("attention" if _kind == "attention" else f"{_kind} attention") + f" over L={_window}"
            register(f"daniluk2017-{_corpus}-{_short}-L{_window}", reduced=_daniluk_reduced(_corpus, _hidden, _parts))(
                _daniluk_preset(_corpus, _what, (_short, _window), head="window", hidden_size=_hidden,
                                window_kind=_kind, window_size=_window))
    for _n, _hidden in DANILUK_NGRAM_HIDDEN.items():
        register(f"daniluk2017-{_corpus}-ngram{_n}", reduced=_daniluk_reduced(_corpus, _hidden, _n - 1))(
            _daniluk_preset(_corpus, f"{_n}-gram RNN", ("ngram", _n), head="ngram", hidden_size=_hidden, ngram_n=_n))
    register(f"daniluk2017-{_corpus}-lstm", reduced=_daniluk_reduced(_corpus, 300, 1))(
        _daniluk_preset(_corpus, "LSTM baseline", ("lstm", None), head="identity", hidden_size=300))


# Tran, Bisazza & Monz (2016), section 4.2: d = 128 everywhere (embeddings, LSTM, memory tables),
# memory size 15, forget bias 1, init +-0.05, SGD lr 1 halved after every epoch from the 5th, 15
# epochs, clip 5, batches of 20 sentences from length buckets, full backpropagation through each
# sentence. The paper's news corpora are not available; PTB is the main corpus (the paper reports
# RM(+tM-g) and a 3-layer LSTM on it), WikiText-2 a second one. Table 2's English column (news
# data, 77k vocabulary) is kept as ``paper["test_en_news"]`` for orientation only.
TRAN_TABLE2_EN = {  # (architecture, temporal matrix, composition) -> test perplexity, English news
    ("lstm", 1): 145.1, ("lstm", 2): 139.7, ("lstm", 3): 136.6,
    ("rmr", True, "linear"): 133.3, ("rmr", False, "linear"): 134.5,
    ("rmr", True, "gating"): 135.2, ("rmr", False, "gating"): 131.2,
    ("rm", True, "linear"): 127.2, ("rm", False, "linear"): 130.4,
    ("rm", True, "gating"): 128.8, ("rm", False, "gating"): 135.7,
}
TRAN_PTB_TEST = {("lstm", 3): 126.1, ("rm", True, "gating"): 123.5}  # section 4.3, PTB test perplexity
TRAN_CORPORA = {"ptb": "ptb", "wt2": "wikitext-2"}
# Reduced: the first 20k tokens of the training text (2% of PTB), 3 epochs with the decay from the
# third, and the first 10k tokens of valid and test: about 20 s a run on one CPU thread, so chapter
# 04 can train all eight variants and two baselines in a few minutes. One thread: these small
# networks gain little from more, and on a shared 2-core machine more threads slow every job down.
_REDUCED_TRAN = {"data.max_train_tokens": 20_000, "data.max_eval_tokens": 10_000, "train.epochs": 3,
                 "train.decay_start": 2, "train.threads": 1}


def tran_preset_name(corpus_key: str, arch: str, temporal: bool | None = None, composition: str | None = None,
                     layers: int = 1) -> str:
    """e.g. tran2016-ptb-rm-tm-g (RM +tM gating), tran2016-ptb-rmr-notm-l, tran2016-ptb-lstm3."""
    if arch == "lstm":
        return f"tran2016-{corpus_key}-lstm{layers}"
    return f"tran2016-{corpus_key}-{arch}-{'tm' if temporal else 'notm'}-{composition[0]}"


def _tran_preset(corpus_key: str, arch: str, temporal: bool = True, composition: str = "gating",
                 layers: int = 1) -> Callable[[], Config]:
    def build() -> Config:
        if arch == "lstm":
            what, key = f"{layers}-layer LSTM baseline", ("lstm", layers)
        else:
            what = f"{arch.upper()}({'+' if temporal else '-'}tM-{composition[0]})"
            key = (arch, temporal, composition)
        cfg = Config(
            description=f"Tran et al. (2016) {what}, d=128, n=15, {TRAN_CORPORA[corpus_key]}, sentence protocol",
            data=DataConfig(corpus=TRAN_CORPORA[corpus_key], protocol="sentence", batch_size=20, buckets=True,
                            eval_batch_size=64),
            model=ModelConfig(head="identity" if arch == "lstm" else arch, embed_size=128, hidden_size=128,
                              num_layers=layers, init_range=0.05, forget_bias=1.0, memory_size=15,
                              memory_temporal=temporal, memory_composition=composition),
            train=TrainConfig(optimizer="sgd", lr=1.0, epochs=15, schedule="decay", decay_start=4,
                              decay_factor=2.0, clip=5.0, loss_reduction="sequence_sum"),
        )
        cfg.paper = {"test_en_news": TRAN_TABLE2_EN[key], "source": "Tran et al. 2016, Table 2 (English news)"}
        if corpus_key == "ptb" and key in TRAN_PTB_TEST:
            cfg.paper.update(test=TRAN_PTB_TEST[key], source="Tran et al. 2016, section 4.3 (PTB); Table 2 (news)")
        return cfg

    return build


for _corpus in TRAN_CORPORA:
    for _layers in (1, 2, 3):
        register(tran_preset_name(_corpus, "lstm", layers=_layers), reduced=_REDUCED_TRAN)(
            _tran_preset(_corpus, "lstm", layers=_layers))
    for _arch in ("rm", "rmr"):
        for _temporal in (True, False):
            for _composition in ("linear", "gating"):
                register(tran_preset_name(_corpus, _arch, _temporal, _composition), reduced=_REDUCED_TRAN)(
                    _tran_preset(_corpus, _arch, _temporal, _composition))


# Kong et al. (2019), section 5.1 and Table 2: data noising (DN, Xie et al. 2017) and variational
# smoothing (VS) on a two-layer LSTM, stream protocol, batch 64, RMSprop. The paper tunes lr in
# {0.002, 0.003, 0.004}, the L2 lambda in {1e-4, 1e-3} and gamma in {0.1, 0.2, 0.3, 0.4} on the
# validation set (``python -m mlm sweep``); the presets hold one point of that grid (lr 0.003,
# lambda 1e-4, gamma 0.2, inside Figure 1's good range 0.1-0.3). Recurrent dropout 0.2, element-wise
# embedding dropout 0.5 (512) / 0.7 (1024), tied embeddings except the untied vanilla LSTM. Not stated
# in the paper, our choices: bptt 35, 60 epochs with the learning rate halved (and the best weights
# restored) when validation stalls, early stop after 6 bad epochs, clip 5, init +-0.05, the loss
# averaged per token. ``model.dropout`` (between the LSTM layers and before the softmax) uses the
# embedding-dropout rate; the embedding itself is dropped once, per word type and sequence (Eq. 6).
KONG_MODELS = {
    #  name               (regularizer, scheme,        tied,  elementwise)
    "vanilla-untied": ("dropout", "kneser-ney", False, False),
    "vanilla-tied": ("dropout", "kneser-ney", True, False),
    "dn-linear": ("noise", "unigram", True, False),
    "dn-kn": ("noise", "kneser-ney", True, False),
    "vs-linear": ("smooth", "unigram", True, False),
    "vs-kn": ("smooth", "kneser-ney", True, False),
    "vs-elementwise": ("smooth", "kneser-ney", True, True),  # PTB only in the paper
}
KONG_CORPORA = {"ptb": "ptb", "wt2": "wikitext-2"}
KONG_SIZES = {512: 0.5, 1024: 0.7}  # hidden size -> embedding dropout
# Table 2, (valid, test) per (corpus, size, model); parameters per (corpus, size, untied?).
KONG_TABLE2 = {
    ("ptb", 512): {"vanilla-untied": (89.6, 84.5), "vanilla-tied": (80.0, 74.0), "dn-linear": (79.4, 73.3),
                   "dn-kn": (75.0, 70.7), "vs-linear": (76.3, 71.2), "vs-kn": (74.5, 70.6),
                   "vs-elementwise": (70.5, 66.8)},
    ("wt2", 512): {"vanilla-untied": (106.3, 100.8), "vanilla-tied": (90.6, 86.6), "dn-linear": (88.9, 84.6),
                   "dn-kn": (86.1, 82.1), "vs-linear": (84.0, 79.6), "vs-kn": (84.9, 80.9)},
    ("ptb", 1024): {"vanilla-untied": (90.3, 85.5), "vanilla-tied": (75.9, 70.2), "dn-linear": (75.5, 70.2),
                    "dn-kn": (71.4, 67.3), "vs-linear": (71.7, 67.8), "vs-kn": (70.8, 66.9),
                    "vs-elementwise": (68.6, 64.5)},
    ("wt2", 1024): {"vanilla-untied": (97.6, 91.9), "vanilla-tied": (85.2, 81.0), "dn-linear": (84.3, 80.1),
                    "dn-kn": (81.9, 78.3), "vs-linear": (80.5, 76.6), "vs-kn": (80.9, 76.7)},
}
KONG_PARAMS = {("ptb", 512, True): "14M", ("ptb", 512, False): "9M", ("wt2", 512, True): "38M",
               ("wt2", 512, False): "21M", ("ptb", 1024, True): "37M", ("ptb", 1024, False): "27M",
               ("wt2", 1024, True): "85M", ("wt2", 1024, False): "50M"}
# Section 5.4: validation perplexity when 20 samples are averaged at test time instead of the mode/mean.
KONG_SAMPLING = {("ptb", 512, "dn-kn"): 96.5, ("ptb", 1024, "dn-kn"): 85.1, ("ptb", 512, "vs-kn"): 89.8,
                 ("ptb", 1024, "vs-kn"): 78.7}
# Reduced: the first 40k tokens of training text, 2 x 128, batch 20 (more updates in a short run), 4 epochs,
# validation/test on their first 10k tokens; the optimiser and the regularizers' settings stay (chapter 5
# trains nine of these in a few CPU minutes).
_REDUCED_KONG = {"data.max_train_tokens": 40_000, "data.max_eval_tokens": 10_000, "data.batch_size": 20,
                 "model.embed_size": 128, "model.hidden_size": 128, "train.epochs": 4, "train.early_stop_patience": 0}


def kong_preset_name(corpus_key: str, units: int, model: str) -> str:
    return f"kong2019-{corpus_key}-{units}-{model}"


def _kong_preset(corpus_key: str, units: int, model: str) -> Callable[[], Config]:
    regularizer, scheme, tied, elementwise = KONG_MODELS[model]
    dropout = KONG_SIZES[units]

    def build() -> Config:
        what = {"dropout": "vanilla LSTM", "noise": "data noising", "smooth": "variational smoothing"}[regularizer]
        if regularizer != "dropout":
            what += f" ({'element-wise ' if elementwise else ''}{'linear interpolation' if scheme == 'unigram' else 'Kneser-Ney'})"
        cfg = Config(
            description=f"Kong et al. (2019) {what}, 2x{units}, {'tied' if tied else 'untied'}, {KONG_CORPORA[corpus_key]}",
            data=DataConfig(corpus=KONG_CORPORA[corpus_key], protocol="stream", batch_size=64, bptt=35,
                            eval_batch_size=64),
            model=ModelConfig(embed_size=units, hidden_size=units, num_layers=2, dropout=dropout, tie_weights=tied,
                              init_range=0.05, regularizer=regularizer, noise_scheme=scheme, noise_gamma=0.2,
                              embed_dropout=dropout, smoothing_elementwise=elementwise, recurrent_dropout=0.2),
            train=TrainConfig(optimizer="rmsprop", lr=0.003, weight_decay=1e-4, epochs=60, schedule="plateau",
                              decay_factor=2.0, plateau_patience=1, early_stop_patience=6, clip=5.0,
                              loss_reduction="token_mean"),
        )
        valid, test = KONG_TABLE2[corpus_key, units][model]
        cfg.paper = {"valid": valid, "test": test, "params": KONG_PARAMS[corpus_key, units, not tied],
                     "source": "Kong et al. 2019, Table 2"}
        if (corpus_key, units, model) in KONG_SAMPLING:
            cfg.paper["valid_sampled_20"] = KONG_SAMPLING[corpus_key, units, model]
        return cfg

    return build


for _corpus in KONG_CORPORA:
    for _units in KONG_SIZES:
        for _model in KONG_TABLE2[_corpus, _units]:
            register(kong_preset_name(_corpus, _units, _model), reduced=_REDUCED_KONG)(
                _kong_preset(_corpus, _units, _model))


@register("synthetic-tiny", reduced={})
def _synthetic_tiny() -> Config:
    """A seconds-long run on the synthetic key-value corpus, for tests and demos."""
    return Config(
        description="tiny LSTM on the synthetic key-value corpus (no files needed)",
        data=DataConfig(corpus="synthetic", protocol="stream", batch_size=8, bptt=12, eval_batch_size=4),
        model=ModelConfig(embed_size=32, hidden_size=32, num_layers=1, init_range=0.1),
        train=TrainConfig(optimizer="adam", lr=0.01, epochs=3, schedule="constant", clip=5.0,
                          loss_reduction="token_mean", log_interval=20),
    )
