"""Image files as stereo sources: pairs, folders of pairs, and datasets with ground truth.

Datasets: Middlebury 2014 / ETH3D (a folder with ``im0.png``, ``im1.png``, optional
``disp0GT.pfm`` and ``calib.txt``, or a folder of such folders), KITTI 2015 (``image_2/``,
``image_3/``, ``disp_occ_0/``) and SceneFlow (``left/``, ``right/``, ``disparity/*.pfm``).
Folders of pairs: ``left/`` and ``right/`` subfolders, or files named ``*left*``/``*right*``.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from app.engine.calibration.files import MiddleburyCalib, read_middlebury_calib
from app.engine.calibration.validate import fit_to_frames
from app.engine.errors import UserError
from app.engine.formats import read_kitti_png, read_pair_rgb, read_pfm
from app.engine.sources.base import Frame, StereoSource, natural_key
from app.engine.types import Calibration, StereoPair

IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".ppm", ".pgm", ".webp"})


MAX_SKIPPED_IN_A_ROW = 10  # damaged frames skipped one after another before the source gives up


@dataclass(frozen=True)
class Scene:
    """One stereo pair on disk; files are read on ``load``."""

    name: str
    left: Path
    right: Path
    gt: Path | None = None
    calib: Path | None = None
    gt_scale: float | None = None  # a PNG ground truth's value per pixel of disparity (None: KITTI's 256)

    def load(self, notes: list[str] | None = None) -> tuple[StereoPair, MiddleburyCalib | None]:
        """The pair (with its ground truth and calibration) and the Middlebury metadata; what
        reading the images noticed goes to ``notes`` when given (``read_pair_rgb``)."""
        left, right = read_pair_rgb(self.left, self.right, notes)
        meta = read_middlebury_calib(self.calib) if self.calib else None
        if meta is not None and meta.note and notes is not None:
            notes.append(meta.note)
        gt = read_disparity(self.gt, self.gt_scale) if self.gt else None
        if gt is not None and gt.shape != left.shape[:2]:
            raise UserError(
                f"ground truth {self.gt} is {gt.shape[1]}x{gt.shape[0]}, images are "
                f"{left.shape[1]}x{left.shape[0]}; they must match"
            )
        if (
            self.gt is not None
            and gt is not None
            and np.isfinite(gt).any()
            and np.nanmax(gt) >= left.shape[1]
        ):
            # a wrong --gt-scale read KITTI's x256 map as 1080 px in a 370 px image, scored unsaid
            how = (
                "check --gt-scale (KITTI's 16-bit PNGs hold disparity x 256)"
                if self.gt.suffix.lower() == ".png"
                else "is it this pair's disparity map?"
            )
            raise UserError(
                f"ground truth {self.gt} reaches {np.nanmax(gt):.0f} px of disparity, more than the "
                f"images' {left.shape[1]} px width: {how}"
            )
        cal = meta.calibration if meta else None
        if meta is not None:
            frame = (left.shape[1], left.shape[0])
            size = (meta.width, meta.height) if meta.width and meta.height else None
            # without a size, a note when the principal point is far off these frames' centre (a
            # file of another size: the window used it silently, as depth --calib did not: review)
            cal, _, said = fit_to_frames(meta.calibration, None, size, frame, str(self.calib))
            if said and size is not None:  # rescaled: its ndisp is in the calibrated images' pixels too
                ndisp = math.ceil(meta.ndisp * frame[0] / size[0]) if meta.ndisp else meta.ndisp
                meta = MiddleburyCalib(cal, frame[0], frame[1], ndisp)
                said += f", and its ndisp to {ndisp} px" if ndisp else ""
            if said and notes is not None:
                notes.append(said)
        return StereoPair(left, right, 0.0, cal, gt), meta


@dataclass(frozen=True, kw_only=True)
class FrameScene(Scene):
    """A frame already in memory (from any source), shaped as a scene for evaluation."""

    pair: StereoPair

    def load(self, notes: list[str] | None = None) -> tuple[StereoPair, MiddleburyCalib | None]:
        return self.pair, None


def read_disparity(path: Path, scale: float | None = None) -> np.ndarray:
    """Ground-truth disparity from PFM or a PNG (KITTI's 16-bit, or value / ``scale``); unknown
    pixels become NaN."""
    if path.suffix.lower() == ".pfm":
        if scale is not None:
            raise UserError(f"{path} is a PFM, which holds disparity in pixels: drop --gt-scale")
        disp = read_pfm(path)
        disp = disp[..., 0] if disp.ndim == 3 else disp
        return np.where(np.isfinite(disp) & (disp > 0), disp, np.nan).astype(np.float32)
    return read_kitti_png(path, scale)


def middlebury_scene(folder: Path) -> Scene | None:
    left, right = folder / "im0.png", folder / "im1.png"
    if not (left.is_file() and right.is_file()):
        return None
    # disp0GT.pfm in the 2005-2006 and training sets, disp0.pfm in 2014's downloaded scenes
    gt = next(
        (g for g in (folder / "disp0GT.pfm", folder / "disp0.pfm") if g.is_file()), folder / "disp0GT.pfm"
    )
    calib = folder / "calib.txt"
    return Scene(folder.name, left, right, gt if gt.is_file() else None, calib if calib.is_file() else None)


def _kitti(folder: Path) -> Iterator[Scene]:
    gt_dir = folder / "disp_occ_0"
    for left in sorted((folder / "image_2").glob("*_10.png")):
        right = folder / "image_3" / left.name
        if right.is_file():
            gt = gt_dir / left.name
            yield Scene(left.stem, left, right, gt if gt.is_file() else None)


def _sceneflow(folder: Path) -> list[Scene]:
    scenes = []
    for left in _images(folder / "left"):
        right, gt = folder / "right" / left.name, folder / "disparity" / (left.stem + ".pfm")
        if right.is_file():
            scenes.append(Scene(left.stem, left, right, gt if gt.is_file() else None))
    return scenes


def find_scenes(path: str | Path) -> list[Scene]:
    """Scenes under ``path`` in any supported dataset layout; a ``UserError`` if none."""
    root = Path(path)
    if not root.is_dir():
        raise UserError(f"scene folder not found: {root}; give a Middlebury, KITTI 2015 or SceneFlow folder")
    single = middlebury_scene(root)
    if single is not None:
        return [single]
    if not (root / "image_2").is_dir() and (root / "training" / "image_2").is_dir():
        root = root / "training"  # KITTI's download root: its testing half has no ground truth
    if (root / "image_2").is_dir():
        scenes = list(_kitti(root))
    elif all((root / sub).is_dir() for sub in ("left", "right", "disparity")):
        scenes = _sceneflow(root)
    else:
        found = (middlebury_scene(sub) for sub in sorted(root.iterdir()) if sub.is_dir())
        scenes = [s for s in found if s is not None]
    if not scenes:
        raise UserError(
            f"no stereo scenes in {root}: expected im0.png/im1.png (Middlebury) or image_2/image_3 (KITTI)"
        )
    return scenes


def _images(folder: Path) -> list[Path]:
    """Image files in a folder, in natural order."""
    files = [p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES]
    return sorted(files, key=lambda p: natural_key(p.name))


def _swap_side(name: str, old: str, new: str) -> str:
    """Replace the last match of ``old`` (a pattern, any case) in ``name`` by ``new``, keeping its
    case (left -> right, Left -> Right, _L -> _R)."""
    matches = list(re.finditer(old, name, flags=re.IGNORECASE))
    if not matches:
        return name
    m = matches[-1]
    found = m.group(0)
    repl = new.upper() if found.isupper() else new.capitalize() if found[0].isupper() else new
    return name[: m.start()] + repl + name[m.end() :]


_LEFT_NAME = re.compile(r"left|(?<![a-z])l(?![a-z])|im0|cam0", re.IGNORECASE)
_RIGHT_NAME = re.compile(r"right|(?<![a-z])r(?![a-z])|im1|cam1", re.IGNORECASE)


def left_first(first: str, second: str) -> tuple[str, str]:
    """Two image paths as (left, right): by their names where one says left (``left``, ``_L``,
    ``im0``, ``cam0``) and the other right, else in the order given (the first chosen is left)."""
    a, b = Path(first).stem, Path(second).stem

    def side(stem: str) -> str | None:
        is_left, is_right = bool(_LEFT_NAME.search(stem)), bool(_RIGHT_NAME.search(stem))
        return "left" if is_left and not is_right else "right" if is_right and not is_left else None

    return (second, first) if (side(a), side(b)) == ("right", "left") else (first, second)


# how a left view's file name turns into its right view's: whole words first, then a side letter
# after a separator or at the end of a name in another case (aloeL -> aloeR, frame_l -> frame_r)
_PARTNER_WORDS = (("left", "right"), ("Left", "Right"), ("LEFT", "RIGHT"), ("im0", "im1"), ("cam0", "cam1"))
_PARTNER_LETTER = re.compile(r"(?:(?<=[^A-Za-z])[lL]|(?<=[a-z])L)(?=$|[^A-Za-z])")


def right_partner(left: str | Path) -> Path | None:
    """The right view's file beside a left one named alike (``aloeL.jpg`` -> ``aloeR.jpg``,
    ``left01.jpg`` -> ``right01.jpg``, ``im0.png`` -> ``im1.png``), or None when none is there."""
    path = Path(left)
    stem = path.stem
    candidates = [stem.replace(a, b) for a, b in _PARTNER_WORDS if a in stem]
    candidates.append(_PARTNER_LETTER.sub(lambda m: "R" if m.group() == "L" else "r", stem))
    for name in candidates:
        partner = path.with_name(name + path.suffix)
        if name != stem and partner.is_file():
            return partner
    return None


# subfolders of the two cameras, as stereo rigs and datasets name them (case does not matter):
# left/right, L/R, cam0/cam1 (EuRoC, with data/ inside), image_02/image_03 (KITTI raw, data/ inside)
PAIR_FOLDERS = (
    ("left", "right"), ("l", "r"), ("cam0", "cam1"), ("image_02", "image_03"), ("image_2", "image_3"),
    ("left_images", "right_images"), ("leftimages", "rightimages"),
)  # fmt: skip
# a side as its own word in a file name: frame_L.png, L_0001.png, 0001-r.png (not "lr" or "ral")
_SIDE_TOKEN = {side: re.compile(rf"(?<![a-z0-9]){side}(?![a-z0-9])", re.IGNORECASE) for side in ("l", "r")}
PAIR_FOLDER_HELP = (
    "left/ and right/ subfolders (or L/ R/, cam0/ cam1/, image_02/ image_03/, image_2/ image_3/) or "
    "files named *left*/*right* (or *_L/*_R)"
)


def pair_folder_scenes(folder: Path, notes: list[str] | None = None) -> list[Scene]:
    """Pairs in the two cameras' subfolders (``PAIR_FOLDERS``; their images, or those of a
    ``data/`` folder inside), or files named ``*left*`` / ``*right*``, or with ``L`` / ``R``
    as a word of their names (``0001_L.png``).

    An image without its partner is skipped, said in ``notes`` (a recording tool that dropped
    one frame of one camera refused the whole folder); none matched is a ``UserError`` naming
    one. Camera folders whose names never match (a ROS export stamps each camera's frames with
    its own clock: frame_<t>.png beside frame_<t + 12 us>.png) but hold as many images each are
    paired in name order, with a note.
    """
    notes = [] if notes is None else notes
    found = _camera_folders(folder)
    if found is not None:
        (left_dir, right_dir), (old, new) = found
        lefts, rights = _images(left_dir), _images(right_dir)
        partner = {p: right_dir / p.name for p in lefts}
        for p in lefts:  # also accept left/a_left_1.png with right/a_right_1.png (L/a_L.png, R/a_R.png)
            if not partner[p].is_file():
                partner[p] = right_dir / _swap_side(p.name, old, new)
        if lefts and rights and not any(partner[p].is_file() for p in lefts):
            shared = (
                f"{left_dir.name}/ and {right_dir.name}/ share no file name ({lefts[0].name}, "
                f"{rights[0].name})"
            )
            by_time = _paired_by_time(lefts, rights)
            if by_time is not None:
                partner.update(by_time)
                notes.append(
                    f"{shared}: their images are paired by the times in their names, each with the "
                    f"other camera's nearest within half a frame ({len(by_time)} pairs)"
                )
            elif len(lefts) == len(rights):
                partner = dict(zip(lefts, rights, strict=True))  # both sorted by name (natural order)
                notes.append(f"{shared}: their {len(lefts)} images are paired in name order")
    else:
        files = _images(folder)
        lefts = [p for p in files if "left" in p.name.lower()]
        rights = [p for p in files if "right" in p.name.lower()]
        partner = {p: p.with_name(_swap_side(p.name, "left", "right")) for p in lefts}
        if not lefts and not rights:  # L / R as a word of the name
            lefts = [p for p in files if _SIDE_TOKEN["l"].search(p.stem)]
            rights = [p for p in files if _SIDE_TOKEN["r"].search(p.stem)]
            partner = {p: p.with_name(_swap_side(p.name, _SIDE_TOKEN["l"].pattern, "r")) for p in lefts}
    if not lefts and not rights:
        raise UserError(f"no stereo pairs in {folder}: expected {PAIR_FOLDER_HELP}")
    paired = [p for p in lefts if partner[p].is_file()]  # each partner looked up once
    _check_matched(folder, lefts, rights, partner, paired, notes)
    return [Scene(p.stem, p, partner[p]) for p in paired]


_LAST_NUMBER = re.compile(r"(\d+)(?!.*\d)")
_SECONDS_PER_UNIT = ((1e17, 1e-9), (1e14, 1e-6), (1e11, 1e-3))  # ns, us, ms since 1970 (2001 on)


def name_times(paths: Sequence[Path], start: int | None = None) -> list[float] | None:
    """The times in the files' names, in seconds since ``start`` (in the names' unit; default the
    first name's): the last number of each stem, a ROS or EuRoC export's nanoseconds since 1970,
    or micro- or milliseconds. None when a name has none, or they do not grow in name order (a
    frame counter, 0001, is no time)."""
    clock = _name_clock(paths)
    if clock is None:
        return None
    values, scale = clock
    origin = values[0] if start is None else start
    return [(value - origin) * scale for value in values]  # in integers first: exact to the ns


def name_origin_ns(paths: Sequence[Path]) -> int | None:
    """The first name's time in nanoseconds since 1970 where ``name_times`` reads times (a ROS or
    EuRoC export), else None: a recording keeps it, so its frames still line up with the other
    sensors' (it kept 0.0, 0.1, ... s alone: review)."""
    clock = _name_clock(paths)
    return None if clock is None else clock[0][0] * round(clock[1] * 1e9)


