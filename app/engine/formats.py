"""Reading and writing disparity, flow, image and point-cloud files (numpy + OpenCV only).

Disparities are float32 H x W, NaN where unknown. Images are RGB uint8 H x W x 3.
Every write goes to a temporary file in the target folder and is renamed into place,
so a crash never leaves a half-written file behind.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

import cv2
import numpy as np

from app.engine.errors import UserError
from app.engine.fileio import atomic_write
from app.engine.memory import require

PathLike = str | os.PathLike[str]

COLORMAPS: tuple[str, ...] = ("turbo", "magma", "inferno", "viridis", "jet", "gray")
_CV_COLORMAPS: dict[str, int] = {
    "turbo": cv2.COLORMAP_TURBO,
    "magma": cv2.COLORMAP_MAGMA,
    "inferno": cv2.COLORMAP_INFERNO,
    "viridis": cv2.COLORMAP_VIRIDIS,
    "jet": cv2.COLORMAP_JET,
}
_FLO_MAGIC = 202021.25
_KITTI_SCALE = 256.0
# Three whitespace-separated tokens, then exactly one whitespace byte before the data.
_PFM_HEADER = re.compile(rb"^(P[Ff])\s+(\d+)\s+(\d+)\s+([-+0-9.eE]+)\s")


def _read_bytes(path: PathLike, what: str) -> bytes:
    p = Path(path)
    if p.is_dir():
        raise UserError(f"{p} is a folder where a file ({what.lower()}) was expected; give the file's path")
    if not p.is_file():
        raise UserError(f"{what.lower()} not found: {p}; check the path")
    try:
        return p.read_bytes()
    except OSError as exc:
        raise UserError(f"cannot read {p} ({exc.strerror}); check its permissions") from None


_PNG = b"\x89PNG\r\n\x1a\n"
_JPEG = b"\xff\xd8\xff"


def is_truncated(raw: bytes) -> bool:
    """A PNG without its closing IEND chunk or a JPEG without its end marker: a partial file.

    The decoders would fill the missing rows with grey (a made-up image) or print their own
    warnings on stderr; a partial file is refused instead."""
    if raw.startswith(_PNG):
        return b"IEND" not in raw[-16:]
    if raw.startswith(_JPEG):
        return b"\xff\xd9" not in raw[-64:]
    return False


def png_size(raw: bytes) -> tuple[int, int] | None:
    """(width, height) from a PNG's IHDR chunk, without decoding; None for other files."""
    if not raw.startswith(_PNG) or len(raw) < 24 or raw[12:16] != b"IHDR":
        return None
    return int.from_bytes(raw[16:20], "big"), int.from_bytes(raw[20:24], "big")


def _decode(raw: bytes) -> np.ndarray | None:
    """Decode image bytes at their native depth and channel count, turned upright as a JPEG's
    EXIF orientation says (as every viewer shows it); None if not an image."""
    # imdecode on bytes (not imread) so non-ASCII paths work on every platform.
    if not raw or is_truncated(raw):
        return None
    try:
        img = cv2.imdecode(np.frombuffer(raw, np.uint8), cv2.IMREAD_UNCHANGED)
    except cv2.error:
        return None
    # IMREAD_UNCHANGED ignores the orientation: a phone's portrait pair was matched sideways
    return None if img is None else upright(np.asarray(img), exif_orientation(raw))


def upright(img: np.ndarray, orientation: int) -> np.ndarray:
    """An image stored with EXIF ``orientation`` (1-8) as it is meant to be seen."""
    turns = {3: cv2.ROTATE_180, 6: cv2.ROTATE_90_CLOCKWISE, 8: cv2.ROTATE_90_COUNTERCLOCKWISE}
    if orientation in (2, 4):
        img = cv2.flip(img, 1 if orientation == 2 else 0)
    elif orientation in (5, 7):  # transposed: mirrored about a diagonal
        img = cv2.rotate(
            cv2.flip(img, 1), cv2.ROTATE_90_CLOCKWISE if orientation == 7 else cv2.ROTATE_90_COUNTERCLOCKWISE
        )
    elif orientation in turns:
        img = cv2.rotate(img, turns[orientation])
    return np.ascontiguousarray(img)


