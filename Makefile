# evsparse: `make demo` builds and runs the quickstart; `make test` runs every test that can
# run on this machine. Tools the build needs are found on the machine or installed into
# .tools/ from PyPI (nothing needs root).

VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
MAJOR   := $(word 1,$(subst ., ,$(VERSION)))
MINOR   := $(word 2,$(subst ., ,$(VERSION)))
PREFIX  ?= /usr/local
# Libraries go to $(PREFIX)/$(LIBSUBDIR): lib, or lib/<multiarch triplet> for Debian packages.
LIBSUBDIR ?= lib
LIBDIR  := $(PREFIX)/$(LIBSUBDIR)
# The way back from the libdir to the prefix (the CMake package finds the headers through it).
LIB_TO_PREFIX := $(subst $(eval) ,/,$(patsubst %,..,$(subst /, ,$(LIBSUBDIR))))

BUILD   := $(CURDIR)/.build
TARGET  := $(CURDIR)/target/release
STAGE   := $(BUILD)/lib
CC      ?= cc
CXX     ?= c++
PYTHON  ?= python3
# What Rust's staticlib needs from the system (rustc --print native-static-libs).
STATIC_LIBS := -lgcc_s -lutil -lrt -lpthread -lm -ldl
WARN    := -Wall -Wextra -Werror -pedantic
CFLAGS_TEST   := -std=c11 $(WARN) -O1 -g -Iinclude
CXXFLAGS_TEST := -std=c++17 $(WARN) -O1 -g -Iinclude

# nvcc: found on the machine (NVCC, CUDA_HOME, CUDA_PATH, PATH) or installed into .tools/ from
# these pinned wheels (SPEC §7). build.rs finds it in either place; EVS_REQUIRE_CUDA makes a
# missing nvcc an error here instead of a CPU-only build.
CUDA_WHEELS := nvidia-cuda-nvcc==13.0.88 nvidia-nvvm==13.0.88 nvidia-cuda-crt==13.0.88 \
               nvidia-cuda-runtime==13.0.96 nvidia-cuda-cccl==13.0.85
NVCC_ON_MACHINE := $(or $(NVCC),$(shell command -v nvcc 2>/dev/null),$(if $(CUDA_HOME),$(wildcard $(CUDA_HOME)/bin/nvcc)),$(if $(CUDA_PATH),$(wildcard $(CUDA_PATH)/bin/nvcc)))
ifeq ($(NVCC_ON_MACHINE),)
NVCC_STAMP := $(CURDIR)/.tools/cuda-13.0.stamp
endif
export EVS_REQUIRE_CUDA := 1

CMAKE_PIN := cmake==3.31.6
CMAKE := $(shell command -v cmake 2>/dev/null)
ifeq ($(CMAKE),)
CMAKE := $(CURDIR)/.tools/venv/bin/cmake
endif

.PHONY: all build header demo test cargo-test ffi-tests check-header check-symbols kernel-report \
        test-c test-cpp test-python test-binding test-valgrind test-tsan test-install test-fuzz fuzz install uninstall bench-cpu \
        gpu-bundle gpu-check plot check-plot package test-package docs check-docs clean

all: build

build: $(NVCC_STAMP)
	cargo build --release
	@mkdir -p $(STAGE)
	ln -sf $(TARGET)/libevsparse.so $(STAGE)/libevsparse.so.$(MAJOR)
	ln -sf libevsparse.so.$(MAJOR) $(STAGE)/libevsparse.so

# Regenerates the committed header from the Rust sources.
header: build
	cp $$(ls -t target/release/build/evsparse-*/out/evsparse.h | head -n 1) include/evsparse.h

$(CURDIR)/.tools/venv/bin/python:
	$(PYTHON) -m venv $(CURDIR)/.tools/venv

$(CURDIR)/.tools/venv/bin/cmake: $(CURDIR)/.tools/venv/bin/python
	$(CURDIR)/.tools/venv/bin/pip install --quiet $(CMAKE_PIN)

