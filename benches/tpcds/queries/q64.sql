-- TPC-DS q64, rewritten: one row per pair of cross_sales rows (cs1 of $year, cs2 of the next
-- year, the same item and store), key = what tells two pairs apart: cs1's group columns
-- (product name, item, store name, store zip, the sale's address, the customer's address, the
-- three years) then cs2's that differ (the two addresses, the three years); value =
-- cs1.cnt|cs1.s1|cs1.s2|cs1.s3|cs2.s1|cs2.s2|cs2.s3|cs2.cnt (money in cents; a sum over NULLs
-- only prints empty). No ORDER BY / LIMIT. The original's SELECT list leaves out item_sk, the
-- first-sale and first-ship years and cs2's addresses, so two of its rows can be equal; the key
-- keeps them apart. Notes: a NULL among cr_refunded_cash, cr_reversed_charge, cr_store_credit
-- makes that return's refund NULL, which the SUM skips; a SUM over NULLs only fails the HAVING.
-- The price ranges intersect in [$price + 1, $price + 10].
-- Substitution parameters (TPC-DS defaults; make_tables.py --param q64.NAME=VALUE):
-- $year = 1999      (cs1.syear; cs2.syear is the next; uniform 1999..2001)
-- $price = 64       (i_current_price, whole dollars; uniform 0..85)
-- $colors = purple,burlywood,indian,spring,floral,medium   (i_color, six distinct colors)
WITH cs_ui AS
  (SELECT cs_item_sk,
          sum(cs_ext_list_price) AS sale,
          sum(cr_refunded_cash + cr_reversed_charge + cr_store_credit) AS refund
   FROM catalog_sales, catalog_returns
   WHERE cs_item_sk = cr_item_sk
     AND cs_order_number = cr_order_number
   GROUP BY cs_item_sk
   HAVING sum(cs_ext_list_price) > 2 * sum(cr_refunded_cash + cr_reversed_charge + cr_store_credit)),
cross_sales AS
  (SELECT i_product_name product_name, i_item_sk item_sk, s_store_name store_name, s_zip store_zip,
          ad1.ca_street_number b_street_number, ad1.ca_street_name b_street_name,
          ad1.ca_city b_city, ad1.ca_zip b_zip,
          ad2.ca_street_number c_street_number, ad2.ca_street_name c_street_name,
          ad2.ca_city c_city, ad2.ca_zip c_zip,
          d1.d_year AS syear, d2.d_year AS fsyear, d3.d_year s2year,
          count(*) cnt,
          sum(CAST(round(ss_wholesale_cost * 100) AS BIGINT)) s1,
          sum(CAST(round(ss_list_price * 100) AS BIGINT)) s2,
          sum(CAST(round(ss_coupon_amt * 100) AS BIGINT)) s3
   FROM store_sales, store_returns, cs_ui, date_dim d1, date_dim d2, date_dim d3, store, customer,
        customer_demographics cd1, customer_demographics cd2, promotion,
        household_demographics hd1, household_demographics hd2,
        customer_address ad1, customer_address ad2, income_band ib1, income_band ib2, item
   WHERE ss_store_sk = s_store_sk
     AND ss_sold_date_sk = d1.d_date_sk
     AND ss_customer_sk = c_customer_sk
     AND ss_cdemo_sk = cd1.cd_demo_sk
     AND ss_hdemo_sk = hd1.hd_demo_sk
     AND ss_addr_sk = ad1.ca_address_sk
     AND ss_item_sk = i_item_sk
     AND ss_item_sk = sr_item_sk
     AND ss_ticket_number = sr_ticket_number
     AND ss_item_sk = cs_ui.cs_item_sk
     AND c_current_cdemo_sk = cd2.cd_demo_sk
     AND c_current_hdemo_sk = hd2.hd_demo_sk
     AND c_current_addr_sk = ad2.ca_address_sk
     AND c_first_sales_date_sk = d2.d_date_sk
     AND c_first_shipto_date_sk = d3.d_date_sk
     AND ss_promo_sk = p_promo_sk
     AND hd1.hd_income_band_sk = ib1.ib_income_band_sk
     AND hd2.hd_income_band_sk = ib2.ib_income_band_sk
     AND cd1.cd_marital_status <> cd2.cd_marital_status
     AND list_contains(string_split('$colors', ','), i_color)
     AND i_current_price BETWEEN $price AND $price + 10
     AND i_current_price BETWEEN $price + 1 AND $price + 15
   GROUP BY i_product_name, i_item_sk, s_store_name, s_zip,
            ad1.ca_street_number, ad1.ca_street_name, ad1.ca_city, ad1.ca_zip,
            ad2.ca_street_number, ad2.ca_street_name, ad2.ca_city, ad2.ca_zip,
            d1.d_year, d2.d_year, d3.d_year)
SELECT concat_ws('|',
         coalesce(cs1.product_name, ''), cs1.item_sk, coalesce(cs1.store_name, ''),
         coalesce(cs1.store_zip, ''),
         coalesce(cs1.b_street_number, ''), coalesce(cs1.b_street_name, ''),
         coalesce(cs1.b_city, ''), coalesce(cs1.b_zip, ''),
         coalesce(cs1.c_street_number, ''), coalesce(cs1.c_street_name, ''),
         coalesce(cs1.c_city, ''), coalesce(cs1.c_zip, ''),
         cs1.syear, cs1.fsyear, cs1.s2year,
         coalesce(cs2.b_street_number, ''), coalesce(cs2.b_street_name, ''),
         coalesce(cs2.b_city, ''), coalesce(cs2.b_zip, ''),
         coalesce(cs2.c_street_number, ''), coalesce(cs2.c_street_name, ''),
         coalesce(cs2.c_city, ''), coalesce(cs2.c_zip, ''),
         cs2.syear, cs2.fsyear, cs2.s2year) AS key,
       concat_ws('|', cs1.cnt,
         coalesce(CAST(cs1.s1 AS VARCHAR), ''), coalesce(CAST(cs1.s2 AS VARCHAR), ''),
         coalesce(CAST(cs1.s3 AS VARCHAR), ''),
         coalesce(CAST(cs2.s1 AS VARCHAR), ''), coalesce(CAST(cs2.s2 AS VARCHAR), ''),
         coalesce(CAST(cs2.s3 AS VARCHAR), ''), cs2.cnt) AS value
FROM cross_sales cs1, cross_sales cs2
WHERE cs1.item_sk = cs2.item_sk
  AND cs1.syear = $year
  AND cs2.syear = $year + 1
  AND cs2.cnt <= cs1.cnt
  AND cs1.store_name = cs2.store_name
  AND cs1.store_zip = cs2.store_zip
