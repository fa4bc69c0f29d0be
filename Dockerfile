# Sluice in a container, with the habits of the official redis image: data in /data,
# port 6379, a non-root user, a PING health check.
# The steps mirror `make install`: a venv, then `pip install '.[fast]'`.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PATH=/opt/venv/bin:$PATH

WORKDIR /src
COPY pyproject.toml README.md ./
COPY sluice ./sluice
RUN python -m venv /opt/venv \
    && /opt/venv/bin/pip install --no-cache-dir '.[fast]' \
    && groupadd --system --gid 999 sluice \
    && useradd --system --uid 999 --gid sluice --home-dir /data sluice \
    && mkdir -p /data \
    && chown sluice:sluice /data

USER 999:999
WORKDIR /data
VOLUME /data
EXPOSE 6379

HEALTHCHECK --interval=10s --timeout=3s --retries=3 \
    CMD ["python", "-c", "import socket,sys; s=socket.create_connection(('127.0.0.1', 6379), 2); s.sendall(b'PING\\r\\n'); sys.exit(s.recv(7) != b'+PONG\\r\\n')"]

# Inside a container the published port is the boundary, as with the redis image.
CMD ["sluice-server", "--bind", "0.0.0.0", "--dir", "/data", "--protected-mode", "no"]
