"""Tests for app.engine.formats: file round-trips, byte layouts and user-facing errors."""

from __future__ import annotations

import struct
from pathlib import Path

import cv2
import numpy as np
import pytest

from app.engine import formats
from app.engine.errors import UserError


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)


# --- PFM ---


def test_pfm_round_trip_keeps_nan_and_inf_bits(tmp_path: Path) -> None:
    a = np.arange(12, dtype=np.float32).reshape(3, 4) - 5.5
    a[0, 1] = np.nan
    a[1, 2] = np.inf
    a[2, 3] = -np.inf
    path = tmp_path / "d.pfm"
    formats.write_pfm(path, a)
    b = formats.read_pfm(path)
    assert b.dtype == np.float32 and b.shape == (3, 4)
    np.testing.assert_array_equal(_bits(b), _bits(a))


def test_pfm_file_stores_bottom_row_first(tmp_path: Path) -> None:
    a = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.float32)
    path = tmp_path / "d.pfm"
    formats.write_pfm(path, a)
    raw = path.read_bytes()
    header = b"Pf\n3 2\n-1.0\n"
    assert raw.startswith(header)
    data = np.frombuffer(raw[len(header) :], dtype="<f4")
    np.testing.assert_array_equal(data[:3], [4, 5, 6])
    np.testing.assert_array_equal(data[3:], [1, 2, 3])


def test_pfm_colour_round_trip(tmp_path: Path) -> None:
    a = np.random.default_rng(0).normal(size=(4, 5, 3)).astype(np.float32)
    path = tmp_path / "c.pfm"
    formats.write_pfm(path, a)
    assert path.read_bytes().startswith(b"PF\n5 4\n")
    np.testing.assert_array_equal(formats.read_pfm(path), a)


def test_read_big_endian_pfm(tmp_path: Path) -> None:
    rows_bottom_first = np.array([[3.5, -4.0], [1.0, 2.25]], dtype=">f4")
    path = tmp_path / "be.pfm"
    path.write_bytes(b"Pf\n2 2\n1.0\n" + rows_bottom_first.tobytes())
    np.testing.assert_array_equal(formats.read_pfm(path), [[1.0, 2.25], [3.5, -4.0]])


def test_pfm_errors(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="not found"):
        formats.read_pfm(tmp_path / "missing.pfm")
    bad = tmp_path / "bad.pfm"
    bad.write_bytes(b"P6\n2 2\n255\n" + bytes(12))
    with pytest.raises(UserError, match="not a PFM"):
        formats.read_pfm(bad)
    short = tmp_path / "short.pfm"
    short.write_bytes(b"Pf\n4 4\n-1.0\n" + bytes(20))
    with pytest.raises(UserError, match="truncated"):
        formats.read_pfm(short)


# --- KITTI PNG ---


def test_kitti_png_round_trip_and_invalid(tmp_path: Path) -> None:
    d = np.array([[0.5, 12.34567, 100.0], [np.nan, np.inf, -3.0], [0.0, 1000.0, 255.99]], dtype=np.float32)
    path = tmp_path / "k.png"
    formats.write_kitti_png(path, d)
    raw = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
    assert raw.dtype == np.uint16 and raw.shape == (3, 3)
    assert raw[0, 1] == round(12.34567 * 256)
    assert raw[2, 1] == 0  # past what the format holds: unknown, not 255.996 px (review)
    np.testing.assert_array_equal(raw[1], [0, 0, 0])
    assert raw[2, 0] == 1  # an answer of 0 px is not "invalid" (it read back so beside the PFM's 0.0)
    back = formats.read_kitti_png(path)
    assert back.dtype == np.float32
    assert np.isnan(back[1]).all() and back[2, 0] == 1 / 256
    ok = np.array([[True, True, True], [False, False, False], [True, False, True]])
    assert np.all(np.abs(back[ok] - d[ok]) <= 1 / 256)
    assert np.isnan(back[2, 1])


def test_read_kitti_png_rejects_8bit(tmp_path: Path) -> None:
    path = tmp_path / "8bit.png"
    cv2.imwrite(str(path), np.zeros((4, 4), np.uint8))
    with pytest.raises(UserError, match="16-bit"):
        formats.read_kitti_png(path)


# --- colour images ---


