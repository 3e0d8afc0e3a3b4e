//! One log line per request, and the Cosmos cost of each request in its response headers:
//! `x-ms-request-charge` (RU) and `x-cosmos-operations` (database round trips).

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;

use crate::cosmos::Meter;

pub async fn per_request(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| request.uri().path().to_owned(), |path| path.as_str().to_owned());
    let meter = Arc::new(Meter::default());
    let mut response = meter.clone().measure(next.run(request)).await;

    let (charge, operations) = meter.totals();
    let headers = response.headers_mut();
    headers.insert("x-ms-request-charge", HeaderValue::from_str(&format!("{charge:.2}")).expect("a number is a header value"));
    headers.insert("x-cosmos-operations", HeaderValue::from(operations));
    tracing::info!(
        target: "blog::http",
        %method,
        route,
        status = response.status().as_u16(),
        ru = format_args!("{charge:.2}"),
        operations,
        latency_ms = format_args!("{:.1}", started.elapsed().as_secs_f64() * 1000.0),
        "request"
    );
    response
}
