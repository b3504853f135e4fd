"""Where stereo pairs come from: ``open_source(spec)`` turns a user's text into a source.

Every source yields ``StereoPair(left, right, timestamp, calibration, gt_disparity)`` with
RGB uint8 copies (``app.engine.sources.base`` has the interface). The spec grammar::

    SPEC := PATH                    a folder or a file, detected as below
          | LEFT,RIGHT              two images (one pair) or two videos (played together)
          | video:PATH[?layout=L]   one stereo video; L is sbs (side by side, default) or tb
          | camera:I[?OPTS]         one side-by-side device, e.g. a ZED over UVC (2560x720)
          | camera:I,J[?OPTS]       two devices, left and right
          | synthetic[:HxW][?OPTS]  a moving procedural scene with exact disparity (480x640)
    OPTS := KEY=VALUE[&KEY=VALUE...]
        camera:    width, height (each device's frame), fps, layout (sbs|tb, one device)
        synthetic: fps (10), seed (0), frames (endless), max_disparity (width/4, <= 192)

A folder is, in this order: a recording (``session.json``, see ``app.engine.sources.recording``);
a dataset with ground truth: Middlebury 2014 / ETH3D (``im0.png``, ``im1.png``,
``calib.txt``, ``disp0GT.pfm``), KITTI 2015 (``image_2/``, ``image_3/``, ``disp_occ_0/``),
SceneFlow (``left/``, ``right/``, ``disparity/*.pfm``) or a folder of Middlebury scenes; or a
folder of pairs: the cameras' subfolders (``files.PAIR_FOLDERS``: ``left/`` ``right/``,
``L/`` ``R/``, ``cam0/`` ``cam1/``, ...), or files named ``*left*``/``*right*`` or ``*_L``/``*_R``
(frame2 sorts before frame10). A file must be a video (by its suffix), played side by side.

The schemes win over paths: write ``./camera`` for a folder called ``camera``. Examples:
``rec/``, ``im0.png,im1.png``, ``video:rig.mp4?layout=tb``, ``camera:0,1``,
``camera:0?width=2560&height=720&fps=30``, ``synthetic:240x320?fps=15&frames=100``.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

from app.engine.errors import UserError
from app.engine.formats import read_image_rgb
from app.engine.memory import require
from app.engine.sources.base import LAYOUTS, EventHandler, Frame, Layout, SourceEvent, StereoSource
from app.engine.sources.capture import CameraSettings, CameraSource, CaptureFactory, open_device
from app.engine.sources.files import (
    IMAGE_SUFFIXES,
    FrameScene,
    Scene,
    SceneSource,
    find_scenes,
    image_pair_scene,
    name_origin_ns,
    name_times,
    pair_folder_scenes,
    read_disparity,
    right_partner,
)
from app.engine.sources.recording import is_recording, open_recording
from app.engine.sources.recording_index import looks_like_recording
from app.engine.sources.video import VIDEO_SUFFIXES, VideoSource

__all__ = [
    "Frame",
    "Scene",
    "SourceEvent",
    "StereoSource",
    "find_scenes",
    "is_source_spec",
    "open_source",
    "read_disparity",
    "scenes_from_source",
]

_SCHEME = re.compile(r"^(camera|video|synthetic)(?::(.*))?$", re.IGNORECASE)
_SOURCE_HELP = "give a folder, a video, LEFT,RIGHT, camera:N or synthetic"


def open_source(
    spec: str, *, on_event: EventHandler | None = None, camera_factory: CaptureFactory = open_device
) -> StereoSource:
    """The source ``spec`` describes, opened; a ``UserError`` says what is wrong with it."""
    source = _build(spec.strip(), camera_factory)
    source.on_event = on_event
    try:
        source.open()
    except BaseException:
        source.close()
        raise
    return source


def is_source_spec(spec: str) -> bool:
    """Whether ``spec`` names a source at all (an existing path, a pair, a scheme), cheaply."""
    text = spec.strip()
    return bool(_SCHEME.match(text.split("?", 1)[0])) or Path(text).exists() or "," in text


def _build(spec: str, camera_factory: CaptureFactory) -> StereoSource:
    if not spec:
        raise UserError(f"no source given; {_SOURCE_HELP}")
    head, query = spec.split("?", 1) if "?" in spec else (spec, "")
    scheme = _SCHEME.match(head)
    if scheme:
        kind, body = scheme.group(1).lower(), scheme.group(2) or ""
        if kind == "camera":
            return _camera(body, query, camera_factory)
        if kind == "synthetic":
            return _synthetic(body, query)
        layout = _options(query, {"layout": str}, "video").get("layout")
        return _video_file(Path(body), layout)
    path = Path(spec)
    if path.is_dir():
        return _folder(path)
    if path.exists():
        return _file(path)
    if "," in spec:
        return _pair(*(Path(p.strip()) for p in spec.split(",", 1)))
    raise UserError(f"source not found: {spec}; {_SOURCE_HELP}")


def _folder(path: Path) -> StereoSource:
    if is_recording(path) or looks_like_recording(path):
        return open_recording(path)  # a damaged index is refused there, with how to rebuild it
    notes: list[str] = []
    try:
        scenes = find_scenes(path)
        what = f"{len(scenes)} dataset scene(s)"
    except UserError:  # not a dataset: a folder of pairs, or an error saying what is missing
        try:
            scenes = pair_folder_scenes(path, notes)
        except UserError as exc:
            inner = _split_folders(path)
            if inner == ["mav0"]:  # EuRoC's download, NAME/mav0/cam0/data: opened as KITTI's root is
                return _folder(path / "mav0")
            if not inner:
                raise
            names = " or ".join(str(path / name) for name in inner)
            raise UserError(f"{exc}; the pairs are a level down: give {names}") from None
        what = f"{len(scenes)} pair(s)"
    # a ROS or EuRoC export's times are in its file names: kept (a recording of it read 0, 1, 2 s)
    lefts = [scene.left for scene in scenes]
    source = SceneSource(scenes, f"{what} in {path}", name_times(lefts))
    source.time_origin_ns = name_origin_ns(lefts)
    source.opening_notes.extend(notes)  # images skipped, or paired in name order
    return source


SPLIT_FOLDERS = ("training", "testing", "train", "test", "val", "validation")  # a dataset's root
INNER_FOLDERS = ("mav0",)  # EuRoC's download unpacks to NAME/mav0/cam0/data


def _split_folders(path: Path) -> list[str]:
    """The folders a level down that hold a source's pairs: the splits of a dataset's root (KITTI's
    training/ and testing/), EuRoC's mav0/."""
    found = []
    for name in (*SPLIT_FOLDERS, *INNER_FOLDERS):
        sub = path / name
        if sub.is_dir():
            try:
                find_scenes(sub) if name in SPLIT_FOLDERS else pair_folder_scenes(sub)
            except UserError:
                continue
            found.append(name)
    return found


