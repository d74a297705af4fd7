# Dockerfile: the tarema component images, from Debian bookworm, in stages:
#   build      compiler and -dev packages; compiles the binaries and computes the runtime
#              package list from them (hack/image/build.sh)
#   runtime    only the runtime libraries that list names, the binaries in /usr/local/bin,
#              user tarema (10001)
#   scheduler, labeler, profiler, dam, planner   one image per component (the profiler adds
#              sysbench and fio for the per-node benchmarks)
# Every RUN step is a script in hack/image/. Without a Docker daemon, `make image`
# (hack/build-image.sh) builds the same images from a debootstrap of the same suite with the same
# package list and install script; tests/e2e/deploy_image_test.sh checks that both, and the
# chart, agree on ENTRYPOINT, CMD, USER and WORKDIR. Build one component with, e.g.:
#   docker build --target scheduler -t tarema/scheduler:0.1.0 .
ARG DEBIAN_TAG=bookworm-slim

FROM debian:${DEBIAN_TAG} AS build
WORKDIR /src
COPY hack/image/build-deps.sh hack/image/build-deps.sh
RUN bash hack/image/build-deps.sh
COPY . .
RUN bash hack/image/build.sh /out

FROM debian:${DEBIAN_TAG} AS runtime
COPY hack/image/install-runtime.sh /usr/local/lib/tarema/install-runtime.sh
COPY --from=build /out/runtime-packages.txt /out/runtime-packages-profiler.txt /usr/local/lib/tarema/
RUN bash /usr/local/lib/tarema/install-runtime.sh /usr/local/lib/tarema/runtime-packages.txt
COPY --from=build /out/bin/ /usr/local/bin/
WORKDIR /
USER 10001:10001

FROM runtime AS labeler
EXPOSE 8080 8081
ENTRYPOINT ["/usr/local/bin/tarema-labeler"]
CMD ["serve"]

FROM runtime AS profiler
USER root
RUN bash /usr/local/lib/tarema/install-runtime.sh /usr/local/lib/tarema/runtime-packages.txt \
      /usr/local/lib/tarema/runtime-packages-profiler.txt
USER 10001:10001
ENTRYPOINT ["/usr/local/bin/tarema-profiler"]
CMD ["--help"]

FROM runtime AS scheduler
EXPOSE 10260 10261
ENTRYPOINT ["/usr/local/bin/tarema-scheduler"]
CMD ["run"]

FROM runtime AS dam
EXPOSE 8090 8091
ENTRYPOINT ["/usr/local/bin/tarema-dam"]
CMD ["serve"]

FROM runtime AS planner
ENTRYPOINT ["/usr/local/bin/tarema-planner"]
CMD ["--help"]
