"""Embedding regularizers (chapter 5): proposals and gamma_i from counts, data noising rates, variational
smoothing's per-sequence and element-wise draws, its test-time mean, output rows, the KL's L2, the sweep."""

from __future__ import annotations

import json
import math

import pytest
import torch

import mlm
from mlm.evaluation import evaluate
from mlm.models import LanguageModel
from mlm.regularizers import (DataNoising, EmbeddingRegularizer, VariationalSmoothing, bigram_counts,
                              evaluate_sampled, kneser_ney_proposal, l2_coefficients, noising_scheme,
                              training_stream, unigram_proposal)
from mlm.regularizers.proposals import NoisingScheme
from mlm.training import build_model

# A tiny corpus by hand: ids <pad>=0 <eos>=1 <unk>=2 <bos>=3 a=4 b=5 c=6.
# Stream: <eos> a b a c <eos> b a <eos>
LINES = [[4, 5, 4, 6], [5, 4]]
V = 7


def counts():
    return bigram_counts(training_stream(LINES, eos_id=1), V)


def test_counts_match_hand_computation():
    c = counts()
    assert c.count.tolist() == [0, 3, 0, 0, 3, 2, 1]
    # bigram types: (eos,a) (a,b) (b,a) (a,c) (c,eos) (eos,b) (a,eos); (b,a) occurs twice
    assert c.distinct_after.tolist() == [0, 2, 0, 0, 3, 1, 1]
    assert c.distinct_before.tolist() == [0, 2, 0, 0, 2, 2, 1]


def test_proposals_sum_to_one_and_match_counts():
    c = counts()
    uni, kn = unigram_proposal(c), kneser_ney_proposal(c)
    torch.testing.assert_close(uni, torch.tensor([0, 3, 0, 0, 3, 2, 1], dtype=torch.float64) / 9)
    torch.testing.assert_close(kn, torch.tensor([0, 2, 0, 0, 2, 2, 1], dtype=torch.float64) / 7)
    assert uni.sum().item() == pytest.approx(1.0) and kn.sum().item() == pytest.approx(1.0)
    absolute = noising_scheme("absolute", c, 0.3).gamma
    # gamma_i = 0.3 * distinct(i, .) / count(i): eos 0.3*2/3, a 0.3*3/3, b 0.3*1/2, c 0.3*1/1; unseen 0
    torch.testing.assert_close(absolute, torch.tensor([0, 0.2, 0, 0, 0.3, 0.15, 0.3], dtype=torch.float64))
    kn_scheme = noising_scheme("kneser-ney", c, 0.3)
    assert kn_scheme.noise_targets and torch.equal(kn_scheme.gamma, absolute)
    assert not noising_scheme("unigram", c, 0.3).noise_targets
    blank = noising_scheme("blank", c, 0.3, blank_id=0)
    assert blank.proposal.tolist() == [1, 0, 0, 0, 0, 0, 0]
    with pytest.raises(ValueError, match="unknown noising scheme"):
        noising_scheme("bigram", c, 0.3)


def _big_batch(seed=0, shape=(400, 500)):
    g = torch.Generator().manual_seed(seed)
    inputs = torch.tensor([1, 4, 5, 6])[torch.randint(4, shape, generator=g)]
    targets = torch.tensor([1, 4, 5, 6])[torch.randint(4, shape, generator=g)]
    return inputs, targets


