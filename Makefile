# Bourse. Targets that need PostgreSQL run under scripts/pg.sh, which starts a
# throwaway cluster (installing PostgreSQL first when run as root on Debian)
# and sets DATABASE_URL and BOURSE_TEST_DATABASE_URL for the commands it runs.

GO       ?= go
PGRUN    := bash scripts/pg.sh run --
FUZZTIME ?= 20s
BENCH_OFFERS ?= 5000

.DEFAULT_GOAL := build
.PHONY: nats-server build test e2e bench bench-ledger bench-exchange bench-instances bench-scale bench-servers bench-sim sim-trace gpu-meter gpu-tests lint fuzz clean demo console-shots

## build: compile every package, and the binary to bin/bourse
build:
	$(GO) build ./...
	$(GO) build -o bin/bourse ./cmd/bourse

## test: all tests, with the race detector, against a throwaway PostgreSQL
## and Debian's nats-server as an external NATS (NATS_URL), with Chromium
## for the console's browser test and runc and busybox-static for the
## containers' (installed when missing and root), then the end-to-end
## checks with natscli as an independent client
test:
	bash scripts/chromium.sh
	bash scripts/runc.sh
	$(PGRUN) bash scripts/nats-server.sh run -- $(GO) test -race -count=1 -timeout 18m ./...
	bash scripts/natscli-e2e.sh

## e2e: natscli drives a demo market through NATS alone
e2e:
	bash scripts/natscli-e2e.sh

## bench: all benchmarks, against a throwaway PostgreSQL
bench:
	$(PGRUN) $(GO) test -run='^$$' -bench=. -benchmem ./...

## bench-ledger: the ledger benchmark (scripts/bench-ledger.sh)
bench-ledger:
	$(PGRUN) bash scripts/bench-ledger.sh

## bench-exchange: contracts/s and negotiation latency beside raw NATS request/reply
bench-exchange:
	$(PGRUN) bash scripts/nats-server.sh run -- env BENCH_OFFERS=$(BENCH_OFFERS) bash scripts/bench-exchange.sh

## bench-instances: contracts/s and CPU per contract with 1, 2 and 3 bourse
## exchange processes on one PostgreSQL and a three-node NATS cluster
bench-instances:
	$(PGRUN) env GOGC=400 $(GO) test -run '^$$' -bench BenchmarkInstances -benchtime $(BENCH_OFFERS)x ./market

## bench-scale: the simulator on Alibaba's GPU cluster at 13, 130, 1,213
## and 12,130 nodes, jobs per CPU second and memory (scripts/bench-scale.sh;
## OPENB_DIR for the trace's own lists, BENCH_SCALE_BASE for a baseline)
bench-scale:
	bash scripts/bench-scale.sh

## bench-servers: an exchange's cost with 10, 100 and 1,000 server agents
## (contracts/s, CPU per offer, servers asked), the usage stream's messages
## per running contract, and one exchange's CPU per contract on a
## three-node NATS cluster against one node
bench-servers:
	$(PGRUN) env GOGC=400 $(GO) test -run '^$$' -bench 'BenchmarkServers' -benchtime 2000x -timeout 30m ./market
	$(PGRUN) $(GO) test -run '^$$' -bench 'BenchmarkUsageStream' -benchtime 1x -timeout 10m ./market
	$(PGRUN) env GOGC=400 $(GO) test -run '^$$' -bench 'BenchmarkCluster' -benchtime $(BENCH_OFFERS)x -timeout 30m ./market

## bench-sim: a million simulated jobs, their jobs/s beside making the jobs alone
bench-sim:
	bash scripts/bench-sim.sh

## sim-trace: the acceptance run of a trace (also part of make test):
## examples/sim/openb-sample.yaml under every policy, every settled charge
## priced again from the contract logs by bourse sim audit
sim-trace:
	$(GO) test -count=1 -run '^TestSimTrace' -v ./cmd/bourse/

## gpu-meter: the NVML meter on GPU 0 (needs an NVIDIA GPU, its driver and
## python3 with torch; not part of make test): the meter against a known
## load and against one in a child that called setsid (as root), then a whole
## market selling that GPU to jobs of known duty cycle (every charge against
## the jobs' own CUDA-event kernel time), by the process runner and, as root
## with runc, by the container runner (a client's image with no CUDA of its own)
gpu-meter:
	$(GO) test -tags gpu -count=1 -run 'RealLoad|SetsidLoad' -v ./server/nvmlmeter/
	$(GO) test -tags gpu -count=1 -run 'GPUMarket|GPUContainer' -v -timeout 15m ./cmd/bourse/

## gpu-tests: the test binaries of gpu-meter in bin/gpu, for a GPU machine
## without Go (scripts/gpu-meter.sh runs them there)
gpu-tests:
	mkdir -p bin/gpu
	$(GO) test -c -tags gpu -ldflags=-s\ -w -o bin/gpu/nvmlmeter.test ./server/nvmlmeter/
	$(GO) test -c -tags gpu -ldflags=-s\ -w -o bin/gpu/bourse.test ./cmd/bourse/
	rm -rf bin/gpu/duty-root && scripts/gpu-duty-root.sh bin/gpu/duty-root
	rm -rf bin/gpu/debs && mkdir -p bin/gpu/debs && cd bin/gpu/debs && apt-get download runc busybox-static || echo 'gpu-tests: no runc or busybox-static packages: TestGPUContainer will skip where they are missing'

## nats-server: a current nats-server (the release go.mod pins, 2.15) built
## to bin/nats-server, for deployments and tests that want one newer than
## Debian's 2.9 (docs/operations.md: durability)
nats-server:
	$(GO) build -o bin/nats-server github.com/nats-io/nats-server/v2

## lint: gofmt, go vet and staticcheck (pinned as a tool in go.mod)
lint:
	@files=$$(gofmt -l . | grep -v '^vendor/' || true); \
	if [ -n "$$files" ]; then echo "gofmt -l: these files need gofmt -w:"; echo "$$files"; exit 1; fi
	$(GO) vet ./...
	$(GO) tool staticcheck ./...

## fuzz: each Fuzz function in the module for FUZZTIME (default 20s)
fuzz:
	FUZZTIME=$(FUZZTIME) GO=$(GO) bash scripts/fuzz.sh

## clean: remove build and test outputs
clean:
	rm -rf bin
	rm -f *.test *.out *.prof cover.html coverage.html coverage.txt

## console-shots: the console's screenshots in docs/console/ (needs Chromium)
console-shots:
	bash scripts/chromium.sh
	BOURSE_CONSOLE_SHOTS=$(CURDIR)/docs/console $(GO) test -count=1 -run TestScreenshots ./console/

## demo: a whole market in one process for 20 seconds
demo:
	$(GO) run ./cmd/bourse demo
