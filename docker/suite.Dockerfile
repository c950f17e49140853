# syntax=docker/dockerfile:1.7
# icml26-gym suite image (CPU): the package with CPU-only torch, Ray, PostgreSQL and server extras.
# It runs benchmarks (`icml26 bench`), and it is the image of every Ray node in compose.yaml.
#
#   docker build -f docker/suite.Dockerfile -t icml26-gym:suite .
#   docker run --rm -v "$PWD/results:/data/results" icml26-gym:suite \
#       icml26 bench --suite smoke --executor process --workers 4
#
# Build arguments:
#   TORCH_VERSION   CPU wheel from download.pytorch.org (an unpinned `torch` would pull CUDA, GBs)
#   EXTRAS          pyproject extras to install (see pyproject.toml)
#   CARLA_VERSION   set (e.g. 0.9.16, matching the server image) to add the CARLA client
FROM python:3.11-slim-bookworm

ARG TORCH_VERSION=2.13.0
ARG EXTRAS=ray,postgres,server,openmm,flows,weather,spacebench,looplm,minari
ARG CARLA_VERSION=

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    OMP_NUM_THREADS=1 \
    ICML26_CACHE=/data/cache \
    ICML26_STORE=/data/results/icml26.db

# libgomp1: OpenMP runtime for torch/openmm wheels; git: the runner records the commit when present
RUN apt-get update \
 && apt-get install -y --no-install-recommends libgomp1 git \
 && rm -rf /var/lib/apt/lists/*

RUN pip install "torch==${TORCH_VERSION}" --index-url https://download.pytorch.org/whl/cpu

WORKDIR /opt/icml26
COPY pyproject.toml README.md ./
COPY icml26 ./icml26
RUN pip install ".[${EXTRAS}]" \
 && if [ -n "${CARLA_VERSION}" ]; then pip install "carla==${CARLA_VERSION}"; fi \
 && python -c "import icml26, gymnasium as gym; gym.make('icml26/PointReach-v0').reset(seed=0)"

# Examples and the CARLA check script of the compose file
COPY docker/carla_check.py /opt/icml26/docker/carla_check.py

RUN useradd --create-home --uid 1000 icml26 \
 && mkdir -p /data/results /data/cache \
 && chown -R icml26 /data
USER icml26
VOLUME ["/data"]
WORKDIR /data
CMD ["icml26", "tasks"]
