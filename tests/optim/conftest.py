import copy

import pytest
import torch
from torch import nn


class TinyNet(nn.Module):
    """Embedding + two hidden matrices + head: exercises every routing rule of the optimizers."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(16, 12)
        self.hidden = nn.Linear(12, 32)
        self.conv = nn.Conv1d(1, 4, 3, padding=1)
        self.mix = nn.Linear(4 * 32, 32)
        self.head = nn.Linear(32, 16)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.hidden(self.embed(idx)))
        h = torch.relu(self.conv(h.unsqueeze(1))).flatten(1)
        return self.head(torch.relu(self.mix(h)))


@pytest.fixture
def task():
    """A small classification task with a fixed seed: (model factory, loss closure builder)."""
    g = torch.Generator().manual_seed(0)
    idx = torch.randint(0, 16, (256,), generator=g)
    target = (idx * 5 + 3) % 16

    def make_model() -> TinyNet:
        torch.manual_seed(0)
        return TinyNet()

    def loss_of(model: nn.Module) -> torch.Tensor:
        return nn.functional.cross_entropy(model(idx), target)

    return make_model, loss_of


@pytest.fixture
def trainer():
    """``(train, roundtrip)`` helpers."""
    return train, roundtrip


def train(opt, model, loss_of, steps: int) -> list[float]:
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = loss_of(model)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def roundtrip(make_opt, make_model, loss_of, steps: int = 3):
    """Train, save, continue; versus train, reload into fresh objects, continue: must match."""
    model = make_model()
    opt = make_opt(model)
    train(opt, model, loss_of, steps)
    saved_model = {k: v.clone() for k, v in model.state_dict().items()}
    saved_opt = copy.deepcopy(opt.state_dict())  # state_dict() shares live tensors
    train(opt, model, loss_of, steps)
    model2 = make_model()
    model2.load_state_dict(saved_model)
    opt2 = make_opt(model2)
    opt2.load_state_dict(saved_opt)
    train(opt2, model2, loss_of, steps)
    for (k, a), b in zip(model.state_dict().items(), model2.state_dict().values(), strict=True):
        torch.testing.assert_close(a, b, msg=k)