@pytest.mark.parametrize("name", ["unigram", "absolute", "kneser-ney", "blank"])
def test_noising_rates_match_gamma(name):
    """P(input i changes) = gamma_i (1 - pi_i) per word, within 5 standard errors over 200k positions."""
    torch.manual_seed(0)
    scheme = noising_scheme(name, counts(), 0.3, blank_id=0)
    noiser = DataNoising(scheme).train()
    inputs, targets = _big_batch()
    mask = torch.ones_like(inputs, dtype=torch.bool)
    mask[:, -50:] = False  # padding is never noised
    new_inputs, new_targets = noiser.prepare(inputs, targets, mask)
    assert torch.equal(new_inputs[~mask], inputs[~mask]) and torch.equal(new_targets[~mask], targets[~mask])
    changed = (new_inputs != inputs) & mask
    for word in (1, 4, 5, 6):
        at = (inputs == word) & mask
        expected = scheme.gamma[word].item() * (1 - scheme.proposal[word].item())
        rate = changed[at].double().mean().item()
        se = math.sqrt(expected * (1 - expected) / at.sum().item())
        assert abs(rate - expected) < 5 * se + 1e-9, (name, word, rate, expected)
    # the replacements follow the proposal
    drawn = torch.bincount(new_inputs[changed], minlength=V).double()
    if name == "blank":
        assert torch.all(new_inputs[changed] == 0)
    target_changed = (new_targets != targets) & mask
    if name == "kneser-ney":
        # the target is redrawn exactly when the input was noised: P(changed) = sum over words of gamma (1 - K_target)
        expected = (scheme.gamma[inputs] * (1 - scheme.proposal[targets]))[mask].mean().item()
        assert abs(target_changed[mask].double().mean().item() - expected) < 0.005
        assert drawn[[0, 2, 3]].sum() == 0  # zero-probability words are never drawn
    else:
        assert not target_changed.any(), "only Kneser-Ney noising replaces targets"


def test_noising_is_off_at_evaluation():
    noiser = DataNoising(noising_scheme("kneser-ney", counts(), 0.9)).eval()
    inputs, targets = _big_batch(shape=(10, 20))
    new_inputs, new_targets = noiser.prepare(inputs, targets, None)
    assert torch.equal(new_inputs, inputs) and torch.equal(new_targets, targets)


def _smoother(gamma=0.3, name="kneser-ney", **kwargs):
    return VariationalSmoothing(noising_scheme(name, counts(), gamma), **kwargs)


def test_mean_embedding_is_the_closed_form():
    """Evaluation embeds with E[e_i] = (1 - gamma_i) e_i + gamma_i sum_v pi_v e_v (section 4.1), element-wise too."""
    torch.manual_seed(0)
    emb = torch.nn.Embedding(V, 5).double()
    for elementwise in (False, True):
        reg = _smoother(elementwise=elementwise).eval()
        tokens = torch.arange(V)[None, :]
        got = reg.embed(emb, tokens)[0]
        for i in range(V):
            g = reg.gamma[i].item()
            background = sum(reg.proposal[v].item() * emb.weight[v] for v in range(V))
            torch.testing.assert_close(got[i], (1 - g) * emb.weight[i] + g * background)


@pytest.mark.parametrize("elementwise", [False, True])
def test_samples_average_to_the_mean(elementwise):
    """Many draws of q(e_i) average to the closed-form mean (the draws come from the right mixture)."""
    torch.manual_seed(0)
    emb = torch.nn.Embedding(V, 4).double()
    reg = _smoother(gamma=0.5, name="unigram", elementwise=elementwise).train()
    tokens = torch.full((20000, 1), 4)  # word a, one row per draw
    draws = reg.embed(emb, tokens)[:, 0]
    mean = reg.eval().embed(emb, torch.tensor([[4]]))[0, 0]
    torch.testing.assert_close(draws.mean(0), mean, atol=0.02, rtol=0)


@pytest.fixture(params=[False, True], ids=["unique", "fixed-size"])
def pairs_path(request, monkeypatch):
    """Run a test with row_types as on the CPU (torch.unique) and as on a GPU (fixed size, no host sync)."""
    import functools

    from mlm.regularizers import base, smoothing

    fixed = functools.partial(base.row_types, fixed_size=request.param)
    monkeypatch.setattr(base, "row_types", fixed)
    monkeypatch.setattr(smoothing, "row_types", fixed)
    return request.param


def test_fixed_size_pairs_are_torch_unique_padded():
    """The GPU's sort-based unique: the distinct keys first (sorted), zeros after, the same inverse."""
    from mlm.regularizers.base import row_types, unique_fixed_size

    keys = torch.randint(0, 9, (5, 7), generator=torch.Generator().manual_seed(0))
    unique, inverse = torch.unique(keys, return_inverse=True)
    padded, padded_inverse = unique_fixed_size(keys)
    assert padded.shape == (35,) and torch.equal(padded[:len(unique)], unique) and not padded[len(unique):].any()
    assert torch.equal(padded_inverse, inverse)
    words, rows, _ = row_types(keys, 9, fixed_size=True)
    assert words.numel() == rows.numel() == 35


