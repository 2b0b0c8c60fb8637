"""Checks for assignment 03: ``split_output``, ``extend_with_memory``, ``window_mask`` and
``window_attention``.

References: :meth:`mlm.models.short_attention.WindowAttentionHead.split`,
:func:`mlm.models.short_attention.extend_with_memory`, :func:`mlm.models.short_attention.window_mask`
and :class:`mlm.models.short_attention.WindowAttentionHead` (its ``forward``).
"""

from __future__ import annotations

import math

import torch

from mlm.models.attentive import masked_softmax
from mlm.models.short_attention import WINDOW_KINDS, WindowAttentionHead, extend_with_memory, window_mask

from exercises.checks.common import (
    CheckFailed,
    check,
    expect,
    expect_pair,
    expect_tensor,
    finite,
    generator,
    get_function,
    max_diff,
)
from exercises.rules import no_python_loops

KINDS = list(WINDOW_KINDS)  # "attention", "key-value", "key-value-predict"
PARAM_NAMES = ["W_Y", "W_h", "w", "W_r", "W_x"]

# ----------------------------------------------------------------------------- helpers


def _params(seed: int, k: int, dtype=torch.float64) -> dict:
    """W_Y, W_h, W_r, W_x (k, k) and w (k,), a bit wider than nn.Linear's init so scores vary."""
    g = generator(seed)
    scale = 2.0 / math.sqrt(k)

    def uniform(*shape):
        return ((torch.rand(*shape, generator=g) * 2 - 1) * scale).to(dtype)

    return dict(W_Y=uniform(k, k), W_h=uniform(k, k), w=uniform(k) * math.sqrt(k), W_r=uniform(k, k),
                W_x=uniform(k, k))


def _head(kind: str, window: int, params: dict) -> WindowAttentionHead:
    """The book's head of this kind holding exactly these parameters."""
    k = params["W_Y"].shape[0]
    with torch.random.fork_rng(devices=[]):  # nn.Linear's init must not disturb the global seed
        head = WindowAttentionHead(WINDOW_KINDS[kind] * k, kind, window).to(params["W_Y"].dtype)
    with torch.no_grad():
        head.W_Y.weight.copy_(params["W_Y"])
        head.W_h.weight.copy_(params["W_h"])
        head.w.weight.copy_(params["w"][None, :])
        head.W_r.weight.copy_(params["W_r"])
        head.W_x.weight.copy_(params["W_x"])
    return head


