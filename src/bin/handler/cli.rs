//! `handler`'s command line, declared once for clap: the commands, their arguments and help,
//! and the checks clap cannot make itself. What each command does is in `commands`.

use crate::{cost, smoke};

/// What `handler --version` prints after the name: the crate's version and the git commit it
/// was built from (`build.rs`: `unknown` when built without git).
const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (git ", env!("BLOG_GIT_COMMIT"), ")");

/// Where the commands find their store, as `--help` says it: this build's choices. (Help is not
/// wrapped to the terminal, clap's `wrap_help` being left out: the lines break where written.)
#[cfg(feature = "embedded")]
const STORE_HELP: &str = "\
serve, rebuild-copies, dead-letters, lag, export and import take their settings from the
environment (docs/configuration.md): a Cosmos DB account with CosmosDB (a connection string) or
CosmosDB__accountEndpoint (Entra ID), else the embedded store in BLOG_DATA_DIR (default ./data),
which one process uses at a time. repair and remove work on that embedded store only, while the
blog is stopped. Serving, logs go to stdout, warnings and errors to stderr; the commands log to
stderr.";
#[cfg(not(feature = "embedded"))]
const STORE_HELP: &str = "\
serve, rebuild-copies, dead-letters, lag, export and import take their settings from the
environment (docs/configuration.md). This build has no embedded store: they need a Cosmos DB account, with
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
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Option<Command>,
}

/// `handler`'s commands: serving, or one of the maintenance commands, which share their start
/// (settings, logs on stderr).
#[derive(Debug, clap::Subcommand)]
pub(crate) enum Command {
    /// Serve the blog and its JSON API (the default: the Functions host gives no command)
    Serve,
    #[command(flatten)]
    Maintenance(Maintenance),
}

/// The commands other than serving; `handler --help` lists them after `serve`, as one list.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum Maintenance {
    /// Rebuild the copies in users, feed and tags, and the search index, from the change feeds
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
What the start's refusal advises when items were deleted from blog.sqlite outside the handler,
when a row or a record of it is not what the store writes, or when SQLite finds the file
damaged: then the damaged file is kept beside it (blog.sqlite.damaged-<time>) and every item
that can still be read and matches its checksum is copied into a new one. Removes the rows that
do not read as items, recounts each post's comments and likes, removes the comments, likes and
copies of posts that are gone and the reservations of users that are gone, reserves every
user's name again, rebuilds the copies, and records what is there as whole. Run it while the
blog is stopped; run it again if it was cut short (the blog refuses to start until it finishes).")]
    Repair,
    /// Remove one item of a stopped embedded store, with what depends on it, then repair
    #[cfg(feature = "embedded")]
    #[command(after_help = "\
What the start's refusal advises for an item whose bytes changed on disk, or that cannot be
loaded, in any of the store's containers. A post goes with its
comments, likes, copies and pictures; a comment or a like leaves its post's count recomputed; a
user goes with their username's reservation (their posts, comments and likes stay); a copy is
made again. Then does what `handler repair` does.")]
    Remove {
        /// The item's container
        #[arg(value_parser = container_names())]
        container: String,
        /// The item's partition key
        #[arg(allow_hyphen_values = true)]
        partition_key: String,
        /// The item's id
        #[arg(allow_hyphen_values = true)]
        id: String,
    },
}

/// Every container's name, as `remove` takes them: from the store's own list, so that a
/// container the store has (and so may name in a refusal) is one `remove` takes.
#[cfg(feature = "embedded")]
fn container_names() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(blog::Container::ALL.map(|container| container.name()))
}

