# Two commands on a fresh machine: `make run` (set up + the main job) and `make test`.
# The TensorFlow build is chosen by the machine: NVIDIA driver present -> CUDA build,
# otherwise the CPU build. Override with `make run BACKEND=cuda` (or cpu).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
BACKEND ?= $(shell command -v nvidia-smi >/dev/null 2>&1 && echo cuda || echo cpu)
# What running needs (gpuscout + TensorFlow), and that plus the test tools.
RUN_STAMP := $(VENV)/.installed-$(BACKEND)
TEST_STAMP := $(VENV)/.installed-$(BACKEND)-test

.PHONY: run setup test test-other-cpu lint bench-harness bench-backends bench-startup bench-predict bench-scale bench-numeric bench-store bench-report clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(RUN_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e ".[$(BACKEND)]"
	rm -f $(VENV)/.installed-*
	touch $@

$(TEST_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e ".[$(BACKEND),test]"
	rm -f $(VENV)/.installed-*
	touch $@ $(RUN_STAMP)

# gpuscout's own bytecode, written once: where PYTHONDONTWRITEBYTECODE is set (as on the
# machines this project is built on), every process otherwise compiles the package from source
# again, about 0.3 CPU-s for what a measuring child imports. Only changed files are recompiled.
COMPILE := $(BIN)/python -m compileall -q src

# Everything `make test` needs, installed; nothing run (CI sets up while Debian packages install).
setup: $(TEST_STAMP)
	$(COMPILE)

# The main job: measure here, predict the catalog, price, advise, write report.html.
# It ends by saying how to reach the `gpuscout` it installed: the venv is not on PATH.
run: $(RUN_STAMP)
	$(COMPILE)
	$(BIN)/gpuscout scout --html report.html
	@echo "gpuscout is installed in $(VENV): run '. $(BIN)/activate' (or '$(BIN)/gpuscout ...') for the commands in README.md"

lint: $(TEST_STAMP)
	$(BIN)/ruff check src tests benchmarks scripts
	$(BIN)/ruff format --check src tests benchmarks scripts
	$(BIN)/mypy

# Three test processes on 2 cores: many tests wait (on a child process, a timeout, a
# collective), and a third process fills that time: 595 s against 641 s with two on an idle
# fresh clone, the same CPU time (leftover-process checks look only at their own test's
# processes). ruff first (seconds); mypy (one core, about 25 s) runs beside the suite rather
# than before it; `make test` fails if either fails, and mypy's report is printed after the
# tests'.
TEST_WORKERS ?= 3
test: $(TEST_STAMP)
	$(COMPILE)
	$(BIN)/ruff check src tests benchmarks scripts
	$(BIN)/ruff format --check src tests benchmarks scripts
	@$(BIN)/mypy > $(VENV)/mypy.log 2>&1 & typing=$$!; \
	$(BIN)/pytest -n $(TEST_WORKERS); tests=$$?; \
	wait $$typing; typed=$$?; echo "mypy:"; cat $(VENV)/mypy.log; \
	exit $$(( tests || typed ))

# The suite as a CPU unlike this one runs it (a fresh clone must pass on Intel and AMD alike):
# TensorFlow's oneDNN kernels on (its default only on CPUs with AVX512-VNNI, AVX-VNNI,
# AVX512-BF16 or AMX: a ReLU that turns NaN into 0, other graph rewrites), XLA's CPU code
# limited to SSE4.2 (where a test sets XLA_FLAGS itself, its own flags win) and OpenBLAS'
# Prescott kernels (other vector code, so other rounding in training and in the fits).
test-other-cpu: $(TEST_STAMP)
	TF_ENABLE_ONEDNN_OPTS=1 XLA_FLAGS=--xla_cpu_max_isa=SSE4_2 OPENBLAS_CORETYPE=Prescott \
	  $(MAKE) test

bench-harness: $(RUN_STAMP)
	$(BIN)/python benchmarks/harness_vs_fit.py

# The same workloads on TensorFlow and on JAX, side by side (needs the jax extra: make setup).
bench-backends: $(TEST_STAMP)
	$(BIN)/python benchmarks/backends.py

bench-startup: $(RUN_STAMP)
	$(BIN)/python benchmarks/startup.py

bench-predict: $(RUN_STAMP)
	$(BIN)/python benchmarks/prediction_accuracy.py

bench-scale: $(RUN_STAMP)
	$(BIN)/python benchmarks/scale_out.py

# A team-sized store: 10,000 runs imported, listed and reported.
bench-store: $(RUN_STAMP)
	$(BIN)/python benchmarks/store_scale.py

bench-report: $(RUN_STAMP)
	$(BIN)/python benchmarks/report_scale.py

# The report under two numeric environments (OpenBLAS kernels, thread counts): identical.
bench-numeric: $(TEST_STAMP)
	$(BIN)/python benchmarks/numeric_environments.py

clean:
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
