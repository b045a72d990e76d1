#!/usr/bin/env bash
# Installs the Debian packages ZMTP Lab needs: tshark/dumpcap (captures, lower-layer
# decoding), a Java 17 runtime (Spark), Chromium and its driver (browser tests), JeroMQ and a JDK
# (interop tests), Debian's libzmq through python3-zmq (ws:// interop tests), and Debian's python3 with venv
# for the Makefile's environment.
# Shared by the Makefile and the Dockerfile (which passes --server). Safe to run twice: it does nothing when
# every package is already there.
set -euo pipefail

# --server: only what the server needs (the Docker image); without it, also the test tools.
# fonts-noto-cjk: Chinese, Japanese and Korean glyphs: the pages in Simplified Chinese (?lang=zh-CN; the CSS
# asks for Noto Sans CJK SC) and message bodies shown as UTF-8 text (the browser tests and the docs'
# screenshots render them).
PACKAGES=(tshark openjdk-17-jre-headless libpcap0.8 procps fonts-noto-cjk)
if [ "${1:-}" != "--server" ]; then
    PACKAGES+=(chromium chromium-driver)
    # A second, independent ZMTP implementation for the interop tests: JeroMQ (pure Java), and the
    # JDK's javac that compiles the test's Java peer (tests/peers/jeromq/ZPeer.java).
    PACKAGES+=(openjdk-17-jdk-headless libjeromq-java)
    # libzmq with the ws:// transport for the ZWS interop tests (tests/peers/test_zws_interop.py): Debian's
    # libzmq5 4.3.4 has it (pyzmq's PyPI wheels bundle a libzmq without), reached through Debian's python3-zmq.
    PACKAGES+=(python3-zmq)
    # Debian's interpreter for the virtual environment (the Makefile prefers it: an optimised build).
    PACKAGES+=(python3 python3-venv)
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
