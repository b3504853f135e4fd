"""The Bi3D sub-networks, written for this project.

Module and parameter names follow the published ``state_dict`` so that the
published checkpoints load with ``strict=True``. Shapes in docstrings use
B (batch), P (planes), C (channels), H x W (image), h x w = H/3 x W/3.

``width`` scales every internal channel count; at 1.0 the networks are exactly
the published ones. Inputs (3 RGB channels) and outputs (1 logit) never scale.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from app.engine.bi3d.layers import (
    ResidualBlock,
    conv3d_relu,
    conv_lrelu,
    conv_relu,
    deconv3d_relu,
    deconv_lrelu,
    scaled,
)

FEATURE_STRIDE = 3
SPP_POOLS = (64, 32, 16, 8)


class FeatNet(nn.Module):
    """SPP feature extractor at 1/3 resolution.

    Input B x 3 x H x W (normalised RGB), output B x C x H/3 x W/3 with C = 32 at width 1.
    """

    def __init__(self, width: float = 1.0) -> None:
        super().__init__()
        c = scaled(32, width)
        self.out_channels = c
        self.firstconv = nn.Sequential(
            conv_relu(3, c, 3, FEATURE_STRIDE, 1), conv_relu(c, c), conv_relu(c, c)
        )
        self.layer1 = nn.Sequential(
            ResidualBlock(c, dilation=2, leaky=False), ResidualBlock(c, dilation=2, leaky=False)
        )
        for i, pool in enumerate(SPP_POOLS, start=1):
            self.add_module(f"branch{i}", nn.Sequential(nn.AvgPool2d(pool, pool), conv_relu(c, c, 1, 1, 0)))
        self.lastconv = nn.Sequential(
            conv_relu(5 * c, scaled(64, width)), nn.Conv2d(scaled(64, width), c, 1, 1, 0, bias=False)
        )

    def forward(self, image: Tensor) -> Tensor:
        x = self.layer1(self.firstconv(image))
        size = x.shape[-2:]
        pyramid = [
            F.interpolate(getattr(self, f"branch{i}")(x), size, mode="bilinear", align_corners=False)
            for i in (4, 3, 2, 1)
        ]
        return self.lastconv(torch.cat([x, *pyramid], dim=1))


class FeatNetHR(nn.Module):
    """Full-resolution features for SegRefine. B x 3 x H x W -> B x 16 x H x W."""

    def __init__(self, width: float = 1.0) -> None:
        super().__init__()
        c = scaled(16, width)
        self.out_channels = c
        self.conv1 = nn.Sequential(conv_relu(3, c), conv_relu(c, c), nn.Conv2d(c, c, 1, 1, 0, bias=False))

    def forward(self, image: Tensor) -> Tensor:
        return self.conv1(image)


class SegNet(nn.Module):
    """2D encoder-decoder over one plane of the plane-sweep volume.

    Input N x 2C x h x w' (w' = w + max_disparity/3, both multiples of 32), output N x 1 x h x w'
    logits of P(disparity > plane).
    """

    def __init__(self, in_channels: int, width: float = 1.0) -> None:
        super().__init__()
        c1, c2, c3 = scaled(128, width), scaled(256, width), scaled(512, width)
        enc = [in_channels, c1, c2, c3, c3, c3]
        for i in range(1, 6):
            self.add_module(f"conv{i}", conv_lrelu(enc[i - 1], enc[i], 3, 2, 1))
            self.add_module(f"conv{i}_1", conv_lrelu(enc[i], enc[i]))
        # deconv{i} goes from level i to level i-1 and is concatenated with that level's skip
        dec_out = {5: c3, 4: c3, 3: c2, 2: c1, 1: scaled(64, width)}
        dec_in = {5: c3, 4: c3, 3: c3, 2: c2, 1: c1}
        for i in range(5, 0, -1):
            self.add_module(f"deconv{i}", deconv_lrelu(dec_in[i], dec_out[i]))
            self.add_module(f"deconv{i}_1", conv_lrelu(enc[i - 1] + dec_out[i], dec_out[i]))
        self.last_conv = nn.Conv2d(dec_out[1], 1, 3, 1, 1, bias=True)
        # channels of the largest full-resolution activation (bounds memory per plane)
        self.widest_channels = enc[0] + dec_out[1]

    def forward(self, volume: Tensor) -> Tensor:
        skips = [volume]
        x = volume
        for i in range(1, 6):
            x = getattr(self, f"conv{i}_1")(getattr(self, f"conv{i}")(x))
            skips.append(x)
        for i in range(5, 0, -1):
            up = getattr(self, f"deconv{i}")(x)
            x = getattr(self, f"deconv{i}_1")(torch.cat([skips[i - 1], up], dim=1))
        return self.last_conv(x)


class SegRefine(nn.Module):
    """Refines one plane's upsampled logits with FeatNetHR features (binary model)."""

    def __init__(self, hr_channels: int, width: float = 1.0) -> None:
        super().__init__()
        c = scaled(8, width)
        self.conv1 = nn.Sequential(conv_lrelu(hr_channels + 1, c))
        self.classif1 = nn.Conv2d(c, 1, 3, 1, 1, bias=False)

    def forward(self, logits: Tensor, hr_features: Tensor) -> Tensor:
        """N x 1 x H x W logits, N x C x H x W features -> N x 1 x H x W refined logits."""
        return self.classif1(self.conv1(torch.cat([logits, hr_features], dim=1)))


