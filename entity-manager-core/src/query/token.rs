//! The page token: the state of a cross-shard query between pages, as compact URL-safe text.
//!
//! A page of one merged stream ends at its *boundary*: the last item it returned, as its range
//! key, unique value and lane. Items come in one total order (range key, lane rank, the lane's
//! own order), so everything before the boundary was returned and nothing after it: the lanes
//! ranked before the boundary's resume after its range key, the boundary's lane right after
//! its item, the lanes ranked after it at its range key; the only other state a lane needs is
//! one bit, "exhausted" (it gave everything; never read again). A token's size therefore does
//! not depend on where each shard stands, only on the boundary and one bit per lane.
//!
//! Layout (version 4; tokens of versions 2 and 3 are refused), before base64url without
//! padding:
//!
//! ```text
//! version u8 = 4, + 0x80 when signed
//! | query fingerprint [2] | table binding [2]
//! | from varint | to varint                       (the time window, ms since the epoch)
//! | per stream (1 in exact mode, 1 per index in union mode):
//! |     flags u8 (bit 0: boundary present, bit 1: boundary lane present, bit 2: in a run of
//! |         ties: the page ended at the range key the previous one ended at, or held
//! |         only items of one range key; bit 3: the lanes ranked before the boundary's
//! |         were read through the whole value of the conditioned attribute the boundary
//! |         holds and hold nothing more there)
//! |     boundary: first value, last value, unique (varint length + UTF-8), lane varint
//! |         (when flagged: the lane that held the last item, resumed right after it)
//! |     exhausted bits, one per lane of the stream, ceil(lanes / 8) bytes, low bit first
//! | tag [8] (SHA-256 checksum) or [16] (HMAC-SHA-256 with the user's key)
//! ```
//!
//! A value is a type byte and a payload: `0` string (varint length + UTF-8), `1` integer
//! number (zigzag varint), `2` other number (varint length + its decimal text), `3` binary
//! (varint length + bytes), `4` (first value only) an integer number as its difference from the
//! last value. The first value of the boundary only predicts how far the next page reaches:
//! for numbers, `last` minus a running average of the distance pages cover; else where the
//! page began.
//!
//! The tag covers the whole query fingerprint, the table binding (the table's definition and
//! name) and the payload, so a token from another query or table, a truncated or an altered
//! one is rejected; with a signing key, a token cannot be forged either. The two 2-byte
//! prefixes only tell which error to report.
//!
//! Reading is bounded by the query, not by the token: a token longer than [`max_chars`] for
//! the query's shape is refused before it is decoded, the number of streams and lanes comes
//! from the query, and every length inside the token is checked against the bytes left before
//! anything is sliced or copied.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use serde_dynamo::AttributeValue;
use sha2::{Digest, Sha256};

use crate::error::TokenError;

/// Where the previous page of one stream ended.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Boundary {
    /// Where the span the next page's end is predicted from starts: the range key of the first
    /// item of the page, or for numbers `last` minus the running average of the distance the
    /// pages covered ([`super::estimate::span_start`]).
    pub(crate) first: AttributeValue,
    /// The range key of the last item of the page.
    pub(crate) last: AttributeValue,
    /// The unique value (encoded, as in the table's range key) of the last item of the page.
    pub(crate) unique: String,
    /// The lane (index-major position in the stream) that held the last item: it resumes
    /// right after the item (`ExclusiveStartKey`). Always written; a token without it (which
    /// only a forger can make) counts every item at `last` as returned.
    pub(crate) lane: Option<usize>,
    /// The pages are in a run of ties: this page ended at the range key the previous one ended
    /// at, or held only items of one range key. The next page then probably ends at `last` too.
    pub(crate) run: bool,
    /// Every lane ranked before `lane` was read through the whole value of the conditioned
    /// attribute that `last` holds, and holds nothing more at that value: on a multi-attribute
    /// key with sort attributes after the conditioned one, the next page reads those lanes
    /// strictly after the value rather than first the rest of it after `last`'s tuple. Only
    /// set where that tells more than `last` does (a tuple with free attributes after it).
    pub(crate) through: bool,
}

