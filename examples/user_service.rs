//! The User service of the seed docs (*Evolving a `NoSQL` Database Schema*), end to end.
//!
//! `User` and `Email` share one table through `#[derive(Entity)]`, with every generated property
//! and all eleven indexes of the docs' final index table, and a user shard schedule that bumps
//! twice while the data is written (and once more in the future). The example loads a
//! deterministic dataset (5,000 users by default, each with one to three emails, a few hundred
//! beneficiaries), then runs every access pattern of the docs, paging with tokens and printing
//! what each page cost.
//!
//! ```text
//! cargo run --example user_service                                # the embedded in-memory store
//! cargo run --example user_service -- --dynamodb http://127.0.0.1:8000 --users 500
//! DYNAMODB_ENDPOINT=http://127.0.0.1:8000 cargo run --example user_service
//! ```
//!
//! Against `DynamoDB` (for example `DynamoDB` Local, which `bash .ci/dynamodb-local.sh CMD`
//! starts), it creates a table with a unique name from the entities, loads it with batch
//! writes, runs the same queries and deletes the table (unless `--keep-table`). The client gets
//! an explicit region, static dummy credentials and the endpoint URL: the default AWS credential
//! chain is never consulted.

use std::fmt::Write as _;
use std::io::{IsTerminal as _, Write as _};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
use entity_manager::model::ShardSpace;
use entity_manager::prelude::*;
use entity_manager::query::{QueryStats, TypedQuery};
use entity_manager::shard;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

type Result<T, E = Box<dyn std::error::Error>> = std::result::Result<T, E>;

// =============================================================================================
// The model: the seed docs' User service

/// The User service table: users and their emails, side by side.
#[derive(Table, Debug)]
#[table(entities(User, Email))]
struct UserService;

/// A user. The names are stored as given and canonicalised (lowercase, no accents, letters
/// only) for search: canonicalising throws information away, so the application does it, not
/// the entity manager.
#[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
// `version`: every write checks the stored version and increments it (optimistic locking)
#[entity(table = UserService, unique = user_id, timestamp = created, version = version)]
// `user_id` is the seed docs' attribute name (`userId`)
#[allow(clippy::struct_field_names)]
#[shard_bumps(bumps = [
    // before 2025-01-01: one unsharded partition (`user!`)
    // 2025-01-01: 1 character of radix 4, so 1 × 4 = 4 shards (`user!0` … `user!3`)
    bump(timestamp = 1_735_689_600_000, char_bits = 2, chars = 1),
    // 2026-01-01: 2 characters of radix 8, so 2 × 8 = 16 shards (`user!00` … `user!17`)
    bump(timestamp = 1_767_225_600_000, char_bits = 3, chars = 2),
    // 2027-01-01, after the dataset's "now": 3 × 16 = 48 shards, added ahead of time (no
    // migration: existing records keep their shard, queries before that date never visit them)
    bump(timestamp = 1_798_761_600_000, char_bits = 4, chars = 3),
])]
#[generated(name = user_beneficiary_hash_key, components = [beneficiary_id], sharded)]
#[generated(name = first_name_range_key, components = [first_name_canonical, last_name_canonical, created])]
#[generated(name = last_name_range_key, components = [last_name_canonical, first_name_canonical, created])]
#[index(name = "created", range = created)]
#[index(name = "firstName", range = first_name_range_key)]
#[index(name = "lastName", range = last_name_range_key)]
#[index(name = "phone", range = phone)]
#[index(name = "updated", range = updated)]
#[index(name = "userBeneficiaryCreated", hash = user_beneficiary_hash_key, range = created)]
#[index(name = "userBeneficiaryFirstName", hash = user_beneficiary_hash_key, range = first_name_range_key)]
#[index(name = "userBeneficiaryLastName", hash = user_beneficiary_hash_key, range = last_name_range_key)]
#[index(name = "userBeneficiaryPhone", hash = user_beneficiary_hash_key, range = phone)]
#[index(name = "userBeneficiaryUpdated", hash = user_beneficiary_hash_key, range = updated)]
// a multi-attribute key of natural values (no generated property): shared with `Email`, so that
// one query returns a user and their emails (the `UserAndEmails` collection)
#[index(name = "userCreated", hash = [user_id], range = [created])]
struct User {
    #[transcode("string")]
    user_id: String,
    #[transcode("timestamp")]
    created: u64,
    #[transcode("timestamp")]
    updated: u64,
    #[transcode("string")]
    beneficiary_id: String,
    first_name: String,
    #[transcode("string")]
    first_name_canonical: String,
    last_name: String,
    #[transcode("string")]
    last_name_canonical: String,
    #[transcode("string")]
    phone: Option<String>, // `None` is never written: the user is then not in the phone indexes
    version: u64,
}

/// An email address of a user. Emails are small, so the entity stays unsharded (`email!`):
/// entities of one table shard independently. The seed docs key `userCreated` on a generated
/// `userHashKey` (`email!|userId#…`); here it is a multi-attribute key of the natural `userId`
/// and `created`, which `User` declares too.
#[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[entity(table = UserService, unique = email, timestamp = created)]
#[allow(clippy::struct_field_names)] // `email` is the seed docs' attribute name
#[index(name = "created", range = created)]
#[index(name = "userCreated", hash = [user_id], range = [created])]
struct Email {
    #[transcode("string")]
    email: String,
    #[transcode("timestamp")]
    created: u64,
    #[transcode("string")]
    user_id: String,
}

/// A user and their emails: the item collection of the `userCreated` index, one typed enum.
#[derive(Collection, Debug)]
enum UserAndEmails {
    User(User),
    Email(Email),
}

// =============================================================================================
// Options

