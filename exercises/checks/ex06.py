"""Checks for assignment 06: ``accuracy_by_distance``, ``sequence_starts`` and ``history_windows``.

References: :func:`mlm.context.sequence_starts` and :func:`mlm.context.history_windows`; the accuracy
by distance is computed here one distance at a time, as :func:`mlm.long_range.critical_scores` groups it.
"""

from __future__ import annotations

import torch

from mlm.context import history_windows as reference_windows
from mlm.context import sequence_starts as reference_starts

from exercises.checks.common import check, expect, expect_pair, expect_tensor, generator, get_function, max_diff
from exercises.rules import no_python_loops

BANNED = {name: "that is the book's answer; compare with it in the experiment" for name in
          ("history_windows", "protocol_histories", "evaluate_with_history", "critical_scores")}


def _accuracy(module, logits, targets, distances, max_distance):
    result = expect_pair(get_function(module, "accuracy_by_distance")(logits, targets, distances, max_distance),
                         "accuracy_by_distance")
    accuracy = expect_tensor(result[0], (max_distance + 1,), "accuracy_by_distance's accuracy")
    count = expect_tensor(result[1], (max_distance + 1,), "accuracy_by_distance's count")
    return accuracy.double(), count


def _random_sequences(seed: int, lengths: list[int]):
    g = generator(seed)
    ids = torch.randperm(100, generator=g)[:len(lengths)]  # unsorted ids
    sequence = torch.cat([torch.full((n,), int(i)) for i, n in zip(ids, lengths)])
    inputs = torch.randint(1, 50, (sequence.numel(),), generator=g)
    return inputs, sequence


def _windows(module, inputs, starts, k, positions, pad_id=0):
    result = get_function(module, "history_windows")(inputs, starts, k, positions, pad_id)
    expect(isinstance(result, (tuple, list)) and len(result) == 3,
           "history_windows should return three tensors: (windows, valid, last)")
    return result


def _accuracy_reference(logits, targets, distances, max_distance):
    """Accuracy and count per distance, one distance at a time (as ``critical_scores`` groups them)."""
    hits = logits.argmax(-1) == targets
    accuracy = torch.zeros(max_distance + 1, dtype=torch.float64)
    for d in distances.unique().tolist():
        accuracy[d] = hits[distances == d].double().mean()
    return accuracy, torch.bincount(distances, minlength=max_distance + 1)


def _small_accuracy_case(seed: int):
    """A small random case beside the hand example (the hidden variant draws another): a hand example
    learnt by heart does not pass."""
    g = generator(seed)
    n, vocab = int(torch.randint(5, 12, (), generator=g)), int(torch.randint(2, 6, (), generator=g))
    max_distance = int(torch.randint(3, 9, (), generator=g))
    logits = torch.randn(n, vocab, generator=g)
    targets = torch.randint(0, vocab, (n,), generator=g)
    distances = torch.randint(0, max_distance + 1, (n,), generator=g)
    return logits, targets, distances, max_distance


@check("accuracy_by_distance: a hand example (two at d = 1, one right; one at d = 3, right) and a small random one")
def accuracy_example(module):
    logits = torch.tensor([[0.0, 2.0, 1.0], [3.0, 0.0, 1.0], [0.0, 0.0, 5.0]])  # argmax 1, 0, 2
    accuracy, count = _accuracy(module, logits, torch.tensor([1, 2, 2]), torch.tensor([1, 1, 3]), 4)
    expect(count.tolist() == [0, 2, 0, 1, 0], f"count is {count.tolist()}, expected [0, 2, 0, 1, 0]")
    expect(max_diff(accuracy, torch.tensor([0, 0.5, 0, 1.0, 0], dtype=torch.float64)) < 1e-12,
           f"accuracy is {accuracy.tolist()}, expected [0, 0.5, 0, 1, 0]: hits / count, 0 where nothing was counted")
    case = _small_accuracy_case(5)
    accuracy, count = _accuracy(module, *case)
    want_accuracy, want_count = _accuracy_reference(*case)
    expect(torch.equal(count.long(), want_count) and max_diff(accuracy, want_accuracy) < 1e-12,
           "right on the hand example but not on a small random one (a few scores, distances up to 8)")


@check("accuracy_by_distance matches a per-distance count on random scores", points=2)
def accuracy_matches_reference(module):
    g = generator(6)
    n, vocab, top = 3000, 10, 60
    logits = torch.randn(n, vocab, generator=g)
    targets = torch.randint(0, vocab, (n,), generator=g)
    distances = torch.randint(2, top + 1, (n,), generator=g)
    accuracy, count = _accuracy(module, logits, targets, distances, top + 5)
    want, want_count = _accuracy_reference(logits, targets, distances, top + 5)
    expect(bool(torch.isfinite(accuracy).all()), "some accuracies are NaN or inf: distances never seen get 0")
    expect(count.tolist() == want_count.tolist(), "the counts per distance differ")
    expect(max_diff(accuracy, want) < 1e-9, "the accuracies per distance differ from hits / count")


