//! The rules across the entities of a table: `const fn`s, for the derive's `const` assertions
//! and for `validate.rs`, with the messages they assemble at compile time ([`Message`]).

use std::borrow::Cow;
use std::fmt::Write as _;

use crate::limits::MAX_INDEXES;
use crate::model::{EntityModel, GeneratedKind, Index, IndexAttribute, MultiKey, Projection};

use super::bytes::{bytes_contain, bytes_eq, name, slice, str_eq};
use super::wording::{Delimiter, Named, Role, Setting, Syntax};
use super::{ConfigRule, Problem};

/// The indexes of an entity (`const`).
pub const fn indexes_of(entity: &EntityModel) -> &[Index] {
    slice(&entity.indexes)
}

/// Whether `name` is the attribute name `key` (a table key's, in a `const` assertion).
#[allow(clippy::ptr_arg)] // the model's names are `Cow`s
pub const fn is_name(key: &Cow<'_, str>, name: &str) -> bool {
    str_eq(name, self::name(key))
}

/// What a name that [`name_problems`] checks is: which checks it gets and how its message
/// words it. `#[derive(Entity)]` passes each name with its [`code`](Self::code).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameKind {
    /// The entity token: checked for delimiters.
    EntityToken,
    /// A stored attribute with a transcode: checked against the table keys and for delimiters.
    Transcoded,
    /// A stored attribute without a transcode: checked against the table keys.
    Attribute,
    /// A generated property of this kind: checked against the table keys and for delimiters.
    Generated(GeneratedKind),
    /// An index: checked for delimiters.
    Index,
}

impl NameKind {
    /// Every kind, by [`code`](Self::code).
    pub const ALL: [Self; 6] = [
        Self::EntityToken,
        Self::Transcoded,
        Self::Attribute,
        Self::Generated(GeneratedKind::Sharded),
        Self::Generated(GeneratedKind::Unsharded),
        Self::Index,
    ];

    /// The kind's position in [`ALL`](Self::ALL).
    pub const fn code(self) -> u8 {
        match self {
            Self::EntityToken => 0,
            Self::Transcoded => 1,
            Self::Attribute => 2,
            Self::Generated(GeneratedKind::Sharded) => 3,
            Self::Generated(GeneratedKind::Unsharded) => 4,
            Self::Index => 5,
        }
    }

    /// The role the name must not share with a table key, if it is an attribute.
    pub const fn role(self) -> Option<Role> {
        match self {
            Self::Transcoded => Some(Role::Transcoded),
            Self::Attribute => Some(Role::Attribute),
            Self::Generated(kind) => Some(Role::Generated(kind)),
            Self::EntityToken | Self::Index => None,
        }
    }

    /// What the name is called in a message about a delimiter in it, if it is written inside
    /// keys.
    pub const fn named(self) -> Option<Named> {
        match self {
            Self::EntityToken => Some(Named::EntityToken),
            Self::Transcoded => Some(Named::Transcoded),
            Self::Generated(_) => Some(Named::Generated),
            Self::Index => Some(Named::Index),
            Self::Attribute => None,
        }
    }
}

