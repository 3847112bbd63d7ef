//! A record serialized straight into the item its keys are then added to.
//!
//! `serde_dynamo::to_item` builds the record's map, then copies it into a new `Item` (its
//! `From<HashMap>` rebuilds the map), and the keys added afterwards grow it again. Here the
//! record's fields go straight into one `Item` sized for the fields and the keys, and `NULL`
//! values (`None` fields) are left out as they come, with no second pass. Each field value is
//! still written by `serde_dynamo`, so the attribute values are exactly its.
//!
//! Only a struct or a map of string keys at the top level takes this path. Anything else, and
//! any error, falls back to `serde_dynamo::to_item`, which gives its own result or error.

use std::fmt;

use serde::ser::{self, Impossible, Serialize};
use serde_dynamo::{AttributeValue, Item};

/// The record as an item without `NULL` attributes, with room for `extra` more attributes.
pub(crate) fn record_item<T: Serialize + ?Sized>(
    record: &T,
    extra: usize,
) -> Result<Item, serde_dynamo::Error> {
    if let Ok(item) = record.serialize(RecordSerializer { extra }) {
        return Ok(item);
    }
    let mut item: Item = serde_dynamo::to_item(record)?;
    item.retain(|_, value| !matches!(value, AttributeValue::Null(_)));
    Ok(item)
}

/// The signal to take the general path (`serde_dynamo::to_item`), which then gives the result
/// or the error.
#[derive(Debug)]
struct Fallback;

impl fmt::Display for Fallback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not a struct or a map of string keys")
    }
}

impl std::error::Error for Fallback {}

impl ser::Error for Fallback {
    fn custom<M: fmt::Display>(_: M) -> Self {
        Self
    }
}

/// Serializes a top-level struct or map into an `Item` with room for `extra` more attributes.
struct RecordSerializer {
    extra: usize,
}

/// A struct or map being written into its item.
struct RecordFields {
    item: Item,
    /// The key of a map entry whose value comes next.
    key: Option<String>,
}

impl RecordFields {
    fn with_capacity(fields: usize) -> Self {
        let mut item = Item::default();
        item.reserve(fields);
        Self { item, key: None }
    }

    /// Writes one field with `serde_dynamo`; a `NULL` value removes the attribute, as the
    /// general path leaves no `NULL` attribute whatever the order of the fields.
    fn field<T: Serialize + ?Sized>(&mut self, key: String, value: &T) -> Result<(), Fallback> {
        match serde_dynamo::to_attribute_value::<_, AttributeValue>(value) {
            Ok(AttributeValue::Null(_)) => {
                self.item.remove(&key);
                Ok(())
            }
            Ok(value) => {
                self.item.insert(key, value);
                Ok(())
            }
            Err(_) => Err(Fallback),
        }
    }
}

impl ser::SerializeStruct for RecordFields {
    type Ok = Item;
    type Error = Fallback;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Fallback> {
        self.field(key.to_owned(), value)
    }

    fn end(self) -> Result<Item, Fallback> {
        Ok(self.item)
    }
}

impl ser::SerializeMap for RecordFields {
    type Ok = Item;
    type Error = Fallback;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Fallback> {
        if self.key.is_some() {
            return Err(Fallback);
        }
        self.key = Some(key.serialize(KeySerializer)?);
        Ok(())
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Fallback> {
        let key = self.key.take().ok_or(Fallback)?;
        self.field(key, value)
    }

    fn end(self) -> Result<Item, Fallback> {
        if self.key.is_some() {
            return Err(Fallback);
        }
        Ok(self.item)
    }
}

/// Every form but a struct or a map goes to the general path.
macro_rules! fall_back {
    ($($method:ident($($arg:ty),*) -> $ok:ty;)*) => {$(
        fn $method(self, $(_: $arg),*) -> Result<$ok, Fallback> {
            Err(Fallback)
        }
    )*};
}

impl ser::Serializer for RecordSerializer {
    type Ok = Item;
    type Error = Fallback;
    type SerializeSeq = Impossible<Item, Fallback>;
    type SerializeTuple = Impossible<Item, Fallback>;
    type SerializeTupleStruct = Impossible<Item, Fallback>;
    type SerializeTupleVariant = Impossible<Item, Fallback>;
    type SerializeMap = RecordFields;
    type SerializeStruct = RecordFields;
    type SerializeStructVariant = Impossible<Item, Fallback>;

