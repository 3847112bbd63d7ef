// The token of a multi-attribute index gives its own builder: the classic range-key conditions (here, records created between two times) are not there (was a run-time InvalidQuery: the classic query refused the index).
use entity_manager::store::MemoryStore;
use entity_manager::{Collection, Entity, EntityExt, Table};

include!("league.in");

fn run(store: &MemoryStore) -> entity_manager::Result<()> {
    let _ = Player::query(store)?
        .index(PlayerIndex::ByTeam)
        .created_between(0, 1_000);
    Ok(())
}

fn main() {}
