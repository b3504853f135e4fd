"""The three Bi3D model kinds and their forward passes.

The work is split the way deployment needs it: ``extract`` runs the feature
networks once per frame, ``plane_logits`` sweeps any number of planes through
SegNet in memory-bounded chunks, and the readouts (binary refinement, dense
continuous disparity) work on those logits. ``forward`` composes them exactly
as the published networks do, for conformance checks.

Shapes: B batch, P planes, H x W padded image (multiples of 96), h x w = H/3 x W/3.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from app.engine.bi3d.network import (
    FEATURE_STRIDE,
    DispRefine,
    FeatNet,
    FeatNetHR,
    RefineNet3D,
    SegNet,
    SegRefine,
)

SIZE_MULTIPLE = 96  # 3 (feature stride) x 32 (five SegNet downsamplings)
MIN_SIZE = 192  # FeatNet's widest pooling branch spans 64 feature columns


class ModelKind(StrEnum):
    BINARY = "binary"
    CONTINUOUS_2D = "continuous_2d"
    CONTINUOUS_3D = "continuous_3d"
    LIGHT = "light"  # this project's CPU model: not a published architecture


PUBLISHED_KINDS = (ModelKind.BINARY, ModelKind.CONTINUOUS_2D, ModelKind.CONTINUOUS_3D)


@dataclass
class Features:
    """Per-frame features, computed once and shared by every plane."""

    left: Tensor  # B x C x h x w
    right: Tensor  # B x C x h x w
    left_hr: Tensor | None  # B x C_hr x H x W (published binary kind only)
    image: Tensor  # B x 3 x H x W normalised left image (DispRefine guide)
    guide: Tensor | None = None  # per-frame upsampling weights (light kind)
    # per-frame terms of the plane pass, built by the first call that needs them (light kind)
    sweep: Any = field(default=None, compare=False, repr=False)
    # the same for the per-pixel passes where they have their own SegNet (light kind)
    pixel_terms: Any = field(default=None, compare=False, repr=False)


class SweepModel(nn.Module):
    """What every Bi3D-style model offers the engine: features once, then planes.

    Subclasses provide ``featnet``, ``segnet`` (with ``widest_channels``) and the readouts.
    """

    # annotations only: a class-level default would shadow registered submodules
    kind: ModelKind
    width: float
    max_disparity: int
    featnethr: nn.Module | None
    refinenet3d: nn.Module | None
    segnet: nn.Module

    min_size: int = MIN_SIZE  # smallest padded height and width the network accepts
    channels_last_input: bool = False  # whether the engine should hand over channels-last images
    # answers planes between feature columns (fractional shifts) well, so the engine answers a
    # plane off the 3 px grid at that plane instead of rounding it (published models: False)
    exact_planes: bool = False
    # trained and validated under bf16 autocast, so `auto` precision may run it in bf16 on a
    # CPU with native bf16 (published models: fp32, in which they reproduce their references)
    cpu_bf16: bool = False
    # its binary answers gain from the matching check near each plane (bi3d.planecheck), as
    # measured on held-out scenes; published models: False, their answers stay the paper's
    plane_check: bool = False
    widest_channels: int  # channels of the largest per-plane activation (bounds plane chunks)

    def _set_range(self, max_disparity: int) -> None:
        if max_disparity <= 0 or max_disparity % SIZE_MULTIPLE:
            raise ValueError(f"max_disparity must be a positive multiple of {SIZE_MULTIPLE}")
        self.max_disparity = int(max_disparity)

    @property
    def max_shift(self) -> int:
        """Width in feature columns added to the plane-sweep volume."""
        return self.max_disparity // FEATURE_STRIDE

    @property
    def has_disp_refine(self) -> bool:
        """Whether continuous readouts go through DispRefine (the published continuous kinds)."""
        return False

    def plane_volume(self, left: Tensor, right: Tensor, shifts: Tensor) -> Tensor:
        return plane_sweep_volume(left, right, shifts, self.max_shift)

    def extract(self, left: Tensor, right: Tensor) -> Features:
        raise NotImplementedError

    def refine_planes(self, feats: Features, lowres: Tensor) -> Tensor:
        raise NotImplementedError

    def plane_logits(self, feats: Features, shifts: Tensor, chunk: int = 8) -> Tensor:
        """Low-resolution logits of P(disparity > plane) for each plane.

        ``shifts`` (P,) are plane disparities in feature columns (pixels / 3); whole
        numbers reproduce the published volume, fractions interpolate the right features.
        Returns B x P x h' x w' (h' x w' is the SegNet output grid).
        """
        self._check_shifts(shifts)
        out = []
        step = max(1, chunk)
        for start in range(0, shifts.numel(), step):
            part = shifts[start : start + step]
            volume = self.plane_volume(feats.left, feats.right, part)
            b, p = feats.left.shape[0], part.numel()
            logits = self.segnet(volume.flatten(0, 1))
            logits = logits[..., : logits.shape[-1] * feats.left.shape[-1] // volume.shape[-1]]
            out.append(logits.view(b, p, *logits.shape[-2:]))
        return torch.cat(out, dim=1)

    def _check_shifts(self, shifts: Tensor) -> None:
        if shifts.ndim != 1 or shifts.numel() == 0:
            raise ValueError("shifts must be a non-empty 1-D tensor")
        if float(shifts.min()) < 0 or float(shifts.max()) > self.max_shift:
            raise ValueError(f"plane shifts must lie in [0, {self.max_shift}] feature columns")

    def regularise(self, feats: Features, lowres: Tensor) -> Tensor:
        return lowres

    def refine_disparity(self, normalized: Tensor, image: Tensor) -> Tensor:
        raise TypeError(f"the {self.kind.value} kind has no DispRefine")


class Bi3DModel(SweepModel):
    """A published Bi3D network of one kind, at a channel width (1.0 = published)."""

    def __init__(self, kind: ModelKind | str, width: float = 1.0, max_disparity: int = 192) -> None:
        super().__init__()
        self.kind = ModelKind(kind)
        if self.kind not in PUBLISHED_KINDS:
            raise ValueError(f"{self.kind.value} is not a published Bi3D kind")
        self.width = float(width)
        self._set_range(max_disparity)
        self.featnet = FeatNet(width)
        c = self.featnet.out_channels
        self.featnethr: FeatNetHR | None = None
        if self.kind is ModelKind.BINARY:
            self.featnethr = FeatNetHR(width)
        self.segnet = SegNet(2 * c, width)
        self.widest_channels = self.segnet.widest_channels
        self.refinenet: nn.Module
        if self.kind is ModelKind.BINARY:
            assert self.featnethr is not None
            self.refinenet = SegRefine(self.featnethr.out_channels, width)
        else:
            self.refinenet = DispRefine(width)
        self.refinenet3d: RefineNet3D | None = None
        if self.kind is ModelKind.CONTINUOUS_3D:
            self.refinenet3d = RefineNet3D(c, width)

    @property
    def has_disp_refine(self) -> bool:
        return self.kind is not ModelKind.BINARY

    # ---- stages -------------------------------------------------------------------
    def extract(self, left: Tensor, right: Tensor) -> Features:
        """Normalised B x 3 x H x W images (H, W multiples of 96) -> features."""
        _check_input(left, right)
        both = self.featnet(torch.cat([left, right], dim=0))
        feat_left, feat_right = both.chunk(2, dim=0)
        hr = self.featnethr(left) if self.featnethr is not None else None
        return Features(feat_left, feat_right, hr, left)

    def refine_planes(self, feats: Features, lowres: Tensor) -> Tensor:
        """Full-resolution logits per plane: B x P x h x w -> B x P x H x W.

        The binary kind refines with FeatNetHR + SegRefine; the continuous kinds
        upsample bilinearly, as their published decoders do.
        """
        size = feats.image.shape[-2:]
        up = F.interpolate(lowres, size, mode="bilinear", align_corners=False)
        if self.featnethr is None or feats.left_hr is None:
            return up
        b, p = up.shape[:2]
        hr = feats.left_hr.unsqueeze(1).expand(-1, p, -1, -1, -1).flatten(0, 1)
        refined = self.refinenet(up.reshape(b * p, 1, *size), hr)
        return refined.view(b, p, *size)

    def regularise(self, feats: Features, lowres: Tensor) -> Tensor:
        """Continuous-3D: 3D-regularised low-resolution logits (same shape)."""
        if self.refinenet3d is None:
            return lowres
        return self.refinenet3d(lowres, feats.left)

    def refine_disparity(self, normalized: Tensor, image: Tensor) -> Tensor:
        """DispRefine (continuous kinds): B x 1 x H x W normalised disparity."""
        if not isinstance(self.refinenet, DispRefine):
            return super().refine_disparity(normalized, image)
        return self.refinenet(normalized, image)

    # ---- published composition --------------------------------------------------
    def forward(self, left: Tensor, right: Tensor, disp_ids: Tensor) -> dict[str, Tensor]:
        """Published forward pass for integer plane indices ``disp_ids`` (P,).

        Binary: ``lowres_up`` (sigmoid, then bilinear) and ``refined`` probabilities,
        B x P x H x W. Continuous: ``seg_up`` (dense 1-px planes), optionally
        ``seg_refined_up`` (3D), ``disp_normalized_noisy`` and ``disp_normalized``.
        """
        feats = self.extract(left, right)
        lowres = self.plane_logits(feats, disp_ids.to(left.dtype))
        size = left.shape[-2:]
        if self.kind is ModelKind.BINARY:
            lowres_up = F.interpolate(torch.sigmoid(lowres), size, mode="bilinear", align_corners=False)
            return {"lowres_up": lowres_up, "refined": torch.sigmoid(self.refine_planes(feats, lowres))}
        out = {"seg_up": torch.sigmoid(dense_planes(lowres, size, FEATURE_STRIDE))}
        if self.refinenet3d is not None:
            lowres = self.regularise(feats, lowres)
            out["seg_refined_up"] = torch.sigmoid(dense_planes(lowres, size, FEATURE_STRIDE))
        last = "seg_refined_up" if self.refinenet3d is not None else "seg_up"
        noisy = out[last].mean(dim=1, keepdim=True)
        out["disp_normalized_noisy"] = noisy
        out["disp_normalized"] = self.refine_disparity(noisy, left)
        return out


def to_channels_last(model: nn.Module) -> nn.Module:
    """Channels-last weights for every 2D convolution (3D ones keep their layout)."""
    for module in model.modules():
        if isinstance(module, nn.Conv2d | nn.ConvTranspose2d):
            module.to(memory_format=torch.channels_last)  # type: ignore[call-overload]
    return model


def plane_sweep_volume(left: Tensor, right: Tensor, shifts: Tensor, max_shift: int) -> Tensor:
    """B x C x h x w features, P shifts -> B x P x 2C x h x (w + max_shift) volume.

    Left features sit at columns [0, w); right features are shifted right by the plane's
    disparity, so column x pairs left(x) with right(x - shift). Fractional shifts blend
    the two neighbouring whole shifts linearly.
    """
    b, c, h, w = left.shape
    p = shifts.numel()
    volume = left.new_zeros(b, p, 2 * c, h, w + max_shift)
    volume[:, :, :c, :, :w] = left.unsqueeze(1)
    for i, shift in enumerate(shifts.tolist()):
        lo = int(shift // 1)
        frac = float(shift) - lo
        volume[:, i, c:, :, lo : lo + w] = right * (1.0 - frac)
        if frac > 0:
            volume[:, i, c:, :, lo + 1 : lo + 1 + w] += right * frac
    return volume


def dense_planes(logits: Tensor, size: tuple[int, int] | torch.Size, step: int) -> Tensor:
    """Upsample B x P x h x w plane logits to B x ((P-1)*step + 1) x H x W.

    Bilinear in space, linear between planes (plane i lands on index i * step), as the
    published continuous decoders do. Apply the sigmoid afterwards.
    """
    b, p = logits.shape[:2]
    spatial = F.interpolate(logits, size, mode="bilinear", align_corners=False)
    if p == 1 or step == 1:
        return spatial
    h, w = spatial.shape[-2:]
    flat = spatial.permute(0, 2, 3, 1).reshape(b, h * w, p)
    dense = F.interpolate(flat, (p - 1) * step + 1, mode="linear", align_corners=True)
    return dense.reshape(b, h, w, -1).permute(0, 3, 1, 2)


def _check_input(left: Tensor, right: Tensor, min_size: int = MIN_SIZE) -> None:
    if left.ndim != 4 or left.shape[1] != 3:
        raise ValueError(f"expected B x 3 x H x W images, got {tuple(left.shape)}")
    if left.shape != right.shape:
        raise ValueError(f"left {tuple(left.shape)} and right {tuple(right.shape)} differ")
    h, w = left.shape[-2:]
    if h % SIZE_MULTIPLE or w % SIZE_MULTIPLE or h < min_size or w < min_size:
        raise ValueError(
            f"height and width must be multiples of {SIZE_MULTIPLE} and at least {min_size}, got {h} x {w}"
        )
