//! The configuration model: table settings and entities.
//!
//! Every type here is `const`-constructible (names are [`Name`] = `Cow<'static, str>` and lists
//! are `Cow<'static, [T]>`), so `#[derive(Entity)]` can emit a `static` model, while the run-time
//! loader ([`Schema::from_ts_config`](crate::Schema::from_ts_config)) builds the same types with
//! owned data.

use std::borrow::Cow;
use std::fmt;

use crate::limits;
use crate::transcode::{KeyType, Transcoder};

/// A name of an attribute, entity, index or delimiter: borrowed for static models, owned for
/// models loaded at run time.
pub type Name = Cow<'static, str>;

/// A list in the model: borrowed for static models, owned for models loaded at run time.
pub type CowSlice<T> = Cow<'static, [T]>;

/// How many shards a bump of `chars` characters in radix `2^charBits` provides.
///
/// The two TypeScript releases disagree, so the rule is a table setting.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ShardSpace {
    /// `chars × 2^charBits` shards: what the seed docs describe and what the published npm
    /// release 6.14.0 writes. The default.
    #[default]
    Product,
    /// `(2^charBits)^chars` shards: upstream TypeScript 6.14.1 and later (v8).
    Power,
}

impl ShardSpace {
    /// The name used in the compatibility vectors (`"product"` or `"power"`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Product => "product",
            Self::Power => "power",
        }
    }
}

impl fmt::Display for ShardSpace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How component values are written inside generated properties and range keys.
///
/// | mode | `int` 42 | `int` −5 | `timestamp` 5000 | `fix6` 1.5 | `boolean` | `string` |
/// |---|---|---|---|---|---|---|
/// | [`Transcoded`](Self::Transcoded) | `p0000000000000042` | `n9999999999999995` | `0000000005000` | `p0000000001.500000` | `t` / `f` | as is |
/// | [`TypeScript`](Self::TypeScript) | `42` | `-5` | `5000` | `1.5` | `true` / `false` | as is |
///
/// Strings and 13-digit millisecond timestamps are written alike in both modes. A table picks
/// its mode through its [`Profile`] (or `#[table(key_mode = …)]`):
///
/// ```
/// use entity_manager_core::model::{KeyMode, Profile, TableModel};
///
/// assert_eq!(TableModel::DEFAULT.key_mode, KeyMode::Transcoded); // ordered, injective keys
/// let shared = TableModel::DEFAULT.with_profile(Profile::Upstream8);
/// assert_eq!(shared.key_mode, KeyMode::TypeScript); // `score#42`, as TypeScript writes it
/// assert_eq!(KeyMode::TypeScript.to_string(), "typescript");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum KeyMode {
    /// Each value with its transcode: keys sort in value order (negative numbers included) and
    /// every key decodes back to its values. The default.
    #[default]
    Transcoded,
    /// As the TypeScript Entity Manager writes them: the raw JavaScript string form of each
    /// value (`String(value)`), so that a TypeScript service finds the records a Rust service
    /// writes and the other way round. Gives up order for numbers: `10` sorts before `9` and
    /// negative numbers sort backwards, so a range condition on a numeric component of a
    /// generated property (`begins_with`, `between`, `<`) does not select by value. Values that
    /// hold a delimiter are still refused (TypeScript would write an ambiguous key).
    TypeScript,
}

impl KeyMode {
    /// `"transcoded"` or `"typescript"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Transcoded => "transcoded",
            Self::TypeScript => "typescript",
        }
    }
}

impl fmt::Display for KeyMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a numeric unique value is hashed to pick its shard.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum NumericHash {
    /// The decimal string of the number (`String(value)`), as npm 6.14.0 hashes it. The default.
    #[default]
    Decimal,
    /// The constant 5381, as upstream v8 hashes any number (`string-hash` of a non-string), so
    /// that every record of a bump with a numeric unique value lands in one shard.
    Constant,
}

impl NumericHash {
    /// `"decimal"` or `"constant"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Decimal => "decimal",
            Self::Constant => "constant",
        }
    }
}