/// The state of one merged stream: the whole query in exact mode, one index in union mode.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct StreamState {
    /// `None` before the first item (every live lane starts from the beginning).
    pub(crate) boundary: Option<Boundary>,
    /// One flag per lane of the stream (index-major): the lane gave everything.
    pub(crate) exhausted: Vec<bool>,
}

impl StreamState {
    /// A stream that has not started.
    pub(crate) fn fresh(lanes: usize) -> Self {
        Self {
            boundary: None,
            exhausted: vec![false; lanes],
        }
    }

    /// Whether every lane gave everything.
    pub(crate) fn done(&self) -> bool {
        self.exhausted.iter().all(|&e| e)
    }
}

/// The decoded token.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct TokenState {
    pub(crate) from: u64,
    pub(crate) to: u64,
    pub(crate) streams: Vec<StreamState>,
}

/// What a token is bound to: the query's fingerprint and the table's.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Binding<'b> {
    pub(crate) query: &'b [u8; 32],
    pub(crate) table: &'b [u8; 32],
}

const VERSION: u8 = 4;
const FLAG_SIGNED: u8 = 0x80;
const PREFIX_LEN: usize = 2;
/// Version byte and both prefixes.
const HEADER_LEN: usize = 1 + 2 * PREFIX_LEN;
const CHECKSUM_LEN: usize = 8;
const SIGNATURE_LEN: usize = 16;

const VALUE_S: u8 = 0;
const VALUE_INT: u8 = 1;
const VALUE_N: u8 = 2;
const VALUE_B: u8 = 3;
const VALUE_INT_DELTA: u8 = 4;
/// A tuple of values (the sort attributes of a multi-attribute key), as a `L` of S, N or B.
const VALUE_LIST: u8 = 5;
/// The most values of a tuple (`DynamoDB`'s 4 sort attributes).
const MAX_LIST: u64 = 4;

const BOUNDARY_PRESENT: u8 = 1;
const LANE_PRESENT: u8 = 2;
const BOUNDARY_WITH_LANE: u8 = BOUNDARY_PRESENT | LANE_PRESENT;
const IN_RUN: u8 = 4;
const THROUGH: u8 = 8;

fn tag(binding: Binding<'_>, body: &[u8], key: Option<&[u8]>) -> Vec<u8> {
    if let Some(key) = key {
        // HMAC keyed with SHA-256(key), zero-padded to the block size: a fixed-size key, so the
        // infallible constructor applies whatever the user's key length
        let mut block = [0u8; 64];
        block[..32].copy_from_slice(&Sha256::digest(key));
        let mut mac = <Hmac<Sha256> as hmac::digest::KeyInit>::new(&block.into());
        mac.update(binding.query);
        mac.update(binding.table);
        mac.update(body);
        mac.finalize().into_bytes()[..SIGNATURE_LEN].to_vec()
    } else {
        let mut hasher = Sha256::new();
        hasher.update(binding.query);
        hasher.update(binding.table);
        hasher.update(body);
        hasher.finalize()[..CHECKSUM_LEN].to_vec()
    }
}

