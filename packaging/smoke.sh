#!/usr/bin/env bash
# Smoke tests of the two ways Bi3D Studio ships. Each runs the installed app from a temporary
# folder outside the repository, so nothing is imported or read from the source checkout:
#
#   packaging/smoke.sh wheel [WHEEL]   build the sdist and the wheel from it (unless WHEEL is
#                                      given), install it into a fresh venv (CPU torch first),
#                                      then --version, depth on the bundled demo, gui screenshot
#   packaging/smoke.sh bundle DIR      the same three runs against a PyInstaller bundle (dist/bi3d-studio)
#
# The depth run must use Bi3D with the bundled default model when the package ships
# models/bi3d_default.pt, and SGBM otherwise. KEEP=1 keeps the temporary folder.
# Environment: PYTHON (base interpreter for the venv, default python3.11), BUILD_PYTHON
# (runs `python -m build`, default the repo's .venv), TORCH_CPU (pip arguments for CPU torch;
# default torch==2.13.0, which this project's machines hold as the CPU build; elsewhere
# "torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu").
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3.11}"
BUILD_PYTHON="${BUILD_PYTHON:-$REPO/.venv/bin/python}"
TORCH_CPU="${TORCH_CPU:-torch==2.13.0}"
GUI_TIMEOUT_S="${GUI_TIMEOUT_S:-240}"
VERSION="$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' "$REPO/app/__init__.py")"

# The venv (1.5 GB, 30 000 files) goes to memory when there is room: on some disks deleting
# it takes longer than the whole test. SMOKE_TMP overrides.
pick_tmp() {
    local shm=/dev/shm probe
    if [[ -d "$shm" && -w "$shm" ]] && (($(df -Pk "$shm" | awk 'NR == 2 {print $4}') > 4 * 1024 * 1024)); then
        probe="$(mktemp "$shm/bi3d-exec.XXXXXX")"
        printf '#!/bin/sh\n' >"$probe" && chmod +x "$probe"
        if "$probe" 2>/dev/null; then rm -f "$probe"; echo "$shm"; return; fi
        rm -f "$probe"  # mounted noexec: a venv there could not run
    fi
    echo "${TMPDIR:-/tmp}"
}
WORK="$(mktemp -d "${SMOKE_TMP:-$(pick_tmp)}/bi3d-smoke.XXXXXX")"
if [[ "${KEEP:-0}" == 1 ]]; then
    echo "smoke: keeping $WORK"
else
    trap 'rm -rf "$WORK"' EXIT
fi
START=$SECONDS

# coreutils' timeout (gtimeout from Homebrew on macOS); without either the gui run has no backstop
TIMEOUT=()
for t in timeout gtimeout; do
    if command -v "$t" >/dev/null; then TIMEOUT=("$t" -k 10 "$GUI_TIMEOUT_S"); break; fi
done

say() { printf 'smoke [%3ds]: %s\n' "$((SECONDS - START))" "$*"; }
fail() { printf 'smoke: FAILED: %s\n' "$*" >&2; exit 1; }

# The app's own runs get a throwaway home: no saved settings of the user's are read or written.
app_env() {
    env -u PYTHONPATH -u PYTHONHOME HOME="$WORK/home" XDG_CONFIG_HOME="$WORK/home/.config" \
        XDG_CACHE_HOME="$WORK/home/.cache" QT_QPA_PLATFORM=offscreen "$@"
}

# png_check FILE: a real screenshot of the window, not an empty or blank one.
png_check() {
    "$PYTHON" - "$1" <<'EOF'
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
if data[:8] != b"\x89PNG\r\n\x1a\n":
    sys.exit(f"{sys.argv[1]}: not a PNG")
width, height = struct.unpack(">II", data[16:24])
idat, pos = b"", 8
while pos < len(data):
    (length,) = struct.unpack(">I", data[pos:pos + 4])
    if data[pos + 4:pos + 8] == b"IDAT":
        idat += data[pos + 8:pos + 8 + length]
    pos += 12 + length
raw = zlib.decompress(idat)
# a blank window deflates to almost nothing; one showing images and disparity does not
ratio = len(idat) / len(raw)
print(f"screenshot {width}x{height}, {len(data) // 1024} KiB, compressed to {ratio:.1%} of raw")
if width < 640 or height < 400 or ratio < 0.02:
    sys.exit("screenshot too small or nearly uniform")
EOF
}

