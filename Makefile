# ingressd -- GNU make.  `make run` and `make check` are the two entry points:
# both install missing Debian packages first (scripts/deps.sh: `run` needs
# fewer than `check`), then build in a second make, which sees the files the
# packages brought (a make that has looked for /usr/share/llhttp/*.c does
# not look again).
#
# Variables you may set: CFLAGS, LDFLAGS, PREFIX, DESTDIR, BUILD, SAN=1
# (ASan+UBSan), WERROR=1 (set automatically when CI=true), PYTHON.

PREFIX	?= /usr/local
DESTDIR	?=
BUILD	?= build
CC	?= cc
# Debian's python3-* modules (prometheus_client ...) are importable by this
# interpreter only, not by a pyenv python3 first on PATH.
PYTHON	?= /usr/bin/python3
PKG	:= libevent libevent_pthreads libevent_openssl jansson libnghttp2 libcares openssl
LLHTTP_SRC_DIR := /usr/share/llhttp
LLHTTP_INC_DIR := /usr/share/include/llhttp

WARN	:= -Wall -Wextra -Wshadow -Wpointer-arith -Wstrict-prototypes \
	   -Wmissing-prototypes -Wno-unused-parameter -Wformat=2
ifeq ($(CI),true)
WERROR	?= 1
endif
ifeq ($(WERROR),1)
WARN	+= -Werror
endif

OPT	?= -O2 -g
ifeq ($(SAN),1)
OPT	:= -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
	   -fno-sanitize-recover=undefined
SANLD	:= -fsanitize=address,undefined
endif

PKG_CFLAGS = $(shell pkg-config --cflags $(PKG) 2>/dev/null)
PKG_LIBS   = $(shell pkg-config --libs $(PKG) 2>/dev/null)

# LLHTTP_STRICT_MODE must be the same for llhttp's sources and for every file
# that includes llhttp.h: Debian's build is loose without it.
DEFS	:= -D_GNU_SOURCE -DLLHTTP_STRICT_MODE=1
ALL_CFLAGS = -std=c11 $(OPT) $(WARN) $(DEFS) -Isrc -Ireplica \
	     -I$(LLHTTP_INC_DIR) $(PKG_CFLAGS) -MMD -MP $(CFLAGS)
ALL_LDFLAGS = $(SANLD) $(LDFLAGS)
LIBS	= $(PKG_LIBS) -lpthread -lm -ldl