// ---------------------------------------------------------------------------------------------
// writing

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    loop {
        // the low seven bits fit a byte
        #[allow(clippy::cast_possible_truncation)]
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// Zigzag: small magnitudes of either sign take few varint bytes.
#[allow(clippy::cast_sign_loss)]
const fn zigzag(n: i64) -> u64 {
    ((n << 1) ^ (n >> 63)) as u64
}

#[allow(clippy::cast_possible_wrap)]
const fn unzigzag(z: u64) -> i64 {
    (z >> 1) as i64 ^ -((z & 1) as i64)
}

/// A number written exactly as an `i64` would print it: stored in binary, read back as the
/// same text.
fn canonical_int(value: &AttributeValue) -> Option<i64> {
    match value {
        AttributeValue::N(text) => text.parse::<i64>().ok().filter(|n| n.to_string() == *text),
        _ => None,
    }
}

fn put_value(out: &mut Vec<u8>, value: &AttributeValue) {
    if let Some(n) = canonical_int(value) {
        out.push(VALUE_INT);
        put_varint(out, zigzag(n));
        return;
    }
    match value {
        AttributeValue::S(s) => {
            out.push(VALUE_S);
            put_bytes(out, s.as_bytes());
        }
        AttributeValue::N(n) => {
            out.push(VALUE_N);
            put_bytes(out, n.as_bytes());
        }
        AttributeValue::B(b) => {
            out.push(VALUE_B);
            put_bytes(out, b);
        }
        AttributeValue::L(values) => {
            out.push(VALUE_LIST);
            put_varint(out, values.len() as u64);
            for v in values {
                put_value(out, v);
            }
        }
        // range keys are S, N or B, and the engine only keeps items whose range key is one
        _ => {
            out.push(VALUE_S);
            put_bytes(out, b"");
        }
    }
}

/// The first value of a boundary: as its difference from the last when both are integers.
fn put_first(out: &mut Vec<u8>, first: &AttributeValue, last: &AttributeValue) {
    if let (Some(f), Some(l)) = (canonical_int(first), canonical_int(last))
        && let Some(delta) = f.checked_sub(l)
    {
        out.push(VALUE_INT_DELTA);
        put_varint(out, zigzag(delta));
        return;
    }
    put_value(out, first);
}

/// Writes a token.
pub(crate) fn encode(state: &TokenState, binding: Binding<'_>, key: Option<&[u8]>) -> String {
    let mut body = Vec::with_capacity(96);
    body.push(if key.is_some() {
        VERSION | FLAG_SIGNED
    } else {
        VERSION
    });
    body.extend_from_slice(&binding.query[..PREFIX_LEN]);
    body.extend_from_slice(&binding.table[..PREFIX_LEN]);
    put_varint(&mut body, state.from);
    put_varint(&mut body, state.to);
    for stream in &state.streams {
        match &stream.boundary {
            None => body.push(0),
            Some(b) => {
                let lane = b.lane.filter(|&l| l < stream.exhausted.len());
                let flags = if lane.is_some() {
                    BOUNDARY_PRESENT | LANE_PRESENT
                } else {
                    BOUNDARY_PRESENT
                };
                let flags = if b.run { flags | IN_RUN } else { flags };
                body.push(if b.through { flags | THROUGH } else { flags });
                put_first(&mut body, &b.first, &b.last);
                put_value(&mut body, &b.last);
                put_bytes(&mut body, b.unique.as_bytes());
                if let Some(lane) = lane {
                    put_varint(&mut body, lane as u64);
                }
            }
        }
        for chunk in stream.exhausted.chunks(8) {
            let byte = chunk
                .iter()
                .enumerate()
                .fold(0u8, |acc, (i, &e)| acc | (u8::from(e) << i));
            body.push(byte);
        }
    }
    let tag = tag(binding, &body, key);
    body.extend_from_slice(&tag);
    URL_SAFE_NO_PAD.encode(body)
}

// ---------------------------------------------------------------------------------------------
// reading

struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn u8(&mut self) -> Result<u8, TokenError> {
        let (&first, rest) = self
            .bytes
            .split_first()
            .ok_or(TokenError::Malformed("truncated"))?;
        self.bytes = rest;
        Ok(first)
    }

    fn varint(&mut self) -> Result<u64, TokenError> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.u8()?;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(TokenError::Malformed("number too long"))
    }

    /// `n` bytes; a length beyond what is left is refused before anything is copied.
    fn take(&mut self, n: usize) -> Result<&'a [u8], TokenError> {
        if n > self.bytes.len() {
            return Err(TokenError::Malformed("truncated"));
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(head)
    }

    /// A length-prefixed byte string.
    fn bytes(&mut self) -> Result<&'a [u8], TokenError> {
        let n = usize::try_from(self.varint()?).map_err(|_| TokenError::Malformed("length"))?;
        self.take(n)
    }

    fn string(&mut self) -> Result<String, TokenError> {
        std::str::from_utf8(self.bytes()?)
            .map(str::to_owned)
            .map_err(|_| TokenError::Malformed("text"))
    }

    fn value_of(&mut self, kind: u8) -> Result<AttributeValue, TokenError> {
        match kind {
            VALUE_S => Ok(AttributeValue::S(self.string()?)),
            VALUE_INT => Ok(AttributeValue::N(unzigzag(self.varint()?).to_string())),
            VALUE_N => Ok(AttributeValue::N(self.string()?)),
            VALUE_B => Ok(AttributeValue::B(self.bytes()?.to_vec())),
            VALUE_LIST => {
                let n = self.varint()?;
                if n > MAX_LIST {
                    return Err(TokenError::Malformed("tuple"));
                }
                let mut values = Vec::new();
                for _ in 0..n {
                    match self.u8()? {
                        VALUE_LIST => return Err(TokenError::Malformed("tuple")),
                        kind => values.push(self.value_of(kind)?),
                    }
                }
                Ok(AttributeValue::L(values))
            }
            _ => Err(TokenError::Malformed("value type")),
        }
    }

    fn value(&mut self) -> Result<AttributeValue, TokenError> {
        let kind = self.u8()?;
        self.value_of(kind)
    }
}