# exercise CLI DEMO EXPECTED_ENGINE GUI...: the three runs both kinds of install must pass.
exercise() {
    local cli="$1" demo="$2" expected="$3" gui=("${@:4}") out rc
    mkdir -p "$WORK/run" "$WORK/home"
    cd "$WORK/run"

    out="$(app_env "$cli" --version)"
    [[ "$out" == "bi3d-studio $VERSION" ]] || fail "--version said '$out', expected 'bi3d-studio $VERSION'"
    say "--version: $out"

    [[ -f "$demo/im0.png" && -f "$demo/im1.png" ]] || fail "no demo pair in $demo"
    out="$(app_env "$cli" depth "$demo/im0.png" "$demo/im1.png" --calib "$demo/calib.txt" \
        --max-disparity 96 --out "$WORK/run/depth")" || fail "depth exited with $?: $out"
    printf '%s\n' "$out" | sed 's/^/    /'
    grep -q "^engine: $expected (" <<<"$out" || fail "depth should have used $expected"
    for f in disparity.pfm disparity.png disparity_color.png result.json; do
        [[ -s "$WORK/run/depth/$f" ]] || fail "depth did not write $f"
    done
    if [[ "$expected" == bi3d ]]; then
        say "depth on the bundled demo: Bi3D with the bundled default model, outputs written"
    else
        say "depth on the bundled demo: SGBM (this build ships no default model), outputs written"
    fi

    local shot="$WORK/run/shot.png"
    # without --quit-after the window closes itself right after the screenshot; timeout is the backstop
    rc=0
    app_env ${TIMEOUT[@]+"${TIMEOUT[@]}"} "${gui[@]}" --screenshot "$shot" >"$WORK/gui.log" 2>&1 || rc=$?
    if ((rc != 0)); then
        cat "$WORK/gui.log" >&2
        fail "gui exited with $rc (124: no depth shown within ${GUI_TIMEOUT_S}s)"
    fi
    [[ -s "$shot" ]] || { cat "$WORK/gui.log" >&2; fail "gui wrote no screenshot"; }
    png_check "$shot" || fail "bad screenshot"
    say "gui screenshot offscreen: ok"
}

expected_engine() {  # bi3d when the package ships the default model, else sgbm
    if [[ "$1" == yes ]]; then echo bi3d; else echo sgbm; fi
}

smoke_wheel() {
    local wheel="${1:-}"
    if [[ -z "$wheel" ]]; then
        say "building sdist and wheel (python -m build) into $WORK/dist"
        # the wheel is built from the unpacked sdist: proves the sdist is complete, and no
        # stale build/lib in the checkout can slip into the wheel
        "$BUILD_PYTHON" -m build --outdir "$WORK/dist" "$REPO" >"$WORK/build.log" 2>&1 ||
            { tail -40 "$WORK/build.log" >&2; fail "python -m build"; }
        wheel="$(ls "$WORK"/dist/bi3d_studio-"$VERSION"-py3-none-any.whl)"
        local sdist listing
        sdist="$(ls "$WORK"/dist/bi3d_studio-"$VERSION".tar.gz)"
        listing="$(tar -tzf "$sdist")"
        grep -q "/resources/demo/motorcycle/im0.png$" <<<"$listing" || fail "sdist lacks the demo"
        grep -q "/resources/icons/bi3d-studio.svg$" <<<"$listing" || fail "sdist lacks the icon"
        say "sdist $(du -h "$sdist" | cut -f1), wheel $(du -h "$wheel" | cut -f1)"
    fi
    [[ -f "$wheel" ]] || fail "no wheel at $wheel"

    local has_model
    has_model="$("$PYTHON" - "$wheel" "$REPO" <<'EOF'
import sys, zipfile
from pathlib import Path
names = set(zipfile.ZipFile(sys.argv[1]).namelist())
need = ["app/resources/__init__.py", "app/resources/demo/motorcycle/im0.png",
        "app/resources/demo/motorcycle/im1.png", "app/resources/demo/motorcycle/calib.txt",
        "app/resources/icons/bi3d-studio.svg", "app/resources/icons/bi3d-studio-256.png"]
missing = [n for n in need if n not in names]
model = "app/resources/models/bi3d_default.pt"
if (Path(sys.argv[2]) / "resources/models/bi3d_default.pt").is_file() and model not in names:
    missing.append(model)
sidecar = "app/resources/models/bi3d_default.int8.json"  # the model's int8 ranges (--precision int8)
if (Path(sys.argv[2]) / "resources/models/bi3d_default.int8.json").is_file() and sidecar not in names:
    missing.append(sidecar)
strays = [n for n in names if "__pycache__" in n or n.startswith(("tests/", "packaging/"))]
if missing or strays:
    sys.exit(f"wheel lacks {missing}, holds strays {strays}")
print("yes" if model in names else "no")
EOF
)" || fail "wheel contents"
    say "wheel carries resources/ (default model: $has_model)"

    local venv="$WORK/venv"
    "$PYTHON" -m venv "$venv"
    # CPU torch first: a bare torch requirement would pull the multi-GB CUDA build
    # shellcheck disable=SC2086 # TORCH_CPU may carry pip options, e.g. an --index-url
    "$venv/bin/python" -m pip install --quiet $TORCH_CPU >"$WORK/pip.log" 2>&1 ||
        { tail -20 "$WORK/pip.log" >&2; fail "pip install $TORCH_CPU"; }
    "$venv/bin/python" -m pip install --quiet "$wheel" >>"$WORK/pip.log" 2>&1 ||
        { tail -20 "$WORK/pip.log" >&2; fail "pip install the wheel"; }
    say "installed $TORCH_CPU, then $(basename "$wheel") into a fresh venv"

    local demo
    demo="$(cd "$WORK" && app_env "$venv/bin/python" - <<'EOF'
