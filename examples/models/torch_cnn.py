"""A small image classifier in plain PyTorch: what ``--model examples/models/torch_cnn.py:build``
measures, traces and prices (no Keras; the protocol is in docs/torch.md).

32x32 RGB images, 10 classes (CIFAR-10's shape), the same layers as ``cnn.py``'s Keras model;
about 0.1 M parameters. ``example_batch`` makes random data, so no dataset is downloaded.
"""

import torch
from torch import nn


class SmallCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        channels = 3
        for filters in (32, 64, 128):
            layers += [
                nn.Conv2d(channels, filters, 3, padding=1),
                nn.ReLU(),
                nn.BatchNorm2d(filters),
                nn.MaxPool2d(2),
            ]
            channels = filters
        self.features = nn.Sequential(*layers)
        self.head = nn.Linear(channels, 10)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = self.features(images)
        return self.head(x.mean(dim=(2, 3)))

    def example_batch(self, batch_size: int) -> tuple[torch.Tensor, torch.Tensor]:
        """One batch of random images (NCHW) and integer labels."""
        images = torch.randn(batch_size, 3, 32, 32)
        labels = torch.randint(0, 10, (batch_size,))
        return images, labels

    def loss(self, outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return nn.functional.cross_entropy(outputs.float(), targets)

    def make_optimizer(self, parameters: object) -> torch.optim.Optimizer:
        return torch.optim.Adam(parameters, lr=1e-3)  # type: ignore[arg-type]


def build() -> nn.Module:
    return SmallCNN()