def _file(path: Path) -> StereoSource:
    if path.suffix.lower() in IMAGE_SUFFIXES:
        read_image_rgb(path)  # not an image after all: that is what to say (and what to check)
        partner = right_partner(path)
        if partner is not None:  # the right view beside it, named alike: what to give
            raise UserError(f"{path} is one image; give the pair as {path},{partner}")
        raise UserError(
            f"{path} is one image; give LEFT,RIGHT for a pair, a folder of pairs, or video:{path} if it "
            f"holds both views side by side (video:{path}?layout=tb: one above the other)"
        )
    return _video_file(path, None)


def _video_file(path: Path, layout: str | None) -> VideoSource:
    """One stereo video: side by side unless ``layout`` says otherwise or, not given, its first
    frame looks top-bottom."""
    if layout is None:
        return VideoSource([path], "sbs", explicit=False)
    return VideoSource([path], _layout(layout))


def _pair(left: Path, right: Path) -> StereoSource:
    suffixes = {left.suffix.lower() in VIDEO_SUFFIXES, right.suffix.lower() in VIDEO_SUFFIXES}
    if suffixes == {True}:
        return VideoSource([left, right])
    if suffixes != {False}:
        raise UserError(f"{left.name},{right.name} mixes a video and an image; give two of a kind")
    for path in (left, right):
        if not path.is_file():
            raise UserError(f"image not found: {path}; check the path")
    return SceneSource([image_pair_scene(left, right)], f"pair {left.name}, {right.name}")


