# eslease-controller and the eslease tool on Debian bookworm.
#
#   docker build -t REGISTRY/eslease-controller:0.1.0 .
#
# No image is published: push the one you build to a registry your cluster pulls from and
# set the Helm chart's image.repository to it.
#
# The build stage installs the toolchain with the same script as the README and CI
# (scripts/install-deps.sh) and builds the release binaries; the runtime stage carries only
# the shared libraries they load and the two binaries, and runs as a numeric non-root user.
# It also carries the eslease tool's portable bundle in /opt/eslease (a static launcher, the
# tool, its own loader and libraries), which runs in any x86-64 Linux image: an init
# container copies it into a shared emptyDir (docs/any-image.md).

FROM debian:bookworm-slim AS build
WORKDIR /src
COPY scripts/install-deps.sh scripts/install-deps.sh
RUN ./scripts/install-deps.sh
COPY . .
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release \
 && cmake --build /build --target eslease-controller eslease eslease-portable \
 && strip /build/bin/eslease-controller /build/bin/eslease

FROM debian:bookworm-slim AS runtime
# runtime-packages-begin (tests/deploy/image_test.sh installs exactly this list)
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      ca-certificates \
      libfmt9 \
      libjemalloc2 \
      libprometheus-cpp-core1.0 \
      libspdlog1.10 \
      libssl3 \
      libyaml-cpp0.7 \
 && rm -rf /var/lib/apt/lists/*
# runtime-packages-end
COPY --from=build /build/bin/eslease-controller /build/bin/eslease /usr/local/bin/
COPY --from=build /build/eslease-portable/ /opt/eslease/
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["/usr/local/bin/eslease-controller"]
