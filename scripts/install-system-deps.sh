#!/usr/bin/env bash
# Installs the Debian packages ZMTP Lab needs: tshark/dumpcap (captures, lower-layer
# decoding), a Java 17 runtime (Spark), Debian's python3 with venv, Chromium and its driver (browser tests),
# JeroMQ and a JDK (interop tests), Debian's libzmq through python3-zmq (ws:// interop tests) and nginx (the
# reverse-proxy test).
# Shared by the Makefile and the Dockerfile (which passes --server). Safe to run twice: it does nothing when
# every package is already there.
set -euo pipefail

# --server: only what the server needs (the container image); without it, also the test tools.
# Debian's python3 runs the server's virtual environment (the Makefile prefers it too: an optimised build);
# ca-certificates lets pip reach the package index.
PACKAGES=(tshark openjdk-17-jre-headless libpcap0.8 procps python3 python3-venv ca-certificates)
if [ "${1:-}" != "--server" ]; then
    PACKAGES+=(chromium chromium-driver)
    # fonts-noto-cjk: Chinese, Japanese and Korean glyphs: the pages in Simplified Chinese (?lang=zh-CN; the CSS
    # asks for Noto Sans CJK SC) and message bodies shown as UTF-8 text, as the browser tests and the docs'
    # screenshots render them (a browser renders the pages with its own fonts: the server needs none).
    PACKAGES+=(fonts-noto-cjk)
    # A second, independent ZMTP implementation for the interop tests: JeroMQ (pure Java), and the
    # JDK's javac that compiles the test's Java peer (tests/peers/jeromq/ZPeer.java).
    PACKAGES+=(openjdk-17-jdk-headless libjeromq-java)
    # libzmq with the ws:// transport for the ZWS interop tests (tests/peers/test_zws_interop.py): Debian's
    # libzmq5 4.3.4 has it (pyzmq's PyPI wheels bundle a libzmq without), reached through Debian's python3-zmq.
    PACKAGES+=(python3-zmq)
    # nginx: the reverse proxy docs/operations.md gives, which tests/web/test_reverse_proxy.py runs as written
    # (its own instance on a free port; where systemd runs, Debian also starts the packaged service).
    PACKAGES+=(nginx-light)
    # The frontend's DOM-free modules are tested with node's built-in runner (node 18+).
    command -v node >/dev/null 2>&1 || PACKAGES+=(nodejs)
fi

missing=()
for pkg in "${PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$pkg")
    fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
# tshark asks whether non-root users may capture; answer "no" ahead of time.
echo "wireshark-common wireshark-common/install-setuid boolean false" | $SUDO debconf-set-selections
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
