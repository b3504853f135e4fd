"""The Bi3D engine: padding, the four modes, plane handling, batching and the latency budget."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from app.engine.bi3d.light import LightBi3D
from app.engine.bi3d.model import Bi3DModel
from app.engine.bi3d.padding import Padder, to_network_input
from app.engine.depth.bi3d import Bi3DEngine
from app.engine.depth.readout import StepFit
from app.engine.errors import UserError
from app.engine.types import DepthRequest, Mode


@pytest.fixture(scope="module")
def pair() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1)
    left = rng.integers(0, 255, (150, 250, 3), dtype=np.uint8)
    return left, np.roll(left, -6, axis=1)


@pytest.fixture(scope="module")
def light_engine() -> Bi3DEngine:
    torch.manual_seed(0)
    return Bi3DEngine(Bi3DModel("binary", width=0.25))


def test_padder_reaches_multiples_and_minimum() -> None:
    p = Padder(150, 250)
    assert p.padded_size == (192, 288) and (p.top, p.left) == (42, 38)
    assert Padder(500, 741).padded_size == (576, 768)
    x = torch.arange(150 * 250.0).view(1, 1, 150, 250)
    assert torch.equal(p.crop(p.pad(x)), x)
    assert p.pad(x)[..., :42, :].abs().sum() == 0 and p.pad(x)[..., :, :38].abs().sum() == 0


def test_channels_last_network_input_matches_padding_afterwards() -> None:
    rng = np.random.default_rng(3)
    image = rng.integers(0, 256, (150, 250, 3), dtype=np.uint8)
    padder = Padder(150, 250)
    cpu = torch.device("cpu")
    plain = padder.pad(to_network_input(image, cpu))
    direct = padder.network_input(image, cpu, channels_last=True)
    assert direct.is_contiguous(memory_format=torch.channels_last)
    assert direct.shape == plain.shape
    torch.testing.assert_close(direct, plain, atol=1e-6, rtol=0)
    assert float(direct[..., : padder.top, :].abs().max()) == 0.0  # the padding stays zero
    assert float(direct[..., :, : padder.left].abs().max()) == 0.0


def test_channels_last_pair_is_one_batch_without_a_copy() -> None:
    from app.engine.bi3d.light import _as_batch

    rng = np.random.default_rng(4)
    left, right = (rng.integers(0, 256, (150, 250, 3), dtype=np.uint8) for _ in range(2))
    padder = Padder(150, 250)
    cpu = torch.device("cpu")
    l_in, r_in = padder.network_pair(left, right, cpu, channels_last=True)
    assert torch.equal(l_in, padder.network_input(left, cpu, channels_last=True))
    assert torch.equal(r_in, padder.network_input(right, cpu, channels_last=True))
    both = _as_batch(l_in, r_in)
    assert both.data_ptr() == l_in.data_ptr()  # a view of the pair buffer, not a copy
    assert both.is_contiguous(memory_format=torch.channels_last)
    assert torch.equal(both, torch.cat([l_in, r_in]))
    # separate tensors (or the halves in the wrong order) are concatenated
    apart = _as_batch(l_in.clone(), r_in.clone())
    assert torch.equal(apart, both) and apart.data_ptr() != l_in.data_ptr()
    assert torch.equal(_as_batch(r_in, l_in), torch.cat([r_in, l_in]))
    # NCHW inputs keep the separate path
    plain_l, plain_r = padder.network_pair(left, right, cpu)
    assert torch.equal(plain_l, padder.network_input(left, cpu))
    assert torch.equal(plain_r, padder.network_input(right, cpu))


def test_outputs_keep_the_input_size(light_engine: Bi3DEngine, pair) -> None:  # type: ignore[no-untyped-def]
    for request in [
        DepthRequest(mode=Mode.BINARY, planes=(12,)),
        DepthRequest(mode=Mode.QUANTIZED, planes=(6, 12, 24)),
        DepthRequest(mode=Mode.SELECTIVE, range=(9, 30)),
    ]:
        result = light_engine.compute(*pair, request)
        assert result.disparity.shape == (150, 250)
        assert result.probabilities.shape[1:] == (150, 250)
        assert result.engine == "bi3d" and result.runtime == "torch"
        assert {"features", "planes", "total"} <= set(result.timings)


def test_binary_mask_is_probability_above_half(light_engine: Bi3DEngine, pair) -> None:  # type: ignore[no-untyped-def]
    result = light_engine.compute(*pair, DepthRequest(mode=Mode.BINARY, planes=(12,)))
    assert result.mask is not None
    np.testing.assert_array_equal(result.mask, result.probabilities[0] > 0.5)
    assert np.isnan(result.disparity).all()
    assert list(result.planes) == [12.0]


def test_planes_off_grid_are_rounded_and_reported(light_engine: Bi3DEngine, pair) -> None:  # type: ignore[no-untyped-def]
    result = light_engine.compute(*pair, DepthRequest(mode=Mode.QUANTIZED, planes=(10, 20, 31)))
    assert list(result.planes) == [9.0, 21.0, 30.0]
    assert any("rounded" in note for note in result.notes)


def test_auto_shift_mode_answers_the_light_model_at_the_plane_asked(pair) -> None:  # type: ignore[no-untyped-def]
    torch.manual_seed(0)
    light = Bi3DEngine(LightBi3D(width=0.5))
    assert light.shift_mode == "interpolate"
    out = light.compute(*pair, DepthRequest(mode=Mode.QUANTIZED, planes=(10, 20, 31)))
    assert list(out.planes) == [10.0, 20.0, 31.0]
    assert not any("rounded" in note for note in out.notes)
    # 20 px is 6 2/3 feature columns: not the answer for 21 px (column 7)
    grid = light.compute(*pair, DepthRequest(mode=Mode.QUANTIZED, planes=(21,)))
    assert not np.allclose(out.probabilities[1], grid.probabilities[0])
    assert Bi3DEngine(Bi3DModel("binary", width=0.25)).shift_mode == "round"  # published: as trained
    assert Bi3DEngine(LightBi3D(width=0.5), shift_mode="round").shift_mode == "round"
    with pytest.raises(UserError, match="auto, round or interpolate"):
        Bi3DEngine(LightBi3D(width=0.5), shift_mode="nearest")


def test_interpolated_planes_lie_between_grid_neighbours(pair) -> None:  # type: ignore[no-untyped-def]
    torch.manual_seed(0)
    engine = Bi3DEngine(Bi3DModel("continuous_2d", width=0.25), shift_mode="interpolate")
    out = engine.compute(*pair, DepthRequest(mode=Mode.QUANTIZED, planes=(12, 13.5, 15)))
    assert list(out.planes) == [12.0, 13.5, 15.0]
    feats_lo, mid, feats_hi = out.probabilities
    # features blend linearly; a probability halfway lies within the neighbours' envelope mostly
    between = (mid >= np.minimum(feats_lo, feats_hi) - 0.05) & (mid <= np.maximum(feats_lo, feats_hi) + 0.05)
    assert between.mean() > 0.95


def test_features_are_computed_once_for_all_planes(pair) -> None:  # type: ignore[no-untyped-def]
    model = Bi3DModel("binary", width=0.25)
    calls = {"featnet": 0, "segnet": 0}
    model.featnet.register_forward_hook(lambda *_: calls.__setitem__("featnet", calls["featnet"] + 1))
    model.segnet.register_forward_hook(lambda *_: calls.__setitem__("segnet", calls["segnet"] + 1))
    # one plane per SegNet call; the colour choice's two readings of a first frame left out
    engine = Bi3DEngine(model, max_chunk_bytes=1, colour_choice=False)
    result = engine.compute(*pair, DepthRequest(mode=Mode.QUANTIZED, levels=6))
    assert calls["featnet"] == 1
    assert calls["segnet"] == len(result.planes) == 6


def test_chunking_does_not_change_results(pair) -> None:  # type: ignore[no-untyped-def]
    torch.manual_seed(0)
    model = Bi3DModel("binary", width=0.25)
    request = DepthRequest(mode=Mode.QUANTIZED, levels=5)
    one = Bi3DEngine(model, max_chunk_bytes=1).compute(*pair, request)
    many = Bi3DEngine(model).compute(*pair, request)
    np.testing.assert_allclose(one.probabilities, many.probabilities, atol=1e-5)


def test_selective_marks_pixels_outside_the_range(pair) -> None:  # type: ignore[no-untyped-def]
    torch.manual_seed(0)
    engine = Bi3DEngine(Bi3DModel("continuous_2d", width=0.25))
    result = engine.compute(*pair, DepthRequest(mode=Mode.SELECTIVE, range=(20, 50)))
    state = result.range_state
    assert state is not None and set(np.unique(state)) <= {-1, 0, 1}
    inside = state == 0
    assert np.isnan(result.disparity[~inside]).all()
    assert np.all((result.disparity[inside] >= 17.5) & (result.disparity[inside] <= 51.5))


def test_budget_chooses_fewer_planes_for_less_time(pair) -> None:  # type: ignore[no-untyped-def]
    torch.manual_seed(0)
    engine = Bi3DEngine(Bi3DModel("binary", width=0.25))
    generous = engine.compute(*pair, DepthRequest(mode=Mode.QUANTIZED, budget_ms=60_000))
    cost = engine.costs.costs[(192, 288)]
    per_plane = engine.costs.predict_ms((192, 288), 1) - cost.fixed_ms  # a plane answer's own
    tight_ms = cost.fixed_ms + 3.5 * per_plane
    tight = engine.compute(*pair, DepthRequest(mode=Mode.QUANTIZED, budget_ms=tight_ms))
    assert len(generous.planes) == 63  # every feature column inside (0, 192)
    assert 1 <= len(tight.planes) <= 3
    assert tight.choice["planes"] == len(tight.planes) and "took_ms" in tight.choice


def test_budget_coarsens_the_continuous_plane_step(pair) -> None:  # type: ignore[no-untyped-def]
    torch.manual_seed(0)
    engine = Bi3DEngine(Bi3DModel("continuous_2d", width=0.25))
    first = engine.compute(*pair, DepthRequest(mode=Mode.CONTINUOUS, budget_ms=60_000))
    assert first.choice["step_px"] == 3
    size = (192, 288)
    # 22 planes every 9 px fit, 33 every 6 px do not (DispRefine: no sub-pixel stage)
    budget = engine.costs.predict_dense_ms(size, 22, "off", 0) + 0.01
    result = engine.compute(*pair, DepthRequest(mode=Mode.CONTINUOUS, budget_ms=budget))
    assert result.choice["step_px"] == 9 and len(result.planes) == 22
    assert result.mode is Mode.CONTINUOUS and np.isfinite(result.disparity).all()
    assert any("every 9 px" in note for note in result.notes)


def test_budget_below_any_continuous_strategy_answers_quantized(pair) -> None:  # type: ignore[no-untyped-def]
    torch.manual_seed(0)
    engine = Bi3DEngine(Bi3DModel("continuous_2d", width=0.25))
    engine.compute(*pair, DepthRequest(mode=Mode.CONTINUOUS, budget_ms=60_000))
    size = (192, 288)
    cost = engine.costs.costs[size]  # measured; set here so that the test does not hang on timing
    cost.fixed_ms, cost.per_plane_ms, cost.dense_base_ms, cost.dense_per_plane_ms = 10.0, 5.0, 10.0, 8.0
    cost.answer_per_plane_ms = 5.0  # a plane answer's own, as measured: not timed here
    budget = engine.costs.predict_ms(size, 4) + 0.01
    assert budget < engine.costs.predict_dense_ms(size, 17, "off", 0)  # below every 12 px: not depth
    result = engine.compute(*pair, DepthRequest(mode=Mode.CONTINUOUS, budget_ms=budget))
    assert result.mode is Mode.QUANTIZED and len(result.planes) == 4
    assert result.choice["quantized"] == 1.0 and "took_ms" in result.choice
    assert "below the cheapest continuous depth" in result.notes[0]


def test_budget_below_one_plane_names_the_minimum(pair) -> None:  # type: ignore[no-untyped-def]
    engine = Bi3DEngine(Bi3DModel("binary", width=0.25))
    request = DepthRequest(mode=Mode.CONTINUOUS, budget_ms=1e-6)
    first = engine.compute(*pair, request)  # the probe alone does not refuse: one plane, measured
    assert first.mode is Mode.QUANTIZED and len(first.planes) == 1 and "probe" in first.timings
    assert any("over the 1e-06 ms budget" in n for n in first.notes)  # said (a 159 ms frame of 100 was not)
    with pytest.raises(UserError, match=r"below the fastest answer here .*use at least \d+"):
        engine.compute(*pair, request)


def test_a_quantized_budget_below_one_plane_is_refused_as_a_continuous_one(pair) -> None:  # type: ignore[no-untyped-def]
    """In the window, quantized at 5 ms answered one flat level "over the 5 ms budget" where
    continuous refused and named the minimum."""
    engine = Bi3DEngine(Bi3DModel("binary", width=0.25))
    request = DepthRequest(mode=Mode.QUANTIZED, budget_ms=1e-6)
    first = engine.compute(*pair, request)  # the probe alone does not refuse: one plane, measured
    assert len(first.planes) == 1
    with pytest.raises(UserError, match=r"below the fastest answer here .*use at least \d+"):
        engine.compute(*pair, request)


def test_the_fastest_answer_is_measured_without_the_dense_stages_or_the_runtime_choice(  # type: ignore[no-untyped-def]
    pair, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A budget after continuous frames said one plane takes 527 ms at 600 x 480 (a 17-plane answer
    had taken 405): the seed was the first dense frame's total less its planes, with its sub-pixel
    matching, agreement, readout and the new size's runtime timing in it."""
    import time as _time

    torch.manual_seed(0)
    engine = Bi3DEngine(LightBi3D(width=0.5))
    real_prepare = engine.backend.prepare

    def slow_prepare(left, right) -> None:  # type: ignore[no-untyped-def]
        _time.sleep(1.0)  # as the candidates' timing of a new size (0.4 s at 480 x 600)
        real_prepare(left, right)

    monkeypatch.setattr(engine.backend, "prepare", slow_prepare)
    first = engine.compute(*pair, DepthRequest(mode=Mode.CONTINUOUS, max_disparity=48))
    t = first.timings
    assert t["runtime_setup"] >= 1000 and t["total"] < 1000  # apart from the frame's own time
    cost = engine.costs.costs[(192, 288)]
    dense = sum(t.get(k, 0.0) for k in ("subpixel", "readout", "agreement"))
    assert dense > 0 and cost.fixed_ms == pytest.approx(t["total"] - t["planes"] - dense, abs=1e-6)