$(CURDIR)/.tools/cuda-13.0.stamp: $(CURDIR)/.tools/venv/bin/python
	$(CURDIR)/.tools/venv/bin/pip install --quiet $(CUDA_WHEELS)
	touch $@

# The Python binding's tests (python/tests) run on numpy with pytest.
PYTEST_PINS := numpy==2.3.4 pytest==8.4.2
$(CURDIR)/.tools/pytest.stamp: $(CURDIR)/.tools/venv/bin/python
	$(CURDIR)/.tools/venv/bin/pip install --quiet $(PYTEST_PINS)
	touch $@

MATPLOTLIB_PIN := matplotlib==3.9.2
$(CURDIR)/.tools/matplotlib.stamp: $(CURDIR)/.tools/venv/bin/python
	$(CURDIR)/.tools/venv/bin/pip install --quiet $(MATPLOTLIB_PIN)
	touch $@

# The chart of a benchmark table (bench/plot.py): RESULTS's newest by default, or RESULTS=file
# (a committed markdown table or the bench.json beside a bench table), into bench/results.png.
RESULTS ?= bench/RESULTS.md
plot: $(CURDIR)/.tools/matplotlib.stamp
	$(CURDIR)/.tools/venv/bin/python bench/plot.py $(RESULTS) --out bench/results.png

# ---------------------------------------------------------------- install
install: build
	install -d $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(LIBDIR)/cmake/EvSparse $(DESTDIR)$(PREFIX)/include
	install -m 755 $(TARGET)/libevsparse.so $(DESTDIR)$(LIBDIR)/libevsparse.so.$(VERSION)
	ln -sf libevsparse.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libevsparse.so.$(MAJOR)
	ln -sf libevsparse.so.$(MAJOR) $(DESTDIR)$(LIBDIR)/libevsparse.so
	install -m 644 $(TARGET)/libevsparse.a $(DESTDIR)$(LIBDIR)/libevsparse.a
	install -m 644 include/evsparse.h $(DESTDIR)$(PREFIX)/include/evsparse.h
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBSUBDIR@|$(LIBSUBDIR)|' -e 's|@VERSION@|$(VERSION)|' \
	    -e 's|@STATIC_LIBS@|$(STATIC_LIBS)|' cmake/evsparse.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/evsparse.pc
	sed -e 's|@VERSION@|$(VERSION)|g' -e 's|@MAJOR@|$(MAJOR)|g' -e 's|@LIB_TO_PREFIX@|$(LIB_TO_PREFIX)|g' \
	    -e 's|@STATIC_LIBS_CMAKE@|$(subst -l,,$(subst $() ,;,$(STATIC_LIBS)))|' \
	    cmake/EvSparseConfig.cmake.in > $(DESTDIR)$(LIBDIR)/cmake/EvSparse/EvSparseConfig.cmake
	sed -e 's|@VERSION@|$(VERSION)|g' -e 's|@MAJOR@|$(MAJOR)|g' -e 's|@MINOR@|$(MINOR)|g' \
	    cmake/EvSparseConfigVersion.cmake.in > $(DESTDIR)$(LIBDIR)/cmake/EvSparse/EvSparseConfigVersion.cmake

uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/libevsparse.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libevsparse.so.$(MAJOR) \
	      $(DESTDIR)$(LIBDIR)/libevsparse.so $(DESTDIR)$(LIBDIR)/libevsparse.a \
	      $(DESTDIR)$(PREFIX)/include/evsparse.h $(DESTDIR)$(LIBDIR)/pkgconfig/evsparse.pc \
	      $(DESTDIR)$(LIBDIR)/cmake/EvSparse/EvSparseConfig.cmake \
	      $(DESTDIR)$(LIBDIR)/cmake/EvSparse/EvSparseConfigVersion.cmake
	-rmdir $(DESTDIR)$(LIBDIR)/cmake/EvSparse 2>/dev/null