/// How a unique value's text is hashed to pick its shard.
///
/// The TypeScript library hashes with npm `string-hash` (djb2 over UTF-16 code units, last to
/// first), whose low bits follow the last characters of the text: from 64 shards up,
/// sequential ids (`t0000` … `t9999`) use half the shards and emails or `user-N` put twice the
/// mean share on the hottest. The [`Native`](Profile::Native) profile hashes with SHA-256
/// (FIPS 180-4: a fixed, documented function with full avalanche, the same on every platform
/// and release), so that every family of ids spreads as a uniform random assignment would. See
/// [`shard_hash`](crate::shard::shard_hash) and the sharding guide for the measured spread.
///
/// ```
/// use entity_manager_core::model::{Profile, ShardHash};
///
/// assert_eq!(Profile::Native.shard_hash(), ShardHash::Sha256);
/// assert_eq!(Profile::Npm6_14.shard_hash(), ShardHash::StringHash); // byte-compatible keys
/// assert_eq!(ShardHash::Sha256.as_str(), "sha256");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ShardHash {
    /// The first 8 bytes of the SHA-256 digest of the text's UTF-8 bytes, as a big-endian
    /// `u64`. The default: the native profile.
    #[default]
    Sha256,
    /// npm `string-hash` 1.1.3 ([`string_hash`](crate::shard::string_hash)), as every
    /// TypeScript release hashes: the TypeScript profiles.
    StringHash,
}

impl ShardHash {
    /// `"sha256"` or `"string-hash"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Sha256 => "sha256",
            Self::StringHash => "string-hash",
        }
    }

    /// The hash of this name ([`as_str`](Self::as_str)), or `None`.
    pub fn from_name(name: &str) -> Option<Self> {
        [Self::Sha256, Self::StringHash]
            .into_iter()
            .find(|h| h.as_str() == name)
    }
}

impl fmt::Display for ShardHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Every choice that depends on the TypeScript release a table is shared with, pinned at once.
///
/// | profile | shard space | key mode | numeric unique values hash as | shard hash |
/// |---|---|---|---|---|
/// | [`Native`](Self::Native) (default) | `product` | [`Transcoded`](KeyMode::Transcoded) | their decimal string | [`Sha256`](ShardHash::Sha256) |
/// | [`Npm6_14`](Self::Npm6_14) | `product` | [`TypeScript`](KeyMode::TypeScript) | their decimal string | [`StringHash`](ShardHash::StringHash) |
/// | [`Upstream8`](Self::Upstream8) | `power` | [`TypeScript`](KeyMode::TypeScript) | the constant 5381 | [`StringHash`](ShardHash::StringHash) |
///
/// ```
/// use entity_manager_core::model::{KeyMode, Profile, ShardSpace, TableModel};
///
/// let table = TableModel::DEFAULT.with_profile(Profile::Npm6_14);
/// assert_eq!((table.shard_space, table.key_mode), (ShardSpace::Product, KeyMode::TypeScript));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[allow(non_camel_case_types)] // `Npm6_14` names the release
pub enum Profile {
    /// Our keys: transcoded components (ordered, injective), the `product` shard space.
    #[default]
    Native,
    /// Byte-compatible with the published npm release `@karmaniverous/entity-manager@6.14.0`.
    Npm6_14,
    /// Byte-compatible with upstream TypeScript v8 (6.14.1 and later).
    Upstream8,
}

impl Profile {
    /// Every profile.
    pub const ALL: [Self; 3] = [Self::Native, Self::Npm6_14, Self::Upstream8];

