"""`bi3d-studio flow`: optical flow between two frames, or per-frame latency over a video or
the left view of a stereo source."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Generator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from app.commands.arguments import output_folder, real
from app.commands.common import refuse_inside_recording
from app.engine.errors import UserError
from app.engine.flow.base import BACKENDS, NVOF_GRIDS


def run(args: argparse.Namespace) -> int:
    from app.engine.flow.base import FlowOptions
    from app.engine.flow.choose import create_flow_backend
    from app.engine.flow.nvof import nvof_probe

    if args.probe:
        if args.inputs:
            raise UserError("--probe only says whether nvof can run; leave out the inputs, or --probe")
        probe = nvof_probe()
        print(f"nvof: {'available' if probe.available else 'unavailable'} ({probe.code}): {probe.reason}")
        return 0
    if len(args.inputs) not in (1, 2):
        raise UserError(f"give FRAME0 FRAME1, or one VIDEO or SOURCE, got {len(args.inputs)} inputs")
    earlier = False  # the folder holds an earlier run's files (flow.json names what they came from)
    if len(args.inputs) == 2 or args.out:  # a video writes only where --out says
        from app.engine.outputs import check_writable, earlier_result, refuse_foreign_files

        check_writable(Path(args.out or "out"))  # before the work, not after it
        # nor over the user's own files of these names (flow.png, latency.csv were replaced: review)
        names = FLOW_NAMES if len(args.inputs) == 2 else SOURCE_FLOW_NAMES
        refuse_foreign_files(Path(args.out or "out"), args.inputs, names, FLOW_RECORD, "backend")
        refuse_inside_recording(Path(args.out or "out"))
        earlier = earlier_result(Path(args.out or "out"), FLOW_RECORD, "backend")
    # a pair's files are read before the backend's line: it stood above their one-line error (review)
    frames = _read_pair(args.inputs) if len(args.inputs) == 2 else None
    options = FlowOptions(args.preset, args.grid, args.temporal_hints, args.cost, args.gpu)
    backend, reason = create_flow_backend(args.backend, options)
    print(f"backend: {backend.name} ({reason})")
    unused = _nvof_only(args) if backend.name != "nvof" else []
    if unused:
        verb = "applies" if len(unused) == 1 else "apply"
        print(f"note: {', '.join(unused)} {verb} to nvof only; {backend.name} runs without them")
    try:
        if frames is not None:
            written = _pair(backend, args, frames)
        else:
            written = _video(backend, args)
    finally:
        backend.close()
    if earlier:  # an earlier run's other files would stand beside a flow.json that no longer names them
        _remove_stale(Path(args.out or "out"), written)
    return 0


def _remove_stale(out: Path, written: list[str]) -> None:
    stale = [
        name for name in (*FLOW_NAMES, *SOURCE_FLOW_NAMES) if name not in written and (out / name).is_file()
    ]
    for name in stale:
        (out / name).unlink()
    if stale:
        print(f"note: removed {', '.join(stale)} of an earlier run from {out}")


def _nvof_only(args: argparse.Namespace) -> list[str]:
    """The accelerator's flags given away from their defaults."""
    given = {
        f"--grid {args.grid}": args.grid != 1,
        "--temporal-hints": args.temporal_hints,
        "--cost": args.cost,
        f"--gpu {args.gpu}": args.gpu != 0,
    }
    return [flag for flag, on in given.items() if on]