# The daemon: every src/*.c; main.c alone is left out of the library the
# unit tests link against.
SRC	:= $(sort $(wildcard src/*.c))
LIB_SRC	:= $(filter-out src/main.c,$(SRC))
LIB_OBJ	:= $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
LLHTTP_OBJ := $(addprefix $(BUILD)/obj/llhttp/,api.o http.o llhttp.o)

# The replica library (shares src/wire.c) and the example replicas.
REPLICA_LIB := $(BUILD)/libingressd-replica.a
REPLICA_OBJ := $(addprefix $(BUILD)/obj/replica/,conn.o req.o listen.o cli.o \
		etcd.o trailers.o grpc.o grpc_md.o module.o) \
	       $(addprefix $(BUILD)/obj/src/,idtab.o net.o sock.o b64.o etcd_kv.o \
		monotime.o tls.o) \
	       $(BUILD)/obj/src/wire.o
EXAMPLES := $(patsubst replica/examples/%.c,$(BUILD)/replica-%,\
	    $(wildcard replica/examples/*.c))
# The same handlers as shared modules (replica_module.h): loaded into
# ingressd ("inproc") or served by ingressd-host; and a module whose ABI
# word is wrong, for the test that it is refused.
# grpc-echo has a main of its own (replica_grpc.h's dispatcher over the
# library), so it is a standalone replica only.
MAIN_EXAMPLES := grpc-echo
MODULES	:= $(patsubst replica/examples/%.c,$(BUILD)/mod-%.so,\
	    $(filter-out $(MAIN_EXAMPLES:%=replica/examples/%.c),\
	    $(wildcard replica/examples/*.c)))
TEST_MODULES := $(BUILD)/tests/mod-badabi.so $(BUILD)/tests/mod-block.so
MOD_CFLAGS = -fPIC -fvisibility=hidden

UNIT_SRC := $(wildcard tests/unit/check_*.c)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
FUZZ_SRC := $(wildcard tests/fuzz/fuzz_*.c)

.PHONY: all deps deps-check run check check-only unit python integ asan bench \
	fuzz fuzz-ci conformance install clean

all: $(BUILD)/ingressd $(REPLICA_LIB) $(EXAMPLES) $(MODULES) \
	$(BUILD)/ingressd-host $(TEST_MODULES) $(BUILD)/tls/server.pem

# conf/tls.json's listener: a self-signed certificate for 127.0.0.1 and
# localhost, made once (for the tour and the tests; never for production).
$(BUILD)/tls/server.pem:
	@mkdir -p $(dir $@)
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	    -days 825 -subj /CN=localhost -keyout $(BUILD)/tls/server.key \
	    -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" -out $@ \
	    2>/dev/null

# Building without the packages would end in a compiler error about
# event2/event.h or "No rule to make target build/obj/llhttp/api.o": say in
# one line what is missing instead.  Goals that install first are exempt.
NODEPS_GOALS := deps deps-check run check asan bench fuzz fuzz-ci clean \
	distclean python
ifneq ($(if $(MAKECMDGOALS),$(filter-out $(NODEPS_GOALS),$(MAKECMDGOALS)),all),)
MISSING := $(if $(shell command -v $(CC)),,build-essential) \
	   $(if $(shell command -v pkg-config),,pkg-config) \
	   $(shell pkg-config --exists libevent libevent_pthreads 2>/dev/null || \
		echo libevent-dev) \
	   $(shell pkg-config --exists jansson 2>/dev/null || echo libjansson-dev) \
	   $(shell pkg-config --exists openssl 2>/dev/null || echo libssl-dev) \
	   $(shell pkg-config --exists libnghttp2 2>/dev/null || \
		echo libnghttp2-dev) \
	   $(shell pkg-config --exists libcares 2>/dev/null || echo libc-ares-dev) \
	   $(if $(shell command -v openssl),,openssl) \
	   $(if $(wildcard $(LLHTTP_SRC_DIR)/api.c),,node-llhttp)
ifneq ($(strip $(MISSING)),)
$(error missing Debian packages:$(sort $(MISSING)) -- run `make deps` (installs them) or `make run` (installs, builds, runs))
endif
ifneq ($(filter check-only unit $(BUILD)/tests/%,$(MAKECMDGOALS)),)
ifeq ($(shell pkg-config --exists check 2>/dev/null && echo y),)
$(error missing the Debian package check (unit tests) -- run `make deps-check` or `make check`)
endif
endif
endif

deps:
	@sh scripts/deps.sh run

deps-check:
	@sh scripts/deps.sh check

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

# llhttp's generated C is not ours to warn about.
$(BUILD)/obj/llhttp/%.o: $(LLHTTP_SRC_DIR)/%.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 $(OPT) -DLLHTTP_STRICT_MODE=1 -I$(LLHTTP_INC_DIR) \
	    $(CFLAGS) -c -o $@ $<

$(BUILD)/libingressd.a: $(LIB_OBJ) $(LLHTTP_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/ingressd: $(BUILD)/obj/src/main.o $(BUILD)/libingressd.a
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS)

$(REPLICA_LIB): $(REPLICA_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/replica-%: $(BUILD)/obj/replica/examples/%.o \
    $(BUILD)/obj/replica/module_main.o $(REPLICA_LIB)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS)

$(MAIN_EXAMPLES:%=$(BUILD)/replica-%): $(BUILD)/replica-%: \
    $(BUILD)/obj/replica/examples/%.o $(REPLICA_LIB)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS)

$(BUILD)/obj/mod/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(MOD_CFLAGS) -c -o $@ $<

# -z defs: a module may need only libevent, jansson and libc, never a
# replica_* symbol from its host (module_shim.c forwards those).
$(BUILD)/mod-%.so: $(BUILD)/obj/mod/replica/examples/%.o \
    $(BUILD)/obj/mod/replica/module_shim.o
	$(CC) $(ALL_LDFLAGS) -shared -Wl,-z,defs -o $@ $^ $(PKG_LIBS)

$(BUILD)/tests/mod-%.so: $(BUILD)/obj/mod/tests/integ/mods/%.o \
    $(BUILD)/obj/mod/replica/module_shim.o
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -shared -Wl,-z,defs -o $@ $^ $(PKG_LIBS)

# Objects made by a chain of pattern rules are kept (make would delete
# them as intermediates and rebuild them next time).
.SECONDARY:

$(BUILD)/ingressd-host: $(BUILD)/obj/replica/host.o $(REPLICA_LIB)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS)

$(BUILD)/tests/check_%: $(BUILD)/obj/tests/unit/check_%.o $(BUILD)/libingressd.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS) \
	    $(shell pkg-config --libs check 2>/dev/null)

# The replica library's own rules link against it, not the daemon's.
$(BUILD)/tests/check_replica_grpc: \
	    $(BUILD)/obj/tests/unit/check_replica_grpc.o $(REPLICA_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS) \
	    $(shell pkg-config --libs check 2>/dev/null)

run: deps
	$(MAKE) all
	./$(BUILD)/ingressd -c conf/ingressd.json

check: deps-check
	$(MAKE) check-only

check-only: all $(UNIT_BIN)
	$(MAKE) DEPGRAPH_FLAGS=--quiet depgraph unit python integ conformance

unit: $(UNIT_BIN)
	@sh tests/run-unit.sh $(UNIT_BIN)

# The Python replica SDK: its codec against the shared vectors, its server
# against the independent Python peer in tests/integ/wire_client.py.
python:
	PYTHON=$(PYTHON) sh tests/python/run.sh

integ: all
	BUILD=$(BUILD) INGRESSD_SANITIZED=$(SAN) $(PYTHON) tests/integ/run.py

# ASan+UBSan: a separate tree, the same tests.
asan: deps-check
	$(MAKE) BUILD=build-asan SAN=1 check-only

bench: deps-check
	$(MAKE) all
	PYTHON=$(PYTHON) sh bench/run.sh

FUZZ_BIN := $(FUZZ_SRC:tests/fuzz/%.c=build-fuzz/%)
fuzz: deps-check
	$(MAKE) $(FUZZ_BIN)
	sh tests/fuzz/run.sh $(FUZZ_BIN)

# CI: each target for 60 s, two at a time (tests/fuzz/run.sh).
fuzz-ci: deps-check
	$(MAKE) $(FUZZ_BIN)
	FUZZ_TIME=60 FUZZ_JOBS=2 sh tests/fuzz/run.sh $(FUZZ_BIN)

depgraph: all ; scripts/depgraph --build $(BUILD) $(DEPGRAPH_FLAGS)

# The raw-socket HTTP/1.1 suite against ingressd + replica-echo.
conformance: all
	$(PYTHON) tests/conformance/run.py --ingressd $(BUILD) --strict

build-fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(LIB_SRC) $(LLHTTP_SRC_DIR)/llhttp.c
	@mkdir -p $(dir $@)
	clang -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined $(DEFS) \
	    -Isrc -Ireplica -I$(LLHTTP_INC_DIR) $(PKG_CFLAGS) -o $@ $< $(LIB_SRC) \
	    $(addprefix $(LLHTTP_SRC_DIR)/,api.c http.c llhttp.c) $(LIBS)

# The conf goes in only if there is none (an upgrade keeps yours), with its
# replica commands pointed at the installed examples; the units and the man
# page get PREFIX.  LIBDIR is for the replica library and its .pc (Debian
# wants its multiarch directory); UNITDIR is PREFIX's systemd directory.
LIBDIR	?= $(PREFIX)/lib
UNITDIR	?= $(PREFIX)/lib/systemd/system
VERSION	:= $(shell sed -n 's/^\#define INGRESSD_VERSION[^"]*"\(.*\)"/\1/p' src/main.c)
ETC_CONF := $(DESTDIR)/etc/ingressd/ingressd.json
install: all
	install -d $(DESTDIR)$(PREFIX)/sbin $(DESTDIR)$(PREFIX)/lib/ingressd \
	    $(DESTDIR)$(PREFIX)/share/man/man8 \
	    $(DESTDIR)$(PREFIX)/share/doc/ingressd \
	    $(DESTDIR)$(PREFIX)/include/ingressd $(DESTDIR)$(LIBDIR)/pkgconfig \
	    $(DESTDIR)/etc/ingressd $(DESTDIR)/etc/logrotate.d \
	    $(DESTDIR)$(UNITDIR)
	install -m 755 $(BUILD)/ingressd $(DESTDIR)$(PREFIX)/sbin/ingressd
	install -m 755 $(EXAMPLES) $(BUILD)/ingressd-host \
	    $(DESTDIR)$(PREFIX)/lib/ingressd/
	install -m 644 $(MODULES) $(DESTDIR)$(PREFIX)/lib/ingressd/
	sed 's|/usr/local|$(PREFIX)|g' docs/ingressd.8 > \
	    $(DESTDIR)$(PREFIX)/share/man/man8/ingressd.8
	chmod 644 $(DESTDIR)$(PREFIX)/share/man/man8/ingressd.8
	install -m 644 docs/operations.md docs/conf.md \
	    $(DESTDIR)$(PREFIX)/share/doc/ingressd/
	install -m 644 replica/replica.h replica/replica_grpc.h \
	    replica/replica_module.h $(DESTDIR)$(PREFIX)/include/ingressd/
	install -m 644 $(REPLICA_LIB) $(DESTDIR)$(LIBDIR)/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
	    -e 's|@VERSION@|$(VERSION)|' replica/ingressd-replica.pc.in > \
	    $(DESTDIR)$(LIBDIR)/pkgconfig/ingressd-replica.pc
	chmod 644 $(DESTDIR)$(LIBDIR)/pkgconfig/ingressd-replica.pc
	install -m 644 conf/ingressd.logrotate $(DESTDIR)/etc/logrotate.d/ingressd
	[ -f $(ETC_CONF) ] || { sed -e 's|"build/replica-|"$(PREFIX)/lib/ingressd/replica-|' \
	    -e 's|"--directory", "docs"|"--directory", "$(PREFIX)/share/doc/ingressd"|' \
	    conf/ingressd.json > $(ETC_CONF).tmp && chmod 644 $(ETC_CONF).tmp && \
	    mv $(ETC_CONF).tmp $(ETC_CONF); }
	for u in ingressd.service ingressd.socket; do \
	    sed 's|/usr/local|$(PREFIX)|g' systemd/$$u > \
	    $(DESTDIR)$(UNITDIR)/$$u && \
	    chmod 644 $(DESTDIR)$(UNITDIR)/$$u || exit 1; done

clean:
	rm -rf build build-asan build-fuzz

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
