//! Where DynamoDB is and who asks: credentials, region and endpoint found as every AWS tool
//! finds them (aws-config's default chain), and the store of a table there; errors of the
//! store turned into what an operator can act on.

use std::collections::HashMap;
use std::error::Error as StdError;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use aws_config::BehaviorVersion;
use aws_sdk_dynamodb::config::Region;
use aws_sdk_dynamodb::config::timeout::TimeoutConfig;
use aws_sdk_dynamodb::types::TableDescription;
use clap::Args;
use entity_manager::store::{DynamoStore, StoreError, StoreErrorKind, TableDefinition, TableStamp};

use crate::{Failure, runtime};

/// The region a request is signed for when only an endpoint URL is given (DynamoDB Local
/// accepts any).
const LOCAL_REGION: &str = "us-east-1";

/// Where DynamoDB is: the AWS CLI's flags, and aws-config's default chain for the rest.
#[derive(Clone, Debug, Default, Args)]
pub(crate) struct Connection {
    /// The named profile of the AWS config and credentials files, as the AWS CLI's
    /// `--profile` (default: `AWS_PROFILE`, else `default`): its credentials (static keys, SSO,
    /// `credential_process`, an assumed role), region and endpoint are used. Without it the
    /// default chain applies: environment, profile, SSO, web identity, container and instance
    /// roles.
    #[arg(long = "profile", value_name = "NAME")]
    pub(crate) aws_profile: Option<String>,
    /// The AWS region (default: `AWS_REGION`, `AWS_DEFAULT_REGION`, then the profile's
    /// `region`; `us-east-1` when only an endpoint URL is known, as for DynamoDB Local).
    #[arg(long, value_name = "REGION")]
    pub(crate) region: Option<String>,
    /// The endpoint URL, e.g. `http://127.0.0.1:8000` for DynamoDB Local (default:
    /// `AWS_ENDPOINT_URL_DYNAMODB`, `AWS_ENDPOINT_URL`, the profile's `endpoint_url`, else
    /// the region's AWS endpoint).
    #[arg(long = "endpoint-url", visible_alias = "endpoint", value_name = "URL")]
    pub(crate) endpoint_url: Option<String>,
    /// The longest a single DynamoDB call may take, in seconds.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=3600), value_name = "SECONDS")]
    pub(crate) timeout: u64,
    /// The configuration once loaded, shared by the clones of this connection: a command
    /// loads it, and builds its client, once.
    #[arg(skip)]
    loaded: Loaded,
}

/// The [`Resolved`] configuration of a [`Connection`], loaded on first use.
#[derive(Clone, Debug, Default)]
struct Loaded(Arc<OnceLock<Arc<Resolved>>>);

/// What the connection resolved to: the loaded configuration and a description of the
/// endpoint for messages; its one DynamoDB client, and what this run read of each table
/// (`DescribeTable`, the stamp), read once a run.
#[derive(Debug)]
pub(crate) struct Resolved {
    sdk: aws_config::SdkConfig,
    region: Region,
    /// The DynamoDB endpoint URL, when one is configured (flag, environment or profile).
    endpoint: Option<String>,
    /// The DynamoDB client of this configuration, built on first use.
    client: OnceLock<aws_sdk_dynamodb::Client>,
    /// Each table's `DescribeTable` answer, as first read.
    described: Mutex<HashMap<String, Option<TableDescription>>>,
    /// Each table's stamp, as first read.
    stamps: Mutex<HashMap<String, Option<TableStamp>>>,
}

/// The endpoint of this run, for messages (set once the configuration is loaded).
static WHERE: OnceLock<String> = OnceLock::new();
/// `--timeout` of this run, for messages.
static TIMEOUT: OnceLock<u64> = OnceLock::new();

/// The endpoint this run talks to, as a message names it.
pub(crate) fn endpoint_described() -> &'static str {
    WHERE.get().map_or("DynamoDB", String::as_str)
}