/// The shape of the query a token is read for: its streams and the lanes of each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Shape {
    /// 1 in exact mode, the number of indexes in union mode.
    pub(crate) streams: usize,
    /// Lanes of each stream (index × shard in exact mode, shards in union mode).
    pub(crate) lanes: usize,
}

/// The longest value of a sort attribute a boundary can hold, in bytes: `DynamoDB` sort keys
/// (and each sort attribute of a multi-attribute key) are at most 1,024 bytes.
const MAX_VALUE_BYTES: usize = 1024;
/// The longest partition key value, in bytes.
const MAX_HASH_BYTES: usize = 2048;
/// Bytes of a boundary's `last` at most: one value, or a tuple of [`MAX_LIST`] values (type
/// and a two-byte length each).
#[allow(clippy::cast_possible_truncation)] // MAX_LIST is 4
const MAX_LAST_BYTES: usize = 2 + MAX_LIST as usize * (1 + 2 + MAX_VALUE_BYTES);
/// Bytes of a boundary's `unique` at most: a unique value inside the table's sort key, or a
/// multi-attribute query's tie-breaker (`length:`, the table range key, the table hash key).
const MAX_UNIQUE_BYTES: usize = 2 + 5 + MAX_VALUE_BYTES + MAX_HASH_BYTES;
/// Bytes of one stream's boundary at most: flags, `first` (one value), `last`, `unique`, lane.
const MAX_BOUNDARY_BYTES: usize =
    1 + (1 + 2 + MAX_VALUE_BYTES) + MAX_LAST_BYTES + MAX_UNIQUE_BYTES + 10;
/// Bytes of the header, window and tag at most.
const MAX_FIXED_BYTES: usize = HEADER_LEN + 2 * 10 + SIGNATURE_LEN;

/// The longest token a query of this shape can have written, in characters: a longer one is
/// refused with [`TokenError::TooLong`] before it is decoded, so memory spent on a token is
/// bounded by the query, not by the token. About 11,000 characters per stream plus one
/// character per 6 lanes (a one-index query over 64 shards: 11,035).
pub(crate) fn max_chars(shape: Shape) -> usize {
    let per_stream = MAX_BOUNDARY_BYTES.saturating_add(shape.lanes.div_ceil(8));
    let bytes = MAX_FIXED_BYTES.saturating_add(shape.streams.saturating_mul(per_stream));
    bytes.saturating_mul(4).div_ceil(3)
}

/// The window a token says it was written for, read from its first bytes only, unchecked: to
/// plan the page once, for that window, before [`verify`] checks the token against the plan.
/// `None` when those bytes do not read as a token's.
pub(crate) fn window_of(token: &str) -> Option<(u64, u64)> {
    // the header and two varints fit in 27 bytes: 36 base64 characters
    let head = token.get(..token.len().min(36))?;
    let raw = URL_SAFE_NO_PAD.decode(head.as_bytes()).ok()?;
    if raw.first().map(|first| first & !FLAG_SIGNED) != Some(VERSION) {
        return None;
    }
    let mut r = Reader {
        bytes: raw.get(HEADER_LEN..)?,
    };
    let from = r.varint().ok()?;
    let to = r.varint().ok()?;
    (from <= to).then_some((from, to))
}

/// A token whose length, base64, version, binding and tag were checked: its window can be read
/// to plan the query, then the rest with the plan's shape.
#[derive(Debug)]
pub(crate) struct Verified {
    raw: Vec<u8>,
    /// Where the streams start in `raw`.
    streams_at: usize,
    /// Where the tag starts in `raw`.
    tag_at: usize,
    pub(crate) from: u64,
    pub(crate) to: u64,
}