@check("accuracy_by_distance returns float64 accuracies and int64 counts", requires="accuracy_example")
def accuracy_dtypes(module):
    logits = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float32)
    result = get_function(module, "accuracy_by_distance")(logits, torch.tensor([0, 0]), torch.tensor([2, 2]), 3)
    accuracy, count = expect_pair(result, "accuracy_by_distance")
    expect(isinstance(accuracy, torch.Tensor) and accuracy.dtype == torch.float64,
           f"accuracy should be float64, got {getattr(accuracy, 'dtype', type(accuracy).__name__)}")
    expect(isinstance(count, torch.Tensor) and count.dtype == torch.int64,
           f"count should be int64, got {getattr(count, 'dtype', type(count).__name__)}")


def _random_lengths(seed: int, low: int, high: int) -> list[int]:
    g = generator(seed)
    return torch.randint(1, 5, (int(torch.randint(low, high, (), generator=g)),), generator=g).tolist()


@check("sequence_starts: the docstring's example, unsorted ids and a small random case")
def starts_example(module):
    got = get_function(module, "sequence_starts")(torch.tensor([0, 0, 0, 1, 1, 1, 1]))
    expect_tensor(got, (7,), "sequence_starts' result")
    expect(got.tolist() == [0, 0, 0, 3, 3, 3, 3], f"got {got.tolist()}, expected [0, 0, 0, 3, 3, 3, 3]")
    got = get_function(module, "sequence_starts")(torch.tensor([7, 7, 2, 2, 2, 9]))
    expect(got.tolist() == [0, 0, 2, 2, 2, 5],
           f"got {got.tolist()} for ids [7, 7, 2, 2, 2, 9]: a sequence starts wherever the id changes")
    _, sequence = _random_sequences(7, _random_lengths(8, 3, 7))
    got = get_function(module, "sequence_starts")(sequence)
    expect(isinstance(got, torch.Tensor) and torch.equal(got.long(), reference_starts(sequence)),
           "right on the examples but not on a small random case (a few sequences of 1 to 4 positions)")


@check("sequence_starts matches the reference on random sequences", requires="starts_example")
def starts_matches_reference(module):
    _, sequence = _random_sequences(1, [1, 5, 1, 1, 30, 2, 17])
    got = get_function(module, "sequence_starts")(sequence)
    expect(torch.equal(got.long(), reference_starts(sequence)), "differs from the reference")


def _windows_agree(module, inputs, starts, k, positions, pad_id) -> bool:
    got, want = _windows(module, inputs, starts, k, positions, pad_id), reference_windows(inputs, starts, k, positions,
                                                                                          pad_id)
    return all(isinstance(a, torch.Tensor) and a.shape == b.shape and torch.equal(a.long(), b.long())
               for a, b in zip(got, want))


@check("history_windows: the docstring's example with k = 2 and k = 3, and a small random case", points=2)
def windows_example(module):
    inputs, starts = torch.arange(10, 17), torch.tensor([0, 0, 0, 3, 3, 3, 3])
    windows, valid, last = _windows(module, inputs, starts, 2, torch.tensor([0, 2, 4, 6]), pad_id=-1)
    expect_tensor(windows, (4, 2), "windows (k = 2)")
    expect(windows.tolist() == [[10, -1], [11, 12], [13, 14], [15, 16]],
           f"windows are {windows.tolist()}, expected [[10, -1], [11, 12], [13, 14], [15, 16]]")
    expect(valid.tolist() == [[True, False], [True, True], [True, True], [True, True]], f"valid is {valid.tolist()}")
    expect(last.tolist() == [0, 1, 1, 1], f"last is {last.tolist()}, expected [0, 1, 1, 1]")
    windows, valid, last = _windows(module, inputs, starts, 3, torch.tensor([4]), pad_id=-1)
    expect(windows.tolist() == [[13, 14]],
           f"k = 3 at position 4 gave {windows.tolist()}: the window stops at its sequence's start, [[13, 14]]")
    inputs, sequence = _random_sequences(9, _random_lengths(10, 3, 6))
    g = generator(11)
    k, positions = int(torch.randint(2, 5, (), generator=g)), torch.randperm(inputs.numel(), generator=g)[:5]
    expect(_windows_agree(module, inputs, reference_starts(sequence), k, positions, -1),
           "right on the example but not on a small random case (a few short sequences, k from 2 to 4)")


@check("history_windows matches the reference for k = 1, 4 and longer than every sequence", points=2)
def windows_match_reference(module):
    inputs, sequence = _random_sequences(2, [3, 12, 1, 40, 7])
    starts = reference_starts(sequence)  # the reference's: a mistake in sequence_starts is charged there
    positions = torch.randperm(inputs.numel(), generator=generator(3))[:30]
    for k in (1, 4, 100):
        expect(_windows_agree(module, inputs, starts, k, positions, 0), f"k = {k}: differs from the reference")


# One loop check per function, each counted once that function is right (a stub has no loop either).
no_python_loops_accuracy = no_python_loops("accuracy_by_distance", name="no_python_loops_accuracy",
                                           requires=("accuracy_matches_reference",))
no_python_loops_starts = no_python_loops("sequence_starts", name="no_python_loops_starts",
                                         requires=("starts_matches_reference",))
no_python_loops_windows = no_python_loops("history_windows", name="no_python_loops_windows",
                                          requires=("windows_match_reference",))

CHECKS = [
    accuracy_example,
    accuracy_matches_reference,
    accuracy_dtypes,
    starts_example,
    starts_matches_reference,
    windows_example,
    windows_match_reference,
    no_python_loops_accuracy,
    no_python_loops_starts,
    no_python_loops_windows,
]
