"""The Recurrent Memory Network of Tran, Bisazza & Monz (2016), *Recurrent Memory Networks
for Language Modeling* (NAACL). Equation numbers below are the paper's.

The **Memory Block** (section 3.1) is a one-hop end-to-end memory network over the n most
recent *input words* x_{t-n+1} .. x_t, including the current one. Two tables of size
|V| x d look the words up: M (input memory, the "keys") and C (output memory, the "values")::

    p_t  = softmax((M_i + T) h_t)              attention over the n words   (Eq. 1-2)
    s_t  = C_i^T p_t                           context                      (Eq. 3)
    z_t  = sigm(W_sz s_t + U_hz h_t)           update gate                  (Eq. 4)
    r_t  = sigm(W_sr s_t + U_hr h_t)           reset gate                   (Eq. 5)
    h~_t = tanh(W s_t + U (r_t * h_t))                                      (Eq. 6)
    hm_t = (1 - z_t) * h_t + z_t * h~_t        the block's output           (Eq. 7)

T (n x d) is the optional temporal matrix ("+tM"): one learned vector per memory position.
``composition="linear"`` replaces Eq. 4-7 by the plain sum s_t + h_t that section 3.1 names
as the alternative; ``"linear-code"`` is the official code's W h_t + s_t (a linear map of h,
like the H matrix of Sukhbaatar et al.'s memory networks).

**RM** puts the block on top of the LSTM (LSTM -> block -> softmax); **RMR** adds one more
LSTM on top of the block (LSTM -> block -> LSTM -> softmax), which is part of the head here.

Memory slots. Slot j = 0 .. n-1 of step t holds word x_{t-(n-1)+j}: the newest word (the
current input) is always in the last slot, n-1, and the attention returned for analysis is
(batch, time, n) in that layout. At a sentence start (t < n) the memory holds only t words;
the missing slots are masked (weight 0), never padded. Which row of T a word gets:

* ``alignment="paper"`` (section 4.2): with m words in memory the slice T[1:m] is used, oldest
  word first, so the current word gets row m (the last row only once the memory is full);
* ``alignment="code"`` (ketranm/RMN): the newest word always gets the last row, n, and a
  second temporal table T_C is added on the value side as well: s_t = sum_i p_i (C_i + T_C,i).

Everything is computed for all time steps at once: every position's memory embeddings are looked
up once, the n scores of every step are a band of one matrix product, and the missing and padded
slots are one boolean mask. :meth:`RecurrentMemoryHead.reference`
is the slow step-by-step version the tests compare against.
"""

from __future__ import annotations

from collections import deque

import torch
from torch import nn

from mlm.models.attentive import masked_softmax
from mlm.models.heads import HeadOutput, MemoryHead

COMPOSITIONS = ("gating", "linear", "linear-code")
ALIGNMENTS = ("paper", "code")


