-- Nexmark q19, auction Top-N: each auction's ten highest bids, numbered (ROW_NUMBER() kept to
-- 10). Updating; the sink is keyed by auction and number (Flink's Nexmark writes it to
-- 'blackhole').
CREATE TABLE nexmark_q19 (
  auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, dateTime TIMESTAMP(3), extra VARCHAR,
  rank_number BIGINT,
  PRIMARY KEY (auction, rank_number) NOT ENFORCED
) WITH ('connector' = 'sluice');

INSERT INTO nexmark_q19
SELECT * FROM
(SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC) AS rank_number FROM bid)
WHERE rank_number <= 10;