    /// The name used by the CLI's `--key-profile` and in table stamps: `native`, `npm-6.14` or
    /// `upstream-8`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Native => "native",
            Self::Npm6_14 => "npm-6.14",
            Self::Upstream8 => "upstream-8",
        }
    }

    /// The profile of this name ([`as_str`](Self::as_str)), or `None`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.as_str() == name)
    }

    /// The profile with these settings, or `None` for a combination no profile pins (such as
    /// transcoded keys in the `power` shard space).
    pub fn matching(
        key_mode: KeyMode,
        shard_space: ShardSpace,
        numeric_hash: NumericHash,
        shard_hash: ShardHash,
    ) -> Option<Self> {
        Self::ALL.into_iter().find(|p| {
            p.key_mode() == key_mode
                && p.shard_space() == shard_space
                && p.numeric_hash() == numeric_hash
                && p.shard_hash() == shard_hash
        })
    }

    /// The shard-space rule of the profile.
    pub const fn shard_space(self) -> ShardSpace {
        match self {
            Self::Native | Self::Npm6_14 => ShardSpace::Product,
            Self::Upstream8 => ShardSpace::Power,
        }
    }

    /// The key mode of the profile.
    pub const fn key_mode(self) -> KeyMode {
        match self {
            Self::Native => KeyMode::Transcoded,
            Self::Npm6_14 | Self::Upstream8 => KeyMode::TypeScript,
        }
    }

    /// How the profile hashes numeric unique values.
    pub const fn numeric_hash(self) -> NumericHash {
        match self {
            Self::Native | Self::Npm6_14 => NumericHash::Decimal,
            Self::Upstream8 => NumericHash::Constant,
        }
    }

    /// How the profile hashes unique values to pick shards.
    pub const fn shard_hash(self) -> ShardHash {
        match self {
            Self::Native => ShardHash::Sha256,
            Self::Npm6_14 | Self::Upstream8 => ShardHash::StringHash,
        }
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The profile of the TypeScript release that writes this shard space: `product` is
/// [`Profile::Npm6_14`], `power` is [`Profile::Upstream8`]. A configuration loaded with only a
/// shard space ([`Schema::from_ts_config`](crate::Schema::from_ts_config)) is read the way the
/// TypeScript library it came from writes keys.
///
/// ```
/// use entity_manager_core::model::{Profile, ShardSpace};
///
/// assert_eq!(Profile::from(ShardSpace::Product), Profile::Npm6_14);
/// assert_eq!(Profile::from(ShardSpace::Power), Profile::Upstream8);
/// ```
impl From<ShardSpace> for Profile {
    fn from(space: ShardSpace) -> Self {
        match space {
            ShardSpace::Product => Self::Npm6_14,
            ShardSpace::Power => Self::Upstream8,
        }
    }
}

/// The three delimiters that structure generated keys.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Delimiters {
    /// Separates the parts of a generated property (default `|`).
    pub generated_key: Name,
    /// Separates a component's name from its value (default `#`).
    pub generated_value: Name,
    /// Separates the entity token from the shard suffix in a hash key (default `!`).
    pub shard_key: Name,
}

impl Delimiters {
    /// The TypeScript defaults: `|`, `#` and `!`.
    pub const DEFAULT: Self = Self::new(
        limits::DEFAULT_GENERATED_KEY_DELIMITER,
        limits::DEFAULT_GENERATED_VALUE_DELIMITER,
        limits::DEFAULT_SHARD_KEY_DELIMITER,
    );

    /// Three delimiters: between the parts of a generated property, between a component's
    /// name and value, and between the entity token and the shard suffix.
    pub const fn new(
        generated_key: &'static str,
        generated_value: &'static str,
        shard_key: &'static str,
    ) -> Self {
        Self {
            generated_key: Cow::Borrowed(generated_key),
            generated_value: Cow::Borrowed(generated_value),
            shard_key: Cow::Borrowed(shard_key),
        }
    }

