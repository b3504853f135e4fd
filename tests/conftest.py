"""Shared fixtures. ``--device cuda`` runs the same suite on a GPU; GPU tests skip without CUDA."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch

from app.engine.synthetic.footage import write_footage
from tests.adapt_data import TINY_FOOTAGE

REFERENCE = Path(__file__).parent / "reference" / "bi3d"
DEMO = Path(__file__).resolve().parents[1] / "resources" / "demo" / "motorcycle"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--device", default="cpu", choices=["cpu", "cuda"], help="device for engine tests")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs CUDA")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def device(request: pytest.FixtureRequest) -> str:
    name = str(request.config.getoption("--device"))
    if name == "cuda" and not torch.cuda.is_available():
        pytest.skip("--device cuda given but CUDA is not available")
    if name == "cuda":  # conformance is an fp32 check: no TF32 convolutions or matmuls
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
    return name


@pytest.fixture(scope="session", autouse=True)
def _runtime_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Exported ONNX files and engines go to a temporary cache, not the user's."""
    os.environ["BI3D_STUDIO_CACHE"] = str(tmp_path_factory.mktemp("runtime-cache"))


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A per-test runtime cache: exports and engines start from nothing."""
    root = tmp_path / "cache"
    monkeypatch.setenv("BI3D_STUDIO_CACHE", str(root))
    return root


@pytest.fixture(scope="session")
def reference() -> dict[str, np.ndarray]:
    with np.load(REFERENCE / "bi3d_reference_vectors.npz") as z:
        return {k: z[k] for k in z.files}


@pytest.fixture(scope="session")
def demo_dir() -> Path:
    return DEMO


@pytest.fixture(autouse=True)
def _torch_threads() -> None:
    torch.set_num_threads(max(1, min(2, torch.get_num_threads())))


@pytest.fixture(scope="session")
def reference_model():  # type: ignore[no-untyped-def]
    """Factory: a published-architecture model of a kind, with the reference weights."""
    from app.engine.bi3d.conformance import deterministic_state_dict, load_key_specs
    from app.engine.bi3d.model import Bi3DModel

    specs = load_key_specs(REFERENCE / "state_dict_keys.json")
    cache: dict[str, Bi3DModel] = {}

    def make(kind: str) -> Bi3DModel:
        if kind not in cache:
            model = Bi3DModel(kind)
            model.load_state_dict(deterministic_state_dict(specs[kind]), strict=True)
            cache[kind] = model.eval()
        return cache[kind]

    return make


@pytest.fixture(scope="session")
def key_specs() -> dict[str, list[tuple[str, list[int], str]]]:
    from app.engine.bi3d.conformance import load_key_specs

    return load_key_specs(REFERENCE / "state_dict_keys.json")


@pytest.fixture(scope="module")
def footage(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of ``TINY_FOOTAGE`` (the adapt tests' source), written once per module."""
    folder = tmp_path_factory.mktemp("footage") / "rig"
    assert write_footage(folder, TINY_FOOTAGE) == 10
    return folder