def _name_clock(paths: Sequence[Path]) -> tuple[list[int], float] | None:
    """The numbers in the files' names and the seconds one of them stands for, where they are
    times (``name_times``), else None."""
    values = [_name_number(path) for path in paths]
    if not values or any(b <= a for a, b in itertools.pairwise(values)):
        return None
    scale = next((unit for floor, unit in _SECONDS_PER_UNIT if values[0] >= floor), None)
    return None if scale is None else (values, scale)


def _name_number(path: Path) -> int:
    """The last number in a file's stem (0 without one)."""
    match = _LAST_NUMBER.search(path.stem)
    return int(match.group(1)) if match else 0


def _paired_by_time(lefts: list[Path], rights: list[Path]) -> dict[Path, Path] | None:
    """Each left image with the right one whose name's time is nearest, when that is within half
    the left camera's median frame interval and the left one is its nearest too; None when the
    names hold no times. A camera that dropped a frame leaves its partner unpaired."""
    origin = _name_number(lefts[0])
    left_times, right_times = name_times(lefts, origin), name_times(rights, origin)
    if left_times is None or right_times is None:
        return None
    lt, rt = np.array(left_times), np.array(right_times)
    tolerance = 0.5 * float(np.median(np.diff(lt))) if len(lt) > 1 else float("inf")
    nearest_right = np.abs(lt[:, None] - rt[None, :]).argmin(axis=1)
    nearest_left = np.abs(rt[:, None] - lt[None, :]).argmin(axis=1)
    return {
        left: rights[j]
        for i, (left, j) in enumerate(zip(lefts, nearest_right, strict=True))
        if nearest_left[j] == i and abs(lt[i] - rt[j]) <= tolerance
    }


