# Makefile: shardproof library, CLI, tests, fuzzers and benchmarks.
# Modes: release (default), debug, asan (ASan+UBSan).  Everything builds into build/$(MODE)/.

MODE ?= release
CC ?= cc
PREFIX ?= /usr/local
B := build/$(MODE)

DEB_PACKAGES := libflint-dev libflint-arb-dev libgmp-dev libmpfr-dev libcmocka-dev libjansson-dev \
  python3 pkg-config
# Optional: the PyTorch capture front end (shardproof torch, check --torch) and its tests run
# Debian's torch with /usr/bin/python3 (make deps-torch; tests/torch/run.sh skips without it).
DEB_TORCH_PACKAGES := python3-torch

WARN := -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter -Wno-stringop-overread -Wno-format-truncation -Wno-maybe-uninitialized
CSTD := -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE
INC := -Iinclude -Isolver -Isrc
ifeq ($(MODE),release)
  OPT := -O2 -g
else ifeq ($(MODE),debug)
  OPT := -O0 -g3 -DSP_DEBUG
else ifeq ($(MODE),asan)
  OPT := -O1 -g -DSP_DEBUG -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
  LDASAN := -fsanitize=address,undefined
else
  $(error unknown MODE=$(MODE): use release, debug or asan)
endif
CFLAGS += $(CSTD) $(WARN) $(OPT) $(INC) -fPIC -MMD -MP
LDLIBS := -lflint-arb -lflint -lmpfr -lgmp -ljansson -lpthread -lm

# The shared library: soname libshardproof.so.$(SOMAJOR); it exports the public API only
# (src/libshardproof.map) and records its dependencies, so an embedding program links with
# `pkg-config --cflags --libs shardproof` alone.
VERSION := $(shell sed -n 's/^\#define SHARDPROOF_VERSION "\(.*\)"/\1/p' include/shardproof.h)
SOMAJOR := 0
SONAME := libshardproof.so.$(SOMAJOR)

