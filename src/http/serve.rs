//! The HTTP/1 server loop `Blog::serve` runs: the timeouts and the connection limit that
//! `axum::serve` leaves out.
//!
//! `axum::serve` has no header timeout: a client that opens connections and sends headers
//! slowly, or never sends the next request on a kept-alive connection, holds a connection (a file
//! descriptor and a task) for as long as it likes. Here each connection has a header timeout
//! ([`Limits::header_timeout`]: 30 s unless `BLOG_HEADER_TIMEOUT` says otherwise) to deliver a
//! request's headers, idle kept-alive connections included; the body has its own minimum rate
//! (`super::body`).
//!
//! The timeout is kept by the connection's own task, from the time the connection has waited
//! for a request. That is the same window as hyper's `header_read_timeout`: from the end of the
//! last answer to the end of the next request's headers. There is one timer per connection,
//! looked at when it fires. The hyper crate's own timeout arms a new timer for every request,
//! and that cost the front page 5 % of its throughput (BENCHMARKS.md, "The front page against
//! nginx"). In hyper's `src/proto/h1/conn.rs`, `Conn::poll_read_head` makes a `Sleep` when it
//! starts reading a head and drops it once the head is read.
//!
//! A timeout alone still lets a few hundred silent sockets take every file descriptor for 30 s,
//! and then nobody is served. So connections are counted against [`Limits::max_connections`],
//! kept below the process's descriptor limit so that one can always be accepted. At the limit,
//! the connection that has waited longest for a request is closed to make room. That is a
//! silent, trickling or idle kept-alive socket: it costs its client nothing to open another.
//! Only when every connection is working on a request is the newcomer answered 503 at once.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes, HttpBody};
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, mpsc, watch};

/// File descriptors kept out of the connection limit: the data files, the log, the outgoing
/// connections to Cosmos DB and to the identity endpoint, and one to accept and refuse with.
const RESERVED_DESCRIPTORS: usize = 64;

/// What the server allows each connection, and how many it keeps open.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    /// How long a connection may take to send a request's headers.
    pub header_timeout: Duration,
    /// The most connections served at once.
    pub max_connections: usize,
}

impl Limits {
    /// The limits of this process: `header_timeout` (the configuration's), and as many
    /// connections as its file descriptor limit leaves room for (raised to the hard limit first,
    /// see [`raise_descriptor_limit`]), less [`RESERVED_DESCRIPTORS`] and an eighth for headroom.
    pub(crate) fn of_this_process(header_timeout: Duration) -> Limits {
        let descriptors = raise_descriptor_limit();
        let max_connections =
            descriptors.saturating_sub(RESERVED_DESCRIPTORS.max(descriptors / 8)).max(1);
        Limits { header_timeout, max_connections }
    }
}

/// Raises the soft limit on open files to the hard limit, as Go's runtime and nginx's
/// `worker_rlimit_nofile` do: the soft limit is often 1024 while the hard one allows far more.
/// Returns the limit in force. Where it cannot be read, 1024 (the usual soft limit).
#[cfg(unix)]
// The standard library has no call for the open-files limit; libc's is the system's own.
#[allow(unsafe_code)]
fn raise_descriptor_limit() -> usize {
    // SAFETY: getrlimit and setrlimit only read and write the struct passed to them.
    unsafe {
        let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return 1024;
        }
        if limit.rlim_cur < limit.rlim_max {
            let raised = libc::rlimit { rlim_cur: limit.rlim_max, rlim_max: limit.rlim_max };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                limit = raised;
            }
        }
        // RLIM_INFINITY, or anything beyond what a process can really open.
        usize::try_from(limit.rlim_cur).unwrap_or(usize::MAX).min(1 << 20)
    }
}

#[cfg(not(unix))]
fn raise_descriptor_limit() -> usize {
    1024
}