impl Connection {
    /// The configuration: the flags first, then aws-config's default chain; loaded on the
    /// first call, the same afterwards (and for the clones of this connection).
    pub(crate) fn resolve(&self) -> Result<Arc<Resolved>, Failure> {
        if let Some(resolved) = self.loaded.0.get() {
            return Ok(Arc::clone(resolved));
        }
        let resolved = Arc::new(self.load()?);
        Ok(Arc::clone(self.loaded.0.get_or_init(|| resolved)))
    }

    /// Loads the configuration ([`resolve`](Self::resolve)).
    fn load(&self) -> Result<Resolved, Failure> {
        let timeouts = self.timeouts();
        let mut loader = aws_config::defaults(BehaviorVersion::latest()).timeout_config(timeouts);
        if let Some(profile) = &self.aws_profile {
            // as the AWS CLI: a profile named on the command line wins over credentials in the
            // environment (the default chain would try the environment first)
            loader = loader.profile_name(profile).credentials_provider(
                aws_config::profile::ProfileFileCredentialsProvider::builder()
                    .profile_name(profile)
                    .build(),
            );
        }
        if let Some(region) = &self.region {
            loader = loader.region(Region::new(region.clone()));
        }
        if let Some(url) = &self.endpoint_url {
            loader = loader.endpoint_url(url);
        }
        let sdk = runtime()?.block_on(loader.load());
        // the service-specific variable wins over the shared one, as in the SDK
        let endpoint = self
            .endpoint_url
            .clone()
            .or_else(|| std::env::var("AWS_ENDPOINT_URL_DYNAMODB").ok())
            .or_else(|| sdk.endpoint_url().map(str::to_owned));
        let region = match (sdk.region(), &endpoint) {
            (Some(region), _) => region.clone(),
            (None, Some(_)) => Region::new(LOCAL_REGION),
            (None, None) => {
                return Err(Failure::Input(format!(
                    "no AWS region: pass --region, set AWS_REGION, or give the profile{} a `region`",
                    self.aws_profile
                        .as_ref()
                        .map(|p| format!(" `{p}`"))
                        .unwrap_or_default()
                )));
            }
        };
        // a region names the endpoint's host: anything else fails every request obscurely
        let name = region.as_ref();
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        {
            return Err(Failure::Input(format!(
                "`{name}` is not an AWS region name (lower-case letters, digits and dashes, like eu-west-1); check --region, AWS_REGION and the profile's `region`"
            )));
        }
        let described = endpoint.as_ref().map_or_else(
            || format!("DynamoDB in {region}"),
            |url| format!("{url} ({region})"),
        );
        let _ = WHERE.set(described);
        let _ = TIMEOUT.set(self.timeout);
        Ok(Resolved {
            sdk,
            region,
            endpoint,
            client: OnceLock::new(),
            described: Mutex::default(),
            stamps: Mutex::default(),
        })
    }

    /// `--timeout` for connecting and for each whole call.
    fn timeouts(&self) -> TimeoutConfig {
        let timeout = Duration::from_secs(self.timeout.max(1));
        TimeoutConfig::builder()
            .connect_timeout(timeout)
            .operation_timeout(timeout)
            .build()
    }

    /// The store of `table` with `definition`.
    pub(crate) fn store(
        &self,
        definition: TableDefinition,
        table: &str,
    ) -> Result<DynamoStore, Failure> {
        let resolved = self.resolve()?;
        Ok(resolved.store(definition, table))
    }

    /// `DescribeTable` of `table`, read once a run (`None`: DynamoDB answered without a
    /// description); a failure (no such table, no credentials…) is explained, and not kept.
    pub(crate) fn describe(&self, table: &str) -> Result<Option<TableDescription>, Failure> {
        let resolved = self.resolve()?;
        if let Some(found) = lock(&resolved.described).get(table) {
            return Ok(found.clone());
        }
        let described = runtime()?
            .block_on(resolved.client().describe_table().table_name(table).send())
            .map_err(|e| explain("reading the table", table, &e))?
            .table;
        lock(&resolved.described).insert(table.to_owned(), described.clone());
        Ok(described)
    }

