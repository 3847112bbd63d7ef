// A condition before the index says that conditions follow the index.
use entity_manager::store::MemoryStore;
use entity_manager::{Collection, Entity, EntityExt, Table};

include!("league.in");

fn run(store: &MemoryStore) -> entity_manager::Result<()> {
    let _ = Player::query(store)?
        .filter(Player::FIELDS.score.ge(3))
        .index(PlayerIndex::ByCreated);
    Ok(())
}

fn main() {}
