//! Change streams: `DynamoDB` Streams and Lambda stream events decoded into typed changes of
//! the table's entities.
//!
//! In a single-table design every entity's changes arrive in one stream, as attribute maps
//! with the generated keys in them. [`Change::decode`] turns one [`StreamRecord`] into a
//! [`Change`] of an entity, or of an enum over the table's entities (`#[derive(Collection)]`),
//! so that one `match` handles the whole table:
//!
//! - the event [`kind`](Change::kind) (insert, modify, remove), the entity token and the
//!   primary key;
//! - the [`old`](Change::old) and [`new`](Change::new) images as the Rust type, whichever the
//!   stream view carries, keys and generated properties removed as `from_item` removes them;
//! - for a modify with both images, which [fields](Change::changed_fields) and which
//!   [generated keys](Change::changed_keys) changed.
//!
//! A record of an unknown entity, of an entity written under another key mode (or shard space,
//! or delimiters), or one whose image does not decode is a typed [`ChangeError`] naming the
//! entity token and the keys; the decoder never panics and never drops a record.
//!
//! The table needs a stream: [`TableDefinition::with_stream`](crate::store::TableDefinition::with_stream)
//! with the [`StreamView`](crate::store::StreamView) whose images you need (`NewAndOldImages`
//! for [`Change::changed_fields`]).
//!
//! Records come from the Streams API (`aws-sdk-dynamodbstreams`; feature `streams` converts
//! its `Record` and adds `StreamReader`, which follows a table's stream across shards with
//! resumable checkpoints), from a Lambda event (`aws_lambda_events`; feature `lambda` converts
//! its `EventRecord`), or are built by hand:
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # use entity_manager_core::{Entity, EntityExt, Table, transcode};
//! # use entity_manager_core::model::{EntityModel, Property, TableModel};
//! # use entity_manager_core::field::Field;
//! # struct Users;
//! # impl Table for Users {
//! #     const MODEL: TableModel = TableModel::DEFAULT;
//! #     fn model() -> &'static TableModel { static M: TableModel = Users::MODEL; &M }
//! #     fn entities() -> Vec<&'static EntityModel> { vec![User::model()] }
//! # }
//! # #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
//! # #[serde(rename_all = "camelCase")]
//! # struct User { user_id: String, created: u64, email: String }
//! # impl Entity for User {
//! #     type Table = Users;
//! #     const MODEL: EntityModel = {
//! #         const PROPERTIES: &[Property] = &[Property::new("userId", transcode::STRING), Property::new("created", transcode::TIMESTAMP)];
//! #         EntityModel::new("user", "userId", "created").with_properties(PROPERTIES)
//! #     };
//! #     fn model() -> &'static EntityModel { static M: EntityModel = User::MODEL; &M }
//! # }
//! # struct UserFields { email: Field<User, String> }
//! # impl User { const FIELDS: UserFields = UserFields { email: Field::new("email") }; }
//! use entity_manager_core::store::StreamView;
//! use entity_manager_core::stream::{Change, ChangeKind, StreamRecord};
//!
//! // what a stream carries when a user's email changes (the images are keyed items)
//! let before = User { user_id: "u1".into(), created: 1, email: "a@example.com".into() };
//! let old = before.to_item()?;
//! let new = User { email: "b@example.com".into(), ..before }.to_item()?;
//! let keys: std::collections::HashMap<_, _> = ["hashKey", "rangeKey"]
//!     .map(|k| (k.to_owned(), old[k].clone()))
//!     .into();
//! let record = StreamRecord::new(ChangeKind::Modify, keys.into())
//!     .with_old_image(old)
//!     .with_new_image(new)
//!     .with_view(StreamView::NewAndOldImages);
//!
//! let change = Change::<User>::decode(&record)?;
//! assert_eq!(change.kind, ChangeKind::Modify);
//! assert_eq!(change.new.as_ref().map(|u| u.email.as_str()), Some("b@example.com"));
//! assert!(change.changed(User::FIELDS.email));
//! assert_eq!(change.changed_fields(), ["email"]);
//! # Ok(()) }
//! ```
//!
//! The guide (`entity-manager/docs/streams.md` in the facade) shows a Lambda handler and the
//! table-level enum.

mod change;
mod error;
#[cfg(feature = "streams")]
mod reader;
mod record;

pub use change::{Change, Routed};
pub use error::{ChangeError, Image, RecordKeys};
#[cfg(feature = "streams")]
#[cfg_attr(docsrs, doc(cfg(feature = "streams")))]
pub use reader::{Checkpoint, StartAt, StreamError, StreamReader};
pub use record::{ChangeKind, StreamRecord};

/// The Lambda event types this crate converts ([`StreamRecord`] from their `EventRecord`), at the
/// same version.
#[cfg(feature = "lambda")]
#[cfg_attr(docsrs, doc(cfg(feature = "lambda")))]
pub use aws_lambda_events;
/// The `DynamoDB` Streams SDK this crate reads with, for building the client of a
/// [`StreamReader`] at the same version.
#[cfg(feature = "streams")]
#[cfg_attr(docsrs, doc(cfg(feature = "streams")))]
pub use aws_sdk_dynamodbstreams;
