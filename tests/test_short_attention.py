"""The heads of Daniluk et al. (2017): window attention (3 kinds) and the N-gram RNN.

The fast heads (all steps at once, windows by ``unfold``) must equal the step-by-step references
in outputs, attention weights, carried memory and gradients, also when the window is carried
across truncated-BPTT segments and reset at a document start.
"""

import pytest
import torch

from mlm.configs import get_preset
from mlm.data import DocumentBatches
from mlm.models.short_attention import NgramHead, WindowAttentionHead
from mlm.training import build_model

KINDS = ["attention", "key-value", "key-value-predict"]


def make_head(kind, window, hidden=12, seed=0):
    torch.manual_seed(seed)
    return WindowAttentionHead(hidden, kind, window).double()


def segments(batch=3, time=5, hidden=12, n=3, seed=1):
    """n consecutive segments of LSTM-like outputs, with a document reset and some padding."""
    g = torch.Generator().manual_seed(seed)
    hs = [torch.randn(batch, time, hidden, generator=g, dtype=torch.double, requires_grad=True) for _ in range(n)]
    masks = [torch.ones(batch, time, dtype=torch.bool) for _ in range(n)]
    masks[1][2, 3:] = False  # row 2's document ends inside segment 1 ...
    resets = [torch.ones(batch, dtype=torch.bool), torch.tensor([False, False, False]),
              torch.tensor([False, True, True])]  # ... and rows 1 and 2 start new documents in segment 2
    return hs, masks, resets[:n]


def run_segments(head, hs, masks, resets):
    memory, outs = None, []
    for h, mask, reset in zip(hs, masks, resets):
        out = head(h, mask=mask, memory=memory, reset=reset)
        outs.append(out)
        memory = out.memory  # not detached here, so gradients flow across segments in both versions
    return outs


def assert_same_memory(a, b):
    (va, oka), (vb, okb) = a, b
    assert torch.equal(oka, okb)
    assert torch.allclose(va * oka[..., None], vb * okb[..., None], atol=1e-12)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("window", [1, 3, 7])
def test_window_head_equals_reference_across_segments(kind, window):
    head = make_head(kind, window)
    hs, masks, resets = segments()
    fast = run_segments(head, hs, masks, resets)
    slow = run_segments(head.reference(), hs, masks, resets)
    for f, s in zip(fast, slow):
        assert torch.allclose(f.output, s.output, atol=1e-12)
        assert torch.allclose(f.attention, s.attention, atol=1e-12)
        assert_same_memory(f.memory, s.memory)
    # gradients with respect to the LSTM outputs of every segment and to the head's parameters
    weights = [torch.randn_like(f.output) for f in fast]
    grads = []
    for outs in (fast, slow):
        loss = sum((o.output * w).sum() for o, w in zip(outs, weights))
        grads.append(torch.autograd.grad(loss, hs + list(head.parameters())))
    for gf, gs in zip(*grads):
        assert torch.allclose(gf, gs, atol=1e-10)


@pytest.mark.parametrize("n", [2, 3, 4, 5])
def test_ngram_head_equals_reference_across_segments(n):
    torch.manual_seed(0)
    head = NgramHead(12, n).double()
    hs, masks, resets = segments()
    fast = run_segments(head, hs, masks, resets)
    slow = run_segments(head.reference(), hs, masks, resets)
    for f, s in zip(fast, slow):
        assert torch.allclose(f.output, s.output, atol=1e-12)
        assert_same_memory(f.memory, s.memory)
    loss_f = sum((o.output ** 2).sum() for o in fast)
    loss_s = sum((o.output ** 2).sum() for o in slow)
    for gf, gs in zip(torch.autograd.grad(loss_f, hs + list(head.parameters())),
                      torch.autograd.grad(loss_s, hs + list(head.parameters()))):
        assert torch.allclose(gf, gs, atol=1e-10)