def test_a_continuous_budget_measures_dense_depth_on_its_first_frame(pair) -> None:  # type: ignore[no-untyped-def]
    # without the probe's dense answer a budget met before any continuous frame predicts dense
    # depth from the plane passes alone
    torch.manual_seed(0)
    engine = Bi3DEngine(LightBi3D(width=0.5))
    first = engine.compute(*pair, DepthRequest(mode=Mode.CONTINUOUS, budget_ms=1.0))
    cost = engine.costs.costs[(192, 288)]
    assert "probe" in first.timings and first.mode is Mode.QUANTIZED
    assert cost.dense_base_ms is not None and cost.dense_base_ms > 0
    assert cost.dense_per_plane_ms is not None and cost.dense_per_plane_ms > 0
    assert cost.subpixel_ms["colour"] > 0 and cost.subpixel_ms["grey"] > 0


def test_network_nan_is_a_one_line_user_error(pair) -> None:  # type: ignore[no-untyped-def]
    torch.manual_seed(0)
    model = LightBi3D(width=0.5)
    with torch.no_grad():
        model.segnet.out.bias.fill_(float("nan"))
    engine = Bi3DEngine(model)
    for mode in (Mode.BINARY, Mode.CONTINUOUS):
        with pytest.raises(UserError, match=r"answered NaN for 100\.0% .*--precision fp32") as err:
            engine.compute(*pair, DepthRequest(mode=mode, planes=(12.0,), max_disparity=48))
        assert "\n" not in str(err.value)