SOLVER_SRC := $(sort $(wildcard solver/*.c))
EXCLUDE ?=
LIB_SRC := $(SOLVER_SRC) $(sort $(filter-out src/main.c $(EXCLUDE),$(wildcard src/*.c src/*/*.c)))
LIB_OBJ := $(LIB_SRC:%.c=$(B)/%.o)
TEST_SRC := $(sort $(wildcard tests/test_*.c))
TEST_BIN := $(TEST_SRC:tests/%.c=$(B)/tests/%)
TEST_SUPPORT := $(filter-out $(TEST_SRC),$(wildcard tests/*.c))

.PHONY: FORCE all deps deps-torch check check-unit check-plans demo clean install fuzz fuzz-smoke fuzz-plan-diff fuzz-plan-diff-smoke bench format check-valgrind
all: $(B)/shardproof $(B)/libshardproof.a $(B)/libshardproof.so

# Install what a fresh Debian 12 machine lacks (apt-get update once, then install).
deps:
	@if ! [ -f /usr/include/flint/fmpq_mpoly.h ] || ! [ -f /usr/include/arb.h ] || \
	    ! [ -f /usr/include/cmocka.h ] || ! [ -f /usr/include/jansson.h ] || \
	    ! [ -f /usr/include/mpfr.h ] || ! [ -x /usr/bin/python3 ] || ! command -v pkg-config >/dev/null; then \
	  echo "shardproof: installing $(DEB_PACKAGES)"; \
	  SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -q && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q $(DEB_PACKAGES); \
	fi

# The PyTorch front end's packages (about 180 Debian packages without recommends).
deps-torch:
	@if ! /usr/bin/python3 -c 'import torch' >/dev/null 2>&1; then \
	  echo "shardproof: installing $(DEB_TORCH_PACKAGES)"; \
	  SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -q && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q --no-install-recommends \
	    $(DEB_TORCH_PACKAGES); \
	fi

# every object is rebuilt when the compiler or its flags change (build/MODE/cflags records them)
$(B)/cflags: FORCE
	@mkdir -p $(B)
	@echo '$(CC) $(CFLAGS)' | cmp -s - $@ || echo '$(CC) $(CFLAGS)' > $@

$(B)/%.o: %.c $(B)/cflags | deps
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(B)/libshardproof.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(B)/libshardproof.so.$(VERSION): $(LIB_OBJ) src/libshardproof.map
	$(CC) -shared -Wl,-soname,$(SONAME) -Wl,--version-script=src/libshardproof.map \
	  -Wl,--no-undefined $(LDASAN) -o $@ $(LIB_OBJ) $(LDLIBS)

$(B)/libshardproof.so: $(B)/libshardproof.so.$(VERSION)
	ln -sf libshardproof.so.$(VERSION) $(B)/$(SONAME)
	ln -sf $(SONAME) $@

$(B)/shardproof: $(B)/src/main.o $(B)/libshardproof.a
	$(CC) $(LDASAN) -o $@ $^ $(LDLIBS)

$(B)/tests/%: tests/%.c $(TEST_SUPPORT) $(B)/libshardproof.a | deps
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(TEST_SUPPORT) $(B)/libshardproof.a $(LDASAN) $(LDLIBS) -lcmocka

# Every cmocka test, then the plan corpora.
check: deps all $(TEST_BIN)
	@fail=0; t0=$$(date +%s); \
	at() { echo "== [$$(( $$(date +%s) - t0 )) s] $$1"; }; \
	for t in $(TEST_BIN); do \
	  echo "== $$t"; SP_SHARED=../shared $$t || fail=1; done; \
	at "plan corpora"; \
	if [ -x tests/run_plans.sh ]; then MODE=$(MODE) tests/run_plans.sh $(B)/shardproof || fail=1; fi; \
	at "allocation sweep, cli, reports, docs, embed, shard"; \
	tests/alloc_sweep.sh $(B)/shardproof || fail=1; \
	tests/cli.sh $(B)/shardproof || fail=1; \
	tests/reports.sh $(B)/shardproof || fail=1; \
	/usr/bin/python3 tests/run_docs.py $(B)/shardproof || fail=1; \
	MAKE="$(MAKE)" MODE=$(MODE) EMBED_CFLAGS="$(LDASAN)" tests/embed.sh || fail=1; \
	tests/shard.sh $(B)/shardproof || fail=1; \
	if [ "$(MODE)" = release ]; then at "gen matrix"; tests/gen_matrix.sh $(B)/shardproof || fail=1; fi; \
	if [ "$(MODE)" = release ]; then at "torch"; tests/torch/run.sh $(B)/shardproof || fail=1; fi; \
	at "end"; \
	if [ $$fail = 0 ]; then echo "shardproof: all tests passed"; else echo "shardproof: TESTS FAILED"; exit 1; fi

check-valgrind: all
	MODE=$(MODE) VALGRIND=1 tests/run_plans.sh $(B)/shardproof

demo: deps all
	@bash docs/examples/demo.sh $(B)/shardproof

fuzz fuzz-smoke fuzz-plan-diff fuzz-plan-diff-smoke bench:
	@$(MAKE) -f fuzz/fuzz.mk $@ MODE=$(MODE)

# make install [PREFIX=/usr/local] [DESTDIR=staging]: the CLI, both libraries, the public header
# (internal headers are not installed), the man page and the pkg-config file.
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig \
	  $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 755 $(B)/shardproof $(DESTDIR)$(PREFIX)/bin/
	install -m 644 $(B)/libshardproof.a $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(B)/libshardproof.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/
	ln -sf libshardproof.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(PREFIX)/lib/libshardproof.so
	install -m 644 include/shardproof.h $(DESTDIR)$(PREFIX)/include/
	install -m 644 docs/shardproof.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' src/shardproof.pc.in \
	  > $(DESTDIR)$(PREFIX)/lib/pkgconfig/shardproof.pc
	install -d $(DESTDIR)$(PREFIX)/lib/shardproof/python/shardproof_torch
	install -m 644 src/torch/shardproof_torch/*.py \
	  $(DESTDIR)$(PREFIX)/lib/shardproof/python/shardproof_torch/

format:
	clang-format -i solver/*.[ch] src/*.[ch] include/*.h tests/*.c fuzz/*.c bench/*.c

clean:
	rm -rf build

-include $(LIB_OBJ:.o=.d)
