#!/usr/bin/env bash
# Issue 19's latency sweep: Test 1, warm, default table, the arm's connection through the latency proxy at each
# RTT (and direct), 3 interleaved rounds (ROUNDS), one pytest run per arm (a finished arm's JSON is kept if a later
# one is stopped). Frozen copy of the tree in $TREE; ARMS picks arms; OPS the ops (default D,F,I, as published: B, J
# and K send 10,000 or 300 statements per round, hours at 25 ms; C depends on the driver pipelining executemany);
# RTTS the round-trip times (default direct,0,1,5,25); NAME the JSON stem ({arm} is replaced by the arm); DB the
# server (postgresql, as published for issue 19, or mysql for issue 20's MariaDB sweep; ARMS defaults to its arms).
set -u
OUT=${OUT:-/work/main/results/2026-12-01-postgresql}
TREE=${TREE:-/tmp/runtree16}
PY=${PY:-/tmp/v313all/bin/python}
NAME=${NAME:-"rtt-{arm}"}
cd "$TREE"
export PYTHONPATH="$TREE/src:$TREE"
DB=${DB:-postgresql}
case "$DB" in
  postgresql) ALL="psycopg asyncpg django peewee sqlalchemy sqlalchemy_async sqlmodel sqlmodel_async sqlobject tortoise piccolo ormar" ;;
  mysql|mariadb) ALL="mysqlclient asyncmy django peewee sqlalchemy sqlalchemy_async sqlmodel sqlmodel_async sqlobject tortoise ormar" ;;
  *) echo "run-rtt-sweep.sh: DB must be postgresql or mysql, not '$DB'" >&2; exit 2 ;;
esac
for arm in ${ARMS:-$ALL}; do
  stem=${NAME//\{arm\}/$arm}
  start=$(date +%s)
  "$PY" -m pytest bench_suites -p no:cacheprovider -q --ormbench-arms=$arm --ormbench-control=off \
    --ormbench-db=$DB --ormbench-rtt=${RTTS:-direct,0,1,5,25} --ormbench-models=simple \
    --ormbench-ops=${OPS:-D,F,I} --ormbench-mode=warm --ormbench-table=default --ormbench-rounds=${ROUNDS:-3} \
    --benchmark-json=$OUT/$stem.json > $OUT/$stem.log 2>&1
  echo "exit=$? wall_seconds=$(( $(date +%s) - start )) started=$(date -u -d @$start +%FT%TZ)" >> $OUT/$stem.log
done
