//! The maintenance commands, each as `handler` runs it: its store connected, its progress and
//! summary on stderr, its output on stdout. `maintain` sends each command of the command line
//! (`cli`) to its function here.

use blog::{Backend, Config};

use crate::HandlerError;
use crate::cli::{CostArgs, DeadLettersAction, Maintenance, usage_error};
use crate::progress::{self, Progress};
use crate::{cost, smoke};

/// Every command but `serve`; `stderr` takes their progress and summary.
pub(crate) async fn maintain(
    maintenance: Maintenance,
    stderr: &Progress,
) -> Result<(), HandlerError> {
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
        Maintenance::RebuildCopies => {
            rebuild_copies(settings().map_err(HandlerError::Usage)?, stderr).await
        }
        Maintenance::DeadLetters { action: None } => {
            dead_letters(settings().map_err(HandlerError::Usage)?).await
        }
        Maintenance::DeadLetters { action: Some(DeadLettersAction::Replay) } => {
            replay_dead_letters(settings().map_err(HandlerError::Usage)?, stderr).await
        }
        Maintenance::Lag => lag(settings().map_err(HandlerError::Usage)?).await,
        Maintenance::Export { output } => {
            export(settings().map_err(HandlerError::Usage)?, output, stderr).await
        }
        Maintenance::Import { file } => {
            import(settings().map_err(HandlerError::Usage)?, file, stderr).await
        }
        #[cfg(feature = "embedded")]
        Maintenance::Repair => repair(settings().map_err(HandlerError::Usage)?, None, stderr).await,
        #[cfg(feature = "embedded")]
        Maintenance::Remove { container, partition_key, id } => {
            let container = blog::Container::ALL
                .into_iter()
                .find(|known| known.name() == container)
                .expect("clap accepts the containers' names only");
            repair(
                settings().map_err(HandlerError::Usage)?,
                Some(blog::ItemToRemove { container, partition_key, id }),
                stderr,
            )
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
    let users = blog::replay_users(&state, &mut |users| {
        stderr.update(|| {
            format!("rebuild-copies: {users} users replayed ({})", seconds(stderr.elapsed()))
        })
    })
    .await
    .map_err(|source| HandlerError::Feed { what: "the replay of users", source })?;
    let posts = blog::rebuild_copies(&state, &mut |posts| {
        stderr.update(|| {
            format!(
                "rebuild-copies: {users} users replayed, {posts} posts delivered ({})",
                seconds(stderr.elapsed())
            )
        })
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
    let (applied, kept) = dead_letters::replay(&state, &mut |done| {
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
        let count = if lag.at_least {
            format!("at least {}", lag.pending)
        } else {
            lag.pending.to_string()
        };
        let said = match (lag.pending, lag.oldest) {
            (0, _) => "up to date".to_owned(),
            (_, Some(age)) => format!(
                "{count} changes not delivered yet, the oldest written {} ago",
                seconds(age)
            ),
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
                writes_per_day: args
                    .writes_per_day
                    .map_or(traffic.writes_per_day, |writes| writes as f64),
                searches_per_day: args
                    .searches_per_day
                    .map_or(traffic.searches_per_day, |searches| searches as f64),
                instances: f64::from(args.instances),
                instance_gb: f64::from(args.instance_memory_mb) / 1024.0,
                picture_share: args.picture_share,
                repeat_share: args.repeat_share,
                cdn_hit_rate: args.cdn_hit_rate,
                cdn: if args.front_door {
                    cost::Cdn::FrontDoor
                } else if args.cdn_per_gb {
                    cost::Cdn::ByTheGigabyte
                } else {
                    cost::Cdn::Yours
                },
                hosting: args.hosting,
                ..traffic
            }
        })
        .collect();
    let measured = if args.measured.is_empty() { cost::recorded() } else { args.measured.clone() };
    let mut out = std::io::stdout().lock();
    write!(out, "{}\n{}", cost::per_request(), cost::table(&traffics, &Prices::LISTED, &measured))?;
    if let Some(largest) =
        traffics.iter().max_by(|a, b| a.views_per_day.total_cmp(&b.views_per_day))
    {
        write!(out, "\n{}", cost::bill(largest, &Prices::LISTED, &measured))?;
        write!(out, "\n{}", cost::levers(largest, &Prices::LISTED, &measured))?;
    }
    Ok(())
}

/// `handler export [--output FILE]`: every user, post, comment, like and picture as JSON lines
/// ([`blog::export`]), on stdout unless a file is named, which appears only once whole
/// ([`blog::PartialFile`]). How far it has got, and the summary, on stderr.
async fn export(
    config: Config,
    output: Option<std::path::PathBuf>,
    stderr: &Progress,
) -> Result<(), HandlerError> {
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
        let bar = posts
            .map(|posts| format!("{} ", progress::bar(posts.done, posts.of)))
            .unwrap_or_default();
        stderr.update(|| format!("export: {bar}{counts} ({})", seconds(stderr.elapsed())))
    })
    .await;
    let counts = match counts {
        // A reader that stopped early (`| head`) took what it wanted.
        Err(blog::TransferError::Io(error)) if error.kind() == std::io::ErrorKind::BrokenPipe => {
            return Ok(());
        }
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
async fn import(
    config: Config,
    file: Option<std::path::PathBuf>,
    stderr: &Progress,
) -> Result<(), HandlerError> {
    use blog::ImportProgress;
    let spooled = match &file {
        Some(_) => None,
        None => Some(blog::Spooled::from(&mut std::io::stdin().lock()).map_err(|source| {
            HandlerError::File { path: std::env::temp_dir().join("cosmos-blog-import-…"), source }
        })?),
    };
    let path = match (&file, &spooled) {
        (Some(path), _) => path.clone(),
        (None, Some(spooled)) => spooled.path().to_owned(),
        (None, None) => unreachable!("standard input is spooled"),
    };
    if let Err(source) = std::fs::metadata(&path) {
        return Err(HandlerError::File { path, source });
    }
    let state = blog::connect_for_import(&config).await?;
    // Named in full where the import says how to finish it, wherever it is run from then.
    let given = file
        .as_ref()
        .map(|file| file.canonicalize().unwrap_or_else(|_| file.clone()).display().to_string());
    let counts = blog::import(&state, &path, given.as_deref(), &mut |step| {
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
    stderr
        .line(&format!("import: {counts} written, copies made, in {}", seconds(stderr.elapsed())));
    Ok(())
}

/// `handler repair` and `handler remove`: see [`blog::repair`]. The summary on stderr.
#[cfg(feature = "embedded")]
async fn repair(
    config: Config,
    remove: Option<blog::ItemToRemove>,
    stderr: &Progress,
) -> Result<(), HandlerError> {
    let what = if remove.is_some() { "remove" } else { "repair" };
    let done = blog::repair(&config, remove).await?;
    let rows = &done.rows;
    if let Some(salvaged) = &rows.salvaged {
        stderr.line(&format!(
            "{what}: the damaged database is kept as {}; {} items that could still be read were copied into a new \
             one, {} rows that did not read as items or match their checksums were left behind",
            salvaged.kept.display(),
            salvaged.copied,
            salvaged.dropped
        ));
    }
    let removed = rows.removed.as_ref().map(|item| format!("removed {item}; ")).unwrap_or_default();
    let unreadable = match rows.unreadable.len() {
        0 => String::new(),
        count => format!(
            "{count} rows that did not read as items removed ({}); ",
            rows.unreadable.join(", ")
        ),
    };
    stderr.line(&format!(
        "{what}: {removed}{unreadable}{} comments and likes of posts that are gone, {} copies and {} reservations removed; {} posts \
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