    /// The three delimiters with their configuration names, in a fixed order.
    pub fn named(&self) -> [(&'static str, &str); 3] {
        [
            ("generatedKeyDelimiter", &self.generated_key),
            ("generatedValueDelimiter", &self.generated_value),
            ("shardKeyDelimiter", &self.shard_key),
        ]
    }

    /// The first delimiter that occurs in `value`, if any.
    pub fn find_in(&self, value: &str) -> Option<&str> {
        [&self.generated_key, &self.generated_value, &self.shard_key]
            .into_iter()
            .map(|d| &**d)
            .find(|d| !d.is_empty() && value.contains(d))
    }
}

impl Default for Delimiters {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Table-level settings shared by every entity of one DynamoDB table.
///
/// Built from [`DEFAULT`](Self::DEFAULT) with the `with_*` methods, in `const` context too:
///
/// ```
/// use entity_manager_core::model::{Delimiters, ShardSpace, TableModel};
///
/// const ORDERS: TableModel = TableModel::DEFAULT
///     .with_keys("pk", "sk")
///     .with_delimiters(Delimiters::new("~", "#", "!"))
///     .with_shard_space(ShardSpace::Power)
///     .with_throttle(4);
/// assert_eq!((&*ORDERS.hash_key, ORDERS.throttle), ("pk", 4));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct TableModel {
    /// The partition key attribute name (`hashKey` by default).
    pub hash_key: Name,
    /// The sort key attribute name (`rangeKey` by default).
    pub range_key: Name,
    /// The key delimiters.
    pub delimiters: Delimiters,
    /// The shard-space rule.
    pub shard_space: ShardSpace,
    /// The default maximum number of shard queries in flight.
    pub throttle: usize,
    /// How component values are written inside keys.
    pub key_mode: KeyMode,
    /// How numeric unique values are hashed to pick a shard.
    pub numeric_hash: NumericHash,
    /// How unique values are hashed to pick a shard.
    pub shard_hash: ShardHash,
}

impl TableModel {
    /// The defaults: `hashKey`/`rangeKey`, `|`/`#`/`!`, a throttle of 10 and the
    /// [`Native`](Profile::Native) profile.
    pub const DEFAULT: Self = Self {
        hash_key: Cow::Borrowed(limits::DEFAULT_HASH_KEY),
        range_key: Cow::Borrowed(limits::DEFAULT_RANGE_KEY),
        delimiters: Delimiters::DEFAULT,
        shard_space: ShardSpace::Product,
        throttle: limits::DEFAULT_THROTTLE,
        key_mode: KeyMode::Transcoded,
        numeric_hash: NumericHash::Decimal,
        shard_hash: ShardHash::Sha256,
    };

    /// These settings under a compatibility profile: its shard space, key mode, numeric
    /// hashing and shard hash replace the table's.
    #[must_use]
    pub const fn with_profile(mut self, profile: Profile) -> Self {
        self.shard_space = profile.shard_space();
        self.key_mode = profile.key_mode();
        self.numeric_hash = profile.numeric_hash();
        self.shard_hash = profile.shard_hash();
        self
    }

    /// These settings with other key attribute names.
    ///
    /// Meant for `const` models: a `Cow` cannot be dropped in `const` context, so a replaced
    /// owned value is leaked (a borrowed one owns nothing). At run time, assign the public field
    /// instead.
    #[must_use]
    pub const fn with_keys(mut self, hash_key: &'static str, range_key: &'static str) -> Self {
        std::mem::forget(std::mem::replace(
            &mut self.hash_key,
            Cow::Borrowed(hash_key),
        ));
        std::mem::forget(std::mem::replace(
            &mut self.range_key,
            Cow::Borrowed(range_key),
        ));
        self
    }

    /// These settings with other delimiters.
    ///
    /// Meant for `const` models: a `Cow` cannot be dropped in `const` context, so a replaced
    /// owned value is leaked (a borrowed one owns nothing). At run time, assign the public field
    /// instead.
    #[must_use]
    pub const fn with_delimiters(mut self, delimiters: Delimiters) -> Self {
        std::mem::forget(std::mem::replace(&mut self.delimiters, delimiters));
        self
    }

    /// These settings with another shard-space rule.
    #[must_use]
    pub const fn with_shard_space(mut self, shard_space: ShardSpace) -> Self {
        self.shard_space = shard_space;
        self
    }

    /// These settings with another default throttle (shard queries in flight).
    #[must_use]
    pub const fn with_throttle(mut self, throttle: usize) -> Self {
        self.throttle = throttle;
        self
    }

    /// These settings with another key mode.
    #[must_use]
    pub const fn with_key_mode(mut self, key_mode: KeyMode) -> Self {
        self.key_mode = key_mode;
        self
    }

    /// These settings with another numeric hashing.
    #[must_use]
    pub const fn with_numeric_hash(mut self, numeric_hash: NumericHash) -> Self {
        self.numeric_hash = numeric_hash;
        self
    }

