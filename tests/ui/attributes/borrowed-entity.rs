// A borrowed entity, listed by its table and used as a new user would: one error, at the
// lifetime, saying why (records are read back as owned values), and none at the table or the
// uses (the derive stands in for `User<'static>`).
use entity_manager::field::Changes;
use entity_manager::store::MemoryStore;
use entity_manager::{Entity, EntityExt, Table};

#[derive(Table)]
#[table(entities(User))]
struct Users;

#[derive(Entity, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[entity(table = Users, unique = user_id, timestamp = created)]
struct User<'a> {
    #[transcode("string")]
    user_id: &'a str,
    #[transcode("timestamp")]
    created: u64,
    name: &'a str,
}

async fn save(store: &MemoryStore) -> entity_manager::Result<()> {
    let user = User { user_id: "u1", created: 1, name: "ann" };
    user.create(store).await
}

fn main() {
    let _ = User::model();
    let _ = Users::entities();
    let _ = Changes::<User>::new().set(User::FIELDS.name, "ann");
    let _ = save;
}
