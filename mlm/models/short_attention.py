"""The memory heads of Daniluk, Rocktäschel, Welbl & Riedel (2017), *Frustratingly Short Attention
Spans in Neural Language Modeling*.

Every head reads a sliding window of the previous L top-layer LSTM outputs
Y_t = [h_{t-L} .. h_{t-1}] (the current output h_t is *not* in its own window)::

    attention          M_t = tanh(W^Y Y_t + (W^h h_t) 1^T)                 (Eq. 1)
                       a_t = softmax(w^T M_t)                               (Eq. 2)
                       r_t = Y_t a_t^T                                      (Eq. 3)
                       h*_t = tanh(W^r r_t + W^x h_t)                       (Eq. 4)
    key-value          h_t = [k_t; v_t]: keys score (Eq. 7-8), values are read (Eq. 9),
                       h*_t = tanh(W^r r_t + W^x v_t)                       (Eq. 6-10)
    key-value-predict  h_t = [k_t; v_t; p_t]: as key-value, but
                       h*_t = tanh(W^r r_t + W^x p_t)                       (Eq. 11-12)
    N-gram RNN         h_t = [h^1_t; ..; h^{N-1}_t],
                       h*_t = tanh(W^N [h^1_t; h^2_{t-1}; ..; h^{N-1}_{t-N+2}])  (Eq. 13)

and the softmax reads h*_t (Eq. 5). Projections have no bias, as in the equations.

**All time steps at once.** The window of every step is a slice of one sequence: the last L
outputs carried from the previous segment followed by this segment's T outputs, (batch, L+T, k).
Slot j of all T windows is the shifted slice rows j .. j+T-1, so scores and contexts take one
batched operation per slot: a loop over the L slots, never over time. (An ``unfold`` view of all
(batch, T, L, k) windows computes the same numbers; on a CPU it trains 1.8x slower, because the
strided view must be copied and its backward scatters.)

**Carried memory (document protocol).** Truncated BPTT cuts a document into segments of 20 steps,
but the window must see across the cut: the head returns the last L outputs and their validity as
its ``memory``; the training loop detaches it and hands it back with the next segment. Where a
row starts a new document (``reset``), the carried slots are marked invalid.

**Slots that do not exist yet.** At a document start the window holds fewer than L outputs. The
paper does not say what happens; we *mask* the missing slots (the softmax runs over the slots that
exist, and the first word of a document gets a zero context r_t = 0). The N-gram RNN uses zero
vectors for parts from before the document start.
"""

from __future__ import annotations

import torch
from torch import nn

from mlm.models.attentive import masked_softmax
from mlm.models.heads import HeadOutput, MemoryHead

WINDOW_KINDS = {"attention": 1, "key-value": 2, "key-value-predict": 3}  # kind -> parts of h_t


