# QueueLab. `make lesson-7` runs lesson 7; `make test` runs every check.
GO      ?= go
QLAB    ?= bin/qlab
SPEED   ?=
FLAGS   ?=

.PHONY: build setup test quick vet golden lessons bench bench-check bench-docs tui clean FORCE

build: $(QLAB)

# The first build fetches and compiles every dependency, which takes
# minutes: scripts/build.sh says what it is doing every few seconds (a
# warm build stays silent). Without bash, a plain go build.
$(QLAB): FORCE
	@if command -v bash >/dev/null 2>&1; then GO="$(GO)" bash scripts/build.sh $(QLAB) ./cmd/qlab; \
	else echo "building $(QLAB) (a first build fetches and compiles the dependencies: minutes)..." >&2; \
		$(GO) build -o $(QLAB) ./cmd/qlab; fi

# Before a workshop, on a good network: fetch and build everything the
# lessons, the exercises and the tests need, and say what it cost.
setup:
	@GO="$(GO)" bash scripts/setup.sh

# make lesson-7 [SPEED=10] [FLAGS="--backend rabbit"]. Each lesson runs on
# its default backend (the broker for the lessons `qlab run --help`
# names: Lesson.Default) at its default speed (1, faster for a long lesson).
# QLAB_VIA=make makes the closing "Next:" line say make lesson-N.
lesson-%: $(QLAB)
	@QLAB_VIA=make $(QLAB) run $* $(if $(SPEED),--speed $(SPEED)) $(FLAGS)

# make compare-10 [COMPARE_SPEED=20]: lesson 10 on both backends, measured
# side by side (needs a broker; see docs/instructors.md). Without
# COMPARE_SPEED, the lesson's own speed (20×; 400× for 14).
compare-%: $(QLAB)
	@QLAB_VIA=make $(QLAB) compare $* $(if $(COMPARE_SPEED),--speed $(COMPARE_SPEED)) $(FLAGS)
# make tui [N=7] [FLAGS="--speed 1"]: the terminal UI, on lesson N or the menu.
tui: $(QLAB)
	@$(QLAB) tui $(N) $(FLAGS)

# Every lesson that runs in memory, in memory (a broker lesson's twin
# too: no broker needed), fast.
LESSONS_SPEED ?= 50
lessons: $(QLAB)
	@for n in $$($(QLAB) list --numbers --backend inmem); do \
		QLAB_VIA=make $(QLAB) run $$n --backend inmem --speed $(LESSONS_SPEED) --no-color || exit 1; echo; \
	done

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l .)" || { echo "gofmt needed:"; gofmt -l .; exit 1; }

# -race needs cgo and a C compiler (CI has both). Where Go runs without
# them, the suite still runs, without the race detector, and says so.
RACE := $(shell [ "$$($(GO) env CGO_ENABLED)" = 1 ] && command -v "$$($(GO) env CC)" >/dev/null 2>&1 && echo -race)

# Most broker tests wait on the broker's timers or on their turn on the
# shared cluster, not on a CPU: run more packages (-p) and tests
# (-parallel) at once than go's default, one per core for both. With -p 4
# the short packages queued behind long waiters; -p 8 took the quiet
# suite from 354 s to 287 s (2026-11-27, 2 cores).
TESTFLAGS ?= -p 8 -parallel 8 -timeout 20m
# go test starts packages in the order it is given them: the slowest
# first, so none of them starts last and holds up the end (in ci50, a
# busy run, exercises, 106 s, started at 189 s of 300 and ended it). The
# cluster's users lead: they take turns on it, one after another. ./...
# adds the rest (go test runs a package once). make test
# TESTPKGS=./lessons/q21 runs the same recipe on fewer packages.
SLOWEST   := ./lessons/q21 ./tui ./lessons/faults ./rabbit/cluster ./lessons \
	./cmd/qlab ./exercises ./rabbit/cluster/clustertest ./lessons/q17 \
	./rabbit ./compare ./lessons/q16 ./serve ./rabbit/rabbittest \
	./lesson/rabbitenv ./lessons/q24 ./lessons/q25 ./lessons/q23 \
	./lessons/q14 ./lessons/q22 ./lessons/q18 ./lessons/q19 ./lessons/q11 \
	./lessons/q12
TESTPKGS  ?= $(SLOWEST) ./...