@pytest.mark.usefixtures("pairs_path")
def test_one_sample_per_word_type_per_sequence():
    """Every occurrence of a word in a row gets the same vector (dropout mask included); rows differ."""
    torch.manual_seed(0)
    emb = torch.nn.Embedding(V, 16)
    for elementwise in (False, True):
        reg = _smoother(gamma=0.5, elementwise=elementwise, embed_dropout=0.5).train()
        tokens = torch.tensor([[4, 5, 4, 6, 4, 5]] * 50)
        x = reg.embed(emb, tokens)  # (50, 6, 16)
        torch.testing.assert_close(x[:, 0], x[:, 2], rtol=0, atol=0)
        torch.testing.assert_close(x[:, 0], x[:, 4], rtol=0, atol=0)
        torch.testing.assert_close(x[:, 1], x[:, 5], rtol=0, atol=0)
        assert len({tuple(row.tolist()) for row in x[:, 0]}) > 10, "rows should draw independently"


def test_elementwise_draws_each_dimension():
    """Vector-wise: a drawn vector is one word's row; element-wise: elements of several words, independently."""
    torch.manual_seed(0)
    weight = torch.arange(V, dtype=torch.float64)[:, None].repeat(1, 64)  # row v is all v: elements name their word
    emb = torch.nn.Embedding.from_pretrained(weight)
    tokens = torch.full((4000, 1), 4)
    whole = _smoother(gamma=0.5, name="unigram").train().embed(emb, tokens)[:, 0]  # (4000, 64)
    assert torch.all(whole == whole[:, :1]), "vector-wise smoothing mixed words inside a vector"
    parts = _smoother(gamma=0.5, name="unigram", elementwise=True).train().embed(emb, tokens)[:, 0]
    replaced = parts != 4  # (draws, dims); a replacement by 'a' itself is invisible
    rate = 0.5 * (1 - 3 / 9)
    assert abs(replaced.double().mean().item() - rate) < 0.01
    # independence: the replacement indicators of two dimensions are uncorrelated
    a, b = replaced[:, 0].double(), replaced[:, 1].double()
    assert abs(((a - a.mean()) * (b - b.mean())).mean().item()) < 0.01
    assert (replaced.any(1) & ~replaced.all(1)).double().mean() > 0.9, "most vectors should be partly replaced"


def _tiny_lm(reg, tied=True, hidden=6):
    torch.manual_seed(0)
    return LanguageModel(V, hidden, hidden, 1, tie_weights=tied, regularizer=reg)


@pytest.mark.usefixtures("pairs_path")
def test_output_rows_are_drawn_for_the_targets():
    """gamma = 0: the sampled softmax equals the plain one; gamma = 1 with all mass on word c: every target
    column k of a row reads o_c (Eq. 5), the other columns stay."""
    model = _tiny_lm(_smoother(gamma=0.0, smooth_output=True), tied=False)
    x = torch.randn(2, 3, 6)
    targets = torch.tensor([[4, 5, 4], [1, 1, 6]])
    reg = model.regularizer.train()
    reg._targets = targets
    torch.testing.assert_close(reg.decode(model.decoder, x), model.decoder(x))
    proposal = torch.zeros(V, dtype=torch.float64)
    proposal[6] = 1.0
    reg = VariationalSmoothing(NoisingScheme("unigram", torch.ones(V, dtype=torch.float64), proposal, False),
                               smooth_output=True).train()
    reg._targets = targets
    got = reg.decode(model.decoder, x)
    expected = model.decoder(x).clone()
    W, b = model.decoder.weight, model.decoder.bias
    for row, words in enumerate(targets.tolist()):
        for k in set(words):
            expected[row, :, k] = x[row] @ W[6] + b[k]
    torch.testing.assert_close(got, expected)