def exif_orientation(raw: bytes) -> int:
    """The EXIF orientation tag (0x0112) of a JPEG's APP1 segment; 1 (as stored) when absent."""
    if not raw.startswith(_JPEG):
        return 1
    at = 2
    while at + 4 <= len(raw) and raw[at] == 0xFF:
        marker, length = raw[at + 1], int.from_bytes(raw[at + 2 : at + 4], "big")
        if marker in (0xD9, 0xDA) or length < 2:  # end of image, start of scan: no more headers
            return 1
        segment = raw[at + 4 : at + 2 + length]
        if marker == 0xE1 and segment.startswith(b"Exif\0\0"):
            return _tiff_orientation(segment[6:])
        at += 2 + length
    return 1


def _tiff_orientation(tiff: bytes) -> int:
    order = {b"II": "little", b"MM": "big"}.get(tiff[:2])
    if order is None or len(tiff) < 8:
        return 1
    ifd = int.from_bytes(tiff[4:8], order)  # type: ignore[arg-type]
    if ifd + 2 > len(tiff):
        return 1
    count = int.from_bytes(tiff[ifd : ifd + 2], order)  # type: ignore[arg-type]
    for i in range(count):
        entry = tiff[ifd + 2 + 12 * i : ifd + 14 + 12 * i]
        if len(entry) < 12:
            return 1
        if int.from_bytes(entry[:2], order) == 0x0112:  # type: ignore[arg-type]
            value = int.from_bytes(entry[8:10], order)  # type: ignore[arg-type]
            return value if 1 <= value <= 8 else 1
    return 1


# --- PFM ------------------------------------------------------------------------------------


def read_pfm(path: PathLike) -> np.ndarray:
    """Read a PFM file: float32 H x W ("Pf") or H x W x 3 ("PF"), top row first."""
    raw = _read_bytes(path, "PFM file")
    m = _PFM_HEADER.match(raw)
    if m is None:
        raise UserError(f"{path} is not a PFM file (header must start with 'Pf' or 'PF'); check the file")
    channels = 3 if m.group(1) == b"PF" else 1
    width, height = int(m.group(2)), int(m.group(3))
    try:
        scale = float(m.group(4))
    except ValueError:
        raise UserError(f"{path} has a bad PFM scale line {m.group(4)!r}; re-export the file") from None
    dtype = np.dtype("<f4") if scale < 0 else np.dtype(">f4")
    count = width * height * channels
    body = raw[m.end() :]
    if len(body) < count * 4:
        raise UserError(f"{path} is truncated: {len(body)} of {count * 4} data bytes; re-export the file")
    data = np.frombuffer(body, dtype=dtype, count=count).astype(np.float32)
    shape = (height, width, 3) if channels == 3 else (height, width)
    # PFM stores the bottom row first.
    return np.ascontiguousarray(np.flipud(data.reshape(shape)))


def write_pfm(path: PathLike, array: np.ndarray) -> None:
    """Write float32 H x W (grayscale) or H x W x 3 (colour) as little-endian PFM."""
    a = np.asarray(array, dtype=np.float32)
    if a.ndim == 3 and a.shape[2] == 3:
        kind = "PF"
    elif a.ndim == 2:
        kind = "Pf"
    else:
        raise ValueError(f"PFM needs H x W or H x W x 3, got shape {a.shape}")
    header = f"{kind}\n{a.shape[1]} {a.shape[0]}\n-1.0\n".encode("ascii")
    atomic_write(path, header + np.flipud(a).astype("<f4").tobytes())


# --- KITTI 16-bit PNG ------------------------------------------------------------------------


KITTI_BEYOND_PX = 65535.5 / _KITTI_SCALE  # answers this far or farther do not fit a KITTI PNG


