"""benchmarks/train_gpu.py's clock-fitted schedule and its validation fallback, with fakes of the
trainer (the script itself runs on a lent GPU)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest
import torch
from torch import nn

SCRIPT = Path(__file__).resolve().parents[3] / "benchmarks" / "train_gpu.py"


@pytest.fixture(scope="module")
def script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("train_gpu", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["train_gpu"] = module
    spec.loader.exec_module(module)
    return module


class FakeTrainer:
    """``Trainer``'s loop as far as the script touches it: a step costs ``dt`` seconds."""

    def __init__(self, clock: list[float], dt: float) -> None:
        self.cfg = SimpleNamespace(steps=10**6)
        self.step = 0
        self.clock, self.dt = clock, dt

    def train_step(self, *batch: object) -> float:
        self.clock[0] += self.dt
        self.step += 1
        return 0.0

    def run(self) -> int:
        while self.step < self.cfg.steps:
            self.train_step()
        return self.step


def test_the_schedule_ends_at_the_deadline(script: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [0.0]
    monkeypatch.setattr(script.time, "monotonic", lambda: clock[0])
    trainer = FakeTrainer(clock, dt=0.1)  # 10 steps/s
    script._fit_schedule(trainer, 0.0, 120.0)
    steps = trainer.run()
    # the cosine's end is set from the measured rate (20 s kept for the last validation)
    assert 900 <= steps <= 1010
    assert clock[0] <= 120.0


def test_a_resumed_run_fits_its_schedule_too(script: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [0.0]
    monkeypatch.setattr(script.time, "monotonic", lambda: clock[0])
    trainer = FakeTrainer(clock, dt=0.1)
    trainer.step = 5000  # resumed from a run folder's last.pt
    script._fit_schedule(trainer, 0.0, 120.0)
    steps = trainer.run()
    assert 5900 <= steps <= 6010  # the cosine ends at the deadline, not at 10**6 steps


def test_a_run_slower_than_measured_still_stops_at_the_deadline(
    script: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = [0.0]
    monkeypatch.setattr(script.time, "monotonic", lambda: clock[0])
    trainer = FakeTrainer(clock, dt=0.1)
    original = trainer.train_step

    def slower(*batch: object) -> float:
        if trainer.step > 200:
            trainer.dt = 1.0  # the machine got busy after the estimate
        return original(*batch)

    trainer.train_step = slower  # type: ignore[method-assign]
    script._fit_schedule(trainer, 0.0, 60.0)
    trainer.run()
    assert 60.0 < clock[0] <= 62.0  # the step that crossed it, then the last (validated, saved)


def test_a_validation_that_fails_on_the_gpu_is_done_on_a_cpu_copy(
    script: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    model = nn.Linear(2, 1)
    calls: list[tuple[str, bool]] = []

    class Trainer:
        def __init__(self) -> None:
            self.model, self.device = model, torch.device("cuda")

        def validate(self, scenes: list[object]) -> dict[str, float]:
            calls.append((self.device.type, self.model is model))
            if self.device.type == "cuda":
                raise RuntimeError("a CUDA fault")
            return {"val_bad2": 0.5}

    trainer = Trainer()
    script._guard_validation(trainer)
    assert trainer.validate([]) == {"val_bad2": 0.5}
    assert trainer.validate([]) == {"val_bad2": 0.5}  # straight to the CPU from then on
    assert calls == [("cuda", True), ("cpu", False), ("cpu", False)]
    assert trainer.model is model and trainer.device.type == "cuda"  # the training goes on as it was
    assert "a CUDA fault" in capsys.readouterr().err


@pytest.mark.parametrize("gpu_batches", [0, 1], ids=["at the start", "mid-run"])
def test_a_failing_gpu_loader_falls_back_to_cpu_rendering(
    script: ModuleType, capsys: pytest.CaptureFixture[str], gpu_batches: int
) -> None:
    class Trainer:
        cfg = SimpleNamespace(data_device="cuda", workers=12)

        def _batches(self):  # type: ignore[no-untyped-def]
            if self.cfg.data_device == "cuda":
                yield from ["gpu batch"] * gpu_batches
                raise RuntimeError("CUDA error: initialization error")
            yield from ("cpu batch 1", "cpu batch 2")

    trainer = Trainer()
    script._guard_rendering(trainer, 7)
    assert list(trainer._batches()) == ["gpu batch"] * gpu_batches + ["cpu batch 1", "cpu batch 2"]
    assert (trainer.cfg.data_device, trainer.cfg.workers) == ("cpu", 7)
    assert "initialization error" in capsys.readouterr().err


def test_a_cpu_loader_fault_is_not_hidden(script: ModuleType) -> None:
    class CpuTrainer:
        cfg = SimpleNamespace(data_device="cpu", workers=2)

        def _batches(self):  # type: ignore[no-untyped-def]
            yield "cpu batch"
            raise RuntimeError("a CPU loader fault")

    cpu = CpuTrainer()
    script._guard_rendering(cpu, 7)
    with pytest.raises(RuntimeError, match="CPU loader fault"):  # the CPU's own faults are not hidden
        list(cpu._batches())


def test_loader_processes_that_render_on_the_gpu_hand_over_cpu_samples(tmp_path: Path) -> None:
    """The spawned loaders of ``--data-device cuda --workers N``, run here with the training and
    rendering on the CPU (the same processes and hand-over; CUDA itself only on a GPU)."""
    from app.engine.training.trainer import TrainConfig, Trainer

    cfg = TrainConfig(
        out=str(tmp_path / "run"), steps=2, batch=2, planes=2, crop=(96, 192), device="cpu",
        data_device="cuda", workers=1, val_every=1000, val_count=1, save_every=1000,
        rooms_share=0.5, precision="fp32",
    )  # fmt: skip
    trainer = Trainer(cfg)
    left, right, gt = next(trainer._batches())
    assert left.shape == right.shape == (2, 3, 96, 192) and gt.shape == (2, 96, 192)
    assert left.device.type == right.device.type == gt.device.type == "cpu"
