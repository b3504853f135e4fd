"""The light model honours the engine contract and its factored first layer is exact."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from app.engine.bi3d.checkpoint import load_model, save_checkpoint
from app.engine.bi3d.light import LightBi3D, _one_channel_last, convex_upsample
from app.engine.bi3d.model import ModelKind, plane_sweep_volume
from app.engine.depth.bi3d import Bi3DEngine
from app.engine.types import DepthRequest, Mode


def _model() -> LightBi3D:
    torch.manual_seed(0)
    return LightBi3D().eval()


def test_factored_first_layer_equals_a_1x1_conv_over_the_volume() -> None:
    # whole shifts; for fractional ones the correlation blends unit vectors (an approximation)
    model = _model()
    seg = model.segnet
    x = torch.randn(1, 3, 192, 288)
    with torch.inference_mode():
        feats = model.extract(x, x.roll(-6, dims=3))
        shifts = torch.tensor([0.0, 2.0, 5.0])
        got = model.plane_logits(feats, shifts, chunk=2)
        # reference: build the concatenated volume explicitly and apply one 1x1 conv
        c = feats.left.shape[1]
        vol = plane_sweep_volume(feats.left, feats.right, shifts, model.max_shift)[0]  # P x 2C x h x w'
        lf, rf = vol[:, :c], vol[:, c:]
        corr = (F.normalize(lf, dim=1) * F.normalize(rf, dim=1)).sum(1, keepdim=True)
        full = torch.cat([lf, rf, (lf - rf).abs(), corr], 1)
        weight = torch.cat(
            [seg.proj_left.weight, seg.proj_right.weight, seg.proj_diff.weight, seg.proj_corr.weight], 1
        )
        x0 = F.conv2d(full, weight, seg.proj_left.bias)
        want = seg(x0)[..., : feats.left.shape[-1] // 2][None, :, 0]
    torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("width", [288, 96])
def test_inference_planes_equal_the_differentiable_volumes(width: int) -> None:
    # PlaneTerms (no gradients) against training_volumes (gradients), whole and fractional
    # shifts, up to the last feature column; at 96 px the sweep (64 columns) is wider than the
    # image's 32 feature columns
    model = _model()
    x = torch.randn(1, 3, 192, width)
    with torch.inference_mode():
        feats = model.extract(x, x.roll(-6, dims=3))
    shifts = torch.tensor([0.0, 1.0, 2.5, 20.0 / 3, 40.25, 63.0, 63.7, 64.0])
    with torch.no_grad():
        got = model.plane_logits(feats, shifts, chunk=3)
        assert feats.sweep is not None  # the per-frame terms stay with the frame
        again = model.plane_logits(feats, shifts[2:4], chunk=1)
    with torch.enable_grad():
        fresh = type(feats)(feats.left.clone(), feats.right.clone(), None, feats.image, feats.guide)
        want = model.plane_logits(fresh, shifts, chunk=3).detach()
    assert fresh.sweep is None
    torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(again, got[:, 2:4])


def test_a_few_planes_answer_as_a_sweep_does() -> None:
    # up to FEW_PLANES planes keep the correlation's unit vectors channels-last: the same values
    # as the channels-first ones of a sweep, whole and fractional shifts, first sweep or later
    model = _model()
    x = torch.randn(1, 3, 192, 288)
    shifts = torch.tensor([0.0, 2.5, 20.0 / 3, 63.7])
    with torch.inference_mode():
        few = model.extract(x, x.roll(-6, dims=3))
        many = type(few)(few.left, few.right, None, few.image, few.guide)
        got = torch.cat([model.plane_logits(few, shifts[i : i + 1]) for i in range(4)], 1)
        want = model.plane_logits(many, torch.cat([shifts, shifts / 2]))[:, :4]  # 8 planes
        assert few.sweep is not None and many.sweep is not None
        assert few.sweep._channels_last_units and not many.sweep._channels_last_units
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


def test_segnet_answers_the_columns_kept_as_it_answers_them_cropped() -> None:
    # the decoder's last layers run on the columns that reach the kept ones: the same values,
    # at every width (even and odd grids) and every number of columns kept
    seg = _model().segnet
    worst = 0.0
    with torch.inference_mode():
        for width in (64, 97, 120, 144, 203):
            x = torch.relu(torch.randn(1, seg.proj_left.out_channels, 32, width))
            x = x.contiguous(memory_format=torch.channels_last)
            full = seg.body(x)
            for keep in range(1, full.shape[-1] + 1):
                worst = max(worst, float((seg.body(x, keep) - full[..., :keep]).abs().max()))
    assert worst < 1e-5


def test_convex_upsampling_is_a_convex_combination() -> None:
    logits = torch.randn(1, 2, 5, 7)
    out = convex_upsample(logits, torch.randn(1, 36, 5, 7), 2)
    assert out.shape == (1, 2, 10, 14)
    assert out.max() <= logits.max() + 1e-5 and out.min() >= logits.min() - 1e-5
    flat = convex_upsample(torch.full((1, 1, 5, 7), 3.0), torch.randn(1, 36, 5, 7), 2)
    torch.testing.assert_close(flat, torch.full_like(flat, 3.0))


def test_engine_runs_every_mode_with_the_light_model() -> None:
    rng = np.random.default_rng(0)
    left = rng.integers(0, 255, (150, 250, 3), dtype=np.uint8)
    right = np.roll(left, -9, axis=1)
    engine = Bi3DEngine(_model())
    for request in [
        DepthRequest(mode=Mode.BINARY, planes=(12,)),
        DepthRequest(mode=Mode.QUANTIZED, levels=4),
        DepthRequest(mode=Mode.SELECTIVE, range=(6, 30)),
        DepthRequest(mode=Mode.CONTINUOUS),
    ]:
        result = engine.compute(left, right, request)
        assert result.probabilities.shape[1:] == (150, 250)
        assert result.disparity.shape == (150, 250)


def test_light_checkpoint_round_trip(tmp_path: Path) -> None:
    model = _model()
    save_checkpoint(tmp_path / "light.pt", model, {"note": "test"})
    loaded, info = load_model(tmp_path / "light.pt")
    assert info.kind is ModelKind.LIGHT and isinstance(loaded, LightBi3D)
    for key, value in model.state_dict().items():
        assert torch.equal(loaded.state_dict()[key], value)


def test_monotone_logits_are_the_mean_of_the_two_running_bounds() -> None:
    from app.engine.depth.readout import monotone_logits

    logits = torch.randn(2, 9, 5, 7, generator=torch.Generator().manual_seed(3))
    got = monotone_logits(logits)
    near = torch.cummin(logits, dim=1).values
    far = torch.flip(torch.cummax(torch.flip(logits, [1]), dim=1).values, [1])
    torch.testing.assert_close(got, 0.5 * (near + far))
    assert (got[:, 1:] <= got[:, :-1]).all()  # non-increasing along planes
    already = torch.linspace(3, -3, 9).view(1, 9, 1, 1).expand(1, 9, 2, 2)
    torch.testing.assert_close(monotone_logits(already), already)  # a monotone curve is kept
    one = torch.randn(1, 1, 3, 3)
    torch.testing.assert_close(monotone_logits(one), one)


def test_one_channel_map_handed_over_channels_last() -> None:
    """The correlation map is re-strided, not copied, and reads the same values."""
    x = torch.randn(3, 1, 5, 7)
    y = _one_channel_last(x)
    assert y.data_ptr() == x.data_ptr() and torch.equal(y, x)
    assert y.is_contiguous(memory_format=torch.channels_last) and y.stride(1) == 1
    strided = torch.randn(3, 1, 5, 14)[..., ::2]  # not contiguous: copied first
    assert torch.equal(_one_channel_last(strided), strided)


def test_channels_last_instance_norm_matches_torchs() -> None:
    from app.engine.bi3d.light import instance_norm_channels_last

    g = torch.Generator().manual_seed(0)
    x = (torch.randn(2, 16, 23, 31, generator=g) * 3 + 40).contiguous(memory_format=torch.channels_last)
    out = instance_norm_channels_last(x, 1e-5)
    assert out.is_contiguous(memory_format=torch.channels_last)
    assert torch.allclose(out, torch.nn.functional.instance_norm(x.contiguous(), eps=1e-5), atol=2e-5)
    model = LightBi3D().eval()  # the feature net takes it for channels-last input, torch's otherwise
    image = torch.rand(2, 3, 48, 96, generator=g)
    with torch.no_grad():
        a = model.featnet(image.contiguous(memory_format=torch.channels_last))
        b = model.featnet(image.contiguous())
    assert torch.allclose(a, b, atol=2e-5)


def test_inference_features_fold_the_norm_into_the_projection() -> None:
    from app.engine.bi3d.light import normalised_projection

    g = torch.Generator().manual_seed(1)
    z = (torch.randn(2, 16, 37, 53, generator=g) * 3 + 6).contiguous(memory_format=torch.channels_last)
    weight, bias = torch.randn(16, 16, 1, 1, generator=g), torch.randn(16, generator=g)
    want = F.instance_norm(F.conv2d(z.double(), weight.double(), bias.double()), eps=1e-5)
    got = normalised_projection(z, weight, 1e-5)
    assert got.is_contiguous(memory_format=torch.channels_last)
    torch.testing.assert_close(got.double(), want, atol=5e-5, rtol=0)
    model = LightBi3D().eval()  # inference takes the fold, training the convolution and norm
    image = torch.rand(2, 3, 48, 96, generator=g).contiguous(memory_format=torch.channels_last)
    with torch.no_grad():
        folded = model.featnet(image)
    trained = model.featnet(image)
    assert trained.requires_grad
    torch.testing.assert_close(folded, trained.detach(), atol=5e-5, rtol=0)
