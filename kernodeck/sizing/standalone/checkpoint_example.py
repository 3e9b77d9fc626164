#!/usr/bin/env python3
"""A checkpoint that really resumes: a tiny model trained on the CPU, stopped, resumed in a
new process, and ending bit-for-bit where an uninterrupted run ends.

    python checkpoint_example.py --steps 40 --out full.json
    python checkpoint_example.py --steps 40 --stop-after 15 --checkpoint ck.pt
    python checkpoint_example.py --steps 40 --resume ck.pt --out resumed.json
    # full.json and resumed.json carry the same "weights_sha256"

The checkpoint holds everything the next step depends on: model weights, optimizer state
(AdamW moments), learning-rate scheduler, the step counter, every random state (Python,
PyTorch's CPU generator and the data-shuffling generator) and the position in the data
(epoch and batch index). Leave one out and the resumed run drifts from the uninterrupted one.
Standard library and PyTorch only.
"""

import argparse
import hashlib
import json
import random
import sys

import torch
from torch import nn

SEED = 20240601
SAMPLES, BATCH = 96, 8


def make_data():
    generator = torch.Generator().manual_seed(SEED)
    inputs = torch.randn(SAMPLES, 16, generator=generator)
    targets = (inputs[:, :4].sum(dim=1, keepdim=True) > 0).float()
    return inputs, targets


def make_model():
    torch.manual_seed(SEED)
    # Dropout makes the result depend on the random state, which the checkpoint must carry.
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Dropout(0.2), nn.Linear(32, 1))


def epoch_order(shuffle: torch.Generator) -> list[int]:
    return torch.randperm(SAMPLES, generator=shuffle).tolist()


def weights_sha256(model) -> str:
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode())
        digest.update(bytes(tensor.detach().contiguous().flatten().view(torch.uint8).tolist()))
    return digest.hexdigest()


def save(path, *, model, optimizer, scheduler, step, epoch, batch, order, shuffle):
    torch.save(
        {
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "step": step,
            "data": {"epoch": epoch, "batch": batch, "order": order},
            "rng": {
                "python": random.getstate(),
                "torch": torch.get_rng_state(),
                "shuffle": shuffle.get_state(),
            },
        },
        path,
    )


def train(args) -> dict:
    inputs, targets = make_data()
    model = make_model()
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.01)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=10, gamma=0.5)
    shuffle = torch.Generator().manual_seed(SEED + 1)
    random.seed(SEED)
    step, epoch, batch, order = 0, 0, 0, None
    if args.resume:
        state = torch.load(args.resume, weights_only=False)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        step = state["step"]
        epoch, batch, order = (state["data"][k] for k in ("epoch", "batch", "order"))
        random.setstate(state["rng"]["python"])
        torch.set_rng_state(state["rng"]["torch"])
        shuffle.set_state(state["rng"]["shuffle"])
    loss_fn = nn.BCEWithLogitsLoss()
    model.train()
    losses = []
    while step < args.steps:
        if order is None:
            order = epoch_order(shuffle)
        index = order[batch * BATCH : (batch + 1) * BATCH]
        # A pinch of Python randomness too (as augmentation code often has).
        noise = random.random() * 1e-3
        optimizer.zero_grad()
        loss = loss_fn(model(inputs[index] + noise), targets[index])
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses.append(round(loss.item(), 8))
        step += 1
        batch += 1
        if batch * BATCH >= SAMPLES:
            epoch, batch, order = epoch + 1, 0, None
        if args.stop_after and step == args.stop_after:
            save(
                args.checkpoint,
                model=model,
                optimizer=optimizer,
                scheduler=scheduler,
                step=step,
                epoch=epoch,
                batch=batch,
                order=order,
                shuffle=shuffle,
            )
            return {"stopped_at": step, "checkpoint": args.checkpoint}
    return {"steps": step, "weights_sha256": weights_sha256(model), "last_loss": losses[-1]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--stop-after", type=int, default=0)
    parser.add_argument("--checkpoint", default="checkpoint.pt")
    parser.add_argument("--resume")
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    torch.use_deterministic_algorithms(True)
    result = train(args)
    text = json.dumps(result, indent=2)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
