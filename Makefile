# The two commands: `make validate` (the main job) and `make test`.
# Both create .venv with the system python3 when it is missing and install the
# package from setup.cfg (editable) with every extra the project uses.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
# the example plug-in (examples/plugin), installed from its own setup.cfg into a directory
# of the venv that only its tests put on sys.path: fedsim's own tests see no plug-in
PLUGIN      := $(VENV)/example-plugin
PLUGIN_SRC  := $(wildcard examples/plugin/setup.cfg examples/plugin/pyproject.toml examples/plugin/fedsim_sgd_example/*.py)

.PHONY: test plugin-test validate lint bench slow explore clean

# Python keeps its bytecode caches even where the environment says not to (some container
# images set PYTHONDONTWRITEBYTECODE=1): without them every pytest worker rewrites the
# asserts of all ~500 test modules again (16 s of collection instead of 8) and every
# subprocess a test starts compiles fedsim's modules from source. An empty value is unset.
export PYTHONDONTWRITEBYTECODE :=

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# The install resolves with uv (a Rust resolver and installer from PyPI) when it can: it installs
# the same versions as pip in 6 s against pip's 46 s on this 2-core VM, time that a cold
# `make test` (a 7-minute budget) can spend on the tests. Where uv cannot be had, pip does the
# same install.
EXTRAS := '.[test,dask,data]'

$(STAMP): setup.cfg pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	@# the distribution was called `fedsim` before 0.2.0: drop that editable install from an old .venv
	$(BIN)/python -m pip uninstall --quiet --yes fedsim 2>/dev/null || true
	( $(BIN)/python -m pip install --quiet uv \
	  && $(BIN)/python -m uv pip install --quiet --python $(BIN)/python -e $(EXTRAS) ) \
	  || $(BIN)/python -m pip install --quiet -e $(EXTRAS)
	touch $(STAMP)

# the tests run in parallel over the machine's cores (pytest-xdist; at most 4 workers; a module
# marked xdist_group runs on one worker, so its module fixture runs once; each worker
# compiles the kernels it needs once into the shared numba cache)
XDIST := -n auto --maxprocesses=4 --dist loadgroup

test: $(STAMP) plugin-test
	$(BIN)/python -m pytest --hypothesis-profile=ci $(XDIST)

$(PLUGIN)/.stamp: $(STAMP) $(PLUGIN_SRC)
	rm -rf $(PLUGIN)
	$(BIN)/python -m pip install --quiet --no-deps --target $(PLUGIN) ./examples/plugin
	touch $@

# the plug-in's own tests, with the installed plug-in on sys.path (entry points and all), under
# the fedsim hypothesis profile a plug-in author uses (it writes nothing to .hypothesis/)
plugin-test: $(PLUGIN)/.stamp
	PYTHONPATH=$(PLUGIN) $(BIN)/python -m pytest --hypothesis-profile=fedsim examples/plugin/tests

slow: $(STAMP)
	$(BIN)/python -m pytest -m slow --hypothesis-profile=ci $(XDIST)

explore: $(STAMP)
	$(BIN)/python -m pytest --hypothesis-profile=explore

lint: $(STAMP)
	$(BIN)/ruff check fedsim theory validation tests benchmarks examples/plugin

validate: $(STAMP)
	$(BIN)/fedsim validate --suite quick --out runs/quick --report reports/validation-quick.pdf

bench: $(STAMP)
	$(BIN)/python benchmarks/engine.py --quick
	$(BIN)/python benchmarks/oracle.py

clean:
	rm -rf $(VENV) runs .pytest_cache