class DispRefine(nn.Module):
    """Residual refinement of normalised disparity guided by the left image."""

    DILATIONS = (1, 2, 4, 8, 1, 1)

    def __init__(self, width: float = 1.0) -> None:
        super().__init__()
        c = scaled(32, width)
        self.conv2d_feature = conv_lrelu(4, c)
        self.residual_astrous_blocks = nn.ModuleList(
            ResidualBlock(c, dilation=d, leaky=True) for d in self.DILATIONS
        )
        self.conv2d_out = nn.Conv2d(c, 1, 3, 1, 1, bias=True)

    def forward(self, disparity: Tensor, image: Tensor) -> Tensor:
        """B x 1 x H x W normalised disparity, B x 3 x H x W image -> refined, same shape."""
        x = self.conv2d_feature(torch.cat([disparity, image], dim=1))
        for block in self.residual_astrous_blocks:
            x = block(x)
        return disparity + self.conv2d_out(x)


class RefineNet3D(nn.Module):
    """3D regulariser over the low-resolution plane logits (GC-Net style encoder-decoder).

    Works on every plane but the first, which is passed through unchanged; the remaining
    plane count must be a multiple of 16 and h, w multiples of 16 (the published
    "(max - min) divisible by 48" rule).
    """

    def __init__(self, feature_channels: int, width: float = 1.0) -> None:
        super().__init__()
        c16, c32, c64 = scaled(16, width), scaled(32, width), scaled(64, width)
        self.conf_preprocess = conv3d_relu(1, c16)
        cin = feature_channels + c16
        layers: dict[str, nn.Module] = {
            "l19": conv3d_relu(cin, c16),
            "l20": conv3d_relu(c16, c16),
            "l21": conv3d_relu(cin, c32, 2),
            "l22": conv3d_relu(c32, c32),
            "l23": conv3d_relu(c32, c32),
            "l24": conv3d_relu(c32, c32, 2),
            "l25": conv3d_relu(c32, c32),
            "l26": conv3d_relu(c32, c32),
            "l27": conv3d_relu(c32, c32, 2),
            "l28": conv3d_relu(c32, c32),
            "l29": conv3d_relu(c32, c32),
            "l30": conv3d_relu(c32, c64, 2),
            "l31": conv3d_relu(c64, c64),
            "l32": conv3d_relu(c64, c64),
            "l33": deconv3d_relu(c64, c32),
            "l34": deconv3d_relu(c32, c32),
            "l35": deconv3d_relu(c32, c32),
            "l36": deconv3d_relu(c32, c16),
            "l37": nn.Conv3d(c16, 1, 3, 1, 1, bias=True),
        }
        self.layer3d = nn.ModuleDict(layers)

    @staticmethod
    def fits(planes: int) -> bool:
        return planes > 1 and (planes - 1) % 16 == 0

    def forward(self, logits: Tensor, features: Tensor) -> Tensor:
        """B x P x h x w logits, B x C x h x w left features -> B x P x h x w refined logits."""
        if not self.fits(logits.shape[1]):
            raise ValueError(f"RefineNet3D needs 16k + 1 planes, got {logits.shape[1]}")
        rest = logits[:, 1:].unsqueeze(1)
        expanded = features.unsqueeze(2).expand(-1, -1, rest.shape[2], -1, -1)
        x = torch.cat([expanded, self.conf_preprocess(rest)], dim=1)
        m = self.layer3d
        s20 = m["l20"](m["l19"](x))
        d1 = m["l21"](x)
        s23 = m["l23"](m["l22"](d1))
        d2 = m["l24"](d1)
        s26 = m["l26"](m["l25"](d2))
        d3 = m["l27"](d2)
        s29 = m["l29"](m["l28"](d3))
        y = m["l32"](m["l31"](m["l30"](d3)))
        y = m["l33"](y) + s29
        y = m["l34"](y) + s26
        y = m["l35"](y) + s23
        y = m["l36"](y) + s20
        return torch.cat([logits[:, :1], m["l37"](y)[:, 0]], dim=1)
