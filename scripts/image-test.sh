#!/usr/bin/env bash
# `make image-test`: builds the container image (Dockerfile) with docker or podman, whichever works here, and
# checks it as its users run it (tests/install/test_image.py): health, the four pages, every lesson step, an
# upload dissected, a corpus run, and an upload that outlives its container.
#
# On a machine with neither, it installs podman from Debian and runs it as root with a configuration of its own
# (build/image-test/containers.conf, given to our podman commands only through CONTAINERS_CONF: nothing under
# /etc changes). Where no registry serves the base image (debian:bookworm-slim), it makes a local one with
# debootstrap from the Debian mirror (localhost/zmtplab-debian:bookworm-slim, kept for the next runs).
#
# Settings (environment or `make image-test NAME=...`):
#   IMAGE            the tag built and tested (localhost/zmtplab:test)
#   IMAGE_ENGINE     docker or podman (default: docker when its engine answers, else podman)
#   IMAGE_CA_BUNDLE  a CA bundle for pip inside the build, as the build secret `ca-bundle` (default: this
#                    machine's trust store, for TLS-intercepting proxies; empty: none)
#   IMAGE_PIP_CONF   a pip configuration file, as the build secret `pip-conf` (default: none)
#   DEBIAN_MIRROR    the mirror of the local base (http://deb.debian.org/debian)
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE=${IMAGE:-localhost/zmtplab:test}
BASE=docker.io/library/debian:bookworm-slim
LOCAL_BASE=localhost/zmtplab-debian:bookworm-slim
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
STATE=build/image-test
PYTHON=${PYTHON:-.venv/bin/python}
if [ -z "${IMAGE_CA_BUNDLE+set}" ]; then
    IMAGE_CA_BUNDLE=${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}
    [ -s "$IMAGE_CA_BUNDLE" ] || IMAGE_CA_BUNDLE=
fi
IMAGE_PIP_CONF=${IMAGE_PIP_CONF:-}

say() { echo "image-test: $*" >&2; }

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
apt_updated=""
apt_install() {
    if [ -z "$apt_updated" ]; then $SUDO apt-get update -qq; apt_updated=1; fi
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "$@"
}

# ---- the engine

ENGINE=${IMAGE_ENGINE:-}
if [ -z "$ENGINE" ]; then
    if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then ENGINE=docker; else ENGINE=podman; fi
fi
if [ "$ENGINE" = podman ]; then
    if [ "$(id -u)" -ne 0 ]; then
        say "podman is run as root here (as CI runs it); run as root, or give a working docker (IMAGE_ENGINE=docker)"
        exit 2
    fi
    # runc, not crun: crun refuses cgroups in hybrid (v1 + v2) mode, as some hosts have them.
    missing=()
    for tool in podman runc; do command -v "$tool" >/dev/null 2>&1 || missing+=("$tool"); done
    if [ ${#missing[@]} -gt 0 ]; then say "installing ${missing[*]} from Debian"; apt_install "${missing[@]}"; fi
    mkdir -p "$STATE"
    # Limits within this machine's hard limits: podman's defaults ask for more open files than a sandboxed host
    # may allow, and the runtime may not raise the process limit past pid_max.
    nofile=$(ulimit -Hn); nproc=$(ulimit -Hu); pid_max=$(cat /proc/sys/kernel/pid_max)
    [ "$nofile" = unlimited ] && nofile=1048576
    if [ "$nproc" = unlimited ] || [ "$nproc" -gt "$pid_max" ]; then nproc=$pid_max; fi
    if [ -d /run/systemd/system ]; then cgroups=systemd; events=journald; else cgroups=cgroupfs; events=file; fi
    cat > "$STATE/containers.conf" <<EOF
# Made by scripts/image-test.sh for its own podman commands (CONTAINERS_CONF); nothing else reads it.
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]

[engine]
runtime = "runc"
cgroup_manager = "$cgroups"
events_logger = "$events"
EOF
    export CONTAINERS_CONF="$PWD/$STATE/containers.conf"
fi
say "engine: $ENGINE"

has_image() { "$ENGINE" image inspect "$1" >/dev/null 2>&1; }

# ---- the base: Debian 12 from a registry, else made here

if has_image "$BASE" || timeout 120 "$ENGINE" pull -q "$BASE" >/dev/null 2>&1; then
    base=$BASE
else
    base=$LOCAL_BASE
    if ! has_image "$LOCAL_BASE"; then
        say "no registry serves $BASE here: making $LOCAL_BASE with debootstrap from $DEBIAN_MIRROR"
        command -v debootstrap >/dev/null 2>&1 || apt_install debootstrap
        root=$(mktemp -d /var/tmp/zmtplab-debian.XXXXXX)
        trap '$SUDO rm -rf "$root"' EXIT
        $SUDO debootstrap --variant=minbase bookworm "$root" "$DEBIAN_MIRROR" >"$STATE/debootstrap.log" 2>&1 \
            || { tail -20 "$STATE/debootstrap.log" >&2; exit 1; }
        # The suites debian:bookworm-slim reads: the release, its updates and the security archive.
        $SUDO rm -f "$root/etc/apt/sources.list"
        $SUDO tee "$root/etc/apt/sources.list.d/debian.sources" >/dev/null <<EOF
Types: deb
URIs: $DEBIAN_MIRROR
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: ${DEBIAN_MIRROR%/debian}/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
        $SUDO rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb
        $SUDO tar -C "$root" -c . | "$ENGINE" import --change 'CMD ["bash"]' - "$LOCAL_BASE" >/dev/null
        $SUDO rm -rf "$root"
        trap - EXIT
    fi
fi
say "base: $base"

# ---- the image

build=(build -t "$IMAGE" --build-arg "BASE=$base")
[ "$ENGINE" = podman ] && build+=(--format docker)  # (podman's own format drops HEALTHCHECK)
[ -n "$IMAGE_CA_BUNDLE" ] && build+=(--secret "id=ca-bundle,src=$IMAGE_CA_BUNDLE")
[ -n "$IMAGE_PIP_CONF" ] && build+=(--secret "id=pip-conf,src=$IMAGE_PIP_CONF")
before=$("$ENGINE" image inspect --format '{{.Id}}' "$IMAGE" 2>/dev/null || true)
say "building $IMAGE"
"$ENGINE" "${build[@]}" .
after=$("$ENGINE" image inspect --format '{{.Id}}' "$IMAGE")
if [ -n "$before" ] && [ "$before" != "$after" ]; then
    "$ENGINE" rmi "$before" >/dev/null 2>&1 || true  # (the last run's image, unless something still uses it)
fi

# ---- the checks

ZMTPLAB_IMAGE=$IMAGE ZMTPLAB_IMAGE_ENGINE=$ENGINE "$PYTHON" -m pytest -p no:cacheprovider tests/install/test_image.py
