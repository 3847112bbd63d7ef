//! The `DynamoDB` scalar type of a key attribute, at the ground: the transcodes, the model, the
//! table definition and the stores all name it. Its one public path is
//! [`store::KeyType`](crate::store::KeyType).

/// The `DynamoDB` scalar type of a key attribute (`AttributeDefinitions`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeyType {
    /// `S`: string.
    S,
    /// `N`: number.
    N,
    /// `B`: binary.
    B,
}
