//! `handler`: the executable the Azure Functions host starts (see `host.json`), and the one
//! `cargo run` starts locally on the embedded store.

// The commands that are `handler`'s alone sit with the binary, not in the library. Nothing but
// `main` calls them, so the library's surface holds only what the binary, the benches and the
// tests share. That is ripgrep's layout: the executable's code in the executable.
mod cli;
mod commands;
mod cost;
mod progress;
mod smoke;

use std::io::IsTerminal;
use std::process::ExitCode;

use blog::Blog;
use blog::FeedError;
use blog::{Backend, Config};
use blog::{OpenError, StoreError};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::writer::MakeWriterExt;

use cli::{Cli, Command};
use commands::maintain;
use progress::Progress;

/// Why the handler stopped, with the cause of each step (written by `blog::with_causes`).
#[derive(Debug, thiserror::Error)]
enum HandlerError {
    /// A setting is wrong: the error says which and what to write.
    #[error(transparent)]
    Usage(#[from] blog::ConfigError),
    #[error("cannot listen on {address}")]
    Listen {
        address: std::net::SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot open the store")]
    Open(#[from] OpenError),
    // The same words as `Open`, as before the two were apart: a maintenance command's store
    // calls (`dead-letters`, `lag`) fail through it, and their messages stay as they were.
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
    #[error("cannot write the output")]
    Output(#[source] std::io::Error),
    #[error("{}", .path.display())]
    File {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Transfer(#[from] blog::TransferError),
    #[cfg(feature = "embedded")]
    #[error(transparent)]
    Repair(#[from] blog::RepairError),
}

/// The SDKs log every request at `info` (the Blob Storage client's through `typespec_client_core`,
/// one line per failed try); our own per-request line and warnings say what matters.
const DEFAULT_LOG_FILTER: &str = "info,azure_core=warn,azure_data_cosmos=warn,azure_data_cosmos_driver=warn,azure_storage_blob=warn,typespec_client_core=warn";

/// The stack of each of the runtime's worker threads.
const WORKER_STACK_BYTES: usize = 8 << 20;

// The two settings that must be made before any thread starts are `unsafe` calls (see each).
#[allow(unsafe_code)]
fn main() -> ExitCode {
    // SAFETY: the first statement of `main`: no runtime and no other thread exist yet.
    unsafe { blog::quiet_library_backtraces() };
    // SAFETY: still before any other thread starts.
    #[cfg(feature = "embedded")]
    unsafe {
        blog::purge_freed_memory_at_once()
    };
    // Help, the version and clap's usage errors end the process here, before anything starts.
    let Cli { command } = clap::Parser::parse();
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        // The SDK's calls nest deep: a debug build (`cargo run`) overflowed Tokio's default
        // 2 MiB worker stacks in the change-feed processors. Untouched stack costs no memory.
        .thread_stack_size(WORKER_STACK_BYTES)
        .build()
        .expect("a Tokio runtime")
        .block_on(handler(command.unwrap_or(Command::Serve)))
}

async fn handler(command: Command) -> ExitCode {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_LOG_FILTER));
    let lines = tracing_subscriber::fmt().with_env_filter(filter);
    let maintenance = match command {
        Command::Maintenance(maintenance) => maintenance,
        Command::Serve => return serving(lines).await,
    };
    // A command's stdout is its output (JSON lines, the smoke test's report): its log lines,
    // progress and summary go to stderr, with colour for a person at a terminal.
    let stderr = Progress::stderr();
    let lines = lines.with_writer(stderr.clone());
    if std::env::var_os("NO_COLOR").is_none() && std::io::stderr().is_terminal() {
        lines.with_ansi(true).init();
    } else {
        lines.with_ansi(false).event_format(blog::LineFormat).init();
    }
    match maintain(maintenance, &stderr).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            stderr.line(&format!("error: {}", blog::with_causes(&error)));
            ExitCode::FAILURE
        }
    }
}

/// The log's settings, before they say where lines go.
type LogLines = tracing_subscriber::fmt::SubscriberBuilder<
    tracing_subscriber::fmt::format::DefaultFields,
    tracing_subscriber::fmt::format::Format,
    EnvFilter,
>;

/// Serves until stopped, logging as the Functions host expects.
async fn serving(lines: LogLines) -> ExitCode {
    // Serving, the log is stdout, as the Functions host expects: it captures a custom handler's
    // stdout into its own log stream. Log lines are written by a thread of their own, a batch
    // at a time, off the request path (see `blog::batched`). The guard writes what is waiting
    // when `handler` returns. Warnings and errors go to stderr, so that errors reach
    // Application Insights as errors. The Functions host logs each stderr line of a custom
    // handler as an error (as a warning where the line says "warn", as ours do), and each
    // stdout line as information. See azure-functions-host
    // `WorkerProcess.ParseErrorMessageAndLog`, with
    // `HttpWorkerDescription.UseStdErrorStreamForErrorsOnly`.
    let under_host = std::env::var_os("FUNCTIONS_CUSTOMHANDLER_PORT").is_some();
    let (stdout, _flush_on_exit) = blog::batched(std::io::stdout());
    let (stderr, _flush_errors_on_exit) = blog::batched(std::io::stderr());
    let lines = lines.with_writer(
        stderr
            .with_max_level(tracing::Level::WARN)
            .and(stdout.with_min_level(tracing::Level::INFO)),
    );
    // Colour only for a person at a terminal, in `tracing-subscriber`'s own format. The host
    // captures stdout into its own log stream, and a file or a pipe keeps the codes as noise:
    // there the same layout is written without them, by the cheaper `LineFormat`.
    if !under_host && std::env::var_os("NO_COLOR").is_none() && std::io::stdout().is_terminal() {
        lines.with_ansi(true).init();
    } else {
        lines.with_ansi(false).event_format(blog::LineFormat).init();
    }
    match serve().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            tracing::error!("{}", blog::with_causes(&error));
            ExitCode::FAILURE
        }
    }
}

async fn serve() -> Result<(), HandlerError> {
    let config = Config::from_env().map_err(HandlerError::Usage)?;
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(|source| HandlerError::Listen { address: config.listen, source })?;
    let blog = Blog::open(&config).await?;
    match &config.backend {
        Backend::Embedded { data_dir } => {
            tracing::info!(data = %data_dir.display(), "embedded store (the SDK's in-memory emulator, kept in SQLite)")
        }
        Backend::ConnectionString(_) => {
            tracing::info!(
                "Cosmos DB account from the {} connection string",
                blog::CONNECTION_SETTING
            )
        }
        Backend::Endpoint { endpoint, .. } => {
            tracing::info!(%endpoint, "Cosmos DB account with Entra ID")
        }
    }
    tracing::info!(change_feed = ?config.change_feed, "change-feed functions");
    let address = listener
        .local_addr()
        .map_err(|source| HandlerError::Listen { address: config.listen, source })?;
    tracing::info!("serving on http://{address}/ (the JSON API under /api)");
    blog.serve(listener, shutdown_signal()).await.map_err(HandlerError::Serve)
}

/// Ctrl-C locally; SIGTERM from a service manager or a container's stop. The Functions host
/// does not send it. It ends its worker with `Process.Kill()`, SIGKILL on Linux, in
/// `WorkerProcess.Dispose` (azure-functions-host
/// `src/WebJobs.Script/Workers/ProcessManagement/WorkerProcess.cs`). Then no shutdown code
/// runs, as under `kill -9`.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        if let Ok(mut signal) =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        {
            signal.recv().await;
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! { () = ctrl_c => {}, () = terminate => {} }
    tracing::info!("shutting down");
}