    fn serialize_struct(self, _: &'static str, len: usize) -> Result<RecordFields, Fallback> {
        Ok(RecordFields::with_capacity(len + self.extra))
    }

    fn serialize_map(self, len: Option<usize>) -> Result<RecordFields, Fallback> {
        Ok(RecordFields::with_capacity(len.unwrap_or(0) + self.extra))
    }

    fall_back! {
        serialize_bool(bool) -> Item;
        serialize_i8(i8) -> Item;
        serialize_i16(i16) -> Item;
        serialize_i32(i32) -> Item;
        serialize_i64(i64) -> Item;
        serialize_u8(u8) -> Item;
        serialize_u16(u16) -> Item;
        serialize_u32(u32) -> Item;
        serialize_u64(u64) -> Item;
        serialize_f32(f32) -> Item;
        serialize_f64(f64) -> Item;
        serialize_char(char) -> Item;
        serialize_str(&str) -> Item;
        serialize_bytes(&[u8]) -> Item;
        serialize_none() -> Item;
        serialize_unit() -> Item;
        serialize_unit_struct(&'static str) -> Item;
        serialize_unit_variant(&'static str, u32, &'static str) -> Item;
        serialize_seq(Option<usize>) -> Self::SerializeSeq;
        serialize_tuple(usize) -> Self::SerializeTuple;
        serialize_tuple_struct(&'static str, usize) -> Self::SerializeTupleStruct;
        serialize_tuple_variant(&'static str, u32, &'static str, usize) -> Self::SerializeTupleVariant;
        serialize_struct_variant(&'static str, u32, &'static str, usize) -> Self::SerializeStructVariant;
    }

    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<Item, Fallback> {
        Err(Fallback)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: &T,
    ) -> Result<Item, Fallback> {
        Err(Fallback)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<Item, Fallback> {
        Err(Fallback)
    }
}

/// A map key: only a string (anything else goes to the general path, which has its own rules
/// for keys).
struct KeySerializer;

impl ser::Serializer for KeySerializer {
    type Ok = String;
    type Error = Fallback;
    type SerializeSeq = Impossible<String, Fallback>;
    type SerializeTuple = Impossible<String, Fallback>;
    type SerializeTupleStruct = Impossible<String, Fallback>;
    type SerializeTupleVariant = Impossible<String, Fallback>;
    type SerializeMap = Impossible<String, Fallback>;
    type SerializeStruct = Impossible<String, Fallback>;
    type SerializeStructVariant = Impossible<String, Fallback>;

    fn serialize_str(self, v: &str) -> Result<String, Fallback> {
        Ok(v.to_owned())
    }

    fall_back! {
        serialize_bool(bool) -> String;
        serialize_i8(i8) -> String;
        serialize_i16(i16) -> String;
        serialize_i32(i32) -> String;
        serialize_i64(i64) -> String;
        serialize_u8(u8) -> String;
        serialize_u16(u16) -> String;
        serialize_u32(u32) -> String;
        serialize_u64(u64) -> String;
        serialize_f32(f32) -> String;
        serialize_f64(f64) -> String;
        serialize_char(char) -> String;
        serialize_bytes(&[u8]) -> String;
        serialize_none() -> String;
        serialize_unit() -> String;
        serialize_unit_struct(&'static str) -> String;
        serialize_unit_variant(&'static str, u32, &'static str) -> String;
        serialize_seq(Option<usize>) -> Self::SerializeSeq;
        serialize_tuple(usize) -> Self::SerializeTuple;
        serialize_tuple_struct(&'static str, usize) -> Self::SerializeTupleStruct;
        serialize_tuple_variant(&'static str, u32, &'static str, usize) -> Self::SerializeTupleVariant;
        serialize_map(Option<usize>) -> Self::SerializeMap;
        serialize_struct(&'static str, usize) -> Self::SerializeStruct;
        serialize_struct_variant(&'static str, u32, &'static str, usize) -> Self::SerializeStructVariant;
    }

    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<String, Fallback> {
        Err(Fallback)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: &T,
    ) -> Result<String, Fallback> {
        Err(Fallback)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<String, Fallback> {
        Err(Fallback)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashMap};

    use proptest::prelude::*;
    use serde::Serialize;

    use super::*;

    /// The general path: `serde_dynamo::to_item`, then every `NULL` attribute removed.
    fn general<T: Serialize>(record: &T) -> Result<Item, String> {
        let mut item: Item = serde_dynamo::to_item(record).map_err(|e| e.to_string())?;
        item.retain(|_, value| !matches!(value, AttributeValue::Null(_)));
        Ok(item)
    }

    fn same_as_general<T: Serialize>(record: &T) -> Result<(), TestCaseError> {
        let fast = record_item(record, 6).map_err(|e| e.to_string());
        prop_assert_eq!(&fast, &general(record));
        Ok(())
    }

    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Record {
        id: String,
        created: u64,
        score: Option<i64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        phone: Option<String>,
        tags: Vec<String>,
        nested: Option<BTreeMap<String, Option<bool>>>,
        #[serde(flatten)]
        extra: BTreeMap<String, Option<f64>>,
    }

    #[derive(Serialize)]
    struct Tuple(u32, String);

    #[derive(Serialize)]
    struct WithOption {
        a: u8,
        b: Option<u8>,
        c: String,
    }

    #[derive(Serialize)]
    struct Wrapper(BTreeMap<String, i32>);

    /// A value whose serialization fails.
    struct Failing;

    impl Serialize for Failing {
        fn serialize<S: ser::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
            Err(ser::Error::custom("refused"))
        }
    }

    #[derive(Serialize)]
    struct WithFailing {
        id: String,
        bad: Failing,
    }

    proptest! {
        #[test]
        fn records_serialize_as_the_general_path(
            id in ".{0,6}",
            created in any::<u64>(),
            score in proptest::option::of(any::<i64>()),
            phone in proptest::option::of("[0-9]{0,4}"),
            tags in proptest::collection::vec("[a-z]{0,3}", 0..3),
            nested in proptest::option::of(proptest::collection::btree_map("[a-z]{1,3}", proptest::option::of(any::<bool>()), 0..3)),
            // flattened keys may repeat the struct's own fields
            extra in proptest::collection::btree_map("(id|created|score|phone|[a-z]{1,3})", proptest::option::of(-1e3f64..1e3), 0..4),
            map in proptest::collection::hash_map("[a-z]{1,3}", proptest::option::of("[a-z]{0,2}"), 0..5),
            numbered in proptest::collection::btree_map(any::<u8>(), any::<bool>(), 0..3),
        ) {
            same_as_general(&Record { id: id.clone(), created, score, phone, tags, nested, extra })?;
            same_as_general(&map)?;
            same_as_general(&numbered)?;
            same_as_general(&Wrapper(numbered.iter().map(|(k, v)| (k.to_string(), i32::from(*v))).collect()))?;
            same_as_general(&Tuple(7, id.clone()))?;
            same_as_general(&vec![id.clone()])?;
            same_as_general(&id)?;
            same_as_general(&WithFailing { id, bad: Failing })?;
        }
    }

    #[test]
    fn errors_are_those_of_serde_dynamo() {
        // not a map: serde_dynamo's own error
        assert!(record_item(&5u8, 0).is_err());
        assert!(
            record_item(
                &WithFailing {
                    id: "a".into(),
                    bad: Failing
                },
                0
            )
            .is_err()
        );
        // a struct's item has room for its fields and the keys from the start
        let item = record_item(&Tuple(1, "a".into()), 0);
        assert!(item.is_err());
        let item = record_item(
            &WithOption {
                a: 1,
                b: None,
                c: "c".into(),
            },
            6,
        );
        assert!(item.is_ok_and(|item| item.len() == 2 && item.capacity() >= 3 + 6));
        let empty: HashMap<String, String> = HashMap::new();
        assert_eq!(record_item(&empty, 3).ok(), Some(Item::default()));
    }
}