# ---------------------------------------------------------------- Debian packages
# `make package`: libevsparse$(MAJOR) and libevsparse-dev in $(DEB_DIR)/out (packaging/build-debs).
# `make test-package` (root, as in CI): lintian, dpkg -i, a consumer through find_package and
# pkg-config, dpkg --purge (packaging/test-debs). Set DEB_MAINTAINER when building for others.
DEB_DIR        := $(BUILD)/deb
MULTIARCH      := $(shell $(CC) -print-multiarch 2>/dev/null)
DEB_MAINTAINER ?= evsparse developers <evsparse@users.noreply.github.com>

package: build
	rm -rf $(DEB_DIR)/stage
	$(MAKE) --no-print-directory install DESTDIR=$(DEB_DIR)/stage PREFIX=/usr LIBSUBDIR=lib/$(MULTIARCH)
	packaging/build-debs $(DEB_DIR)/stage $(DEB_DIR)/out $(VERSION) $(MAJOR) $(MULTIARCH) "$(DEB_MAINTAINER)"

test-package: package $(CMAKE)
	packaging/test-debs $(DEB_DIR)/out $(DEB_DIR)/test $(CMAKE) $(MULTIARCH)

# ---------------------------------------------------------------- demo
DEMO_PREFIX := $(BUILD)/demo-prefix

demo: $(CMAKE)
	$(MAKE) install PREFIX=$(DEMO_PREFIX)
	$(CMAKE) -S examples -B $(BUILD)/examples -DCMAKE_PREFIX_PATH=$(DEMO_PREFIX) -DCMAKE_BUILD_TYPE=Release
	$(CMAKE) --build $(BUILD)/examples
	$(BUILD)/examples/quickstart

# ---------------------------------------------------------------- tests
test: cargo-test ffi-tests
	@echo "make test: all suites passed"

cargo-test: $(NVCC_STAMP)
	cargo test --release

ffi-tests: build kernel-report check-header check-docs check-symbols test-c test-cpp test-python test-binding test-valgrind test-install \
           test-fuzz \
           check-plot

# bench/plot.py reads the committed results (the chart itself needs matplotlib: make plot).
check-plot:
	$(PYTHON) bench/plot.py --check

# ptxas' resources for every kernel of the build (registers, spills, stack, shared memory).
kernel-report: build
	@report=$$(ls -t $(TARGET)/build/evsparse-*/out/ptxas-report.txt | head -n 1); \
	awk -f kernels/ptxas-report.awk "$$report"

check-header:
	$(CC) -std=c11 $(WARN) -fsyntax-only -x c include/evsparse.h
	$(CXX) -std=c++17 $(WARN) -fsyntax-only -x c++ include/evsparse.h
	@echo "header compiles as C11 and C++17 with $(WARN)"

# Every function of the header documented for the API reference (docs/check_reference.py).
check-docs:
	$(PYTHON) docs/check_reference.py

# `make docs`: the API reference, rendered by doxygen from the header's comments (one page per
# handle type and per operation, docs/groups.dox; the README as the main page) into
# .build/docs/html; any doxygen warning fails it. doxygen is Debian's package: found on PATH, or
# installed with apt-get when running as root (as in CI).
DOCS_OUT := $(BUILD)/docs
docs: check-docs
	@command -v doxygen >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq doxygen >/dev/null; } || \
	    { echo "make docs needs doxygen: apt-get install doxygen"; exit 1; }
	rm -rf $(DOCS_OUT) && mkdir -p $(DOCS_OUT)
	EVS_VERSION=$(VERSION) EVS_DOCS_OUT=$(DOCS_OUT) doxygen docs/Doxyfile
	@echo "API reference: $(DOCS_OUT)/html/index.html ($$(ls $(DOCS_OUT)/html/group__*.html | wc -l) pages of handles and operations)"

