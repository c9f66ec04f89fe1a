# Seedance developer entry points. `make demo` and `make test` work on a fresh Debian bookworm
# machine: both install missing packages first (tools/install_deps.sh).
#
#   deps    install missing Debian packages
#   spec-tools  the npm validators of docs/openapi.yaml (Redocly, Prism) into tools/spec/
#   model-tools onnxruntime-node, the reference of the model fixtures, into tools/onnxruntime/
#   build   Release build in build/ (gcc, -Werror)
#   demo    deps + build, then `seedance simulate` with its defaults
#   asan    ASan+UBSan build in build-asan/ (clang -O1 -g1, -Werror, -Wthread-safety, no
#           benchmarks): clang compiles it in about 60% of gcc's time on the 2-core CI machine
#           and checks the lock discipline as it goes; third-party headers (GoogleTest, json,
#           Abseil) are precompiled once for the tests and once for the libraries
#           (cmake/SeedancePch.cmake)
#   test    deps + asan, every test under the sanitizers, then each fuzz target for 30 s (the
#           release build is `make build`; all use -Wall -Wextra -Werror)
#   tsan    ThreadSanitizer build in build-tsan/ of the TSAN_TESTS only, and a run of them
#   fuzz    libFuzzer build in build-fuzz/ (clang) and a FUZZ_SECONDS run of each FUZZ_TARGETS,
#           NPROC of them at a time (tools/run_fuzz.sh)
#   release tools/release.sh: source archive, Release build from it, .deb packages, lintian,
#           SHA256SUMS into dist/ (signed with minisign when RELEASE_KEY=SECKEY is given)
#   release-test  tools/release/package_test.py: two release builds byte-identical, lintian, the
#           .deb on a debootstrapped bookworm, the container image (~35 min; not in `make test`)
#   bench   build, then run every benchmark binary in build/bench/
#   format  clang-format -i over src/ include/ bench/
#   clean   remove build/ build-asan/ build-fuzz/ build-tsan/

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := build
# Prerequisites such as `test: deps build asan` are steps in order, never concurrent jobs.
.NOTPARALLEL:

NPROC := $(shell nproc 2>/dev/null || echo 2)

BUILD_DIR := build
ASAN_DIR := build-asan
FUZZ_DIR := build-fuzz
TSAN_DIR := build-tsan
# The tests whose subject is concurrency, built and run under ThreadSanitizer (which cannot be
# combined with ASan): only their targets are built, so the step stays short. base_test holds
# base::ParallelFor's; api_client_test the asynchronous client's (one loop thread, callers on
# any thread). -Wno-tsan: gcc
# warns that TSan cannot see std::atomic_thread_fence, which Boost.Asio's executor uses (the
# asynchronous client's loop; api_client_test runs clean under it).
TSAN_TESTS ?= slice_manager_test base_test api_client_test
SEEDANCE := $(BUILD_DIR)/src/cli/seedance

SAN_ENV := ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# The sanitizer and fuzz builds compile at -O1 with line tables only (-g1): half the compile
# time of -O2 -g on the 2-core CI machine (text_test.cc: 16 s against 37 s), still with file
# and line in every sanitizer report, and the optimisation level ASan's own docs suggest.
SAN_OPT := -O1 -g1

FUZZ_SECONDS ?= 30
# libFuzzer targets built in the fuzz build (SEEDANCE_BUILD_FUZZ) and run NPROC at a time, each on
# one core for FUZZ_SECONDS; each keeps its seed corpus in tests/fuzz_corpus/TARGET/.
FUZZ_TARGETS ?= csv_fuzz ntp_fuzz profile_csv_fuzz profile_fuzz request_trace_fuzz options_fuzz \
  descriptor_fuzz prices_fuzz prometheus_fuzz api_fuzz policy_fuzz k8s_fuzz slurm_fuzz model_fuzz \
  cache_fuzz federation_fuzz
# Every library in the fuzz build gets coverage instrumentation and the sanitizers; the csv_fuzz
# target itself adds -fsanitize=fuzzer. Clang warns about things gcc accepts, and the warning
# policy (-Werror) is enforced by the gcc builds, so here warnings stay visible but never fail the
# build: `-Xclang -Wno-error` reaches the compiler after the driver's -Werror and so wins.
FUZZ_CXXFLAGS := -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all \
	-fno-omit-frame-pointer -Xclang -Wno-error -Wno-unused-command-line-argument

CLANG_FORMAT ?= $(shell command -v clang-format || command -v clang-format-14)
BENCH_ARGS ?=

