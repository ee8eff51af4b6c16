# dualtrack — `make demo` and `make test` are the two commands a fresh machine needs.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
TS     := clients/typescript
NODE_STAMP := $(TS)/node_modules/.package-lock.json
STUB   := sdk/remote.pyi

.PHONY: install demo test lint typecheck generate unit docs bench bench-weaviate clean

$(STAMP): pyproject.toml clients/python/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ./clients/python -e '.[dev]'
	touch $(STAMP)

# the TypeScript client's locked dependencies (tests/test_typescript_client.py runs tsc and node --test)
$(NODE_STAMP): $(TS)/package-lock.json $(TS)/package.json
	cd $(TS) && npm ci --no-audit --no-fund --loglevel=error

# the sync remote client's types: sdk/remote_async.py rewritten without async, as sdk.remote
# does on import (gitignored; the thin wheel's build hook writes its own)
$(STUB): sdk/remote_async.py sdk/_unasync.py | $(STAMP)
	$(BIN)/python -m sdk._unasync

install: $(STAMP) $(NODE_STAMP) $(STUB)

demo: $(STAMP)
	$(BIN)/dualtrack demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP) $(STUB)
	$(BIN)/mypy

# the async remote client's operation methods (from sdk/api.py), then the sync client's stub
# (from the async client); tests/test_operations.py fails when either is not current
generate: $(STAMP)
	$(BIN)/python scripts/remote_clients.py

unit: $(STAMP) $(NODE_STAMP) $(STUB)
	$(BIN)/python -m pytest

# the suite also builds the docs site with --strict (tests/test_docs.py), into a temp dir
test: lint typecheck unit

# the docs site on http://127.0.0.1:8000 while you write (docs/, mkdocs.yml)
docs: $(STAMP)
	$(BIN)/mkdocs serve

bench: $(STAMP)
	$(BIN)/python -m benchmarks $(ARGS)

# Weaviate beside pgvector: starts a server on port 8094, runs, stops it.
bench-weaviate: $(STAMP)
	WEAVIATE_PORT=8094 WEAVIATE_GRPC_PORT=50064 bash scripts/weaviate.sh start
	$(BIN)/python -m benchmarks.unstructured --index pgvector,weaviate \
	  --index-config 'weaviate={"port": 8094, "grpc_port": 50064}' $(ARGS) ; \
	status=$$?; \
	$(BIN)/python -m benchmarks.weaviate_keyword --weaviate 127.0.0.1:8094:50064 $(ARGS) ; \
	status=$$((status || $$?)); \
	$(BIN)/python -m benchmarks.search_floor --index weaviate \
	  --weaviate 127.0.0.1:8094:50064 $(ARGS) ; \
	status=$$((status || $$?)); \
	WEAVIATE_PORT=8094 WEAVIATE_GRPC_PORT=50064 bash scripts/weaviate.sh stop; exit $$status

clean:
	rm -rf $(VENV) .dualtrack .mypy_cache .ruff_cache .pytest_cache
