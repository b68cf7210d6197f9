#!/usr/bin/env bash
# sqlite.sh: sqlite3 with hakmem preloaded returns the same results as
# with glibc, in memory and on disk.
. "$(dirname "$0")/lib.sh"
programs sqlite3

SQL="
CREATE TABLE t(id INTEGER PRIMARY KEY, grp INTEGER, name TEXT, val REAL);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 200000)
INSERT INTO t SELECT x, x % 97, printf('name-%08d-%s', x * 7919 % 200000, hex(x)), x / 7.0 FROM c;
CREATE INDEX t_name ON t(name);
CREATE TABLE g AS SELECT grp, count(*) AS n, sum(val) AS s, group_concat(id % 10, '') AS digits FROM t GROUP BY grp;
SELECT count(*), sum(length(name)), min(name), max(name) FROM t;
SELECT grp, n, printf('%.3f', s), length(digits), substr(digits, 1, 20) FROM g ORDER BY s DESC LIMIT 10;
SELECT a.id, b.id FROM t a JOIN t b ON a.name = b.name WHERE a.id % 20000 = 0 ORDER BY a.id;
DELETE FROM t WHERE id % 3 = 0;
UPDATE t SET name = upper(name) || name WHERE id % 5 = 0;
SELECT count(*), sum(length(name)) FROM t;
SELECT name FROM t ORDER BY name DESC LIMIT 5;
"
compare "sqlite3: in-memory database" sqlite3 :memory: "$SQL"
compare "sqlite3: database file, vacuum, integrity check" bash -e -c "
sqlite3 db.sqlite \"PRAGMA journal_mode=WAL;\" \"\$1\" 'VACUUM;' 'PRAGMA integrity_check;'
sqlite3 db.sqlite 'SELECT count(*) FROM t; SELECT count(*) FROM g;'
" sh "$SQL"

finish
