"""Training data: the synthetic generators and users' datasets, as crops with planes.

The synthetic stream mixes the layered generator (``synthetic.layered``) with 3D rooms,
corridors and outdoor scenes (``synthetic.rooms``) in a share ``rooms_share``, decided per
scene index by a low-discrepancy rule (the share holds in every window of scenes).

Every item is ``(left, right, disparity)``: 3 x H x W float in [0, 1] (RGB) and H x W
disparity in pixels, NaN where unknown. Planes are drawn by the loss, per batch.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import Tensor
from torch.utils.data import Dataset, IterableDataset, get_worker_info

from app.engine.errors import UserError
from app.engine.synthetic.layered import SceneConfig, StereoSample, render_scene
from app.engine.synthetic.rooms import RoomConfig, RoomRender, render_room, render_room_labelled

if TYPE_CHECKING:
    from app.engine.sources.spec import Scene

Item = tuple[Tensor, Tensor, Tensor]
GENERATORS = ("layered", "rooms")
GOLDEN = (math.sqrt(5) - 1) / 2
SILVER = math.sqrt(2) - 1  # a second irrational step, independent of GOLDEN's sequence


def is_room_scene(seed: int, rooms_share: float) -> bool:
    """Whether scene ``seed`` of the stream is a room: the fractional part of seed x golden
    ratio below the share, so any run of consecutive seeds holds the share within a few scenes."""
    return (seed * GOLDEN) % 1.0 < rooms_share


def is_blank_room(seed: int, blank_share: float) -> bool:
    """Whether room scene ``seed`` is drawn with every wall and ceiling blank
    (``RoomConfig.blank_walls``): the same low-discrepancy rule on a second irrational step."""
    return (seed * SILVER) % 1.0 < blank_share


@dataclass(frozen=True)
class CropConfig:
    height: int = 192
    width: int = 384


def check_crop(crop: tuple[int, int]) -> None:
    """A ``UserError`` for a training crop (height, width) the networks cannot take."""
    if crop[0] % 96 or crop[1] % 96:
        raise UserError(f"crop {crop[1]}x{crop[0]} must be multiples of 96 in both sides")


class SyntheticStream(IterableDataset):
    """An endless stream of rendered scenes, each used ``reuse`` times.

    Rendering costs about as much as a training step on a small CPU, so every scene is
    shown ``reuse`` times, vertically flipped or not (a valid stereo augmentation; a
    horizontal flip is not) and with new planes each time. Seeds are disjoint per
    worker and per distributed rank; ``seed_base`` keeps validation scenes apart; ``start``:
    the scenes this rank has already used (a resumed run goes on with new ones). A share
    ``rooms_share`` of the scenes are 3D rooms (``is_room_scene``), the rest layered; of the
    rooms, a share ``blank_share`` has every wall and ceiling blank (``is_blank_room``).
    """

    def __init__(
        self,
        crop: CropConfig,
        max_disparity: float = 192.0,
        seed_base: int = 0,
        reuse: int = 3,
        rank: int = 0,
        world: int = 1,
        device: str = "cpu",
        rooms_share: float = 0.0,
        blank_share: float = 0.0,
    ) -> None:
        self.cfg = SceneConfig(crop.height, crop.width, max_disparity)
        self.room_cfg = RoomConfig(crop.height, crop.width, max_disparity)
        self.blank_cfg = RoomConfig(crop.height, crop.width, max_disparity, blank_walls=True)
        self.rooms_share, self.blank_share = rooms_share, blank_share
        self.seed_base, self.reuse, self.rank, self.world = seed_base, reuse, rank, world
        self.device = device  # "cuda": render on the GPU, so data never starves it
        # hand samples over on the CPU (rendered on the GPU by loader processes, which cannot
        # pass CUDA tensors to the training process)
        self.to_cpu = False
        self.start = 0

    def __iter__(self) -> Iterator[Item]:
        info = get_worker_info()
        workers, wid = (info.num_workers, info.id) if info else (1, 0)
        stride = workers * self.world
        index = self.first_index(workers, wid)
        while True:
            sample = self.scene(self.seed_base + index)
            if self.to_cpu:
                sample = StereoSample(sample.left.cpu(), sample.right.cpu(), sample.disparity.cpu())
            for k in range(self.reuse):
                if k % 2:
                    yield sample.left.flip(1), sample.right.flip(1), sample.disparity.flip(0)
                else:
                    yield sample.left, sample.right, sample.disparity
            index += stride

    def first_index(self, workers: int = 1, worker: int = 0) -> int:
        """The scene index (from ``seed_base``) at which ``worker`` of ``workers`` loader processes
        begins. Each takes every ``workers x world``-th scene, and a loader hands over its
        workers' batches in turn, so after ``start`` scenes of this rank each worker has used
        ``start // workers`` of its own: a resumed run goes on from there (it skipped
        ``workers - 1`` times as many scenes as it had used)."""
        stride = workers * self.world
        return (self.start // workers) * stride + self.rank * workers + worker

    def scene(self, seed: int) -> StereoSample:
        """The stream's scene for this seed (a room or a layered scene)."""
        if is_room_scene(seed, self.rooms_share):
            blank = is_blank_room(seed, self.blank_share)
            return render_room(seed, self.blank_cfg if blank else self.room_cfg, self.device)
        return render_scene(seed, self.cfg, self.device)