.PHONY: deps spec-tools model-tools build demo asan test tsan fuzz bench format clean release \
  release-test

deps:
	bash tools/install_deps.sh

spec-tools:
	bash tools/install_spec_tools.sh

# onnxruntime-node, the independent reference of seedance_model's fixtures (issue 37).
model-tools:
	bash tools/install_onnxruntime.sh

build:
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release
	cmake --build $(BUILD_DIR) -j$(NPROC)

demo: deps build
	./$(SEEDANCE) simulate

asan:
	CC=clang CXX=clang++ cmake -S . -B $(ASAN_DIR) -G Ninja -DCMAKE_CXX_COMPILER=clang++ \
	  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$(SAN_OPT)" -DSEEDANCE_SANITIZE=ON -DSEEDANCE_BUILD_BENCH=OFF
	$(SAN_ENV) cmake --build $(ASAN_DIR) -j$(NPROC)

test: deps spec-tools model-tools asan
	@echo "== make test: ctest under ASan+UBSan ($(ASAN_DIR)), from $$(date -u +%T) UTC"
	$(SAN_ENV) ctest --test-dir $(ASAN_DIR) --output-on-failure --no-tests=error -j2 -LE package \
	  2>&1 | tee $(ASAN_DIR)/ctest.log
	@echo "== make test: tsan from $$(date -u +%T) UTC"
	@$(MAKE) --no-print-directory tsan
	@echo "== make test: fuzz from $$(date -u +%T) UTC"
	@$(MAKE) --no-print-directory fuzz
	@echo "== make test: summary ($$(date -u +%T) UTC)"
	@echo "ctest: $$(grep -E '^[0-9]+% tests passed' $(ASAN_DIR)/ctest.log)"
	@echo "fuzz:"; cat $(FUZZ_DIR)/fuzz.result

tsan:
	cmake -S . -B $(TSAN_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$(SAN_OPT)" "-DCMAKE_CXX_FLAGS=-fsanitize=thread -Wno-tsan" \
	  "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread" -DSEEDANCE_BUILD_BENCH=OFF
	cmake --build $(TSAN_DIR) --target $(TSAN_TESTS) -j$(NPROC)
	@echo "== make tsan: $(TSAN_TESTS) under ThreadSanitizer"
	@for t in $(TSAN_TESTS); do \
	  bin=$$(find $(TSAN_DIR) -type f -name $$t -perm -u+x | head -n 1); \
	  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 "$$bin" --gtest_brief=1 \
	    || { echo "tsan: $$t FAILED"; exit 1; }; \
	done

fuzz:
	CC=clang CXX=clang++ cmake -S . -B $(FUZZ_DIR) -G Ninja -DCMAKE_CXX_COMPILER=clang++ \
	  -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$(SAN_OPT)" \
	  -DSEEDANCE_BUILD_FUZZ=ON -DSEEDANCE_BUILD_TESTS=OFF \
	  -DSEEDANCE_BUILD_BENCH=OFF "-DCMAKE_CXX_FLAGS=$(FUZZ_CXXFLAGS)"
	cmake --build $(FUZZ_DIR) --target $(FUZZ_TARGETS) -j$(NPROC)
	$(SAN_ENV) bash tools/run_fuzz.sh $(FUZZ_DIR) $(FUZZ_SECONDS) $(NPROC) $(FUZZ_TARGETS)

release: deps
	bash tools/release.sh --out dist $(if $(RELEASE_KEY),--key $(RELEASE_KEY),)

release-test: deps
	bash tools/install_deps.sh release
	/usr/bin/python3 tools/release/package_test.py

bench: build
	@found=0; \
	for b in $(BUILD_DIR)/bench/*; do \
	  if [ -f "$$b" ] && [ -x "$$b" ]; then found=1; echo "== bench: $$b"; "$$b" $(BENCH_ARGS); fi; \
	done; \
	if [ "$$found" = 0 ]; then echo "bench: no benchmark binaries in $(BUILD_DIR)/bench/"; fi

format:
	@if [ -z "$(CLANG_FORMAT)" ]; then \
	  echo "format: clang-format not found (apt-get install clang-format)"; exit 1; \
	fi
	find src include bench -type f \( -name '*.h' -o -name '*.cc' \) -print0 \
	  | xargs -0 -r $(CLANG_FORMAT) -i

clean:
	rm -rf $(BUILD_DIR) $(ASAN_DIR) $(FUZZ_DIR) $(TSAN_DIR)
