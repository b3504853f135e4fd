"""The synthetic training stream's mix of layered and room scenes, and the held-out sets."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import torch

from app.engine.errors import UserError
from app.engine.synthetic.layered import SceneConfig, render_scene
from app.engine.synthetic.rooms import RoomConfig, render_room
from app.engine.training.data import (
    CropConfig,
    SyntheticStream,
    blank_wall_scenes,
    is_blank_room,
    is_room_scene,
    room_selection_scenes,
    validation_scenes,
)
from app.engine.training.trainer import TrainConfig

CROP = CropConfig(48, 96)


def test_the_share_of_room_scenes_holds_in_every_window() -> None:
    for share in (0.0, 0.25, 0.5, 1.0):
        for start in (0, 10**7, 3 * 10**9):
            rooms = sum(is_room_scene(start + i, share) for i in range(200))
            assert abs(rooms - 200 * share) <= 2, (share, start)


def test_the_stream_mixes_rooms_and_layered_scenes_deterministically() -> None:
    stream = SyntheticStream(CROP, 32.0, seed_base=100, reuse=1, rooms_share=0.5)
    items = list(itertools.islice(iter(stream), 6))
    again = list(
        itertools.islice(iter(SyntheticStream(CROP, 32.0, seed_base=100, reuse=1, rooms_share=0.5)), 6)
    )
    kinds = []
    for i, ((left, right, disp), (left2, _, disp2)) in enumerate(zip(items, again, strict=True)):
        assert torch.equal(left, left2) and torch.equal(disp, disp2)
        seed = 100 + i
        room = is_room_scene(seed, 0.5)
        kinds.append(room)
        expected = (
            render_room(seed, RoomConfig(48, 96, 32.0))
            if room
            else render_scene(seed, SceneConfig(48, 96, 32.0))
        )
        assert torch.equal(left, expected.left) and torch.equal(right, expected.right)
        assert float(disp.max()) <= 32.0 + 1e-3
    assert any(kinds) and not all(kinds)
    layered = list(itertools.islice(iter(SyntheticStream(CROP, 32.0, seed_base=100, reuse=1)), 2))
    assert torch.equal(layered[0][0], render_scene(100, SceneConfig(48, 96, 32.0)).left)  # default: as before


def test_a_share_of_the_rooms_has_every_wall_blank() -> None:
    for share in (0.0, 0.3, 1.0):
        blank = sum(is_blank_room(10**7 + i, share) for i in range(200))
        assert abs(blank - 200 * share) <= 2, share
    # independent of the rooms' own rule: blank rooms fall among rooms and layered seeds alike
    seeds = [s for s in range(100, 400) if is_room_scene(s, 0.5)]
    assert 0.2 < sum(is_blank_room(s, 0.5) for s in seeds) / len(seeds) < 0.8
    stream = SyntheticStream(CROP, 32.0, seed_base=100, reuse=1, rooms_share=1.0, blank_share=0.5)
    for i, (left, _, disp) in enumerate(itertools.islice(iter(stream), 4)):
        seed = 100 + i
        cfg = RoomConfig(48, 96, 32.0, blank_walls=is_blank_room(seed, 0.5))
        expected = render_room(seed, cfg)
        assert torch.equal(left, expected.left) and torch.equal(disp, expected.disparity)
    with pytest.raises(UserError, match=r"blank-share 2"):
        TrainConfig(blank_share=2.0)


def test_a_resumed_stream_goes_on_where_its_workers_stopped() -> None:
    """Loader workers take every ``workers``-th scene and hand over their batches in turn: after
    ``start`` scenes, each worker resumes at the first scene it had not used, for any count."""
    for world, rank in ((1, 0), (2, 1)):
        for workers in (1, 3, 7):
            stream = SyntheticStream(CROP, 32.0, reuse=1, rank=rank, world=world)
            stride = workers * world
            # an uninterrupted run: worker w's k-th scene is index k * stride + rank * workers + w
            used = [k * stride + rank * workers + w for k in range(20) for w in range(workers)]
            for start in (0, workers, 5 * workers, 12 * workers):
                stream.start = start
                resumed = {stream.first_index(workers, w) for w in range(workers)}
                assert resumed == set(used[start : start + workers]), (world, workers, start)


def test_validation_keeps_layered_scenes_and_offers_rooms() -> None:
    layered = validation_scenes(CROP, 1, 32.0)
    assert torch.equal(layered[0][0], render_scene(10**9, SceneConfig(48, 96, 32.0)).left)
    rooms = validation_scenes(CROP, 1, 32.0, generator="rooms")
    assert torch.equal(rooms[0][0], render_room(15 * 10**8, RoomConfig(48, 96, 32.0)).left)
    with pytest.raises(UserError, match="unknown synthetic generator 'boxes'"):
        validation_scenes(CROP, 1, generator="boxes")


def test_held_out_room_sets() -> None:
    (scene,) = room_selection_scenes(1, 48, 96)
    assert torch.equal(scene.left, render_room(3 * 10**9, RoomConfig(48, 96)).left)
    walls = blank_wall_scenes(2, 48, 96)
    assert all(w.low_texture.shape == (48, 96) and w.low_texture.float().mean() > 0.5 for w in walls)


def test_rooms_share_is_checked(tmp_path: Path) -> None:
    assert TrainConfig(out=str(tmp_path)).rooms_share == 0.5
    with pytest.raises(UserError, match=r"rooms-share 1\.5"):
        TrainConfig(out=str(tmp_path), rooms_share=1.5)


def test_train_refuses_a_rooms_share_out_of_range(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from tests.cli_helpers import bad

    line = bad(capsys, "train", "--out", str(tmp_path / "run"), "--rooms-share", "1.5", "--steps", "1")
    assert "--rooms-share" in line


def test_train_refuses_fp16_on_the_cpu_as_depth_does(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from tests.cli_helpers import bad

    line = bad(capsys, "train", "--out", str(tmp_path / "run"), "--precision", "fp16", "--steps", "1")
    assert line.endswith("fp16 needs --device cuda; use bf16 or fp32 on the CPU")
    assert not (tmp_path / "run").exists()


def test_train_on_a_missing_dataset_leaves_no_run_folder(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from tests.cli_helpers import bad

    line = bad(
        capsys, "train", "--data", str(tmp_path / "nope"), "--out", str(tmp_path / "run"), "--steps", "1"
    )
    assert "scene folder not found" in line and "SceneFlow" in line
    assert not (tmp_path / "run").exists()  # no log.csv of a run that never began
