"""Bi3D-Light: this project's CPU model (its own kind, not a published architecture).

It keeps Bi3D's contract (features once per frame, then one independent binary
classification per plane, cost linear in planes) and spends its FLOPs where a small
network gains the most:

- an explicit matching signal in the plane-sweep volume: |left - shifted right| per
  channel and their normalised correlation, next to the two feature maps;
- SegNet starts at 1/6 resolution (the sweep stays on the 1/3 grid, 3 px per plane);
- per-plane logits go from 1/6 to 1/3 resolution by convex upsampling with weights
  predicted once per frame from the left features (edge-aware at little per-plane cost),
  then bilinearly to full resolution;
- channels-last memory layout throughout (about 2.5x faster convolutions on a CPU).

Shapes: B batch, P planes, H x W image, h x w = H/3 x W/3.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from app.engine.bi3d.layers import ResidualBlock, conv_relu, scaled
from app.engine.bi3d.model import (
    FEATURE_STRIDE,
    Features,
    ModelKind,
    SweepModel,
    _check_input,
    to_channels_last,
)


class LightFeatNet(nn.Module):
    """B x 3 x H x W -> B x C x h x w (C = 16 at width 1: a multiple of 16 suits oneDNN)."""

    # the stem and block in int8 (``bi3d.int8``: a callable of the image batch), or None
    quantized: Callable[[Tensor], Tensor] | None = None

    def __init__(self, width: float) -> None:
        super().__init__()
        c = scaled(16, width)
        self.out_channels = c
        self.stem = nn.Sequential(conv_relu(3, c, 3, FEATURE_STRIDE, 1), conv_relu(c, c))
        self.block = ResidualBlock(c, dilation=1, leaky=False)
        self.out = nn.Conv2d(c, c, 1)
        # Standardising each channel over the image keeps the matching signal (differences
        # between left and right features) at unit scale; without it the features were
        # dominated by their biases and training settled on a plane-only prior.
        self.norm = nn.InstanceNorm2d(c, affine=False)

    def forward(self, image: Tensor) -> Tensor:
        if self.quantized is not None and not torch.is_grad_enabled():
            z = self.quantized(image)
        else:
            z = self.block(self.stem(image))
        if torch.onnx.is_in_onnx_export() or not z.is_contiguous(memory_format=torch.channels_last):
            return self.norm(self.out(z))
        if (
            z.dtype == torch.float32
            and not torch.is_grad_enabled()
            and not torch.is_autocast_enabled(z.device.type)
        ):
            return normalised_projection(z, self.out.weight, self.norm.eps)
        return instance_norm_channels_last(self.out(z), self.norm.eps)


def normalised_projection(z: Tensor, weight: Tensor, eps: float) -> Tensor:
    """``InstanceNorm2d(affine=False)`` of the 1x1 convolution ``weight`` of a float32
    channels-last B x C x H x W ``z``, as one per-image 1x1 convolution (inference only): the
    norm of ``W z + b`` is ``(W (z - m)) / sqrt(diag(W S W^T) + eps)`` with ``m`` and ``S``
    the mean and covariance of ``z`` over the image, so the bias drops out and ``W`` is scaled
    per image. Two reads of ``z`` (its C x C moments, then the product) instead of the
    convolution's and the norm's four passes: 1.8-2.5 against 3.2-4.6 ms at 2 x 16 x 160 x 214
    here; within 1e-5 of float64 on the demo (the two-pass norm: 3e-6)."""
    b, c, h, w = z.shape
    flat = z.permute(0, 2, 3, 1).reshape(b, h * w, c)  # a view of channels-last memory
    mean = flat.mean(1, keepdim=True)  # B x 1 x C
    moments = torch.bmm(flat.transpose(1, 2), flat) / (h * w)  # B x C x C
    cov = moments - mean.transpose(1, 2) * mean
    proj = weight.reshape(weight.shape[0], c)  # O x C
    var = torch.einsum("oc,bcd,od->bo", proj, cov, proj)  # each output channel's variance
    scaled = (
        (proj * torch.rsqrt(var.clamp_min(0) + eps).unsqueeze(2)).transpose(1, 2).contiguous()
    )  # B x C x O
    out = torch.baddbmm(-mean @ scaled, flat, scaled)  # B x HW x O; a contiguous matrix: 0.5 vs 0.9 ms
    return out.view(b, h, w, -1).permute(0, 3, 1, 2)


def instance_norm_channels_last(x: Tensor, eps: float) -> Tensor:
    """``InstanceNorm2d(affine=False)`` of a channels-last B x C x H x W tensor, answered
    channels-last: the statistics over a B x HW x C view of its memory (two passes, so a large
    mean does not cost precision). The same values to 1e-6; torch's own instance norm copies
    channels-last input to channels-first and back, 3.1 against 0.5 ms at 2 x 16 x 160 x 224."""
    b, c, h, w = x.shape
    # float32 inside; answered in the input's type, or float32 under autocast (as torch's is)
    dtype = torch.float32 if torch.is_autocast_enabled(x.device.type) else x.dtype
    x = x.float()
    flat = x.permute(0, 2, 3, 1).reshape(b, h * w, c)  # a view of channels-last memory
    centred = flat - flat.mean(1, keepdim=True)
    scale = torch.rsqrt((centred * centred).mean(1, keepdim=True) + eps)
    return (centred * scale).view(b, h, w, c).permute(0, 3, 1, 2).to(dtype)


class LightSegNet(nn.Module):
    """Classifies one plane from left features, shifted right features, their absolute
    difference and their cosine correlation; logits at 1/6 resolution.

    The first layer is a 1x1 convolution over that concatenation, split into one
    projection per input so the left and right projections are computed once per frame
    and only shifted per plane (the sum is the same linear map).
    """

    # the body in int8 (``bi3d.int8``: a callable of the volume and ``keep``), or None
    quantized: Callable[[Tensor, int | None], Tensor] | None = None

    def __init__(self, feature_channels: int, width: float) -> None:
        super().__init__()
        c = feature_channels
        w = [scaled(k, width) for k in (16, 32, 48, 64)]
        self.proj_left = nn.Conv2d(c, w[0], 1)
        self.proj_right = nn.Conv2d(c, w[0], 1, bias=False)
        self.proj_diff = nn.Conv2d(c, w[0], 1, bias=False)
        self.proj_corr = nn.Conv2d(1, w[0], 1, bias=False)
        self.down1, self.enc1 = conv_relu(w[0], w[0], 3, 2, 1), conv_relu(w[0], w[0])
        self.down2, self.enc2 = conv_relu(w[0], w[1], 3, 2, 1), conv_relu(w[1], w[1])
        self.down3, self.enc3 = conv_relu(w[1], w[2], 3, 2, 1), conv_relu(w[2], w[2])
        self.down4, self.enc4 = conv_relu(w[2], w[3], 3, 2, 1), conv_relu(w[3], w[3])
        self.dec3 = conv_relu(w[3] + w[2], w[2])
        self.dec2 = conv_relu(w[2] + w[1], w[1])
        self.dec1 = conv_relu(w[1] + w[0], w[0])
        self.out = nn.Conv2d(w[0], 1, 3, 1, 1)
        self.widest_channels = 3 * c + 1

    def forward(self, x: Tensor) -> Tensor:
        """N x w0 x h x w' (projected volume, before its ReLU) -> N x 1 x h/2 x w'/2."""
        return self.body(F.relu(x))

    def body(self, x: Tensor, keep: int | None = None) -> Tensor:
        """``forward`` of a volume after its ReLU; ``keep``: only the first ``keep`` output columns
        (the same values: the last two 3 x 3 layers run on the columns they reach, 114 of 144 at
        480 x 640, where the rest was computed and cropped). In int8 (``quantized``), without
        gradients: every column computed, then cropped."""
        if self.quantized is not None and not torch.is_grad_enabled():
            return self.quantized(x, keep)
        x1 = self.enc1(self.down1(x))
        x2 = self.enc2(self.down2(x1))
        x3 = self.enc3(self.down3(x2))
        x4 = self.enc4(self.down4(x3))
        y = self.dec3(torch.cat([_up(x4, x3), x3], 1))
        # out's first ``keep`` columns read dec1's first keep + 1, which read its input's keep + 2;
        # those (x2 upsampled 2x, half-pixel centres) read dec2's first keep / 2 + 2 columns,
        # which read its input's one more (None: every column)
        reach = None if keep is None or keep + 2 >= x1.shape[-1] else keep + 2
        half = None if reach is None else reach // 2 + 2
        if half is not None and half < x2.shape[-1] and x1.shape[-1] == 2 * x2.shape[-1]:
            y = self.dec2(torch.cat([_up(y, x2)[..., :half], x2[..., :half]], 1))
            up = F.interpolate(y, (x1.shape[-2], 2 * half), mode="bilinear", align_corners=False)
        else:
            up = _up(self.dec2(torch.cat([_up(y, x2), x2], 1)), x1)
        y = self.dec1(torch.cat([up[..., :reach], x1[..., :reach]], 1))
        return self.out(y)[..., :keep]


class PixelSegNet(LightSegNet):
    """``LightSegNet`` for the per-pixel passes, with one more input: the pixel's prior, its
    curve's logit at its plane as far as the search knows it (interpolated between its bracket's
    ends), projected like the correlation. Zero weights answer as ``LightSegNet``."""

    def __init__(self, feature_channels: int, width: float) -> None:
        super().__init__(feature_channels, width)
        self.proj_prior = nn.Conv2d(1, self.proj_left.out_channels, 1, bias=False)
        nn.init.zeros_(self.proj_prior.weight)


# sweeps of up to this many planes keep the correlation's unit vectors channels-last
# (``PlaneTerms``): the layout change costs one frame more than its sums cost these planes
FEW_PLANES = 4
PRIOR_CLAMP = 8.0  # logits; the prior enters as clamp(logit, -8, 8) / 4
PRIOR_SCALE = 0.25


class UpsampleGuide(nn.Module):
    """Per-frame convex-upsampling weights from 1/6 to 1/3 resolution:
    B x C x h x w -> B x 9*4 x h/2 x w/2."""

    def __init__(self, in_channels: int, width: float) -> None:
        super().__init__()
        c = scaled(16, width)
        self.net = nn.Sequential(conv_relu(in_channels, c, 3, 2, 1), nn.Conv2d(c, 9 * 4, 1))

    def forward(self, features: Tensor) -> Tensor:
        return self.net(features)


class LightBi3D(SweepModel):
    min_size = 96  # no wide pooling branch
    channels_last_input = True  # its layers run channels-last (see the module docstring)
    # answers planes between feature columns by interpolation as well as on them (16 held-out
    # synthetic scenes, agreement with the plane asked for: 0.954 interpolated, 0.946 rounded;
    # 0.951 on the grid)
    exact_planes = True
    cpu_bf16 = True  # trained and selected under bf16 autocast
    # logits at 1/6 resolution place the mask's edge near the plane coarsely on real images;
    # the matching check fixes much of it (16 held-out synthetic scenes: 0.9528 -> 0.9549)
    plane_check = True
    segnet: LightSegNet
    # the per-pixel passes' own SegNet (``add_pixel_segnet``), or None: they then run ``segnet``
    pixel_segnet: PixelSegNet | None

    def __init__(self, width: float = 1.0, max_disparity: int = 192) -> None:
        super().__init__()
        self.kind = ModelKind.LIGHT
        self.width = float(width)
        self.featnethr = None
        self.refinenet3d = None
        self._set_range(max_disparity)
        self.featnet = LightFeatNet(width)
        c = self.featnet.out_channels
        self.segnet = LightSegNet(c, width)
        self.widest_channels = self.segnet.widest_channels
        for module in self.modules():
            if isinstance(module, nn.Conv2d):  # He initialisation suits the ReLU layers
                nn.init.kaiming_normal_(module.weight, nonlinearity="relu")
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
        self.guide = UpsampleGuide(c, width)
        self.pixel_segnet = None
        to_channels_last(self)

    def add_pixel_segnet(self) -> PixelSegNet:
        """Give the per-pixel passes their own SegNet, a copy of ``segnet`` to train
        (``training.pixel_pass``). A network trained on uniform planes only answers a plane map
        that follows the scene (the search's last passes) unlike its uniform sweep; the copy
        learns to answer it as the sweep would. The features and the uniform planes are
        unchanged; a checkpoint holding ``pixel_segnet.*`` weights builds it on load."""
        if self.pixel_segnet is None:
            c = self.featnet.out_channels
            self.pixel_segnet = PixelSegNet(c, self.width)
            missing = self.pixel_segnet.load_state_dict(self.segnet.state_dict(), strict=False).missing_keys
            assert missing == ["proj_prior.weight"], missing
            to_channels_last(self.pixel_segnet)
            self.pixel_segnet.to(next(self.segnet.parameters()).device)
        return self.pixel_segnet

    def extract(self, left: Tensor, right: Tensor) -> Features:
        _check_input(left, right, self.min_size)
        both = self.featnet(_as_batch(left, right).contiguous(memory_format=torch.channels_last))
        feat_left, feat_right = both.chunk(2, dim=0)
        return Features(feat_left, feat_right, None, left, self.guide(feat_left))

    def plane_logits(self, feats: Features, shifts: Tensor, chunk: int = 8) -> Tensor:
        """B x P x h/2 x w/2 logits; ``shifts`` (P,) in feature columns, fractions interpolate.

        Without gradients (inference) the volumes come from ``PlaneTerms``, built once per
        frame and kept on ``feats``: the same values to float rounding (1e-5), fewer passes
        over memory; with gradients (training) from ``training_volumes``."""
        self._check_shifts(shifts)
        width = feats.left.shape[-1]
        step = max(1, chunk)
        terms = None if torch.is_grad_enabled() else self.plane_terms(feats, shifts.numel())
        out = []
        for start in range(0, shifts.numel(), step):
            part = shifts[start : start + step].tolist()
            if terms is not None:
                x = terms.volumes(part)  # after the first layer's ReLU
            else:
                x = F.relu(self.training_volumes(feats, part))
            logits = self.segnet.body(x, width // 2)
            out.append(logits.view(len(part), feats.left.shape[0], *logits.shape[-2:]).transpose(0, 1))
        return out[0] if len(out) == 1 else torch.cat(out, dim=1)

    def plane_terms(self, feats: Features, planes: int | None = None) -> PlaneTerms:
        """The frame's ``PlaneTerms`` (inference), built on first use and kept on ``feats``;
        ``planes``: how many planes the first sweep asks for, if known (a layout choice)."""
        if not isinstance(feats.sweep, PlaneTerms):
            feats.sweep = PlaneTerms(self.segnet, feats, self.max_shift, planes)
        return feats.sweep

    def training_volumes(self, feats: Features, part: list[float]) -> Tensor:
        """The first layer of SegNet (before its ReLU) for the planes of ``part``, stacked along
        the batch: (P B) x w0 x h x (w + max_shift), by differentiable operations."""
        seg, pad = self.segnet, self.max_shift
        left, right = feats.left, feats.right
        # Memory layouts matter on a CPU (the values do not change): the projections and
        # differences run channels-last, the unit vectors channels-first (a sum over channels
        # is about 3x slower channels-last), and the correlation is handed over channels-last
        left_cl = left.contiguous(memory_format=torch.channels_last)
        right_cl = right.contiguous(memory_format=torch.channels_last)
        left_pad = F.pad(left_cl, (0, pad))
        base = seg.proj_left(left_pad)
        right_proj = seg.proj_right(right_cl)
        left_unit = F.pad(_unit(left), (0, pad))  # zero columns stay zero vectors
        right_unit = _unit(right)
        volumes = [
            base
            + _shift(right_proj, s, pad)
            + seg.proj_diff((left_pad - _shift(right_cl, s, pad)).abs())
            + seg.proj_corr(_one_channel_last((left_unit * _shift(right_unit, s, pad)).sum(1, True)))
            for s in part
        ]
        x = volumes[0] if len(volumes) == 1 else torch.cat(volumes)  # one plane: no copy
        return x.contiguous(memory_format=torch.channels_last)

    def pixel_sweep(self, feats: Features) -> PixelSweep:
        """Per-pixel planes for this frame (``PixelSweep``): through ``pixel_segnet`` where the
        model has one (its own terms, built once per frame and kept on ``feats``), else through
        ``segnet`` from the frame's ``PlaneTerms`` (those of its coarse sweep)."""
        seg = self.pixel_segnet
        if seg is None:
            return PixelSweep(self.segnet, self.plane_terms(feats))
        if torch.is_grad_enabled():  # training: terms that carry the gradient, never kept
            return PixelSweep(seg, PlaneTerms(seg, feats, self.max_shift))
        if not isinstance(feats.pixel_terms, PlaneTerms):
            feats.pixel_terms = PlaneTerms(seg, feats, self.max_shift)
        return PixelSweep(seg, feats.pixel_terms)

    def refine_planes(self, feats: Features, lowres: Tensor) -> Tensor:
        """B x P x h/2 x w/2 logits -> B x P x H x W: convex x2 to the feature grid (edge-aware,
        weights from the left features), then bilinear x3."""
        assert feats.guide is not None
        third = convex_upsample(lowres, feats.guide, 2)
        return F.interpolate(third, feats.image.shape[-2:], mode="bilinear", align_corners=False)

    def forward(self, left: Tensor, right: Tensor, shifts: Tensor) -> Tensor:
        """Full-resolution logits B x P x H x W for ``shifts`` (feature columns)."""
        feats = self.extract(left, right)
        return self.refine_planes(feats, self.plane_logits(feats, shifts, chunk=shifts.numel()))


class PlaneTerms:
    """The plane pass's per-frame terms, and each plane's first SegNet layer from them.

    A plane shifted by ``s`` feature columns pairs left column ``x`` with right column
    ``x - s``: the right features reach only the window ``[s, s + w)`` of the padded volume,
    and outside it the first layer is the same for every plane (the left projection and the
    difference to zero features). That part is computed once, after its ReLU; each plane
    writes its window into a copy of it. Shapes: B x C x h x w features, padded width
    W' = w + max_shift.
    """

    def __init__(self, segnet: LightSegNet, feats: Features, pad: int, planes: int | None = None) -> None:
        cl = torch.channels_last
        left, right = feats.left, feats.right
        self.width = left.shape[-1]
        self.padded = self.width + pad
        self.left = F.pad(left.contiguous(memory_format=cl), (0, pad))
        self.right = right.contiguous(memory_format=cl)
        self.base = segnet.proj_left(self.left)
        self.right_proj = segnet.proj_right(self.right)
        self._features, self._pad = (left, right), pad
        self._units: dict[bool, tuple[Tensor, Tensor]] = {}
        # The unit vectors of the correlation term: channels-first for a sweep, where each plane's
        # sum over channels is about 2x faster so; channels-last for one or two planes (a binary
        # frame), where converting the features to channels-first cost more than the sums
        # (0.77 -> 0.42 ms a frame at 480 x 640, to float rounding: 2e-7)
        self._channels_last_units = planes is not None and planes <= FEW_PLANES

        # outside the window: a plane's first ``lo`` <= max_shift columns (``outside``), and from
        # ``lo + w`` on, where the left features are padding and every column is the last (``tail``)
        def zero_right(cols: slice) -> Tensor:  # the first layer after its ReLU, right features zero
            x = self.base[..., cols] + segnet.proj_diff(self.left[..., cols].abs())
            return torch.relu(x).contiguous(memory_format=cl)

        self.outside = zero_right(slice(0, max(pad, 1)))
        self.tail = zero_right(slice(self.padded - 1, self.padded))
        self.proj_diff = segnet.proj_diff
        self.w_corr = segnet.proj_corr.weight.view(1, -1, 1, 1)

    @property
    def left_unit(self) -> Tensor:
        """B x C x h x W' unit feature vectors of the left image, channels-first (zero columns
        past the image stay zero vectors)."""
        return self._unit_pair(False)[0]

    @property
    def right_unit(self) -> Tensor:
        """B x C x h x w unit feature vectors of the right image, channels-first."""
        return self._unit_pair(False)[1]

    def _unit_pair(self, channels_last: bool) -> tuple[Tensor, Tensor]:
        if channels_last not in self._units:
            left, right = self._features
            if channels_last:
                units = (F.pad(_unit_channels_last(left), (0, self._pad)), _unit_channels_last(right))
            else:
                units = (F.pad(_unit(left.contiguous()), (0, self._pad)), _unit(right.contiguous()))
            self._units[channels_last] = units
        return self._units[channels_last]

    def volumes(self, shifts: list[float]) -> Tensor:
        """(P B) x w0 x h x W' volumes after the ReLU, channels-last, for ``shifts``: each plane
        written into its place in one buffer (a concatenation of the planes' volumes copied
        every plane once more: 1 of the 3 ms a plane at 480 x 640)."""
        b, c, h, _ = self.outside.shape
        out = torch.empty(
            (len(shifts) * b, c, h, self.padded),
            dtype=self.outside.dtype,
            device=self.outside.device,
            memory_format=torch.channels_last,
        )
        for i, s in enumerate(shifts):
            self.volume(s, out[i * b : (i + 1) * b])
        return out

    def volume(self, shift: float, out: Tensor | None = None) -> Tensor:
        """One plane's B x w0 x h x W' volume after the ReLU, channels-last (into ``out``)."""
        lo = int(shift)
        frac = shift - lo
        channels_last = self._channels_last_units
        left_unit, right_unit = self._unit_pair(channels_last)
        right_proj, right = self.right_proj, self.right
        if frac > 0:  # the two neighbouring whole shifts, blended: one column wider
            right_proj, right, right_unit = (_blend_next(t, frac) for t in (right_proj, right, right_unit))
        span = min(right.shape[-1], self.padded - lo)
        if span < right.shape[-1]:
            right_proj, right, right_unit = right_proj[..., :span], right[..., :span], right_unit[..., :span]
        window = slice(lo, lo + span)
        diff = torch.sub(self.left[..., window], right).abs_().contiguous(memory_format=torch.channels_last)
        y = self.proj_diff(diff)  # a module call: autocast runs it as it ran the full volume's
        y += self.base[..., window]
        y += right_proj
        product = left_unit[..., window] * right_unit
        # the sum over channels: along memory's innermost dimension where that holds them
        corr = (
            product.permute(0, 2, 3, 1).sum(-1).unsqueeze(1)
            if channels_last
            else product.sum(1, keepdim=True)
        )
        y.addcmul_(self.w_corr.to(y.dtype), corr)  # the 1 -> w0 projection of the correlation
        if out is None:
            b, c, h, _ = self.outside.shape
            out = y.new_empty((b, c, h, self.padded)).contiguous(memory_format=torch.channels_last)
        # outside the window every plane is the same: copied there only
        out[..., :lo] = self.outside[..., :lo]
        out[..., lo + span :] = self.tail
        out[..., window] = y.relu_()
        return out


def _blend_next(t: Tensor, frac: float) -> Tensor:
    """B x C x h x w -> B x C x h x (w + 1): ``(1 - frac) t`` moved by 0 columns plus ``frac t``
    moved by 1 (``_shift``'s blend, cut to the columns it touches). Written into one buffer in
    ``t``'s memory layout, without padded copies: 0.57 against 1.5 ms at 16 x 160 x 224 here."""
    b, c, h, w = t.shape
    layout = (
        torch.channels_last if t.is_contiguous(memory_format=torch.channels_last) else torch.contiguous_format
    )
    out = torch.empty((b, c, h, w + 1), dtype=t.dtype, device=t.device, memory_format=layout)
    torch.lerp(t[..., 1:], t[..., :-1], frac, out=out[..., 1:w])
    torch.mul(t[..., :1], 1 - frac, out=out[..., :1])
    torch.mul(t[..., -1:], frac, out=out[..., w:])
    return out


class PixelSweep:
    """One plane per pixel through the bundled SegNet, unchanged: ``__call__`` takes a B x h x
    (w + max_shift) map of shifts in feature columns and answers B x 1 x h/2 x w/2 logits of
    P(disparity > plane) at each pixel's own plane.

    The first layer is ``LightBi3D.plane_logits``'s with the right features read per pixel
    (``gather_columns``) instead of moved by one shift: a constant map answers as the plane of
    that shift does. It runs on pixels x channels tables (channels-last memory), where the
    1x1 projections are matrix products; what does not depend on the map is computed once.
    """

    def __init__(self, segnet: LightSegNet, terms: PlaneTerms) -> None:
        self.seg = segnet
        b, c, h, w = terms.right.shape
        self.shape = (b, h, terms.padded)
        self.width = w
        self.table = _rows(F.pad(torch.cat([terms.right_proj, terms.right, terms.right_unit], 1), (1, 1)))
        self.left = _rows(terms.left)
        self.left_unit = _rows(terms.left_unit)
        self.base = _rows(terms.base)
        self.split = [segnet.proj_left.out_channels, c, c]
        self.w_diff = segnet.proj_diff.weight.flatten(1).t()  # c x w0
        self.w_corr = segnet.proj_corr.weight.flatten(1).t()  # 1 x w0
        prior = getattr(segnet, "proj_prior", None)
        self.w_prior = None if prior is None else prior.weight.flatten(1).t()  # 1 x w0

    def at_planes(self, planes: Tensor, prior: Tensor | None = None) -> Tensor:
        """An h/2 x w/2 map of planes in px (the logits' grid, B = 1) -> h/2 x w/2 logits there:
        each plane covers its 2 x 2 feature pixels, and the padding columns repeat the last.
        ``prior``: each pixel's logit at its plane as far as the search knows it (h/2 x w/2),
        read by a ``PixelSegNet`` only."""
        shifts = self.layout(planes.float() / FEATURE_STRIDE, "plane map")
        priors = None if prior is None else self.layout(prior.float(), "prior map")
        return self(shifts, priors)[0, 0]

    def layout(self, values: Tensor, what: str = "map") -> Tensor:
        """An h/2 x w/2 map (the logits' grid; every batch item alike) or B x h/2 x w/2 maps ->
        the B x h x (w + max_shift) layout of ``__call__``'s maps: each value covers its 2 x 2
        feature pixels, and the padding columns repeat the last."""
        b, h, width = self.shape
        if tuple(values.shape[-2:]) != (h // 2, self.width // 2) or values.dim() not in (2, 3):
            raise ValueError(f"{what} {tuple(values.shape)} is not {(h // 2, self.width // 2)}")
        out = torch.empty(b, h, width, dtype=values.dtype, device=values.device)
        # each value to its 2 x 2 pixels by a broadcast copy (repeat_interleave took 2 ms a map)
        grid = values.view(-1, h // 2, 1, self.width // 2, 1)
        out[..., : self.width].view(b, h // 2, 2, self.width // 2, 2).copy_(grid)
        out[..., self.width :] = out[..., self.width - 1 : self.width]
        return out

    def __call__(self, shift_map: Tensor, prior: Tensor | None = None) -> Tensor:
        """``shift_map`` (and ``prior``, logits) B x h x (w + max_shift) -> B x 1 x h/2 x w/2 logits."""
        if tuple(shift_map.shape) != self.shape:
            raise ValueError(f"shift map {tuple(shift_map.shape)} is not {self.shape}")
        b, h, width = self.shape
        rows = gather_columns(self.table, shift_map, self.width)
        proj, feat, unit = rows.split(self.split, 1)
        x = torch.addmm(self.base + proj, (self.left - feat).abs_(), self.w_diff)
        # in place, so outside autocast: the operands take the product's dtype (bf16 under a
        # bf16 autocast, whose weights ``autocast_weights`` stored in bf16)
        corr = (self.left_unit * unit).sum(1, keepdim=True)
        x.addmm_(corr.to(x.dtype), self.w_corr.to(x.dtype))
        if self.w_prior is not None and prior is not None:
            scaled = prior.reshape(-1, 1).clamp(-PRIOR_CLAMP, PRIOR_CLAMP) * PRIOR_SCALE
            x.addmm_(scaled.to(x.dtype), self.w_prior.to(x.dtype))
        x = x.view(b, h, width, -1).permute(0, 3, 1, 2)  # NCHW shape, channels-last memory
        return self.seg.body(F.relu(x), self.width // 2)


def _rows(x: Tensor) -> Tensor:
    """B x C x h x w -> (B h w) x C: one row of channels per pixel."""
    return x.permute(0, 2, 3, 1).reshape(-1, x.shape[1])


def gather_columns(table: Tensor, shift_map: Tensor, w: int) -> Tensor:
    """Rows of ``table`` ((B h (w + 2)) x C: ``_rows`` of features padded by one zero column
    each side) for each pixel of a B x h x W shift map: column ``x`` of row ``y`` reads column
    ``x - shift`` (``_shift``'s convention, per pixel), fractions blend the two neighbouring
    columns, outside [0, w) reads zeros -> (B h W) x C. Whole rows of channels by
    ``index_select``: a gather along the last dimension of NCHW memory was 5-10x slower."""
    b, h, width = shift_map.shape
    lo = shift_map.floor()
    cols = torch.arange(width, device=shift_map.device, dtype=shift_map.dtype)
    rows = (torch.arange(b * h, device=shift_map.device) * (w + 2)).view(b, h, 1)
    out = table.index_select(0, _row_index(cols - lo, rows, w))
    frac = (shift_map - lo).view(-1, 1)
    if bool((frac > 0).any()):
        nxt = table.index_select(0, _row_index(cols - lo - 1, rows, w))
        out = out + frac.to(out.dtype) * (nxt - out)
    return out


def _row_index(source: Tensor, rows: Tensor, w: int) -> Tensor:
    """Table rows of source columns (B x h x W; outside [0, w) the zero columns) -> (B h W,)."""
    return source.clamp(-1, w).long().add_(rows + 1).view(-1)


def _as_batch(left: Tensor, right: Tensor) -> Tensor:
    """1 x C x H x W each -> 2 x C x H x W; without a copy when they are the two halves of one
    buffer (``Padder.network_pair``), which saves a concatenation of both images a frame."""
    step = left.numel() * left.element_size()
    halves = (
        left.shape == right.shape
        and left.stride() == right.stride()
        and left.dtype == right.dtype
        and left.untyped_storage().data_ptr() == right.untyped_storage().data_ptr()
        and right.data_ptr() - left.data_ptr() == step
        and left.stride(0) * left.element_size() == step
    )
    return left.as_strided((2, *left.shape[1:]), left.stride()) if halves else torch.cat([left, right], 0)


def _shift(t: Tensor, shift: float, pad: int) -> Tensor:
    """B x C x h x w -> B x C x h x (w + pad), moved right by ``shift`` columns (zeros around);
    a fractional shift blends the two neighbouring whole shifts."""
    lo = int(shift)
    frac = shift - lo
    out = F.pad(t, (lo, pad - lo))
    if frac > 0:
        out = (1 - frac) * out + frac * F.pad(t, (lo + 1, pad - lo - 1))
    return out


def _unit_channels_last(x: Tensor) -> Tensor:
    """``_unit`` of a channels-last tensor, in that layout: its sum over channels read along the
    memory's innermost dimension."""
    x = x.contiguous(memory_format=torch.channels_last)
    norm = (x * x).permute(0, 2, 3, 1).sum(-1).sqrt_().clamp_min_(1e-12)
    return x / norm.unsqueeze(1)


def _unit(x: Tensor) -> Tensor:
    """``F.normalize(x, dim=1)`` by a sum of squares: the same values, but torch's vector norm
    over the channels of an NCHW tensor took 3.4 ms of a 15 ms plane pass at 480 x 672 on a CPU."""
    return x / (x * x).sum(1, keepdim=True).sqrt().clamp_min(1e-12)


def _one_channel_last(x: Tensor) -> Tensor:
    """A contiguous N x 1 x H x W tensor with channels-last strides (the same memory, so no
    copy): torch reads the layout from the strides, and a convolution of it then answers
    channels-last instead of channels-first."""
    x = x.contiguous()  # the strides below describe contiguous memory only
    return x.as_strided(x.shape, (x.stride(0), 1, x.stride(2), x.stride(3)))


def _up(x: Tensor, like: Tensor) -> Tensor:
    return F.interpolate(x, like.shape[-2:], mode="bilinear", align_corners=False)


def convex_upsample(logits: Tensor, guide: Tensor, factor: int) -> Tensor:
    """Each output pixel is a convex combination of its 3 x 3 coarse neighbours.

    logits B x P x h x w, guide B x 9*f*f x h x w (weights before the softmax) -> B x P x hf x wf.
    Accumulated one neighbour at a time: the same sums as weighting a B x P x 9 x f x f x h x w
    stack of patches (to 4e-7), without that stack (65 planes at 480 x 640: 9x the memory of
    the answer; measured 52 against 310-580 ms here under load).
    """
    b, p, h, w = logits.shape
    ff = factor * factor
    weights = torch.softmax(guide.float().view(b, 9, ff, h, w), dim=1)
    # replicate the border so edge pixels combine real neighbours, not zeros
    padded = F.pad(logits.float().reshape(b * p, 1, h, w), (1, 1, 1, 1), mode="replicate")
    padded = padded.view(b, p, 1, h + 2, w + 2)
    out = weights[:, None, 0] * padded[..., :h, :w]  # b x p x f*f x h x w
    for k in range(1, 9):
        dy, dx = divmod(k, 3)  # F.unfold's order of the 3 x 3 window
        out.addcmul_(weights[:, None, k], padded[..., dy : dy + h, dx : dx + w])
    return (
        out.view(b, p, factor, factor, h, w).permute(0, 1, 4, 2, 5, 3).reshape(b, p, h * factor, w * factor)
    )
