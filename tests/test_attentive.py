"""The Attentive LM head (Salton et al. 2017): fast == reference, causality, padding, normalisation."""

import itertools

import pytest
import torch

import mlm
from mlm.models import LanguageModel
from mlm.models.attentive import AttentiveHead, ReferenceAttentiveHead, causal_memory_mask, masked_softmax
from mlm.training import build_model

VARIANTS = list(itertools.product(["single", "combined"], [False, True], ["tanh", "linear"]))


def _inputs(batch=3, time=7, hidden=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    h = torch.randn(batch, time, hidden, generator=g, dtype=torch.double, requires_grad=True)
    mask = torch.ones(batch, time, dtype=torch.bool)
    mask[1, 5:] = False  # padded sentence ends, as in the sentence protocol
    mask[2, 2:] = False
    return h, mask


@pytest.mark.parametrize("score,zero_slot,merge", VARIANTS)
def test_fast_head_equals_reference(score, zero_slot, merge):
    """All-steps-at-once outputs, attention weights and gradients equal the step-by-step loop."""
    torch.manual_seed(1)
    head = AttentiveHead(8, score=score, zero_slot=zero_slot, merge=merge).double()
    h, mask = _inputs()
    fast, slow = head(h, mask=mask), ReferenceAttentiveHead(head)(h, mask=mask)
    real = mask[..., None]
    torch.testing.assert_close(fast.output * real, slow.output * real)
    torch.testing.assert_close(fast.attention * real, slow.attention * real)
    params = [h, *head.parameters()]
    g_fast = torch.autograd.grad((fast.output * real).square().sum(), params)
    g_slow = torch.autograd.grad((slow.output * real).square().sum(), params)
    for a, b in zip(g_fast, g_slow):
        torch.testing.assert_close(a, b)


@pytest.mark.parametrize("score", ["single", "combined"])
def test_attention_rows_sum_to_one_over_the_history(score):
    """Row t spreads its weight over slots 1..t-1 only; the first step attends to nothing."""
    head = AttentiveHead(8, score=score).double()
    h, mask = _inputs()
    weights = head(h, mask=mask).attention  # (batch, time, time)
    assert weights.shape == (3, 7, 7)
    assert torch.all(weights.triu() == 0), "a step attended to itself or to the future"
    sums = weights.sum(-1)
    for b in range(3):
        for t in range(7):
            if not mask[b, t]:
                continue
            expected = 0.0 if t == 0 else 1.0
            assert sums[b, t].item() == pytest.approx(expected), (b, t)
    assert torch.all(weights[~mask[:, None, :].expand_as(weights)] == 0), "a padded slot was attended"


def test_first_step_context_is_zero():
    """t = 1 (empty memory): the output is tanh(W_c [h_1; 0] + b), with no NaN."""
    head = AttentiveHead(8, score="combined").double()
    h, _ = _inputs()
    out = head(h).output[:, 0]
    expected = torch.tanh(head.W_c(torch.cat([h[:, 0], torch.zeros_like(h[:, 0])], -1)))
    torch.testing.assert_close(out, expected)


def tiny_attentive_lm(score: str, vocab_size: int = 50):
    """The Salton preset shrunk to 16 units, without dropout, in eval mode."""
    torch.manual_seed(0)
    cfg = mlm.get_preset("salton2017-ptb-" + score, "reduced",
                         {"model.embed_size": 16, "model.hidden_size": 16, "model.dropout": 0.0})
    return build_model(cfg, vocab_size).eval()


@pytest.mark.parametrize("score", ["single", "combined"])
def test_causality_in_the_full_model(score):
    """Changing words after position t leaves the predictions up to t unchanged."""
    model = tiny_attentive_lm(score)
    tokens = torch.randint(50, (2, 9))
    changed = tokens.clone()
    changed[:, 5:] = torch.randint(50, (2, 4))
    with torch.no_grad():
        a, b = model(tokens).logits, model(changed).logits
    torch.testing.assert_close(a[:, :5], b[:, :5])
    assert not torch.allclose(a[:, 5:], b[:, 5:])


@pytest.mark.parametrize("score", ["single", "combined"])
def test_appending_padding_changes_nothing(score):
    """Padding a batch further (as a longer neighbour would) leaves the real positions unchanged."""
    model = tiny_attentive_lm(score)
    tokens = torch.randint(1, 50, (2, 6))
    mask = torch.ones(2, 6, dtype=torch.bool)
    padded = torch.cat([tokens, torch.zeros(2, 4, dtype=torch.long)], 1)
    padded_mask = torch.cat([mask, torch.zeros(2, 4, dtype=torch.bool)], 1)
    with torch.no_grad():
        a = model(tokens, mask=mask)
        b = model(padded, mask=padded_mask)
    torch.testing.assert_close(a.logits, b.logits[:, :6])
    torch.testing.assert_close(a.attention, b.attention[:, :6, :6])


def test_disabled_attention_ignores_the_history():
    """The ablation: with the context fixed to zero, earlier states cannot change h'_t."""
    head = AttentiveHead(8, score="combined", disable_attention=True).double()
    h, _ = _inputs()
    other = h.detach().clone()
    other[:, :3] += 1.0
    torch.testing.assert_close(head(h).output[:, 3:], head(other).output[:, 3:])


def test_masked_softmax_handles_empty_rows():
    scores = torch.randn(2, 3, 3, requires_grad=True)
    allowed = causal_memory_mask(None, 2, 3, "cpu")
    weights = masked_softmax(scores, allowed)
    assert torch.isfinite(weights).all() and weights[:, 0].abs().sum() == 0
    weights.sum().backward()
    assert torch.isfinite(scores.grad).all()


def test_salton_presets():
    """The paper's settings: sentence protocol cut/padded to 35, batch 32, tied, zero biases, patience 10."""
    for corpus, units in (("ptb", 650), ("wt2", 1000)):
        for kind in ("single", "combined", "lstm"):
            cfg = mlm.get_preset(f"salton2017-{corpus}-{kind}")
            assert cfg.data.protocol == "sentence" and cfg.data.max_len == 35 and cfg.data.pad_to == 35
            assert cfg.data.batch_size == 32 and cfg.model.tie_weights and cfg.model.zero_bias
            assert cfg.model.hidden_size == units and cfg.model.init_range == 0.05
            assert cfg.train.early_stop_patience == 10 and cfg.train.clip == 5.0
            assert cfg.model.head == ("identity" if kind == "lstm" else "attentive")
    assert mlm.get_preset("salton2017-ptb-combined").model.attention_score == "combined"
    model = build_model(mlm.get_preset("salton2017-ptb-single"), 10_002)
    assert isinstance(model, LanguageModel) and abs(model.num_parameters() - 14.5e6) < 0.1e6


def test_attentive_model_trains_on_synthetic_data():
    cfg = mlm.get_preset("synthetic-tiny", overrides={"model.head": "attentive", "data.protocol": "sentence",
                                                      "train.epochs": 2, "data.max_train_tokens": 3000})
    run = mlm.train(cfg, progress=False)
    assert run.history[-1]["train_ppl"] < run.history[0]["train_ppl"]
    assert run.result["test_ppl"] < 40


def test_head_learning_rate_scale():
    """train.head_lr_scale gives the head's parameters their own group, scaled through every schedule."""
    from mlm.training import build_optimizer, set_lr

    cfg = mlm.get_preset("salton2017-ptb-single", "reduced", overrides={"model.hidden_size": 8, "model.embed_size": 8})
    assert cfg.train.head_lr_scale == 0.1 and mlm.get_preset("salton2017-ptb-single").train.head_lr_scale == 1.0
    model = build_model(cfg, 30)
    optimizer = build_optimizer(cfg, model)
    body, head = optimizer.param_groups
    assert {id(p) for p in head["params"]} == {id(p) for p in model.head.parameters()}
    assert len(body["params"]) + len(head["params"]) == len(list(model.parameters()))
    set_lr(optimizer, 0.5)
    assert (body["lr"], head["lr"]) == (0.5, pytest.approx(0.05))
    lstm = build_model(mlm.get_preset("salton2017-ptb-lstm", "reduced"), 30)
    assert len(build_optimizer(cfg, lstm).param_groups) == 1  # no head parameters, one group
    with pytest.raises(mlm.ConfigError, match="head_lr_scale"):
        mlm.get_preset("salton2017-ptb-single", overrides={"train.head_lr_scale": 0})


def test_attention_stats_of_uniform_attention_equal_the_uniform_reference():
    """With v = 0 every score is equal, the attention is uniform: entropy ratio 1 and weight by distance
    equal to ``uniform_by_distance``; a trained-looking head (random v) departs from it."""
    from mlm.analysis.history import attention_stats
    from mlm.data.batching import SentenceBatches

    model = tiny_attentive_lm("single")
    g = torch.Generator().manual_seed(3)
    lines = [torch.randint(3, 50, (int(n),), generator=g).tolist() for n in torch.randint(2, 12, (10,), generator=g)]
    batches = SentenceBatches(lines, bos_id=1, eos_id=2, pad_id=0, batch_size=4)
    torch.nn.init.normal_(model.head.v.weight, std=3.0)
    torch.nn.init.normal_(model.head.W_s.weight, std=3.0)
    skewed = attention_stats(model, batches, max_len=12)
    with torch.no_grad():
        model.head.v.weight.zero_()
    stats = attention_stats(model, batches, max_len=12)
    measured = [t for t, n in enumerate(stats.count_by_position) if n > 0]
    assert measured and all(abs(stats.entropy_ratio[t] - 1) < 1e-5 for t in measured), stats.entropy_ratio
    torch.testing.assert_close(torch.tensor(stats.weight_by_distance), torch.tensor(stats.uniform_by_distance))
    assert max(abs(a - b) for a, b in zip(skewed.weight_by_distance, skewed.uniform_by_distance)) > 1e-4


def test_the_per_token_reading_of_salton_numbers_matches_ptb(shared_data):
    """The preset's reading of the paper's numbers rests on PTB's test split: 82,430 tokens (every word and
    <eos>) in 3,761 sentences; 70.1 reads as about 86 per predicted token."""
    from mlm.data.corpora import load_registered_corpus
    from mlm.presets import salton2017

    ptb = load_registered_corpus("ptb", shared_data)
    assert len(ptb.lines["test"]) == salton2017.PTB_TEST_SENTENCES
    assert sum(len(line) + 1 for line in ptb.lines["test"]) == salton2017.PTB_TEST_TOKENS
    assert mlm.get_preset("salton2017-ptb-single").paper["reading"].startswith("70.1 is about 86 per predicted")
