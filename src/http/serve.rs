//! The HTTP/1 server loop, with the timeouts `axum::serve` leaves out.
//!
//! `axum::serve` gives hyper no timer, so hyper's header read timeout never fires: a client that
//! opens connections and sends headers slowly, or never sends the next request on a kept-alive
//! connection, holds a connection (a file descriptor and a task) for as long as it likes. Here
//! each connection has [`HEADER_TIMEOUT`] to deliver a request's headers, idle kept-alive
//! connections included (hyper starts the same timer while it waits for the next request); the
//! body has its own deadline in the admission layer (`super::BODY_TIMEOUT`).

use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};

/// How long a connection may take to deliver a request's headers, or stay idle between requests.
/// Longer than the idle time after which .NET's HTTP client (the Functions host's) stops reusing
/// a pooled connection would be safest; 30 s is hyper's own default for this timeout.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(30);

/// Serves `router` on `listener` until `shutdown` resolves, then lets every connection finish
/// the request it is working on and returns.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    header_timeout: Duration,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let (closing, closing_seen) = watch::channel(false);
    // Every connection task holds a sender; when all are dropped, every connection is done.
    let (open, mut all_closed) = mpsc::channel::<()>(1);
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let connection = connection(stream, router.clone(), header_timeout, closing_seen.clone());
                    let open = open.clone();
                    tokio::spawn(async move {
                        connection.await;
                        drop(open);
                    });
                }
                // Out of file descriptors, or a connection reset before it was accepted: the
                // listener itself is fine; pause a moment rather than spin.
                Err(error) => {
                    tracing::warn!(%error, "cannot accept a connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            () = &mut shutdown => break,
        }
    }
    drop(listener);
    let _ = closing.send(true);
    drop(open);
    let _ = all_closed.recv().await;
    Ok(())
}

async fn connection(stream: tokio::net::TcpStream, router: Router, header_timeout: Duration, mut closing: watch::Receiver<bool>) {
    let service = TowerToHyperService::new(router);
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(header_timeout);
    let connection = builder.serve_connection(TokioIo::new(stream), service);
    tokio::pin!(connection);
    let closed = async move {
        let _ = closing.wait_for(|closing| *closing).await;
    };
    tokio::select! {
        _ = connection.as_mut() => {}
        () = closed => {
            connection.as_mut().graceful_shutdown();
            let _ = connection.await;
        }
    }
}
