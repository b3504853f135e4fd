# Two commands after cloning: `make run` (set up, start on the bundled demo) and `make test`.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
# PyTorch's CPU index: PyPI's Linux torch is the multi-GB CUDA build. Where that index cannot be
# reached, pip takes the same version from the machine's own wheels or index (this project's CI).
TORCH_CPU := torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu --retries 1
PYINSTALLER := pyinstaller>=6.10,<7
STAMP := $(VENV)/.installed

.PHONY: setup run demo-cli test lint typecheck unit smoke-wheel package smoke-bundle bench train-default clean

setup: $(STAMP)

# CPU torch first: a bare `torch` requirement on a machine without torch would pull
# the multi-GB CUDA build. GPU users: see README ("GPU").
$(STAMP): pyproject.toml setup.py
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "need $(PYTHON) (Python 3.11)"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/python -m pip install --quiet $(TORCH_CPU)
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# The desktop app on the bundled demo scene; `make demo-cli` is the command-line tour.
run: setup
	$(BIN)/bi3d-studio gui

demo-cli: setup
	$(BIN)/bi3d-studio depth resources/demo/motorcycle/im0.png resources/demo/motorcycle/im1.png \
		--calib resources/demo/motorcycle/calib.txt --max-disparity 96 --out out/demo
	$(BIN)/bi3d-studio eval resources/demo/motorcycle

lint: setup
	$(BIN)/ruff check app tests benchmarks packaging
	$(BIN)/lint-imports

typecheck: setup
	$(BIN)/mypy

unit: setup
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -q

test: lint typecheck unit smoke-wheel

# The wheel as a user gets it: sdist, wheel, fresh venv (CPU torch first), run from outside the repo.
smoke-wheel: setup
	PYTHON=$(PYTHON) BUILD_PYTHON=$(BIN)/python TORCH_CPU="$(TORCH_CPU)" bash packaging/smoke.sh wheel

# The one-folder desktop bundle dist/bi3d-studio/ (see packaging/README.md), then its smoke test.
package: setup
	$(BIN)/python -c "import PyInstaller" 2>/dev/null || $(BIN)/python -m pip install --quiet '$(PYINSTALLER)'
	rm -rf dist/bi3d-studio
	$(BIN)/pyinstaller --noconfirm --log-level WARN --distpath dist --workpath build/pyinstaller \
		packaging/bi3d-studio.spec
	@echo "bundle: $$(du -sh dist/bi3d-studio | cut -f1) in dist/bi3d-studio/"
	$(MAKE) --no-print-directory smoke-bundle

smoke-bundle:
	PYTHON=$(PYTHON) bash packaging/smoke.sh bundle dist/bi3d-studio

bench: setup
	$(BIN)/bi3d-studio bench --engines bi3d,sgbm --modes binary,quantized --planes 1,4,16 \
		--size 480x640 --width 1.0,0.5 --json benchmarks/bench_cpu.json

# Reruns the recipe of the bundled model; resumes from runs/default when interrupted.
train-default: setup
	$(BIN)/bi3d-studio train --out runs/default --kind light --steps 60000 --val-every 1000 --seed 0 --rooms-share 0
	$(BIN)/bi3d-studio train-pixel-pass --weights runs/default/best.pt --out runs/pixel_pass --steps 2000
	$(BIN)/python packaging/bundle_default_model.py runs/pixel_pass/last.pt

clean:
	rm -rf $(VENV) out build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache
