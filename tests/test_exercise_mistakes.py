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


@needs_solutions
def test_dropping_the_recurrent_state_fails(tmp_path):
    source = wrong_solution("01", "h, c = cell(inputs[:, t], h, c, *params)",
                            "h, c = cell(inputs[:, t], drop(h), c, *params)")
    report, results = grade_wrong(tmp_path, "01", source, "forward_drop_calls")
    assert "never on h or c" in results["forward_drop_calls"].hint
    assert lost(report) == {"forward_drop_calls", "forward_vertical_only"}


@needs_solutions
def test_loss_divided_by_tokens_for_sequence_sum_fails(tmp_path):
    source = wrong_solution("01", "return nll / batch if reduction", "return nll / (batch * time) if reduction")
    report, results = grade_wrong(tmp_path, "01", source, "loss_sequence_sum")
    assert "per-token mean" in results["loss_sequence_sum"].hint
    assert lost(report) == {"loss_sequence_sum"}


@needs_solutions
def test_copying_the_weights_is_not_tying(tmp_path):
    source = wrong_solution("01", "decoder.weight = embedding.weight",
                            "decoder.weight.data.copy_(embedding.weight.data)")
    report, _ = grade_wrong(tmp_path, "01", source, "tie_shares_parameter")
    assert lost(report) == {"tie_shares_parameter", "tie_shape_error"}


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
def test_code_alignment_of_the_temporal_rows_fails(tmp_path):
    source = wrong_solution("04", "return (slots - (size - words)).clamp(min=0)  # (time, size)",
                            "return slots.expand(time, size).clone()")
    report, results = grade_wrong(tmp_path, "04", source, "rows_sentence_start")
    assert "official code" in results["rows_sentence_start"].hint
    assert lost(report) == {"rows_sentence_start", "pipeline_matches_block"}


@needs_solutions
def test_attention_without_the_temporal_matrix_fails(tmp_path):
    source = wrong_solution("04", "keys = M[ids] + T[rows]", "keys = M[ids]")
    report, results = grade_wrong(tmp_path, "04", source, "attention_matches_block")
    assert "temporal matrix" in results["attention_matches_block"].hint
    assert lost(report) == {"attention_matches_block", "pipeline_matches_block"}


@needs_solutions
def test_attention_reading_the_input_memory_as_values_fails(tmp_path):
    source = wrong_solution("04", "values = C[ids]", "values = M[ids]")
    report, results = grade_wrong(tmp_path, "04", source, "attention_matches_block")
    assert "output memory C" in results["attention_matches_block"].hint


@needs_solutions
def test_silencing_every_padded_step_fails(tmp_path):
    """A padded step's window still holds the row's last real words; zeroing its attention is wrong."""
    source = wrong_solution("04", "    s = (p[..., None] * values).sum(-2)",
                            "    p = p * present[..., -1:]  # the current slot absent: a padded step\n"
                            "    s = (p[..., None] * values).sum(-2)")
    report, results = grade_wrong(tmp_path, "04", source, "attention_absent_slots")
    assert "like any other step" in results["attention_absent_slots"].hint
    assert lost(report) == {"attention_absent_slots"}


@needs_solutions
def test_counting_bigram_tokens_fails(tmp_path):
    source = wrong_solution("05", "types = torch.unique(keys)  # each bigram type once, however often it occurs",
                            "types = keys")
    report, _ = grade_wrong(tmp_path, "05", source, "kn_types_not_tokens")
    assert all(name.startswith("kn_") or name in ("big_stream", "no_python_loops_kn", "float64_results")
               for name in lost(report))


@needs_solutions
def test_float32_costs_one_check(tmp_path):
    source = wrong_solution("05", "return distinct_before / distinct_before.sum().clamp_min(1)",
                            "return (distinct_before / distinct_before.sum().clamp_min(1)).float()")
    report, _ = grade_wrong(tmp_path, "05", source, "float64_results")
    assert lost(report) == {"float64_results"}