def test_evaluation_is_clean_or_the_mean():
    """Noising and dropout change nothing at evaluation; smoothing evaluates deterministically with the mean."""
    tokens = torch.randint(V, (3, 5))
    plain = _tiny_lm(None).eval()
    with torch.no_grad():
        reference = plain(tokens).logits
        for reg in (DataNoising(noising_scheme("kneser-ney", counts(), 0.9), embed_dropout=0.5),
                    EmbeddingRegularizer(V, 0.5)):
            torch.testing.assert_close(_tiny_lm(reg).eval()(tokens).logits, reference, rtol=0, atol=0)
        smooth = _tiny_lm(_smoother(smooth_output=True, embed_dropout=0.5)).eval()
        torch.testing.assert_close(smooth(tokens).logits, smooth(tokens).logits, rtol=0, atol=0)
        assert not torch.allclose(smooth(tokens).logits, reference)


def test_l2_coefficient_is_the_kl_weight():
    """c_v = 1/2 sum_i theta^i_v, with theta^i the mixture weights of q(e_i); uniform proposal: 1/2."""
    scheme = noising_scheme("absolute", counts(), 0.3)
    gamma, q = scheme.gamma, scheme.proposal
    theta = gamma[:, None] * q[None, :] + torch.diag(1 - gamma)  # theta[i, v]
    torch.testing.assert_close(l2_coefficients(gamma, q), 0.5 * theta.sum(0))
    uniform = torch.full((V,), 1.0 / V, dtype=torch.float64)
    torch.testing.assert_close(l2_coefficients(torch.full((V,), 0.3, dtype=torch.float64), uniform),
                               torch.full((V,), 0.5, dtype=torch.float64))
    # penalty + weight decay: the gradient on e_v is 2 lambda c_v e_v
    model = _tiny_lm(_smoother(l2=0.1))
    model.regularizer.penalty(model).backward()
    c = model.regularizer.l2_coefficient[:, None]
    w = model.embedding.weight
    torch.testing.assert_close(w.grad + 0.1 * w.detach(), 2 * 0.1 * c * w.detach())


def test_sampled_evaluation_matches_plain_without_noise():
    """With gamma = 0 every draw is the mean, so averaging S samples gives the plain perplexity."""
    cfg = mlm.get_preset("synthetic-tiny", overrides={"model.regularizer": "smooth", "model.noise_gamma": 0.0,
                                                      "model.tie_weights": True, "data.max_eval_tokens": 300})
    corpus = mlm.load_data(cfg)
    model = build_model(cfg, len(corpus.vocab), corpus.vocab.pad_id, corpus)
    batches = mlm.build_batches(cfg, corpus, "valid")
    plain, sampled = evaluate(model, batches), evaluate_sampled(model, batches, samples=3)
    assert sampled.tokens == plain.tokens and sampled.perplexity == pytest.approx(plain.perplexity, rel=1e-6)
    cfg_noisy = mlm.configs.apply_overrides(cfg, {"model.noise_gamma": 0.5})
    noisy = build_model(cfg_noisy, len(corpus.vocab), corpus.vocab.pad_id, corpus)
    noisy.load_state_dict(model.state_dict())
    mean, drawn = evaluate(noisy, batches), evaluate_sampled(noisy, batches, samples=2)
    assert abs(drawn.nll - mean.nll) > 1e-3, "with gamma = 0.5 the draws should differ from the mean"
    assert not noisy.regularizer.sampling, "sampling is switched off again after the evaluation"


@pytest.mark.parametrize("overrides", [
    {"model.regularizer": "noise", "model.noise_scheme": "blank"},
    {"model.regularizer": "smooth", "model.noise_scheme": "kneser-ney", "model.smoothing_elementwise": True,
     "model.embed_dropout": 0.3, "model.recurrent_dropout": 0.2, "train.weight_decay": 1e-4},
])
def test_regularized_models_train(overrides):
    cfg = mlm.get_preset("synthetic-tiny", overrides={**overrides, "train.epochs": 2})
    run = mlm.train(cfg, progress=False)
    assert run.result["best_valid_ppl"] < 0.5 * len(run.corpus.vocab)