def test_colorize_shape_dtype_and_nan_black() -> None:
    v = np.linspace(0, 10, 20, dtype=np.float32).reshape(4, 5)
    v[0, 0] = np.nan
    v[3, 4] = np.inf
    for cmap in formats.COLORMAPS:
        rgb = formats.colorize(v, cmap=cmap)
        assert rgb.shape == (4, 5, 3) and rgb.dtype == np.uint8
        assert (rgb[0, 0] == 0).all() and (rgb[3, 4] == 0).all()
        assert rgb[1:3].any()


def test_colorize_range_and_channel_order() -> None:
    v = np.array([[0.0, 5.0, 10.0, 20.0]])
    gray = formats.colorize(v, vmin=0.0, vmax=10.0, cmap="gray")
    np.testing.assert_array_equal(gray[0, :, 0], [0, 128, 255, 255])
    # Turbo runs from dark blue-ish at 0 to dark red at 1: red channel dominates at the top.
    hi = formats.colorize(np.array([[0.0, 1.0]]), cmap="turbo")[0, 1]
    assert hi[0] > hi[2]


def test_colorize_unknown_cmap_lists_names() -> None:
    with pytest.raises(UserError, match=r"turbo.*viridis"):
        formats.colorize(np.zeros((2, 2)), cmap="rainbowz")


def test_write_color_png_round_trip(tmp_path: Path) -> None:
    rgb = np.zeros((2, 3, 3), np.uint8)
    rgb[..., 0] = 200  # red
    path = tmp_path / "c.png"
    formats.write_color_png(path, rgb)
    assert cv2.imread(str(path))[0, 0].tolist() == [0, 0, 200]  # stored as BGR
    np.testing.assert_array_equal(formats.read_image_rgb(path), rgb)


def test_read_image_rgb_grayscale_rgba_16bit(tmp_path: Path) -> None:
    gray = np.arange(12, dtype=np.uint8).reshape(3, 4)
    cv2.imwrite(str(tmp_path / "g.png"), gray)
    out = formats.read_image_rgb(tmp_path / "g.png")
    assert out.shape == (3, 4, 3) and out.dtype == np.uint8
    for c in range(3):
        np.testing.assert_array_equal(out[..., c], gray)

    bgra = np.zeros((2, 2, 4), np.uint8)
    bgra[..., 0], bgra[..., 1], bgra[..., 2], bgra[..., 3] = 10, 20, 30, 40
    cv2.imwrite(str(tmp_path / "a.png"), bgra)
    np.testing.assert_array_equal(formats.read_image_rgb(tmp_path / "a.png")[0, 0], [30, 20, 10])

    bgr16 = np.zeros((2, 2, 3), np.uint16)
    bgr16[..., 0], bgr16[..., 2] = 0x1234, 0xFF00
    cv2.imwrite(str(tmp_path / "w.png"), bgr16)
    np.testing.assert_array_equal(formats.read_image_rgb(tmp_path / "w.png")[1, 1], [0xFF, 0, 0x12])


def test_sixteen_bit_images_keep_the_bits_they_use(tmp_path: Path) -> None:
    # a 12-bit camera's PNG (values 0-4095 in 16 bits) is read at 8 of its 12 bits, not as 0-15
    grey12 = (np.arange(4096, dtype=np.uint16) * 1).reshape(64, 64)
    cv2.imwrite(str(tmp_path / "l12.png"), grey12)
    out = formats.read_image_rgb(tmp_path / "l12.png")
    assert out.dtype == np.uint8 and int(out.max()) == 255 and len(np.unique(out)) == 256
    np.testing.assert_array_equal(out[..., 0], (grey12 >> 4).astype(np.uint8))
    # a pair is scaled alike, by the brighter image's bits: exposures stay comparable
    cv2.imwrite(str(tmp_path / "r13.png"), grey12 * 2)  # one bit more
    left, right = formats.read_pair_rgb(tmp_path / "l12.png", tmp_path / "r13.png")
    np.testing.assert_array_equal(left[..., 0], (grey12 >> 5).astype(np.uint8))
    np.testing.assert_array_equal(right[..., 0], ((grey12 * 2) >> 5).astype(np.uint8))
    dim = np.full((4, 4), 100, np.uint16)  # uses 7 bits: kept as it is
    cv2.imwrite(str(tmp_path / "dim.png"), dim)
    assert int(formats.read_image_rgb(tmp_path / "dim.png").max()) == 100
    # an 8-bit image beside a 16-bit one keeps its own values
    cv2.imwrite(str(tmp_path / "eight.png"), np.full((64, 64), 7, np.uint8))
    eight, _ = formats.read_pair_rgb(tmp_path / "eight.png", tmp_path / "l12.png")
    assert int(eight.max()) == 7
    bgra16 = np.full((2, 2, 4), 65535, np.uint16)
    bgra16[0, 0, 3] = 0
    cv2.imwrite(str(tmp_path / "a16.png"), bgra16)
    notes: list[str] = []
    assert formats.read_image_rgb(tmp_path / "a16.png", notes).shape == (2, 2, 3)
    assert len(notes) == 1 and "25.0 % of its pixels are transparent" in notes[0]


