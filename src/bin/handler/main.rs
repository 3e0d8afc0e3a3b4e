//! `handler`: the executable the Azure Functions host starts (see `host.json`), and the one
//! `cargo run` starts locally on the embedded store.

// The commands that are `handler`'s alone sit with the binary, not in the library: nothing
// but `main` calls them, so the library's surface holds only what the binary, the benches
// and the tests share (ripgrep's layout: the executable's code in the executable).
mod cost;
mod progress;
mod smoke;

use std::io::IsTerminal;
use std::process::ExitCode;

use blog::Blog;
use blog::FeedError;
use blog::StoreError;
use blog::{Backend, Config};
use progress::Progress;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::writer::MakeWriterExt;

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
const DEFAULT_LOG_FILTER: &str =
    "info,azure_core=warn,azure_data_cosmos=warn,azure_data_cosmos_driver=warn,azure_storage_blob=warn,typespec_client_core=warn";

/// The stack of each of the runtime's worker threads.
const WORKER_STACK_BYTES: usize = 8 << 20;

/// What `handler --version` prints after the name: the crate's version and the git commit it
/// was built from (`build.rs`: `unknown` when built without git).
const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (git ", env!("BLOG_GIT_COMMIT"), ")");

/// Where the commands find their store, as `--help` says it: this build's choices. (Help is not
/// wrapped to the terminal, clap's `wrap_help` being left out: the lines break where written.)
#[cfg(feature = "embedded")]
const STORE_HELP: &str = "\
serve, rebuild-copies, dead-letters, lag, export and import take their settings from the
environment (README, \"Configuration\"): a Cosmos DB account with CosmosDB (a connection string) or
CosmosDB__accountEndpoint (Entra ID), else the embedded store in BLOG_DATA_DIR (default ./data),
which one process uses at a time. repair and remove work on that embedded store only, while the
blog is stopped. Serving, logs go to stdout, warnings and errors to stderr; the commands log to
stderr.";
#[cfg(not(feature = "embedded"))]
const STORE_HELP: &str = "\
serve, rebuild-copies, dead-letters, lag, export and import take their settings from the
environment (README, \"Configuration\"). This build has no embedded store: they need a Cosmos DB account, with
CosmosDB (a connection string) or CosmosDB__accountEndpoint (Entra ID). Serving, logs go to
stdout, warnings and errors to stderr; the commands log to stderr.";

/// `handler`'s command line. With no command it serves: the Functions host starts it with none
/// (`host.json`'s `arguments: []`). `--help`, `--version` and usage errors are clap's: help and
/// version on stdout (exit 0), a usage error with the usage on stderr (exit 2).
#[derive(Debug, clap::Parser)]
#[command(
    name = "handler",
    version = VERSION,
    about = "The blog's Azure Functions custom handler: serves the blog (the default), and its maintenance commands",
    after_help = STORE_HELP,
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

/// `handler`'s commands: serving, or one of the maintenance commands, which share their start
/// (settings, logs on stderr).
#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Serve the blog and its JSON API (the default: the Functions host gives no command)
    Serve,
    #[command(flatten)]
    Maintenance(Maintenance),
}

/// The commands other than serving; `handler --help` lists them after `serve`, as one list.
#[derive(Debug, clap::Subcommand)]
enum Maintenance {
    /// Rebuild every short copy in users and feed from the change feeds' beginning
    #[command(after_help = "\
Delivers the whole users change feed to UsersChangeFeed (every renamed user's name carried onto
their items again, every user's current name reserved), then the whole posts change feed to
PostsChangeFeed, which (re)builds every copy; copies already up to date are left alone.
Progress, then a summary, on stderr.")]
    RebuildCopies,
    /// Print the changes the change-feed functions set aside, one JSON object per line
    #[command(after_help = "\
Each line on stdout is {\"id\", \"function\", \"what\", \"reason\", \"setAsideAt\", \"payload\"}, and
nothing else is written there (logs go to stderr): `handler dead-letters | jq .` reads them all.")]
    DeadLetters {
        #[command(subcommand)]
        action: Option<DeadLettersAction>,
    },
    /// Check a running blog end to end, over HTTP, as its users reach it
    Smoke(smoke::Args),
    /// Say how far each change-feed function is behind: changes not delivered, and the oldest's age
    #[command(after_help = "\
On the embedded store: the changes after each local processor's saved position (run it while
the blog is stopped: one process uses the store at a time). On an account: after the positions
the Functions host's trigger keeps in its leases, or with BLOG_CHANGE_FEED=local, the account
processors'. Changes are counted by reading them, up to 10,000.")]
    Lag,
    /// Estimate what the blog costs on Azure a month, for your traffic
    #[command(after_help = "\
Request units from the article's measured charges and this blog's reads per page and caches;
Cosmos DB serverless and Flex Consumption at the list prices named in
src/bin/handler/cost.rs, with their sources and dates (check them in the Azure pricing
calculator). A Markdown table on stdout.")]
    Cost(CostArgs),
    /// Write every user, post, comment, like and picture as JSON lines
    #[command(after_help = "\
A header line, then one item a line as it is stored, users first, then each post and its
comments, likes and pictures (their bytes in base64); no copies, no deleted posts; then a last
line with what the file holds and its SHA-256. A file named is written beside itself under a
temporary name and renamed once whole: stopped (Ctrl-C, a kill), it leaves the file that was
there, or none; the next export to the same name removes the temporary file a kill left.
Progress and a summary on stderr.")]
    Export {
        /// The file to write (default: stdout)
        #[arg(long, short)]
        output: Option<std::path::PathBuf>,
    },
    /// Check a file written by `export`, load it into this store, then make the copies
    #[command(after_help = "\
First checks every line as the API checks what it writes (ids, lengths, partition keys,
authors, counters, names free here, pictures' bytes) and that the file is whole (its last line);
anything wrong is named by its line and field, and nothing is imported. Then writes each item
and picture as it is, so that an import stopped halfway is finished by running it again; then
replays the change feeds as rebuild-copies does. Standard input is copied to a temporary file
first (the file is read twice). Progress and a summary on stderr.")]
    Import {
        /// The file to read (default: stdin)
        file: Option<std::path::PathBuf>,
    },
    /// Make a stopped embedded store's data consistent after items went missing, and accept it
    #[cfg(feature = "embedded")]
    #[command(after_help = "\
What the start's refusal advises when items were deleted from blog.sqlite outside the handler.
Recounts each post's comments and likes, removes the comments, likes and copies of posts that
are gone and the reservations of users that are gone, reserves every user's name again,
rebuilds the copies, and records what is there as whole. Run it while the blog is stopped;
run it again if it was cut short (the blog refuses to start until it finishes).")]
    Repair,
    /// Remove one item of a stopped embedded store, with what depends on it, then repair
    #[cfg(feature = "embedded")]
    #[command(after_help = "\
What the start's refusal advises for an item whose bytes changed on disk. A post goes with its
comments, likes, copies and pictures; a comment or a like leaves its post's count recomputed; a
user goes with their username's reservation (their posts, comments and likes stay); a copy is
made again. Then does what `handler repair` does.")]
    Remove {
        /// The item's container
        #[arg(value_parser = ["users", "posts", "feed", "leases"])]
        container: String,
        /// The item's partition key
        #[arg(allow_hyphen_values = true)]
        partition_key: String,
        /// The item's id
        #[arg(allow_hyphen_values = true)]
        id: String,
    },
}

/// `handler cost`'s traffic.
#[derive(Debug, clap::Args)]
struct CostArgs {
    /// Page views a day; repeat for more rows [default: 10000, 100000 and 1000000]
    #[arg(long = "views-per-day", value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    views_per_day: Vec<u64>,
    /// Writes (posts, comments, likes) a day [default: one per 100 views]
    #[arg(long = "writes-per-day", value_name = "N")]
    writes_per_day: Option<u64>,
    /// The share of views that are a post's page, the rest the front page
    #[arg(long = "post-share", value_name = "SHARE", default_value_t = 0.5, value_parser = share)]
    post_share: f64,
    /// Function app instances (each keeps its own caches)
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    instances: u32,
    /// Each instance's memory in MB, as `instanceMemoryMB` deploys it
    #[arg(long = "instance-memory-mb", value_name = "MB", default_value_t = cost::DEFAULT_INSTANCE_MB, value_parser = instance_memory)]
    instance_memory_mb: u32,
    /// The share of page views a CDN answers before the function app
    #[arg(long = "cdn-hit-rate", value_name = "SHARE", default_value_t = 0.0, value_parser = share)]
    cdn_hit_rate: f64,
    /// Count Azure Front Door Standard's fees (`BLOG_FRONT_DOOR=standard`): the CDN is Front Door
    #[arg(long = "front-door")]
    front_door: bool,
    /// A `--json` file of `cargo bench --bench readers` to price views with; repeat for several
    /// rates [default: the runs in benches/results/]
    #[arg(long, value_name = "FILE", value_parser = measurement)]
    measured: Vec<cost::Measured>,
}

/// A reader-load measurement, read from its file.
fn measurement(path: &str) -> Result<cost::Measured, String> {
    let text = std::fs::read_to_string(path).map_err(|error| format!("cannot read {path}: {error}"))?;
    cost::Measured::from_json(&text).ok_or_else(|| {
        format!("{path} has no load.views_per_day and per_1000_views.view_article_ru: is it `cargo bench --bench readers -- --json`'s?")
    })
}

/// One of Flex Consumption's instance sizes.
fn instance_memory(text: &str) -> Result<u32, String> {
    match text {
        "512" => Ok(512),
        "2048" => Ok(2048),
        "4096" => Ok(4096),
        _ => Err("Flex Consumption's instance sizes are 512, 2048 and 4096 MB".into()),
    }
}

/// A share between 0 and 1.
fn share(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(share) if (0.0..=1.0).contains(&share) => Ok(share),
        _ => Err(format!("{text:?} is not a share between 0 and 1 (0.5 is half)")),
    }
}

#[derive(Debug, clap::Subcommand)]
enum DeadLettersAction {
    /// Deliver each dead letter again to its function, and remove those that now apply
    #[command(after_help = "Progress, then a summary, on stderr.")]
    Replay,
}

fn main() -> ExitCode {
    // SAFETY: the first statement of `main`: no runtime and no other thread exist yet.
    unsafe { blog::quiet_library_backtraces() };
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

/// A usage error of `subcommand` found after clap's own checks: said as clap says its own
/// (with the subcommand's usage, on stderr), and exit 2.
fn usage_error(subcommand: &str, message: String) -> ! {
    let mut cli = <Cli as clap::CommandFactory>::command();
    cli.build();
    let command = cli.find_subcommand_mut(subcommand).expect("a subcommand of handler");
    command.error(clap::error::ErrorKind::ArgumentConflict, message).exit()
}

async fn handler(command: Command) -> ExitCode {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_LOG_FILTER));
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
    // stdout into its own log stream. Log lines are written by a thread of their own, a batch at
    // a time, off the request path (see `blog::batched`). The guard writes what is waiting when
    // `handler` returns.
    // Warnings and errors go to stderr: the Functions host logs each stderr line of a custom
    // handler as an error (as a warning where the line says "warn", as ours do), and each
    // stdout line as information (azure-functions-host `WorkerProcess.ParseErrorMessageAndLog`,
    // with `HttpWorkerDescription.UseStdErrorStreamForErrorsOnly`), so that errors reach
    // Application Insights as errors.
    let under_host = std::env::var_os("FUNCTIONS_CUSTOMHANDLER_PORT").is_some();
    let (stdout, _flush_on_exit) = blog::batched(std::io::stdout());
    let (stderr, _flush_errors_on_exit) = blog::batched(std::io::stderr());
    let lines = lines.with_writer(stderr.with_max_level(tracing::Level::WARN).and(stdout.with_min_level(tracing::Level::INFO)));
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

/// Every command but `serve`; `stderr` takes their progress and summary.
async fn maintain(maintenance: Maintenance, stderr: &Progress) -> Result<(), HandlerError> {
    // Read by the commands that need them (not the smoke test, not cost): a usage error if wrong.
    let settings = Config::from_env;
    match maintenance {
        // The smoke test talks to a blog over HTTP: it needs none of the blog's own settings.
        Maintenance::Smoke(args) => {
            // The token's variable is read here, not by clap, so that `--help` never shows it.
            let token = std::env::var(smoke::TOKEN_VARIABLE).ok();
            let options = args.options(token).unwrap_or_else(|why| usage_error("smoke", why));
            smoke(&options).await
        }
        // Arithmetic on the traffic given: no store, no settings.
        Maintenance::Cost(args) => cost(&args).map_err(HandlerError::Output),
        Maintenance::RebuildCopies => rebuild_copies(settings().map_err(HandlerError::Usage)?, stderr).await,
        Maintenance::DeadLetters { action: None } => dead_letters(settings().map_err(HandlerError::Usage)?).await,
        Maintenance::DeadLetters { action: Some(DeadLettersAction::Replay) } => {
            replay_dead_letters(settings().map_err(HandlerError::Usage)?, stderr).await
        }
        Maintenance::Lag => lag(settings().map_err(HandlerError::Usage)?).await,
        Maintenance::Export { output } => export(settings().map_err(HandlerError::Usage)?, output, stderr).await,
        Maintenance::Import { file } => import(settings().map_err(HandlerError::Usage)?, file, stderr).await,
        #[cfg(feature = "embedded")]
        Maintenance::Repair => repair(settings().map_err(HandlerError::Usage)?, None, stderr).await,
        #[cfg(feature = "embedded")]
        Maintenance::Remove { container, partition_key, id } => {
            let container = blog::Container::ALL
                .into_iter()
                .find(|known| known.name() == container)
                .expect("clap accepts the containers' names only");
            repair(settings().map_err(HandlerError::Usage)?, Some(blog::ItemToRemove { container, partition_key, id }), stderr)
                .await
        }
    }
}

/// `handler smoke <base-url> [--token … | --dev-user …]`: see [`smoke`]. Its report is
/// its output, on stdout.
async fn smoke(options: &smoke::Options) -> Result<(), HandlerError> {
    let mut out = std::io::stdout();
    smoke::run(options, &mut out).await.map_err(|failure| HandlerError::Smoke(failure.to_string()))
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
            tracing::info!("Cosmos DB account from the {} connection string", blog::CONNECTION_SETTING)
        }
        Backend::Endpoint { endpoint, .. } => tracing::info!(%endpoint, "Cosmos DB account with Entra ID"),
    }
    tracing::info!(change_feed = ?config.change_feed, "change-feed functions");
    let address = listener.local_addr().map_err(|source| HandlerError::Listen { address: config.listen, source })?;
    tracing::info!("serving on http://{address}/ (the JSON API under /api)");
    blog.serve(listener, shutdown_signal()).await.map_err(HandlerError::Serve)
}

