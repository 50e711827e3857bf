-- TPC-DS q95, rewritten: a single row, key = 'all',
-- value = order_count|total_shipping_cost|total_net_profit (money in cents). No ORDER BY / LIMIT.
-- Note: a NULL ws_warehouse_sk never satisfies ws1.ws_warehouse_sk <> ws2.ws_warehouse_sk;
-- the CSVs print it as -1, so the job must drop warehouse -1 rows from the self-join.
-- Substitution parameters (TPC-DS defaults; make_tables.py --param q95.NAME=VALUE):
-- $start = 1999-02-01   (first ship date; the range is [start, start + 60 days];
--                        year uniform 1999..2002, month uniform 2..5, day 1)
-- $state = IL           (ca_state)
-- $company = pri        (web_company_name)
WITH ws_wh AS
  (SELECT ws1.ws_order_number, ws1.ws_warehouse_sk wh1, ws2.ws_warehouse_sk wh2
   FROM web_sales ws1, web_sales ws2
   WHERE ws1.ws_order_number = ws2.ws_order_number
     AND ws1.ws_warehouse_sk <> ws2.ws_warehouse_sk)
SELECT 'all' AS key,
       concat_ws('|',
         count(DISTINCT ws_order_number),
         coalesce(sum(CAST(round(ws_ext_ship_cost * 100) AS BIGINT)), 0),
         coalesce(sum(CAST(round(ws_net_profit * 100) AS BIGINT)), 0)) AS value
FROM web_sales ws1, date_dim, customer_address, web_site
WHERE d_date BETWEEN CAST('$start' AS DATE) AND CAST('$start' AS DATE) + 60
  AND ws1.ws_ship_date_sk = d_date_sk
  AND ws1.ws_ship_addr_sk = ca_address_sk
  AND ca_state = '$state'
  AND ws1.ws_web_site_sk = web_site_sk
  AND web_company_name = '$company'
  AND ws1.ws_order_number IN (SELECT ws_order_number FROM ws_wh)
  AND ws1.ws_order_number IN (SELECT wr_order_number FROM web_returns, ws_wh
                              WHERE wr_order_number = ws_wh.ws_order_number)
