"""`bi3d-studio depth`: depth for one image pair, written as the command-line contract says."""

from __future__ import annotations

import argparse
import itertools
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from app import vocabulary
from app.commands.arguments import output_folder, whole
from app.commands.common import (
    add_engine_args,
    add_setting,
    argument_type,
    depth_request,
    engine_options,
    refuse_inside_recording,
)
from app.engine.errors import UserError, word_settings
from app.engine.types import Calibration, check_pair
from app.vocabulary import cli_words


def run(args: argparse.Namespace) -> int:
    from app.engine.depth.engines import build_engine
    from app.engine.depth.exposure import flat_pair_note, identical_pair_note
    from app.engine.formats import read_pair_rgb
    from app.engine.outputs import (
        beyond_kitti_notes,
        check_writable,
        earlier_result,
        format_summary,
        refuse_foreign_files,
    )

    check_writable(Path(args.out))  # before the work, not after it (also: a file in the way)
    # nor over the user's own files: a scene folder's disparity.png, an input named like a result
    refuse_foreign_files(Path(args.out), [p for p in (args.left, args.right, args.calib) if p])
    if args.right is None:
        return run_source(args)
    refuse_inside_recording(Path(args.out))  # a source's own is refused by refuse_overlap
    if args.frames is not None:
        raise UserError(
            "--frames needs a source given alone (e.g. a folder or video); LEFT RIGHT is one pair"
        )
    notes: list[str] = []
    left, right = read_pair_rgb(args.left, args.right, notes)
    check_pair(left, right)  # before the engine's line: it stood above "differ in size" (review)
    # a swapped pair is refused; this wrote an all-0 px answer, exit 0 (a flat pair, a lens cap on
    # both cameras, is identical too: its own note says so)
    if identical_pair_note(left, right) is not None and flat_pair_note(left, right) is None:
        raise UserError(
            f"{args.left} and {args.right} hold the same image, so every pixel would read 0 px "
            "(infinitely far): give the two cameras' images"
        )
    calib = args.calib or _scene_calib(args.left, args.right, args.calib2, notes)
    calibration, rig = _calibration(calib, left, args.calib2, notes)
    request = depth_request(args, calibration)
    left, right = _rectifier(rig)(left, right)
    if args.swap_views:
        left, right = right, left
        # a pair in the right order, swapped: noise, and advice to swap the cameras (review)
        refuse_swapped(args.right, args.left, left, right, UNSWAP_ADVICE)
    else:
        refuse_swapped(args.left, args.right, left, right)
    engine, reason = build_engine(engine_options(args), "binary")
    print(f"engine: {engine.name} ({word_settings(reason, cli_words)})")
    result = engine.compute(left, right, request)
    result.notes[:0] = notes
    result.notes.extend(beyond_kitti_notes(result))
    print(format_summary(result, calibration, _depth_unit(calibration), cli_words))
    extra = {
        "engine_reason": reason,
        "inputs": _inputs(args.left, args.right, calib, _second_file(calib, args.calib2)),
    }
    replaced = earlier_result(Path(args.out))
    shown = left if rig is not None else None  # the disparity's pixels are the rectified image's
    written = _write(Path(args.out), result, request, extra, args.no_probabilities, shown)
    print("wrote " + ", ".join(str(p) for p in written))
    say_large_npz(Path(args.out), args.no_probabilities)
    if replaced:  # said: two runs into ./out replaced each other unsaid (review)
        print(f"note: this replaced the earlier result in {args.out}")
    _say_other_run(Path(args.out), single=True)
    return 0


def _say_other_run(out: Path, single: bool) -> None:
    """A note when ``out`` also holds the other kind of run's results, which stay (a pair's
    result.json beside a run of frames' 000000/..., or the reverse: one folder read as one run's,
    review)."""
    from app.engine.outputs import earlier_result, frame_results

    if single and (frames := frame_results(out)):
        first, last = frames[0].name, frames[-1].name
        print(
            f"note: {out} also holds the results of an earlier run of {len(frames)} frame(s) "
            f"({first}/ to {last}/), not this pair's"
        )
    elif not single and earlier_result(out):
        print(f"note: {out / 'result.json'} and its files are an earlier single pair's, not these frames'")


LARGE_NPZ_BYTES = 100 << 20  # a result.npz this large is said, with how to leave the probabilities out
LARGE_RUN_BYTES = 1 << 30  # frames to come that together take this much: said after the first