/// Seconds, as the progress and summary lines say them.
fn seconds(elapsed: std::time::Duration) -> String {
    format!("{:.1} s", elapsed.as_secs_f64())
}

/// `handler rebuild-copies`: delivers the whole `users` change feed to `UsersChangeFeed` (names
/// carried onto items, and reserved), then the whole `posts` change feed to `PostsChangeFeed`,
/// which (re)builds every short copy in `users` and `feed`. How far it has got, and the summary,
/// on stderr.
async fn rebuild_copies(config: Config, stderr: &Progress) -> Result<(), HandlerError> {
    let state = blog::connect(&config).await?;
    let users = blog::replay_users_reporting(&state, &mut |users| {
        stderr.update(|| format!("rebuild-copies: {users} users replayed ({})", seconds(stderr.elapsed())))
    })
    .await
    .map_err(|source| HandlerError::Feed { what: "the replay of users", source })?;
    let posts = blog::rebuild_copies_reporting(&state, &mut |posts| {
        stderr
            .update(|| format!("rebuild-copies: {users} users replayed, {posts} posts delivered ({})", seconds(stderr.elapsed())))
    })
    .await
    .map_err(|source| HandlerError::Feed { what: "the rebuild of the copies", source })?;
    stderr.line(&format!(
        "rebuild-copies: {users} users replayed (names carried and reserved), {posts} posts delivered (copies rebuilt) in {}",
        seconds(stderr.elapsed())
    ));
    Ok(())
}

