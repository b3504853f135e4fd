"""A recording's index (``session.json`` and ``timestamps.txt``): reading it, saying what is wrong
with it, rebuilding it from the frames on disk, and removing what a killed recorder left.

The index is what makes a folder a recording: without a readable ``session.json`` the folder
would be played as a plain folder of pairs, calibration and timestamps dropped, and without
``timestamps.txt`` it has no committed frames. Both problems are refused with what is missing,
how many frames sit on disk, and the command that rebuilds the index (``rebuild_index``).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from app.engine.errors import UserError
from app.engine.fileio import atomic_write

FORMAT = "bi3d-studio recording"
SESSION = "session.json"
TIMESTAMPS = "timestamps.txt"
RIG = "rig.yml"  # a raw rig's calibration: its frames are raw, rectified with it as they are played
LOCK = ".recording.lock"
SUBFOLDERS = ("left", "right", "disparity")
REPLACED = ".replaced"  # a recording --overwrite replaces, kept until the new one has a frame
STALE_TMP_S = 600.0  # without file locks (not POSIX): leftovers older than this are a dead writer's


def reindex_hint(folder: Path) -> str:
    return f"rebuild the index from the frames with 'bi3d-studio record --reindex {folder}'"


def read_session(folder: Path) -> tuple[dict[str, Any] | None, str]:
    """The session metadata, or None and why it is unusable ("" when there is no such file)."""
    path = folder / SESSION
    if not path.is_file():
        return None, ""
    try:
        meta = json.loads(path.read_bytes().decode("utf-8"))
    except OSError as exc:
        return None, f"{path} cannot be read ({exc.strerror or exc})"
    except ValueError:  # not JSON, or not text (UnicodeDecodeError is a ValueError)
        # not "(JSONDecodeError)": a Python name said nothing to a user (review)
        return None, f"{path} is damaged (not the JSON it should hold)"
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        return None, f"{path} is not a bi3d-studio recording's session file"
    return meta, ""


def looks_like_recording(folder: Path) -> bool:
    """Whether a folder was meant to be a recording, even with a damaged or missing index."""
    return (folder / SESSION).exists() or (folder / TIMESTAMPS).exists() or (folder / REPLACED).is_dir()


def set_aside(folder: Path) -> None:
    """Move a recording's files into ``folder/.replaced`` (``--overwrite``): the new recording
    starts empty beside them, and they are deleted only once it has its first frame
    (``drop_set_aside``), or moved back when it ends without one (``restore_set_aside``).
    The index goes first, so at no moment is a frame listed whose files are elsewhere."""
    aside = folder / REPLACED
    shutil.rmtree(aside, ignore_errors=True)
    aside.mkdir()
    for name in (TIMESTAMPS, SESSION, RIG, *SUBFOLDERS):
        if (folder / name).exists():
            os.replace(folder / name, aside / name)


def drop_set_aside(folder: Path) -> None:
    shutil.rmtree(folder / REPLACED, ignore_errors=True)


def restore_set_aside(folder: Path) -> bool:
    """Put back a recording set aside by ``--overwrite`` when the one replacing it never got a
    frame (the source failed, Ctrl-C, a crash); drop it when the new one has frames. True when
    the old recording is back. The caller holds the folder's writer lock."""
    aside = folder / REPLACED
    if not aside.is_dir():
        return False
    try:
        committed = (folder / TIMESTAMPS).read_bytes().count(b"\n") > 0
    except OSError:
        committed = False
    if committed:
        drop_set_aside(folder)
        return False
    for name in (TIMESTAMPS, SESSION, RIG):
        (folder / name).unlink(missing_ok=True)
    for name in SUBFOLDERS:
        shutil.rmtree(folder / name, ignore_errors=True)
    for name in (TIMESTAMPS, SESSION, RIG, *SUBFOLDERS):
        if (aside / name).exists():
            os.replace(aside / name, folder / name)
    shutil.rmtree(aside, ignore_errors=True)
    return True


