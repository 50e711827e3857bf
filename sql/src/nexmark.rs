//! The `nexmark` connector: Nexmark's events (the `nexmark` crate's generator, RisingWave's port
//! of the benchmark's) as rows of one table, laid out as Flink's Nexmark table is: `event_type`
//! (0 person, 1 auction, 2 bid) and one `ROW` column per kind, the others `NULL`.
//!
//! The generator is deterministic for an event number once its base time is fixed; this module
//! fixes it (`base-time`, default 2015-07-15 00:00:00 UTC, the date Flink's Nexmark uses), so
//! the same options give the same events in every process and run.

use std::collections::BTreeMap;

use nexmark::config::{NexmarkConfig, RateShape};
use nexmark::event::Event;

use crate::value::{Row, SqlType, Value};

/// The physical columns a `nexmark` table declares, in order, as a `CREATE TABLE` lists them: a
/// literal, for `concat!` (`CREATE TABLE datagen (…) WITH ('connector' = 'nexmark')`).
#[macro_export]
macro_rules! nexmark_columns {
    () => {
        "event_type INT,
  person ROW<id BIGINT, name VARCHAR, emailAddress VARCHAR, creditCard VARCHAR, city VARCHAR, state VARCHAR,
             dateTime TIMESTAMP(3), extra VARCHAR>,
  auction ROW<id BIGINT, itemName VARCHAR, description VARCHAR, initialBid BIGINT, reserve BIGINT,
              dateTime TIMESTAMP(3), expires TIMESTAMP(3), seller BIGINT, category BIGINT, extra VARCHAR>,
  bid ROW<auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, dateTime TIMESTAMP(3),
          extra VARCHAR>"
    };
}

/// [`nexmark_columns!`] as a constant.
pub const DATAGEN_COLUMNS: &str = nexmark_columns!();

/// The largest `events.num` a table may ask for in one run.
pub const MAX_EVENTS: u64 = 10_000_000;

/// The connector's options (`WITH (…)`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// `events.num`: how many events.
    pub events: u64,
    /// `base-time`: the first event's time, in milliseconds since the epoch.
    pub base_time: u64,
    /// `first-event.rate`: events per second the generator's clock advances by.
    pub rate: u64,
}

impl Options {
    /// The options of a `WITH` clause; an unknown or malformed option is an error.
    pub fn from_table(options: &BTreeMap<String, String>) -> Result<Options, String> {
        let mut parsed = Options { events: 1000, base_time: 1_436_918_400_000, rate: 10_000 };
        for (key, value) in options {
            let number =
                || value.parse::<u64>().map_err(|_| format!("option '{key}' is a whole number, not '{value}'"));
            match key.as_str() {
                "connector" => {}
                "events.num" => parsed.events = number()?,
                "base-time" => parsed.base_time = number()?,
                "first-event.rate" | "next-event.rate" => parsed.rate = number()?,
                other => {
                    return Err(format!(
                        "unsupported nexmark option '{other}': Sluice's are 'events.num', 'base-time', 'first-event.rate'"
                    ));
                }
            }
        }
        if parsed.events > MAX_EVENTS {
            return Err(format!("'events.num' is at most {MAX_EVENTS}, not {}", parsed.events));
        }
        if parsed.rate == 0 || parsed.rate > 1_000_000 {
            return Err(format!("'first-event.rate' is in 1..=1000000, not {}", parsed.rate));
        }
        Ok(parsed)
    }

    fn config(&self) -> NexmarkConfig {
        let split = |text: &str| text.split(',').map(str::to_string).collect::<Vec<_>>();
        NexmarkConfig {
            active_people: 1000,
            in_flight_auctions: 100,
            out_of_order_group_size: 1,
            avg_person_byte_size: 200,
            avg_auction_byte_size: 500,
            avg_bid_byte_size: 100,
            hot_seller_ratio: 4,
            hot_auction_ratio: 2,
            hot_bidder_ratio: 4,
            hot_channel_ratio: 2,
            first_event_id: 0,
            first_event_number: 0,
            base_time: self.base_time,
            num_categories: 5,
            auction_id_lead: 10,
            person_proportion: 1,
            auction_proportion: 3,
            bid_proportion: 46,
            first_auction_id: 1000,
            first_person_id: 1000,
            first_category_id: 10,
            person_id_lead: 10,
            sine_approx_steps: 10,
            // Flink's (Beam's) generator's values, which its queries name (q3's `state = 'OR'`);
            // the crate's defaults are lower case.
            us_states: split("AZ,CA,ID,OR,WA,WY"),
            us_cities: split("Phoenix,Los Angeles,San Francisco,Boise,Portland,Bend,Redmond,Seattle,Kent,Cheyenne"),
            hot_channels: split("Google,Facebook,Baidu,Apple"),
            hot_urls: (0..4).map(|index| format!("https://www.nexmark.com/{index}/item.htm?query=1")).collect(),
            first_names: split("Peter,Paul,Luke,John,Saul,Vicky,Kate,Julie,Sarah,Deiter,Walter"),
            last_names: split("Shultz,Abrams,Spencer,White,Bartels,Walton,Smith,Jones,Noris"),
            num_event_generators: 1,
            rate_shape: RateShape::Square,
            rate_period: 600,
            first_rate: self.rate as usize,
            next_rate: self.rate as usize,
            us_per_unit: 1_000_000,
        }
    }
}

