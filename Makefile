# Foyer's build, run and test entry points. `make run` and `make test` are the
# two commands a fresh machine needs (Go installed, nothing else).

GO          ?= go
BIN         := bin/foyer
# foyer serve runs its rooms from foyer-room beside it (cmd/foyer-room:
# the instance subcommand alone), built without gRPC's request tracing,
# which a room never serves (tests/main_test.go builds it alike).
ROOM_BIN    := bin/foyer-room
ROOM_TAGS   := grpcnotrace
CONFIG      ?= config.toml
# Debian packages the tests talk to: a real DDNet server, a real Teeworlds
# info client, ip(8) for the LAN and cluster tests' network namespaces, and
# what the package test installs Foyer's .deb with: adduser (the package's
# one dependency) and systemd-analyze (systemd) to verify its unit, a real
# browser (run headless) for the admin board, a NATS server and nft(8)
# for the cluster test's forwarder, and what builds and runs the client
# SDKs of sdk/ against a real lobby: gcc and clang (the C header), Mono's
# C# compiler, Node, Python and a headless Godot 3 (GDScript).
DEB_PACKAGES := ddnet-server qstat iproute2 adduser systemd chromium nats-server nftables \
	gcc clang mono-mcs nodejs python3 godot3-server
FUZZTIME    ?= 30s
BENCHTIME   ?= 1s
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: all build run deb test deps vet bench fuzz mutate lint proto clean

all: build

# The binaries are static (no cgo): every room is a process of foyer-room,
# which must stay beside foyer (without it, rooms run foyer's own instance
# subcommand, and the start log says so). An idle reference room's
# resident memory is about 13.6 MB (20.8 MB as a process of foyer), most
# of it foyer-room's pages, which every room shares: it adds about 2.0 MB
# (its PSS among 100 rooms; 2.9 MB of foyer). Where rooms run as users of
# their own, each has a warden, a second foyer-room process (10.7 MB
# resident, 1.5 MB PSS). A binary's pages just written by one large
# write (a fresh copy) sit in large folios, each mapped whole: until they
# are read back, a room maps nearly all of its binary, 15.5 MB (29.7 MB
# of foyer). Idle rooms of foyer-room use about a third of the CPU of
# rooms of foyer, which wake every second (the NATS server's pse package
# samples /proc from its init on). BenchmarkServeIdleRooms in tests/
# measures all of it side by side with rooms of foyer alone.
# A first build compiles every dependency and says nothing for about a
# minute: the lines around it say so.
build:
	@echo "== building $(BIN) and $(ROOM_BIN) (a first build compiles every dependency: about a minute; later ones take seconds)"
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN) ./cmd/foyer
	CGO_ENABLED=0 $(GO) build -trimpath -tags $(ROOM_TAGS) -o $(ROOM_BIN) ./cmd/foyer-room
	@echo "== built $(BIN) and $(ROOM_BIN)"

run: build
	@echo "== running $(BIN) serve with $(CONFIG) until Ctrl-C"
	./$(BIN) serve --config $(CONFIG)

# deb builds bin/foyer_VERSION_ARCH.deb with nfpm (packaging/): the binaries,
# config.toml as /etc/foyer/config.toml, docs/foyer.service, and the
# scripts that make the foyer user. VERSION comes from git describe.
deb: build
	@echo "== packaging $(BIN)"
	$(GO) run ./packaging --binary $(BIN) --out bin

# apt_install installs the Debian packages in $(1) that are missing.
define apt_install
	@missing=""; for p in $(1); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		sudo=""; [ "$$(id -u)" = 0 ] || sudo=sudo; \
		echo "installing:$$missing"; \
		$$sudo apt-get update -q && \
		DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -q --no-install-recommends $$missing; \
	fi
endef

# deps installs what the test suite needs: the Go modules and, when missing,
# the Debian packages above.
deps:
	$(call apt_install,$(DEB_PACKAGES))
	$(GO) mod download

# vet also fails on any Go file gofmt would change.
vet:
	$(GO) vet ./...
	@unformatted=$$("$$($(GO) env GOROOT)/bin/gofmt" -l .); \
	if [ -n "$$unformatted" ]; then echo "not formatted (gofmt -w):"; echo "$$unformatted"; exit 1; fi

# test runs every test. A plain `go test ./...` skips, each with its reason,
# the tests whose requirements are missing (root, a package above, network
# namespaces, cgroups); FOYER_TEST_ALL=1 makes them fail instead
# (internal/requiretest), so that nothing is skipped here, and so in CI.
test: deps vet
	FOYER_TEST_ALL=1 $(GO) test -race -timeout 14m ./...

# Benchmarks run static binaries, like the foyer binary `make build`
# ships; the room memory figures are of the rooms `foyer serve` runs.
bench: deps
	CGO_ENABLED=0 $(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) -timeout 30m ./...

# fuzz runs every fuzz target in the module for FUZZTIME each.
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
		for target in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
			echo "== $$pkg $$target"; \
			$(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) $$pkg; \
		done; \
	done

# mutate puts each deliberate bug of tests/mutate.sh into a copy of the
# tree, one at a time, and checks that the tests guarding it fail (and
# pass without it). Not part of make test: it takes minutes.
mutate: deps
	FOYER_TEST_ALL=1 GO=$(GO) ./tests/mutate.sh

lint: vet
	$(GO) run $(STATICCHECK) ./...

# proto regenerates the instance service's Go code with pinned tools:
# Debian's protoc 3.21.12 and the Go plugins named in gen.sh.
proto:
	$(call apt_install,protobuf-compiler)
	./instance/instancepb/gen.sh

clean:
	rm -rf bin
