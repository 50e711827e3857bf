-- TPC-DS q42, rewritten: key = d_year|i_category_id|i_category,
-- value = sum(ss_ext_sales_price) in cents. No ORDER BY / LIMIT.
-- (i_manager_id = 1 is fixed in the TPC-DS template, not a parameter.)
-- Substitution parameters (TPC-DS defaults; make_tables.py --param q42.NAME=VALUE):
-- $month = 11       (d_moy, uniform 11..12)
-- $year = 2000      (d_year, uniform 1998..2002)
SELECT concat_ws('|', coalesce(CAST(dt.d_year AS VARCHAR), ''),
                      coalesce(CAST(item.i_category_id AS VARCHAR), ''),
                      coalesce(item.i_category, '')) AS key,
       CAST(coalesce(sum(CAST(round(ss_ext_sales_price * 100) AS BIGINT)), 0) AS VARCHAR) AS value
FROM date_dim dt, store_sales, item
WHERE dt.d_date_sk = store_sales.ss_sold_date_sk
  AND store_sales.ss_item_sk = item.i_item_sk
  AND item.i_manager_id = 1
  AND dt.d_moy = $month
  AND dt.d_year = $year
GROUP BY dt.d_year, item.i_category_id, item.i_category
