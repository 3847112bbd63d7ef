//! Items between `serde_dynamo` and `aws-sdk-dynamodb`, through `serde_dynamo`'s
//! `aws-sdk-dynamodb+1` conversions, and SDK errors as [`StoreError`]s.

use std::collections::HashMap;
use std::error::Error as StdError;

use aws_sdk_dynamodb::error::{BuildError, DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::types::AttributeValue as AwsValue;
use serde_dynamo::Item;

use crate::store::expression::Expr;
use crate::store::{StoreError, StoreErrorKind};

/// An SDK attribute map.
pub(super) type AwsItem = HashMap<String, AwsValue>;

/// An item as the SDK sends it.
pub(super) fn to_aws(item: Item) -> AwsItem {
    item.into()
}

/// The `ExpressionAttributeValues` of a request as the SDK sends them, or `None` when empty.
pub(super) fn values_to_aws(expr: &Expr) -> Option<AwsItem> {
    expr.values()
        .map(|values| values.into_iter().map(|(k, v)| (k, v.into())).collect())
}

/// The `ExpressionAttributeNames` and `ExpressionAttributeValues` of a request as the SDK
/// sends them, taken from `expr` (`None` when empty).
pub(super) fn substitutions_to_aws(
    mut expr: Expr,
) -> (Option<HashMap<String, String>>, Option<AwsItem>) {
    (expr.take_names(), expr.into_values(AwsValue::from))
}

/// Whether every value is of a type `serde_dynamo` knows (an SDK newer than this crate may
/// return a type it does not, and `serde_dynamo`'s conversion panics on those).
fn known(value: &AwsValue) -> bool {
    match value {
        AwsValue::M(m) => m.values().all(known),
        AwsValue::L(l) => l.iter().all(known),
        AwsValue::B(_)
        | AwsValue::Bool(_)
        | AwsValue::Bs(_)
        | AwsValue::N(_)
        | AwsValue::Ns(_)
        | AwsValue::Null(_)
        | AwsValue::S(_)
        | AwsValue::Ss(_) => true,
        _ => false,
    }
}

/// An item the SDK returned.
pub(super) fn from_aws(item: AwsItem, operation: &'static str) -> Result<Item, StoreError> {
    if let Some((name, _)) = item.iter().find(|(_, v)| !known(v)) {
        return Err(StoreError::new(
            StoreErrorKind::Conversion,
            operation,
            format!(
                "attribute `{name}` has a type this version of entity-manager does not know; upgrade it"
            ),
        ));
    }
    Ok(item.into())
}

/// Items the SDK returned.
pub(super) fn from_aws_all(
    items: Vec<AwsItem>,
    operation: &'static str,
) -> Result<Vec<Item>, StoreError> {
    items.into_iter().map(|i| from_aws(i, operation)).collect()
}

/// A request the SDK could not build (a required field missing).
pub(super) fn build_error(operation: &'static str, e: BuildError) -> StoreError {
    StoreError::new(
        StoreErrorKind::Validation,
        operation,
        format!("invalid request: {e}"),
    )
    .with_source(e)
}

/// The kind of a `DynamoDB` error code.
fn kind_of(code: &str) -> Option<StoreErrorKind> {
    Some(match code {
        "ConditionalCheckFailedException" => StoreErrorKind::ConditionalCheckFailed,
        "TransactionCanceledException" => StoreErrorKind::TransactionCanceled,
        "ProvisionedThroughputExceededException"
        | "ThrottlingException"
        | "RequestLimitExceeded"
        | "LimitExceededException" => StoreErrorKind::Throttled,
        "ValidationException" | "SerializationException" => StoreErrorKind::Validation,
        "ResourceNotFoundException" => StoreErrorKind::ResourceNotFound,
        "ResourceInUseException" => StoreErrorKind::ResourceInUse,
        "TransactionConflictException"
        | "TransactionInProgressException"
        | "InternalServerError"
        | "InternalFailure"
        | "ServiceUnavailable" => StoreErrorKind::Transient,
        _ => return None,
    })
}

/// An SDK error as a [`StoreError`].
///
/// Also for the DynamoDB Streams client, which shares the SDK's HTTP response type.
pub(crate) fn sdk_error<E>(
    operation: &'static str,
    err: SdkError<E, aws_sdk_dynamodb::config::http::HttpResponse>,
) -> StoreError
where
    E: ProvideErrorMetadata + StdError + Send + Sync + 'static,
{
    let code = err.code().map(str::to_owned);
    let kind = code.as_deref().and_then(kind_of).unwrap_or(match &err {
        SdkError::TimeoutError(_) => StoreErrorKind::Timeout,
        SdkError::DispatchFailure(failure) if failure.is_timeout() => StoreErrorKind::Timeout,
        SdkError::DispatchFailure(_) | SdkError::ResponseError(_) => StoreErrorKind::Transient,
        // a server error without a DynamoDB error code (a bare 500, 502, 503 or 504 from a
        // load balancer or proxy): nothing was done, retrying is safe
        SdkError::ServiceError(context)
            if matches!(context.raw().status().as_u16(), 500 | 502 | 503 | 504) =>
        {
            StoreErrorKind::Transient
        }
        _ => StoreErrorKind::Other,
    });
    let message = match (err.message(), &code, &err) {
        (Some(m), Some(c), _) => format!("{c}: {m}"),
        (Some(m), None, _) => m.to_owned(),
        // an answer that is not DynamoDB's (a proxy's error page, another service): what it
        // was, rather than the SDK's bare "service error"
        (None, None, SdkError::ServiceError(context)) => {
            let raw = context.raw();
            let body = raw
                .body()
                .bytes()
                .map(|b| String::from_utf8_lossy(&b[..b.len().min(200)]).into_owned())
                .unwrap_or_default();
            format!(
                "the endpoint answered HTTP {} without a DynamoDB error ({}); is it a DynamoDB endpoint?",
                raw.status().as_u16(),
                if body.trim().is_empty() {
                    "empty body".to_owned()
                } else {
                    format!("body: {}", body.trim())
                }
            )
        }
        _ => DisplayErrorContext(&err).to_string(),
    };
    let e = StoreError::new(kind, operation, message);
    let e = match code {
        Some(c) => e.with_code(c),
        None => e,
    };
    e.with_source(err)
}
