"""Fine-tune a Bi3D model to a user's rig from unlabeled rectified footage.

Method (chosen for a CPU): sparse pseudo-labels from the classical matcher where it is
confident (SGBM, left-right checked: ``pseudo.confident_disparity``), learned with the training
loop's own plane loss, which skips unknown (NaN) pixels. Where there is no label (occlusions,
texture-less surfaces: a third of the pixels) the frozen starting model is the teacher: its
plane probabilities are the targets there (``distill`` weight), so the model keeps what it
knew where the footage cannot teach it (without it, dense bad-2 got worse while the labelled
pixels improved). One step is a forward and backward pass over 8 planes of 4 crops, as in
training, plus the teacher's forward pass: about 0.4 s on a 2-core CPU at 192 x 288. A
self-supervised photometric term would need the model's dense disparity, i.e. every plane of
the range per step (several times the cost), so it is left out; the photometric error and the
left-right consistency are measured instead, before and after, on held-back frames
(``adapt_report``).

A run is resumable and cancellable: every ``save_every`` steps, and when ``cancel`` is set
between steps, the model, the optimizer and the report so far go to ``OUT.partial`` (atomically);
the same call again resumes from there. The result is a project-format checkpoint (what
``--weights`` loads) whose training metadata holds the provenance and the report, and the report
as JSON beside it (``OUT`` with the suffix ``.json``).
"""

from __future__ import annotations

import copy
import datetime
import io
import math
import os
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from app.engine.assets import default_weights
from app.engine.bi3d.checkpoint import load_model, load_tensors, save_checkpoint
from app.engine.bi3d.model import FEATURE_STRIDE, SweepModel
from app.engine.errors import Interrupted, UserError
from app.engine.fileio import atomic_write, write_json
from app.engine.training.adapt_data import Footage, batch, crop_size, prepare
from app.engine.training.adapt_report import adapt_warning, report
from app.engine.training.losses import monotone_penalty, plane_loss, sample_planes
from app.engine.training.trainer import TrainingForward

METHOD = "sgbm-lr-pseudo-labels+plane-loss"
PARTIAL_FORMAT = "bi3d-studio-adapt-partial"


@dataclass(frozen=True)
class AdaptConfig:
    source: str
    out: str
    weights: str | None = None  # None: the bundled model
    steps: int = 600
    minutes: float = 9.0  # training time budget (the reports before and after come on top)
    frames: int = 300  # frames read from the source, spread over it
    eval_frames: int = 16  # held-back frames the report is measured on
    batch: int = 4
    planes: int = 8
    lr: float = 1e-3
    distill: float = 0.3  # weight of the teacher's targets on unlabelled pixels (0: none)
    warmup: int = 20
    save_every: int = 50
    seed: int = 0
    calib: str | None = None  # the rig's calibration: a raw rig's frames are rectified first

    def __post_init__(self) -> None:
        for name in ("steps", "frames", "eval_frames", "batch", "planes", "save_every"):
            if getattr(self, name) < 1:
                raise UserError(f"adapt {name} must be at least 1, got {getattr(self, name)}")
        if not (self.minutes > 0 and math.isfinite(self.minutes)):
            raise UserError(f"adapt minutes must be a positive number, got {self.minutes}")
        if self.frames < 2:
            raise UserError("adapt needs at least 2 frames (to learn from and to check on)")

    @property
    def partial(self) -> Path:
        return Path(self.out + ".partial")

    @property
    def report_path(self) -> Path:
        return Path(self.out).with_suffix(".json")

    def fingerprint(self) -> dict[str, Any]:
        """What a resumed run must share with the run that left the partial checkpoint."""
        keep = (
            "source",
            "weights",
            "frames",
            "batch",
            "planes",
            "lr",
            "warmup",
            "seed",
            "steps",
            "distill",
            "calib",
        )
        return canonical_paths({k: getattr(self, k) for k in keep})


def canonical_path(spec: str | None) -> str | None:
    """An existing file or folder as its absolute path (``pairs``, ``./pairs/`` and
    ``/tmp/x/pairs`` are one source); anything else (a camera, a synthetic spec) as given."""
    if spec is None:
        return None
    try:
        path = Path(spec).expanduser()
        return str(path.resolve()) if path.exists() else spec
    except (OSError, RuntimeError, ValueError):
        return spec


def canonical_paths(fingerprint: dict[str, Any]) -> dict[str, Any]:
    """A fingerprint with its source and weights as ``canonical_path`` gives them (a resume from
    another folder, or with the path typed another way, was refused as "other settings")."""
    out = dict(fingerprint)
    for key in ("source", "weights", "calib"):
        if isinstance(out.get(key), str):
            out[key] = canonical_path(out[key])
    return out


