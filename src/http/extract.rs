//! Extractors that turn every malformed request into a problem+json answer with a useful detail
//! (axum's own rejections answer plain text).

use axum::extract::{FromRequest, FromRequestParts, Path, Request};
use axum::http::header;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};

use super::error::ApiError;
use crate::model::{MAX_ID_BYTES, validate_id};

/// The ids [`crate::model::validate_id`] accepts, as a JSON Schema pattern: printable ASCII but
/// `/ \ ? # %` and space, not `.` or `..` alone, not starting with `request-`. The one place
/// the API's description states it.
pub const ID_PATTERN: &str = r#"^(?!\.{1,2}$)(?!request-)[!"$&-.0->@-\[\]-~]+$"#;

/// The schema of an item's id, wherever one is taken: a path segment or a body's `userId`.
pub(crate) fn item_id() -> Schema {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .min_length(Some(1))
        .max_length(Some(MAX_ID_BYTES))
        .pattern(Some(ID_PATTERN))
        .into()
}

/// The largest request body accepted. The longest valid body (a post at the field limits) is far
/// below it; anything bigger is refused before it is read whole.
pub(crate) const MAX_BODY_BYTES: usize = 256 * 1024;

/// A JSON request body, parsed strictly: the body types deny unknown fields, and every error
/// names what is wrong.
pub(crate) struct JsonBody<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        let headers = request.headers().clone();
        let bytes = axum::body::Bytes::from_request(request, state).await.map_err(|rejection| {
            ApiError::new(
                rejection.status(),
                format!("The request body could not be read: {}", rejection.body_text()),
            )
        })?;
        if bytes.is_empty() {
            return Err(missing_body(&headers));
        }
        check_json_media_type(&headers)?;
        serde_json::from_slice(&bytes).map(JsonBody).map_err(|error| {
            ApiError::bad_request(format!("The request body is not valid: {error}."))
        })
    }
}

/// Why a write arrived without a body. Under the Functions host the likely cause is the
/// client's framing. The host copies a request's body only when its `Content-Length` is above 0
/// (azure-functions-host `DefaultHttpWorkerService`, forwarding). So a chunked body is dropped
/// on the way and its `Transfer-Encoding` header arrives alone.
fn missing_body(headers: &axum::http::HeaderMap) -> ApiError {
    let declared_empty = headers.get(header::CONTENT_LENGTH).is_some_and(|length| length == "0");
    if declared_empty {
        ApiError::bad_request(
            "The request body is empty; this request needs a JSON body (see the API table in docs/api.md).",
        )
    } else {
        ApiError::new(
            axum::http::StatusCode::LENGTH_REQUIRED,
            "The request arrived without its body. Send the JSON body with a Content-Length header, not chunked: \
             the Azure Functions host forwards a request's body only when its Content-Length is above 0.",
        )
    }
}

/// 415 unless the body is declared JSON (`application/json` or `+json`), in UTF-8: JSON
/// exchanged between systems is UTF-8 (RFC 8259), so another declared charset is refused rather
/// than misread.
fn check_json_media_type(headers: &axum::http::HeaderMap) -> Result<(), ApiError> {
    let content_type =
        headers.get(header::CONTENT_TYPE).and_then(|value| value.to_str().ok()).unwrap_or("");
    let mut parts = content_type.split(';');
    let mime = parts.next().unwrap_or("").trim().to_ascii_lowercase();
    if mime != "application/json" && !mime.ends_with("+json") {
        return Err(ApiError::new(
            axum::http::StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "The body must be JSON, sent with Content-Type: application/json.",
        ));
    }
    for parameter in parts {
        if let Some((name, value)) = parameter.split_once('=')
            && name.trim().eq_ignore_ascii_case("charset")
            && !value.trim().trim_matches('"').eq_ignore_ascii_case("utf-8")
        {
            return Err(ApiError::new(
                axum::http::StatusCode::UNSUPPORTED_MEDIA_TYPE,
                format!("The body must be UTF-8 JSON; it was declared {}.", value.trim()),
            ));
        }
    }
    Ok(())
}

/// The one id in a route (`{user_id}` or `{post_id}`), checked to be one Cosmos can store.
pub(crate) struct Id(pub String);

