"""Training: it learns, checkpoints, resumes, fine-tunes, and fails cleanly."""

from __future__ import annotations

import csv
import os
import socket
from pathlib import Path

import cv2
import numpy as np
import pytest
import torch
import torch.multiprocessing as mp

from app.engine.bi3d.checkpoint import load_model, save_checkpoint
from app.engine.bi3d.light import LightBi3D
from app.engine.bi3d.model import Bi3DModel
from app.engine.errors import UserError
from app.engine.formats import write_pfm
from app.engine.training.data import CropConfig, SceneDataset
from app.engine.training.losses import monotone_penalty, plane_loss, sample_planes
from app.engine.training.trainer import TrainConfig, Trainer, train


def _cfg(tmp_path: Path, **kw) -> TrainConfig:  # type: ignore[no-untyped-def]
    base = dict(
        out=str(tmp_path / "run"),
        kind="light",
        width=0.5,
        crop=(96, 192),
        batch=2,
        planes=4,
        steps=4,
        val_every=4,
        val_count=1,
        save_every=2,
        warmup=2,
    )
    base.update(kw)
    return TrainConfig(**base)  # type: ignore[arg-type]


def test_loss_functions() -> None:
    gt = torch.tensor([[[20.0, 40.0]]])
    planes = torch.tensor([9.0, 30.0])
    good = torch.tensor([[[[5.0, 5.0]], [[-5.0, 5.0]]]])  # confident and right
    bad = -good
    assert plane_loss(good, gt, planes) < 0.2 < plane_loss(bad, gt, planes)
    assert monotone_penalty(torch.tensor([[[[1.0]], [[2.0]]]])) == 1.0  # rises by 1 logit
    assert monotone_penalty(torch.tensor([[[[2.0]], [[1.0]]]])) == 0.0
    p = sample_planes(torch.full((1, 8, 8), 60.0), 6, 192, torch.Generator().manual_seed(0))
    assert torch.all(p % 3 == 0) and torch.all(p[1:] > p[:-1]) and len(p) == 6


def test_light_model_trains_planes_between_feature_columns(tmp_path: Path) -> None:
    gt = torch.full((1, 8, 8), 61.0)
    g = torch.Generator().manual_seed(0)
    planes = torch.cat([sample_planes(gt, 8, 192, g, step=1) for _ in range(20)])
    assert torch.all(planes == planes.round()) and (planes % 3 != 0).float().mean() > 0.5
    near = (planes - 61).abs() <= 12
    assert near.float().mean() > 1.5 * 25 / 193  # near the ground truth more often than by chance
    assert _cfg(tmp_path).plane_step == 3  # the recipe of the bundled model
    with pytest.raises(UserError, match="plane-step 2"):
        _cfg(tmp_path, plane_step=2)


def test_near_share_puts_that_share_of_planes_near_the_ground_truth(tmp_path: Path) -> None:
    gt = torch.full((1, 8, 8), 90.0)

    def near_fraction(share: float | None) -> float:
        g = torch.Generator().manual_seed(0)
        planes = torch.cat([sample_planes(gt, 8, 192, g, near_share=share) for _ in range(100)])
        assert len(planes) == 800 and torch.all(planes % 3 == 0)
        return float(((planes - 90).abs() <= 12).float().mean())

    legacy, half, none = near_fraction(None), near_fraction(0.5), near_fraction(0.0)
    assert none < 0.2 < legacy < 0.3 < 0.4 < half  # chance: 9 of 65 planes lie within 12 px
    # the bundled recipe's draw is unchanged (these planes came from the code before the option)
    legacy_planes = sample_planes(gt, 8, 192, torch.Generator().manual_seed(0))
    assert legacy_planes.tolist() == [27.0, 48.0, 69.0, 78.0, 84.0, 99.0, 153.0, 162.0]
    with pytest.raises(UserError, match=r"near-share 1\.5"):
        _cfg(tmp_path, near_share=1.5)


