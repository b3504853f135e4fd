"""Training data: the synthetic generator and users' datasets, as crops with planes.

Every item is ``(left, right, disparity)``: 3 x H x W float in [0, 1] (RGB) and H x W
disparity in pixels, NaN where unknown. Planes are drawn by the loss, per batch.
"""

from __future__ import annotations

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

if TYPE_CHECKING:
    from app.engine.sources.spec import Scene

Item = tuple[Tensor, Tensor, Tensor]


@dataclass(frozen=True)
class CropConfig:
    height: int = 192
    width: int = 384


class SyntheticStream(IterableDataset):
    """An endless stream of rendered scenes, each used ``reuse`` times.

    Rendering costs about as much as a training step on a small CPU, so every scene is
    shown ``reuse`` times, vertically flipped or not (a valid stereo augmentation; a
    horizontal flip is not) and with new planes each time. Seeds are disjoint per
    worker and per distributed rank; ``seed_base`` keeps validation scenes apart.
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
    ) -> None:
        self.cfg = SceneConfig(crop.height, crop.width, max_disparity)
        self.seed_base, self.reuse, self.rank, self.world = seed_base, reuse, rank, world
        self.device = device  # "cuda": render on the GPU, so data never starves it
        self.start = 0

    def __iter__(self) -> Iterator[Item]:
        info = get_worker_info()
        workers, wid = (info.num_workers, info.id) if info else (1, 0)
        stride = workers * self.world
        index = self.start * stride + self.rank * workers + wid
        while True:
            sample = render_scene(self.seed_base + index, self.cfg, self.device)
            for k in range(self.reuse):
                if k % 2:
                    yield sample.left.flip(1), sample.right.flip(1), sample.disparity.flip(0)
                else:
                    yield sample.left, sample.right, sample.disparity
            index += stride


SELECTION_SEED = 2 * 10**9  # far from the training stream and from validation_scenes


def selection_scenes(count: int = 16) -> list[StereoSample]:
    """The larger held-out synthetic scenes (384 x 576, seeds from 2 x 10^9) on which bundled
    models and the engine's matching stages are chosen (``benchmarks/compare_models.py``);
    never used in training or its validation."""
    cfg = SceneConfig(height=384, width=576)
    return [render_scene(SELECTION_SEED + i, cfg) for i in range(count)]


def validation_scenes(crop: CropConfig, count: int, max_disparity: float = 192.0) -> list[Item]:
    """Fixed held-out synthetic scenes (seeds far from the training stream)."""
    cfg = SceneConfig(crop.height, crop.width, max_disparity)
    out = []
    for i in range(count):
        s = render_scene(10**9 + i, cfg)
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
        from app.engine.formats import read_image_rgb
        from app.engine.sources.spec import read_disparity

        scene = self.scenes[index]
        assert scene.gt is not None
        left, right = read_image_rgb(scene.left), read_image_rgb(scene.right)
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