def _camera_folders(folder: Path) -> tuple[tuple[Path, Path], tuple[str, str]] | None:
    """The two cameras' image folders under ``folder``, or None, and how a left file name becomes
    its right partner's when the names differ (``_swap_side``'s pattern and replacement)."""
    dirs = {p.name.lower(): p for p in folder.iterdir() if p.is_dir()}
    for left, right in PAIR_FOLDERS:
        if left in dirs and right in dirs:
            pair = [dirs[left], dirs[right]]
            for i, side in enumerate(pair):  # EuRoC and KITTI raw keep the images in data/
                if not _images(side) and (side / "data").is_dir():
                    pair[i] = side / "data"
            sides = {"l": (_SIDE_TOKEN["l"].pattern, "r"), "left": ("left", "right")}
            return (pair[0], pair[1]), sides.get(left, (left, right))
    return None


def _check_matched(
    folder: Path,
    lefts: list[Path],
    rights: list[Path],
    partner: dict[Path, Path],
    paired: list[Path],
    notes: list[str],
) -> None:
    """Images without a partner (``paired``: the left ones that have theirs): skipped with a
    note, or a ``UserError`` when no pair is left."""
    have = set(paired)
    unmatched = [f"{_inside(folder, p)} (no {_inside(folder, partner[p])})" for p in lefts if p not in have]
    taken = set(partner.values())
    unmatched += [f"{_inside(folder, p)} (no left image)" for p in rights if p not in taken]
    if not unmatched:
        return
    more = f" and {len(unmatched) - 1} more" if len(unmatched) > 1 else ""
    if paired:
        notes.append(f"{len(unmatched)} image(s) without a partner skipped: {unmatched[0]}{more}")
        return
    raise UserError(f"unmatched images in {folder}: {unmatched[0]}{more}; every image needs its partner")