check-symbols:
	@bad=$$(nm -D --defined-only $(TARGET)/libevsparse.so | awk '{print $$3}' | grep -v '^evs_' || true); \
	if [ -n "$$bad" ]; then echo "non-evs_ symbols exported:"; echo "$$bad"; exit 1; fi
	@readelf -d $(TARGET)/libevsparse.so | grep -q 'SONAME.*\[libevsparse.so.$(MAJOR)\]' || { echo "SONAME is not libevsparse.so.$(MAJOR)"; exit 1; }
	@echo "exports: $$(nm -D --defined-only $(TARGET)/libevsparse.so | grep -c ' evs_') evs_* symbols and nothing else; SONAME libevsparse.so.$(MAJOR)"

$(BUILD)/test_c_shared: ffi_tests/test_c.c ffi_tests/testutil.h include/evsparse.h build
	$(CC) $(CFLAGS_TEST) $< -o $@ -L$(STAGE) -levsparse -Wl,-rpath,$(STAGE) -lm

$(BUILD)/test_c_static: ffi_tests/test_c.c ffi_tests/testutil.h include/evsparse.h build
	$(CC) $(CFLAGS_TEST) $< -o $@ $(TARGET)/libevsparse.a $(STATIC_LIBS)

$(BUILD)/test_cpp_shared: ffi_tests/test_cpp.cpp include/evsparse.h build
	$(CXX) $(CXXFLAGS_TEST) $< -o $@ -L$(STAGE) -levsparse -Wl,-rpath,$(STAGE)

$(BUILD)/test_cpp_static: ffi_tests/test_cpp.cpp include/evsparse.h build
	$(CXX) $(CXXFLAGS_TEST) $< -o $@ $(TARGET)/libevsparse.a $(STATIC_LIBS)

test-c: $(BUILD)/test_c_shared $(BUILD)/test_c_static
	$(BUILD)/test_c_shared
	$(BUILD)/test_c_static

$(BUILD)/fuzz: ffi_tests/fuzz.c include/evsparse.h build
	$(CC) $(CFLAGS_TEST) $< -o $@ -L$(STAGE) -levsparse -Wl,-rpath,$(STAGE) -lm

# Seeded random spmv/spmm programs, plans against the reference (ffi_tests/fuzz.c): fixed
# seeds, then a fresh one (printed, to replay a failure with `.build/fuzz SECONDS SEED`).
# `make fuzz SECONDS=600` runs the fresh seed longer.
FUZZ_SEEDS := 1 2 3
SECONDS ?= 5
test-fuzz: $(BUILD)/fuzz
	for seed in $(FUZZ_SEEDS); do $(BUILD)/fuzz 2 $$seed || exit 1; done
	$(BUILD)/fuzz $(SECONDS)

fuzz: test-fuzz

test-cpp: $(BUILD)/test_cpp_shared $(BUILD)/test_cpp_static
	$(BUILD)/test_cpp_shared
	$(BUILD)/test_cpp_static

test-python: build
	EVS_LIBRARY=$(STAGE)/libevsparse.so $(PYTHON) ffi_tests/test_ctypes.py

# The Python binding (python/evsparse) on the CPU with numpy, from the source tree.
test-binding: build $(CURDIR)/.tools/pytest.stamp
	EVS_LIBRARY=$(STAGE)/libevsparse.so PYTHONPATH=$(CURDIR)/python $(CURDIR)/.tools/venv/bin/python -m pytest -q \
	    -p no:cacheprovider python/tests

test-valgrind: $(BUILD)/test_c_shared
	EVS_NUM_THREADS=2 valgrind --quiet --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
	    --show-leak-kinds=definite $(BUILD)/test_c_shared --quick
	@echo "valgrind: zero errors, zero definite leaks"

# ThreadSanitizer over tests/threads.rs on the CPU (8 threads x 1,000 calls, own streams and one
# shared stream): needs a nightly toolchain with rust-src (`rustup component add rust-src
# --toolchain nightly`), so it is not part of `make test`. A report fails it (TSan's exit code).
test-tsan:
	RUSTFLAGS="-Zsanitizer=thread" CARGO_TARGET_DIR=$(CURDIR)/target/tsan cargo +nightly test -Zbuild-std \
	    --target $$(rustc -vV | sed -n 's/^host: //p') --release --test threads