def frames_on_disk(folder: Path) -> list[int]:
    """Indices with both a left and a right PNG named as a recorder names them (``000042.png``),
    in order: a folder of pairs named otherwise (``000.png``, ``7.png``) is not a recording's,
    and an index of it would name files that do not exist."""
    left = {p.stem for p in (folder / "left").glob("[0-9]*.png") if _frame_name(p.stem)}
    right = {p.stem for p in (folder / "right").glob("[0-9]*.png") if _frame_name(p.stem)}
    return sorted(int(name) for name in left & right)


def _frame_name(stem: str) -> bool:
    return stem.isdigit() and stem == f"{int(stem):06d}"


def parse_timestamps(raw: bytes, path: Path, notes: list[str] | None = None) -> list[tuple[int, float]]:
    """(index, timestamp) per complete line; the piece after the last newline is unfinished.
    A damaged line, or one listing a frame again, is a ``UserError``; with ``notes``, it is left
    out and said there, and the other frames play (one bad line refused the whole recording)."""
    frames = []
    seen: dict[int, int] = {}  # frame index -> the line that listed it
    problems: list[str] = []
    for number, line in enumerate(raw.split(b"\n")[:-1], 1):
        try:
            index, stamp = line.decode("ascii").split()
            parsed = (int(index), float(stamp))
        except ValueError:  # includes bytes that are not ASCII
            shown = line[:40].decode("ascii", "backslashreplace")
            problems.append(f"line {number} is damaged ({shown!r})")
            continue
        frame = parsed[0]
        if frame in seen:  # a recorder lists each frame once: an edited or damaged index
            problems.append(
                f"line {number} lists frame {frame} again (line {seen[frame]} did; it would play twice)"
            )
            continue
        seen[frame] = number
        frames.append(parsed)
    if problems and notes is None:
        raise UserError(f"{path} {problems[0]}; {reindex_hint(path.parent)}")
    if problems and notes is not None:
        more = f" and {len(problems) - 1} more" if len(problems) > 1 else ""
        notes.append(
            f"{path} {problems[0]}{more}: left out, the other {len(frames)} frame(s) play; "
            f"{reindex_hint(path.parent)}"
        )
    return frames


def missing_index_error(folder: Path, problem: str) -> UserError:
    count = len(frames_on_disk(folder))
    return UserError(f"{problem}, while {count} frame pair(s) sit on disk; {reindex_hint(folder)}")


def rebuild_index(folder: Path) -> tuple[int, list[str]]:
    """Write ``timestamps.txt`` (and ``session.json`` if unusable) from the pairs on disk.

    Timestamps of the old log are kept where its lines are readable; other frames get their
    index at 10 fps, and a note says so. An index file replaced by other content is copied
    beside it first (``keep_copy``), and a note says where. Returns the frame count and the notes.
    """
    if not folder.is_dir():
        raise UserError(f"{folder} is not a folder; give the recording's folder")
    _no_frames_refused(folder)  # before the lock: a folder that is no recording gets no lock file
    with _reindex_lock(folder):
        return _rebuild_index(folder)


def _no_frames_refused(folder: Path) -> list[int]:
    indices = frames_on_disk(folder)
    if not indices:
        raise UserError(
            f"{folder} holds no left/NNNNNN.png and right/NNNNNN.png pairs (a recording's six-digit "
            "names); a folder of pairs named otherwise plays as a source as it is, with nothing to index"
        )
    return indices


@contextlib.contextmanager
def _reindex_lock(folder: Path) -> Iterator[None]:
    """The writer lock while the index is rebuilt: a live recorder appends to it (an index
    rebuilt under it lost the frames committed meanwhile)."""
    try:
        fd = take_lock(folder)
    except OSError:  # read-only, or no ``fcntl``: the rebuild's own write says so
        yield
        return
    if fd is None:
        raise UserError(
            f"a recorder is writing into {folder}; rebuild its index once the recording has stopped"
        )
    try:
        yield
    finally:
        release_lock(folder, fd)


GUESSED_FPS = 10.0  # the rate frames without any readable timestamp are given
FRAME_NUMBER_TIMES = "frame numbers (the source's frames carry no times)"  # session.json's timestamps_from