const DAY: u64 = 86_400_000;
/// The dataset's "now", 2026-06-01T00:00:00Z: fixed, so that every run prints the same.
const NOW: u64 = 1_780_272_000_000;
/// The first user signs up two years earlier, 2024-06-01T00:00:00Z.
const START: u64 = 1_717_200_000_000;
/// Items per page.
const LIMIT: usize = 10;
/// Pages printed per query (the rest are paged through and summed up).
const SHOWN_PAGES: usize = 2;

#[derive(Debug)]
struct Options {
    endpoint: Option<String>,
    users: Option<usize>,
    keep_table: bool,
}

const USAGE: &str = "\
usage: cargo run --example user_service -- [--dynamodb URL | --memory] [--users N] [--keep-table]

  --dynamodb URL   run against a DynamoDB endpoint (default: $DYNAMODB_ENDPOINT if set,
                   else the embedded in-memory store); region us-east-1, dummy credentials
  --memory         the embedded in-memory store, even if DYNAMODB_ENDPOINT is set
  --users N        how many users to load (default 5000 embedded, 1000 on DynamoDB)
  --keep-table     do not delete the DynamoDB table at the end";

fn options() -> Result<Options> {
    let mut endpoint = std::env::var("DYNAMODB_ENDPOINT")
        .ok()
        .filter(|e| !e.is_empty());
    let mut users = None;
    let mut keep_table = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) => (flag.to_owned(), Some(value.to_owned())),
            None => (arg.clone(), None),
        };
        let mut value = |name: &str| {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| format!("{name} needs a value\n\n{USAGE}"))
        };
        match flag.as_str() {
            "--dynamodb" => endpoint = Some(value("--dynamodb")?),
            "--memory" => endpoint = None,
            "--users" => {
                let n: usize = value("--users")?
                    .parse()
                    .map_err(|e| format!("--users: {e}"))?;
                if n == 0 {
                    return Err("--users must be at least 1".into());
                }
                users = Some(n);
            }
            "--keep-table" => keep_table = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument `{other}`\n\n{USAGE}").into()),
        }
    }
    Ok(Options {
        endpoint,
        users,
        keep_table,
    })
}

// =============================================================================================
// Main: pick a store, load, query

#[tokio::main]
async fn main() -> Result<()> {
    let options = match options() {
        Ok(options) => options,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let started = Instant::now();
    let definition = TableDefinition::from_schema(UserService::schema()?)?;
    match &options.endpoint {
        None => {
            let users = options.users.unwrap_or(5_000);
            let store = MemoryStore::new(definition);
            run(&store, "the embedded in-memory store", users).await?;
        }
        Some(endpoint) => {
            let users = options.users.unwrap_or(1_000);
            let config = aws_sdk_dynamodb::Config::builder()
                .behavior_version(BehaviorVersion::latest())
                .endpoint_url(endpoint)
                .region(Region::new("us-east-1"))
                .credentials_provider(Credentials::new("local", "local", None, None, "static"))
                .build();
            let client = aws_sdk_dynamodb::Client::from_conf(config);
            let millis = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_millis());
            let table = format!("user-service-example-{millis}-{}", std::process::id());
            let store = DynamoStore::new(client, &table, definition);
            let t = Instant::now();
            store.create_table().await?;
            println!(
                "created table {table} at {endpoint} ({} GSIs) in {:.1} s",
                store.definition().indexes.len(),
                t.elapsed().as_secs_f64()
            );
            let outcome = run(&store, &format!("DynamoDB at {endpoint}"), users).await;
            if options.keep_table {
                println!("kept table {table}");
            } else {
                store.delete_table().await?;
                println!("deleted table {table}");
            }
            outcome?;
        }
    }
    println!("\ndone in {:.2} s", started.elapsed().as_secs_f64());
    Ok(())
}

/// Loads the dataset and runs every access pattern.
async fn run<S: Store>(store: &S, store_name: &str, users: usize) -> Result<()> {
    let data = Dataset::generate(users, 0x5EED_1AC5_066D_5D6F);
    print_intro(store_name, &data)?;
    let took = load(store, &data).await?;
    println!(
        "loaded {} items ({} users, {} emails) with batch writes in {:.2} s",
        data.users.len() + data.emails.len(),
        data.users.len(),
        data.emails.len(),
        took.as_secs_f64()
    );

    let mut summary = Vec::new();
    summary.push(created_in_the_last_30_days(store).await?);
    summary.push(first_name_starts_with_j(store).await?);
    summary.push(first_name_starts_with_j_by_last_name(store).await?);
    summary.push(user_and_emails(store, &data).await?);
    summary.extend(users_of_a_beneficiary(store, &data).await?);
    summary.push(name_fragment_search(store, "jo").await?);
    summary.push(phone_prefix(store, "1773").await?);
    print_summary(&summary);
    lifecycle(store).await
}

// =============================================================================================
// The life of one record, through the typed entity API