def memory_window(tokens: torch.Tensor, mask: torch.Tensor | None, size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The word ids in memory at every step, and which slots hold a real word.

    Returns ``(ids, present)``, both (batch, time, size): ``ids[b, t, j]`` is the input id at
    position t - (size-1) + j (0 where that position is before the start), ``present`` is
    True where that position exists and is not padding. The last slot is the current word.
    """
    batch, time = tokens.shape
    real = torch.ones_like(tokens, dtype=torch.bool) if mask is None else mask.bool()
    ids = torch.cat([tokens.new_zeros(batch, size - 1), tokens], dim=1)  # (batch, size-1 + time)
    present = torch.cat([real.new_zeros(batch, size - 1), real], dim=1)
    return ids.unfold(1, size, 1), present.unfold(1, size, 1)  # (batch, time, size) each


def temporal_rows(time: int, size: int, alignment: str, device=None) -> torch.Tensor:
    """(time, size) row of T used by slot j at step t (0-based; rows of missing slots are clamped to 0).

    "paper": with m = min(t+1, size) words in memory, the oldest present word gets row 0 and
    the current word row m-1 (the slice T[1:m] of section 4.2). "code": slot j always gets row j.
    """
    slots = torch.arange(size, device=device)[None, :]  # (1, size)
    if alignment == "code":
        return slots.expand(time, size)
    words = torch.arange(time, device=device).add(1).clamp(max=size)[:, None]  # (time, 1): m
    return (slots - (size - words)).clamp(min=0)  # (time, size)


class MemoryBlock(nn.Module):
    """Attention over the last ``memory_size`` input words and the composition with h_t (Eq. 1-7)."""

    def __init__(self, vocab_size: int, hidden_size: int, memory_size: int = 15, temporal: bool = True,
                 composition: str = "gating", alignment: str = "paper"):
        super().__init__()
        if composition not in COMPOSITIONS:
            raise ValueError(f"composition must be one of {', '.join(COMPOSITIONS)}, got {composition!r}")
        if alignment not in ALIGNMENTS:
            raise ValueError(f"alignment must be one of {', '.join(ALIGNMENTS)}, got {alignment!r}")
        if memory_size < 1:
            raise ValueError(f"memory_size must be at least 1, got {memory_size}")
        self.memory_size, self.temporal = memory_size, temporal
        self.composition, self.alignment = composition, alignment
        d = hidden_size  # the memory embeddings are compared with h_t, so they have its size
        self.M = nn.Embedding(vocab_size, d)  # input memory (Eq. 1-2)
        self.C = nn.Embedding(vocab_size, d)  # output memory (Eq. 3)
        self.T = nn.Parameter(torch.zeros(memory_size, d)) if temporal else None  # Eq. 2
        self.T_C = nn.Parameter(torch.zeros(memory_size, d)) if temporal and alignment == "code" else None
        if composition == "gating":
            # Each gate reads s_t through a W (with a bias, as the official code and the GRU of
            # Cho et al.; the paper's Eq. 4-6 leave biases out) and h_t through a U.
            self.W_z, self.U_z = nn.Linear(d, d), nn.Linear(d, d, bias=False)  # Eq. 4
            self.W_r, self.U_r = nn.Linear(d, d), nn.Linear(d, d, bias=False)  # Eq. 5
            self.W_h, self.U_h = nn.Linear(d, d), nn.Linear(d, d, bias=False)  # Eq. 6
        elif composition == "linear-code":
            self.W_lin = nn.Linear(d, d)  # hm = W h + s (official code)
        self.output_size = d

    def compose(self, s: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        """g(s_t, h_t): the gating unit (Eq. 4-7) or a linear composition; any leading shape."""
        if self.composition == "linear":
            return s + h
        if self.composition == "linear-code":
            return self.W_lin(h) + s
        z = torch.sigmoid(self.W_z(s) + self.U_z(h))  # Eq. 4
        r = torch.sigmoid(self.W_r(s) + self.U_r(h))  # Eq. 5
        h_tilde = torch.tanh(self.W_h(s) + self.U_h(r * h))  # Eq. 6
        return (1 - z) * h + z * h_tilde  # Eq. 7

    def forward(self, h: torch.Tensor, tokens: torch.Tensor, mask: torch.Tensor | None = None):
        """(output, attention): hm_t (batch, time, d) and p_t (batch, time, memory_size)."""
        batch, time, _ = h.shape
        n = self.memory_size
        _, present = memory_window(tokens, mask, n)  # (batch, time, n): which slots hold a real word
        # Each position's M_i and C_i are looked up once. Slot j of step t holds position t - (n-1) + j,
        # which is row t + j of the sequence padded with n - 1 leading positions: the n scores of step t
        # are a band of the (time, n-1 + time) matrix of all products h_t M_i, one matrix product and
        # one gather for all steps (the extra products outside the band cost less than n small ones).
        padded = torch.cat([tokens.new_zeros(batch, n - 1), tokens], dim=1)  # (batch, n-1 + time)
        keys, values = self.M(padded), self.C(padded)  # (batch, n-1 + time, d) each
        band = (torch.arange(time, device=h.device)[:, None] + torch.arange(n, device=h.device)).expand(batch, time, n)
        scores = (h @ keys.transpose(1, 2)).gather(2, band)  # (batch, time, n): M_i h_t
        if self.T is not None:
            rows = temporal_rows(time, n, self.alignment, h.device)  # (time, n): the row of T each slot uses
            scores = scores + (h @ self.T.t()).gather(2, rows.expand(batch, time, n))  # + T h_t (Eq. 2)
        p = masked_softmax(scores, present)  # (batch, time, n), Eq. 1-2; missing slots get 0
        weights = p.new_zeros(batch, time, n - 1 + time).scatter(2, band, p)  # p_t on the positions its slots hold
        s = weights @ values  # (batch, time, d): C^T p_t, Eq. 3
        if self.T_C is not None:  # + sum_i p_i T_C,i: the weights gathered onto the rows of T_C they use
            s = s + torch.einsum("btj,tjr->btr", p, nn.functional.one_hot(rows, n).to(p.dtype)) @ self.T_C
        return self.compose(s, h), p


class RecurrentMemoryHead(MemoryHead):
    """RM (``recurrent_top=False``) or RMR (``True``): the Memory Block, optionally with an LSTM on top."""

    def __init__(self, vocab_size: int, hidden_size: int, memory_size: int = 15, temporal: bool = True,
                 composition: str = "gating", alignment: str = "paper", recurrent_top: bool = False):
        super().__init__()
        self.block = MemoryBlock(vocab_size, hidden_size, memory_size, temporal, composition, alignment)
        self.top = nn.LSTM(hidden_size, hidden_size, batch_first=True) if recurrent_top else None  # RMR
        self.output_size = hidden_size

    def set_forget_bias(self, value: float) -> None:
        """Set the top LSTM's forget-gate bias (RMR), like the bottom LSTM's (section 4.2)."""
        if self.top is None:
            return
        h = self.top.hidden_size
        with torch.no_grad():
            self.top.bias_ih_l0[h:2 * h].fill_(value)
            self.top.bias_hh_l0[h:2 * h].zero_()

    def forward(self, h, *, tokens=None, mask=None, memory=None, reset=None) -> HeadOutput:
        if tokens is None:
            raise ValueError("the Recurrent Memory head needs the input ids: call it with tokens=")
        out, p = self.block(h, tokens, mask)  # (batch, time, d), (batch, time, n)
        if self.top is not None:
            # The top LSTM starts from zeros in every sentence; padding sits at the end of a row,
            # so it never reaches a real position.
            out, _ = self.top(out)  # (batch, time, d)
        return HeadOutput(out, attention=p)

    def reference(self) -> "ReferenceRecurrentMemoryHead":
        """The slow step-by-step version sharing these parameters (tests and benchmarks)."""
        return ReferenceRecurrentMemoryHead(self)


class ReferenceRecurrentMemoryHead(nn.Module):
    """The same head one word at a time, with the memory kept as a deque of word ids (slow; tests)."""

    def __init__(self, head: RecurrentMemoryHead):
        super().__init__()
        self.head = head
        self.output_size = head.output_size

    def forward(self, h, *, tokens=None, mask=None, **_) -> HeadOutput:
        block, top = self.head.block, self.head.top
        n = block.memory_size
        batch, time, d = h.shape
        outputs, all_weights = [], []
        for b in range(batch):
            memory: deque[int] = deque(maxlen=n)  # the word ids, oldest first
            state = (h.new_zeros(1, d), h.new_zeros(1, d))
            outs, rows = [], []
            for t in range(time):
                if mask is None or bool(mask[b, t]):
                    memory.append(int(tokens[b, t]))  # the current word enters before it is used
                else:
                    memory.clear()  # a padded query: nothing real is in its window after the gap
                m = len(memory)
                row = h.new_zeros(n)
                if m == 0:  # only at padded positions: no context
                    s = h.new_zeros(d)
                else:
                    ids = torch.tensor(list(memory), device=h.device)
                    keys, values = block.M(ids), block.C(ids)  # (m, d)
                    if block.T is not None:
                        if block.alignment == "paper":
                            keys = keys + block.T[:m]  # the slice T[1:m], oldest word first
                        else:
                            keys = keys + block.T[n - m:]  # the newest word on the last row
                            values = values + block.T_C[n - m:]
                    p = torch.softmax(keys @ h[b, t], dim=0)  # (m,), Eq. 1-2
                    s = p @ values  # (d,), Eq. 3
                    row = torch.cat([h.new_zeros(n - m), p])  # the newest word in the last slot
                out = block.compose(s, h[b, t])
                if top is not None:
                    state = _lstm_step(top, out[None], state)
                    out = state[0][0]
                outs.append(out)
                rows.append(row)
            outputs.append(torch.stack(outs))
            all_weights.append(torch.stack(rows))
        return HeadOutput(torch.stack(outputs), attention=torch.stack(all_weights))


def _lstm_step(lstm: nn.LSTM, x: torch.Tensor, state):
    """One step of a one-layer ``nn.LSTM`` with its own weights (gates ordered i, f, g, o)."""
    h, c = state
    gates = x @ lstm.weight_ih_l0.T + lstm.bias_ih_l0 + h @ lstm.weight_hh_l0.T + lstm.bias_hh_l0
    i, f, g, o = gates.chunk(4, dim=-1)
    c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(c), c