def _camera(body: str, query: str, factory: CaptureFactory) -> CameraSource:
    try:
        devices = tuple(int(d) for d in body.split(","))
    except ValueError:
        raise UserError(f"camera:{body} needs device numbers, e.g. camera:0 or camera:0,1") from None
    opts = _options(query, {"width": int, "height": int, "fps": float, "layout": str}, "camera")
    opts["layout"] = _layout(opts.get("layout", "sbs"))
    return CameraSource(CameraSettings(devices, **opts), factory)


def _synthetic(body: str, query: str) -> StereoSource:
    from app.engine.sources.synthetic import SyntheticConfig, SyntheticSource  # imports torch: lazily

    kinds = {"fps": float, "seed": int, "frames": int, "max_disparity": float}
    opts: dict[str, Any] = _options(query, kinds, "synthetic")
    if body:
        match = re.fullmatch(r"(\d+)x(\d+)", body.strip().lower())
        if match is None:
            raise UserError(f"synthetic size must be HEIGHTxWIDTH, e.g. synthetic:480x640, got {body!r}")
        opts["height"], opts["width"] = int(match.group(1)), int(match.group(2))
    return SyntheticSource(SyntheticConfig(**opts))


def _options(query: str, kinds: dict[str, type], what: str) -> dict[str, Any]:
    """``a=1&b=2`` as typed values; unknown keys and bad values are ``UserError``s."""
    out: dict[str, Any] = {}
    for item in filter(None, query.split("&")):
        key, _, value = item.partition("=")
        if key not in kinds:
            raise UserError(f"unknown {what} option {key!r}; use {', '.join(kinds)}")
        try:
            out[key] = kinds[key](value)
        except ValueError:
            noun = "whole number" if kinds[key] is int else "number"
            raise UserError(f"{what} option {key}={value!r} must be a {noun}") from None
    return out


def _layout(value: str) -> Layout:
    for layout in LAYOUTS:
        if value == layout:
            return layout
    raise UserError(f"layout must be sbs (side by side) or tb (top-bottom), got {value!r}")


def _frames_in_memory(source: StereoSource, frames: int | None) -> list[Any]:
    """The first ``frames`` pairs, held in memory: refused up front when they would not fit."""
    first = source.read()
    if first is None:
        return []
    count = frames if frames is not None else source.frame_count or 1
    per_frame = first.left.nbytes * 2 + (first.gt_disparity.nbytes if first.gt_disparity is not None else 0)
    require(count * per_frame, f"holding {count} frames of {source.describe()}", "give fewer --frames")
    return [first, *itertools.islice(source, count - 1)]


def scenes_from_source(spec: str, frames: int | None = None) -> list[Scene]:
    """Frames of any source that carries ground truth, as evaluation scenes.

    Scenes of files stay on disk until loaded; frames of other sources are held in memory.
    """
    with open_source(spec) as source:
        what = source.describe()
        if isinstance(source, SceneSource):
            scenes = source.scenes[:frames]
            has_gt = any(s.gt is not None for s in scenes)
        else:
            if frames is None and source.frame_count is None:
                raise UserError(f"{what} has no end; give --frames N")
            pairs = _frames_in_memory(source, frames)
            scenes = [FrameScene(f"{i:06d}", Path(spec), Path(spec), pair=p) for i, p in enumerate(pairs)]
            has_gt = any(p.gt_disparity is not None for p in pairs)
    if not scenes:
        raise UserError(f"{what} gave no frames; check the source")
    if not has_gt:
        raise UserError(
            f"{what} has no ground-truth disparity; evaluate a dataset, synthetic, or a recording of one"
        )
    return scenes
