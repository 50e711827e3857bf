-- Interval joins over Nexmark's streams (not one of Nexmark's queries: none of them has one).
-- Each join bounds the two sides' event times from below and above, so Sluice plans it as
-- Flink does, as an interval join: a row is kept only while the other side may still bring a
-- partner, and the watermark drops it after that. The result is append-only: the rows of the
-- regular join filtered by the bounds.

CREATE TABLE early_bids (auction BIGINT, bidder BIGINT, price BIGINT, opened TIMESTAMP(3), placed TIMESTAMP(3))
  WITH ('connector' = 'sluice');
CREATE TABLE new_sellers (seller BIGINT, name VARCHAR, auction BIGINT, opened TIMESTAMP(3))
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