/// Creates a user and their emails, reads the user by id, renames them, clears their phone and
/// deletes them with their emails, each step through the typed API, checking what the indexes
/// see after it.
async fn lifecycle<S: Store>(store: &S) -> Result<()> {
    section(
        "The life of one record",
        &["create, read by id, rename, clear the phone, delete with the emails: typed calls only"],
    );
    let ada = User {
        user_id: "ada-lovelace".into(),
        created: NOW - DAY,
        updated: NOW - DAY,
        beneficiary_id: "b-analytical".into(),
        first_name: "Ada".into(),
        first_name_canonical: "ada".into(),
        last_name: "Byron".into(),
        last_name_canonical: "byron".into(),
        phone: Some("17735550100".into()),
        version: 0,
    };
    let emails = [
        Email {
            email: "ada@engine.example".into(),
            created: NOW - DAY,
            user_id: ada.user_id.clone(),
        },
        Email {
            email: "countess@engine.example".into(),
            created: NOW - DAY,
            user_id: ada.user_id.clone(),
        },
    ];

    // Create the user and her emails together: all or nothing, and each refused if its unique
    // value exists in any shard.
    let mut create = Transaction::new().create(&ada)?;
    for email in &emails {
        create = create.create(email)?;
    }
    create.commit(store).await?;
    println!(
        "  created {} with {} emails in one transaction",
        ada.user_id,
        emails.len()
    );
    match ada.create(store).await {
        Err(entity_manager::Error::AlreadyExists { unique, .. }) => {
            println!("  creating {unique} again is refused: it already exists");
        }
        other => return Err(format!("a second create must be refused, got {other:?}").into()),
    }

    // Read by id: one round trip over the candidate key of every shard bump.
    let read = User::get(store, &ada.user_id)
        .await?
        .ok_or("ada was just created")?;
    // a create stores the record's version plus one
    let created = User {
        version: ada.version + 1,
        ..ada.clone()
    };
    assert_eq(&read, &created, "read by id")?;
    println!(
        "  read {} by id: {} {}",
        read.user_id, read.first_name, read.last_name
    );

    // Rename with a typed partial update: one UpdateItem that also rewrites every generated key
    // built from the changed fields, so the lastName index finds her under the new name only.
    let f = User::FIELDS;
    let stale = read.clone();
    let ada = User::update(
        store,
        &ada.user_id,
        Changes::new()
            .set(f.last_name, "King")
            .set(f.last_name_canonical, "king")
            .set(f.updated, NOW),
    )
    .await?
    .ok_or("ada exists")?;
    let (new, old) = (
        found_by_last_name(store, "king").await?,
        found_by_last_name(store, "byron").await?,
    );
    println!(
        "  renamed to {} {} (version {}): lastName index finds her under `king`: {new}, under `byron`: {old}",
        ada.first_name, ada.last_name, ada.version
    );
    if !new || old {
        return Err("the lastName index must follow the rename".into());
    }

    // Clear the phone: the attribute is removed, so she leaves the sparse phone index.
    let ada = User::update(store, &ada.user_id, Changes::new().remove(f.phone))
        .await?
        .ok_or("ada exists")?;
    let found = found_by_phone(store, "17735550100").await?;
    println!("  cleared the phone: the phone index finds {found} users with 17735550100");
    if found > 0 {
        return Err("a cleared phone must leave the phone index".into());
    }

    lock_and_delete(store, &stale, &ada, &emails).await
}

/// Optimistic locking: a write of a stale copy is refused. Then the user (as last read) and her
/// emails are deleted in one transaction.
async fn lock_and_delete<S: Store>(
    store: &S,
    stale: &User,
    ada: &User,
    emails: &[Email],
) -> Result<()> {
    // Optimistic locking: a write of the record as read before the rename is refused.
    match stale.put(store).await {
        Err(entity_manager::Error::VersionConflict {
            expected, stored, ..
        }) => println!(
            "  writing the copy read before the rename is refused: version {expected} expected, {} stored",
            stored.as_deref().unwrap_or("none")
        ),
        other => return Err(format!("a stale write must be refused, got {other:?}").into()),
    }

    // Delete the user (as last read: refused if she changed since) with her emails, in one
    // transaction.
    let mut delete = Transaction::new().delete_record(ada)?;
    for email in emails {
        delete = delete.delete::<Email, _>(&email.email)?;
    }
    delete.commit(store).await?;
    let left =
        Email::get_many(store, &[emails[0].email.as_str(), emails[1].email.as_str()]).await?;
    println!(
        "  deleted {} and her emails in one transaction: user found {}, emails found {}",
        ada.user_id,
        User::get(store, &ada.user_id).await?.is_some(),
        left.iter().flatten().count()
    );
    Ok(())
}

/// Whether the lastName index finds `ada-lovelace` under this canonical last name.
async fn found_by_last_name<S: Store>(store: &S, name: &str) -> Result<bool> {
    let prefix = User::last_name_range_key().last_name_canonical(name)?;
    let page = User::query(store)?
        .index(UserIndex::LastName)
        .range(KeyCondition::begins_with(&prefix))
        .shards_between(0, NOW)
        .unlimited()
        .page(None)
        .await?;
    Ok(page.items.iter().any(|u| u.user_id == "ada-lovelace"))
}

/// How many users the phone index finds with this phone.
async fn found_by_phone<S: Store>(store: &S, phone: &str) -> Result<usize> {
    let page = User::query(store)?
        .index(UserIndex::Phone)
        .range(User::FIELDS.phone.eq(phone))
        .shards_between(0, NOW)
        .unlimited()
        .page(None)
        .await?;
    Ok(page.items.len())
}

fn assert_eq<T: PartialEq + std::fmt::Debug>(got: &T, want: &T, what: &str) -> Result<()> {
    if got == want {
        Ok(())
    } else {
        Err(format!("{what}: got {got:?}, want {want:?}").into())
    }
}

// =============================================================================================
// The access patterns

/// Users created in the last 30 days, newest first: the `created` index. `created_between`
/// picks the shards (only the 2026 bump's 16 can hold records created in it) and the records
/// (a key condition on `created`, the index's range key).
async fn created_in_the_last_30_days<S: Store>(store: &S) -> Result<Summary> {
    let from = NOW - 30 * DAY;
    section(
        "1. Users created in the last 30 days, newest first",
        &[
            &format!(
                "index `created`, created_between({}, {}): the shards and the records, descending",
                date_time(from),
                date(NOW)
            ),
            "exact mode: one index, so every page is exactly `limit` items in global order",
        ],
    );
    let query = User::query(store)?
        .index(UserIndex::Created)
        .created_between(from, NOW)
        .descending(true)
        .limit(LIMIT);
    let paged = page_through(&query, |users, offset| {
        print_users(users, offset, Names::FirstLast, None);
    })
    .await?;
    Ok(paged.summary("created in the last 30 days"))
}

