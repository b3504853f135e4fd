"""The catalogue of bad inputs (issue 18): every case run as ``python -m app ...`` in a subprocess.

Each case is refused in one line (exit 2, one stderr line, no traceback) or answered correctly
(exit 0, and where it matters a check of what was written or kept). Prints a table (case, exit
code, one line?, traceback?, seconds) and "N passed, M failed".

    python benchmarks/bad_inputs.py [--only SUBSTRING] [--timeout 120] [--keep DIR]

Disk-full cases use a 2 MiB tmpfs when this runs as root and may mount one, else a fake writer
that raises OSError(ENOSPC) once a byte budget is spent (``_full_disk.py`` beside this file).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "resources" / "demo" / "motorcycle"
Check = Callable[[Path, str, str], str]  # (workdir, stdout, stderr) -> "" when fine, else why not


@dataclass
class Case:
    name: str
    argv: list[str]
    expect: str = "refuse"  # "refuse": exit 2 in one line; "ok": exit 0; "either": one of the two
    needle: str = ""  # refusals: a phrase the line must hold (case-insensitive)
    check: Check | None = None
    pre: Callable[[], None] | None = None  # run just before the case (e.g. fill the disk)


@dataclass
class Outcome:
    case: Case
    code: int | None
    one_line: bool
    traceback: bool
    seconds: float
    why: str

    @property
    def passed(self) -> bool:
        return not self.why


# ---- fixtures -------------------------------------------------------------------------------


def _pair(folder: Path, name: str, h: int, w: int, shift: int = 6) -> tuple[str, str]:
    rng = np.random.default_rng(h * 1000 + w)
    wide = cv2.GaussianBlur(rng.integers(0, 255, (h, w + shift, 3), dtype=np.uint8), (3, 3), 0)
    left, right = folder / f"{name}_l.png", folder / f"{name}_r.png"
    cv2.imwrite(str(left), wide[:, shift:])
    cv2.imwrite(str(right), wide[:, :-shift] if shift else wide)
    return str(left), str(right)


def _big_pair(folder: Path, h: int, w: int) -> tuple[str, str]:
    """A smooth large pair (compresses well, so the PNGs stay small)."""
    ys, xs = np.mgrid[0:h, 0:w]
    img = ((xs * 7 + ys * 3) % 251).astype(np.uint8)
    left, right = folder / f"big{h}_l.png", folder / f"big{h}_r.png"
    cv2.imwrite(str(left), img)
    cv2.imwrite(str(right), np.roll(img, -4, axis=1))
    return str(left), str(right)


def _calib(
    folder: Path, name: str, f: float = 500.0, baseline_mm: float = 100.0, w: int = 64, h: int = 48
) -> str:
    path = folder / name
    path.write_text(
        f"cam0=[{f} 0 {w / 2}; 0 {f} {h / 2}; 0 0 1]\ncam1=[{f} 0 {w / 2}; 0 {f} {h / 2}; 0 0 1]\n"
        f"doffs=0\nbaseline={baseline_mm}\nwidth={w}\nheight={h}\nndisp=64\n"
    )
    return str(path)


def _png_claiming(width: int, height: int) -> bytes:
    """A PNG whose header claims this size (a decompression bomb's first bytes), and its end."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"")) + chunk(b"IEND", b"")
    )


