//! Network buffers: records serialized back to back, sealed with a checksum.
//!
//! Layout: `[u32 length][record bytes]*` followed by an 8-byte FNV-1a checksum of everything
//! before it. Records never cross the network one per message: a buffer carries as many as fit
//! in the configured size (Flink's 32 KiB memory segments).

use crate::graph::operator::Batch;
use crate::prng::fnv1a64;
use crate::record::{DecodeError, Element, TypeInfo};
use crate::time::Timestamp;

/// Bytes of the checksum that seals a buffer.
const CHECKSUM: usize = 8;

/// The top bit of a record's length: an 8-byte event timestamp follows the length.
const TIMESTAMPED: u32 = 1 << 31;

/// Accumulates encoded records for one subpartition; a sealed buffer, checksum included, is at
/// most its capacity unless it holds one record larger than that.
pub struct BufferBuilder {
    bytes: Vec<u8>,
    records: u32,
    capacity: usize,
}

impl BufferBuilder {
    /// An empty builder for buffers of `capacity` bytes.
    pub fn new(capacity: usize) -> BufferBuilder {
        // No bytes reserved up front: a producer has one builder per subpartition (parallelism²
        // of them over an all-to-all exchange), and most hold little; a buffer grows with what
        // it holds, up to `capacity`.
        BufferBuilder { bytes: Vec::new(), records: 0, capacity }
    }

    /// Appends one encoded record.
    pub fn push(&mut self, record: &[u8], timestamp: Option<Timestamp>) {
        let length = u32::try_from(record.len()).ok().filter(|length| length & TIMESTAMPED == 0);
        let length = length.expect("a record of 2 GiB or more is a bug");
        match timestamp {
            Some(timestamp) => {
                self.bytes.extend_from_slice(&(length | TIMESTAMPED).to_be_bytes());
                self.bytes.extend_from_slice(&timestamp.to_be_bytes());
            }
            None => self.bytes.extend_from_slice(&length.to_be_bytes()),
        }
        self.bytes.extend_from_slice(record);
        self.records += 1;
    }

    /// True if a record of `length` bytes (with a timestamp if `timestamped`) fits.
    pub fn fits(&self, length: usize, timestamped: bool) -> bool {
        let header = if timestamped { 12 } else { 4 };
        self.is_empty() || self.bytes.len() + header + length + CHECKSUM <= self.capacity
    }

    /// True once the sealed buffer would have reached its capacity.
    pub fn is_full(&self) -> bool {
        self.bytes.len() + CHECKSUM >= self.capacity
    }

    /// True if no record was pushed since the last seal.
    pub fn is_empty(&self) -> bool {
        self.records == 0
    }

    /// True if the buffer, sealed now, would be within its capacity, or holds one record (a
    /// writer that asks [`BufferBuilder::fits`] before each push keeps this true).
    pub(super) fn within_capacity(&self) -> bool {
        self.records <= 1 || self.bytes.len() + CHECKSUM <= self.capacity
    }

    /// Seals the buffer (appends the checksum) and starts a new one.
    pub fn seal(&mut self) -> Vec<u8> {
        let mut bytes = std::mem::take(&mut self.bytes);
        let records = std::mem::take(&mut self.records);
        // Every record adds at least its 4-byte length.
        assert_eq!(records == 0, bytes.is_empty(), "shuffle invariant: a buffer holds bytes if and only if records");
        let checksum = fnv1a64(&bytes);
        bytes.extend_from_slice(&checksum.to_be_bytes());
        bytes
    }
}

/// Verifies a sealed buffer's checksum and decodes its records, one element each.
pub fn decode_buffer(buffer: &[u8], type_info: &TypeInfo) -> Result<Vec<(Element, Option<Timestamp>)>, DecodeError> {
    Ok(decode_batch(buffer, type_info)?.into_elements().collect())
}

