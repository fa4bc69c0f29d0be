# Two commands do everything on a fresh machine:
#   make serve  - create the venv, install Sluice, start it on 127.0.0.1:6379
#   make test   - install what the tests need (incl. a reference redis-server) and run them
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PORT   ?= 6379
PYTEST_ARGS ?=
IOREDIS := tests/clients/ioredis
BULLMQ := tests/clients/bullmq
NODE_REDIS := tests/clients/node-redis

.PHONY: serve test install install-test redis-reference redis-tools lint bench bench-pipeline test-pipeline docker-test clean conformance

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[fast]'
	touch $@

install: $(VENV)/.installed

# What make lint needs and nothing more: the pinned linters and the types mypy reads
# (no pyspark, no reference Redis build).
$(VENV)/.installed-dev: $(VENV)/.installed pyproject.toml
	$(PY) -m pip install -q -e '.[fast,dev]'
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed pyproject.toml
	$(PY) -m pip install -q -e '.[fast,test,dev,spark]'
	touch $@

install-test: $(VENV)/.installed-test redis-tools redis-reference $(IOREDIS)/node_modules/.package-lock.json \
	$(BULLMQ)/node_modules/.package-lock.json $(NODE_REDIS)/node_modules/.package-lock.json

# ioredis for tests/integration/test_ioredis.py (npm writes node_modules/.package-lock.json).
# Without npm the tests skip, or fail under CI=true.
$(IOREDIS)/node_modules/.package-lock.json: $(IOREDIS)/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
	  (cd $(IOREDIS) && npm ci --no-audit --no-fund --loglevel=error) || \
	  echo "npm ci failed: the ioredis tests will retry it (skip, or fail under CI=true)"; \
	else echo "npm not found: the ioredis tests will be skipped (a failure under CI=true)"; fi

# BullMQ for tests/integration/test_bullmq.py: the same, for the queue that is all scripts.
$(BULLMQ)/node_modules/.package-lock.json: $(BULLMQ)/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
	  (cd $(BULLMQ) && npm ci --no-audit --no-fund --loglevel=error) || \
	  echo "npm ci failed: the BullMQ test will retry it (skip, or fail under CI=true)"; \
	else echo "npm not found: the BullMQ test will be skipped (a failure under CI=true)"; fi

# node-redis for tests/integration/test_node_redis.py (its client-side cache), the same way.
$(NODE_REDIS)/node_modules/.package-lock.json: $(NODE_REDIS)/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
	  (cd $(NODE_REDIS) && npm ci --no-audit --no-fund --loglevel=error) || \
	  echo "npm ci failed: the node-redis tests will retry it (skip, or fail under CI=true)"; \
	else echo "npm not found: the node-redis tests will be skipped (a failure under CI=true)"; fi

# The differential tests compare replies with the newest Redis Debian has (experimental's),
# built once from its source tarball into .cache/ (about 2 minutes on 2 cores).
redis-reference:
	@$(PYTHON) tests/build_reference_redis.py

# Debian's redis-cli, redis-benchmark and redis-check-aof, as users of Debian have them, and
# tclsh for Redis's own Tcl suite (tests/conformance).
# apt starts its redis-server as a service on 6379; we only want the tools, so it is stopped.
redis-tools:
	@if ! command -v redis-cli >/dev/null 2>&1 || ! command -v tclsh >/dev/null 2>&1; then \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq redis-server redis-tools tcl >/dev/null && \
	  ($$SUDO service redis-server stop >/dev/null 2>&1 || true); \
	fi

serve: install
	$(VENV)/bin/sluice-server --port $(PORT) --bind 127.0.0.1

test: install-test
	$(PY) -m pytest $(PYTEST_ARGS)
	@if [ "$$CI" = true ]; then $(MAKE) --no-print-directory docker-test; fi

# The Docker image, built and checked in real containers (tests/docker). No image registry
# is needed: the base image is built locally once when it cannot be pulled
# (docker/standin-base.sh). CI runs it after the suite (make test with CI=true).
docker-test: $(VENV)/.installed-test
	@docker/test-image.sh $(abspath $(PY))

lint: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check sluice tests benchmarks
	$(VENV)/bin/mypy --strict sluice
	$(VENV)/bin/lint-imports --no-logo --no-cache pyproject.toml .importlinter-runtime
	$(VENV)/bin/hadolint Dockerfile

$(VENV)/.installed-bench: $(VENV)/.installed-test pyproject.toml
	$(PY) -m pip install -q -e '.[fast,test,dev,spark,bench]'
	touch $@

# The numbers and pictures of docs/performance.md: both benchmarks against the reference
# redis-server in the same run, their JSON in benchmarks/results/, the PNGs in docs/img/.
bench: install-test $(VENV)/.installed-bench
	$(PY) benchmarks/redis_benchmark.py --stream --hash --json benchmarks/results/redis_benchmark.json
	$(PY) benchmarks/stream_latency.py --runs 3 --json benchmarks/results/stream_latency.json
	$(PY) benchmarks/poison_pel.py --json benchmarks/results/poison_pel.json
	$(PY) benchmarks/metrics_scrape.py --big 10:100000 --json benchmarks/results/metrics_scrape.json
	$(PY) benchmarks/plot.py

test-pipeline: install-test
	$(PY) -m pytest -m spark tests/pipeline

bench-pipeline: install-test
	$(PY) benchmarks/pipeline_bench.py --url redis://127.0.0.1:$(PORT)/0

# Redis's own Tcl suite against Sluice, unit by unit (tests/conformance; docs/DEVELOPING.md):
# prints the per-unit table, rewrites README's, checks the ledger (tests/conformance/passing.txt).
#   make conformance UNITS="stream list-3"   some units only
#   make conformance UPDATE=1 [FORCE=1]      add what passes (twice) to the ledger
#   make conformance REFERENCE=1             rerun redis-server, store the tests it passes
#   make conformance SPAWN=1                 the suite's server-spawning mode, through a shim
conformance: install-test
	$(PY) -m tests.conformance $(if $(UNITS),--units $(UNITS)) $(if $(UPDATE),--update) \
	  $(if $(FORCE),--force) $(if $(REFERENCE),--reference) $(if $(SPAWN),--spawn)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
