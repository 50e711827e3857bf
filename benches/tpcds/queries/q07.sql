-- TPC-DS q7, rewritten: key = i_item_id; each avg(x) split into sum(x)|count(x) (non-null
-- count), money in cents: value = sum(ss_quantity)|count(ss_quantity)|sum(ss_list_price)|
-- count(ss_list_price)|sum(ss_coupon_amt)|count(ss_coupon_amt)|sum(ss_sales_price)|
-- count(ss_sales_price). No ORDER BY / LIMIT.
-- Substitution parameters (TPC-DS defaults; make_tables.py --param q7.NAME=VALUE):
-- $gen = M          (cd_gender)
-- $ms = S           (cd_marital_status)
-- $es = College     (cd_education_status)
-- $year = 2000      (d_year, uniform 1998..2002)
SELECT coalesce(i_item_id, '') AS key,
       concat_ws('|',
         coalesce(sum(ss_quantity), 0), count(ss_quantity),
         coalesce(sum(CAST(round(ss_list_price * 100) AS BIGINT)), 0), count(ss_list_price),
         coalesce(sum(CAST(round(ss_coupon_amt * 100) AS BIGINT)), 0), count(ss_coupon_amt),
         coalesce(sum(CAST(round(ss_sales_price * 100) AS BIGINT)), 0), count(ss_sales_price)) AS value
FROM store_sales, customer_demographics, date_dim, item, promotion
WHERE ss_sold_date_sk = d_date_sk
  AND ss_item_sk = i_item_sk
  AND ss_cdemo_sk = cd_demo_sk
  AND ss_promo_sk = p_promo_sk
  AND cd_gender = '$gen'
  AND cd_marital_status = '$ms'
  AND cd_education_status = '$es'
  AND (p_channel_email = 'N' OR p_channel_event = 'N')
  AND d_year = $year
GROUP BY i_item_id
