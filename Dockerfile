# ZMTP Lab server image: Debian 12 with Debian's python3 (the package in a virtual environment), tshark and a
# Java 17 runtime (Spark, for the Corpus page). README, "Running the container image", says how to build and run
# it; `make image-test` builds it and checks it as a user would.
#
#   podman build --format docker -t zmtplab .        (or: docker build -t zmtplab .)
#   podman run -p 8000:8000 -v zmtplab-data:/var/lib/zmtplab zmtplab
#
# Behind a TLS-intercepting proxy, give pip your CA bundle (and, if you need one, a pip configuration) as build
# secrets: they are mounted for the steps that download and never stored in a layer.
#   podman build --format docker --secret id=ca-bundle,src=/etc/ssl/certs/ca-certificates.crt \
#       --secret id=pip-conf,src=$HOME/.config/pip/pip.conf -t zmtplab .
# BASE: another Debian 12 image (a local one where no registry can be reached: `make image-test` makes one).
ARG BASE=docker.io/library/debian:bookworm-slim

FROM ${BASE} AS system
# The same script `make` runs (--server: tshark, a Java 17 runtime, Debian's python3 with venv, without the
# browser-test tools); apt's lists and downloaded packages are removed in the same step, so no layer keeps them.
COPY scripts/install-system-deps.sh /tmp/install-system-deps.sh
RUN bash /tmp/install-system-deps.sh --server \
    && apt-get clean && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /tmp/install-system-deps.sh

# The wheel, built from the sources as `pip wheel .` builds it (in a stage of its own: the image gets the wheel,
# not the sources).
FROM system AS wheel
COPY pyproject.toml README.md LICENSE /src/
COPY backend /src/backend
COPY frontend /src/frontend
COPY captures /src/captures
RUN --mount=type=secret,id=ca-bundle --mount=type=secret,id=pip-conf \
    if [ -s /run/secrets/ca-bundle ]; then export PIP_CERT=/run/secrets/ca-bundle; fi; \
    if [ -s /run/secrets/pip-conf ]; then export PIP_CONFIG_FILE=/run/secrets/pip-conf; fi; \
    python3 -m venv /tmp/build && /tmp/build/bin/pip wheel --no-cache-dir --no-deps --wheel-dir /wheels /src

FROM system
ENV PYTHONUNBUFFERED=1 \
    PATH=/opt/zmtplab/bin:$PATH \
    PYSPARK_PYTHON=/opt/zmtplab/bin/python \
    ZMTPLAB_DATA_DIR=/var/lib/zmtplab
COPY --from=wheel /wheels /tmp/wheels
RUN --mount=type=secret,id=ca-bundle --mount=type=secret,id=pip-conf \
    if [ -s /run/secrets/ca-bundle ]; then export PIP_CERT=/run/secrets/ca-bundle; fi; \
    if [ -s /run/secrets/pip-conf ]; then export PIP_CONFIG_FILE=/run/secrets/pip-conf; fi; \
    python3 -m venv /opt/zmtplab \
    && /opt/zmtplab/bin/pip install --no-cache-dir "$(ls /tmp/wheels/zmtplab-*.whl)[spark]" \
    && rm -rf /tmp/wheels \
    && useradd --system --create-home --home-dir /home/zmtplab zmtplab \
    && mkdir -p /var/lib/zmtplab && chown zmtplab:zmtplab /var/lib/zmtplab

USER zmtplab
WORKDIR /home/zmtplab
# Uploads, their dissections and corpus runs (README, "The data directory"): keep it on a volume to keep them
# when the container is replaced.
VOLUME /var/lib/zmtplab
EXPOSE 8000
# (podman keeps a HEALTHCHECK only in Docker's image format: build with --format docker.)
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD python -c "import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8000/api/health', timeout=4).status == 200 else 1)"
CMD ["zmtplab", "serve", "--host", "0.0.0.0", "--port", "8000"]