def guessed_stamps(kept: dict[int, float]) -> tuple[Callable[[int], float], str]:
    """A timestamp for a frame the index lost, and how it was set: at the spacing of the kept
    frames (their median seconds per frame), counted from the nearest kept frame; with fewer
    than two kept, index / 10 fps (a 25 fps video's recording jumped from 1.16 to 3.0 s)."""
    order = sorted(kept)
    steps = [(kept[b] - kept[a]) / (b - a) for a, b in itertools.pairwise(order) if kept[b] > kept[a]]
    if not steps:
        return (lambda i: i / GUESSED_FPS), f"set to index / {GUESSED_FPS:g} fps"
    spacing = float(sorted(steps)[len(steps) // 2])

    def stamp(i: int) -> float:
        nearest = min(order, key=lambda k: abs(k - i))
        return kept[nearest] + (i - nearest) * spacing

    return stamp, f"set at the kept frames' spacing ({spacing:.4g} s a frame)"


def _rebuild_index(folder: Path) -> tuple[int, list[str]]:
    indices = _no_frames_refused(folder)  # again under the lock: frames may have gone meanwhile
    notes: list[str] = []
    old = _readable_stamps(folder / TIMESTAMPS)
    guessed = [i for i in indices if i not in old]
    meta, problem = read_session(folder)
    stamp, how = guessed_stamps(old)
    if meta is not None and meta.get("timestamps_from") == FRAME_NUMBER_TIMES:
        # its times are frame numbers: 10 fps seconds were made up for them (review)
        stamp, how = (lambda i: float(i)), "set to their frame numbers, as the recording's times are"
    if guessed:
        notes.append(f"{len(guessed)} frame(s) had no readable timestamp; {how}")
    # a guessed time to the microsecond: 1.7999999999999998 read as a damaged line (review)
    lines = "".join(f"{i:06d} {old[i] if i in old else round(stamp(i), 6)!r}\n" for i in indices)
    if meta is None:
        meta = {"format": FORMAT, "version": 1, "source": "rebuilt index", "calibration": None}
        meta["created"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        salvaged = _salvage(folder / SESSION)
        meta.update(salvaged)
        kept = _replace_keeping(folder / SESSION, (json.dumps(meta, indent=2) + "\n").encode())
        what = "with the calibration read from it" if meta["calibration"] else "without a calibration"
        notes.append(f"{problem or SESSION + ' was missing'}: rewritten {what}{kept}")
    kept = _replace_keeping(folder / TIMESTAMPS, lines.encode("ascii"))
    if kept:
        notes.append(f"{TIMESTAMPS} rewritten{kept}")
    return len(indices), notes


def _salvage(path: Path) -> dict[str, Any]:
    """What a damaged session file still says whole: its source, creation time and calibration,
    each read where its key starts (a file cut short keeps the fields written before the cut; a
    rebuild that dropped the calibration lost the rig's metres). A calibration is kept only as a
    mapping of numbers, which playback checks again."""
    try:
        text = path.read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return {}
    decoder, found = json.JSONDecoder(), {}
    for key in ("source", "created", "calibration"):
        start = text.find(f'"{key}"')
        colon = text.find(":", start) if start >= 0 else -1
        if colon < 0:
            continue
        rest = text[colon + 1 :]
        try:
            value, _ = decoder.raw_decode(rest.lstrip())
        except ValueError:
            continue
        if key == "calibration":
            fine = (
                isinstance(value, dict)
                and value
                and all(
                    (isinstance(v, (int, float)) and not isinstance(v, bool)) or k == "baseline_known"
                    for k, v in value.items()
                )
            )
            if not fine:
                continue
        elif not isinstance(value, str):
            continue
        found[key] = value
    return found


def _readable_stamps(path: Path) -> dict[int, float]:
    stamps: dict[int, float] = {}
    try:
        raw = path.read_bytes()
    except OSError:
        return stamps
    for line in raw.split(b"\n")[:-1]:
        try:
            index, stamp = line.decode("ascii").split()
            stamps[int(index)] = float(stamp)
        except ValueError:
            continue
    return stamps


def _replace_keeping(path: Path, data: bytes) -> str:
    """Write ``data`` to ``path``, first copying what ``path`` held if that differs (a damaged
    file the user may still mend by hand: nothing saved is lost); "" or where the copy went."""
    try:
        keep = path.read_bytes() not in (b"", data)
    except FileNotFoundError:
        keep = False
    except OSError:
        keep = True  # unreadable: copied all the same, or the copy says why not
    kept = f"; the old one is kept as {keep_copy(path).name}" if keep else ""
    atomic_write(path, data)
    return kept


def keep_copy(path: Path) -> Path:
    """Copy ``path`` to the first free name of ``NAME.bak``, ``NAME.bak2``, ...; returns the copy."""
    copy, number = path.with_name(f"{path.name}.bak"), 1
    while copy.exists():
        number += 1
        copy = path.with_name(f"{path.name}.bak{number}")
    try:
        shutil.copy2(path, copy)
    except OSError as exc:
        raise UserError(
            f"cannot keep a copy of {path} as {copy.name} ({exc.strerror or exc}) before the index is "
            "rebuilt; free space, or copy the file away and run again"
        ) from None
    return copy


def take_lock(folder: Path) -> int | None:
    """The folder's writer lock (``LOCK``, an exclusive ``flock``), or None when another process
    holds it. Raises ``OSError`` when the lock file cannot be made (a read-only folder) or the
    platform has no ``fcntl``. The holder removes the file as it lets go (``release_lock``), so a
    lock taken on a file already removed is dropped and taken again on the path's new file: two
    processes never both hold it."""
    try:
        import fcntl
    except ImportError as exc:  # pragma: no cover - Windows
        raise OSError("no file locks on this platform") from exc
    path = folder / LOCK
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return None
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(path))
        except OSError:  # removed by the holder it waited on
            same = False
        if same:
            return fd
        os.close(fd)


def release_lock(folder: Path, fd: int) -> None:
    """Let go of ``take_lock``'s lock, removing its file first (a finished recording keeps no
    empty ``.recording.lock``)."""
    with contextlib.suppress(OSError):
        (folder / LOCK).unlink()
    os.close(fd)


@contextlib.contextmanager
def writer_lock(folder: Path) -> Iterator[bool]:
    """Hold the folder's writer lock while the block runs; yields False if another process holds it
    (or the platform has no ``fcntl``, where the age of leftovers decides instead)."""
    try:
        fd = take_lock(folder)
    except OSError:
        yield False
        return
    if fd is None:
        yield False
        return
    try:
        yield True
    finally:
        release_lock(folder, fd)


def acquire_writer(folder: Path) -> int | None:
    """Take the folder's writer lock for a recorder (``release_lock`` lets go of it); None where
    the platform has no ``fcntl``. Another live recorder is a ``UserError``."""
    try:
        import fcntl  # noqa: F401
    except ImportError:  # pragma: no cover - Windows
        return None
    try:
        fd = take_lock(folder)
    except OSError as exc:  # a read-only folder, or one of another user's
        raise UserError(
            f"cannot write into the recording folder {folder} ({exc.strerror or exc}); choose another"
        ) from None
    if fd is None:
        raise UserError(f"another recorder is writing into {folder}; choose another folder")
    return fd


def remove_leftovers(folder: Path) -> int:
    """Delete ``.NAME.XXXX.tmp`` files a killed recorder left; never those of a live one."""
    with writer_lock(folder) as locked:
        count = 0
        for sub in (folder, *(folder / s for s in SUBFOLDERS)):
            for tmp in sub.glob(".*.tmp"):
                if locked or _age_s(tmp) > STALE_TMP_S:
                    tmp.unlink(missing_ok=True)
                    count += 1
        return count


def _age_s(path: Path) -> float:
    try:
        return time.time() - path.stat().st_mtime
    except OSError:
        return 0.0


def overlaps(a: Path, b: Path) -> bool:
    """Whether one of two paths is, contains or lies inside the other."""
    ra, rb = a.resolve(), b.resolve()
    return ra == rb or ra in rb.parents or rb in ra.parents