def _read_pair(inputs: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """FRAME0 FRAME1, read and checked (files, images, sizes) before any work."""
    from app.engine.formats import read_pair_rgb
    from app.engine.sources.video import VIDEO_SUFFIXES
    from app.engine.types import check_pair

    videos = [p for p in inputs if Path(p).suffix.lower() in VIDEO_SUFFIXES]
    if videos:  # "pan.avi is not a readable image" did not say what to give (review)
        raise UserError(
            f"{videos[0]} is a video: give one video alone (flow between its consecutive frames), "
            "or two images"
        )
    frame0, frame1 = read_pair_rgb(inputs[0], inputs[1])
    if frame0.shape != frame1.shape:  # two frames of one camera, not a stereo pair (review)
        h0, w0 = frame0.shape[:2]
        h1, w1 = frame1.shape[:2]
        raise UserError(
            f"{inputs[0]} ({w0}x{h0}) and {inputs[1]} ({w1}x{h1}) differ in size; give two frames of "
            "one camera, of the same size"
        )
    check_pair(frame0, frame1)
    return frame0, frame1


def _pair(backend: Any, args: argparse.Namespace, frames: tuple[np.ndarray, np.ndarray]) -> list[str]:
    from app.engine.fileio import make_folder
    from app.engine.flow.draw import draw_flow_arrows, flow_color_with_legend, flow_scale
    from app.engine.formats import write_color_png, write_flo

    frame0, frame1 = frames
    result = backend.compute(frame0, frame1)  # frames too small for flow are refused here
    h, w = frame0.shape[:2]
    if args.arrow_step // 2 >= min(h, w):  # it wrote a picture without a single arrow, unsaid (review)
        raise UserError(
            f"--arrow-step {args.arrow_step} leaves no arrow on {w}x{h} frames; "
            f"give at most {2 * min(h, w) - 1}"
        )
    out = make_folder(args.out or "out")
    written = [out / "flow.flo", out / "flow.png", out / "flow_arrows.png"]
    write_flo(written[0], result.flow)
    write_color_png(written[1], flow_color_with_legend(result.flow, args.max_magnitude))
    arrows = draw_flow_arrows(frame0, result.flow, args.arrow_step, args.max_magnitude)
    write_color_png(written[2], arrows)
    if result.cost is not None:
        written.append(out / "cost.png")
        write_color_png(written[-1], np.repeat(result.cost[..., None], 3, axis=2))
    written.append(_record(out, backend, args))
    print(_summary(result))
    scale = flow_scale(result.flow, args.max_magnitude)
    print(  # flow_arrows.png carries no legend: its scale said here (review)
        f"arrows: one every {args.arrow_step} px; {scale:.3g} px of flow (flow.png's rim) is drawn "
        f"{0.9 * args.arrow_step:.3g} px long, longer vectors as long"
    )
    if result.note:
        print(f"note: {result.note}")
    print("wrote " + ", ".join(str(p) for p in written))
    return [p.name for p in written]


FLOW_NAMES = ("flow.flo", "flow.png", "flow_arrows.png", "cost.png", "flow.json")  # a pair's
SOURCE_FLOW_NAMES = ("latency.csv", "flow.avi", "flow.json")  # a video's or source's
FLOW_RECORD = "flow.json"  # what a run wrote it from: the files beside it are this program's


def _record(out: Path, backend: Any, args: argparse.Namespace) -> Path:
    """``flow.json``: the backend and inputs of the files beside it (an earlier run's files are
    replaced by the next run, the user's own never)."""
    from app.engine.formats import atomic_write

    inputs = [str(Path(p).resolve()) if Path(p).exists() else str(p) for p in args.inputs]
    meta = {"backend": backend.name, "device": backend.device, "inputs": inputs}
    atomic_write(out / FLOW_RECORD, (json.dumps(meta, indent=2) + "\n").encode())
    return out / FLOW_RECORD


def _summary(result: Any) -> str:
    mag = np.hypot(result.flow[..., 0], result.flow[..., 1])
    mag = mag[np.isfinite(mag)]
    h, w = result.flow.shape[:2]
    med, top = (float(np.median(mag)), float(mag.max())) if mag.size else (float("nan"), float("nan"))
    return (
        f"flow: {w}x{h} on {result.device}, grid {result.grid}, |flow| median {med:.2f} px, "
        f"max {top:.2f} px, {result.timings['total']:.1f} ms"
    )


LIVE_FRAMES = 100  # frame pairs timed from a live or endless source unless --frames says


def _video(backend: Any, args: argparse.Namespace) -> list[str]:
    """Per-frame latency over a video file, or over the left view of a stereo source (a
    recording, a folder of pairs, ``synthetic``, ``camera:N``), consecutive frames."""
    import contextlib

    from app.engine.fileio import make_folder
    from app.engine.formats import atomic_write
    from app.engine.sources.recording import signals_held
    from app.engine.sources.spec import is_source_spec

    spec = args.inputs[0]
    path = Path(spec)
    meta: dict[str, float] = {}  # what a video file's header says (its frame rate)
    if path.is_file():
        frames, what = _video_frames(path, args.whole_frame, meta), str(path)
    elif path.is_dir() or is_source_spec(spec):
        if args.out:  # as depth does: results written into a recording would be read as its frames
            from app.commands.record import refuse_overlap

            refuse_overlap(spec, Path(args.out), "output folder", "write")
        if args.max_frames is None and not path.is_dir():
            args.max_frames = LIVE_FRAMES
            print(f"note: timing at most {LIVE_FRAMES} frame pairs of {spec}, which may not end (--frames N)")
        frames, what = _source_frames(spec, meta), f"{spec} (its left view)"
    else:
        raise UserError(
            f"video not found: {spec}; give FRAME0 FRAME1, a video file, or a stereo source (a recording, "
            "a folder of pairs, synthetic, camera:N)"
        )
    latencies: list[float] = []
    spans: list[tuple[int, int]] = []  # the frame numbers each flow went from and to (the source's)
    movie = _FlowMovie(Path(args.out) / "flow.avi", args.max_magnitude) if args.out else None
    interrupted = False
    with contextlib.closing(frames):
        previous = next(frames, None)
        if previous is None:
            raise UserError(f"{what} has no readable frame; check the source")
        if movie is not None:
            movie.fps = meta.get("fps", movie.fps)
        read = 0  # frames read after the first: their numbers where the source gives none (a video)
        try:
            while args.max_frames is None or len(latencies) < args.max_frames:
                current = next(frames, None)
                if current is None:
                    break
                read += 1
                if current[1] is not None and previous[1] is not None and current[1] != previous[1] + 1:
                    # a damaged frame was skipped: no flow across the gap (it was computed unsaid)
                    print(
                        f"note: no flow from frame {previous[1]} to {current[1]}: the frames between "
                        "are missing"
                    )
                    previous = current
                    continue
                result = backend.compute(previous[0], current[0])
                to = current[1] if current[1] is not None else read
                with signals_held():  # Ctrl-C between the two left flow.avi a frame short of latency.csv
                    if movie is not None:
                        movie.add(result.flow)
                    latencies.append(result.timings["total"])
                    spans.append((previous[1] if previous[1] is not None else read - 1, to))
                median = _median(result.flow)
                print(f"frames {spans[-1][0]}-{to}: {latencies[-1]:.1f} ms, |flow| median {median:.2f} px")
                previous = current
        except KeyboardInterrupt:  # Ctrl-C: what was timed is written, then the exit says so
            interrupted = True
        finally:
            if movie is not None:
                movie.close()
    if not latencies:
        if interrupted:
            raise KeyboardInterrupt
        raise UserError(f"{what} has a single frame; flow needs at least two")
    med, p90 = float(np.median(latencies)), float(np.percentile(latencies, 90))
    print(
        f"{len(latencies)} frame pairs on {backend.device}: median {med:.1f} ms, p90 {p90:.1f} ms "
        f"({1000 / med:.0f} pairs/s)"
    )
    if args.out:
        out = Path(args.out)
        make_folder(out)
        # numbered by the source's frames (1..N had hidden a skipped frame: review)
        rows = [
            "from_frame,to_frame,latency_ms",
            *(f"{a},{b},{ms:.3f}" for (a, b), ms in zip(spans, latencies, strict=True)),
        ]
        atomic_write(out / "latency.csv", ("\n".join(rows) + "\n").encode())
        wrote = [str(out / "latency.csv"), str(_record(out, backend, args))]
        if movie is not None and movie.written:
            wrote.append(f"{movie.path} (colours: the wheel's rim is {movie.scale:.3g} px)")
        print("wrote " + ", ".join(wrote))
    if interrupted:  # latency.csv of the pairs timed was lost to Ctrl-C
        print(f"stopped after {len(latencies)} frame pair(s)", file=sys.stderr)
        raise KeyboardInterrupt
    return ["latency.csv", FLOW_RECORD, *(["flow.avi"] if movie is not None and movie.written else [])]


def _median(flow: np.ndarray) -> float:
    mag = np.hypot(flow[..., 0], flow[..., 1])
    mag = mag[np.isfinite(mag)]
    return float(np.median(mag)) if mag.size else float("nan")


class _FlowMovie:
    """The colour-coded flow of each frame pair, with its legend, as an MJPG video at ``fps``
    (a video file's own rate, else 10 fps). One colour scale for the whole video
    (``max_magnitude``, else the first pair's longest vector), so that colours compare between
    frames."""

    FPS = 10.0

    def __init__(self, path: Path, max_magnitude: float | None) -> None:
        self.path = path
        self.fps = self.FPS
        self.scale = max_magnitude
        self.written = 0
        self._writer: Any = None

    def add(self, flow: np.ndarray) -> None:
        import cv2

        from app.engine.fileio import make_folder
        from app.engine.flow.draw import flow_color_with_legend, flow_scale

        if self.scale is None:
            self.scale = flow_scale(flow)
        picture = cv2.cvtColor(flow_color_with_legend(flow, self.scale), cv2.COLOR_RGB2BGR)
        if self._writer is None:
            make_folder(self.path.parent)
            size = (picture.shape[1], picture.shape[0])
            self._writer = cv2.VideoWriter(str(self.path), cv2.VideoWriter.fourcc(*"MJPG"), self.fps, size)
            if not self._writer.isOpened():
                raise UserError(f"cannot write {self.path}; check the output folder")
        self._writer.write(picture)
        self.written += 1

    def close(self) -> None:
        if self._writer is not None:
            self._writer.release()


def _video_frames(
    path: Path, whole_frame: bool = False, meta: dict[str, float] | None = None
) -> Generator[tuple[np.ndarray, int | None], None, None]:
    """A video file's frames, RGB (with no frame number: a video has no gaps); a file OpenCV cannot
    decode is a ``UserError``. A stereo video
    (its first frame's halves match along rows) gives its left view, as ``depth`` splits it,
    unless ``whole_frame``. ``meta`` receives the header's frame rate ("fps") when it is
    plausible. A file that ends well before its header's frame count is said to be cut short,
    as the window's video source says it."""
    import os

    import cv2

    from app.engine.sources.base import split_frame
    from app.engine.sources.layout import LAYOUT_NAMES, stereo_layout
    from app.engine.sources.video import cut_short_note

    # FFmpeg's own log lines ("moov atom not found") would break the one-line error contract;
    # read by OpenCV when it first opens a file, and a value the user set wins
    os.environ.setdefault("OPENCV_FFMPEG_LOGLEVEL", "-8")
    capture = cv2.VideoCapture(str(path))
    try:
        ok, frame = capture.read() if capture.isOpened() else (False, None)
        if not ok or frame is None:
            raise UserError(f"{path} is not a readable video; use a file OpenCV can decode (MP4, AVI, ...)")
        stereo = None if whole_frame else stereo_layout(frame)
        if stereo is not None:
            layout, matches = stereo
            print(
                f"note: {path.name} looks like a {LAYOUT_NAMES[layout]} stereo video ({matches} features "
                "match along rows): flow over its left view (--whole-frame for the whole frame)"
            )
        fps = float(capture.get(cv2.CAP_PROP_FPS) or 0.0)
        if meta is not None and 1.0 <= fps <= 1000.0:
            meta["fps"] = fps
        count, read = int(capture.get(cv2.CAP_PROP_FRAME_COUNT) or 0), 0
        while ok and frame is not None:
            read += 1
            yield (
                (split_frame(frame, stereo[0])[0] if stereo else cv2.cvtColor(frame, cv2.COLOR_BGR2RGB)),
                None,
            )
            ok, frame = capture.read()
        cut = cut_short_note(path.name, read, count)
        if cut is not None:
            print(f"note: {cut}")
    finally:
        capture.release()


def _source_frames(
    spec: str, meta: dict[str, float] | None = None
) -> Generator[tuple[np.ndarray, int | None], None, None]:
    """The left images of a stereo source's pairs with their frame numbers (None for a camera's),
    until it ends; what the source notes (a damaged frame skipped) is printed as it comes.
    ``meta`` receives a video's frame rate ("fps"): flow.avi of video:PATH was written at 10 fps
    where PATH alone gave the video's 15 (review)."""
    from app.engine.sources.spec import open_source

    with open_source(spec) as source:
        fps = getattr(source, "fps", None)
        if meta is not None and isinstance(fps, float) and 1.0 <= fps <= 1000.0:
            meta["fps"] = fps
        said = 0
        numbered = getattr(source, "seekable", False)
        while (pair := source.read()) is not None:
            for note in source.notes[said:]:
                print(f"note: {note}")
            said = len(source.notes)
            yield pair.left, source.frame_number if numbered else None


def flow_specs(text: str) -> list[str]:
    """argparse type for backend[:preset[:grid]],...: checked now, so a typo fails at once."""
    from app.engine.flow.choose import parse_backend_spec

    specs = [s.strip() for s in text.split(",") if s.strip()]
    try:
        for spec in specs:
            parse_backend_spec(spec)
    except UserError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return specs


def _at_least(minimum: int) -> Any:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {text!r}")
        return value

    return parse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "flow",
        help="optical flow for two frames, or latency over a video or stereo source",
        description=(
            "FRAME0 FRAME1: writes OUT/flow.flo (Middlebury), flow.png (colour coding with its "
            "legend), flow_arrows.png and flow.json (the backend and the inputs). VIDEO: "
            "flow between consecutive frames (of the left view "
            "of a side-by-side or top-bottom stereo video), with per-frame latency (with --out: "
            "OUT/latency.csv, OUT/flow.avi, the colour-coded flow, and flow.json); SOURCE (a recording or "
            "folder of pairs, "
            f"synthetic, camera:N): the same over its left view ({LIVE_FRAMES} frame pairs of a live "
            "or endless one unless --frames). The 'nvof' backend needs an NVIDIA "
            "GPU with the Optical Flow Accelerator and an OpenCV built with CUDA; 'auto' uses it "
            "when it is there, else 'dis'."
        ),
    )
    p.add_argument("inputs", nargs="*", metavar="FRAME0 FRAME1 | VIDEO | SOURCE")
    p.add_argument("--backend", default="auto", choices=list(BACKENDS))
    p.add_argument("--preset", help="dis: ultrafast, fast, medium; nvof: slow, medium, fast")
    p.add_argument("--grid", type=int, default=1, choices=list(NVOF_GRIDS), help="nvof output grid (px)")
    p.add_argument("--temporal-hints", action="store_true", help="nvof: reuse the last flow (video)")
    p.add_argument("--cost", action="store_true", help="nvof: also write the cost buffer as cost.png")
    p.add_argument("--gpu", type=_at_least(0), default=0, help="nvof: CUDA device id")
    p.add_argument(
        "--max-magnitude",
        type=real("--max-magnitude", 0, 1e5, "px", low_open=True),
        help="clamp for colours and arrows (px)",
    )
    p.add_argument("--arrow-step", type=_at_least(2), default=16, help="arrow grid spacing (px)")
    p.add_argument(
        "--frames",
        "--max-frames",
        dest="max_frames",
        type=_at_least(1),
        help="video: stop after this many frame pairs (--max-frames: the older name)",
    )
    p.add_argument(
        "--whole-frame",
        action="store_true",
        help="video: flow over the whole frame even when it looks like a stereo video "
        "(default: its left view)",
    )
    p.add_argument(
        "--out",
        type=output_folder,
        help="output folder (default ./out for a pair; for a video or source: latency.csv and flow.avi, "
        "only when given)",
    )
    p.add_argument("--probe", action="store_true", help="say whether nvof can run here, then exit")
    p.set_defaults(func=run)
