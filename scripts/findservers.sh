# Sourced by scripts/test.sh: for each server variable the environment
# leaves unset, look for the server on its usual local port, with the
# address the documentation gives (docs/testing.md), and export the
# variable when the server answers there. Each variable already set is used
# as it is (CI sets them all, so CI is unchanged); a server that does not
# answer leaves its variable unset and its tests skip. One line per server
# on stderr says which was found and used.
#
# A server counts as found when it answers a query through its own client
# (psql, mariadb or mysql; redis-cli, or a PING over bash's /dev/tcp), with
# a timeout of 2 s: an open port alone is not a database the tests can use.
# SLUICE_FIND_PG, SLUICE_FIND_MYSQL and SLUICE_FIND_REDIS replace the
# candidates (scripts/test-findservers.sh uses them to try closed ports).

find_pg=${SLUICE_FIND_PG:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}
find_mysql=${SLUICE_FIND_MYSQL:-root@tcp(127.0.0.1:3306)/test}
find_redis=${SLUICE_FIND_REDIS:-127.0.0.1:6379}

# probe_pg DSN: PostgreSQL answers a query at DSN.
probe_pg() {
  command -v psql >/dev/null || return 3
  PGCONNECT_TIMEOUT=2 psql "$1" -XAtqc 'select 1' >/dev/null 2>&1
}

# probe_mysql DSN: MySQL or MariaDB answers a query at the go-sql-driver DSN.
probe_mysql() {
  local client
  client=$(command -v mariadb || command -v mysql) || return 3
  [[ $1 =~ ^([^:@]*)(:([^@]*))?@tcp\(([^:\)]*)(:([0-9]+))?\)/([^?]*) ]] || return 1
  MYSQL_PWD=${BASH_REMATCH[3]} "$client" --connect-timeout=2 -h "${BASH_REMATCH[4]}" -P "${BASH_REMATCH[6]:-3306}" \
    -u "${BASH_REMATCH[1]}" "${BASH_REMATCH[7]}" -e 'select 1' >/dev/null 2>&1
}

# probe_redis HOST:PORT: Redis answers PING.
probe_redis() {
  local host=${1%:*} port=${1##*:} reply
  if command -v redis-cli >/dev/null; then
    [ "$(timeout 2 redis-cli -h "$host" -p "$port" ping 2>/dev/null)" = PONG ]
    return
  fi
  reply=$(timeout 2 bash -c 'exec 3<>"/dev/tcp/$0/$1" && printf "PING\r\n" >&3 && head -c 5 <&3' "$host" "$port" 2>/dev/null)
  [ "$reply" = $'+PONG' ]
}

# find_server NAME VAR CANDIDATE PROBE
find_server() {
  local name=$1 var=$2 candidate=$3 probe=$4 rc=0
  if [ -n "${!var:-}" ]; then
    echo "  $name: $var is set, using ${!var}" >&2
    return
  fi
  "$probe" "$candidate" || rc=$?
  case $rc in
    0) export "$var=$candidate"
       echo "  $name: found at $candidate, using it ($var was not set)" >&2 ;;
    3) echo "  $name: $var is not set and no client is installed to look for it at $candidate: its tests skip" >&2 ;;
    *) echo "  $name: $var is not set and nothing answers at $candidate: its tests skip" >&2 ;;
  esac
}

echo "scripts/test.sh: servers (set the variables to choose others):" >&2
find_server PostgreSQL SLUICE_POSTGRES_DSN "$find_pg" probe_pg
find_server MySQL/MariaDB SLUICE_MYSQL_DSN "$find_mysql" probe_mysql
find_server Redis SLUICE_REDIS_ADDR "$find_redis" probe_redis
