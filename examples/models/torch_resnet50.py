"""ResNet-50 v1.5 in plain PyTorch, layer for layer as ``torchvision.models.resnet50()`` builds
it: what ``--model examples/models/torch_resnet50.py:build`` measures, traces and prices, with no
torchvision and no download (the protocol is in docs/torch.md).

v1.5 is the ResNet-50 the published PyTorch rows train (NVIDIA DeepLearningExamples' ConvNets,
which Lambda's PyTorch benchmark runs; ``predict/data/resnet50_variants.csv``): the stride of a
stage's first bottleneck is on its 3x3 conv, not its first 1x1. Bias-free convolutions, each
followed by batch norm (eps 1e-5, momentum 0.1, torch's defaults as torchvision uses them), ReLU;
a 7x7/2 stem and a 3x3/2 max-pool; global average pooling and a 1000-way linear layer; NCHW
224x224 images; SGD with momentum 0.9 (lr 0.1 and weight decay 1e-4, the ImageNet recipe of
Goyal et al. 2017, which neither changes the step's work).

Its 25,557,032 parameters are torchvision's. The ``resnet50-v1.5`` workload (Keras) trains
26,560 more: Keras' ``Conv2D`` keeps a bias on every convolution (one per output channel, 26,560
over the 53) even before batch norm, which makes it redundant; torchvision leaves them out.
(Keras' ``count_params`` also counts batch norm's moving means and variances, 53,120 more, which
torch keeps as buffers, not parameters.) The step's multiply-adds are the same.
"""

from __future__ import annotations

import torch
from torch import nn

IMAGE_SIZE = 224
CLASSES = 1000
# (blocks, width) of the four stages; a block's output has 4 x width channels
STAGES = ((3, 64), (4, 128), (6, 256), (3, 512))
EXPANSION = 4


class Bottleneck(nn.Module):
    """1x1 reduce, 3x3 (with the stride: v1.5), 1x1 expand, each conv + BN; the shortcut is a
    strided 1x1 conv + BN where the shape changes (torchvision's ``downsample``)."""

    def __init__(self, inputs: int, width: int, stride: int) -> None:
        super().__init__()
        out = width * EXPANSION
        self.conv1 = nn.Conv2d(inputs, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, out, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out)
        self.relu = nn.ReLU(inplace=True)
        self.downsample: nn.Module | None = None
        if stride != 1 or inputs != out:
            self.downsample = nn.Sequential(
                nn.Conv2d(inputs, out, 1, stride=stride, bias=False), nn.BatchNorm2d(out)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        return self.relu(y + identity)


class ResNet50(nn.Module):
    """torchvision's ``ResNet(Bottleneck, [3, 4, 6, 3])``, its weights initialised as
    torchvision does (Kaiming-normal convs, BN scale 1 and shift 0)."""

    def __init__(self, image_size: int = IMAGE_SIZE, classes: int = CLASSES) -> None:
        super().__init__()
        self.image_size, self.classes = image_size, classes
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        stages: list[nn.Module] = []
        inputs = 64
        for stage, (blocks, width) in enumerate(STAGES):
            layers: list[nn.Module] = []
            for block in range(blocks):
                stride = 2 if block == 0 and stage > 0 else 1
                layers.append(Bottleneck(inputs, width, stride))
                inputs = width * EXPANSION
            stages.append(nn.Sequential(*layers))
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(inputs, classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(images))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))

    def example_batch(self, batch_size: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Random NCHW images and integer labels: no dataset is downloaded."""
        s = self.image_size
        images = torch.randn(batch_size, 3, s, s)
        return images, torch.randint(0, self.classes, (batch_size,))

    def loss(self, outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return nn.functional.cross_entropy(outputs.float(), targets)

    def make_optimizer(self, parameters: object) -> torch.optim.Optimizer:
        return torch.optim.SGD(parameters, lr=0.1, momentum=0.9, weight_decay=1e-4)  # type: ignore[arg-type]


def build(image_size: int = IMAGE_SIZE, classes: int = CLASSES) -> nn.Module:
    """ResNet-50 v1.5 at 224 px and 1000 classes (smaller arguments: tests)."""
    return ResNet50(image_size, classes)
