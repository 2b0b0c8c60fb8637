"""The Attentive LM head of Salton, Ross & Kelleher (2017), *Attentive Language Models*.

At step t the top LSTM output h_t attends over the outputs h_1 .. h_{t-1} of the current
sentence (the memory buffer; section 3), then merges the context into the prediction::

    score(h_i, h_t) = v . tanh(W_s h_i)              single score   (Eq. 9)
                    = v . tanh(W_s h_i + W_q h_t)    combined score (Eq. 10)
    a_i  = softmax_i score(h_i, h_t),  i < t                          (Eq. 4)
    c_t  = sum_i a_i h_i                                              (Eq. 3)
    h'_t = tanh(W_c [h_t; c_t] + b)                                   (Eq. 7)

and the softmax reads h'_t (Eq. 8). Every step is computed at once: the scores of all
(query t, memory slot i) pairs form a (batch, time, time) tensor, and a causal mask keeps
i < t. At t = 1 the memory is empty; the paper does not say what happens then. We use a zero
context (weights all zero), which is also what the official code's extra all-zero memory
slot produces for the context; ``zero_slot=True`` reproduces that slot exactly (it also takes
part of the attention mass at later steps). ``merge="linear"`` drops the tanh of Eq. 7, as the
official code does.
"""

from __future__ import annotations

import torch
from torch import nn

from mlm.models.heads import HeadOutput, MemoryHead


def causal_memory_mask(mask: torch.Tensor | None, batch: int, time: int, device) -> torch.Tensor:
    """(batch, time, time) True where query step t may attend to memory slot i: i < t, slot not padding."""
    allowed = torch.ones(time, time, dtype=torch.bool, device=device).tril(diagonal=-1)  # i < t
    allowed = allowed.unsqueeze(0).expand(batch, time, time)
    if mask is not None:
        allowed = allowed & mask[:, None, :]  # padded slots are never attended
    return allowed


