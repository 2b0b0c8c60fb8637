"""Text sampled from a trained model, word by word, with a temperature (for showing what a model learned).

At each step the model gives logits z over the vocabulary for the next word; the word is drawn from

    p(w) = softmax(z / T)_w

with temperature T: T = 1 is the model's own distribution, T < 1 sharpens it, T -> 0 is the greedy
(argmax) continuation, which ``temperature=0`` gives exactly. ``<pad>`` and ``<bos>`` are never
drawn (they are never targets); pass ``exclude`` to also keep ``<unk>`` out.

The context follows the model's protocol (docs/design.md, section 4): under **sentence** the text
starts from ``<bos>`` and a sampled ``<eos>`` ends the sentence, so the next word starts a new one
from ``<bos>`` with a fresh state and memory; under **stream** and **document** the text starts
after an ``<eos>`` (the start of a line) and ``<eos>`` is just a line break.

How much is recomputed per word depends on what the head can carry
(``mlm/models/language_model.py``, ``forward(tokens, state=, memory=)``):

* the identity head (plain LSTM) and Daniluk et al.'s window and N-gram heads carry everything
  they need in the LSTM state and the head's ``memory`` (the last L outputs): each new word is one
  step of one token;
* Salton et al.'s attentive head attends over the whole sentence and Tran et al.'s RM / RMR read
  the last n input words (and RMR runs its own LSTM from the sentence start), but neither returns a
  memory to carry, so every step reruns the whole context since the last reset. That is quadratic
  in the length, which is fine for the few sentences a chapter shows.
"""

from __future__ import annotations

from typing import Sequence

import torch

from mlm.data.vocab import BOS, EOS, PAD, Vocabulary
from mlm.models.heads import IdentityHead
from mlm.models.short_attention import NgramHead, WindowAttentionHead

CARRYING_HEADS = (IdentityHead, WindowAttentionHead, NgramHead)  # state + memory hold the whole past


def pick(logits: torch.Tensor, temperature: float, generator: torch.Generator) -> int:
    """One id from (vocab,) ``logits`` at ``temperature`` (<= 0: the argmax, the lowest id on ties)."""
    if temperature <= 0:
        return int(torch.argmax(logits))
    probs = torch.softmax(logits.double() / temperature, dim=-1)  # (vocab,)
    return int(torch.multinomial(probs, 1, generator=generator))


@torch.no_grad()
def sample_words(model, vocab: Vocabulary, prompt: str | Sequence[str] | None = None, length: int = 50,
                 temperature: float = 1.0, seed: int = 0, protocol: str = "stream",
                 exclude: Sequence[str] = (PAD, BOS)) -> list[str]:
    """``length`` words sampled after ``prompt`` (the prompt itself not included; ``<eos>`` appears as a word).

    Deterministic for a given ``seed`` (a private CPU generator; the global one is left alone).
    The model is scored in evaluation mode (no dropout; a smoothing regularizer uses its mean)
    and put back in the mode it was in.
    """
    if protocol not in ("stream", "sentence", "document"):
        raise ValueError(f"unknown protocol {protocol!r}; choose stream, sentence or document")
    words = prompt.split() if isinstance(prompt, str) else list(prompt or [])
    start = vocab.bos_id if protocol == "sentence" else vocab.eos_id
    banned = [vocab.stoi[w] for w in exclude if w in vocab]
    carry = isinstance(model.head, CARRYING_HEADS)
    device = next(model.parameters()).device
    generator = torch.Generator().manual_seed(seed)
    was_training = model.training
    model.eval()
    context = [start] + vocab.encode(words)  # since the last reset: what a non-carrying head reruns
    pending = list(context)  # not yet fed to a carrying model
    state = memory = None
    out_words: list[str] = []
    try:
        while len(out_words) < length:
            if carry:
                tokens = torch.tensor([pending], device=device)  # (1, new tokens)
                out = model(tokens, state=state, memory=memory)
                state, memory = out.state, out.memory
            else:
                out = model(torch.tensor([context], device=device))  # (1, context) -> the whole prefix again
            logits = out.logits[0, -1].detach().double().cpu()  # (vocab,) for the next word
            logits[banned] = float("-inf")
            word = pick(logits, temperature, generator)
            out_words.append(vocab.itos[word])
            if protocol == "sentence" and word == vocab.eos_id:
                context, pending, state, memory = [start], [start], None, None  # a new sentence
            else:
                context.append(word)
                pending = [word]
    finally:
        model.train(was_training)
    return out_words


def sample_text(model, vocab: Vocabulary, prompt: str | Sequence[str] | None = None, length: int = 50,
                temperature: float = 1.0, seed: int = 0, protocol: str = "stream",
                exclude: Sequence[str] = (PAD, BOS)) -> str:
    """The prompt and ``length`` sampled words as text, one line per sentence (``<eos>`` becomes a line break)."""
    words = prompt.split() if isinstance(prompt, str) else list(prompt or [])
    sampled = sample_words(model, vocab, words, length, temperature, seed, protocol, exclude)
    lines, current = [], []
    for word in words + sampled:
        if word == EOS:
            lines.append(" ".join(current))
            current = []
        else:
            current.append(word)
    return "\n".join(lines + ([" ".join(current)] if current else []))
