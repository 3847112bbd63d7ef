//! The tour of `README.md`, compiled and run: every line of its Rust blocks stands in this file
//! (checked by `every_readme_code_line_is_in_this_test`), glued into one program whose
//! assertions say what the README's comments promise.
#![allow(
    clippy::struct_field_names,
    clippy::items_after_statements,
    clippy::let_and_return
)] // the README's code, as a user would write it

use entity_manager::prelude::*; // the derives, traits, stores and query inputs
use serde::{Deserialize, Serialize};

#[derive(Table)]
#[table(entities(User, Email))]
struct Users;

#[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[entity(table = Users, unique = user_id, timestamp = created, version = version)] // optimistic locking
#[shard_bumps(bumps = [bump(timestamp = 1_700_000_000_000, char_bits = 2, chars = 1)])] // 4 shards from then on
#[generated(name = name_range_key, components = [last_name, first_name])]
#[index(name = "created", range = created)]
#[index(name = "lastName", range = name_range_key)]
#[index(name = "phone", range = phone)] // sparse: only users with a phone
struct User {
    #[transcode("string")]
    user_id: String,
    #[transcode("timestamp")]
    created: u64,
    #[transcode("string")]
    first_name: String,
    #[transcode("string")]
    last_name: String,
    #[transcode("string")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    phone: Option<String>, // `None` is never written
    logins: u64,
    version: u64, // every write checks it and adds one
}

#[derive(Entity, Serialize, Deserialize, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[entity(table = Users, unique = email, timestamp = created)]
struct Email {
    #[transcode("string")]
    email: String,
    #[transcode("timestamp")]
    created: u64,
    #[transcode("string")]
    user_id: String,
}

/// The second and third blocks: keys, then store, query and page.
#[rustfmt::skip] // the README's lines as the README writes them
mod keys_and_query {
    use super::{Deserialize, User, UserIndex, Users};
    use entity_manager::prelude::*;

    pub(super) fn run() -> Result<(), Box<dyn std::error::Error>> {
        main()
    }

