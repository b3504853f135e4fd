"""Packaging files, checked fast (no wheel or bundle is built here; `make smoke-wheel` and
`make package` do that): the PyInstaller spec, the desktop entry, icons, resources, version."""

from __future__ import annotations

import ast
import configparser
import importlib.metadata
import importlib.resources
import importlib.util
import re
import struct
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import app
from app.cli import main

ROOT = Path(__file__).resolve().parents[1]
PACKAGING = ROOT / "packaging"
ICONS = ROOT / "resources" / "icons"
SPEC = PACKAGING / "bi3d-studio.spec"


def spec_tree() -> ast.Module:
    return ast.parse(SPEC.read_text(), filename=str(SPEC))


def spec_rules() -> dict[str, Any]:
    """The spec's CUDA filter, run without PyInstaller: its imports of the standard library,
    the two patterns and is_cuda_library."""
    wanted = {"CUDA_LIBRARY", "LIBRARY_SUFFIX", "is_cuda_library"}
    nodes: list[ast.stmt] = []
    for node in spec_tree().body:
        if isinstance(node, ast.Import) and all(a.name in {"re", "os", "sys"} for a in node.names):
            nodes.append(node)
        elif isinstance(node, ast.ImportFrom) and node.module == "pathlib":
            nodes.append(node)
        elif isinstance(node, ast.Assign) and any(getattr(t, "id", None) in wanted for t in node.targets):
            nodes.append(node)
        elif isinstance(node, ast.FunctionDef) and node.name in wanted:
            nodes.append(node)
    namespace: dict[str, Any] = {}
    exec(compile(ast.Module(nodes, type_ignores=[]), str(SPEC), "exec"), namespace)
    return namespace


def test_spec_is_python_and_builds_both_launchers() -> None:
    text = SPEC.read_text()
    spec_tree()  # parses
    assert '"launcher.py"' in text
    assert 'NAME = "bi3d-studio"' in text and 'GUI_NAME = f"{NAME}-gui"' in text
    assert "console=False" in text and "console=True" in text
    assert "resource_datas()" in text


@pytest.mark.parametrize(
    ("dest", "cuda"),
    [
        ("torch/lib/libcudart.so.12", True),
        ("nvidia/cublas/lib/libcublas.so.12", True),
        ("torch/lib/libtorch_cuda.so", True),
        ("torch/lib/libc10_cuda.so", True),
        ("onnxruntime/capi/libonnxruntime_providers_cuda.so", True),
        ("torch/lib/cudnn64_9.dll", True),
        ("PySide6/Qt/lib/libicudata.so.73", False),  # Qt's ICU data: "cuda" inside a word
        ("torch/lib/libtorch_cpu.so", False),
        ("torch/lib/libgomp.so.1", False),
        ("torch/_dynamo/backends/tensorrt.py", False),  # Python source, not a library
    ],
)
def test_spec_leaves_out_cuda_libraries_only(dest: str, cuda: bool) -> None:
    assert spec_rules()["is_cuda_library"](dest) is cuda


def load_launcher() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bundle_launcher", PACKAGING / "launcher.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("executable", "expected"),
    [
        ("/opt/bi3d-studio/bi3d-studio", ["depth", "a.png", "b.png"]),
        ("/opt/bi3d-studio/bi3d-studio-gui", ["gui", "depth", "a.png", "b.png"]),
        ("C:\\Bi3D\\bi3d-studio-gui.exe", ["gui", "depth", "a.png", "b.png"]),
    ],
)
def test_gui_launcher_means_the_gui_command(executable: str, expected: list[str]) -> None:
    executable = executable.replace("\\", "/")  # a Windows path, read on any OS
    assert load_launcher().launcher_argv(executable, ["depth", "a.png", "b.png"]) == expected


def test_desktop_entry_has_the_required_keys() -> None:
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # keys are case-sensitive
    parser.read(PACKAGING / "bi3d-studio.desktop")
    entry = parser["Desktop Entry"]
    assert entry["Type"] == "Application"
    assert entry["Name"] == "Bi3D Studio"
    assert entry["Exec"].split()[:2] == ["bi3d-studio", "gui"]
    assert entry["Icon"] == "bi3d-studio"
    assert entry["Terminal"] == "false"
    categories = entry["Categories"]
    assert categories.endswith(";") and {"Graphics", "Science"} <= set(categories.split(";"))


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()[:24]
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_icon_set_exists() -> None:
    svg = ET.parse(ICONS / "bi3d-studio.svg").getroot()
    assert svg.tag.endswith("svg") and svg.get("viewBox") == "0 0 256 256"
    for size in (48, 128, 256):
        assert png_size(ICONS / f"bi3d-studio-{size}.png") == (size, size)


def installed() -> bool:
    try:
        importlib.metadata.distribution("bi3d-studio")
        importlib.resources.files("app.resources")
    except (importlib.metadata.PackageNotFoundError, ModuleNotFoundError):
        return False
    return True


@pytest.mark.skipif(not installed(), reason="bi3d-studio is not installed (pip install -e .)")
def test_resources_resolve_through_the_package() -> None:
    root = importlib.resources.files("app.resources")
    assert root.joinpath("demo", "motorcycle", "im0.png").is_file()
    assert root.joinpath("demo", "motorcycle", "im1.png").is_file()
    assert root.joinpath("icons", "bi3d-studio.svg").is_file()


def test_version_has_one_source(capsys: pytest.CaptureFixture[str]) -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "app.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+([.-]?\w+)?", app.__version__)
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"bi3d-studio {app.__version__}"
