"""The Recurrent Memory Network head (Tran et al. 2016): fast == reference, the memory window,
causality, padding, normalisation, presets."""

import itertools
from collections import deque

import pytest
import torch

import mlm
from mlm.models.recurrent_memory import (MemoryBlock, RecurrentMemoryHead, memory_window, temporal_rows)
from mlm.training import build_model

VOCAB, HIDDEN, N = 20, 6, 4
# (recurrent_top, temporal, composition, alignment): every Table 2 variant, plus the code's options
VARIANTS = (list(itertools.product([False, True], [True, False], ["gating", "linear"], ["paper"]))
            + [(False, True, "gating", "code"), (True, True, "linear-code", "code"), (False, False, "linear-code", "paper")])


def _inputs(batch=3, time=7, seed=0):
    g = torch.Generator().manual_seed(seed)
    h = torch.randn(batch, time, HIDDEN, generator=g, dtype=torch.double, requires_grad=True)
    tokens = torch.randint(1, VOCAB, (batch, time), generator=g)
    mask = torch.ones(batch, time, dtype=torch.bool)
    mask[1, 5:] = False  # padded sentence ends, as in the sentence protocol
    mask[2, 2:] = False
    tokens[~mask] = 0
    return h, tokens, mask


def _head(recurrent_top, temporal, composition, alignment, seed=1):
    torch.manual_seed(seed)
    head = RecurrentMemoryHead(VOCAB, HIDDEN, memory_size=N, temporal=temporal, composition=composition,
                               alignment=alignment, recurrent_top=recurrent_top).double()
    for p in head.parameters():  # the tables start at zero: give T and T_C values too
        torch.nn.init.uniform_(p, -0.5, 0.5)
    return head


@pytest.mark.parametrize("recurrent_top,temporal,composition,alignment", VARIANTS)
def test_fast_head_equals_reference(recurrent_top, temporal, composition, alignment):
    """All-steps-at-once outputs, attention weights and gradients equal the word-by-word loop."""
    head = _head(recurrent_top, temporal, composition, alignment)
    h, tokens, mask = _inputs()
    fast = head(h, tokens=tokens, mask=mask)
    slow = head.reference()(h, tokens=tokens, mask=mask)
    real = mask[..., None]
    assert fast.attention.shape == (3, 7, N)
    torch.testing.assert_close(fast.output * real, slow.output * real)
    torch.testing.assert_close(fast.attention * real, slow.attention * real)
    params = [h, *head.parameters()]
    g_fast = torch.autograd.grad((fast.output * real).square().sum(), params, allow_unused=True)
    g_slow = torch.autograd.grad((slow.output * real).square().sum(), params, allow_unused=True)
    for (name, _), a, b in zip([("h", h), *head.named_parameters()], g_fast, g_slow):
        assert (a is None) == (b is None), name
        if a is not None:
            torch.testing.assert_close(a, b, msg=lambda m: f"{name}: {m}")


def test_memory_holds_exactly_the_last_n_words():
    """At every step the window is x_{t-n+1} .. x_t of the same sentence, newest last, nothing before the start."""
    _, tokens, mask = _inputs(time=9)
    ids, present = memory_window(tokens, mask, N)
    for b in range(tokens.size(0)):
        memory = deque(maxlen=N)
        for t in range(tokens.size(1)):
            if not mask[b, t]:
                continue
            memory.append(int(tokens[b, t]))
            slots = [int(i) for i, p in zip(ids[b, t], present[b, t]) if p]
            assert slots == list(memory), (b, t)
            assert present[b, t].tolist() == [False] * (N - len(memory)) + [True] * len(memory), (b, t)
            assert int(ids[b, t, -1]) == int(tokens[b, t]), "the current word is not in the last slot"


def test_temporal_rows_paper_and_code():
    """Paper: T[1:m] with the oldest word on row 1; code: the newest word always on the last row."""
    paper, code = temporal_rows(6, 4, "paper"), temporal_rows(6, 4, "code")
    # step 0 holds one word (slot 3): paper row 0, code row 3; from step 3 on the memory is full
    assert paper[0, 3] == 0 and code[0, 3] == 3
    assert paper[1, 2:].tolist() == [0, 1] and code[1, 2:].tolist() == [2, 3]
    assert paper[2, 1:].tolist() == [0, 1, 2]
    assert paper[3].tolist() == paper[5].tolist() == code[5].tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("alignment", ["paper", "code"])
def test_attention_rows_sum_to_one_over_present_slots(alignment):
    head = _head(False, True, "gating", alignment)
    h, tokens, mask = _inputs()
    weights = head(h, tokens=tokens, mask=mask).attention  # (batch, time, n)
    _, present = memory_window(tokens, mask, N)
    assert torch.all(weights[~present] == 0), "a missing or padded slot was attended"
    sums = weights.sum(-1)[mask]
    torch.testing.assert_close(sums, torch.ones_like(sums))
    assert torch.all(weights[:, 0, -1][mask[:, 0]] == 1), "at the first step all weight is on the current word"