/// The first failing check of the names an entity writes, against its table, for the derive's
/// one `const` assertion per entity: `(k, code)` for `names[k] = (name, kind)` (`kind` a
/// [`NameKind::code`]), or `(usize::MAX, 0)` when every check passes. Per name, in order: an
/// attribute (a [`NameKind::role`]) is `problem` `1` when `name` is the table's hash key, `2`
/// its range key (rule [`ConfigRule::AttributeNamesDistinct`]); a name written inside keys (a
/// [`NameKind::named`]) is `3 + d` when it contains the delimiter [`Delimiter::ALL`]`[d]` (rules
/// [`ConfigRule::EntityToken`], [`ConfigRule::NamesFreeOfDelimiters`]). `code` is
/// `8 * kind + problem`, what [`name_problem_message`] words.
///
/// `bytes` has bit `b` set for every byte `b < 128` of every name checked for delimiters (the
/// derive computes it), and bit 127 for any byte from 128: the delimiters are looked for only
/// when one of them starts with such a byte. One call per entity, with that shortcut: the
/// compiler's `const` interpreter runs it for every entity of every build, so its step count is
/// the derive's compile cost.
pub const fn name_problems(
    table: &crate::model::TableModel,
    names: &[(&str, u8)],
    bytes: u128,
) -> (usize, usize) {
    let hash = name(&table.hash_key).as_bytes();
    let range = name(&table.range_key).as_bytes();
    let delimiters = [
        Delimiter::ALL[0].of(&table.delimiters).as_bytes(),
        Delimiter::ALL[1].of(&table.delimiters).as_bytes(),
        Delimiter::ALL[2].of(&table.delimiters).as_bytes(),
    ];
    // the fast path: no delimiter starts with a byte any name holds, so no name contains one
    let mut scan = false;
    let mut d = 0;
    while d < delimiters.len() {
        if let Some(&first) = delimiters[d].first()
            && (first >= 128 || bytes & (1u128 << first) != 0)
        {
            scan = true;
        }
        d += 1;
    }
    let mut k = 0;
    while k < names.len() {
        let (text, code) = names[k];
        let kind = NameKind::ALL[code as usize];
        let text = text.as_bytes();
        let problem = if kind.role().is_none() {
            0
        } else if bytes_eq(text, hash) {
            1
        } else if bytes_eq(text, range) {
            2
        } else {
            0
        };
        if problem != 0 {
            return (k, 8 * code as usize + problem);
        }
        if scan && kind.named().is_some() {
            let mut d = 0;
            while d < delimiters.len() {
                if bytes_contain(text, delimiters[d]) {
                    return (k, 8 * code as usize + 3 + d);
                }
                d += 1;
            }
        }
        k += 1;
    }
    (usize::MAX, 0)
}

/// The message of problem `code` of [`name_problems`] for `name`: the text of
/// [`role_conflict`](super::role_conflict) or [`delimiter_in_name`](super::delimiter_in_name)
/// (the derive's syntax, the delimiter named by its setting), assembled in `const` context.
pub const fn name_problem_message(code: usize, name: &str) -> Message {
    let kind = NameKind::ALL[code / 8];
    let problem = code % 8;
    if problem == 1 || problem == 2 {
        let first = if problem == 1 {
            Role::TableHashKey
        } else {
            Role::TableRangeKey
        };
        let second = match kind.role() {
            Some(role) => role.phrase(),
            None => "",
        };
        return Message::new()
            .push("`")
            .push(name)
            .push("` is already ")
            .push(first.phrase())
            .push(", so it cannot also be ")
            .push(second)
            .push("; every attribute has one role, so rename one of them");
    }
    let what = match kind.named() {
        Some(named) => named.phrase(),
        None => "",
    };
    let setting =
        Setting::Delimiter(Delimiter::ALL[problem.saturating_sub(3) % 3]).name(Syntax::Derive);
    Message::new()
        .push(what)
        .push(" `")
        .push(name)
        .push("` contains the table's `")
        .push(setting)
        .push("`; names appear inside keys, so rename it or choose other delimiters")
}

/// The first entity of `earlier` that shares `entity`'s token (rule
/// [`ConfigRule::EntityTokensUnique`]), by position.
pub const fn first_same_token(entity: &EntityModel, earlier: &[&EntityModel]) -> Option<usize> {
    let mut j = 0;
    while j < earlier.len() {
        if same_token(entity, earlier[j]) {
            return Some(j);
        }
        j += 1;
    }
    None
}