def test_train_saves_logs_and_resumes(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path)
    result = train(cfg)
    run = Path(cfg.out)
    assert {"last.pt", "best.pt", "state.pt", "log.csv"} <= {p.name for p in run.iterdir()}
    assert result["step"] == 4 and 0 <= result["val_bad2"] <= 1
    _, info = load_model(run / "last.pt")
    assert info.training["step"] == 4 and info.training["config"]["kind"] == "light"
    with (run / "log.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert rows and rows[-1]["val_bad2"] != ""
    resumed = Trainer(_cfg(tmp_path, steps=6))
    assert resumed.step == 4
    assert resumed.run()["step"] == 6


def test_the_seed_decides_the_initial_weights(tmp_path: Path) -> None:
    """A rerun of a recipe starts from the same weights (and so, on one machine, trains alike)."""
    first, again = (Trainer(_cfg(tmp_path, out=str(tmp_path / name))).model for name in ("a", "b"))
    torch.manual_seed(123)  # whatever the global generator did before
    other = Trainer(_cfg(tmp_path, out=str(tmp_path / "c"), seed=1)).model
    same = [torch.equal(v, again.state_dict()[k]) for k, v in first.state_dict().items()]
    differ = [torch.equal(v, other.state_dict()[k]) for k, v in first.state_dict().items() if v.ndim == 4]
    assert all(same) and not any(differ)


def test_training_reduces_the_loss(tmp_path: Path) -> None:
    torch.manual_seed(0)
    trainer = Trainer(_cfg(tmp_path, steps=10**6, reuse=40, lr=3e-3, warmup=1))
    batches = trainer._batches()
    batch = next(batches)  # one scene, learned again and again
    first = [trainer.train_step(*batch) for _ in range(3)]
    for _ in range(30):
        trainer.train_step(*batch)
    last = [trainer.train_step(*batch) for _ in range(3)]
    assert np.mean(last) < 0.8 * np.mean(first)


def test_init_of_another_kind_is_refused(tmp_path: Path) -> None:
    save_checkpoint(tmp_path / "binary.pt", Bi3DModel("binary", width=0.25))
    with pytest.raises(UserError, match="is a binary model; training a light model"):
        Trainer(_cfg(tmp_path, init=str(tmp_path / "binary.pt")))


def test_fine_tuning_starts_from_init(tmp_path: Path) -> None:
    train(_cfg(tmp_path, steps=2))
    trainer = Trainer(_cfg(tmp_path, out=str(tmp_path / "ft"), init=str(tmp_path / "run" / "last.pt")))
    start, _ = load_model(tmp_path / "run" / "last.pt")
    for key, value in start.state_dict().items():
        assert torch.equal(trainer.model.state_dict()[key], value)


def test_frozen_features_stay_and_the_pixel_segnet_is_carried(tmp_path: Path) -> None:
    start = LightBi3D(width=0.5)
    start.add_pixel_segnet()
    save_checkpoint(tmp_path / "start.pt", start, {"step": 7})
    with pytest.raises(UserError, match="give it with --init"):
        _cfg(tmp_path, freeze_features=True)
    train(_cfg(tmp_path, init=str(tmp_path / "start.pt"), freeze_features=True, steps=3, lr=1e-2))
    tuned, _ = load_model(tmp_path / "run" / "last.pt")
    before, after = start.state_dict(), tuned.state_dict()
    assert set(before) == set(after)  # the per-pixel SegNet is still there
    changed = {k for k in before if not torch.equal(before[k], after[k])}
    assert changed and all(k.startswith(("segnet.", "guide.")) for k in changed), sorted(changed)
    # without the freeze, fine-tuning moves the features and drops the per-pixel SegNet
    train(_cfg(tmp_path, out=str(tmp_path / "all"), init=str(tmp_path / "start.pt"), steps=3, lr=1e-2))
    moved, _ = load_model(tmp_path / "all" / "last.pt")
    assert moved.pixel_segnet is None
    assert not torch.equal(moved.featnet.stem[0][0].weight, start.featnet.stem[0][0].weight)


def test_failed_save_keeps_the_previous_checkpoint(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    cfg = _cfg(tmp_path, steps=2)
    train(cfg)
    before = (Path(cfg.out) / "last.pt").read_bytes()

    def full_disk(*_a, **_k):  # type: ignore[no-untyped-def]
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("torch.save", full_disk)
    trainer = Trainer(_cfg(tmp_path, steps=3))
    with pytest.raises(UserError, match="previous checkpoint is kept"):
        trainer.run()
    assert (Path(cfg.out) / "last.pt").read_bytes() == before


def test_dataset_errors(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no stereo scenes"):
        SceneDataset(tmp_path, CropConfig(96, 96))
    scene = tmp_path / "scene"
    scene.mkdir()
    for name in ("im0.png", "im1.png"):
        cv2.imwrite(str(scene / name), np.zeros((50, 60, 3), np.uint8))
    write_pfm(scene / "disp0GT.pfm", np.ones((50, 60), np.float32))
    data = SceneDataset(tmp_path, CropConfig(96, 96))
    with pytest.raises(UserError, match="larger than"):
        data[0]


def test_sceneflow_layout_crops(tmp_path: Path) -> None:
    for sub in ("left", "right", "disparity"):
        (tmp_path / sub).mkdir()
    for i in range(2):
        img = np.random.default_rng(i).integers(0, 255, (120, 200, 3), dtype=np.uint8)
        cv2.imwrite(str(tmp_path / "left" / f"{i:04d}.png"), img)
        cv2.imwrite(str(tmp_path / "right" / f"{i:04d}.png"), img)
        write_pfm(tmp_path / "disparity" / f"{i:04d}.pfm", np.full((120, 200), 7.0, np.float32))
    data = SceneDataset(tmp_path, CropConfig(96, 192))
    left, _right, gt = data[1]
    assert len(data) == 2 and left.shape == (3, 96, 192) and gt.shape == (96, 192)
    assert torch.all(gt == 7.0)


def _ddp_worker(rank: int, world: int, port: int, out: str) -> None:
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    cfg = TrainConfig(
        out=out,
        kind="light",
        width=0.5,
        crop=(96, 192),
        batch=1,
        planes=3,
        steps=3,
        val_every=10**6,
        save_every=10**6,
        warmup=1,
    )
    trainer = Trainer(cfg)
    trainer.run()
    torch.save(trainer.model.state_dict(), Path(out) / f"rank{rank}.pt")
    torch.distributed.destroy_process_group()


@pytest.mark.slow
def test_two_process_ddp_keeps_ranks_identical(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = tmp_path / "ddp"
    out.mkdir()
    mp.spawn(_ddp_worker, args=(2, port, str(out)), nprocs=2, join=True)
    a = torch.load(out / "rank0.pt", weights_only=True)
    b = torch.load(out / "rank1.pt", weights_only=True)
    for key in a:
        assert torch.equal(a[key], b[key]), key
    # and training moved them away from the common initialisation
    torch.manual_seed(0)
    init = TrainConfig  # the workers built their models from the same seedless default init
    assert init is not None and any(a[k].abs().sum() > 0 for k in a)
