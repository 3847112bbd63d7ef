// A generic entity used as a new user would, with its type argument written: one error, at the
// parameters, and none at the uses (the derive's placeholders are generic over `T`), where they
// were "the method `create` exists for struct `User<String>`, but its trait bounds were not
// satisfied" and "no function or associated item named `model`/`FIELDS`". A table listing it
// still asks for generic arguments (`generic-entity-listed-by-its-table.rs`).
use entity_manager::field::Changes;
use entity_manager::store::MemoryStore;
use entity_manager::{Entity, EntityExt, Table};

#[derive(Table)]
#[table(entities())]
struct Users;

#[derive(Entity, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[entity(table = Users, unique = user_id, timestamp = created)]
struct User<T: Clone> {
    #[transcode("string")]
    user_id: String,
    #[transcode("timestamp")]
    created: u64,
    name: T,
}

async fn save(store: &MemoryStore) -> entity_manager::Result<()> {
    let user = User { user_id: "u1".to_owned(), created: 1, name: "ann".to_owned() };
    user.create(store).await?;
    let _ = User::<String>::get(store, "u1").await?;
    Ok(())
}

fn main() {
    let _ = User::<String>::model();
    let _ = Changes::<User<String>>::new().set(User::<String>::FIELDS.name, "ann".to_owned());
    let _ = save;
}
