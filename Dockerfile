# Sluice in a container, with the habits of the official redis image: data in /data (a
# volume), port 6379, an entry point that runs sluice-server as an unprivileged user with
# the container's defaults (docker/entrypoint.sh), and a health check that works with a
# password set. Persistence is on by default: AOF with an fsync every second, plus Redis's
# save points (README.md, "Docker", says why).
#
# Two stages: the first installs Sluice into a venv (the steps of `make install`), the second
# copies only that venv, so no source tree, pip cache or build tool is left in the image.
# `make docker-test` builds it and checks it in real containers.

FROM python:3.11-slim AS build

# pip's index, when the build machine needs another one (make docker-test passes what the
# machine's pip configuration says); PyPI when unset.
ARG PIP_INDEX_URL
ARG PIP_EXTRA_INDEX_URL
ARG PIP_TRUSTED_HOST

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /src
COPY pyproject.toml README.md ./
COPY sluice ./sluice
RUN python -m venv /opt/venv \
    && /opt/venv/bin/pip install --no-cache-dir '.[fast]'

FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PATH=/opt/venv/bin:$PATH

RUN groupadd --system --gid 999 sluice \
    && useradd --system --uid 999 --gid sluice --home-dir /data --no-create-home sluice \
    && mkdir -p /data \
    && chown sluice:sluice /data

COPY --from=build /opt/venv /opt/venv
COPY docker/entrypoint.sh /usr/local/bin/docker-entrypoint.sh

WORKDIR /data
VOLUME /data
EXPOSE 6379

HEALTHCHECK --interval=10s --timeout=5s --start-period=20s --retries=3 \
    CMD ["sluice-healthcheck", "--quiet"]

ENTRYPOINT ["docker-entrypoint.sh"]
CMD ["sluice-server"]
