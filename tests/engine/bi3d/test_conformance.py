"""The network reproduces the published architecture's reference outputs within 1e-4."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from app.engine.bi3d.model import Bi3DModel

TOL = 1e-4


def _run(model: Bi3DModel, reference: dict[str, np.ndarray], tag: str, device: str) -> dict[str, np.ndarray]:
    model = model.to(device)
    left = torch.from_numpy(reference["left"]).to(device)
    right = torch.from_numpy(reference["right"]).to(device)
    ids = torch.from_numpy(reference[f"{tag}_disp_ids"][0])
    with torch.inference_mode():
        out = model(left, right, ids)
    model.to("cpu")
    return {k: v.cpu().numpy() for k, v in out.items()}


@pytest.mark.parametrize("kind", ["binary", "continuous_2d", "continuous_3d"])
def test_state_dict_names_and_shapes_match_published(kind: str, key_specs) -> None:  # type: ignore[no-untyped-def]
    state = Bi3DModel(kind).state_dict()
    assert [(k, list(v.shape)) for k, v in state.items()] == [(k, s) for k, s, _ in key_specs[kind]]


@pytest.mark.parametrize("tag", ["binary_1plane", "binary_3plane"])
def test_binary_reference(tag: str, reference, reference_model, device: str) -> None:  # type: ignore[no-untyped-def]
    out = _run(reference_model("binary"), reference, tag, device)
    np.testing.assert_allclose(out["lowres_up"], reference[f"{tag}_lowres_up"], rtol=0, atol=TOL)
    np.testing.assert_allclose(out["refined"], reference[f"{tag}_refined"], rtol=0, atol=TOL)


@pytest.mark.slow
@pytest.mark.parametrize("tag", ["cont2d_full", "cont2d_sel"])
def test_continuous_2d_reference(tag: str, reference, reference_model, device: str) -> None:  # type: ignore[no-untyped-def]
    out = _run(reference_model("continuous_2d"), reference, tag, device)
    np.testing.assert_allclose(out["seg_up"][:, ::16], reference[f"{tag}_seg_every16"], rtol=0, atol=TOL)
    np.testing.assert_allclose(out["disp_normalized"], reference[f"{tag}_disp_normalized"], rtol=0, atol=TOL)


@pytest.mark.slow
def test_continuous_3d_reference(reference, reference_model, device: str) -> None:  # type: ignore[no-untyped-def]
    out = _run(reference_model("continuous_3d"), reference, "cont3d_full", device)
    for name, key in [
        ("seg_up", "seg_every16"),
        ("seg_refined_up", "seg_refined_every16"),
    ]:
        np.testing.assert_allclose(out[name][:, ::16], reference[f"cont3d_full_{key}"], rtol=0, atol=TOL)
    for name in ("disp_normalized_noisy", "disp_normalized"):
        np.testing.assert_allclose(out[name], reference[f"cont3d_full_{name}"], rtol=0, atol=TOL)


@pytest.mark.parametrize("kind", ["binary", "continuous_2d", "continuous_3d"])
def test_lighter_width_keeps_structure(kind: str) -> None:
    light = Bi3DModel(kind, width=0.5)
    full = Bi3DModel(kind)
    assert list(light.state_dict()) == list(full.state_dict())
    assert light.featnet.firstconv[0][0].out_channels == 16
    n_light = sum(p.numel() for p in light.parameters())
    n_full = sum(p.numel() for p in full.parameters())
    assert n_light < 0.35 * n_full
    x = torch.zeros(1, 3, 192, 192)
    with torch.inference_mode():
        out = light(x, x, torch.arange(0, 17) if kind == "continuous_3d" else torch.tensor([0, 4]))
    assert all(torch.isfinite(v).all() for v in out.values())


def test_rejects_sizes_that_are_not_multiples_of_96() -> None:
    model = Bi3DModel("binary", width=0.25)
    for h, w in [(200, 192), (96, 192)]:
        x = torch.zeros(1, 3, h, w)
        with pytest.raises(ValueError, match="multiples of 96"):
            model(x, x, torch.tensor([1]))