def test_none_builds_the_plain_model_and_bad_settings_are_refused():
    cfg = mlm.get_preset("synthetic-tiny")
    assert build_model(cfg, 30).regularizer is None
    with pytest.raises(mlm.ConfigError, match="embed_dropout"):
        mlm.get_preset("synthetic-tiny", overrides={"model.embed_dropout": 0.5})
    with pytest.raises(mlm.ConfigError, match="blank"):
        mlm.get_preset("synthetic-tiny", overrides={"model.regularizer": "smooth", "model.noise_scheme": "blank"})
    with pytest.raises(ValueError, match="pass the corpus"):
        build_model(mlm.get_preset("synthetic-tiny", overrides={"model.regularizer": "noise"}), 30)


def test_kong_presets():
    """Table 2's rows: batch 64, RMSprop, 2 layers, tied except the untied vanilla LSTM, paper numbers attached."""
    names = [n for n in mlm.list_presets() if n.startswith("kong2019-")]
    assert len(names) == 2 * 7 + 2 * 6
    for name in names:
        cfg = mlm.get_preset(name)
        assert cfg.data.batch_size == 64 and cfg.train.optimizer == "rmsprop" and cfg.model.num_layers == 2
        assert cfg.model.tie_weights == ("untied" not in name) and cfg.model.recurrent_dropout == 0.2
        assert cfg.model.embed_dropout == (0.5 if "-512-" in name else 0.7)
        assert cfg.paper["valid"] > cfg.paper["test"] > 60
        assert mlm.get_preset(name, "reduced").model.hidden_size < cfg.model.hidden_size
    assert mlm.get_preset("kong2019-ptb-512-vs-elementwise").paper["valid"] == 70.5
    assert mlm.get_preset("kong2019-ptb-512-dn-kn").paper["valid_sampled_20"] == 96.5
    assert abs(build_model(mlm.get_preset("kong2019-ptb-512-vanilla-untied"), 10_000).num_parameters() - 14e6) < 0.5e6


def test_sweep_picks_the_best_validation_run(tmp_path):
    from mlm.sweep import parse_grid, sweep

    grid = parse_grid(["train.lr=0.01,0.0001"])
    summary = sweep("synthetic-tiny", grid, overrides=["train.epochs=1"], out=tmp_path)
    saved = json.loads((tmp_path / "sweep.json").read_text())
    assert len(saved["runs"]) == 2 and saved["best"] == summary["best"]
    assert saved["best"]["valid_ppl"] == min(r["valid_ppl"] for r in saved["runs"])
    assert saved["best"]["point"] == {"train.lr": "0.01"}
    with pytest.raises(mlm.ConfigError, match="unknown config key"):
        parse_grid(["model.gama=0.1,0.2"])


def test_recurrent_weight_dropout():
    """Training drops hidden-to-hidden weights (the fused LSTM still runs); evaluation and p = 0 are the plain model."""
    torch.manual_seed(0)
    model = LanguageModel(V, 6, 6, 2, recurrent_dropout=0.5)
    plain = LanguageModel(V, 6, 6, 2)
    plain.load_state_dict(model.state_dict())
    tokens = torch.randint(V, (3, 5))
    model.eval(), plain.eval()
    torch.testing.assert_close(model(tokens).logits, plain(tokens).logits, rtol=0, atol=0)
    model.train(), plain.train()
    assert not torch.allclose(model(tokens).logits, plain(tokens).logits)
    model(tokens).logits.sum().backward()
    assert model.lstm.weight_hh_l1.grad is not None and model.lstm.weight_hh_l1.grad.abs().sum() > 0
    model.eval(), plain.eval()  # after a training step evaluation must use the undropped weights again
    torch.testing.assert_close(model(tokens).logits, plain(tokens).logits, rtol=0, atol=0)