def write_kitti_png(path: PathLike, disparity: np.ndarray) -> None:
    """Write H x W disparity as KITTI uint16 PNG (value = round(d * 256), 0 = invalid). An
    answer of 0 px (or under 1/512 px) is stored as 1, the smallest answer the format holds:
    written as 0 it read back as "invalid" beside the PFM's 0.0. A negative one stays invalid,
    and so does one of ``KITTI_BEYOND_PX`` (256 px) or more, which the format cannot hold: they
    were all written as 255.996 px (review)."""
    d = np.asarray(disparity, dtype=np.float64)
    if d.ndim != 2:
        raise ValueError(f"KITTI PNG needs an H x W disparity, got shape {d.shape}")
    valid = np.isfinite(d) & (d >= 0)
    valid &= ~(d >= KITTI_BEYOND_PX)
    scaled = np.where(valid, d, 0.0) * _KITTI_SCALE
    values = np.rint(scaled).astype(np.uint16)
    values[valid & (values == 0)] = 1
    ok, buf = cv2.imencode(".png", values)
    if not ok:
        raise UserError(f"could not encode a PNG for {path}; check the disparity values")
    atomic_write(path, buf.tobytes())


def read_kitti_png(path: PathLike, scale: float | None = None) -> np.ndarray:
    """Read a disparity PNG as float32 H x W, NaN where the stored value is 0: KITTI's 16-bit
    (value / 256), or with ``scale`` given, value / ``scale`` for 8- or 16-bit single-channel
    maps (Middlebury 2001-2006 store disparity x 4 or x 8 in 8 bits)."""
    img = _decode(_read_bytes(path, "Disparity PNG"))
    if img is None:
        raise UserError(f"{path} is not a readable PNG; check the file")
    if img.ndim == 3 and img.shape[2] in (3, 4) and np.ptp(img[..., :3].astype(np.int32), axis=2).max() == 0:
        img = img[..., 0]  # a grey map saved as RGB
    if img.ndim != 2 or img.dtype not in (np.uint8, np.uint16):
        raise UserError(
            f"{path} is not a disparity map (need a single-channel PNG: KITTI's 16-bit, or 8-bit with "
            f"--gt-scale; got {img.dtype} with shape {img.shape}); a colour-mapped picture cannot be read "
            "back as disparity"
        )
    if scale is None and img.dtype != np.uint16:
        raise UserError(
            f"{path} is an 8-bit disparity PNG, not KITTI's 16-bit one: give --gt-scale S, its value "
            "per pixel of disparity (4 for Middlebury 2003 quarter-size maps, 1 if stored as is)"
        )
    out = img.astype(np.float32) / np.float32(_KITTI_SCALE if scale is None else scale)
    out[img == 0] = np.nan
    return out


# --- Colour images ---------------------------------------------------------------------------


def colorize(
    values: np.ndarray, vmin: float | None = None, vmax: float | None = None, cmap: str = "turbo"
) -> np.ndarray:
    """Map H x W values to an H x W x 3 uint8 RGB image; NaN/inf pixels are black.

    ``vmin``/``vmax`` default to the min/max of the finite values.
    """
    if cmap not in COLORMAPS:
        raise UserError(f"unknown colour map {cmap!r}; use one of: {', '.join(COLORMAPS)}")
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 2:
        raise ValueError(f"colorize needs H x W values, got shape {v.shape}")
    finite = np.isfinite(v)
    if not finite.any():
        return np.zeros((*v.shape, 3), np.uint8)
    lo = float(np.min(v[finite])) if vmin is None else float(vmin)
    hi = float(np.max(v[finite])) if vmax is None else float(vmax)
    span = hi - lo if hi > lo else 1.0
    norm = np.clip((np.where(finite, v, lo) - lo) / span, 0.0, 1.0)
    u8 = np.rint(norm * 255).astype(np.uint8)
    rgb: np.ndarray
    if cmap == "gray":
        rgb = np.repeat(u8[:, :, None], 3, axis=2)
    else:
        rgb = cv2.cvtColor(cv2.applyColorMap(u8, _CV_COLORMAPS[cmap]), cv2.COLOR_BGR2RGB)
    rgb[~finite] = 0
    return rgb


