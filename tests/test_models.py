"""The shared pipeline (LanguageModel) and the reference LSTM (ManualLSTM)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from mlm.models import IdentityHead, LanguageModel, ManualLSTM, lstm_cell_step

V, E, H, L = 23, 8, 8, 2


def make(seed: int = 0, **kwargs) -> LanguageModel:
    torch.manual_seed(seed)
    args = dict(vocab_size=V, embed_size=E, hidden_size=H, num_layers=L)
    args.update(kwargs)
    return LanguageModel(**args)


def tokens(batch=3, time=6, seed=1):
    return torch.randint(0, V, (batch, time), generator=torch.Generator().manual_seed(seed))


def test_output_shapes():
    """Logits are (batch, time, vocab); the state is (layers, batch, hidden) twice."""
    model = make(embed_size=5, hidden_size=7)
    out = model(tokens(4, 9))
    assert out.logits.shape == (4, 9, V)
    assert out.state[0].shape == out.state[1].shape == (L, 4, 7)
    assert out.attention is None and out.memory is None
    assert isinstance(model.head, IdentityHead)


def test_tied_weights_share_storage_and_save_parameters():
    """Tying makes decoder.weight the embedding matrix (one tensor) and saves vocab * embed parameters."""
    untied, tied = make(), make(tie_weights=True)
    assert tied.decoder.weight is tied.embedding.weight
    assert tied.decoder.weight.data_ptr() == tied.embedding.weight.data_ptr()
    assert untied.decoder.weight is not untied.embedding.weight
    assert untied.num_parameters() - tied.num_parameters() == V * E
    # a training step keeps them one tensor
    opt = torch.optim.SGD(tied.parameters(), lr=1.0)
    tied(tokens()).logits.sum().backward()
    opt.step()
    assert torch.equal(tied.decoder.weight, tied.embedding.weight)


def test_tie_with_mismatched_sizes_raises():
    with pytest.raises(ValueError, match="embedding size"):
        make(embed_size=6, hidden_size=8, tie_weights=True)


def test_same_seed_same_model_and_outputs():
    """Same seed: identical parameters and logits; another seed: different parameters."""
    a, b, c = make(seed=3, dropout=0.2), make(seed=3, dropout=0.2), make(seed=4, dropout=0.2)
    for (na, pa), (nb, pb) in zip(a.named_parameters(), b.named_parameters()):
        assert na == nb and torch.equal(pa, pb)
    assert not torch.equal(a.embedding.weight, c.embedding.weight)
    a.eval()
    b.eval()
    x = tokens()
    assert torch.equal(a(x).logits, b(x).logits)


def test_causality():
    """In eval mode, changing tokens after position t never changes logits at positions <= t."""
    model = make(dropout=0.5).eval()
    x = tokens(2, 10)
    base = model(x).logits
    for t in range(9):
        y = x.clone()
        y[:, t + 1:] = (y[:, t + 1:] + 1 + torch.arange(9 - t)) % V
        assert not torch.equal(y, x)
        changed = model(y).logits
        assert torch.equal(changed[:, :t + 1], base[:, :t + 1])
        assert not torch.allclose(changed[:, t + 1:], base[:, t + 1:])


def test_state_carry_equals_one_long_call():
    """Running two segments with the carried state equals running the concatenation at once."""
    model = make().eval()
    x = tokens(3, 12)
    whole = model(x).logits
    first = model(x[:, :5])
    second = model(x[:, 5:], state=first.state)
    torch.testing.assert_close(torch.cat([first.logits, second.logits], 1), whole, atol=1e-6, rtol=1e-5)


def test_reset_zeroes_state_of_chosen_rows_only():
    """reset=True rows behave as if started from a zero state; the other rows keep their state."""
    model = make().eval()
    prefix, x = tokens(3, 5, seed=2), tokens(3, 4, seed=3)
    state = model(prefix).state
    reset = torch.tensor([True, False, True])
    out = model(x, state=state, reset=reset)
    fresh = model(x)  # state None: zeros
    carried = model(x, state=state)
    torch.testing.assert_close(out.logits[reset], fresh.logits[reset], atol=0, rtol=0)
    torch.testing.assert_close(out.logits[~reset], carried.logits[~reset], atol=0, rtol=0)
    assert not torch.allclose(fresh.logits[1], carried.logits[1])  # the state mattered


def test_reset_state_helper():
    h = torch.ones(2, 3, 4)
    c = torch.full((2, 3, 4), 2.0)
    nh, nc = LanguageModel.reset_state((h, c), torch.tensor([False, True, False]))
    assert nh[:, 1].abs().sum() == 0 and nc[:, 1].abs().sum() == 0
    assert torch.equal(nh[:, [0, 2]], h[:, [0, 2]]) and torch.equal(nc[:, [0, 2]], c[:, [0, 2]])
    assert LanguageModel.reset_state((h, c), None) == (h, c)


def test_dropout_active_in_train_mode_only():
    model = make(dropout=0.5)
    x = tokens()
    model.train()
    torch.manual_seed(0)
    a = model(x).logits
    b = model(x).logits
    assert not torch.allclose(a, b)
    model.eval()
    assert torch.equal(model(x).logits, model(x).logits)


# -- the reference LSTM ------------------------------------------------------------------
@pytest.mark.parametrize("layers", [1, 2])
def test_manual_lstm_matches_nn_lstm(layers):
    """ManualLSTM's outputs, final state and gradients match nn.LSTM's (atol 1e-5)."""
    torch.manual_seed(0)
    lstm = nn.LSTM(5, 7, layers, batch_first=True)
    manual = ManualLSTM(lstm)
    x = torch.randn(3, 6, 5, requires_grad=True)
    state = (torch.randn(layers, 3, 7), torch.randn(layers, 3, 7))
    for s in (None, state):
        ref_out, (ref_h, ref_c) = lstm(x, s)
        out, (h, c) = manual(x, s)
        torch.testing.assert_close(out, ref_out, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(h, ref_h, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(c, ref_c, atol=1e-5, rtol=1e-5)
    # gradients of a loss that depends on outputs and the final cell state
    w = torch.randn(3, 6, 7)
    params = list(lstm.parameters()) + [x]
    ref_loss = (lstm(x, state)[0] * w).sum() + lstm(x, state)[1][1].sum()
    ref_grads = torch.autograd.grad(ref_loss, params)
    man_out, (_, man_c) = manual(x, state)
    man_grads = torch.autograd.grad((man_out * w).sum() + man_c.sum(), params)
    for g, rg in zip(man_grads, ref_grads):
        torch.testing.assert_close(g, rg, atol=1e-5, rtol=1e-4)


def test_lstm_cell_step_gate_order():
    """Gates are ordered i, f, g, o: a huge forget bias keeps c, a huge negative input bias adds nothing."""
    hidden = 3
    x, h, c = torch.zeros(1, 2), torch.zeros(1, hidden), torch.full((1, hidden), 0.7)
    w_ih, w_hh = torch.zeros(4 * hidden, 2), torch.zeros(4 * hidden, hidden)
    b = torch.zeros(4 * hidden)
    b[:hidden] = -50.0  # input gate closed
    b[hidden:2 * hidden] = 50.0  # forget gate open
    b[3 * hidden:] = 50.0  # output gate open
    h2, c2 = lstm_cell_step(x, h, c, w_ih, w_hh, b, torch.zeros(4 * hidden))
    torch.testing.assert_close(c2, c)
    torch.testing.assert_close(h2, torch.tanh(c))


def test_manual_lstm_requires_batch_first():
    with pytest.raises(ValueError):
        ManualLSTM(nn.LSTM(3, 3))


# -- initialisation ---------------------------------------------------------------------------
def test_forget_bias_sets_ih_slice_and_zeroes_hh_slice():
    """forget_bias fills b_ih's forget slice and zeroes b_hh's, so their sum is forget_bias."""
    model = make(forget_bias=1.5)
    for layer in range(L):
        b_ih = getattr(model.lstm, f"bias_ih_l{layer}")
        b_hh = getattr(model.lstm, f"bias_hh_l{layer}")
        assert torch.equal(b_ih[H:2 * H], torch.full((H,), 1.5))
        assert torch.equal(b_hh[H:2 * H], torch.zeros(H))
        assert b_ih[:H].abs().max() <= 0.1 and b_ih[:H].abs().sum() > 0  # other gates untouched


def test_zero_bias_zeroes_every_bias():
    model = make(zero_bias=True)
    biases = [(n, p) for n, p in model.named_parameters() if "bias" in n]
    assert len(biases) == 2 * L + 1  # b_ih, b_hh per layer, decoder bias
    for name, p in biases:
        assert p.abs().sum() == 0, name
    assert model.embedding.weight.abs().sum() > 0


def test_zero_bias_with_forget_bias():
    model = make(zero_bias=True, forget_bias=1.0)
    b_ih = model.lstm.bias_ih_l0
    assert b_ih[H:2 * H].eq(1.0).all() and b_ih[:H].eq(0).all() and b_ih[2 * H:].eq(0).all()


@pytest.mark.parametrize("init_range", [0.05, 0.3])
def test_init_range_bounds(init_range):
    """Every parameter is in [-init_range, init_range] and spreads over most of that range."""
    model = make(init_range=init_range, vocab_size=200)
    for name, p in model.named_parameters():
        assert p.abs().max() <= init_range, name
    emb = model.embedding.weight
    assert emb.max() > 0.9 * init_range and emb.min() < -0.9 * init_range
