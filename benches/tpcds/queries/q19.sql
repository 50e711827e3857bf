-- TPC-DS q19, rewritten: key = i_brand_id|i_brand|i_manufact_id|i_manufact,
-- value = sum(ss_ext_sales_price) in cents. No ORDER BY / LIMIT.
-- Note: a NULL ca_zip or s_zip makes the <> comparison NULL, so the row is dropped
-- (the CSVs print NULL text as the empty field: the job must drop empty zips too).
-- Substitution parameters (TPC-DS defaults; make_tables.py --param q19.NAME=VALUE):
-- $manager = 8      (i_manager_id, uniform 1..100)
-- $month = 11       (d_moy, uniform 11..12)
-- $year = 1998      (d_year, uniform 1998..2002)
SELECT concat_ws('|', coalesce(CAST(i_brand_id AS VARCHAR), ''), coalesce(i_brand, ''),
                      coalesce(CAST(i_manufact_id AS VARCHAR), ''), coalesce(i_manufact, '')) AS key,
       CAST(coalesce(sum(CAST(round(ss_ext_sales_price * 100) AS BIGINT)), 0) AS VARCHAR) AS value
FROM date_dim, store_sales, item, customer, customer_address, store
WHERE d_date_sk = ss_sold_date_sk
  AND ss_item_sk = i_item_sk
  AND i_manager_id = $manager
  AND d_moy = $month
  AND d_year = $year
  AND ss_customer_sk = c_customer_sk
  AND c_current_addr_sk = ca_address_sk
  AND SUBSTRING(ca_zip, 1, 5) <> SUBSTRING(s_zip, 1, 5)
  AND ss_store_sk = s_store_sk
GROUP BY i_brand, i_brand_id, i_manufact_id, i_manufact
