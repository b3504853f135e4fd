"""The training loop: mixed precision, channels-last, checkpoints with resume, validation,
CSV log, and DistributedDataParallel under ``torchrun``.

Checkpoints in the output folder: ``last.pt`` (this project's model format, with the
training metadata), ``state.pt`` (optimizer and step, for resuming) and ``best.pt`` (the
best validation score so far). Every save is atomic, so an interrupted or failed save
leaves the previous files intact.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import io
import math
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import Tensor, nn
from torch.utils.data import DataLoader, DistributedSampler

from app.engine.bi3d.checkpoint import PIXEL_SEGNET, load_model, load_tensors, save_checkpoint
from app.engine.bi3d.factory import build_model
from app.engine.bi3d.light import LightBi3D
from app.engine.bi3d.model import FEATURE_STRIDE, ModelKind, SweepModel, dense_planes, to_channels_last
from app.engine.depth.bi3d import Bi3DEngine
from app.engine.errors import UserError
from app.engine.fileio import atomic_write, make_folder
from app.engine.metrics import binary_agreement, evaluate
from app.engine.synthetic.layered import to_uint8
from app.engine.training.data import (
    CropConfig,
    Item,
    SceneDataset,
    SyntheticStream,
    check_crop,
    validation_scenes,
)
from app.engine.training.losses import disparity_loss, monotone_penalty, plane_loss, sample_planes
from app.engine.types import DepthRequest, Mode

PRECISIONS = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}


@dataclass
class TrainConfig:
    out: str = "runs/train"
    kind: str = "light"
    width: float = 1.0
    max_disparity: int = 192
    data: str = "synthetic"  # or a dataset folder
    crop: tuple[int, int] = (192, 384)
    batch: int = 4
    planes: int = 8
    steps: int = 20000
    lr: float = 1e-3
    warmup: int = 200
    precision: str = "bf16"
    tf32: bool = True
    channels_last: bool = True
    init: str | None = None
    seed: int = 0
    device: str = "cpu"
    data_device: str = "cpu"  # where synthetic scenes are rendered ("cuda" with --device cuda)
    workers: int = 0
    reuse: int = 3
    tau: float = 1.0
    mono_weight: float = 0.1
    val_every: int = 500
    val_count: int = 8
    log_every: int = 20
    save_every: int = 200
    continuous_window: int = 17  # planes per continuous-kind sample (16k + 1 for the 3D kind)
    # binary kinds: planes every `plane_step` px: 3 keeps to whole feature columns (as the
    # bundled and published models were trained); 1 also trains the fractional shifts that
    # planes between columns use (tried for the light model: no better on held-out scenes)
    plane_step: int = FEATURE_STRIDE
    # share of each sample's planes drawn near the ground truth (None: the bundled recipe's
    # mixing, about twice chance; see losses.sample_planes)
    near_share: float | None = None
    # share of synthetic scenes that are 3D rooms, corridors and outdoor scenes (synthetic.rooms);
    # the rest are layered scenes. The bundled model predates the rooms: it was trained with 0
    rooms_share: float = 0.5
    # share of those rooms with every wall and ceiling blank (``RoomConfig.blank_walls``): the
    # scenes where a model paints phantom "near" blobs unless it learns them (the held-out blank
    # rooms of ``benchmarks/phantom_blobs.py`` come from seeds far from every training stream)
    blank_share: float = 0.0
    # fine-tuning: keep the feature network as it is and train the rest (SegNet, upsampling
    # guide, refinement). The per-pixel passes' SegNet of ``init`` is then carried over
    # untrained: it reads the same features (retrain it with ``train-pixel-pass`` if wanted)
    freeze_features: bool = False

    def __post_init__(self) -> None:
        if self.precision not in PRECISIONS:
            raise UserError(f"unknown precision {self.precision!r}; use fp32, bf16 or fp16")
        check_crop(self.crop)
        if self.batch < 1 or self.planes < 1 or self.steps < 1:
            raise UserError("batch, planes and steps must be positive")
        if self.plane_step not in (1, FEATURE_STRIDE):
            raise UserError(f"--plane-step {self.plane_step} is not supported; use 1 or 3")
        if self.near_share is not None and not 0 <= self.near_share <= 1:
            raise UserError(f"--near-share {self.near_share} must lie between 0 and 1")
        if not 0 <= self.rooms_share <= 1:
            raise UserError(f"--rooms-share {self.rooms_share} must lie between 0 and 1")
        if not 0 <= self.blank_share <= 1:
            raise UserError(f"--blank-share {self.blank_share} must lie between 0 and 1")
        if self.freeze_features and not self.init:
            raise UserError("--freeze-features fine-tunes a trained model: give it with --init")


class TrainingForward(nn.Module):
    """The part of a training step that DDP must see as ``forward``."""

    def __init__(self, model: SweepModel) -> None:
        super().__init__()
        self.model = model

    def forward(self, left: Tensor, right: Tensor, shifts: Tensor) -> dict[str, Tensor]:
        m = self.model
        feats = m.extract(left, right)
        low = m.plane_logits(feats, shifts, chunk=shifts.numel())
        out = {"low": low}
        if m.has_disp_refine:
            low = m.regularise(feats, low)
            out["low_refined"] = low
            probs = torch.sigmoid(dense_planes(low, left.shape[-2:], FEATURE_STRIDE))
            out["normalized"] = m.refine_disparity(probs.mean(1, keepdim=True), left)
        else:
            out["full"] = m.refine_planes(feats, low)
        return out


@dataclass
class Dist:
    rank: int = 0
    world: int = 1

    @property
    def main(self) -> bool:
        return self.rank == 0


def setup_distributed(device: str) -> Dist:
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return Dist()
    backend = "nccl" if device == "cuda" else "gloo"
    dist.init_process_group(backend)
    if device == "cuda":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    return Dist(dist.get_rank(), dist.get_world_size())


class Trainer:
    def __init__(self, cfg: TrainConfig) -> None:
        self.cfg = cfg
        self.dist = setup_distributed(cfg.device)
        self.device = torch.device(
            cfg.device if cfg.device == "cpu" else f"cuda:{torch.cuda.current_device()}"
        )
        if cfg.device == "cuda" and not torch.cuda.is_available():
            raise UserError("CUDA is not available; use --device cpu")
        torch.backends.cuda.matmul.allow_tf32 = cfg.tf32
        torch.backends.cudnn.allow_tf32 = cfg.tf32
        self.out = Path(cfg.out)
        self.model, self.step, self.best = self._load_or_build()
        if min(cfg.crop) < self.model.min_size:
            raise UserError(f"a {cfg.kind} model needs crops of at least {self.model.min_size} px a side")
        self.model.to(self.device)
        if cfg.channels_last:
            to_channels_last(self.model)
        if cfg.freeze_features:
            self.model.featnet.requires_grad_(False)
        if isinstance(self.model, LightBi3D) and self.model.pixel_segnet is not None:
            # carried, not trained here (TrainConfig.freeze_features)
            self.model.pixel_segnet.requires_grad_(False)
        self.forward: nn.Module = TrainingForward(self.model)
        if self.dist.world > 1:
            self.forward = nn.parallel.DistributedDataParallel(self.forward)
        trained = [p for p in self.model.parameters() if p.requires_grad]
        self.opt = torch.optim.AdamW(trained, lr=cfg.lr, weight_decay=1e-4)
        self.scaler = torch.amp.GradScaler(self.device.type, enabled=cfg.precision == "fp16")
        self._load_state()
        self.gen = torch.Generator().manual_seed(cfg.seed * 1000 + self.dist.rank + self.step)

    # ---- setup --------------------------------------------------------------------
    def _load_or_build(self) -> tuple[SweepModel, int, float]:
        cfg = self.cfg
        last = self.out / "last.pt"
        if last.is_file():
            model, info = load_model(last)
            if info.kind.value != cfg.kind:
                raise UserError(f"{last} holds a {info.kind.value} model, not {cfg.kind}; use another --out")
            return model, int(info.training.get("step", 0)), float(info.training.get("best", math.inf))
        torch.manual_seed(cfg.seed)  # the initial weights follow --seed too: a rerun starts alike
        model = build_model(cfg.kind, cfg.width, cfg.max_disparity)
        if cfg.init:
            init, info = load_model(cfg.init)
            if info.kind is not model.kind:
                raise UserError(
                    f"--init {cfg.init} is a {info.kind.value} model; training a {cfg.kind} model"
                )
            # the per-pixel passes' own SegNet is trained for these features and this SegNet
            # (training.pixel_pass): retraining starts without it, and it is trained again after;
            # with the features frozen it still reads the features it was trained on, and is kept
            state = init.state_dict()
            carried = isinstance(init, LightBi3D) and init.pixel_segnet is not None
            if cfg.freeze_features and carried and isinstance(model, LightBi3D):
                model.add_pixel_segnet()
            else:
                state = {k: v for k, v in state.items() if not k.startswith(PIXEL_SEGNET)}
            model.load_state_dict(state)
        return model, 0, math.inf

    def _load_state(self) -> None:
        path = self.out / "state.pt"
        if self.step and path.is_file():
            advice = "delete it to resume from last.pt without the optimizer state"
            state = load_tensors(path, advice)
            try:
                if int(state.get("step", -1)) == self.step:
                    self.opt.load_state_dict(state["optimizer"])
                    self.scaler.load_state_dict(state["scaler"])
            except (AttributeError, KeyError, TypeError, ValueError, RuntimeError) as exc:
                raise UserError(f"{path} is not a usable training state ({exc}); {advice}") from None

    def _batches(self) -> Iterator[tuple[Tensor, Tensor, Tensor]]:
        cfg = self.cfg
        crop = CropConfig(*cfg.crop)
        per_rank = cfg.batch
        if cfg.data == "synthetic":
            stream = SyntheticStream(
                crop,
                cfg.max_disparity,
                seed_base=cfg.seed * 10**7,
                reuse=cfg.reuse,
                rank=self.dist.rank,
                world=self.dist.world,
                device=str(self.device) if cfg.data_device == "cuda" else "cpu",
                rooms_share=cfg.rooms_share,
                blank_share=cfg.blank_share,
            )
            stream.start = self.step * per_rank // max(cfg.reuse, 1)
            if cfg.data_device == "cuda" and cfg.workers > 0:
                # each loader process renders on the GPU (a CUDA context needs a spawned process,
                # not a fork) and hands its samples over on the CPU: one process rendering was
                # the bottleneck of a lent H200 (benchmarks/RESULTS.md, 2026-12-04)
                stream.to_cpu = True
                loader = DataLoader(
                    stream,
                    batch_size=per_rank,
                    num_workers=cfg.workers,
                    multiprocessing_context="spawn",
                    pin_memory=self.device.type == "cuda",
                    persistent_workers=True,
                )
            else:  # a CPU stream in forked loader processes, or a GPU stream in this one
                workers = 0 if cfg.data_device == "cuda" else cfg.workers
                loader = DataLoader(stream, batch_size=per_rank, num_workers=workers)
            yield from loader
            return
        dataset = SceneDataset(cfg.data, crop, seed=cfg.seed + self.dist.rank)
        sampler: DistributedSampler[Any] | None = None
        if self.dist.world > 1:
            sampler = DistributedSampler(dataset, self.dist.world, self.dist.rank, seed=cfg.seed)
        epoch = 0
        while True:
            if sampler is not None:
                sampler.set_epoch(epoch)
            loader = DataLoader(
                dataset,
                batch_size=per_rank,
                shuffle=sampler is None,
                sampler=sampler,
                num_workers=cfg.workers,
                drop_last=True,
            )
            yield from loader
            epoch += 1

    # ---- one step -----------------------------------------------------------------
    def _lr(self) -> float:
        cfg = self.cfg
        if self.step < cfg.warmup:
            return cfg.lr * (self.step + 1) / cfg.warmup
        progress = min(1.0, (self.step - cfg.warmup) / max(1, cfg.steps - cfg.warmup))
        return cfg.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))

    def _autocast(self) -> contextlib.AbstractContextManager[Any]:
        dtype = PRECISIONS[self.cfg.precision]
        if dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=dtype)

    def train_step(self, left: Tensor, right: Tensor, gt: Tensor) -> float:
        cfg = self.cfg
        left, right, gt = (t.to(self.device, non_blocking=True) for t in (left, right, gt))
        left, right = (left - 0.5) / 0.5, (right - 0.5) / 0.5
        if cfg.channels_last:
            left, right = (t.contiguous(memory_format=torch.channels_last) for t in (left, right))
        if self.model.has_disp_refine:
            planes = self._window(gt)
        else:
            planes = sample_planes(
                gt, cfg.planes, cfg.max_disparity, self.gen, cfg.plane_step, cfg.near_share
            )
        if self.dist.world > 1:  # every rank must sweep the same planes
            planes = planes.to(self.device)
            dist.broadcast(planes, 0)
            planes = planes.cpu()
        for group in self.opt.param_groups:
            group["lr"] = self._lr()
        with self._autocast():
            out = self.forward(left, right, planes / FEATURE_STRIDE)
        loss = self._loss(out, gt, planes)
        self.opt.zero_grad(set_to_none=True)
        self.scaler.scale(loss).backward()
        self.scaler.unscale_(self.opt)
        nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.scaler.step(self.opt)
        self.scaler.update()
        self.step += 1
        return float(loss.detach())

    def _window(self, gt: Tensor) -> Tensor:
        """A contiguous run of planes (3 px apart) for the continuous kinds."""
        n = self.cfg.continuous_window
        top = self.cfg.max_disparity // FEATURE_STRIDE
        first = int(torch.randint(0, max(1, top - n + 2), (1,), generator=self.gen))
        return torch.arange(first, first + n).clamp(max=top).float() * FEATURE_STRIDE

    def _loss(self, out: dict[str, Tensor], gt: Tensor, planes: Tensor) -> Tensor:
        cfg = self.cfg
        size = gt.shape[-2:]
        low_up = F.interpolate(out["low"].float(), size, mode="bilinear", align_corners=False)
        loss = 0.5 * plane_loss(low_up, gt, planes, cfg.tau)
        if "full" in out:
            loss = loss + plane_loss(out["full"], gt, planes, cfg.tau)
            loss = loss + cfg.mono_weight * monotone_penalty(out["full"])
        else:
            first, last = float(planes[0]), float(planes[-1])
            disp = out["normalized"][:, 0].float() * (last - first + 1) + first - 0.5
            loss = loss + disparity_loss(disp, gt, first, last)
            if "low_refined" in out:
                up = F.interpolate(out["low_refined"].float(), size, mode="bilinear", align_corners=False)
                loss = loss + 0.5 * plane_loss(up, gt, planes, cfg.tau)
        return loss

    # ---- validation, saving, the loop --------------------------------------------------
    def validate(self, scenes: list[tuple[Tensor, Tensor, Tensor]]) -> dict[str, float]:
        """Continuous-mode dense bad-2 and EPE, and binary accuracy at four planes (12-48 px;
        11-46 px, between feature columns, when training planes every pixel)."""
        self.model.eval()
        exact = self.cfg.plane_step == 1
        shift_mode = "interpolate" if exact else "round"
        # the network alone: no sub-pixel refinement
        engine = Bi3DEngine(
            self.model, self.device.type, shift_mode=shift_mode, subpixel=None, plane_check=None
        )
        binary_planes = (11, 23, 34, 46) if exact else (12, 24, 36, 48)
        bad2, epe, agree = [], [], []
        for left, right, gt in scenes:
            lu, ru, g = to_uint8(left), to_uint8(right), gt.numpy()
            res = engine.compute(
                lu, ru, DepthRequest(mode=Mode.CONTINUOUS, max_disparity=self.cfg.max_disparity)
            )
            m = evaluate(res.disparity, g)["dense"]
            bad2.append(m.bad2)
            epe.append(m.epe)
            q = engine.compute(lu, ru, DepthRequest(mode=Mode.QUANTIZED, planes=binary_planes))
            agree.append(float(binary_agreement(q.probabilities, q.planes, g).mean()))
        self.model.train()
        return {
            "val_bad2": float(np.mean(bad2)),
            "val_epe": float(np.mean(epe)),
            "val_binary": float(np.mean(agree)),
        }

    def save(self, name: str = "last.pt") -> None:
        if not self.dist.main:
            return
        meta = {"step": self.step, "best": self.best, "config": _jsonable(dataclasses.asdict(self.cfg))}
        try:
            save_checkpoint(self.out / name, self.model, meta)
            if name == "last.pt":
                state = io.BytesIO()
                torch.save(
                    {
                        "step": self.step,
                        "optimizer": self.opt.state_dict(),
                        "scaler": self.scaler.state_dict(),
                    },
                    state,
                )
                atomic_write(self.out / "state.pt", state.getvalue())
        except OSError as exc:
            raise UserError(
                f"could not save {self.out / name} ({exc.strerror}); "
                "the previous checkpoint is kept; free disk space and resume"
            ) from exc

    def _validation_scenes(self) -> list[Item]:
        """Held-out scenes for choosing ``best.pt``: layered only (the bundled model's figures),
        or, when the training mixes in rooms, half of them rooms as well."""
        cfg = self.cfg
        crop = CropConfig(*cfg.crop)
        rooms = cfg.val_count // 2 if cfg.rooms_share > 0 and cfg.data == "synthetic" else 0
        scenes = validation_scenes(crop, cfg.val_count - rooms, cfg.max_disparity)
        return scenes + (validation_scenes(crop, rooms, cfg.max_disparity, "rooms") if rooms else [])

    def run(self) -> dict[str, float]:
        cfg = self.cfg
        if cfg.data != "synthetic":  # a missing or empty dataset is said before the run folder is made
            SceneDataset(cfg.data, CropConfig(*cfg.crop), seed=cfg.seed)
        if self.dist.main:
            make_folder(self.out, "run folder")
        val = self._validation_scenes() if self.dist.main else []
        log = _CsvLog(self.out / "log.csv") if self.dist.main else None
        board = _tensorboard(self.out) if self.dist.main else None
        self.model.train()
        t0, seen, losses = time.perf_counter(), 0, []
        last: dict[str, float] = {}
        batches = self._batches()
        while self.step < cfg.steps:
            left, right, gt = next(batches)
            losses.append(self.train_step(left, right, gt))
            seen += left.shape[0] * self.dist.world
            if self.step % cfg.log_every == 0 or self.step == cfg.steps:
                rate = seen / (time.perf_counter() - t0)
                last = {
                    "step": self.step,
                    "loss": float(np.mean(losses)),
                    "lr": self._lr(),
                    "samples_per_s": rate,
                }
                losses = []
                if self.dist.main:
                    eta = (cfg.steps - self.step) * cfg.batch * self.dist.world / max(rate, 1e-9)
                    print(
                        f"\rstep {self.step}/{cfg.steps} loss {last['loss']:.4f} {rate:.1f} samples/s "
                        f"eta {eta / 60:.0f} min",
                        end="",
                        file=sys.stderr,
                        flush=True,
                    )
            validated = self.step % cfg.val_every == 0 or self.step == cfg.steps
            if self.dist.main and validated:
                last.update(self.validate(val))
                if last["val_bad2"] < self.best:
                    self.best = last["val_bad2"]
                    self.save("best.pt")
                print(
                    f"\nvalidation at {self.step}: dense bad-2 {last['val_bad2']:.3f}, EPE "
                    f"{last['val_epe']:.2f}, binary agreement {last['val_binary']:.3f}",
                    file=sys.stderr,
                )
            if log is not None and (self.step % cfg.log_every == 0 or validated):
                log.write({**last, "elapsed_s": time.perf_counter() - t0})
                if board is not None:
                    for key, value in last.items():
                        if key != "step":
                            board.add_scalar(key, value, self.step)
            if self.step % cfg.save_every == 0 or self.step == cfg.steps:
                self.save()
        if self.dist.world > 1:
            dist.barrier()
        return last


class _CsvLog:
    FIELDS = ("step", "loss", "lr", "samples_per_s", "val_bad2", "val_epe", "val_binary", "elapsed_s")

    def __init__(self, path: Path) -> None:
        self.path = path
        if not path.exists():  # the header whole or not at all; rows are appended line by line
            atomic_write(path, (",".join(self.FIELDS) + "\n").encode())

    def write(self, row: dict[str, float]) -> None:
        with self.path.open("a", newline="") as f:
            csv.writer(f).writerow([f"{row[k]:.6g}" if k in row else "" for k in self.FIELDS])


def _tensorboard(folder: Path) -> Any:
    """A TensorBoard writer when the tensorboard package is installed, else None."""
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        return None
    return SummaryWriter(str(folder / "tensorboard"))


def _jsonable(d: dict[str, Any]) -> dict[str, Any]:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in d.items()}


def train(cfg: TrainConfig) -> dict[str, float]:
    if ModelKind(cfg.kind) is ModelKind.CONTINUOUS_3D and (cfg.continuous_window - 1) % 16:
        raise UserError("the continuous_3d kind needs --window 16k + 1 planes (17, 33, 49, 65)")
    return Trainer(cfg).run()