def test_recurrent_dropout_hands_the_fused_lstm_one_weight_buffer(monkeypatch):
    """The dropped weights reach the fused kernel as views of one contiguous buffer, laid out in the module's
    order, as cuDNN needs them (separate tensors would be copied into one on every call)."""
    model = LanguageModel(V, 6, 6, 2, recurrent_dropout=0.5).train()
    seen = []
    real = torch._VF.lstm
    monkeypatch.setattr(torch._VF, "lstm", lambda x, state, weights, *rest: (seen.append(weights),
                                                                             real(x, state, weights, *rest))[1])
    model(torch.randint(V, (3, 5)))
    [weights] = seen
    assert len({w.untyped_storage().data_ptr() for w in weights}) == 1
    offsets = [w.storage_offset() for w in weights]
    assert offsets == [sum(w.numel() for w in weights[:i]) for i in range(len(weights))]
    assert [w.shape for w in weights] == [getattr(model.lstm, n).shape for n in model.lstm._flat_weights_names]


def test_mode_prediction_and_proper_sampled_softmax():
    """prediction="mode" evaluates with the base matrix; a test-time draw of the softmax sums to one."""
    tokens = torch.randint(V, (3, 5))
    plain = _tiny_lm(None).eval()
    smooth = _tiny_lm(_smoother(smooth_output=True)).eval()
    smooth.regularizer.prediction = "mode"
    with torch.no_grad():
        torch.testing.assert_close(smooth(tokens).logits, plain(tokens).logits, rtol=0, atol=0)
        smooth.regularizer.sampling = True
        probs = smooth(tokens).logits.softmax(-1)
    torch.testing.assert_close(probs.sum(-1), torch.ones(3, 5))


def test_a_test_time_draw_can_keep_the_output_rows_at_their_mean():
    """draw_outputs=False: a test-time draw of variational smoothing reads every output row at the mean of q
    (only the inputs are drawn); evaluate_sampled sets it for its draws and restores it after."""
    import torch.nn.functional as F

    smooth = _tiny_lm(_smoother(gamma=0.5, smooth_output=True)).eval()
    reg, x = smooth.regularizer, torch.randn(3, 5, 6)
    mean = F.linear(x, reg.mean_weight(smooth.decoder.weight), smooth.decoder.bias)
    reg.sampling = True
    with torch.no_grad():
        assert not torch.allclose(reg.decode(smooth.decoder, x), mean), "a draw of every row differs from the mean"
        reg.draw_outputs = False
        torch.testing.assert_close(reg.decode(smooth.decoder, x), mean)
    cfg = mlm.get_preset("synthetic-tiny", overrides={"model.regularizer": "smooth", "model.noise_gamma": 0.5,
                                                      "model.tie_weights": True, "data.max_eval_tokens": 60})
    corpus = mlm.load_data(cfg)
    model = build_model(cfg, len(corpus.vocab), corpus.vocab.pad_id, corpus)
    reg, decode, seen = model.regularizer, model.regularizer.decode, []
    reg.decode = lambda decoder, h: (seen.append(reg.draw_outputs), decode(decoder, h))[1]
    evaluate_sampled(model, mlm.build_batches(cfg, corpus, "valid"), samples=2, draw_outputs=False)
    assert seen and not any(seen) and reg.draw_outputs and not reg.sampling


def test_load_run_rebuilds_a_count_based_regularizer(tmp_path):
    """A finished run with data noising reads back: its proposal is counted again from the corpus."""
    from mlm.training import load_run, train

    cfg = mlm.get_preset("synthetic-tiny", overrides={"model.regularizer": "noise", "train.epochs": 1})
    run = train(cfg, run_dir=tmp_path / "run", progress=False)
    loaded = load_run(tmp_path / "run")
    assert loaded.model.regularizer is not None
    for a, b in zip(run.model.state_dict().values(), loaded.model.state_dict().values()):
        assert torch.equal(a.cpu(), b.cpu())


