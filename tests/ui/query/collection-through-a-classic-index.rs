// A collection is queried through a multi-attribute index of its members: a classic index does not compile (was a run-time InvalidQuery).
use entity_manager::store::MemoryStore;
use entity_manager::query::Collection as _;
use entity_manager::{Collection, Entity, Table};

include!("league.in");

fn run(store: &MemoryStore) -> entity_manager::Result<()> {
    let _ = Roster::query(store)?.index(PlayerIndex::ByCreated);
    Ok(())
}

fn main() {}
