//! What the blog costs to run on Azure, from its traffic: request units from the article's
//! measured charges and this blog's own operations per request and caches, executions of the
//! function app, and both priced with list prices whose source and date are named below.
//! `handler cost` prints it for the operator's own numbers; the README's table is its output for
//! three sizes of blog (a test holds the two equal).
//!
//! Pure arithmetic: nothing here reads a store or the network.

use std::fmt::Write as _;

/// Request units of one operation as the article measured them on its V3 model ("Model and
/// partition data on Azure Cosmos DB using a real-world example", the V3 table). The reader-load
/// bench (benches/readers.rs) prices what it measures with these too.
pub(crate) mod article {
    /// C1, create or edit a user: one small item written.
    pub(crate) const C1: f64 = 5.71;
    /// C2, create or edit a post.
    pub(crate) const C2: f64 = 8.76;
    /// C3, comment (the stored procedure: the comment and the post's counter).
    pub(crate) const C3: f64 = 15.27;
    /// C4, like (the stored procedure).
    pub(crate) const C4: f64 = 14.67;
    /// Q1, get a user: a point read. (Q1 and Q3 price the reader-load bench's user pages;
    /// `handler cost` does not count user pages yet.)
    #[allow(dead_code)]
    pub(crate) const Q1: f64 = 1.0;
    /// Q2, get a post: a point read.
    pub(crate) const Q2: f64 = 1.0;
    /// Q3, a page of a user's posts (their short copies in `users`).
    #[allow(dead_code)]
    pub(crate) const Q3: f64 = 6.46;
    /// Q4, a page of a post's comments.
    pub(crate) const Q4: f64 = 7.72;
    /// Q5, a page of a post's likes.
    pub(crate) const Q5: f64 = 8.92;
    /// Q6, a page of the newest posts.
    pub(crate) const Q6: f64 = 16.97;
}

/// Request units of a point read of the feed's change mark, one small item: priced as the
/// article's point reads (Q1, Q2). A kept page of the feed is checked with it.
pub(crate) const FEED_MARK_RU: f64 = article::Q2;

/// Request units of a point read of a user's posts mark, one small item: priced as the
/// article's point reads. A kept page of a user's posts is checked with it where the change log
/// cannot say. (It prices the reader-load bench's user pages; `handler cost` does not count them.)
#[allow(dead_code)]
pub(crate) const USER_POSTS_MARK_RU: f64 = article::Q1;

/// Request units of a front page view that reaches the database: the feed's change mark and one
/// page of `feed` (Q6).
pub(crate) const FRONT_PAGE_RU: f64 = FEED_MARK_RU + article::Q6;

/// Request units of a post page view that reaches the database: the post (Q2) and the first
/// page of its comments (Q4) and of its likes (Q5), the page's three reads.
pub(crate) const POST_PAGE_RU: f64 = article::Q2 + article::Q4 + article::Q5;

/// What the change-feed functions write after a write to a post (a new post, a comment or a like
/// changes the post, and its counters): its short copy in `users` and in `feed`, each priced as
/// the article's C1, the write of one small item.
pub(crate) const COPIES_RU: f64 = 2.0 * article::C1;

/// What the marks add to a write: `PostsChangeFeed` writes the author's posts mark after the
/// post's copy in `users`, and the feed's change mark after its copy in `feed` (two small items,
/// each priced as C1; a write to a post older than the feed's newest 100 leaves the feed and its
/// mark alone, so counting every write with both is an upper bound). Not counted: a tagged post's
/// write adds, per tag, a point read and a write of its copy under the tag and the tag's mark
/// (about 2 × C1 + Q1 per tag); the reader load this table is measured on has no tags.
pub(crate) const MARKS_RU: f64 = 2.0 * article::C1;

/// Request units of a point read of the blog's change log, one small item (about a kilobyte
/// at most): priced as the article's point reads. Each instance reads it at most once a second
/// while it serves views, and checks every page it keeps with it.
pub(crate) const CHANGE_LOG_RU: f64 = article::Q1;

/// What the change log adds to a write: `PostsChangeFeed` appends what each batch changed, a
/// read of the log and its conditional replace (priced as Q1 and C1). Counted once a write, as if
/// each came in a batch of its own: an upper bound.
pub(crate) const LOG_APPEND_RU: f64 = CHANGE_LOG_RU + article::C1;