/// First name starting with "J": the firstName index, then sorted by last name in the
/// application.
async fn first_name_starts_with_j<S: Store>(store: &S) -> Result<Summary> {
    // (a) the firstName index: its range key is firstName|lastName|created, so begins_with on
    // the first name reads only the J users, in first-name order
    let prefix = User::first_name_range_key().first_name_canonical("j")?;
    section(
        "2a. First name starting with \"J\" (firstName index), then sorted by last name",
        &[
            &format!(
                "index `firstName`, begins_with(firstNameRangeKey, {:?}) from the typed key builder",
                prefix.as_str()
            ),
            "pages come in the index's order (first name, last name, created) and read only J users;",
            "for last-name order, sort the (bounded) result in the application, as below, or see 2b",
        ],
    );
    let query = User::query(store)?
        .index(UserIndex::FirstName)
        .range(KeyCondition::begins_with(&prefix))
        .shards_between(0, NOW)
        .limit(LIMIT);
    let paged = page_through(&query, |users, offset| {
        print_users(users, offset, Names::FirstLast, None);
    })
    .await?;
    let mut by_last: Vec<User> = paged.items.clone();
    by_last.sort_by(|a, b| {
        (&a.last_name_canonical, &a.first_name_canonical, a.created).cmp(&(
            &b.last_name_canonical,
            &b.first_name_canonical,
            b.created,
        ))
    });
    println!(
        "\n  sorted by last name in the application (all {} J users, first {LIMIT}):",
        by_last.len()
    );
    print_users(
        &by_last[..by_last.len().min(LIMIT)],
        0,
        Names::LastFirst,
        None,
    );
    Ok(paged.summary("first name J (firstName index)"))
}

/// The same users in exact last-name order, page after page: the lastName index with a filter.
/// The filter runs inside each shard query after its `Limit`, so every user is evaluated.
async fn first_name_starts_with_j_by_last_name<S: Store>(store: &S) -> Result<Summary> {
    section(
        "2b. First name starting with \"J\", sorted by last name (lastName index + filter)",
        &[
            "index `lastName`, filter begins_with(firstNameCanonical, \"j\")",
            "exact last-name order across pages; but the filter runs inside each shard query after its Limit,",
            "so every user is evaluated: the items it drops are not counted as read, yet cost shard queries (compare with 2a)",
        ],
    );
    let query = User::query(store)?
        .index(UserIndex::LastName)
        .filter(User::FIELDS.first_name_canonical.begins_with("j"))
        .shards_between(0, NOW)
        .limit(LIMIT);
    let paged = page_through(&query, |users, offset| {
        print_users(users, offset, Names::LastFirst, None);
    })
    .await?;
    Ok(paged.summary("first name J (lastName + filter)"))
}

/// A user and their emails in one query, oldest first: the `userCreated` multi-attribute index
/// (partition `userId`, sort `created`), which both entities declare, queried as the
/// `UserAndEmails` collection.
async fn user_and_emails<S: Store>(store: &S, data: &Dataset) -> Result<Summary> {
    let user = data
        .users
        .iter()
        .find(|u| {
            data.emails
                .iter()
                .filter(|e| e.user_id == u.user_id)
                .count()
                == 3
        })
        .or(data.users.first())
        .ok_or("no users")?;
    section(
        "3. A user and their emails, in one query",
        &[
            &format!(
                "user {} ({} {}), collection `UserAndEmails` over index `userCreated`, limit 2",
                user.user_id, user.first_name, user.last_name
            ),
            "a multi-attribute key (userId, created): one partition holds the user and the emails",
        ],
    );
    let query = UserAndEmails::query(store)?
        .index(UserIndex::UserCreated)
        .hash(User::FIELDS.user_id.eq(&user.user_id))
        .limit(2);
    let mut token: Option<String> = None;
    let (mut pages, mut items, mut totals, mut took) =
        (0, 0, QueryStats::default(), Duration::ZERO);
    loop {
        let t = Instant::now();
        let page = query.page(token.as_deref()).await?;
        took += t.elapsed();
        pages += 1;
        add(&mut totals, &page.stats);
        println!("\n  page {pages}");
        for (i, record) in page.items.iter().enumerate() {
            match record {
                UserAndEmails::User(u) => println!(
                    "  {:>4}  user   {:<40} {}",
                    items + i + 1,
                    format!("{} {}", u.first_name, u.last_name),
                    date_time(u.created)
                ),
                UserAndEmails::Email(e) => println!(
                    "  {:>4}  email  {:<40} {}",
                    items + i + 1,
                    e.email,
                    date_time(e.created)
                ),
            }
        }
        println!("  {}", stats_line(&page.stats));
        items += page.items.len();
        match page.next {
            Some(next) => token = Some(next),
            None => break,
        }
    }
    Ok(Summary {
        name: "a user and their emails".to_owned(),
        pages,
        shards: totals.shards,
        totals,
        took,
    })
}