/// Checks a token for a query with this binding, refusing it when longer than `max` characters;
/// `key` must be the signing key it was written with (or none).
pub(crate) fn verify(
    token: &str,
    binding: Binding<'_>,
    key: Option<&[u8]>,
    max: usize,
) -> Result<Verified, TokenError> {
    if token.len() > max {
        return Err(TokenError::TooLong {
            length: token.len(),
            max,
        });
    }
    let raw = URL_SAFE_NO_PAD
        .decode(token.as_bytes())
        .map_err(|_| TokenError::Malformed("not base64url"))?;
    let first = *raw.first().ok_or(TokenError::Malformed("empty"))?;
    let version = first & !FLAG_SIGNED;
    if version != VERSION {
        return Err(TokenError::UnsupportedVersion(version));
    }
    let signed = first & FLAG_SIGNED != 0;
    let tag_len = if signed { SIGNATURE_LEN } else { CHECKSUM_LEN };
    if raw.len() < HEADER_LEN + tag_len {
        return Err(TokenError::Malformed("truncated"));
    }
    let tag_at = raw.len() - tag_len;
    let (body, given_tag) = raw.split_at(tag_at);
    let tag_holds = || tag(binding, body, key) == given_tag;
    // the prefixes say which binding differs; a forged prefix still fails the tag
    if body[1..=PREFIX_LEN] != binding.query[..PREFIX_LEN] && !tag_holds() {
        return Err(TokenError::OtherQuery);
    }
    if body[1 + PREFIX_LEN..HEADER_LEN] != binding.table[..PREFIX_LEN] && !tag_holds() {
        return Err(TokenError::OtherTable);
    }
    if signed != key.is_some() || !tag_holds() {
        return Err(TokenError::Tampered);
    }
    let mut r = Reader {
        bytes: &body[HEADER_LEN..],
    };
    let from = r.varint()?;
    let to = r.varint()?;
    let streams_at = tag_at - r.bytes.len();
    Ok(Verified {
        raw,
        streams_at,
        tag_at,
        from,
        to,
    })
}

