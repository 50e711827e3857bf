-- Nexmark q4, average price for a category: the mean of the winning bids of each category's
-- auctions (the highest bid within the auction's lifetime; a join, then two aggregations, the
-- second over the first's updates). Updating; the sink is keyed by category (Flink's Nexmark
-- writes it to 'blackhole').
CREATE TABLE nexmark_q4 (id BIGINT, final BIGINT, PRIMARY KEY (id) NOT ENFORCED) WITH ('connector' = 'sluice');

INSERT INTO nexmark_q4
SELECT
  Q.category,
  AVG(Q.final)
FROM (
  SELECT MAX(B.price) AS final, A.category
  FROM auction A, bid B
  WHERE A.id = B.auction AND B.dateTime BETWEEN A.dateTime AND A.expires
  GROUP BY A.id, A.category
) Q
GROUP BY Q.category;