/// `handler dead-letters`: prints every change the change-feed functions set aside, one JSON
/// object per line, on stdout and nothing else there (docs/change-feed.md).
async fn dead_letters(config: Config) -> Result<(), HandlerError> {
    use blog::dead_letters;
    use std::io::Write;
    let state = blog::connect(&config).await?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let written = dead_letters::list(&state.store)
        .await?
        .iter()
        .try_for_each(|letter| writeln!(out, "{}", dead_letters::describe(letter)))
        .and_then(|()| out.flush());
    match written {
        // A reader that stopped early (`| head`) took what it wanted.
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        written => written.map_err(HandlerError::Output),
    }
}

/// `handler dead-letters replay`: delivers each dead letter again and removes those that now
/// apply. How far it has got, and the summary, on stderr.
async fn replay_dead_letters(config: Config, stderr: &Progress) -> Result<(), HandlerError> {
    use blog::dead_letters;
    let state = blog::connect(&config).await?;
    let (applied, kept) = dead_letters::replay_reporting(&state, &mut |done| {
        stderr.update(|| {
            format!(
                "dead-letters replay: {} of {} delivered again: {} applied, {} kept ({})",
                done.applied + done.kept,
                done.total,
                done.applied,
                done.kept,
                seconds(stderr.elapsed())
            )
        })
    })
    .await
    .map_err(|source| HandlerError::Feed { what: "the replay of the dead letters", source })?;
    stderr.line(&format!(
        "dead-letters replay: {applied} applied and removed, {kept} refused again and kept, in {}",
        seconds(stderr.elapsed())
    ));
    Ok(())
}

