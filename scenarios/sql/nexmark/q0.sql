-- Nexmark q0, pass-through: every bid as it is (what the engine costs before any query work).
CREATE TABLE nexmark_q0 (
  auction BIGINT, bidder BIGINT, price BIGINT, dateTime TIMESTAMP(3), extra VARCHAR
) WITH ('connector' = 'sluice');

INSERT INTO nexmark_q0
SELECT auction, bidder, price, dateTime, extra FROM bid;