def say_large_npz(out: Path, left_out: bool, frames: int | None = 1) -> None:
    """A note when result.npz is large: a continuous answer's plane probabilities made 376 MB of a
    1.4 MP pair's result, unsaid (review). ``frames``: how many a run writes like ``out`` (None:
    no end known, a camera); a run whose frames take a gigabyte or more, or more than the disk
    has free, is said after its first frame (a 500-frame recording took 22 GB, unsaid)."""
    import zipfile

    size = (out / "result.npz").stat().st_size
    with zipfile.ZipFile(out / "result.npz") as archive:  # SGBM's over a range are left out
        left_out = left_out or "probabilities.npy" not in archive.namelist()
    parts = []
    if size >= LARGE_NPZ_BYTES and not left_out:
        parts.append(f"{out / 'result.npz'} is {size / 2**20:.0f} MB, most of it the planes' probabilities")
    if frames != 1:
        each = sum(f.stat().st_size for f in out.iterdir() if f.is_file())
        free = shutil.disk_usage(out).free
        if frames is None:
            parts.append(f"each frame's results take about {_size(each)}; the disk has {_size(free)} free")
        elif each * (frames - 1) > free:
            fits = 1 + free // max(each, 1)
            parts.append(
                f"the {frames} frames take about {_size(each * frames)} at {_size(each)} a frame, but the "
                f"disk has {_size(free)} free: it fills near frame {fits}"
            )
        elif each * frames >= LARGE_RUN_BYTES:
            parts.append(f"the {frames} frames take about {_size(each * frames)} ({_size(each)} a frame)")
    if parts and not left_out:
        said = size >= LARGE_NPZ_BYTES
        parts.append(f"--no-probabilities leaves {'them' if said else 'the probabilities'} out")
    if parts:
        print(f"note: {'; '.join(parts)}")


def _write(
    out: Path,
    result: Any,
    request: Any,
    extra: dict[str, Any],
    no_probabilities: bool,
    shown: np.ndarray | None,
) -> list[Path]:
    """``write_result``; a full disk's error names --no-probabilities while they were written
    (most of result.npz: "free space" alone was said, review)."""
    from app.engine.errors import DiskFailure
    from app.engine.outputs import derived_probabilities, write_result

    try:
        return write_result(out, result, request, extra, not no_probabilities, shown)
    except DiskFailure as exc:
        # SGBM's over a range are never written: the flag would change nothing (review)
        if no_probabilities or not len(result.planes) or derived_probabilities(result):
            raise
        raise DiskFailure(f"{exc}, or leave the planes' probabilities out (--no-probabilities)") from None


def _frames_to_write(asked: int | None, source: Any) -> int | None:
    """How many frames a run writes: 1 without --frames, else --frames or the source's count if
    fewer; None for a live source asked for more than one (its end is not known)."""
    if not asked:
        return 1
    count = None if source.live else source.frame_count
    return min(asked, count) if count is not None else (asked if not source.live else None)


def _size(nbytes: int) -> str:
    return f"{nbytes / 2**30:.1f} GB" if nbytes >= 2**30 else f"{nbytes / 2**20:.0f} MB"


Rectify = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


SWAP_CHECK_MIN_PX = 64  # smaller frames have too few features to tell (and the engine refuses the tiniest)


def refuse_swapped(
    left_name: str, right_name: str, left: np.ndarray, right: np.ndarray, advice: str | None = None
) -> None:
    """A pair given the wrong way round is refused before the work: its depth would be noise
    (the engines search positive disparities only), written as if it were an answer. The
    feature matches decide (``pair_geometry``: most of them at negative disparity)."""
    from app.engine.depth.alignment import pair_geometry

    # an unrectified pair is not refused here: its depth says so (``alignment.unrectified_note``)
    if min(left.shape[:2]) >= SWAP_CHECK_MIN_PX and pair_geometry(left, right).swapped:
        raise UserError(
            f"{left_name} and {right_name} look swapped: most features sit further right in the right "
            f"image than in the left (negative disparity); {advice or SWAP_ADVICE}"
        )


SWAP_ADVICE = "give the left camera's image first, or --swap-views"
UNSWAP_ADVICE = "they are in the right order as given: drop --swap-views"


