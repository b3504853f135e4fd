"""`bi3d-studio eval`: metrics against ground truth, dense and valid-only."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

from app import vocabulary
from app.commands.arguments import real, report_file, whole
from app.commands.common import add_engine_args, add_setting, engine_options, parse_list
from app.engine.errors import UserError
from app.engine.fileio import write_json
from app.engine.types import ENGINES


def run(args: argparse.Namespace) -> int:
    from app.engine.assets import default_weights
    from app.engine.bench.evaluation import eval_json, eval_notes, eval_table, evaluate_scenes
    from app.engine.sources.recording import is_recording
    from app.engine.sources.recording_index import looks_like_recording
    from app.engine.sources.spec import Scene, find_scenes, scenes_from_source

    if args.frames is not None and args.frames < 1:
        raise UserError(f"--frames must be at least 1, got {args.frames}")
    folder = args.right is None and Path(args.path).is_dir()
    folder = folder and not (is_recording(Path(args.path)) or looks_like_recording(Path(args.path)))
    if args.gt_scale is not None and args.gt is None and not folder:
        raise UserError("--gt-scale goes with a PNG ground truth: a pair's --gt FILE, or a dataset folder's")
    if args.right is None and args.gt is not None and Path(args.path).is_file():
        raise UserError(f"the right image is missing: give LEFT RIGHT --gt FILE ({args.path} is one image)")
    if args.right is None and args.gt is not None:  # it was ignored: the scenes' own truth was used
        raise UserError(
            "--gt FILE goes with a pair (LEFT RIGHT --gt FILE); a scene folder, dataset or source "
            "brings its own ground truth"
        )
    if args.right is not None and args.frames is not None:
        raise UserError("--frames counts the scenes of a folder or the frames of a source; a pair is one")
    if args.right is not None:
        if args.gt is None:
            raise UserError("evaluating a pair needs --gt FILE (PFM or KITTI PNG)")
        left = Path(args.path)
        # a Middlebury scene's own im0/im1 pair: its calib.txt beside them (ndisp, as the folder form)
        beside = left.parent / "calib.txt"
        middlebury = (
            left.name == "im0.png" and Path(args.right) == left.parent / "im1.png" and beside.is_file()
        )
        calib = beside if middlebury else None
        scenes = [Scene(left.stem, left, Path(args.right), Path(args.gt), calib, gt_scale=args.gt_scale)]
        _refuse_swapped_pair(scenes[0])
    elif folder:
        scenes = find_scenes(args.path)[: args.frames]  # datasets keep their scene names and ndisp
        if args.gt_scale is not None:  # its 8-bit maps (the error reading one says to give it)
            scenes = [dataclasses.replace(s, gt_scale=args.gt_scale) for s in scenes]
    else:
        scenes = scenes_from_source(args.path, args.frames)  # any source whose frames carry GT
    if args.engines:
        engines = list(dict.fromkeys(parse_list(args.engines, str)))  # sgbm,sgbm ran it twice
    else:
        engines = ["sgbm"] + (["bi3d"] if args.weights or default_weights() else [])
    for name in engines:
        if name not in ENGINES:
            raise UserError(f"unknown engine {name!r}; use one of {', '.join(ENGINES)}")
    if args.max_disparity is None:
        guessed = [s.name for s in scenes if s.calib is None and (s.left.parent / "im0.png") == s.left]
        if guessed:
            names = ", ".join(guessed[:3]) + (f" and {len(guessed) - 3} more" if len(guessed) > 3 else "")
            print(f"note: no calib.txt in {names}: searched with --max-disparity auto (its ndisp unknown)")
    skipped: list[tuple[str, str]] = []
    rows = evaluate_scenes(
        scenes, engines, engine_options(args), args.max_disparity, skipped, args.min_confidence
    )
    print(eval_table(rows))
    for line in eval_notes(rows, vocabulary.cli_words):
        print(line)
    for scene, reason in skipped:
        print(f"note: scene {scene} left out: {reason}")
    if args.json:
        write_json(args.json, eval_json(rows, skipped))
        print(f"wrote {args.json}")
    return 0


def _refuse_swapped_pair(scene: Any) -> None:
    """A pair given the wrong way round is refused, as ``depth`` refuses it: its figures would
    score noise."""
    from app.commands.depth import refuse_swapped
    from app.engine.formats import read_pair_rgb

    left, right = read_pair_rgb(scene.left, scene.right)
    refuse_swapped(str(scene.left), str(scene.right), left, right, "give the left camera's image first")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "eval",
        help="metrics against ground truth",
        description=(
            "Evaluate engines on a pair (LEFT RIGHT --gt FILE) or a folder of scenes in Middlebury "
            "(im0.png, im1.png, disp0GT.pfm, calib.txt) or KITTI 2015 layout. Every figure is given "
            "dense (holes count as errors) and valid-only (holes excluded). PATH may also be any source "
            "whose frames carry ground truth: 'synthetic', a recording of one, ... The search range is "
            "--max-disparity if given, else the scene's ndisp (Middlebury calib.txt), else auto, as in depth."
        ),
    )
    p.add_argument("path", help="scene folder, dataset folder, source (e.g. synthetic), or left image")
    p.add_argument("right", nargs="?", help="right image when PATH is a left image")
    p.add_argument("--gt", help="ground-truth disparity for a pair (PFM or KITTI PNG)")
    p.add_argument(
        "--gt-scale",
        type=real("--gt-scale", 0.0, low_open=True),
        help="a PNG ground truth's value per pixel of disparity (default 256, KITTI's 16-bit; "
        "8-bit Middlebury 2001-2006 maps: 4 or 8)",
    )
    p.add_argument("--engines", help="comma-separated engines (default: sgbm, plus bi3d if weights exist)")
    p.add_argument("--json", type=report_file("eval"), help="write the figures as JSON")
    p.add_argument(
        "--frames",
        type=whole("--frames", 1),
        help="evaluate the first N scenes or frames (needed for endless sources)",
    )
    add_setting(p, vocabulary.MIN_CONFIDENCE)  # as depth answers by default (eval had scored every guess)
    add_engine_args(p, auto_range=True)
    p.set_defaults(func=run, max_disparity=None)  # None: the scene's ndisp where it has one, else auto