/// The users of a beneficiary, by created and by most recently updated: the
/// `userBeneficiaryCreated` and `userBeneficiaryUpdated` indexes, whose sharded hash key
/// `userBeneficiaryHashKey` comes from its typed key builder.
async fn users_of_a_beneficiary<S: Store>(store: &S, data: &Dataset) -> Result<[Summary; 2]> {
    let beneficiary = data.busiest_beneficiary().ok_or("no beneficiaries")?;
    let count = data
        .users
        .iter()
        .filter(|u| u.beneficiary_id == beneficiary)
        .count();
    section(
        "4. Users of a beneficiary, by created",
        &[&format!(
            "beneficiary {beneficiary} ({count} users), index `userBeneficiaryCreated`, hash key from User::user_beneficiary_hash_key"
        )],
    );
    let query = User::query(store)?
        .index(UserIndex::UserBeneficiaryCreated)
        .hash_key(&User::user_beneficiary_hash_key(EVERY_SHARD).beneficiary_id(beneficiary)?)
        .shards_between(0, NOW)
        .limit(LIMIT);
    let created = page_through(&query, |users, offset| {
        print_users(users, offset, Names::FirstLast, None);
    })
    .await?;

    section(
        "5. Users of a beneficiary, most recently updated first",
        &[&format!(
            "beneficiary {beneficiary}, index `userBeneficiaryUpdated`, descending"
        )],
    );
    let query = User::query(store)?
        .index(UserIndex::UserBeneficiaryUpdated)
        .hash_key(&User::user_beneficiary_hash_key(EVERY_SHARD).beneficiary_id(beneficiary)?)
        .shards_between(0, NOW)
        .descending(true)
        .limit(LIMIT);
    let updated = page_through(&query, |users, offset| {
        print_users(users, offset, Names::FirstLast, None);
    })
    .await?;
    Ok([
        created.summary("beneficiary's users by created"),
        updated.summary("beneficiary's users by updated"),
    ])
}