/// `handler lag`: for each change-feed function, the changes not delivered yet and the age of
/// the oldest, one line each on stdout.
async fn lag(config: Config) -> Result<(), HandlerError> {
    use blog::lag::{self, Followed};
    use std::io::Write;
    // The embedded store's processors keep their checkpoints whether or not they run now.
    let followed = match &config.backend {
        Backend::Embedded { data_dir } => Followed::Embedded(data_dir.clone()),
        _ => blog::followed(&config).unwrap_or(Followed::Trigger),
    };
    let state = blog::connect(&config).await?;
    let lags = lag::measure(&state, &followed, lag::COUNTED_AT_MOST).await?;
    let mut out = std::io::stdout().lock();
    for lag in lags {
        let count = if lag.at_least { format!("at least {}", lag.pending) } else { lag.pending.to_string() };
        let said = match (lag.pending, lag.oldest) {
            (0, _) => "up to date".to_owned(),
            (_, Some(age)) => format!("{count} changes not delivered yet, the oldest written {} ago", seconds(age)),
            (_, None) => format!("{count} changes not delivered yet"),
        };
        writeln!(out, "{}: {said}", lag.function.name()).map_err(HandlerError::Output)?;
    }
    Ok(())
}

/// `handler cost`: [`cost::table`] for the traffic given, on stdout.
fn cost(args: &CostArgs) -> std::io::Result<()> {
    use cost::{Prices, README_SIZES, Traffic};
    use std::io::Write;
    let views: Vec<f64> = if args.views_per_day.is_empty() {
        README_SIZES.to_vec()
    } else {
        args.views_per_day.iter().map(|&views| views as f64).collect()
    };
    let traffics: Vec<Traffic> = views
        .into_iter()
        .map(|views| {
            let traffic = Traffic::of(views);
            Traffic {
                post_share: args.post_share,
                writes_per_day: args.writes_per_day.map_or(traffic.writes_per_day, |writes| writes as f64),
                instances: f64::from(args.instances),
                instance_gb: f64::from(args.instance_memory_mb) / 1024.0,
                cdn_hit_rate: args.cdn_hit_rate,
                front_door: args.front_door,
                ..traffic
            }
        })
        .collect();
    let measured = if args.measured.is_empty() { cost::recorded() } else { args.measured.clone() };
    let mut out = std::io::stdout().lock();
    write!(out, "{}\n{}", cost::per_request(), cost::table(&traffics, &Prices::LISTED, &measured))?;
    if let Some(largest) = traffics.iter().max_by(|a, b| a.views_per_day.total_cmp(&b.views_per_day)) {
        write!(out, "\n{}", cost::levers(largest, &Prices::LISTED, &measured))?;
    }
    Ok(())
}