def extend_with_memory(h: torch.Tensor, mask: torch.Tensor | None, memory, reset: torch.Tensor | None,
                       slots: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The carried ``slots`` previous outputs followed by this segment's, and their validity.

    Returns ``seq`` (batch, slots + time, hidden) and ``valid`` (batch, slots + time) bool. Carried
    slots are invalid when there is no memory yet, when they were invalid before, or when the row
    starts a new document (``reset``); this segment's positions are valid where ``mask`` is True.
    """
    batch, time, hidden = h.shape
    if memory is None:
        past = h.new_zeros(batch, slots, hidden)
        past_valid = torch.zeros(batch, slots, dtype=torch.bool, device=h.device)
    else:
        past, past_valid = memory
        if past.shape != (batch, slots, hidden):
            raise ValueError(f"carried memory has shape {tuple(past.shape)}, expected {(batch, slots, hidden)}: "
                             "was it produced by a head with another window size or batch size?")
        if reset is not None:
            past_valid = past_valid & ~reset[:, None]
    current_valid = (torch.ones(batch, time, dtype=torch.bool, device=h.device) if mask is None
                     else mask.to(torch.bool))
    return torch.cat([past.to(h.dtype), h], dim=1), torch.cat([past_valid, current_valid], dim=1)


def window_mask(valid: torch.Tensor, window: int, time: int) -> torch.Tensor:
    """(batch, time, window) validity of slot j (oldest first) in step t's window.

    ``valid`` covers the carried ``window`` slots and then the segment's ``time`` steps, so the
    window of step t is positions t .. t + window - 1 of it: outputs h_{t-L} .. h_{t-1}.
    """
    return valid.unfold(1, window, 1)[:, :time]  # (batch, time, window)


class WindowAttentionHead(MemoryHead):
    """Attention, key-value or key-value-predict attention over the previous L outputs (Eq. 1-12).

    The LSTM's hidden size must split evenly into the ``kind``'s parts (1, 2 or 3); each part and
    the head's output have size ``hidden_size // parts`` (the paper's k).

    ``eval_window`` (None: all L slots) keeps only the most recent slots when set: a probe of how
    much of the window a trained model needs, without retraining.
    """

    def __init__(self, hidden_size: int, kind: str = "attention", window: int = 5):
        super().__init__()
        if kind not in WINDOW_KINDS:
            raise ValueError(f"kind must be one of {', '.join(WINDOW_KINDS)}, got {kind!r}")
        parts = WINDOW_KINDS[kind]
        if hidden_size % parts:
            raise ValueError(f"the {kind} head splits the LSTM output into {parts} equal parts, so the hidden "
                             f"size must be a multiple of {parts} (got {hidden_size})")
        if window < 1:
            raise ValueError(f"window must be at least 1, got {window}")
        self.kind, self.window, self.parts = kind, window, parts
        self.eval_window: int | None = None
        k = self.part_size = self.output_size = hidden_size // parts
        self.W_Y = nn.Linear(k, k, bias=False)  # Eq. 1 / 7: projects the keys in the window
        self.W_h = nn.Linear(k, k, bias=False)  # Eq. 1 / 7: projects the current key
        self.w = nn.Linear(k, 1, bias=False)  # Eq. 2 / 8
        self.W_r = nn.Linear(k, k, bias=False)  # Eq. 4 / 10 / 12: the context
        self.W_x = nn.Linear(k, k, bias=False)  # Eq. 4 / 10 / 12: the current output (h_t, v_t or p_t)

    def split(self, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(key, value, predict) parts of h (Eq. 6 and 11); one vector plays all three roles in plain attention."""
        if self.parts == 1:
            return h, h, h
        if self.parts == 2:
            key, value = h.split(self.part_size, dim=-1)
            return key, value, value
        key, value, predict = h.split(self.part_size, dim=-1)
        return key, value, predict

    def active_slots(self, allowed: torch.Tensor) -> torch.Tensor:
        """Drop the oldest slots when ``eval_window`` restricts the window."""
        if self.eval_window is None or self.eval_window >= self.window:
            return allowed
        keep = torch.zeros(self.window, dtype=torch.bool, device=allowed.device)
        keep[self.window - max(self.eval_window, 0):] = True  # the most recent slots
        return allowed & keep

    def forward(self, h, *, tokens=None, mask=None, memory=None, reset=None) -> HeadOutput:
        batch, time, _ = h.shape
        L = self.window
        seq, valid = extend_with_memory(h, mask, memory, reset, L)  # (batch, L+time, hidden), (batch, L+time)
        key, value, _ = self.split(seq)  # each (batch, L+time, k)
        query, _, predict = self.split(h)  # (batch, time, k)
        keys = self.W_Y(key)  # (batch, L+time, k): W^Y once per position, reused by L windows
        queries = self.W_h(query)  # (batch, time, k)
        w = self.w.weight[0]  # (k,)
        # Slot j (oldest first) of every step's window is one shifted slice of the sequence: rows
        # j .. j+time-1 hold h_{t-L+j} for t = 0 .. time-1. A loop over the L slots (never over time)
        # computes Eq. 1-2 for all steps at once.
        scores = torch.stack([torch.tanh(keys[:, j:j + time] + queries) @ w for j in range(L)], dim=-1)  # (batch, time, L)
        allowed = self.active_slots(window_mask(valid, L, time))  # (batch, time, L)
        alpha = masked_softmax(scores, allowed)  # (batch, time, L), Eq. 2; zeros where no slot exists
        r = sum(alpha[:, :, j, None] * value[:, j:j + time] for j in range(L))  # (batch, time, k), Eq. 3 / 9
        out = torch.tanh(self.W_r(r) + self.W_x(predict))  # (batch, time, k), Eq. 4 / 10 / 12
        new_memory = (seq[:, -L:], valid[:, -L:])  # the last L outputs, for the next segment
        return HeadOutput(out, attention=alpha, memory=new_memory)

    def reference(self) -> "ReferenceWindowAttentionHead":
        """The slow step-by-step version sharing these parameters (tests and benchmarks)."""
        return ReferenceWindowAttentionHead(self)


class NgramHead(MemoryHead):
    """The N-gram RNN (Eq. 13): part j of the output from j-1 steps back, concatenated.

    The LSTM output splits into N-1 parts of size ``hidden_size // (N-1)`` (the paper's k);
    the prediction at step t reads part 1 of h_t, part 2 of h_{t-1}, ..., part N-1 of
    h_{t-N+2}. The extracted equation writes the last index as t-N+1; the paper's prose (part j
    predicts the j-th word ahead, N-1 output vectors in all) fixes it at t-N+2.
    """

    def __init__(self, hidden_size: int, n: int = 4):
        super().__init__()
        if n < 2:
            raise ValueError(f"an N-gram RNN needs N >= 2, got {n}")
        parts = n - 1
        if hidden_size % parts:
            raise ValueError(f"the {n}-gram RNN splits the LSTM output into {parts} equal parts, so the hidden "
                             f"size must be a multiple of {parts} (got {hidden_size})")
        self.n, self.parts = n, parts
        k = self.part_size = self.output_size = hidden_size // parts
        self.W_N = nn.Linear(parts * k, k, bias=False)  # Eq. 13

    def forward(self, h, *, tokens=None, mask=None, memory=None, reset=None) -> HeadOutput:
        batch, time, _ = h.shape
        back = self.parts - 1  # previous outputs needed: N-2
        seq, valid = extend_with_memory(h, mask, memory, reset, back)  # (batch, back+time, hidden)
        seq = seq * valid.unsqueeze(-1).to(seq.dtype)  # missing steps contribute zero vectors
        k = self.part_size
        # part j (0-based) of the output j steps back: rows back-j .. back-j+time-1 of seq
        pieces = [seq[:, back - j: back - j + time, j * k:(j + 1) * k] for j in range(self.parts)]
        out = torch.tanh(self.W_N(torch.cat(pieces, dim=-1)))  # (batch, time, k), Eq. 13
        new_memory = (seq[:, seq.size(1) - back:], valid[:, valid.size(1) - back:])
        return HeadOutput(out, memory=new_memory)

    def reference(self) -> "ReferenceNgramHead":
        return ReferenceNgramHead(self)