def write_color_png(path: PathLike, rgb: np.ndarray) -> None:
    """Write an H x W x 3 uint8 RGB image as PNG."""
    a = np.asarray(rgb)
    if a.dtype != np.uint8 or a.ndim != 3 or a.shape[2] != 3:
        raise ValueError(f"write_color_png needs H x W x 3 uint8, got {a.dtype} {a.shape}")
    ok, buf = cv2.imencode(".png", cv2.cvtColor(a, cv2.COLOR_RGB2BGR))
    if not ok:
        raise UserError(f"could not encode a PNG for {path}; check the image")
    atomic_write(path, buf.tobytes())


def write_grey_png(path: PathLike, grey: np.ndarray) -> None:
    """Write an H x W uint8 image as a one-channel PNG."""
    a = np.asarray(grey)
    if a.dtype != np.uint8 or a.ndim != 2:
        raise ValueError(f"write_grey_png needs H x W uint8, got {a.dtype} {a.shape}")
    ok, buf = cv2.imencode(".png", a)
    if not ok:
        raise UserError(f"could not encode a PNG for {path}; check the image")
    atomic_write(path, buf.tobytes())


def read_image_rgb(path: PathLike, notes: list[str] | None = None) -> np.ndarray:
    """Read any image OpenCV can decode as H x W x 3 uint8 RGB. What the conversion drops that
    a user should know of (transparent pixels of an RGBA image, whose colour is used as stored)
    is added to ``notes`` when it is given. A 16-bit image keeps the top 8 of the bits it uses
    (a 12-bit camera's PNG is scaled by 2^-4, not 2^-8, so it is not read nearly black)."""
    img = _read_native(path)
    return _to_rgb8(img, _shift(img), path, notes)