/// `handler export [--output FILE]`: every user, post, comment, like and picture as JSON lines
/// ([`blog::export`]), on stdout unless a file is named, which appears only once whole
/// ([`blog::PartialFile`]). How far it has got, and the summary, on stderr.
async fn export(config: Config, output: Option<std::path::PathBuf>, stderr: &Progress) -> Result<(), HandlerError> {
    use std::io::Write;
    let state = blog::connect(&config).await?;
    let file_error = |path: &std::path::Path| {
        let path = path.to_owned();
        move |source| HandlerError::File { path, source }
    };
    let mut partial = match &output {
        Some(path) => Some(blog::PartialFile::beside(path).map_err(file_error(path))?),
        None => None,
    };
    let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
    let out: &mut dyn Write = match &mut partial {
        Some(partial) => partial.writer(),
        None => &mut stdout,
    };
    let counts = blog::export(&state, out, &mut |counts, posts| {
        let bar = posts.map(|posts| format!("{} ", progress::bar(posts.done, posts.of))).unwrap_or_default();
        stderr.update(|| format!("export: {bar}{counts} ({})", seconds(stderr.elapsed())))
    })
    .await;
    let counts = match counts {
        // A reader that stopped early (`| head`) took what it wanted.
        Err(blog::TransferError::Io(error)) if error.kind() == std::io::ErrorKind::BrokenPipe => return Ok(()),
        other => other?,
    };
    if let (Some(partial), Some(path)) = (partial, &output) {
        partial.finish().map_err(file_error(path))?;
    }
    let to = output.map_or_else(|| "stdout".to_owned(), |path| path.display().to_string());
    stderr.line(&format!("export: {counts} written to {to} in {}", seconds(stderr.elapsed())));
    Ok(())
}

