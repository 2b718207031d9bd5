# `make test` and `make dev` each work from nothing on a fresh Debian machine:
# they make the venv, install the requirements, and find or start a database.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cat requirements.txt requirements-dev-loop.txt requirements-dev.txt | cksum | cut -d' ' -f1)
# `make dev` and `make token` need only the runtime requirements and chalice: a stamp of their own. No bytecode
# at install (a third of its time): Python compiles what the dev loop imports, once, when it first imports it.
LOOP   := $(VENV)/.dev-loop-$(shell cat requirements.txt requirements-dev-loop.txt | cksum | cut -d' ' -f1)

# Bytecode is cached under .local/ (git-ignored), never beside the source: a package builds its own
# (infra/bytecode.py). Without a cache, as under PYTHONDONTWRITEBYTECODE, every process compiles what it imports
# and every pytest worker rewrites every test module again (about 8 s of CPU each).
unexport PYTHONDONTWRITEBYTECODE
export PYTHONPYCACHEPREFIX := $(CURDIR)/.local/pycache

.PHONY: test check screens dev token bench lint clean db-url package preflight deploy migrate rotate unlock mark-applied purge teardown costs mutate lock

# The console's tools (package.json): tsc checks its JavaScript in `make lint`, axe-core audits its pages in the
# browser tests. `npm ci` into node_modules/ (git-ignored), again only when the lock file changes.
NODE_STAMP := node_modules/.installed-$(shell cksum < package-lock.json | cut -d' ' -f1)

$(NODE_STAMP): package.json package-lock.json
	@command -v npm >/dev/null || { echo "npm is missing; installing nodejs and npm (needs root)" >&2; \
	  { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q nodejs npm; } >&2; }
	@npm ci --no-audit --no-fund --loglevel=error >&2
	@touch $@

# Progress goes to stderr, so `export TOKEN=$$(make -s token)` captures the token alone.
$(BIN)/python:
	@$(PYTHON) -m venv $(VENV) 2>/dev/null || { \
	  echo "python3-venv is missing; installing it (needs root)" >&2; \
	  { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-venv python3-pip; } >&2 && \
	  $(PYTHON) -m venv $(VENV); }

$(STAMP): requirements.txt requirements-dev-loop.txt requirements-dev.txt | $(BIN)/python
	@echo "installing the test toolchain into $(VENV) (requirements-dev.txt)" >&2
	@$(BIN)/pip install -q --disable-pip-version-check --upgrade "pip<26.3" >&2  # chalice 1.34 takes pip < 26.3
	@$(BIN)/pip install -q --disable-pip-version-check -r requirements-dev.txt >&2
	@rm -f $(VENV)/.installed-* $(VENV)/.dev-loop-* && touch $@ $(LOOP)

$(LOOP): requirements.txt requirements-dev-loop.txt | $(BIN)/python
	@echo "installing the engine's requirements and chalice into $(VENV) (requirements-dev-loop.txt)" >&2
	@$(BIN)/pip install -qq --no-compile --disable-pip-version-check -r requirements-dev-loop.txt >&2
	@rm -f $(VENV)/.dev-loop-* && touch $@

# The console's browser tests drive Debian's Chromium through its own driver (nothing is downloaded).
BROWSER := /usr/bin/chromium /usr/bin/chromedriver

$(BROWSER):
	@echo "chromium or chromium-driver is missing; installing them (needs root)"
	apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver

# The template scanner (checkov, tests/test_infra_scan.py) lives in a venv of its own: it pins boto3, botocore,
# networkx and packaging older than moto, chalice and cfn-lint need (infra/scan.py).
SCAN_STAMP := .venv-scan/.installed-$(shell cat requirements-scan.txt | cksum | cut -d' ' -f1)

$(SCAN_STAMP): requirements-scan.txt
	$(PYTHON) -m venv .venv-scan
	.venv-scan/bin/pip install -q -r requirements-scan.txt
	@rm -f .venv-scan/.installed-* && touch $@

scan-env: $(SCAN_STAMP)

# requirements.lock: every package the Lambda zip ships (requirements.txt and all it pulls in) at the version the
# tests run with (this venv's), each with the hashes of its files; `make package` installs exactly that
# (infra/package.py). pip-compile lives in a venv of its own: its pip need not be the project's.
LOCK_TOOLS := .venv-lock/.installed-pip-tools-7.6.2