# Installs into a scratch prefix, builds the C suite through find_package and through
# pkg-config against it, runs both, then uninstalls and checks nothing is left.
INSTALL_TEST := $(BUILD)/install-test
test-install: $(CMAKE) $(CURDIR)/.tools/pytest.stamp
	rm -rf $(INSTALL_TEST)
	$(MAKE) --no-print-directory install PREFIX=$(INSTALL_TEST)/prefix
	$(CMAKE) -S ffi_tests/consumer -B $(INSTALL_TEST)/cmake -DCMAKE_PREFIX_PATH=$(INSTALL_TEST)/prefix -DCMAKE_BUILD_TYPE=Debug
	$(CMAKE) --build $(INSTALL_TEST)/cmake
	$(INSTALL_TEST)/cmake/test_c_cmake_shared --quick
	$(INSTALL_TEST)/cmake/test_c_cmake_static --quick
	PKG_CONFIG_PATH=$(INSTALL_TEST)/prefix/lib/pkgconfig sh -c '$(CC) $(CFLAGS_TEST) ffi_tests/test_c.c -o $(INSTALL_TEST)/test_c_pkgconfig \
	    $$(pkg-config --cflags evsparse) $$(pkg-config --libs evsparse) -Wl,-rpath,$(INSTALL_TEST)/prefix/lib -lm'
	$(INSTALL_TEST)/test_c_pkgconfig --quick
	PKG_CONFIG_PATH=$(INSTALL_TEST)/prefix/lib/pkgconfig sh -c '$(CC) $(CFLAGS_TEST) ffi_tests/test_c.c -o $(INSTALL_TEST)/test_c_pkgconfig_static \
	    $$(pkg-config --cflags evsparse) $(INSTALL_TEST)/prefix/lib/libevsparse.a $$(pkg-config --static --libs-only-l evsparse | sed "s/-levsparse//") -lm'
	$(INSTALL_TEST)/test_c_pkgconfig_static --quick
	@# the binding as a user installs it (pip install ./python), finding the installed library
	$(CURDIR)/.tools/venv/bin/pip install --quiet --target $(INSTALL_TEST)/site ./python
	cd $(INSTALL_TEST) && env -u EVS_LIBRARY LD_LIBRARY_PATH=$(INSTALL_TEST)/prefix/lib PYTHONPATH=$(INSTALL_TEST)/site \
	    $(CURDIR)/.tools/venv/bin/python -c 'import evsparse; assert evsparse.__file__.startswith("$(INSTALL_TEST)/site"); \
	    print("installed binding", evsparse.version(), "on", evsparse.Context("cpu"))' && \
	    env -u EVS_LIBRARY LD_LIBRARY_PATH=$(INSTALL_TEST)/prefix/lib PYTHONPATH=$(INSTALL_TEST)/site \
	    $(CURDIR)/.tools/venv/bin/python -m pytest -q -p no:cacheprovider $(CURDIR)/python/tests
	$(MAKE) --no-print-directory uninstall PREFIX=$(INSTALL_TEST)/prefix
	@left=$$(find $(INSTALL_TEST)/prefix -type f -o -type l); \
	if [ -n "$$left" ]; then echo "uninstall left files:"; echo "$$left"; exit 1; fi
	@echo "install/uninstall, find_package, pkg-config and pip install ./python: passed"

# The CPU bench: products beside scipy.sparse and torch (installed into .tools/bench, pinned, if
# missing), then the per-call cost of a simulator step from C; one thread, then all cores.
BENCH_PY   := $(CURDIR)/.tools/bench/bin/python
BENCH_PINS := numpy==2.3.4 scipy==1.16.3 torch==2.9.1

