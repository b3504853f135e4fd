"""Writing a ``DepthResult`` to disk as the command-line contract describes.

``result.npz`` (disparity, probabilities, planes, range_state, confidence, depth; binary mode:
mask, probabilities, planes), ``disparity.pfm``, ``disparity.png`` (KITTI 16-bit),
``disparity_color.png`` (these three not in binary mode, which has no disparity), ``mask.png``
for binary mode, and ``result.json`` with the request, engine, timings and notes.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import tempfile
import time
import zipfile
from collections.abc import Collection
from pathlib import Path
from typing import Any

import numpy as np

from app.engine.errors import UserError, Wording, plain_words, word_settings
from app.engine.fileio import default_folder_mode, make_folder
from app.engine.formats import (
    KITTI_BEYOND_PX,
    atomic_write,
    colorize,
    write_color_png,
    write_grey_png,
    write_kitti_png,
    write_pfm,
)
from app.engine.types import Calibration, DepthRequest, DepthResult, Mode, farthest_level, farthest_plane
from app.engine.validation import tenth

OUTPUT_NAMES = (
    *("result.npz", "disparity.pfm", "disparity.png", "disparity_color.png", "mask.png", "result.json"),
    RECTIFIED_LEFT := "left_rectified.png",
)
_STAGING = ".result."  # prefix of the folder a set is written into before it is moved in


def write_result(
    out_dir: Path,
    result: DepthResult,
    request: DepthRequest,
    extra: dict[str, Any],
    probabilities: bool = True,
    rectified_left: np.ndarray | None = None,
) -> list[Path]:
    """Write the output set into ``out_dir`` as a whole, or leave what was there untouched.
    ``rectified_left``: the left image as a raw rig's rectification made it, whose pixels the
    disparity is in (not the input image's), written as ``left_rectified.png``.

    The files are written into a staging folder first; only when all of them are complete
    are they moved in (a rename each, which needs no space), ``result.json`` last, and files
    of an earlier set that this one lacks (``mask.png`` of a binary run) are removed. A full
    disk or a crash while writing leaves the earlier set as it was, never a mixture.
    """
    if out_dir.exists() and not out_dir.is_dir():
        raise UserError(f"--out {out_dir} is a file; give a folder (new, or one of earlier results)")
    refuse_foreign_files(out_dir)
    # said in result.json whoever writes it (a window snapshot's SGBM can search past 256 px)
    result.notes.extend(note for note in beyond_kitti_notes(result) if note not in result.notes)
    staging = _staging_folder(out_dir)
    try:
        try:
            names = _write_set(staging, result, request, extra, probabilities, rectified_left)
        except UserError as exc:  # named as the file it was to become, not the hidden staging one
            raise type(exc)(str(exc).replace(str(staging), str(out_dir))) from None
        if not out_dir.exists():
            os.chmod(staging, default_folder_mode())  # mkdtemp's 0700 would stay the folder's
            staging.rename(out_dir)  # a new folder: the whole set appears at once
        else:
            _move_in(staging, out_dir, names)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    remove_stale_staging(out_dir)
    return [out_dir / name for name in names]


def check_writable(out_dir: Path) -> None:
    """A ``UserError`` before any work when ``out_dir`` could not be written: its nearest existing
    folder takes no new folder (a read-only disk, /proc, no permission), or a file is in the way.
    Nothing is left behind."""
    _check_name(out_dir)
    home = out_dir
    while not home.exists() and home.parent != home:
        home = home.parent
    if not home.is_dir():
        where = "" if home == out_dir else f": {home}"  # the folder itself, or one above it
        raise UserError(f"--out {out_dir}{where} is a file; give a folder (new, or one of earlier results)")
    os.rmdir(_new_staging(home, out_dir))


def earlier_result(out_dir: Path, record: str = "result.json", key: str = "request") -> bool:
    """Whether ``out_dir`` holds a result set this program wrote: its ``record`` (``result.json``;
    ``flow.json`` for flow), a JSON object with ``key`` (the request it answered)."""
    try:
        meta = json.loads((out_dir / record).read_text())
    except (OSError, ValueError):  # missing, unreadable, not JSON (UnicodeDecodeError is a ValueError)
        return False
    return isinstance(meta, dict) and key in meta


def refuse_foreign_files(
    out_dir: Path,
    inputs: Collection[str | Path] = (),
    names: Collection[str] = OUTPUT_NAMES,
    record: str = "result.json",
    key: str = "request",
) -> None:
    """A ``UserError`` when writing a set into ``out_dir`` would replace or remove files this
    program did not write: files of the set's ``names`` beside no earlier set's ``record``
    (``earlier_result``: a scene folder's own disparity.png was removed by a binary run), or one
    of ``inputs`` (a left image named disparity.png was written over)."""
    if not out_dir.is_dir():
        return
    ours = {(out_dir / name).resolve() for name in names}
    for given in inputs:
        if Path(given).resolve() in ours:
            raise UserError(
                f"{given} is an input, and this run would write its result over it: "
                "choose another --out folder (nothing was written)"
            )
    if earlier_result(out_dir, record, key):
        return
    foreign = [name for name in names if (out_dir / name).exists()]
    if foreign:
        # "no result.json beside them" was said of a result.json of the user's (review)
        why = (
            f"its {record} is not one" if record in foreign else f"no {record} of an earlier run beside them"
        )
        raise UserError(
            f"{out_dir} already holds {', '.join(foreign)}, not written by bi3d-studio ({why}): choose "
            "another --out folder (nothing was written)"
        )


def refuse_foreign_frames(out_dir: Path, indices: Collection[int]) -> None:
    """``refuse_foreign_files`` for every frame folder (``frame_folder``) of ``indices`` that a
    many-frame run is to write, before it writes any: checked frame by frame, a user's file in
    the third frame's folder stopped the run after it had replaced the first two (review)."""
    for index in indices:
        refuse_foreign_files(frame_folder(out_dir, index))


def _staging_folder(out_dir: Path) -> Path:
    _check_name(out_dir)
    return _new_staging(make_folder(out_dir if out_dir.is_dir() else out_dir.parent))


def _check_name(out_dir: Path) -> None:
    if not str(out_dir).strip():  # Path("") is "." (this folder): a blank --out is refused as it is parsed
        raise UserError("the output folder name is empty; give --out FOLDER")


def _new_staging(home: Path, wanted: Path | None = None) -> Path:
    """A new, empty staging folder in ``home``, or a ``UserError`` saying it cannot be made. When
    ``wanted`` (the folder asked for) is below ``home``, the error names it too: "cannot write
    into /proc (No such file or directory)" read as if /proc were missing."""
    try:
        return Path(tempfile.mkdtemp(prefix=_STAGING, suffix=".tmp", dir=home))
    except OSError as exc:
        if wanted is not None and wanted != home:
            raise UserError(
                f"cannot make {wanted}: {home} takes no new folder ({exc.strerror}); "
                "choose another --out folder"
            ) from None
        raise UserError(f"cannot write into {home} ({exc.strerror}); choose another --out folder") from None


STORED_BYTES = 8 << 20  # arrays at least this large go into result.npz uncompressed


def npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """An ``.npz`` archive (as ``np.savez_compressed`` writes, ``np.load`` reads it) in which the
    arrays of ``STORED_BYTES`` or more are stored as they are: a continuous answer's plane
    probabilities (29 x 500 x 741 float32 on the demo, 43 MB) shrank only to 37 MB and took
    3.8 s of a 9 s `depth` run to compress; the small arrays are compressed as before."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, value in arrays.items():
            array = np.asanyarray(value)
            info = zipfile.ZipInfo(name + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_STORED if array.nbytes >= STORED_BYTES else zipfile.ZIP_DEFLATED
            with zf.open(info, "w", force_zip64=True) as member:
                np.lib.format.write_array(member, array, allow_pickle=False)
    return buf.getvalue()


COLOR_TOP_PERCENTILE = 99.0  # disparity_color.png's top: a few outliers no longer set every colour


def color_range(disparity: np.ndarray, top: float) -> tuple[float, float]:
    """disparity_color.png's ends, px: 0 (infinitely far) to the 99th percentile of the answers
    (their maximum let 546 outlier pixels at 130 px turn a 0-74 px scene blue), or to ``top``
    when nothing was answered."""
    answered = disparity[np.isfinite(disparity)]
    if not answered.size:
        return 0.0, top
    return 0.0, max(float(np.percentile(answered, COLOR_TOP_PERCENTILE)), 1.0)


MASK_CLOSER, MASK_FARTHER, MASK_UNKNOWN = 255, 0, 128  # mask.png's grey levels
BINARY_ARRAYS = ("probabilities", "planes", "confidence")  # a binary result.npz's, beside its mask


def mask_levels(result: DepthResult) -> np.ndarray:
    """A binary answer as mask.png holds it: ``MASK_CLOSER`` where the scene is closer than the
    plane, ``MASK_FARTHER`` where it is not, ``MASK_UNKNOWN`` where the engine found no match
    (SGBM's holes, a NaN probability): they were black, read as "farther" (review)."""
    assert result.mask is not None
    levels = np.where(result.mask, MASK_CLOSER, MASK_FARTHER).astype(np.uint8)
    if result.probabilities is not None and len(result.probabilities):
        levels[np.isnan(result.probabilities[0])] = MASK_UNKNOWN
    return levels


BEYOND_KITTI_NOTE = (
    f"answers of {KITTI_BEYOND_PX:.0f} px or more do not fit disparity.png (KITTI 16-bit): they are 0 "
    "(unknown) there; result.npz and disparity.pfm hold them"
)


def beyond_kitti_notes(result: DepthResult) -> list[str]:
    """A note when some of the answer is farther than disparity.png can hold (``KITTI_BEYOND_PX``):
    they were written as 255.996 px, unsaid (review)."""
    if result.mask is not None:  # a binary answer writes no disparity.png
        return []
    with np.errstate(invalid="ignore"):
        beyond = bool(np.any(result.disparity >= KITTI_BEYOND_PX))
    return [BEYOND_KITTI_NOTE] if beyond else []


def derived_probabilities(result: DepthResult) -> bool:
    """Whether the answer's plane probabilities say nothing its disparity does not: SGBM's over a
    range are 0 or 1 (disparity > plane), 44 MB of a recording's 2.4 MB frame (review)."""
    return result.engine == "sgbm" and result.mode in (Mode.CONTINUOUS, Mode.SELECTIVE)


def _write_set(
    folder: Path,
    result: DepthResult,
    request: DepthRequest,
    extra: dict[str, Any],
    probabilities: bool = True,
    rectified_left: np.ndarray | None = None,
) -> list[str]:
    """``probabilities``: False leaves the planes' probabilities out of result.npz (a continuous
    answer's are most of it: 376 MB at 1282 x 1110)."""
    arrays = result.arrays()
    if not probabilities or derived_probabilities(result):
        del arrays["probabilities"]
    if result.mask is not None:  # a binary answer: its mask, not an all-NaN disparity (review)
        arrays = {"mask": mask_levels(result), **{k: v for k, v in arrays.items() if k in BINARY_ARRAYS}}
        if result.confidence is None:  # no rating: zeros read "sure of nothing"
            del arrays["confidence"]
    if request.calibration is not None and result.mask is None:
        # metres per pixel: every user had to redo f * B / (d + doffs) from result.json (review)
        depth = request.calibration.depth_m(result.disparity)
        # in baselines where the calibration has none measured, named so as result.json names it
        # (a self-rectified pair's 19.8 baselines read 19.8 m from result.npz: review)
        arrays["depth" if request.calibration.baseline_known else "depth_baselines"] = depth
        far = farthest_level(result)
        if far is not None:  # it reaches to infinity: its middle read 30 m for "15 m or more" (review)
            depth[far] = np.inf
    atomic_write(folder / "result.npz", npz_bytes(arrays))
    written = ["result.npz"]
    if rectified_left is not None:
        write_color_png(folder / RECTIFIED_LEFT, rectified_left)
        written.append(RECTIFIED_LEFT)
    colour_range = None
    if result.mask is None:  # a binary answer has no disparity: all-black pictures of NaN would mislead
        write_pfm(folder / "disparity.pfm", result.disparity)
        write_kitti_png(folder / "disparity.png", result.disparity)
        colour_range = color_range(result.disparity, float(request.max_disparity))
        write_color_png(folder / "disparity_color.png", colorize(result.disparity, *colour_range))
        written += ["disparity.pfm", "disparity.png", "disparity_color.png"]
    else:
        write_grey_png(folder / "mask.png", mask_levels(result))
        written.append("mask.png")
    planes = [round(float(v), 4) for v in result.planes]  # the numbers behind summary's planes_px text
    meta = {"request": request_json(request), **summary(result), "planes": planes, **extra}
    if colour_range is not None:  # what disparity_color.png's ends stand for
        meta["disparity_color_range_px"] = [round(v, 3) for v in colour_range]
    if request.calibration is not None and "calibration" not in extra:  # what turns it into metres
        meta["calibration"] = calibration_json(request.calibration, result.disparity, farthest_plane(result))
    atomic_write(folder / "result.json", (json.dumps(meta, indent=2) + "\n").encode())
    written.append("result.json")
    return written


def _move_in(staging: Path, out_dir: Path, names: list[str]) -> None:
    """Renames only (no data is written): the earlier set's extra files go, result.json comes last."""
    (out_dir / "result.json").unlink(missing_ok=True)  # the set is incomplete until it is back
    for stale in set(OUTPUT_NAMES) - set(names):
        (out_dir / stale).unlink(missing_ok=True)
    for name in sorted(names, key=lambda n: n == "result.json"):
        os.replace(staging / name, out_dir / name)


def remove_stale_staging(out_dir: Path) -> None:
    """Staging folders left by a run that was killed while writing (next to or inside ``out_dir``)."""
    for folder in (out_dir, out_dir.parent):
        for leftover in folder.glob(f"{_STAGING}*.tmp"):
            if leftover.is_dir() and _older_than(leftover, 60.0):
                shutil.rmtree(leftover, ignore_errors=True)


FRAME_FOLDER_DIGITS = 6  # OUT/000000, OUT/000001, ...: one result set per frame of a source


def frame_folder(out_dir: Path, index: int) -> Path:
    """Where frame ``index`` of a many-frame run writes its result set."""
    return out_dir / f"{index:0{FRAME_FOLDER_DIGITS}d}"


def frame_results(out_dir: Path) -> list[Path]:
    """The frame folders (``frame_folder``) in ``out_dir`` that hold a result set this program
    wrote (``earlier_result``: a user's own result.json there was taken for one, and its folder's
    files removed as an earlier run's: review), in order."""
    if not out_dir.is_dir():
        return []
    return sorted(
        folder
        for folder in out_dir.iterdir()
        if len(folder.name) == FRAME_FOLDER_DIGITS and folder.name.isdigit() and earlier_result(folder)
    )


def remove_stale_frames(out_dir: Path, written: int | Collection[int]) -> int:
    """The frame folders (``frame_folder``) an earlier run left in ``out_dir`` beside this run's
    ``written`` ones (their numbers, or a count: 0 to count - 1): removed, so the folder holds one
    run's frames, not a mixture. Only folders that hold a result set (``result.json``) are
    touched, and only the set's own files (``OUTPUT_NAMES``) go: a folder that holds anything
    else as well (a user's notes) keeps it and stays. -> how many sets were removed."""
    keep = set(range(written)) if isinstance(written, int) else set(written)
    removed = 0
    for folder in frame_results(out_dir):
        if int(folder.name) not in keep:
            for own in OUTPUT_NAMES:
                (folder / own).unlink(missing_ok=True)
            with contextlib.suppress(OSError):  # not empty: the user's files stay with it
                folder.rmdir()
            removed += 1
    return removed


def _older_than(path: Path, seconds: float) -> bool:
    try:
        return time.time() - path.stat().st_mtime > seconds
    except OSError:
        return False


def calibration_json(
    calibration: Calibration, disparity: np.ndarray, farthest_plane: float | None = None
) -> dict[str, Any]:
    """The rectified geometry the depth is in (focal length, principal point, baseline) and the
    depth it gives: a raw rig's rectified focal length differs from its M1's (522 against 500 px
    on a review's rig), and result.json named only the calibration file. ``farthest_plane``: a
    quantized answer's first plane, below which its farthest level reaches to infinity (its
    middle's depth read 30 m for "15 m or more", where result.npz says inf: code review)."""
    out: dict[str, Any] = {
        "focal_px": round(calibration.focal_px, 4),
        "cx": round(calibration.cx, 4),
        "cy": round(calibration.cy, 4),
        "doffs": round(calibration.doffs, 4),
        "baseline_m": round(calibration.baseline_m, 6),
        "baseline_known": calibration.baseline_known,
        "depth": "Z = focal_px * baseline_m / (disparity + doffs)",
    }
    d = np.asarray(disparity)[np.isfinite(disparity)]
    if d.size:
        # the depths of the disparity's percentiles (depth falls as disparity grows), so every
        # answered pixel counts and the median is the one the summary prints: the depths of
        # pixels at 0 px (infinitely far) were dropped, and half a scene at 0 px read 190 m
        p5, median, p95 = np.percentile(d, [5, 50, 95])
        z = calibration.depth_m(np.array([median, p95, p5]))
        if farthest_plane is not None:  # the farthest level: its depth has no end
            z[np.array([median, p95, p5]) < farthest_plane] = np.inf
        stats: dict[str, Any] = {
            k: round(float(v), 4) if np.isfinite(v) else None
            for k, v in zip(("median", "p5", "p95"), z, strict=True)
        }
        if any(v is None for v in stats.values()):
            stats["null"] = (
                f"infinitely far: disparity + doffs <= 0, or the farthest level (below {farthest_plane:g} px)"
                if farthest_plane is not None
                else "infinitely far: disparity + doffs <= 0"
            )
        out[f"depth_{calibration.depth_unit}"] = stats
    return out


def request_json(request: DepthRequest) -> dict[str, Any]:
    out: dict[str, Any] = {
        "mode": request.mode.value,
        "planes": list(request.planes),
        "levels": request.levels,
        "spacing": request.spacing.value,
        "range": list(request.range) if request.range else None,
        "budget_ms": request.budget_ms,
        "max_disparity": "auto" if request.auto_range else request.max_disparity,
        "min_confidence": request.min_confidence,  # what left the unknown pixels unknown (review)
    }
    if request.auto_range:  # what the frame swept is in the result's max_disparity_auto_px
        out["max_disparity_ceiling"] = request.max_disparity
    return out


def summary(result: DepthResult) -> dict[str, Any]:
    """Figures worth printing: what ran, what it chose, what it found, how long it took."""
    d = result.disparity
    valid = np.isfinite(d)
    span = _every_disparity(result)
    out: dict[str, Any] = {
        "engine": result.engine,
        "runtime": result.runtime,
        "device": result.device,
        "precision": result.precision,
        "mode": result.mode.value,
        "planes_px": _planes_text(result.planes) if span is None else f"every disparity from {span}",
        # a binary answer has no disparity: 0.0 read as "nothing valid" (its own fractions below)
        **({} if result.mode is Mode.BINARY else {"valid_fraction": round(float(valid.mean()), 4)}),
        "timings_ms": {k: round(v, 2) for k, v in result.timings.items()},
        "notes": [word_settings(n, plain_words) for n in result.notes],
    }
    if valid.any() and result.mode is not Mode.BINARY:
        out["disparity_px"] = {
            "median": round(float(np.median(d[valid])), 3),
            "p5": round(float(np.percentile(d[valid], 5)), 3),
            "p95": round(float(np.percentile(d[valid], 95)), 3),
        }
    if result.mode is Mode.BINARY and result.mask is not None:
        out["closer_than_plane_fraction"] = round(float(result.mask.mean()), 4)
        unknown = 0.0
        if result.probabilities is not None and len(result.probabilities):  # SGBM's holes: not "farther"
            unknown = float(np.isnan(result.probabilities[0]).mean())
        out["unknown_fraction"] = round(unknown, 4)
    if result.range_state is not None:
        # state 0 also covers pixels no engine could match; count only those with a disparity
        known = {
            -1: result.range_state == -1,
            0: (result.range_state == 0) & valid,
            1: result.range_state == 1,
        }
        out["range_state_fraction"] = {
            name: round(float(known[v].mean()), 4)
            for name, v in (("farther", -1), ("inside", 0), ("closer", 1))
        }
        answered = known[-1] | known[0] | known[1]
        out["range_state_fraction"]["unknown"] = round(float(1.0 - answered.mean()), 4)
    if result.searched is not None:  # --max-disparity auto: the sweep this frame chose
        out["max_disparity_auto_px"] = [round(v, 2) for v in result.searched]
    if result.confidence is not None:
        out["confidence_mean"] = round(float(np.nanmean(result.confidence)), 4)
    if result.runtime_choice:
        out["runtime_choice"] = result.runtime_choice  # auto: from the cache, or timed in this run
    if result.choice:
        out["budget_choice"] = {k: round(v, 2) for k, v in result.choice.items()}
    return out


def _planes_text(planes: np.ndarray) -> str:
    """Planes to a tenth of a pixel (``validation.tenth``)."""
    if len(planes) <= 8:
        return ", ".join(tenth(p) for p in planes)
    steps = np.diff(planes)
    if np.allclose(steps, steps[0]):  # a grid: its step says why the last plane may pass the range
        return f"{len(planes)} every {tenth(steps[0])} from {tenth(planes[0])} to {tenth(planes[-1])}"
    return f"{len(planes)} from {tenth(planes[0])} to {tenth(planes[-1])}"


def _every_disparity(result: DepthResult) -> str | None:
    """'0 to 192 px (semi-global matching)': what SGBM's continuous answer searched, where it
    sweeps no planes but scores every whole disparity of the range; None for any other answer."""
    if result.engine != "sgbm" or result.mode is not Mode.CONTINUOUS or not len(result.planes):
        return None
    return f"{float(result.planes[0]):g} to {float(result.planes[-1]):g} px (semi-global matching)"


def format_summary(
    result: DepthResult, calibration: Calibration | None = None, unit: str = "m", words: Wording = plain_words
) -> str:
    """A few human-readable lines about a result; ``unit`` of depths ('baselines' where the
    calibration's baseline is a placeholder of 1); ``words``: how the notes name settings."""
    info = summary(result)
    span = _every_disparity(result)
    if span is not None:
        lines = [f"mode {info['mode']}, every disparity from {span}"]
    else:
        lines = [f"mode {info['mode']}, planes: {info['planes_px']} px"]
    if "disparity_px" in info:
        d = info["disparity_px"]
        line = (
            f"disparity: median {d['median']:.1f} px (p5 {d['p5']:.1f}, p95 {d['p95']:.1f}), "
            f"{100 * info['valid_fraction']:.1f}% valid"
        )
        far = farthest_plane(result)
        if calibration is not None and far is not None and d["median"] < far:
            z = calibration.depth_m(np.array([far]))[0]
            line += f"; median depth beyond {z:.2f} {unit} (the farthest level)"
        elif calibration is not None:
            z = calibration.depth_m(np.array([d["median"]]))[0]
            line += (
                f"; median depth {z:.2f} {unit}"
                if np.isfinite(z) and z > 0
                else "; median depth unknown (median disparity not positive)"
            )
        lines.append(line)
    elif result.range_state is not None and not (result.range_state == 0).any():
        lines.append("disparity: no pixel lies inside the range (0% valid); see the range line below")
    elif info["mode"] != Mode.BINARY.value:
        # SGBM rates nothing: --min-confidence was no advice there (its search of a pair as narrow
        # as the range leaves no column to answer: review)
        why = (
            "the pair lacks texture, or lower --min-confidence"
            if result.engine != "sgbm"
            else "the pair lacks texture, or the images are too narrow for the range searched"
        )
        lines.append(f"disparity: no pixel kept an answer (0% valid): {why}")
    if "closer_than_plane_fraction" in info:
        unknown = info.get("unknown_fraction", 0.0)
        lines.append(
            f"closer than the plane: {100 * info['closer_than_plane_fraction']:.1f}% of pixels"
            + (f", {100 * unknown:.1f}% unknown (no match found)" if unknown > 0 else "")
        )
    if "range_state_fraction" in info:
        f = info["range_state_fraction"]
        lines.append(
            f"range: {100 * f['inside']:.1f}% inside, {100 * f['closer']:.1f}% closer, "
            f"{100 * f['farther']:.1f}% farther"
            + (f", {100 * f['unknown']:.1f}% unknown" if f.get("unknown", 0.0) > 0 else "")
        )
    if "max_disparity_auto_px" in info:
        lo, hi = info["max_disparity_auto_px"]
        lines.append(f"searched: {lo:g}-{hi:g} px (max disparity auto)")
    if "budget_choice" in info:
        lines.append("budget: " + ", ".join(f"{k} {v:g}" for k, v in info["budget_choice"].items()))
    # what ran, said even when it was asked for by name (only result.json said it)
    ran = f"{info['engine']}, {info['runtime']} on {info['device']}, {info['precision']}"
    lines.append(f"time ({ran}): " + ", ".join(f"{k} {v:.1f} ms" for k, v in info["timings_ms"].items()))
    lines += [f"note: {word_settings(n, words)}" for n in result.notes]
    return "\n".join(lines)
