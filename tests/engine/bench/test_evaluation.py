"""`eval` answers as `depth` does: the default confidence threshold, each model within its reach."""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from app.engine.bench import evaluation
from app.engine.depth.engines import EngineOptions
from app.engine.sources.spec import find_scenes
from app.engine.types import DEFAULT_MIN_CONFIDENCE, DepthRequest, Mode
from tests.engine.fake_results import empty_result


class _Model:
    """A model-based engine that reaches 192 px, recording what it is asked."""

    name = "bi3d"

    def __init__(self) -> None:
        self.model = SimpleNamespace(max_disparity=192)
        self.requests: list[DepthRequest] = []

    def new_stream(self) -> None:
        pass

    def compute(self, left: Any, right: Any, request: DepthRequest) -> Any:
        if request.max_disparity > self.model.max_disparity:
            raise AssertionError("asked past the model's reach")
        self.requests.append(request)
        return empty_result(left, "bi3d", Mode.CONTINUOUS)


def test_a_scene_wider_than_the_model_is_searched_to_its_reach_at_the_default_threshold(
    monkeypatch, demo_dir: Path, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """A Middlebury scene with ndisp=256 was refused for every engine ("this model reaches 192
    px"), and eval scored every Bi3D guess where depth leaves those below 0.1 unknown (review)."""
    scene = tmp_path / "wide"
    shutil.copytree(demo_dir, scene)
    calib = scene / "calib.txt"
    calib.write_text(
        "".join(
            line if not line.startswith("ndisp") else "ndisp=256\n"
            for line in calib.read_text().splitlines(True)
        )
    )
    engine = _Model()
    monkeypatch.setattr(evaluation, "build_engine", lambda options, kind: (engine, ""))
    (row,) = evaluation.evaluate_scenes(find_scenes(scene), ["bi3d"], EngineOptions())
    (request,) = engine.requests
    assert request.max_disparity == 192 and request.min_confidence == DEFAULT_MIN_CONFIDENCE
    assert row.notes[0] == "searched 0-192 px, this model's reach; the scene's range is 0-256 px"
