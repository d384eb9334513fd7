# tgc: the README's two commands are `make demo` and `make test`.
#   make demo      set up, build, compile the example models and train them
#   make test      set up, build, run every test under ctest
#   make build     set up and build only (binaries in build/bin/)
#   make sanitize  build with ASan/UBSan in build-asan/ and run the tests
#   make cuda-sanitize  the CUDA half on the host (runtime/cuda/simt) under
#                  ASan (build-simt-asan/) and TSan (build-simt-tsan/): the
#                  kernel tests, the cuBLASLt and SimtTest tests, injected
#                  bugs each sanitizer must report, and gpt2-tiny's CUDA step
#   make cuda-curves  GPT-2 124M's generated CUDA (one layer, real widths and
#                  sequence) trained 20 steps on the host against the CPU
#                  executable, fp32 and bf16 (about 10 minutes: not in test)

BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= -G Ninja -DCMAKE_BUILD_TYPE=Release

.PHONY: setup configure build test demo sanitize cuda-sanitize cuda-curves clean

setup:
	@scripts/setup.sh

configure: setup
	@test -f $(BUILD)/build.ninja || cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

build: configure
	cmake --build $(BUILD) -j $(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

demo: build
	scripts/demo.sh $(BUILD)

sanitize: setup
	@test -f build-asan/build.ninja || cmake -S . -B build-asan $(CMAKE_FLAGS) -DTGC_SANITIZE=ON
	cmake --build build-asan -j $(JOBS)
	# Debian's LLVM libraries are not instrumented while the allocator code
	# inlined from their headers is: without allow_user_poisoning=0 ASan
	# reports a false use-after-poison inside MLIRContext's constructor.
	# OpenMPI's own leaks are suppressed (scripts/lsan.supp), ours are not.
	cd build-asan && \
	  ASAN_OPTIONS=allow_user_poisoning=0:fast_unwind_on_malloc=0 \
	  LSAN_OPTIONS=suppressions=$(CURDIR)/scripts/lsan.supp \
	  ctest --output-on-failure -j $(JOBS)

# Runtime-only builds (cmake -S runtime) of the host CUDA half, one per
# sanitizer, with gpt2-tiny's generated .cu as their step to train; every
# test but the NCCL stand-in's (MPI) runs in both. TSan needs one thread per
# OpenMP and OpenBLAS pool: their runtimes are not instrumented.
SIMT_STEP_DIR = $(BUILD)/cuda-sanitize
SIMT_CMAKE = -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTGC_RUNTIME_SIMT=ON \
  -DTGC_SIMT_STEP_CU=$(abspath $(SIMT_STEP_DIR))/gpt2-tiny.cu
SIMT_TESTS = ^(cuda_kernels[.]simt[.]|simt[.])

cuda-sanitize: build
	rm -rf $(SIMT_STEP_DIR)
	$(BUILD)/bin/tgc examples/gpt2-tiny.json --emit=cuda --precision=fp32 -o $(SIMT_STEP_DIR)
	cmake -S runtime -B build-simt-asan $(SIMT_CMAKE) -DTGC_SIMT_SANITIZER=address
	cmake --build build-simt-asan -j $(JOBS) --target tgc_simt_checks
	# The runtime-only project has no top-level ctest file: its tests are
	# in cuda/simt.
	cd build-simt-asan/cuda/simt && start=$$(date +%s) && \
	  ASAN_OPTIONS=halt_on_error=1:detect_leaks=1 \
	  LSAN_OPTIONS=suppressions=$(CURDIR)/scripts/lsan.supp \
	  ctest --output-on-failure -j $(JOBS) -R '$(SIMT_TESTS)' \
	    -E '^simt[.]nccl[.]' && \
	  echo "cuda-sanitize: asan tests took $$(( $$(date +%s) - start )) s"
	cmake -S runtime -B build-simt-tsan $(SIMT_CMAKE) -DTGC_SIMT_SANITIZER=thread
	cmake --build build-simt-tsan -j $(JOBS) --target tgc_simt_checks
	cd build-simt-tsan/cuda/simt && start=$$(date +%s) && \
	  export TSAN_OPTIONS=halt_on_error=1 OMP_NUM_THREADS=1 \
	    OPENBLAS_NUM_THREADS=1 && \
	  ctest --output-on-failure -j $(JOBS) -R '$(SIMT_TESTS)' \
	    -E '^simt[.]nccl[.]' && \
	  echo "cuda-sanitize: tsan tests took $$(( $$(date +%s) - start )) s"

cuda-curves: build
	bench/simt/gpt2-124m-curve.sh $(BUILD)

clean:
	rm -rf $(BUILD) build-asan build-simt-asan build-simt-tsan
