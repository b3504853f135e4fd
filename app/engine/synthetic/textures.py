"""Square textures for the 3D scenes (``rooms``), packed side by side into one atlas.

Natural images and the noise and pattern textures come from ``layered``; wood grain, tiles and
plaster are added here. Plaster is the nearly textureless one: a flat colour with faint, smooth
variation (amplitude 0.5-2 %), the kind of surface on which matching has nothing to hold on to.
All draws use the scene's seeded ``torch.Generator`` on the CPU, so textures do not depend on
the device the scene is rendered on.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor

from app.engine.synthetic.layered import (
    _natural_texture,
    _noise_texture,
    _pattern_texture,
    _rand,
    _randint,
)

TEXTURE_SIZE = 256  # texels a side
CPU = torch.device("cpu")


def _coords(size: int) -> tuple[Tensor, Tensor]:
    """Row and column coordinates in [0, 1), size x size each."""
    t = torch.arange(size, dtype=torch.float32) / size
    ys, xs = torch.meshgrid(t, t, indexing="ij")
    return ys, xs


def _smooth_noise(g: torch.Generator, size: int, cells: int) -> Tensor:
    """One channel of bicubic value noise with ``cells`` cells a side, size x size, about [0, 1]."""
    grid = torch.rand(1, 1, cells, cells, generator=g)
    return F.interpolate(grid, (size, size), mode="bicubic", align_corners=False)[0, 0]


def plaster(g: torch.Generator, size: int = TEXTURE_SIZE) -> Tensor:
    """Nearly textureless: 1 plus faint smooth blotches (0.5-2 % amplitude), 3 x size x size."""
    amp = _rand(g, 0.005, 0.02)
    t = _smooth_noise(g, size, _randint(g, 3, 8)) - 0.5
    return (1.0 + amp * t).expand(3, size, size).contiguous()


def wood(g: torch.Generator, size: int = TEXTURE_SIZE) -> Tensor:
    """Wood grain: rings around a far axis, warped by noise, in two browns; 3 x size x size."""
    ys, xs = _coords(size)
    warp = _smooth_noise(g, size, _randint(g, 2, 5)) * _rand(g, 0.5, 2.0)
    rings = _rand(g, 6, 30)
    phase = (ys * rings + warp + xs * _rand(g, -1, 1)) % 1.0
    t = phase ** _rand(g, 1.5, 4.0)
    dark = torch.tensor([_rand(g, 0.25, 0.45), _rand(g, 0.12, 0.25), _rand(g, 0.05, 0.12)])
    light = dark * _rand(g, 1.4, 2.2)
    fibre = 0.08 * (torch.rand(1, size, 1, generator=g) - 0.5)  # streaks along the grain
    out = dark[:, None, None] * t + light[:, None, None] * (1 - t) + fibre
    return out.clamp(0, 1)


def tiles(g: torch.Generator, size: int = TEXTURE_SIZE) -> Tensor:
    """Square tiles with grout lines and slight colour variation per tile; 3 x size x size."""
    n = _randint(g, 2, 8)
    ys, xs = _coords(size)
    iy, ix = (ys * n).long(), (xs * n).long()
    fy, fx = (ys * n) % 1.0, (xs * n) % 1.0
    grout = _rand(g, 0.02, 0.06)
    line = (fx < grout) | (fy < grout)
    base = torch.rand(3, generator=g) * 0.8 + 0.1
    jitter = 1 + _rand(g, 0.0, 0.15) * (torch.rand(n, n, generator=g) - 0.5)
    tile = base[:, None, None] * jitter[iy, ix]
    grout_colour = torch.rand(3, generator=g)[:, None, None] * 0.5 + 0.25
    return torch.where(line, grout_colour, tile).clamp(0, 1)


def fabric(g: torch.Generator, size: int = TEXTURE_SIZE) -> Tensor:
    """A fine woven check over multi-scale noise; 3 x size x size."""
    ys, xs = _coords(size)
    period = _randint(g, 6, 24)
    weave = 0.5 + 0.5 * torch.sin(2 * math.pi * xs * period) * torch.sin(2 * math.pi * ys * period)
    base = _noise_texture(g, size, size, CPU)
    return (base * (0.8 + 0.2 * weave)).clamp(0, 1)


def random_texture(g: torch.Generator, natural: float, size: int = TEXTURE_SIZE) -> Tensor:
    """A textured (not nearly flat) surface: natural image, noise, pattern, wood, tiles or fabric."""
    if _rand(g) < natural:
        tex = _natural_texture(g, size, size, CPU)
        if tex is not None:
            return tex
    kind = _randint(g, 0, 4)
    if kind == 0:
        return _noise_texture(g, size, size, CPU)
    if kind == 1:
        return _pattern_texture(g, size, size, CPU)
    return (wood, tiles, fabric)[kind - 2](g, size)


def sky(g: torch.Generator, size: int = TEXTURE_SIZE) -> Tensor:
    """Blue-to-haze gradient with soft clouds (rows: zenith at 0 to horizon at size); 3 x size x size."""
    ys, _ = _coords(size)
    zenith = torch.tensor([_rand(g, 0.2, 0.45), _rand(g, 0.4, 0.6), _rand(g, 0.75, 1.0)])
    haze = torch.tensor([0.85, 0.88, 0.92]) * _rand(g, 0.8, 1.0)
    out = zenith[:, None, None] * (1 - ys) + haze[:, None, None] * ys
    cover = _rand(g, 0.0, 0.8)
    clouds = (_smooth_noise(g, size, _randint(g, 3, 8)) - (1 - cover)).clamp(0, 1) / max(cover, 1e-3)
    return (out * (1 - clouds) + 0.95 * clouds).clamp(0, 1)


def atlas(textures: list[Tensor]) -> Tensor:
    """Textures of one size side by side: 3 x S x (K S)."""
    return torch.cat(textures, dim=2)