/// `handler cost`'s traffic.
#[derive(Debug, clap::Args)]
pub(crate) struct CostArgs {
    /// Page views a day; repeat for more rows [default: 10000, 100000 and 1000000]
    #[arg(long = "views-per-day", value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) views_per_day: Vec<u64>,
    /// Writes (posts, comments, likes) a day [default: one per 100 views]
    #[arg(long = "writes-per-day", value_name = "N")]
    pub(crate) writes_per_day: Option<u64>,
    /// Searches a day [default: one per 50 views]
    #[arg(long = "searches-per-day", value_name = "N")]
    pub(crate) searches_per_day: Option<u64>,
    /// The share of views that are a post's page, the rest the front page
    #[arg(long = "post-share", value_name = "SHARE", default_value_t = 0.5, value_parser = share)]
    pub(crate) post_share: f64,
    /// Function app instances (each keeps its own caches)
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub(crate) instances: u32,
    /// Each instance's memory in MB, as `instanceMemoryMB` deploys it
    #[arg(long = "instance-memory-mb", value_name = "MB", default_value_t = cost::DEFAULT_INSTANCE_MB, value_parser = instance_memory)]
    pub(crate) instance_memory_mb: u32,
    /// The share of posts with a picture
    #[arg(long = "picture-share", value_name = "SHARE", default_value_t = 0.5, value_parser = share)]
    pub(crate) picture_share: f64,
    /// The share of views by returning readers, whose browsers keep the pictures
    #[arg(long = "repeat-share", value_name = "SHARE", default_value_t = 0.5, value_parser = share)]
    pub(crate) repeat_share: f64,
    /// The share of requests a CDN answers before the function app
    #[arg(long = "cdn-hit-rate", value_name = "SHARE", default_value_t = 0.0, value_parser = share)]
    pub(crate) cdn_hit_rate: f64,
    /// Count Azure Front Door Standard's fees (`BLOG_FRONT_DOOR=standard`): the CDN is Front Door
    #[arg(long = "front-door", conflicts_with = "cdn_per_gb")]
    pub(crate) front_door: bool,
    /// Count the CDN's bytes at $0.01 a GB (one priced by the gigabyte alone)
    #[arg(long = "cdn-per-gb")]
    pub(crate) cdn_per_gb: bool,
    /// Where the function app runs, as `BLOG_HOSTING_PLAN` deploys it: `flex` (Flex
    /// Consumption), or a dedicated Linux App Service plan: B1, S1, P0v3 or P1v3
    #[arg(long = "hosting-plan", value_name = "PLAN", default_value = "flex", value_parser = hosting)]
    pub(crate) hosting: cost::Hosting,
    /// A `--json` file of `cargo bench --bench readers` to price views with; repeat for several
    /// rates [default: the runs in benches/results/]
    #[arg(long, value_name = "FILE", value_parser = measurement)]
    pub(crate) measured: Vec<cost::Measured>,
}

/// A reader-load measurement, read from its file.
fn measurement(path: &str) -> Result<cost::Measured, String> {
    let text =
        std::fs::read_to_string(path).map_err(|error| format!("cannot read {path}: {error}"))?;
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

/// `flex`, or one of the dedicated plans.
fn hosting(text: &str) -> Result<cost::Hosting, String> {
    if text == "flex" {
        return Ok(cost::Hosting::Flex);
    }
    cost::PLANS
        .iter()
        .find(|plan| plan.name == text)
        .map(|plan| cost::Hosting::Dedicated(*plan))
        .ok_or_else(|| {
            let plans: Vec<&str> = cost::PLANS.iter().map(|plan| plan.name).collect();
            format!("{text:?} is not a hosting plan: flex, or one of {}", plans.join(", "))
        })
}

/// A share between 0 and 1.
fn share(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(share) if (0.0..=1.0).contains(&share) => Ok(share),
        _ => Err(format!("{text:?} is not a share between 0 and 1 (0.5 is half)")),
    }
}

#[derive(Debug, clap::Subcommand)]
pub(crate) enum DeadLettersAction {
    /// Deliver each dead letter again to its function, and remove those that now apply
    #[command(after_help = "Progress, then a summary, on stderr.")]
    Replay,
}

/// A usage error of `subcommand` found after clap's own checks: said as clap says its own
/// (with the subcommand's usage, on stderr), and exit 2.
pub(crate) fn usage_error(subcommand: &str, message: String) -> ! {
    let mut cli = <Cli as clap::CommandFactory>::command();
    cli.build();
    let command = cli.find_subcommand_mut(subcommand).expect("a subcommand of handler");
    command.error(clap::error::ErrorKind::ArgumentConflict, message).exit()
}