/// What an `Idempotency-Key` adds to a write (every form of the pages sends one, and careful API
/// clients do): the key's claim in the caller's partition of `users` and the request record in
/// the write's own, each priced as the article's C1, the create of one small item.
pub(crate) const KEY_RU: f64 = 2.0 * article::C1;

/// What a new post costs beyond C2 and its copies: the post-trigger that keeps `feed` at the
/// newest 100 deletes the 101st, priced as one small write.
pub(crate) const FEED_TRIM_RU: f64 = article::C1;

/// List prices, with their sources. None could be confirmed from Azure's pricing pages here (no
/// network but package registries); check them in the pricing calculator for your region.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Prices {
    /// Cosmos DB serverless, per million request units: $0.25, the figure Microsoft Learn uses
    /// in "Plan and manage costs for Azure Cosmos DB" (page dated 2021-10-08) and "How to choose
    /// between provisioned throughput and serverless" (2022-05-09).
    pub(crate) per_million_ru: f64,
    /// Flex Consumption, on demand, per GB-second of instance memory while executing (billed for
    /// each instance's active periods, 1,000 ms at least, then by 100 ms: Microsoft Learn,
    /// "Flex Consumption plan hosting", section "Billing"): $0.000026
    /// (East US, as published 2025-05-22 by modal.com's "Azure Functions pricing guide"; the
    /// Azure pricing page could not be read here).
    pub(crate) per_gb_second: f64,
    /// Flex Consumption, on demand, per million executions: $0.40 (Azure Functions pricing
    /// page, as read in 2025; unconfirmed here).
    pub(crate) per_million_executions: f64,
    /// Flex Consumption's monthly free grant, on demand: 100,000 GB-s (same source, unconfirmed).
    pub(crate) free_gb_seconds: f64,
    /// And 250,000 executions (same source, unconfirmed).
    pub(crate) free_executions: f64,
    /// Azure Front Door Standard, its base fee a month per profile: $35 (blog.cdnsun.com,
    /// "Microsoft Azure Front Door pricing", 2026, and a 2026 UK pricing guide; the Azure
    /// pricing page could not be read here).
    pub(crate) front_door_per_month: f64,
    /// Front Door Standard, per 10,000 requests from readers (North America and Europe): $0.009
    /// (same source).
    pub(crate) front_door_per_10k_requests: f64,
    /// Front Door, per GB sent to readers (the first 10 TB, North America and Europe): $0.083
    /// (same source).
    pub(crate) front_door_per_gb: f64,
}

impl Prices {
    /// The prices above.
    pub(crate) const LISTED: Prices = Prices {
        per_million_ru: 0.25,
        per_gb_second: 0.000026,
        per_million_executions: 0.40,
        free_gb_seconds: 100_000.0,
        free_executions: 250_000.0,
        front_door_per_month: 35.0,
        front_door_per_10k_requests: 0.009,
        front_door_per_gb: 0.083,
    };
}

/// The instance memory the deployment gives by default, in MB (`instanceMemoryMB`,
/// infra/main.bicep): the smallest of Flex Consumption's sizes, which the handler's peak fits
/// (docs/deploy.md, "Instance size").
pub(crate) const DEFAULT_INSTANCE_MB: u32 = 512;

/// A blog's traffic.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Traffic {
    /// Page views a day (the front page and posts' pages; an API read counts as its page).
    pub(crate) views_per_day: f64,
    /// The share of the views that are a post's page (the rest, the front page).
    pub(crate) post_share: f64,
    /// Writes a day: new posts, comments and likes.
    pub(crate) writes_per_day: f64,
    /// The share of the writes that are new posts (the rest, comments and likes alike).
    pub(crate) post_write_share: f64,
    /// Function app instances serving it (each has its own caches).
    pub(crate) instances: f64,
    /// Each instance's memory, in GB (`instanceMemoryMB` in infra/main.bicep: 512 MB unless
    /// set otherwise).
    pub(crate) instance_gb: f64,
    /// The share of page views a shared cache in front of the function app answers (they are
    /// not executions). A CDN saves executions, not request units: what Cosmos DB reads is set by
    /// the instances' once-a-second checks and by the writes, which a CDN leaves as they are.
    pub(crate) cdn_hit_rate: f64,
    /// Whether that cache is the deployment's optional Azure Front Door (`BLOG_FRONT_DOOR`), whose
    /// fees are then counted: every view is a Front Door request and its bytes are sent by it.
    pub(crate) front_door: bool,
}