    /// The stamp of `table` as `read` finds it, read once a run: later calls get the first
    /// answer (a failure is not kept).
    pub(crate) fn stamp(
        &self,
        table: &str,
        read: impl FnOnce() -> Result<Option<TableStamp>, Failure>,
    ) -> Result<Option<TableStamp>, Failure> {
        let resolved = self.resolve()?;
        if let Some(found) = lock(&resolved.stamps).get(table) {
            return Ok(found.clone());
        }
        let stamp = read()?;
        lock(&resolved.stamps).insert(table.to_owned(), stamp.clone());
        Ok(stamp)
    }
}

/// `mutex`, locked (a panic while it was held left nothing half-written: a map of answers).
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Resolved {
    /// The DynamoDB client of this configuration (built once; clones share its connections).
    pub(crate) fn client(&self) -> aws_sdk_dynamodb::Client {
        self.client
            .get_or_init(|| {
                let config = aws_sdk_dynamodb::config::Builder::from(&self.sdk)
                    .region(self.region.clone())
                    .build();
                aws_sdk_dynamodb::Client::from_conf(config)
            })
            .clone()
    }

    /// The store of `table` with `definition`. (`DynamoStore::new` over a client built from
    /// the loaded `SdkConfig`.)
    pub(crate) fn store(&self, definition: TableDefinition, table: &str) -> DynamoStore {
        DynamoStore::new(self.client(), table.to_owned(), definition)
    }

    /// A DynamoDB Streams client of this configuration, and where it goes as a message names
    /// it. The endpoint is the first of: `explicit` (`--streams-endpoint`),
    /// `AWS_ENDPOINT_URL_DYNAMODB_STREAMS`, the DynamoDB endpoint of this run (`--endpoint-url`,
    /// `AWS_ENDPOINT_URL_DYNAMODB`, `AWS_ENDPOINT_URL`, the profile's: DynamoDB Local serves
    /// both APIs at one URL), else the region's AWS Streams endpoint
    /// (`https://streams.dynamodb.<region>.amazonaws.com`).
    pub(crate) fn streams_client(
        &self,
        explicit: Option<&str>,
    ) -> (aws_sdk_dynamodbstreams::Client, String) {
        let endpoint = streams_endpoint(
            explicit,
            std::env::var("AWS_ENDPOINT_URL_DYNAMODB_STREAMS").ok(),
            self.endpoint.as_deref(),
        );
        let mut config =
            aws_sdk_dynamodbstreams::config::Builder::from(&self.sdk).region(self.region.clone());
        let region = &self.region;
        let described = match endpoint {
            Some(url) => {
                let described = format!("{url} ({region})");
                config = config.endpoint_url(url);
                described
            }
            None => {
                format!("DynamoDB Streams in {region} (streams.dynamodb.{region}.amazonaws.com)")
            }
        };
        (
            aws_sdk_dynamodbstreams::Client::from_conf(config.build()),
            described,
        )
    }
}

/// The Streams endpoint URL of a run: the explicit one, the Streams variable, else the
/// DynamoDB endpoint (empty values count as unset, as in the SDK).
fn streams_endpoint(
    explicit: Option<&str>,
    streams_variable: Option<String>,
    dynamodb: Option<&str>,
) -> Option<String> {
    let given = |url: &str| !url.trim().is_empty();
    explicit
        .filter(|url| given(url))
        .map(str::to_owned)
        .or(streams_variable.filter(|url| given(url)))
        .or_else(|| dynamodb.filter(|url| given(url)).map(str::to_owned))
}

