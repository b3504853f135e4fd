"""A stand-in for the ``tensorrt`` module: the TensorRT 10/11 Python API names this project uses,
backed by onnxruntime on the CPU.

A "plan" is a JSON header and the ONNX bytes. Execution reads inputs from the addresses given
to ``set_tensor_address`` (CPU tensors here) and writes outputs there, so the runtime's buffer
handling is exercised as with the real library. Input shapes outside the optimisation profile
fail like TensorRT does. ``make(version)`` builds a module for a TensorRT major version:
"11" has no precision builder flags (strong typing only).
"""

from __future__ import annotations

import ctypes
import enum
import json
import types
from typing import Any

import numpy as np
import onnx
import onnxruntime


def make(version: str = "10.9.0") -> types.ModuleType:
    trt = types.ModuleType("tensorrt")
    trt.__version__ = version
    major = int(version.split(".")[0])
    trt.drop_fp16 = False  # set to build "fp16" engines that hold no fp16 layer
    trt.calls = {"builds": 0, "flags": [], "cleared": [], "network_flags": [], "profiles": [], "phases": []}

    class Logger:
        WARNING = 2

        def __init__(self, severity: int = 2) -> None:
            self.severity = severity

    builder_flags = {"TF32": 7} if major >= 11 else {"FP16": 0, "TF32": 7}
    trt.BuilderFlag = enum.IntEnum("BuilderFlag", builder_flags)
    trt.NetworkDefinitionCreationFlag = enum.IntEnum("NetworkDefinitionCreationFlag", {"STRONGLY_TYPED": 1})
    trt.ProfilingVerbosity = enum.IntEnum("ProfilingVerbosity", {"LAYER_NAMES_ONLY": 0, "DETAILED": 2})
    trt.TensorIOMode = enum.IntEnum("TensorIOMode", {"NONE": 0, "INPUT": 1, "OUTPUT": 2})
    trt.DataType = enum.IntEnum("DataType", {"FLOAT": 0, "HALF": 1, "INT32": 3, "INT64": 10})
    trt.LayerInformationFormat = enum.IntEnum("LayerInformationFormat", {"ONELINE": 0, "JSON": 1})

    class IProgressMonitor:
        def __init__(self) -> None:
            pass

    class Network:
        def __init__(self, flags: int) -> None:
            self.flags, self.onnx = flags, b""

    class OnnxParser:
        def __init__(self, network: Network, logger: Logger) -> None:
            self.network, self.errors = network, []

        def parse(self, data: bytes) -> bool:
            try:
                onnx.load_from_string(data)
            except Exception as exc:
                self.errors.append(str(exc))
                return False
            self.network.onnx = data
            return True

        @property
        def num_errors(self) -> int:
            return len(self.errors)

        def get_error(self, index: int) -> str:
            return self.errors[index]

    class Profile:
        def __init__(self) -> None:
            self.shapes: dict[str, tuple[Any, ...]] = {}

        def set_shape(self, name: str, low: Any, opt: Any, high: Any) -> None:
            self.shapes[name] = (tuple(low), tuple(opt), tuple(high))

    class TimingCache:
        def __init__(self, data: bytes) -> None:
            self.data = data

        def serialize(self) -> bytes:
            return self.data + b"+"

    class Config:
        def __init__(self) -> None:
            self.flags: set[int] = {int(trt.BuilderFlag.TF32)}
            self.profiles: list[Profile] = []
            self.progress_monitor: Any = None
            self.profiling_verbosity = trt.ProfilingVerbosity.LAYER_NAMES_ONLY
            self.timing: TimingCache | None = None

        def set_flag(self, flag: Any) -> None:
            trt.calls["flags"].append(flag.name)
            self.flags.add(int(flag))

        def clear_flag(self, flag: Any) -> None:
            trt.calls["cleared"].append(flag.name)
            self.flags.discard(int(flag))

        def add_optimization_profile(self, profile: Profile) -> int:
            self.profiles.append(profile)
            return len(self.profiles) - 1

        def create_timing_cache(self, data: bytes) -> TimingCache:
            return TimingCache(bytes(data))

        def set_timing_cache(self, cache: TimingCache, ignore_mismatch: bool) -> bool:
            self.timing = cache
            return True

        def get_timing_cache(self) -> TimingCache | None:
            return self.timing

    class Builder:
        def __init__(self, logger: Logger) -> None:
            self.logger = logger

        def create_network(self, flags: int = 0) -> Network:
            trt.calls["network_flags"].append(flags)
            return Network(flags)

        def create_builder_config(self) -> Config:
            return Config()

        def create_optimization_profile(self) -> Profile:
            return Profile()

        def build_serialized_network(self, network: Network, config: Config) -> bytes | None:
            trt.calls["builds"] += 1
            monitor = config.progress_monitor
            if monitor is not None:
                monitor.phase_start("Building engine", None, 2)
                monitor.step_complete("Building engine", 0)
                monitor.phase_finish("Building engine")
                trt.calls["phases"].append("Building engine")
            profile = config.profiles[0].shapes
            trt.calls["profiles"].append(profile)
            fp16 = "FP16" in builder_flags and int(trt.BuilderFlag.FP16) in config.flags and not trt.drop_fp16
            header = {"version": trt.__version__, "fp16": fp16, "profile": profile}
            return json.dumps(header).encode() + b"\0" + network.onnx

    class Inspector:
        def __init__(self, engine: Engine) -> None:
            self.engine = engine

        def get_engine_information(self, fmt: Any) -> str:
            fmt_name = "Half" if self.engine.header["fp16"] else "Float"
            return json.dumps({"Layers": [{"Name": "conv", "Outputs": [{"Format/Datatype": fmt_name}]}]})

    class Engine:
        def __init__(self, header: dict[str, Any], data: bytes) -> None:
            self.header, self.data = header, data
            graph = onnx.load_from_string(data).graph
            self.inputs = [i.name for i in graph.input]
            kinds = {i.name: i.type.tensor_type.elem_type for i in [*graph.input, *graph.output]}
            self.names = [*self.inputs, *(o.name for o in graph.output)]
            half = onnx.TensorProto.FLOAT16
            self.types = {
                n: trt.DataType.HALF if kinds[n] == half else trt.DataType.FLOAT for n in self.names
            }

        @property
        def num_io_tensors(self) -> int:
            return len(self.names)

        def get_tensor_name(self, index: int) -> str:
            return self.names[index]

        def get_tensor_mode(self, name: str) -> Any:
            return trt.TensorIOMode.INPUT if name in self.inputs else trt.TensorIOMode.OUTPUT

        def get_tensor_dtype(self, name: str) -> Any:
            return self.types[name]

        def create_execution_context(self) -> Context:
            return Context(self)

        def create_engine_inspector(self) -> Inspector:
            return Inspector(self)

    class Context:
        def __init__(self, engine: Engine) -> None:
            self.engine = engine
            self.session = onnxruntime.InferenceSession(engine.data, providers=["CPUExecutionProvider"])
            self.shapes: dict[str, tuple[int, ...]] = {}
            self.addresses: dict[str, int] = {}
            self.results: dict[str, np.ndarray] | None = None

        def set_input_shape(self, name: str, shape: Any) -> bool:
            low, _, high = self.engine.header["profile"][name]
            shape = tuple(shape)
            if any(s < lo or s > hi for s, lo, hi in zip(shape, low, high, strict=True)):
                raise RuntimeError(f"{name} shape {shape} outside the profile [{low}, {high}]")
            self.shapes[name] = shape
            self.results = None
            return True

        def set_tensor_address(self, name: str, address: int) -> bool:
            self.addresses[name] = address
            if name in self.engine.inputs:
                self.results = None
            return True

        def get_tensor_shape(self, name: str) -> tuple[int, ...]:
            if name in self.engine.inputs:
                return self.shapes[name]
            return tuple(self._outputs()[name].shape)

        def execute_async_v3(self, stream_handle: int) -> bool:
            for name, array in self._outputs().items():
                data = np.ascontiguousarray(array)
                ctypes.memmove(self.addresses[name], data.ctypes.data, data.nbytes)
            return True

        def _outputs(self) -> dict[str, np.ndarray]:
            if self.results is None:
                feeds = {n: self._read(n) for n in self.engine.inputs}
                names = [n for n in self.engine.names if n not in self.engine.inputs]
                self.results = dict(zip(names, self.session.run(names, feeds), strict=True))
            return self.results

        def _read(self, name: str) -> np.ndarray:
            dtype = np.float16 if self.engine.types[name] == trt.DataType.HALF else np.float32
            shape = self.shapes[name]
            count = int(np.prod(shape)) * np.dtype(dtype).itemsize
            raw = (ctypes.c_byte * count).from_address(self.addresses[name])
            return np.frombuffer(raw, dtype=np.uint8).view(dtype).reshape(shape).copy()

    class Runtime:
        def __init__(self, logger: Logger) -> None:
            self.logger = logger

        def deserialize_cuda_engine(self, data: bytes) -> Engine | None:
            head, sep, body = bytes(data).partition(b"\0")
            try:
                header = json.loads(head)
            except ValueError:
                return None
            if not sep or header.get("version") != trt.__version__:
                return None
            return Engine(header, body)

    trt.Logger, trt.Builder, trt.OnnxParser, trt.Runtime = Logger, Builder, OnnxParser, Runtime
    trt.IProgressMonitor = IProgressMonitor
    return trt