def test_a_colour_image_beside_a_grey_one_is_read_grey(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    bgr = rng.integers(0, 256, (8, 9, 3), dtype=np.uint8)
    cv2.imwrite(str(tmp_path / "colour.png"), bgr)
    cv2.imwrite(str(tmp_path / "grey.png"), cv2.cvtColor(bgr, cv2.COLOR_BGR2GRAY))
    notes: list[str] = []
    grey, colour = formats.read_pair_rgb(tmp_path / "grey.png", tmp_path / "colour.png", notes)
    assert notes == ["grey.png is grey and colour.png colour: both are matched as grey levels"]
    np.testing.assert_array_equal(colour, grey)  # the colour image's own grey levels, like the mono one
    both = formats.read_pair_rgb(tmp_path / "colour.png", tmp_path / "colour.png", notes)
    assert len(notes) == 1 and not np.array_equal(both[0][..., 0], both[0][..., 1])  # colour stays


def test_transparent_pixels_of_an_rgba_image_are_noted(tmp_path: Path) -> None:
    bgra = np.full((4, 5, 4), 255, np.uint8)
    cv2.imwrite(str(tmp_path / "opaque.png"), bgra)
    bgra[:2, :2, 3] = 0  # 4 of 20 pixels transparent
    cv2.imwrite(str(tmp_path / "cut.png"), bgra)
    notes: list[str] = []
    formats.read_image_rgb(tmp_path / "opaque.png", notes)
    assert notes == []  # an alpha channel without transparency loses nothing
    out = formats.read_image_rgb(tmp_path / "cut.png", notes)
    assert out.shape == (4, 5, 3)
    (note,) = notes
    assert note.startswith("cut.png: 20.0 % of its pixels are transparent") and "flatten" in note
    formats.read_image_rgb(tmp_path / "cut.png")  # without a list: read as before, nothing noted


def test_read_image_rgb_errors(tmp_path: Path) -> None:
    missing = tmp_path / "nope.png"
    with pytest.raises(UserError, match=r"not found: .*nope\.png; check the path"):
        formats.read_image_rgb(missing)
    corrupt = tmp_path / "corrupt.png"
    corrupt.write_bytes(b"\x89PNG\r\n\x1a\nthis is not really a png")
    with pytest.raises(UserError, match="not a readable image"):
        formats.read_image_rgb(corrupt)
    empty = tmp_path / "empty.jpg"
    empty.write_bytes(b"")
    with pytest.raises(UserError, match="not a readable image"):
        formats.read_image_rgb(empty)


# --- .flo and PLY ---


def test_flo_round_trip_and_layout(tmp_path: Path) -> None:
    flow = np.random.default_rng(1).normal(size=(3, 4, 2)).astype(np.float32)
    path = tmp_path / "f.flo"
    formats.write_flo(path, flow)
    raw = path.read_bytes()
    assert struct.unpack("<fii", raw[:12]) == (202021.25, 4, 3)
    assert len(raw) == 12 + 3 * 4 * 2 * 4
    assert struct.unpack("<ff", raw[12:20]) == tuple(flow[0, 0].tolist())
    np.testing.assert_array_equal(formats.read_flo(path), flow)


def test_flo_bad_magic_and_truncated(tmp_path: Path) -> None:
    bad = tmp_path / "bad.flo"
    bad.write_bytes(struct.pack("<fii", 1.0, 2, 2) + bytes(32))
    with pytest.raises(UserError, match="magic"):
        formats.read_flo(bad)
    short = tmp_path / "short.flo"
    short.write_bytes(struct.pack("<fii", 202021.25, 2, 2) + bytes(8))
    with pytest.raises(UserError, match="truncated"):
        formats.read_flo(short)


def test_ply_header_and_body(tmp_path: Path) -> None:
    pts = np.array([[1.0, 2.0, 3.0], [-1.5, 0.0, 7.25]])
    cols = np.array([[255, 0, 10], [1, 2, 3]], np.uint8)
    path = tmp_path / "p.ply"
    formats.write_ply(path, pts, cols)
    raw = path.read_bytes()
    end = raw.index(b"end_header\n") + len(b"end_header\n")
    header = raw[:end].decode("ascii").splitlines()
    assert header == [
        "ply",
        "format binary_little_endian 1.0",
        "element vertex 2",
        "property float x",
        "property float y",
        "property float z",
        "property uchar red",
        "property uchar green",
        "property uchar blue",
        "end_header",
    ]
    body = raw[end:]
    assert len(body) == 2 * 15
    formats.write_ply(path, pts, cols, ["units: metres"])
    assert b"format binary_little_endian 1.0\ncomment units: metres\nelement vertex 2\n" in path.read_bytes()
    assert struct.unpack("<fffBBB", body[15:]) == (-1.5, 0.0, 7.25, 1, 2, 3)


# --- atomic writes ---


def test_writes_leave_no_temp_files(tmp_path: Path) -> None:
    formats.write_pfm(tmp_path / "a.pfm", np.zeros((2, 2)))
    formats.write_kitti_png(tmp_path / "b.png", np.ones((2, 2)))
    formats.write_color_png(tmp_path / "c.png", np.zeros((2, 2, 3), np.uint8))
    formats.write_flo(tmp_path / "d.flo", np.zeros((2, 2, 2)))
    formats.write_ply(tmp_path / "e.ply", np.zeros((1, 3)), np.zeros((1, 3), np.uint8))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.pfm", "b.png", "c.png", "d.flo", "e.ply"]


def test_write_overwrites_existing_file(tmp_path: Path) -> None:
    path = tmp_path / "a.pfm"
    formats.write_pfm(path, np.zeros((5, 5)))
    formats.write_pfm(path, np.ones((1, 1)))
    np.testing.assert_array_equal(formats.read_pfm(path), [[1.0]])


def test_write_into_missing_folder_is_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="does not exist"):
        formats.write_pfm(tmp_path / "no" / "a.pfm", np.zeros((2, 2)))