@pytest.mark.parametrize("kind", KINDS)
def test_no_attention_to_current_or_future_steps(kind):
    head = make_head(kind, window=4)
    h = torch.randn(2, 9, 12, dtype=torch.double)
    base = head(h).output
    for t in range(9):
        changed = h.clone()
        changed[:, t] += torch.randn(2, 12, dtype=torch.double)
        out = head(changed).output
        # steps before t are untouched; step t changes only through its own query/predict part
        assert torch.allclose(out[:, :t], base[:, :t], atol=1e-12)
    # the weights never sit on the current step: a window of 1 at step t holds exactly h_{t-1}
    one = make_head(kind, window=1)
    alpha = one(h).attention  # (batch, time, 1)
    assert torch.all(alpha[:, 0] == 0) and torch.allclose(alpha[:, 1:], torch.ones_like(alpha[:, 1:]))


def test_window_holds_exactly_the_previous_outputs():
    """With W^Y = 0 and W^h = 0 all scores tie, so r_t is the plain mean of the existing window slots."""
    head = make_head("attention", window=3)
    torch.nn.init.zeros_(head.W_Y.weight)
    torch.nn.init.zeros_(head.W_h.weight)
    torch.nn.init.eye_(head.W_r.weight)
    torch.nn.init.zeros_(head.W_x.weight)
    h = torch.randn(1, 6, 12, dtype=torch.double)
    out = head(h).output
    for t in range(6):
        window = h[0, max(0, t - 3):t]
        expected = torch.tanh(window.mean(0)) if len(window) else torch.zeros(12, dtype=torch.double)
        assert torch.allclose(out[0, t], expected, atol=1e-12), t


@pytest.mark.parametrize("kind", KINDS)
def test_document_reset_really_resets(kind):
    """After a reset the output equals that of a fresh start, whatever the carried memory held."""
    head = make_head(kind, window=5)
    h1, h2 = torch.randn(2, 2, 6, 12, dtype=torch.double)
    memory = head(h1).memory
    reset = torch.tensor([True, False])
    carried = head(h2, memory=memory, reset=reset)
    fresh = head(h2)
    assert torch.allclose(carried.output[0], fresh.output[0], atol=1e-12)
    assert not torch.allclose(carried.output[1], fresh.output[1])  # row 1 keeps its document's window
    assert torch.all(carried.attention[0, 0] == 0)  # the first word of a document has no memory


def test_ngram_history_alignment():
    """Part j of the output from j-1 steps back, zeros before the document start (Eq. 13's input)."""
    n, k, time = 4, 3, 7
    head = NgramHead(k * (n - 1), n).double()
    h = torch.zeros(1, time, k * (n - 1), dtype=torch.double)
    for t in range(time):
        for j in range(n - 1):
            h[0, t, j * k:(j + 1) * k] = 100 * t + 10 * j + torch.arange(k)  # encodes (step, part)
    captured = []
    hook = head.W_N.register_forward_hook(lambda module, inputs, output: captured.append(inputs[0]))
    head(h)
    hook.remove()
    x = captured[0][0]  # (time, (n-1) k): what Eq. 13 concatenates
    for t in range(time):
        for j in range(n - 1):
            piece = x[t, j * k:(j + 1) * k]
            expected = (100 * (t - j) + 10 * j + torch.arange(k, dtype=torch.double) if t - j >= 0
                        else torch.zeros(k, dtype=torch.double))
            assert torch.equal(piece, expected), (t, j)


def test_eval_window_truncation_keeps_only_recent_slots():
    head = make_head("key-value-predict", window=6)
    h = torch.randn(2, 10, 12, dtype=torch.double)
    head.eval_window = 2
    out = head(h)
    assert torch.all(out.attention[..., :4] == 0)
    assert torch.allclose(out.attention[:, 2:].sum(-1), torch.ones(2, 8, dtype=torch.double))
    ref = head.reference()(h)
    assert torch.allclose(out.output, ref.output, atol=1e-12)
    head.eval_window = None
    assert torch.all(head(h).attention[:, 7, :] > 0)