/// A name-fragment search across the `firstName` and `lastName` indexes: union mode.
async fn name_fragment_search<S: Store>(store: &S, fragment: &str) -> Result<Summary> {
    let first = User::first_name_range_key().first_name_canonical(fragment)?;
    let last = User::last_name_range_key().last_name_canonical(fragment)?;
    section(
        &format!("6. Name-fragment search {fragment:?} across firstName and lastName (union mode)"),
        &[
            &format!(
                "begins_with {:?} on `firstName` and {:?} on `lastName`, sorted by last then first name",
                first.as_str(),
                last.as_str()
            ),
            "union mode: the limit is shared by the indexes; each page is deduplicated and sorted, but each index",
            "advances in its own order, so pages are not one sorted list; a user matching both (John Johnson) comes",
            "at most once per page and once per index: paging to the end returns every match at least once",
        ],
    );
    let query = User::query(store)?
        .index(UserIndex::FirstName)
        .range(KeyCondition::begins_with(&first))
        .index(UserIndex::LastName)
        .range(KeyCondition::begins_with(&last))
        .sort_by(User::FIELDS.last_name_canonical, false)
        .sort_by(User::FIELDS.first_name_canonical, false)
        .shards_between(0, NOW)
        .limit(LIMIT);
    let matched = |u: &User| {
        match (
            u.first_name_canonical.starts_with(fragment),
            u.last_name_canonical.starts_with(fragment),
        ) {
            (true, true) => "both",
            (true, false) => "first",
            (false, true) => "last",
            (false, false) => "?",
        }
        .to_owned()
    };
    let paged = page_through(&query, |users, offset| {
        print_users(users, offset, Names::LastFirst, Some(&matched));
    })
    .await?;
    let mut ids: Vec<&str> = paged.items.iter().map(|u| u.user_id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    println!(
        "  distinct users: {} ({} returned in all; a user matching both indexes may come on two pages)",
        ids.len(),
        paged.items.len()
    );
    Ok(paged.summary(&format!("name fragment {fragment:?} (union)")))
}

/// Users by a piece of their phone number: the `phone` index (sparse: users without a phone
/// are not in it).
async fn phone_prefix<S: Store>(store: &S, prefix: &str) -> Result<Summary> {
    section(
        &format!("7. Users whose phone starts with {prefix:?}"),
        &["index `phone` (sparse: users without a phone are not in it), begins_with(phone, …)"],
    );
    let query = User::query(store)?
        .index(UserIndex::Phone)
        .range(User::FIELDS.phone.begins_with(prefix))
        .shards_between(0, NOW)
        .limit(LIMIT);
    let paged = page_through(&query, |users, offset| {
        print_users(users, offset, Names::FirstLast, None);
    })
    .await?;
    Ok(paged.summary(&format!("phone starting {prefix:?}")))
}

// =============================================================================================
// Paging

/// Everything one query returned over all its pages, and what it cost.
#[derive(Debug)]
struct Paged<E> {
    items: Vec<E>,
    pages: usize,
    shards: usize,
    totals: QueryStats,
    took: Duration,
}

impl<E> Paged<E> {
    fn summary(&self, name: &str) -> Summary {
        Summary {
            name: name.to_owned(),
            pages: self.pages,
            shards: self.shards,
            totals: self.totals,
            took: self.took,
        }
    }
}

/// Prints the first pages (items, stats, the token carried to the next page), then pages on
/// silently to the end and prints the totals.
async fn page_through<S, E>(
    query: &TypedQuery<'_, S, E>,
    print: impl Fn(&[E], usize),
) -> Result<Paged<E>>
where
    S: Store,
    E: Entity + DeserializeOwned,
{
    let mut token: Option<String> = None;
    let mut out = Paged {
        items: Vec::new(),
        pages: 0,
        shards: 0,
        totals: QueryStats::default(),
        took: Duration::ZERO,
    };
    loop {
        let t = Instant::now();
        let page = query.page(token.as_deref()).await?;
        out.took += t.elapsed();
        out.pages += 1;
        out.shards = page.stats.shards;
        add(&mut out.totals, &page.stats);
        if out.pages <= SHOWN_PAGES {
            println!(
                "\n  page {} ({})",
                out.pages,
                token.as_deref().map_or_else(
                    || "first page, no token".to_owned(),
                    |t| format!("token {}", abbreviate(t))
                )
            );
            if page.items.is_empty() {
                println!("  (no items)");
            } else {
                print(&page.items, out.items.len());
            }
            println!("  {}", stats_line(&page.stats));
        }
        out.items.extend(page.items);
        match page.next {
            Some(next) => token = Some(next),
            None => break,
        }
    }
    println!(
        "\n  to the end: {} items on {} page{}; {} shard queries ({} a page over {} shards), {} items read ({} per item returned), {} duplicates removed",
        out.items.len(),
        out.pages,
        if out.pages == 1 { "" } else { "s" },
        out.totals.shard_queries,
        ratio(out.totals.shard_queries, out.pages),
        out.shards,
        out.totals.items_read,
        ratio(out.totals.items_read, out.totals.items_returned),
        out.totals.duplicates_removed,
    );
    Ok(out)
}

fn add(total: &mut QueryStats, page: &QueryStats) {
    total.shards = page.shards;
    total.shard_queries += page.shard_queries;
    total.items_read += page.items_read;
    total.items_returned += page.items_returned;
    total.duplicates_removed += page.duplicates_removed;
}

fn stats_line(stats: &QueryStats) -> String {
    format!(
        "stats: {} shards, {} shard queries, {} items read, {} returned, {} duplicates removed",
        stats.shards,
        stats.shard_queries,
        stats.items_read,
        stats.items_returned,
        stats.duplicates_removed
    )
}

/// A page token, shortened for display.
fn abbreviate(token: &str) -> String {
    if token.len() <= 24 {
        return token.to_owned();
    }
    format!(
        "{}…{} ({} chars)",
        &token[..16],
        &token[token.len() - 6..],
        token.len()
    )
}

/// One line of the closing summary.
#[derive(Debug)]
struct Summary {
    name: String,
    pages: usize,
    shards: usize,
    totals: QueryStats,
    took: Duration,
}

fn print_summary(summary: &[Summary]) {
    section("Summary: every query paged to its end", &[]);
    println!(
        "\n  {:<34} {:>6} {:>6} {:>6} {:>9} {:>8} {:>10} {:>6} {:>8}",
        "query", "shards", "pages", "items", "shard q.", "read", "read/item", "dups", "time"
    );
    for s in summary {
        println!(
            "  {:<34} {:>6} {:>6} {:>6} {:>9} {:>8} {:>10} {:>6} {:>6} ms",
            s.name,
            s.shards,
            s.pages,
            s.totals.items_returned,
            s.totals.shard_queries,
            s.totals.items_read,
            ratio(s.totals.items_read, s.totals.items_returned),
            s.totals.duplicates_removed,
            s.took.as_millis()
        );
    }
}

// =============================================================================================
// Loading

/// Writes every user and email with `batch_write` (chunks of 25, retried), a few chunks in
/// flight, with a progress bar once loading takes longer than a second.
async fn load<S: Store>(store: &S, data: &Dataset) -> Result<Duration> {
    let started = Instant::now();
    let total = data.users.len() + data.emails.len();
    let mut progress = Progress::new("loading", total);
    let mut done = 0;
    // typed batch writes, 100 records a call (the store splits them into requests of 25)
    let mut users = futures::stream::iter(data.users.chunks(100))
        .map(|chunk| async move { User::put_many(store, chunk).await.map(|()| chunk.len()) })
        .buffer_unordered(4);
    while let Some(written) = users.next().await {
        done += written?;
        progress.update(done);
    }
    let mut emails = futures::stream::iter(data.emails.chunks(100))
        .map(|chunk| async move { Email::put_many(store, chunk).await.map(|()| chunk.len()) })
        .buffer_unordered(4);
    while let Some(written) = emails.next().await {
        done += written?;
        progress.update(done);
    }
    progress.finish();
    Ok(started.elapsed())
}

/// A one-line progress bar on stderr, drawn only once the work has taken a second; without a
/// terminal, a line at every quarter.
#[derive(Debug)]
struct Progress {
    label: &'static str,
    total: usize,
    started: Instant,
    tty: bool,
    drawn: Option<Instant>,
    quarter: usize,
}

impl Progress {
    fn new(label: &'static str, total: usize) -> Self {
        Self {
            label,
            total: total.max(1),
            started: Instant::now(),
            tty: std::io::stderr().is_terminal(),
            drawn: None,
            quarter: 0,
        }
    }

    fn update(&mut self, done: usize) {
        let elapsed = self.started.elapsed();
        if elapsed < Duration::from_secs(1) {
            return;
        }
        let percent = done * 100 / self.total;
        let mut err = std::io::stderr().lock();
        if self.tty {
            if self
                .drawn
                .is_some_and(|t| t.elapsed() < Duration::from_millis(100))
                && done < self.total
            {
                return;
            }
            let filled = done * 30 / self.total;
            let bar = format!("{}{}", "#".repeat(filled), "-".repeat(30 - filled));
            let _ = write!(
                err,
                "\r{} [{bar}] {percent:>3}% {done}/{} items {:.1} s",
                self.label,
                self.total,
                elapsed.as_secs_f64()
            );
            let _ = err.flush();
        } else {
            let quarter = done * 4 / self.total;
            if quarter <= self.quarter {
                return;
            }
            self.quarter = quarter;
            let _ = writeln!(
                err,
                "{} {percent:>3}% {done}/{} items {:.1} s",
                self.label,
                self.total,
                elapsed.as_secs_f64()
            );
        }
        self.drawn = Some(Instant::now());
    }

    fn finish(&self) {
        if self.tty && self.drawn.is_some() {
            eprintln!();
        }
    }
}

// =============================================================================================
// The dataset: deterministic, from a tiny PRNG

/// xorshift64*: tiny, fast and good enough for test data (not for anything secret).
#[derive(Debug)]
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (the modulo bias is negligible here).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn index(&mut self, len: usize) -> usize {
        usize::try_from(self.below(len as u64)).unwrap_or(0)
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.index(items.len())]
    }

    /// A 21-character id from nanoid's URL-safe alphabet.
    fn nanoid(&mut self) -> String {
        const ALPHABET: &[u8; 64] =
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";
        (0..21)
            .map(|_| char::from(ALPHABET[self.index(64)]))
            .collect()
    }
}