    /// These settings with another shard hash.
    #[must_use]
    pub const fn with_shard_hash(mut self, shard_hash: ShardHash) -> Self {
        self.shard_hash = shard_hash;
        self
    }
}

impl Default for TableModel {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// One step of an entity's shard schedule: from `timestamp` on, new records get a suffix of
/// `chars` characters in radix `2^char_bits`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct ShardBump {
    /// Creation time (ms since the epoch) from which the bump applies.
    pub timestamp: u64,
    /// Bits per suffix character, 1..=5 (radix 2, 4, 8, 16 or 32).
    pub char_bits: u8,
    /// Suffix length, 0..=40; 0 means one unsharded partition.
    pub chars: u8,
}

impl ShardBump {
    /// The implied first bump: one unsharded partition from the beginning of time.
    pub const UNSHARDED: Self = Self::new(0, 1, 0);

    /// A bump.
    pub const fn new(timestamp: u64, char_bits: u8, chars: u8) -> Self {
        Self {
            timestamp,
            char_bits,
            chars,
        }
    }

    /// `2^char_bits`.
    ///
    /// A validated schedule has `char_bits` in 1..=5; an unvalidated hand-built one is clamped
    /// into that range here, so that no key computation can overflow or divide by zero.
    pub const fn radix(self) -> u32 {
        1 << self.bits()
    }

    /// `char_bits`, clamped into 1..=5 (see [`radix`](Self::radix)).
    pub const fn bits(self) -> u8 {
        if self.char_bits < 1 {
            1
        } else if self.char_bits > 5 {
            5
        } else {
            self.char_bits
        }
    }
}

/// Whether a generated property sits on the hash side (sharded) or the range side (unsharded).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GeneratedKind {
    /// `<hashKeyValue><gkd><c1><gvd><v1>…`: usable as an index hash key; always atomic.
    Sharded,
    /// `<c1><gvd><v1><gkd><c2><gvd><v2>…`: usable as an index range key.
    Unsharded,
}

/// A transcoded property: a property whose values may appear inside keys.
#[derive(Clone)]
#[non_exhaustive]
pub struct Property {
    /// The stored attribute name.
    pub name: Name,
    /// How its values are written inside keys.
    pub transcode: &'static dyn Transcoder,
}

impl Property {
    /// A transcoded property.
    pub const fn new(name: &'static str, transcode: &'static dyn Transcoder) -> Self {
        Self {
            name: Cow::Borrowed(name),
            transcode,
        }
    }
}

impl fmt::Debug for Property {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Property")
            .field("name", &self.name)
            .field("transcode", &self.transcode.name())
            .finish()
    }
}

impl PartialEq for Property {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && self.transcode.name() == other.transcode.name()
    }
}

/// A generated property: a string attribute built from transcoded components.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct GeneratedProperty {
    /// The stored attribute name.
    pub name: Name,
    /// Hash side or range side.
    pub kind: GeneratedKind,
    /// When true, the property is absent if any component is missing. Sharded properties are
    /// always atomic; unsharded ones are atomic only when declared so.
    pub atomic: bool,
    /// The component properties, in key order.
    pub components: CowSlice<Name>,
}

impl GeneratedProperty {
    /// A sharded (hash-side) generated property of these components, in key order; always
    /// atomic.
    pub const fn sharded(name: &'static str, components: &'static [Name]) -> Self {
        Self {
            name: Cow::Borrowed(name),
            kind: GeneratedKind::Sharded,
            atomic: true,
            components: Cow::Borrowed(components),
        }
    }

    /// An unsharded (range-side) generated property of these components, in key order;
    /// `atomic`: absent when a component is missing.
    pub const fn unsharded(name: &'static str, components: &'static [Name], atomic: bool) -> Self {
        Self {
            name: Cow::Borrowed(name),
            kind: GeneratedKind::Unsharded,
            atomic,
            components: Cow::Borrowed(components),
        }
    }

    /// Whether this property sits on the hash side.
    pub fn is_sharded(&self) -> bool {
        self.kind == GeneratedKind::Sharded
    }

    /// Whether a missing component makes the whole property absent.
    pub fn is_atomic(&self) -> bool {
        self.atomic || self.is_sharded()
    }
}

/// Which attributes a global secondary index projects.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Projection {
    /// Every attribute (the default).
    #[default]
    All,
    /// Only the table and index keys.
    KeysOnly,
    /// The keys plus these attributes.
    Include(CowSlice<Name>),
}

