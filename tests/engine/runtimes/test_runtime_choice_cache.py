"""``--runtime auto`` keeps its decision per device, precision, model and size: identical runs
run the same runtime; a damaged or foreign cache file is ignored, said, and rebuilt."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from app.engine.bi3d.factory import build_model
from app.engine.depth.bi3d import Bi3DEngine
from app.engine.runtimes import chain as chain_module
from app.engine.runtimes.cache import CHOICES_FORMAT, ChoiceStore
from app.engine.runtimes.chain import RuntimeChain
from app.engine.runtimes.torch_runtime import TorchRuntime
from app.engine.types import DepthRequest, Mode

CPU = torch.device("cpu")
REQUEST = DepthRequest(mode=Mode.BINARY, planes=(9,))


class Named(TorchRuntime):
    """The torch runtime under another name; how fast it seems is set by ``timed`` below."""

    def __init__(self, model: Any, name: str) -> None:
        super().__init__(model, CPU)
        self.name = name


@pytest.fixture
def timings(monkeypatch: pytest.MonkeyPatch) -> dict[str, float]:
    """What the probe measures for each runtime (ms), so the choice does not follow the load."""
    measured: dict[str, float] = {}
    monkeypatch.setattr(
        chain_module, "_probe_all", lambda runtimes, left, right: [measured[r.name] for r in runtimes]
    )
    return measured


@pytest.fixture(scope="module")
def model():  # type: ignore[no-untyped-def]
    torch.manual_seed(0)
    return build_model("binary", 0.25).eval()


@pytest.fixture(scope="module")
def pair() -> tuple[np.ndarray, np.ndarray]:
    left = np.random.default_rng(5).integers(0, 255, (96, 160, 3), dtype=np.uint8)
    return left, np.roll(left, -6, axis=1)


def _engine(model: Any, store: ChoiceStore, timings: dict[str, float]) -> Bi3DEngine:
    openers = [(n, lambda n=n: Named(model, n)) for n in ("a", "b")]
    return Bi3DEngine(model, runtime=RuntimeChain(openers, probe=True, key="cpu|fp32|m", store=store))


def test_the_first_decision_is_kept_even_when_the_load_changes(model, pair, tmp_path: Path, timings) -> None:  # type: ignore[no-untyped-def]
    store = ChoiceStore(tmp_path / "choices.json")
    timings.update(a=30.0, b=10.0)
    first = _engine(model, store, timings).compute(*pair, REQUEST)
    assert first.runtime == "b" and first.runtime_choice == "timed"
    timings.update(a=10.0, b=30.0)  # another program now slows b down: the choice stays
    again = _engine(model, ChoiceStore(tmp_path / "choices.json"), timings).compute(*pair, REQUEST)
    assert again.runtime == "b" and again.runtime_choice == "cache"
    assert any("from the cache" in n for n in again.notes)
    np.testing.assert_array_equal(first.probabilities, again.probabilities)
    entry = json.loads((tmp_path / "choices.json").read_text())["choices"]["cpu|fp32|m|192x192"]
    assert entry["runtime"] == "b" and set(entry["timings_ms"]) == {"a", "b"}


def test_a_decision_can_be_timed_again_on_request(model, pair, tmp_path: Path, timings, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    timings.update(a=30.0, b=10.0)
    _engine(model, ChoiceStore(tmp_path / "choices.json"), timings).compute(*pair, REQUEST)  # b, cached
    timings.update(a=10.0, b=30.0)  # b was timed under a passing load
    kept = _engine(model, ChoiceStore(tmp_path / "choices.json"), timings).compute(*pair, REQUEST)
    assert kept.runtime == "b" and any("BI3D_STUDIO_RETIME=1 times them again" in n for n in kept.notes)
    monkeypatch.setenv("BI3D_STUDIO_RETIME", "1")
    again = _engine(model, ChoiceStore(tmp_path / "choices.json"), timings).compute(*pair, REQUEST)
    assert again.runtime == "a" and again.runtime_choice == "timed"
    monkeypatch.delenv("BI3D_STUDIO_RETIME")
    after = _engine(model, ChoiceStore(tmp_path / "choices.json"), timings).compute(*pair, REQUEST)
    assert after.runtime == "a" and after.runtime_choice == "cache"  # the new decision is kept


@pytest.mark.parametrize("content", [b"\xff\xfe{", b'{"format": "someone else"}', b"[1, 2]", b""])
def test_a_damaged_or_foreign_cache_is_ignored_and_rebuilt(  # type: ignore[no-untyped-def]
    model, pair, tmp_path: Path, content: bytes, timings
) -> None:
    path = tmp_path / "choices.json"
    path.write_bytes(content)
    timings.update(a=10.0, b=30.0)
    result = _engine(model, ChoiceStore(path), timings).compute(*pair, REQUEST)
    assert result.runtime == "a" and result.runtime_choice == "timed"
    assert any("damaged or foreign" in n and "rebuilt" in n for n in result.notes)
    data = json.loads(path.read_text())
    assert data["format"] == CHOICES_FORMAT and data["choices"]["cpu|fp32|m|192x192"]["runtime"] == "a"


def test_a_cached_runtime_that_is_not_here_is_timed_again(model, pair, tmp_path: Path, timings) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "choices.json"
    choices = {"cpu|fp32|m|192x192": {"runtime": "tensorrt", "timings_ms": {"tensorrt": 1.0}}}
    path.write_text(json.dumps({"format": CHOICES_FORMAT, "version": 1, "choices": choices}))
    timings.update(a=30.0, b=10.0)
    result = _engine(model, ChoiceStore(path), timings).compute(*pair, REQUEST)
    assert result.runtime == "b" and result.runtime_choice == "timed"


def test_a_chain_without_a_key_times_every_run_and_writes_nothing(
    model, pair, tmp_path: Path, timings
) -> None:  # type: ignore[no-untyped-def]
    timings.update(a=10.0, b=30.0)
    chain = RuntimeChain([(n, lambda n=n: Named(model, n)) for n in ("a", "b")], probe=True)
    result = Bi3DEngine(model, runtime=chain).compute(*pair, REQUEST)
    assert result.runtime == "a" and result.runtime_choice == "timed"
    assert not list(tmp_path.iterdir())


def test_a_cached_choice_opens_that_runtime_alone(model, pair, tmp_path: Path, timings) -> None:  # type: ignore[no-untyped-def]
    # opening a runtime can take seconds (ONNX Runtime imports onnx and loads its sessions):
    # with the choice on disk the others stay closed until one is needed
    store = ChoiceStore(tmp_path / "choices.json")
    timings.update(a=30.0, b=10.0)
    _engine(model, store, timings).compute(*pair, REQUEST)  # times both, keeps "b"
    opened: list[str] = []

    def opener(name: str) -> Named:
        opened.append(name)
        return Named(model, name)

    openers = [(n, lambda n=n: opener(n)) for n in ("a", "b")]
    chain = RuntimeChain(openers, probe=True, key="cpu|fp32|m", store=ChoiceStore(tmp_path / "choices.json"))
    again = Bi3DEngine(model, runtime=chain).compute(*pair, REQUEST)
    assert again.runtime == "b" and again.runtime_choice == "cache" and opened == ["b"]
    # a failure of the chosen one still falls back to the rest, opened then
    assert chain.fail(chain_module.RuntimeFailed("out of memory")) and opened == ["b", "a"]
    assert chain.name == "a"


def test_a_cached_runtime_that_cannot_open_is_skipped_and_the_rest_timed(
    model, pair, tmp_path: Path, timings
) -> None:  # type: ignore[no-untyped-def]
    store = ChoiceStore(tmp_path / "choices.json")
    timings.update(a=30.0, b=10.0)
    _engine(model, store, timings).compute(*pair, REQUEST)  # keeps "b"

    def broken() -> Named:
        raise chain_module.RuntimeUnavailable("b is gone")

    openers = [("a", lambda: Named(model, "a")), ("b", broken)]
    chain = RuntimeChain(openers, probe=True, key="cpu|fp32|m", store=ChoiceStore(tmp_path / "choices.json"))
    result = Bi3DEngine(model, runtime=chain).compute(*pair, REQUEST)
    assert result.runtime == "a"
    assert any("b skipped: b is gone" in n for n in result.notes)


def test_auto_precision_times_bf16_against_fp32_where_bf16_is_native(  # type: ignore[no-untyped-def]
    pair, tmp_path: Path, monkeypatch
) -> None:
    """A CPU with AVX512-BF16 and no AMX ran the default (bf16) slower than fp32: 41 against 35 ms
    a binary plane, 654 against 486 ms a continuous frame. Auto precision now times both on the
    first frame, keeps the faster per machine, and says which ran."""
    from app.engine.bi3d.light import LightBi3D
    from app.engine.depth import bi3d as engine_module
    from app.engine.depth.engines import EngineOptions, bi3d_engine
    from app.engine.runtimes.select import open_runtime

    monkeypatch.setenv("BI3D_STUDIO_CACHE", str(tmp_path))
    monkeypatch.setattr(engine_module, "cpu_has_native_bf16", lambda: True)
    speed = {"bf16": 50.0, "fp32": 40.0}
    monkeypatch.setattr(
        chain_module, "_probe_all", lambda runtimes, left, right: [speed[r.precision] for r in runtimes]
    )
    torch.manual_seed(0)
    light = LightBi3D(width=0.25).eval()

    def run(**options: Any) -> Any:
        return bi3d_engine(light, EngineOptions(runtime="torch", **options)).compute(*pair, REQUEST)

    first = run()
    assert first.precision == "fp32" and first.runtime == "torch" and first.runtime_choice == "timed"
    assert any("torch fp32 40 ms, torch bf16 50 ms" in n for n in first.notes), first.notes
    speed.update(bf16=30.0)  # the load of the moment changes: the machine's decision stays
    again = run()
    assert again.precision == "fp32" and again.runtime_choice == "cache"
    np.testing.assert_array_equal(first.probabilities, again.probabilities)
    named = run(precision="bf16")  # asked for by name: runs as asked, nothing timed
    assert named.precision == "bf16" and named.runtime_choice == ""
    monkeypatch.setenv("BI3D_STUDIO_RETIME", "1")
    assert run().precision == "bf16"  # timed again: bf16 is the faster now
    chain = open_runtime(light, "auto", CPU, "bf16", alternatives=("fp32",))
    assert [label for label, _ in chain._pending] == ["torch bf16", "torch fp32"]
    # as before: its export cost 3 s; said beside the fp32 that may run ("runs fp32 only, not bf16"
    # read as a contradiction there: review)
    said = next(n for n in chain.notes if n.startswith("onnxruntime skipped: auto precision compares"))
    assert "auto precision compares bf16 and fp32 on the runtimes that run both, and onnxruntime runs" in said
    assert "times onnxruntime too" in said
