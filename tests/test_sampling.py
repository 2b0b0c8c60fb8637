"""Sampling text (mlm/sampling.py): the greedy limit, a one-word model, seeds, every head, and how much
each step recomputes."""

from __future__ import annotations

import pytest
import torch

from mlm.configs import get_preset
from mlm.sampling import sample_text, sample_words
from mlm.training import build_model, load_data

HEADS = {  # a tiny model of every head type (model.head and its options)
    "identity": [],
    "attentive": ["model.head=attentive"],
    "window": ["model.head=window", "model.window_size=3"],
    "key-value-predict": ["model.head=window", "model.window_kind=key-value-predict", "model.hidden_size=33",
                          "model.window_size=3"],
    "ngram": ["model.head=ngram", "model.ngram_n=3", "model.hidden_size=32"],
    "rm": ["model.head=rm", "model.memory_size=4"],
    "rmr": ["model.head=rmr", "model.memory_size=4"],
}


def tiny_model(head: str, seed: int = 0):
    cfg = get_preset("synthetic-tiny", overrides=["model.embed_size=16", "model.hidden_size=16", "model.init_range=1.0",
                                                        *HEADS[head]])  # large weights: the context matters
    corpus = load_data(cfg)
    torch.manual_seed(seed)
    return build_model(cfg, len(corpus.vocab), corpus.vocab.pad_id), corpus.vocab


def greedy_reference(model, vocab, prompt: list[str], length: int) -> list[str]:
    """The argmax continuation, rerunning the whole stream prefix for every word (no state carried)."""
    ids = [vocab.eos_id] + vocab.encode(prompt)
    out = []
    model.eval()
    with torch.no_grad():
        for _ in range(length):
            logits = model(torch.tensor([ids])).logits[0, -1]
            logits[[vocab.pad_id, vocab.bos_id]] = float("-inf")
            ids.append(int(logits.argmax()))
            out.append(vocab.itos[ids[-1]])
    return out


@pytest.mark.parametrize("head", HEADS)
def test_temperature_zero_is_the_argmax_continuation_for_every_head(head):
    model, vocab = tiny_model(head)
    prompt = ["k1", "w0", "w3"]
    expected = greedy_reference(model, vocab, prompt, 12)
    assert sample_words(model, vocab, prompt, length=12, temperature=0) == expected
    # the limit T -> 0 of the sampled distribution is the argmax
    assert sample_words(model, vocab, prompt, length=12, temperature=1e-6, seed=3) == expected


@pytest.mark.parametrize("head", ["identity", "attentive", "rmr"])
def test_sampling_is_deterministic_given_a_seed(head):
    model, vocab = tiny_model(head)
    first = sample_words(model, vocab, "k2", length=30, seed=1)
    assert sample_words(model, vocab, "k2", length=30, seed=1) == first
    assert sample_words(model, vocab, "k2", length=30, seed=2) != first  # an untrained model is near uniform
    assert model.training, "the model's mode is restored"


def test_a_model_that_always_predicts_one_word_samples_that_word():
    model, vocab = tiny_model("identity")
    with torch.no_grad():
        model.decoder.weight.zero_()
        model.decoder.bias.fill_(-30.0)
        model.decoder.bias[vocab.stoi["w7"]] = 30.0
    assert sample_words(model, vocab, "k3 w1", length=20, temperature=1.0, seed=5) == ["w7"] * 20
    assert sample_text(model, vocab, "k3 w1", length=3, temperature=2.0) == "k3 w1 w7 w7 w7"


def test_pad_and_bos_are_never_sampled_and_unk_can_be_excluded():
    model, vocab = tiny_model("identity")
    with torch.no_grad():
        model.decoder.weight.zero_()
        model.decoder.bias.zero_()
        model.decoder.bias[[vocab.pad_id, vocab.bos_id, vocab.unk_id]] = 50.0  # the model's favourites
    words = sample_words(model, vocab, length=40, temperature=1.0, exclude=("<pad>", "<bos>", "<unk>"))
    assert not {"<pad>", "<bos>", "<unk>"} & set(words)
    assert sample_words(model, vocab, length=5, temperature=0) == ["<unk>"] * 5


def recorded_calls(model):
    """The token lists and carried states ``model`` is called with (a forward pre-hook)."""
    calls = []

    def hook(module, args, kwargs):
        calls.append((args[0][0].tolist(), kwargs.get("state") is not None))
    model.register_forward_pre_hook(hook, with_kwargs=True)
    return calls


def test_a_carrying_head_feeds_one_new_word_per_step():
    model, vocab = tiny_model("window")
    calls = recorded_calls(model)
    sample_words(model, vocab, "k1 w2", length=4, seed=0)
    assert [len(tokens) for tokens, _ in calls] == [3, 1, 1, 1]  # <eos> k1 w2, then one word at a time
    assert [carried for _, carried in calls] == [False, True, True, True]


def test_a_sentence_head_reruns_its_sentence_and_restarts_after_eos():
    model, vocab = tiny_model("attentive")
    calls = recorded_calls(model)
    words = sample_words(model, vocab, "k1", length=4, temperature=0)
    assert [tokens for tokens, _ in calls][1] == [vocab.eos_id, vocab.stoi["k1"], vocab.stoi[words[0]]]
    assert [len(tokens) for tokens, _ in calls] == [2, 3, 4, 5]  # the whole prefix, every step
    with torch.no_grad():  # a model that always ends the sentence
        model.decoder.weight.zero_()
        model.decoder.bias.fill_(-30.0)
        model.decoder.bias[vocab.eos_id] = 30.0
    calls.clear()
    assert sample_words(model, vocab, "k1", length=3, protocol="sentence") == ["<eos>"] * 3
    bos, k1 = vocab.bos_id, vocab.stoi["k1"]
    assert [tokens for tokens, _ in calls] == [[bos, k1], [bos], [bos]]  # each new sentence starts afresh
    assert sample_text(model, vocab, "k1", length=2, protocol="sentence") == "k1\n"
