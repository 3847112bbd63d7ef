#![doc = include_str!("../docs/crate.md")]
#![warn(missing_docs)]
// docs.rs (nightly, `--cfg docsrs`) labels feature-gated items; on stable their docs say it
#![cfg_attr(docsrs, feature(doc_cfg))]
// the guides link to every feature's items: checked where they all exist (the workspace build
// and docs.rs enable them), rendered as plain text without a feature
#![cfg_attr(
    all(feature = "streams", feature = "lambda"),
    deny(rustdoc::broken_intra_doc_links)
)]
#![cfg_attr(
    not(all(feature = "streams", feature = "lambda")),
    allow(rustdoc::broken_intra_doc_links)
)]

#[doc(inline)]
pub use entity_manager_core::*;

/// Guides: how the parts fit together, beyond the reference of each item.
pub mod guide {
    #[doc = include_str!("../docs/sharding.md")]
    pub mod sharding {}

    #[doc = include_str!("../docs/paging.md")]
    pub mod paging {}

    #[doc = include_str!("../docs/multi-attribute.md")]
    pub mod multi_attribute {}

    #[doc = include_str!("../docs/streams.md")]
    pub mod streams {}
    #[doc = include_str!("../docs/production.md")]
    pub mod production {}

    #[doc = include_str!("../docs/bulk.md")]
    pub mod bulk {}

    #[cfg(feature = "testing")]
    #[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
    #[doc = include_str!("../docs/testing.md")]
    pub mod testing {}
}

/// Derives [`Table`](trait@Table) for a unit struct: the settings of one DynamoDB table and the
/// entities stored in it.
///
/// | option | default | meaning |
/// |---|---|---|
/// | `entities(A, B, …)` | (none) | the `#[derive(Entity)]` types stored in the table |
/// | `hash_key = "…"` | `"hashKey"` | the partition key attribute |
/// | `range_key = "…"` | `"rangeKey"` | the sort key attribute |
/// | `generated_key_delimiter = "…"` | `"|"` | between the parts of a generated property |
/// | `generated_value_delimiter = "…"` | `"#"` | between a component's name and value |
/// | `shard_key_delimiter = "…"` | `"!"` | between the entity token and the shard suffix |
/// | `shard_space = product \| power` | `product` | `chars × 2^char_bits` shards (npm 6.14.0, the seed docs) or `(2^char_bits)^chars` (upstream v8) |
/// | `throttle = n` | `10` | default number of shard queries in flight |
/// | `key_mode = transcoded \| typescript` | `transcoded` | component values in keys transcoded (sortable), or raw as the TypeScript Entity Manager writes them ([`KeyMode`](model::KeyMode)) |
/// | `profile = native \| npm6_14 \| upstream8` | `native` | shard space, key mode, numeric hashing and shard hash of a TypeScript release at once ([`Profile`](model::Profile)); excludes `shard_space` and `key_mode` |
/// | `crate = path` | `::entity_manager` | where this crate is, for re-exporting crates |
///
/// Checked at compile time: delimiters are non-empty punctuation and none contains another; the
/// two key attributes differ; no entity stores an attribute under a key attribute's name; the
/// entities have distinct tokens; one index name means one GSI (same keys and projection across
/// entities); at most 20 GSIs.
///
/// ```
/// use entity_manager::Table;
/// use entity_manager::model::{TableModel, ShardSpace};
///
/// #[derive(Table)]
/// #[table(hash_key = "pk", range_key = "sk", generated_key_delimiter = "~", shard_space = power)]
/// struct Orders;
///
/// let model: &TableModel = <Orders as Table>::model();
/// assert_eq!((&*model.hash_key, &*model.delimiters.generated_key), ("pk", "~"));
/// assert_eq!(model.shard_space, ShardSpace::Power);
/// ```
///
/// A mistake is a compile error on the offending token:
///
/// ```compile_fail
/// #[derive(entity_manager::Table)]
/// #[table(generated_key_delimiter = "a")] // a word character
/// struct Bad;
/// ```
pub use entity_manager_derive::Table;

