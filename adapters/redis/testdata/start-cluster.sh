#!/bin/sh
# Starts a throwaway three-master Redis Cluster for the cluster tests and
# prints the variable that points them at it. Needs redis-server and
# redis-cli 7 or later. Stop it with: kill $(cat "$DIR"/*/pid)
#
#   eval "$(adapters/redis/testdata/start-cluster.sh)"
#   go test ./adapters/redis/redistest
set -eu
BASE=${BASE:-17101}
DIR=${DIR:-$(mktemp -d)}
ADDRS=""
for i in 0 1 2; do
	port=$((BASE + i))
	mkdir -p "$DIR/$port"
	(cd "$DIR/$port" && redis-server --port "$port" --bind 127.0.0.1 --cluster-enabled yes \
		--cluster-config-file nodes.conf --save '' --appendonly no --daemonize yes \
		--pidfile "$DIR/$port/pid" --logfile "$DIR/$port/log")
	ADDRS="$ADDRS${ADDRS:+,}127.0.0.1:$port"
done
sleep 1 # the servers accept connections once daemonized; give them a moment to listen
redis-cli --cluster create $(echo "$ADDRS" | tr ',' ' ') --cluster-replicas 0 --cluster-yes >&2
until redis-cli -p "$BASE" cluster info | grep -q 'cluster_state:ok'; do sleep 0.2; done
echo "export SLUICE_REDIS_CLUSTER_ADDRS=$ADDRS # servers in $DIR"
