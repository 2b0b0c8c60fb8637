"""Checks for assignment 02: ``causal_memory_mask``, ``combined_scores`` and ``attend``.

References: :func:`mlm.models.attentive.causal_memory_mask`,
:func:`mlm.models.attentive.masked_softmax` and
:class:`mlm.models.attentive.AttentiveHead` with ``score="combined"``.
"""

from __future__ import annotations

import math

import torch

from mlm.models.attentive import AttentiveHead, causal_memory_mask, masked_softmax

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

# ----------------------------------------------------------------------------- helpers


def _padding_mask(seed: int, batch: int, time: int) -> torch.Tensor:
    """(batch, time) bool, True at real tokens; row 0 is full, the last row is padded."""
    g = generator(seed)
    lengths = torch.randint(1, time + 1, (batch,), generator=g)
    lengths[0] = time
    if batch > 1:
        lengths[-1] = max(1, time // 2)
    return torch.arange(time)[None, :] < lengths[:, None]


def _reference_mask(mask, batch: int, time: int) -> torch.Tensor:
    return causal_memory_mask(mask, batch, time, torch.device("cpu"))


def _mask(module, mask, batch: int, time: int) -> torch.Tensor:
    fn = get_function(module, "causal_memory_mask")
    result = fn(None if mask is None else mask.clone(), batch, time)
    expect_tensor(result, (batch, time, time), "causal_memory_mask's result")
    expect(result.dtype == torch.bool,
           f"causal_memory_mask returned dtype {result.dtype}; it should be a bool tensor (torch.bool)")
    return result


def _params(seed: int, hidden: int, attn: int, dtype=torch.float64):
    """W_s, W_q (attn, hidden), v (attn,), W_c (hidden, 2 * hidden) and its bias (hidden,)."""
    g = generator(seed)

    def uniform(*shape, k):
        return ((torch.rand(*shape, generator=g) * 2 - 1) * k).to(dtype)

    ks, kc = 1.0 / math.sqrt(hidden), 1.0 / math.sqrt(2 * hidden)  # nn.Linear's ranges, a bit wider
    W_s, W_q = uniform(attn, hidden, k=2 * ks), uniform(attn, hidden, k=2 * ks)
    v = uniform(attn, k=2.0)
    return W_s, W_q, v, uniform(hidden, 2 * hidden, k=kc), uniform(hidden, k=kc)


def _head(W_s, W_q, v, W_c=None, b_c=None) -> AttentiveHead:
    """The book's head with score="combined" holding exactly these parameters."""
    attn, hidden = W_s.shape
    with torch.random.fork_rng(devices=[]):  # nn.Linear's init must not disturb the global seed
        head = AttentiveHead(hidden, score="combined", attention_size=attn).to(W_s.dtype)
    with torch.no_grad():
        head.W_s.weight.copy_(W_s)
        head.W_q.weight.copy_(W_q)
        head.v.weight.copy_(v[None, :])
        if W_c is not None:
            head.W_c.weight.copy_(W_c)
            head.W_c.bias.copy_(b_c)
    return head


def _hidden(seed: int, batch: int, time: int, hidden: int, dtype=torch.float64) -> torch.Tensor:
    return torch.randn(batch, time, hidden, generator=generator(seed)).to(dtype)  # (batch, time, hidden)


def _scores(module, h, W_s, W_q, v) -> torch.Tensor:
    fn = get_function(module, "combined_scores")
    result = fn(h.clone(), W_s.clone(), W_q.clone(), v.clone())
    batch, time, _ = h.shape
    return expect_tensor(result, (batch, time, time), "combined_scores' result")


def _reference_scores(h, W_s, W_q, v) -> torch.Tensor:
    """Eq. 10 for every (t, i) pair.

    The book's head only computes the pairs it can use (i < t) and leaves the rest 0, so the
    full square is formed here from the head's own layers, and its lower triangle is checked
    against the head.
    """
    head = _head(W_s, W_q, v)
    with torch.no_grad():
        keys, query = head.W_s(h), head.W_q(h)  # (batch, time, attn)
        full = head.v(torch.tanh(keys[:, None, :, :] + query[:, :, None, :])).squeeze(-1)  # (batch, t, i)
        assert torch.allclose(full.tril(-1), head.scores(h), atol=1e-9), "reference head disagrees with Eq. 10"
    return full


def _attend(module, h, scores, allowed):
    fn = get_function(module, "attend")
    weights, context = expect_pair(fn(h, scores, allowed), "attend")
    batch, time, hidden = h.shape
    expect_tensor(weights, (batch, time, time), "attend's weights")
    expect_tensor(context, (batch, time, hidden), "attend's context")
    return weights, context


# ----------------------------------------------------------------------------- causal_memory_mask


@check("causal_memory_mask returns a (batch, time, time) bool tensor", requires="mask_is_causal")
def mask_shape(module):
    for batch, time in [(3, 5), (2, 8), (4, 1)]:
        _mask(module, torch.ones(batch, time, dtype=torch.bool), batch, time)


@check("causal_memory_mask excludes the current step and the future")
def mask_is_causal(module):
    for batch, time in [(2, 6), (3, 9)]:
        got = _mask(module, torch.ones(batch, time, dtype=torch.bool), batch, time)
        want = _reference_mask(None, batch, time)
        t = torch.arange(time)
        diagonal = got[:, t, t]  # (batch, time): query t, slot t
        expect(not bool(diagonal.any()),
               "some step may attend to itself; the memory at step t holds only the outputs of the "
               "steps before it, its own output joins the memory afterwards")
        future = got & (t[None, :] > t[:, None])  # slots later than the query
        expect(not bool(future.any()),
               "some step may attend to a later step: a language model must not look at the future; "
               "check which axis is the query (middle) and which the memory slot (last)")
        missing = want & ~got
        if bool(missing.any()):
            b, q, i = (int(x) for x in missing.nonzero()[0])
            raise CheckFailed(f"step {q} should be allowed to attend to the earlier slot {i} (no padding here); "
                              "every strictly earlier step belongs to the memory")
        expect(torch.equal(got, want), "your mask differs from the reference")


@check("causal_memory_mask never lets a step attend to a padded slot", requires="mask_is_causal")
def mask_respects_padding(module):
    for seed, (batch, time) in enumerate([(4, 7), (3, 10), (2, 3)]):
        mask = _padding_mask(10 + seed, batch, time)
        expect(bool((~mask).any()), "internal: the test batch has no padding")
        got = _mask(module, mask, batch, time)
        unpadded = _mask(module, torch.ones(batch, time, dtype=torch.bool), batch, time)
        expect(not bool((got & ~mask[:, None, :]).any()),
               "a padded position (mask False) is still used as a memory slot; padding must never be attended")
        expect(torch.equal(got, unpadded & mask[:, None, :]),
               "with padding you changed entries that do not involve a padded memory slot; padding is "
               "a property of the slot i (last axis): rows of padded query steps keep the causal rule")


@check("causal_memory_mask with mask=None means no padding", requires="mask_is_causal")
def mask_none(module):
    for batch, time in [(3, 6), (1, 4), (2, 1)]:
        got = _mask(module, None, batch, time)
        ones = _mask(module, torch.ones(batch, time, dtype=torch.bool), batch, time)
        expect(torch.equal(got, ones),
               "mask=None should give the same result as a mask that is True everywhere "
               f"(batch={batch}, time={time}); don't forget the batch dimension when there is no mask")


# ----------------------------------------------------------------------------- combined_scores


@check("combined_scores matches AttentiveHead(score='combined') on random inputs")
def scores_match_reference(module):
    for seed, (batch, time, hidden, attn) in enumerate([(2, 5, 4, 3), (3, 7, 6, 6), (1, 4, 3, 8)]):
        h = _hidden(20 + seed, batch, time, hidden)
        W_s, W_q, v, _, _ = _params(30 + seed, hidden, attn)
        got = _scores(module, h, W_s, W_q, v)
        want = _reference_scores(h, W_s, W_q, v)
        if max_diff(got, want) < 1e-9:
            continue
        shape = f" (batch={batch}, time={time}, hidden={hidden}, attn={attn})"
        if max_diff(got, want.transpose(1, 2)) < 1e-9:
            raise CheckFailed("your scores are transposed (which is the same as exchanging the roles of "
                              "W_s and W_q): the middle axis should be the query step t, the last axis the "
                              "memory slot i, and W_s transforms the slot" + shape)
        single = (torch.tanh(h @ W_s.T) @ v)[:, None, :].expand(-1, time, -1)  # (batch, time, time)
        if max_diff(got, single) < 1e-9:
            raise CheckFailed("these are the single scores of Eq. 9, the same for every query; "
                              "Eq. 10 also involves the query step" + shape)
        raise CheckFailed("your scores differ from the reference" + shape + "; check where the tanh is "
                          "applied (to the sum of both terms) and that v reduces the attention axis")


@check("combined_scores depends on the query: changing h_t changes only row t and column t")
def scores_depend_on_query(module):
    batch, time, hidden, attn = 2, 6, 5, 4
    h = _hidden(40, batch, time, hidden)
    W_s, W_q, v, _, _ = _params(41, hidden, attn)
    before = _scores(module, h, W_s, W_q, v)
    t0 = 3
    changed_h = h.clone()
    changed_h[:, t0] += torch.randn(batch, hidden, generator=generator(42)).double()
    after = _scores(module, changed_h, W_s, W_q, v)
    changed = (after - before).abs() > 1e-12  # (batch, time, time)
    others = torch.arange(time) != t0
    expect(bool(changed[:, t0][:, others].all()),
           f"changing only h_{t0} left some scores of query step {t0} unchanged; the combined score "
           "depends on the query too (that is what sets it apart from the single score of Eq. 9)")
    unrelated = changed[:, others][:, :, others]  # neither the query nor the slot is t0
    expect(not bool(unrelated.any()),
           f"changing only h_{t0} changed scores of pairs that involve neither query {t0} nor slot {t0}; "
           "each score should depend on its own pair (h_i, h_t) only")


@check("combined_scores handles time=1 and batch=1, and lets gradients flow")
def scores_edge_cases_and_gradients(module):
    for seed, (batch, time, hidden, attn) in enumerate([(1, 1, 3, 2), (4, 1, 2, 5), (1, 5, 4, 4)]):
        h = _hidden(50 + seed, batch, time, hidden)
        W_s, W_q, v, _, _ = _params(60 + seed, hidden, attn)
        got = _scores(module, h, W_s, W_q, v)
        expect(max_diff(got, _reference_scores(h, W_s, W_q, v)) < 1e-9,
               f"wrong scores for batch={batch}, time={time}; if the other combined_scores checks pass, "
               "look for dimensions of size 1 being squeezed away")
    leaves = [t.clone().requires_grad_() for t in (_hidden(70, 2, 4, 3), *_params(71, 3, 5)[:3])]
    fn = get_function(module, "combined_scores")
    result = expect_tensor(fn(*leaves), (2, 4, 4), "combined_scores' result")
    expect(result.requires_grad, "the scores do not require grad although the inputs do; avoid .detach(), "
           ".data, numpy and torch.no_grad() inside combined_scores")
    weights = torch.randn(result.shape, generator=generator(72)).double()
    (result * weights).sum().backward()
    names = ["h", "W_s", "W_q", "v"]
    missing = [n for n, t in zip(names, leaves) if t.grad is None]
    expect(not missing, f"no gradient reaches {', '.join(missing)}; every argument should take part")
    ref_leaves = [t.detach().clone().requires_grad_() for t in leaves]
    h, W_s, W_q, v = ref_leaves
    keys, queries = h @ W_s.T, h @ W_q.T
    ref = torch.tanh(keys[:, None] + queries[:, :, None]) @ v
    (ref * weights).sum().backward()
    wrong = [n for n, t, r in zip(names, leaves, ref_leaves) if max_diff(t.grad, r.grad) > 1e-9]
    expect(not wrong, f"gradients with respect to {', '.join(wrong)} differ from the reference")


# ----------------------------------------------------------------------------- attend


def _attend_inputs(seed: int, batch: int, time: int, hidden: int, scale: float = 2.0):
    h = _hidden(seed, batch, time, hidden)
    scores = torch.randn(batch, time, time, generator=generator(seed + 1)).double() * scale
    allowed = _reference_mask(_padding_mask(seed + 2, batch, time), batch, time)
    return h, scores, allowed


@check("attend's weights are a softmax over the allowed slots and context = weights @ h")
def attend_matches_reference(module):
    for seed, (batch, time, hidden) in enumerate([(3, 6, 4), (2, 9, 5), (4, 3, 2)]):
        h, scores, allowed = _attend_inputs(80 + 10 * seed, batch, time, hidden)
        weights, context = _attend(module, h, scores, allowed)
        want = masked_softmax(scores, allowed)
        expect(finite(weights), "some weights are NaN or infinite (the attend checks on empty memories "
               "and extreme scores say more)")
        expect(not bool((weights[~allowed] != 0).any()),
               "a disallowed slot got a non-zero weight; it must get exactly 0")
        sums = weights.sum(-1)  # (batch, time)
        nonempty = allowed.any(-1)
        expect(max_diff(sums[nonempty], torch.ones_like(sums[nonempty])) < 1e-9,
               "a row with allowed slots does not sum to 1; normalise over the memory slots "
               "(the last axis), counting the allowed slots only")
        expect(max_diff(weights, want) < 1e-9,
               "the rows sum to 1 but the weights are not a softmax of the scores over the allowed "
               "slots (Eq. 4)")
        expect(max_diff(context, want @ h) < 1e-9,
               "the weights are right but the context is not; c_t is the sum of the memory vectors "
               "h_i weighted by row t of the weights")


@check("attend gives step 0 all-zero weights and context, without NaN in values or gradients",
       requires="attend_matches_reference")
def attend_empty_memory(module):
    for seed, (batch, time, hidden) in enumerate([(3, 5, 4), (1, 1, 3), (2, 1, 2)]):
        h, scores, allowed = _attend_inputs(120 + 10 * seed, batch, time, hidden)
        h, scores = h.requires_grad_(), scores.requires_grad_()
        weights, context = _attend(module, h, scores, allowed)
        expect(finite(weights) and finite(context),
               "NaN or inf in the result: step 0 has no allowed slot, and a softmax over nothing is 0/0; "
               "an empty memory must give all-zero weights")
        expect(not bool(weights[:, 0].any()) and not bool(context[:, 0].any()),
               "step 0 has an empty memory: its weights and its context should be exactly zero")
        expect(weights.requires_grad and context.requires_grad,
               "the results do not require grad although the inputs do; avoid .detach(), .data, "
               "numpy and torch.no_grad() inside attend")
        g = generator(121 + 10 * seed)
        loss = ((weights * torch.randn(weights.shape, generator=g).double()).sum()
                + (context * torch.randn(context.shape, generator=g).double()).sum())
        loss.backward()
        expect(h.grad is not None and scores.grad is not None,
               "no gradient reaches " + ("h" if h.grad is None else "the scores"))
        expect(finite(h.grad) and finite(scores.grad),
               "the values are fine but the gradients contain NaN or inf: a NaN computed along the way "
               "(e.g. a softmax over a row with nothing allowed) comes back in the backward pass even "
               "when you replace it afterwards; avoid creating it in the first place")
        expect(not bool(scores.grad[~allowed].any()),
               "disallowed scores receive a gradient; they must not influence the result at all")


@check("attend ignores disallowed slots even when their scores are huge (1e4) or infinite")
def attend_extreme_scores(module):
    batch, time, hidden = 3, 7, 4
    h, scores, allowed = _attend_inputs(160, batch, time, hidden)
    baseline_weights, baseline_context = _attend(module, h, scores, allowed)
    for fill in (1e4, -1e4, float("-inf"), float("inf")):
        extreme = scores.masked_fill(~allowed, fill)
        weights, context = _attend(module, h, extreme, allowed)
        expect(finite(weights) and finite(context),
               f"NaN or inf in the result when the disallowed scores are {fill}; exp(1e4) is inf and "
               "inf * 0 is NaN, so keep disallowed scores out of every exp and sum")
        expect(max_diff(weights, baseline_weights) < 1e-9 and max_diff(context, baseline_context) < 1e-9,
               f"the result changed when only the disallowed scores were set to {fill}; "
               "scores of disallowed pairs must not matter at all")
    want = masked_softmax(scores, allowed)
    expect(max_diff(baseline_weights, want) < 1e-9 and max_diff(baseline_context, want @ h) < 1e-9,
           "disallowed scores are ignored, but the result itself is wrong; fix the first attend check")
    for scale in (1e3, 1e4):  # huge allowed scores: the softmax must not overflow
        big = scores * scale + 5 * scale
        weights, context = _attend(module, h, big, allowed)
        expect(finite(weights) and finite(context),
               f"NaN or inf in the result with allowed scores around {scale:g}: exp overflows; "
               "a softmax is unchanged when the same number is subtracted from a whole row")
        expect(max_diff(weights, masked_softmax(big, allowed)) < 1e-9,
               f"wrong weights with allowed scores around {scale:g}; look for precision lost in exp")


# ----------------------------------------------------------------------------- the whole head


@check("pipeline: your three functions together reproduce AttentiveHead(score='combined')")
def pipeline_matches_head(module):
    for seed, (batch, time, hidden, attn) in enumerate([(3, 8, 6, 5), (2, 5, 4, 4)]):
        dtype = torch.float32  # as in a real model
        h = _hidden(200 + seed, batch, time, hidden, dtype=dtype)
        mask = _padding_mask(210 + seed, batch, time)
        W_s, W_q, v, W_c, b_c = _params(220 + seed, hidden, attn, dtype=dtype)
        head = _head(W_s, W_q, v, W_c, b_c)
        with torch.no_grad():
            ref = head(h, mask=mask)
        allowed = _mask(module, mask, batch, time)
        expect(torch.equal(allowed, _reference_mask(mask, batch, time)),
               "your mask differs from the head's on a padded batch; see the causal_memory_mask checks")
        scores = _scores(module, h, W_s, W_q, v)
        expect(max_diff(scores.tril(-1), head.scores(h)) < 1e-5,  # the head computes only i < t
               "your float32 scores differ from the head's; see the combined_scores checks")
        weights, context = _attend(module, h, scores, allowed)
        expect(weights.dtype == dtype and context.dtype == dtype,
               f"float32 inputs gave weights {weights.dtype} and context {context.dtype}; keep the dtype of the inputs")
        expect(max_diff(weights, ref.attention) < 1e-5,
               "your attention weights differ from the head's; see the attend checks")
        with torch.no_grad():
            out = torch.tanh(head.W_c(torch.cat([h, context], dim=-1)))  # Eq. 7
        expect(max_diff(out, ref.output) < 1e-5,
               "the weights match but the head's output, computed from your context, does not")


# One loop check per function, each counted once that function is right (a stub has no loop either).
no_python_loops_mask = no_python_loops("causal_memory_mask", name="no_python_loops_mask", requires=("mask_is_causal",))
no_python_loops_scores = no_python_loops("combined_scores", name="no_python_loops_scores",
                                         requires=("scores_match_reference",))

CHECKS = [
    mask_is_causal,
    mask_shape,
    mask_respects_padding,
    mask_none,
    scores_match_reference,
    scores_depend_on_query,
    scores_edge_cases_and_gradients,
    attend_matches_reference,
    attend_empty_memory,
    attend_extreme_scores,
    pipeline_matches_head,
    no_python_loops_mask,
    no_python_loops_scores,
]
