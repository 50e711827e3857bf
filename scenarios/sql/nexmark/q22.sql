-- Nexmark q22, get the directories of a URL: the first three path segments of each bid's URL.
CREATE TABLE nexmark_q22 (
  auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, dir1 VARCHAR, dir2 VARCHAR, dir3 VARCHAR
) WITH ('connector' = 'sluice');

INSERT INTO nexmark_q22
SELECT
  auction, bidder, price, channel,
  SPLIT_INDEX(url, '/', 3) AS dir1,
  SPLIT_INDEX(url, '/', 4) AS dir2,
  SPLIT_INDEX(url, '/', 5) AS dir3
FROM bid;
