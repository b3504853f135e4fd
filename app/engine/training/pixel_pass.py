"""Training the light model's per-pixel passes (``LightBi3D.pixel_segnet``) for the
coarse-to-fine search (``depth.search``).

The search classifies each pixel at its own plane: a plane map that follows the scene, every
pixel within a few px of its answer in the last passes. A SegNet trained on uniform planes
only answers such a map unlike its own uniform sweep (a third of the last pass's decisions
differed on a held-out scene), while bisecting the uniform sweep's logits reproduces the full
sweep's answer. So a copy of SegNet is trained, with the features and the uniform SegNet
frozen, to answer each pixel's plane as the uniform sweep answers that plane there:

- the plane maps are the search's own: a coarse sweep (the frozen model, every
  ``coarse_step`` px up to a random top beyond the scene's largest disparity), then the
  bisection passes run by the copy being trained (its own decisions choose the next maps);
- the loss at every pass is the binary cross-entropy against the uniform sweep's
  probability at each pixel's plane (distillation), plus ``gt_weight`` times the cross-entropy
  against the ground truth's soft target sigmoid((gt - plane) / tau) averaged over the
  pixel's 6 x 6 image block; pixels still bisecting weigh 1, finished ones 0.2.

Synthetic scenes only (``training.data.SyntheticStream``: layered and rooms). Writes
``OUT/last.pt`` (the whole model in this project's format, the per-pixel SegNet included,
with the run's metadata), ``OUT/state.pt`` (optimizer and step: an interrupted run resumes)
and ``OUT/log.csv``; every save is atomic.

Shapes: B batch, P planes, H x W crop, h x w = H/6 x W/6 (the logits' grid).
"""

from __future__ import annotations

import csv
import io
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.utils.data import DataLoader

from app.engine.assets import default_weights
from app.engine.bi3d.checkpoint import load_model, load_tensors, save_checkpoint
from app.engine.bi3d.light import LightBi3D
from app.engine.bi3d.model import FEATURE_STRIDE
from app.engine.depth.decoding import PLANE_STEP_PX
from app.engine.depth.search import (
    Bracket,
    coarse_planes,
    fitted_bracket,
    middle,
    narrow,
    passes_needed,
    prior,
)
from app.engine.depth.searched import DEFAULT_COARSE_STEP
from app.engine.errors import UserError
from app.engine.fileio import atomic_write, make_folder
from app.engine.training.data import CropConfig, SyntheticStream, check_crop

LOW = 2 * FEATURE_STRIDE  # image px per logit: the light SegNet answers at 1/6 resolution
PIXEL_SEED = 7 * 10**8  # scenes apart from the bundled model's stream, validation and selection


@dataclass
class PixelPassConfig:
    out: str = "runs/pixel_pass"
    weights: str | None = None  # the model to complete (None: the bundled one)
    steps: int = 2500
    batch: int = 4
    crop: tuple[int, int] = (192, 384)
    lr: float = 3e-4
    warmup: int = 50
    coarse_step: int = DEFAULT_COARSE_STEP
    gt_weight: float = 0.3
    tau: float = 1.0
    rooms_share: float = 0.3
    reuse: int = 2
    seed: int = 0
    save_every: int = 100
    log_every: int = 10

    def __post_init__(self) -> None:
        check_crop(self.crop)
        if self.coarse_step % PLANE_STEP_PX or self.coarse_step <= PLANE_STEP_PX:
            raise UserError(f"--coarse-step {self.coarse_step} must be a multiple of 3 above 3 px")
        if self.steps < 1 or self.batch < 1:
            raise UserError("steps and batch must be positive")


def pass_targets(gt: Tensor, plane: Tensor, tau: float) -> tuple[Tensor, Tensor]:
    """B x H x W ground truth, B x h x w planes (px) -> the soft targets at the logits' grid
    (each block's mean of sigmoid((gt - plane) / tau) over its valid pixels) and each block's
    valid share, both B x h x w."""
    valid = torch.isfinite(gt)
    full = plane.repeat_interleave(LOW, 1).repeat_interleave(LOW, 2)
    target = torch.sigmoid((torch.nan_to_num(gt, nan=0.0) - full) / tau) * valid
    share = F.avg_pool2d(valid.float()[:, None], LOW)[:, 0]
    target = F.avg_pool2d(target[:, None], LOW)[:, 0] / share.clamp_min(1e-6)
    return target.clamp(0, 1), share