/// One attribute of a multi-attribute index key: a stored attribute with its natural value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct IndexAttribute {
    /// The stored attribute name.
    pub name: Name,
    /// Its `DynamoDB` type: the attribute keeps its natural value (a number stays `N`).
    pub key_type: KeyType,
}

impl IndexAttribute {
    /// A key attribute of this name and type.
    pub const fn new(name: &'static str, key_type: KeyType) -> Self {
        Self::named(Cow::Borrowed(name), key_type)
    }

    /// A key attribute of this name (borrowed or owned) and type.
    pub const fn named(name: Name, key_type: KeyType) -> Self {
        Self { name, key_type }
    }
}

/// The key of a multi-attribute index (`DynamoDB` GSIs with up to 4 partition and 4 sort
/// attributes): attributes with their natural values, no concatenation, no synthetic attribute.
///
/// When [`sharded`](Self::sharded), the table hash key (`<token>!<suffix>`) is the first
/// partition attribute: the shard suffix is then a partition attribute of its own, so a query
/// fans out over the entity's shards exactly as it does for a classic index, and the attribute is
/// never empty (`DynamoDB` refuses empty strings in key attributes, which an unsharded bump's
/// bare suffix would be).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct MultiKey {
    /// The partition attributes, in key order (the table hash key first when sharded).
    pub hash: CowSlice<IndexAttribute>,
    /// The sort attributes, in key order (at least one).
    pub range: CowSlice<IndexAttribute>,
    /// Whether the table hash key leads the partition attributes.
    pub sharded: bool,
}

impl MultiKey {
    /// The partition attribute names, in key order.
    pub fn hash_names(&self) -> impl Iterator<Item = &str> {
        self.hash.iter().map(|p| &*p.name)
    }

    /// The sort attribute names, in key order.
    pub fn range_names(&self) -> impl Iterator<Item = &str> {
        self.range.iter().map(|p| &*p.name)
    }

    /// The partition attributes a query supplies values for: every partition attribute but the
    /// shard attribute of a sharded key (the query fans out over it).
    pub fn user_hash(&self) -> &[IndexAttribute] {
        if self.sharded {
            self.hash.get(1..).unwrap_or_default()
        } else {
            &self.hash
        }
    }
}

/// A global secondary index.
///
/// A classic index has one hash and one range attribute; a multi-attribute index (see
/// [`MultiKey`]) has up to 4 + 4, and its [`hash_key`](Self::hash_key) and
/// [`range_key`](Self::range_key) name its first partition and first sort attribute.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Index {
    /// The index token, which is also the GSI name.
    pub name: Name,
    /// The table hash key or a sharded generated property (the first partition attribute of a
    /// multi-attribute index).
    pub hash_key: Name,
    /// The table range key, an unsharded generated property or a transcoded property (the first
    /// sort attribute of a multi-attribute index).
    pub range_key: Name,
    /// The projected attributes.
    pub projection: Projection,
    /// The attributes of a multi-attribute key; `None` for a classic index.
    pub multi: Option<MultiKey>,
}

impl Index {
    /// An index: its token (the GSI name), hash key, range key and projection.
    pub const fn new(
        name: &'static str,
        hash_key: Name,
        range_key: Name,
        projection: Projection,
    ) -> Self {
        Self {
            name: Cow::Borrowed(name),
            hash_key,
            range_key,
            projection,
            multi: None,
        }
    }

