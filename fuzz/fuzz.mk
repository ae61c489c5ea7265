# fuzz/fuzz.mk: libFuzzer harnesses (clang), the differential fuzzer and corpus replay (gcc).
# Called from the top-level Makefile as `$(MAKE) -f fuzz/fuzz.mk <target> MODE=$(MODE)`, from
# the project root.  See fuzz/README.md.
#
#   fuzz        libFuzzer binaries build/fuzz/fuzz_<h> for every fuzz/fuzz_<h>.c (clang-14,
#               ASan+UBSan+fuzzer)
#   fuzz-smoke  diff_fuzz --seed 1 for about a minute, then every seed corpus and regression file
#               through the standalone replayers (gcc, MODE flags, linked with libshardproof.a),
#               and in MODE=release the deep chains of fuzz/regress/deep.txt (about 10 s)
#   fuzz-open   the reproducers of finds not fixed yet (fuzz/regress/open/): expected to fail
#   fuzz-run    run every libFuzzer harness for FUZZ_SECONDS each (working corpora in
#               fuzz/corpus-work/, which git ignores)
#   fuzz-plan-diff        the plan-level differential fuzzer fuzz/diff_plan.py (check against the
#               reference executor `run` on mutated plans) for PLAN_DIFF_CPU seconds of CPU with
#               seed PLAN_DIFF_SEED; finds in fuzz/finds-work/ (git ignores it)
#   fuzz-plan-diff-smoke  its short deterministic run (--smoke: seed 1, 20 mutants)
#   bench       bench/bench.mk's bench target

MODE ?= release
CC ?= cc
CLANG ?= clang-14
B := build/$(MODE)
FZ := $(B)/fuzz
LF := build/fuzz

WARN := -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter -Wno-stringop-overread
CSTD := -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE
INC := -Iinclude -Isolver -Isrc -Ifuzz
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
LDLIBS := -lflint-arb -lflint -lmpfr -lgmp -ljansson -lpthread -lm

# diff_fuzz iterations for about one minute of smoke run (measured on a 2-core VM, see README),
# with a 1 s limit per query so a slow machine stays near that
ifeq ($(MODE),release)
  SMOKE_ITERS ?= 5000
else ifeq ($(MODE),debug)
  SMOKE_ITERS ?= 2500
else
  SMOKE_ITERS ?= 2500
endif
SMOKE_MAX_MS ?= 1000

# Open finds are silenced by these while fuzzing goes on (fuzz-open runs without them).
export UBSAN_OPTIONS ?= suppressions=$(CURDIR)/fuzz/ubsan.supp:print_stacktrace=1:halt_on_error=1
export LSAN_OPTIONS ?= suppressions=$(CURDIR)/fuzz/lsan.supp:print_suppressions=0

SOLVER_SRC := $(sort $(wildcard solver/*.c))
LIB_SRC := $(SOLVER_SRC) $(sort $(filter-out src/main.c,$(wildcard src/*.c src/*/*.c)))
# Every fuzz/fuzz_<h>.c is a harness; these need only solver/ (the others need src/ too).
HARNESSES := $(sort $(patsubst fuzz/fuzz_%.c,%,$(wildcard fuzz/fuzz_*.c)))
ENGINE_HARNESSES := engine expr_parse

# How the gcc binaries get the engine: FUZZ_LINK=lib links build/$(MODE)/libshardproof.a (the
# default, built by the top-level Makefile); FUZZ_LINK=solver compiles solver/*.c here, for when
# the library does not build because some src/ file is in flux (fuzz-smoke falls back to it;
# then only the engine harnesses are replayed).
FUZZ_LINK ?= lib
ifeq ($(FUZZ_LINK),lib)
  ENGINE := $(B)/libshardproof.a
  REPLAYED := $(HARNESSES)
else
  ENGINE := $(SOLVER_SRC:solver/%.c=$(FZ)/solver/%.o)
  REPLAYED := $(ENGINE_HARNESSES)
endif

.PHONY: FORCE
FORCE:
ifeq ($(FUZZ_LINK),lib)
$(B)/libshardproof.a: FORCE
	@$(MAKE) --no-print-directory -f Makefile $@ MODE=$(MODE)
endif

.SECONDARY:
.PHONY: fuzz fuzz-smoke fuzz-smoke-run fuzz-tools fuzz-open fuzz-run fuzz-plan-diff fuzz-plan-diff-smoke bench

# ---- libFuzzer (clang) ---------------------------------------------------------------------------