/// The first index of `entity` that conflicts with the first earlier declaration of its name
/// in `earlier` (rule [`ConfigRule::IndexDeclarationsAgree`]), by that entity's position, with
/// the conflict. Comparing with the first declaration only is enough: a later declaration
/// that disagreed with it was reported at its own entity. Linear in the entities, where
/// comparing every pair was quadratic in the `const` interpreter.
#[allow(clippy::many_single_char_names)] // positions and the two indexes, as in `index_conflict`
pub const fn first_index_conflict<'a>(
    entity: &'a EntityModel,
    earlier: &[&'a EntityModel],
) -> Option<(usize, IndexConflict<'a>)> {
    let mine = slice(&entity.indexes);
    let mut i = 0;
    while i < mine.len() {
        let x = &mine[i];
        let mut j = 0;
        'declarations: while j < earlier.len() {
            let theirs = slice(&earlier[j].indexes);
            let mut k = 0;
            while k < theirs.len() {
                let y = &theirs[k];
                if str_eq(name(&x.name), name(&y.name)) {
                    if !(str_eq(name(&x.hash_key), name(&y.hash_key))
                        && str_eq(name(&x.range_key), name(&y.range_key))
                        && same_multi_key(x.multi.as_ref(), y.multi.as_ref()))
                    {
                        return Some((j, IndexConflict::Keys(x, y)));
                    }
                    if !same_projection(&x.projection, &y.projection) {
                        return Some((j, IndexConflict::Projection(x, y)));
                    }
                    break 'declarations;
                }
                k += 1;
            }
            j += 1;
        }
        i += 1;
    }
    None
}

/// Rule: entity tokens are unique in a table: the token prefixes every hash key, so two entities
/// with one token would share partitions. A placeholder model (a failed derive) has no token and
/// is never a duplicate. Reported on the later entity.
pub const fn same_token(a: &EntityModel, b: &EntityModel) -> bool {
    !name(&a.token).is_empty() && str_eq(name(&a.token), name(&b.token))
}

/// The problem of two entities of one token (rule [`ConfigRule::EntityTokensUnique`]):
/// `this` and `other` name them (at run time, by the token itself).
pub fn duplicate_token(syntax: Syntax, this: &str, other: &str) -> Problem {
    let message = match syntax {
        Syntax::Config => format!(
            "entity token `{this}` is used by two entities; each entity of a table needs its own token"
        ),
        Syntax::Derive => format!(
            "`{this}` has the same entity token as `{other}`; each entity of a table needs its own token: give one of them another `#[entity(token = \"…\")]`"
        ),
    };
    Problem::new(ConfigRule::EntityTokensUnique, message)
}

const fn same_parts(a: &[IndexAttribute], b: &[IndexAttribute]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if !str_eq(name(&a[i].name), name(&b[i].name)) || a[i].key_type as u8 != b[i].key_type as u8
        {
            return false;
        }
        i += 1;
    }
    true
}

const fn same_multi_key(a: Option<&MultiKey>, b: Option<&MultiKey>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => {
            a.sharded == b.sharded
                && same_parts(slice(&a.hash), slice(&b.hash))
                && same_parts(slice(&a.range), slice(&b.range))
        }
        _ => false,
    }
}

const fn same_projection(a: &Projection, b: &Projection) -> bool {
    match (a, b) {
        (Projection::All, Projection::All) | (Projection::KeysOnly, Projection::KeysOnly) => true,
        (Projection::Include(a), Projection::Include(b)) => {
            let (a, b) = (slice(a), slice(b));
            if a.len() != b.len() {
                return false;
            }
            let mut i = 0;
            while i < a.len() {
                if !str_eq(name(&a[i]), name(&b[i])) {
                    return false;
                }
                i += 1;
            }
            true
        }
        _ => false,
    }
}

/// How two indexes of one name in two entities of a table disagree: this entity's index, then
/// the other's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum IndexConflict<'a> {
    /// Different hash or range key attributes.
    Keys(&'a Index, &'a Index),
    /// Different projections.
    Projection(&'a Index, &'a Index),
}

impl<'a> IndexConflict<'a> {
    /// The index name.
    pub const fn name(self) -> &'a str {
        match self {
            Self::Keys(index, _) | Self::Projection(index, _) => name(&index.name),
        }
    }
}