class PixelPassTrainer:
    def __init__(self, cfg: PixelPassConfig) -> None:
        self.cfg = cfg
        self.out = Path(cfg.out)
        make_folder(self.out, "--out")
        last = self.out / "last.pt"
        base = Path(cfg.weights) if cfg.weights else default_weights()
        if base is None and not last.is_file():
            raise UserError("this build has no bundled model; give --weights FILE")
        model, info = load_model(last if last.is_file() else base)  # type: ignore[arg-type]
        if not isinstance(model, LightBi3D):
            raise UserError(
                f"{base} is a {info.kind.value} model; the per-pixel passes are the light model's"
            )
        self.model = model
        self.base_training = dict(info.training)
        if not last.is_file() and "pixel_pass" in self.base_training:
            # continuing a model whose per-pixel SegNet was trained before: keep that record
            earlier = self.base_training.pop("pixel_pass")
            self.base_training["pixel_pass_history"] = [
                *self.base_training.get("pixel_pass_history", []),
                earlier,
            ]
        model.eval().requires_grad_(False)
        self.student = model.add_pixel_segnet()
        self.student.requires_grad_(True).train()
        self.opt = torch.optim.AdamW(self.student.parameters(), lr=cfg.lr, weight_decay=1e-4)
        self.step = 0
        self.gen = torch.Generator().manual_seed(cfg.seed)
        self._resume()

    # ---- one step -----------------------------------------------------------------------
    def _lr(self) -> float:
        cfg = self.cfg
        warm = min(1.0, (self.step + 1) / cfg.warmup)
        progress = min(1.0, self.step / cfg.steps)
        return cfg.lr * warm * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))

    def train_step(self, left: Tensor, right: Tensor, gt: Tensor) -> float:
        """One batch (B x 3 x H x W in [0, 1], B x H x W px): the coarse sweep, then the
        bisection passes with a loss at each; returns the mean loss over the passes."""
        cfg, model = self.cfg, self.model
        left, right = (left - 0.5) / 0.5, (right - 0.5) / 0.5
        top = self._top(gt)
        with torch.no_grad():
            feats = model.extract(left, right)
            planes = torch.as_tensor(coarse_planes(0, top, cfg.coarse_step), dtype=torch.float32)
            coarse = model.plane_logits(feats, planes / FEATURE_STRIDE)  # B x P x h x w
            grid = torch.arange(0, top // FEATURE_STRIDE + 1, dtype=torch.float32)
            uniform = model.plane_logits(feats, grid, chunk=16)  # the sweep every 3 px
        brackets = [fitted_bracket(coarse[i : i + 1], planes) for i in range(coarse.shape[0])]
        sweep = model.pixel_sweep(feats)  # gradients on: terms through the copy's weights
        for group in self.opt.param_groups:
            group["lr"] = self._lr()
        self.opt.zero_grad(set_to_none=True)
        passes = passes_needed(cfg.coarse_step)
        total = 0.0
        for k in range(passes):
            plane, active = _middles(brackets)
            known = torch.stack([prior(br, plane[i]) for i, br in enumerate(brackets)])
            logits = sweep(sweep.layout(plane / FEATURE_STRIDE), sweep.layout(known))[:, 0]
            index = (plane / FEATURE_STRIDE).round().long().clamp(0, grid.numel() - 1)
            teacher = torch.sigmoid(uniform.gather(1, index[:, None])[:, 0])
            target, share = pass_targets(gt, plane, cfg.tau)
            weight = (share > 0.5).float() * (0.2 + 0.8 * active.float())
            loss = F.binary_cross_entropy_with_logits(logits, teacher, reduction="none")
            loss = loss + cfg.gt_weight * F.binary_cross_entropy_with_logits(logits, target, reduction="none")
            loss = (loss * weight).sum() / weight.sum().clamp_min(1)
            loss.backward(retain_graph=k < passes - 1)  # the terms are shared by the passes
            total += float(loss.detach())
            with torch.no_grad():
                for i, br in enumerate(brackets):
                    narrow(br, plane[i], logits[i].detach(), active[i])
        nn.utils.clip_grad_norm_(self.student.parameters(), 1.0)
        self.opt.step()
        self.step += 1
        return total / passes

    def _top(self, gt: Tensor) -> int:
        """The coarse sweep's last plane: beyond the batch's largest disparity by 0-60 px, as the
        auto range and fixed ranges reach past a scene, on the 3 px grid, 24-192 px."""
        largest = float(torch.nan_to_num(gt, nan=0.0).amax())
        top = int(largest) + int(torch.randint(0, 61, (1,), generator=self.gen))
        return int(min(self.model.max_disparity, max(self.cfg.coarse_step, PLANE_STEP_PX * (top // 3))))

    # ---- the loop -----------------------------------------------------------------------
    def run(self) -> dict[str, float]:
        cfg = self.cfg
        stream = SyntheticStream(
            CropConfig(*cfg.crop),
            self.model.max_disparity,
            seed_base=PIXEL_SEED + cfg.seed * 10**7,
            reuse=cfg.reuse,
            rooms_share=cfg.rooms_share,
        )
        stream.start = self.step * cfg.batch // cfg.reuse
        batches = iter(DataLoader(stream, batch_size=cfg.batch, num_workers=0))
        losses: list[float] = []
        t0 = time.perf_counter()
        while self.step < cfg.steps:
            left, right, gt = next(batches)
            losses.append(self.train_step(left, right, gt))
            if self.step % cfg.log_every == 0 or self.step == cfg.steps:
                mean = float(np.mean(losses[-cfg.log_every :]))
                rate = (time.perf_counter() - t0) / len(losses)
                print(f"step {self.step}/{cfg.steps} loss {mean:.4f} ({rate:.2f} s/step)", flush=True)
                self._log(mean)
            if self.step % cfg.save_every == 0 or self.step == cfg.steps:
                self.save()
        return {"step": float(self.step), "loss": float(np.mean(losses[-cfg.log_every :])) if losses else 0.0}

    def save(self) -> None:
        training = dict(self.base_training)
        training["pixel_pass"] = {"step": self.step} | {
            k: v for k, v in asdict(self.cfg).items() if k != "out"
        }
        self.model.eval()
        save_checkpoint(self.out / "last.pt", self.model, training)
        buffer = io.BytesIO()
        torch.save(
            {"optimizer": self.opt.state_dict(), "step": self.step, "gen": self.gen.get_state()}, buffer
        )
        atomic_write(self.out / "state.pt", buffer.getvalue())

    def _resume(self) -> None:
        state_path = self.out / "state.pt"
        if not (self.out / "last.pt").is_file() or not state_path.is_file():
            return
        state = load_tensors(state_path, "delete it to start over")
        try:
            self.opt.load_state_dict(state["optimizer"])
            self.step = int(state["step"])
            self.gen.set_state(state["gen"])
        except (KeyError, TypeError, ValueError, RuntimeError) as exc:
            raise UserError(
                f"{state_path} is not a usable training state ({exc}); delete it to start over"
            ) from None
        print(f"resuming {self.out} at step {self.step}", flush=True)

    def _log(self, loss: float) -> None:
        path = self.out / "log.csv"
        new = not path.is_file()
        with path.open("a", newline="") as f:
            writer = csv.writer(f)
            if new:
                writer.writerow(["step", "loss", "lr"])
            writer.writerow([self.step, f"{loss:.5f}", f"{self._lr():.3g}"])


def _middles(brackets: list[Bracket]) -> tuple[Tensor, Tensor]:
    both = [middle(br) for br in brackets]
    return torch.stack([m[0] for m in both]), torch.stack([m[1] for m in both])


def train_pixel_pass(cfg: PixelPassConfig) -> dict[str, Any]:
    return PixelPassTrainer(cfg).run()