/// Derives [`Collection`](query::Collection) for an enum with one variant per member entity of
/// an item collection (entities that share a multi-attribute index), and
/// [`stream::Routed`], so that the same kind of enum, listing every entity of a table, is what
/// [`stream::Change::decode`] routes a table's stream records into ([`guide::streams`]).
///
/// ```
/// use entity_manager::{Collection, Entity, Table};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Table)]
/// #[table(entities(User, Email))]
/// struct Users;
///
/// #[derive(Entity, Serialize, Deserialize)]
/// #[serde(rename_all = "camelCase")]
/// #[entity(table = Users, unique = user_id, timestamp = created)]
/// #[index(name = "byUser", hash = [owner_id], range = [created])]
/// struct User {
///     #[transcode("string")]
///     user_id: String,
///     #[transcode("timestamp")]
///     created: u64,
///     owner_id: String,
/// }
///
/// #[derive(Entity, Serialize, Deserialize)]
/// #[serde(rename_all = "camelCase")]
/// #[entity(table = Users, unique = email, timestamp = created)]
/// #[index(name = "byUser", hash = [owner_id], range = [created])]
/// struct Email {
///     #[transcode("string")]
///     email: String,
///     #[transcode("timestamp")]
///     created: u64,
///     owner_id: String,
/// }
///
/// #[derive(Collection)]
/// enum UserAndEmails {
///     User(User),
///     Email(Email),
/// }
/// ```
///
/// One option, `#[collection(crate = path)]`: where this crate is (default `::entity_manager`),
/// for re-exporting crates, as `crate = …` of `#[entity(…)]` and `#[table(…)]`.
pub use entity_manager_derive::Collection;