$(LOCK_TOOLS):
	$(PYTHON) -m venv .venv-lock
	.venv-lock/bin/pip install -q pip-tools==7.6.2
	@rm -f .venv-lock/.installed-* && touch $@

lock: $(STAMP) $(LOCK_TOOLS)
	$(BIN)/pip freeze > .venv-lock/tested.txt
	CUSTOM_COMPILE_COMMAND="make lock" .venv-lock/bin/pip-compile -q --generate-hashes --allow-unsafe --strip-extras \
	  --no-emit-index-url --no-emit-find-links --annotation-style line --constraint .venv-lock/tested.txt \
	  --output-file requirements.lock requirements.txt

# Lint and types first: a finding fails the build before any test runs.
lint: $(STAMP) $(NODE_STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy
	node_modules/.bin/tsc -p .

# The tiers (pytest.ini's markers, docs/testing.md). Each xdist worker has a database of its own. The fast
# tier keeps two cores busy on three workers (each waits on the database part of the time: 114 s against 138 s
# on two, measured the same hour); `make test`'s first pass mostly waits (on Chromium, peers and
# deadlines), so a third worker takes half the browser's tests with a Chromium of its own (tests/conftest.py).
WORKERS ?= 3
TEST_WORKERS ?= 3
FAST    := not browser and not torture and not packaging and not slow and not realtime

# Everything, as CI runs it: the tests that can share the machine on $(TEST_WORKERS) workers (the browser's
# tests on all but one, `chalice package` once), then the torture suite and the other long tests as two plain
# pytest runs side by side (tests/support/side_by_side.py says why not xdist). With PYTEST_ARGS, one
# plain pytest run with those arguments instead.
test: lint | $(BROWSER) $(SCAN_STAMP)
ifeq ($(strip $(PYTEST_ARGS)),)
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup -m "not torture and not slow"
	$(BIN)/python -m tests.support.side_by_side
else
	$(BIN)/python -m pytest $(PYTEST_ARGS)
endif

# The inner loop: lint, types and every test that needs no browser, no torture, no packaging, no process of
# its own and no wall clock (under two minutes on two cores). One module: make check PYTEST_ARGS=tests/test_x.py
check: lint
	$(BIN)/python -m pytest -q -n $(WORKERS) -m "$(FAST)" $(PYTEST_ARGS)

# The screenshots docs/console.md shows, retaken: the browser tests that take them, told to copy each into
# docs/screens/ (a plain test run leaves them in .local/screenshots/docs/). Commit them when the look changed.
DOC_SCREEN_TESTS = $(shell grep -l doc_screenshot tests/console/test_*.py)
screens: $(STAMP) $(NODE_STAMP) | $(BROWSER)
	EVENTS_UPDATE_DOC_SCREENS=1 $(BIN)/python -m pytest -q $(DOC_SCREEN_TESTS)
	@git status --short docs/screens

# Every guard mutation on a scratch copy, one at a time (slow: not part of `make test`).
mutate: $(STAMP)
	$(BIN)/python -m tests.mutation $(MUTATE_ARGS)

# The dev database lives on the same server the tests find (or start). DEMO=failures: a demo bridge that fails;
# DEMO=none: no demo bridge, your own at GAME_BRIDGE_URL (docs/game-bridge.md). CHAT=discord: the cues go to a
# loopback fake Discord whose page (its URL printed) presses their buttons (docs/chat.md).
dev: $(LOOP)
	@EVENTS_DB_URL=$${EVENTS_DB_URL:-$$($(BIN)/python -m devtools.kit.mariadb url)events_dev} \
	  $(BIN)/python -m devtools dev $(if $(DEMO),--demo $(DEMO)) $(if $(CHAT),--chat $(CHAT))

# A development token on the dev stage's settings: `export TOKEN=$$(make -s token ROLE=moderator)`.
ROLE ?= admin
token: $(LOOP)
	@$(BIN)/python -m devtools token --role $(ROLE) $(if $(SUB),--sub $(SUB)) $(if $(TTL),--ttl $(TTL))

bench: $(STAMP) | $(BROWSER)  # P12 draws a run page in Chromium
	$(BIN)/pip install -q -r bench/requirements.txt
	$(BIN)/python -m bench $(BENCH_ARGS)

# ── deployment (docs/operations.md "Deploying to AWS", docs/deploy.md) ──
STAGE       ?= prod
STACK       ?= event-run-engine-$(STAGE)
CORS_ORIGIN ?= *
OUT         ?= out

# The API's preflight answers are baked at package time: same origin as the CorsOrigin parameter. The package is
# built by the functions' runtime, python3.13, in .venv-package (infra/package.py makes it from requirements.lock
# the first time); RUNTIME_PYTHON=<a python3.13> when none is on PATH or in pyenv.
package: $(STAMP)
	$(BIN)/python -m infra.package --stage $(STAGE) --cors-origin '$(CORS_ORIGIN)' $(if $(RUNTIME_PYTHON),--python '$(RUNTIME_PYTHON)') $(OUT)

# The whole sequence with the AWS CLI (infra/deploy.py): bucket, data stack, package, app stack (which
# migrates before the new code takes traffic), then what is left by hand. Inputs: infra/$(STAGE).params.
REGION ?= $(AWS_REGION)
# The AWS CLI requirements-dev.txt installs (the one tests/test_infra_deploy.py drives against moto); AWS_CLI=aws for yours.
AWS_CLI ?= $(BIN)/aws
# The parameters file checked before anything is made (infra/preflight.py): offline, then with read-only calls (the
# deployed data stack's set-once parameters, the team's secrets, Lambda's concurrency quota). make deploy runs it first.
preflight: $(STAMP)
	$(BIN)/python -m infra.preflight --stage $(STAGE) --stack $(STACK) --region '$(REGION)' --aws $(AWS_CLI) \
	  $(if $(ARTIFACT_BUCKET),--bucket $(ARTIFACT_BUCKET)) $(if $(PARAMS),--params $(PARAMS))

deploy: $(STAMP) preflight
	$(BIN)/python -m infra.deploy --stage $(STAGE) --stack $(STACK) --region '$(REGION)' --out $(OUT) --aws $(AWS_CLI) \
	  $(if $(ARTIFACT_BUCKET),--bucket $(ARTIFACT_BUCKET)) $(if $(PARAMS),--params $(PARAMS))

# Each invokes the deployed migrate function in REGION (without one, the AWS CLI's own; none at all is refused).
IN_REGION = $(if $(REGION),--region '$(REGION)')

migrate: $(STAMP)
	$(BIN)/python infra/invoke_migrate.py --stack $(STACK) $(IN_REGION)

rotate: $(STAMP)
	$(BIN)/python infra/invoke_migrate.py --stack $(STACK) --action rotate $(IN_REGION)

# The way back from make deploy (infra/deploy.py --teardown): the app stack deleted and waited for, then the data
# stack's deletion protection turned off and the data stack deleted (a final snapshot is kept); what outlives them
# is printed with how to delete it. CONFIRM=<the app stack's name> says yes.
teardown: $(STAMP)
	$(BIN)/python -m infra.deploy --teardown --confirm '$(CONFIRM)' --stage $(STAGE) --stack $(STACK) --region '$(REGION)' \
	  --aws $(AWS_CLI) $(if $(ARTIFACT_BUCKET),--bucket $(ARTIFACT_BUCKET))

# Old history deleted (docs/operations.md, "How the database grows"): every row of the runs that finished before
# ENDED_BEFORE (at least 7 days ago); DRY_RUN=1 counts what would go. Invoked again until nothing is left.
purge: $(STAMP)
	$(BIN)/python infra/invoke_migrate.py --stack $(STACK) --action purge --ended-before '$(ENDED_BEFORE)' \
	  $(if $(DRY_RUN),--dry-run) $(IN_REGION)

# A migration killed mid-way leaves yoyo's lock row: the migrate function clears it once it is stale.
unlock: $(STAMP)
	$(BIN)/python infra/invoke_migrate.py --stack $(STACK) --action unlock $(IN_REGION)

# A migration whose DDL the server finished after its migrate was killed (every migrate since fails on it, naming it):
# the migrate function records ID as applied once it has checked the database shows exactly its effect.
mark-applied: $(STAMP)
	$(BIN)/python infra/invoke_migrate.py --stack $(STACK) --action mark_applied --id '$(ID)' $(IN_REGION)

costs: $(STAMP)
	$(BIN)/python -m bench.costs $(COSTS_ARGS)

db-url: $(STAMP)
	@$(BIN)/python -m devtools.kit.mariadb url

clean:
	-$(BIN)/python -m devtools.kit.mariadb stop
	rm -rf $(VENV) .venv-scan .venv-lock .venv-package .local .pytest_cache node_modules
