# ZMTP Lab server image: Debian 12 with Python, tshark, a Java 17 runtime (Spark) and the package.
#
#   docker build -t zmtplab .
#   docker run -p 8000:8000 zmtplab
#
# Live capture from inside the container needs raw sockets:
#   docker run --cap-add NET_RAW --cap-add NET_ADMIN --network host zmtplab
# (the tap proxy, uploads, sessions and the pipeline need no extra capabilities).
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    ZMTPLAB_DATA_DIR=/var/lib/zmtplab

# The same script `make` runs (--server: tshark, Java 17 and a CJK font, without the browser-test tools).
COPY scripts/install-system-deps.sh /tmp/install-system-deps.sh
RUN bash /tmp/install-system-deps.sh --server && rm -rf /var/lib/apt/lists/* /tmp/install-system-deps.sh

WORKDIR /app
COPY pyproject.toml README.md ./
COPY backend ./backend
COPY frontend ./frontend
COPY captures ./captures
RUN pip install . && useradd --system --create-home --home-dir /home/zmtplab zmtplab \
    && mkdir -p /var/lib/zmtplab && chown zmtplab:zmtplab /var/lib/zmtplab

ENV PYSPARK_PYTHON=/usr/local/bin/python \
    ZMTPLAB_FRONTEND_DIR=/app/frontend
USER zmtplab
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD python -c "import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8000/api/health', timeout=4).status == 200 else 1)"
CMD ["zmtplab", "serve", "--host", "0.0.0.0", "--port", "8000"]