/// Derives [`Entity`](trait@Entity): an entity's model, its index tokens and typed key builders.
///
/// The struct must also implement serde's `Serialize` and `Deserialize` to be converted to and
/// from items ([`EntityExt::to_item`], [`EntityExt::from_item`]). Stored attribute names follow
/// serde's renaming (`rename_all = "camelCase"` turns `first_name_canonical` into
/// `firstNameCanonical`), because names appear inside keys.
///
/// # Attributes
///
/// **`#[entity(…)]`** on the struct (required):
///
/// | option | meaning |
/// |---|---|
/// | `table = Type` | the `#[derive(Table)]` type the entity is stored in (required) |
/// | `unique = field` | the field that identifies a record and never changes (required; transcoded) |
/// | `timestamp = field` | the creation time in ms, an integer field that picks the shard (required; transcoded) |
/// | `token = "user"` | the entity token prefixing hash keys (default: the struct name in lowerCamelCase) |
/// | `default_limit = n`, `default_page_size = n` | query defaults (10 and 10) |
/// | `index_enum = Name` | the name of the emitted index type (default `<Struct>Index`) |
/// | `version = field` | an integer field every write checks and increments (optimistic locking: a stale write is [`Error::VersionConflict`]) |
/// | `crate = path` | where this crate is (default `::entity_manager`) |
///
/// **`#[transcode("name")]`** on a field makes it a transcoded property, which keys may contain.
/// The defaults are `string` (`String`), `int` (integers up to 16 digits), `fix6` (`f64`),
/// `timestamp` (`u64`, `i64`), `boolean` (`bool`) and `bigint20` (`i64`, `u64` on fields:
/// `serde_dynamo` cannot store 128-bit integers, so `i128`/`u128` fields are rejected; the
/// dynamic transcoder covers the whole 20-digit range); an `Option` of any of these is an
/// optional property. A user transcode is named by its path:
/// `#[transcode(my::Upper)]` for a type implementing [`transcode::Transcode`] for the field's
/// type. A transcode that does not accept the field's type is a compile error on that type.
///
/// **`#[generated(name = ident, components = [field, …], sharded | atomic, rename = "…")]`** on
/// the struct (repeatable) declares a generated property: a string attribute built from
/// transcoded fields. `sharded` puts it on the hash side (`<hashKey>|c1#v1|…`, usable as an
/// index hash key, always atomic); otherwise it is a range-side value (`c1#v1|c2#v2`), where a
/// missing component leaves an empty value unless `atomic`. `name` is written like a field, in
/// `snake_case` (`name_key`, or `r#type` for a keyword); the property is stored under the struct's
/// serde renaming (`nameKey` with `rename_all = "camelCase"`), or exactly as `rename` gives it.
///
/// **`#[shard_bumps(bumps = [bump(timestamp = ms, char_bits = 1..=5, chars = 0..=40), …])]`**
/// on the struct (once): the shard schedule. Records created from `timestamp` on get a suffix
/// of `chars` characters in radix `2^char_bits`; `chars` must strictly increase. Without it the
/// entity has one unsharded partition. The older form without the list,
/// `#[shard_bumps(bump(…), bump(…))]`, means the same.
///
/// **`#[index(name = "gsiName", hash = sharded_generated, range = field_or_generated,
/// project = [field, …] | keys_only)]`** on the struct (repeatable): a GSI the entity can be
/// queried through. `hash` defaults to the table hash key and `range` to the table range key.
/// The GSI projects every attribute, or with `project = [field, …]` the keys and those fields
/// (INCLUDE), or with `project = keys_only` (also written as the bare flag `keys_only`, or as
/// `project = []`, as `projections: []` in a TypeScript config) only the keys. An index name is
/// the GSI's name: 3 to 255 letters, digits, `_`, `-` or `.`, starting with a letter (it also
/// names a variant of the index enum).
///
/// Names are Rust identifiers everywhere, raw ones (`r#type`) included.
///
/// ```
/// use entity_manager::{Entity, Table};
/// use entity_manager::model::Projection;
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Table)]
/// #[table(entities(Order))]
/// struct Orders;
///
/// #[derive(Entity, Serialize, Deserialize)]
/// #[serde(rename_all = "camelCase")]
/// #[entity(table = Orders, unique = order_id, timestamp = created)]
/// #[shard_bumps(bumps = [
///     bump(timestamp = 1_735_689_600_000, char_bits = 2, chars = 1),
///     bump(timestamp = 1_767_225_600_000, char_bits = 3, chars = 2),
/// ])]
/// #[generated(name = customer_range_key, components = [customer, created])]
/// #[index(name = "byCustomer", range = customer_range_key, project = [total])]
/// #[index(name = "byCreated", range = created, project = keys_only)]
/// #[index(name = "byTotal", range = total, project = [])] // keys only too
/// struct Order {
///     #[transcode("string")]
///     order_id: String,
///     #[transcode("timestamp")]
///     created: u64,
///     #[transcode("string")]
///     customer: String,
///     #[transcode("int")]
///     total: u32,
/// }
///
/// let model = Order::model();
/// assert_eq!(model.generated[0].name, "customerRangeKey");
/// assert_eq!(model.indexes[1].projection, Projection::KeysOnly);
/// assert_eq!(model.indexes[2].projection, Projection::KeysOnly);
/// assert_eq!(model.shard_bumps.len(), 3); // the implied unsharded bump first
/// ```
///
/// # What it emits
///
/// - `impl Entity for T` with a `const` model (data only: every behaviour lives in the core);
/// - `enum <T>Index {}` holding one constant per index, a typed token
///   ([`TypedIndex`](query::TypedIndex)`<T, `[`Classic`](query::Classic)`>` or
///   `<T, `[`MultiAttribute`](query::MultiAttribute)`>`): `T::query(&store)?.index(TIndex::Created)`
///   gives the builder of that index's kind, so a range condition on a multi-attribute index (or
///   a partition value on a classic one) does not compile;
/// - per generated property, `T::<name>()` returning a typed builder `<T><Name><0>` whose methods
///   take the components in key order, giving a `begins_with` prefix at every stage
///   ([`as_str`](KeyBuilder::as_str)) and the full key at the last (`key()`);
/// - `struct <T>Fields` and `T::FIELDS`: one typed [`Field`](field::Field) per stored field, for
///   conditions and partial updates ([`field`]): `T::FIELDS.last_name.eq("king")`,
///   `Changes::new().remove(T::FIELDS.phone)`. The unique and timestamp fields are
///   [`KeyPart`](field::KeyPart)s (compared, never set), `Option` fields are
///   [`Optional`](field::Optional) (the only ones `remove` takes);
/// - with `version = field`, `const VERSION` in the impl naming it.
///
/// # Compared with a hand-written impl
///
/// The derive is equivalent to implementing [`Entity`](trait@Entity) by hand with the same
/// model (minus the compile-time checks, the index enum and the typed builders):
///
/// ```
/// use entity_manager::{Entity, EntityExt, Table, transcode};
/// use entity_manager::model::{EntityModel, Property};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Table)]
/// #[table(entities(Email))]
/// struct Emails;
///
/// #[derive(Serialize, Deserialize)]
/// struct Email {
///     email: String,
///     created: u64,
/// }
///
/// const PROPERTIES: &[Property] = &[
///     Property::new("email", transcode::STRING),
///     Property::new("created", transcode::TIMESTAMP),
/// ];
///
/// impl Entity for Email {
///     type Table = Emails;
///     const MODEL: EntityModel = EntityModel::new("email", "email", "created")
///         .with_shard_bumps(&[entity_manager::model::ShardBump::UNSHARDED])
///         .with_properties(PROPERTIES);
///     fn model() -> &'static EntityModel {
///         static MODEL: EntityModel = Email::MODEL;
///         &MODEL
///     }
/// }
///
/// let item = Email { email: "a@b.c".into(), created: 5 }.to_item()?;
/// assert_eq!(item["hashKey"], entity_manager::AttributeValue::S("email!".into()));
/// # Ok::<(), entity_manager::Error>(())
/// ```
///
/// The derived equivalent:
///
/// ```
/// # use entity_manager::{Entity, EntityExt, Table};
/// # use serde::{Deserialize, Serialize};
/// # #[derive(Table)]
/// # #[table(entities(Email))]
/// # struct Emails;
/// #[derive(Entity, Serialize, Deserialize)]
/// #[entity(table = Emails, unique = email, timestamp = created)]
/// struct Email {
///     #[transcode("string")]
///     email: String,
///     #[transcode("timestamp")]
///     created: u64,
/// }
/// # let item = Email { email: "a@b.c".into(), created: 5 }.to_item()?;
/// # assert_eq!(item["hashKey"], entity_manager::AttributeValue::S("email!".into()));
/// # Ok::<(), entity_manager::Error>(())
/// ```
///
/// Mistakes are compile errors on the offending token, all reported together:
///
/// ```compile_fail
/// # use entity_manager::{Entity, Table};
/// # #[derive(Table)]
/// # #[table(entities(Email))]
/// # struct Emails;
/// #[derive(Entity, serde::Serialize, serde::Deserialize)]
/// #[entity(table = Emails, unique = email, timestamp = created)]
/// struct Email {
///     #[transcode("string")]
///     email: String,
///     #[transcode("timestamp")]
///     created: String, // not an integer type
/// }
/// ```
pub use entity_manager_derive::Entity;

