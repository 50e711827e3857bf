-- TPC-DS q3, rewritten: one row per group, key = d_year|i_brand_id|i_brand,
-- value = sum(ss_ext_sales_price) in cents. No ORDER BY / LIMIT.
-- Substitution parameters (TPC-DS defaults; make_tables.py --param q3.NAME=VALUE):
-- $manufact = 128   (i_manufact_id, uniform 1..1000)
-- $month = 11       (d_moy, uniform 11..12)
SELECT concat_ws('|', coalesce(CAST(dt.d_year AS VARCHAR), ''),
                      coalesce(CAST(item.i_brand_id AS VARCHAR), ''),
                      coalesce(item.i_brand, '')) AS key,
       CAST(coalesce(sum(CAST(round(ss_ext_sales_price * 100) AS BIGINT)), 0) AS VARCHAR) AS value
FROM date_dim dt, store_sales, item
WHERE dt.d_date_sk = store_sales.ss_sold_date_sk
  AND store_sales.ss_item_sk = item.i_item_sk
  AND item.i_manufact_id = $manufact
  AND dt.d_moy = $month
GROUP BY dt.d_year, item.i_brand, item.i_brand_id