    #[tokio::main]
    #[allow(clippy::too_many_lines)] // the README's blocks, in order
    async fn main() -> Result<(), Box<dyn std::error::Error>> {
        #[rustfmt::skip]
        let ann = User {
            user_id: "user-123".into(), created: 1_700_000_000_005, first_name: "ann".into(), last_name: "lee".into(),
            phone: Some("555-0100".into()), logins: 0, version: 0,
        };
        let item = ann.to_item()?;
        assert_eq!(item["hashKey"], AttributeValue::S("user!2".into()));
        assert_eq!(item["rangeKey"], AttributeValue::S("userId#user-123".into()));
        assert_eq!(item["nameRangeKey"], AttributeValue::S("lastName#lee|firstName#ann".into()));
        assert_eq!(User::from_item(&item)?, ann);

        let store = MemoryStore::new(TableDefinition::from_schema(Users::schema()?)?);
        store.put_item(ann.to_item()?, Expect::Any).await?; // … and many more
        for n in 0..30u64 {
            let other = User {
                user_id: format!("u{n:02}"),
                created: 1_700_000_000_000 + n * 1_000,
                last_name: if n % 2 == 0 {
                    "leto".into()
                } else {
                    "smith".into()
                },
                first_name: if n % 3 == 2 { "bo".into() } else { "al".into() },
                phone: None,
                ..ann.clone()
            };
            store.put_item(other.to_item()?, Expect::Any).await?;
        }
        let f = User::FIELDS;

        let query = User::query(&store)?
            .index(UserIndex::LastName) // conditions follow their index: before it, they do not compile
            .range(KeyCondition::begins_with(&User::name_range_key().last_name("le")?)) // "lastName#le"
            .filter(f.first_name.begins_with("a"))
            .shards_between(0, 1_800_000_000_000) // the shards that can hold records created then
            .limit(10);
        let first = query.page(None).await?;
        let second = query.page(first.next.as_deref()).await?;
        println!("{:?}", first.stats); // shard queries, items read and returned, consumed capacity…
        // "le…" last names with first names "a…": ann and the ten `leto`s named `al`, in two pages
        let expected: Vec<String> = (0..30)
            .filter(|n| n % 2 == 0 && n % 3 != 2)
            .map(|n| format!("u{n:02}"))
            .chain(["user-123".into()])
            .collect();
        assert_eq!(
            (
                first.items.len(),
                second.items.len(),
                second.next.as_deref()
            ),
            (10, 1, None)
        );
        let mut found: Vec<String> = first
            .items
            .iter()
            .chain(&second.items)
            .map(|u| u.user_id.clone())
            .collect();
        found.sort();
        assert_eq!(found, expected);
        assert!(
            first
                .items
                .iter()
                .chain(&second.items)
                .all(|u| u.last_name.starts_with("le") && u.first_name.starts_with('a'))
        );

        // records created in a window (not only their shards), on a field's range key, as a stream
        let recent: Vec<User> = User::query(&store)?
            .index(UserIndex::Created)
            .created_between(1_700_000_000_000, 1_800_000_000_000)
            .stream()
            .try_collect()
            .await?;
        assert_eq!(recent.len(), 31);
        assert!(recent.windows(2).all(|w| w[0].created <= w[1].created));

        // pages with their tokens, each item read once: a failed stream resumes from the last token
        let mut by_pages = Vec::new();
        let mut pages = std::pin::pin!(query.pages(None));
        while let Some(page) = pages.next().await {
            let page = page?;
            println!("{} users, then {:?}", page.items.len(), page.next);
            assert!(page.items.len() == 10 || page.next.is_none());
            by_pages.extend(page.items);
        }
        assert_eq!(by_pages[..first.items.len()], first.items[..]);

        // a projection read into a struct of its fields (the unique value always comes back, even
        // from a KEYS_ONLY index), and the table itself across its shards
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        #[allow(dead_code)] // read by serde, compared through `user_id`
        struct Name { user_id: String, first_name: String }
        let names = User::query(&store)?
            .index(UserIndex::LastName)
            .projection(&FieldSet::new().with(f.first_name))
            .page_as::<Name>(None)
            .await?;
        assert!(
            names
                .items
                .iter()
                .any(|n| n.user_id == "user-123" && n.first_name == "ann")
        );
        let everyone = User::query(&store)?.table().unlimited().page(None).await?;
        assert_eq!(everyone.items.len(), 31);
        Ok(())
    }
}

/// The fourth block: read, create, update, move and delete records.
#[rustfmt::skip] // the README's lines as the README writes them
mod records {
    use super::{Email, User, Users};
    use entity_manager::prelude::*;

    pub(super) fn run() -> Result<(), Box<dyn std::error::Error>> {
        main()
    }

