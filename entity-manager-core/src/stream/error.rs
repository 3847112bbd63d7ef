//! What can go wrong while decoding a stream record.

use std::fmt;

use serde_dynamo::Item;

use crate::transcode::DisplayAttr;

/// The key attributes of a stream record, for error messages: `hashKey="user!1"
/// rangeKey="userId#u1"`, each value as found (absent, or of a wrong type, as it is).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RecordKeys(Box<Item>);

impl RecordKeys {
    /// The keys as found in the record.
    pub fn new(keys: Item) -> Self {
        Self(Box::new(keys))
    }

    /// The key attributes, as found.
    pub fn item(&self) -> &Item {
        &self.0
    }
}

impl fmt::Display for RecordKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("(no keys)");
        }
        let mut names: Vec<&String> = self.0.keys().collect();
        names.sort();
        for (i, name) in names.into_iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{name}={}", DisplayAttr(&self.0[name.as_str()]))?;
        }
        Ok(())
    }
}

/// Which image of a stream record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Image {
    /// The item before the change (`OldImage`).
    Old,
    /// The item after the change (`NewImage`).
    New,
}

impl fmt::Display for Image {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Old => "OldImage",
            Self::New => "NewImage",
        })
    }
}

/// A stream record that does not decode: every variant names the keys of the record (and the
/// entity, once its token is known). The decoder never panics and never drops a record.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ChangeError {
    /// The record is not a `DynamoDB` stream record (an unknown event name, no `dynamodb`
    /// part, an image that is not an attribute map…).
    #[error("malformed stream record (keys {keys}): {reason}")]
    Malformed {
        /// The record's keys, as found.
        keys: RecordKeys,
        /// What is wrong.
        reason: String,
    },

    /// A key attribute of the table is absent, or not a string.
    #[error(
        "stream record without a string `{attribute}` key (keys {keys}): the table's keys are strings; is the decoder's table the stream's table?"
    )]
    MissingKey {
        /// The key attribute.
        attribute: String,
        /// The record's keys, as found.
        keys: RecordKeys,
    },

    /// The hash key names no entity the decoder knows.
    #[error(
        "stream record of unknown entity `{token}` (keys {keys}); the decoder knows: {known}. Add the entity to the table's enum, or skip records of other entities by matching this error"
    )]
    UnknownEntity {
        /// The token the hash key starts with (the whole hash key when it has no shard key
        /// delimiter).
        token: String,
        /// The record's keys.
        keys: RecordKeys,
        /// The tokens the decoder knows, comma-separated.
        known: String,
    },

    /// A key of the record does not decode under the table's settings: written under another
    /// key mode ([`Error::KeyModeMismatch`](crate::Error::KeyModeMismatch) as source), with
    /// other delimiters, or not by an entity manager at all.
    #[error(
        "the keys of a stream record of entity `{entity}` do not decode (keys {keys}): {source}"
    )]
    Key {
        /// The entity token.
        entity: String,
        /// The record's keys.
        keys: RecordKeys,
        /// Why.
        #[source]
        source: Box<crate::Error>,
    },

    /// A key or generated property stored in an image is not the one the image's values give
    /// under this table's settings (another key mode, shard space or shard schedule wrote it,
    /// or the image does not belong to the record's keys).
    #[error(
        "{image} of a stream record of entity `{entity}` (keys {keys}) holds `{attribute}` = {stored}, but its values give {expected} under this table's settings; check the key mode, shard space and shard bumps of every service writing the table"
    )]
    KeyMismatch {
        /// The entity token.
        entity: String,
        /// The record's keys.
        keys: RecordKeys,
        /// The image.
        image: Image,
        /// The key or generated attribute.
        attribute: String,
        /// The value stored, as found (`(absent)` if absent).
        stored: String,
        /// The value the image's values give (`(absent)` if none).
        expected: String,
    },

    /// The stream view promises an image the record lacks.
    #[error(
        "stream record of entity `{entity}` (keys {keys}) lacks its {image}, which its `{view}` stream view promises for a {kind} event"
    )]
    MissingImage {
        /// The entity token.
        entity: String,
        /// The record's keys.
        keys: RecordKeys,
        /// The missing image.
        image: Image,
        /// The stream view of the record.
        view: &'static str,
        /// The event kind.
        kind: &'static str,
    },

    /// An image does not decode into the entity's type (a missing field, a value of the wrong
    /// type, a key of the image that does not build).
    #[error(
        "the {image} of a stream record of entity `{entity}` (keys {keys}) does not decode: {source}"
    )]
    Decode {
        /// The entity token.
        entity: String,
        /// The record's keys.
        keys: RecordKeys,
        /// The image.
        image: Image,
        /// Why.
        #[source]
        source: Box<crate::Error>,
    },

    /// The decoder's table configuration is invalid (possible only for hand-written impls).
    #[error(transparent)]
    Schema(Box<crate::Error>),
}

impl ChangeError {
    /// The entity token of the record, when it was recognised.
    pub fn entity(&self) -> Option<&str> {
        match self {
            Self::Key { entity, .. }
            | Self::KeyMismatch { entity, .. }
            | Self::MissingImage { entity, .. }
            | Self::Decode { entity, .. } => Some(entity),
            Self::Malformed { .. }
            | Self::MissingKey { .. }
            | Self::UnknownEntity { .. }
            | Self::Schema(_) => None,
        }
    }

    /// The keys of the record, as found.
    pub fn keys(&self) -> Option<&RecordKeys> {
        match self {
            Self::Malformed { keys, .. }
            | Self::MissingKey { keys, .. }
            | Self::UnknownEntity { keys, .. }
            | Self::Key { keys, .. }
            | Self::KeyMismatch { keys, .. }
            | Self::MissingImage { keys, .. }
            | Self::Decode { keys, .. } => Some(keys),
            Self::Schema(_) => None,
        }
    }
}
