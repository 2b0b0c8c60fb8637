"""Checks for assignment 04: ``memory_window``, ``temporal_rows``, ``memory_attention`` and ``gated_composition``.

References: :func:`mlm.models.recurrent_memory.memory_window`,
:func:`mlm.models.recurrent_memory.temporal_rows` and
:meth:`mlm.models.recurrent_memory.MemoryBlock.compose` (``composition="gating"``).
"""

from __future__ import annotations

import torch

from mlm.models.recurrent_memory import MemoryBlock, memory_window, temporal_rows

from exercises.checks.common import (CheckFailed, check, expect, expect_pair, expect_tensor, generator, get_function,
                                      max_diff)
from exercises.rules import no_python_loops

BANNED = {name: "that is the book's answer; compare with it in the experiment" for name in
          ("MemoryBlock", "RecurrentMemoryHead", "masked_softmax", "scaled_dot_product_attention")}

# ----------------------------------------------------------------------------- helpers


def _tokens(seed: int, batch: int, time: int, vocab: int = 30) -> torch.Tensor:
    return torch.randint(1, vocab, (batch, time), generator=generator(seed))  # distinct from the filler 0


def _padding_mask(seed: int, batch: int, time: int) -> torch.Tensor:
    """(batch, time) bool, True at real tokens; row 0 is full, the last row is padded."""
    lengths = torch.randint(1, time + 1, (batch,), generator=generator(seed))
    lengths[0] = time
    if batch > 1:
        lengths[-1] = max(1, time // 2)
    return torch.arange(time)[None, :] < lengths[:, None]


def _window(module, tokens, mask, size):
    fn = get_function(module, "memory_window")
    ids, present = expect_pair(fn(tokens.clone(), None if mask is None else mask.clone(), size), "memory_window")
    batch, time = tokens.shape
    expect_tensor(ids, (batch, time, size), "memory_window's ids")
    expect_tensor(present, (batch, time, size), "memory_window's present")
    expect(present.dtype == torch.bool, f"present has dtype {present.dtype}; it should be torch.bool")
    return ids, present


def _sizes(seed: int, pairs: list[tuple[int, int]], short: bool) -> list[tuple[int, int]]:
    """``pairs`` of (time, size) and one drawn at random (the hidden variant draws another): temporal_rows takes
    only two numbers, so fixed pairs alone could be answered from a table. ``short``: a sentence shorter than
    the memory."""
    g = generator(seed)
    size = int(torch.randint(2, 13, (), generator=g))
    time = int(torch.randint(1, size, (), generator=g)) if short else size + int(torch.randint(0, 10, (), generator=g))
    return [*pairs, (time, size)]


def _rows(module, time, size):
    rows = expect_tensor(get_function(module, "temporal_rows")(time, size), (time, size), "temporal_rows' result")
    expect(not rows.is_floating_point() and rows.dtype != torch.bool,
           f"temporal_rows returned dtype {rows.dtype}; row indices should be an integer (long) tensor")
    return rows


def _gate_params(seed: int, d: int, dtype=torch.float64):
    g = generator(seed)
    mats = [(torch.rand(d, d, generator=g) * 2 - 1).to(dtype) for _ in range(6)]
    biases = [(torch.rand(d, generator=g) * 2 - 1).to(dtype) for _ in range(3)]
    W_z, U_z, W_r, U_r, W, U = mats
    b_z, b_r, b = biases
    return dict(W_z=W_z, U_z=U_z, b_z=b_z, W_r=W_r, U_r=U_r, b_r=b_r, W=W, U=U, b=b)


def _block(params: dict, vocab: int = 30, size: int = 4) -> MemoryBlock:
    d = params["W_z"].shape[0]
    with torch.random.fork_rng(devices=[]):
        block = MemoryBlock(vocab, d, memory_size=size, temporal=True, composition="gating").to(params["W_z"].dtype)
        for p in (block.M.weight, block.C.weight, block.T):
            torch.nn.init.uniform_(p, -0.5, 0.5)
    with torch.no_grad():
        for name, layer in (("z", (block.W_z, block.U_z)), ("r", (block.W_r, block.U_r)), ("", (block.W_h, block.U_h))):
            W, U = layer
            W.weight.copy_(params[f"W_{name}" if name else "W"])
            W.bias.copy_(params[f"b_{name}" if name else "b"])
            U.weight.copy_(params[f"U_{name}" if name else "U"])
    return block


def _compose(module, s, h, params):
    fn = get_function(module, "gated_composition")
    out = fn(s, h, **params)
    return expect_tensor(out, tuple(h.shape), "gated_composition's result")


# ----------------------------------------------------------------------------- memory_window


@check("memory_window returns (ids, present), each (batch, time, size), present a bool tensor",
       requires="window_full_memory")
def window_shape(module):
    for batch, time, size in [(2, 6, 3), (3, 4, 5), (1, 1, 1)]:
        _window(module, _tokens(1, batch, time), None, size)


@check("memory_window: a full memory holds the last `size` words, newest in the last slot")
def window_full_memory(module):
    for seed, (batch, time, size) in enumerate([(2, 9, 3), (3, 12, 5)]):
        tokens = _tokens(10 + seed, batch, time)
        ids, present = _window(module, tokens, None, size)
        want_ids, _ = memory_window(tokens, None, size)
        t = size - 1  # the first step with a full memory
        if torch.equal(ids[:, t:], want_ids[:, t:].flip(-1)):
            raise CheckFailed("your window is reversed: slot 0 should hold the oldest word and the last slot "
                              "the current word x_t")
        if torch.equal(ids[:, t:-1], want_ids[:, t + 1:]):
            raise CheckFailed("your window is one step ahead: the last slot must hold the current input "
                              "x_t, never the next word (that is what the model must predict)")
        expect(torch.equal(ids[:, t:], want_ids[:, t:]),
               "once the memory is full, slot j of step t should hold tokens[:, t - (size-1) + j]")
        expect(bool(present[:, t:].all()), "with no padding, every slot of a full memory is present")


@check("memory_window: at a sentence start the missing slots are absent, not padded")
def window_sentence_start(module):
    for seed, (batch, time, size) in enumerate([(2, 7, 4), (3, 3, 6)]):
        tokens = _tokens(20 + seed, batch, time)
        ids, present = _window(module, tokens, None, size)
        want_ids, want_present = memory_window(tokens, None, size)
        expect(torch.equal(present, want_present),
               "at step t < size only the last t+1 slots hold words (positions 0..t); the first size-1-t "
               "slots lie before the start of the sentence and must be marked absent")
        expect(torch.equal(ids[want_present], want_ids[want_present]),
               "the present slots at the start of the rows hold the wrong ids; slot j of step t holds "
               "position t - (size-1) + j")


@check("memory_window never marks a padded position as present")
def window_padding(module):
    for seed, (batch, time, size) in enumerate([(4, 8, 3), (3, 10, 5)]):
        tokens = _tokens(30 + seed, batch, time)
        mask = _padding_mask(40 + seed, batch, time)
        _, present = _window(module, tokens, mask, size)
        _, want = memory_window(tokens, mask, size)
        expect(torch.equal(present, want),
               "with padding, a slot is present only if its position exists and mask is True there")


@check("memory_window with mask=None means no padding", requires="window_full_memory")
def window_mask_none(module):
    tokens = _tokens(50, 3, 6)
    a = _window(module, tokens, None, 4)
    b = _window(module, tokens, torch.ones(3, 6, dtype=torch.bool), 4)
    expect(torch.equal(a[1], b[1]), "mask=None should give the same `present` as a mask that is True everywhere")


# ----------------------------------------------------------------------------- temporal_rows


@check("temporal_rows: a full memory uses rows 0..size-1 in slot order")
def rows_full(module):
    for time, size in _sizes(150, [(8, 3), (6, 6), (20, 15)], short=False):
        rows = _rows(module, time, size)
        expect(torch.equal(rows[size - 1:].long(), torch.arange(size).expand(time - size + 1, size)),
               "once the memory is full (t >= size-1), slot j should use row j")
    on = get_function(module, "temporal_rows")(4, 3, device="meta")  # a device without data: only where it is
    expect(isinstance(on, torch.Tensor) and on.device.type == "meta",
           "temporal_rows(..., device=d) should build its tensor on d (torch.arange(..., device=device))")


@check("temporal_rows: at a sentence start the present words use the slice T[1:m], oldest first")
def rows_sentence_start(module):
    for time, size in _sizes(160, [(3, 4), (7, 5), (2, 15)], short=True):
        rows = _rows(module, time, size).long()
        want = temporal_rows(time, size, "paper")
        present = memory_window(torch.ones(1, time, dtype=torch.long), None, size)[1][0]  # (time, size)
        if torch.equal(rows[present], temporal_rows(time, size, "code")[present]):
            raise CheckFailed("the newest word always gets the last row here: that is the official code's "
                              "alignment; the paper uses T[1:m], so with m words the oldest gets row 0")
        expect(torch.equal(rows[present], want[present]),
               "with m words in memory, the oldest present word should use row 0 and the current word row m-1")
        expect(int(rows.min()) >= 0 and int(rows.max()) < size, "every entry must be a valid row index 0..size-1")


# ----------------------------------------------------------------------------- memory_attention


def _attention_case(seed: int, batch: int = 3, time: int = 8, size: int = 4, d: int = 5, vocab: int = 30):
    g = generator(seed)
    block = _block(_gate_params(seed, d, dtype=torch.float64), vocab=vocab, size=size)
    tokens = _tokens(seed + 1, batch, time, vocab)
    mask = _padding_mask(seed + 2, batch, time)
    h = torch.randn(batch, time, d, generator=g, dtype=torch.float64)
    return block, tokens, mask, h


def _attention(module, block, tokens, mask, h):
    """The student's attention on the reference window and rows (so only memory_attention is graded here)."""
    size = block.memory_size
    ids, present = memory_window(tokens, mask, size)
    rows = temporal_rows(tokens.shape[1], size, "paper")
    fn = get_function(module, "memory_attention")
    s, p = expect_pair(fn(h, ids, present, rows, block.M.weight, block.C.weight, block.T), "memory_attention")
    expect_tensor(s, tuple(h.shape), "s")
    expect_tensor(p, tuple(ids.shape), "p")
    return s, p, present


def _reference_attention(block, tokens, mask, h):
    ids, present = memory_window(tokens, mask, block.memory_size)
    rows = temporal_rows(tokens.shape[1], block.memory_size, "paper")
    scores = torch.einsum("btnd,btd->btn", block.M(ids) + block.T[rows], h).masked_fill(~present, float("-inf"))
    p = torch.softmax(scores, -1).nan_to_num(0.0)
    return torch.einsum("btn,btnd->btd", p, block.C(ids)), p


@check("memory_attention matches Eq. 2-3 (MemoryBlock's p_t and s_t) at real positions", points=3)
def attention_matches_block(module):
    for seed in (100, 110):
        block, tokens, mask, h = _attention_case(seed)
        with torch.no_grad():
            s, p, present = _attention(module, block, tokens, mask, h)
            want_s, want_p = _reference_attention(block, tokens, mask, h)
            real = mask[..., None]
            if max_diff(p * real, want_p * real) > 1e-9:
                keys = block.M(memory_window(tokens, mask, block.memory_size)[0])
                no_t = torch.softmax(torch.einsum("btnd,btd->btn", keys, h).masked_fill(~present, float("-inf")), -1)
                if max_diff(p * real, no_t.nan_to_num(0.0) * real) < 1e-9:
                    raise CheckFailed("the temporal matrix is missing from the scores: the keys are M_i + T (Eq. 2)")
                if max_diff(p.sum(-1)[mask], torch.ones_like(p.sum(-1)[mask])) > 1e-9:
                    raise CheckFailed("at a real position the weights over the slots should sum to 1; normalise over "
                                      "the last axis, the slots")
                raise CheckFailed("p differs from softmax((M_i + T) h_t) over the present slots")
            expect(max_diff(s * real, want_s * real) < 1e-9, "p is right but s is not: s_t = sum_j p_tj C_i (Eq. 3), "
                   "the output memory C, not M")


@check("memory_attention: absent slots get weight 0, a padded step still attends to its real words, and a step "
       "with none present gives zeros without NaN", points=2)
def attention_absent_slots(module):
    block, tokens, mask, h = _attention_case(120, batch=2, time=10, size=5)  # row 1: real words 0, 1 only
    mask[1, 2:] = False
    with torch.no_grad():
        block.M.weight[tokens[0, 0]] += 1e3  # a huge key at the first word: leaks show up everywhere
    h = h.clone().requires_grad_()
    s, p, present = _attention(module, block, tokens, mask, h)
    expect(bool(torch.isfinite(p).all()) and bool(torch.isfinite(s).all()),
           "NaN or inf in p or s: a step whose slots are all absent must give p = 0 and s = 0")
    expect(bool((p[~present] == 0).all()), "an absent slot (before the sentence start, or padding) got a weight")
    expect(bool((p[1, 6:] == 0).all()) and bool((s[1, 6:] == 0).all()),
           "a padded step with no present slot should get p = 0 and s = 0")
    totals = p[1, 2:6].detach().sum(-1)  # padded steps 2-5 still hold real words 0 and 1 in their windows
    expect(max_diff(totals, torch.ones_like(totals)) < 1e-9,
           "a padded step whose window still holds real words should attend to them like any other step; "
           "only a step with no present slot at all gets zeros")
    (grad,) = torch.autograd.grad(s.sum() + p.sum(), h)
    expect(bool(torch.isfinite(grad).all()), "the gradient through an empty step is NaN; avoid 0/0 and -inf - -inf")


# ----------------------------------------------------------------------------- gated_composition


@check("gated_composition matches Eq. 4-7 (MemoryBlock.compose) on random inputs")
def gate_matches_reference(module):
    for seed, shape in enumerate([(2, 5, 4), (3, 6), (1, 2, 3, 5)]):
        d = shape[-1]
        params = _gate_params(60 + seed, d)
        g = generator(70 + seed)
        s, h = torch.randn(*shape, generator=g, dtype=torch.float64), torch.randn(*shape, generator=g, dtype=torch.float64)
        got = _compose(module, s, h, params)
        want = _block(params).compose(s, h)
        if max_diff(got, want) < 1e-9:
            continue
        z = torch.sigmoid(s @ params["W_z"].T + params["b_z"] + h @ params["U_z"].T)
        h_tilde = (want - (1 - z) * h) / z
        if max_diff(got, z * h + (1 - z) * h_tilde) < 1e-9:
            raise CheckFailed("z and 1 - z are exchanged: z is the share of the new candidate h~ (Eq. 7)")
        r = torch.sigmoid(s @ params["W_r"].T + params["b_r"] + h @ params["U_r"].T)
        other = torch.tanh(s @ params["W"].T + params["b"] + r * (h @ params["U"].T))
        if max_diff(got, (1 - z) * h + z * other) < 1e-9:
            raise CheckFailed("the reset gate must multiply h before U is applied: U (r * h), not r * (U h)")
        raise CheckFailed(f"your result differs from Eq. 4-7 (shape {shape}); check each gate and which of "
                          "s and h every matrix reads")


@check("gated_composition: gradients reach s, h and every parameter")
def gate_gradients(module):
    params = {k: v.clone().requires_grad_() for k, v in _gate_params(80, 4).items()}
    g = generator(81)
    s = torch.randn(2, 3, 4, generator=g, dtype=torch.float64, requires_grad=True)
    h = torch.randn(2, 3, 4, generator=g, dtype=torch.float64, requires_grad=True)
    out = _compose(module, s, h, params)
    expect(out.requires_grad, "the result is detached from the inputs; do not use .detach(), .item() or numpy")
    grads = torch.autograd.grad(out.square().sum(), [s, h, *params.values()], allow_unused=True)
    for name, grad in zip(["s", "h", *params], grads):
        expect(grad is not None and bool(grad.abs().sum() > 0), f"no gradient reaches {name}")


# ----------------------------------------------------------------------------- the whole block


@check("pipeline: your four functions reproduce MemoryBlock(temporal=True, composition='gating')",
       requires=("window_padding", "rows_sentence_start", "attention_matches_block", "gate_matches_reference"))
def pipeline_matches_block(module):
    batch, time, size, d = 3, 8, 4, 5
    params = _gate_params(90, d, dtype=torch.float32)
    block = _block(params, size=size)
    tokens = _tokens(91, batch, time)
    mask = _padding_mask(92, batch, time)
    h = torch.randn(batch, time, d, generator=generator(93))
    with torch.no_grad():
        want_out, want_p = block(h, tokens, mask)
        ids, present = _window(module, tokens, mask, size)
        rows = _rows(module, time, size).long()
        s, p = expect_pair(get_function(module, "memory_attention")(h, ids, present, rows, block.M.weight,
                                                                      block.C.weight, block.T), "memory_attention")
        out = _compose(module, s, h, params)
    real = mask[..., None]
    expect(max_diff(p * real, want_p * real) < 1e-5, "the attention built from your window and rows differs from "
           "the block's; see the memory_window and temporal_rows checks")
    expect(max_diff(out * real, want_out * real) < 1e-5,
           "the attention matches but the block's output, computed with your gate, does not")


no_python_loops_window = no_python_loops("memory_window", name="no_python_loops_window",
                                         requires=("window_full_memory",))

CHECKS = [
    window_full_memory,
    window_shape,
    window_sentence_start,
    window_padding,
    window_mask_none,
    rows_full,
    rows_sentence_start,
    attention_matches_block,
    attention_absent_slots,
    gate_matches_reference,
    gate_gradients,
    pipeline_matches_block,
    no_python_loops_window,
]