@dataclass(frozen=True)
class AdaptProgress:
    stage: str  # reading, labelling, before, training, after, saving, done
    done: int
    total: int
    message: str
    loss: float | None = None


ProgressFn = Callable[[AdaptProgress], None]


@dataclass
class AdaptResult:
    out: Path
    report_path: Path
    steps: int
    elapsed_s: float
    before: dict[str, float]
    after: dict[str, float]
    provenance: dict[str, Any] = field(default_factory=dict)

    @property
    def warning(self) -> str | None:
        """What the user must hear before using the model (``adapt_report.adapt_warning``)."""
        return adapt_warning(self.before, self.after)


class AdaptCancelled(UserError):
    """The run was stopped between steps; its partial checkpoint says where to resume."""


def check_output(path: str | Path) -> None:
    """Refuse, before any work, an output that cannot be written (a folder, a read-only folder or
    file); a missing folder is created, as the other commands' outputs are."""
    target = Path(path)
    if target.is_dir():
        raise UserError(f"--out {target} is a folder; give a file name, e.g. {target / 'adapted.pt'}")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(
            f"cannot create the folder of --out {target} ({exc.strerror}); choose a folder you can write to"
        ) from None
    if target.exists() and not os.access(target, os.W_OK):
        raise UserError(f"--out {target} is read-only; choose another file or make it writable")
    try:
        fd, probe = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".probe")
    except OSError as exc:
        raise UserError(
            f"cannot write in {target.parent} ({exc.strerror}); choose a folder you can write to"
        ) from None
    os.close(fd)
    os.unlink(probe)


def load_base(weights: str | None) -> tuple[SweepModel, str, dict[str, Any]]:
    """The model to adapt (``weights`` or the bundled one), its path and its training metadata."""
    path = Path(weights) if weights else default_weights()
    if path is None:
        raise UserError("this build has no bundled model; give --weights FILE")
    if path.is_file():
        data = load_tensors(path)
        if isinstance(data, dict) and "optimizer" in data and "state_dict" not in data:
            raise UserError(
                f"{path} is a training state (optimizer and step), not a model; "
                "give the run's last.pt or best.pt"
            )
        if isinstance(data, dict) and data.get("format") == PARTIAL_FORMAT:
            raise UserError(f"{path} is an unfinished adaptation; rerun its adapt command to finish it")
    model, info = load_model(path)
    if model.has_disp_refine:
        raise UserError(
            f"{path} is a {info.kind.value} model; adapt fine-tunes the binary kinds (light, binary)"
        )
    return model, str(path), dict(info.training)


