//! `handler`: the executable the Azure Functions host starts (see `host.json`), and the one
//! `cargo run` starts locally on the embedded store.

use std::io::IsTerminal;
use std::process::ExitCode;

use blog::Blog;
use blog::changefeed::FeedError;
use blog::config::{Backend, Config};
use blog::cosmos::StoreError;
use tracing_subscriber::EnvFilter;

/// Why the handler stopped, with the cause of each step (see [`report`]).
#[derive(Debug, thiserror::Error)]
enum HandlerError {
    /// A setting, a command or its arguments are wrong: the message says what to write.
    #[error("{0}")]
    Usage(String),
    #[error("cannot listen on {address}")]
    Listen {
        address: std::net::SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot open the store")]
    Store(#[from] StoreError),
    #[error("{what} failed")]
    Feed {
        what: &'static str,
        #[source]
        source: FeedError,
    },
    #[error("the server failed")]
    Serve(#[source] std::io::Error),
    #[error("{0}")]
    Smoke(String),
}

/// An error and its causes on one line, each cause once (a cause whose text its error already
/// shows is not repeated).
fn report(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// The SDK logs every request at `info`; our own per-request line says what matters.
const DEFAULT_LOG_FILTER: &str = "info,azure_core=warn,azure_data_cosmos=warn,azure_data_cosmos_driver=warn";

/// The stack of each of the runtime's worker threads.
const WORKER_STACK_BYTES: usize = 8 << 20;

fn main() -> ExitCode {
    blog::quiet_library_backtraces();
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        // The SDK's calls nest deep: a debug build (`cargo run`) overflowed Tokio's default
        // 2 MiB worker stacks in the change-feed processors. Untouched stack costs no memory.
        .thread_stack_size(WORKER_STACK_BYTES)
        .build()
        .expect("a Tokio runtime")
        .block_on(handler())
}

async fn handler() -> ExitCode {
    let under_host = std::env::var_os("FUNCTIONS_CUSTOMHANDLER_PORT").is_some();
    // Log lines are written by a thread of their own, a batch at a time, off the request path
    // (see `blog::logging`). The guard writes what is waiting when `handler` returns.
    let (stdout, _flush_on_exit) = blog::logging::batched(std::io::stdout());
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_LOG_FILTER));
    let lines = tracing_subscriber::fmt().with_env_filter(filter).with_writer(stdout);
    // Colour only for a person at a terminal, in `tracing-subscriber`'s own format. The host
    // captures stdout into its own log stream, and a file or a pipe keeps the codes as noise:
    // there the same layout is written without them, by the cheaper `LineFormat`.
    if !under_host && std::env::var_os("NO_COLOR").is_none() && std::io::stdout().is_terminal() {
        lines.with_ansi(true).init();
    } else {
        lines.with_ansi(false).event_format(blog::logging::LineFormat).init();
    }

    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            tracing::error!("{}", report(&error));
            ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), HandlerError> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // The smoke test talks to a blog over HTTP: it needs none of the blog's own settings.
    if args.first().map(String::as_str) == Some("smoke") {
        return smoke(&args[1..]).await;
    }
    let config = Config::from_env().map_err(HandlerError::Usage)?;
    match args.first().map(String::as_str) {
        None => serve(config).await,
        Some("rebuild-copies") => rebuild_copies(config).await,
        Some("dead-letters") => dead_letters(config, args.get(1).map(String::as_str)).await,
        Some(other) => Err(HandlerError::Usage(format!(
            "unknown command {other:?}; `handler` serves, `handler rebuild-copies` rebuilds the copies, \
             `handler dead-letters [replay]` lists (or replays) the changes the change-feed functions set aside, \
             `handler smoke <base-url>` checks a running blog"
        ))),
    }
}

/// `handler smoke <base-url> [--token … | --dev-user …]`: see [`blog::smoke`].
async fn smoke(args: &[String]) -> Result<(), HandlerError> {
    let options =
        blog::smoke::Options::parse(args, std::env::var(blog::smoke::TOKEN_VARIABLE).ok()).map_err(HandlerError::Usage)?;
    let mut out = std::io::stdout();
    blog::smoke::run(&options, &mut out).await.map(drop).map_err(|failure| HandlerError::Smoke(failure.to_string()))
}

async fn serve(config: Config) -> Result<(), HandlerError> {
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(|source| HandlerError::Listen { address: config.listen, source })?;
    let blog = Blog::open(&config).await?;
    match &config.backend {
        Backend::Embedded { data_dir } => {
            tracing::info!(data = %data_dir.display(), "embedded store (the SDK's in-memory emulator, kept in SQLite)")
        }
        Backend::ConnectionString(_) => {
            tracing::info!("Cosmos DB account from the {} connection string", blog::config::CONNECTION_SETTING)
        }
        Backend::Endpoint { endpoint, .. } => tracing::info!(%endpoint, "Cosmos DB account with Entra ID"),
    }
    tracing::info!(change_feed = ?config.change_feed, "change-feed functions");
    let address = listener.local_addr().map_err(|source| HandlerError::Listen { address: config.listen, source })?;
    tracing::info!("serving on http://{address}/ (the JSON API under /api)");
    blog.serve(listener, shutdown_signal()).await.map_err(HandlerError::Serve)
}

/// `handler rebuild-copies`: delivers the whole `users` change feed to `UsersChangeFeed` (names
/// carried onto items, and reserved), then the whole `posts` change feed to `PostsChangeFeed`,
/// which (re)builds every short copy in `users` and `feed`.
async fn rebuild_copies(config: Config) -> Result<(), HandlerError> {
    let state = blog::connect(&config).await?;
    let users = blog::changefeed::processor::replay_users(&state)
        .await
        .map_err(|source| HandlerError::Feed { what: "the replay of users", source })?;
    tracing::info!(users, "users replayed: names carried and reserved");
    let posts = blog::changefeed::processor::rebuild_copies(&state)
        .await
        .map_err(|source| HandlerError::Feed { what: "the rebuild of the copies", source })?;
    tracing::info!(posts, "copies rebuilt from posts");
    Ok(())
}

/// `handler dead-letters`: prints every change the change-feed functions set aside, one JSON
/// object per line; `handler dead-letters replay` delivers each again and removes those that
/// now apply.
async fn dead_letters(config: Config, action: Option<&str>) -> Result<(), HandlerError> {
    use blog::changefeed::dead_letters;
    let state = blog::connect(&config).await?;
    match action {
        None => {
            for letter in dead_letters::list(&state.store).await? {
                println!("{}", dead_letters::describe(&letter));
            }
            Ok(())
        }
        Some("replay") => {
            let (applied, kept) = dead_letters::replay(&state)
                .await
                .map_err(|source| HandlerError::Feed { what: "the replay of the dead letters", source })?;
            tracing::info!(applied, kept, "dead letters replayed: the applied ones are removed");
            Ok(())
        }
        Some(other) => Err(HandlerError::Usage(format!(
            "unknown action {other:?}: `handler dead-letters` lists, `handler dead-letters replay` replays"
        ))),
    }
}

/// Ctrl-C locally; SIGTERM from a service manager or a container's stop. (The Functions host
/// does not send it: it ends its worker with `Process.Kill()`, SIGKILL on Linux, in
/// `WorkerProcess.Dispose`, azure-functions-host `src/WebJobs.Script/Workers/ProcessManagement/
/// WorkerProcess.cs`; then no shutdown code runs, as under `kill -9`.)
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        if let Ok(mut signal) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            signal.recv().await;
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! { () = ctrl_c => {}, () = terminate => {} }
    tracing::info!("shutting down");
}