/// Rule: an index name declared by several entities has the same hash key, range key and
/// projection in each: it is one GSI of the table. Returns the first index name `a` and `b` both
/// declare with different key attributes or projections.
#[allow(clippy::many_single_char_names)] // two entities, two index positions, two indexes
pub const fn index_conflict<'a>(
    a: &'a EntityModel,
    b: &'a EntityModel,
) -> Option<IndexConflict<'a>> {
    let (a, b) = (slice(&a.indexes), slice(&b.indexes));
    let mut i = 0;
    while i < a.len() {
        let mut j = 0;
        while j < b.len() {
            let (x, y) = (&a[i], &b[j]);
            if str_eq(name(&x.name), name(&y.name)) {
                if !(str_eq(name(&x.hash_key), name(&y.hash_key))
                    && str_eq(name(&x.range_key), name(&y.range_key))
                    && same_multi_key(x.multi.as_ref(), y.multi.as_ref()))
                {
                    return Some(IndexConflict::Keys(x, y));
                }
                if !same_projection(&x.projection, &y.projection) {
                    return Some(IndexConflict::Projection(x, y));
                }
            }
            j += 1;
        }
        i += 1;
    }
    None
}

impl Message {
    /// Appends the keys of `index`.
    const fn push_keys(self, index: &Index) -> Self {
        if let Some(multi) = &index.multi {
            let message = self
                .push("partition attributes ")
                .push_parts(slice(&multi.hash));
            return message
                .push(" and sort attributes ")
                .push_parts(slice(&multi.range));
        }
        self.push("hash key `")
            .push(name(&index.hash_key))
            .push("` and range key `")
            .push(name(&index.range_key))
            .push("`")
    }

    /// Appends attribute names in backticks, comma-separated.
    const fn push_parts(self, parts: &[IndexAttribute]) -> Self {
        let mut message = self;
        let mut i = 0;
        while i < parts.len() {
            if i > 0 {
                message = message.push(", ");
            }
            message = message.push("`").push(name(&parts[i].name)).push("`");
            i += 1;
        }
        message
    }

    /// Appends what `projection` projects.
    const fn push_projection(self, projection: &Projection) -> Self {
        match projection {
            Projection::All => self.push("all attributes"),
            Projection::KeysOnly => self.push("keys only"),
            Projection::Include(names) => {
                let names = slice(names);
                let mut message = self.push("keys and ");
                let mut i = 0;
                while i < names.len() {
                    if i > 0 {
                        message = message.push(", ");
                    }
                    message = message.push("`").push(name(&names[i])).push("`");
                    i += 1;
                }
                message
            }
        }
    }
}

/// The message of an index conflict between entity `this` and the earlier entity `other` (rule
/// [`ConfigRule::IndexDeclarationsAgree`]), assembled at compile time or at run time.
pub const fn index_conflict_message(
    conflict: IndexConflict<'_>,
    this: &str,
    other: &str,
) -> Message {
    let message = Message::new().push("index `").push(conflict.name());
    let message = match conflict {
        IndexConflict::Keys(mine, theirs) => {
            let message = message
                .push("` has ")
                .push_keys(mine)
                .push(" in entity `")
                .push(this)
                .push("`, but entity `")
                .push(other)
                .push("` declares it with ");
            message.push_keys(theirs)
        }
        IndexConflict::Projection(mine, theirs) => {
            let message = message
                .push("` projects ")
                .push_projection(&mine.projection)
                .push(" in entity `")
                .push(this)
                .push("`, but entity `")
                .push(other)
                .push("` declares it projecting ");
            message.push_projection(&theirs.projection)
        }
    };
    message.push("; one index name is one GSI of the table, so make them agree or rename one")
}

/// Whether index `i` of list `e` is the first declaration of its name in `lists`.
const fn first_of_name(lists: &[&[Index]], e: usize, i: usize) -> bool {
    let index = &lists[e][i];
    let mut f = 0;
    while f <= e {
        let others = lists[f];
        let end = if f == e { i } else { others.len() };
        let mut j = 0;
        while j < end {
            if str_eq(name(&index.name), name(&others[j].name)) {
                return false;
            }
            j += 1;
        }
        f += 1;
    }
    true
}

