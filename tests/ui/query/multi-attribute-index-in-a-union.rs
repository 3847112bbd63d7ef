// A union of indexes takes classic indexes only: a multi-attribute index after a classic one does not compile (was a run-time InvalidQuery).
use entity_manager::store::MemoryStore;
use entity_manager::{Collection, Entity, EntityExt, Table};

include!("league.in");

fn run(store: &MemoryStore) -> entity_manager::Result<()> {
    let _ = Player::query(store)?
        .index(PlayerIndex::ByCreated)
        .index(PlayerIndex::ByTeam);
    Ok(())
}

fn main() {}
