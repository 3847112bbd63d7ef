// The token of a classic index gives the classic builder: it takes no partition values (was a run-time InvalidQuery from multi_query).
use entity_manager::store::MemoryStore;
use entity_manager::{Collection, Entity, EntityExt, Table};

include!("league.in");

fn run(store: &MemoryStore) -> entity_manager::Result<()> {
    let _ = Player::query(store)?
        .index(PlayerIndex::ByCreated)
        .hash(Player::FIELDS.team.eq("red"));
    Ok(())
}

fn main() {}