fn varchar() -> SqlType {
    SqlType::Varchar
}

/// The table's physical columns, as a script must declare them.
pub fn schema() -> Vec<(String, SqlType)> {
    let row = |fields: &[(&str, SqlType)]| {
        SqlType::Row(fields.iter().map(|(name, ty)| (name.to_string(), ty.clone())).collect())
    };
    let person = row(&[
        ("id", SqlType::BigInt),
        ("name", varchar()),
        ("emailAddress", varchar()),
        ("creditCard", varchar()),
        ("city", varchar()),
        ("state", varchar()),
        ("dateTime", SqlType::Timestamp),
        ("extra", varchar()),
    ]);
    let auction = row(&[
        ("id", SqlType::BigInt),
        ("itemName", varchar()),
        ("description", varchar()),
        ("initialBid", SqlType::BigInt),
        ("reserve", SqlType::BigInt),
        ("dateTime", SqlType::Timestamp),
        ("expires", SqlType::Timestamp),
        ("seller", SqlType::BigInt),
        ("category", SqlType::BigInt),
        ("extra", varchar()),
    ]);
    let bid = row(&[
        ("auction", SqlType::BigInt),
        ("bidder", SqlType::BigInt),
        ("price", SqlType::BigInt),
        ("channel", varchar()),
        ("url", varchar()),
        ("dateTime", SqlType::Timestamp),
        ("extra", varchar()),
    ]);
    vec![
        ("event_type".to_string(), SqlType::Int),
        ("person".to_string(), person),
        ("auction".to_string(), auction),
        ("bid".to_string(), bid),
    ]
}

/// Checks a table's physical columns are the connector's.
pub fn check_schema(physical: &[(String, SqlType)]) -> Result<(), String> {
    if physical == schema().as_slice() {
        return Ok(());
    }
    let expected: Vec<String> = schema().iter().map(|(name, ty)| format!("{name} {ty}")).collect();
    Err(format!("a 'nexmark' table's physical columns are exactly: {}", expected.join(", ")))
}

fn int(value: usize) -> Value {
    Value::Int(value as i64)
}

fn time(millis: u64) -> Value {
    Value::Timestamp(millis as i64)
}

/// The `index`-th event as a row of [`schema`].
pub fn row_of(event: Event) -> Row {
    let (kind, position, fields) = match event {
        Event::Person(p) => (
            0,
            1,
            vec![
                int(p.id),
                Value::Str(p.name),
                Value::Str(p.email_address),
                Value::Str(p.credit_card),
                Value::Str(p.city),
                Value::Str(p.state),
                time(p.date_time),
                Value::Str(p.extra),
            ],
        ),
        Event::Auction(a) => (
            1,
            2,
            vec![
                int(a.id),
                Value::Str(a.item_name),
                Value::Str(a.description),
                int(a.initial_bid),
                int(a.reserve),
                time(a.date_time),
                time(a.expires),
                int(a.seller),
                int(a.category),
                Value::Str(a.extra),
            ],
        ),
        Event::Bid(b) => (
            2,
            3,
            vec![
                int(b.auction),
                int(b.bidder),
                int(b.price),
                Value::Str(b.channel),
                Value::Str(b.url),
                time(b.date_time),
                Value::Str(b.extra),
            ],
        ),
    };
    let mut row = vec![Value::Int(kind), Value::Null, Value::Null, Value::Null];
    row[position] = Value::Row(fields);
    Row(row)
}

/// The events a table of these options holds, in order.
pub fn events(options: &Options) -> impl Iterator<Item = Row> {
    nexmark::EventGenerator::new(options.config()).take(options.events as usize).map(row_of)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_options_give_the_same_events_and_every_kind_appears() {
        let options = Options { events: 200, base_time: 1_436_918_400_000, rate: 1000 };
        let first: Vec<Row> = events(&options).collect();
        assert_eq!(first, events(&options).collect::<Vec<_>>());
        let kinds: std::collections::BTreeSet<&Value> = first.iter().map(|row| &row.0[0]).collect();
        assert_eq!(kinds.len(), 3, "persons, auctions and bids");
        let Value::Row(bid) = &first.iter().find(|row| row.0[0] == Value::Int(2)).expect("a bid").0[3] else {
            panic!("a bid's row")
        };
        assert!(matches!(bid[5], Value::Timestamp(millis) if millis >= 1_436_918_400_000));
    }
}
