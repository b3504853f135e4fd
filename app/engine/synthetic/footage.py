"""Synthetic footage with a domain shift: short sequences the bundled model has not seen.

A sequence is a few *shots*; each shot is one wide layered scene (``app.engine.synthetic.layered``'s
geometry: slanted planar layers with exact occlusions) through which a window pans slowly, as
a camera moving sideways would see it. Two things differ from the training generator:

- the textures come from a family layered.py does not draw: cellular (Worley) patterns with
  dark cracks between cells, and marble veins (a sine of turbulent noise), both in muted colours;
- the sensor: every frame gets fresh noise of ``noise`` (0.045 by default, layered.py draws at
  most 0.02), a vignette, and a right camera about 10 % darker.

Windows move by whole pixels, so the cropped disparity stays exact. ``write_footage`` stores a
sequence as ``left/``, ``right/`` and ``disparity/*.pfm`` (the SceneFlow layout), which the app's
sources open as a folder with ground truth. Same config, same footage.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from app.engine.errors import UserError
from app.engine.synthetic.layered import (
    SceneConfig,
    _composite,
    _disparity_plane,
    _rand,
    _randint,
    _shape_mask,
    to_uint8,
)


@dataclass(frozen=True)
class FootageConfig:
    height: int = 240
    width: int = 320
    frames: int = 300
    fps: float = 10.0
    shots: int = 3  # scenes; the window pans through each for frames / shots frames
    max_disparity: float = 64.0
    pan_px: int = 96  # how far the window travels across one shot's scene
    noise: float = 0.045  # sensor noise (std, of a [0, 1] intensity), drawn anew every frame
    right_gain: float = 0.9
    seed: int = 0

    def __post_init__(self) -> None:
        if self.height < 96 or self.width < 96:
            raise UserError(f"footage must be at least 96x96, got {self.height}x{self.width}")
        if self.frames < 1 or self.shots < 1 or self.shots > self.frames:
            raise UserError(
                f"footage needs 1 <= shots <= frames, got {self.shots} shots, {self.frames} frames"
            )


@dataclass
class FootageFrame:
    left: np.ndarray  # H x W x 3 RGB uint8
    right: np.ndarray  # H x W x 3 RGB uint8
    disparity: np.ndarray  # H x W float32 px, exact
    timestamp: float


def cellular_texture(g: torch.Generator, h: int, w: int) -> Tensor:
    """3 x h x w: Worley cells (each its own muted colour, shaded by the distance to its seed)
    with dark cracks where two cells meet."""
    cells = _randint(g, 20, 120)
    seeds = torch.rand(cells, 2, generator=g) * torch.tensor([h, w])
    colours = 0.3 + 0.4 * torch.rand(cells, 3, generator=g)
    ys, xs = torch.meshgrid(
        torch.arange(h, dtype=torch.float32), torch.arange(w, dtype=torch.float32), indexing="ij"
    )
    dist = torch.cdist(torch.stack([ys, xs], -1).view(-1, 2), seeds)  # (h w) x cells
    two = dist.topk(2, dim=1, largest=False)
    nearest, gap = two.indices[:, 0], (two.values[:, 1] - two.values[:, 0])
    crack = (gap / _rand(g, 1.5, 4.0)).clamp(0, 1)  # 0 on the border between two cells
    shade = 1.0 - 0.4 * (two.values[:, 0] / two.values[:, 0].max().clamp_min(1))
    tex = colours[nearest] * (shade * (0.25 + 0.75 * crack))[:, None]
    return tex.t().reshape(3, h, w)


def marble_texture(g: torch.Generator, h: int, w: int) -> Tensor:
    """3 x h x w: marble veins, a sine along a random direction displaced by turbulent noise."""
    turbulence = torch.zeros(1, 1, h, w)
    scale, amp = 4, 1.0
    while scale < max(h, w):
        grid = torch.rand(1, 1, max(2, h // scale), max(2, w // scale), generator=g)
        turbulence += amp * F.interpolate(grid, (h, w), mode="bicubic", align_corners=False)
        scale, amp = scale * 2, amp * 0.55
    ys, xs = torch.meshgrid(
        torch.arange(h, dtype=torch.float32), torch.arange(w, dtype=torch.float32), indexing="ij"
    )
    angle, period = _rand(g, 0, math.pi), _rand(g, 12, 48)
    phase = (xs * math.cos(angle) + ys * math.sin(angle)) / period + _rand(g, 2, 5) * turbulence[0, 0]
    t = (0.5 + 0.5 * torch.sin(2 * math.pi * phase)) ** _rand(g, 0.5, 3.0)
    base, vein = 0.35 + 0.4 * torch.rand(3, 1, 1, generator=g), 0.1 + 0.3 * torch.rand(3, 1, 1, generator=g)
    return base * (1 - t) + vein * t


def render_shot(seed: int, height: int, width: int, max_disparity: float) -> tuple[Tensor, Tensor, Tensor]:
    """One wide scene of the new texture family, without photometric effects:
    left, right (3 x H x W in [0, 1]) and exact disparity (H x W px)."""
    g = torch.Generator().manual_seed(seed)
    cfg = SceneConfig(height, width, max_disparity)
    top = _rand(g, 0.5, 1.0) * max_disparity
    ys, xs = torch.meshgrid(
        torch.arange(height, dtype=torch.float32), torch.arange(width, dtype=torch.float32), indexing="ij"
    )
    best_l, best_r = torch.full((height, width), -1e9), torch.full((height, width), -1e9)
    left, right, disparity = (
        torch.zeros(3, height, width),
        torch.zeros(3, height, width),
        torch.zeros(height, width),
    )
    for i in range(_randint(g, 4, 7)):
        lo, hi = (0.0, top * 0.4) if i == 0 else (top * 0.15, top)
        a, b, c = _disparity_plane(g, cfg, lo, hi)
        pad = math.ceil(top) + 8
        tex = (
            cellular_texture(g, height, width + pad)
            if _rand(g) < 0.5
            else marble_texture(g, height, width + pad)
        )
        mask = (
            torch.ones(height, width + pad)
            if i == 0
            else _shape_mask(g, height, width + pad, torch.device("cpu"))
        )
        layer = torch.cat([tex, mask[None]])
        o = _rand(g, 0.25, 0.75)
        _composite(layer, xs + o, ys, a + b * xs + c * ys, best_l, left, disparity)
        x_left = (xs + a + c * ys) / (1 - b)
        _composite(layer, x_left + o, ys, a + b * x_left + c * ys, best_r, right, None)
    return left, right, disparity


def _sensor(img: Tensor, gain: float, noise: float, g: torch.Generator) -> Tensor:
    """The camera: a vignette, a gain and fresh noise (3 x H x W in [0, 1])."""
    h, w = img.shape[-2:]
    ys, xs = torch.meshgrid(torch.linspace(-1, 1, h), torch.linspace(-1, 1, w), indexing="ij")
    vignette = 1.0 - 0.25 * (xs**2 + ys**2) / 2
    return (img * vignette * gain + noise * torch.randn(img.shape, generator=g)).clamp(0, 1)


def footage_frames(cfg: FootageConfig = FootageConfig()) -> Iterator[FootageFrame]:
    """The frames of the sequence, in order."""
    per_shot = math.ceil(cfg.frames / cfg.shots)
    noise_g = torch.Generator().manual_seed(cfg.seed * 7919 + 1)
    index = 0
    for shot in range(cfg.shots):
        left, right, disparity = render_shot(
            cfg.seed * 1000 + shot, cfg.height, cfg.width + cfg.pan_px, cfg.max_disparity
        )
        count = min(per_shot, cfg.frames - index)
        for k in range(count):
            x = round(cfg.pan_px * k / max(1, per_shot - 1))  # slow, steady: the camera moves sideways
            window = (slice(None), slice(None), slice(x, x + cfg.width))
            yield FootageFrame(
                to_uint8(_sensor(left[window], 1.0, cfg.noise, noise_g)),
                to_uint8(_sensor(right[window], cfg.right_gain, cfg.noise, noise_g)),
                disparity[:, x : x + cfg.width].numpy().astype(np.float32),
                index / cfg.fps,
            )
            index += 1


def write_footage(folder: str | Path, cfg: FootageConfig = FootageConfig()) -> int:
    """Write the sequence as ``left/``, ``right/`` (PNG) and ``disparity/`` (PFM) under ``folder``;
    the number of frames written."""
    from app.engine.fileio import make_folder
    from app.engine.formats import write_color_png, write_pfm

    root = make_folder(folder, "footage folder")
    for sub in ("left", "right", "disparity"):
        make_folder(root / sub, "footage folder")
    count = 0
    for i, frame in enumerate(footage_frames(cfg)):
        name = f"{i:06d}"
        write_color_png(root / "left" / f"{name}.png", frame.left)
        write_color_png(root / "right" / f"{name}.png", frame.right)
        write_pfm(root / "disparity" / f"{name}.pfm", frame.disparity)
        count += 1
    return count
