//! The page token: the state of a cross-shard query between pages, as compact URL-safe text.
//!
//! Layout (version 1), before base64url without padding:
//!
//! ```text
//! version u8 = 1 | flags u8 | fingerprint [4] | from varint | to varint
//! | index count varint | per index: boundary, tie count varint + ties, shard count varint + shards
//! | tag [8] (SHA-256 checksum) or [16] (HMAC-SHA-256 with the user's key)
//! ```
//!
//! A shard is `0` (not started), `1` (exhausted) or `2` + the unique value (encoded) + the range
//! key value of the last item returned from it. The tag covers the whole query fingerprint and
//! payload, so a token from another query, a truncated or an altered one is rejected; with a
//! signing key, a token cannot be forged either.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use serde_dynamo::AttributeValue;
use sha2::{Digest, Sha256};

use crate::error::TokenError;

/// Where one shard of one index stands.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum ShardState {
    /// Never queried.
    NotStarted,
    /// Every item was returned; never queried again.
    Exhausted,
    /// Resume after the item with this unique value (encoded) and index range key value.
    After {
        unique: String,
        range_key: AttributeValue,
    },
}

/// The range keys of the first and last item of the previous page of one merged stream: the
/// span that predicts where the next page ends.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Boundary {
    pub(crate) first: AttributeValue,
    pub(crate) last: AttributeValue,
}

/// The state of one index (or of the merged stream in exact mode, stored on the first index).
#[derive(Clone, Debug, PartialEq, Default)]
pub(crate) struct IndexState {
    pub(crate) boundary: Option<Boundary>,
    /// Unique values (encoded) returned with the last boundary range key, when several indexes
    /// are merged (a record can sit in each of them).
    pub(crate) ties: Vec<String>,
    pub(crate) shards: Vec<ShardState>,
}

/// The decoded token.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct TokenState {
    pub(crate) from: u64,
    pub(crate) to: u64,
    pub(crate) indexes: Vec<IndexState>,
}

const VERSION: u8 = 1;
const FLAG_SIGNED: u8 = 1;
const CHECKSUM_LEN: usize = 8;
const SIGNATURE_LEN: usize = 16;

fn tag(fingerprint: &[u8; 32], body: &[u8], key: Option<&[u8]>) -> Vec<u8> {
    if let Some(key) = key {
        {
            // HMAC keyed with SHA-256(key), zero-padded to the block size: a fixed-size key, so
            // the infallible constructor applies whatever the user's key length
            let mut block = [0u8; 64];
            block[..32].copy_from_slice(&Sha256::digest(key));
            let mut mac = <Hmac<Sha256> as hmac::digest::KeyInit>::new(&block.into());
            mac.update(fingerprint);
            mac.update(body);
            mac.finalize().into_bytes()[..SIGNATURE_LEN].to_vec()
        }
    } else {
        let mut hasher = Sha256::new();
        hasher.update(fingerprint);
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

fn put_value(out: &mut Vec<u8>, value: &AttributeValue) {
    match value {
        AttributeValue::S(s) => {
            out.push(1);
            put_bytes(out, s.as_bytes());
        }
        AttributeValue::N(n) => {
            out.push(2);
            put_bytes(out, n.as_bytes());
        }
        AttributeValue::B(b) => {
            out.push(3);
            put_bytes(out, b);
        }
        // range keys are S, N or B; anything else is written as absent
        _ => out.push(0),
    }
}

/// Writes a token for a query with this fingerprint.
pub(crate) fn encode(state: &TokenState, fingerprint: &[u8; 32], key: Option<&[u8]>) -> String {
    let mut body = Vec::with_capacity(64);
    body.push(VERSION);
    body.push(if key.is_some() { FLAG_SIGNED } else { 0 });
    body.extend_from_slice(&fingerprint[..4]);
    put_varint(&mut body, state.from);
    put_varint(&mut body, state.to);
    put_varint(&mut body, state.indexes.len() as u64);
    for index in &state.indexes {
        match &index.boundary {
            None => body.push(0),
            Some(b) => {
                body.push(1);
                put_value(&mut body, &b.first);
                put_value(&mut body, &b.last);
            }
        }
        put_varint(&mut body, index.ties.len() as u64);
        for tie in &index.ties {
            put_bytes(&mut body, tie.as_bytes());
        }
        put_varint(&mut body, index.shards.len() as u64);
        for shard in &index.shards {
            match shard {
                ShardState::NotStarted => body.push(0),
                ShardState::Exhausted => body.push(1),
                ShardState::After { unique, range_key } => {
                    body.push(2);
                    put_bytes(&mut body, unique.as_bytes());
                    put_value(&mut body, range_key);
                }
            }
        }
    }
    let tag = tag(fingerprint, &body, key);
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

    fn len(&mut self) -> Result<usize, TokenError> {
        let n = usize::try_from(self.varint()?).map_err(|_| TokenError::Malformed("length"))?;
        if n > self.bytes.len() {
            return Err(TokenError::Malformed("truncated"));
        }
        Ok(n)
    }

    fn bytes(&mut self) -> Result<&'a [u8], TokenError> {
        let n = self.len()?;
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(head)
    }

    fn string(&mut self) -> Result<String, TokenError> {
        String::from_utf8(self.bytes()?.to_vec()).map_err(|_| TokenError::Malformed("text"))
    }

    fn value(&mut self) -> Result<AttributeValue, TokenError> {
        match self.u8()? {
            1 => Ok(AttributeValue::S(self.string()?)),
            2 => Ok(AttributeValue::N(self.string()?)),
            3 => Ok(AttributeValue::B(self.bytes()?.to_vec())),
            _ => Err(TokenError::Malformed("value type")),
        }
    }

    /// A count of things that take at least one byte each: bounded by what is left.
    fn count(&mut self) -> Result<usize, TokenError> {
        self.len()
    }
}

/// The shape of the query a token is read for: how many indexes, and at most how many shards
/// each (the shards of the widest window the token can carry).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Shape {
    pub(crate) indexes: usize,
    pub(crate) shards: usize,
}