import importlib.metadata, sysconfig
from pathlib import Path
import app
from app.engine.assets import demo_scene
site = Path(sysconfig.get_paths()["purelib"]).resolve()
for what, path in (("app", Path(app.__file__)), ("demo", demo_scene())):
    if not path.resolve().is_relative_to(site):
        raise SystemExit(f"{what} resolved to {path}, outside the venv's {site}")
if importlib.metadata.version("bi3d-studio") != app.__version__:
    raise SystemExit("installed metadata and app.__version__ disagree")
print(demo_scene())
EOF
)" || fail "the installed package does not find its resources"
    say "demo resolved inside the venv: $demo"

    exercise "$venv/bin/bi3d-studio" "$demo" "$(expected_engine "$has_model")" "$venv/bin/bi3d-studio" gui
}

smoke_bundle() {
    local bundle="${1:?usage: smoke.sh bundle DIR (e.g. dist/bi3d-studio)}"
    bundle="$(cd "$bundle" && pwd)"
    local cli="$bundle/bi3d-studio" gui="$bundle/bi3d-studio-gui"
    [[ -x "$cli" && -x "$gui" ]] || fail "$bundle has no bi3d-studio and bi3d-studio-gui launchers"
    local resources="$bundle/_internal/app/resources"
    [[ -f "$resources/icons/bi3d-studio.svg" ]] || fail "bundle lacks the icons"
    if [[ "${BI3D_BUNDLE_GPU:-0}" != 1 ]]; then
        "$PYTHON" - "$bundle" <<'EOF' || fail "a CPU bundle must not hold CUDA libraries"
import re, sys
from pathlib import Path
# the spec's CUDA_LIBRARY rule, anchored: Qt's libicudata must not count
cuda = re.compile(r"^(lib)?(cuda|cublas|cudnn|cufft|cufile|curand|cusolver|cusparse|cupti|nccl|nvrtc"
                  r"|nvjitlink|nvtoolsext|nvinfer|nvonnxparser|nvshmem|caffe2_nvrtc)"
                  r"|_cuda|providers_tensorrt", re.I)
library = re.compile(r"\.(so(\.[0-9.]+)?|dll|dylib)$", re.I)
found = [str(p) for p in Path(sys.argv[1]).rglob("*")
         if p.name == "nvidia" or (library.search(p.name) and cuda.search(p.name))]
if found:
    sys.exit("found " + ", ".join(found[:5]))
EOF
    fi
    local has_model=no
    [[ -f "$resources/models/bi3d_default.pt" ]] && has_model=yes
    say "bundle $(du -sh "$bundle" | cut -f1) at $bundle (default model: $has_model, no CUDA libraries)"
    exercise "$cli" "$resources/demo/motorcycle" "$(expected_engine "$has_model")" "$gui"
}

case "${1:-}" in
    wheel) smoke_wheel "${2:-}" ;;
    bundle) smoke_bundle "${2:-}" ;;
    *) echo "usage: $0 wheel [WHEEL] | bundle DIR" >&2; exit 2 ;;
esac
say "passed ($1)"