class Adapter:
    """One adaptation run: ``run()`` prepares, reports, trains, reports again and saves."""

    def __init__(
        self, cfg: AdaptConfig, progress: ProgressFn | None = None, cancel: threading.Event | None = None
    ) -> None:
        self.cfg = cfg
        self.progress = progress or (lambda p: None)
        self.cancel = cancel or threading.Event()
        check_output(cfg.out)
        self.model, self.base_path, self.base_training = load_base(cfg.weights)
        self.teacher = TrainingForward(copy.deepcopy(self.model).eval())  # the starting point, frozen
        self.teacher.requires_grad_(False)
        self.model.train()
        self.forward = TrainingForward(self.model)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=cfg.lr, weight_decay=1e-4)
        self.step, self.elapsed = 0, 0.0
        self.losses: list[float] = []
        self.before: dict[str, float] | None = None

    # ---- the run ----------------------------------------------------------------------------
    def run(self) -> AdaptResult:
        cfg = self.cfg
        t0 = time.perf_counter()
        self._say("reading", 0, cfg.frames, f"reading up to {cfg.frames} frames of {cfg.source}")
        try:
            footage = prepare(
                cfg.source,
                cfg.frames,
                self.model.max_disparity,
                self.cancel,
                lambda i, n: self._say("labelling", i, n, f"confident classical pixels: frame {i} of {n}"),
                cfg.calib,
            )
        except Interrupted:
            self._stopped()
        top = footage.scene_range(self.model.max_disparity)
        held, held_labels = self._eval_set(footage)
        resumed = self._resume()
        if self.before is None:
            self.before = self._report("before", held, held_labels, top)
            self._save_partial()
        self._train(footage, top)
        after = self._report("after", held, held_labels, top)
        result = self._save(footage, top, after, time.perf_counter() - t0, resumed)
        self._say("done", cfg.steps, cfg.steps, f"wrote {result.out} and {result.report_path}")
        return result

    def _eval_set(self, footage: Footage) -> tuple[list[Any], list[Any]]:
        n = len(footage.held)
        keep = sorted(
            {round(i * (n - 1) / max(1, self.cfg.eval_frames - 1)) for i in range(self.cfg.eval_frames)}
        )
        keep = [k for k in keep if k < n][: self.cfg.eval_frames]
        return [footage.held[k] for k in keep], [footage.held_labels[k] for k in keep]

    def _report(self, stage: str, held: list[Any], labels: list[Any], top: int) -> dict[str, float]:
        def frame(i: int) -> None:
            self._say(stage, i, len(held), f"{stage}: held-back frame {i} of {len(held)}")

        try:
            return report(self.model, held, labels, top, self.cancel, frame)
        except Interrupted:
            self._stopped()

    def _train(self, footage: Footage, top: int) -> None:
        cfg = self.cfg
        crop = crop_size(*footage.size)
        if min(crop) < self.model.min_size:
            raise UserError(
                f"{footage.description}: {footage.size[1]}x{footage.size[0]} frames are too small for a "
                f"{self.model.kind.value} model (crops of {self.model.min_size} px a side)"
            )
        start = time.perf_counter() - self.elapsed
        self.model.train()
        while self.step < cfg.steps and self.elapsed < cfg.minutes * 60:
            if self.cancel.is_set():
                self._stopped()
            loss = self._step(footage, crop, top)
            self.losses.append(loss)
            self.elapsed = time.perf_counter() - start
            eta = min(
                (cfg.steps - self.step) * self.elapsed / max(1, self.step), cfg.minutes * 60 - self.elapsed
            )
            self._say(
                "training",
                self.step,
                cfg.steps,
                f"step {self.step} of {cfg.steps}, eta {eta / 60:.1f} min",
                loss,
            )
            if self.step % cfg.save_every == 0:
                self._save_partial()

    def _step(self, footage: Footage, crop: tuple[int, int], top: int) -> float:
        cfg = self.cfg
        g = torch.Generator().manual_seed(cfg.seed * 1_000_003 + self.step)  # a resumed run draws alike
        left, right, labels = batch(footage, cfg.batch, crop, g)
        left, right = ((t - 0.5) / 0.5 for t in (left, right))
        planes = sample_planes(labels, cfg.planes, top, g)
        for group in self.opt.param_groups:
            group["lr"] = self._lr()
        out = self.forward(left, right, planes / FEATURE_STRIDE)
        low = F.interpolate(out["low"].float(), labels.shape[-2:], mode="bilinear", align_corners=False)
        loss = 0.5 * plane_loss(low, labels, planes)
        loss = loss + plane_loss(out["full"], labels, planes) + 0.1 * monotone_penalty(out["full"])
        if cfg.distill > 0:
            with torch.no_grad():
                taught = torch.sigmoid(self.teacher(left, right, planes / FEATURE_STRIDE)["full"].float())
            loss = loss + cfg.distill * teacher_loss(out["full"], taught, ~torch.isfinite(labels))
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.opt.step()
        self.step += 1
        return float(loss.detach())

    def _lr(self) -> float:
        """Linear warm-up, then a cosine from ``lr`` down to a tenth of it, over whichever budget
        runs out first (steps or minutes): on a busy machine the time budget ends the run, and
        the rate has come down by then all the same."""
        cfg = self.cfg
        if self.step < cfg.warmup:
            return cfg.lr * (self.step + 1) / cfg.warmup
        by_steps = (self.step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
        progress = min(1.0, max(by_steps, self.elapsed / (cfg.minutes * 60)))
        return cfg.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))

    # ---- checkpoints ------------------------------------------------------------------------
    def _save_partial(self) -> None:
        payload = {
            "format": PARTIAL_FORMAT,
            "fingerprint": self.cfg.fingerprint(),
            "step": self.step,
            "elapsed_s": self.elapsed,
            "losses": self.losses[-1000:],
            "before": self.before or {},
            "state_dict": {k: v.detach().cpu() for k, v in self.model.state_dict().items()},
            "optimizer": self.opt.state_dict(),
        }
        buffer = io.BytesIO()
        torch.save(payload, buffer)
        atomic_write(self.cfg.partial, buffer.getvalue())

    def _resume(self) -> bool:
        path = self.cfg.partial
        if not path.is_file():
            return False
        advice = f"delete {path} to start afresh"
        data = load_tensors(path, advice)
        if not isinstance(data, dict) or data.get("format") != PARTIAL_FORMAT:
            raise UserError(f"{path} is not an adaptation checkpoint; {advice}")
        saved, now = data.get("fingerprint"), self.cfg.fingerprint()
        if isinstance(saved, dict):  # an older checkpoint kept the paths as typed
            saved = canonical_paths(saved)
        if saved != now:
            old = saved if isinstance(saved, dict) else {}
            changed = [f"{k} {old.get(k)!r} then, {v!r} now" for k, v in now.items() if old.get(k) != v]
            which = f" ({'; '.join(changed[:3])})" if changed else ""
            raise UserError(
                f"{path} belongs to an adaptation with other settings{which}; {advice} or rerun that one"
            )
        try:
            self.model.load_state_dict(data["state_dict"], strict=True)
            self.opt.load_state_dict(data["optimizer"])
        except (KeyError, RuntimeError, ValueError) as exc:
            raise UserError(f"{path} does not fit the model ({exc}); {advice}") from None
        self.step, self.elapsed = int(data["step"]), float(data["elapsed_s"])
        self.losses = [float(v) for v in data.get("losses", [])]
        self.before = dict(data["before"]) or None
        self._say("training", self.step, self.cfg.steps, f"resuming from step {self.step} ({path})")
        return True

    def _stopped(self) -> NoReturn:
        """Cancelled between steps: keep what was learnt and say how to go on."""
        if self.before is None:
            if self.cfg.partial.is_file():  # stopped while reading: the earlier progress stays
                raise AdaptCancelled(
                    f"adaptation stopped; {self.cfg.partial} is kept: run the same adaptation again to resume"
                )
            raise AdaptCancelled("adaptation stopped before training began; nothing to resume")
        self._save_partial()
        raise AdaptCancelled(
            f"adaptation stopped at step {self.step} of {self.cfg.steps}; the progress is kept in "
            f"{self.cfg.partial}: run the same adaptation again (same command, or the window's Adapt "
            "to the same file) to resume"
        )

    def _save(
        self, footage: Footage, top: int, after: dict[str, float], wall_s: float, resumed: bool
    ) -> AdaptResult:
        cfg = self.cfg
        self._say("saving", 0, 1, f"writing {cfg.out}")
        assert self.before is not None
        provenance = {
            "method": METHOD,
            "source": canonical_path(cfg.source),
            "source_description": footage.description,
            "frames": len(footage.train) + len(footage.held),
            "train_frames": len(footage.train),
            "held_back_frames": len(footage.held),
            "frame_size": list(footage.size),
            "steps": self.step,
            "base_model": self.base_path,
            "base_training_step": self.base_training.get("step"),
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "disparity_range_px": top,
            "vertical_offset_px": footage.vertical_offset_px,
            "train_elapsed_s": round(self.elapsed, 1),
            "resumed": resumed,
            "final_loss": sum(self.losses[-20:]) / max(1, len(self.losses[-20:])),
            "config": asdict(cfg),
            "report": {"before": self.before, "after": after},
        }
        save_checkpoint(cfg.out, self.model, provenance)
        load_model(cfg.out)  # it must load again as --weights
        write_json(cfg.report_path, _finite(provenance))
        cfg.partial.unlink(missing_ok=True)
        return AdaptResult(Path(cfg.out), cfg.report_path, self.step, wall_s, self.before, after, provenance)

    def _say(self, stage: str, done: int, total: int, message: str, loss: float | None = None) -> None:
        self.progress(AdaptProgress(stage, done, total, message, loss))


def teacher_loss(logits: Tensor, targets: Tensor, where: Tensor) -> Tensor:
    """BCE of B x K x H x W logits against the teacher's probabilities, on the B x H x W pixels
    ``where`` is true (those without a pseudo-label)."""
    mask = where[:, None].expand_as(logits).float()
    loss = F.binary_cross_entropy_with_logits(logits.float(), targets, reduction="none")
    return (loss * mask).sum() / mask.sum().clamp_min(1)


def adapt(
    cfg: AdaptConfig, progress: ProgressFn | None = None, cancel: threading.Event | None = None
) -> AdaptResult:
    """Run one adaptation (see the module docstring); ``AdaptCancelled`` when ``cancel`` stops it."""
    return Adapter(cfg, progress, cancel).run()


def _finite(value: Any) -> Any:
    """``value`` with NaN and infinities as None (JSON has no NaN)."""
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
