//! [`Record`]: how a value of a job's type crosses a task boundary (Flink's `TypeSerializer`).
//!
//! Records that stay inside an operator chain are passed as values; records that cross the
//! network, go to disk or into state are encoded with [`Record::encode`]. The encoding is ours,
//! explicit and stable: keys are partitioned by the hash of their encoded bytes and batch mode
//! sorts keyed input by those bytes, so the encoding must be deterministic. Integers are big
//! endian (sign bit flipped for signed ones) so that encoded unsigned and signed integers sort
//! like their values.

use std::any::Any;
use std::fmt;
use std::hash::Hash;
use std::sync::Arc;

/// A value that can cross a task boundary; see the module doc.
pub trait Record: Clone + fmt::Debug + Send + Sync + 'static {
    /// Appends this value's encoding to `out`.
    fn encode(&self, out: &mut Vec<u8>);
    /// Reads one value from the front of `input` and advances it past the value.
    fn decode(input: &mut &[u8]) -> Result<Self, DecodeError>;

    /// This value's encoding as a fresh vector.
    fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode(&mut out);
        out
    }

    /// Decodes a value that must use all of `bytes`.
    fn from_bytes(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut input = bytes;
        let value = Self::decode(&mut input)?;
        if !input.is_empty() {
            return Err(DecodeError::new(format!(
                "{} trailing bytes after a {}",
                input.len(),
                std::any::type_name::<Self>()
            )));
        }
        Ok(value)
    }
}

/// A [`Record`] that can be used as a key: grouped by equality, partitioned by its bytes.
pub trait Key: Record + Ord + Eq + Hash {}
impl<T: Record + Ord + Eq + Hash> Key for T {}

/// Bytes that do not decode as the expected type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError {
    /// What was wrong.
    pub message: String,
}

impl DecodeError {
    /// A decode error with a message.
    pub fn new(message: impl Into<String>) -> DecodeError {
        DecodeError { message: message.into() }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot decode record: {}", self.message)
    }
}

impl std::error::Error for DecodeError {}

fn take<'a>(input: &mut &'a [u8], count: usize, what: &str) -> Result<&'a [u8], DecodeError> {
    if input.len() < count {
        return Err(DecodeError::new(format!("need {count} bytes for {what}, have {}", input.len())));
    }
    let (head, tail) = input.split_at(count);
    *input = tail;
    Ok(head)
}

macro_rules! unsigned_record {
    ($($ty:ty),*) => {$(
        impl Record for $ty {
            fn encode(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_be_bytes());
            }
            fn decode(input: &mut &[u8]) -> Result<Self, DecodeError> {
                let bytes = take(input, std::mem::size_of::<$ty>(), stringify!($ty))?;
                Ok(<$ty>::from_be_bytes(bytes.try_into().expect("length checked by take")))
            }
        }
    )*};
}
unsigned_record!(u8, u16, u32, u64);

macro_rules! signed_record {
    ($($ty:ty => $unsigned:ty),*) => {$(
        impl Record for $ty {
            fn encode(&self, out: &mut Vec<u8>) {
                // Flipping the sign bit makes the big-endian bytes sort like the values.
                let flipped = (*self as $unsigned) ^ (1 << (<$unsigned>::BITS - 1));
                out.extend_from_slice(&flipped.to_be_bytes());
            }
            fn decode(input: &mut &[u8]) -> Result<Self, DecodeError> {
                let bytes = take(input, std::mem::size_of::<$ty>(), stringify!($ty))?;
                let flipped = <$unsigned>::from_be_bytes(bytes.try_into().expect("length checked by take"));
                Ok((flipped ^ (1 << (<$unsigned>::BITS - 1))) as $ty)
            }
        }
    )*};
}
signed_record!(i32 => u32, i64 => u64);

impl Record for bool {
    fn encode(&self, out: &mut Vec<u8>) {
        out.push(u8::from(*self));
    }
    fn decode(input: &mut &[u8]) -> Result<Self, DecodeError> {
        match take(input, 1, "bool")?[0] {
            0 => Ok(false),
            1 => Ok(true),
            other => Err(DecodeError::new(format!("bool byte {other}"))),
        }
    }
}

impl Record for () {
    fn encode(&self, _out: &mut Vec<u8>) {}
    fn decode(_input: &mut &[u8]) -> Result<Self, DecodeError> {
        Ok(())
    }
}

fn encode_length(length: usize, out: &mut Vec<u8>) {
    let length = u32::try_from(length).expect("a record field longer than 4 GiB is a bug");
    length.encode(out);
}