/// Every error of `err`'s chain, outermost first, one per line (what `-v` shows).
pub(crate) fn chain(err: &(dyn StdError + 'static)) -> String {
    let mut lines = vec![err.to_string()];
    let mut source = err.source();
    while let Some(e) = source {
        let text = e.to_string();
        if lines.last() != Some(&text) {
            lines.push(text);
        }
        source = e.source();
    }
    lines.join("\n  caused by: ")
}

/// The innermost error of the chain (the operating system's reason of a refused connection).
fn root(err: &(dyn StdError + 'static)) -> String {
    let mut last = err;
    while let Some(e) = last.source() {
        last = e;
    }
    last.to_string()
}

/// The store error in `err`'s chain, if any.
fn store_error<'e>(err: &'e (dyn StdError + 'static)) -> Option<&'e StoreError> {
    let mut next = Some(err);
    while let Some(e) = next {
        if let Some(store) = as_store_error(e) {
            return Some(store);
        }
        next = e.source();
    }
    None
}

/// `e` as a store error: itself, or boxed (a shard query's error holds its store error in a
/// `Box`, which is the type its `source` has).
fn as_store_error<'e>(e: &'e (dyn StdError + 'static)) -> Option<&'e StoreError> {
    e.downcast_ref::<StoreError>()
        .or_else(|| e.downcast_ref::<Box<StoreError>>().map(|b| &**b))
}

/// What the operator gave that cannot be used (exit 2, as any bad input), if that is what
/// the error says: a page token that is not this query's, a query or value the library
/// refuses, or a request DynamoDB refused as invalid (a value of the wrong type for a key).
fn bad_input(err: &(dyn StdError + 'static)) -> Option<String> {
    use entity_manager::Error as E;
    let mut next = Some(err);
    while let Some(e) = next {
        if let Some(error) = e.downcast_ref::<E>() {
            match error {
                E::Token(_)
                | E::InvalidQuery { .. }
                | E::DelimiterInValue { .. }
                | E::Transcode { .. }
                | E::InvalidTimestamp { .. }
                | E::MissingTimestamp { .. }
                | E::MissingUnique { .. }
                | E::MissingComponent { .. }
                | E::KeyTooLong { .. }
                | E::EmptyKey { .. } => return Some(error.to_string()),
                _ => {}
            }
        }
        if let Some(store) = as_store_error(e) {
            // DynamoDB's own refusal of a request as invalid (not the stores' refusals of a
            // table's state, such as a stamp of other keys, which carry codes of their own)
            return (store.kind() == StoreErrorKind::Validation
                && store.code() == Some("ValidationException"))
            .then(|| format!("{} ({})", store.message(), store.operation()));
        }
        next = e.source();
    }
    None
}

/// What kind of trouble an error is, for the operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Trouble {
    NoTable,
    Credentials,
    Timeout,
    Throttled,
    Unreachable,
    Other,
}

/// The trouble of `err`: from the store error in its chain, else from the chain's text (an
/// SDK error of a direct call).
fn trouble(err: &(dyn StdError + 'static), detail: &str) -> Trouble {
    if let Some(store) = store_error(err) {
        return match store.kind() {
            StoreErrorKind::ResourceNotFound => Trouble::NoTable,
            _ if is_credentials(store) => Trouble::Credentials,
            StoreErrorKind::Timeout => Trouble::Timeout,
            StoreErrorKind::Throttled => Trouble::Throttled,
            StoreErrorKind::Transient if store.code().is_none() => Trouble::Unreachable,
            _ => Trouble::Other,
        };
    }
    if detail.contains("ResourceNotFoundException") {
        Trouble::NoTable
    } else if detail.contains("credential")
        || detail.contains("UnrecognizedClientException")
        || detail.contains("InvalidSignatureException")
        || detail.contains("ExpiredToken")
    {
        Trouble::Credentials
    } else if detail.contains("timeout") || detail.contains("timed out") {
        Trouble::Timeout
    } else if detail.contains("Throttl") || detail.contains("ProvisionedThroughputExceeded") {
        Trouble::Throttled
    } else if detail.contains("dispatch failure") || detail.contains("error trying to connect") {
        Trouble::Unreachable
    } else {
        Trouble::Other
    }
}

/// `err` of `what` (e.g. "purge of every record of entity `user`") on `table`, as an operator
/// reads it: what failed, where, and what to do; the whole chain goes with it for `-v`.
pub(crate) fn explain(what: &str, table: &str, err: &(dyn StdError + 'static)) -> Failure {
    explain_at(what, table, &Place::dynamodb(), err)
}

/// The service a failed call went to, as a message names it.
pub(crate) struct Place<'a> {
    /// The service's name (`DynamoDB`, `DynamoDB Streams`).
    pub(crate) service: &'a str,
    /// Its endpoint and region, as [`endpoint_described`].
    pub(crate) at: &'a str,
    /// What sets its endpoint, for the advice.
    pub(crate) flags: &'a str,
}

impl Place<'static> {
    /// DynamoDB, at this run's endpoint.
    pub(crate) fn dynamodb() -> Self {
        Place {
            service: "DynamoDB",
            at: endpoint_described(),
            flags: "--endpoint-url and --region",
        }
    }
}

/// [`explain`], for an error of a call to `place` (e.g. the DynamoDB Streams endpoint, which
/// is not the DynamoDB one on AWS).
pub(crate) fn explain_at(
    what: &str,
    table: &str,
    place: &Place<'_>,
    err: &(dyn StdError + 'static),
) -> Failure {
    let Place { service, at, flags } = *place;
    if let Some(why) = bad_input(err) {
        return Failure::Input(format!("{what} on table {table}: {why}"));
    }
    let detail = chain(err);
    let message = match trouble(err, &detail) {
        Trouble::NoTable => format!(
            "{what}: table {table} does not exist at {at}; check --table, --region and --endpoint-url, or create it with `entity-manager table create --config <config.json> --table {table}`"
        ),
        Trouble::Credentials => format!(
            "{what}: no usable AWS credentials for {at} ({}); check --profile (or AWS_PROFILE), the AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY variables, or log in with `aws sso login`",
            store_error(err).map_or_else(|| root(err), |s| s.message().to_owned())
        ),
        Trouble::Timeout => format!(
            "{what}: {at} did not answer within {} s; check the endpoint and the network, or raise --timeout",
            TIMEOUT.get().copied().unwrap_or(30)
        ),
        Trouble::Throttled => format!(
            "{what}: DynamoDB throttled the requests on table {table} ({at}); retry later, or raise the table's capacity"
        ),
        Trouble::Unreachable => format!(
            "{what}: cannot reach {service} at {at}: {}; check {flags}, and that the endpoint is up",
            root(err)
        ),
        Trouble::Other => match store_error(err) {
            Some(store) => format!(
                "{what} on table {table} ({at}): {} ({})",
                store.message(),
                store.operation()
            ),
            None => format!("{what} on table {table} ({at}): {err}"),
        },
    };
    Failure::Detailed { message, detail }
}

/// A refusal of the credentials (unknown key, bad signature, expired token), or none found.
fn is_credentials(store: &StoreError) -> bool {
    let code = store.code().unwrap_or_default();
    matches!(
        code,
        "UnrecognizedClientException"
            | "InvalidSignatureException"
            | "ExpiredTokenException"
            | "AccessDeniedException"
            | "MissingAuthenticationTokenException"
    ) || store.message().contains("credential")
}

#[cfg(test)]
mod tests {
    use super::streams_endpoint;

    #[test]
    fn the_streams_endpoint_is_the_flag_then_the_streams_variable_then_dynamodb_s() {
        let local = Some("http://127.0.0.1:8000");
        let var = || Some("http://127.0.0.1:9000".to_owned());
        assert_eq!(
            streams_endpoint(Some("http://a:1"), var(), local).as_deref(),
            Some("http://a:1")
        );
        assert_eq!(
            streams_endpoint(None, var(), local).as_deref(),
            Some("http://127.0.0.1:9000")
        );
        assert_eq!(
            streams_endpoint(None, None, local).as_deref(),
            Some("http://127.0.0.1:8000")
        );
        // empty values count as unset
        assert_eq!(
            streams_endpoint(Some(" "), Some(String::new()), local).as_deref(),
            Some("http://127.0.0.1:8000")
        );
        assert_eq!(streams_endpoint(None, None, None), None);
    }
}