#[rustfmt::skip]
const FIRST_NAMES: &[&str] = &[
    "James", "John", "Jennifer", "Jessica", "Joseph", "Joshua", "Julia", "Jason", "Jacob", "José",
    "Joaquín", "Jürgen", "Joanna", "Jordan", "Jade", "Mary", "Patricia", "Robert", "Michael",
    "Linda", "William", "Elizabeth", "David", "Barbara", "Richard", "Susan", "Thomas", "Sarah",
    "Charles", "Karen", "Daniel", "Nancy", "Matthew", "Lisa", "Anthony", "Betty", "Mark", "Sandra",
    "Zoë", "Renée", "Chloé", "Inés", "Łukasz", "Søren", "Björn", "Amélie", "François", "Siobhán",
    "Mateo", "Sofía", "Aarav", "Priya", "Wei", "Mei", "Hiroshi", "Yuki", "Olumide", "Amara",
    "Fatima", "Omar",
];

#[rustfmt::skip]
const LAST_NAMES: &[&str] = &[
    "Williscroft", "Gómez-Juárez-Álvarez", "Smith", "Johnson", "Jones", "Jordan", "Brown", "García",
    "Miller", "Davis", "Rodríguez", "Martínez", "Hernández", "López", "Wilson", "Anderson",
    "Thomas", "Taylor", "Moore", "Jackson", "Martin", "Lee", "Pérez", "Thompson", "White", "Harris",
    "Sánchez", "Clark", "Ramírez", "Lewis", "Robinson", "Walker", "Young", "Allen", "King",
    "Wright", "Scott", "Torres", "Nguyen", "Hill", "Flores", "Green", "Adams", "Nelson", "Baker",
    "Hall", "Rivera", "Campbell", "Mitchell", "Carter", "Roberts", "O'Brien", "Müller", "Schröder",
    "Øvergård", "Kowalski", "Dvořák", "Nakamura", "Okafor", "Jansen",
];

#[rustfmt::skip]
const AREA_CODES: &[&str] = &[
    "773", "312", "415", "212", "646", "305", "617", "206", "512", "720",
];

const DOMAINS: &[&str] = &["example.com", "example.org", "mail.example.net"];

/// Lowercase, accents stripped, letters and digits only: "Gómez-Juárez-Álvarez" becomes
/// "gomezjuarezalvarez". Lossy, so the application does it before the entity manager sees it.
fn canonicalize(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars().flat_map(char::to_lowercase) {
        let plain = match c {
            'á' | 'à' | 'â' | 'ä' | 'ã' | 'å' | 'ā' => "a",
            'é' | 'è' | 'ê' | 'ë' | 'ē' | 'ě' => "e",
            'í' | 'ì' | 'î' | 'ï' | 'ī' => "i",
            'ó' | 'ò' | 'ô' | 'ö' | 'õ' | 'ø' | 'ō' => "o",
            'ú' | 'ù' | 'û' | 'ü' | 'ū' | 'ů' => "u",
            'ý' | 'ÿ' => "y",
            'ñ' | 'ń' => "n",
            'ç' | 'č' | 'ć' => "c",
            'ł' => "l",
            'ř' => "r",
            'š' | 'ś' => "s",
            'ž' | 'ź' | 'ż' => "z",
            'ß' => "ss",
            'æ' => "ae",
            'œ' => "oe",
            c if c.is_ascii_alphanumeric() => {
                out.push(c);
                continue;
            }
            _ => continue, // hyphens, apostrophes, spaces, anything unmapped
        };
        out.push_str(plain);
    }
    out
}

#[derive(Debug)]
struct Dataset {
    users: Vec<User>,
    emails: Vec<Email>,
    beneficiaries: Vec<String>,
}

impl Dataset {
    fn generate(users: usize, seed: u64) -> Self {
        let mut rng = Rng(seed);
        let beneficiaries: Vec<String> = (0..(users / 15).max(3)).map(|_| rng.nanoid()).collect();
        let span_s = (NOW - START) / 1_000;
        let mut out = Self {
            users: Vec::with_capacity(users),
            emails: Vec::with_capacity(users * 2),
            beneficiaries,
        };
        for n in 0..users {
            // sign-ups grow linearly over the two years: the density of sqrt(uniform)
            let created = START + rng.below(span_s * span_s).isqrt() * 1_000 + rng.below(1_000);
            let updated = if rng.below(10) < 4 {
                created
            } else {
                created + rng.below(NOW - created)
            };
            // a skewed choice: a few beneficiaries have many users
            let r = rng.below(1_000);
            let b = usize::try_from(r * r).unwrap_or(0) * out.beneficiaries.len() / 1_000_000;
            let first_name = rng.pick(FIRST_NAMES);
            let last_name = rng.pick(LAST_NAMES);
            let phone = (rng.below(10) != 0)
                .then(|| format!("1{}{:07}", rng.pick(AREA_CODES), rng.below(10_000_000)));
            let user = User {
                user_id: rng.nanoid(),
                created,
                updated,
                beneficiary_id: out.beneficiaries[b].clone(),
                first_name: first_name.to_owned(),
                first_name_canonical: canonicalize(first_name),
                last_name: last_name.to_owned(),
                last_name_canonical: canonicalize(last_name),
                phone,
                version: 0,
            };
            let emails = match rng.below(10) {
                0..=4 => 1,
                5..=7 => 2,
                _ => 3,
            };
            for k in 0..emails {
                out.emails.push(Email {
                    email: format!(
                        "{}.{}{}@{}",
                        user.first_name_canonical,
                        user.last_name_canonical,
                        n * 3 + k,
                        rng.pick(DOMAINS)
                    ),
                    created: if k == 0 {
                        created
                    } else {
                        created + rng.below(NOW - created)
                    },
                    user_id: user.user_id.clone(),
                });
            }
            out.users.push(user);
        }
        out
    }