impl Record for String {
    fn encode(&self, out: &mut Vec<u8>) {
        encode_length(self.len(), out);
        out.extend_from_slice(self.as_bytes());
    }
    fn decode(input: &mut &[u8]) -> Result<Self, DecodeError> {
        let length = u32::decode(input)? as usize;
        let bytes = take(input, length, "string")?;
        String::from_utf8(bytes.to_vec()).map_err(|error| DecodeError::new(error.to_string()))
    }
}

impl<T: Record> Record for Vec<T> {
    fn encode(&self, out: &mut Vec<u8>) {
        encode_length(self.len(), out);
        for item in self {
            item.encode(out);
        }
    }
    fn decode(input: &mut &[u8]) -> Result<Self, DecodeError> {
        let length = u32::decode(input)? as usize;
        // Never trust a length prefix for an allocation size: it may be corrupt.
        let mut items = Vec::with_capacity(length.min(input.len()));
        for _ in 0..length {
            items.push(T::decode(input)?);
        }
        Ok(items)
    }
}

impl<T: Record> Record for Option<T> {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            None => out.push(0),
            Some(value) => {
                out.push(1);
                value.encode(out);
            }
        }
    }
    fn decode(input: &mut &[u8]) -> Result<Self, DecodeError> {
        match take(input, 1, "option tag")?[0] {
            0 => Ok(None),
            1 => Ok(Some(T::decode(input)?)),
            other => Err(DecodeError::new(format!("option tag {other}"))),
        }
    }
}

macro_rules! tuple_record {
    ($($name:ident),+) => {
        impl<$($name: Record),+> Record for ($($name,)+) {
            #[allow(non_snake_case)]
            fn encode(&self, out: &mut Vec<u8>) {
                let ($($name,)+) = self;
                $($name.encode(out);)+
            }
            fn decode(input: &mut &[u8]) -> Result<Self, DecodeError> {
                Ok(($($name::decode(input)?,)+))
            }
        }
    };
}
tuple_record!(A);
tuple_record!(A, B);
tuple_record!(A, B, C);
tuple_record!(A, B, C, D);
tuple_record!(A, B, C, D, E);
tuple_record!(A, B, C, D, E, F);
tuple_record!(A, B, C, D, E, F, G);
tuple_record!(A, B, C, D, E, F, G, H);
tuple_record!(A, B, C, D, E, F, G, H, I);
tuple_record!(A, B, C, D, E, F, G, H, I, J);
tuple_record!(A, B, C, D, E, F, G, H, I, J, K);
tuple_record!(A, B, C, D, E, F, G, H, I, J, K, L);

/// A type-erased value flowing through an operator chain.
pub type Element = Box<dyn Any + Send>;

/// A `Vec` of values of one type, erased: the values of a batch of elements passed along an
/// operator chain in one box (see `graph::operator::Batch`).
pub type Values = Box<dyn Any + Send>;

/// The erased codec of one record type, attached to every stream in the graph.
#[derive(Clone)]
pub struct TypeInfo {
    name: &'static str,
    encode: fn(&dyn Any, &mut Vec<u8>),
    decode: fn(&mut &[u8]) -> Result<Element, DecodeError>,
    clone: fn(&dyn Any) -> Element,
    values: ValuesInfo,
}

/// What visits values one by one.
type Visit<'a> = dyn FnMut(&dyn Any) + 'a;

/// What [`TypeInfo`] does with [`Values`] of its type.
#[derive(Clone)]
struct ValuesInfo {
    new: fn(usize) -> Values,
    decode_push: fn(&mut Values, &mut &[u8]) -> Result<(), DecodeError>,
    for_each: fn(&Values, &mut Visit),
    into_elements: fn(Values) -> Vec<Element>,
    clone: fn(&Values) -> Values,
    chunks: fn(Values, usize) -> Vec<Values>,
}

/// `values` cut into runs of `size` (the last may be shorter), in order; each value moves once.
fn chunks_of<T: Send + 'static>(values: Values, size: usize) -> Vec<Values> {
    let mut rest = downcast_values::<T>(values, "a chain");
    let mut chunks: Vec<Values> = Vec::with_capacity(rest.len().div_ceil(size));
    while rest.len() > size {
        // From the back, so that no value moves twice.
        let tail = rest.split_off((rest.len() - 1) / size * size);
        chunks.push(Box::new(tail));
    }
    chunks.push(Box::new(rest));
    chunks.reverse();
    chunks
}

fn values_of<T: 'static>(values: &Values) -> &Vec<T> {
    values.downcast_ref::<Vec<T>>().unwrap_or_else(|| {
        panic!("internal: values are not {}s: the graph's types are inconsistent", std::any::type_name::<T>())
    })
}