/// `handler import [FILE]`: checks an export, loads it into this store, then makes the copies.
/// Standard input is copied into a temporary file first: the file is read twice. How far it
/// has got, and the summary, on stderr.
async fn import(config: Config, file: Option<std::path::PathBuf>, stderr: &Progress) -> Result<(), HandlerError> {
    use blog::ImportProgress;
    let spooled = match &file {
        Some(_) => None,
        None => Some(
            blog::Spooled::from(&mut std::io::stdin().lock())
                .map_err(|source| HandlerError::File { path: std::env::temp_dir().join("cosmos-blog-import-…"), source })?,
        ),
    };
    let path = match (&file, &spooled) {
        (Some(path), _) => path.clone(),
        (None, Some(spooled)) => spooled.path().to_owned(),
        (None, None) => unreachable!("standard input is spooled"),
    };
    if let Err(source) = std::fs::metadata(&path) {
        return Err(HandlerError::File { path, source });
    }
    let state = blog::connect(&config).await?;
    let counts = blog::import(&state, &path, &mut |step| {
        let elapsed = || seconds(stderr.elapsed());
        match step {
            ImportProgress::Checking { lines, bytes, size } => {
                let bar =
                    progress::bar(usize::try_from(bytes).unwrap_or(usize::MAX), usize::try_from(size).unwrap_or(usize::MAX));
                stderr.update(|| format!("import: {bar} checking the file: {lines} lines checked ({})", elapsed()))
            }
            ImportProgress::Writing { counts, total } => {
                let bar = progress::bar(counts.total(), total);
                stderr.update(|| format!("import: {bar} {counts} written ({})", elapsed()))
            }
            ImportProgress::Copies { users, posts } => stderr
                .update(|| format!("import: making the copies: {users} users replayed, {posts} posts delivered ({})", elapsed())),
        }
    })
    .await?;
    stderr.line(&format!("import: {counts} written, copies made, in {}", seconds(stderr.elapsed())));
    Ok(())
}

/// `handler repair` and `handler remove`: see [`blog::repair`]. The summary on stderr.
#[cfg(feature = "embedded")]
async fn repair(config: Config, remove: Option<blog::ItemToRemove>, stderr: &Progress) -> Result<(), HandlerError> {
    let what = if remove.is_some() { "remove" } else { "repair" };
    let done = blog::repair(&config, remove).await?;
    let rows = &done.rows;
    let removed = rows.removed.as_ref().map(|item| format!("removed {item}; ")).unwrap_or_default();
    stderr.line(&format!(
        "{what}: {removed}{} comments and likes of posts that are gone, {} copies and {} reservations removed; {} posts \
         recounted; {} users' names reserved again, {} posts' copies rebuilt; {} items, recorded as whole, in {}",
        rows.orphans,
        rows.copies,
        rows.reservations,
        rows.recounted,
        done.users,
        done.posts,
        rows.items,
        seconds(stderr.elapsed())
    ));
    Ok(())
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