impl Traffic {
    /// A blog of `views_per_day` with the defaults of `handler cost`: half the views a post's
    /// page, one write for every 100 views, a tenth of them new posts, one instance of the
    /// deployment's default size.
    pub(crate) fn of(views_per_day: f64) -> Traffic {
        Traffic {
            views_per_day,
            post_share: 0.5,
            writes_per_day: views_per_day / 100.0,
            post_write_share: 0.1,
            instances: 1.0,
            instance_gb: DEFAULT_INSTANCE_MB as f64 / 1024.0,
            cdn_hit_rate: 0.0,
            front_door: false,
        }
    }
}

/// What a day and a month of that traffic cost.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Estimate {
    /// Request units a day spent by the page views.
    pub(crate) view_ru_per_day: f64,
    /// Request units a day spent by the writes and their copies.
    pub(crate) write_ru_per_day: f64,
    /// Cosmos DB serverless, dollars a month (request units only; storage is $0.25 per GB-month).
    pub(crate) cosmos_per_month: f64,
    /// Flex Consumption, dollars a month, after the free grant.
    pub(crate) functions_per_month: f64,
    /// Azure Front Door, dollars a month (0 without it).
    pub(crate) front_door_per_month: f64,
    /// How the views' request units were found.
    pub(crate) views_priced: ViewsPriced,
    /// The handler's log lines in Application Insights, GB a month (about 1 KB a request as
    /// stored, with the columns the host adds).
    pub(crate) telemetry_gb_per_month: f64,
}

/// Days in an average month.
const DAYS_PER_MONTH: f64 = 30.44;
const SECONDS_PER_DAY: f64 = 86_400.0;
/// What a page view sends a reader, in KB, for Front Door's data transfer: the reader-load
/// bench's blog sends its front page as 9.3 KB (2.5 KB gzipped, as the handler sends it to a
/// reader that accepts gzip), a post page 4.9 KB on average, its Atom feed 7.4 KB; 4 KB with the
/// headers is generous for text. Pictures are sent besides, by their own requests.
const ANSWER_KB: f64 = 4.0;

/// How the request units of a row's views were found.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum ViewsPriced {
    /// Computed from the caches' rules, every post view read whole: an upper bound.
    Computed,
    /// The reader-load bench's measurement at this many views a day (the row's rate or less:
    /// more views share the caches more, so it is an upper bound at a higher rate).
    Measured { at_views_per_day: f64 },
}

/// What the reader-load bench measured (`cargo bench --bench readers -- --json PATH`): the views
/// of its mix (front page, post pages, user pages, the feeds and the API's reads), priced at the
/// article's request units, at the rate it replayed them.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Measured {
    /// The rate the views were replayed at.
    pub(crate) views_per_day: f64,
    /// The article's request units per 1,000 of those views.
    pub(crate) view_ru_per_1000: f64,
}

impl Measured {
    /// The figures of a `--json` file of the bench; `None` when it does not have them.
    pub(crate) fn from_json(text: &str) -> Option<Measured> {
        let figures: serde_json::Value = serde_json::from_str(text).ok()?;
        let views_per_day = figures["load"]["views_per_day"].as_f64().filter(|rate| *rate > 0.0)?;
        let view_ru_per_1000 = figures["per_1000_views"]["view_article_ru"].as_f64().filter(|ru| *ru >= 0.0)?;
        Some(Measured { views_per_day, view_ru_per_1000 })
    }
}

/// The measurements `handler cost` prices views with unless it is given others: runs of the
/// reader-load bench on this blog, kept in benches/results/ (BENCHMARKS.md says how they were
/// made).
pub(crate) fn recorded() -> Vec<Measured> {
    [include_str!("../../../benches/results/readers-100k.json"), include_str!("../../../benches/results/readers-1m.json")]
        .into_iter()
        .map(|text| Measured::from_json(text).expect("a recorded measurement has the bench's figures"))
        .collect()
}

/// Reads of the change log a day: a view reads it only when its instance's copy is older than a
/// second (`MARKED_PAGE_LIFETIME`). With views arriving at random at `rate` a second on an
/// instance, a read opens a second in which the others are checked by it, so the reads a second
/// are `rate / (1 + rate)`. (A front page view checks its kept page with it, so this bounds the
/// front page's checks too.)
fn change_log_reads_per_day(traffic: &Traffic) -> f64 {
    let rate = traffic.views_per_day / SECONDS_PER_DAY / traffic.instances;
    rate / (1.0 + rate) * SECONDS_PER_DAY * traffic.instances
}