def test_noising_explorer_labels_each_panel_with_its_own_words(monkeypatch):
    """Each panel of the noising explorer names the words of its own distribution (no shared y axis)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from mlm.data.vocab import Vocabulary
    from mlm.regularizers import bigram_counts
    from mlm.regularizers.proposals import training_stream
    from mlm.widgets import noising_distribution, noising_explorer

    monkeypatch.setenv("MLM_HEADLESS", "1")
    text = [s.split() for s in ("san francisco is foggy", "san francisco is big", "los angeles is sunny",
                                "the city is big", "a dog is a dog")]
    vocab = Vocabulary.build(text)
    counts = bigram_counts(training_stream([vocab.encode(s) for s in text], vocab.eos_id), len(vocab))
    monkeypatch.setattr(plt, "show", lambda: None)
    plt.close("all")
    noising_explorer(counts, vocab, ["francisco"], blank_id=vocab.pad_id)
    axes = plt.gcf().axes
    labels = [[t.get_text() for t in ax.get_yticklabels()] for ax in axes]
    from mlm.regularizers import noising_scheme
    schemes = {n: noising_scheme(n, counts, 0.2, blank_id=vocab.pad_id) for n in ("blank", "unigram", "absolute", "kneser-ney")}
    dists = noising_distribution(schemes, vocab.stoi["francisco"], 8)
    for got, (name, pairs) in zip(labels, dists.items()):
        want = ["_" if i == vocab.pad_id and name == "blank" else vocab.itos[i] for i, _ in pairs]
        assert got == want, (name, got, want)
    assert labels[0] != labels[-1]  # blank and Kneser-Ney noising turn the word into different words
    plt.close("all")


# -- section 4.2: the output row follows the input word's draw ---------------------------------------------
def _one_word_proposal(gamma: torch.Tensor, word: int = 2) -> NoisingScheme:
    """gamma_i as given; every replacement is ``word`` (<unk>, never an input or target below)."""
    proposal = torch.zeros(V, dtype=torch.float64)
    proposal[word] = 1.0
    return NoisingScheme("unigram", gamma.double(), proposal, False)


def _train_logits(reg, model, inputs, targets, x):
    """(embedded inputs, logits) of one training pass of ``reg`` with hidden outputs ``x``."""
    reg.train()
    reg.prepare(inputs, targets)
    return reg.embed(model.embedding, inputs), reg.decode(model.decoder, x)


@pytest.mark.usefixtures("pairs_path")
@pytest.mark.parametrize("elementwise", [False, True])
def test_coupled_smoothing_replaces_the_target_row_where_the_input_is_replaced(elementwise):
    """gamma_a = 1, every other gamma 0: the target rows after each a are replaced, nothing else (coupled);
    uncoupled, the row of the *target* a is replaced, at every position of the row."""
    gamma = torch.zeros(V)
    gamma[4] = 1.0
    inputs, targets = torch.tensor([[4, 5, 4, 5]]), torch.tensor([[5, 4, 6, 6]])  # a b a b -> b a c c
    x = torch.randn(1, 4, 6)
    for coupled in (True, False):
        reg = VariationalSmoothing(_one_word_proposal(gamma), smooth_output=True, elementwise=elementwise,
                                   coupled=coupled)
        model = _tiny_lm(reg, tied=False)
        W, b, E = model.decoder.weight, model.decoder.bias, model.embedding.weight
        embedded, got = _train_logits(reg, model, inputs, targets, x)
        torch.testing.assert_close(embedded[0, [0, 2]], E[2].expand(2, 6))  # both a's read e_<unk>
        torch.testing.assert_close(embedded[0, [1, 3]], E[5].expand(2, 6))
        expected = model.decoder(x).clone()
        if coupled:
            for t in (0, 2):  # input a: the target's column reads o_<unk>
                expected[0, t, targets[0, t]] = x[0, t] @ W[2] + b[targets[0, t]]
        else:
            expected[0, :, 4] = x[0] @ W[2] + b[4]  # target a (gamma 1): its row, everywhere in the row
        torch.testing.assert_close(got, expected)


def test_sampled_output_rows_have_the_same_gradient_on_every_device(monkeypatch):
    """Uncoupled output rows drawn deterministically (gamma 1 for a, always replaced by <unk>): the fixed-size
    pairs of a GPU give the CPU's logits and gradients (each pair counted once, however often it occurs)."""
    import functools

    from mlm.regularizers import smoothing

    gamma = torch.zeros(V)
    gamma[4] = 1.0
    targets = torch.tensor([[4, 5, 4, 4], [6, 4, 6, 5]])
    x = torch.randn(2, 4, 6)
    reference = _tiny_lm(None, tied=False)
    W, b = reference.decoder.weight, reference.decoder.bias
    expected = reference.decoder(x).clone()
    for row in range(2):
        expected[row, :, 4] = x[row] @ W[2] + b[4]  # the row's target a reads o_<unk>, once per row
    (expected * torch.arange(V)).sum().backward()
    for fixed_size in (False, True):
        monkeypatch.setattr(smoothing, "row_types", functools.partial(smoothing.row_types, fixed_size=fixed_size))
        reg = VariationalSmoothing(_one_word_proposal(gamma), smooth_output=True, coupled=False).train()
        model = _tiny_lm(reg, tied=False)
        reg._targets = targets
        got = reg.decode(model.decoder, x)
        torch.testing.assert_close(got, expected)
        (got * torch.arange(V)).sum().backward()
        torch.testing.assert_close(model.decoder.weight.grad, W.grad)


