"""The model split into stage graphs with tensor-only inputs, for export and graph capture.

Every runtime runs the same stages: ``featnet`` once per frame, ``segnet`` once per batch of
planes, then ``refine`` (and ``regularise`` / ``disprefine`` for the continuous kinds). The
plane-sweep volume is built inside ``segnet`` from a vector of plane shifts with two gathers,
so the plane batch is data, not structure: one graph serves every plane count and every set
of planes (ONNX, TensorRT, CUDA graphs). The gathers cost one extra read of the right-hand
features per plane, small beside SegNet.

Stage inputs and outputs are named; a runtime keeps a frame's tensors in one dict (the two
images under ``left`` and ``right``, then every ``featnet`` output) and feeds each stage the
names it asks for. Shapes: B batch, P planes, H x W padded image, h x w = H/3 x W/3,
W' = w + max_shift.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from app.engine.bi3d.light import LightBi3D
from app.engine.bi3d.model import Bi3DModel, Features, ModelKind, SweepModel


@dataclass(frozen=True)
class Stage:
    """One exported graph: its module, the names it reads and writes, and its dynamic axes."""

    name: str
    module: nn.Module
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    dynamic: dict[str, dict[int, str]]


def shifted_columns(features: Tensor, shifts: Tensor, max_shift: int) -> Tensor:
    """B x C x h x w features, P shifts (feature columns) -> B x P x C x h x (w + max_shift).

    Column x holds (1 - f) * features[x - lo] + f * features[x - lo - 1] (lo, f: whole and
    fractional parts of the shift), zero outside [0, w): the published plane-sweep layout.
    """
    b, c, h, w = features.shape
    p = shifts.shape[0]
    width = w + max_shift
    pad = max_shift + 1
    padded = F.pad(features, (pad, pad))
    lo = torch.floor(shifts)
    frac = (shifts - lo).to(features.dtype).view(1, 1, 1, p, 1)
    # one gather of W' + 1 columns per plane: column x + 1 is features[x - lo], column x is
    # features[x - lo - 1] (what a fractional shift blends in)
    cols = torch.arange(width + 1, device=features.device)
    index = cols.unsqueeze(0) - lo.long().unsqueeze(1) + (pad - 1)  # P x (W' + 1)
    wide = padded.index_select(3, index.flatten()).view(b, c, h, p, width + 1)
    near, far = wide[..., 1:], wide[..., :-1]
    return (near * (1 - frac) + far * frac).permute(0, 3, 1, 2, 4)


class PublishedFeatures(nn.Module):
    """left, right B x 3 x H x W -> feat_left, feat_right B x C x h x w [, left_hr B x C' x H x W]."""

    def __init__(self, model: Bi3DModel) -> None:
        super().__init__()
        self.featnet = model.featnet
        self.featnethr = model.featnethr

    def forward(self, left: Tensor, right: Tensor) -> tuple[Tensor, ...]:
        b = left.shape[0]
        both = self.featnet(torch.cat([left, right], 0))
        out = (both[:b], both[b:])
        return (*out, self.featnethr(left)) if self.featnethr is not None else out


class PublishedPlanes(nn.Module):
    """feat_left, feat_right B x C x h x w, shifts (P,) -> logits B x P x h x w."""

    def __init__(self, model: Bi3DModel) -> None:
        super().__init__()
        self.segnet = model.segnet
        self.max_shift = model.max_shift

    def forward(self, feat_left: Tensor, feat_right: Tensor, shifts: Tensor) -> Tensor:
        b, c, h, w = feat_left.shape
        p = shifts.shape[0]
        right = shifted_columns(feat_right, shifts, self.max_shift)
        left = F.pad(feat_left, (0, self.max_shift)).unsqueeze(1).expand(b, p, c, h, w + self.max_shift)
        logits = self.segnet(torch.cat([left, right], 2).flatten(0, 1))[..., :w]
        return logits.reshape(b, p, h, w)


class LightFeatures(nn.Module):
    """left, right -> guide and the per-frame parts of the factored first SegNet layer.

    Outputs guide B x 36 x h/2 x w/2, sweep_base B x C0 x h x W' (left projection and bias),
    left_pad and left_unit B x C x h x W', right_stack B x (C0 + 2C) x h x w (right projection,
    right features, unit right features: the three tensors each plane shifts).
    """

    def __init__(self, model: LightBi3D) -> None:
        super().__init__()
        self.featnet, self.guide, self.segnet = model.featnet, model.guide, model.segnet
        self.max_shift = model.max_shift

    def forward(self, left: Tensor, right: Tensor) -> tuple[Tensor, ...]:
        b = left.shape[0]
        both = self.featnet(torch.cat([left, right], 0))
        feat_left, feat_right = both[:b], both[b:]
        left_pad = F.pad(feat_left, (0, self.max_shift))
        seg = self.segnet
        right_stack = torch.cat([seg.proj_right(feat_right), feat_right, F.normalize(feat_right, dim=1)], 1)
        return (
            self.guide(feat_left),
            seg.proj_left(left_pad),
            left_pad,
            F.normalize(left_pad, dim=1),
            right_stack,
        )


class LightPlanes(nn.Module):
    """The light kind's plane pass from the per-frame tensors: -> logits B x P x h/2 x w/2."""

    def __init__(self, model: LightBi3D) -> None:
        super().__init__()
        self.segnet = model.segnet
        self.max_shift = model.max_shift
        self.split = (model.segnet.proj_left.out_channels, model.featnet.out_channels)

    def forward(
        self, sweep_base: Tensor, left_pad: Tensor, left_unit: Tensor, right_stack: Tensor, shifts: Tensor
    ) -> Tensor:
        seg, (c0, c) = self.segnet, self.split
        b, p = left_pad.shape[0], shifts.shape[0]
        w = left_pad.shape[-1] - self.max_shift
        moved = shifted_columns(right_stack, shifts, self.max_shift)  # B x P x (C0 + 2C) x h x W'
        proj, right, unit = moved[:, :, :c0], moved[:, :, c0 : c0 + c], moved[:, :, c0 + c :]
        x = (sweep_base.unsqueeze(1) + proj).flatten(0, 1)
        x = x + seg.proj_diff((left_pad.unsqueeze(1) - right).abs().flatten(0, 1))
        x = x + seg.proj_corr((left_unit.unsqueeze(1) * unit).sum(2, keepdim=True).flatten(0, 1))
        logits = seg(x.contiguous(memory_format=torch.channels_last))[..., : w // 2]
        return logits.reshape(b, p, logits.shape[-2], logits.shape[-1])


class Refine(nn.Module):
    """lowres B x P x h' x w' and the per-frame tensors it needs -> logits B x P x H x W."""

    def __init__(self, model: SweepModel, inputs: tuple[str, ...]) -> None:
        super().__init__()
        self.model, self.names = model, inputs

    def forward(self, lowres: Tensor, *frame: Tensor) -> Tensor:
        got = dict(zip(self.names[1:], frame, strict=True))
        image = got.get("left", got.get("left_hr"))
        assert image is not None
        feats = Features(image, image, got.get("left_hr"), image, got.get("guide"))
        return self.model.refine_planes(feats, lowres)


class Regularise(nn.Module):
    """Continuous-3D: lowres B x P x h x w, feat_left B x C x h x w -> lowres (3D-regularised)."""

    def __init__(self, model: Bi3DModel) -> None:
        super().__init__()
        assert model.refinenet3d is not None
        self.net = model.refinenet3d

    def forward(self, lowres: Tensor, feat_left: Tensor) -> Tensor:
        return self.net(lowres, feat_left)


class DispRefineStage(nn.Module):
    """Continuous kinds: normalised disparity B x 1 x H x W, left image -> refined, same shape."""

    def __init__(self, model: Bi3DModel) -> None:
        super().__init__()
        self.net = model.refinenet

    def forward(self, normalized: Tensor, left: Tensor) -> Tensor:
        return self.net(normalized, left)


IMAGE = {0: "batch", 2: "height", 3: "width"}
GRID = {0: "batch", 2: "grid_height", 3: "grid_width"}
SWEEP = {0: "batch", 2: "grid_height", 3: "sweep_width"}
PLANES = {0: "batch", 1: "planes", 2: "out_height", 3: "out_width"}


def stages(model: SweepModel) -> list[Stage]:
    """The stage graphs of a model, in the order a frame runs them."""
    if isinstance(model, LightBi3D):
        feat_out = ("guide", "sweep_base", "left_pad", "left_unit", "right_stack")
        half = {0: "batch", 2: "half_height", 3: "half_width"}
        return [
            Stage(
                "featnet",
                LightFeatures(model),
                ("left", "right"),
                feat_out,
                {"left": IMAGE, "right": IMAGE, "guide": half, "sweep_base": SWEEP}
                | {"left_pad": SWEEP, "left_unit": SWEEP, "right_stack": GRID},
            ),
            Stage(
                "segnet",
                LightPlanes(model),
                ("sweep_base", "left_pad", "left_unit", "right_stack", "shifts"),
                ("logits",),
                {"sweep_base": SWEEP, "left_pad": SWEEP, "left_unit": SWEEP, "right_stack": GRID}
                | {"shifts": {0: "planes"}, "logits": PLANES},
            ),
            _refine(model, ("lowres", "guide", "left"), {"guide": half}),
        ]
    assert isinstance(model, Bi3DModel)
    binary = model.kind is ModelKind.BINARY
    features = ("feat_left", "feat_right", "left_hr") if binary else ("feat_left", "feat_right")
    out = [
        Stage(
            "featnet",
            PublishedFeatures(model),
            ("left", "right"),
            features,
            {"left": IMAGE, "right": IMAGE, "feat_left": GRID, "feat_right": GRID, "left_hr": IMAGE},
        ),
        Stage(
            "segnet",
            PublishedPlanes(model),
            ("feat_left", "feat_right", "shifts"),
            ("logits",),
            {"feat_left": GRID, "feat_right": GRID, "shifts": {0: "planes"}, "logits": PLANES},
        ),
        _refine(model, ("lowres", "left_hr") if binary else ("lowres", "left"), {}),
    ]
    if model.refinenet3d is not None:
        out.append(
            Stage(
                "regularise",
                Regularise(model),
                ("lowres", "feat_left"),
                ("regularised",),
                {"lowres": PLANES, "feat_left": GRID, "regularised": PLANES},
            )
        )
    if not binary:
        single = {0: "batch", 2: "height", 3: "width"}
        out.append(
            Stage(
                "disprefine",
                DispRefineStage(model),
                ("normalized", "left"),
                ("refined_normalized",),
                {"normalized": single, "left": IMAGE, "refined_normalized": single},
            )
        )
    return out


def _refine(model: SweepModel, inputs: tuple[str, ...], extra: dict[str, dict[int, str]]) -> Stage:
    full = {0: "batch", 1: "planes", 2: "height", 3: "width"}
    dynamic = {"lowres": PLANES, "left": IMAGE, "left_hr": IMAGE, "refined": full} | extra
    return Stage(
        "refine", Refine(model, inputs), inputs, ("refined",), {k: dynamic[k] for k in (*inputs, "refined")}
    )