/// Characters a lane (index × shard) can take at most in a token: a state byte, a unique value
/// and a range key value of at most 1,024 bytes each with their type and length, in base64.
const MAX_CHARS_PER_LANE: usize = 3 * 1024;
/// Characters the rest of a token can take at most: header, window, boundaries, ties, tag.
const MAX_CHARS_FIXED: usize = 16 * 1024;

/// The longest token a query of this shape can have written; a longer one is refused before it
/// is decoded, so memory spent on a token is bounded by the query, not by the token.
pub(crate) fn max_chars(shape: Shape) -> usize {
    MAX_CHARS_FIXED.saturating_add(
        shape
            .indexes
            .saturating_mul(shape.shards)
            .saturating_mul(MAX_CHARS_PER_LANE),
    )
}

/// Reads a token for a query with this fingerprint and shape; `key` must be the signing key it
/// was written with (or none).
pub(crate) fn decode(
    token: &str,
    fingerprint: &[u8; 32],
    key: Option<&[u8]>,
    shape: Shape,
) -> Result<TokenState, TokenError> {
    let max = max_chars(shape);
    if token.len() > max {
        return Err(TokenError::TooLong {
            length: token.len(),
            max,
        });
    }
    let raw = URL_SAFE_NO_PAD
        .decode(token.as_bytes())
        .map_err(|_| TokenError::Malformed("not base64url"))?;
    let version = *raw.first().ok_or(TokenError::Malformed("empty"))?;
    if version != VERSION {
        return Err(TokenError::UnsupportedVersion(version));
    }
    let flags = *raw.get(1).ok_or(TokenError::Malformed("truncated"))?;
    let tag_len = if flags & FLAG_SIGNED == 0 {
        CHECKSUM_LEN
    } else {
        SIGNATURE_LEN
    };
    if raw.len() < 6 + tag_len {
        return Err(TokenError::Malformed("truncated"));
    }
    let (body, given_tag) = raw.split_at(raw.len() - tag_len);
    if body[2..6] != fingerprint[..4] {
        // checked before the tag so that a token of another query says so; a forged prefix
        // still fails the tag below
        let expected = tag(fingerprint, body, key);
        if expected != given_tag {
            return Err(TokenError::OtherQuery);
        }
    }
    let signed = flags & FLAG_SIGNED != 0;
    if signed != key.is_some() {
        return Err(TokenError::Tampered);
    }
    if tag(fingerprint, body, key) != given_tag {
        return Err(TokenError::Tampered);
    }
    parse_body(&body[6..], shape)
}

