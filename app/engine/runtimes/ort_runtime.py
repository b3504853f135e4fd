"""ONNX Runtime: the exported stages on the CPU, or on CUDA / TensorRT execution providers
when onnxruntime-gpu is installed.

On the CPU, tensors cross as NumPy views (no copies). On CUDA the inputs are bound by device
pointer; outputs come back through the host (one copy each way per stage), which is simple and
correct but leaves speed on the table: the torch CUDA path and TensorRT do not pay it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from app.engine.bi3d.model import SweepModel
from app.engine.runtimes.base import RuntimeFailed, RuntimeUnavailable, optional_module
from app.engine.runtimes.onnx_export import check_onnx, model_fingerprint
from app.engine.runtimes.staged import StagedRuntime

GPU_PROVIDERS = ("TensorrtExecutionProvider", "CUDAExecutionProvider")


def import_onnxruntime() -> Any:
    return optional_module("onnxruntime", "onnxruntime is not installed (pip install onnxruntime)")


def providers_for(device: torch.device, available: list[str]) -> list[str]:
    """Execution providers in preference order for a device; RuntimeUnavailable if none fits."""
    if device.type == "cpu":
        return ["CPUExecutionProvider"]
    gpu = [p for p in GPU_PROVIDERS if p in available]
    if not gpu:
        raise RuntimeUnavailable(
            "onnxruntime has no CUDA provider here; the CPU package hides the GPU one when both are "
            "installed: pip uninstall -y onnxruntime onnxruntime-gpu && pip install onnxruntime-gpu"
        )
    return [*gpu, "CPUExecutionProvider"]


class OrtRuntime(StagedRuntime):
    """One ``InferenceSession`` per stage."""

    name = "onnxruntime"

    def __init__(
        self, graphs: dict[str, bytes | Path], device: torch.device, threads: int | None = None
    ) -> None:
        ort = import_onnxruntime()
        self.providers = providers_for(device, list(ort.get_available_providers()))
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = threads or torch.get_num_threads()
        options.log_severity_level = 3  # errors only: provider fallbacks are reported by us
        # idle worker threads would otherwise spin after each run and slow the torch readout
        # that follows (measured: 5 s instead of 50 ms on a 2-core machine)
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.sessions: dict[str, Any] = {}
        # what this runtime loads: the ONNX files (or in-memory graphs), for size reports
        self.size_bytes = sum(g.stat().st_size if isinstance(g, Path) else len(g) for g in graphs.values())
        for stage, graph in graphs.items():
            source = str(graph) if isinstance(graph, Path) else graph
            try:
                self.sessions[stage] = ort.InferenceSession(source, options, providers=self.providers)
            except Exception as exc:
                raise RuntimeUnavailable(
                    f"onnxruntime could not load the {stage} stage: {_first_line(exc)}"
                ) from exc
        inputs = {stage: tuple(i.name for i in s.get_inputs()) for stage, s in self.sessions.items()}
        super().__init__(device, "fp32", inputs)
        self.outputs = {stage: [o.name for o in s.get_outputs()] for stage, s in self.sessions.items()}

    @classmethod
    def from_directory(
        cls, directory: str | Path, model: SweepModel, device: torch.device, threads: int | None = None
    ) -> OrtRuntime:
        """Exported files (``bi3d-studio export --onnx DIR``), checked against the loaded model."""
        folder = Path(directory)
        graphs: dict[str, bytes | Path] = {}
        fingerprint = model_fingerprint(model)
        for path in sorted(folder.glob("*.onnx")):
            if path.name.endswith(".fp16.onnx"):
                continue
            stage = path.stem
            check_onnx(path, model, stage, fingerprint=fingerprint)
            graphs[stage] = path
        if not graphs:
            raise RuntimeUnavailable(f"no ONNX files in {folder}; run bi3d-studio export --onnx {folder}")
        return cls(graphs, device, threads)

    def _run(self, stage: str, feeds: dict[str, Tensor]) -> dict[str, Tensor]:
        session = self.sessions[stage]
        try:
            if self.device == "cpu":
                arrays = {k: v.detach().contiguous().numpy() for k, v in feeds.items()}
                results = session.run(self.outputs[stage], arrays)
            else:
                results = self._run_bound(session, stage, feeds)
        except RuntimeFailed:
            raise
        except Exception as exc:  # onnxruntime raises its own pybind types
            raise RuntimeFailed(f"onnxruntime failed in {stage}: {_first_line(exc)}") from exc
        return {
            name: torch.from_numpy(np.asarray(r)).to(self._device)
            for name, r in zip(self.outputs[stage], results, strict=True)
        }

    def _run_bound(self, session: Any, stage: str, feeds: dict[str, Tensor]) -> list[np.ndarray]:
        binding = session.io_binding()
        kept = []
        for name, tensor in feeds.items():
            t = tensor.detach().float().contiguous()
            kept.append(t)
            binding.bind_input(name, "cuda", t.device.index or 0, np.float32, tuple(t.shape), t.data_ptr())
        for name in self.outputs[stage]:
            binding.bind_output(name, "cuda")
        torch.cuda.synchronize(self._device)
        session.run_with_iobinding(binding)
        return list(binding.copy_outputs_to_cpu())

    def describe(self) -> str:
        threads = self.sessions["featnet"].get_session_options().intra_op_num_threads
        return f"onnxruntime on {self.device} ({', '.join(self.providers)}; {threads} threads), fp32"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:200]
