#!/bin/sh
# The official memcached image's entrypoint: arguments that start with a dash are
# memcached's own (the memcached role passes `-m N -c N` as args).
set -e
if [ "${1#-}" != "$1" ]; then
	set -- memcached "$@"
fi
exec "$@"