def _with_orientation(jpeg: bytes, orientation: int) -> bytes:
    """A JPEG with an EXIF APP1 segment holding ``orientation`` (as a phone writes a portrait)."""
    entry = (0x0112).to_bytes(2, "little") + (3).to_bytes(2, "little") + (1).to_bytes(4, "little")
    entry += orientation.to_bytes(2, "little") + b"\0\0"
    tiff = b"II*\0" + (8).to_bytes(4, "little") + (1).to_bytes(2, "little") + entry + b"\0\0\0\0"
    payload = b"Exif\0\0" + tiff
    app1 = b"\xff\xe1" + (len(payload) + 2).to_bytes(2, "big") + payload
    return jpeg[:2] + app1 + jpeg[2:]


def test_a_jpegs_exif_orientation_is_applied(tmp_path: Path) -> None:
    """A phone's portrait pair (pixels stored sideways, EXIF orientation 6) was matched sideways and
    read "not rectified: 29 px apart vertically"."""
    from app.engine.formats import exif_orientation, read_image_rgb

    image = np.zeros((40, 60, 3), np.uint8)
    image[:10, :20] = 255  # a white block at the top left, as seen upright
    stored = cv2.rotate(image, cv2.ROTATE_90_COUNTERCLOCKWISE)  # the sensor's way round
    ok, jpeg = cv2.imencode(".jpg", stored, [cv2.IMWRITE_JPEG_QUALITY, 100])
    assert ok
    path = tmp_path / "portrait.jpg"
    path.write_bytes(_with_orientation(jpeg.tobytes(), 6))
    assert exif_orientation(path.read_bytes()) == 6
    shown = read_image_rgb(path)
    assert shown.shape == (40, 60, 3) and shown[:10, :20].mean() > 200 and shown[20:, 30:].mean() < 50
    assert exif_orientation(jpeg.tobytes()) == 1 and exif_orientation(b"\x89PNG") == 1
