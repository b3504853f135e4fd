"""Exact ray casting of axis-aligned planes and boxes, finite cylinders and a sky sphere, in torch.

World frame: X right, Y up, Z forward (metres). A view is a pinhole camera: an origin, a
rotation (world from camera; camera x right, y down, z forward) and a focal length and
principal point in its own grid's pixels. Its rays are ``R @ ((u - cx) / f, (v - cy) / f, 1)``,
so the ray parameter of a hit is its depth Z along the optical axis and a left pixel's
disparity is ``f * B / t``.

Intersections are analytic. ``trace`` keeps a depth buffer and visits the primitives one by
one, each on the rectangle of rays its projected bounding box covers (a conservative screen
rectangle; the rays are a grid, so that rectangle is a slice, not a gather): a dense
rays x primitives tensor would cost most of the time on rays that miss. Everything inside is
vectorised over those rays. ``surface`` then gathers each hit's primitive and computes
normals and texture coordinates, vectorised over pixels and primitives alike.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

PLANE, BOX, CYLINDER, SPHERE = 0, 1, 2, 3
N_PARAMS = 14
EPS = 1e-4  # metres: hits nearer than this to the ray origin are ignored
# texture axes (u, v) of a surface whose normal is along axis k: x-walls (z, y), floor (x, z), z-walls (x, y)
U_AXIS, V_AXIS = (2, 0, 0), (1, 2, 1)


@dataclass
class Primitive:
    """One surface. ``params``: PLANE (axis, c) for ``p[axis] = c``; BOX (lo xyz, hi xyz);
    CYLINDER (base xyz, unit axis xyz, length, radius, e1 xyz, e2 xyz); SPHERE (centre xyz, radius)."""

    shape: int
    params: tuple[float, ...]

    def bounds(self, lo_frac: float = 0.0, hi_frac: float = 1.0) -> np.ndarray | None:
        """The 8 corners of an axis-aligned box around it (8 x 3), None when unbounded; for a
        cylinder, around the part between those fractions of its length."""
        p = self.params
        if self.shape == BOX:
            lo, hi = np.array(p[0:3]), np.array(p[3:6])
        elif self.shape == CYLINDER:
            base, axis, length, r = np.array(p[0:3]), np.array(p[3:6]), p[6], p[7]
            a, b = base + lo_frac * length * axis, base + hi_frac * length * axis
            ext = r * np.sqrt(np.clip(1 - axis**2, 0, 1))
            lo, hi = np.minimum(a, b) - ext, np.maximum(a, b) + ext
        else:
            return None
        return np.array([[(lo, hi)[(i >> k) & 1][k] for k in range(3)] for i in range(8)])

    def pieces(self) -> list[np.ndarray | None]:
        """Bounding boxes whose union holds it: a long thin cylinder (a cable across the view)
        in up to 16 pieces, so that its rays are a few narrow rectangles, not one large one."""
        if self.shape != CYLINDER:
            return [self.bounds()]
        n = min(16, max(1, int(self.params[6] / max(8 * self.params[7], 1.0))))
        return [self.bounds(i / n, (i + 1) / n) for i in range(n)]


def cylinder(base: np.ndarray, end: np.ndarray, radius: float) -> Primitive:
    """A finite capped cylinder from ``base`` to ``end`` (world points, 3 each)."""
    axis = end - base
    length = float(np.linalg.norm(axis))
    axis = axis / max(length, 1e-9)
    ref = np.array([0.0, 1.0, 0.0]) if abs(axis[1]) < 0.9 else np.array([1.0, 0.0, 0.0])
    e1 = np.cross(axis, ref)
    e1 /= np.linalg.norm(e1)
    e2 = np.cross(axis, e1)
    return Primitive(CYLINDER, (*base, *axis, length, radius, *e1, *e2))


def box(lo: np.ndarray, hi: np.ndarray) -> Primitive:
    return Primitive(BOX, (*np.minimum(lo, hi), *np.maximum(lo, hi)))


@dataclass
class View:
    origin: np.ndarray  # 3, world
    rotation: np.ndarray  # 3 x 3, world from camera
    focal: float  # px of this grid
    cx: float
    cy: float
    height: int
    width: int

    def rays(self, device: torch.device) -> Tensor:
        """World ray directions with camera z = 1, 3 x H x W."""
        v, u = torch.meshgrid(
            torch.arange(self.height, dtype=torch.float32, device=device),
            torch.arange(self.width, dtype=torch.float32, device=device),
            indexing="ij",
        )
        cam = torch.stack([(u - self.cx) / self.focal, (v - self.cy) / self.focal, torch.ones_like(u)])
        rot = torch.as_tensor(self.rotation, dtype=torch.float32, device=device)
        return torch.einsum("ij,jhw->ihw", rot, cam)

    def window(self, corners: np.ndarray | None) -> tuple[slice, slice] | None:
        """The grid rectangle (rows, columns) that a box with these corners can cover; None: none."""
        full = (slice(0, self.height), slice(0, self.width))
        if corners is None:
            return full
        cam = (corners - self.origin) @ self.rotation  # rows: R^T (p - o)
        z = cam[:, 2]
        if np.all(z <= EPS):
            return None
        if np.any(z <= 1e-3):  # straddles the camera plane: no finite projection
            return full
        u = self.cx + self.focal * cam[:, 0] / z
        v = self.cy + self.focal * cam[:, 1] / z
        x0, x1 = max(0, math.floor(u.min()) - 1), min(self.width, math.ceil(u.max()) + 2)
        y0, y1 = max(0, math.floor(v.min()) - 1), min(self.height, math.ceil(v.max()) + 2)
        if x0 >= x1 or y0 >= y1:
            return None
        return slice(y0, y1), slice(x0, x1)


def _safe_inverse(d: Tensor) -> Tensor:
    tiny = torch.where(d >= 0, 1e-12, -1e-12)
    return 1.0 / torch.where(d.abs() < 1e-12, tiny, d)


# face codes kept per ray: 0-2 a plane's or box face's normal axis, then these
SIDE, CAP, SKY_FACE = 3, 4, 5
Hit = tuple[Tensor, Tensor | int]  # ray parameter (inf: no hit) and face code per ray


def _hit_plane(p: tuple[float, ...], o: np.ndarray, d: Tensor, inv: Tensor) -> Hit:
    k = int(p[0])
    t = (p[1] - float(o[k])) * inv[k]
    return torch.where(t > EPS, t, math.inf), k


def _hit_box(p: tuple[float, ...], o: np.ndarray, d: Tensor, inv: Tensor) -> Hit:
    near = far = face = None
    for k in range(3):
        a, b = (p[k] - float(o[k])) * inv[k], (p[k + 3] - float(o[k])) * inv[k]
        lo, hi = torch.minimum(a, b), torch.maximum(a, b)
        if near is None or far is None or face is None:
            near, far, face = lo, hi, torch.zeros_like(lo, dtype=torch.uint8)
        else:
            face = torch.where(lo > near, k, face)
            near, far = torch.maximum(near, lo), torch.minimum(far, hi)
    assert near is not None and far is not None and face is not None
    return torch.where((near <= far) & (near > EPS), near, math.inf), face


def _hit_cylinder(p: tuple[float, ...], o: np.ndarray, d: Tensor, inv: Tensor) -> Hit:
    """Nearest hit of the side or the two end discs; the origin is outside the cylinder."""
    base, axis, length, r = np.array(p[0:3]), np.array(p[3:6]), p[6], p[7]
    oc = o - base
    oa = float(oc @ axis)
    oc_perp = oc - oa * axis
    da = d[0] * axis[0] + d[1] * axis[1] + d[2] * axis[2]
    a = (d * d).sum(0) - da * da  # |d_perp|^2
    b = d[0] * oc_perp[0] + d[1] * oc_perp[1] + d[2] * oc_perp[2]  # d_perp . oc_perp
    c = float(oc_perp @ oc_perp) - r * r
    disc = b * b - a * c
    t_side = (-b - disc.clamp_min(0).sqrt()) / a.clamp_min(1e-12)
    s = oa + t_side * da
    best = torch.where((disc >= 0) & (t_side > EPS) & (s >= 0) & (s <= length), t_side, math.inf)
    side = torch.isfinite(best)
    for end in (0.0, length):
        t = (end - oa) / da  # da = 0: inf or nan, and both fail the tests below
        inside = c + t * (2 * b + t * a) <= 0  # |oc_perp + t d_perp|^2 <= r^2
        best = torch.minimum(best, torch.where(inside & (t > EPS), t, math.inf))
    return best, torch.where(side & (best == t_side), SIDE, CAP).to(torch.uint8)


def _hit_sphere(p: tuple[float, ...], o: np.ndarray, d: Tensor, inv: Tensor) -> Hit:
    """Exit point of a sphere around the origin (the sky)."""
    oc = o - np.array(p[0:3])
    a = (d * d).sum(0)
    b = d[0] * oc[0] + d[1] * oc[1] + d[2] * oc[2]
    c = float(oc @ oc) - p[3] ** 2
    t = (-b + (b * b - a * c).clamp_min(0).sqrt()) / a
    return torch.where(t > EPS, t, math.inf), SKY_FACE


HITS = {PLANE: _hit_plane, BOX: _hit_box, CYLINDER: _hit_cylinder, SPHERE: _hit_sphere}


def hit(prim: Primitive, origin: np.ndarray, d: Tensor, inv: Tensor) -> Hit:
    """Nearest hit of ``prim`` for rays ``d`` (3 x h x w, ``inv`` their inverse): t and face."""
    return HITS[prim.shape](prim.params, origin, d, inv)


class DepthBuffer:
    """Nearest hit, primitive index and face code per ray of a view, filled primitive by primitive."""

    def __init__(self, view: View | None, dirs: Tensor) -> None:
        self.view, self.dirs, self.inv = view, dirs, _safe_inverse(dirs)
        self.t = torch.full(dirs.shape[1:], math.inf, device=dirs.device)
        self.index = torch.full(dirs.shape[1:], -1, dtype=torch.long, device=dirs.device)
        self.face = torch.zeros(dirs.shape[1:], dtype=torch.uint8, device=dirs.device)

    def add(self, prims: list[Primitive], first_index: int, origin: np.ndarray) -> None:
        full = (slice(None), slice(None))
        for i, prim in enumerate(prims):
            windows = [full] if self.view is None else [self.view.window(c) for c in prim.pieces()]
            for win in windows:
                if win is None:
                    continue
                sl = (slice(None), *win)
                t, face = hit(prim, origin, self.dirs[sl], self.inv[sl])
                tb = self.t[win]
                closer = t < tb
                tb.copy_(torch.minimum(tb, t))
                self.index[win].masked_fill_(closer, first_index + i)
                if isinstance(face, int):
                    self.face[win].masked_fill_(closer, face)
                else:
                    fb = self.face[win]
                    fb.copy_(torch.where(closer, face, fb))


def params_table(prims: list[Primitive], device: torch.device) -> tuple[Tensor, Tensor]:
    """Shapes (n) and parameters (n x N_PARAMS) of all primitives, zero-padded."""
    rows = [list(p.params) + [0.0] * (N_PARAMS - len(p.params)) for p in prims]
    shapes = torch.tensor([p.shape for p in prims], dtype=torch.long, device=device)
    return shapes, torch.tensor(rows, dtype=torch.float32, device=device)


def surface(
    points: Tensor, dirs: Tensor, index: Tensor, face: Tensor, params: Tensor
) -> tuple[Tensor, Tensor]:
    """Unit normals facing the ray (3 x n) and texture coordinates in metres (2 x n) of hits.

    ``points``, ``dirs``: 3 x n; ``index``: n primitive indices (all valid); ``face``: n face
    codes from the trace. Flat faces need only their axis; cylinders and the sky run their
    formulas on their own hits.
    """
    flat = face < SIDE
    axis = torch.where(flat, face, 0).long()
    u_ax = torch.tensor(U_AXIS, device=points.device)[axis]
    v_ax = torch.tensor(V_AXIS, device=points.device)[axis]
    normal = torch.zeros_like(points).scatter_(0, axis[None], 1.0)
    uv = torch.cat([points.gather(0, u_ax[None]), points.gather(0, v_ax[None])])
    for fn, rows in (
        (_cylinder_surface, (face == SIDE) | (face == CAP)),
        (_sphere_surface, face == SKY_FACE),
    ):
        rows = torch.nonzero(rows).squeeze(1)
        if rows.numel():
            nrm, coords = fn(points[:, rows], params[index[rows]].T, face[rows])
            normal[:, rows], uv[:, rows] = nrm, coords
    # face the ray: a surface seen from either side is lit on the side the camera sees
    facing = torch.where((normal * dirs).sum(0) > 0, -1.0, 1.0)
    return normal * facing, uv


def _cylinder_surface(p: Tensor, prm: Tensor, face: Tensor) -> tuple[Tensor, Tensor]:
    """Side (u: arc length, v: along the axis) or end disc (u, v across it)."""
    rel = p - prm[0:3]
    s = (rel * prm[3:6]).sum(0)
    perp = rel - s * prm[3:6]
    rad = perp.norm(dim=0).clamp_min(1e-9)
    a1, a2 = (perp * prm[8:11]).sum(0), (perp * prm[11:14]).sum(0)
    cap = face == CAP
    normal = torch.where(cap[None], prm[3:6], perp / rad)
    uv = torch.where(cap[None], torch.stack([a1, a2]), torch.stack([prm[7] * torch.atan2(a2, a1), s]))
    return normal, uv


def _sphere_surface(p: Tensor, prm: Tensor, face: Tensor) -> tuple[Tensor, Tensor]:
    """The sky: u the azimuth (rad), v from 0 at the zenith to 1 at the horizon."""
    rel = p - prm[0:3]
    direction = rel / rel.norm(dim=0).clamp_min(1e-9)
    uv = torch.stack([torch.atan2(direction[0], direction[2]), 1 - direction[1].clamp(0, 1)])
    return -direction, uv