/// The values of a batch, typed; a batch of another type is an engine bug.
pub fn downcast_values<T: 'static>(values: Values, operator: &str) -> Vec<T> {
    *values.downcast::<Vec<T>>().unwrap_or_else(|_| {
        panic!("internal: {operator} received a batch that is not of {}s", std::any::type_name::<T>())
    })
}

impl ValuesInfo {
    fn of<T: Record>() -> ValuesInfo {
        ValuesInfo {
            new: |capacity| Box::new(Vec::<T>::with_capacity(capacity)),
            decode_push: |values, input| {
                let value = T::decode(input)?;
                values.downcast_mut::<Vec<T>>().expect("internal: values of the decoded type").push(value);
                Ok(())
            },
            for_each: |values, visit| values_of::<T>(values).iter().for_each(|value| visit(value)),
            into_elements: |values| {
                downcast_values::<T>(values, "a chain").into_iter().map(|value| Box::new(value) as Element).collect()
            },
            clone: |values| Box::new(values_of::<T>(values).clone()),
            chunks: chunks_of::<T>,
        }
    }
}

fn encode_erased<T: Record>(element: &dyn Any, out: &mut Vec<u8>) {
    let value = element.downcast_ref::<T>().unwrap_or_else(|| {
        panic!("internal: element is not a {}: the graph's types are inconsistent", std::any::type_name::<T>())
    });
    value.encode(out);
}

fn decode_erased<T: Record>(input: &mut &[u8]) -> Result<Element, DecodeError> {
    Ok(Box::new(T::decode(input)?))
}

fn clone_erased<T: Record>(element: &dyn Any) -> Element {
    let value = element.downcast_ref::<T>().unwrap_or_else(|| {
        panic!("internal: element is not a {}: the graph's types are inconsistent", std::any::type_name::<T>())
    });
    Box::new(value.clone())
}

impl TypeInfo {
    /// The codec of `T`.
    pub fn of<T: Record>() -> TypeInfo {
        TypeInfo {
            name: std::any::type_name::<T>(),
            encode: encode_erased::<T>,
            decode: decode_erased::<T>,
            clone: clone_erased::<T>,
            values: ValuesInfo::of::<T>(),
        }
    }
    /// The Rust name of the type, with its module paths (`alloc::string::String`).
    pub fn name(&self) -> &'static str {
        self.name
    }
    /// The type's name as a user writes it (`String`): see [`readable_type_name`].
    pub fn readable_name(&self) -> String {
        readable_type_name(self.name)
    }
    /// Appends the encoding of an element of this type.
    pub fn encode(&self, element: &dyn Any, out: &mut Vec<u8>) {
        (self.encode)(element, out)
    }
    /// Decodes one element of this type from the front of `input`.
    pub fn decode(&self, input: &mut &[u8]) -> Result<Element, DecodeError> {
        (self.decode)(input)
    }
    /// A copy of an element of this type (for an operator with several chained outputs).
    pub fn clone_element(&self, element: &dyn Any) -> Element {
        (self.clone)(element)
    }
    /// No values of this type yet, with room for `capacity`.
    pub fn new_values(&self, capacity: usize) -> Values {
        (self.values.new)(capacity)
    }
    /// Decodes one value from the front of `input` onto the end of `values`.
    pub fn decode_onto(&self, values: &mut Values, input: &mut &[u8]) -> Result<(), DecodeError> {
        (self.values.decode_push)(values, input)
    }
    /// Visits each of `values`, in order.
    pub fn for_each_value(&self, values: &Values, visit: &mut dyn FnMut(&dyn Any)) {
        (self.values.for_each)(values, visit)
    }
    /// `values` as single elements, in order (for an operator that takes one at a time).
    pub fn into_elements(&self, values: Values) -> Vec<Element> {
        (self.values.into_elements)(values)
    }
    /// A copy of `values`.
    pub fn clone_values(&self, values: &Values) -> Values {
        (self.values.clone)(values)
    }
    /// `values` cut into runs of `size` (at least 1; the last run may be shorter), in order.
    pub fn chunk_values(&self, values: Values, size: usize) -> Vec<Values> {
        (self.values.chunks)(values, size.max(1))
    }
}

impl fmt::Debug for TypeInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

