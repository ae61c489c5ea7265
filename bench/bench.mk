# bench/bench.mk: build and run the engine-vs-Z3-vs-cvc5 benchmark (see bench/README.md).
# From the top level:  make -f bench/bench.mk bench [MODE=release] [BENCH_ARGS="--quick"]
# libz3 is linked into build/$(MODE)/bench/bench_engine only, never into the library or the tool.

MODE ?= release
CC ?= cc
B := build/$(MODE)
BENCH_ARGS ?=

BENCH_CFLAGS := -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE \
  -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter -O2 -g -Iinclude -Isolver
BENCH_LDLIBS := -lz3 -lflint-arb -lflint -lmpfr -lgmp -ljansson -lpthread -lm
ifeq ($(MODE),asan)
  BENCH_CFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer
endif

.PHONY: bench bench-quick bench-build bench-deps FORCE

bench: bench-build
	bench/run.sh --no-build $(BENCH_ARGS)

bench-quick: bench-build
	bench/run.sh --no-build --quick $(BENCH_ARGS)

bench-build: $(B)/bench/bench_engine

# The benchmark alone needs libz3-dev, and the z3 and cvc5 binaries for their columns (all three
# are Debian 12 packages); install what is missing.
BENCH_PACKAGES := libz3-dev z3 cvc5
bench-deps:
	@if ! [ -f /usr/include/z3.h ] || ! command -v z3 >/dev/null 2>&1 || \
	    ! command -v cvc5 >/dev/null 2>&1; then \
	  echo "bench: installing $(BENCH_PACKAGES)"; \
	  SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -q && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q $(BENCH_PACKAGES); \
	fi

# The library is the main Makefile's; let it decide whether it is up to date.
$(B)/libshardproof.a: FORCE
	@$(MAKE) --no-print-directory -f Makefile MODE=$(MODE) $@

$(B)/bench/bench_engine: bench/bench_engine.c $(B)/libshardproof.a | bench-deps
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_CFLAGS) -o $@ $< $(B)/libshardproof.a $(BENCH_LDLIBS)