def test_coupled_draws_follow_the_input_decision_at_gamma_03():
    """Random inputs, gamma = 0.3 for every word: a target column is changed exactly where that position's
    input vector was replaced, about 30% of positions; uncoupled draws disagree with the input's."""
    torch.manual_seed(1)
    inputs, targets = torch.randint(4, 7, (64, 20)), torch.randint(4, 7, (64, 20))
    x = torch.randn(64, 20, 6)
    for coupled in (True, False):
        reg = VariationalSmoothing(_one_word_proposal(torch.full((V,), 0.3)), smooth_output=True, coupled=coupled)
        model = _tiny_lm(reg, tied=False)
        with torch.no_grad():
            embedded, logits = _train_logits(reg, model, inputs, targets, x)
            input_replaced = (embedded == model.embedding.weight[2]).all(-1)  # (64, 20)
            plain = model.decoder(x)
            column = lambda z: z.gather(-1, targets[..., None])[..., 0]  # noqa: E731  (64, 20)
            output_replaced = ~torch.isclose(column(logits), column(plain))
        assert 0.2 < input_replaced.double().mean() < 0.4
        if coupled:
            assert torch.equal(output_replaced, input_replaced)
        else:
            assert (output_replaced != input_replaced).double().mean() > 0.2


def test_the_config_couples_by_default():
    base = {"model.regularizer": "smooth", "model.noise_scheme": "kneser-ney", "model.tie_weights": True}
    cfg = mlm.get_preset("synthetic-tiny", overrides=base)
    assert cfg.model.smoothing_coupled
    corpus = mlm.load_data(cfg)
    assert build_model(cfg, len(corpus.vocab), corpus.vocab.pad_id, corpus).regularizer.coupled
    cfg = mlm.get_preset("synthetic-tiny", overrides={**base, "model.smoothing_coupled": "false"})
    assert not build_model(cfg, len(corpus.vocab), corpus.vocab.pad_id, corpus).regularizer.coupled


# -- section 5.4: averaging probabilities or log-likelihoods over test-time draws --------------------------
def test_sampled_evaluation_averages_probabilities_or_log_likelihoods():
    cfg = mlm.get_preset("synthetic-tiny", overrides={"model.regularizer": "smooth", "model.noise_gamma": 0.5,
                                                      "model.tie_weights": True, "data.max_eval_tokens": 300})
    corpus = mlm.load_data(cfg)
    model = build_model(cfg, len(corpus.vocab), corpus.vocab.pad_id, corpus)
    batches = mlm.build_batches(cfg, corpus, "valid")

    def run(samples, average):
        torch.manual_seed(7)  # the same draws for both averages
        return evaluate_sampled(model, batches, samples=samples, average=average)

    one_p, one_ll = run(1, "probability"), run(1, "log-likelihood")
    assert one_p.nll == pytest.approx(one_ll.nll, rel=1e-12)  # one draw: nothing to average
    p, ll = run(4, "probability"), run(4, "log-likelihood")
    assert p.tokens == ll.tokens
    assert ll.nll > p.nll + 1e-3  # Jensen: mean log p <= log mean p, strictly when the draws differ
    with pytest.raises(ValueError, match="average"):
        evaluate_sampled(model, batches, average="median")
