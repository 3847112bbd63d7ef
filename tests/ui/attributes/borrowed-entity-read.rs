// A borrowed entity read back, as a new user would write it: the derive's error, at the
// lifetime, names the entity, says to store owned fields, and that a read may also say that
// `Deserialize` is not general enough. Those follow-on errors (one per span of the call) are
// rustc's, and no derive can prevent them: a read needs `User<'_>: DeserializeOwned`, and serde
// implements `Deserialize<'de>` for a struct borrowing `&'a str` only where `'de: 'a`, so no
// `User<'x>` is `DeserializeOwned`; a placeholder impl cannot be added beside serde's, and a
// higher-ranked lifetime error has no `#[diagnostic]` attribute. Writes, `model()` and `FIELDS`
// add no error (`borrowed-entity.rs`).
use entity_manager::store::MemoryStore;
use entity_manager::{EntityExt, Table};

#[derive(Table)]
#[table(entities(User))]
struct Users;

#[derive(entity_manager::Entity, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[entity(table = Users, unique = user_id, timestamp = created)]
struct User<'a> {
    #[transcode("string")]
    user_id: &'a str,
    #[transcode("timestamp")]
    created: u64,
    name: &'a str,
}

async fn read(store: &MemoryStore) -> entity_manager::Result<()> {
    let _user = User::get(store, "u1").await?;
    Ok(())
}

fn main() {
    let _ = read;
}
