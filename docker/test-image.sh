#!/bin/sh
# make docker-test: build the image and check it in real containers (tests/docker).
#
#   docker/test-image.sh PYTHON [IMAGE]
#
# Installs Docker and debootstrap with apt when missing, starts dockerd when no engine
# answers (and stops it at the end), makes the base image available (docker/standin-base.sh), builds
# IMAGE (default sluice:test) with pip's index taken from this machine's pip configuration
# (only http(s) indexes: file:// ones do not exist inside the build), then runs the
# container tests with PYTHON.
set -eu
cd "$(dirname "$0")/.."

python=${1:?usage: test-image.sh PYTHON [IMAGE]}
image=${2:-sluice:test}
started=$(date +%s)

if ! command -v dockerd >/dev/null 2>&1 || ! command -v debootstrap >/dev/null 2>&1; then
	echo "installing docker.io and debootstrap with apt"
	SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq docker.io debootstrap >/dev/null
fi
if ! docker info >/dev/null 2>&1; then
	echo "starting dockerd (log: /tmp/sluice-dockerd.log)"
	nohup dockerd >/tmp/sluice-dockerd.log 2>&1 &
	dockerd_pid=$!
	# An engine we started is ours to stop: nothing of this run is left running.
	trap 'kill "$dockerd_pid" 2>/dev/null && wait "$dockerd_pid" 2>/dev/null || true' EXIT
	i=0
	until docker info >/dev/null 2>&1; do
		i=$((i + 1))
		if [ "$i" -gt 60 ]; then
			echo "dockerd did not start; see /tmp/sluice-dockerd.log" >&2
			exit 1
		fi
		sleep 1
	done
fi

base=$(sed -n 's/^FROM[[:space:]]\{1,\}\([^[:space:]]*\).*/\1/p' Dockerfile | head -n 1)
docker/standin-base.sh "$base"

# pip's index settings of this machine, passed to the build (never written into the repo).
pip_setting() {
	"$python" -m pip config get "global.$1" 2>/dev/null | tr ' ' '\n' | grep -E '^https?://' \
		| tr '\n' ' ' | sed 's/ $//' || true
}
index=$(pip_setting index-url)
extra=$(pip_setting extra-index-url)
trusted=$("$python" -m pip config get global.trusted-host 2>/dev/null || true)

echo "building $image"
docker build --network host -q -t "$image" \
	${index:+--build-arg "PIP_INDEX_URL=$index"} \
	${extra:+--build-arg "PIP_EXTRA_INDEX_URL=$extra"} \
	${trusted:+--build-arg "PIP_TRUSTED_HOST=$trusted"} \
	. >/dev/null
built=$(date +%s)
echo "image built in $((built - started)) s; checking it in containers"

SLUICE_DOCKER_IMAGE=$image "$python" -m pytest -q -p no:cacheprovider tests/docker
echo "make docker-test: $(($(date +%s) - started)) s in all"