SELECTION_SEED = 2 * 10**9  # far from the training stream and from validation_scenes
VALIDATION_SEED = 10**9
ROOM_VALIDATION_SEED = 15 * 10**8
ROOM_SELECTION_SEED = 3 * 10**9
BLANK_WALL_SEED = 4 * 10**9


def _check_generator(generator: str) -> None:
    if generator not in GENERATORS:
        raise UserError(f"unknown synthetic generator {generator!r}; use {' or '.join(GENERATORS)}")


def selection_scenes(count: int = 16, generator: str = "layered") -> list[StereoSample]:
    """The larger held-out synthetic scenes (384 x 576, seeds from 2 x 10^9) on which bundled
    models and the engine's matching stages are chosen (``benchmarks/compare_models.py``);
    never used in training or its validation. ``generator="rooms"``: ``room_selection_scenes``."""
    _check_generator(generator)
    if generator == "rooms":
        return room_selection_scenes(count)
    cfg = SceneConfig(height=384, width=576)
    return [render_scene(SELECTION_SEED + i, cfg) for i in range(count)]


def room_selection_scenes(count: int = 16, height: int = 384, width: int = 576) -> list[StereoSample]:
    """Held-out 3D room scenes (seeds from 3 x 10^9, far from any training stream)."""
    cfg = RoomConfig(height=height, width=width)
    return [render_room(ROOM_SELECTION_SEED + i, cfg) for i in range(count)]


def blank_wall_scenes(count: int = 16, height: int = 384, width: int = 576) -> list[RoomRender]:
    """Held-out rooms dominated by blank walls and ceilings (seeds from 4 x 10^9), with their
    ``low_texture`` masks: where a model should not paint phantom near blobs."""
    cfg = RoomConfig(height=height, width=width, blank_walls=True)
    return [render_room_labelled(BLANK_WALL_SEED + i, cfg) for i in range(count)]


def validation_scenes(
    crop: CropConfig, count: int, max_disparity: float = 192.0, generator: str = "layered"
) -> list[Item]:
    """Fixed held-out synthetic scenes (seeds far from the training stream): layered from 10^9
    (the figures of the bundled model), or rooms from 1.5 x 10^9."""
    _check_generator(generator)
    out = []
    for i in range(count):
        if generator == "rooms":
            s = render_room(ROOM_VALIDATION_SEED + i, RoomConfig(crop.height, crop.width, max_disparity))
        else:
            s = render_scene(VALIDATION_SEED + i, SceneConfig(crop.height, crop.width, max_disparity))
        out.append((s.left, s.right, s.disparity))
    return out


class SceneDataset(Dataset):
    """Users' data with ground truth, as random crops with photometric augmentation.

    Layouts: anything ``find_scenes`` reads (Middlebury, ETH3D, KITTI 2015) and
    SceneFlow (``left/``, ``right/``, ``disparity/*.pfm``).
    """

    def __init__(self, root: str | Path, crop: CropConfig, seed: int = 0) -> None:
        from app.engine.sources.spec import find_scenes  # OpenCV only when reading files

        self.scenes = _sceneflow(Path(root)) or find_scenes(root)
        self.scenes = [s for s in self.scenes if s.gt is not None]
        if not self.scenes:
            raise UserError(f"{root} has no scenes with ground truth; training needs disparity maps")
        self.crop = crop
        self.rng = np.random.default_rng(seed)

    def __len__(self) -> int:
        return len(self.scenes)

    def __getitem__(self, index: int) -> Item:
        from app.engine.formats import read_pair_rgb
        from app.engine.sources.spec import read_disparity

        scene = self.scenes[index]
        assert scene.gt is not None
        left, right = read_pair_rgb(scene.left, scene.right)
        gt = read_disparity(scene.gt)
        h, w = gt.shape
        ch, cw = self.crop.height, self.crop.width
        if h < ch or w < cw:
            raise UserError(f"crop {cw}x{ch} is larger than {scene.name} ({w}x{h}); use a smaller --crop")
        y, x = int(self.rng.integers(0, h - ch + 1)), int(self.rng.integers(0, w - cw + 1))
        window = (slice(y, y + ch), slice(x, x + cw))
        lt, rt = (_jitter(_to_tensor(img[window]), self.rng) for img in (left, right))
        return lt, rt, torch.from_numpy(np.ascontiguousarray(gt[window]))


def _to_tensor(img: np.ndarray) -> Tensor:
    return torch.from_numpy(np.ascontiguousarray(img)).permute(2, 0, 1).float() / 255.0


def _jitter(img: Tensor, rng: np.random.Generator) -> Tensor:
    gain, gamma = rng.uniform(0.8, 1.2), rng.uniform(0.8, 1.25)
    return (img.clamp(0, 1) ** gamma * gain).clamp(0, 1)


def _sceneflow(root: Path) -> list[Scene]:
    from app.engine.sources.spec import Scene

    if not ((root / "left").is_dir() and (root / "right").is_dir() and (root / "disparity").is_dir()):
        return []
    scenes = []
    for left in sorted((root / "left").iterdir()):
        right = root / "right" / left.name
        gt = root / "disparity" / (left.stem + ".pfm")
        if right.is_file() and gt.is_file():
            scenes.append(Scene(left.stem, left, right, gt))
    if not scenes:
        raise UserError(f"{root}: left/, right/ and disparity/ hold no matching files")
    return scenes
