//! Framed records: small files written as checksummed records, so that a corrupted byte reads
//! as a lost record, never as different data.
//!
//! Layout of each record: `[u32 length][u64 FNV-1a checksum][bytes]`. Reading stops at the
//! first record that is truncated or fails its checksum: that record and everything after it
//! counts as lost (a crash can only lose a suffix; corruption anywhere loses from there on).

use crate::prng::fnv1a64;

/// One record, framed.
pub fn frame(record: &[u8]) -> Vec<u8> {
    let length = u32::try_from(record.len()).expect("a framed record is under 4 GiB");
    let mut framed = Vec::with_capacity(record.len() + 12);
    framed.extend_from_slice(&length.to_be_bytes());
    framed.extend_from_slice(&fnv1a64(record).to_be_bytes());
    framed.extend_from_slice(record);
    assert_eq!(framed.len(), 12 + record.len(), "storage invariant: a framed record is a 12-byte header and its bytes");
    framed
}

/// The intact records of a file, and whether anything after them was damaged.
pub fn unframe(mut bytes: &[u8]) -> (Vec<Vec<u8>>, bool) {
    let mut records = Vec::new();
    while !bytes.is_empty() {
        if bytes.len() < 12 {
            return (records, true);
        }
        let length = u32::from_be_bytes(bytes[..4].try_into().expect("4 bytes")) as usize;
        let checksum = u64::from_be_bytes(bytes[4..12].try_into().expect("8 bytes"));
        let Some(record) = bytes.get(12..12 + length) else { return (records, true) };
        if fnv1a64(record) != checksum {
            return (records, true);
        }
        records.push(record.to_vec());
        bytes = &bytes[12 + length..];
    }
    (records, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_damage_loses_a_suffix() {
        let mut file = frame(b"first");
        file.extend(frame(b""));
        file.extend(frame(b"third"));
        assert_eq!(unframe(&file), (vec![b"first".to_vec(), Vec::new(), b"third".to_vec()], false));
        let mut corrupt = file.clone();
        let last = corrupt.len() - 1;
        corrupt[last] ^= 1;
        assert_eq!(unframe(&corrupt), (vec![b"first".to_vec(), Vec::new()], true));
        assert!(unframe(&file[..file.len() - 2]).1, "a torn record reads as damage");
    }
}