/// The number of distinct index names in `lists`, and where the `n`th (from 1) is first
/// declared: (list, position).
const fn count_indexes(lists: &[&[Index]], n: usize) -> (usize, Option<(usize, usize)>) {
    let (mut count, mut nth) = (0, None);
    let mut e = 0;
    while e < lists.len() {
        let mut i = 0;
        while i < lists[e].len() {
            if first_of_name(lists, e, i) {
                count += 1;
                if count == n {
                    nth = Some((e, i));
                }
            }
            i += 1;
        }
        e += 1;
    }
    (count, nth)
}

/// The number of distinct index names in `lists` (the index lists of a table's entities): the
/// table's GSIs.
pub const fn distinct_indexes(lists: &[&[Index]]) -> usize {
    count_indexes(lists, 0).0
}

/// Where the first index name beyond [`MAX_INDEXES`] is declared: (list, position).
pub const fn first_index_over_limit(lists: &[&[Index]]) -> Option<(usize, usize)> {
    count_indexes(lists, MAX_INDEXES + 1).1
}

/// Rule: a table has at most 20 distinct index names, DynamoDB's limit of global secondary
/// indexes per table. `lists` are the index lists of the table's entities (or the one global list
/// of a TypeScript config); `table` names the table, when known. Reported at the first
/// declaration of the 21st name ([`first_index_over_limit`]).
pub const fn index_count_message(table: &str, lists: &[&[Index]]) -> Option<Message> {
    let Some((e, i)) = first_index_over_limit(lists) else {
        return None;
    };
    let message = Message::new()
        .push("index `")
        .push(name(&lists[e][i].name))
        .push("` is the ")
        .push_usize(MAX_INDEXES + 1)
        .push("st distinct index of ");
    let message = if table.is_empty() {
        message.push("the table")
    } else {
        message.push("table `").push(table).push("`")
    };
    Some(
        message
            .push(", which declares ")
            .push_usize(distinct_indexes(lists))
            .push(" in all; DynamoDB allows at most ")
            .push_usize(MAX_INDEXES)
            .push(" global secondary indexes per table, so remove or merge indexes"),
    )
}

/// A message assembled by a `const fn` (a `const` cannot `format!`): up to 512 bytes, longer
/// text is cut at a piece boundary.
#[derive(Clone, Copy, Debug)]
pub struct Message {
    buf: [u8; 512],
    len: usize,
}

impl Message {
    /// An empty message.
    pub const fn new() -> Self {
        Self {
            buf: [0; 512],
            len: 0,
        }
    }

    /// Appends `text` whole, or nothing if it does not fit.
    #[must_use]
    pub const fn push(mut self, text: &str) -> Self {
        let bytes = text.as_bytes();
        if self.len + bytes.len() > self.buf.len() {
            return self;
        }
        let mut i = 0;
        while i < bytes.len() {
            self.buf[self.len + i] = bytes[i];
            i += 1;
        }
        self.len += bytes.len();
        self
    }

    /// Appends a number in decimal.
    #[must_use]
    pub const fn push_usize(self, mut n: usize) -> Self {
        let mut digits = [0u8; 20];
        let mut start = digits.len();
        loop {
            start -= 1;
            #[allow(clippy::cast_possible_truncation)] // a digit
            {
                digits[start] = b'0' + (n % 10) as u8;
            }
            n /= 10;
            if n == 0 {
                break;
            }
        }
        match std::str::from_utf8(digits.split_at(start).1) {
            Ok(text) => self.push(text),
            Err(_) => self,
        }
    }

    /// The message.
    pub const fn as_str(&self) -> &str {
        match std::str::from_utf8(self.buf.split_at(self.len).0) {
            Ok(text) => text,
            Err(_) => "",
        }
    }
}

impl Default for Message {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Display for Message {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `rule` with `message`, as a [`Problem`] (for the `const fn` messages).
pub fn problem(rule: ConfigRule, message: &Message) -> Problem {
    let mut text = String::new();
    let _ = write!(text, "{message}");
    Problem::new(rule, text)
}