/// The request units of a day's views, computed from the caches' rules: each read of the change
/// log (1 RU), the feed's mark and Q6 on each instance after each write (every write counted as
/// one that changes the feed, and never more than the log's reads), and every post view read
/// whole (17.64 RU: the per-post cache counted as helping nothing).
fn computed_view_ru_per_day(traffic: &Traffic) -> f64 {
    let log_reads = change_log_reads_per_day(traffic);
    let feed_reads = (traffic.writes_per_day * traffic.instances).min(log_reads);
    log_reads * CHANGE_LOG_RU + feed_reads * FRONT_PAGE_RU + traffic.views_per_day * traffic.post_share * POST_PAGE_RU
}

/// The estimate for `traffic` at `prices`, its views priced by the measurement in `measured`
/// taken at the highest rate not above the traffic's, or computed where there is none.
///
/// Every write is counted with a key and a mark of the feed. Functions: every view a shared
/// cache does not answer, every write and change-feed batch is an execution (each write's
/// batches alone: an upper bound too), and an instance is billed for its memory whenever it
/// executes, a second at least each time, so at `rate` executions a second an instance is
/// billed for the share `1 - e^-rate` of the day.
pub(crate) fn estimate(traffic: &Traffic, prices: &Prices, measured: &[Measured]) -> Estimate {
    let nearest = measured
        .iter()
        .filter(|measurement| measurement.views_per_day <= traffic.views_per_day)
        .max_by(|a, b| a.views_per_day.total_cmp(&b.views_per_day));
    let (view_ru_per_day, views_priced) = match nearest {
        Some(measurement) => (
            traffic.views_per_day * measurement.view_ru_per_1000 / 1000.0,
            ViewsPriced::Measured { at_views_per_day: measurement.views_per_day },
        ),
        None => (computed_view_ru_per_day(traffic), ViewsPriced::Computed),
    };
    let new_posts = traffic.writes_per_day * traffic.post_write_share;
    let reactions = traffic.writes_per_day - new_posts;
    let write_ru_per_day = new_posts * (article::C2 + COPIES_RU + FEED_TRIM_RU)
        + reactions * ((article::C3 + article::C4) / 2.0 + COPIES_RU)
        + traffic.writes_per_day * (KEY_RU + MARKS_RU + LOG_APPEND_RU);
    let cosmos_per_month = (view_ru_per_day + write_ru_per_day) * DAYS_PER_MONTH / 1e6 * prices.per_million_ru;

    // A write is its request, the posts change feed's batch, and the users change feed's that
    // delivers its key's claim, and the one that delivers the author's copy and posts mark
    // (`UsersChangeFeed` passes over all three; the host may deliver them in one batch).
    let executions_per_day = traffic.views_per_day * (1.0 - traffic.cdn_hit_rate) + 4.0 * traffic.writes_per_day;
    let rate = executions_per_day / SECONDS_PER_DAY / traffic.instances;
    let busy_seconds_per_day = (1.0 - (-rate).exp()) * SECONDS_PER_DAY * traffic.instances;
    let executions_per_month = executions_per_day * DAYS_PER_MONTH;
    let gb_seconds_per_month = busy_seconds_per_day * traffic.instance_gb * DAYS_PER_MONTH;
    let functions_per_month = (gb_seconds_per_month - prices.free_gb_seconds).max(0.0) * prices.per_gb_second
        + (executions_per_month - prices.free_executions).max(0.0) / 1e6 * prices.per_million_executions;
    let front_door_per_month = if traffic.front_door {
        let views_per_month = traffic.views_per_day * DAYS_PER_MONTH;
        prices.front_door_per_month
            + views_per_month / 10_000.0 * prices.front_door_per_10k_requests
            + views_per_month * ANSWER_KB / 1e6 * prices.front_door_per_gb
    } else {
        0.0
    };
    Estimate {
        view_ru_per_day,
        write_ru_per_day,
        cosmos_per_month,
        functions_per_month,
        front_door_per_month,
        views_priced,
        telemetry_gb_per_month: executions_per_day * DAYS_PER_MONTH / 1e6,
    }
}

/// The page views a day of the README's table.
pub(crate) const README_SIZES: [f64; 3] = [10_000.0, 100_000.0, 1_000_000.0];

