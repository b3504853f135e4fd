"""Evaluating engines on scenes with ground truth."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from app.engine.depth.engines import EngineOptions, build_engine
from app.engine.depth.sgbm import search_range
from app.engine.errors import UserError, Wording, plain_words, word_settings
from app.engine.metrics import StereoMetrics, evaluate, format_table, to_json_dict
from app.engine.sources.spec import Scene
from app.engine.types import (
    DEFAULT_MAX_DISPARITY,
    DEFAULT_MIN_CONFIDENCE,
    MAX_DISPARITY_LIMIT,
    DepthRequest,
    Mode,
)


@dataclass(frozen=True)
class EvalRow:
    scene: str
    engine: str
    metrics: dict[str, StereoMetrics]
    total_ms: float
    max_disparity: int
    notes: tuple[str, ...] = ()  # what the engine said of the scene (swapped, unrectified, ...)
    runtime: str = ""  # what ran: auto precision may be fp32 or bf16, a cached timing decides
    precision: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "scene": self.scene,
            "engine": self.engine,
            "runtime": self.runtime,
            "precision": self.precision,
            "total_ms": round(self.total_ms, 2),
            "max_disparity": self.max_disparity,
            **to_json_dict(self.metrics),
            "notes": [word_settings(n, plain_words) for n in self.notes],  # no setting marks in JSON
        }


def eval_json(rows: list[EvalRow], skipped: list[tuple[str, str]] | None = None) -> list[dict[str, Any]]:
    """``eval --json``: each scene's row, then each engine's mean over the scenes where there are
    several (``"scene": "mean"``, and how many) and each scene left out (its ``"scene"`` and why,
    ``"left_out"``: the scene was named only inside the reason's words, review): the file held
    neither, nor the runtime, precision and notes the text gives (review)."""
    out = [r.to_json() for r in rows]
    for engine, metrics in mean_rows(rows).items():
        scenes = sum(r.engine == engine for r in rows)  # the rows averaged, per engine
        out.append({"scene": "mean", "engine": engine, "scenes": scenes, **to_json_dict(metrics)})
    out += [{"scene": scene, "left_out": reason} for scene, reason in skipped or ()]
    return out


def scene_max_disparity(ndisp: int | None, override: int | str | None, scene: str = "") -> tuple[int, bool]:
    """Disparity range to search, and whether it is ``auto`` (each frame's estimated reach, at
    most 192 px, as ``depth`` does by default): the user's, else the scene's ``ndisp``, else auto.
    A ``UserError`` names the scene's calib.txt when its ndisp is beyond any search here."""
    if isinstance(override, str):  # "auto"
        return DEFAULT_MAX_DISPARITY, True
    if override is not None:
        return override, False
    if ndisp:
        if search_range(ndisp) > MAX_DISPARITY_LIMIT:  # it read "max disparity 5008 px is outside ..."
            where = f"scene {scene}: " if scene else ""
            raise UserError(
                f"{where}calib.txt's ndisp={ndisp} is beyond the {MAX_DISPARITY_LIMIT} px this app searches; "
                "correct it, or give --max-disparity"
            )
        return search_range(ndisp), False
    return DEFAULT_MAX_DISPARITY, True


def evaluate_scenes(
    scenes: list[Scene],
    engines: list[str],
    options: EngineOptions,
    max_disparity: int | str | None = None,
    skipped: list[tuple[str, str]] | None = None,
    min_confidence: float = DEFAULT_MIN_CONFIDENCE,
) -> list[EvalRow]:
    """Each engine on each scene with ground truth: dense bad-2, EPE and time per scene, at the
    ``depth`` command's defaults (``min_confidence``: Bi3D's answers rated below it are unknown;
    eval had scored them all, so its valid-only row equalled its dense one). A scene whose ndisp
    reaches past a model's reach is searched to that reach, with a note (256 px refused them all).

    ``skipped``: of several scenes, one that cannot be read (ground truth of another size, a
    damaged file) is left out with its reason added here, instead of ending the run with no
    figures for the others; without it, or when every scene fails, its ``UserError`` stands."""
    built = [build_engine(dataclasses.replace(options, engine=name), "continuous_2d")[0] for name in engines]
    rows: list[EvalRow] = []
    failed: list[UserError] = []
    for scene in scenes:
        read: list[str] = []  # what reading the scene noticed (a calibration made for another size)
        try:
            pair, meta = scene.load(read)
            if pair.gt_disparity is None:
                recorded = scene.left.parent.parent / "disparity"  # a recording's frame: its own file
                raise UserError(
                    f"frame {scene.name} has no ground truth ({recorded / (scene.name + '.pfm')} is missing)"
                    if recorded.is_dir()
                    else f"scene {scene.name} has no ground truth (disp0GT.pfm or disp0.pfm, KITTI's "
                    "disp_occ_0); for a pair, give it with --gt FILE"
                )
            top, auto = scene_max_disparity(meta.ndisp if meta else None, max_disparity, scene.name)
        except UserError as exc:
            if skipped is None or len(scenes) == 1:
                raise
            failed.append(exc)
            skipped.append((scene.name, str(exc)))
            continue
        for engine in built:
            reach = engine_reach(engine)
            capped = reach is not None and top > reach and not auto
            request = DepthRequest(
                mode=Mode.CONTINUOUS,
                max_disparity=reach if capped and reach is not None else top,
                auto_range=auto,
                min_confidence=min_confidence,
            )
            engine.new_stream()  # scenes are independent: no range carried from the last one
            result = engine.compute(pair.left, pair.right, request)
            metrics = evaluate(result.disparity, pair.gt_disparity)
            searched = int(result.searched[1]) if result.searched is not None else request.max_disparity
            total = result.timings.get("total", np.nan)
            notes = (*read, *result.notes)
            if capped:
                notes = (
                    f"searched 0-{reach} px, this model's reach; the scene's range is 0-{top} px",
                    *notes,
                )
            rows.append(
                EvalRow(
                    scene.name, engine.name, metrics, total, searched, notes, result.runtime, result.precision
                )
            )
    if failed and not rows:  # nothing to show: the first reason is the error
        raise failed[0]
    return rows


def engine_reach(engine: Any) -> int | None:
    """The deepest disparity a model-based engine answers (Bi3D's trained range), None for a
    matcher without one (SGBM)."""
    model = getattr(engine, "model", None)
    reach = getattr(model, "max_disparity", None)
    return int(reach) if reach is not None else None


EVAL_LEGEND = (
    "EPE: mean |d - truth| in px; bad-N: % of pixels with ground truth off by more than N px; D1: "
    "KITTI's (> 3 px and > 5 %); density: % answered. dense: every pixel with ground truth, one "
    "without an answer counting as wrong (for EPE it is filled from its neighbours, as KITTI does); "
    "valid-only: the answered pixels alone. --json holds fractions, not %."
)


def eval_table(rows: list[EvalRow]) -> str:
    """The figures per scene and engine, with each engine's mean over the scenes where there are
    several, then a legend (EPE's unit, what dense means: its EPE and its bad-1 looked
    contradictory)."""
    table = [(f"{r.scene}/{r.engine}", r.metrics) for r in rows]
    means = mean_rows(rows)
    legend = EVAL_LEGEND
    if means:
        table += [(f"mean/{engine}", metrics) for engine, metrics in means.items()]
        scenes = len({r.scene for r in rows})
        legend += f" mean: each figure averaged over the {scenes} scenes, each scene counting once."
    return format_table(table) + "\n" + legend


def mean_rows(rows: list[EvalRow]) -> dict[str, dict[str, StereoMetrics]]:
    """Per engine with two or more scenes, each figure's mean over its scenes (each scene counts
    once, whatever its size), per kind; {} where no engine has two."""
    by_engine: dict[str, list[EvalRow]] = {}
    for r in rows:
        by_engine.setdefault(r.engine, []).append(r)
    means: dict[str, dict[str, StereoMetrics]] = {}
    for engine, own in by_engine.items():
        if len(own) < 2:
            continue
        kinds = [k for k in own[0].metrics if all(k in r.metrics for r in own)]
        means[engine] = {kind: _mean_metrics([r.metrics[kind] for r in own]) for kind in kinds}
    return means


def _mean_metrics(items: list[StereoMetrics]) -> StereoMetrics:
    values = {
        f.name: float(np.mean([getattr(m, f.name) for m in items]))
        for f in dataclasses.fields(StereoMetrics)
        if f.name != "n_valid_gt"
    }
    return StereoMetrics(**values, n_valid_gt=sum(m.n_valid_gt for m in items))


def eval_notes(rows: list[EvalRow], words: Wording = plain_words) -> list[str]:
    """Each engine note once, with the first scene and engine it was said of (the table alone
    dropped them: a swapped pair was scored without a word), its settings named by ``words``
    (their raw marks were printed: review)."""
    said: dict[str, tuple[str, list[str]]] = {}  # note -> its first scene, the engines said it there
    engines = {r.engine for r in rows}
    for r in rows:
        for note in r.notes:
            scene, of = said.setdefault(note, (r.scene, []))
            if r.scene == scene and r.engine not in of:
                of.append(r.engine)
    # a note every engine was given is the scene's: "left/sgbm" alone read as if Bi3D had no such
    # warning (review)
    return [
        f"note ({scene if set(of) == engines and len(engines) > 1 else f'{scene}/{of[0]}'}): "
        f"{word_settings(note, words)}"
        for note, (scene, of) in said.items()
    ]
