//! The front door's tests.

use super::FrontDoor;
use super::request_log::{Hundredths, Tenths, trace_id};
use crate::config::AuthMode;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use tower::ServiceExt;

/// The trace id is read from a `traceparent` as W3C Trace Context writes it, and only then.
#[test]
fn the_trace_id_is_read_from_a_well_formed_traceparent_only() {
    let id = "4bf92f3577b34da6a3ce929d0e0e4736";
    assert_eq!(trace_id(&format!("00-{id}-00f067aa0ba902b7-01")), Some(id));
    for bad in [
        "",
        "00",
        "00-4bf92f35-00f067aa0ba902b7-01",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
    ] {
        assert_eq!(trace_id(bad), None, "{bad}");
    }
    assert_eq!(trace_id(&format!("00-{id}-not-hex")), None);
}

async fn panics() -> &'static str {
    panic!("a bug in a handler")
}

/// A route that panics gets the 500 any failure gets, through the same layer `main`'s router
/// has, and the connection's next request is served.
#[tokio::test]
async fn a_route_that_panics_is_answered_500_as_a_problem() {
    let router = axum::Router::new()
        .route("/panics", axum::routing::get(panics))
        .route("/works", axum::routing::get(|| async { "fine" }))
        .layer(FrontDoor::new(
            super::super::Serving {
                max_in_flight: 4,
                request_timeout: crate::config::DEFAULT_REQUEST_TIMEOUT,
                host_change_feed: false,
                uploads: super::super::UploadBuffers::new(1 << 20, super::super::MAX_UPLOAD_BYTES),
                public_url: crate::config::PublicUrl::of_listener(
                    "127.0.0.1:7071".parse().unwrap(),
                ),
                requests: Default::default(),
            },
            AuthMode::None,
        ));
    let answer =
        router.clone().oneshot(Request::get("/panics").body(Body::empty()).unwrap()).await.unwrap();
    assert_eq!(answer.status(), StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(answer.headers()[header::CONTENT_TYPE], "application/problem+json");
    let body = axum::body::to_bytes(answer.into_body(), 4096).await.unwrap();
    assert!(
        !String::from_utf8_lossy(&body).contains("a bug in a handler"),
        "the panic's text stays in the log"
    );
    let next = router.oneshot(Request::get("/works").body(Body::empty()).unwrap()).await.unwrap();
    assert_eq!(
        next.status(),
        StatusCode::OK,
        "the place the panicking request took was given back"
    );
}

#[test]
fn decimals_are_written_as_the_float_formatting_wrote_them() {
    for (charge, written) in
        [(0.0, "0.00"), (1.0, "1.00"), (2.857, "2.86"), (10.5, "10.50"), (1234.004, "1234.00")]
    {
        assert_eq!(Hundredths((charge * 100.0_f64).round() as u64).to_string(), written);
        assert_eq!(format!("{charge:.2}"), written);
    }
    assert_eq!(Tenths(0).to_string(), "0.0");
    assert_eq!(Tenths(65).to_string(), "6.5");
    assert_eq!(Tenths(12_340).to_string(), "1234.0");
}
