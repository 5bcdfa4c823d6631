# attnscope's two commands:  make run  (the app on the demo ViT)  and  make test  (every test via ctest).
# Both install missing Debian packages first, then configure and build Release in build/.
# Installing:  make install [PREFIX=/usr/local]  and  make package  (build/package/attnscope_<version>_amd64.deb).

BUILD_DIR ?= build
ASAN_DIR  ?= build-asan
FUZZ_DIR  ?= build-fuzz
TSAN_DIR  ?= build-tsan
FUZZ_SECONDS ?= 60
JOBS      ?= $(shell nproc)

# Build and run time (Debian 12 packages only).
PACKAGES := g++ make cmake pkgconf libxtensor-dev libxsimd-dev libopenblas-dev nlohmann-json3-dev \
            libcli11-dev doctest-dev libzip-dev libstb-dev \
            python3-glad libimgui-dev libglfw3-dev libgl-dev fonts-dejavu-core fonts-wqy-microhei \
            librsvg2-bin help2man gettext
# Headless GUI tests (python3-xlib drops files on the live app) and the install tests (menu entry,
# MIME types, man page, bash completion).
TEST_PACKAGES := xvfb xauth imagemagick libgl1-mesa-dri python3-xlib desktop-file-utils shared-mime-info man-db bash-completion
# make package / check-package: CPack's shlibdeps (dpkg-dev), lintian, file.
PACKAGE_PACKAGES := dpkg-dev lintian file
# Fixture and benchmark scripts in tools/ and bench/ (Debian's /usr/bin/python3 with torch).
TOOL_PACKAGES := python3-numpy python3-torch python3-torchvision time
# make fuzz: libFuzzer comes with clang's runtime libraries.
FUZZ_PACKAGES := clang libclang-rt-14-dev
FUZZ_TARGETS  := npy npz safetensors torch pickle roles image settings

# $(call install-missing,PACKAGES): apt-get install what dpkg does not list as installed.
define install-missing
	@missing=""; \
	for p in $(1); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then sudo=""; \
	  elif command -v sudo >/dev/null 2>&1; then sudo="sudo"; \
	  else echo "attnscope needs these Debian packages:$$missing"; \
	       echo "install them as root with:  apt-get update && apt-get install -y --no-install-recommends$$missing"; exit 1; fi; \
	  echo "installing:$$missing"; \
	  $$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq --no-install-recommends $$missing; \
	fi
endef

.PHONY: run test deps test-deps tool-deps build install package check-package check-sanitizers check-tsan fuzz update-po \
        golden bench clean

PREFIX ?= /usr/local

run: build
	./$(BUILD_DIR)/app/attnscope --demo-vit

test: test-deps build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)

deps:
	$(call install-missing,$(PACKAGES))

test-deps: deps
	$(call install-missing,$(TEST_PACKAGES))

tool-deps: deps
	$(call install-missing,$(TOOL_PACKAGES))

$(BUILD_DIR)/CMakeCache.txt:
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=Release

build: deps $(BUILD_DIR)/CMakeCache.txt
	cmake --build $(BUILD_DIR) -j $(JOBS)

# The binary, the demo model and pictures, the menu entry, icon, MIME types, man page and bash
# completion under PREFIX (sudo make install for /usr/local). The binary finds its demo from its own
# location (PREFIX/bin/../share/attnscope), so the installed tree works wherever it is moved.
install: build
	cmake --install $(BUILD_DIR) --prefix $(PREFIX)

# The Debian package, with CPack: its dependencies come from the binary (dpkg-shlibdeps) plus the
# fonts it reads at run time. sudo apt install ./$(BUILD_DIR)/package/attnscope_<version>_amd64.deb
package: build
	$(call install-missing,$(PACKAGE_PACKAGES))
	rm -f $(BUILD_DIR)/package/attnscope_*.deb
	umask 022 && cd $(BUILD_DIR) && cpack -G DEB --config CPackConfig.cmake
	@ls $(BUILD_DIR)/package/attnscope_*.deb

# The package checked (CI runs it): lintian without errors, then unpacked with dpkg-deb -x into a
# temporary root and run from there (packaging/check_package.sh).
check-package: test-deps package
	packaging/check_package.sh $$(ls $(BUILD_DIR)/package/attnscope_*.deb)

# The unit, CLI, GUI-logic, engine-worker and fuzz-corpus tests once more under AddressSanitizer +
# UndefinedBehaviorSanitizer (CI runs it; the GL app itself is left out).
check-sanitizers: deps
	cmake -S . -B $(ASAN_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DATTNSCOPE_SANITIZE=ON -DATTNSCOPE_GUI=OFF
	cmake --build $(ASAN_DIR) -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --test-dir $(ASAN_DIR) --output-on-failure -j $(JOBS)

# The engine worker (tests/gui/test_engine_runner) and the pipeline under ThreadSanitizer (CI runs it).
# OpenBLAS and libgomp are not instrumented (TSan cannot see libgomp's barriers and reports the
# OpenMP loops' shared stack variables as races): one BLAS thread and one OpenMP thread, so TSan
# sees the worker and the threads that read its snapshots. test_parallel covers the OpenMP loops.
check-tsan: deps
	cmake -S . -B $(TSAN_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DATTNSCOPE_TSAN=ON -DATTNSCOPE_GUI=OFF
	cmake --build $(TSAN_DIR) -j $(JOBS) --target test_engine_runner test_pipeline test_views
	OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 TSAN_OPTIONS=halt_on_error=1 \
	  ctest --test-dir $(TSAN_DIR) --output-on-failure --no-tests=error -j $(JOBS) -R '^(test_engine_runner|test_pipeline|test_views):'

# Each fuzz target (tests/fuzz) for FUZZ_SECONDS under libFuzzer + ASan + UBSan, one at a time,
# starting from the committed corpus; new inputs go to $(FUZZ_DIR)/corpus/<t>, crashes to
# $(FUZZ_DIR)/crash-<t>-* (fix them and add the input to tests/fuzz/corpus/<t>).
fuzz: deps
	$(call install-missing,$(FUZZ_PACKAGES))
	cmake -S . -B $(FUZZ_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
	  -DATTNSCOPE_GUI=OFF -DATTNSCOPE_FUZZ=ON
	cmake --build $(FUZZ_DIR) -j $(JOBS) --target $(addprefix fuzz_,$(FUZZ_TARGETS))
	@for t in $(FUZZ_TARGETS); do \
	  mkdir -p $(FUZZ_DIR)/corpus/$$t; \
	  echo "== fuzz_$$t for $(FUZZ_SECONDS) s"; \
	  $(FUZZ_DIR)/tests/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 \
	    -print_final_stats=1 -artifact_prefix=$(FUZZ_DIR)/crash-$$t- $(FUZZ_DIR)/corpus/$$t tests/fuzz/corpus/$$t \
	    || exit 1; \
	done

# Bring po/zh_CN.po up to date with the sources' _(), N_() and NC_() strings (commit the result,
# with a Chinese for each new one: tests/i18n fails until then).
update-po: deps $(BUILD_DIR)/CMakeCache.txt
	cmake --build $(BUILD_DIR) --target update-po

# Regenerate the PyTorch fixtures in tests/data (commit the result).
golden: tool-deps
	/usr/bin/python3 tools/make_golden.py tests/data/golden

# Every performance figure against PyTorch eager on the same machine, in one run (README: Benchmark).
bench: tool-deps build
	bench/run_all.sh $(BUILD_DIR)/app/attnscope

clean:
	rm -rf $(BUILD_DIR) $(ASAN_DIR) $(FUZZ_DIR) $(TSAN_DIR)
