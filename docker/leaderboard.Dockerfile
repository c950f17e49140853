# syntax=docker/dockerfile:1.7
# icml26-gym leaderboard server: `icml26 leaderboard serve` (FastAPI + uvicorn) on port 8026.
# Its store is $ICML26_LEADERBOARD: SQLite under /data by default, PostgreSQL in compose.yaml.
# CPU torch is installed because the package depends on it and `icml26 leaderboard verify`
# re-runs submitted agents.
#
#   docker build -f docker/leaderboard.Dockerfile -t icml26-gym:leaderboard .
#   docker run --rm -p 8026:8026 -v lb:/data icml26-gym:leaderboard
#   docker run --rm -v lb:/data icml26-gym:leaderboard icml26 leaderboard token create alice
FROM python:3.11-slim-bookworm

ARG TORCH_VERSION=2.13.0
ARG EXTRAS=server,postgres

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    OMP_NUM_THREADS=1 \
    ICML26_CACHE=/data/cache \
    ICML26_LEADERBOARD=/data/leaderboard.db

RUN apt-get update \
 && apt-get install -y --no-install-recommends libgomp1 \
 && rm -rf /var/lib/apt/lists/*

RUN pip install "torch==${TORCH_VERSION}" --index-url https://download.pytorch.org/whl/cpu

WORKDIR /opt/icml26
COPY pyproject.toml README.md ./
COPY icml26 ./icml26
RUN pip install ".[${EXTRAS}]" \
 && python -c "import icml26.leaderboards.server"

RUN useradd --create-home --uid 1000 icml26 \
 && mkdir -p /data/cache \
 && chown -R icml26 /data
USER icml26
VOLUME ["/data"]
WORKDIR /data
EXPOSE 8026
HEALTHCHECK --interval=10s --timeout=5s --start-period=20s --retries=5 \
  CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8026/api/health', timeout=4)"]
CMD ["icml26", "leaderboard", "serve", "--host", "0.0.0.0", "--port", "8026"]
