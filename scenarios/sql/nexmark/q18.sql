-- Nexmark q18, find last bid: each bidder's last bid on each auction (ROW_NUMBER() kept to 1:
-- Flink's deduplication). Updating; the sink is keyed by bidder and auction (Flink's Nexmark
-- writes it to 'blackhole').
CREATE TABLE nexmark_q18 (
  auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, dateTime TIMESTAMP(3), extra VARCHAR,
  PRIMARY KEY (bidder, auction) NOT ENFORCED
) WITH ('connector' = 'sluice');

INSERT INTO nexmark_q18
SELECT auction, bidder, price, channel, url, dateTime, extra
FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder, auction ORDER BY dateTime DESC) AS rank_number
      FROM bid)
WHERE rank_number <= 1;