/// Serves `router` on `listener` until `shutdown` resolves, then lets every connection finish
/// the request it is working on and returns.
pub(crate) async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let (closing, closing_seen) = watch::channel(false);
    // Every connection task holds a sender; when all are dropped, every connection is done.
    let (open, mut all_closed) = mpsc::channel::<()>(1);
    let connections = Arc::new(Connections::default());
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    if connections.count() >= limits.max_connections && !connections.evict_longest_waiting() {
                        tokio::spawn(refuse_busy(stream));
                        continue;
                    }
                    let tracked = connections.open();
                    let connection = connection(stream, router.clone(), limits.header_timeout, tracked, closing_seen.clone());
                    let open = open.clone();
                    let connections = connections.clone();
                    tokio::spawn(async move {
                        let id = connection.await;
                        connections.close(id);
                        drop(open);
                    });
                }
                // Out of file descriptors after all (the reserve was used elsewhere), or a
                // connection reset before it was accepted: the listener itself is fine; make room
                // and pause a moment rather than spin.
                Err(error) => {
                    tracing::warn!(%error, "cannot accept a connection");
                    connections.evict_longest_waiting();
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

/// The open connections, and what each is doing.
#[derive(Default)]
struct Connections {
    next_id: AtomicU64,
    open: Mutex<HashMap<u64, Arc<Tracked>>>,
}

/// One connection, as [`Connections`] sees it.
struct Tracked {
    id: u64,
    /// Requests being answered on it, from their whole headers to the last of their answer's
    /// body (hyper serves HTTP/1 requests one at a time: 0 or 1).
    in_flight: AtomicUsize,
    /// Since when it has waited for a request: its opening, or the end of its last answer.
    waiting_since: Mutex<Instant>,
    /// Told when the server needs its descriptor back.
    evict: Notify,
}

impl Tracked {
    /// When the connection's wait for a request's headers runs out, if it is waiting for one;
    /// `None` if that time has passed.
    fn wait_ends(&self, header_timeout: Duration) -> Option<Instant> {
        let waiting_since = *self.waiting_since.lock().expect("never poisoned");
        let now = Instant::now();
        if self.in_flight.load(Ordering::Acquire) > 0 {
            return Some(now + header_timeout);
        }
        Some(waiting_since + header_timeout).filter(|ends| *ends > now)
    }
}

impl Connections {
    fn count(&self) -> usize {
        self.open.lock().expect("never poisoned").len()
    }

    fn open(&self) -> Arc<Tracked> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let tracked = Arc::new(Tracked {
            id,
            in_flight: AtomicUsize::new(0),
            waiting_since: Mutex::new(Instant::now()),
            evict: Notify::new(),
        });
        self.open.lock().expect("never poisoned").insert(id, tracked.clone());
        tracked
    }

    fn close(&self, id: u64) {
        self.open.lock().expect("never poisoned").remove(&id);
    }

    /// Closes the connection that has waited longest for a request, if any is waiting; `false`
    /// when every connection is working on one. It leaves the count at once, so that the next
    /// accept does not pick it again while it closes.
    fn evict_longest_waiting(&self) -> bool {
        let mut open = self.open.lock().expect("never poisoned");
        let victim = open
            .values()
            .filter(|tracked| tracked.in_flight.load(Ordering::Acquire) == 0)
            .min_by_key(|tracked| *tracked.waiting_since.lock().expect("never poisoned"))
            .map(|tracked| tracked.id);
        let Some(tracked) = victim.and_then(|id| open.remove(&id)) else { return false };
        tracked.evict.notify_one();
        true
    }
}

/// Marks its connection as working on a request while it lives: in the answer's body, which
/// hyper drops once it has the last of it.
struct Busy(Arc<Tracked>);

impl Busy {
    fn start(tracked: &Arc<Tracked>) -> Busy {
        tracked.in_flight.fetch_add(1, Ordering::AcqRel);
        Busy(tracked.clone())
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        *self.0.waiting_since.lock().expect("never poisoned") = Instant::now();
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// An answer's body, with its connection marked as working on the request until the body is
/// done.
struct Answering {
    body: Body,
    _busy: Busy,
}

impl HttpBody for Answering {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, axum::Error>>> {
        std::pin::Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}

/// Serves one connection until it closes, is evicted, waits too long for a request's headers,
/// or the server shuts down; returns its id.
async fn connection(
    stream: TcpStream,
    router: Router,
    header_timeout: Duration,
    tracked: Arc<Tracked>,
    mut closing: watch::Receiver<bool>,
) -> u64 {
    let inner = TowerToHyperService::new(router);
    let marker = tracked.clone();
    let service = hyper::service::service_fn(move |request| {
        let busy = Busy::start(&marker);
        let answer = hyper::service::Service::call(&inner, request);
        async move {
            let response = answer.await?;
            Ok::<_, std::convert::Infallible>(response.map(|body| Answering { body, _busy: busy }))
        }
    });
    // hyper's own header timeout is off: this task keeps it (see the module's doc).
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.header_read_timeout(None);
    let connection = builder.serve_connection(TokioIo::new(stream), service);
    tokio::pin!(connection);
    let closed = async move {
        let _ = closing.wait_for(|closing| *closing).await;
    };
    tokio::pin!(closed);
    let wait_ends = tokio::time::sleep(header_timeout);
    tokio::pin!(wait_ends);
    loop {
        tokio::select! {
            _ = connection.as_mut() => break,
            () = wait_ends.as_mut() => match tracked.wait_ends(header_timeout) {
                Some(ends) => wait_ends.as_mut().reset(ends.into()),
                // Dropped: the socket is closed, as hyper closes it when its own timeout fires.
                None => break,
            },
            () = tracked.evict.notified() => {
                // Chosen while it waited for a request; if one has just begun, it is answered
                // and the connection closed after it.
                if tracked.in_flight.load(Ordering::Acquire) == 0 {
                    break;
                }
                connection.as_mut().graceful_shutdown();
            }
            () = &mut closed => {
                connection.as_mut().graceful_shutdown();
                let _ = connection.await;
                break;
            }
        }
    }
    tracked.id
}

/// Answers a connection the server has no room for: 503 with a problem body, then closes it.
/// The request's head is read first: HTTP clients take an answer that comes before their
/// request for a broken connection, not for an answer. All of it is bounded by one second, so
/// that a client that sends or reads nothing cannot hold the descriptor.
async fn refuse_busy(mut stream: TcpStream) {
    const BODY: &str = r#"{"type":"about:blank","title":"Service Unavailable","status":503,"detail":"The server has as many connections open as it can serve, all working on requests; retry in a moment."}"#;
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/problem+json\r\ncontent-length: {}\r\nretry-after: 1\r\nconnection: close\r\n\r\n{BODY}",
        BODY.len()
    );
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        let mut head = Vec::with_capacity(1024);
        let mut chunk = [0u8; 1024];
        while !head.windows(4).any(|window| window == b"\r\n\r\n") && head.len() < 16 * 1024 {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(read) => head.extend_from_slice(&chunk[..read]),
            }
        }
        let _ = stream.write_all(answer.as_bytes()).await;
        let _ = stream.shutdown().await;
    })
    .await;
}
