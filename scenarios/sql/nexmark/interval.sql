-- Interval joins over Nexmark's streams (not one of Nexmark's queries: none of them has one).
-- Each join bounds the two sides' event times from below and above, so Sluice plans it as
-- Flink does, as an interval join: a row is kept only while the other side may still bring a
-- partner, and the watermark drops it after that. The result is append-only: the rows of the
-- regular join filtered by the bounds. Its left side's time stays a time attribute (the
-- engine's output watermark trails its input's by the lower bound), so windows can follow.

CREATE TABLE early_bids (auction BIGINT, bidder BIGINT, price BIGINT, opened TIMESTAMP(3), placed TIMESTAMP(3))
  WITH ('connector' = 'sluice');
CREATE TABLE new_sellers (seller BIGINT, name VARCHAR, auction BIGINT, opened TIMESTAMP(3))
  WITH ('connector' = 'sluice');
CREATE TABLE new_auctions_per_window (window_start TIMESTAMP(3), window_end TIMESTAMP(3), auctions BIGINT, last_auction BIGINT)
  WITH ('connector' = 'sluice');
CREATE TABLE new_sellers_per_window (seller BIGINT, joined TIMESTAMP(3), auctions BIGINT)
  WITH ('connector' = 'sluice');

-- Bids placed in the first ten seconds of their auction.
INSERT INTO early_bids
SELECT B.auction, B.bidder, B.price, A.dateTime, B.dateTime
FROM bid B JOIN auction A
ON B.auction = A.id AND B.dateTime BETWEEN A.dateTime AND A.dateTime + INTERVAL '10' SECOND;

-- Auctions opened by a person within five seconds of joining (or in the second before: the
-- bounds may be strict, and either time may be on either side).
INSERT INTO new_sellers
SELECT P.id, P.name, A.id, A.dateTime
FROM auction A, person P
WHERE A.seller = P.id
  AND A.dateTime > P.dateTime - INTERVAL '1' SECOND
  AND P.dateTime + INTERVAL '5' SECOND >= A.dateTime;

-- Windows over an interval join's result: new sellers' auctions per 2-second window of their
-- opening, through a view and the window table function, and each new seller's per 2-second
-- window of joining with the auctions they opened within ten seconds, as a group window (the
-- person on the left: each pair is made when its auction comes, up to ten seconds after the
-- person's time it is stamped with, which is why the join's output watermark trails its input's).
CREATE VIEW new_auctions AS
SELECT P.id AS seller, A.id AS auction, A.dateTime AS opened
FROM auction A, person P
WHERE A.seller = P.id
  AND A.dateTime > P.dateTime - INTERVAL '1' SECOND
  AND P.dateTime + INTERVAL '5' SECOND >= A.dateTime;

INSERT INTO new_auctions_per_window
SELECT window_start, window_end, COUNT(*), MAX(auction)
FROM TABLE(TUMBLE(TABLE new_auctions, DESCRIPTOR(opened), INTERVAL '2' SECOND))
GROUP BY window_start, window_end;

INSERT INTO new_sellers_per_window
SELECT P.id, TUMBLE_START(P.dateTime, INTERVAL '2' SECOND), COUNT(*)
FROM person P, auction A
WHERE A.seller = P.id
  AND A.dateTime > P.dateTime - INTERVAL '1' SECOND
  AND P.dateTime + INTERVAL '10' SECOND >= A.dateTime
GROUP BY P.id, TUMBLE(P.dateTime, INTERVAL '2' SECOND);