def _inside(folder: Path, path: Path) -> str:
    """``path`` as it lies in ``folder`` (right/frame_1.png: the camera's folder says which)."""
    try:
        return path.relative_to(folder).as_posix()
    except ValueError:
        return path.name


def image_pair_scene(left: Path, right: Path) -> Scene:
    """A pair of files; inside a Middlebury/ETH3D scene folder it keeps calibration and GT."""
    scene = middlebury_scene(left.parent)
    if scene is not None and (scene.left, scene.right) == (left, right):
        return scene
    return Scene(left.stem, left, right)


class SceneSource(StereoSource):
    """Scenes as a sequence of frames; timestamps are the frame index unless given."""

    def __init__(
        self,
        scenes: Sequence[Scene],
        description: str,
        timestamps: Sequence[float] | None = None,
        calibration: Calibration | None = None,
        rectify: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]] | None = None,
    ) -> None:
        """``rectify``: raw frames -> rectified ones (a recording of a raw rig, with its rig), each
        frame's then carrying ``calibration``."""
        super().__init__()
        self.scenes = list(scenes)
        self._rectify = rectify
        self._description = description
        self._timestamps = list(timestamps) if timestamps is not None else None
        self._calibration = calibration
        # what the folder's listing found (images skipped, pairs matched in name order): said with
        # the first frame read, as each frame's own notes are said with it
        self.opening_notes: list[str] = []
        # the first frame's time in ns since 1970 where the source knows it (its timestamps count
        # from it): names' times, or a recording's start_time_ns
        self.time_origin_ns: int | None = None

    @property
    def frame_count(self) -> int:
        return len(self.scenes)

    def describe(self) -> str:
        return self._description

    def frame_files(self, index: int) -> tuple[Path, Path] | None:
        scene = self.scenes[index]
        return scene.left, scene.right

    @property
    def seekable(self) -> bool:
        return True

    def _seek(self, index: int) -> None:
        """Scenes load by index: nothing to position."""

    def timestamp_of(self, index: int) -> float:
        return self._timestamps[index] if self._timestamps is not None else float(index)

    @property
    def has_times(self) -> bool:
        return self._timestamps is not None

    @property
    def frame_number_times(self) -> bool:
        """Whether its timestamps are frame numbers (no times in its files' names), which a
        recording of it says rather than passing them off as seconds."""
        return self._timestamps is None

    def _load(self, index: int, notes: list[str]) -> StereoPair:
        """Scene ``index``'s pair; ground truth that cannot be read is left out with a note (the
        images are what depth needs), images that cannot be read are a ``UserError``."""
        scene = self.scenes[index]
        try:
            pair = scene.load(notes)[0]
        except UserError as exc:
            if scene.gt is None:
                raise
            pair = dataclasses.replace(scene, gt=None).load(notes)[0]  # the images alone
            notes.append(f"frame {index} ({scene.name}) played without its ground truth: {exc}")
        if self._rectify is None:
            return pair
        left, right = self._rectify(pair.left, pair.right)
        # ground truth of raw frames would not match the rectified ones
        calibration = self._calibration
        return dataclasses.replace(pair, left=left, right=right, calibration=calibration, gt_disparity=None)

    @property
    def rectifies_frames(self) -> bool:
        """Whether its frames are rectified here (a raw rig's recording): not to be rectified again."""
        return self._rectify is not None

    def _next(self) -> Frame | None:
        index = self.frame_number + 1
        notes: list[str] = list(self.opening_notes)
        self.opening_notes = []
        skipped_in_a_row = 0
        while True:
            if index >= len(self.scenes):
                self.notes = notes  # frames skipped at the end are still said
                return None
            try:
                pair = self._load(index, notes)
                break
            except UserError as exc:  # one damaged frame of many: the others still play
                scene = self.scenes[index]
                if len(self.scenes) == 1 or not (scene.left.parent.is_dir() and scene.right.parent.is_dir()):
                    raise  # the folder itself went (deleted, unmounted): nothing further will play
                skipped_in_a_row += 1
                if skipped_in_a_row > MAX_SKIPPED_IN_A_ROW:
                    raise UserError(
                        f"{skipped_in_a_row} frames in a row could not be read (the last: {exc}); "
                        "check the source's files"
                    ) from exc
                note = f"frame {index} ({self.scenes[index].name}) skipped: {exc}"
                notes.append(note)
                self._emit("skipped", note)
                index += 1
        self.notes = notes  # this frame's: the next frame's files are judged afresh
        stamp = self._timestamps[index] if self._timestamps is not None else float(index)
        calibration = pair.calibration or self._calibration
        return Frame(dataclasses.replace(pair, timestamp=stamp, calibration=calibration), index)
