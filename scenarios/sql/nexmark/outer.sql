-- Outer joins and joins of updating inputs over Nexmark's streams (not one of Nexmark's
-- queries: none of them has one). Each result updates: a row of an outer side is written padded
-- with NULLs until a partner comes, then taken back for its pairs (and written padded again if
-- its last partner is taken back); a join of an aggregate's updates takes back the pairs of
-- every old result. No row of these has a key the planner knows, so each goes to its sink
-- through an upsert materializer keyed by the sink's primary key (Flink's
-- SinkUpsertMaterializer), which each query's key makes unique.

CREATE TABLE auction_bids (id BIGINT, itemName VARCHAR, bids BIGINT, top BIGINT,
  PRIMARY KEY (id) NOT ENFORCED) WITH ('connector' = 'sluice');
CREATE TABLE seller_activity (seller BIGINT, name VARCHAR, auctions BIGINT,
  PRIMARY KEY (seller) NOT ENFORCED) WITH ('connector' = 'sluice');
CREATE TABLE bids_over_reserve (auction BIGINT, bidder BIGINT, price BIGINT, placed TIMESTAMP(3), reserve BIGINT,
  PRIMARY KEY (auction, bidder, price, placed) NOT ENFORCED) WITH ('connector' = 'sluice');
CREATE TABLE quiet_auctions (id BIGINT, bids BIGINT, PRIMARY KEY (id) NOT ENFORCED) WITH ('connector' = 'sluice');
CREATE TABLE category_leaders (auction BIGINT, category BIGINT, top BIGINT, best BIGINT,
  PRIMARY KEY (auction) NOT ENFORCED) WITH ('connector' = 'sluice');

-- Every auction with its number of bids and its highest bid, auctions without bids included
-- (a left join of an aggregate's updates).
INSERT INTO auction_bids
SELECT A.id, A.itemName, B.bids, B.top
FROM auction A LEFT JOIN (SELECT auction, COUNT(*) AS bids, MAX(price) AS top FROM bid GROUP BY auction) B
ON A.id = B.auction;

-- Every person and every seller, with how many auctions they opened: people who sold nothing,
-- and sellers the stream has not introduced, each padded on the other side (a full join).
INSERT INTO seller_activity
SELECT COALESCE(P.id, S.seller), P.name, S.auctions
FROM person P FULL OUTER JOIN (SELECT seller, COUNT(*) AS auctions FROM auction GROUP BY seller) S
ON P.id = S.seller;

-- Every auction with its number of bids while it has fewer than five, NULL once it has more:
-- the group's HAVING deletes its row, its pair is taken back and the auction padded again.
INSERT INTO quiet_auctions
SELECT A.id, B.bids
FROM auction A LEFT JOIN (SELECT auction, COUNT(*) AS bids FROM bid GROUP BY auction HAVING COUNT(*) < 5) B
ON A.id = B.auction;

-- Each bid with its auction's reserve if it bid above it, else with NULL (a condition of the ON
-- that is not a key: the bid stays, padded, when it fails).
INSERT INTO bids_over_reserve
SELECT B.auction, B.bidder, B.price, B.dateTime, A.reserve
FROM bid B LEFT JOIN auction A ON B.auction = A.id AND B.price > A.reserve;

-- Each auction's highest bid beside the highest of its category: an inner join of two
-- aggregates' updates, the second a MAX over the first's updates (an auction's top is taken back
-- as it grows, and the category's maximum found again among the tops still there).
CREATE VIEW auction_tops AS
SELECT A.id AS auction, A.category, MAX(B.price) AS top
FROM auction A JOIN bid B ON A.id = B.auction GROUP BY A.id, A.category;

INSERT INTO category_leaders
SELECT T.auction, T.category, T.top, C.best
FROM auction_tops T JOIN (SELECT category, MAX(top) AS best FROM auction_tops GROUP BY category) C
ON T.category = C.category;