    #[tokio::main]
    async fn main() -> Result<(), Box<dyn std::error::Error>> {
        let store = MemoryStore::new(TableDefinition::from_schema(Users::schema()?)?);
        let ann = User {
            user_id: "user-123".into(),
            created: 1_700_000_000_005,
            first_name: "ann".into(),
            last_name: "lee".into(),
            phone: Some("555-0100".into()),
            logins: 0,
            version: 0,
        };
        #[rustfmt::skip]
        let read = {
        ann.create(&store).await?;                      // refused (AlreadyExists) if `user-123` exists in any shard
        Email { email: "ann@example.com".into(), created: ann.created, user_id: ann.user_id.clone() }.create(&store).await?;
        let read = User::get(&store, "user-123").await?; // Some(ann), in one round trip over the candidate key of every bump
        read
        };
        assert_eq!(
            read,
            Some(User {
                version: 1,
                ..ann.clone()
            })
        );
        assert!(matches!(
            ann.create(&store).await,
            Err(entity_manager::Error::AlreadyExists { .. })
        ));
        #[rustfmt::skip]
        let (ann, f) = {
        let f = User::FIELDS;                            // typed fields, emitted by the derive
        User::update(&store, "user-123", Changes::new().set(f.last_name, "king")).await?; // one UpdateItem: the lastName key is rewritten
        User::update(&store, "user-123", Changes::new().remove(f.phone)).await?; // the attribute goes: she leaves the phone index
        User::update(&store, "user-123", Changes::new().add(f.logins, 1).when(f.logins.lt(100))).await?; // atomic, conditional
        let seen = User::get(&store, "user-123").await?.ok_or("gone")?;
        User::update(&store, "user-123", Changes::new().add(f.logins, 1).if_version(seen.version)).await?; // VersionConflict if written since `seen`
        assert!(matches!( // a stale copy's version is refused, and nothing is written
            User::update(&store, "user-123", Changes::new().add(f.logins, 1).if_version(seen.version)).await,
            Err(entity_manager::Error::VersionConflict { .. })
        ));
        let ann = User::modify(&store, "user-123", |u| u.first_name = "anne".into()).await?.ok_or("gone")?; // read, change, guarded write
        (ann, f)
        };
        let expected = User {
            first_name: "anne".into(),
            last_name: "king".into(),
            phone: None,
            logins: 2,
            version: 6,
            ..ann.clone()
        };
        assert_eq!(ann, expected);
        assert_eq!(store.len(), 2);
        #[rustfmt::skip]
        let ann = {
        let moved = User { created: 1_800_000_000_000, ..ann.clone() }; // another timestamp: another shard
        User::move_record(&store, "user-123", &moved).await?;         // a new primary key: delete + create in one transaction
        let ann = User::get(&store, "user-123").await?.ok_or("gone")?;
        ann
        };
        assert_eq!(ann.created, 1_800_000_000_000);
        assert_eq!(store.len(), 2, "moved, not copied");
        #[rustfmt::skip]
        let () = {
        Transaction::new()                              // all or nothing, across entities
            .delete_record(&ann)?                       // refused if she changed since read (version field)
            .delete::<Email, _>("ann@example.com")?
            .commit(&store)
            .await?;
        User::delete_if(&store, "user-123", f.phone.not_exists()).await?; // typed conditions on every write
        };
        assert_eq!(store.len(), 0);
        Ok(())
    }
}

/// The DynamoDB block: a store from the shared AWS configuration.
#[rustfmt::skip] // the README's lines as the README writes them
mod on_dynamodb {
    use super::{Table, Users};
    use entity_manager::store::{DynamoStore, SdkConfig, TableDefinition};

    pub(super) fn run(sdk_config: &SdkConfig) -> Result<DynamoStore, Box<dyn std::error::Error>> {
        users_table(sdk_config)
    }

    fn users_table(sdk_config: &SdkConfig) -> Result<DynamoStore, Box<dyn std::error::Error>> {
        let store = DynamoStore::from_sdk_config(sdk_config, "Users", TableDefinition::from_schema(Users::schema()?)?);
        Ok(store)
    }

    pub(super) fn local(endpoint: &str) -> Result<DynamoStore, Box<dyn std::error::Error>> {
        local_users_table(endpoint)
    }

    use entity_manager::store::aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
    use entity_manager::store::aws_sdk_dynamodb::{Client, Config};

    fn local_users_table(endpoint: &str) -> Result<DynamoStore, Box<dyn std::error::Error>> { // endpoint = "http://127.0.0.1:8000"
        let config = Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .endpoint_url(endpoint)
            .region(Region::new("us-east-1"))
            .credentials_provider(Credentials::new("local", "local", None, None, "static"))
            .build();
        Ok(DynamoStore::new(Client::from_conf(config), "Users", TableDefinition::from_schema(Users::schema()?)?))
    }
}