def _swapped(rectify: Rectify) -> Rectify:
    """``rectify``, then the views exchanged (--swap-views: the cameras are the wrong way round)."""

    def swap(left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        rectified = rectify(left, right)
        return rectified[1], rectified[0]

    return swap


def _scene_calib(left: str, right: str, second: str | None, notes: list[str]) -> str | None:
    """A Middlebury scene's calib.txt beside its im0/im1 pair, as the window and ``depth DIR`` read
    it (the pair form gave pixels where they gave metres for the same images: review)."""
    from app.engine.sources.files import image_pair_scene

    scene = image_pair_scene(Path(left), Path(right))
    if second or scene.calib is None:
        return None
    notes.append(f"calibration: {scene.calib}, the scene's own (--calib FILE gives another)")
    return str(scene.calib)


def _depth_unit(calibration: Calibration | None) -> str:
    """'baselines' where the baseline is a placeholder ('calib rectify' without one, given with
    --calib or kept in a recording), else 'm'."""
    return calibration.depth_unit if calibration is not None else "m"


def _calibration(
    path: str | None, frame: np.ndarray, second: str | None, notes: list[str]
) -> tuple[Calibration | None, Any]:
    """--calib (and --calib2) for frames like ``frame`` (H x W x 3): range-checked, fitted to their
    size; what loading it noticed (a rescale, a baseline in millimetres) goes to ``notes``, which
    the results keep (result.json lacked the millimetre warning the terminal gave)."""
    if not path:
        if second:
            raise UserError("--calib2 is the second file of a calibration: give --calib too")
        return None, None
    from app.engine.calibration.files import load_for_frames, partner_file

    calibration, rig, note = load_for_frames(path, second, (frame.shape[1], frame.shape[0]))
    if note:
        notes.append(note)
    found = None if second else partner_file(path)
    if found is not None:  # read with it unsaid (review)
        notes.append(f"the right camera's calibration is {found}, found beside {path}")
    if rig is not None:  # the output's pixels moved unsaid, and the image they are in was not kept (review)
        notes.append(_rectified_note(f"{path}'s rig", calibration, "the input's"))
    return calibration, rig


def _rectified_note(rig: str, calibration: Calibration, instead: str) -> str:
    """That the disparity is in the rectified left image's pixels, kept as left_rectified.png."""
    return (
        f"rectified with {rig}: the disparity is in the rectified left image's pixels "
        f"(left_rectified.png: f {calibration.focal_px:.1f} px, principal point "
        f"{calibration.cx:.1f}, {calibration.cy:.1f}), not {instead}"
    )


def _rectifier(rig: Any) -> Rectify:
    """Raw rigs (an OpenCV stereo calibration) are rectified before depth; others pass through."""
    if rig is None:
        return lambda left, right: (left, right)
    from app.engine.calibration.rig import Rectifier

    return Rectifier(rig).rectify


def _inputs(
    left: str | Path | None, right: str | Path | None, calib: str | None, second: Path | None = None
) -> dict[str, str]:
    """The files a result was made of, as absolute paths for its result.json; ``second``: the
    calibration's second file (``_second_file``: a ROS pair's right camera_info was left out, review)."""
    named = {"left": left, "right": right, "calibration": calib, "calibration_2": second}
    return {key: str(Path(value).resolve()) for key, value in named.items() if value}


def _second_file(calib: str | None, given: str | None) -> Path | None:
    """The calibration's second file, given or found beside it (read once a run, not a frame)."""
    from app.engine.calibration.files import partner_file

    return partner_file(calib, given) if calib else None


def run_source(args: argparse.Namespace) -> int:
    """LEFT alone is a source: depth for its first frame into OUT, or N frames into OUT/000000/..."""
    from app.engine.depth.engines import build_engine
    from app.engine.depth.scene_range import AUTO_RANGE_WORDS, drop_ceiling_notes
    from app.engine.outputs import (
        beyond_kitti_notes,
        earlier_result,
        format_summary,
        frame_folder,
        frame_results,
        refuse_foreign_frames,
        remove_stale_frames,
    )
    from app.engine.sources.layout import depth_is_noise
    from app.engine.sources.spec import is_source_spec, open_source
    from app.engine.sources.video import CUT_SHORT_WORDS

    if not is_source_spec(args.left):
        args.usage_error(
            f"not found: {args.left}; give LEFT RIGHT images, or one source (folder, video, camera:N, "
            "synthetic)"
        )
    if args.frames is not None and args.frames < 1:
        raise UserError(f"--frames must be at least 1, got {args.frames}")
    from app.commands.record import refuse_overlap

    refuse_overlap(args.left, Path(args.out), "output folder", "write")  # results read as frames later
    refuse_inside_recording(Path(args.out))  # nor into another recording
    with open_source(args.left) as source:
        pairs = itertools.islice(source, args.frames or 1)
        first = next(pairs, None)
        if first is None:
            raise UserError(f"{source.describe()} gave no frames; check the source")
        calib_notes: list[str] = []  # every frame's result keeps them; printed once
        given, rig = _calibration(args.calib, first.left, args.calib2, calib_notes)
        second = _second_file(args.calib, args.calib2)
        if rig is not None and getattr(source, "rectifies_frames", False):
            raise UserError(
                f"{args.left} keeps its raw rig's calibration (rig.yml) and is rectified with it as it "
                "plays; leave out --calib"
            )
        calibration = given or first.calibration  # --calib wins over the source's own
        # a raw rig's recording plays rectified: its output's pixels are not its left/ frames'
        # (said and kept as for --calib; unsaid, an overlay on left/ was misaligned: review)
        source_rectifies = getattr(source, "rectifies_frames", False)
        if source_rectifies and first.calibration is not None:  # its rig's figures, not a --calib's
            calib_notes.append(
                _rectified_note("the recording's rig.yml", first.calibration, "its left/ frames'")
            )
        rectify = _rectifier(rig)
        if args.swap_views:
            rectify = _swapped(rectify)
        views = rectify(first.left, first.right)  # given the wrong way round, its depth would be noise
        what = f"{source.describe()}: the {'right' if args.swap_views else 'left'} view"
        other = f"the {'left' if args.swap_views else 'right'} view"
        refuse_swapped(what, other, *views, UNSWAP_ADVICE if args.swap_views else None)
        request = depth_request(args, calibration)
        engine, reason = build_engine(engine_options(args), "binary")
        print(f"engine: {engine.name} ({word_settings(reason, cli_words)}); source: {source.describe()}")
        numbers: list[int] = []  # the source's frame numbers written (a damaged frame is skipped)
        overwritten = 0  # frames whose folder held an earlier run's result (replaced unsaid: review)
        said: set[str] = set()  # notes printed for an earlier frame (each frame's result.json keeps all)
        # what every frame's result.json says of the run: what was opened (a video's result named
        # its file alone: review) and the time its timestamps count from (ns since 1970)
        of_run: dict[str, Any] = {"engine_reason": reason, "source_spec": _spec_path(args.left)}
        if (origin := getattr(source, "time_origin_ns", None)) is not None:
            of_run["start_time_ns"] = origin
        if args.frames:  # every frame's folder checked before any is written (review)
            start = 0 if source.live else source.frame_number
            refuse_foreign_frames(Path(args.out), range(start, start + args.frames))
        try:
            for pair in itertools.chain([first], pairs):
                # the source's own frame number (a damaged frame skipped leaves its number unused); a
                # live camera's frames are counted as written
                index = len(numbers) if source.live else source.frame_number
                if given is None and pair.calibration != calibration:
                    # each scene of a dataset folder has its own calib.txt (or none): the first one's
                    # gave every scene its baseline and depth in metres (review)
                    calibration = pair.calibration
                    request = depth_request(args, calibration)
                views = rectify(pair.left, pair.right)
                result = engine.compute(*views, request)
                result.notes[:0] = [n for n in (*calib_notes, *source.notes) if n not in result.notes]
                if depth_is_noise(source.notes):  # split the wrong way, or mono: no range to raise
                    drop_ceiling_notes(result)
                result.notes.extend(beyond_kitti_notes(result))
                lines = format_summary(result, calibration, _depth_unit(calibration), cli_words).splitlines()
                if numbers:  # a later frame's auto range is its "searched:" line (said each frame: review)
                    lines = [line for line in lines if not line.startswith(f"note: {AUTO_RANGE_WORDS}")]
                print(f"frame {index}: " + "\n".join(line for line in lines if line not in said))
                said.update(line for line in lines if line.startswith("note: "))
                out = frame_folder(Path(args.out), index) if args.frames else Path(args.out)
                # a folder's frames without times: null, not their numbers as seconds (review)
                stamp = None if getattr(source, "frame_number_times", False) else pair.timestamp
                extra = {**of_run, "source": source.describe(), "frame": index, "timestamp": stamp}
                files = None if source.live else source.frame_files(index)
                if files is not None or args.calib:  # result.json traces back to what it was made of
                    left, right = files or (None, None)
                    extra["inputs"] = _inputs(left, right, args.calib, second)
                replaced = earlier_result(out)
                overwritten += bool(args.frames and replaced)
                shown = (
                    views[0] if rig is not None or source_rectifies else None
                )  # the image the disparity is in
                _write(out, result, request, extra, args.no_probabilities, shown)
                if not numbers:  # said once, of the first frame
                    say_large_npz(out, args.no_probabilities, _frames_to_write(args.frames, source))
                if replaced and not args.frames:
                    print(f"note: this replaced the earlier result in {args.out}")
                numbers.append(index)
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM: what was written stays, and is said (review)
            if args.frames:
                # an earlier run's other frames are not removed then: said, not left mixed in unsaid
                others = sum(1 for f in frame_results(Path(args.out)) if int(f.name) not in numbers)
                mixed = f" ({others} other frame(s) there are an earlier run's)" if others else ""
                kept = f"stopped after {len(numbers)} frame(s); their results in {args.out} are whole"
                print(f"note: {kept}{mixed}")
            raise
        # what the source learnt at its end (a video cut short): said after the last frame
        for note in source.notes:
            if f"note: {note}" not in said:
                print(f"note: {note}")
    count = len(numbers)
    cut = any(CUT_SHORT_WORDS in note for note in source.notes)  # said already, and why
    if args.frames and count < args.frames and source.ended and not cut:  # the end, not a damaged frame
        print(f"note: {source.describe()} ended after {count} frame(s) of the {args.frames} asked for")
    total = source.frame_count
    if (
        not args.frames and not source.live and total is not None and total > 1
    ):  # one of many, unsaid (review)
        print(
            f"note: {source.describe()}, {total} frames: this wrote the first only (--frames {total} for all)"
        )
    if overwritten:
        print(f"note: this replaced the results of {overwritten} frame(s) of an earlier run in {args.out}")
    stale = remove_stale_frames(Path(args.out), numbers) if args.frames else 0
    if stale:
        print(f"note: removed the results of {stale} other frame(s) of an earlier run from {args.out}")
    _say_other_run(Path(args.out), single=not args.frames)
    print(f"wrote {count} frame(s) to {args.out}")
    return 0


def _spec_path(spec: str) -> str:
    """A source as given, its file or folder made absolute (``video:rig.mp4?layout=sbs`` ->
    ``video:/home/me/rig.mp4?layout=sbs``); a camera or synthetic scene as it is."""
    prefix, sep, rest = spec.partition(":")
    if sep and prefix == "video":
        path, q, query = rest.partition("?")
        return f"{prefix}:{Path(path).resolve()}{q}{query}" if Path(path).exists() else spec
    return str(Path(spec).resolve()) if Path(spec).exists() else spec


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "depth",
        help="depth for one image pair",
        description=(
            "Compute depth for a rectified pair. Writes OUT/result.npz, disparity.pfm, disparity.png "
            "(KITTI 16-bit), disparity_color.png and result.json (binary mode: result.npz, mask.png and "
            "result.json). Planes and ranges are pixels of "
            "disparity, or metres with an 'm' suffix when --calib is given. LEFT alone may be any source "
            "(a folder, video, recording, camera:0,1, synthetic): its first frame, or --frames N of them "
            "into OUT/000000/, OUT/000001/, ..."
        ),
    )
    p.add_argument("left", help="left image; alone, any source: folder, video, camera:0,1, synthetic, ...")
    p.add_argument("right", nargs="?", help="right image (omit it when LEFT is a source)")
    p.add_argument(
        "--frames",
        type=whole("--frames", 1),
        help="with a source: N frames into OUT/000000/, OUT/000001/, ...",
    )
    add_setting(p, vocabulary.MODE)
    p.add_argument("--planes", help="comma-separated planes, e.g. 12,24 or 2.5m")
    add_setting(p, vocabulary.LEVELS)
    add_setting(p, vocabulary.SPACING)
    p.add_argument("--range", nargs=2, metavar=("MIN", "MAX"), help="selective range (px or metres)")
    budget = vocabulary.BUDGET  # its range in --help: "outside [5, 3000] ms (see --help)" found none (review)
    p.add_argument(
        "--budget-ms",
        type=argument_type(budget),
        help=f"{budget.help}, {budget.minimum:g}-{budget.maximum:g} ms (default: none, every plane)",
    )
    p.add_argument(
        "--calib",
        help="calibration for metres: OpenCV YAML/XML, a Kalibr camchain, Middlebury calib.txt, "
        "stereodemo JSON, or the left camera's ROS camera_info (with --calib2)",
    )
    p.add_argument("--calib2", help="the right camera's ROS camera_info, or OpenCV's extrinsics.yml")
    p.add_argument("--out", default="out", type=output_folder, help="output folder (default ./out)")
    add_setting(p, vocabulary.MIN_CONFIDENCE)
    # None: not given (refused where they do not apply), their defaults otherwise
    p.set_defaults(min_confidence=None, levels=None)
    p.add_argument(
        "--no-probabilities",
        action="store_true",
        help="leave the planes' probabilities out of result.npz (a continuous answer's are most of its size)",
    )
    p.add_argument(
        "--swap-views",
        action="store_true",
        help="the cameras are the wrong way round: the right image (a video's right or lower half) "
        "is the left camera's; exchange them before the depth",
    )
    add_engine_args(p, engine=True, auto_range=True)
    p.set_defaults(func=run, usage_error=p.error)