def _checkpoints(folder: Path) -> dict[str, str]:
    import torch

    sys.path.insert(0, str(ROOT))
    from app.engine.assets import default_weights
    from app.engine.bi3d.checkpoint import FORMAT

    out: dict[str, str] = {}
    bundled = default_weights()
    assert bundled is not None, "the catalogue needs the bundled model"
    raw = bundled.read_bytes()
    out["bundled"] = str(bundled)
    (folder / "empty.pt").write_bytes(b"")
    (folder / "garbage.pt").write_bytes(np.random.default_rng(1).bytes(4096))
    (folder / "truncated.pt").write_bytes(raw[: len(raw) // 2])
    (folder / "text.pt").write_text("not a checkpoint\n")

    class Boom:
        def __reduce__(self):  # type: ignore[no-untyped-def]
            return (os.system, (f"touch {folder / 'PWNED'}",))

    torch.save({"state_dict": {}, "x": Boom()}, folder / "trap_zip.pt")
    torch.save(
        {"state_dict": {}, "x": Boom()}, folder / "trap_legacy.pt", _use_new_zipfile_serialization=False
    )
    torch.save([1, 2, 3], folder / "list.pt")
    torch.save({"weights": {}}, folder / "no_state.pt")
    data = torch.load(bundled, map_location="cpu", weights_only=True)
    huge = dict(data, width=1e6)
    torch.save(huge, folder / "width_1e6.pt")
    torch.save(dict(data, width=float("nan")), folder / "width_nan.pt")
    torch.save(dict(data, max_disparity=10**9), folder / "maxdisp_huge.pt")
    nan_state = {
        k: (torch.full_like(v, float("nan")) if v.is_floating_point() else v)
        for k, v in data["state_dict"].items()
    }
    torch.save(dict(data, state_dict=nan_state), folder / "nan_weights.pt")
    torch.save(dict(data, kind="nonsense"), folder / "bad_kind.pt")
    torch.save(
        {"format": FORMAT, "state_dict": {"a": torch.zeros(2)}, "kind": "light"}, folder / "wrong_keys.pt"
    )
    for name in (
        "empty",
        "garbage",
        "truncated",
        "text",
        "trap_zip",
        "trap_legacy",
        "list",
        "no_state",
        "width_1e6",
        "width_nan",
        "maxdisp_huge",
        "nan_weights",
        "bad_kind",
        "wrong_keys",
    ):
        out[name] = str(folder / f"{name}.pt")
    return out


def _videos(folder: Path) -> dict[str, str]:
    good = folder / "sbs.avi"
    writer = cv2.VideoWriter(str(good), cv2.VideoWriter_fourcc(*"MJPG"), 10, (128, 48))
    rng = np.random.default_rng(2)
    for _ in range(4):
        writer.write(rng.integers(0, 255, (48, 128, 3), dtype=np.uint8))
    writer.release()
    raw = good.read_bytes()
    (folder / "truncated.avi").write_bytes(raw[: len(raw) // 3])
    (folder / "garbage.mp4").write_bytes(rng.bytes(20000))
    (folder / "empty.mp4").write_bytes(b"")
    (folder / "text.avi").write_text("no video here\n")
    return {
        n: str(folder / f"{n}") for n in ("sbs.avi", "truncated.avi", "garbage.mp4", "empty.mp4", "text.avi")
    }


def _run_app(args: list[str], cwd: Path, env: dict[str, str], timeout: float = 300) -> None:
    subprocess.run(
        [sys.executable, "-m", "app", *args],
        cwd=cwd,
        env=env,
        check=True,
        timeout=timeout,
        capture_output=True,
    )


def _recordings(folder: Path, env: dict[str, str]) -> dict[str, str]:
    base = folder / "rec"
    _run_app(["record", "synthetic:48x64?frames=6", str(base)], folder, env)
    out = {"rec": str(base)}
    for name in (
        "no_ts",
        "ff_ts",
        "bad_session",
        "no_session",
        "leftovers",
        "damaged_line",
        "bad_cal",
        "victim",
        "victim2",
        "victim3",
    ):
        shutil.copytree(base, folder / name)
        out[name] = str(folder / name)
    (folder / "no_ts" / "timestamps.txt").unlink()
    ts = folder / "ff_ts" / "timestamps.txt"
    ts.write_bytes(ts.read_bytes()[:10] + b"\xff" + ts.read_bytes()[10:])
    (folder / "bad_session" / "session.json").write_text('{"format": "bi3d-studio rec')
    (folder / "no_session" / "session.json").unlink()
    for sub in ("left", "right"):
        (folder / "leftovers" / sub / ".000006.png.abcd1234.tmp").write_bytes(b"partial")
    (folder / "leftovers" / ".timestamps.txt.zz99.tmp").write_bytes(b"x")
    ts = folder / "damaged_line" / "timestamps.txt"
    ts.write_text(ts.read_text().replace("000002 ", "000002 abc "))
    session = folder / "bad_cal" / "session.json"
    session.write_text(session.read_text().replace('"focal_px": 64.0', '"focal_px": NaN'))
    return out


def _datasets(folder: Path) -> dict[str, str]:
    out = {}
    unknown = folder / "unknown_layout"
    unknown.mkdir()
    (unknown / "notes.txt").write_text("hello")
    (unknown / "sub").mkdir()
    (unknown / "sub" / "data.bin").write_bytes(b"\0" * 10)
    out["unknown"] = str(unknown)
    empty = folder / "empty_dir"
    empty.mkdir()
    out["empty"] = str(empty)
    kitti = folder / "kitti_partial"
    (kitti / "image_2").mkdir(parents=True)
    cv2.imwrite(str(kitti / "image_2" / "000000_10.png"), np.zeros((48, 64, 3), np.uint8))
    out["kitti"] = str(kitti)
    midd = folder / "midd_partial"
    midd.mkdir()
    cv2.imwrite(str(midd / "im0.png"), np.zeros((48, 64, 3), np.uint8))
    (midd / "disp0GT.pfm").write_bytes(b"Pf\n64 48\n-1.0\n" + b"\0" * 100)
    out["midd"] = str(midd)
    scene = folder / "midd_badgt"
    scene.mkdir()
    left, right = _pair(scene, "x", 48, 64)
    shutil.move(left, scene / "im0.png")
    shutil.move(right, scene / "im1.png")
    (scene / "disp0GT.pfm").write_bytes(b"Pf\n64 48\n-1.0\n" + b"\0" * 100)  # truncated body
    (scene / "calib.txt").write_text("garbage\n")
    out["midd_badgt"] = str(scene)
    flow = folder / "sceneflow_partial"
    for sub in ("left", "right", "disparity"):
        (flow / sub).mkdir(parents=True)
    cv2.imwrite(str(flow / "left" / "0001.png"), np.zeros((48, 64, 3), np.uint8))
    out["sceneflow"] = str(flow)
    return out


def _files(folder: Path) -> dict[str, str]:
    tiny_l, _ = _pair(folder, "t", 48, 64)
    raw = Path(tiny_l).read_bytes()
    (folder / "empty.png").write_bytes(b"")
    (folder / "truncated.png").write_bytes(raw[: len(raw) // 2])
    (folder / "garbage.png").write_bytes(np.random.default_rng(3).bytes(3000))
    (folder / "text.png").write_text("not an image")
    (folder / "afile").write_text("a file, not a folder")
    (folder / "adir.png").mkdir()
    cv2.imwrite(
        str(folder / "deep16.png"),
        (np.random.default_rng(4).integers(0, 65535, (48, 64, 3))).astype(np.uint16),
    )
    cv2.imwrite(
        str(folder / "rgba.png"), np.random.default_rng(5).integers(0, 255, (48, 64, 4), dtype=np.uint8)
    )
    cv2.imwrite(str(folder / "other_size.png"), np.zeros((40, 64, 3), np.uint8))
    (folder / "bad.pfm").write_bytes(b"PX\n1 1\n")
    (folder / "trunc.pfm").write_bytes(b"Pf\n64 48\n-1.0\n" + b"\0" * 10)
    return {
        n: str(folder / n)
        for n in (
            "empty.png",
            "truncated.png",
            "garbage.png",
            "text.png",
            "afile",
            "adir.png",
            "deep16.png",
            "rgba.png",
            "other_size.png",
            "bad.pfm",
            "trunc.pfm",
        )
    }


def _train_runs(folder: Path, ckpt: dict[str, str]) -> dict[str, str]:
    import torch

    out = {}
    for name, state in (("trap", ckpt["trap_zip"]), ("trap_legacy", ckpt["trap_legacy"]), ("trunc", None)):
        run = folder / f"run_{name}"
        run.mkdir()
        shutil.copy(ckpt["bundled"], run / "last.pt")
        data = torch.load(run / "last.pt", map_location="cpu", weights_only=True)
        data.setdefault("training", {})["step"] = 5
        data["step"] = 5
        torch.save(data, run / "last.pt")
        if state is None:
            torch.save({"step": 5, "optimizer": {}, "scaler": {}}, run / "state.pt")
            raw = (run / "state.pt").read_bytes()
            (run / "state.pt").write_bytes(raw[: len(raw) // 2])
        else:
            shutil.copy(state, run / "state.pt")
        out[name] = str(run)
    return out


# ---- full disk ------------------------------------------------------------------------------


def _tmpfs(folder: Path) -> bool:
    """A 2 MiB tmpfs at ``folder`` (root only); False where it cannot be mounted."""
    folder.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(folder)], capture_output=True
    )
    return done.returncode == 0


def _fill(folder: Path, leave: int = 0, name: str = "ballast") -> None:
    """Fill a tmpfs until ``leave`` bytes are free (a ballast file of this name is replaced;
    ``leave`` 0 with an existing ballast removes it first, then fills again)."""
    (folder / name).unlink(missing_ok=True)
    stat = os.statvfs(folder)
    free = stat.f_bavail * stat.f_frsize - leave
    if free > 0:
        with open(folder / name, "wb") as f:
            try:
                f.write(b"\0" * free)
            except OSError:
                pass


def _room(folder: Path, free: int) -> None:
    """Remove every ballast, then fill again until ``free`` bytes are left."""
    for ballast in folder.glob("ballast*"):
        ballast.unlink()
    _fill(folder, free)


# ---- checks ---------------------------------------------------------------------------------


def _no_file(path: str) -> Check:
    return lambda work, out, err: f"{path} exists" if (work / path).exists() else ""


def _same_bytes(path: Path, before: bytes) -> Check:
    def check(work: Path, out: str, err: str) -> str:
        if not path.is_file():
            return f"{path.name} is gone"
        return "" if path.read_bytes() == before else f"{path.name} changed"

    return check


def _set_intact(folder: Path, before: dict[str, bytes]) -> Check:
    def check(work: Path, out: str, err: str) -> str:
        now = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
        lost = [n for n in before if now.get(n) != before[n]]
        extra = [n for n in now if n not in before and not n.startswith(".")]
        extra += [p.name for p in folder.parent.glob(".result.*.tmp")] + [
            p.name for p in folder.glob(".result.*")
        ]
        return f"changed: {lost}, extra: {extra}" if lost or extra else ""

    return check


def _frames_left(rec: str, count: int) -> Check:
    def check(work: Path, out: str, err: str) -> str:
        n = len(list((work / rec / "left").glob("*.png"))) if (work / rec / "left").is_dir() else 0
        return "" if n == count else f"{n} of {count} frames left in {rec}"

    return check


def _stdout_has(text: str) -> Check:
    return lambda work, out, err: "" if text.lower() in out.lower() else f"stdout lacks {text!r}"


def _all(*checks: Check) -> Check:
    def check(work: Path, out: str, err: str) -> str:
        return "; ".join(filter(None, (c(work, out, err) for c in checks)))

    return check


def _identical(a: str, b: str) -> Check:
    def check(work: Path, out: str, err: str) -> str:
        fa, fb = work / a / "result.npz", work / b / "result.npz"
        if not (fa.is_file() and fb.is_file()):
            return "a result.npz is missing"
        with np.load(fa) as x, np.load(fb) as y:
            bad = [k for k in x.files if not np.array_equal(x[k], y[k], equal_nan=True)]
        return f"arrays differ: {bad}" if bad else ""

    return check


def _no_tmp(rec: str) -> Check:
    def check(work: Path, out: str, err: str) -> str:
        left = [p.name for p in (work / rec).rglob(".*.tmp")]
        return f"leftovers remain: {left}" if left else ""

    return check


# ---- the catalogue --------------------------------------------------------------------------


def catalogue(work: Path, env: dict[str, str]) -> list[Case]:
    fx = work / "fx"
    fx.mkdir()
    L, R = _pair(fx, "tiny", 48, 64)
    L24, R24 = _pair(fx, "small", 24, 32, shift=2)
    L1, R1 = _pair(fx, "one", 1, 1, shift=0)
    L10, R10 = _pair(fx, "ten", 10, 10, shift=0)
    BL, BR = _big_pair(fx, 6000, 8000)
    f = _files(fx)
    ck = _checkpoints(fx)
    vid = _videos(fx)
    rec = _recordings(fx, env)
    ds = _datasets(fx)
    runs = _train_runs(fx, ck)
    d0, d1 = str(DEMO / "im0.png"), str(DEMO / "im1.png")
    cal = {
        "good": _calib(fx, "good_calib.txt"),
        "neg_baseline": _calib(fx, "neg_baseline.txt", baseline_mm=-100),
        "zero_baseline": _calib(fx, "zero_baseline.txt", baseline_mm=0),
        "zero_focal": _calib(fx, "zero_focal.txt", f=0),
        "nan_focal": _calib(fx, "nan_focal.txt", f=float("nan")),
        "wrong_size": _calib(fx, "wrong_size.txt", w=640, h=100),  # another aspect: no rescaling fits
    }
    (fx / "garbage_calib.txt").write_text("hello world\n")
    (fx / "empty_calib.txt").write_text("")
    (fx / "calib.yaml").write_text("%YAML:1.0\nK1: !!opencv-matrix\n  rows: 3\n")
    (fx / "calib.json").write_text("{not json")
    (fx / "calib.xyz").write_text("?")
    neg_demo = fx / "neg_demo_calib.txt"
    neg_demo.write_text((DEMO / "calib.txt").read_text().replace("baseline=193.001", "baseline=-193.001"))
    t = ["--engine", "sgbm", "--max-disparity", "32"]  # quick: SGBM on the tiny pair
    o = lambda name: ["--out", str(work / "out" / name)]  # noqa: E731
    cases: list[Case] = []
    add = cases.append

    # -- the tracebacks --------------------------------------------------------------
    add(
        Case(
            "depth selective --range nan 30",
            ["depth", d0, d1, "--mode", "selective", "--range", "nan", "30", *o("a")],
            needle="finite",
        )
    )
    add(Case("depth --budget-ms nan", ["depth", L, R, "--budget-ms", "nan", *o("a")], needle="finite"))
    add(Case("depth --budget-ms inf", ["depth", L, R, "--budget-ms", "inf", *o("a")], needle="finite"))
    add(Case("depth --min-confidence 2", ["depth", L, R, "--min-confidence", "2", *o("a")], needle="1"))
    more = (("--min-confidence", "nan", "finite"), ("--max-disparity", "autox", "number"))
    for flag, value, needle in more:
        add(Case(f"depth {flag} {value}", ["depth", L, R, flag, value, *o("a")], needle=needle))
    # fixed ranges: the automatic one follows the scene (0-48 px here), and a machine with enough
    # memory then answers the frame (minutes) instead of refusing it
    big = ["--max-disparity", "192"]
    add(Case("depth 8000x6000 continuous 0-192 px (Bi3D)", ["depth", BL, BR, *big, *o("a")], needle="GiB"))
    sgbm_big = ["--engine", "sgbm", "--max-disparity", "512"]
    add(Case("depth 8000x6000 SGBM 0-512 px", ["depth", BL, BR, *sgbm_big, *o("a")], needle="GiB"))
    add(
        Case(
            "depth SGBM --levels 10000",
            ["depth", d0, d1, "--engine", "sgbm", "--mode", "quantized", "--levels", "10000", *o("a")],
            needle="outside [1, 1024]",  # the flag's own range; 500 below meets the range's bound
        )
    )
    add(Case("depth synthetic:99999x99999", ["depth", "synthetic:99999x99999", *o("a")], needle="GiB"))
    add(
        Case(
            "record synthetic:99999x99999",
            ["record", "synthetic:99999x99999", str(work / "r_huge")],
            needle="GiB",
        )
    )
    add(
        Case(
            "depth checkpoint width 1e6",
            ["depth", L, R, "--weights", ck["width_1e6"], *o("a")],
            needle="width",
        )
    )
    add(
        Case(
            "train resume booby-trapped state.pt",
            ["train", "--out", runs["trap"], "--steps", "6", "--crop", "96x96", "--batch", "1"],
            needle="run code",
            check=_no_file("fx/PWNED"),
        )
    )
    add(
        Case(
            "train resume legacy booby-trapped state.pt",
            ["train", "--out", runs["trap_legacy"], "--steps", "6", "--crop", "96x96", "--batch", "1"],
            needle="run code",
            check=_no_file("fx/PWNED"),
        )
    )
    add(
        Case(
            "train resume truncated state.pt",
            ["train", "--out", runs["trunc"], "--steps", "6", "--crop", "96x96", "--batch", "1"],
            needle="state.pt",
        )
    )
    add(
        Case(
            "eval --json nodir/x.json",
            ["eval", str(DEMO), "--engines", "sgbm", "--json", str(work / "nodir" / "x.json")],
            needle="does not exist",
        )
    )
    add(
        Case(
            "bench --json nodir/x.json",
            ["bench", "--engines", "sgbm", "--json", str(work / "nodir" / "x.json")],
            needle="does not exist",
        )
    )
    add(Case("depth --out an existing file", ["depth", L, R, *t, "--out", f["afile"]], needle="is a file"))
    add(Case("calib check on a 1x1 pair", ["calib", "check", L1, R1], needle="at least 16x16"))
    add(
        Case(
            "depth on a recording with 0xFF in timestamps",
            ["depth", rec["ff_ts"], *t, *o("a")],
            needle="damaged",
        )
    )
    add(
        Case(
            "eval a recording with 0xFF in timestamps",
            ["eval", rec["ff_ts"], "--engines", "sgbm", "--max-disparity", "32"],
            needle="damaged",
        )
    )

    # -- the hang ------------------------------------------------------------------------------
    add(
        Case(
            "depth Bi3D quantized --levels 10000",
            ["depth", d0, d1, "--mode", "quantized", "--levels", "10000", *o("a")],
            needle="outside [1, 1024]",
        )
    )
    add(
        Case(
            "depth Bi3D quantized --levels 500",
            ["depth", L, R, "--mode", "quantized", "--levels", "500", *o("a")],
            needle="at most",
        )
    )
    add(
        Case(
            "depth Bi3D quantized --levels 191 (the most, --max-disparity 192)",
            [
                "depth",
                L,
                R,
                "--mode",
                "quantized",
                "--levels",
                "191",
                "--max-disparity",
                "192",
                "--runtime",
                "torch",
                *o("q191"),
            ],
            expect="ok",
        )
    )
    add(
        Case(
            "depth --levels 191 on a 64 px wide pair (auto range 0-48 px)",
            ["depth", L, R, "--mode", "quantized", "--levels", "191", *o("q191t")],
            needle="a 48 px range holds at most 47 planes",
        )
    )

    # -- made-up answers -----------------------------------------------------------------------
    add(
        Case(
            "depth 1x1 pair binary",
            ["depth", L1, R1, "--mode", "binary", "--planes", "10", *o("a")],
            needle="at least 16x16",
        )
    )
    add(Case("depth 10x10 pair continuous", ["depth", L10, R10, *o("a")], needle="at least 16x16"))
    add(
        Case(
            "depth 10x10 pair SGBM",
            ["depth", L10, R10, "--engine", "sgbm", "--max-disparity", "16", *o("a")],
            needle="at least 16x16",
        )
    )
    add(
        Case(
            "depth 24x32 pair (at the minimum size)",
            ["depth", L24, R24, "--max-disparity", "24", "--runtime", "torch", *o("p24")],
            expect="ok",
        )
    )
    add(
        Case(
            "depth with NaN weights",
            ["depth", L, R, "--weights", ck["nan_weights"], "--mode", "binary", "--planes", "10", *o("a")],
            needle="NaN",
        )
    )
    add(
        Case(
            "depth metre plane, negative baseline",
            ["depth", L, R, "--calib", cal["neg_baseline"], "--mode", "binary", "--planes", "2m", *o("a")],
        )
    )
    add(
        Case(
            "depth metre plane, zero baseline",
            ["depth", L, R, "--calib", cal["zero_baseline"], "--mode", "binary", "--planes", "2m", *o("a")],
        )
    )
    add(
        Case(
            "depth metre plane, zero focal length",
            ["depth", L, R, "--calib", cal["zero_focal"], "--mode", "binary", "--planes", "2m", *o("a")],
        )
    )
    add(
        Case(
            "depth metre plane, NaN focal length",
            ["depth", L, R, "--calib", cal["nan_focal"], "--mode", "binary", "--planes", "2m", *o("a")],
        )
    )
    add(
        Case(
            "depth with a calibration for another size",
            ["depth", L, R, "--calib", cal["wrong_size"], "--mode", "binary", "--planes", "2m", *o("a")],
        )
    )
    add(
        Case(
            "calib check --calib negative baseline",
            ["calib", "check", d0, d1, "--calib", cal["neg_baseline"]],
        )
    )

    # -- misleading messages -------------------------------------------------------------------
    add(
        Case(
            "depth with a folder as the right image",
            ["depth", L, f["adir.png"], *o("a")],
            needle="is a folder",
        )
    )
    add(
        Case(
            "depth with the demo folder as LEFT and an image",
            ["depth", str(DEMO), R, *o("a")],
            needle="is a folder",
        )
    )
    add(
        Case(
            "depth legacy code-running checkpoint",
            ["depth", L, R, "--weights", ck["trap_legacy"], *o("a")],
            needle="run code",
            check=_no_file("fx/PWNED"),
        )
    )
    add(
        Case(
            "depth zip code-running checkpoint",
            ["depth", L, R, "--weights", ck["trap_zip"], *o("a")],
            needle="run code",
            check=_no_file("fx/PWNED"),
        )
    )
    add(
        Case("depth recording without timestamps.txt", ["depth", rec["no_ts"], *t, *o("a")], needle="reindex")
    )
    add(
        Case(
            "depth recording with a damaged session.json",
            ["depth", rec["bad_session"], *t, *o("a")],
            needle="reindex",
        )
    )
    add(
        Case(
            "depth recording without session.json",
            ["depth", rec["no_session"], *t, *o("a")],
            needle="reindex",
        )
    )
    add(
        Case(
            "eval recording without session.json",
            ["eval", rec["no_session"], "--engines", "sgbm", "--max-disparity", "32"],
            needle="reindex",
        )
    )
    add(
        Case(
            "depth metre plane, bad demo calibration",
            ["depth", d0, d1, "--calib", str(neg_demo), "--mode", "binary", "--planes", "2m", *o("a")],
            needle="baseline",
        )
    )
    add(
        Case(
            "record --reindex rebuilds a missing timestamps.txt",
            ["record", "--reindex", rec["no_ts"]],
            expect="ok",
            check=_stdout_has("indexed 6"),
        )
    )
    add(Case("depth on the reindexed recording", ["depth", rec["no_ts"], *t, *o("reidx")], expect="ok"))
    add(
        Case(
            "record --reindex rebuilds a damaged session.json",
            ["record", "--reindex", rec["bad_session"]],
            expect="ok",
            check=_stdout_has("indexed 6"),
        )
    )
    add(
        Case(
            "record --reindex on an empty folder",
            ["record", "--reindex", ds["empty"]],
            needle="nothing to index",
        )
    )
    add(
        Case(
            "record --reindex with two folders",
            ["record", "--reindex", rec["rec"], str(work / "x")],
            needle="alone",
        )
    )

    # -- data lost -----------------------------------------------------------------------------
    add(
        Case(
            "record rec rec --overwrite",
            ["record", rec["victim"], rec["victim"], "--overwrite"],
            needle="overlaps",
            check=_frames_left("fx/victim", 6),
        )
    )
    add(
        Case(
            "record rec rec/inner --overwrite",
            ["record", rec["victim2"], rec["victim2"] + "/inner", "--overwrite"],
            needle="overlaps",
            check=_frames_left("fx/victim2", 6),
        )
    )
    add(
        Case(
            "record rec/left into its parent",
            ["record", rec["victim3"] + "/left," + rec["victim3"] + "/right", rec["victim3"], "--overwrite"],
            needle="overlaps",
            check=_frames_left("fx/victim3", 6),
        )
    )

    # -- leftovers -----------------------------------------------------------------------------
    add(
        Case(
            "open a recording a killed recorder left .tmp files in",
            ["depth", rec["leftovers"], *t, *o("left")],
            expect="ok",
            check=_no_tmp("fx/leftovers"),
        )
    )
    add(
        Case(
            "depth recording with a damaged timestamps line",
            ["depth", rec["damaged_line"], *t, *o("a")],
            needle="line 3",
        )
    )
    add(
        Case(
            "depth recording with a NaN focal length", ["depth", rec["bad_cal"], *t, *o("a")], needle="finite"
        )
    )

    # -- determinism ---------------------------------------------------------------------------
    add(Case("depth demo defaults, run 1", ["depth", d0, d1, *o("det1")], expect="ok"))
    add(
        Case(
            "depth demo defaults, run 2: identical arrays",
            ["depth", d0, d1, *o("det2")],
            expect="ok",
            check=_identical("out/det1", "out/det2"),
        )
    )

    # -- images (already refused cleanly) -------------------------------------------------------
    add(Case("depth missing left image", ["depth", str(fx / "nope.png"), R, *o("a")], needle="not found"))
    add(Case("depth missing right image", ["depth", L, str(fx / "nope.png"), *o("a")], needle="not found"))
    add(Case("depth empty image", ["depth", f["empty.png"], R, *o("a")], needle="not a readable image"))
    add(Case("depth truncated image", ["depth", f["truncated.png"], R, *o("a")]))
    add(
        Case(
            "depth random bytes as image",
            ["depth", f["garbage.png"], R, *o("a")],
            needle="not a readable image",
        )
    )
    add(Case("depth text as image", ["depth", f["text.png"], R, *o("a")], needle="not a readable image"))
    add(Case("depth mismatched sizes", ["depth", L, f["other_size.png"], *o("a")], needle="differ in size"))
    add(Case("depth 16-bit image", ["depth", f["deep16.png"], f["deep16.png"], *t, *o("d16")], expect="ok"))
    add(Case("depth RGBA image", ["depth", f["rgba.png"], f["rgba.png"], *t, *o("rgba")], expect="ok"))
    add(Case("depth one image as a source", ["depth", L, "--frames", "1", *o("a")], needle="one image"))
    add(Case("depth nonexistent source", ["depth", str(fx / "nowhere"), *o("a")], needle="not found"))
    add(Case("eval pair without --gt", ["eval", L, R], needle="--gt"))
    add(
        Case("eval pair with a missing gt", ["eval", L, R, "--gt", str(fx / "nope.pfm"), "--engines", "sgbm"])
    )
    add(
        Case(
            "eval pair with a bad pfm",
            ["eval", L, R, "--gt", f["bad.pfm"], "--engines", "sgbm"],
            needle="pfm",
        )
    )
    add(
        Case(
            "eval pair with a truncated pfm",
            ["eval", L, R, "--gt", f["trunc.pfm"], "--engines", "sgbm"],
            needle="truncated",
        )
    )
    add(
        Case(
            "eval pair with a gt png of the wrong kind",
            ["eval", L, R, "--gt", L, "--engines", "sgbm"],
            needle="KITTI",
        )
    )
    add(Case("flow missing frame", ["flow", L, str(fx / "nope.png")], needle="not found"))
    add(Case("flow garbage frames", ["flow", f["garbage.png"], f["garbage.png"]]))
    add(Case("flow mismatched frames", ["flow", L, f["other_size.png"]]))
    add(Case("flow 10x10 frames", ["flow", L10, R10, "--out", str(work / "fl")], needle="at least 16x16"))
    add(Case("depth demo pair given right first", ["depth", d1, d0, *o("a")], needle="look swapped"))
    add(Case("calib check missing image", ["calib", "check", L, str(fx / "nope.png")], needle="not found"))
    add(Case("calib check garbage image", ["calib", "check", f["garbage.png"], R]))
    add(Case("calib check mismatched sizes", ["calib", "check", L, f["other_size.png"]], needle="differ"))

    # -- calibration files (already refused cleanly) --------------------------------------------
    add(
        Case(
            "depth --calib missing file",
            ["depth", L, R, "--calib", str(fx / "nope.txt"), *o("a")],
            needle="not found",
        )
    )
    add(Case("depth --calib garbage", ["depth", L, R, "--calib", str(fx / "garbage_calib.txt"), *o("a")]))
    add(Case("depth --calib empty", ["depth", L, R, "--calib", str(fx / "empty_calib.txt"), *o("a")]))
    add(Case("depth --calib broken yaml", ["depth", L, R, "--calib", str(fx / "calib.yaml"), *o("a")]))
    add(Case("depth --calib broken json", ["depth", L, R, "--calib", str(fx / "calib.json"), *o("a")]))
    add(Case("depth --calib unknown suffix", ["depth", L, R, "--calib", str(fx / "calib.xyz"), *o("a")]))
    add(Case("depth --calib a folder", ["depth", L, R, "--calib", str(fx), *o("a")]))
    add(
        Case(
            "depth metres without --calib",
            ["depth", L, R, "--mode", "binary", "--planes", "2m", *o("a")],
            needle="--calib",
        )
    )
    add(
        Case(
            "depth spacing depth without calibration",
            ["depth", L, R, "--mode", "quantized", "--spacing", "depth", *o("a")],
            needle="calibration",
        )
    )
    add(
        Case(
            "calib check --calib garbage", ["calib", "check", L, R, "--calib", str(fx / "garbage_calib.txt")]
        )
    )
    add(
        Case(
            "calib chessboard on an empty folder",
            [
                "calib",
                "chessboard",
                ds["empty"],
                "--pattern",
                "9x6",
                "--square",
                "0.025",
                "--out",
                str(work / "c.yaml"),
            ],
        )
    )
    add(
        Case(
            "calib chessboard bad pattern",
            [
                "calib",
                "chessboard",
                ds["empty"],
                "--pattern",
                "nine",
                "--square",
                "0.025",
                "--out",
                str(work / "c.yaml"),
            ],
        )
    )
    add(
        Case(
            "calib chessboard square nan",
            [
                "calib",
                "chessboard",
                ds["empty"],
                "--pattern",
                "9x6",
                "--square",
                "nan",
                "--out",
                str(work / "c.yaml"),
            ],
        )
    )
    add(
        Case(
            "calib check --pattern without --square",
            ["calib", "check", L, R, "--pattern", "9x6"],
            needle="--square",
        )
    )

    # -- checkpoints (already refused cleanly) --------------------------------------------------
    for name, needle in (
        ("empty", "empty"),
        ("garbage", "not a readable"),
        ("truncated", "not a readable"),
        ("text", "not a readable"),
        ("list", "state_dict"),
        ("no_state", "state_dict"),
        ("width_nan", "width"),
        ("maxdisp_huge", "max_disparity"),
        ("bad_kind", "metadata"),
        ("wrong_keys", ""),
    ):
        add(
            Case(f"depth --weights {name}.pt", ["depth", L, R, "--weights", ck[name], *o("a")], needle=needle)
        )
    add(
        Case(
            "depth --weights missing file",
            ["depth", L, R, "--weights", str(fx / "nope.pt"), *o("a")],
            needle="not found",
        )
    )
    add(
        Case(
            "eval --weights garbage",
            ["eval", L, R, "--gt", str(DEMO / "disp0GT.pfm"), "--weights", ck["garbage"]],
        )
    )
    add(
        Case(
            "export --weights trap",
            ["export", "--weights", ck["trap_zip"], "--onnx", str(work / "onnx")],
            needle="run code",
        )
    )
    add(
        Case(
            "train --init truncated",
            ["train", "--out", str(work / "t_init"), "--init", ck["truncated"], "--steps", "1"],
            needle="not a readable",
        )
    )

    # -- videos (already refused cleanly) --------------------------------------------------------
    add(
        Case(
            "depth on a good side-by-side video",
            ["depth", vid["sbs.avi"], "--max-disparity", "16", "--engine", "sgbm", *o("vid")],
            expect="ok",
        )
    )
    for name in ("truncated.avi", "garbage.mp4", "empty.mp4", "text.avi"):
        add(Case(f"depth on {name}", ["depth", vid[name], *t, *o("a")], expect="either"))
        add(Case(f"record {name}", ["record", vid[name], str(work / f"r_{name}")], expect="either"))
    add(Case("flow on a garbage video", ["flow", vid["garbage.mp4"]]))
    add(
        Case(
            "depth video:missing.mp4",
            ["depth", "video:" + str(fx / "missing.mp4"), *o("a")],
            needle="not found",
        )
    )
    add(
        Case(
            "depth video layout bad",
            ["depth", "video:" + vid["sbs.avi"] + "?layout=diagonal", *o("a")],
            needle="layout",
        )
    )
    add(
        Case(
            "depth two videos of which one is an image",
            ["depth", vid["sbs.avi"] + "," + L, *o("a")],
            needle="mixes",
        )
    )

    # -- datasets (already refused cleanly) -------------------------------------------------------
    add(
        Case(
            "eval unknown dataset layout",
            ["eval", ds["unknown"], "--engines", "sgbm"],
            needle="no stereo scenes",
        )
    )
    add(Case("eval empty folder", ["eval", ds["empty"], "--engines", "sgbm"]))
    add(Case("eval partial KITTI", ["eval", ds["kitti"], "--engines", "sgbm"]))
    add(Case("eval partial Middlebury", ["eval", ds["midd"], "--engines", "sgbm"]))
    add(
        Case(
            "eval Middlebury with a truncated gt",
            ["eval", ds["midd_badgt"], "--engines", "sgbm", "--max-disparity", "32"],
        )
    )
    add(Case("eval partial SceneFlow", ["eval", ds["sceneflow"], "--engines", "sgbm"]))
    add(Case("depth on an unknown layout folder", ["depth", ds["unknown"], *o("a")]))
    add(Case("depth on an empty folder", ["depth", ds["empty"], *o("a")]))
    add(
        Case(
            "train --data unknown layout",
            ["train", "--out", str(work / "t_ds"), "--data", ds["unknown"], "--steps", "1"],
        )
    )
    add(
        Case(
            "train --data missing",
            ["train", "--out", str(work / "t_ds2"), "--data", str(fx / "nope"), "--steps", "1"],
        )
    )
    add(
        Case(
            "eval synthetic without --frames",
            ["eval", "synthetic:48x64", "--engines", "sgbm"],
            needle="--frames",
        )
    )

    # -- arguments of every command ---------------------------------------------------------------
    bad_depth = [
        (["--levels", "abc"], ""),
        (["--levels", "0"], "outside [1, 1024]"),
        (["--levels", "-3"], ""),
        (["--levels", "2.5"], ""),
        (["--budget-ms", "-1"], ""),
        (["--budget-ms", "0"], ""),
        (["--budget-ms", "abc"], ""),
        (["--max-disparity", "0"], ""),
        (["--max-disparity", "1e9"], ""),
        (["--max-disparity", "100000"], ""),
        (["--max-disparity", "nan"], ""),
        (["--frames", "0"], ""),
        (["--mode", "nonsense"], ""),
        (["--mode", "binary"], "one plane"),
        (["--mode", "binary", "--planes", "5,10"], "one plane"),
        (["--mode", "binary", "--planes", "abc"], ""),
        (["--mode", "binary", "--planes", "nan"], "finite"),
        (["--mode", "binary", "--planes", "inf"], "finite"),
        (["--mode", "binary", "--planes", "300"], "outside"),
        (["--mode", "binary", "--planes", "-5"], "outside"),
        (["--mode", "quantized", "--planes", ","], ""),
        (["--mode", "selective"], "--range"),
        (["--mode", "selective", "--range", "30", "10"], "below"),
        (["--mode", "selective", "--range", "10", "inf"], "finite"),
        (["--mode", "selective", "--range", "-10", "20"], "outside"),
        (["--mode", "selective", "--range", "10", "1000"], "outside"),
        (["--engine", "nonsense"], ""),
        (["--block-size", "4", "--engine", "sgbm"], "odd"),
        (["--block-size", "nan"], ""),
        (["--uniqueness", "-1"], ""),
        (["--speckle-window", "-5"], ""),
        (["--device", "tpu"], ""),
        (["--device", "cuda"], "CUDA"),
        (["--precision", "fp16"], "cuda"),
        (["--precision", "int4"], ""),
        (["--runtime", "cuda"], ""),
        (["--shift-mode", "sideways"], ""),
        (["--cuda-graphs"], "cuda"),
    ]
    for extra, needle in bad_depth:
        add(Case("depth " + " ".join(extra), ["depth", L, R, *extra, *o("a")], needle=needle))
    add(Case("depth LEFT RIGHT --frames 2", ["depth", L, R, "--frames", "2", *o("a")], needle="--frames"))
    add(
        Case(
            "depth quantized --levels 3 --budget-ms 1e-9",
            ["depth", L, R, *t, "--mode", "quantized", "--levels", "3", "--budget-ms", "1e-9", *o("bud")],
            expect="either",
        )
    )
    bad_eval = [
        (["--frames", "0"], ""),
        (["--frames", "x"], ""),
        (["--engines", "nonsense"], "unknown engine"),
        (["--json", str(work)], "folder"),
        (["--max-disparity", "-1"], ""),
    ]
    for extra, needle in bad_eval:
        engines = [] if "--engines" in extra else ["--engines", "sgbm"]
        label = " ".join(a.replace(str(work), "WORK") for a in extra)
        add(Case("eval " + label, ["eval", str(DEMO), *engines, *extra], needle=needle))
    add(Case("eval nonexistent path", ["eval", str(fx / "nowhere"), "--engines", "sgbm"]))
    bad_bench = [
        (["--repeat", "0"], ""),
        (["--repeat", "nan"], ""),
        (["--warmup", "-1"], ""),
        (["--size", "0x0"], ""),
        (["--size", "abc"], "HEIGHTxWIDTH"),
        (["--size", "99999x99999"], ""),
        (["--planes", "0"], ""),
        (["--planes", "x"], ""),
        (["--width", "nan"], ""),
        (["--width", "-1"], ""),
        (["--json", str(work)], "folder"),
        (["--engines", "nonsense"], ""),
        (["--modes", "nonsense", "--engines", "sgbm"], ""),
    ]
    for extra, needle in bad_bench:
        add(
            Case(
                "bench " + " ".join(a.replace(str(work), "WORK") for a in extra),
                ["bench", *extra],
                needle=needle,
            )
        )
    bad_export = [
        (["--width", "nan"], ""),
        (["--max-planes", "0"], ""),
        (["--size", "1x"], ""),
        (["--max-disparity", "0"], ""),
        (["--kind", "nonsense"], ""),
    ]
    bad_export += [  # refused before the work (an internal error after 90 s at width 8, before)
        (["--onnx", str(work / "o8"), "--kind", "binary", "--width", "8"], "or less"),
        (["--onnx", str(work / "o8"), "--width", "1", "--max-disparity", "100"], "multiple of 96"),
        (["--onnx", str(work / "o8"), "--size", "480x640"], "--tensorrt"),
        (["--onnx", str(work / "o8"), "--device", "cuda"], "--tensorrt"),  # exported on the CPU
    ]
    for extra, needle in bad_export:
        add(
            Case(
                "export " + " ".join(a.replace(str(work), "WORK") for a in extra),
                ["export", *extra],
                needle=needle,
            )
        )
    bad_flow = [
        (["--max-magnitude", "nan"], ""),
        (["--max-magnitude", "inf"], ""),
        (["--arrow-step", "1"], ""),
        (["--grid", "3"], ""),
        (["--gpu", "-1"], ""),
        (["--max-frames", "0"], ""),
        (["--backend", "magic"], ""),
    ]
    for extra, needle in bad_flow:
        add(
            Case(
                "flow " + " ".join(extra),
                ["flow", L, R, *extra, "--out", str(work / "out" / "flow")],
                needle=needle,
            )
        )
    add(Case("flow three inputs", ["flow", L, R, L]))
    add(Case("flow no inputs", ["flow"]))
    bad_record = [
        (["--frames", "0"], ""),
        (["--frames", "x"], ""),
        (["--seconds", "nan"], "finite"),
        (["--seconds", "-1"], ""),
        (["--seconds", "inf"], "finite"),
    ]
    for extra, needle in bad_record:
        add(
            Case(
                "record " + " ".join(extra),
                ["record", "synthetic:48x64", str(work / "r_bad"), *extra],
                needle=needle,
            )
        )
    add(
        Case(
            "record missing source", ["record", str(fx / "nowhere"), str(work / "r_none")], needle="not found"
        )
    )
    add(Case("record camera:63", ["record", "camera:63", str(work / "r_cam")]))
    add(
        Case(
            "record into an existing recording",
            ["record", "synthetic:48x64?frames=1", rec["rec"]],
            needle="already holds",
        )
    )
    add(Case("record into a file", ["record", "synthetic:48x64?frames=1", f["afile"]]))
    add(Case("record without DIR", ["record", "synthetic:48x64"]))
    add(
        Case(
            "record synthetic fps=nan",
            ["record", "synthetic:48x64?fps=nan&frames=1", str(work / "r_fps")],
            needle="finite",
        )
    )
    add(Case("record synthetic frames=x", ["record", "synthetic:48x64?frames=x", str(work / "r_fx")]))
    add(Case("record synthetic:8x8", ["record", "synthetic:8x8?frames=1", str(work / "r_8")], needle="16x16"))
    add(
        Case(
            "record synthetic max_disparity=-5",
            ["record", "synthetic:48x64?frames=1&max_disparity=-5", str(work / "r_md")],
        )
    )
    bad_train = [
        (["--steps", "0"], ""),
        (["--lr", "nan"], ""),
        (["--lr", "-1"], ""),
        (["--batch", "0"], ""),
        (["--crop", "100x100"], "96"),
        (["--width", "0"], ""),
        (["--near-share", "2"], ""),
        (["--workers", "-1"], ""),
        (["--kind", "nonsense"], ""),
        (["--plane-step", "2"], ""),
        (["--device", "cuda"], "CUDA"),
    ]
    for extra, needle in bad_train:
        add(Case("train " + " ".join(extra), ["train", "--out", str(work / "t_bad"), *extra], needle=needle))
    add(Case("gui --quit-after nan", ["gui", "--quit-after", "nan"], needle="finite"))
    add(Case("unknown command", ["nonsense"]))
    add(Case("calib unknown subcommand", ["calib", "nonsense"]))

    add(Case("flow --out an existing file", ["flow", L, R, "--out", f["afile"]], needle="is a file"))
    add(
        Case(
            "record into an uncreatable folder",
            ["record", "synthetic:24x32?frames=2", "/proc/rec"],
            needle="cannot create",
        )
    )
    add(Case("depth --out ''", ["depth", L, R, *t, "--out", ""], needle="empty"))
    add(
        Case(
            "depth --out in an uncreatable place", ["depth", L, R, *t, "--out", "/proc/x/y"], needle="cannot"
        )
    )

    bomb = fx / "bomb.png"
    bomb.write_bytes(_png_claiming(200_000, 100_000))
    add(
        Case("depth with a PNG claiming 200000x100000 px", ["depth", str(bomb), R, *t, *o("a")], needle="GiB")
    )
    add(
        Case(
            "eval synthetic --frames 1e11 (held in memory)",
            ["eval", "synthetic:24x32", "--frames", "100000000000", "--engines", "sgbm"],
            needle="give fewer --frames",
        )
    )

    add(
        Case(
            "depth synthetic seed beyond 64 bits",
            ["depth", "synthetic:24x32?seed=99999999999999999999&frames=1", *t, *o("a")],
            needle="seed",
        )
    )
    add(Case("depth camera:0?fps=nan", ["depth", "camera:0?fps=nan", *o("a")], needle="finite"))

    add(
        Case(
            "train --out an existing file", ["train", "--out", f["afile"], "--steps", "1"], needle="is a file"
        )
    )
    add(
        Case(
            "train --out an uncreatable folder",
            ["train", "--out", "/proc/t", "--steps", "1", "--crop", "96x96", "--batch", "1"],
            needle="cannot create",
        )
    )

    # -- adapt (issue 21) ----------------------------------------------------------------------------
    ad = _adapt_footage(fx)
    state = fx / "adapt_state.pt"
    _save_tensors(state, {"step": 1, "optimizer": {"state": {}, "param_groups": []}})
    foreign = fx / "adapt_foreign.pt"
    _save_tensors(foreign, {"weights": [1.0, 2.0]})
    out = str(work / "adapted.pt")
    for name, argv, needle in [
        ("adapt one pair", [f"{L},{R}", "--out", out], "at least 2"),
        ("adapt unrectified footage", [ad["tilted"], "--out", out], "calib check"),
        (
            "adapt --out in a folder under a file",
            [ad["good"], "--out", str(Path(L) / "a.pt")],
            "cannot create the folder",
        ),
        ("adapt --out a folder", [ad["good"], "--out", str(work)], "is a folder"),
        ("adapt --out unwritable", [ad["good"], "--out", "/proc/adapted.pt"], "cannot write"),
        (
            "adapt --weights an optimizer state",
            [ad["good"], "--out", out, "--weights", str(state)],
            "training state",
        ),
        ("adapt --weights a random .pt", [ad["good"], "--out", out, "--weights", str(foreign)], "not a Bi3D"),
        ("adapt --weights a text file", [ad["good"], "--out", out, "--weights", f["afile"]], "checkpoint"),
        ("adapt --steps 0", [ad["good"], "--out", out, "--steps", "0"], "--steps"),
    ]:
        add(Case(name, ["adapt", *argv], needle=needle, check=_no_file(out)))

    # -- full disk --------------------------------------------------------------------------------
    cases += _disk_full_cases(work, L, R, t)
    return cases


def _adapt_footage(folder: Path) -> dict[str, str]:
    """Ten tiny frames of the adaptation footage, and a copy whose right camera sits 6 px lower."""
    sys.path.insert(0, str(ROOT))
    from app.engine.synthetic.footage import FootageConfig, write_footage

    good, tilted = folder / "adapt_footage", folder / "adapt_tilted"
    write_footage(good, FootageConfig(height=96, width=160, frames=10, shots=1, max_disparity=24, pan_px=20))
    shutil.copytree(good, tilted)
    for path in (tilted / "right").glob("*.png"):
        cv2.imwrite(str(path), np.roll(cv2.imread(str(path)), 6, axis=0))
    return {"good": str(good), "tilted": str(tilted)}


def _save_tensors(path: Path, value: object) -> None:
    import torch

    torch.save(value, path)


def _disk_full_cases(work: Path, L: str, R: str, t: list[str]) -> list[Case]:
    full = work / "full"
    if not _tmpfs(full):
        return [Case("disk full (no tmpfs could be mounted here)", ["--version"], expect="refuse")]
    env_cmd = [sys.executable, "-m", "app"]
    subprocess.run(
        [*env_cmd, "depth", L, R, *t, "--out", str(full / "out")], check=True, capture_output=True, cwd=ROOT
    )
    subprocess.run(
        [*env_cmd, "eval", str(DEMO), "--engines", "sgbm", "--json", str(full / "e.json")],
        check=True,
        capture_output=True,
        cwd=ROOT,
    )
    subprocess.run(
        [
            *env_cmd,
            "bench",
            "--engines",
            "sgbm",
            "--modes",
            "binary",
            "--planes",
            "1",
            "--size",
            "48x64",
            "--max-disparity",
            "32",
            "--repeat",
            "1",
            "--warmup",
            "0",
            "--json",
            str(full / "b.json"),
        ],
        check=True,
        capture_output=True,
        cwd=ROOT,
    )
    before = {p.name: p.read_bytes() for p in (full / "out").iterdir() if p.is_file()}
    e_json, b_json = (full / "e.json").read_bytes(), (full / "b.json").read_bytes()
    _fill(full, leave=6000)  # room for a few small files, not for a whole output set

    def committed(work: Path, out: str, err: str) -> str:
        folder = full / "rec"
        lines = (
            (folder / "timestamps.txt").read_text().splitlines()
            if (folder / "timestamps.txt").is_file()
            else []
        )
        if not lines:
            return "no frame was committed before the disk filled"
        missing = [
            ln
            for ln in lines
            if not all((folder / s / f"{ln.split()[0]}.png").is_file() for s in ("left", "right"))
        ]
        return f"committed frames without files: {missing}" if missing else ""

    return [
        Case(
            "disk full: depth --out over an earlier set",
            ["depth", L, R, *t, "--mode", "quantized", "--levels", "8", "--out", str(full / "out")],
            needle="disk is full",
            check=_set_intact(full / "out", before),
        ),
        Case(
            "disk full: eval --json over an earlier file",
            ["eval", str(DEMO), "--engines", "sgbm", "--json", str(full / "e.json")],
            needle="disk is full",
            check=_same_bytes(full / "e.json", e_json),
            pre=lambda: _fill(full, 0, "ballast2"),
        ),
        Case(
            "disk full: bench --json over an earlier file",
            [
                "bench",
                "--engines",
                "sgbm",
                "--modes",
                "binary",
                "--planes",
                "1",
                "--size",
                "48x64",
                "--max-disparity",
                "32",
                "--repeat",
                "1",
                "--warmup",
                "0",
                "--json",
                str(full / "b.json"),
            ],
            needle="disk is full",
            check=_same_bytes(full / "b.json", b_json),
        ),
        Case(
            "disk full: record",
            ["record", "synthetic:48x64?frames=50", str(full / "rec")],
            needle="disk is full",
            check=committed,
            pre=lambda: _room(full, 100_000),  # room for a few frames, not for fifty
        ),
    ]


# ---- running --------------------------------------------------------------------------------


def run_case(case: Case, work: Path, env: dict[str, str], timeout: float) -> Outcome:
    if case.pre is not None:
        case.pre()
    t0 = time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "app", *case.argv],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return Outcome(case, None, False, False, time.perf_counter() - t0, f"no answer in {timeout:.0f} s")
    seconds = time.perf_counter() - t0
    err_lines = [ln for ln in done.stderr.strip().splitlines() if ln.strip()]
    tb = "Traceback" in done.stderr or "Traceback" in done.stdout
    one = len(err_lines) == 1
    why = []
    code = done.returncode
    refused = code == 2 and one
    if tb:
        why.append("traceback")
    if case.expect == "refuse" and not refused:
        why.append(
            f"expected a one-line refusal (exit 2), got exit {code} with {len(err_lines)} stderr line(s)"
        )
    if case.expect == "ok" and code != 0:
        why.append(f"expected exit 0, got {code}: {err_lines[-1] if err_lines else ''}")
    if case.expect == "either" and not (refused or code == 0):
        why.append(f"expected exit 0 or a one-line refusal, got exit {code} with {len(err_lines)} line(s)")
    if case.needle and refused and case.needle.lower() not in done.stderr.lower():
        why.append(f"the line lacks {case.needle!r}")
    if case.check is not None:
        problem = case.check(work, done.stdout, done.stderr)
        if problem:
            why.append(problem)
    if why and err_lines:
        why.append(f"stderr: {err_lines[-1][:160]}")
    return Outcome(case, code, one, tb, seconds, "; ".join(why))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", help="run the cases whose name holds this text")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per case")
    parser.add_argument("--keep", help="work in this folder and keep it (default: a temporary one)")
    args = parser.parse_args()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bad-inputs-"))
    work.mkdir(parents=True, exist_ok=True)
    (work / "out").mkdir(exist_ok=True)
    env = dict(
        os.environ,
        PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        BI3D_STUDIO_CACHE=str(work / "cache"),
        QT_QPA_PLATFORM="offscreen",
        PYTHONDONTWRITEBYTECODE="1",
    )
    os.environ.update(env)
    try:
        cases = catalogue(work, env)
        if args.only:
            cases = [c for c in cases if args.only.lower() in c.name.lower()]
        outcomes = []
        print(f"{'case':<62} {'exit':>4} {'1 line':>6} {'trace':>5} {'s':>6}  result")
        for case in cases:
            out = run_case(case, work, env, args.timeout)
            outcomes.append(out)
            code = "-" if out.code is None else str(out.code)
            verdict = "ok" if out.passed else f"FAIL: {out.why}"
            print(
                f"{case.name[:62]:<62} {code:>4} {'yes' if out.one_line else 'no':>6} "
                f"{'yes' if out.traceback else 'no':>5} {out.seconds:6.1f}  {verdict}",
                flush=True,
            )
        passed = sum(o.passed for o in outcomes)
        print(f"\n{passed} passed, {len(outcomes) - passed} failed ({len(outcomes)} cases)")
        return 0 if passed == len(outcomes) else 1
    finally:
        if (work / "full").is_dir():
            subprocess.run(["umount", str(work / "full")], capture_output=True)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
