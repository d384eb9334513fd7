# tgc: the README's two commands are `make demo` and `make test`.
#   make demo      set up, build, compile the example models and train them
#   make test      set up, build, run every test under ctest
#   make build     set up and build only (binaries in build/bin/)
#   make sanitize  build with ASan/UBSan in build-asan/ and run the tests

BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= -G Ninja -DCMAKE_BUILD_TYPE=Release

.PHONY: setup configure build test demo sanitize clean

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

clean:
	rm -rf $(BUILD) build-asan
