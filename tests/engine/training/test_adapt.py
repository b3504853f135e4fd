"""Adaptation to unlabeled footage: it learns, writes a loadable checkpoint with provenance,
resumes, cancels, and refuses bad input in one line."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest
import torch

from app.engine.bi3d.checkpoint import load_model
from app.engine.depth.sgbm import SGBMEngine
from app.engine.errors import UserError
from app.engine.formats import read_image_rgb, write_color_png
from app.engine.synthetic.footage import FootageConfig, footage_frames
from app.engine.training import adapt as adapt_module
from app.engine.training.adapt import AdaptCancelled, AdaptConfig, Adapter, adapt
from app.engine.training.adapt_data import batch, crop_size, prepare, split
from app.engine.training.losses import plane_loss
from app.engine.training.pseudo import confident_disparity
from tests.adapt_data import TINY_FOOTAGE as TINY


def _cfg(footage: Path, out: Path, **kw) -> AdaptConfig:  # type: ignore[no-untyped-def]
    base = dict(steps=4, eval_frames=1, frames=10, save_every=2, warmup=1)
    base.update(kw)
    return AdaptConfig(str(footage), str(out), **base)  # type: ignore[arg-type]


def test_footage_is_exact_and_repeatable() -> None:
    a, b = list(footage_frames(TINY)), list(footage_frames(TINY))
    assert len(a) == 10 and all(np.array_equal(x.left, y.left) for x, y in zip(a, b, strict=True))
    clean = FootageConfig(**{**TINY.__dict__, "noise": 0.0, "right_gain": 1.0})
    f = list(footage_frames(clean))[3]
    # without sensor noise, a left pixel and the right pixel d to its left show the same surface
    h, w = f.disparity.shape
    xs = np.arange(w)[None].repeat(h, 0) - np.round(f.disparity).astype(int)
    rows = np.arange(h)[:, None].repeat(w, 1)
    right = f.right[rows, xs.clip(0)].astype(float)
    inside = xs >= 0
    good = np.median(np.abs(f.left.astype(float) - right)[inside])
    wrong = np.median(np.abs(f.left.astype(float) - np.roll(right, 3, axis=1))[inside])
    assert good <= 3 and wrong > 2 * good + 2


def test_pseudo_labels_are_sparse_and_more_often_right_than_plain_sgbm() -> None:
    f = next(footage_frames(FootageConfig(frames=1, shots=1)))  # 240 x 320, disparities to 64 px
    labels = confident_disparity(f.left, f.right, 80)
    plain = SGBMEngine().disparity(f.left, f.right, 80)
    known, answered = np.isfinite(labels), np.isfinite(plain)
    wrong = np.mean(np.abs(labels[known] - f.disparity[known]) > 2)
    assert 0.3 < known.mean() < answered.mean()
    assert wrong < 0.05 and wrong < np.mean(np.abs(plain[answered] - f.disparity[answered]) > 2)


@pytest.mark.slow
def test_training_on_pseudo_labels_lowers_their_loss(footage: Path, tmp_path: Path) -> None:
    adapter = Adapter(_cfg(footage, tmp_path / "a.pt", lr=1e-3, distill=0.0, steps=25))
    data = prepare(str(footage), 10, 192)
    crop = crop_size(*data.size)
    g = torch.Generator().manual_seed(5)
    left, right, labels = batch(data, 4, crop, g)
    planes = torch.tensor([3.0, 9.0, 15.0, 21.0])

    def loss() -> float:
        with torch.no_grad():
            logits = adapter.model((left - 0.5) / 0.5, (right - 0.5) / 0.5, planes / 3)
        return float(plane_loss(logits, labels, planes))

    before = loss()
    for _ in range(25):
        adapter._step(data, crop, 30)
    assert loss() < 0.8 * before


@pytest.mark.slow
def test_adapt_writes_a_loadable_checkpoint_with_provenance(footage: Path, tmp_path: Path) -> None:
    out = tmp_path / "adapted.pt"
    seen: list[str] = []
    result = adapt(_cfg(footage, out), lambda p: seen.append(p.stage))
    _model, info = load_model(out)
    assert info.kind.value == "light" and result.steps == 4
    t = info.training
    assert t["method"] == adapt_module.METHOD and t["source"] == str(footage) and t["frames"] == 10
    assert t["train_frames"] == 8 and t["held_back_frames"] == 2 and t["steps"] == 4
    assert t["base_model"].endswith("bi3d_default.pt") and t["date"]
    for side in ("before", "after"):
        assert {"photometric_l1", "lr_consistency", "pseudo_bad2", "dense_bad2"} <= set(t["report"][side])
    assert json.loads(result.report_path.read_text())["report"] == json.loads(json.dumps(t["report"]))
    assert not Path(str(out) + ".partial").exists()
    assert seen[0] == "reading" and {"labelling", "before", "training", "after"} <= set(seen)


def test_split_holds_back_every_fifth_frame() -> None:
    pairs = list(range(12))
    train, held = split(pairs)  # type: ignore[arg-type]
    assert held == [4, 9] and len(train) == 10
    assert split([0, 1])[1] == [1]  # type: ignore[list-item]


@pytest.mark.slow
def test_cancel_keeps_a_checkpoint_and_the_same_call_resumes(footage: Path, tmp_path: Path) -> None:
    out = tmp_path / "adapted.pt"
    cfg = _cfg(footage, out, steps=6)
    cancel = threading.Event()

    def stop_at_three(p: adapt_module.AdaptProgress) -> None:
        if p.stage == "training" and p.done >= 3:
            cancel.set()

    with pytest.raises(AdaptCancelled, match=r"stopped at step 3 of 6.*again.*to resume"):
        adapt(cfg, stop_at_three, cancel)
    assert Path(str(out) + ".partial").is_file() and not out.exists()
    with pytest.raises(UserError, match=r"other settings \(lr .* then, 0\.0003 now\)"):  # which one changed
        adapt(_cfg(footage, out, steps=6, lr=3e-4))
    messages: list[str] = []
    result = adapt(cfg, lambda p: messages.append(p.message))
    assert any("resuming from step 3" in m for m in messages)
    assert result.provenance["resumed"] and result.steps == 6
    assert not any(m.startswith("before:") for m in messages)  # the first run's report is kept


def test_cancel_before_training_says_nothing_to_resume(footage: Path, tmp_path: Path) -> None:
    cancel = threading.Event()

    def stop(p: adapt_module.AdaptProgress) -> None:
        if p.stage == "labelling":
            cancel.set()

    with pytest.raises(AdaptCancelled, match="nothing to resume"):
        adapt(_cfg(footage, tmp_path / "a.pt"), stop, cancel)


def test_one_frame_is_refused(footage: Path, tmp_path: Path) -> None:
    spec = f"{footage / 'left' / '000000.png'},{footage / 'right' / '000000.png'}"
    with pytest.raises(UserError, match="has 1 frame; adaptation needs at least 2"):
        adapt(AdaptConfig(spec, str(tmp_path / "a.pt")))


def test_unrectified_footage_points_to_the_calibration_check(footage: Path, tmp_path: Path) -> None:
    bad = tmp_path / "tilted"
    shutil.copytree(footage, bad)
    for path in sorted((bad / "right").glob("*.png")):
        write_color_png(path, np.roll(read_image_rgb(path), 6, axis=0))  # the right camera 6 px lower
    with pytest.raises(UserError, match=r"does not look rectified.*bi3d-studio calib check"):
        adapt(AdaptConfig(str(bad), str(tmp_path / "a.pt")))


@pytest.mark.parametrize("where", ["under a file", "folder", "read-only"])
def test_an_unwritable_output_is_refused_before_any_work(
    footage: Path, tmp_path: Path, where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "notes.txt").write_text("a file, not a folder")
    outs = {
        "under a file": tmp_path / "notes.txt" / "a.pt",
        "folder": tmp_path,
        "read-only": tmp_path / "a.pt",
    }
    out = outs[where]
    if where == "read-only":
        out.write_bytes(b"keep")
        out.chmod(0o444)
        monkeypatch.setattr(adapt_module.os, "access", lambda p, m: False)  # root ignores modes
    monkeypatch.setattr(adapt_module, "prepare", lambda *a, **k: pytest.fail("work started"))
    with pytest.raises(UserError, match=r"cannot create the folder|is a folder|read-only"):
        adapt(AdaptConfig(str(footage), str(out)))
    if where == "read-only":
        assert out.read_bytes() == b"keep"


def test_a_missing_output_folder_is_created(
    footage: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Started(Exception):
        pass

    def started(*args: object, **kwargs: object) -> None:
        raise Started

    monkeypatch.setattr(adapt_module, "prepare", started)
    out = tmp_path / "runs" / "rig" / "a.pt"
    with pytest.raises(Started):
        adapt(AdaptConfig(str(footage), str(out)))
    assert out.parent.is_dir() and not out.exists()


def test_weights_of_another_kind_are_refused(footage: Path, tmp_path: Path) -> None:
    state = tmp_path / "state.pt"
    torch.save({"step": 3, "optimizer": {"state": {}, "param_groups": []}}, state)
    random = tmp_path / "random.pt"
    torch.save({"weights": torch.zeros(3)}, random)
    text = tmp_path / "notes.pt"
    text.write_text("not a checkpoint")
    for path, needle in [
        (state, "training state"),
        (random, "not a Bi3D checkpoint"),
        (text, "not a readable PyTorch checkpoint"),
    ]:
        with pytest.raises(UserError, match=needle):
            adapt(AdaptConfig(str(footage), str(tmp_path / "a.pt"), weights=str(path)))


def test_the_report_says_units_and_which_way_is_better() -> None:
    """It printed 'pseudo_bad2: 0.004763 -> 0.005659': fractions, no unit, no direction (review)."""
    from app.engine.training.adapt_report import describe

    line, better = describe("pseudo_bad2", 0.004763, 0.008659)
    assert line == "confident SGBM pixels missed by > 2 px (%, lower is better): 0.476 -> 0.866, worse"
    assert better is False
    # a change within the figures' noise is said as such, neither better nor worse
    assert describe("pseudo_bad2", 0.004763, 0.005659) == (
        "confident SGBM pixels missed by > 2 px (%, lower is better): 0.476 -> 0.566, about the same",
        None,
    )
    assert describe("photometric_l1", 5.0, 5.04)[1] is None
    assert describe("photometric_l1", 5.0, 5.3)[1] is False
    assert describe("epe", 1.0, float("nan")) == ("end-point error (px, lower is better): 1.00 -> nan", None)
    assert describe("lr_consistency", 0.95, 0.97) == (
        "left-right agreement (%, higher is better): 95.0 -> 97.0, better",
        True,
    )
    assert describe("frames", 2, 2) == ("frames: 2 -> 2", None)
    # both to the same decimals ("11.2 -> 11" read as figures of two precisions: review)
    assert describe("epe", 11.2, 11.0)[0].endswith(": 11.2 -> 11.0, better")
    assert describe("epe", 1.0, 1.0)[1] is None  # unchanged: neither


def test_a_source_typed_another_way_is_the_same_adaptation(
    footage: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`adapt ./pairs/` after `adapt pairs` (stopped with Ctrl-C) was refused as "other settings
    (source 'pairs' then, './pairs/' now)", with the advice to delete the progress."""
    monkeypatch.chdir(footage.parent)
    out = str(tmp_path / "a.pt")
    typed = AdaptConfig(footage.name, out).fingerprint()
    assert AdaptConfig(f"./{footage.name}/", out).fingerprint() == typed
    assert AdaptConfig(str(footage), out).fingerprint() == typed
    assert adapt_module.canonical_paths({"source": footage.name, "weights": None}) == {
        "source": str(footage.resolve()),
        "weights": None,
    }  # a checkpoint of the paths as typed compares the same
    assert AdaptConfig("synthetic:48x64", out).fingerprint()["source"] == "synthetic:48x64"


