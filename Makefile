# attnscope's two commands:  make run  (the app on the demo ViT)  and  make test  (every test via ctest).
# Both install missing Debian packages first, then configure and build Release in build/.

BUILD_DIR ?= build
ASAN_DIR  ?= build-asan
JOBS      ?= $(shell nproc)

# Build and run time (Debian 12 packages only).
PACKAGES := g++ make cmake pkgconf libxtensor-dev libxsimd-dev libopenblas-dev nlohmann-json3-dev \
            libcli11-dev doctest-dev libzip-dev libstb-dev \
            python3-glad libimgui-dev libglfw3-dev libgl-dev fonts-dejavu-core fonts-wqy-microhei
# Headless GUI tests (python3-xlib drops files on the live app).
TEST_PACKAGES := xvfb xauth libgl1-mesa-dri python3-xlib
# Fixture and benchmark scripts in tools/ and bench/ (Debian's /usr/bin/python3 with torch).
TOOL_PACKAGES := python3-numpy python3-torch

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

.PHONY: run test deps test-deps tool-deps build check-sanitizers golden bench clean

DEMO_MODEL := assets/models/demo_vit.safetensors
DEMO_IMAGE := assets/samples/06_triangle.png

run: build
	./$(BUILD_DIR)/app/attnscope --model $(DEMO_MODEL) --image $(DEMO_IMAGE)

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

# The unit and CLI tests once more under AddressSanitizer + UndefinedBehaviorSanitizer (CI runs it).
check-sanitizers: deps
	cmake -S . -B $(ASAN_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DATTNSCOPE_SANITIZE=ON -DATTNSCOPE_GUI=OFF
	cmake --build $(ASAN_DIR) -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --test-dir $(ASAN_DIR) --output-on-failure -j $(JOBS)

# Regenerate the PyTorch fixtures in tests/data (commit the result).
golden: tool-deps
	/usr/bin/python3 tools/make_golden.py tests/data/golden

# Every performance figure (issue 8) against PyTorch eager on the same machine, in one run (README: Benchmark).
bench: tool-deps build
	bench/run_all.sh $(BUILD_DIR)/app/attnscope

clean:
	rm -rf $(BUILD_DIR) $(ASAN_DIR)