# pointer-overflow and nonnull-attribute stay recoverable so fuzz/ubsan.supp can silence an
# open find (see there); every other UBSan check aborts, and these two abort too unless
# suppressed, because UBSAN_OPTIONS must say halt_on_error=1 (without it a run only prints them:
# the fuzz_plan run of 2026-11-29 evening printed a NULL memcpy and went on, fuzz/README.md).
LF_FLAGS := $(CSTD) -O1 -g -DSP_DEBUG -fno-omit-frame-pointer -fno-sanitize-recover=undefined \
            -fsanitize-recover=pointer-overflow,nonnull-attribute $(INC) -MMD -MP
LF_SAN := -fsanitize=fuzzer-no-link,address,undefined
LF_SOLVER_OBJ := $(SOLVER_SRC:%.c=$(LF)/lib/%.o)
LF_LIB_OBJ := $(LIB_SRC:%.c=$(LF)/lib/%.o)

fuzz: $(HARNESSES:%=$(LF)/fuzz_%)
	@echo "fuzz: built $(HARNESSES:%=$(LF)/fuzz_%); see fuzz/README.md to run them"

$(LF)/lib/%.o: %.c
	@mkdir -p $(dir $@)
	$(CLANG) $(LF_FLAGS) $(LF_SAN) -c $< -o $@

$(LF)/obj/%.o: fuzz/%.c
	@mkdir -p $(dir $@)
	$(CLANG) $(LF_FLAGS) $(LF_SAN) -Wall -Wextra -Werror -Wno-unused-parameter -c $< -o $@

$(LF)/libsolver.a: $(LF_SOLVER_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(LF)/libshardproof.a: $(LF_LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(LF)/fuzz_engine $(LF)/fuzz_expr_parse: $(LF)/fuzz_%: $(LF)/obj/fuzz_%.o $(LF)/obj/exprgen.o $(LF)/libsolver.a
	$(CLANG) -fsanitize=fuzzer,address,undefined -o $@ $^ $(LDLIBS)

$(LF)/fuzz_%: $(LF)/obj/fuzz_%.o $(LF)/libshardproof.a
	$(CLANG) -fsanitize=fuzzer,address,undefined -o $@ $^ $(LDLIBS)

# ---- gcc: diff_fuzz and the replayers --------------------------------------------------------------

CFLAGS_FZ := $(CSTD) $(WARN) $(OPT) $(INC) -MMD -MP

$(FZ)/solver/%.o: solver/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) -Wall $(OPT) $(INC) -MMD -MP -c $< -o $@

$(FZ)/obj/%.o: fuzz/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_FZ) -c $< -o $@

$(FZ)/diff_fuzz: $(FZ)/obj/diff_fuzz.o $(FZ)/obj/exprgen.o $(ENGINE)
	$(CC) $(LDASAN) -o $@ $^ $(LDLIBS)

$(FZ)/replay_%: $(FZ)/obj/replay.o $(FZ)/obj/fuzz_%.o $(FZ)/obj/exprgen.o $(ENGINE)
	$(CC) $(LDASAN) -o $@ $^ $(LDLIBS)

fuzz-tools: $(FZ)/diff_fuzz $(REPLAYED:%=$(FZ)/replay_%)

# The library first (through the top-level Makefile); if it does not build, the solver sources.
fuzz-smoke:
	@if $(MAKE) --no-print-directory -f Makefile $(B)/libshardproof.a MODE=$(MODE); then \
	  $(MAKE) --no-print-directory -f fuzz/fuzz.mk fuzz-smoke-run MODE=$(MODE) FUZZ_LINK=lib; \
	else \
	  echo "fuzz: $(B)/libshardproof.a did not build; compiling solver/*.c directly"; \
	  $(MAKE) --no-print-directory -f fuzz/fuzz.mk fuzz-smoke-run MODE=$(MODE) FUZZ_LINK=solver; \
	fi

