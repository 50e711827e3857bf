-- TPC-DS q55, rewritten: key = i_brand_id|i_brand, value = sum(ss_ext_sales_price) in cents.
-- No ORDER BY / LIMIT.
-- Substitution parameters (TPC-DS defaults; make_tables.py --param q55.NAME=VALUE):
-- $manager = 28     (i_manager_id, uniform 1..100)
-- $month = 11       (d_moy, uniform 11..12)
-- $year = 1999      (d_year, uniform 1998..2002)
SELECT concat_ws('|', coalesce(CAST(i_brand_id AS VARCHAR), ''), coalesce(i_brand, '')) AS key,
       CAST(coalesce(sum(CAST(round(ss_ext_sales_price * 100) AS BIGINT)), 0) AS VARCHAR) AS value
FROM date_dim, store_sales, item
WHERE d_date_sk = ss_sold_date_sk
  AND ss_item_sk = i_item_sk
  AND i_manager_id = $manager
  AND d_moy = $month
  AND d_year = $year
GROUP BY i_brand, i_brand_id
