//! [`StreamRecord`]: what a `DynamoDB` stream record carries, in either shape (the Streams API
//! and the Lambda event), as attribute maps.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_dynamo::Item;

#[cfg(any(feature = "streams", feature = "lambda"))]
use super::error::ChangeError;
use super::error::RecordKeys;
use crate::store::StreamView;

/// The kind of change a stream record reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ChangeKind {
    /// An item was created (`INSERT`).
    Insert,
    /// An item was changed in place (`MODIFY`): its primary key is the same.
    Modify,
    /// An item was deleted (`REMOVE`), by a delete or by TTL.
    Remove,
}

impl ChangeKind {
    /// The `DynamoDB` event name: `INSERT`, `MODIFY` or `REMOVE`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Insert => "INSERT",
            Self::Modify => "MODIFY",
            Self::Remove => "REMOVE",
        }
    }

    /// The kind of a `DynamoDB` event name, or `None`.
    pub fn from_name(name: &str) -> Option<Self> {
        [Self::Insert, Self::Modify, Self::Remove]
            .into_iter()
            .find(|k| k.as_str() == name)
    }
}

impl fmt::Display for ChangeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One `DynamoDB` stream record as attribute maps, whichever API delivered it: the input of
/// [`Change::decode`](super::Change::decode).
///
/// Built from a Streams API record (`aws_sdk_dynamodbstreams::types::Record`, feature
/// `streams`), from a Lambda event record (`aws_lambda_events::event::dynamodb::EventRecord`,
/// feature `lambda`), both with `TryFrom`, or by hand. An empty image counts as no image (the
/// Lambda shape writes an absent image as an empty map; a real image always holds the keys).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct StreamRecord {
    /// The kind of change.
    pub kind: ChangeKind,
    /// The primary key attributes of the changed item (`Keys`).
    pub keys: Item,
    /// The item before the change (`OldImage`), when the stream view carries it.
    pub old_image: Option<Item>,
    /// The item after the change (`NewImage`), when the stream view carries it.
    pub new_image: Option<Item>,
    /// The stream view the record was written under, when the record says.
    pub view: Option<StreamView>,
    /// The record's sequence number in its shard, when the record says.
    pub sequence_number: Option<String>,
    /// The event id, when the record says.
    pub event_id: Option<String>,
    /// Whether `DynamoDB`'s Time to Live deleted the item (a `REMOVE` whose user identity is
    /// the `DynamoDB` service), rather than a write.
    pub expired: bool,
}

impl StreamRecord {
    /// A record of `kind` for the item with these `keys`, without images.
    pub fn new(kind: ChangeKind, keys: Item) -> Self {
        Self {
            kind,
            keys,
            old_image: None,
            new_image: None,
            view: None,
            sequence_number: None,
            event_id: None,
            expired: false,
        }
    }

    /// With the image before the change.
    #[must_use]
    pub fn with_old_image(mut self, image: Item) -> Self {
        self.old_image = Some(image);
        self
    }

    /// With the image after the change.
    #[must_use]
    pub fn with_new_image(mut self, image: Item) -> Self {
        self.new_image = Some(image);
        self
    }

    /// With the stream view the record was written under.
    #[must_use]
    pub fn with_view(mut self, view: StreamView) -> Self {
        self.view = Some(view);
        self
    }

    /// With its sequence number.
    #[must_use]
    pub fn with_sequence_number(mut self, sequence_number: impl Into<String>) -> Self {
        self.sequence_number = Some(sequence_number.into());
        self
    }

    /// The record as the stream would carry it under `view`: the images the view does not
    /// carry removed, and the view set. For tests and replays.
    #[must_use]
    pub fn seen_through(mut self, view: StreamView) -> Self {
        let (old, new) = carried(view);
        if !old {
            self.old_image = None;
        }
        if !new {
            self.new_image = None;
        }
        self.view = Some(view);
        self
    }

    pub(crate) fn record_keys(&self) -> RecordKeys {
        RecordKeys::new(self.keys.clone())
    }
}

/// The images a view carries: (old, new).
pub(crate) fn carried(view: StreamView) -> (bool, bool) {
    match view {
        StreamView::KeysOnly => (false, false),
        StreamView::NewImage => (false, true),
        StreamView::OldImage => (true, false),
        StreamView::NewAndOldImages => (true, true),
    }
}

#[cfg(any(feature = "streams", feature = "lambda"))]
fn malformed(keys: &Item, reason: impl Into<String>) -> ChangeError {
    ChangeError::Malformed {
        keys: RecordKeys::new(keys.clone()),
        reason: reason.into(),
    }
}

/// What both shapes carry, as they name it: checked and assembled by [`Parts::record`].
#[cfg(any(feature = "streams", feature = "lambda"))]
struct Parts<'n> {
    event_name: Option<&'n str>,
    view_name: Option<String>,
    keys: Item,
    old_image: Option<Item>,
    new_image: Option<Item>,
    sequence_number: Option<String>,
    event_id: Option<String>,
    /// The user identity's type and principal.
    identity: (Option<&'n str>, Option<&'n str>),
}

