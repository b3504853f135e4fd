"""3D stereo scenes with exact disparity: rooms, corridors and outdoor scenes, ray cast in torch.

Where ``layered`` stacks fronto-parallel and slanted planes, this generator builds indoor and
outdoor layouts in 3D (``layout``): floor, walls and ceiling in perspective, furniture-like boxes
and cylinders, thin structures (railings, chair and table legs, door frames, cables 1-6 px wide),
and large nearly textureless surfaces (blank walls and ceilings) under smooth Lambertian shading
from point lights (falloff 1 / (r^2 + s^2), s the lamp's size) or the sun.

A rectified pinhole pair sees it: the right camera sits ``B`` to the right of the left one along
the camera's x axis, so a left pixel whose ray hits at depth Z has disparity ``f B / Z`` exactly
(``raycast``). The focal length comes from a field of view drawn per scene; the baseline is then
set from the nearest depth the left view sees, so that the scene's largest disparity is a drawn
value between ``min_top_disparity`` and ``max_disparity`` (never above it). Outdoors the sky is a
sphere whose disparity is about 0.05-2 px.

Textures are mapped in surface coordinates, so both views see the same texture at the same 3D
point; with ``photometric=False`` the views differ only by visibility. Images are supersampled
(``supersample`` squared rays per pixel, box filtered); the disparity is that of the pixel centre.
The camera then applies exposure, display gamma, vignetting, white balance and gain differences,
slight blur, Gaussian plus shot-like noise, grey sensors (all channels equal) in some scenes and,
in about ``misalign_share`` of them, a vertical offset of the right view of up to 0.5 px (the
ground truth stays the left disparity). Same seed and config: the same tensors on the CPU.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

from app.engine.synthetic.layered import StereoSample, _rand
from app.engine.synthetic.layout import KIND_NAMES, SKY, Builder, Scene, indoor, outdoor
from app.engine.synthetic.raycast import SPHERE, DepthBuffer, Primitive, View, params_table, surface
from app.engine.synthetic.sensor import expose
from app.engine.synthetic.textures import TEXTURE_SIZE, atlas

__all__ = [
    "KIND_NAMES",
    "RoomConfig",
    "RoomRender",
    "Scene",
    "render_rig",
    "render_room",
    "render_room_labelled",
]
MIP_LEVELS = 4


@dataclass(frozen=True)
class RoomConfig:
    height: int = 192
    width: int = 384
    max_disparity: float = 192.0
    min_top_disparity: float = 20.0  # the scene's largest disparity is drawn from here to max_disparity
    outdoor_share: float = 0.25
    corridor_share: float = 0.2  # of the indoor scenes
    blank_share: float = 0.5  # chance that a wall is nearly textureless (ceilings: at least 0.7)
    blank_walls: bool = False  # indoor, every wall and ceiling blank, few objects, looking up at them
    natural_fraction: float = 0.4  # of the textured surfaces: natural images
    grey_share: float = 0.3  # grey cameras: all three channels equal
    misalign_share: float = 0.1  # right view shifted vertically by up to 0.5 px
    photometric: bool = True
    supersample: int = 2


@dataclass
class RoomRender:
    sample: StereoSample
    low_texture: Tensor  # H x W bool: the pixel sees a nearly textureless surface (or the sky)
    kind: Tensor  # H x W uint8, an index into KIND_NAMES
    focal_px: float
    baseline: float  # metres
    vertical_offset: float  # px, of the right view


def render_room(
    seed: int, cfg: RoomConfig = RoomConfig(), device: str | torch.device = "cpu"
) -> StereoSample:
    """One stereo sample: left/right 3 x H x W in [0, 1], disparity H x W (exact, left pixels)."""
    return render_room_labelled(seed, cfg, device).sample


def render_room_labelled(
    seed: int, cfg: RoomConfig = RoomConfig(), device: str | torch.device = "cpu"
) -> RoomRender:
    """The sample with its per-pixel masks and rig; the same seed and config, the same scene."""
    g = torch.Generator().manual_seed(seed)
    dev = torch.device(device)
    hfov = math.radians(_rand(g, 50.0, 90.0))
    focal = (cfg.width / 2) / math.tan(hfov / 2)
    b = Builder(g, cfg.natural_fraction, 1.0 if cfg.blank_walls else cfg.blank_share)
    b.scene.hfov = hfov
    if not cfg.blank_walls and _rand(g) < cfg.outdoor_share:
        outdoor(b, focal)
    else:
        indoor(
            b,
            focal,
            corridor=not cfg.blank_walls and _rand(g) < cfg.corridor_share,
            blank_walls=cfg.blank_walls,
        )
    scene = b.scene
    top = _rand(g, min(cfg.min_top_disparity, cfg.max_disparity), cfg.max_disparity)
    misaligned = cfg.photometric and _rand(g) < cfg.misalign_share
    drawn = _rand(g, -0.5, 0.5)  # drawn either way: the rest of the scene stays put
    offset = drawn if misaligned else 0.0
    centre = _centre_depth(scene, focal, cfg, dev)
    seen = centre.t[torch.isfinite(centre.t)]
    z_min = float(seen.min()) if seen.numel() else scene.extent
    baseline = min(top * z_min / focal, 0.6 * _free_distance(scene, dev))
    if scene.sky_material is not None:
        radius = max(focal * baseline / _rand(g, 0.05, 1.4), 1.5 * scene.extent)
        scene.prims.append(Primitive(SPHERE, (*scene.position, radius)))
        scene.materials.append(scene.sky_material)
        centre.add(scene.prims[-1:], len(scene.prims) - 1, scene.position)
    return _render(g, scene, focal, baseline, offset, centre, cfg, dev)


def render_rig(
    scene: Scene,
    focal_px: float,
    baseline: float,
    cfg: RoomConfig = RoomConfig(),
    seed: int = 0,
    device: str | torch.device = "cpu",
) -> RoomRender:
    """Render a given scene with a given rig (the left camera at ``scene.position``); ``seed``
    draws only the camera effects. For scenes built by hand (tests, demonstrations)."""
    dev = torch.device(device)
    centre = _centre_depth(scene, focal_px, cfg, dev)
    return _render(torch.Generator().manual_seed(seed), scene, focal_px, baseline, 0.0, centre, cfg, dev)


def _centre_depth(scene: Scene, focal: float, cfg: RoomConfig, dev: torch.device) -> DepthBuffer:
    """Depth and primitive at the left view's pixel centres."""
    left = View(
        scene.position,
        scene.rotation,
        focal,
        (cfg.width - 1) / 2,
        (cfg.height - 1) / 2,
        cfg.height,
        cfg.width,
    )
    centre = DepthBuffer(left, left.rays(dev))
    centre.add(scene.prims, 0, scene.position)
    return centre


