use entity_manager::{Entity, Table};

// Two members of one item collection: the shared multi-attribute index `byGroup` names its
// partition attribute `group` in one and `team` in the other, so the two cannot share it.
#[derive(Table)]
#[table(entities(Member, Solo))]
struct Club;

#[derive(Entity, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[entity(table = Club, unique = member_id, timestamp = created)]
#[index(name = "byGroup", hash = [group], range = [score])]
struct Member {
    #[transcode("string")]
    member_id: String,
    #[transcode("timestamp")]
    created: u64,
    group: String,
    score: i64,
}

#[derive(Entity, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[entity(table = Club, unique = solo_id, timestamp = created)]
#[index(name = "byGroup", hash = [team], range = [score])]
struct Solo {
    #[transcode("string")]
    solo_id: String,
    #[transcode("timestamp")]
    created: u64,
    team: String,
    score: i64,
}

fn main() {}

// rule: index-declarations-agree
