-- TPC-DS q72, rewritten: key = i_item_desc|w_warehouse_name|d1.d_week_seq,
-- value = no_promo|promo|total_cnt. No ORDER BY / LIMIT.
-- Notes: d3.d_date > d1.d_date + 5 equals d3.d_date_sk > d1.d_date_sk + 5 (consecutive sks).
-- The LEFT JOIN to catalog_returns never fans out ((cr_item_sk, cr_order_number) is unique)
-- and changes nothing; it is kept to stay the TPC-DS text. A NULL inv_quantity_on_hand or
-- cs_quantity drops the row (NULL comparison).
-- Substitution parameters (TPC-DS defaults; make_tables.py --param q72.NAME=VALUE):
-- $bp = >10000      (hd_buy_potential)
-- $ms = D           (cd_marital_status)
-- $year = 1999      (d1.d_year, uniform 1998..2002)
SELECT concat_ws('|', coalesce(i_item_desc, ''), coalesce(w_warehouse_name, ''),
                      coalesce(CAST(d1.d_week_seq AS VARCHAR), '')) AS key,
       concat_ws('|',
         sum(CASE WHEN p_promo_sk IS NULL THEN 1 ELSE 0 END),
         sum(CASE WHEN p_promo_sk IS NOT NULL THEN 1 ELSE 0 END),
         count(*)) AS value
FROM catalog_sales
JOIN inventory ON (cs_item_sk = inv_item_sk)
JOIN warehouse ON (w_warehouse_sk = inv_warehouse_sk)
JOIN item ON (i_item_sk = cs_item_sk)
JOIN customer_demographics ON (cs_bill_cdemo_sk = cd_demo_sk)
JOIN household_demographics ON (cs_bill_hdemo_sk = hd_demo_sk)
JOIN date_dim d1 ON (cs_sold_date_sk = d1.d_date_sk)
JOIN date_dim d2 ON (inv_date_sk = d2.d_date_sk)
JOIN date_dim d3 ON (cs_ship_date_sk = d3.d_date_sk)
LEFT OUTER JOIN promotion ON (cs_promo_sk = p_promo_sk)
LEFT OUTER JOIN catalog_returns ON (cr_item_sk = cs_item_sk AND cr_order_number = cs_order_number)
WHERE d1.d_week_seq = d2.d_week_seq
  AND inv_quantity_on_hand < cs_quantity
  AND d3.d_date > d1.d_date + 5
  AND hd_buy_potential = '$bp'
  AND d1.d_year = $year
  AND cd_marital_status = '$ms'
GROUP BY i_item_desc, w_warehouse_name, d1.d_week_seq
