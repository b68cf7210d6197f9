-- A ledger in an in-memory SQLite database: rows inserted, indexed,
-- aggregated, updated and deleted, as an application's embedded database
-- does.  The same rows every run (no random()).  Written for hakmem's
-- bench-programs.
PRAGMA cache_size = -65536;
CREATE TABLE account(id INTEGER PRIMARY KEY, owner TEXT, balance INTEGER);
CREATE TABLE entry(id INTEGER PRIMARY KEY, account INTEGER, amount INTEGER, memo TEXT);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
INSERT INTO account SELECT i, printf('owner-%0*d', i * 13 % 24 + 1, i * 7919 % 20000), 0 FROM n;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 120000)
INSERT INTO entry SELECT i, i * 40503 % 20000 + 1, i * 2654435761 % 10000 - 5000,
  printf('%0*x', i * 31 % 90 + 8, i * 2654435761 % 4294967291) FROM n;
CREATE INDEX entry_account ON entry(account);
CREATE INDEX account_owner ON account(owner);
UPDATE account SET balance = (SELECT coalesce(sum(amount), 0) FROM entry WHERE entry.account = account.id);
SELECT count(*), sum(balance), max(balance) FROM account;
SELECT owner, balance FROM account ORDER BY balance DESC LIMIT 10;
SELECT account, count(*), avg(amount) FROM entry GROUP BY account HAVING count(*) > 6 ORDER BY 2 DESC LIMIT 10;
DELETE FROM entry WHERE amount < -2500;
UPDATE entry SET memo = memo || memo WHERE id % 3 = 0;
SELECT count(*), sum(length(memo)) FROM entry;
CREATE TABLE summary AS SELECT account, group_concat(memo, ',') AS memos FROM entry GROUP BY account;
SELECT count(*), sum(length(memos)) FROM summary;