/// Verifies a sealed buffer's checksum and decodes its records into one batch: the values in
/// one `Vec`, not a box each.
pub fn decode_batch(buffer: &[u8], type_info: &TypeInfo) -> Result<Batch, DecodeError> {
    let (mut values, mut timestamps) = (type_info.new_values(0), Vec::new());
    for_each_record(buffer, |mut record, timestamp| {
        type_info.decode_onto(&mut values, &mut record)?;
        timestamps.push(timestamp);
        if !record.is_empty() {
            return Err(DecodeError::new(format!("{} bytes left over in a {}", record.len(), type_info.name())));
        }
        Ok(())
    })?;
    Ok(Batch { values, timestamps, type_info: type_info.clone() })
}

/// Verifies a sealed buffer's checksum and hands each record's encoded bytes and timestamp to
/// `visit`, in order, without decoding them.
pub fn for_each_record(
    buffer: &[u8],
    mut visit: impl FnMut(&[u8], Option<Timestamp>) -> Result<(), DecodeError>,
) -> Result<(), DecodeError> {
    if buffer.len() < 8 {
        return Err(DecodeError::new(format!("buffer of {} bytes has no checksum", buffer.len())));
    }
    let (payload, checksum) = buffer.split_at(buffer.len() - 8);
    let expected = u64::from_be_bytes(checksum.try_into().expect("8 bytes"));
    if fnv1a64(payload) != expected {
        return Err(DecodeError::new("buffer checksum mismatch: the buffer is corrupt"));
    }
    let mut input = payload;
    while !input.is_empty() {
        if input.len() < 4 {
            return Err(DecodeError::new("truncated record length"));
        }
        let (length, mut rest) = input.split_at(4);
        let length = u32::from_be_bytes(length.try_into().expect("4 bytes"));
        let timestamp = if length & TIMESTAMPED != 0 {
            if rest.len() < 8 {
                return Err(DecodeError::new("truncated record timestamp"));
            }
            let (timestamp, after) = rest.split_at(8);
            rest = after;
            Some(Timestamp::from_be_bytes(timestamp.try_into().expect("8 bytes")))
        } else {
            None
        };
        let length = (length & !TIMESTAMPED) as usize;
        if rest.len() < length {
            return Err(DecodeError::new("truncated record"));
        }
        let (record, rest) = rest.split_at(length);
        visit(record, timestamp)?;
        input = rest;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Record;

    #[test]
    fn records_round_trip_and_corruption_is_detected() {
        let mut builder = BufferBuilder::new(16);
        for (word, timestamp) in [("a", None), ("bb", Some(-7)), ("ccc", None)] {
            builder.push(&word.to_string().to_bytes(), timestamp);
        }
        assert!(builder.is_full());
        let mut sealed = builder.seal();
        assert!(builder.is_empty());
        let decoded = decode_buffer(&sealed, &TypeInfo::of::<String>()).unwrap();
        let words: Vec<(String, Option<Timestamp>)> = decoded
            .into_iter()
            .map(|(element, timestamp)| (*element.downcast::<String>().unwrap(), timestamp))
            .collect();
        assert_eq!(words, vec![("a".to_string(), None), ("bb".to_string(), Some(-7)), ("ccc".to_string(), None)]);
        sealed[5] ^= 0xff;
        assert!(decode_buffer(&sealed, &TypeInfo::of::<String>()).is_err());
    }

    #[test]
    fn sealed_buffers_never_exceed_their_capacity_unless_one_record_does() {
        let capacity = 64;
        let mut builder = BufferBuilder::new(capacity);
        let mut sealed = Vec::new();
        for length in (0..200).map(|index| (index * 7) % 23).chain([100, 3, 100]) {
            let record = vec![b'x'; length];
            if !builder.fits(record.len(), false) {
                sealed.push(builder.seal());
            }
            builder.push(&record, None);
            if builder.is_full() {
                sealed.push(builder.seal());
            }
        }
        sealed.push(builder.seal());
        let oversized = 4 + 100 + CHECKSUM;
        for buffer in &sealed {
            assert!(buffer.len() <= capacity || buffer.len() == oversized, "a buffer of {} bytes", buffer.len());
        }
        assert_eq!(sealed.iter().filter(|buffer| buffer.len() == oversized).count(), 2);
    }
}