def read_pair_rgb(
    left: PathLike, right: PathLike, notes: list[str] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Both images of a pair as ``read_image_rgb`` reads them, except that 16-bit images are
    scaled alike, by the bits the brighter of the two uses (their exposures stay comparable),
    and a colour image beside a grey one is made grey too (a mono and a colour camera: their
    colours cannot match), with a note."""
    images = _read_native(left), _read_native(right)
    shift = max(_shift(img) for img in images)
    views = [_to_rgb8(img, shift, path, notes) for img, path in zip(images, (left, right), strict=True)]
    grey = [_is_grey(img) for img in images]
    if grey[0] != grey[1]:
        colour = grey.index(False)
        levels = cv2.cvtColor(views[colour], cv2.COLOR_RGB2GRAY)
        views[colour] = np.repeat(levels[:, :, None], 3, axis=2)
        if notes is not None:
            names = Path(left).name, Path(right).name
            notes.append(
                f"{names[1 - colour]} is grey and {names[colour]} colour: both are matched as grey levels"
            )
    return views[0], views[1]


def _is_grey(img: np.ndarray) -> bool:
    """A native image of one channel (grey with alpha is rare enough to count as colour)."""
    return img.ndim == 2 or img.shape[2] == 1


def _read_native(path: PathLike) -> np.ndarray:
    """An image at its native depth (uint8 or uint16) and channel count, or a ``UserError``."""
    raw = _read_bytes(path, "Image")
    if is_truncated(raw):
        raise UserError(
            f"{path} is not a readable image: it is truncated (its end is missing); copy it again"
        )
    size = png_size(raw)
    if size is not None:  # a small file may decode to gigabytes: say so before decoding
        w, h = size
        require(16.0 * w * h, f"reading the {w}x{h} image {path}", "use a smaller (downscaled) image")
    img = _decode(raw)
    if img is None:
        raise UserError(f"{path} is not a readable image (PNG, JPEG, BMP, TIFF, ...); check the file")
    if img.dtype not in (np.uint8, np.uint16):
        raise UserError(f"{path} has unsupported pixel type {img.dtype}; convert it to 8- or 16-bit")
    if img.ndim == 3 and img.shape[2] not in (1, 3, 4):
        raise UserError(f"{path} has {img.shape[2]} channels; use a grayscale, RGB or RGBA image")
    return img


def _shift(img: np.ndarray) -> int:
    """Bits to drop so that the bits a 16-bit image uses fit 8 (8 for a full-range one); 0 for 8-bit.
    The alpha channel does not count: it is not brightness."""
    if img.dtype != np.uint16:
        return 0
    colour = img[:, :, :3] if img.ndim == 3 and img.shape[2] == 4 else img
    return max(int(colour.max()).bit_length() - 8, 0)


def _to_rgb8(img: np.ndarray, shift: int, path: PathLike, notes: list[str] | None) -> np.ndarray:
    """A native image (``_read_native``) as H x W x 3 uint8 RGB, 16-bit values shifted right by
    ``shift`` (and clipped); an RGBA image's transparency goes to ``notes``."""
    if img.ndim == 3 and img.shape[2] == 4:
        alpha = img[:, :, 3]
        transparent = float(np.mean(alpha < np.iinfo(img.dtype).max))
        if notes is not None and transparent > 0:
            notes.append(
                f"{Path(path).name}: {100 * transparent:.1f} % of its pixels are transparent (alpha "
                "channel); depth uses their colour as stored, so flatten the image first if that is "
                "not the scene"
            )
        img = img[:, :, :3]
    if img.dtype == np.uint16:
        img = np.minimum(img >> shift, 255).astype(np.uint8)
    if img.ndim == 3 and img.shape[2] == 1:
        img = img[:, :, 0]
    if img.ndim == 2:
        return np.repeat(img[:, :, None], 3, axis=2)
    return cv2.cvtColor(np.ascontiguousarray(img), cv2.COLOR_BGR2RGB)


# --- Middlebury .flo -------------------------------------------------------------------------


def write_flo(path: PathLike, flow: np.ndarray) -> None:
    """Write H x W x 2 float flow (u, v) as Middlebury .flo."""
    f = np.asarray(flow, dtype="<f4")
    if f.ndim != 3 or f.shape[2] != 2:
        raise ValueError(f".flo needs H x W x 2 flow, got shape {f.shape}")
    header = np.array([_FLO_MAGIC], "<f4").tobytes() + np.array([f.shape[1], f.shape[0]], "<i4").tobytes()
    atomic_write(path, header + f.tobytes())


def read_flo(path: PathLike) -> np.ndarray:
    """Read a Middlebury .flo file as float32 H x W x 2 (u, v)."""
    raw = _read_bytes(path, "Flow file")
    if len(raw) < 12 or np.frombuffer(raw, "<f4", count=1)[0] != np.float32(_FLO_MAGIC):
        raise UserError(f"{path} is not a .flo file (bad magic number); check the file")
    width, height = (int(x) for x in np.frombuffer(raw, "<i4", count=2, offset=4))
    count = width * height * 2
    if width < 0 or height < 0 or len(raw) - 12 < count * 4:
        raise UserError(f"{path} is truncated or has a bad size {width} x {height}; re-export the file")
    data = np.frombuffer(raw, "<f4", count=count, offset=12)
    return data.reshape(height, width, 2).astype(np.float32)


# --- PLY point clouds ------------------------------------------------------------------------


def write_ply(
    path: PathLike, points_xyz: np.ndarray, colors: np.ndarray, comments: Sequence[str] = ()
) -> None:
    """Write N x 3 float points with N x 3 uint8 RGB colours as binary little-endian PLY, with
    ``comments`` (one line each) in the header."""
    pts = np.asarray(points_xyz, dtype=np.float32).reshape(-1, 3)
    cols = np.asarray(colors, dtype=np.uint8).reshape(-1, 3)
    if len(pts) != len(cols):
        raise ValueError(f"PLY needs one colour per point, got {len(pts)} points and {len(cols)} colours")
    names = ("x", "y", "z", "red", "green", "blue")
    rows = np.empty(len(pts), dtype=[(n, "<f4" if i < 3 else "u1") for i, n in enumerate(names)])
    for i, name in enumerate(names):
        rows[name] = pts[:, i] if i < 3 else cols[:, i - 3]
    props = [f"property {'float' if i < 3 else 'uchar'} {n}" for i, n in enumerate(names)]
    header = "\n".join(
        [
            "ply",
            "format binary_little_endian 1.0",
            *(f"comment {c}" for c in comments),
            f"element vertex {len(pts)}",
            *props,
            "end_header",
        ]
    )
    atomic_write(path, (header + "\n").encode("ascii") + rows.tobytes())
