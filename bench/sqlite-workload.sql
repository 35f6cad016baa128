-- The sqlite3 workload of the leakscope benchmark, run as
--   sqlite3 -batch :memory: "CREATE TABLE param(n); INSERT INTO param VALUES(ROWS);" ".read sqlite-workload.sql"
-- Builds a table of ROWS rows in memory, indexes it, updates a part and runs
-- aggregate queries.  Deterministic: the last line, "sqlite-workload ...",
-- must be the same under any tracker.

CREATE TABLE item(id INTEGER PRIMARY KEY, k INTEGER, name TEXT, body TEXT);

WITH RECURSIVE c(x) AS (
	SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < (SELECT n FROM param)
)
INSERT INTO item
SELECT x, (x * 7919) % 1009, 'name-' || ((x * 31) % 9973),
       substr(hex(zeroblob(160)), 1, 16 + (x * 13) % 300)
FROM c;

CREATE INDEX item_k ON item(k, name);
CREATE INDEX item_name ON item(name);

UPDATE item SET body = body || name WHERE k % 7 = 0;

CREATE TABLE result(q TEXT, v INTEGER);
INSERT INTO result
SELECT 'groups', count(*) FROM (SELECT k, count(*), sum(length(body)) FROM item GROUP BY k);
INSERT INTO result
SELECT 'names', count(DISTINCT name) FROM item;
INSERT INTO result
SELECT 'top', sum(n) FROM (SELECT name, count(*) AS n FROM item GROUP BY name
                           ORDER BY n DESC, name LIMIT 50);
INSERT INTO result
SELECT 'join', count(*) FROM item a JOIN item b ON a.id = b.k + 1 WHERE a.k < 100;
INSERT INTO result
SELECT 'bytes', sum(length(body)) FROM item WHERE name BETWEEN 'name-1' AND 'name-5';
INSERT INTO result
SELECT 'sorted', sum(id % 97) FROM (SELECT id FROM item ORDER BY body, id LIMIT 20000);

SELECT 'sqlite-workload rows=' || (SELECT n FROM param) || ' '
       || group_concat(q || '=' || v, ' ') FROM result;