#[cfg(any(feature = "streams", feature = "lambda"))]
impl Parts<'_> {
    fn record(self) -> Result<StreamRecord, ChangeError> {
        let keys = self.keys;
        let kind = self
            .event_name
            .and_then(ChangeKind::from_name)
            .ok_or_else(|| {
                malformed(
                    &keys,
                    format!(
                        "event name {:?} is none of INSERT, MODIFY, REMOVE",
                        self.event_name.unwrap_or("(absent)")
                    ),
                )
            })?;
        let view =
            match self.view_name {
                None => None,
                Some(name) => Some(StreamView::from_name(&name).ok_or_else(|| {
                    malformed(&keys, format!("unknown stream view type {name:?}"))
                })?),
            };
        // an absent image is an empty map in the Lambda shape; a real image holds the keys
        let image = |item: Option<Item>| item.filter(|i| !i.is_empty());
        Ok(StreamRecord {
            kind,
            keys,
            old_image: image(self.old_image),
            new_image: image(self.new_image),
            view,
            sequence_number: self.sequence_number,
            event_id: self.event_id.filter(|id| !id.is_empty()),
            // Time to Live deletes as the DynamoDB service
            expired: self.identity == (Some("Service"), Some("dynamodb.amazonaws.com")),
        })
    }
}

#[cfg(feature = "streams")]
#[cfg_attr(docsrs, doc(cfg(feature = "streams")))]
impl TryFrom<aws_sdk_dynamodbstreams::types::Record> for StreamRecord {
    type Error = ChangeError;

    /// A Streams API record (`GetRecords`), its attribute maps converted by `serde_dynamo`.
    fn try_from(record: aws_sdk_dynamodbstreams::types::Record) -> Result<Self, ChangeError> {
        let Some(change) = record.dynamodb else {
            return Err(malformed(&Item::default(), "no `dynamodb` part"));
        };
        // `serde_dynamo`'s conversion panics on a type it does not know (from an SDK newer
        // than this crate): refuse those first
        for (name, map) in [
            ("Keys", &change.keys),
            ("OldImage", &change.old_image),
            ("NewImage", &change.new_image),
        ] {
            if let Some((attribute, _)) =
                map.iter().flatten().find(|(_, v)| !known_streams_value(v))
            {
                return Err(malformed(
                    &Item::default(),
                    format!(
                        "attribute `{attribute}` of the {name} has a type this version of entity-manager does not know; upgrade it"
                    ),
                ));
            }
        }
        let identity = record.user_identity.as_ref();
        Parts {
            event_name: record
                .event_name
                .as_ref()
                .map(aws_sdk_dynamodbstreams::types::OperationType::as_str),
            view_name: change
                .stream_view_type
                .as_ref()
                .map(|v| v.as_str().to_owned()),
            keys: change.keys.map(Item::from).unwrap_or_default(),
            old_image: change.old_image.map(Item::from),
            new_image: change.new_image.map(Item::from),
            sequence_number: change.sequence_number,
            event_id: record.event_id.clone(),
            identity: (
                identity.and_then(|u| u.r#type()),
                identity.and_then(|u| u.principal_id()),
            ),
        }
        .record()
    }
}

/// Whether every value is of a type `serde_dynamo` knows.
#[cfg(feature = "streams")]
fn known_streams_value(value: &aws_sdk_dynamodbstreams::types::AttributeValue) -> bool {
    use aws_sdk_dynamodbstreams::types::AttributeValue as V;
    match value {
        V::M(m) => m.values().all(known_streams_value),
        V::L(l) => l.iter().all(known_streams_value),
        V::B(_) | V::Bool(_) | V::Bs(_) | V::N(_) | V::Ns(_) | V::Null(_) | V::S(_) | V::Ss(_) => {
            true
        }
        _ => false,
    }
}

#[cfg(feature = "lambda")]
#[cfg_attr(docsrs, doc(cfg(feature = "lambda")))]
impl TryFrom<aws_lambda_events::event::dynamodb::EventRecord> for StreamRecord {
    type Error = ChangeError;

    /// A record of a Lambda `DynamoDB` event, as `aws_lambda_events` deserializes it.
    fn try_from(
        record: aws_lambda_events::event::dynamodb::EventRecord,
    ) -> Result<Self, ChangeError> {
        let change = record.change;
        let identity = record.user_identity.as_ref();
        Parts {
            event_name: Some(&record.event_name),
            // the event type's `Display` is the DynamoDB name
            view_name: change.stream_view_type.map(|v| v.to_string()),
            keys: change.keys,
            old_image: Some(change.old_image),
            new_image: Some(change.new_image),
            sequence_number: change.sequence_number,
            event_id: Some(record.event_id.clone()),
            identity: (
                identity.map(|u| u.type_.as_str()),
                identity.map(|u| u.principal_id.as_str()),
            ),
        }
        .record()
    }
}