def test_bad_sizes_are_clear_errors():
    with pytest.raises(ValueError, match="multiple of 3"):
        WindowAttentionHead(10, "key-value-predict", 5)
    with pytest.raises(ValueError, match="kind must be"):
        WindowAttentionHead(12, "value", 5)
    with pytest.raises(ValueError, match="N >= 2"):
        NgramHead(12, 1)
    head = make_head("attention", 3)
    with pytest.raises(ValueError, match="window size or batch size"):
        head(torch.randn(2, 4, 12, dtype=torch.double), memory=(torch.zeros(2, 5, 12), torch.zeros(2, 5).bool()))


def test_presets_build_models_with_comparable_sizes():
    """Every Daniluk preset builds; the head's output is the part size k (Fig. 2c's hidden sizes)."""
    for kind, parts in (("attention", 1), ("kv", 2), ("kvp", 3)):
        cfg = get_preset(f"daniluk2017-wt2-{kind}-L5", "reduced")
        model = build_model(cfg, vocab_size=50)
        assert model.head.output_size == cfg.model.hidden_size // parts
    for n in (2, 3, 4, 5):
        cfg = get_preset(f"daniluk2017-wt2-ngram{n}")
        assert cfg.model.hidden_size % (n - 1) == 0
        build_model(get_preset(f"daniluk2017-wt2-ngram{n}", "reduced"), vocab_size=50)


def test_document_batches_carry_the_window_through_a_model():
    """A model run segment by segment with carried memory equals one run over the whole document."""
    cfg = get_preset("daniluk2017-wt2-kvp-L5", "reduced", ["model.hidden_size=24", "model.embed_size=8"])
    torch.manual_seed(0)
    model = build_model(cfg, vocab_size=30).eval()
    lines = [[5, 6, 7, 8], [9, 10, 11], [12, 13, 14, 15, 16], [17, 18]]
    batches = list(DocumentBatches(lines, [0, 2], eos_id=2, pad_id=0, batch_size=1, bptt=3))
    state = memory = None
    pieces = []
    for b in batches:
        out = model(b.inputs, state=state, reset=b.reset, mask=b.mask, memory=memory)
        state, memory = out.state, out.memory
        pieces.append(out.logits[b.mask])
    whole = []
    for doc in ([2, 5, 6, 7, 8, 2, 9, 10, 11, 2], [2, 12, 13, 14, 15, 16, 2, 17, 18, 2]):
        whole.append(model(torch.tensor([doc[:-1]])).logits[0])
    assert torch.allclose(torch.cat(pieces), torch.cat(whole), atol=1e-5)


def test_truncate_documents_cuts_each_document_to_its_first_tokens():
    from mlm.data import truncate_documents

    lines = [[1], [2, 3, 4, 5], [6], [7, 8], [9, 10, 11]]
    kept, starts = truncate_documents(lines, [0, 3], max_tokens=4)
    # document 0: [1] + <eos> (2 tokens), then [2] + <eos> fills the budget of 4;
    # document 1: [7, 8] + <eos> (3 tokens), then a lone <eos> (the cut line) fills it
    assert kept == [[1], [2], [7, 8], []] and starts == [0, 2]


def test_limit_vocabulary_maps_rare_words_to_unk():
    from mlm.data.corpora import Corpus
    from mlm.data.vocab import Vocabulary

    lines = {"train": [["a", "a", "a", "b", "b", "c"]], "valid": [["c", "b"]], "test": [["a"]]}
    corpus = Corpus("toy", lines, {s: [0] for s in lines}, Vocabulary.build(lines["train"]))
    small = corpus.limit_vocabulary(2)
    assert "c" not in small.vocab and "a" in small.vocab and "b" in small.vocab
    assert small.lines["valid"] == [["<unk>", "b"]]
    assert corpus.lines["valid"] == [["c", "b"]]  # the original is untouched
