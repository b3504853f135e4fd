"""Tests for the per-pixel passes' training (app.engine.training.pixel_pass)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from app.engine.bi3d.checkpoint import load_model, save_checkpoint
from app.engine.bi3d.light import LightBi3D
from app.engine.bi3d.model import Bi3DModel
from app.engine.errors import UserError
from app.engine.training.pixel_pass import PixelPassConfig, PixelPassTrainer, pass_targets


def test_targets_average_each_block_of_the_ground_truth() -> None:
    gt = torch.full((1, 12, 12), 10.0)
    gt[:, :, 6:] = float("nan")  # the right blocks have no ground truth
    gt[:, :3, :6] = 20.0
    target, share = pass_targets(gt, torch.full((1, 2, 2), 15.0), tau=0.01)
    assert share.tolist() == [[[1.0, 0.0], [1.0, 0.0]]]
    assert target[0, 0, 0].item() == pytest.approx(0.5) and target[0, 1, 0].item() == pytest.approx(0.0)


def test_the_shift_map_covers_two_by_two_feature_pixels_and_the_padding() -> None:
    """The trainer lays out its batched maps with the sweep's own ``PixelSweep.layout``."""
    model = LightBi3D(width=0.5).eval()
    with torch.inference_mode():
        feats = model.extract(torch.rand(2, 3, 96, 192), torch.rand(2, 3, 96, 192))
        sweep = model.pixel_sweep(feats)
    b, h, padded = sweep.shape
    plane = torch.arange(b * (h // 2) * (sweep.width // 2), dtype=torch.float32).view(b, h // 2, -1)
    shifts = sweep.layout(plane)
    assert shifts.shape == (b, h, padded)
    assert shifts[1, :2, :2].eq(plane[1, 0, 0]).all() and shifts[1, 2, 2].item() == plane[1, 1, 1].item()
    assert shifts[:, :, sweep.width :].eq(shifts[:, :, sweep.width - 1 : sweep.width]).all()
    one = sweep.layout(plane[0])  # one map for every batch item
    assert torch.equal(one[0], one[1]) and torch.equal(one[0], shifts[0])


def test_training_moves_only_the_per_pixel_segnet_and_resumes(tmp_path: Path) -> None:
    torch.manual_seed(0)
    base = tmp_path / "base.pt"
    save_checkpoint(base, LightBi3D(width=0.5).eval())
    cfg = PixelPassConfig(
        out=str(tmp_path / "run"), weights=str(base), steps=2, batch=1, crop=(96, 192), save_every=1
    )
    first = PixelPassTrainer(cfg).run()
    assert first["step"] == 2 and torch.isfinite(torch.tensor(first["loss"]))
    model, info = load_model(tmp_path / "run" / "last.pt")
    start = load_model(base)[0]
    assert model.pixel_segnet is not None and info.training["pixel_pass"]["step"] == 2
    assert torch.equal(model.segnet.out.weight, start.segnet.out.weight)  # frozen
    assert torch.equal(model.featnet.out.weight, start.featnet.out.weight)
    assert not torch.equal(model.pixel_segnet.out.weight, start.segnet.out.weight)  # trained
    cfg.steps = 3
    resumed = PixelPassTrainer(cfg)
    assert resumed.step == 2
    assert resumed.run()["step"] == 3
    assert (tmp_path / "run" / "log.csv").read_text().splitlines()[0] == "step,loss,lr"


def test_only_light_models_have_per_pixel_passes(tmp_path: Path) -> None:
    path = tmp_path / "published.pt"
    save_checkpoint(path, Bi3DModel("continuous_2d", width=0.25))
    with pytest.raises(UserError, match="light model"):
        PixelPassTrainer(PixelPassConfig(out=str(tmp_path / "run"), weights=str(path)))


def test_retraining_from_a_model_with_per_pixel_weights_starts_without_them(tmp_path: Path) -> None:
    from app.engine.training.trainer import TrainConfig, Trainer

    model = LightBi3D(width=0.5)
    model.add_pixel_segnet()
    init = tmp_path / "init.pt"
    save_checkpoint(init, model)
    trainer = Trainer(
        TrainConfig(out=str(tmp_path / "run"), width=0.5, init=str(init), steps=1, precision="fp32")
    )
    assert trainer.model.pixel_segnet is None


def test_continuing_a_trained_per_pixel_segnet_keeps_the_earlier_record(tmp_path: Path) -> None:
    torch.manual_seed(0)
    base = tmp_path / "base.pt"
    save_checkpoint(base, LightBi3D(width=0.5).eval())
    first = PixelPassConfig(out=str(tmp_path / "a"), weights=str(base), steps=1, batch=1, crop=(96, 192))
    PixelPassTrainer(first).run()
    more = PixelPassConfig(
        out=str(tmp_path / "b"),
        weights=str(tmp_path / "a" / "last.pt"),
        steps=1,
        batch=1,
        crop=(96, 192),
        seed=1,
    )
    PixelPassTrainer(more).run()
    training = load_model(tmp_path / "b" / "last.pt")[1].training
    assert training["pixel_pass"]["seed"] == 1
    assert [h["seed"] for h in training["pixel_pass_history"]] == [0]