def _render(
    g: torch.Generator,
    scene: Scene,
    focal: float,
    baseline: float,
    offset: float,
    centre: DepthBuffer,
    cfg: RoomConfig,
    dev: torch.device,
) -> RoomRender:
    """Both views, supersampled and shaded, through the camera; the left centres' disparity and masks."""
    h, w, s = cfg.height, cfg.width, cfg.supersample
    disparity = focal * baseline / centre.t  # a ray to nowhere (inf depth): 0
    mats = torch.tensor(scene.materials, dtype=torch.float32, device=dev)
    index = centre.index.clamp_min(0)
    low = (mats[index, 9] > 0.5) | (centre.index < 0)
    kind = torch.where(centre.index < 0, SKY, mats[index, 10].long()).to(torch.uint8)
    right_origin = scene.position + baseline * scene.rotation[:, 0]
    tex = _mipmaps(atlas(scene.textures).to(dev))
    cx, cy = (w * s - 1) / 2, (h * s - 1) / 2  # pixel (w - 1) / 2 at s x: the same optical centre
    views = [
        View(scene.position, scene.rotation, focal * s, cx, cy, h * s, w * s),
        View(right_origin, scene.rotation, focal * s, cx, cy + offset * s, h * s, w * s),
    ]
    linear = [F.avg_pool2d(_shade(scene, v, mats, tex, dev)[None], s)[0] for v in views]
    left, right = expose(g, linear[0], linear[1], cfg.grey_share, cfg.photometric)
    return RoomRender(StereoSample(left, right, disparity), low, kind, focal, baseline, offset)


