"""A scripted user journey through the real window under a real X server (run it in Xvfb):

    xvfb-run -s "-screen 0 1366x768x24" python benchmarks/gui_journey.py OUT_DIR

It opens the bundled demo, switches every mode, compares with SGBM, measures, opens the 3D
view, records the synthetic scene, plays the recording back (pause, step, seek, end), takes a
snapshot and closes, saving a screenshot of the screen after each step (``xwd`` via ImageMagick's
``import`` when present, else the window's own grab). It prints what it saw and how long
closing took, and exits non-zero when a step failed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "xcb")

from PySide6.QtWidgets import QApplication

from app.engine.allocator import tune_allocator
from app.ui.app import create_window


def main(out: Path) -> int:
    tune_allocator()  # as the app does (app.cli.main)
    out.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="bi3d-journey-"))
    os.environ.update(BI3D_STUDIO_CONFIG_DIR=str(home / "config"), BI3D_STUDIO_DOCUMENTS=str(home / "docs"))
    app = QApplication.instance() or QApplication(sys.argv[:1])
    window = create_window(settings_path=home / "settings.json")
    screen = app.primaryScreen().availableGeometry()
    window.resize(min(1500, screen.width()), min(950, screen.height()))
    window.show()
    problems: list[str] = []
    t_open = time.perf_counter()

    def wait(predicate, seconds: float = 60.0) -> bool:  # type: ignore[no-untyped-def]
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            app.processEvents()
            if predicate():
                return True
            time.sleep(0.02)
        return False

    def settle(seconds: float = 0.5) -> None:
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            app.processEvents()
            time.sleep(0.02)

    def shot(name: str) -> None:
        settle(0.4)
        print(f"[{time.perf_counter() - t_open:6.1f} s] {name}", flush=True)
        path = out / f"{name}.png"
        if shutil.which("import") and os.environ.get("DISPLAY"):
            subprocess.run(["import", "-window", "root", str(path)], check=False, capture_output=True)
        if not path.is_file():
            window.grab().save(str(path))
        print(f"  screenshot {path}")

    def results_after(action, count: int = 1, seconds: float = 120.0) -> bool:  # type: ignore[no-untyped-def]
        seen: list[object] = []
        window.controller.resultShown.connect(seen.append)
        action()
        ok = wait(lambda: len(seen) >= count, seconds)
        window.controller.resultShown.disconnect(seen.append)
        return ok

    images = wait(lambda: window.left_view._shape is not None, 10)
    print(f"images shown after {time.perf_counter() - t_open:.2f} s" if images else "images never shown")
    first = wait(lambda: window.controller.last is not None, 60)
    print(f"first depth after {time.perf_counter() - t_open:.2f} s" if first else "no depth in 60 s")
    if not first:
        problems.append("no first depth")
    settle(3.0)  # the full answer after the quick one
    shot("01-demo-continuous")
    c = window.controls
    for mode in ("binary", "quantized", "selective", "continuous"):
        if not results_after(lambda m=mode: c.mode.setCurrentText(m)):
            problems.append(f"mode {mode}: no result")
        settle(1.0)
        shot(f"02-mode-{mode}")
    if not results_after(lambda: c.compare.setChecked(True)):
        problems.append("compare: no result")
    window.extra.setCurrentWidget(window.compare_tab)
    shot("03-compare-errors")
    window.measure.tool.setCurrentText("region")
    shot("04-measure-region")
    window.extra.setCurrentWidget(window.cloud_view)
    shot("05-3d-view")
    c.compare.setChecked(False)
    window.snapshot()
    print(f"  notice: {window.notices.text.text()}")
    if "snapshot saved" not in window.notices.text.text():
        problems.append("snapshot gave no message")
    shot("06-snapshot-message")
    # record the synthetic scene, then play the recording back
    if not results_after(lambda: window.open_spec("synthetic:240x320?frames=600&fps=10"), 2):
        problems.append("synthetic: no results")
    window.record_action.setChecked(True)
    settle(6.0)  # six seconds of a 10 fps scene: about 60 frames, whatever the engine keeps up with
    shot("07-recording")
    print(f"  {window.rec_badge.text()}")
    window.record_action.setChecked(False)
    recordings = sorted((home / "docs" / "recordings").glob("*"))
    if not recordings:
        problems.append("no recording written")
    else:
        ended: list[bool] = []
        window.controller.sourceEnded.connect(lambda: ended.append(True))
        window.open_spec(str(recordings[-1]))
        wait(lambda: window.controller.last is not None, 30)
        window.pause_action.setChecked(True)
        results_after(window.step_action.trigger)
        shot("08-playback-paused")
        window.pause_action.setChecked(False)
        print(f"  ended: {wait(lambda: bool(ended), 180)}", flush=True)
        if not results_after(lambda: window.controller.seek(3), 1, 60):
            problems.append(f"seek gave no frame ({window.last_error})")
        print(f"  seek: {window.seek_label.text()}")
        if not results_after(lambda: c.engine_controls["engine"].setCurrentText("sgbm"), 1, 60):
            problems.append("no result after the engine switch")
        # the seek plays the recording on: a Bi3D frame already in flight may be the first shown
        if not wait(lambda: "sgbm" in window.depth_view.title.text, 30):
            problems.append("a finished recording did not answer the engine switch")
        shot("09-ended-recording-sgbm")
    t0 = time.perf_counter()
    window.close()
    closing = time.perf_counter() - t0
    print(f"closing took {closing:.2f} s")
    if closing > 1.0:
        problems.append(f"closing took {closing:.2f} s")
    for p in problems:
        print(f"PROBLEM: {p}")
    print("journey: " + ("ok" if not problems else f"{len(problems)} problems"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("out/journey")))