def test_an_adapted_model_whose_depth_got_worse_is_said_to_be(tmp_path: Path) -> None:
    """A run missed 0.84 -> 4.45 % of the confident SGBM pixels on its held-back frames while its
    photometric error fell, and the model was written without a word."""
    from app.engine.training.adapt import AdaptResult

    def result(before: dict[str, float], after: dict[str, float]) -> AdaptResult:
        return AdaptResult(tmp_path / "a.pt", tmp_path / "a.json", 10, 1.0, before, after)

    worse = result(
        {"photometric_l1": 5.0, "pseudo_bad2": 0.0084}, {"photometric_l1": 4.0, "pseudo_bad2": 0.0445}
    )
    assert (
        worse.warning is not None
        and "confident SGBM pixels missed by > 2 px: 0.84 -> 4.45 %" in worse.warning
    )
    # ground truth decides where the footage has it
    truth = {"pseudo_bad2": 0.01, "dense_bad2": 0.20}
    assert result(truth, {"pseudo_bad2": 0.02, "dense_bad2": 0.10}).warning is None
    assert "every figure is worse" in str(result({"photometric_l1": 4.0}, {"photometric_l1": 5.0}).warning)
    assert result({"pseudo_bad2": 0.05, "frames": 3.0}, {"pseudo_bad2": 0.01, "frames": 3.0}).warning is None


def test_footage_of_a_raw_rig_is_rectified_with_its_calibration(tmp_path: Path) -> None:
    """adapt refused a raw rig's footage as unrectified and took no calibration; nothing said how
    to rectify it (review). --calib rectifies the frames as depth --calib does."""
    from app.engine.calibration.files import write_opencv_yaml
    from app.engine.calibration.rig import Rectifier
    from app.engine.training.adapt_data import read_frames
    from tests.engine.calibration.test_chessboard import SIZE, true_rig
    from tests.folders import pairs_folder

    rig = true_rig()
    folder = pairs_folder(tmp_path / "raw", 2, size=(SIZE[1], SIZE[0]))
    write_opencv_yaml(tmp_path / "rig.yaml", rig)
    plain, _ = read_frames(str(folder), 2)
    pairs, _ = read_frames(str(folder), 2, calib=str(tmp_path / "rig.yaml"))
    expected = Rectifier(rig).rectify(plain[0].left, plain[0].right)
    assert np.array_equal(pairs[0].left, expected[0]) and np.array_equal(pairs[0].right, expected[1])
    assert not np.array_equal(pairs[0].right, plain[0].right)