/// A type name as a user writes it: every path shortened to its last segment, inside generics
/// and tuples too, so `(alloc::string::String, u64)` reads `(String, u64)` and
/// `alloc::vec::Vec<core::option::Option<i64>>` reads `Vec<Option<i64>>`. Plans print types
/// this way; [`std::any::type_name`] spells out every module.
pub fn readable_type_name(name: &str) -> String {
    let is_identifier = |character: char| character.is_alphanumeric() || character == '_';
    let mut readable = String::with_capacity(name.len());
    // Where, in `readable`, the path being read began.
    let mut path_start = 0;
    let mut rest = name;
    while let Some(character) = rest.chars().next() {
        if let Some(after) = rest.strip_prefix("::")
            && readable.ends_with(is_identifier)
        {
            // A module (or type) segment followed by `::`: drop it, keep what follows.
            readable.truncate(path_start);
            rest = after;
            continue;
        }
        readable.push(character);
        if !is_identifier(character) {
            path_start = readable.len();
        }
        rest = &rest[character.len_utf8()..];
    }
    readable
}

/// Appends the encoded key of an erased element to a buffer (the caller's, reused from record
/// to record): the key selector of a `key_by`.
pub type KeySelector = Arc<dyn Fn(&dyn Any, &mut Vec<u8>) + Send + Sync>;

/// Appends the encoded key of a typed element to a buffer.
pub type KeyEncoder<T> = Arc<dyn Fn(&T, &mut Vec<u8>) + Send + Sync>;

/// Erases a typed key selector.
pub fn erase_key_selector<T: Record, K: Key>(selector: impl Fn(&T) -> K + Send + Sync + 'static) -> KeySelector {
    erase_key_encoder::<T>(Arc::new(move |value: &T, out: &mut Vec<u8>| selector(value).encode(out)))
}

/// Erases a typed key encoder.
pub fn erase_key_encoder<T: Record>(encoder: KeyEncoder<T>) -> KeySelector {
    Arc::new(move |element: &dyn Any, out: &mut Vec<u8>| {
        let value = element
            .downcast_ref::<T>()
            .unwrap_or_else(|| panic!("internal: keyed element is not a {}", std::any::type_name::<T>()));
        encoder(value, out)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip<T: Record + PartialEq>(value: T) {
        let bytes = value.to_bytes();
        assert_eq!(T::from_bytes(&bytes).unwrap(), value);
    }

    #[test]
    fn type_names_read_as_a_user_writes_them() {
        assert_eq!(readable_type_name("alloc::string::String"), "String");
        assert_eq!(readable_type_name("(alloc::string::String, u64)"), "(String, u64)");
        assert_eq!(readable_type_name("alloc::vec::Vec<core::option::Option<i64>>"), "Vec<Option<i64>>");
        assert_eq!(
            readable_type_name("alloc::collections::btree::map::BTreeMap<alloc::string::String, (u8, [u16; 4])>"),
            "BTreeMap<String, (u8, [u16; 4])>"
        );
        assert_eq!(readable_type_name("&'static str"), "&'static str");
        assert_eq!(readable_type_name("u64"), "u64");
        assert_eq!(readable_type_name("my_job::events::Event"), "Event");
        assert_eq!(
            readable_type_name("alloc::boxed::Box<dyn core::any::Any + core::marker::Send>"),
            "Box<dyn Any + Send>"
        );
        // A qualified path keeps the `::` that follows a closing bracket.
        assert_eq!(
            readable_type_name("<alloc::vec::Vec<u8> as core::iter::traits::collect::IntoIterator>::Item"),
            "<Vec<u8> as IntoIterator>::Item"
        );
        assert_eq!(TypeInfo::of::<(String, Vec<Option<i64>>)>().readable_name(), "(String, Vec<Option<i64>>)");
    }

    #[test]
    fn values_round_trip() {
        round_trip(0u8);
        round_trip(u64::MAX);
        round_trip(-5i64);
        round_trip(i32::MIN);
        round_trip(String::from("héllo"));
        round_trip((String::from("a"), 3i64));
        round_trip(vec![Some(1u32), None]);
        round_trip((true, (), 9u16, String::new()));
    }

    #[test]
    fn encoded_integers_sort_like_values() {
        let values = [-300i64, -1, 0, 1, 299];
        let encoded: Vec<Vec<u8>> = values.iter().map(Record::to_bytes).collect();
        let mut sorted = encoded.clone();
        sorted.sort();
        assert_eq!(encoded, sorted);
    }

    #[test]
    fn truncated_and_trailing_bytes_are_errors() {
        let bytes = String::from("word").to_bytes();
        assert!(String::from_bytes(&bytes[..bytes.len() - 1]).is_err());
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(String::from_bytes(&longer).is_err());
        assert!(bool::from_bytes(&[2]).is_err());
    }
}