def masked_softmax(scores: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    """Softmax over the last axis restricted to ``allowed``; a row with nothing allowed is all zeros."""
    scores = scores.masked_fill(~allowed, float("-inf"))
    row_max = scores.amax(dim=-1, keepdim=True).clamp_min(-1e30)  # finite even for empty rows
    weights = torch.exp(scores - row_max) * allowed
    return weights / weights.sum(dim=-1, keepdim=True).clamp_min(1e-30)


class AttentiveHead(MemoryHead):
    """Attention over the previous outputs of the same sentence (Salton et al., 2017)."""

    def __init__(self, hidden_size: int, score: str = "single", attention_size: int | None = None,
                 merge: str = "tanh", zero_slot: bool = False, disable_attention: bool = False):
        super().__init__()
        if score not in ("single", "combined"):
            raise ValueError(f"score must be 'single' or 'combined', got {score!r}")
        if merge not in ("tanh", "linear"):
            raise ValueError(f"merge must be 'tanh' or 'linear', got {merge!r}")
        attention_size = attention_size or hidden_size
        self.score, self.merge, self.zero_slot = score, merge, zero_slot
        self.disable_attention = disable_attention  # ablation: context fixed to zero
        self.output_size = hidden_size
        self.W_s = nn.Linear(hidden_size, attention_size, bias=False)  # Eq. 9-10
        self.W_q = nn.Linear(hidden_size, attention_size, bias=False) if score == "combined" else None  # Eq. 10
        self.v = nn.Linear(attention_size, 1, bias=False)  # the vector v_s
        self.W_c = nn.Linear(2 * hidden_size, hidden_size)  # Eq. 7, with its bias

    def scores(self, h: torch.Tensor) -> torch.Tensor:
        """(batch, time, time) score of memory slot i (last axis) for query step t (middle axis).

        For the combined score only the pairs i < t are computed; the others are 0 and are
        masked out by :func:`causal_memory_mask` anyway.
        """
        keys = self.W_s(h)  # (batch, time, attn)
        if self.W_q is None:
            single = self.v(torch.tanh(keys)).squeeze(-1)  # (batch, time): one score per slot, Eq. 9
            return single[:, None, :].expand(-1, h.size(1), -1)
        query = self.W_q(h)  # (batch, time, attn): W_q h_t once per step, reused for every slot
        # Only pairs with i < t can ever be attended, so only those (the strict lower triangle,
        # under half of all pairs) go through the tanh; the rest stay 0 and are masked later.
        batch, time, attn = keys.shape
        t_idx, i_idx = torch.tril_indices(time, time, offset=-1, device=h.device)  # (pairs,)
        offsets = torch.arange(batch, device=h.device)[:, None] * time  # rows of the flattened batch
        rows_i, rows_t = (offsets + i_idx).reshape(-1), (offsets + t_idx).reshape(-1)  # (batch * pairs,)
        # One gather per side over the flattened (batch * time, attn) rows, then one buffer in place.
        pre = keys.reshape(-1, attn).index_select(0, rows_i).add_(query.reshape(-1, attn).index_select(0, rows_t))
        pair_scores = self.v(torch.tanh_(pre)).view(batch, -1)  # (batch, pairs), Eq. 10
        scores = h.new_zeros(batch, time, time)
        scores[:, t_idx, i_idx] = pair_scores
        return scores

    def forward(self, h, *, tokens=None, mask=None, memory=None, reset=None) -> HeadOutput:
        batch, time, _ = h.shape
        allowed = causal_memory_mask(mask, batch, time, h.device)  # (batch, time, time)
        scores = self.scores(h)  # (batch, time, time)
        if self.zero_slot:
            # The official code's extra memory slot holding h_0 = 0: its score is v.tanh(0) = 0
            # (single) or v.tanh(W_q h_t) (combined), and it contributes nothing to the context.
            zero_score = (self.v(torch.tanh(self.W_q(h))).squeeze(-1) if self.W_q is not None
                          else h.new_zeros(batch, time))
            scores = torch.cat([zero_score[:, :, None], scores], dim=-1)  # (batch, time, 1 + time)
            allowed = torch.cat([allowed.new_ones(batch, time, 1), allowed], dim=-1)
            weights = masked_softmax(scores, allowed)
            context = weights[:, :, 1:] @ h  # (batch, time, hidden), Eq. 3
        else:
            weights = masked_softmax(scores, allowed)  # (batch, time, time), Eq. 4
            context = weights @ h  # (batch, time, hidden), Eq. 3
        if self.disable_attention:
            context = torch.zeros_like(context)
        merged = self.W_c(torch.cat([h, context], dim=-1))  # (batch, time, hidden)
        out = torch.tanh(merged) if self.merge == "tanh" else merged  # Eq. 7
        return HeadOutput(out, attention=weights)

    def reference(self) -> "ReferenceAttentiveHead":
        """The slow step-by-step version sharing these parameters (tests and benchmarks)."""
        return ReferenceAttentiveHead(self)


class ReferenceAttentiveHead(nn.Module):
    """The same head, one time step at a time with a growing memory list (slow; tests only)."""

    def __init__(self, head: AttentiveHead):
        super().__init__()
        self.head = head
        self.output_size = head.output_size

    def forward(self, h, *, mask=None, **_) -> HeadOutput:
        head = self.head
        batch, time, hidden = h.shape
        outputs, all_weights = [], []
        width = time + (1 if head.zero_slot else 0)
        for b in range(batch):
            memory: list[torch.Tensor] = [h.new_zeros(hidden)] if head.zero_slot else []
            outs, rows = [], []
            for t in range(time):
                h_t = h[b, t]
                row = h.new_zeros(width)
                if memory:
                    stacked = torch.stack(memory)  # (slots, hidden)
                    keys = head.W_s(stacked)
                    if head.W_q is not None:
                        keys = keys + head.W_q(h_t)
                    scores = head.v(torch.tanh(keys)).squeeze(-1)  # (slots,)
                    a = torch.softmax(scores, dim=0)
                    context = a @ stacked
                    row = torch.cat([a, h.new_zeros(width - len(a))])  # slots [(zero,) h_1, .., h_{t-1}]
                else:
                    context = h.new_zeros(hidden)
                if head.disable_attention:
                    context = h.new_zeros(hidden)
                merged = head.W_c(torch.cat([h_t, context]))
                outs.append(torch.tanh(merged) if head.merge == "tanh" else merged)
                rows.append(row)
                if mask is None or bool(mask[b, t]):
                    memory.append(h_t)  # h_t enters the memory after it has been used (Fig. 1)
            outputs.append(torch.stack(outs))
            all_weights.append(torch.stack(rows))
        return HeadOutput(torch.stack(outputs), attention=torch.stack(all_weights))
