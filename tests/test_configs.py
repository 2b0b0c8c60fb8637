"""Presets, JSON round trips, overrides from strings, and the learning-rate schedule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mlm.configs import PRESETS, Config, ConfigError, apply_overrides, get_preset, list_presets, valid_keys
from mlm.training import scheduled_lr


@pytest.mark.parametrize("size", ["full", "reduced"])
def test_every_preset_loads_and_round_trips(size):
    """Each preset loads, survives JSON (from_dict(to_json) == cfg) and prints its name."""
    names = list_presets()
    assert {"zaremba2014-small", "zaremba2014-medium", "zaremba2014-large", "synthetic-tiny"} <= set(names)
    for name in names:
        cfg = get_preset(name, size=size)
        assert cfg.name == name and cfg.size == size
        assert Config.from_dict(json.loads(cfg.to_json())) == cfg
        text = str(cfg)
        assert name in text and "train:" in text
        if size == "reduced" and name != "synthetic-tiny":
            assert "Reduced" in cfg.notes


ZAREMBA = {
    # name: (hidden, bptt, init, epochs, decay_start, decay_factor, dropout, clip)
    "zaremba2014-small": (200, 20, 0.1, 13, 4, 2.0, 0.0, 5.0),
    "zaremba2014-medium": (650, 35, 0.05, 39, 6, 1.2, 0.5, 5.0),
    "zaremba2014-large": (1500, 35, 0.04, 55, 14, 1.15, 0.65, 10.0),
}


@pytest.mark.parametrize("name", sorted(ZAREMBA))
def test_zaremba_presets_carry_the_paper_hyperparameters(name):
    hidden, bptt, init, epochs, decay_start, factor, dropout, clip = ZAREMBA[name]
    cfg = get_preset(name)
    m, d, t = cfg.model, cfg.data, cfg.train
    assert (m.num_layers, m.hidden_size, m.embed_size) == (2, hidden, hidden)
    assert (d.corpus, d.protocol, d.bptt, d.batch_size) == ("ptb", "stream", bptt, 20)
    assert m.init_range == init and m.dropout == dropout and not m.tie_weights
    assert (t.optimizer, t.lr, t.epochs, t.schedule) == ("sgd", 1.0, epochs, "decay")
    assert (t.decay_start, t.decay_factor, t.clip) == (decay_start, factor, clip)


@pytest.mark.parametrize("size", ["small", "medium", "large"])
def test_press_presets_are_tied_zaremba(size):
    tied = get_preset(f"press2017-{size}-tied")
    base = get_preset(f"zaremba2014-{size}")
    assert tied.model.tie_weights is True
    assert tied.model.embed_size == tied.model.hidden_size
    assert (tied.train, tied.data) == (base.train, base.data)


@pytest.mark.parametrize("name", list_presets())
def test_reduced_variant_changes_only_what_it_says(name):
    """The reduced preset is the full one plus exactly its ``reduced`` overrides, listed in notes."""
    full, reduced = get_preset(name), get_preset(name, size="reduced")
    expected = apply_overrides(full, PRESETS[name].reduced)
    assert (reduced.data, reduced.model, reduced.train) == (expected.data, expected.model, expected.train)
    for key in PRESETS[name].reduced:
        assert key in reduced.notes


def test_string_overrides_coerce_types():
    cfg = get_preset("zaremba2014-small",
                     overrides=["train.lr=0.5", "model.tie_weights=true", "data.max_len=none",
                                "train.epochs=3", "data.protocol=sentence", "model.forget_bias=1"])
    assert cfg.train.lr == 0.5 and isinstance(cfg.train.lr, float)
    assert cfg.model.tie_weights is True
    assert cfg.data.max_len is None
    assert cfg.train.epochs == 3 and isinstance(cfg.train.epochs, int)
    assert cfg.data.protocol == "sentence"
    assert cfg.model.forget_bias == 1.0
    cfg2 = apply_overrides(cfg, ["data.max_len = 35", "model.tie_weights=0"])
    assert cfg2.data.max_len == 35 and cfg2.model.tie_weights is False
    assert cfg.data.max_len is None  # the original is not modified


def test_dict_overrides_and_copy():
    base = get_preset("synthetic-tiny")
    cfg = apply_overrides(base, {"train.lr": 0.1, "name": "mine"})
    assert cfg.train.lr == 0.1 and cfg.name == "mine"
    assert base.train.lr == 0.01 and base.name == "synthetic-tiny"


def test_unknown_key_lists_valid_keys():
    with pytest.raises(ConfigError) as info:
        get_preset("zaremba2014-small", overrides=["train.lrr=0.5"])
    message = str(info.value)
    assert "train.lrr" in message and "train.lr" in message.replace("train.lrr", "")
    assert "model.hidden_size" in message
    assert "train.lr" in valid_keys()


@pytest.mark.parametrize("override", ["train.lr=abc", "train.epochs=2.5", "model.tie_weights=maybe",
                                      "data.protocol=bogus", "model.dropout=1.5", "data.batch_size=0"])
def test_bad_values_raise(override):
    with pytest.raises(ConfigError):
        get_preset("zaremba2014-small", overrides=[override])


def test_override_without_equals_raises():
    with pytest.raises(ConfigError, match="key=value"):
        get_preset("zaremba2014-small", overrides=["train.lr"])


def test_tie_weights_with_different_sizes_rejected():
    with pytest.raises(ConfigError, match="tie_weights"):
        get_preset("zaremba2014-small", overrides=["model.tie_weights=true", "model.embed_size=100"])


def test_unknown_preset_lists_presets():
    with pytest.raises(ConfigError) as info:
        get_preset("zaremba2015-tiny")
    assert "zaremba2014-small" in str(info.value) and "synthetic-tiny" in str(info.value)
    with pytest.raises(ConfigError):
        get_preset("zaremba2014-small", size="huge")


def test_from_dict_rejects_unknown_keys():
    d = get_preset("synthetic-tiny").to_dict()
    d["model"]["hidden"] = 3
    with pytest.raises(ConfigError, match="model.hidden_size"):
        Config.from_dict(d)
    with pytest.raises(ConfigError):
        Config.from_dict({"modle": {}})


def test_scheduled_lr_zaremba_small():
    """lr 1 for epochs 1-4, then halved after every epoch: 1, 1, 1, 1, 0.5, 0.25."""
    cfg = get_preset("zaremba2014-small")
    assert [scheduled_lr(cfg, e) for e in range(1, 7)] == [1, 1, 1, 1, 0.5, 0.25]


def test_scheduled_lr_zaremba_large():
    cfg = get_preset("zaremba2014-large")
    assert scheduled_lr(cfg, 14) == 1.0
    assert scheduled_lr(cfg, 16) == pytest.approx(1 / 1.15 ** 2)


def test_printing_a_preset_names_the_file_that_defines_it():
    root = Path(__file__).resolve().parent.parent
    for name in list_presets():
        source = PRESETS[name].source
        assert f"defined in: {source}" in str(get_preset(name))
        assert (root / source).is_file(), source
        paper = Path(source).stem  # one module per paper, named after it
        assert paper == "synthetic" or name.startswith(paper + "-"), (name, source)
    assert PRESETS["press2017-small-tied"].source == "mlm/presets/press2017.py"  # built by zaremba2014's function
    assert "defined in" not in str(Config(name="my-own"))
