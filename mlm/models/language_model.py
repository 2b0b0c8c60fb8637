"""The one pipeline every model of the book shares (docs/design.md, section 2).

::

    tokens -> Embedding -> dropout -> LSTM stack (one fused call)
           -> memory head (identity for the baseline) -> dropout -> softmax (tied or untied)

Dropout sits on the non-recurrent connections only, as in Zaremba et al. (2014): on the
embeddings, between LSTM layers (``nn.LSTM``'s own ``dropout``) and before the softmax.
The recurrent connections are left untouched unless ``recurrent_dropout`` > 0, which drops
hidden-to-hidden weights (one DropConnect mask per batch, so the fused call stays). An optional
embedding regularizer (``mlm/regularizers``, chapter 5) replaces the embedding lookup and the
softmax layer; without one the pipeline is exactly the plain model. Every weight starts uniform in
``[-init_range, init_range]`` (Zaremba et al.); options zero the biases (Salton et al.) or
set the forget-gate bias (Tran et al., Daniluk et al.).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from mlm.models.heads import HeadOutput, IdentityHead, MemoryHead

State = tuple[torch.Tensor, torch.Tensor]  # (h, c), each (layers, batch, hidden)


@dataclass
class LMOutput:
    logits: torch.Tensor  # (batch, time, vocab)
    state: State  # LSTM state after the last step, for truncated BPTT
    attention: torch.Tensor | None = None  # head-specific attention weights, for analysis
    memory: object = None  # head-specific state carried between segments (document protocol)


class LanguageModel(nn.Module):
    """Embedding, fused multi-layer LSTM, a memory head, and a softmax layer.

    ``tie_weights`` shares the input embedding with the output layer (Press & Wolf, 2017),
    which requires the head's output size to equal ``embed_size``.
    """

    def __init__(self, vocab_size: int, embed_size: int, hidden_size: int, num_layers: int,
                 dropout: float = 0.0, tie_weights: bool = False, init_range: float = 0.1,
                 zero_bias: bool = False, forget_bias: float | None = None,
                 head: MemoryHead | None = None, pad_id: int = 0, regularizer: nn.Module | None = None,
                 recurrent_dropout: float = 0.0):
        super().__init__()
        self.vocab_size, self.embed_size = vocab_size, embed_size
        self.hidden_size, self.num_layers = hidden_size, num_layers
        self.pad_id = pad_id
        self.embedding = nn.Embedding(vocab_size, embed_size)
        self.lstm = nn.LSTM(embed_size, hidden_size, num_layers, batch_first=True,
                            dropout=dropout if num_layers > 1 else 0.0)
        self.head = head if head is not None else IdentityHead(hidden_size)
        self.drop = nn.Dropout(dropout)
        self.decoder = nn.Linear(self.head.output_size, vocab_size)
        if tie_weights:
            if self.head.output_size != embed_size:
                raise ValueError(f"weight tying needs the softmax input size ({self.head.output_size}) "
                                 f"to equal the embedding size ({embed_size})")
            self.decoder.weight = self.embedding.weight
        self.tie_weights = tie_weights
        self.reset_parameters(init_range, zero_bias, forget_bias)
        self.regularizer = regularizer  # None: the plain pipeline; see mlm/regularizers/base.py
        if not 0.0 <= recurrent_dropout < 1.0:
            raise ValueError(f"recurrent_dropout must lie in [0, 1), got {recurrent_dropout}")
        self.recurrent_dropout = recurrent_dropout

    def reset_parameters(self, init_range: float, zero_bias: bool = False, forget_bias: float | None = None):
        for name, p in self.named_parameters():
            if zero_bias and "bias" in name.rsplit(".", 1)[-1]:
                nn.init.zeros_(p)
            else:
                nn.init.uniform_(p, -init_range, init_range)
        if forget_bias is not None:
            # nn.LSTM has two bias vectors per layer, gates ordered (input, forget, cell, output):
            # the forget gate's total bias b_ih + b_hh is set to ``forget_bias``.
            h = self.hidden_size
            for layer in range(self.num_layers):
                with torch.no_grad():
                    getattr(self.lstm, f"bias_ih_l{layer}")[h:2 * h].fill_(forget_bias)
                    getattr(self.lstm, f"bias_hh_l{layer}")[h:2 * h].zero_()

    def init_state(self, batch_size: int, device=None) -> State:
        device = device or self.embedding.weight.device
        zeros = torch.zeros(self.num_layers, batch_size, self.hidden_size, device=device)
        return zeros, zeros.clone()

    @staticmethod
    def reset_state(state: State, reset: torch.Tensor | None) -> State:
        """Zero the rows of ``state`` where ``reset`` is True (a new document starts)."""
        if reset is None:
            return state
        keep = (~reset).to(state[0].dtype)[None, :, None]  # (1, batch, 1)
        return state[0] * keep, state[1] * keep

    def embed(self, tokens: torch.Tensor) -> torch.Tensor:
        """(batch, time) ids -> (batch, time, embed). Embedding regularizers plug in here."""
        if self.regularizer is None:
            return self.embedding(tokens)
        return self.regularizer.embed(self.embedding, tokens)

    def decode(self, x: torch.Tensor) -> torch.Tensor:
        """(batch, time, head output) -> (batch, time, vocab) logits; output-embedding smoothing plugs in here."""
        if self.regularizer is None:
            return self.decoder(x)
        return self.regularizer.decode(self.decoder, x)

    def run_lstm(self, x: torch.Tensor, state: State):
        """The fused LSTM; in training with ``recurrent_dropout``, on dropped hidden-to-hidden weights."""
        if not (self.training and self.recurrent_dropout > 0):
            return self.lstm(x, state)
        lstm = self.lstm
        weights = [F.dropout(getattr(lstm, name), self.recurrent_dropout) if name.startswith("weight_hh")
                   else getattr(lstm, name) for name in lstm._flat_weights_names]
        # cuDNN wants every weight in one buffer, in the module's order (nn.LSTM keeps its own that way); given
        # separate tensors it would copy them into one on every call, with a warning. So: one buffer, and views.
        flat = torch.cat([w.reshape(-1) for w in weights])
        weights = [part.view_as(w) for part, w in zip(flat.split([w.numel() for w in weights]), weights)]
        # The same fused kernel nn.LSTM.forward calls, on the dropped weights; the module itself is untouched.
        output, h, c = torch._VF.lstm(x, state, weights, lstm.bias, lstm.num_layers, lstm.dropout, self.training,
                                      lstm.bidirectional, lstm.batch_first)
        return output, (h, c)

    def forward(self, tokens: torch.Tensor, state: State | None = None, reset: torch.Tensor | None = None,
                mask: torch.Tensor | None = None, memory=None) -> LMOutput:
        """Logits for every position of ``tokens`` (batch, time), all time steps at once.

        ``state`` is the LSTM state carried from the previous segment (None: zeros);
        ``reset`` (batch,) zeros it for rows that start a new document; ``mask`` marks
        real (non-padding) input positions for heads that attend over the past;
        ``memory`` is the head's own carried state.
        """
        head_out, new_state = self.features(tokens, state, reset, mask, memory)
        logits = self.decode(self.drop(head_out.output))  # (batch, time, vocab)
        return LMOutput(logits, new_state, head_out.attention, head_out.memory)

    def features(self, tokens: torch.Tensor, state: State | None = None, reset: torch.Tensor | None = None,
                 mask: torch.Tensor | None = None, memory=None) -> tuple[HeadOutput, State]:
        """Everything of :meth:`forward` but the softmax layer: the head's output (batch, time, head
        output) and the LSTM state. Scoring one position per row decodes only that position."""
        batch_size = tokens.size(0)
        if state is None:
            state = self.init_state(batch_size, tokens.device)
        else:
            state = self.reset_state(state, reset)
        x = self.embed(tokens)  # (batch, time, embed)
        if self.regularizer is None or not self.regularizer.drops_embedding:
            x = self.drop(x)  # a regularizer with its own embedding dropout (Eq. 6 of Kong et al.) replaces it
        h, new_state = self.run_lstm(x, state)  # (batch, time, hidden)
        # The head sees the undropped LSTM outputs (memories store clean states); the one
        # dropout before the softmax is applied to whatever the head returns.
        head_out: HeadOutput = self.head(h, tokens=tokens, mask=mask, memory=memory, reset=reset)
        return head_out, new_state

    def num_parameters(self) -> int:
        """Trainable parameters, counting a tied matrix once."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad)
