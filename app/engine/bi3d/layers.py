"""Small building blocks shared by the Bi3D sub-networks.

The published networks use two activation conventions: the feature extractors
(FeatNet, FeatNetHR) and the 3D regulariser use ReLU; SegNet, SegRefine and
DispRefine use LeakyReLU with slope 0.1.
Each block is an ``nn.Sequential`` whose first entry is the convolution, which
is what gives the published ``state_dict`` names their ``.0`` suffixes.
"""

from __future__ import annotations

from torch import Tensor, nn

LEAKY_SLOPE = 0.1


def scaled(channels: int, width: float) -> int:
    """Channel count of a layer at a given width multiplier (1.0 = published)."""
    return max(1, round(channels * width))


def conv_relu(
    in_ch: int, out_ch: int, kernel: int = 3, stride: int = 1, pad: int = 1, dilation: int = 1
) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(in_ch, out_ch, kernel, stride, pad, dilation, bias=True), nn.ReLU(inplace=True)
    )


def conv_lrelu(
    in_ch: int, out_ch: int, kernel: int = 3, stride: int = 1, pad: int = 1, dilation: int = 1
) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(in_ch, out_ch, kernel, stride, pad, dilation, bias=True),
        nn.LeakyReLU(LEAKY_SLOPE, inplace=True),
    )


def deconv_lrelu(in_ch: int, out_ch: int) -> nn.Sequential:
    """Transposed convolution that doubles height and width exactly."""
    return nn.Sequential(
        nn.ConvTranspose2d(in_ch, out_ch, 4, 2, 1, bias=True), nn.LeakyReLU(LEAKY_SLOPE, inplace=True)
    )


def conv3d_relu(in_ch: int, out_ch: int, stride: int = 1) -> nn.Sequential:
    return nn.Sequential(nn.Conv3d(in_ch, out_ch, 3, stride, 1, bias=True), nn.ReLU(inplace=True))


def deconv3d_relu(in_ch: int, out_ch: int) -> nn.Sequential:
    """3D transposed convolution that doubles planes, height and width exactly."""
    return nn.Sequential(
        nn.ConvTranspose3d(in_ch, out_ch, 3, 2, 1, output_padding=1, bias=True), nn.ReLU(inplace=True)
    )


class ResidualBlock(nn.Module):
    """Two 3x3 convolutions with a skip; the second has no activation."""

    def __init__(self, channels: int, dilation: int, leaky: bool) -> None:
        super().__init__()
        block = conv_lrelu if leaky else conv_relu
        self.conv1 = block(channels, channels, 3, 1, dilation, dilation)
        self.conv2 = nn.Sequential(nn.Conv2d(channels, channels, 3, 1, dilation, dilation, bias=True))

    def forward(self, x: Tensor) -> Tensor:
        return self.conv2(self.conv1(x)) + x