/// The DynamoDB Local block: a store of the table at a loopback endpoint, its client in the
/// region and with the credentials the block gives (nothing is sent).
#[test]
fn the_dynamodb_local_block_builds_a_store_at_the_endpoint()
-> Result<(), Box<dyn std::error::Error>> {
    use entity_manager::store::Store as _;
    let store = on_dynamodb::local("http://127.0.0.1:8000")?;
    assert_eq!(store.table_name(), "Users");
    assert_eq!(
        store.definition(),
        &entity_manager::store::TableDefinition::from_schema(Users::schema()?)?
    );
    Ok(())
}

#[test]
fn the_dynamodb_block_builds_a_store_of_the_table() -> Result<(), Box<dyn std::error::Error>> {
    use entity_manager::store::Store as _;
    let store = on_dynamodb::run(&entity_manager::store::SdkConfig::builder().build())?;
    assert_eq!(store.table_name(), "Users");
    assert_eq!(
        store.definition(),
        &entity_manager::store::TableDefinition::from_schema(Users::schema()?)?
    );
    Ok(())
}

/// The schema file block: the file of the tour's table, and the check that a committed one is
/// up to date.
#[rustfmt::skip] // the README's lines as the README writes them
mod schema_file {
    use super::Users;
    use entity_manager::Table as _;
    use entity_manager::{Schema, SchemaDifference};

    pub(super) fn run() -> Result<(), Box<dyn std::error::Error>> {
        let file = schema_file()?;
        assert!(file.ends_with("}\n") && file.contains("\"keyProfile\": \"native\""));
        assert!(stale(&file)?.is_empty());
        // a file of another version of the code: each difference named by its path
        let older = file.replace("\"lastName\": {", "\"surname\": {");
        let found = stale(&older)?;
        let paths: Vec<&str> = found.iter().map(|d| d.path.as_str()).collect();
        assert_eq!(paths, ["entities.user.indexes.lastName", "entities.user.indexes.surname"]);
        Ok(())
    }

/// `cargo run --example schema -- users.schema.json` writes it (examples/schema.rs).
fn schema_file() -> Result<String, Box<dyn std::error::Error>> {
    Ok(Users::schema()?.to_json_string()?)
}

/// What differs between a committed schema file and the code: empty when it is up to date.
fn stale(committed: &str) -> Result<Vec<SchemaDifference>, Box<dyn std::error::Error>> {
    let committed = Schema::from_json(&serde_json::from_str(committed)?)?;
    Ok(Users::schema()?.differences(&committed))
}
}

#[test]
fn the_schema_file_block_writes_and_checks_the_file() -> Result<(), Box<dyn std::error::Error>> {
    schema_file::run()
}

#[test]
fn the_keys_and_query_blocks_run() -> Result<(), Box<dyn std::error::Error>> {
    keys_and_query::run()
}

#[test]
fn the_records_block_runs() -> Result<(), Box<dyn std::error::Error>> {
    records::run()
}

/// A README line without its comment, spaces collapsed.
fn normalized(line: &str) -> String {
    let code = line.find(" //").map_or(line, |i| &line[..i]);
    code.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn every_readme_code_line_is_in_this_test() -> Result<(), Box<dyn std::error::Error>> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let readme = std::fs::read_to_string(root.join("README.md"))?;
    let this = std::fs::read_to_string(root.join("tests/tests/readme.rs"))?;
    let here: std::collections::HashSet<String> = this.lines().map(normalized).collect();
    let mut blocks = 0;
    let mut missing = Vec::new();
    let mut inside = false;
    for line in readme.lines() {
        if line.trim_start().starts_with("```") {
            inside = line.trim() == "```rust";
            blocks += usize::from(inside);
            continue;
        }
        if inside {
            let code = normalized(line);
            if !code.is_empty() && !here.contains(&code) {
                missing.push(line.to_owned());
            }
        }
    }
    assert!(
        blocks >= 4,
        "the README's Rust blocks were not found ({blocks})"
    );
    assert!(
        missing.is_empty(),
        "README lines not compiled by this test (copy them here):\n{}",
        missing.join("\n")
    );
    Ok(())
}