@pytest.mark.parametrize("budget", [float("nan"), float("inf"), -5.0, 0.0])
def test_bad_budgets_are_one_line_user_errors(pair, budget: float) -> None:  # type: ignore[no-untyped-def]
    engine = Bi3DEngine(Bi3DModel("binary", width=0.25))
    with pytest.raises(UserError, match="budget") as err:
        request = DepthRequest(mode=Mode.CONTINUOUS, budget_ms=budget)
        engine.compute(*pair, request)
    assert "\n" not in str(err.value)


def test_request_beyond_model_range_is_refused(light_engine: Bi3DEngine, pair) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(UserError, match="reaches 192 px"):
        light_engine.compute(*pair, DepthRequest(mode=Mode.CONTINUOUS, max_disparity=256))


def test_mismatched_sizes_are_refused(light_engine: Bi3DEngine, pair) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(UserError, match="differ in size"):
        light_engine.compute(pair[0], pair[1][:, :200], DepthRequest(mode=Mode.BINARY, planes=(9,)))


def test_fp16_on_cpu_is_refused() -> None:
    with pytest.raises(UserError, match="fp16 needs device cuda"):
        Bi3DEngine(Bi3DModel("binary", width=0.25), precision="fp16")


def test_bf16_autocast_agrees_with_fp32(pair) -> None:  # type: ignore[no-untyped-def]
    torch.manual_seed(0)
    model = Bi3DModel("binary", width=0.25)
    request = DepthRequest(mode=Mode.QUANTIZED, planes=(6, 12, 24))
    fp32 = Bi3DEngine(model).compute(*pair, request)
    bf16 = Bi3DEngine(model, precision="bf16").compute(*pair, request)
    assert bf16.precision == "bf16"
    assert np.abs(fp32.probabilities - bf16.probabilities).mean() < 0.02