# Without a broker the broker tests skip (go test prints only "ok"), so say
# so once, with the reason; under QLAB_REQUIRE_BROKER=1 they fail instead.
# The fault suite (lessons/faults) appends one line per fault case to
# bin/faults.txt; go test shows a passing package's output only with -v.
#
# One three-node cluster serves every package that needs one (clustertest:
# the fault suite, Q21, rabbit/cluster's failover), started beside go
# test's compiling and owned by this recipe's shell (--owner $$): its
# nodes go when the shell ends, however it ends, and at once by down at
# the end. On Ctrl-C, down first stops a cluster still starting (up runs
# in the background, where SIGINT is ignored, and make waited out its
# start). The packages take turns on it (they stop nodes). Where it
# cannot start, each package starts its own, as go test ./... alone does,
# and skips or fails with the reason.
#
# Ctrl-C, -timeout, a closed terminal (SIGHUP) or a kill ends a test
# before its cleanup: each test process records the queue prefixes and
# schemas it creates in QLAB_CREATED_DIR (lab/created), and down deletes
# what ended processes left (broker clean --created); a run killed
# outright is cleaned at the next start.
test: vet $(QLAB)
	$(if $(RACE),,@echo "make test: no C compiler for -race here; running the tests without it")
	@rm -f bin/faults.txt
	@made=$${TMPDIR:-/tmp}/qlab-created-$$$$; \
	for old in "$${TMPDIR:-/tmp}"/qlab-created-*; do \
		[ -d "$$old" ] && ! kill -0 "$${old##*-}" 2>/dev/null || continue; \
		echo "make test: cleaning after an earlier run that was killed ($$old)"; \
		$(QLAB) broker clean --created "$$old" && rmdir "$$old" 2>/dev/null; \
	done; \
	dir=$$(mktemp -d "$${TMPDIR:-/tmp}/qlab-make-test-XXXXXX") || exit 1; state=$$dir/cluster.json; \
	( $(QLAB) broker cluster up --state "$$state" --owner $$$$ >"$$dir/up.log" 2>&1 & echo $$! >"$$dir/up.pid"; \
		wait $$! && touch "$$state.ready" || touch "$$state.failed" ) & up=$$!; \
	down() { [ -z "$$1" ] || stopup; wait $$up; \
		$(QLAB) broker clean --created "$$made" && rmdir "$$made" 2>/dev/null; \
		[ ! -e "$$state.failed" ] || [ -n "$$1" ] || { echo "make test: no shared cluster, each package started its own:"; tail -n 3 "$$dir/up.log"; }; \
		$(QLAB) broker cluster down --state "$$state" >/dev/null 2>"$$dir/down.log" || { cat "$$dir/down.log"; rm -rf "$$dir"; return 1; }; \
		rm -rf "$$dir"; }; \
	stopup() { while [ ! -s "$$dir/up.pid" ] && kill -0 $$up 2>/dev/null; do sleep 1; done; \
		kill -TERM "$$(cat "$$dir/up.pid" 2>/dev/null)" 2>/dev/null; }; \
	trap 'down stop; exit 130' INT TERM HUP; \
	echo "QLAB_TEST_CLUSTER=$$state $(GO) test $(RACE) $(TESTFLAGS) $(TESTPKGS)"; \
	QLAB_CREATED_DIR=$$made QLAB_TEST_CLUSTER=$$state QLAB_FAULT_REPORT=$(CURDIR)/bin/faults.txt $(GO) test $(RACE) $(TESTFLAGS) $(TESTPKGS); \
	code=$$?; down || code=1; exit $$code
	@[ ! -s bin/faults.txt ] || { echo "fault suite (private RabbitMQ node):"; cat bin/faults.txt; }
	@[ "$$QLAB_REQUIRE_BROKER" = 1 ] || $(QLAB) broker status 2>&1 >/dev/null | \
		sed 's/^qlab: /make test: the broker tests were skipped: /'

# The developer loop: make test without the fault suite's private nodes,
# the clusters, the 4.3 line and the exercise author check (all skip
# under -short; CI runs them), and without -race (QUICKFLAGS=-race adds
# it back): 51-58 s on two cores, quiet, warm cache, -count=1 (54 s on
# 2026-11-27 evening, CONTRIBUTING.md).
QUICKFLAGS ?=
quick: vet
	$(GO) test -short $(QUICKFLAGS) $(TESTFLAGS) $(TESTPKGS)

# Every benchmark (in memory, broker, breaker, TUI); the broker ones need RabbitMQ.
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# The lab's paths against hand-rolled yardsticks doing the same work, run
# interleaved in one go: the in-memory Queue against the event contract
# written by hand, the broker Publisher/Consumer against bare amqp091-go.
# It prints the ratios and asserts none (a shared machine moves single
# runs too much); CI prints them at the end. bench-docs writes the same
# report into docs/benchmarks.md, between its bench-check marks.
BENCHCHECK_FLAGS ?=
bench-check:
	@$(GO) run ./scripts/benchcheck $(BENCHCHECK_FLAGS)
bench-docs:
	@$(GO) run ./scripts/benchcheck -rounds 10 -write docs/benchmarks.md $(BENCHCHECK_FLAGS)

# Rewrite the golden transcripts after an intended change; review the diff.
golden:
	$(GO) test ./lessons -run Golden -update

clean:
	rm -rf bin
