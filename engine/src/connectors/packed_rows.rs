//! [`PackedRows`]: rows packed into one text buffer, so that a batch of rows (a stage request, a
//! staged batch, a table's whole commit log) is two allocations however many rows it holds, and
//! copying it is two copies of contiguous memory rather than two allocations per row.
//!
//! On the wire and on disk it is exactly a sequence of [`Row`]s (the bytes a `Vec<Row>` encodes
//! to), so packing changes no message, journal or image, and decoding needs no validation of
//! offsets: whatever a peer sends is repacked from its rows. A tombstone (a row without a value)
//! is an empty value in the text, its index listed apart.

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
    /// The row's value; `None` for a tombstone.
    pub value: Option<&'a str>,
}

impl RowRef<'_> {
    /// An owned copy.
    pub fn to_row(self) -> Row {
        Row { key: self.key.to_string(), value: self.value.map(str::to_string) }
    }
}

impl Row {
    /// This row, borrowed.
    pub fn as_ref(&self) -> RowRef<'_> {
        RowRef { key: &self.key, value: self.value.as_deref() }
    }
}

/// Rows in order, packed: see the module doc.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct PackedRows {
    /// Every key and value, back to back.
    text: String,
    /// Where each row's key ends and then where its value ends, in `text`: two per row.
    ends: Vec<usize>,
    /// The indices of the rows that are tombstones, ascending (empty but in upsert tables whose
    /// writers delete).
    tombstones: Vec<usize>,
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

    /// Whether some row is a tombstone.
    pub fn has_tombstones(&self) -> bool {
        !self.tombstones.is_empty()
    }

    /// Appends the deletion of `key`.
    pub fn push_tombstone(&mut self, key: &str) {
        self.tombstones.push(self.len());
        self.push(key, "");
    }

    /// Appends a row or a tombstone.
    pub fn push_row(&mut self, row: RowRef<'_>) {
        match row.value {
            Some(value) => self.push(row.key, value),
            None => self.push_tombstone(row.key),
        }
    }

    /// Removes every row, keeping the memory for the next ones.
    pub fn clear(&mut self) {
        self.text.clear();
        self.ends.clear();
        self.tombstones.clear();
    }

    /// Appends every row of `other`, in order.
    pub fn extend_from(&mut self, other: &PackedRows) {
        let (offset, rows) = (self.text.len(), self.len());
        self.text.push_str(&other.text);
        self.ends.extend(other.ends.iter().map(|end| end + offset));
        self.tombstones.extend(other.tombstones.iter().map(|index| index + rows));
    }

    /// The row at `index`, if there is one.
    pub fn get(&self, index: usize) -> Option<RowRef<'_>> {
        let value_end = *self.ends.get(2 * index + 1)?;
        let key_end = self.ends[2 * index];
        let start = if index == 0 { 0 } else { self.ends[2 * index - 1] };
        let value = match self.tombstones.binary_search(&index) {
            Ok(_) => None,
            Err(_) => Some(&self.text[key_end..value_end]),
        };
        Some(RowRef { key: &self.text[start..key_end], value })
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
        let in_front = self.tombstones.partition_point(|index| *index < count);
        let front = PackedRows {
            text: self.text[..cut].to_string(),
            ends: self.ends[..2 * count].to_vec(),
            tombstones: self.tombstones[..in_front].to_vec(),
        };
        self.text.drain(..cut);
        self.ends.drain(..2 * count);
        self.ends.iter_mut().for_each(|end| *end -= cut);
        self.tombstones.drain(..in_front);
        self.tombstones.iter_mut().for_each(|index| *index -= count);
        front
    }
}

impl<'a> FromIterator<RowRef<'a>> for PackedRows {
    fn from_iter<I: IntoIterator<Item = RowRef<'a>>>(rows: I) -> PackedRows {
        let mut packed = PackedRows::new();
        rows.into_iter().for_each(|row| packed.push_row(row));
        packed
    }
}

impl FromIterator<Row> for PackedRows {
    fn from_iter<I: IntoIterator<Item = Row>>(rows: I) -> PackedRows {
        let mut packed = PackedRows::new();
        rows.into_iter().for_each(|row| packed.push_row(row.as_ref()));
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
                    packed.push_row(row.as_ref());
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
        Row::new(key, value)
    }

    #[test]
    fn rows_read_back_in_order_with_empty_keys_and_values() {
        let rows = vec![row("a", "1"), row("", "x"), row("bb", ""), row("", ""), row("é", "ü")];
        let packed = PackedRows::from(rows.clone());
        assert_eq!(packed.len(), 5);
        assert_eq!(packed.to_rows(), rows);
        assert_eq!(packed.get(4), Some(RowRef { key: "é", value: Some("ü") }));
        assert_eq!(packed.get(5), None);
        assert_eq!(packed.iter().next_back(), Some(row("é", "ü").as_ref()));
        assert_eq!(packed.rows(1, 2), rows[1..3]);
        assert_eq!(packed.rows(4, 10), rows[4..]);
        assert!(packed.rows(9, 1).is_empty());
    }

    #[test]
    fn a_tombstone_is_not_an_empty_value() {
        let rows = vec![row("a", ""), Row::tombstone("a"), row("b", "2"), Row::tombstone("")];
        let packed = PackedRows::from(rows.clone());
        assert_eq!(packed.to_rows(), rows);
        assert_eq!(packed.get(0).map(|row| row.value), Some(Some("")));
        assert_eq!(packed.get(1).map(|row| row.value), Some(None));
        let mut joined = PackedRows::from(vec![Row::tombstone("x")]);
        joined.extend_from(&packed);
        assert_eq!(joined.to_rows()[1..], rows[..], "tombstones keep their rows when appended");
        assert_eq!(joined.get(0).map(|row| row.value), Some(None));
        joined.clear();
        joined.push("k", "v");
        assert_eq!(joined.to_rows(), [row("k", "v")], "a cleared batch forgets its tombstones");
    }

    #[test]
    fn splitting_the_front_keeps_both_parts_whole() {
        let value = |index: usize| match index % 3 {
            1 => None,
            _ => Some("v".repeat(index)),
        };
        let rows: Vec<Row> = (0..7).map(|index| Row { key: format!("k{index}"), value: value(index) }).collect();
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
        let rows = vec![row("a", "1"), row("b", ""), row("", "c"), Row::tombstone("d")];
        let packed = PackedRows::from(rows.clone());
        let bytes = rmp_serde::to_vec(&packed).unwrap();
        // A row with a value is the pair of strings it was before tombstones existed.
        #[derive(serde::Serialize)]
        struct Before<'a> {
            key: &'a str,
            value: &'a str,
        }
        let before = rmp_serde::to_vec(&[Before { key: "a", value: "1" }]).unwrap();
        assert_eq!(rmp_serde::to_vec(&PackedRows::from(vec![row("a", "1")])).unwrap(), before);
        assert_eq!(bytes, rmp_serde::to_vec(&rows).unwrap());
        assert_eq!(rmp_serde::to_vec_named(&packed).unwrap(), rmp_serde::to_vec_named(&rows).unwrap());
        assert_eq!(rmp_serde::from_slice::<PackedRows>(&bytes).unwrap(), packed);
        assert_eq!(serde_json::to_string(&packed).unwrap(), serde_json::to_string(&rows).unwrap());
        assert!(rmp_serde::from_slice::<PackedRows>(&bytes[..bytes.len() - 1]).is_err(), "a cut sequence");
        assert!(rmp_serde::from_slice::<PackedRows>(&rmp_serde::to_vec(&7u8).unwrap()).is_err(), "not a sequence");
    }
}