/// What an application of entity-manager uses in nearly every file, in one import:
/// `use entity_manager::prelude::*;`.
///
/// The derives and their traits (`Entity`, `Table`, `Collection`, [`EntityExt`]), the stores
/// and what builds them, typed query inputs ([`KeyCondition`](crate::query::KeyCondition),
/// [`FieldSet`](crate::query::FieldSet), [`EVERY_SHARD`](crate::query::EVERY_SHARD)), writes
/// ([`Changes`](crate::field::Changes), [`Transaction`]), and, unnamed, the traits whose
/// methods a query's pages and streams are read with (`StreamExt`, `TryStreamExt`) and that a
/// collection's records are read through (`query::Collection`).
///
/// ```
/// use entity_manager::prelude::*;
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Table)]
/// #[table(entities(Note))]
/// struct Notes;
///
/// #[derive(Entity, Serialize, Deserialize, Debug, PartialEq)]
/// #[serde(rename_all = "camelCase")]
/// #[entity(table = Notes, unique = note_id, timestamp = created)]
/// #[index(name = "created", range = created)]
/// struct Note {
///     #[transcode("string")]
///     note_id: String,
///     #[transcode("timestamp")]
///     created: u64,
/// }
///
/// #[tokio::main]
/// async fn main() -> Result<(), Box<dyn std::error::Error>> {
///     let store = MemoryStore::new(TableDefinition::from_schema(Notes::schema()?)?);
///     Note { note_id: "n1".into(), created: 1_700_000_000_000 }.create(&store).await?;
///     let notes: Vec<Note> = Note::query(&store)?
///         .index(NoteIndex::Created)
///         .stream() // read with `TryStreamExt::try_collect`, in scope through the prelude
///         .try_collect()
///         .await?;
///     assert_eq!(notes.len(), 1);
///     Ok(())
/// }
/// ```
pub mod prelude {
    pub use crate::field::Changes;
    pub use crate::query::Collection as _;
    pub use crate::query::{
        EVERY_SHARD, FieldSet, KeyCondition, StreamExt as _, TryStreamExt as _,
    };
    #[cfg(feature = "dynamodb")]
    pub use crate::store::DynamoStore;
    pub use crate::store::{Expect, MemoryStore, Store, TableDefinition};
    pub use crate::{AttributeValue, Collection, Entity, EntityExt, Table, Transaction};
}