impl Verified {
    /// The streams, for a query of this shape. Their number and the lanes of each come from
    /// the query: only the boundaries' lengths are read from the token, each checked against
    /// the bytes left.
    pub(crate) fn parse(self, shape: Shape) -> Result<TokenState, TokenError> {
        let mut r = Reader {
            bytes: &self.raw[self.streams_at..self.tag_at],
        };
        // every stream takes at least its flags and its bits: a shape the token cannot hold
        // is refused before anything is allocated for it
        let minimum = shape
            .streams
            .saturating_mul(1usize.saturating_add(shape.lanes.div_ceil(8)));
        if minimum > r.bytes.len() {
            return Err(TokenError::Malformed("shape"));
        }
        let mut streams = Vec::with_capacity(shape.streams);
        for _ in 0..shape.streams {
            let boundary = match r.u8()? {
                0 => None,
                flags
                    if matches!(
                        flags & !(IN_RUN | THROUGH),
                        BOUNDARY_PRESENT | BOUNDARY_WITH_LANE
                    ) =>
                {
                    let first_kind = r.u8()?;
                    let first_delta = (first_kind == VALUE_INT_DELTA)
                        .then(|| r.varint())
                        .transpose()?;
                    let first = match first_delta {
                        Some(_) => None,
                        None => Some(r.value_of(first_kind)?),
                    };
                    let last = r.value()?;
                    let first = match (first, first_delta) {
                        (Some(first), _) => first,
                        (None, Some(delta)) => {
                            let last =
                                canonical_int(&last).ok_or(TokenError::Malformed("boundary"))?;
                            let first = last
                                .checked_add(unzigzag(delta))
                                .ok_or(TokenError::Malformed("boundary"))?;
                            AttributeValue::N(first.to_string())
                        }
                        (None, None) => return Err(TokenError::Malformed("boundary")),
                    };
                    let unique = r.string()?;
                    let lane = (flags & LANE_PRESENT != 0)
                        .then(|| r.varint())
                        .transpose()?
                        .map(|lane| {
                            usize::try_from(lane)
                                .ok()
                                .filter(|&lane| lane < shape.lanes)
                                .ok_or(TokenError::Malformed("boundary lane"))
                        })
                        .transpose()?;
                    Some(Boundary {
                        first,
                        last,
                        unique,
                        lane,
                        run: flags & IN_RUN != 0,
                        through: flags & THROUGH != 0,
                    })
                }
                _ => return Err(TokenError::Malformed("boundary")),
            };
            let bits = r.take(shape.lanes.div_ceil(8))?;
            let exhausted: Vec<bool> = (0..shape.lanes)
                .map(|lane| bits[lane / 8] & (1 << (lane % 8)) != 0)
                .collect();
            // bits beyond the last lane are zero in every token written
            if !shape.lanes.is_multiple_of(8)
                && bits.last().is_some_and(|&b| b >> (shape.lanes % 8) != 0)
            {
                return Err(TokenError::Malformed("lanes"));
            }
            streams.push(StreamState {
                boundary,
                exhausted,
            });
        }
        if !r.bytes.is_empty() {
            return Err(TokenError::Malformed("trailing bytes"));
        }
        Ok(TokenState {
            from: self.from,
            to: self.to,
            streams,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const Q: [u8; 32] = [7u8; 32];
    const T: [u8; 32] = [9u8; 32];
    const B: Binding<'static> = Binding {
        query: &Q,
        table: &T,
    };

    fn sample() -> TokenState {
        TokenState {
            from: 0,
            to: 1_700_000_000_000,
            streams: vec![StreamState {
                boundary: Some(Boundary {
                    first: AttributeValue::N("1700000000000".into()),
                    last: AttributeValue::N("1700000001234".into()),
                    unique: "0b9e4c1a-4c1f-4a55-9a57-2f2f8c7e61a9".into(),
                    lane: Some(63),
                    run: false,
                    through: false,
                }),
                exhausted: (0..64).map(|i| i % 3 == 0).collect(),
            }],
        }
    }

    const SHAPE: Shape = Shape {
        streams: 1,
        lanes: 64,
    };

    fn decode(
        token: &str,
        binding: Binding<'_>,
        key: Option<&[u8]>,
        shape: Shape,
    ) -> Result<TokenState, TokenError> {
        verify(token, binding, key, max_chars(shape))?.parse(shape)
    }

    #[test]
    fn refuses_an_over_long_token_before_decoding() {
        // 20 MB of valid base64url: refused on its length alone, before any decoding
        let forged = "A".repeat(20 * 1024 * 1024);
        assert_eq!(
            decode(&forged, B, None, SHAPE),
            Err(TokenError::TooLong {
                length: forged.len(),
                max: max_chars(SHAPE),
            })
        );
        // a token with the longest boundary the store allows is never refused for its length
        let long = "x".repeat(MAX_VALUE_BYTES);
        let mut state = sample();
        state.streams[0].boundary = Some(Boundary {
            first: AttributeValue::S(long.clone()),
            last: AttributeValue::S(long.clone()),
            unique: long,
            lane: Some(63),
            run: true,
            through: true,
        });
        let token = encode(&state, B, Some(b"key"));
        assert!(token.len() <= max_chars(SHAPE));
        assert_eq!(decode(&token, B, Some(b"key"), SHAPE), Ok(state));
        // nor one of a multi-attribute query: a tuple of four longest sort values, and a
        // tie-breaker of the longest table range and hash keys (an unsharded key's lane), over
        // the widest window
        let mut state = sample();
        state.from = u64::MAX;
        state.to = u64::MAX;
        let tie = format!(
            "{MAX_VALUE_BYTES}:{}{}",
            "r".repeat(MAX_VALUE_BYTES),
            "h".repeat(MAX_HASH_BYTES)
        );
        assert_eq!(tie.len(), MAX_UNIQUE_BYTES - 2);
        state.streams[0].boundary = Some(Boundary {
            first: AttributeValue::S("f".repeat(MAX_VALUE_BYTES)),
            last: AttributeValue::L(vec![AttributeValue::S("x".repeat(MAX_VALUE_BYTES)); 4]),
            unique: tie,
            lane: Some(63),
            run: true,
            through: true,
        });
        let token = encode(&state, B, Some(b"key"));
        assert!(token.len() <= max_chars(SHAPE), "{}", token.len());
        // and the bound is tight: within the lane's spare bytes (a varint of up to 10 bytes,
        // 1 for lane 63) of the longest token the library writes, so a forged token can be
        // little longer than any real one (11,023 characters against 11,035)
        assert!(
            max_chars(SHAPE) - token.len() < 16,
            "{} against {}",
            token.len(),
            max_chars(SHAPE)
        );
        assert_eq!(decode(&token, B, Some(b"key"), SHAPE), Ok(state));
    }

    /// A token of the version before this one (whose fingerprints hashed `Debug` text) is
    /// refused for its version, with advice to start again, not as another query's; signed or
    /// not.
    #[test]
    fn refuses_a_token_of_the_previous_version() {
        for key in [None, Some(&b"key"[..])] {
            let token = encode(&sample(), B, key);
            let mut raw = URL_SAFE_NO_PAD.decode(token.as_bytes()).unwrap_or_default();
            let Some(first) = raw.first_mut() else {
                panic!("an empty token");
            };
            *first = (*first & FLAG_SIGNED) | 3;
            let old = URL_SAFE_NO_PAD.encode(raw);
            assert_eq!(
                decode(&old, B, key, SHAPE),
                Err(TokenError::UnsupportedVersion(3))
            );
            assert_eq!(window_of(&old), None);
            assert_eq!(decode(&token, B, key, SHAPE), Ok(sample()));
        }
    }

    /// A token with a valid checksum and any body: what a forger can write without a key.
    fn forge(body: &[u8]) -> String {
        let mut raw = vec![VERSION];
        raw.extend_from_slice(&Q[..PREFIX_LEN]);
        raw.extend_from_slice(&T[..PREFIX_LEN]);
        raw.extend_from_slice(body);
        let tag = tag(B, &raw, None);
        raw.extend_from_slice(&tag);
        URL_SAFE_NO_PAD.encode(raw)
    }

    #[test]
    fn refuses_huge_declared_lengths_and_extra_lanes_without_allocating_them() {
        // a unique value declared 2^62 bytes long: refused on the bytes left, nothing copied
        let mut body = vec![0, 1, BOUNDARY_PRESENT, VALUE_INT, 2, VALUE_INT, 4];
        put_varint(&mut body, 1 << 62);
        body.extend_from_slice(b"abc");
        assert_eq!(
            decode(&forge(&body), B, None, SHAPE),
            Err(TokenError::Malformed("truncated"))
        );
        // a string value declared u64::MAX bytes long
        let mut body = vec![0, 1, BOUNDARY_PRESENT, VALUE_S];
        put_varint(&mut body, u64::MAX);
        assert!(decode(&forge(&body), B, None, SHAPE).is_err());
        // more lane bits than the query has lanes
        let mut body = vec![0, 1, 0];
        body.extend_from_slice(&[0u8; 9]);
        assert_eq!(
            decode(&forge(&body), B, None, SHAPE),
            Err(TokenError::Malformed("trailing bytes"))
        );
        // a boundary lane beyond the query's lanes
        let mut body = vec![
            0,
            1,
            BOUNDARY_WITH_LANE,
            VALUE_INT,
            2,
            VALUE_INT,
            4,
            1,
            b'u',
        ];
        put_varint(&mut body, 64);
        body.extend_from_slice(&[0u8; 8]);
        assert_eq!(
            decode(&forge(&body), B, None, SHAPE),
            Err(TokenError::Malformed("boundary lane"))
        );
        // a bit set beyond the last lane
        let shape = Shape {
            streams: 1,
            lanes: 3,
        };
        assert_eq!(
            decode(&forge(&[0, 1, 0, 0b1000]), B, None, shape),
            Err(TokenError::Malformed("lanes"))
        );
        // a query whose shape the token cannot hold is refused before allocating for it
        let huge = Shape {
            streams: usize::MAX,
            lanes: usize::MAX,
        };
        let token = encode(&sample(), B, None);
        assert_eq!(
            verify(&token, B, None, usize::MAX).and_then(|v| v.parse(huge)),
            Err(TokenError::Malformed("shape"))
        );
    }

    #[test]
    fn round_trips_signed_and_unsigned() -> Result<(), TokenError> {
        let mut states = vec![sample()];
        // a fresh stream, strings, binary, non-integer numbers, negative integers, union mode
        states.push(TokenState {
            from: 5,
            to: 6,
            streams: vec![
                StreamState::fresh(3),
                StreamState {
                    boundary: Some(Boundary {
                        first: AttributeValue::S("a#b".into()),
                        last: AttributeValue::B(vec![0, 255, 3]),
                        unique: String::new(),
                        lane: Some(2),
                        run: true,
                        through: true,
                    }),
                    exhausted: vec![true, false, true],
                },
                StreamState {
                    boundary: Some(Boundary {
                        first: AttributeValue::N("-12".into()),
                        last: AttributeValue::N("1.50".into()),
                        unique: "ü".into(),
                        lane: None,
                        run: false,
                        through: false,
                    }),
                    exhausted: vec![false; 3],
                },
                StreamState {
                    boundary: Some(Boundary {
                        first: AttributeValue::N(i64::MIN.to_string()),
                        last: AttributeValue::N(i64::MAX.to_string()),
                        unique: "u".into(),
                        lane: Some(0),
                        run: false,
                        through: false,
                    }),
                    exhausted: vec![true; 3],
                },
            ],
        });
        for state in states {
            let shape = Shape {
                streams: state.streams.len(),
                lanes: state.streams[0].exhausted.len(),
            };
            for key in [None, Some(&b"secret"[..])] {
                let token = encode(&state, B, key);
                assert!(
                    token
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
                );
                assert_eq!(decode(&token, B, key, shape)?, state);
            }
        }
        Ok(())
    }

    #[test]
    fn one_stream_over_64_lanes_fits_in_160_characters() {
        // a UUID unique value and millisecond timestamps, with a signature on top
        let token = encode(&sample(), B, None);
        assert!(token.len() <= 160, "{} characters: {token}", token.len());
        let signed = encode(&sample(), B, Some(b"key"));
        // the signature's 8 more bytes: at most 11 more characters
        assert!(signed.len() <= token.len() + 11);
    }

    #[test]
    fn exact_tokens_over_1_to_512_shards_and_1_to_4_indexes_grow_by_their_lane_bits_only() {
        let boundary = sample().streams[0].boundary.clone();
        let size = |lanes: usize| {
            let state = TokenState {
                from: 0,
                to: 1_700_000_000_000,
                streams: vec![StreamState {
                    // the last lane holds the boundary: the largest lane number
                    boundary: boundary.clone().map(|b| Boundary {
                        lane: Some(lanes - 1),
                        ..b
                    }),
                    exhausted: (0..lanes).map(|i| i % 2 == 1).collect(),
                }],
            };
            encode(&state, B, None).len()
        };
        let one = size(1);
        for indexes in 1..=4 {
            for shards in 1..=512 {
                let lanes = indexes * shards;
                let len = size(lanes);
                if lanes <= 64 {
                    assert!(len <= 160, "{len} characters for {lanes} lanes");
                }
                // one bit per lane beyond the first byte's eight, and the boundary lane's
                // number one byte longer from 128 lanes on, in base64
                let more_bytes = lanes.div_ceil(8) - 1 + usize::from(lanes > 128);
                assert!(
                    len <= one + (more_bytes * 4).div_ceil(3) + 1,
                    "{len} characters for {lanes} lanes"
                );
            }
        }
    }

    #[test]
    fn rejects_other_queries_tables_keys_and_truncation() {
        let token = encode(&sample(), B, Some(b"secret"));
        let other_query = Binding {
            query: &[8u8; 32],
            table: &T,
        };
        let other_table = Binding {
            query: &Q,
            table: &[8u8; 32],
        };
        assert_eq!(
            decode(&token, other_query, Some(b"secret"), SHAPE),
            Err(TokenError::OtherQuery)
        );
        assert_eq!(
            decode(&token, other_table, Some(b"secret"), SHAPE),
            Err(TokenError::OtherTable)
        );
        assert_eq!(
            decode(&token, B, Some(b"other"), SHAPE),
            Err(TokenError::Tampered)
        );
        assert_eq!(decode(&token, B, None, SHAPE), Err(TokenError::Tampered));
        for cut in 0..token.len() {
            assert!(decode(&token[..cut], B, Some(b"secret"), SHAPE).is_err());
        }
    }
}
