"""Short comparisons behind chapter 02's "why the merge layer starts slowly" (results/README.md).

Trains each variant for a few epochs of the reduced PTB setting and prints the validation perplexity
after every epoch (on the first 15k validation tokens). A variant is a preset name followed by
comma-separated ``key=value`` overrides; ``nobias`` freezes the merge layer's bias at zero and
``identity`` adds the identity to the h_t half of W_c (initialisations the presets do not offer);
``exactidentity`` sets W_c = [I, 0] and b_c = 0; ``freezehead`` keeps the head's parameters fixed;
``fullvalid`` scores the whole validation set instead. The reduced presets now give the head a tenth
of the learning rate and use batches of 8; the table in results/README.md was made with the full rate and
batches of 32, so add ``train.head_lr_scale=1`` to every variant and ``data.batch_size=32`` to those that
set no batch size.

    python results/scripts/salton_reduced_tries.py 2 salton2017-ptb-lstm salton2017-ptb-single,train.clip=1
"""
import sys
import time

import torch

from mlm import configs, training
from mlm.evaluation import evaluate


def run(variant: str, epochs: int) -> list[float]:
    preset, *overrides = variant.split(",")
    tweaks = {o for o in overrides if o in ("nobias", "identity", "exactidentity", "freezehead", "fullvalid")}
    overrides = [o for o in overrides if o not in tweaks]
    if "fullvalid" not in tweaks:
        overrides.append("data.max_eval_tokens=15000")
    cfg = configs.get_preset(preset, size="reduced", overrides=overrides)
    torch.manual_seed(cfg.train.seed)
    corpus = training.load_data(cfg)
    train_batches = training.build_batches(cfg, corpus, "train")
    valid_batches = training.build_batches(cfg, corpus, "valid")
    model = training.build_model(cfg, len(corpus.vocab), corpus.vocab.pad_id)
    if "nobias" in tweaks:
        model.head.W_c.bias.requires_grad_(False)
    if "identity" in tweaks:
        with torch.no_grad():
            model.head.W_c.weight[:, : cfg.model.hidden_size] += torch.eye(cfg.model.hidden_size)
    if "exactidentity" in tweaks:
        with torch.no_grad():
            model.head.W_c.weight.zero_()
            model.head.W_c.weight[:, : cfg.model.hidden_size] = torch.eye(cfg.model.hidden_size)
            model.head.W_c.bias.zero_()
    if "freezehead" in tweaks:
        model.head.requires_grad_(False)
    optimizer = training.build_optimizer(cfg, model)  # frozen parameters get no gradient, no update
    history = []
    for epoch in range(1, epochs + 1):
        training.set_lr(optimizer, training.scheduled_lr(cfg, epoch))
        training.train_epoch(model, train_batches, optimizer, cfg, "cpu")
        history.append(round(evaluate(model, valid_batches, "cpu").perplexity, 1))
    return history


if __name__ == "__main__":
    epochs = int(sys.argv[1])
    for variant in sys.argv[2:]:
        start = time.time()
        print(f"{variant:<75} valid {run(variant, epochs)}  {time.time() - start:.0f}s", flush=True)