    /// The beneficiary with the most users (the first of them on a tie).
    fn busiest_beneficiary(&self) -> Option<&str> {
        let mut best: Option<(&str, usize)> = None;
        for b in &self.beneficiaries {
            let n = self.users.iter().filter(|u| &u.beneficiary_id == b).count();
            if best.is_none_or(|(_, m)| n > m) {
                best = Some((b, n));
            }
        }
        best.map(|(b, _)| b)
    }
}

// =============================================================================================
// Printing

fn print_intro(store_name: &str, data: &Dataset) -> Result<()> {
    println!("The User service of \"Evolving a NoSQL Database Schema\" on {store_name}");
    println!(
        "{} users, {} emails, {} beneficiaries, created {} .. {} (the dataset's \"now\")",
        data.users.len(),
        data.emails.len(),
        data.beneficiaries.len(),
        date(START),
        date(NOW)
    );
    let space: ShardSpace = <UserService as Table>::model().shard_space;
    let mut schedule = String::new();
    for bump in User::model().shard_bumps.iter() {
        let count = shard::shard_count(*bump, space);
        let shards = if bump.chars == 0 {
            " 1 partition, unsharded".to_owned()
        } else {
            format!(
                "{count:>2} shards ({} char{} of radix {})",
                bump.chars,
                if bump.chars == 1 { "" } else { "s" },
                bump.radix()
            )
        };
        let _ = write!(
            schedule,
            "\n  {:<16} {shards}{}",
            if bump.timestamp == 0 {
                "from the start:".to_owned()
            } else {
                format!("from {}:", date(bump.timestamp))
            },
            if bump.timestamp > NOW {
                "  <- in the future, added ahead of time"
            } else {
                ""
            }
        );
    }
    println!("user shard schedule (product rule: chars x radix shards):{schedule}");
    let mut per_bump = String::new();
    let bumps = &User::model().shard_bumps;
    for (i, bump) in bumps.iter().enumerate() {
        let end = bumps.get(i + 1).map_or(u64::MAX, |b| b.timestamp);
        let n = data
            .users
            .iter()
            .filter(|u| (bump.timestamp..end).contains(&u.created))
            .count();
        if bump.timestamp == 0 {
            let _ = write!(per_bump, " {n} before {},", date(end));
        } else if bump.timestamp <= NOW {
            let _ = write!(per_bump, " {n} from {},", date(bump.timestamp));
        }
    }
    println!("users created:{}", per_bump.trim_end_matches(','));

    // one record as stored: the generated properties the derive adds
    if let Some(user) = data.users.iter().find(|u| u.phone.is_some()) {
        let item = user.to_item()?;
        println!("\none user as stored (generated properties added by to_item):");
        for name in [
            "hashKey",
            "rangeKey",
            "userBeneficiaryHashKey",
            "firstNameRangeKey",
            "lastNameRangeKey",
            "firstName",
            "lastName",
            "phone",
            "created",
        ] {
            if let Some(value) = item.get(name) {
                println!("  {name:<24} {}", show(value));
            }
        }
    }
    println!();
    Ok(())
}

fn show(value: &AttributeValue) -> String {
    match value {
        AttributeValue::S(s) => s.clone(),
        AttributeValue::N(n) => n.clone(),
        other => format!("{other:?}"),
    }
}

fn section(title: &str, notes: &[&str]) {
    println!("\n{title}\n{}", "=".repeat(title.chars().count()));
    for note in notes {
        println!("  {note}");
    }
}

#[derive(Clone, Copy, Debug)]
enum Names {
    FirstLast,
    LastFirst,
}

/// `println!` without trailing blanks (padded last columns).
macro_rules! row {
    ($($arg:tt)*) => {
        println!("{}", format!($($arg)*).trim_end())
    };
}

fn print_users(
    users: &[User],
    offset: usize,
    names: Names,
    extra: Option<&dyn Fn(&User) -> String>,
) {
    row!(
        "  {:>4}  {:<30} {:<12} {:<16}  {:<16}  {:<9} {:<21}{}",
        "#",
        match names {
            Names::FirstLast => "name",
            Names::LastFirst => "name (last, first)",
        },
        "phone",
        "created",
        "updated",
        "shard",
        "user id",
        if extra.is_some() { "  matched" } else { "" }
    );
    for (i, u) in users.iter().enumerate() {
        let name = match names {
            Names::FirstLast => format!("{} {}", u.first_name, u.last_name),
            Names::LastFirst => format!("{}, {}", u.last_name, u.first_name),
        };
        let shard = u
            .primary_key()
            .map_or_else(|e| format!("({e})"), |k| k.hash_key);
        row!(
            "  {:>4}  {:<30} {:<12} {:<16}  {:<16}  {:<9} {:<21}{}",
            offset + i + 1,
            name,
            u.phone.as_deref().unwrap_or("-"),
            date_time(u.created),
            date_time(u.updated),
            shard,
            u.user_id,
            extra.map(|f| format!("  {}", f(u))).unwrap_or_default()
        );
    }
}

/// `a / b` with two decimals, in integer arithmetic.
fn ratio(a: usize, b: usize) -> String {
    if b == 0 {
        return "-".to_owned();
    }
    let hundredths = (a * 200 + b) / (2 * b);
    format!("{}.{:02}", hundredths / 100, hundredths % 100)
}

/// `YYYY-MM-DD` of a timestamp in ms (UTC).
fn date(ms: u64) -> String {
    let (y, m, d) = civil_from_days(ms / DAY);
    format!("{y:04}-{m:02}-{d:02}")
}

/// `YYYY-MM-DD HH:MM` of a timestamp in ms (UTC).
fn date_time(ms: u64) -> String {
    let minutes = ms % DAY / 60_000;
    format!("{} {:02}:{:02}", date(ms), minutes / 60, minutes % 60)
}

/// Days since 1970-01-01 to (year, month, day): Howard Hinnant's `civil_from_days`.
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}
