"""Procedural stereo scenes with exact disparity, rendered with torch on any device.

A scene is a stack of layers. Each layer has a texture and a shape mask defined in left-image
coordinates, and a planar disparity ``d(x, y) = a + b x + c y``. Because d is affine, the
right view can be rendered exactly by inverse mapping: the right pixel x_r sees the left
coordinate x = (x_r + a + c y) / (1 - b). In both views the layer with the largest disparity
(the nearest) wins, so occlusions are correct in both views. Layer 0 is a slanted background
covering everything.

Textures come from natural images (scikit-image's sample images, when installed; the
Middlebury pair is never used) and procedural patterns: multi-scale noise, stripes,
checkers and nearly flat patches. The views then differ photometrically (gain, gamma,
noise, blur). Everything is drawn from a seeded ``torch.Generator``: same seed, same scene.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

NATURAL_IMAGES = (
    "astronaut", "coffee", "chelsea", "rocket", "brick", "grass", "gravel", "camera",
    "text", "moon", "page", "coins", "horse", "hubble_deep_field", "retina", "immunohistochemistry",
)  # fmt: skip


@dataclass(frozen=True)
class SceneConfig:
    height: int = 192
    width: int = 288
    max_disparity: float = 192.0
    min_layers: int = 3
    max_layers: int = 8
    natural_fraction: float = 0.5  # share of layers textured with natural images
    photometric: bool = True


@dataclass
class StereoSample:
    left: Tensor  # 3 x H x W float in [0, 1]
    right: Tensor  # 3 x H x W float in [0, 1]
    disparity: Tensor  # H x W float, exact, in left-image pixels


@cache
def _natural_textures() -> tuple[Tensor, ...]:
    """Grey-or-colour natural images as 3 x h x w float tensors (empty without scikit-image)."""
    try:
        from skimage import data
    except ImportError:
        return ()
    out = []
    for name in NATURAL_IMAGES:
        try:
            img = np.asarray(getattr(data, name)())
        except Exception:  # a sample that needs a download is skipped
            continue
        if img.ndim == 2:
            img = np.repeat(img[..., None], 3, axis=2)
        img = img[..., :3].astype(np.float32)
        img /= max(float(img.max()), 1.0)
        out.append(torch.from_numpy(img).permute(2, 0, 1).contiguous())
    return tuple(out)


def _rand(g: torch.Generator, lo: float = 0.0, hi: float = 1.0) -> float:
    return lo + (hi - lo) * float(torch.rand((), generator=g))


def _randint(g: torch.Generator, lo: int, hi: int) -> int:
    """Uniform integer in [lo, hi]."""
    return int(torch.randint(lo, hi + 1, (), generator=g))


def _noise_texture(g: torch.Generator, h: int, w: int, device: torch.device) -> Tensor:
    """Colour multi-scale value noise: sum of upsampled random grids, 1/f-like."""
    out = torch.zeros(3, h, w, device=device)
    scale, amp = _randint(g, 2, 8), 1.0
    while scale < max(h, w) and amp > 0.05:
        grid = torch.rand(1, 3, max(2, h // scale), max(2, w // scale), generator=g).to(device)
        out += amp * F.interpolate(grid, (h, w), mode="bicubic", align_corners=False)[0]
        scale, amp = scale * 2, amp * _rand(g, 0.4, 0.8)
    out -= out.amin(dim=(1, 2), keepdim=True)
    return out / out.amax(dim=(1, 2), keepdim=True).clamp_min(1e-6)


def _pattern_texture(g: torch.Generator, h: int, w: int, device: torch.device) -> Tensor:
    ys, xs = torch.meshgrid(torch.arange(h, device=device), torch.arange(w, device=device), indexing="ij")
    kind = _randint(g, 0, 2)
    colours = torch.rand(2, 3, 1, 1, generator=g).to(device)
    if kind == 0:  # stripes at a random angle and period
        angle, period = _rand(g, 0, math.pi), _rand(g, 4, 40)
        phase = (xs * math.cos(angle) + ys * math.sin(angle)) / period
        t = (torch.sin(2 * math.pi * phase) > 0).float()
    elif kind == 1:  # checkers
        size = _randint(g, 4, 32)
        t = (((xs // size) + (ys // size)) % 2).float()
    else:  # nearly flat: a faint gradient, hard to match on purpose
        t = (xs / w * _rand(g, -0.1, 0.1) + ys / h * _rand(g, -0.1, 0.1)).float() + 0.5
    return colours[0] * (1 - t) + colours[1] * t


def _natural_texture(g: torch.Generator, h: int, w: int, device: torch.device) -> Tensor | None:
    images = _natural_textures()
    if not images:
        return None
    img = images[_randint(g, 0, len(images) - 1)].to(device)
    zoom = _rand(g, 0.5, 2.0)
    th, tw = max(8, int(h * zoom)), max(8, int(w * zoom))
    ih, iw = img.shape[1:]
    if ih < th or iw < tw:
        img = F.interpolate(img[None], (max(ih, th), max(iw, tw)), mode="bilinear", align_corners=False)[0]
        ih, iw = img.shape[1:]
    y0, x0 = _randint(g, 0, ih - th), _randint(g, 0, iw - tw)
    crop = img[:, y0 : y0 + th, x0 : x0 + tw]
    if _rand(g) < 0.5:
        crop = crop.flip(2)
    return F.interpolate(crop[None], (h, w), mode="bilinear", align_corners=False)[0]


def _texture(g: torch.Generator, h: int, w: int, device: torch.device, natural: float) -> Tensor:
    if _rand(g) < natural:
        tex = _natural_texture(g, h, w, device)
        if tex is not None:
            return tex
    return _noise_texture(g, h, w, device) if _rand(g) < 0.7 else _pattern_texture(g, h, w, device)


def _shape_mask(g: torch.Generator, h: int, w: int, device: torch.device) -> Tensor:
    """A random ellipse, rectangle or polygon-ish blob (soft edge of one pixel), H x W."""
    ys, xs = torch.meshgrid(
        torch.arange(h, device=device, dtype=torch.float32),
        torch.arange(w, device=device, dtype=torch.float32),
        indexing="ij",
    )
    cx, cy = _rand(g, 0, w), _rand(g, 0, h)
    rx, ry = _rand(g, 0.05, 0.35) * w, _rand(g, 0.05, 0.35) * h
    angle = _rand(g, 0, math.pi)
    u = ((xs - cx) * math.cos(angle) + (ys - cy) * math.sin(angle)) / rx
    v = (-(xs - cx) * math.sin(angle) + (ys - cy) * math.cos(angle)) / ry
    kind = _randint(g, 0, 2)
    if kind == 0:
        dist = torch.sqrt(u**2 + v**2)
    elif kind == 1:
        dist = torch.maximum(u.abs(), v.abs())
    else:  # star-like blob: radius modulated by angle
        theta = torch.atan2(v, u)
        k, amp = _randint(g, 3, 7), _rand(g, 0.1, 0.4)
        dist = torch.sqrt(u**2 + v**2) / (1 + amp * torch.sin(k * theta + _rand(g, 0, 6.28)))
    return (1.0 - dist).mul(min(rx, ry)).clamp(0, 1)


def _disparity_plane(
    g: torch.Generator, cfg: SceneConfig, lo: float, hi: float
) -> tuple[float, float, float]:
    """(a, b, c) of d = a + b x + c y, staying within [lo, hi] over the whole image."""
    d0 = _rand(g, lo, hi)  # disparity at the image centre
    room = min(d0 - lo, hi - d0)  # how far the plane may tilt away from d0 at a corner
    angle = _rand(g, 0, 2 * math.pi)
    reach = abs(math.cos(angle)) * cfg.width / 2 + abs(math.sin(angle)) * cfg.height / 2
    slope = _rand(g, 0, 1) * room / max(reach, 1.0)
    b, c = slope * math.cos(angle), slope * math.sin(angle)
    b = max(min(b, 0.5), -0.5)  # keeps 1 - b far from zero
    a = d0 - b * cfg.width / 2 - c * cfg.height / 2
    return a, b, c


def _sample(img: Tensor, x: Tensor, y: Tensor) -> Tensor:
    """Bilinear sample C x H x W at pixel coordinates x, y (H x W); zeros outside."""
    h, w = img.shape[-2:]
    grid = torch.stack([2 * (x + 0.5) / w - 1, 2 * (y + 0.5) / h - 1], dim=-1)[None]
    return F.grid_sample(img[None], grid, mode="bilinear", padding_mode="border", align_corners=False)[0]


def render_scene(
    seed: int, cfg: SceneConfig = SceneConfig(), device: str | torch.device = "cpu"
) -> StereoSample:
    """Render one stereo sample; the same seed and config always give the same scene."""
    g = torch.Generator().manual_seed(seed)
    dev = torch.device(device)
    h, w = cfg.height, cfg.width
    top = _rand(g, 0.15, 1.0) * cfg.max_disparity  # this scene's disparity range
    n_layers = _randint(g, cfg.min_layers, cfg.max_layers)
    ys, xs = torch.meshgrid(
        torch.arange(h, device=dev, dtype=torch.float32),
        torch.arange(w, device=dev, dtype=torch.float32),
        indexing="ij",
    )
    best_l = torch.full((h, w), -1e9, device=dev)
    best_r = torch.full((h, w), -1e9, device=dev)
    left = torch.zeros(3, h, w, device=dev)
    right = torch.zeros(3, h, w, device=dev)
    disparity = torch.zeros(h, w, device=dev)
    for i in range(n_layers):
        lo, hi = (0.0, top * 0.5) if i == 0 else (top * 0.1, top)
        a, b, c = _disparity_plane(g, cfg, lo, hi)
        # texture and mask live on a canvas that extends `top` px to the right of the
        # image: the right view looks up to `top` px further right in left coordinates
        pad = math.ceil(top) + 8
        tex = _texture(g, h, w + pad, dev, cfg.natural_fraction)
        mask = torch.ones(h, w + pad, device=dev) if i == 0 else _shape_mask(g, h, w + pad, dev)
        layer = torch.cat([tex, mask[None]])
        # both views sample the canvas between texels (offset o), so both are resampled
        # alike; otherwise the right view alone would be interpolated, hence blurrier
        o = _rand(g, 0.25, 0.75)
        _composite(layer, xs + o, ys, a + b * xs + c * ys, best_l, left, disparity)
        # right view: x_r sees left coordinate x = (x_r + a + c y) / (1 - b)
        x_left = (xs + a + c * ys) / (1 - b)
        _composite(layer, x_left + o, ys, a + b * x_left + c * ys, best_r, right, None)
    if cfg.photometric:
        left, right = _photometric(g, left), _photometric(g, right)
    return StereoSample(left.clamp(0, 1), right.clamp(0, 1), disparity)


def _composite(
    layer: Tensor, x: Tensor, y: Tensor, d: Tensor, best: Tensor, image: Tensor, disparity: Tensor | None
) -> None:
    """Draw a layer where it covers the pixel and is nearer than what is there."""
    sampled = _sample(layer, x, y)
    covered = (sampled[3] > 0.5) & (d > best)
    best[covered] = d[covered]
    image[:, covered] = sampled[:3, covered]
    if disparity is not None:
        disparity[covered] = d[covered]


def _photometric(g: torch.Generator, img: Tensor) -> Tensor:
    """Per-view gain, gamma, colour balance, blur and noise."""
    img = img.clamp(0, 1) ** _rand(g, 0.8, 1.25)
    img = img * _rand(g, 0.8, 1.2) * (1 + 0.05 * (torch.rand(3, 1, 1, generator=g).to(img) - 0.5))
    if _rand(g) < 0.3:
        k = torch.tensor([0.25, 0.5, 0.25], device=img.device)
        kernel = (k[:, None] * k[None, :])[None, None].expand(3, 1, 3, 3)
        img = F.conv2d(F.pad(img[None], (1, 1, 1, 1), mode="replicate"), kernel, groups=3)[0]
    sigma = _rand(g, 0, 0.02)
    return img + sigma * torch.randn(img.shape, generator=g).to(img)


def to_uint8(img: Tensor) -> np.ndarray:
    """3 x H x W float [0, 1] -> H x W x 3 RGB uint8."""
    return (img.clamp(0, 1) * 255 + 0.5).byte().permute(1, 2, 0).cpu().numpy()
