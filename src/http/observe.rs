//! One log line per request, and the Cosmos cost of each request in its response headers:
//! `x-ms-request-charge` (RU), `x-cosmos-operations` (database round trips) and
//! `x-cosmos-partitions` (the logical partitions they touched, per container: `users=1, posts=1`;
//! `posts=*` for a query across all partitions; absent when the request touched none).

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
    // Most page views touch no store (the caches answer them): no formatting for those.
    let charge_header = if operations == 0 && charge == 0.0 {
        HeaderValue::from_static("0.00")
    } else {
        HeaderValue::from_str(&format!("{charge:.2}")).expect("a number is a header value")
    };
    headers.insert("x-ms-request-charge", charge_header);
    headers.insert("x-cosmos-operations", HeaderValue::from(operations));
    let partitions = meter.partitions().to_string();
    if !partitions.is_empty() {
        headers.insert("x-cosmos-partitions", HeaderValue::from_str(&partitions).expect("container names are header values"));
    }
    tracing::info!(
        target: "blog::http",
        %method,
        route,
        status = response.status().as_u16(),
        ru = format_args!("{charge:.2}"),
        operations,
        partitions,
        latency_ms = format_args!("{:.1}", started.elapsed().as_secs_f64() * 1000.0),
        "request"
    );
    response
}