impl<S: Send + Sync> FromRequestParts<S> for Id {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let Path(id) =
            Path::<String>::from_request_parts(parts, state).await.map_err(|rejection| {
                ApiError::bad_request(format!(
                    "The id in the path is not valid: {}",
                    rejection.body_text()
                ))
            })?;
        validate_id(&id).map_err(|why| ApiError::bad_request(why.to_string()))?;
        Ok(Id(id))
    }
}

/// The two ids of a nested route (`posts/{postId}/comments/{commentId}`, in route order), each
/// checked as [`Id`] checks one.
pub(crate) struct Ids(pub String, pub String);

impl<S: Send + Sync> FromRequestParts<S> for Ids {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let Path((first, second)) = Path::<(String, String)>::from_request_parts(parts, state)
            .await
            .map_err(|rejection| {
                ApiError::bad_request(format!(
                    "An id in the path is not valid: {}",
                    rejection.body_text()
                ))
            })?;
        validate_id(&first)
            .and_then(|()| validate_id(&second))
            .map_err(|why| ApiError::bad_request(why.to_string()))?;
        Ok(Ids(first, second))
    }
}

/// A query string parsed strictly into `T` (which denies unknown parameters).
pub(crate) struct QueryParams<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for QueryParams<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        parse_query(parts.uri.query().unwrap_or_default(), |_| true).map(QueryParams)
    }
}

/// Parses `query` into `T`, keeping only the parameters `keep` accepts; each kept one must be
/// given once.
pub(crate) fn parse_query<T: DeserializeOwned>(
    query: &str,
    keep: impl Fn(&str) -> bool,
) -> Result<T, ApiError> {
    let invalid =
        |why: String| ApiError::bad_request(format!("The query string is not valid: {why}"));
    let pairs: Vec<(String, String)> =
        serde_urlencoded::from_str(query).map_err(|error| invalid(error.to_string()))?;
    let kept: Vec<(String, String)> = pairs.into_iter().filter(|(key, _)| keep(key)).collect();
    // Locally a repeated key arrives as it was sent; under the Functions host it arrives
    // once, its values joined by commas (the host rebuilds the query from its parsed form).
    // Either way one value is expected.
    let mut seen = std::collections::BTreeSet::new();
    if let Some((key, _)) = kept.iter().find(|(key, _)| !seen.insert(key.as_str())) {
        return Err(invalid(format!("`{key}` is given more than once; give each parameter once.")));
    }
    let kept = serde_urlencoded::to_string(&kept).map_err(|error| invalid(error.to_string()))?;
    serde_urlencoded::from_str(&kept).map_err(|error| invalid(format!("{error}.")))
}

/// The names of the fields a struct deserializes, as serde's derive lists them (the `fields`
/// it passes to `deserialize_struct`): what a lenient parser may keep of a query string.
pub(crate) fn field_names<T: DeserializeOwned>() -> &'static [&'static str] {
    use serde::de::{self, Deserializer, Visitor};

    struct Fields(Option<&'static [&'static str]>);
    #[derive(Debug)]
    struct Seen;
    impl std::fmt::Display for Seen {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("fields seen")
        }
    }
    impl std::error::Error for Seen {}
    impl de::Error for Seen {
        fn custom<M: std::fmt::Display>(_: M) -> Self {
            Seen
        }
    }
    impl<'de> Deserializer<'de> for &mut Fields {
        type Error = Seen;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Seen> {
            Err(Seen)
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Seen> {
            self.0 = Some(fields);
            Err(Seen)
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
            unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
        }
    }
    let mut fields = Fields(None);
    let _ = T::deserialize(&mut fields);
    fields.0.unwrap_or(&[])
}

/// The header that makes a write once, as the OpenAPI description lists it beside each write
/// (`app::idempotency`; read by the [`crate::app::Caller`] extractor).
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Header)]
#[allow(dead_code)]
pub(crate) struct IdempotencyKeyHeader {
    /// A new random value (a UUID) with each write, and the same value when the write is sent
    /// again. A write repeated with its key within a day is made once, and answered as the
    /// first time (the item as it is now). The same key with another request is 422.
    #[param(rename = "Idempotency-Key", min_length = 1, max_length = 255, pattern = "^[ -~]+$")]
    idempotency_key: Option<String>,
}
