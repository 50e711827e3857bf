-- Window table functions and window aggregation over Nexmark's bids: per auction per 10-second
-- tumbling window (with HAVING), over 10-second windows every 2 seconds, cumulating per channel
-- every 2 seconds up to 10, each auction's sessions of bids at most a second apart (a group
-- window, `SESSION`: windows that merge, and touch when two bids are exactly a second apart),
-- and the windowed rows themselves. Every result is append-only (a
-- window's row is final when the watermark passes its end); `cumulated` is keyed to show an
-- upsert sink taking an append-only result.
CREATE TABLE tumbled (window_start TIMESTAMP(3), window_end TIMESTAMP(3), auction BIGINT, bids BIGINT, top BIGINT)
  WITH ('connector' = 'sluice');
CREATE TABLE hopped (window_start TIMESTAMP(3), window_end TIMESTAMP(3), bids BIGINT, total BIGINT)
  WITH ('connector' = 'sluice');
CREATE TABLE cumulated (window_start TIMESTAMP(3), window_end TIMESTAMP(3), channel VARCHAR, bids BIGINT,
  PRIMARY KEY (window_start, window_end, channel) NOT ENFORCED) WITH ('connector' = 'sluice');
CREATE TABLE sessions (auction BIGINT, session_start TIMESTAMP(3), session_end TIMESTAMP(3), bids BIGINT, top BIGINT)
  WITH ('connector' = 'sluice');
CREATE TABLE windowed (auction BIGINT, price BIGINT, window_start TIMESTAMP(3), window_end TIMESTAMP(3))
  WITH ('connector' = 'sluice');

INSERT INTO tumbled
SELECT window_start, window_end, auction, COUNT(*), MAX(price)
FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
GROUP BY window_start, window_end, auction HAVING COUNT(*) > 1;

INSERT INTO hopped
SELECT window_start, window_end, COUNT(*), SUM(price)
FROM TABLE(HOP(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
WHERE price > 1000
GROUP BY window_start, window_end;

INSERT INTO cumulated
SELECT window_start, window_end, channel, COUNT(*)
FROM TABLE(CUMULATE(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
GROUP BY window_start, window_end, channel;

INSERT INTO windowed
SELECT auction, price, window_start, window_end
FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '5' SECOND)) WHERE MOD(auction, 10) = 0;

INSERT INTO sessions
SELECT auction, SESSION_START(dateTime, INTERVAL '1' SECOND), SESSION_END(dateTime, INTERVAL '1' SECOND), COUNT(*), MAX(price)
FROM bid
GROUP BY auction, SESSION(dateTime, INTERVAL '1' SECOND);
