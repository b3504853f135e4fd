"""Layouts of the 3D scenes: box rooms, corridors and outdoor ground-and-sky scenes, with
furniture-like boxes and cylinders and thin structures (railings, legs, door frames, cables).

World frame: X right, Y up (floor at 0), Z forward, metres. Everything is drawn from the
scene's seeded ``torch.Generator``; geometry is plain numpy, textures CPU tensors.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import Tensor

from app.engine.synthetic.layered import _rand, _randint
from app.engine.synthetic.raycast import PLANE, Primitive, box, cylinder
from app.engine.synthetic.textures import plaster, random_texture, sky

SKY, FLOOR, WALL, CEILING, OBJECT, THIN = 0, 1, 2, 3, 4, 5  # per-pixel kinds
KIND_NAMES = ("sky", "floor", "wall", "ceiling", "object", "thin")
# material row: texture, texture period u and v (m), offset u and v, tint rgb, emissive, low texture, kind
N_MATERIAL = 11
UP = np.array([0.0, 1.0, 0.0])


@dataclass
class Scene:
    prims: list[Primitive] = field(default_factory=list)
    materials: list[tuple[float, ...]] = field(default_factory=list)  # one per primitive
    textures: list[Tensor] = field(default_factory=list)  # 3 x S x S each
    lights: list[tuple[str, np.ndarray, float, float]] = field(default_factory=list)  # kind, vec, power, size
    ambient: float = 0.2
    position: np.ndarray = field(default_factory=lambda: np.zeros(3))  # left camera centre
    rotation: np.ndarray = field(default_factory=lambda: np.diag([1.0, -1.0, 1.0]))  # world from camera
    hfov: float = math.radians(70)
    sky_material: tuple[float, ...] | None = None  # outdoor: the sky sphere's, added once the rig is known
    extent: float = 10.0  # distance from the camera within which all finite geometry lies
    room: tuple[float, float, float] = (0.0, 0.0, 0.0)  # width, height, depth (indoor)


def rotation(yaw: float, pitch_down: float, roll: float) -> np.ndarray:
    """World-from-camera rotation for a camera turned right by yaw and tilted down by pitch (rad)."""
    cy, sy, cp, sp, cr, sr = (f(a) for a in (yaw, pitch_down, roll) for f in (math.cos, math.sin))
    ry = np.array([[cy, 0, sy], [0, 1, 0], [-sy, 0, cy]])
    rx = np.array([[1, 0, 0], [0, cp, -sp], [0, sp, cp]])
    rz = np.array([[cr, -sr, 0], [sr, cr, 0], [0, 0, 1]])
    return ry @ rx @ rz @ np.diag([1.0, -1.0, 1.0])


class Builder:
    """Collects primitives with their materials and textures for one scene."""

    def __init__(self, g: torch.Generator, natural: float, blank_share: float) -> None:
        self.g, self.natural, self.blank_share = g, natural, blank_share
        self.scene = Scene()
        self.made: dict[bool, list[int]] = {True: [], False: []}  # texture ids, blank or not

    def u(self, lo: float = 0.0, hi: float = 1.0) -> float:
        return _rand(self.g, lo, hi)

    def material(
        self, kind: int, blank: bool | None = None, period: float | None = None
    ) -> tuple[float, ...]:
        """A new texture (plaster when ``blank``; None: blank with the builder's share) and its mapping."""
        if blank is None:
            blank = self.u() < self.blank_share
        made = self.made[blank]
        if len(made) >= (3 if blank else 8):  # enough drawn: reuse one (tint and mapping stay new)
            tex_id = made[_randint(self.g, 0, len(made) - 1)]
        else:
            self.scene.textures.append(plaster(self.g) if blank else random_texture(self.g, self.natural))
            tex_id = len(self.scene.textures) - 1
            made.append(tex_id)
        period = period if period is not None else self.u(0.5, 3.0)
        if blank:  # walls and ceilings in pale paint
            tint = np.array([self.u(0.55, 0.95)] * 3) * (
                1 + 0.12 * (np.array([self.u() for _ in range(3)]) - 0.5)
            )
        else:
            tint = np.array([self.u(0.75, 1.0) for _ in range(3)])
        stretch = self.u(0.7, 1.4)
        return (
            tex_id, period, period * stretch, self.u(0, 2), self.u(0, 2),
            *tint.clip(0, 1), 0.0, float(blank), float(kind),
        )  # fmt: skip

    def add(self, prim: Primitive, material: tuple[float, ...]) -> None:
        """Adds a primitive unless the camera is inside (or within 0.2 m of) its bounds."""
        corners = prim.bounds()
        if corners is not None:
            lo, hi = corners.min(0) - 0.2, corners.max(0) + 0.2
            if np.all(self.scene.position >= lo) and np.all(self.scene.position <= hi):
                return
        self.scene.prims.append(prim)
        self.scene.materials.append(material)

    def thin_radius(self, point: np.ndarray, focal: float) -> float:
        """A radius that looks 1-6 px wide at ``point`` for this camera."""
        depth = float((point - self.scene.position) @ self.scene.rotation[:, 2])
        return self.u(1.0, 6.0) * max(depth, 0.3) / (2 * focal)


def _plane(axis: int, c: float) -> Primitive:
    return Primitive(PLANE, (float(axis), c))


def _spot(
    b: Builder, near: float, far: float, bounds: tuple[float, float, float, float]
) -> tuple[float, float]:
    """A floor point (x, z) in the camera's field of view, inside ``bounds`` (x0, x1, z0, z1)."""
    yaw = math.atan2(b.scene.rotation[0, 2], b.scene.rotation[2, 2])
    angle = yaw + b.u(-0.45, 0.45) * b.scene.hfov
    dist = b.u(near, far)
    x = float(np.clip(b.scene.position[0] + dist * math.sin(angle), bounds[0], bounds[1]))
    z = float(np.clip(b.scene.position[2] + dist * math.cos(angle), bounds[2], bounds[3]))
    return x, z


def _table(b: Builder, x: float, z: float, focal: float, chair: bool) -> None:
    w, d = (b.u(0.38, 0.5),) * 2 if chair else (b.u(0.6, 1.8), b.u(0.5, 1.0))
    top, th = (b.u(0.4, 0.5), b.u(0.03, 0.06)) if chair else (b.u(0.65, 0.8), b.u(0.02, 0.06))
    b.add(
        box(np.array([x - w / 2, top - th, z - d / 2]), np.array([x + w / 2, top, z + d / 2])),
        b.material(OBJECT),
    )
    leg = b.material(THIN, blank=b.u() < 0.5, period=0.5)
    inset = b.u(0.01, 0.08)
    foot = np.array([x - w / 2 + inset, 0.0, z - d / 2 + inset])
    r = b.thin_radius(foot, focal)
    for dx in (0.0, w - 2 * inset):
        for dz in (0.0, d - 2 * inset):
            p = foot + np.array([dx, 0.0, dz])
            b.add(cylinder(p, p + np.array([0.0, top - th, 0.0]), r), leg)
    if chair:  # a backrest on the far side, on two thin posts
        back = z + d / 2 - 0.02
        b.add(
            box(np.array([x - w / 2, top + 0.2, back - 0.03]), np.array([x + w / 2, top + 0.45, back])),
            b.material(OBJECT),
        )
        for px in (x - w / 2 + inset, x + w / 2 - inset):
            p = np.array([px, top, back - 0.015])
            b.add(cylinder(p, p + np.array([0.0, 0.22, 0.0]), r), leg)


def _railing(b: Builder, x: float, z: float, focal: float, along_x: bool) -> None:
    length, height = b.u(1.0, 4.0), b.u(0.85, 1.1)
    step = np.array([1.0, 0, 0]) if along_x else np.array([0, 0, 1.0])
    start = np.array([x, 0.0, z]) - step * length / 2
    metal = b.material(THIN, blank=b.u() < 0.6, period=0.3)
    r_top = b.thin_radius(start + step * length / 2, focal) * b.u(1.0, 2.0)
    b.add(cylinder(start + height * UP, start + step * length + height * UP, r_top), metal)
    if b.u() < 0.5:  # a middle rail
        b.add(
            cylinder(start + height / 2 * UP, start + step * length + height / 2 * UP, r_top * 0.7),
            metal,
        )
    n = min(16, max(3, int(length / b.u(0.12, 0.4))))
    for i in range(n + 1):
        foot = start + step * length * i / n
        b.add(cylinder(foot, foot + height * UP, b.thin_radius(foot, focal)), metal)


def _door(b: Builder, width: float, depth: float, focal: float) -> None:
    """A door with a protruding frame on the back wall (z = depth)."""
    wd, hd = b.u(0.75, 1.0), b.u(1.95, 2.2)
    x0 = b.u(-width / 2 + 0.1, width / 2 - wd - 0.1)
    fw, pr = b.u(0.03, 0.1), b.u(0.015, 0.06)
    frame = b.material(THIN, blank=b.u() < 0.7, period=1.0)
    z0, z1 = depth - pr, depth + 0.01
    b.add(box(np.array([x0 - fw, 0, z0]), np.array([x0, hd, z1])), frame)
    b.add(box(np.array([x0 + wd, 0, z0]), np.array([x0 + wd + fw, hd, z1])), frame)
    b.add(box(np.array([x0 - fw, hd, z0]), np.array([x0 + wd + fw, hd + fw, z1])), frame)
    b.add(box(np.array([x0, 0, depth - pr * b.u(0.2, 0.8)]), np.array([x0 + wd, hd, z1])), b.material(OBJECT))


def _cable(b: Builder, a: np.ndarray, c: np.ndarray, focal: float) -> None:
    b.add(cylinder(a, c, b.thin_radius((a + c) / 2, focal)), b.material(THIN, blank=True, period=1.0))


def _lamp(b: Builder, x: float, z: float, focal: float) -> None:
    tall = b.u(1.3, 1.8)
    b.add(
        cylinder(np.array([x, 0, z]), np.array([x, 0.03, z]), b.u(0.12, 0.2)), b.material(OBJECT, blank=True)
    )
    b.add(
        cylinder(np.array([x, 0, z]), np.array([x, tall, z]), b.thin_radius(np.array([x, 1, z]), focal)),
        b.material(THIN),
    )
    shade = b.u(0.12, 0.25)
    b.add(
        cylinder(np.array([x, tall, z]), np.array([x, tall + b.u(0.2, 0.35), z]), shade), b.material(OBJECT)
    )


def _clutter(b: Builder, x: float, z: float, floor: float = 0.0) -> None:
    w, h, d = b.u(0.2, 1.2), b.u(0.2, 1.4), b.u(0.2, 0.9)
    if b.u() < 0.3:  # a drum or a column stump
        b.add(cylinder(np.array([x, floor, z]), np.array([x, floor + h, z]), w / 2), b.material(OBJECT))
    else:
        b.add(
            box(np.array([x - w / 2, floor, z - d / 2]), np.array([x + w / 2, floor + h, z + d / 2])),
            b.material(OBJECT),
        )


def indoor(b: Builder, focal: float, corridor: bool, blank_walls: bool) -> None:
    """A box room (or a long corridor) with furniture, lit by one or two lamps near the ceiling."""
    s = b.scene
    width = b.u(1.6, 3.0) if corridor else b.u(3.0, 9.0)
    depth = b.u(10.0, 30.0) if corridor else b.u(3.5, 12.0)
    height = b.u(2.3, 3.3) if corridor else b.u(2.4, 3.8)
    s.room, s.extent = (width, height, depth), math.hypot(width, height, depth)
    # the left camera sits left of centre: the right one is up to a baseline further right
    s.position = np.array([b.u(-0.45, 0.1) * width, b.u(0.6, min(1.9, height - 0.4)), b.u(0.2, 0.35) * depth])
    if blank_walls:  # close to the far wall, looking up into the ceiling's corner
        s.position[2] = depth - b.u(1.0, 3.5)
        yaw, pitch = b.u(-0.5, 0.5), -b.u(0.0, 0.5)
    else:
        yaw, pitch = b.u(-0.6, 0.6) * (0.3 if corridor else 1.0), b.u(-0.2, 0.4)
    s.rotation = rotation(yaw, pitch, b.u(-0.05, 0.05))
    b.add(_plane(1, 0.0), b.material(FLOOR, blank=b.u() < b.blank_share * 0.3))
    b.add(_plane(1, height), b.material(CEILING, blank=blank_walls or b.u() < max(b.blank_share, 0.7)))
    for axis, c in ((0, -width / 2), (0, width / 2), (2, 0.0), (2, depth)):
        b.add(_plane(axis, c), b.material(WALL, blank=True if blank_walls else None))
    bounds = (-width / 2 + 0.3, width / 2 - 0.3, 0.3, depth - 0.3)
    n = _randint(b.g, 0, 2) if blank_walls else _randint(b.g, 2, 7)
    for _ in range(n):
        kind = _randint(b.g, 0, 6)
        x, z = _spot(b, 1.0, min(8.0, depth), bounds)
        if kind in (0, 1):
            _table(b, x, z, focal, chair=kind == 1)
        elif kind == 2:
            _railing(b, x, z, focal, along_x=b.u() < 0.6)
        elif kind == 3:
            _door(b, width, depth, focal)
        elif kind == 4:  # a cable across the room, or hanging from the ceiling
            if b.u() < 0.5:
                a = np.array([-width / 2, b.u(0.5, height), b.u(0.3, depth)])
                _cable(b, a, np.array([width / 2, b.u(0.5, height), b.u(0.3, depth)]), focal)
            else:
                _cable(b, np.array([x, height, z]), np.array([x, b.u(1.2, height - 0.3), z]), focal)
        elif kind == 5:
            _lamp(b, x, z, focal)
        else:
            _clutter(b, x, z)
    for _ in range(_randint(b.g, 1, 2)):
        pos = np.array([b.u(-0.4, 0.4) * width, height - 0.15, b.u(0.1, 0.9) * depth])
        s.lights.append(("point", pos, b.u(3.0, 10.0), b.u(0.3, 1.5)))
    s.ambient = b.u(0.08, 0.3)


def outdoor(b: Builder, focal: float) -> None:
    """Ground plane, far buildings, poles with overhead cables, fences and clutter under a sky."""
    s = b.scene
    s.position = np.array([0.0, b.u(1.0, 2.2), 0.0])
    s.rotation = rotation(b.u(-0.4, 0.4), b.u(-0.05, 0.3), b.u(-0.04, 0.04))
    b.add(_plane(1, 0.0), b.material(FLOOR, blank=False, period=b.u(1.0, 6.0)))
    reach = 0.0
    for _ in range(_randint(b.g, 0, 5)):  # buildings
        x, z = _spot(b, 12.0, 60.0, (-80, 80, 5, 80))
        w, h, d = b.u(5, 30), b.u(4, 25), b.u(5, 20)
        b.add(
            box(np.array([x - w / 2, 0, z]), np.array([x + w / 2, h, z + d])),
            b.material(WALL, period=b.u(1, 5)),
        )
        reach = max(reach, math.hypot(abs(x) + w / 2, h, z + d))
    poles = [_spot(b, 4.0, 25.0, (-30, 30, 2, 40)) for _ in range(_randint(b.g, 0, 3))]
    tops = []
    for x, z in poles:
        top = np.array([x, b.u(5.0, 9.0), z])
        b.add(cylinder(np.array([x, 0, z]), top, b.u(0.08, 0.2)), b.material(OBJECT))
        tops.append(top)
    for a, c in itertools.pairwise(tops):
        _cable(b, a - 0.3 * UP, c - 0.3 * UP, focal)
    bounds = (-20.0, 20.0, 1.5, 30.0)
    for _ in range(_randint(b.g, 1, 5)):
        x, z = _spot(b, 2.0, 15.0, bounds)
        kind = _randint(b.g, 0, 2)
        if kind == 0:
            _railing(b, x, z, focal, along_x=b.u() < 0.7)
        elif kind == 1:
            _table(b, x, z, focal, chair=False)
        else:
            _clutter(b, x, z)
    s.extent = max(reach, 45.0)
    sun = np.array([b.u(-1, 1), -b.u(0.3, 1.0), b.u(-1, 1)])
    s.lights.append(("sun", sun / np.linalg.norm(sun), b.u(0.6, 1.2), 0.0))
    s.ambient = b.u(0.25, 0.5)
    s.sky_material = (float(len(s.textures)), 6.28, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0, float(SKY))
    s.textures.append(sky(b.g))
