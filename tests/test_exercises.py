"""The exercises: every solution passes its grader, every untouched template fails it, and a
deliberately wrong answer fails the check written to catch it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # `exercises` is not installed with `mlm`; it lives at the root

from exercises.grader import EXERCISES_DIR, REGISTRY, SOLUTIONS_DIR  # noqa: E402
IDS = sorted(REGISTRY)


def grade(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, OMP_NUM_THREADS="1")  # tiny tensors; leave the CPU to other jobs
    return subprocess.run([sys.executable, "-m", "exercises.grader", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


def test_registry_is_consistent():
    for assignment_id, assignment in REGISTRY.items():
        assert (EXERCISES_DIR / assignment.filename).is_file(), assignment_id
        names = [c.name for c in assignment.checks]
        assert len(names) == len(set(names)), f"duplicate check names in {assignment_id}"
        assert len(names) >= 8


@pytest.mark.parametrize("assignment_id", IDS)
def test_solution_passes(assignment_id):
    if not (SOLUTIONS_DIR / REGISTRY[assignment_id].filename).is_file():
        pytest.skip("solutions removed (students' copy)")
    result = grade(assignment_id, "--solution")
    assert result.returncode == 0, result.stdout + result.stderr
    n = len(REGISTRY[assignment_id].checks)
    assert f"score: {n}/{n}" in result.stdout


@pytest.mark.parametrize("assignment_id", IDS)
def test_template_fails(assignment_id):
    result = grade(assignment_id)
    assert result.returncode != 0, result.stdout
    assert "not implemented" in result.stdout
    assert "PASS" not in result.stdout, "a check passes on the untouched template"


WRONG_00 = '''
import math
import torch
from mlm.models.lstm_cell import lstm_cell_step as lstm_cell


def masked_perplexity(logits, targets, mask):
    # Wrong on purpose: averages over every position, padding included.
    log_probs = torch.log_softmax(logits.double(), dim=-1)
    nll = -log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    return math.exp(nll.mean().item())


def run_lstm(x, h0, c0, w_ih, w_hh, b_ih, b_hh):
    h, c, outputs = h0, c0, []
    for t in range(x.size(1)):
        h, c = lstm_cell(x[:, t], h, c, w_ih, w_hh, b_ih, b_hh)
        outputs.append(h)
    return torch.stack(outputs, dim=1), (h, c)
'''


def grade_wrong(tmp_path, assignment_id: str, source: str, check_text: str):
    """Grade a deliberately wrong file; return its PASS/FAIL lines and the one check expected to fail."""
    path = tmp_path / "wrong.py"
    path.write_text(textwrap.dedent(source))
    result = grade(assignment_id, "--file", str(path))
    assert result.returncode != 0, result.stdout
    lines = [line for line in result.stdout.splitlines() if line.startswith(("PASS", "FAIL"))]
    failing = [line for line in lines if check_text in line]
    assert len(failing) == 1 and failing[0].startswith("FAIL"), result.stdout
    assert "hint:" in failing[0]
    return lines, failing[0]


def test_perplexity_counting_padding_fails(tmp_path):
    lines, _ = grade_wrong(tmp_path, "00", WRONG_00, "ignores padding")
    # the LSTM parts are right, so only perplexity checks may fail
    assert all(line.startswith("PASS") for line in lines if "lstm" in line.split(" -- ")[0]), lines


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
    lines, causal = grade_wrong(tmp_path, "02", WRONG_02, "excludes the current step")
    # the diagonal is the only mistake: the other mask checks and the score/attend checks pass
    others = [line for line in lines
              if line != causal and not line.split(maxsplit=1)[1].startswith("pipeline")]
    assert len(others) == len(REGISTRY["02"].checks) - 2
    assert all(line.startswith("PASS") for line in others), lines


WRONG_04 = '''
import torch


def memory_window(tokens, mask, size):
    batch, time = tokens.shape
    real = torch.ones_like(tokens, dtype=torch.bool) if mask is None else mask.bool()
    ids = torch.cat([tokens.new_zeros(batch, size - 1), tokens], dim=1)
    present = torch.cat([real.new_zeros(batch, size - 1), real], dim=1)
    return ids.unfold(1, size, 1), present.unfold(1, size, 1)


def temporal_rows(time, size):
    # Wrong on purpose (for the paper): the official code's alignment, newest word on the last row.
    return torch.arange(size).expand(time, size).clone()


def gated_composition(s, h, W_z, U_z, b_z, W_r, U_r, b_r, W, U, b):
    z = torch.sigmoid(s @ W_z.T + b_z + h @ U_z.T)
    r = torch.sigmoid(s @ W_r.T + b_r + h @ U_r.T)
    return (1 - z) * h + z * torch.tanh(s @ W.T + b + (r * h) @ U.T)
'''


def test_code_alignment_of_the_temporal_rows_fails(tmp_path):
    lines, rows = grade_wrong(tmp_path, "04", WRONG_04, "T[1:m], oldest first")
    assert "official code" in rows
    others = [line for line in lines if line != rows and not line.split(maxsplit=1)[1].startswith("pipeline")]
    assert len(others) == len(REGISTRY["04"].checks) - 2
    assert all(line.startswith("PASS") for line in others), lines


WRONG_05 = '''
import torch


def kneser_ney_proposal(stream, vocab_size):
    # Wrong on purpose: counts bigram tokens, i.e. every occurrence after the first, which is the unigram law.
    left = torch.bincount(stream[1:].long(), minlength=vocab_size).double()
    return left / left.sum()


def absolute_discount_gamma(stream, vocab_size, gamma):
    stream = stream.long()
    count = torch.bincount(stream, minlength=vocab_size).double()
    types = torch.unique(stream[:-1] * vocab_size + stream[1:])
    after = torch.bincount(types // vocab_size, minlength=vocab_size).double()
    return torch.where(count > 0, gamma * after / count.clamp_min(1), torch.zeros_like(count))
'''


def test_counting_bigram_tokens_fails(tmp_path):
    lines, types = grade_wrong(tmp_path, "05", WRONG_05, "counts bigram types")
    assert all(line.startswith("PASS") for line in lines if "absolute_discount_gamma" in line.split(" -- ")[0]), lines


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
    assert old in RIGHT_03
    return RIGHT_03.replace(old, new)


def test_window_including_the_current_step_fails(tmp_path):
    # Wrong on purpose: windows [h_{t-L+1} .. h_t], in the mask and in the attention.
    source = wrong_03("[:, :time]", "[:, 1:time + 1]")
    lines, positions = grade_wrong(tmp_path, "03", source, "never h_t")
    assert "includes the current step" in positions
    assert all(line.startswith("PASS") for line in lines if " split_output" in line or " extend_with" in line), lines


def test_softmax_over_the_batch_fails(tmp_path):
    # Wrong on purpose: each slot's weights are normalised across the sequences of the batch.
    source = wrong_03(".softmax(-1) * allowed", ".softmax(0) * allowed")
    lines, head = grade_wrong(tmp_path, "03", source, "matches WindowAttentionHead")
    assert "across the batch" in head
    assert all(line.startswith("PASS") for line in lines if "window_mask" in line.split(" -- ")[0]), lines


def test_split_in_the_wrong_order_fails(tmp_path):
    # Wrong on purpose: h = [v; k; p] instead of [k; v; p].
    source = wrong_03("(pieces[0], pieces[1], pieces[2])", "(pieces[1], pieces[0], pieces[2])")
    lines, roles = grade_wrong(tmp_path, "03", source, "paper's order")
    assert "wrong roles" in roles
    assert all(line.startswith("PASS") for line in lines if "window_mask" in line.split(" -- ")[0]), lines