def _segment(seed: int, batch: int, time: int, hidden: int, window: int, dtype=torch.float64):
    """One truncated-BPTT segment inside running documents: (h, mask, memory, reset).

    Row 0 carries a full window; row 1 starts a new document (reset); row 2's document began
    inside the carried window (its oldest slots are invalid); the last row is padded at the end;
    further rows get random carried validity.
    """
    g = generator(seed)
    h = torch.randn(batch, time, hidden, generator=g).to(dtype)  # (batch, time, hidden)
    past = torch.randn(batch, window, hidden, generator=g).to(dtype)  # (batch, window, hidden)
    past_valid = torch.rand(batch, window, generator=g) > 0.4  # (batch, window)
    past_valid[0] = True
    if batch > 2:
        past_valid[2] = torch.arange(window) >= window // 2
    reset = torch.zeros(batch, dtype=torch.bool)
    if batch > 1:
        reset[1] = True
    mask = torch.ones(batch, time, dtype=torch.bool)
    if batch > 3:
        mask[-1, time // 2 + 1:] = False
    return h, mask, (past, past_valid), reset


def _split(module, h, kind):
    fn = get_function(module, "split_output")
    result = fn(h, kind)
    expect(isinstance(result, (tuple, list)) and len(result) == 3,
           f"split_output should return three tensors (key, value, predict), got {type(result).__name__}")
    k = h.shape[-1] // WINDOW_KINDS[kind]
    for name, part in zip(("key", "value", "predict"), result):
        expect_tensor(part, (*h.shape[:-1], k), f"split_output(h, {kind!r})'s {name}")
    return tuple(result)


def _extend(module, h, mask, memory, reset, window):
    fn = get_function(module, "extend_with_memory")
    if memory is not None:
        memory = (memory[0].clone(), memory[1].clone())
    seq, valid = expect_pair(fn(h, None if mask is None else mask.clone(), memory,
                                None if reset is None else reset.clone(), window), "extend_with_memory")
    batch, time, hidden = h.shape
    expect_tensor(seq, (batch, window + time, hidden), "extend_with_memory's seq")
    expect_tensor(valid, (batch, window + time), "extend_with_memory's valid")
    expect(valid.dtype == torch.bool, f"extend_with_memory's valid has dtype {valid.dtype}; it should be torch.bool")
    return seq, valid


def _mask(module, valid, window, time):
    fn = get_function(module, "window_mask")
    allowed = fn(valid.clone(), window, time)
    expect_tensor(allowed, (valid.shape[0], time, window), "window_mask's result")
    expect(allowed.dtype == torch.bool, f"window_mask returned dtype {allowed.dtype}; it should be torch.bool")
    return allowed


def _attend(module, key, value, predict, valid, params):
    fn = get_function(module, "window_attention")
    out, alpha = expect_pair(fn(key, value, predict, valid, *(params[n] for n in PARAM_NAMES)), "window_attention")
    batch, time, k = predict.shape
    expect_tensor(out, (batch, time, k), "window_attention's output")
    expect_tensor(alpha, (batch, time, key.shape[1] - time), "window_attention's weights")
    return out, alpha


def _attention_inputs(seed: int, kind: str, batch: int, time: int, k: int, window: int, dtype=torch.float64):
    """Reference inputs for window_attention and the head's answer on the same segment."""
    hidden = WINDOW_KINDS[kind] * k
    h, mask, memory, reset = _segment(seed, batch, time, hidden, window, dtype)
    params = _params(seed + 1, k, dtype)
    head = _head(kind, window, params)
    seq, valid = extend_with_memory(h, mask, memory, reset, window)
    key, value, _ = head.split(seq)  # (batch, window + time, k)
    _, _, predict = head.split(h)  # (batch, time, k)
    with torch.no_grad():
        ref = head(h, mask=mask, memory=memory, reset=reset)
    return key, value, predict, valid, params, ref


def _variant(key, value, predict, valid, params, shift: int = 0, mask_shift: int | None = None,
             softmax: str = "masked"):
    """Common wrong versions of the head, to name the mistake: windows of keys and values shifted by
    ``shift`` steps (1: [h_{t-L+1} .. h_t]) and the mask by ``mask_shift`` (default: the same), or a
    softmax that ignores the mask ("all") or runs over the batch ("batch")."""
    time = predict.shape[1]
    window = key.shape[1] - time
    positions = torch.arange(time)[:, None] + torch.arange(window)  # (time, window)
    mask_shift = shift if mask_shift is None else mask_shift
    M = torch.tanh(key[:, positions + shift] @ params["W_Y"].T + (key[:, window:] @ params["W_h"].T)[:, :, None])
    scores = M @ params["w"]  # (batch, time, window)
    allowed = valid[:, positions + mask_shift]
    if softmax == "all":
        alpha = scores.softmax(-1)
    elif softmax == "batch":
        alpha = masked_softmax(scores.transpose(0, -1), allowed.transpose(0, -1)).transpose(0, -1)
    else:
        alpha = masked_softmax(scores, allowed)
    r = (alpha[..., None] * value[:, positions + shift]).sum(-2)
    return torch.tanh(r @ params["W_r"].T + predict @ params["W_x"].T), alpha


# ----------------------------------------------------------------------------- split_output


@check("split_output returns (key, value, predict), each of size hidden / parts, for the three kinds")
def split_shapes(module):
    for kind in KINDS:
        parts = WINDOW_KINDS[kind]
        for shape in [(2, 5, 4 * parts), (3, 2 * parts), (6 * parts,)]:
            h = torch.randn(*shape, generator=generator(1)).double()
            _split(module, h, kind)


@check("split_output gives each part its role in the paper's order (Eq. 6 and 11)")
def split_roles(module):
    for seed, kind in enumerate(KINDS):
        h = torch.randn(2, 3, 4 * WINDOW_KINDS[kind], generator=generator(10 + seed)).double()
        got = _split(module, h.clone(), kind)
        with torch.random.fork_rng(devices=[]):
            want = WindowAttentionHead(h.shape[-1], kind, 2).split(h)
        if all(torch.equal(a, b) for a, b in zip(got, want)):
            continue
        if kind == "attention":
            raise CheckFailed("in plain attention the one output vector h_t plays all three roles: "
                              "key, value and predict are all h_t itself")
        k = h.shape[-1] // WINDOW_KINDS[kind]
        blocks = list(h.split(k, dim=-1))
        if all(any(torch.equal(part, block) for block in blocks) for part in got):
            if kind == "key-value" and torch.equal(got[0], want[0]) and torch.equal(got[1], want[1]):
                raise CheckFailed("key and value are right, but in the key-value model there is no separate "
                                  "predict part: which vector is combined with r_t in Eq. 10?")
            raise CheckFailed(f"your {kind} parts are the right blocks of h_t in the wrong roles; read "
                              "Eq. 6 / 11 from top to bottom: the first block of h_t is the first name in the vector")
        if any(torch.equal(got[0], h[..., i::WINDOW_KINDS[kind]]) for i in range(WINDOW_KINDS[kind])):
            raise CheckFailed("your parts take every other (or every third) coordinate; h_t = [k; v] "
                              "(or [k; v; p]) stacks consecutive blocks of k coordinates")
        raise CheckFailed(f"split_output(h, {kind!r}) differs from Eq. 6 / 11: the parts are consecutive equal "
                          "blocks of the last axis")


@check("split_output raises a clear ValueError for an uneven split or an unknown kind")
def split_errors(module):
    fn = get_function(module, "split_output")
    for kind, size in [("key-value", 7), ("key-value-predict", 8), ("key-value-predict", 10)]:
        try:
            fn(torch.zeros(2, 3, size), kind)
        except ValueError as exc:
            expect(str(exc).strip() != "", "your ValueError has no message; say what is wrong and what size would work")
            continue
        except NotImplementedError:
            raise
        except Exception as exc:
            raise CheckFailed(f"split_output(h, {kind!r}) with a last dimension of {size} raised "
                              f"{type(exc).__name__}; raise a ValueError that explains the problem") from None
        raise CheckFailed(f"split_output(h, {kind!r}) accepted a last dimension of {size}, which does not split "
                          "into equal parts; raise a ValueError instead of returning parts of unequal size")
    try:
        fn(torch.zeros(2, 6), "key-predict")
    except ValueError:
        return
    except NotImplementedError:
        raise
    except Exception as exc:
        raise CheckFailed(f"an unknown kind raised {type(exc).__name__}; raise a ValueError naming the kinds "
                          "you accept") from None
    raise CheckFailed("split_output accepted the unknown kind 'key-predict'; raise a ValueError")


# ----------------------------------------------------------------------------- extend_with_memory


@check("extend_with_memory: in the first segment (no memory yet) the carried slots are invalid")
def extend_first_segment(module):
    for seed, (batch, time, hidden, window) in enumerate([(3, 5, 4, 3), (2, 2, 3, 6), (1, 1, 2, 1)]):
        h, mask, _, _ = _segment(20 + seed, batch, time, hidden, window)
        for m in (None, mask):
            seq, valid = _extend(module, h, m, None, None, window)
            _, want_valid = extend_with_memory(h, m, None, None, window)
            expect(not bool(valid[:, :window].any()),
                   "without memory nothing has been carried yet: the first `window` positions must be invalid")
            expect(torch.equal(valid, want_valid),
                   "the segment's own positions should be valid exactly where mask is True (everywhere when "
                   "mask is None)")
            expect(torch.equal(seq[:, window:], h),
                   "the last `time` positions of seq should be this segment's outputs h, in order")
            expect(finite(seq), "seq contains NaN or inf; fill the slots that do not exist yet with zeros")


@check("extend_with_memory carries the previous window, and a reset forgets it for that row only")
def extend_next_segment(module):
    for seed, (batch, time, hidden, window) in enumerate([(4, 5, 4, 3), (5, 3, 2, 6)]):
        h, mask, memory, reset = _segment(30 + seed, batch, time, hidden, window)
        seq, valid = _extend(module, h, mask, memory, reset, window)
        want_seq, want_valid = extend_with_memory(h, mask, memory, reset, window)
        expect(not bool(valid[1, :window].any()),
               "row 1 starts a new document (reset True): nothing from the previous document may stay in its window")
        expect(torch.equal(valid[0, :window], want_valid[0, :window]),
               "row 0 carries a full valid window and does not start a new document; its carried slots stay valid")
        expect(torch.equal(valid, want_valid),
               "the validity is wrong: a carried slot is valid only if it was valid before and its row does "
               "not start a new document; the segment's positions follow mask")
        expect(max_diff(seq[want_valid], want_seq[want_valid]) == 0,
               "seq is wrong: the carried outputs come first (oldest first, as stored), then this segment's h")
    h, mask, memory, reset = _segment(40, 3, 4, 2, 2)
    h, past = h.clone().requires_grad_(), memory[0].clone().requires_grad_()
    seq, _ = expect_pair(get_function(module, "extend_with_memory")(h, mask, (past, memory[1]), reset, 2),
                         "extend_with_memory")
    seq.sum().backward()
    expect(h.grad is not None and past.grad is not None,
           "no gradient reaches " + ("h" if h.grad is None else "the carried outputs") +
           "; build seq from the inputs with differentiable operations (the training loop detaches the memory "
           "itself)")


# ----------------------------------------------------------------------------- window_mask


@check("window_mask returns a (batch, time, window) bool tensor", requires="mask_window_positions")
def mask_shape(module):
    for batch, time, window in [(3, 5, 2), (2, 2, 6), (1, 1, 1), (4, 7, 7)]:
        valid = torch.ones(batch, window + time, dtype=torch.bool)
        _mask(module, valid, window, time)


@check("window_mask: step t sees h_{t-L} .. h_{t-1}, oldest first, never h_t")
def mask_window_positions(module):
    for seed, (batch, time, window) in enumerate([(4, 6, 3), (3, 4, 5), (2, 8, 1)]):
        valid = torch.rand(batch, window + time, generator=generator(50 + seed)) > 0.5  # (batch, window + time)
        valid[0] = True
        got = _mask(module, valid, window, time)
        want = window_mask(valid, window, time)
        if torch.equal(got, want):
            continue
        shifted = valid.unfold(1, window, 1)[:, 1:time + 1]  # [h_{t-L+1} .. h_t]
        if torch.equal(got, shifted):
            raise CheckFailed("your window includes the current step h_t (and drops h_{t-L}); Y_t holds only the "
                              "L outputs *before* step t, and in `valid` step t itself sits at position window + t")
        if torch.equal(got, want.flip(-1)):
            raise CheckFailed("your slots are reversed (newest first); slot 0 is the oldest output h_{t-L} and "
                              "the last slot the most recent one, h_{t-1}")
        if torch.equal(got.transpose(0, 1), want.transpose(0, 1)[:, :1].expand(-1, batch, -1)) and batch > 1:
            raise CheckFailed("every row of the batch got the same mask; validity differs from row to row")
        raise CheckFailed("your mask differs from the reference; slot j of step t should be valid exactly when "
                          "position t + j of `valid` is")


@check("window_mask: at a document start and at padding only existing outputs are allowed")
def mask_document_start(module):
    for seed, (batch, time, window) in enumerate([(5, 6, 4), (4, 3, 7)]):
        h, mask, memory, reset = _segment(60 + seed, batch, time, 2, window)
        _, valid = extend_with_memory(h, mask, memory, reset, window)
        got = _mask(module, valid, window, time)
        want = window_mask(valid, window, time)
        start = want[1]  # row 1 starts a new document: step t sees its last min(t, L) slots
        expect(torch.equal(got[1], start),
               "row 1 starts a new document: step 0 sees nothing, step t sees only the document's own "
               "min(t, L) earlier outputs, in the last slots of its window")
        expect(torch.equal(got, want),
               "your mask is wrong for rows whose window holds invalid slots (a document that began inside "
               "the carried window, or padding); slot j of step t follows position t + j of `valid`")
    _, valid = extend_with_memory(torch.zeros(2, 3, 1), None, None, None, 5)
    got = _mask(module, valid, 5, 3)
    expect(not bool(got[:, 0].any()), "the first step of a document has an empty window: no slot is allowed")


# ----------------------------------------------------------------------------- window_attention


@check("window_attention matches WindowAttentionHead for the three kinds (outputs and weights)")
def attention_matches_head(module):
    for seed, (kind, batch, time, k, window) in enumerate([("attention", 5, 6, 4, 3),
                                                           ("key-value", 4, 5, 3, 4),
                                                           ("key-value-predict", 5, 4, 3, 6),
                                                           ("key-value-predict", 3, 7, 2, 1)]):
        key, value, predict, valid, params, ref = _attention_inputs(70 + 10 * seed, kind, batch, time, k, window)
        out, alpha = _attend(module, key, value, predict, valid, params)
        where = f" ({kind}, batch={batch}, time={time}, k={k}, window={window})"
        if max_diff(alpha, ref.attention) < 1e-9 and max_diff(out, ref.output) < 1e-9:
            continue
        expect(finite(alpha) and finite(out), "NaN or inf in the result" + where + "; the check on empty windows "
               "says more")
        allowed = window_mask(valid, window, time)
        if max_diff(alpha, ref.attention.flip(-1)) < 1e-9:
            raise CheckFailed("your weights are in reverse slot order (newest first)" + where + "; slot 0 of the "
                              "window is the oldest output h_{t-L}")
        for mask_shift in (1, 0):
            shifted_out, shifted_alpha = _variant(key, value, predict, valid, params, shift=1, mask_shift=mask_shift)
            if max_diff(alpha, shifted_alpha) < 1e-9 or max_diff(out, shifted_out) < 1e-9:
                raise CheckFailed("your window is one step late: it holds h_t and loses h_{t-L}" + where + "; the "
                                  "current step is the query, never a slot of its own window")
        if bool(alpha[~allowed].any()):
            all_out, all_alpha = _variant(key, value, predict, valid, params, softmax="all")
            if max_diff(alpha, all_alpha) < 1e-9:
                raise CheckFailed("your softmax also gives weight to slots that do not exist (before the document "
                                  "start, padding)" + where + "; they must get exactly 0")
            raise CheckFailed("a disallowed slot got a non-zero weight" + where + "; use the window mask")
        sums = alpha.sum(-1)  # (batch, time)
        has_slot = allowed.any(-1)
        if max_diff(sums[has_slot], torch.ones_like(sums[has_slot])) > 1e-9:
            _, batch_alpha = _variant(key, value, predict, valid, params, softmax="batch")
            if max_diff(alpha, batch_alpha) < 1e-9:
                raise CheckFailed("your weights are normalised across the batch: each step's weights must sum to 1 "
                                  "over its own window (the last axis), independently of the other sequences" + where)
            raise CheckFailed("the weights of a step with allowed slots do not sum to 1 over its window" + where +
                              "; normalise over the last axis, for every sequence and step separately")
        if max_diff(alpha, ref.attention) > 1e-9:
            raise CheckFailed("your weights are a softmax over the window but of the wrong scores" + where + "; "
                              "check Eq. 1-2 / 7-8: which vector is compared with the window, and where the tanh goes")
        raise CheckFailed("the weights are right but h* is not" + where + "; check Eq. 3 / 9 (which part is read "
                          "from the window) and Eq. 4 / 10 / 12 (which part of the current output is combined)")


@check("window_attention: an empty window gives zero weights and h* = tanh(W^x p_t), without NaN or NaN gradients")
def attention_empty_window(module):
    for seed, (kind, batch, time, k, window) in enumerate([("key-value-predict", 4, 5, 3, 3),
                                                           ("attention", 2, 1, 4, 5)]):
        key, value, predict, valid, params, _ = _attention_inputs(120 + 10 * seed, kind, batch, time, k, window)
        valid = valid.clone()
        valid[:, :window] = False  # every row starts a document: step 0 has nothing to look at
        key, value, predict = (t.clone().requires_grad_() for t in (key, value, predict))
        out, alpha = _attend(module, key, value, predict, valid, params)
        expect(finite(alpha) and finite(out),
               "NaN or inf in the result: at a document start step 0 has no allowed slot, and a softmax over "
               "nothing is 0/0; an empty window must give all-zero weights")
        expect(not bool(alpha[:, 0].any()), "step 0 of a document has an empty window: its weights must be all 0")
        bare = torch.tanh(predict[:, 0] @ params["W_x"].T)  # r = 0
        expect(max_diff(out[:, 0], bare) < 1e-9,
               "with an empty window the context r_t is 0, so h*_t = tanh(W^x p_t); your step 0 differs")
        expect(out.requires_grad and alpha.requires_grad,
               "the results do not require grad although the inputs do; avoid .detach(), .data, numpy and "
               "torch.no_grad() inside window_attention")
        g = generator(121 + 10 * seed)
        loss = ((out * torch.randn(out.shape, generator=g).double()).sum()
                + (alpha * torch.randn(alpha.shape, generator=g).double()).sum())
        loss.backward()
        grads = [t.grad for t in (key, value, predict)]
        expect(all(gr is not None for gr in grads), "no gradient reaches the keys, values or predict parts")
        expect(all(finite(gr) for gr in grads),
               "the values are fine but the gradients contain NaN or inf: a NaN created along the way (e.g. "
               "a softmax over a row with nothing allowed) comes back in the backward pass even if you replace "
               "it afterwards; avoid creating it")
    key, value, predict, valid, params, _ = _attention_inputs(150, "attention", 3, 4, 3, 3)
    params = dict(params, w=params["w"] * 1e4)  # scores in the thousands: exp overflows without a shift
    out, alpha = _attend(module, key, value, predict, valid, params)
    expect(finite(out) and finite(alpha),
           "NaN or inf with large scores (w scaled by 1e4): exp overflows; a softmax does not change when "
           "the same number is subtracted from a whole row")


@check("window_attention never reads the current or a later step's value, and no step sees the future")
def attention_causal(module):
    batch, time, k, window = 3, 6, 3, 3
    key, value, predict, valid, params, _ = _attention_inputs(160, "key-value-predict", batch, time, k, window)
    out, alpha = _attend(module, key, value, predict, valid, params)
    t0 = 3
    noise = torch.randn(batch, k, generator=generator(161)).double()
    changed_value = value.clone()
    changed_value[:, window + t0] += noise  # v_{t0}
    out_v, _ = _attend(module, key, changed_value, predict, valid, params)
    expect(max_diff(out_v[:, :t0 + 1], out[:, :t0 + 1]) < 1e-12,
           f"changing v_{t0} changed h* at step {t0} or earlier; the window of step t holds outputs before t "
           "only, and a value is never a query")
    expect(max_diff(out_v[:, t0 + 1], out[:, t0 + 1]) > 1e-9,
           f"changing v_{t0} did not change h* at step {t0 + 1}, whose window holds it as the newest slot")
    changed_key = key.clone()
    changed_key[:, window + t0] += noise  # k_{t0}
    out_k, alpha_k = _attend(module, changed_key, value, predict, valid, params)
    expect(max_diff(alpha_k[:, :t0], alpha[:, :t0]) < 1e-12 and max_diff(out_k[:, :t0], out[:, :t0]) < 1e-12,
           f"changing k_{t0} changed an earlier step: a step must never see the future")
    expect(max_diff(alpha_k[:, t0], alpha[:, t0]) > 1e-9,
           f"changing k_{t0} did not change the weights of step {t0}: the current key is the query (W^h k_t)")


@check("pipeline: your four functions reproduce WindowAttentionHead over two segments, gradients included")
def pipeline_matches_head(module):
    for seed, (kind, batch, time, k, window) in enumerate([("key-value-predict", 5, 4, 3, 5),
                                                           ("key-value", 4, 6, 2, 2),
                                                           ("attention", 4, 3, 4, 4)]):
        dtype = torch.float32  # as in a real model
        hidden = WINDOW_KINDS[kind] * k
        h1, mask1, _, _ = _segment(200 + seed, batch, time, hidden, window, dtype)
        h2, mask2, _, reset2 = _segment(210 + seed, batch, time, hidden, window, dtype)
        mask1 = torch.ones_like(mask1)  # the documents go on across the cut, except row 1's (reset)
        params = _params(220 + seed, k, dtype)
        head = _head(kind, window, params)
        leaves = [t.clone().requires_grad_() for t in (h1, h2)]
        ref1 = head(leaves[0], mask=mask1)
        ref2 = head(leaves[1], mask=mask2, memory=ref1.memory, reset=reset2)
        g = generator(230 + seed)
        weights = [torch.randn(r.output.shape, generator=g) for r in (ref1, ref2)]
        sum((r.output * wt).sum() for r, wt in zip((ref1, ref2), weights)).backward()
        ref_grads = [t.grad for t in leaves]

        mine = [t.detach().clone().requires_grad_() for t in (h1, h2)]
        memory, outs = None, []
        for h, mask, reset in zip(mine, (mask1, mask2), (None, reset2)):
            seq, valid = _extend(module, h, mask, memory, reset, window)
            key, value, _ = _split(module, seq, kind)
            _, _, predict = _split(module, h, kind)
            allowed = _mask(module, valid, window, time)
            expect(torch.equal(allowed, window_mask(*extend_with_memory(h.detach(), mask, memory, reset, window)[1:],
                                                    window, time)),
                   "your window mask differs from the head's on a running document; see the window_mask checks")
            out, alpha = _attend(module, key, value, predict, valid, params)
            expect(out.dtype == dtype and alpha.dtype == dtype,
                   f"float32 inputs gave h* {out.dtype} and weights {alpha.dtype}; keep the dtype of the inputs")
            outs.append((out, alpha))
            memory = (seq[:, -window:], valid[:, -window:])  # what the head hands to the next segment
        where = f" ({kind}, window={window})"
        for i, ((out, alpha), ref) in enumerate(zip(outs, (ref1, ref2))):
            expect(max_diff(alpha, ref.attention) < 1e-5,
                   f"your weights in segment {i + 1} differ from the head's" + where +
                   ("; the window must be carried across the cut" if i else ""))
            expect(max_diff(out, ref.output) < 1e-5, f"your h* in segment {i + 1} differs from the head's" + where)
        sum((o * wt).sum() for (o, _), wt in zip(outs, weights)).backward()
        for name, t, want in zip(("first", "second"), mine, ref_grads):
            expect(t.grad is not None and finite(t.grad),
                   f"no finite gradient reaches the {name} segment's outputs" + where)
            expect(max_diff(t.grad, want) < 1e-5,
                   f"gradients with respect to the {name} segment's outputs differ from the head's" + where +
                   "; the values agree, so look for a detach or an in-place change")


# One loop check per function, each counted once that function is right (a stub has no loop either).
no_python_loops_mask = no_python_loops("window_mask", name="no_python_loops_mask", requires=("mask_window_positions",))
no_python_loops_attention = no_python_loops("window_attention", name="no_python_loops_attention",
                                            requires=("attention_matches_head",))

CHECKS = [
    split_shapes,
    split_roles,
    split_errors,
    extend_first_segment,
    extend_next_segment,
    mask_window_positions,
    mask_shape,
    mask_document_start,
    attention_matches_head,
    attention_empty_window,
    attention_causal,
    pipeline_matches_head,
    no_python_loops_mask,
    no_python_loops_attention,
]