fuzz-smoke-run: fuzz-tools
	$(FZ)/diff_fuzz --seed 1 --iters $(SMOKE_ITERS) --max-ms $(SMOKE_MAX_MS)
	$(FZ)/diff_fuzz --replay $(sort $(wildcard fuzz/regress/pairs/*.txt))
	@if [ "$(MODE)" = release ]; then grep -v '^#' fuzz/regress/deep.txt | while read n op ms flag; do \
	  echo "$(FZ)/diff_fuzz --deep $$n --deep-op $$op --max-ms $$ms $$flag"; \
	  timeout 300 $(FZ)/diff_fuzz --deep $$n --deep-op $$op --max-ms $$ms $$flag || exit 1; done; \
	else echo "fuzz-smoke: fuzz/regress/deep.txt runs in MODE=release only"; fi
	@for h in $(REPLAYED); do \
	  dirs=$$(for d in fuzz/corpus/$$h fuzz/regress/$$h; do [ -d $$d ] && echo $$d; done); \
	  [ -z "$$dirs" ] && continue; \
	  echo "$(FZ)/replay_$$h $$dirs"; \
	  $(FZ)/replay_$$h $$dirs || exit 1; \
	done
	@echo "fuzz-smoke: passed"

# Reproducers of open finds: each is expected to fail until the engine is fixed; then it moves
# to fuzz/regress/<harness>/ (see fuzz/README.md).  Runs without the suppression files and the
# harness exemptions; harness inputs also go through the clang binaries when `make fuzz` built
# them (UBSan's NULL + 0 checks exist only in clang).  Deep chains run with the release
# diff_fuzz when it exists (under ASan the time limit stops them before the stack overflows).
fuzz-open: fuzz-tools
	@export LSAN_OPTIONS= UBSAN_OPTIONS=halt_on_error=1 SP_FUZZ_STRICT=1; \
	for f in $(sort $(wildcard fuzz/regress/open/pairs/*.txt)); do \
	  if $(FZ)/diff_fuzz --replay $$f >/dev/null 2>&1; then echo "fixed: $$f"; else echo "open:  $$f"; fi; done; \
	for h in $(REPLAYED); do for f in $$(ls fuzz/regress/open/$$h/* 2>/dev/null); do \
	  if timeout 120 $(FZ)/replay_$$h $$f >/dev/null 2>&1 && \
	     { ! [ -x $(LF)/fuzz_$$h ] || $(LF)/fuzz_$$h -timeout=20 $$f >/dev/null 2>&1; }; then \
	    echo "fixed: $$f"; else echo "open:  $$f"; fi; done; done; \
	df=$(FZ)/diff_fuzz; [ -x build/release/fuzz/diff_fuzz ] && df=build/release/fuzz/diff_fuzz; \
	grep -v '^#' fuzz/regress/open/deep.txt 2>/dev/null | while read n op ms flag; do \
	  if timeout 300 $$df --deep $$n --deep-op $$op --max-ms $$ms $$flag >/dev/null 2>&1; then \
	    echo "fixed: deep $$op $$n"; else echo "open:  deep $$op $$n"; fi; done
	@[ "$(MODE)" = asan ] || echo "fuzz-open: MODE=$(MODE) has no sanitizers: leak and UB finds show as fixed; use MODE=asan"

# ---- long runs -------------------------------------------------------------------------------------

FUZZ_SECONDS ?= 600
fuzz-run: fuzz
	@for h in $(HARNESSES); do \
	  mkdir -p fuzz/corpus-work/$$h fuzz/corpus-work/$$h-crashes; \
	  echo "== fuzz_$$h for $(FUZZ_SECONDS) s"; \
	  seeds=$$([ -d fuzz/corpus/$$h ] && echo fuzz/corpus/$$h); \
	  $(LF)/fuzz_$$h -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=4096 \
	    -artifact_prefix=fuzz/corpus-work/$$h-crashes/ -print_final_stats=1 \
	    fuzz/corpus-work/$$h $$seeds || exit 1; \
	done

# ---- the plan-level differential fuzzer (Python 3 stdlib; see fuzz/README.md) ----------------------

PYTHON ?= /usr/bin/python3
PLAN_DIFF_CPU ?= 3600
PLAN_DIFF_SEED ?= 100
fuzz-plan-diff:
	@$(MAKE) --no-print-directory -f Makefile $(B)/shardproof MODE=$(MODE)
	$(PYTHON) fuzz/diff_plan.py --bin $(B)/shardproof --seed $(PLAN_DIFF_SEED) --cpu-seconds $(PLAN_DIFF_CPU) --verbose

fuzz-plan-diff-smoke:
	@$(MAKE) --no-print-directory -f Makefile $(B)/shardproof MODE=$(MODE)
	$(PYTHON) fuzz/diff_plan.py --bin $(B)/shardproof --smoke --out $(B)/fuzz/plan-diff-smoke

bench:
	@if [ -f bench/bench.mk ]; then $(MAKE) -f bench/bench.mk bench MODE=$(MODE); \
	else echo "bench: bench/bench.mk does not exist yet"; exit 1; fi

-include $(wildcard $(LF)/lib/solver/*.d $(LF)/lib/src/*.d $(LF)/obj/*.d $(FZ)/obj/*.d $(FZ)/solver/*.d)