def _tiny_model(arch: str, composition="gating", temporal=True):
    torch.manual_seed(0)
    cfg = mlm.get_preset(f"tran2016-ptb-{arch}-{'tm' if temporal else 'notm'}-{composition[0]}", "reduced",
                         {"model.embed_size": 16, "model.hidden_size": 16, "model.memory_size": 4})
    return build_model(cfg, 50).eval()


@pytest.mark.parametrize("arch", ["rm", "rmr"])
def test_causality_in_the_full_model(arch):
    """Changing words after position t leaves the predictions up to t unchanged."""
    model = _tiny_model(arch)
    tokens = torch.randint(1, 50, (2, 10))
    changed = tokens.clone()
    changed[:, 6:] = torch.randint(1, 50, (2, 4))
    with torch.no_grad():
        a, b = model(tokens).logits, model(changed).logits
    torch.testing.assert_close(a[:, :6], b[:, :6])
    assert not torch.allclose(a[:, 6:], b[:, 6:])


@pytest.mark.parametrize("arch", ["rm", "rmr"])
def test_appending_padding_changes_nothing(arch):
    """Padding a batch further (as a longer neighbour would) leaves the real positions unchanged."""
    model = _tiny_model(arch, "linear")
    tokens = torch.randint(1, 50, (2, 6))
    mask = torch.ones(2, 6, dtype=torch.bool)
    padded = torch.cat([tokens, torch.zeros(2, 4, dtype=torch.long)], 1)
    padded_mask = torch.cat([mask, torch.zeros(2, 4, dtype=torch.bool)], 1)
    with torch.no_grad():
        a = model(tokens, mask=mask)
        b = model(padded, mask=padded_mask)
    torch.testing.assert_close(a.logits, b.logits[:, :6])
    torch.testing.assert_close(a.attention, b.attention[:, :6])


def test_a_word_is_read_exactly_while_it_is_in_memory():
    """Changing the output-memory vector C of word 1 changes steps 1 .. n (its window) and no others."""
    block = MemoryBlock(VOCAB, HIDDEN, memory_size=N).double()
    for p in block.parameters():
        torch.nn.init.uniform_(p, -0.5, 0.5)
    h, _, _ = _inputs()
    tokens = torch.arange(1, 8).repeat(3, 1)  # distinct words
    before = block(h, tokens)[0]
    with torch.no_grad():
        block.C.weight[tokens[0, 1]] += 1.0
    after = block(h, tokens)[0]
    changed = [not torch.allclose(before[0, t], after[0, t]) for t in range(7)]
    assert changed == [t in range(1, 1 + N) for t in range(7)]


def test_tran_presets_and_rmr_forget_bias():
    """Section 4.2: d = 128, n = 15, batch 20 from buckets, init 0.05, forget bias 1 (RMR's top LSTM too)."""
    for arch, temporal, composition in itertools.product(["rm", "rmr"], [True, False], ["linear", "gating"]):
        for corpus in ("ptb", "wt2"):
            name = f"tran2016-{corpus}-{arch}-{'tm' if temporal else 'notm'}-{composition[0]}"
            cfg = mlm.get_preset(name)
            assert cfg.model.head == arch and cfg.model.memory_temporal == temporal
            assert cfg.model.memory_composition == composition and cfg.model.memory_size == 15
            assert cfg.data.protocol == "sentence" and cfg.data.buckets and cfg.data.batch_size == 20
            assert cfg.model.hidden_size == cfg.model.embed_size == 128 and cfg.train.epochs == 15
    assert mlm.get_preset("tran2016-ptb-rm-tm-g").paper["test"] == 123.5
    assert mlm.get_preset("tran2016-ptb-lstm3").paper["test"] == 126.1
    assert mlm.get_preset("tran2016-ptb-lstm3").model.num_layers == 3
    model = build_model(mlm.get_preset("tran2016-ptb-rmr-tm-g"), 100)
    top = model.head.top
    assert torch.all(top.bias_ih_l0[128:256] == 1) and torch.all(top.bias_hh_l0[128:256] == 0)
    with pytest.raises(mlm.ConfigError, match="memory_composition"):
        mlm.get_preset("tran2016-ptb-rm-tm-g", overrides={"model.memory_composition": "sum"})


def test_rm_model_trains_on_synthetic_data():
    cfg = mlm.get_preset("synthetic-tiny", overrides={"model.head": "rm", "data.protocol": "sentence",
                                                      "train.epochs": 2, "data.max_train_tokens": 3000,
                                                      "model.memory_size": 5})
    run = mlm.train(cfg, progress=False)
    assert run.history[-1]["train_ppl"] < run.history[0]["train_ppl"]
    assert run.result["test_ppl"] < 40