/// The table `handler cost` prints (Markdown), one row per traffic.
pub(crate) fn table(traffics: &[Traffic], prices: &Prices, measured: &[Measured]) -> String {
    let mut out = String::new();
    out.push_str(
        "| page views a day | writes a day | RU a day | RU per 1,000 views | views priced by | Cosmos DB a month | \
         Functions a month | Front Door a month | total a month | Application Insights a month |\n",
    );
    out.push_str("| ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |\n");
    for traffic in traffics {
        let estimate = estimate(traffic, prices, measured);
        let priced = match estimate.views_priced {
            ViewsPriced::Computed => "the caches' rules (a bound)".to_owned(),
            ViewsPriced::Measured { at_views_per_day } => format!("a measurement at {} a day", grouped(at_views_per_day)),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {priced} | ${:.2} | ${:.2} | ${:.2} | **${:.2}** | {:.1} GB |",
            grouped(traffic.views_per_day),
            grouped(traffic.writes_per_day),
            grouped(estimate.view_ru_per_day + estimate.write_ru_per_day),
            grouped(estimate.view_ru_per_day / traffic.views_per_day * 1000.0),
            estimate.cosmos_per_month,
            estimate.functions_per_month,
            estimate.front_door_per_month,
            estimate.total_per_month(),
            estimate.telemetry_gb_per_month,
        );
    }
    out
}

impl Estimate {
    /// Cosmos DB, the function app and Front Door, a month.
    pub(crate) fn total_per_month(&self) -> f64 {
        self.cosmos_per_month + self.functions_per_month + self.front_door_per_month
    }
}

/// What each lever does to a month of `traffic` (the table's last row), one at a time from the
/// blog as deployed, priced with `measured` where the lever keeps the caches.
pub(crate) fn levers(traffic: &Traffic, prices: &Prices, measured: &[Measured]) -> String {
    let base = Traffic { cdn_hit_rate: 0.0, front_door: false, ..*traffic };
    let rows: [(&str, Traffic, &[Measured]); 6] = [
        ("the caches' rules alone, every post view read whole (a bound)", base, &[]),
        ("as deployed: the caches as measured", base, measured),
        ("a CDN you already have answers half the views", Traffic { cdn_hit_rate: 0.5, ..base }, measured),
        ("a CDN you already have answers 90% of the views", Traffic { cdn_hit_rate: 0.9, ..base }, measured),
        ("Azure Front Door Standard answers 90% of the views", Traffic { cdn_hit_rate: 0.9, front_door: true, ..base }, measured),
        ("instances of 2,048 MB instead of 512", Traffic { instance_gb: 2.0, ..base }, measured),
    ];
    let mut out = format!("What each lever changes, at {} page views a day:\n\n", grouped(traffic.views_per_day));
    out.push_str("| lever | RU per 1,000 views | Cosmos DB a month | Functions a month | Front Door a month | total a month |\n");
    out.push_str("| --- | ---: | ---: | ---: | ---: | ---: |\n");
    for (lever, traffic, measured) in rows {
        let estimate = estimate(&traffic, prices, measured);
        let _ = writeln!(
            out,
            "| {lever} | {} | ${:.2} | ${:.2} | ${:.2} | **${:.2}** |",
            grouped(estimate.view_ru_per_day / traffic.views_per_day * 1000.0),
            estimate.cosmos_per_month,
            estimate.functions_per_month,
            estimate.front_door_per_month,
            estimate.total_per_month(),
        );
    }
    out
}

/// What one view and one write cost, said once above the table.
pub(crate) fn per_request() -> String {
    format!(
        "A front page view that reaches Cosmos DB: {FRONT_PAGE_RU:.2} RU (the feed's mark and Q6); a post page: \
         {POST_PAGE_RU:.2} RU (Q2, Q4, Q5). A kept page is checked by the change log, {CHANGE_LOG_RU:.2} RU a second per \
         instance for all of them; where the log cannot say, by its own mark or post ({FEED_MARK_RU:.2} RU). \
         A new post: {:.2} RU (C2, its two copies, the feed's trim, two marks, the log, its key's two records); a comment or a \
         like: {:.2} RU (C3 or C4, two copies, two marks, the log, two records).\n",
        article::C2 + COPIES_RU + FEED_TRIM_RU + MARKS_RU + LOG_APPEND_RU + KEY_RU,
        (article::C3 + article::C4) / 2.0 + COPIES_RU + MARKS_RU + LOG_APPEND_RU + KEY_RU,
    )
}

