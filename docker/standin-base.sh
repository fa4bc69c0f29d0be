#!/bin/sh
# Make the Dockerfile's base image (python:3.11-slim) available to `docker build` on a machine
# that can reach no image registry: if the tag is not there and cannot be pulled, build a
# stand-in of it once (cached by Docker under the same tag): Debian bookworm (whose python3
# is 3.11) from the mirror in this machine's apt sources, with python3, venv, pip and the
# machine's CA bundle, and a `python` command as the real image has.
#
# It is a stand-in, not python:3.11-slim itself: Python lives in /usr/bin, not /usr/local.
# Needs root, debootstrap and a running Docker engine.
set -eu

tag=${1:?usage: standin-base.sh IMAGE:TAG}

if docker image inspect "$tag" >/dev/null 2>&1; then
	echo "base image $tag: present"
	exit 0
fi
if timeout 20 docker pull "$tag" >/dev/null 2>&1; then
	echo "base image $tag: pulled"
	exit 0
fi

# The first Debian archive URI of the apt sources (deb822 files, then one-line lists).
mirror=$(sed -n 's/^URIs:[[:space:]]*//p' /etc/apt/sources.list.d/*.sources 2>/dev/null \
	| tr ' ' '\n' | grep -v -e security -e '^$' | head -n 1 || true)
if [ -z "$mirror" ]; then
	mirror=$(sed -n 's/^deb[[:space:]]\{1,\}\([^[:space:]]*\).*/\1/p' \
		/etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
		| grep -v security | head -n 1 || true)
fi
if [ -z "$mirror" ]; then
	echo "standin-base.sh: no Debian mirror found in the apt sources" >&2
	exit 1
fi

rootfs=$(mktemp -d /tmp/sluice-base.XXXXXX)
trap 'rm -rf "$rootfs"' EXIT
echo "base image $tag: not available; building a stand-in from Debian bookworm ($mirror)"
debootstrap --variant=minbase --include=python3,python3-venv,python3-pip,ca-certificates \
	bookworm "$rootfs" "$mirror" >"$rootfs.log" 2>&1 || {
	tail -n 20 "$rootfs.log" >&2
	exit 1
}
rm -f "$rootfs.log"
ln -sf python3 "$rootfs/usr/bin/python"
# The machine's CA bundle: pip inside the build must trust what the machine trusts.
cp /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/ca-certificates.crt"
rm -rf "$rootfs/var/cache/apt/archives/"*.deb "$rootfs/var/lib/apt/lists/"*
tar -C "$rootfs" -c . | docker import \
	-c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
	-c 'ENV LANG=C.UTF-8' -c 'CMD ["python3"]' - "$tag" >/dev/null
echo "base image $tag: stand-in built"
