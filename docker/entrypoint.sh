#!/bin/sh
# The Sluice image's entry point, with the habits of the official redis image's:
#
# * A first argument that starts with "-" or ends in ".conf" is sluice-server's:
#   `docker run sluice --appendonly no` and `docker run sluice /data/sluice.conf` both run
#   sluice-server. Any other command runs as given (`docker run -it sluice sh`).
# * The container's defaults go between the config file (if any) and the user's options:
#   listen on every interface without protected mode (the published port is the boundary,
#   as with the redis image), keep the data in /data, and log every write to the AOF with
#   an fsync every second (appendonly yes; the save points stay Redis's). An option on the
#   command line wins over them (the last word on a directive counts), and a directive the
#   given config file sets is left to the file.
# * Started as root, it hands /data to the sluice user and runs the server as that user
#   (setpriv, from util-linux, which every Debian system has).
set -eu

if [ "$#" -eq 0 ] || [ "${1#-}" != "$1" ] || [ "${1%.conf}" != "$1" ]; then
	set -- sluice-server "$@"
fi

if [ "$1" = sluice-server ] && [ "$(id -u)" = 0 ]; then
	find . \! -user sluice -exec chown sluice:sluice '{}' +
	exec setpriv --reuid=sluice --regid=sluice --init-groups "$0" "$@"
fi

if [ "$1" != sluice-server ]; then
	exec "$@"
fi
shift

case "${1:-}" in
-v | --version | -h | --help) exec sluice-server "$@" ;; # they must come first
esac

# Files the server writes are for its user alone, unless the caller chose a umask.
if [ "$(umask)" = 0022 ] || [ "$(umask)" = 022 ]; then
	umask 0077
fi

# The config file (or "-", stdin, whose lines sluice-server reads before any option).
conf=
if [ "$#" -gt 0 ] && { [ "$1" = - ] || [ "${1#-}" = "$1" ]; }; then
	conf=$1
	shift
fi

# set_in_conf NAME: does the config file set directive NAME?
set_in_conf() {
	[ -n "$conf" ] && [ -r "$conf" ] && grep -qiE "^[[:space:]]*$1([[:space:]]|\$)" "$conf"
}

# The user's options are moved behind the defaults: append the defaults, then rotate the
# user's $n arguments from the front to the back.
n=$#
set_in_conf bind || set -- "$@" --bind '* -::*'
set_in_conf protected-mode || set -- "$@" --protected-mode no
set_in_conf dir || set -- "$@" --dir /data
set_in_conf appendonly || set -- "$@" --appendonly yes
while [ "$n" -gt 0 ]; do
	set -- "$@" "$1"
	shift
	n=$((n - 1))
done

exec sluice-server ${conf:+"$conf"} "$@"
