//! Building and reading keys.

/// A primary key: the table hash key and range key values.
pub type PrimaryKey = (String, String);
/// A page key map.
pub type PageKeyMap = ();