def _free_distance(scene: Scene, dev: torch.device) -> float:
    """How far the camera can move along its x axis before it meets a surface (m)."""
    ray = torch.as_tensor(scene.rotation[:, 0], dtype=torch.float32, device=dev).reshape(3, 1, 1)
    buf = DepthBuffer(None, ray)
    buf.add(scene.prims, 0, scene.position)
    return min(float(buf.t[0, 0]), 1e4)


def _mipmaps(tex: Tensor) -> Tensor:
    """The atlas (3 x S x K S) at 1, 1/2, 1/4, ... resolution, stacked: level i starts at row
    ``_mip_row(i)``, columns from 0; 3 x (S + S/2 + ...) x K S."""
    levels = [tex]
    for _ in range(MIP_LEVELS - 1):
        levels.append(F.avg_pool2d(levels[-1][None], 2)[0])
    width = tex.shape[2]
    return torch.cat([F.pad(img, (0, width - img.shape[2])) for img in levels], dim=1)


def _mip_row(level: Tensor) -> Tensor:
    """First row of each mip level in the stacked atlas: S (1 - 2^-level) * 2."""
    return (2 * TEXTURE_SIZE * (1 - 0.5**level)).round()


def _lookup(mips: Tensor, tex_id: Tensor, a: Tensor, footprint: Tensor) -> Tensor:
    """Colours (3 x n) at texture coordinates ``a`` (2 x n, in periods, mirrored) of textures
    ``tex_id`` (n), from the mip level whose texels match ``footprint`` (texels per sample)."""
    f = 1 - ((a % 2) - 1).abs()  # mirrored repeat: continuous across periods
    level = footprint.clamp_min(1).log2().floor().clamp(0, MIP_LEVELS - 1)
    size = TEXTURE_SIZE * 0.5**level
    x = tex_id * size + 0.5 + f[0] * (size - 1)  # half a texel inside the cell: no bleeding
    y = _mip_row(level) + 0.5 + f[1] * (size - 1)
    height, width = mips.shape[1:]
    grid = torch.stack([2 * x / width - 1, 2 * y / height - 1], dim=-1)[None, None]
    return F.grid_sample(mips[None], grid, mode="bilinear", align_corners=False)[0, :, 0]


def _shade(scene: Scene, view: View, mats: Tensor, tex: Tensor, dev: torch.device) -> Tensor:
    """Linear radiance seen by a view, 3 x h x w (the view's grid)."""
    dirs = view.rays(dev)
    buf = DepthBuffer(view, dirs)
    buf.add(scene.prims, 0, view.origin)
    t, index, face = buf.t.reshape(-1), buf.index.reshape(-1), buf.face.reshape(-1)
    miss = index < 0
    index, t = index.clamp_min(0), torch.where(miss, 0.0, t)
    d = dirs.reshape(3, -1)
    points = torch.as_tensor(view.origin, dtype=torch.float32, device=dev)[:, None] + t * d
    _, params = params_table(scene.prims, dev)
    normal, uv = surface(points, d, index, face, params)
    m = mats[index].T  # N_MATERIAL x n
    footprint = t * TEXTURE_SIZE / (view.focal * m[1].clamp_min(1e-6))
    colour = _lookup(tex, m[0], uv / m[1:3] + m[3:5], footprint) * m[5:8]
    light = torch.full_like(t, scene.ambient)
    for kind, vec, power, size in scene.lights:
        if kind == "sun":
            sun = torch.as_tensor(-vec, dtype=torch.float32, device=dev)[:, None]
            light = light + power * (normal * sun).sum(0).clamp_min(0)
        else:
            to_light = torch.as_tensor(vec, dtype=torch.float32, device=dev)[:, None] - points
            r2 = (to_light * to_light).sum(0)
            cos = (normal * to_light).sum(0).clamp_min(0) / r2.sqrt().clamp_min(1e-6)
            light = light + power * cos / (r2 + size * size)
    radiance = torch.where(m[8] > 0.5, colour, colour * light)
    radiance[:, miss] = 0.0
    return radiance.reshape(3, view.height, view.width)
