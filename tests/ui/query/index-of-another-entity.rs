// An index token of another entity does not open a query of this one.
use entity_manager::store::MemoryStore;
use entity_manager::{Collection, Entity, EntityExt, Table};

include!("league.in");

fn run(store: &MemoryStore) -> entity_manager::Result<()> {
    let _ = Player::query(store)?.index(CoachIndex::ByTeam);
    Ok(())
}

fn main() {}