@needs_solutions
def test_a_python_loop_over_tokens_loses_the_loop_points(tmp_path):
    source = wrong_solution("05", "count = torch.bincount(stream, minlength=vocab_size).double()  # count(i)",
                            "count = torch.zeros(vocab_size, dtype=torch.float64)\n"
                            "    for token in stream[:1000].tolist():\n"
                            "        count[token] += 0\n"
                            "    count = torch.bincount(stream, minlength=vocab_size).double()")
    report, results = grade_wrong(tmp_path, "05", source, "no_python_loops_gamma")
    assert "absolute_discount_gamma: line" in results["no_python_loops_gamma"].hint
    assert lost(report) == {"no_python_loops_gamma", "big_stream"}  # the other function's loop point is kept


@needs_solutions
@pytest.mark.parametrize("one_step_at_a_time", [
    "torch.stack([pairs[:, t] @ v for t in range(h.size(1))], dim=1)",  # a comprehension
    "torch.stack(list(map(lambda t: pairs[:, t] @ v, range(h.size(1)))), dim=1)"])  # a loop in all but name
def test_combined_scores_one_step_at_a_time_loses_only_the_loop_point(tmp_path, one_step_at_a_time):
    source = wrong_solution("02", "    return pairs @ v  # (batch, time, time)\n", f"    return {one_step_at_a_time}\n")
    report, results = grade_wrong(tmp_path, "02", source, "no_python_loops_scores")
    assert "combined_scores: line" in results["no_python_loops_scores"].hint
    assert lost(report) == {"no_python_loops_scores"}


@needs_solutions
def test_l2_weights_without_the_proposal_fails(tmp_path):
    source = wrong_solution("05", "proposal * gamma.sum()", "gamma")
    report, results = grade_wrong(tmp_path, "05", source, "l2_matches_reference")
    assert "pi_v" in results["l2_matches_reference"].hint
    assert lost(report) == {"l2_matches_reference"}


@needs_solutions
def test_one_draw_per_position_fails(tmp_path):
    source = wrong_solution("05", "return weight[chosen][inverse]  # (batch, time, embed)",
                            "return weight[torch.where(torch.rand(tokens.shape, generator=generator) < gamma[tokens], "
                            "torch.multinomial(proposal, tokens.numel(), True, generator=generator)"
                            ".view(tokens.shape), tokens)]")
    report, results = grade_wrong(tmp_path, "05", source, "draws_per_sequence")
    assert "one matrix per sequence" in results["draws_per_sequence"].hint


@needs_solutions
def test_posterior_mean_with_a_uniform_background_fails(tmp_path):
    source = wrong_solution("05", "background = proposal.to(weight.dtype) @ weight", "background = weight.mean(0)")
    report, results = grade_wrong(tmp_path, "05", source, "mean_matches_reference")
    assert "uniformly" in results["mean_matches_reference"].hint
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
def test_windows_that_cross_the_sequence_start_fail(tmp_path):
    source = wrong_solution("06", "first = torch.maximum(starts[positions], positions - k + 1)",
                            "first = (positions - k + 1).clamp(min=0)")
    grade_wrong(tmp_path, "06", source, "windows_example")


@needs_solutions
def test_nan_accuracy_at_unseen_distances_fails(tmp_path):
    source = wrong_solution("06", "return correct / count.clamp(min=1), count", "return correct / count, count")
    grade_wrong(tmp_path, "06", source, "accuracy_example")


@needs_solutions
def test_a_window_bug_costs_the_window_checks_only(tmp_path):
    # bob's 06: the window ignores the sequence start; accuracy_by_distance and sequence_starts keep every point,
    # their loop points included (one loop check per function).
    source = wrong_solution("06", "first = torch.maximum(starts[positions], positions - k + 1)",
                            "first = (positions - k + 1).clamp(min=0)")
    report, _ = grade_wrong(tmp_path, "06", source, "windows_example")
    assert lost(report) == {"windows_example", "windows_match_reference", "no_python_loops_windows"}


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


@needs_solutions
def test_a_hand_example_learnt_by_heart_fails(tmp_path):
    # The example's K returned for any stream of its length: the same example under other names fails.
    source = wrong_solution("05", "    types = torch.unique(keys)", "    if stream.numel() == 6:\n"
                            "        return torch.tensor([0.5, 0.25, 0.25], dtype=torch.float64)\n"
                            "    types = torch.unique(keys)")
    grade_wrong(tmp_path, "05", source, "kn_example")