def _constant_disparity_pair(disparity: int, seed: int, blur: float) -> tuple[np.ndarray, np.ndarray]:
    """A blurred-noise 150 x 250 pair whose disparity is ``disparity`` px everywhere."""
    import cv2

    rng = np.random.default_rng(seed)
    base = cv2.GaussianBlur(rng.uniform(0, 255, (150, 330, 3)).astype(np.float32), (0, 0), blur)
    left = base[:, 40:290].round().astype(np.uint8)
    return left, base[:, 40 + disparity : 290 + disparity].round().astype(np.uint8)


def test_subpixel_refinement_corrects_the_continuous_readout(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    left, right = _constant_disparity_pair(6, seed=2, blur=1.2)

    # whatever the random network reads out, say 7.4 px (within one plane of the truth)
    def fit(logits: torch.Tensor, planes: torch.Tensor, probs: torch.Tensor | None = None) -> StepFit:
        flat = torch.zeros_like(logits[:, :1])
        return StepFit(flat + 7.4, flat, flat.long())

    monkeypatch.setattr("app.engine.depth.bi3d.step_fit", fit)
    torch.manual_seed(0)
    model = Bi3DModel("binary", width=0.25)
    request = DepthRequest(mode=Mode.CONTINUOUS, max_disparity=48)
    on = Bi3DEngine(model, agreement=None).compute(left, right, request)
    off = Bi3DEngine(model, subpixel=None, agreement=None).compute(left, right, request)
    assert "subpixel" in on.timings and "subpixel" not in off.timings
    assert np.allclose(off.disparity, 7.4)
    assert np.median(np.abs(on.disparity[10:-10, 20:-10] - 6.0)) < 0.2
    binary = DepthRequest(mode=Mode.BINARY, planes=(12,))
    assert "subpixel" not in Bi3DEngine(model).compute(left, right, binary).timings


@pytest.mark.parametrize("search", ["full", "coarse-to-fine"])
@pytest.mark.parametrize("nearer", [True, False])
def test_auto_range_sweeps_to_the_ceiling_only_for_something_nearer(
    monkeypatch, nearer: bool, search: str
) -> None:  # type: ignore[no-untyped-def]
    left, right = _constant_disparity_pair(20, seed=4, blur=1.2)
    # bound 51 px: off the search's 24 px grid, so widening it merges two sets of coarse planes
    monkeypatch.setattr("app.engine.depth.scene_range.estimate_reach", lambda *a, **k: 30.0)
    real = Bi3DEngine._sweep

    def sweep(self, feats, shifts, chunk):  # type: ignore[no-untyped-def]
        out = real(self, feats, shifts, chunk)
        planes = (shifts * 3).view(1, -1, 1, 1)
        logits = torch.where(planes < 20, 4.0, -4.0).expand_as(out).clone()  # the scene: 20 px
        logits[:, :, :7] = 4.0  # the zero padding (42 rows: 7 at 1/6) "matches" at every plane
        block = logits[:, :, 12:20, 20:28]  # the middle of the frame
        if nearer:
            block[:] = 4.0  # something nearer than every plane swept
        else:
            block[:, -1] = 4.0  # a false "closer" at the last plane only
        return logits

    monkeypatch.setattr(Bi3DEngine, "_sweep", sweep)
    torch.manual_seed(0)
    request = DepthRequest(mode=Mode.CONTINUOUS, auto_range=True)
    result = Bi3DEngine(LightBi3D(width=0.5), search=search).compute(left, right, request)
    assert result.searched is not None
    assert result.searched[1] == (192 if nearer else 51)
    assert np.isfinite(result.disparity).any()
    assert any("swept to the ceiling" in n for n in result.notes) == nearer


def test_a_dark_pair_is_stretched_before_matching(pair) -> None:  # type: ignore[no-untyped-def]
    left, right = pair
    torch.manual_seed(0)
    model = LightBi3D(width=0.5)
    request = DepthRequest(mode=Mode.BINARY, planes=(6,))

    def stretched(result) -> bool:  # type: ignore[no-untyped-def]
        return any(n.startswith("exposure: the pair is underexposed") for n in result.notes)

    dark = (left // 4, right // 4)
    assert stretched(Bi3DEngine(model).compute(*dark, request))
    assert not stretched(Bi3DEngine(model, exposure=None).compute(*dark, request))
    assert not stretched(Bi3DEngine(model).compute(left, right, request))  # 0-255 already


@pytest.mark.parametrize(
    "request_",
    [
        DepthRequest(mode=Mode.BINARY, planes=(6,)),
        DepthRequest(mode=Mode.QUANTIZED, levels=4, max_disparity=48),
        DepthRequest(mode=Mode.SELECTIVE, range=(3.0, 12.0), max_disparity=48),
        DepthRequest(mode=Mode.CONTINUOUS, max_disparity=48),
    ],
    ids=lambda r: r.mode.value,
)
def test_a_flat_pair_has_no_answer_in_any_mode(request_: DepthRequest) -> None:
    torch.manual_seed(0)
    engine = Bi3DEngine(LightBi3D(width=0.5))
    for level in (0, 255):  # a black frame (lens cap), a saturated one
        flat = np.full((96, 128, 3), level, np.uint8)
        result = engine.compute(flat, flat.copy(), request_)
        assert np.isnan(result.disparity).all()
        assert result.confidence is not None and not result.confidence.any()
        assert result.mask is None or not result.mask.any()
        assert result.range_state is None or not result.range_state.any()
        assert result.notes[0].startswith("no texture: the pair is flat")
        assert not any(n.startswith("exposure:") for n in result.notes)


def test_plane_check_decides_where_the_light_model_hesitates(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    left, right = _constant_disparity_pair(22, seed=3, blur=1.5)
    # a network that cannot tell: P = 0.5 for every pixel and plane
    monkeypatch.setattr(
        LightBi3D,
        "refine_planes",
        lambda self, feats, lowres: torch.zeros(1, lowres.shape[1], *feats.image.shape[-2:]),
    )
    torch.manual_seed(0)
    model = LightBi3D(width=0.5)
    binary = DepthRequest(mode=Mode.BINARY, planes=(20,))
    on = Bi3DEngine(model).compute(left, right, binary)
    off = Bi3DEngine(model, plane_check=None).compute(left, right, binary)
    assert "check" in on.timings and "check" not in off.timings
    assert off.mask is not None and not off.mask.any()
    assert on.mask is not None and on.mask[10:-10, 40:-10].mean() > 0.95  # 22 px is beyond 20 px
    quantized = Bi3DEngine(model).compute(left, right, DepthRequest(mode=Mode.QUANTIZED, planes=(20, 24)))
    assert (quantized.probabilities[0][10:-10, 40:-10] > 0.5).mean() > 0.95
    assert (quantized.probabilities[1][10:-10, 40:-10] < 0.5).mean() > 0.95  # and short of 24 px
    continuous = Bi3DEngine(model).compute(left, right, DepthRequest(mode=Mode.CONTINUOUS, max_disparity=48))
    assert "check" not in continuous.timings
    # published kinds keep the paper's answers
    assert Bi3DEngine(Bi3DModel("binary", width=0.25)).plane_check is None


def test_auto_precision_is_bf16_only_where_the_cpu_has_it(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from app.engine.depth import bi3d as engine_module
    from app.engine.depth.engines import EngineOptions, bi3d_engine

    x86 = "processor\t: 0\nflags\t\t: fpu sse2 avx512f avx512_bf16 avx512_vnni\n"
    assert engine_module.cpu_has_native_bf16(x86)
    assert engine_module.cpu_has_native_bf16("flags : sse2 amx_bf16 amx_tile\n")
    assert engine_module.cpu_has_native_bf16("Features : fp asimd bf16 i8mm\n")  # Arm
    assert not engine_module.cpu_has_native_bf16("flags : fpu sse2 avx2 avx512f avx512bw\n")
    assert not engine_module.cpu_has_native_bf16("")
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    light, published = LightBi3D(width=0.5), Bi3DModel("binary", width=0.25)
    resolve = engine_module.resolve_precision
    for native, expected in ((True, "bf16"), (False, "fp32")):
        monkeypatch.setattr(engine_module, "cpu_has_native_bf16", lambda native=native: native)
        assert resolve("auto", cpu, light) == resolve("auto", cpu, light, "auto") == expected
        assert resolve("fp32", cpu, light) == "fp32"
        assert resolve("auto", cuda, light) == "fp32"
        assert resolve("auto", cpu, published) == "fp32"  # reproduces its references in fp32
        assert resolve("auto", cpu, light, "onnxruntime") == "fp32"  # runs fp32 only
        engine = bi3d_engine(light, EngineOptions(runtime="torch"))
        assert engine.precision == expected and engine.backend.precision == expected


def test_selective_range_state_matches_the_published_selective_output(reference, reference_model) -> None:  # type: ignore[no-untyped-def]
    """Every pixel the published recipe puts strictly inside the range is answered, and matches."""
    engine = Bi3DEngine(reference_model("continuous_2d"))
    request = DepthRequest(mode=Mode.SELECTIVE, range=(18, 60))
    result = engine.compute(reference["left_rgb_u8"], reference["right_rgb_u8"], request)
    n = reference["cont2d_sel_disp_normalized"][0, 0]
    expected = np.clip(n * 43 + 18 - 0.5, 17.5, 60.5)
    strictly_inside = (expected > 18) & (expected < 60)
    assert strictly_inside.mean() > 0.05
    state = result.range_state
    assert state is not None
    assert np.all(state[strictly_inside] == 0)
    np.testing.assert_allclose(result.disparity[strictly_inside], expected[strictly_inside], atol=43e-4)
    # outside: farther where the published answer sits at the far clamp, closer at the near one
    assert np.all(state[expected < 18 - 0.25] == -1) and np.all(state[expected > 60 + 0.25] == 1)


def test_bf16_continuous_depth_runs_its_matching_stages_in_fp32(pair) -> None:  # type: ignore[no-untyped-def]
    # the default on a CPU with native bf16: the whole frame runs under bf16 autocast, and the
    # grey levels of the sub-pixel and agreement stages once came out bf16 (a crash in box_mean)
    from app.engine.bi3d.light import LightBi3D
    from app.engine.depth.subpixel import to_grey

    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert to_grey(torch.from_numpy(pair[0])).dtype == torch.float32
    torch.manual_seed(0)
    engine = Bi3DEngine(LightBi3D(width=0.5, max_disparity=96), precision="bf16")
    result = engine.compute(*pair, DepthRequest(mode=Mode.CONTINUOUS, max_disparity=48, min_confidence=0.0))
    assert result.precision == "bf16" and result.confidence is not None
    assert np.isfinite(result.disparity).all() and np.isfinite(result.confidence).all()


def test_light_answers_stay_within_the_planes_swept_and_say_when_the_scene_is_nearer() -> None:
    """A scene nearer than a fixed sweep reads its last plane (the refinement once moved such
    pixels past it, and below 0 px elsewhere), with a note; selective 'inside' reads inside."""
    from app.engine.depth.bi3d import beyond_note
    from app.engine.types import DepthResult

    rng = np.random.default_rng(2)
    left = rng.integers(0, 255, (96, 192, 3), dtype=np.uint8)
    right = np.roll(left, -30, axis=1)  # 30 px: beyond a 0-21 px sweep
    torch.manual_seed(0)
    engine = Bi3DEngine(LightBi3D(width=0.5))
    result = engine.compute(left, right, DepthRequest(mode=Mode.CONTINUOUS, max_disparity=20))
    assert float(result.planes[-1]) == 21.0  # the 3 px grid's plane past 20 px
    d = result.disparity[np.isfinite(result.disparity)]
    assert d.min() >= 0.0 and d.max() <= 20.0  # never past the maximum asked for
    selective = engine.compute(left, right, DepthRequest(mode=Mode.SELECTIVE, range=(9.0, 15.0)))
    inside = selective.range_state == 0
    assert np.all((selective.disparity[inside] >= 9.0) & (selective.disparity[inside] <= 15.0))
    assert any("nearer than the range reaches (20 px) and read 20 px" in n for n in result.notes)
    # the note, on the answer's own "closer" curve at the last plane and its answer there
    probs = np.zeros((3, 10, 10), np.float32)
    probs[-1, :, :4] = 0.9  # 40 % of the pixels "closer" than the last plane, 20 % answered there
    disparity = np.full((10, 10), 2.0, np.float32)
    disparity[:, :2] = 6.0
    disparity[0, 0] = np.nan  # masked by the confidence: not counted as beyond
    fake = DepthResult(disparity, probs, np.array([0.0, 3.0, 6.0]), Mode.CONTINUOUS, "bi3d")
    (note,) = beyond_note(fake)
    assert note.startswith("19.0 % of the pixels are nearer than the range reaches (6 px)")
    probs[-1] = 0.1
    assert beyond_note(fake) == []
    # "closer" on the last plane but answered far (a false run the readout passed over): no note
    probs[-1] = 0.9
    fake.disparity[:] = 2.0
    assert beyond_note(fake) == []


def test_quantized_levels_that_miss_the_scene_say_so() -> None:
    from app.engine.depth.bi3d import one_level_note

    planes = np.array([3.0, 6.0, 12.0])
    answer = np.full((10, 10), 4.5, np.float32)
    answer[:, :7] = 15.0  # 70 % nearer than every level (the top bin's midpoint)
    (note,) = one_level_note(answer, planes)
    assert note.startswith("70 % of the pixels are nearer than the nearest level (12.0 px)")
    answer[:] = 1.5  # all farther than the farthest
    assert "farther than the farthest level (3.0 px)" in one_level_note(answer, planes)[0]
    answer[:] = 4.5  # between the levels
    assert one_level_note(answer, planes) == []
    assert one_level_note(answer, planes[:1]) == []  # one plane: binary, no levels
    answer[:, :7] = np.nan  # unknown pixels are not nearer
    assert one_level_note(answer, planes) == []


def test_a_continuous_answer_makes_its_probability_record_when_read(pair) -> None:  # type: ignore[no-untyped-def]
    """The P x H x W record is a by-product of a continuous answer (370 MB at 1282 x 1110): made
    when a file or the display reads it, the same values as it was made before, and one plane
    of it alone for the notes."""
    import dataclasses

    from app.engine.depth.readout import DeferredRecord, upsampled_probabilities

    for search in ("full", "coarse-to-fine"):
        torch.manual_seed(0)
        engine = Bi3DEngine(LightBi3D(width=0.5), search=search)
        result = engine.compute(*pair, DepthRequest(mode=Mode.CONTINUOUS, max_disparity=48))
        assert "_probability_source" in result.__dict__  # not made yet
        last = result.plane_probabilities(-1)
        assert "_probability_source" in result.__dict__
        record = result.probabilities
        assert "_probability_source" not in result.__dict__
        assert record.shape == (len(result.planes), *pair[0].shape[:2]) and record.dtype == np.float32
        assert record.flags["C_CONTIGUOUS"] and np.array_equal(record[-1], last)
        assert np.all((record >= 0) & (record <= 1))
        assert result.arrays()["probabilities"].shape == record.shape
        assert dataclasses.replace(result).probabilities is record
    # a published continuous kind's curves are the full-size record: copied at once, nothing kept
    published = Bi3DEngine(Bi3DModel("continuous_2d", width=0.25)).compute(
        *pair, DepthRequest(mode=Mode.CONTINUOUS, max_disparity=48)
    )
    assert "_probability_source" not in published.__dict__
    assert published.probabilities.shape[1:] == pair[0].shape[:2]
    # the record is the grid's probabilities upsampled, as before
    grid = torch.rand(1, 5, 20, 30)
    deferred = DeferredRecord(grid, (60, 90), 2, 3)
    assert np.array_equal(deferred.record(), upsampled_probabilities(grid, (60, 90), 2, 3))
    assert np.array_equal(deferred.plane(-2), deferred.record()[3])


def test_quantized_answers_read_the_light_models_curves_near_their_step(pair, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The light model's quantized levels come from its curves' best step (its false "closer"
    runs on far planes); the published networks keep the published arg-max."""
    import app.engine.depth.bi3d as bi3d

    used: list[str] = []
    for name in ("quantized_step", "quantized_disparity"):
        real = getattr(bi3d, name)
        monkeypatch.setattr(bi3d, name, lambda *a, _real=real, _name=name: used.append(_name) or _real(*a))
    request = DepthRequest(mode=Mode.QUANTIZED, planes=(6.0, 12.0, 24.0, 36.0, 48.0))
    torch.manual_seed(0)
    light = Bi3DEngine(LightBi3D(width=0.5)).compute(*pair, request)
    published = Bi3DEngine(Bi3DModel("binary", width=0.25)).compute(*pair, request)
    assert used == ["quantized_step", "quantized_disparity"]
    for result, decode in ((light, bi3d.quantized_step), (published, bi3d.quantized_disparity)):
        np.testing.assert_array_equal(result.disparity, decode(result.probabilities, result.planes, 192))


def test_a_far_binary_plane_is_held_to_the_plane_at_half_its_disparity(pair, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """ "Closer than P" implies "closer than P / 2": the light model's false "closer" on planes far
    beyond a pixel is held to its answer there (one more plane, only for far planes)."""
    from app.engine.depth import bi3d

    torch.manual_seed(0)
    engine = Bi3DEngine(LightBi3D(width=0.5))
    asked: list[float] = []

    def nothing_nearer(self, feats, plane, padder, images):  # type: ignore[no-untyped-def]
        asked.append(plane)
        return np.zeros(images[0].shape[:2], np.float32)  # "farther than P / 2" everywhere

    near = engine.compute(*pair, DepthRequest(mode=Mode.BINARY, planes=(bi3d.SUPPORT_FROM_PX - 12,)))
    assert "support" not in near.timings
    far = DepthRequest(mode=Mode.BINARY, planes=(150.0,))
    held = engine.compute(*pair, far)
    assert "support" in held.timings and held.planes.tolist() == [150.0]
    monkeypatch.setattr(Bi3DEngine, "_plane_probabilities", nothing_nearer)
    result = engine.compute(*pair, far)
    assert asked == [75.0] and not result.mask.any() and float(result.probabilities.max()) == 0.0
    # a far selective range likewise: what is farther than half its start is farther than it
    selective = engine.compute(*pair, DepthRequest(mode=Mode.SELECTIVE, range=(126.0, 180.0)))
    assert asked == [75.0, 63.0] and (selective.range_state == -1).all()
    assert np.isnan(selective.disparity).all()

    # a support plane that came back NaN (broken weights) claims nothing either
    def broken_weights(self, feats, plane, padder, images):  # type: ignore[no-untyped-def]
        return np.full(images[0].shape[:2], np.nan, np.float32)

    monkeypatch.setattr(Bi3DEngine, "_plane_probabilities", broken_weights)
    broken = engine.compute(*pair, DepthRequest(mode=Mode.SELECTIVE, range=(126.0, 180.0)))
    assert (broken.range_state == -1).all() and np.isnan(broken.disparity).all()
    monkeypatch.setattr(Bi3DEngine, "_plane_probabilities", nothing_nearer)
    # the cost model counts the support as one more plane of the frame
    updates: list[tuple[float, float, int]] = []
    monkeypatch.setattr(
        engine.costs,
        "update",
        lambda size, fixed, per_plane, n, seed=False: updates.append((fixed, per_plane, n)),
    )
    timed = engine.compute(*pair, far)
    (fixed, per_plane, n), t = updates[-1], timed.timings
    assert fixed == pytest.approx(t["total"] - per_plane)
    assert n == 2 and per_plane == pytest.approx(t["planes"] + t.get("check", 0.0) + t["support"])
    engine.support = False
    assert "support" not in engine.compute(*pair, far).timings
    published = Bi3DEngine(Bi3DModel("binary", width=0.25)).compute(*pair, far)
    assert "support" not in published.timings  # the published networks answer as they were made


def test_a_selective_budget_keeps_the_range_edges_as_planes(pair) -> None:  # type: ignore[no-untyped-def]
    """Selective 20-174 px at 70 ms chose 2 planes every 99 px from 0 px: the far wall read 20 px,
    inside the range, and the sub-pixel search widened to the step took 743 ms (review)."""
    torch.manual_seed(0)
    engine = Bi3DEngine(LightBi3D(width=0.5))
    size = (192, 288)
    first = engine.compute(*pair, DepthRequest(mode=Mode.SELECTIVE, range=(20, 174), budget_ms=60_000))
    assert first.planes[0] == 18 and first.planes[-1] >= 174 and first.choice["step_px"] == 3
    cost = engine.costs.costs[size]  # measured on the first frame; set so that the test does not time
    assert cost.dense_base_ms is not None and cost.subpixel_ms  # the dense costs were probed
    for budget in (250.0, 120.0, 60.0):
        cost.fixed_ms, cost.per_plane_ms, cost.dense_base_ms, cost.dense_per_plane_ms = 10.0, 5.0, 10.0, 8.0
        cost.answer_per_plane_ms = 5.0
        cost.subpixel_ms = {"colour": 3.0, "grey": 1.0}
        result = engine.compute(*pair, DepthRequest(mode=Mode.SELECTIVE, range=(20, 174), budget_ms=budget))
        planes, step = result.planes, result.choice["step_px"]
        assert planes[0] == 18 and planes[-1] >= 174 and planes[-1] - step < 174  # the edges are planes
        assert np.allclose(np.diff(planes), step)
        assert result.range_state is not None and result.mode is Mode.SELECTIVE
        if budget == 250.0:  # a strategy of the ladder: a step of at most 12 px, predicted to fit
            assert step <= 12 and result.choice["predicted_ms"] <= budget
        if budget == 60.0:  # below every strategy: no sub-pixel matching, and said
            assert result.choice["subpixel"] == 0.0 and "subpixel" not in result.timings
            assert "below selective depth every 12 px or finer" in result.notes[0]
            # sized as the dense answer it is (10 + 8 a plane): 6 planes, not the 10 that plane
            # answers' costs (10 + 5 a plane) fit, 90 ms predicted as 60
            assert len(planes) == 6 and result.choice["predicted_ms"] == pytest.approx(58.0)


def test_a_budgeted_first_frame_is_not_less_its_runtime_choice_twice(  # type: ignore[no-untyped-def]
    pair, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new size's pair in the window under a budget said "took -343 ms": the probe's time was
    measured from the frame's start, the runtime's set-up in it, and that set-up taken out again."""
    import time as _time

    engine = Bi3DEngine(Bi3DModel("binary", width=0.25))
    real_prepare = engine.backend.prepare

    def slow_prepare(left, right) -> None:  # type: ignore[no-untyped-def]
        _time.sleep(0.5)  # as the candidates' timing of a new size
        real_prepare(left, right)

    monkeypatch.setattr(engine.backend, "prepare", slow_prepare)
    result = engine.compute(*pair, DepthRequest(mode=Mode.QUANTIZED, budget_ms=60_000))
    t = result.timings
    assert t["runtime_setup"] >= 500 and "probe" in t
    assert 0 < t["total"] and result.choice["took_ms"] == t["total"]
    assert t["total"] >= t["planes"]


def test_a_budget_that_keeps_fewer_of_the_planes_asked_says_which(pair) -> None:  # type: ignore[no-untyped-def]
    """--planes 10,20,30,40,50 at 60 ms kept 10 px alone, unsaid: the demo read one depth (review)."""
    torch.manual_seed(0)
    engine = Bi3DEngine(Bi3DModel("binary", width=0.25))
    asked = (9.0, 18.0, 30.0, 39.0, 51.0)  # multiples of 3: this model rounds its planes to them
    engine.compute(*pair, DepthRequest(mode=Mode.QUANTIZED, planes=asked, budget_ms=60_000))
    cost = engine.costs.costs[(192, 288)]
    cost.fixed_ms, cost.per_plane_ms, cost.fastest_fixed_ms = 10.0, 5.0, 10.0
    cost.answer_per_plane_ms = 5.0  # a plane answer's own (the measured one varies with the machine)
    one = engine.compute(*pair, DepthRequest(mode=Mode.QUANTIZED, planes=asked, budget_ms=16.0))
    assert one.planes.tolist() == [30.0]  # the middle one, not the lowest
    assert any("budget 16 ms kept 1 of the 5 planes asked (30 px)" in n for n in one.notes)
    cost.fixed_ms, cost.per_plane_ms, cost.answer_per_plane_ms = 10.0, 5.0, 5.0
    three = engine.compute(*pair, DepthRequest(mode=Mode.QUANTIZED, planes=asked, budget_ms=26.0))
    assert three.planes.tolist() == [9.0, 30.0, 51.0]


def test_selective_over_its_cheapest_says_so_and_a_range_from_0_has_nothing_farther(  # type: ignore[no-untyped-def]
    pair, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every frame of a selective stream at 80 ms said "costs were still being measured (a stream's
    next frames fit better)" where its cheapest answer was predicted at 261 ms; a 64 px pair's left
    columns read farther than a range from 0 px (review)."""
    torch.manual_seed(0)
    engine = Bi3DEngine(LightBi3D(width=0.5))
    request = DepthRequest(mode=Mode.SELECTIVE, range=(0.0, 40.0), budget_ms=60_000)
    first = engine.compute(*pair, request)
    assert first.range_state is not None and not (first.range_state == -1).any()
    cost = engine.costs.costs[(192, 288)]
    cost.fixed_ms, cost.per_plane_ms, cost.dense_base_ms, cost.dense_per_plane_ms = 10.0, 5.0, 1e5, 8.0
    cost.answer_per_plane_ms = 5.0
    cost.fastest_fixed_ms = 10.0
    real_planes = engine.backend.planes

    def slow_planes(feats, shifts):  # type: ignore[no-untyped-def]
        import time as _time

        _time.sleep(0.05)  # the frame takes longer than the budget, as its prediction said
        return real_planes(feats, shifts)

    monkeypatch.setattr(engine.backend, "planes", slow_planes)
    slow = engine.compute(*pair, dataclasses.replace(request, budget_ms=20.0))
    assert any("over the 20 ms budget: the coarsest answer here was predicted at" in n for n in slow.notes)
