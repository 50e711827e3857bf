//! [`PackedRows`]: rows packed into one text buffer, so that a batch of rows (a stage request, a
//! staged batch, a table's whole commit log) is two allocations however many rows it holds, and
//! copying it is two copies of contiguous memory rather than two allocations per row.
//!
//! On the wire and on disk it is exactly a sequence of [`Row`]s (the bytes a `Vec<Row>` encodes
//! to), so packing changes no message, journal or image, and decoding needs no validation of
//! offsets: whatever a peer sends is repacked from its rows.

use std::fmt;

use serde::de::{Deserializer, SeqAccess, Visitor};
use serde::ser::{SerializeSeq, Serializer};
use serde::{Deserialize, Serialize};

use super::row::Row;

/// A row borrowed from [`PackedRows`] (ordered as [`Row`] is: by key, then value).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename = "Row")]
pub struct RowRef<'a> {
    /// The row's key.
    pub key: &'a str,
    /// The row's value.
    pub value: &'a str,
}

impl RowRef<'_> {
    /// An owned copy.
    pub fn to_row(self) -> Row {
        Row { key: self.key.to_string(), value: self.value.to_string() }
    }
}

impl Row {
    /// This row, borrowed.
    pub fn as_ref(&self) -> RowRef<'_> {
        RowRef { key: &self.key, value: &self.value }
    }
}

/// Rows in order, packed: see the module doc.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct PackedRows {
    /// Every key and value, back to back.
    text: String,
    /// Where each row's key ends and then where its value ends, in `text`: two per row.
    ends: Vec<usize>,
}

impl PackedRows {
    /// No rows.
    pub fn new() -> PackedRows {
        PackedRows::default()
    }

    /// How many rows.
    pub fn len(&self) -> usize {
        self.ends.len() / 2
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Appends a row.
    pub fn push(&mut self, key: &str, value: &str) {
        self.text.push_str(key);
        self.ends.push(self.text.len());
        self.text.push_str(value);
        self.ends.push(self.text.len());
    }

    /// Removes every row, keeping the memory for the next ones.
    pub fn clear(&mut self) {
        self.text.clear();
        self.ends.clear();
    }

    /// Appends every row of `other`, in order.
    pub fn extend_from(&mut self, other: &PackedRows) {
        let offset = self.text.len();
        self.text.push_str(&other.text);
        self.ends.extend(other.ends.iter().map(|end| end + offset));
    }

    /// The row at `index`, if there is one.
    pub fn get(&self, index: usize) -> Option<RowRef<'_>> {
        let value_end = *self.ends.get(2 * index + 1)?;
        let key_end = self.ends[2 * index];
        let start = if index == 0 { 0 } else { self.ends[2 * index - 1] };
        Some(RowRef { key: &self.text[start..key_end], value: &self.text[key_end..value_end] })
    }

    /// The rows, in order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = RowRef<'_>> + ExactSizeIterator + '_ {
        (0..self.len()).map(|index| self.get(index).expect("internal: a packed row index is below its length"))
    }

    /// Owned copies of the rows from `from`, at most `count` of them.
    pub fn rows(&self, from: usize, count: usize) -> Vec<Row> {
        self.iter().skip(from).take(count).map(RowRef::to_row).collect()
    }

    /// Owned copies of every row.
    pub fn to_rows(&self) -> Vec<Row> {
        self.iter().map(RowRef::to_row).collect()
    }

    /// Takes the first `count` rows out (all of them if there are fewer), leaving the rest.
    pub fn split_front(&mut self, count: usize) -> PackedRows {
        if count >= self.len() {
            return std::mem::take(self);
        }
        let cut = if count == 0 { 0 } else { self.ends[2 * count - 1] };
        let front = PackedRows { text: self.text[..cut].to_string(), ends: self.ends[..2 * count].to_vec() };
        self.text.drain(..cut);
        self.ends.drain(..2 * count);
        self.ends.iter_mut().for_each(|end| *end -= cut);
        front
    }
}

