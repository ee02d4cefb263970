#!/usr/bin/env bash
# Starts a throwaway three-node MariaDB Galera cluster on loopback for the
# Galera suites and prints the variables that point them at it:
#
#   eval "$(DIR=$(mktemp -d) bash scripts/galera/start.sh)"
#   go test -run Galera ./adapters/sql/sqltest
#   bash scripts/galera/stop.sh "$SLUICE_GALERA_DIR"
#
# Needs mariadbd, mariadb-install-db, galera-4 and rsync. Each node has its
# own datadir, socket, pid file and SQL port under $DIR/nodeN; node 1
# bootstraps the cluster (--wsrep-new-cluster), nodes 2 and 3 join one at a
# time by rsync SST. Run as root, the nodes run as the mysql user: rsync's
# SST daemon drops to nobody and cannot write a root-owned datadir. Every
# port is set explicitly, in the 2xxxx range: away from the ephemeral range
# (32768-60999, where SST joins failed), from the system server on 3306, and
# with the IST port chosen (its default, the gcomm port + 1, is the next
# node's gcomm port). A node is suspected after 15 s of silence (5 s by
# default, which a loaded CI machine exceeded: a node left and rejoined
# mid-suite). $DIR/nodeN/run restarts a node that was stopped or
# killed (it rejoins by IST); scripts/galera/stop.sh stops them all.
set -euo pipefail
DIR=${DIR:-$(mktemp -d)}
GALERA_BASE=${GALERA_BASE:-23300} # node i: SQL GALERA_BASE+i, gcomm GALERA_BASE+1000+10i, IST +1, SST +2
PROVIDER=${PROVIDER:-/usr/lib/galera/libgalera_smm.so}
USER_OPT=""
if [ "$(id -u)" = 0 ]; then USER_OPT="--user=mysql"; fi

gcomm() { echo $((GALERA_BASE + 1000 + 10 * $1)); }
addr="gcomm://127.0.0.1:$(gcomm 1),127.0.0.1:$(gcomm 2),127.0.0.1:$(gcomm 3)"

# status N NAME: one wsrep status value of node N, or nothing.
status() {
  mariadb --no-defaults -uroot -h127.0.0.1 -P$((GALERA_BASE + $1)) -N -B \
    -e "SHOW STATUS LIKE '$2'" 2>/dev/null | cut -f2
}

# wait_synced N: wait up to 120 s for node N to be Synced; fails when its
# server exits first.
wait_synced() {
  local pid
  for _ in $(seq 1 600); do
    if [ "$(status "$1" wsrep_local_state_comment)" = Synced ]; then return 0; fi
    pid=$(cat "$DIR/node$1/pid" 2>/dev/null || true)
    if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then return 1; fi
    sleep 0.2
  done
  return 1
}

setup() {
  local n=$1 d=$DIR/node$1 g
  g=$(gcomm "$n")
  mkdir -p "$d/data"
  cat >"$d/my.cnf" <<CNF
[mariadbd]
datadir=$d/data
socket=$d/sock
pid-file=$d/pid
log-error=$d/err.log
port=$((GALERA_BASE + n))
bind-address=127.0.0.1
skip-name-resolve
innodb_buffer_pool_size=64M
innodb_log_file_size=16M
max_connections=500
binlog_format=ROW
innodb_autoinc_lock_mode=2
wsrep_on=ON
wsrep_provider=$PROVIDER
wsrep_cluster_name=sluice
wsrep_cluster_address=$addr
wsrep_node_address=127.0.0.1
wsrep_node_name=node$n
wsrep_sst_method=rsync
wsrep_sst_receive_address=127.0.0.1:$((g + 2))
wsrep_provider_options="gmcast.listen_addr=tcp://127.0.0.1:$g;ist.recv_addr=127.0.0.1:$((g + 1));gcache.size=64M;evs.suspect_timeout=PT15S;evs.inactive_timeout=PT30S"
CNF
  # run starts the node in the background; run --wsrep-new-cluster
  # bootstraps a new cluster with it.
  cat >"$d/run" <<RUN
#!/bin/sh
rm -f "$d/pid"
exec setsid /usr/sbin/mariadbd --defaults-file="$d/my.cnf" $USER_OPT "\$@" </dev/null >>"$d/out.log" 2>&1 &
RUN
  chmod +x "$d/run"
  if [ -n "$USER_OPT" ]; then chown -R mysql:mysql "$d"; chmod 755 "$DIR"; fi
}

for n in 1 2 3; do setup "$n"; done
if [ -n "$USER_OPT" ]; then chown mysql:mysql "$DIR"; fi
# One datadir, copied: the joiners' contents are replaced by SST anyway.
mariadb-install-db --no-defaults $USER_OPT --datadir="$DIR/node1/data" --skip-test-db \
  --auth-root-authentication-method=normal >"$DIR/install.log" 2>&1
"$DIR/node1/run" --wsrep-new-cluster
wait_synced 1 || { echo "node 1 did not start: see $DIR/node1/err.log" >&2; exit 1; }
mariadb --no-defaults -uroot -h127.0.0.1 -P$((GALERA_BASE + 1)) -e 'CREATE DATABASE IF NOT EXISTS test'
for n in 2 3; do
  ok=""
  for try in 1 2 3; do
    "$DIR/node$n/run"
    if wait_synced "$n"; then ok=1; break; fi
    echo "node $n failed to join (try $try), retrying: $(tail -3 "$DIR/node$n/err.log")" >&2
    pid=$(cat "$DIR/node$n/pid" 2>/dev/null || true)
    if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; fi
    sleep 1
    rm -rf "$DIR/node$n/data"; mkdir -p "$DIR/node$n/data"
    if [ -n "$USER_OPT" ]; then chown mysql:mysql "$DIR/node$n/data"; fi
  done
  [ -n "$ok" ] || { echo "node $n did not join: see $DIR/node$n/err.log" >&2; exit 1; }
done
for _ in $(seq 1 100); do
  if [ "$(status 3 wsrep_cluster_size)" = 3 ] && [ "$(status 3 wsrep_ready)" = ON ]; then break; fi
  sleep 0.2
done
[ "$(status 1 wsrep_cluster_size)" = 3 ] || { echo "the cluster did not reach 3 nodes" >&2; exit 1; }
DSNS=""
for n in 1 2 3; do DSNS="$DSNS${DSNS:+,}root@tcp(127.0.0.1:$((GALERA_BASE + n)))/test"; done
echo "export SLUICE_GALERA_DSNS='$DSNS' SLUICE_GALERA_DIR='$DIR'"
