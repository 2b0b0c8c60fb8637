"""Planted mistakes in assignments 01-06: each loses the points of the checks that see it, and only those (one
mistake costs its points once); hand examples learnt by heart fail. Assignment 00's are in test_exercises.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from exercises.grader import REGISTRY, SOLUTIONS_DIR, grade_file  # noqa: E402
from test_exercises import grade_wrong, lost, needs_solutions, planted  # noqa: E402


def wrong_solution(assignment_id: str, old: str, new: str) -> str:
    """The reference solution of an assignment with one planted change."""
    return planted((SOLUTIONS_DIR / REGISTRY[assignment_id].filename).read_text(), old, new)


# One planted change in an assignment's reference solution: (assignment, the text replaced, its replacement, the
# check whose hint is read, a phrase of that hint or None, the checks lost or None when only the hint is read).
MISTAKES = {
    "dropping the recurrent state": (
        "01", "h, c = cell(inputs[:, t], h, c, *params)", "h, c = cell(inputs[:, t], drop(h), c, *params)",
        "forward_drop_calls", "never on h or c", {"forward_drop_calls", "forward_vertical_only"}),
    "loss divided by tokens for sequence_sum": (
        "01", "return nll / batch if reduction", "return nll / (batch * time) if reduction",
        "loss_sequence_sum", "per-token mean", {"loss_sequence_sum"}),
    "copying the weights is not tying": (
        "01", "decoder.weight = embedding.weight", "decoder.weight.data.copy_(embedding.weight.data)",
        "tie_shares_parameter", None, {"tie_shares_parameter", "tie_shape_error"}),
    "code alignment of the temporal rows": (
        "04", "return (slots - (size - words)).clamp(min=0)  # (time, size)", "return slots.expand(time, size).clone()",
        "rows_sentence_start", "official code", {"rows_sentence_start", "pipeline_matches_block"}),
    "attention without the temporal matrix": (
        "04", "keys = M[ids] + T[rows]", "keys = M[ids]",
        "attention_matches_block", "temporal matrix", {"attention_matches_block", "pipeline_matches_block"}),
    "attention reading the input memory as values": (
        "04", "values = C[ids]", "values = M[ids]", "attention_matches_block", "output memory C", None),
    # A padded step's window still holds the row's last real words; zeroing its attention is wrong.
    "silencing every padded step": (
        "04", "    s = (p[..., None] * values).sum(-2)",
        "    p = p * present[..., -1:]  # the current slot absent: a padded step\n    s = (p[..., None] * values).sum(-2)",
        "attention_absent_slots", "like any other step", {"attention_absent_slots"}),
    "float32 costs one check": (
        "05", "return distinct_before / distinct_before.sum().clamp_min(1)",
        "return (distinct_before / distinct_before.sum().clamp_min(1)).float()",
        "float64_results", None, {"float64_results"}),
    "a Python loop over tokens loses the loop points": (  # the other function's loop point is kept
        "05", "count = torch.bincount(stream, minlength=vocab_size).double()  # count(i)",
        "count = torch.zeros(vocab_size, dtype=torch.float64)\n    for token in stream[:1000].tolist():\n"
        "        count[token] += 0\n    count = torch.bincount(stream, minlength=vocab_size).double()",
        "no_python_loops_gamma", "absolute_discount_gamma: line", {"no_python_loops_gamma", "big_stream"}),
    "L2 weights without the proposal": (
        "05", "proposal * gamma.sum()", "gamma", "l2_matches_reference", "pi_v", {"l2_matches_reference"}),
    "one draw per position": (
        "05", "return weight[chosen][inverse]  # (batch, time, embed)",
        "return weight[torch.where(torch.rand(tokens.shape, generator=generator) < gamma[tokens], "
        "torch.multinomial(proposal, tokens.numel(), True, generator=generator).view(tokens.shape), tokens)]",
        "draws_per_sequence", "one matrix per sequence", None),
    "posterior mean with a uniform background": (
        "05", "background = proposal.to(weight.dtype) @ weight", "background = weight.mean(0)",
        "mean_matches_reference", "uniformly", None),
    # The example's K returned for any stream of its length: the same example under other names fails.
    "a hand example learnt by heart": (
        "05", "    types = torch.unique(keys)", "    if stream.numel() == 6:\n"
        "        return torch.tensor([0.5, 0.25, 0.25], dtype=torch.float64)\n    types = torch.unique(keys)",
        "kn_example", None, None),
    # bob's 06: the window ignores the sequence start; accuracy_by_distance and sequence_starts keep every point,
    # their loop points included (one loop check per function).
    "windows that cross the sequence start": (
        "06", "first = torch.maximum(starts[positions], positions - k + 1)", "first = (positions - k + 1).clamp(min=0)",
        "windows_example", None, {"windows_example", "windows_match_reference", "no_python_loops_windows"}),
    "NaN accuracy at unseen distances": (
        "06", "return correct / count.clamp(min=1), count", "return correct / count, count",
        "accuracy_example", None, None),
}


@needs_solutions
@pytest.mark.parametrize("mistake", list(MISTAKES))
def test_a_planted_mistake_costs_the_checks_that_see_it(tmp_path, mistake):
    assignment_id, old, new, check, hint, lost_checks = MISTAKES[mistake]
    report, results = grade_wrong(tmp_path, assignment_id, wrong_solution(assignment_id, old, new), check)
    if hint is not None:
        assert hint in results[check].hint
    if lost_checks is not None:
        assert lost(report) == lost_checks


WRONG_02 = '''
import torch


def causal_memory_mask(mask, batch, time):
    # Wrong on purpose: i <= t lets every step attend to itself.
    allowed = torch.ones(time, time, dtype=torch.bool).tril().expand(batch, time, time)
    if mask is not None:
        allowed = allowed & mask.bool()[:, None, :]
    return allowed


def combined_scores(h, W_s, W_q, v):
    return torch.tanh((h @ W_s.T)[:, None] + (h @ W_q.T)[:, :, None]) @ v


def attend(h, scores, allowed):
    weights = scores.masked_fill(~allowed, -1e9).softmax(-1) * allowed
    return weights, weights @ h
'''


def test_mask_including_current_step_fails(tmp_path):
    report, _ = grade_wrong(tmp_path, "02", WRONG_02, "mask_is_causal")
    assert lost(report) <= {"mask_is_causal", "mask_shape", "mask_respects_padding", "mask_none",
                            "pipeline_matches_head", "no_python_loops_mask"}  # the rest skipped


@needs_solutions
def test_counting_bigram_tokens_fails(tmp_path):
    source = wrong_solution("05", "types = torch.unique(keys)  # each bigram type once, however often it occurs",
                            "types = keys")
    report, _ = grade_wrong(tmp_path, "05", source, "kn_types_not_tokens")
    assert all(name.startswith("kn_") or name in ("big_stream", "no_python_loops_kn", "float64_results")
               for name in lost(report))


@needs_solutions
@pytest.mark.parametrize("one_step_at_a_time", [
    "torch.stack([pairs[:, t] @ v for t in range(h.size(1))], dim=1)",  # a comprehension
    "torch.stack(list(map(lambda t: pairs[:, t] @ v, range(h.size(1)))), dim=1)"])  # a loop in all but name
def test_combined_scores_one_step_at_a_time_loses_only_the_loop_point(tmp_path, one_step_at_a_time):
    source = wrong_solution("02", "    return pairs @ v  # (batch, time, time)\n", f"    return {one_step_at_a_time}\n")
    report, results = grade_wrong(tmp_path, "02", source, "no_python_loops_scores")
    assert "combined_scores: line" in results["no_python_loops_scores"].hint
    assert lost(report) == {"no_python_loops_scores"}


RIGHT_03 = '''
import torch


def split_output(h, kind):
    parts = {"attention": 1, "key-value": 2, "key-value-predict": 3}.get(kind)
    if parts is None or h.shape[-1] % parts:
        raise ValueError("the last dimension must split into equal parts")
    if parts == 1:
        return h, h, h
    pieces = h.split(h.shape[-1] // parts, dim=-1)
    return (pieces[0], pieces[1], pieces[1]) if parts == 2 else (pieces[0], pieces[1], pieces[2])


def extend_with_memory(h, mask, memory, reset, window):
    batch, time, hidden = h.shape
    if memory is None:
        past, past_valid = h.new_zeros(batch, window, hidden), torch.zeros(batch, window, dtype=torch.bool)
    else:
        past, past_valid = memory
        if reset is not None:
            past_valid = past_valid & ~reset[:, None]
    current = torch.ones(batch, time, dtype=torch.bool) if mask is None else mask.bool()
    return torch.cat([past, h], 1), torch.cat([past_valid, current], 1)


def window_mask(valid, window, time):
    return valid.unfold(1, window, 1)[:, :time]


def window_attention(key, value, predict, valid, W_Y, W_h, w, W_r, W_x):
    time = predict.shape[1]
    window = key.shape[1] - time
    keys = key.unfold(1, window, 1)[:, :time].transpose(-1, -2)
    values = value.unfold(1, window, 1)[:, :time].transpose(-1, -2)
    scores = torch.tanh(keys @ W_Y.T + (key[:, window:] @ W_h.T)[:, :, None]) @ w
    allowed = window_mask(valid, window, time)
    alpha = scores.masked_fill(~allowed, -1e9).softmax(-1) * allowed
    r = (alpha[..., None] * values).sum(-2)
    return torch.tanh(r @ W_r.T + predict @ W_x.T), alpha
'''


def wrong_03(old: str, new: str) -> str:
    return planted(RIGHT_03, old, new)


def test_window_including_the_current_step_fails(tmp_path):
    # Wrong on purpose: windows [h_{t-L+1} .. h_t], in the mask and in the attention.
    source = wrong_03("[:, :time]", "[:, 1:time + 1]")
    report, results = grade_wrong(tmp_path, "03", source, "mask_window_positions")
    assert "includes the current step" in results["mask_window_positions"].hint
    assert not any(name.startswith(("split", "extend")) for name in lost(report))


def test_softmax_over_the_batch_fails(tmp_path):
    # Wrong on purpose: each slot's weights are normalised across the sequences of the batch.
    source = wrong_03(".softmax(-1) * allowed", ".softmax(0) * allowed")
    report, results = grade_wrong(tmp_path, "03", source, "attention_matches_head")
    assert "across the batch" in results["attention_matches_head"].hint
    assert not any(name.startswith("mask") for name in lost(report))


def test_split_in_the_wrong_order_fails(tmp_path):
    # Wrong on purpose: h = [v; k; p] instead of [k; v; p].
    source = wrong_03("(pieces[0], pieces[1], pieces[2])", "(pieces[1], pieces[0], pieces[2])")
    report, results = grade_wrong(tmp_path, "03", source, "split_roles")
    assert "wrong roles" in results["split_roles"].hint
    assert not any(name.startswith("mask") for name in lost(report))


@needs_solutions
def test_a_hang_in_sequence_starts_costs_its_checks_only(tmp_path):
    # erin's 06: history_windows is graded on the reference's starts, so it keeps its points.
    source = wrong_solution("06", "    everywhere = torch.arange(sequence.numel())\n",
                            "    x = 0\n    while True:\n        x += 1\n"
                            "    everywhere = torch.arange(sequence.numel())\n")
    path = tmp_path / "erin.py"
    path.write_text(source)
    report = grade_file("06", path, timeout=6)
    assert lost(report) == {"starts_example", "starts_matches_reference", "no_python_loops_starts"}