/// `12345.6` as `12,346`.
fn grouped(value: f64) -> String {
    let digits = format!("{:.0}", value.max(0.0));
    let mut out = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index) % 3 == 0 {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The change log: a quiet blog reads it on nearly every view, a busy one at most once a
    /// second an instance.
    #[test]
    fn the_change_log_is_read_at_most_once_a_second_an_instance() {
        let quiet = Traffic::of(1_000.0);
        assert!((change_log_reads_per_day(&quiet) - 1_000.0).abs() < 12.0, "{}", change_log_reads_per_day(&quiet));
        let busy = Traffic::of(100_000_000.0);
        assert!(change_log_reads_per_day(&busy) < SECONDS_PER_DAY);
        let two = Traffic { instances: 2.0, ..busy };
        assert!(change_log_reads_per_day(&two) < 2.0 * SECONDS_PER_DAY && change_log_reads_per_day(&two) > SECONDS_PER_DAY);
    }

    /// Request units follow the article's figures: 1,000 post page views with no cache help
    /// cost 1,000 times Q2 + Q4 + Q5, and the reads of the change log.
    #[test]
    fn post_pages_cost_the_articles_three_reads() {
        let traffic = Traffic { post_share: 1.0, writes_per_day: 0.0, ..Traffic::of(1_000.0) };
        let estimate = estimate(&traffic, &Prices::LISTED, &[]);
        let log = change_log_reads_per_day(&traffic) * CHANGE_LOG_RU;
        assert!((estimate.view_ru_per_day - log - 17_640.0).abs() < 1e-6, "{estimate:?}");
        assert_eq!(estimate.write_ru_per_day, 0.0);
    }

    /// Views are priced by the measurement taken at the highest rate not above the row's, and
    /// computed (a bound) below every measurement.
    #[test]
    fn views_are_priced_by_the_nearest_measurement_below_and_computed_under_all() {
        let measured = [
            Measured { views_per_day: 100_000.0, view_ru_per_1000: 4_000.0 },
            Measured { views_per_day: 1_000_000.0, view_ru_per_1000: 2_000.0 },
        ];
        let at = |views: f64| estimate(&Traffic::of(views), &Prices::LISTED, &measured);
        assert_eq!(at(10_000.0).views_priced, ViewsPriced::Computed);
        assert_eq!(at(500_000.0).views_priced, ViewsPriced::Measured { at_views_per_day: 100_000.0 });
        assert!((at(500_000.0).view_ru_per_day - 2_000_000.0).abs() < 1e-6);
        assert!((at(3_000_000.0).view_ru_per_day - 6_000_000.0).abs() < 1e-6);
    }

    /// A shared cache saves executions and not request units; Front Door adds its base fee, its
    /// requests and its bytes.
    #[test]
    fn a_cdn_saves_executions_and_front_door_costs_its_fees() {
        let busy = Traffic::of(1_000_000.0);
        let without = estimate(&busy, &Prices::LISTED, &[]);
        let cdn = estimate(&Traffic { cdn_hit_rate: 0.9, ..busy }, &Prices::LISTED, &[]);
        assert_eq!(cdn.cosmos_per_month, without.cosmos_per_month);
        assert!(cdn.functions_per_month < without.functions_per_month, "{cdn:?} {without:?}");
        assert_eq!(cdn.front_door_per_month, 0.0);
        let front_door = estimate(&Traffic { cdn_hit_rate: 0.9, front_door: true, ..busy }, &Prices::LISTED, &[]);
        let requests = 1_000_000.0 * DAYS_PER_MONTH / 10_000.0 * 0.009;
        assert!(front_door.front_door_per_month > 35.0 + requests, "{front_door:?}");
    }

    /// The measurements kept in benches/results/ read, the slower rate first.
    #[test]
    fn the_recorded_measurements_read() {
        let recorded = recorded();
        assert_eq!(recorded.iter().map(|m| m.views_per_day).collect::<Vec<_>>(), [100_000.0, 1_000_000.0]);
        assert!(Measured::from_json("{}").is_none());
    }

    /// A blog under the free grant pays nothing for its executions.
    #[test]
    fn the_free_grant_is_taken_off() {
        let estimate = estimate(&Traffic::of(100.0), &Prices::LISTED, &[]);
        assert_eq!(estimate.functions_per_month, 0.0, "{estimate:?}");
    }

    #[test]
    fn numbers_are_grouped_by_thousands() {
        assert_eq!(grouped(0.4), "0");
        assert_eq!(grouped(999.0), "999");
        assert_eq!(grouped(1_000.0), "1,000");
        assert_eq!(grouped(1_234_567.8), "1,234,568");
    }
}