    /// A multi-attribute index: its token (the GSI name), its partition attributes (after the
    /// table hash key `table_hash_key` when `sharded`), its sort attributes and projection.
    ///
    /// `hash` holds every partition attribute in key order: with `sharded`, the table hash key
    /// first. Empty lists are refused by validation, not here.
    ///
    /// ```
    /// use entity_manager_core::{store::KeyType};
    /// use entity_manager_core::model::{Index, IndexAttribute, Projection};
    ///
    /// const HASH: &[IndexAttribute] = &[IndexAttribute::new("hashKey", KeyType::S), IndexAttribute::new("orgId", KeyType::S)];
    /// const RANGE: &[IndexAttribute] = &[IndexAttribute::new("score", KeyType::N), IndexAttribute::new("name", KeyType::S)];
    /// const BY_ORG: Index = Index::multi("byOrg", HASH, RANGE, true, Projection::All);
    /// assert_eq!((&*BY_ORG.hash_key, &*BY_ORG.range_key), ("hashKey", "score"));
    /// ```
    pub const fn multi(
        name: &'static str,
        hash: &'static [IndexAttribute],
        range: &'static [IndexAttribute],
        sharded: bool,
        projection: Projection,
    ) -> Self {
        let hash_key = match hash.first() {
            Some(IndexAttribute {
                name: Cow::Borrowed(n),
                ..
            }) => Cow::Borrowed(*n),
            _ => Cow::Borrowed(""),
        };
        let range_key = match range.first() {
            Some(IndexAttribute {
                name: Cow::Borrowed(n),
                ..
            }) => Cow::Borrowed(*n),
            _ => Cow::Borrowed(""),
        };
        Self {
            name: Cow::Borrowed(name),
            hash_key,
            range_key,
            projection,
            multi: Some(MultiKey {
                hash: Cow::Borrowed(hash),
                range: Cow::Borrowed(range),
                sharded,
            }),
        }
    }

    /// The partition attribute names, in key order (one for a classic index).
    pub fn hash_names(&self) -> Vec<&str> {
        match &self.multi {
            Some(m) => m.hash_names().collect(),
            None => vec![&self.hash_key],
        }
    }

    /// The sort attribute names, in key order (one for a classic index).
    pub fn range_names(&self) -> Vec<&str> {
        match &self.multi {
            Some(m) => m.range_names().collect(),
            None => vec![&self.range_key],
        }
    }
}

/// An entity: one kind of record in the table.
///
/// Built with [`new`](Self::new) and the `with_*` methods, in `const` context too (as
/// `#[derive(Entity)]` does):
///
/// ```
/// use entity_manager_core::transcode;
/// use entity_manager_core::model::{EntityModel, Property};
///
/// // a slice of models lives for `'static` as a `const` item (not as a `const fn` argument)
/// const PROPERTIES: &[Property] = &[
///     Property::new("email", transcode::STRING),
///     Property::new("created", transcode::TIMESTAMP),
/// ];
/// const EMAIL: EntityModel = EntityModel::new("email", "email", "created").with_properties(PROPERTIES);
/// assert_eq!(EMAIL.properties.len(), 2);
/// assert_eq!(EMAIL.default_limit, 10);
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct EntityModel {
    /// The entity token, the prefix of every hash key of this entity (e.g. `user`).
    pub token: Name,
    /// The property whose value identifies a record and never changes.
    pub unique_property: Name,
    /// The creation-time property (ms since the epoch) that picks the shard bump.
    pub timestamp_property: Name,
    /// The shard schedule, sorted by timestamp and starting at timestamp 0 once validated.
    pub shard_bumps: CowSlice<ShardBump>,
    /// The default query limit.
    pub default_limit: usize,
    /// The default page size of one shard query.
    pub default_page_size: usize,
    /// The transcoded properties.
    pub properties: CowSlice<Property>,
    /// The generated properties this entity carries.
    pub generated: CowSlice<GeneratedProperty>,
    /// The indexes this entity can be queried through.
    pub indexes: CowSlice<Index>,
}

impl EntityModel {
    /// An entity of this token, unique property and timestamp property, with no transcoded or
    /// generated property, no index, no shard bump (one unsharded partition) and the default
    /// query limit and page size.
    pub const fn new(
        token: &'static str,
        unique_property: &'static str,
        timestamp_property: &'static str,
    ) -> Self {
        Self {
            token: Cow::Borrowed(token),
            unique_property: Cow::Borrowed(unique_property),
            timestamp_property: Cow::Borrowed(timestamp_property),
            shard_bumps: Cow::Borrowed(&[]),
            default_limit: limits::DEFAULT_LIMIT,
            default_page_size: limits::DEFAULT_PAGE_SIZE,
            properties: Cow::Borrowed(&[]),
            generated: Cow::Borrowed(&[]),
            indexes: Cow::Borrowed(&[]),
        }
    }

