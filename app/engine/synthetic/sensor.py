"""The camera model of the 3D scenes: linear radiance in, sensor images out.

Exposure (one for both views, from the left view's bright end), display gamma and, when
photometric: per-view gain and white balance, vignetting, slight blur, and Gaussian read noise
plus shot-like noise whose variance grows with the signal. Grey sensors give three equal
channels (and one noise draw for all three).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from app.engine.synthetic.layered import _rand

LUMA = (0.299, 0.587, 0.114)


def expose(
    g: torch.Generator, left: Tensor, right: Tensor, grey_share: float, photometric: bool
) -> tuple[Tensor, Tensor]:
    """Linear radiance (3 x H x W each) to camera images in [0, 1] (3 x H x W each)."""
    weights = torch.tensor(LUMA, device=left.device)[:, None, None]
    grey = _rand(g) < grey_share
    bright = float(torch.quantile((left * weights).sum(0).flatten(), 0.97))
    exposure = _rand(g, 0.7, 0.95) / max(bright, 1e-6)
    out = []
    for img in (left, right):
        img = img * exposure
        if photometric:
            img = _optics(g, img)
        if grey:
            img = (img * weights).sum(0, keepdim=True).expand(3, -1, -1)
        img = img.clamp(0, 1) ** (1 / 2.2)
        if photometric:
            img = _noise(g, img, grey)
        out.append(img.clamp(0, 1).contiguous())
    return out[0], out[1]


def _optics(g: torch.Generator, img: Tensor) -> Tensor:
    """Per view: gain, white balance, vignetting and slight blur, on linear radiance (3 x H x W)."""
    h, w = img.shape[1:]
    gain = _rand(g, 0.85, 1.15) * (1 + 0.08 * (torch.rand(3, 1, 1, generator=g).to(img) - 0.5))
    ys, xs = torch.meshgrid(
        torch.linspace(-1, 1, h, device=img.device),
        torch.linspace(-1, 1, w, device=img.device),
        indexing="ij",
    )
    rho2 = (xs * xs + ys * ys * (h / w) ** 2) / (1 + (h / w) ** 2)
    img = img * gain * (1 - _rand(g, 0.0, 0.35) * rho2)
    sigma = _rand(g, 0.0, 0.8)
    if sigma > 0.2:
        x = torch.arange(-2, 3, dtype=torch.float32, device=img.device)
        k = torch.exp(-0.5 * (x / sigma) ** 2)
        k = k / k.sum()
        pad = F.pad(img[None], (2, 2, 2, 2), mode="replicate")
        pad = F.conv2d(pad, k.view(1, 1, 1, 5).expand(3, 1, 1, 5), groups=3)
        img = F.conv2d(pad, k.view(1, 1, 5, 1).expand(3, 1, 5, 1), groups=3)[0]
    return img


def _noise(g: torch.Generator, img: Tensor, grey: bool) -> Tensor:
    """Gaussian read noise plus shot-like noise whose variance grows with the signal."""
    read, shot = _rand(g, 0.0, 0.012), _rand(g, 0.0, 0.0006)
    shape = (1, *img.shape[1:]) if grey else img.shape
    n = torch.randn(shape, generator=g).to(img)
    return img + n * (read * read + shot * img).sqrt()