impl<'a> FromIterator<RowRef<'a>> for PackedRows {
    fn from_iter<I: IntoIterator<Item = RowRef<'a>>>(rows: I) -> PackedRows {
        let mut packed = PackedRows::new();
        rows.into_iter().for_each(|row| packed.push(row.key, row.value));
        packed
    }
}

impl FromIterator<Row> for PackedRows {
    fn from_iter<I: IntoIterator<Item = Row>>(rows: I) -> PackedRows {
        let mut packed = PackedRows::new();
        rows.into_iter().for_each(|row| packed.push(&row.key, &row.value));
        packed
    }
}

impl From<Vec<Row>> for PackedRows {
    fn from(rows: Vec<Row>) -> PackedRows {
        rows.into_iter().collect()
    }
}

impl fmt::Debug for PackedRows {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl Serialize for PackedRows {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.len()))?;
        for row in self.iter() {
            seq.serialize_element(&row)?;
        }
        seq.end()
    }
}

impl<'de> Deserialize<'de> for PackedRows {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<PackedRows, D::Error> {
        struct Rows;
        impl<'de> Visitor<'de> for Rows {
            type Value = PackedRows;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a sequence of rows")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<PackedRows, A::Error> {
                let mut packed = PackedRows::new();
                while let Some(row) = seq.next_element::<Row>()? {
                    packed.push(&row.key, &row.value);
                }
                Ok(packed)
            }
        }
        deserializer.deserialize_seq(Rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(key: &str, value: &str) -> Row {
        Row { key: key.to_string(), value: value.to_string() }
    }

    #[test]
    fn rows_read_back_in_order_with_empty_keys_and_values() {
        let rows = vec![row("a", "1"), row("", "x"), row("bb", ""), row("", ""), row("é", "ü")];
        let packed = PackedRows::from(rows.clone());
        assert_eq!(packed.len(), 5);
        assert_eq!(packed.to_rows(), rows);
        assert_eq!(packed.get(4), Some(RowRef { key: "é", value: "ü" }));
        assert_eq!(packed.get(5), None);
        assert_eq!(packed.iter().next_back(), Some(row("é", "ü").as_ref()));
        assert_eq!(packed.rows(1, 2), rows[1..3]);
        assert_eq!(packed.rows(4, 10), rows[4..]);
        assert!(packed.rows(9, 1).is_empty());
    }

    #[test]
    fn splitting_the_front_keeps_both_parts_whole() {
        let rows: Vec<Row> = (0..7).map(|index| row(&format!("k{index}"), &"v".repeat(index))).collect();
        for count in 0..9 {
            let mut rest = PackedRows::from(rows.clone());
            let front = rest.split_front(count);
            let taken = count.min(rows.len());
            assert_eq!(front.to_rows(), rows[..taken], "front of {count}");
            assert_eq!(rest.to_rows(), rows[taken..], "rest after {count}");
            let mut joined = front.clone();
            joined.extend_from(&rest);
            assert_eq!(joined, PackedRows::from(rows.clone()), "rejoined after {count}");
        }
    }

    #[test]
    fn encodes_exactly_as_a_vector_of_rows() {
        let rows = vec![row("a", "1"), row("b", ""), row("", "c")];
        let packed = PackedRows::from(rows.clone());
        let bytes = rmp_serde::to_vec(&packed).unwrap();
        assert_eq!(bytes, rmp_serde::to_vec(&rows).unwrap());
        assert_eq!(rmp_serde::to_vec_named(&packed).unwrap(), rmp_serde::to_vec_named(&rows).unwrap());
        assert_eq!(rmp_serde::from_slice::<PackedRows>(&bytes).unwrap(), packed);
        assert_eq!(serde_json::to_string(&packed).unwrap(), serde_json::to_string(&rows).unwrap());
        assert!(rmp_serde::from_slice::<PackedRows>(&bytes[..bytes.len() - 1]).is_err(), "a cut sequence");
        assert!(rmp_serde::from_slice::<PackedRows>(&rmp_serde::to_vec(&7u8).unwrap()).is_err(), "not a sequence");
    }
}
