-- Nexmark q11, user sessions: how many bids each bidder made in each session they were active,
-- a session ending after 10 seconds without a bid (Flink's group window `SESSION`: a key's
-- windows merge). Each session's row is final once the watermark passes its end: append-only.
-- As Flink's text, but for the sink's connector.
CREATE TABLE nexmark_q11 (
  bidder BIGINT,
  bid_count BIGINT,
  starttime TIMESTAMP(3),
  endtime TIMESTAMP(3)
) WITH ('connector' = 'sluice');

INSERT INTO nexmark_q11
SELECT
    B.bidder,
    count(*) as bid_count,
    SESSION_START(B.dateTime, INTERVAL '10' SECOND) as starttime,
    SESSION_END(B.dateTime, INTERVAL '10' SECOND) as endtime
FROM bid B
GROUP BY B.bidder, SESSION(B.dateTime, INTERVAL '10' SECOND);
