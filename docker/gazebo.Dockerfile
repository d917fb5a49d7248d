# The gem-rs Gazebo image: ROS Noetic (Ubuntu 20.04) with Gazebo 11 and the Polaris GEM e2
# simulator workspace (cloned at a pinned commit), plus our binaries built for Ubuntu 20.04
# in gazebo-builder and our launch package on the ROS package path:
#   roslaunch gem_bringup integration_run.launch sim:=gazebo
# Build it with runners/docker_build.sh --target gazebo. It needs the image
# ros:noetic-ros-base-focal locally and the internet (the ROS apt source, rustup, GitHub);
# runners/docker_build.sh refuses at once when the base image is not present.
#
# Build arguments:
#   VARIANT=prod|dev      prod: release build, no sudo; dev: debug build, passwordless sudo
#   USER_UID, USER_GID    the non-root user `gem` gets these (match the host's for bind mounts)
#   RUST_VERSION          the toolchain gazebo-builder installs
#   GEM_E2_REPO, GEM_E2_COMMIT   where the GEM e2 simulator comes from, and which commit

ARG NOETIC_IMAGE=ros:noetic-ros-base-focal
ARG RUST_VERSION=1.95.0

# ---------------------------------------------------------------------------- gazebo-builder
# Ubuntu 20.04's glibc is older than Debian 12's: the gazebo image needs binaries built
# on its own base.
FROM ${NOETIC_IMAGE} AS gazebo-builder
ARG RUST_VERSION
ARG VARIANT=prod
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends curl ca-certificates build-essential pkg-config \
 && rm -rf /var/lib/apt/lists/*
COPY docker/install_rust.sh /tmp/docker/install_rust.sh
RUN bash /tmp/docker/install_rust.sh "${RUST_VERSION}"
ENV RUSTUP_HOME=/usr/local/rustup CARGO_HOME=/usr/local/cargo PATH=/usr/local/cargo/bin:${PATH}
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY crates crates
COPY msg msg
COPY tests tests
# Every binary of the workspace, in the variant's profile, gathered into /out.
RUN if [ "${VARIANT}" = dev ]; then dir=debug; cargo build --workspace --bins; \
    else dir=release; cargo build --release --workspace --bins; fi \
 && mkdir /out \
 && find "target/${dir}" -maxdepth 1 -type f -executable -exec cp {} /out/ \;

# ---------------------------------------------------------------------------- gazebo
FROM ${NOETIC_IMAGE} AS gazebo
ARG VARIANT=prod
ARG USER_UID=1000
ARG USER_GID=1000
ARG GEM_E2_REPO=https://github.com/GEM-Illinois/POLARIS_GEM_e2.git
ARG GEM_E2_COMMIT=750bd513a4b208e0de5c07a3ebcee5e75606850b
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# Gazebo 11 and what the GEM e2 simulator needs (its README's list plus the launch file's
# nodes), from the ROS apt source the base image configures with a signed-by keyring; sudo
# for the dev variant.
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      git python3-catkin-tools sudo \
      ros-noetic-gazebo-ros-pkgs ros-noetic-gazebo-ros-control \
      ros-noetic-ackermann-msgs ros-noetic-geometry2 ros-noetic-hector-gazebo \
      ros-noetic-hector-models ros-noetic-jsk-rviz-plugins ros-noetic-ros-control \
      ros-noetic-ros-controllers ros-noetic-velodyne-simulator ros-noetic-xacro \
      ros-noetic-robot-state-publisher ros-noetic-joint-state-publisher ros-noetic-rviz \
      ros-noetic-dynamic-reconfigure ros-noetic-actionlib ros-noetic-rostest \
      ros-noetic-rosbag ros-noetic-diagnostic-aggregator \
 && rm -rf /var/lib/apt/lists/*
COPY docker/add_user.sh /tmp/docker/add_user.sh
RUN bash /tmp/docker/add_user.sh "${USER_UID}" "${USER_GID}" "${VARIANT}"
# The simulator: a pinned commit of its repository; only its simulator packages are built.
RUN git clone --quiet "${GEM_E2_REPO}" /opt/gem_e2_src \
 && git -C /opt/gem_e2_src checkout --quiet "${GEM_E2_COMMIT}" \
 && mkdir -p /opt/gem_e2/src \
 && ln -s /opt/gem_e2_src/polaris_gem_simulator /opt/gem_e2/src/polaris_gem_simulator \
 && source /opt/ros/noetic/setup.bash \
 && catkin_make -C /opt/gem_e2 -DCMAKE_BUILD_TYPE=Release
ENV GEM_ROOT=/opt/gem-rs GEM_SETUP_HOST_TOOLS=0
WORKDIR /opt/gem-rs
COPY msg msg
COPY launch launch
COPY runners runners
COPY docker docker
COPY crates/gem_nodes/src/bin crates/gem_nodes/src/bin
COPY crates/gem_cli/src/main.rs crates/gem_cli/src/main.rs
COPY tests/rostest tests/rostest
# The builder's binaries where runners/setup.sh expects them; without cargo here, setup.sh
# uses them, generates the Python messages and lays out `rosrun gem_nodes`.
COPY --from=gazebo-builder /out/ /opt/gem-rs/target/prebuilt/
RUN if [ "${VARIANT}" = dev ]; then dir=debug; else dir=release; fi \
 && mkdir -p "target/${dir}" && mv target/prebuilt/* "target/${dir}/" && rmdir target/prebuilt \
 && if [ "${VARIANT}" = dev ]; then export GEM_BUILD_PROFILE=debug; fi \
 && bash runners/setup.sh \
 && chown -R gem:gem /opt/gem-rs
USER ${USER_UID}:${USER_GID}
ENTRYPOINT ["/opt/gem-rs/docker/entrypoint.sh"]
CMD ["roslaunch", "gem_bringup", "integration_run.launch", "sim:=gazebo", "rviz:=true", "waypoints:=gem_track.csv"]
