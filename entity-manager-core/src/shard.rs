//! Shard keys: the `string-hash` hash, bump selection and suffixes.