$(BENCH_PY):
	$(PYTHON) -m venv $(CURDIR)/.tools/bench
	$(CURDIR)/.tools/bench/bin/pip install --quiet $(BENCH_PINS)

bench-cpu: build $(BENCH_PY)
	$(CC) -std=c11 -O2 -Iinclude bench/cpu_step.c -o $(BUILD)/cpu_step -L$(STAGE) -levsparse -Wl,-rpath,$(STAGE)
	EVS_LIBRARY=$(STAGE)/libevsparse.so $(BENCH_PY) bench/cpu.py
	@echo "| step | threads | plan | µs per call |"
	@echo "|---|---|---|---|"
	@EVS_NUM_THREADS=1 $(BUILD)/cpu_step
	@$(BUILD)/cpu_step

# ---------------------------------------------------------------- GPU
# The bundle the GPU check runs on a machine without Rust: the library (fatbin for GPU_ARCHS,
# also alone for the check's SASS inspection), the C/C++ suites, the Rust test executables, the examples, the overhead probe. `make gpu-check`
# also runs it.
GPU_ARCHS  ?= 90a
GPU_TARGET := $(CURDIR)/target/gpu
GPU_DIR    := $(CURDIR)/.gpu
GPU_ENV    := EVS_CUDA_ARCHS=$(GPU_ARCHS) CARGO_TARGET_DIR=$(GPU_TARGET)
RUST_GPU_TESTS := backends graph_capture reference faults threads soak big

gpu-bundle: $(NVCC_STAMP)
	$(GPU_ENV) cargo build --release
	rm -rf $(GPU_DIR)/rust && mkdir -p $(GPU_DIR)/rust
	strip --strip-debug -o $(GPU_DIR)/libevsparse.so $(GPU_TARGET)/release/libevsparse.so
	ln -sf libevsparse.so $(GPU_DIR)/libevsparse.so.$(MAJOR)
	cp $$(ls -t $(GPU_TARGET)/release/build/evsparse-*/out/evsparse.fatbin | head -n 1) $(GPU_DIR)/evsparse.fatbin
	# (the build's messages go through a file, so that a test that fails to compile fails the bundle)
	$(GPU_ENV) cargo test --release --no-run --message-format=json $(addprefix --test ,$(RUST_GPU_TESTS)) > $(GPU_DIR)/rust/build.json
	$(PYTHON) -c 'import json, sys; [print(m["target"]["name"], m["executable"]) for m in map(json.loads, sys.stdin) if m.get("executable")]' \
	    < $(GPU_DIR)/rust/build.json | while read name exe; do strip --strip-debug -o $(GPU_DIR)/rust/$$name $$exe; done
	rm $(GPU_DIR)/rust/build.json
	$(CC) $(CFLAGS_TEST) ffi_tests/test_c.c -o $(GPU_DIR)/test_c -L$(GPU_DIR) -levsparse -Wl,-rpath,'$$ORIGIN' -lm
	$(CXX) $(CXXFLAGS_TEST) ffi_tests/test_cpp.cpp -o $(GPU_DIR)/test_cpp -L$(GPU_DIR) -levsparse -Wl,-rpath,'$$ORIGIN'
	$(CC) -std=c11 $(WARN) -O2 -Iinclude bench/overhead.c -o $(GPU_DIR)/overhead -L$(GPU_DIR) -levsparse -Wl,-rpath,'$$ORIGIN' -ldl
	$(CC) -std=c11 $(WARN) -O2 -Iinclude examples/quickstart.c -o $(GPU_DIR)/quickstart -L$(GPU_DIR) -levsparse -Wl,-rpath,'$$ORIGIN' -lm
	$(CXX) -std=c++17 $(WARN) -O2 -Iinclude examples/network.cpp -o $(GPU_DIR)/network -L$(GPU_DIR) -levsparse -Wl,-rpath,'$$ORIGIN'
	@du -sh $(GPU_DIR)

gpu-check: gpu-bundle
	.ci/gpu-check

clean:
	cargo clean
	rm -rf $(BUILD)
