"""Checkpoints: published and project formats, refusal of unsafe files, clear mismatch errors."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
import torch

from app.engine.bi3d.checkpoint import detect_kind, load_model, read_checkpoint, save_checkpoint
from app.engine.bi3d.model import PUBLISHED_KINDS, Bi3DModel, ModelKind
from app.engine.errors import UserError


@pytest.mark.parametrize("kind", PUBLISHED_KINDS)
def test_published_format_loads_and_detects_kind(tmp_path: Path, kind: ModelKind) -> None:
    model = Bi3DModel(kind)
    path = tmp_path / "published.pth.tar"
    torch.save({"state_dict": model.state_dict()}, path)
    loaded, info = load_model(path)
    assert info.kind is kind and info.source == "published" and info.width == 1.0
    assert info.max_disparity == 192
    for key, value in model.state_dict().items():
        assert torch.equal(loaded.state_dict()[key], value)


def test_dataparallel_prefix_is_stripped(tmp_path: Path) -> None:
    state = {f"module.{k}": v for k, v in Bi3DModel("binary", 0.25).state_dict().items()}
    torch.save({"state_dict": state}, tmp_path / "dp.pt")
    _, info = load_model(tmp_path / "dp.pt")
    assert info.kind is ModelKind.BINARY and info.width == 0.25


def test_project_format_round_trip_keeps_metadata(tmp_path: Path) -> None:
    model = Bi3DModel("continuous_2d", width=0.25, max_disparity=96)
    path = tmp_path / "sub" / "model.pt"
    save_checkpoint(path, model, {"iterations": 12, "data": "synthetic"})
    loaded, info = load_model(path)
    assert (info.kind, info.width, info.max_disparity) == (ModelKind.CONTINUOUS_2D, 0.25, 96)
    assert info.training == {"iterations": 12, "data": "synthetic"}
    assert loaded.max_disparity == 96
    assert list(path.parent.iterdir()) == [path]  # no temporary file left behind


def test_unsafe_pickle_is_refused_not_executed(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"

    class Exploit:
        def __reduce__(self):  # type: ignore[no-untyped-def]
            return (Path.touch, (marker,))

    path = tmp_path / "evil.pt"
    with open(path, "wb") as f:
        pickle.dump({"state_dict": {}, "x": Exploit()}, f)
    with pytest.raises(UserError, match="refused"):
        read_checkpoint(path)
    assert not marker.exists()


def test_torch_zip_with_unsafe_object_is_refused(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"

    class Exploit:
        def __reduce__(self):  # type: ignore[no-untyped-def]
            return (Path.touch, (marker,))

    path = tmp_path / "evil_zip.pt"
    torch.save({"state_dict": Bi3DModel("binary", 0.25).state_dict(), "hook": Exploit()}, path)
    with pytest.raises(UserError, match="would run code"):
        read_checkpoint(path)
    assert not marker.exists()


@pytest.mark.parametrize(
    ("content", "message"),
    [(b"", "is empty"), (b"not a checkpoint at all", "not a readable PyTorch checkpoint")],
)
def test_empty_and_corrupt_files(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "bad.pt"
    path.write_bytes(content)
    with pytest.raises(UserError, match=message):
        read_checkpoint(path)


def test_truncated_checkpoint(tmp_path: Path) -> None:
    good = tmp_path / "good.pt"
    torch.save({"state_dict": Bi3DModel("binary", 0.25).state_dict()}, good)
    bad = tmp_path / "truncated.pt"
    bad.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    with pytest.raises(UserError, match="not a readable"):
        read_checkpoint(bad)


def test_missing_file() -> None:
    with pytest.raises(UserError, match="not found"):
        read_checkpoint("/nonexistent/weights.pt")


def test_mismatch_reports_counts_and_likely_kind(tmp_path: Path) -> None:
    model = Bi3DModel("continuous_2d", width=0.25)
    path = tmp_path / "wrong.pt"
    save_checkpoint(path, model)
    # claim it is binary: the keys cannot fit
    data = torch.load(path, weights_only=True)
    data["kind"] = "binary"
    torch.save(data, path)
    with pytest.raises(UserError) as err:
        load_model(path)
    text = str(err.value)
    assert "keys missing" in text and "unexpected" in text and "continuous_2d" in text
    assert "\n" not in text


def test_wrong_kind_requested(tmp_path: Path) -> None:
    torch.save({"state_dict": Bi3DModel("binary", 0.25).state_dict()}, tmp_path / "b.pt")
    with pytest.raises(UserError, match="is a binary model; this needs a continuous_3d"):
        load_model(tmp_path / "b.pt", expect_kind="continuous_3d")


def test_no_state_dict_entry(tmp_path: Path) -> None:
    torch.save({"weights": torch.zeros(3)}, tmp_path / "x.pt")
    with pytest.raises(UserError, match="no 'state_dict'"):
        read_checkpoint(tmp_path / "x.pt")


def test_detect_kind() -> None:
    assert detect_kind({"featnethr.conv1.0.0.weight"}) is ModelKind.BINARY
    assert (
        detect_kind({"refinenet3d.l37.weight", "refinenet.conv2d_feature.0.weight"})
        is ModelKind.CONTINUOUS_3D
    )
    assert detect_kind({"refinenet.conv2d_feature.0.weight"}) is ModelKind.CONTINUOUS_2D
    assert detect_kind({"foo"}) is None


def test_half_precision_storage(tmp_path: Path) -> None:
    model = Bi3DModel("binary", width=0.25)
    save_checkpoint(tmp_path / "full.pt", model)
    save_checkpoint(tmp_path / "half.pt", model, half=True)
    assert (tmp_path / "half.pt").stat().st_size < 0.6 * (tmp_path / "full.pt").stat().st_size
    loaded, _ = load_model(tmp_path / "half.pt")
    for key, value in model.state_dict().items():
        want = value.half().float() if value.is_floating_point() else value
        assert torch.equal(loaded.state_dict()[key], want), key


def test_a_text_file_given_as_weights_is_unreadable_not_code(tmp_path: Path, demo_dir: Path) -> None:
    """Middlebury's calib.txt starts 'cam0=': pickle's protocol-0 GLOBAL opcode is 'c', but torch
    writes protocol 2+ (and zip archives): the file is named unreadable, not dangerous."""
    path = tmp_path / "calib.txt"
    path.write_bytes((demo_dir / "calib.txt").read_bytes())
    with pytest.raises(UserError, match="is not a readable PyTorch checkpoint"):
        read_checkpoint(path)