# -- slow references: one row, one step at a time, with an explicit list as the window -------
def _reference_history(h, mask, memory, reset, slots, b):
    """Row b's carried (vector, valid) pairs as a Python list, oldest first."""
    if memory is None:
        return [(h.new_zeros(h.size(-1)), False) for _ in range(slots)]
    past, past_valid = memory
    restart = reset is not None and bool(reset[b])
    return [(past[b, j], bool(past_valid[b, j]) and not restart) for j in range(slots)]


def _reference_memory(histories, h, slots):
    batch = len(histories)
    if slots == 0:
        return h.new_zeros(batch, 0, h.size(-1)), torch.zeros(batch, 0, dtype=torch.bool, device=h.device)
    vectors = torch.stack([torch.stack([v for v, _ in hist[-slots:]]) for hist in histories])
    valid = torch.tensor([[ok for _, ok in hist[-slots:]] for hist in histories], dtype=torch.bool, device=h.device)
    return vectors, valid


class ReferenceWindowAttentionHead(nn.Module):
    """:class:`WindowAttentionHead` computed step by step (slow; tests and the chapter only)."""

    def __init__(self, head: WindowAttentionHead):
        super().__init__()
        self.head = head
        self.output_size = head.output_size

    def forward(self, h, *, tokens=None, mask=None, memory=None, reset=None) -> HeadOutput:
        head, L = self.head, self.head.window
        batch, time, _ = h.shape
        keep = L if head.eval_window is None else min(L, head.eval_window)
        outputs, weights, histories = [], [], []
        for b in range(batch):
            history = _reference_history(h, mask, memory, reset, L, b)
            outs, rows = [], []
            for t in range(time):
                query, _, predict = head.split(h[b, t])
                window = history[-L:]  # [h_{t-L} .. h_{t-1}], oldest first
                usable = [j for j, (_, ok) in enumerate(window) if ok and j >= L - keep]
                alpha = h.new_zeros(L)
                r = h.new_zeros(head.part_size)
                if usable:
                    keys = torch.stack([head.split(window[j][0])[0] for j in usable])  # (slots, k)
                    values = torch.stack([head.split(window[j][0])[1] for j in usable])
                    M = torch.tanh(head.W_Y(keys) + head.W_h(query))  # Eq. 1
                    a = torch.softmax(head.w(M).squeeze(-1), dim=0)  # Eq. 2
                    r = a @ values  # Eq. 3
                    alpha = alpha.index_put((torch.tensor(usable, device=h.device),), a)
                outs.append(torch.tanh(head.W_r(r) + head.W_x(predict)))  # Eq. 4
                rows.append(alpha)
                history.append((h[b, t], mask is None or bool(mask[b, t])))
            outputs.append(torch.stack(outs))
            weights.append(torch.stack(rows))
            histories.append(history)
        memory_out = _reference_memory(histories, h, L)
        return HeadOutput(torch.stack(outputs), attention=torch.stack(weights), memory=memory_out)


class ReferenceNgramHead(nn.Module):
    """:class:`NgramHead` computed step by step (slow; tests only)."""

    def __init__(self, head: NgramHead):
        super().__init__()
        self.head = head
        self.output_size = head.output_size

    def forward(self, h, *, tokens=None, mask=None, memory=None, reset=None) -> HeadOutput:
        head = self.head
        k, back = head.part_size, head.parts - 1
        batch, time, _ = h.shape
        outputs, histories = [], []
        for b in range(batch):
            history = _reference_history(h, mask, memory, reset, back, b)
            outs = []
            for t in range(time):
                history.append((h[b, t], mask is None or bool(mask[b, t])))
                pieces = []
                for j in range(head.parts):  # part j+1 of the output j steps back
                    vector, ok = history[-1 - j]
                    pieces.append(vector[j * k:(j + 1) * k] if ok else h.new_zeros(k))
                outs.append(torch.tanh(head.W_N(torch.cat(pieces))))  # Eq. 13
            outputs.append(torch.stack(outs))
            histories.append(history)
        return HeadOutput(torch.stack(outputs), memory=_reference_memory(histories, h, back))
