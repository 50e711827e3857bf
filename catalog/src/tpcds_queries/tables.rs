//! The TPC-DS tables the queries read, projected to the columns they use: one record type and
//! one CSV [`InputSpec`] per table, named as in the TPC-DS schema.
//!
//! Encoding (the same whether a table comes from `benches/tpcds/make_tables.py`, DuckDB's
//! dsdgen, or from [`super::generate`]): money in integer cents; a date as its `d_date_sk`
//! (consecutive days, so date arithmetic is arithmetic on keys); a `_sk` key that is NULL as
//! `-1`, which joins nothing; any other integer as an optional one, an empty field being NULL;
//! NULL text as the empty string.

use sluice_engine::api::{InputFormat, InputSpec, Record};
use sluice_engine::connectors::csv::{Column, CsvRecord, CsvValue};
use sluice_engine::record::DecodeError;

/// Declares a table: its record (a struct of its columns), the record's codec and CSV reading,
/// and its input.
macro_rules! table {
    ($(#[doc = $doc:literal])+ $record:ident, $input:ident, $name:literal { $($field:ident: $ty:ty,)+ }) => {
        $(#[doc = $doc])+
        #[derive(Clone, Debug, PartialEq, Eq)]
        #[allow(missing_docs)]
        pub struct $record {
            $(pub $field: $ty,)+
        }

        impl Record for $record {
            fn encode(&self, out: &mut Vec<u8>) {
                $(self.$field.encode(out);)+
            }
            fn decode(input: &mut &[u8]) -> Result<Self, DecodeError> {
                Ok($record { $($field: <$ty>::decode(input)?,)+ })
            }
        }

        impl CsvRecord for $record {
            const TYPES: &'static [sluice_engine::connectors::ColumnType] = &[$(<$ty as CsvValue>::TYPE,)+];
            fn from_fields(fields: &[String]) -> Result<Self, (usize, String)> {
                let mut column = 0..;
                Ok($record {
                    $($field: {
                        let index = column.next().expect("an unbounded range");
                        <$ty as CsvValue>::parse_field(&fields[index]).map_err(|error| (index, error))?
                    },)+
                })
            }
        }

        $(#[doc = $doc])+
        pub const $input: InputSpec = InputSpec {
            name: $name,
            format: InputFormat::Csv(&[$(Column::new(stringify!($field), <$ty as CsvValue>::TYPE),)+]),
            doc: concat!("TPC-DS `", $name, "`, projected: ", $(stringify!($field), " "),+),
        };
    };
}

table! {
    /// A calendar day.
    DateDim, DATE_DIM, "date_dim" {
        d_date_sk: i64,
        d_year: i64,
        d_moy: i64,
        d_week_seq: i64,
    }
}

table! {
    /// An item (a version of a product).
    Item, ITEM, "item" {
        i_item_sk: i64,
        i_item_id: String,
        i_item_desc: String,
        i_brand_id: Option<i64>,
        i_brand: String,
        i_manufact_id: Option<i64>,
        i_manufact: String,
        i_manager_id: Option<i64>,
        i_category_id: Option<i64>,
        i_category: String,
        i_current_price: Option<i64>,
        i_color: String,
        i_product_name: String,
    }
}

table! {
    /// A line of a store sale.
    StoreSale, STORE_SALES, "store_sales" {
        ss_sold_date_sk: i64,
        ss_item_sk: i64,
        ss_customer_sk: i64,
        ss_cdemo_sk: i64,
        ss_hdemo_sk: i64,
        ss_addr_sk: i64,
        ss_store_sk: i64,
        ss_promo_sk: i64,
        ss_ticket_number: i64,
        ss_quantity: Option<i64>,
        ss_wholesale_cost: Option<i64>,
        ss_list_price: Option<i64>,
        ss_sales_price: Option<i64>,
        ss_coupon_amt: Option<i64>,
        ss_ext_sales_price: Option<i64>,
    }
}

table! {
    /// A customer demographic (a cross product of its attributes).
    CustomerDemographics, CUSTOMER_DEMOGRAPHICS, "customer_demographics" {
        cd_demo_sk: i64,
        cd_gender: String,
        cd_marital_status: String,
        cd_education_status: String,
    }
}

table! {
    /// A household demographic.
    HouseholdDemographics, HOUSEHOLD_DEMOGRAPHICS, "household_demographics" {
        hd_demo_sk: i64,
        hd_income_band_sk: i64,
        hd_buy_potential: String,
    }
}

table! {
    /// A promotion and the channels it ran on (`Y`/`N`).
    Promotion, PROMOTION, "promotion" {
        p_promo_sk: i64,
        p_channel_email: String,
        p_channel_event: String,
    }
}

table! {
    /// A customer.
    Customer, CUSTOMER, "customer" {
        c_customer_sk: i64,
        c_current_cdemo_sk: i64,
        c_current_hdemo_sk: i64,
        c_current_addr_sk: i64,
        c_first_shipto_date_sk: i64,
        c_first_sales_date_sk: i64,
    }
}

table! {
    /// An address.
    CustomerAddress, CUSTOMER_ADDRESS, "customer_address" {
        ca_address_sk: i64,
        ca_street_number: String,
        ca_street_name: String,
        ca_city: String,
        ca_zip: String,
        ca_state: String,
    }
}

table! {
    /// A store.
    Store, STORE, "store" {
        s_store_sk: i64,
        s_store_name: String,
        s_zip: String,
    }
}

table! {
    /// A line of a catalog sale.
    CatalogSale, CATALOG_SALES, "catalog_sales" {
        cs_sold_date_sk: i64,
        cs_ship_date_sk: i64,
        cs_bill_cdemo_sk: i64,
        cs_bill_hdemo_sk: i64,
        cs_item_sk: i64,
        cs_promo_sk: i64,
        cs_order_number: i64,
        cs_quantity: Option<i64>,
        cs_ext_list_price: Option<i64>,
    }
}

table! {
    /// A returned line of a catalog sale.
    CatalogReturn, CATALOG_RETURNS, "catalog_returns" {
        cr_item_sk: i64,
        cr_order_number: i64,
        cr_refunded_cash: Option<i64>,
        cr_reversed_charge: Option<i64>,
        cr_store_credit: Option<i64>,
    }
}

table! {
    /// An item's stock in a warehouse, weekly.
    Inventory, INVENTORY, "inventory" {
        inv_date_sk: i64,
        inv_item_sk: i64,
        inv_warehouse_sk: i64,
        inv_quantity_on_hand: Option<i64>,
    }
}

table! {
    /// A warehouse.
    Warehouse, WAREHOUSE, "warehouse" {
        w_warehouse_sk: i64,
        w_warehouse_name: String,
    }
}

table! {
    /// A line of a web sale.
    WebSale, WEB_SALES, "web_sales" {
        ws_ship_date_sk: i64,
        ws_ship_addr_sk: i64,
        ws_web_site_sk: i64,
        ws_warehouse_sk: i64,
        ws_order_number: i64,
        ws_ext_ship_cost: Option<i64>,
        ws_net_profit: Option<i64>,
    }
}

table! {
    /// A returned line of a web sale.
    WebReturn, WEB_RETURNS, "web_returns" {
        wr_order_number: i64,
    }
}

table! {
    /// A web site.
    WebSite, WEB_SITE, "web_site" {
        web_site_sk: i64,
        web_company_name: String,
    }
}

table! {
    /// A returned line of a store sale.
    StoreReturn, STORE_RETURNS, "store_returns" {
        sr_item_sk: i64,
        sr_ticket_number: i64,
    }
}

table! {
    /// An income band.
    IncomeBand, INCOME_BAND, "income_band" {
        ib_income_band_sk: i64,
    }
}