    /// The model with this shard schedule.
    ///
    /// Meant for `const` models: a `Cow` cannot be dropped in `const` context, so a replaced
    /// owned value is leaked (a borrowed one owns nothing). At run time, assign the public field
    /// instead.
    #[must_use]
    pub const fn with_shard_bumps(mut self, shard_bumps: &'static [ShardBump]) -> Self {
        std::mem::forget(std::mem::replace(
            &mut self.shard_bumps,
            Cow::Borrowed(shard_bumps),
        ));
        self
    }

    /// The model with these query defaults: the limit and the page size of one shard query.
    #[must_use]
    pub const fn with_defaults(mut self, default_limit: usize, default_page_size: usize) -> Self {
        self.default_limit = default_limit;
        self.default_page_size = default_page_size;
        self
    }

    /// The model with these transcoded properties.
    ///
    /// Meant for `const` models: a `Cow` cannot be dropped in `const` context, so a replaced
    /// owned value is leaked (a borrowed one owns nothing). At run time, assign the public field
    /// instead.
    #[must_use]
    pub const fn with_properties(mut self, properties: &'static [Property]) -> Self {
        std::mem::forget(std::mem::replace(
            &mut self.properties,
            Cow::Borrowed(properties),
        ));
        self
    }

    /// The model with these generated properties.
    ///
    /// Meant for `const` models: a `Cow` cannot be dropped in `const` context, so a replaced
    /// owned value is leaked (a borrowed one owns nothing). At run time, assign the public field
    /// instead.
    #[must_use]
    pub const fn with_generated(mut self, generated: &'static [GeneratedProperty]) -> Self {
        std::mem::forget(std::mem::replace(
            &mut self.generated,
            Cow::Borrowed(generated),
        ));
        self
    }

    /// The model with these indexes.
    ///
    /// Meant for `const` models: a `Cow` cannot be dropped in `const` context, so a replaced
    /// owned value is leaked (a borrowed one owns nothing). At run time, assign the public field
    /// instead.
    #[must_use]
    pub const fn with_indexes(mut self, indexes: &'static [Index]) -> Self {
        std::mem::forget(std::mem::replace(&mut self.indexes, Cow::Borrowed(indexes)));
        self
    }

    /// The transcoded property of this name.
    pub fn property(&self, name: &str) -> Option<&Property> {
        self.properties.iter().find(|p| p.name == name)
    }

    /// The generated property of this name.
    pub fn generated_property(&self, name: &str) -> Option<&GeneratedProperty> {
        self.generated.iter().find(|g| g.name == name)
    }

    /// The index of this name.
    pub fn index(&self, name: &str) -> Option<&Index> {
        self.indexes.iter().find(|i| i.name == name)
    }

    /// What holds the value of a classic (one-attribute) index key attribute of this entity,
    /// and so its type: the table's keys and the generated properties are strings, a
    /// transcoded property has its transcode's key type. `None` when the entity neither holds
    /// nor generates the attribute. The one home of that rule: the query plan types a range key
    /// with it, the table definition an index's key attributes.
    pub(crate) fn key_source(&self, table: &TableModel, attribute: &str) -> Option<KeySource<'_>> {
        if attribute == table.hash_key || attribute == table.range_key {
            Some(KeySource::TableKey)
        } else if self.generated_property(attribute).is_some() {
            Some(KeySource::Generated)
        } else {
            self.property(attribute).map(KeySource::Property)
        }
    }

    /// The bump that applies to a record created at `timestamp`: the last one whose timestamp is
    /// not after it. `None` only for an unvalidated schedule that does not start at 0.
    pub fn shard_bump(&self, timestamp: u64) -> Option<ShardBump> {
        self.shard_bumps
            .iter()
            .rev()
            .find(|b| b.timestamp <= timestamp)
            .copied()
    }
}

/// What holds a classic index key attribute's value (see [`EntityModel::key_source`]).
#[derive(Clone, Copy, Debug)]
pub(crate) enum KeySource<'m> {
    /// One of the table's own keys.
    TableKey,
    /// A generated property.
    Generated,
    /// A transcoded property.
    Property(&'m Property),
}

impl KeySource<'_> {
    /// The attribute's type in a key: `None` for a property whose transcode cannot be a key.
    pub(crate) fn key_type(self) -> Option<KeyType> {
        match self {
            Self::TableKey | Self::Generated => Some(KeyType::S),
            Self::Property(property) => property.transcode.key_type(),
        }
    }
}