/// Parses a verified body. Counts inside the token never size an allocation beyond the query's
/// own shape: the index count must equal it, the shard count must not exceed it, and ties grow
/// one read at a time.
fn parse_body(bytes: &[u8], shape: Shape) -> Result<TokenState, TokenError> {
    let mut r = Reader { bytes };
    let from = r.varint()?;
    let to = r.varint()?;
    let index_count = r.count()?;
    if index_count != shape.indexes {
        return Err(TokenError::Malformed("shape"));
    }
    let mut indexes = Vec::with_capacity(shape.indexes);
    for _ in 0..index_count {
        let boundary = match r.u8()? {
            0 => None,
            1 => Some(Boundary {
                first: r.value()?,
                last: r.value()?,
            }),
            _ => return Err(TokenError::Malformed("boundary")),
        };
        let tie_count = r.count()?;
        let mut ties = Vec::new();
        for _ in 0..tie_count {
            ties.push(r.string()?);
        }
        let shard_count = r.count()?;
        if shard_count > shape.shards {
            return Err(TokenError::Malformed("shape"));
        }
        let mut shards = Vec::with_capacity(shard_count);
        for _ in 0..shard_count {
            shards.push(match r.u8()? {
                0 => ShardState::NotStarted,
                1 => ShardState::Exhausted,
                2 => ShardState::After {
                    unique: r.string()?,
                    range_key: r.value()?,
                },
                _ => return Err(TokenError::Malformed("shard state")),
            });
        }
        indexes.push(IndexState {
            boundary,
            ties,
            shards,
        });
    }
    if !r.bytes.is_empty() {
        return Err(TokenError::Malformed("trailing bytes"));
    }
    Ok(TokenState { from, to, indexes })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> TokenState {
        TokenState {
            from: 0,
            to: 1_700_000_000_000,
            indexes: vec![IndexState {
                boundary: Some(Boundary {
                    first: AttributeValue::N("5".into()),
                    last: AttributeValue::N("10".into()),
                }),
                ties: vec!["a".into()],
                shards: vec![
                    ShardState::NotStarted,
                    ShardState::Exhausted,
                    ShardState::After {
                        unique: "u7".into(),
                        range_key: AttributeValue::S("x#y".into()),
                    },
                ],
            }],
        }
    }

    const SHAPE: Shape = Shape {
        indexes: 1,
        shards: 3,
    };

    #[test]
    fn refuses_an_over_long_token_before_decoding() {
        // 20 MB of valid base64url: refused on its length alone, before any decoding
        let forged = "A".repeat(20 * 1024 * 1024);
        assert_eq!(
            decode(&forged, &[7u8; 32], None, SHAPE),
            Err(TokenError::TooLong {
                length: forged.len(),
                max: max_chars(SHAPE),
            })
        );
        // a real token of the widest shape is never refused for its length
        let token = encode(&sample(), &[7u8; 32], None);
        assert!(token.len() <= max_chars(SHAPE));
    }

    #[test]
    fn refuses_counts_beyond_the_query_shape() {
        let fp = [7u8; 32];
        let token = encode(&sample(), &fp, None);
        // more shards in the token than the query can have
        assert_eq!(
            decode(
                &token,
                &fp,
                None,
                Shape {
                    indexes: 1,
                    shards: 2
                }
            ),
            Err(TokenError::Malformed("shape"))
        );
        assert_eq!(
            decode(
                &token,
                &fp,
                None,
                Shape {
                    indexes: 2,
                    shards: 3
                }
            ),
            Err(TokenError::Malformed("shape"))
        );
    }

    #[test]
    fn round_trips_signed_and_unsigned() -> Result<(), TokenError> {
        let fp = [7u8; 32];
        for key in [None, Some(&b"secret"[..])] {
            let token = encode(&sample(), &fp, key);
            assert!(
                token
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            );
            assert_eq!(decode(&token, &fp, key, SHAPE)?, sample());
        }
        Ok(())
    }

    #[test]
    fn rejects_other_queries_keys_and_truncation() {
        let fp = [7u8; 32];
        let token = encode(&sample(), &fp, Some(b"secret"));
        assert_eq!(
            decode(&token, &[8u8; 32], Some(b"secret"), SHAPE),
            Err(TokenError::OtherQuery)
        );
        assert_eq!(
            decode(&token, &fp, Some(b"other"), SHAPE),
            Err(TokenError::Tampered)
        );
        assert_eq!(decode(&token, &fp, None, SHAPE), Err(TokenError::Tampered));
        for cut in 0..token.len() {
            assert!(decode(&token[..cut], &fp, Some(b"secret"), SHAPE).is_err());
        }
    }
}
