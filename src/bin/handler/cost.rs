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

/// Request units of a front page view that reaches the database: one page of `feed` (Q6).
pub(crate) const FRONT_PAGE_RU: f64 = article::Q6;

/// Request units of a post page view that reaches the database: the post (Q2) and the first
/// page of its comments (Q4) and of its likes (Q5), the page's three reads.
pub(crate) const POST_PAGE_RU: f64 = article::Q2 + article::Q4 + article::Q5;

/// What the change-feed functions write after a write to a post (a new post, a comment or a like
/// changes the post, and its counters): its short copy in `users` and in `feed`, each priced as
/// the article's C1, the write of one small item.
pub(crate) const COPIES_RU: f64 = 2.0 * article::C1;

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
}

impl Prices {
    /// The prices above.
    pub(crate) const LISTED: Prices = Prices {
        per_million_ru: 0.25,
        per_gb_second: 0.000026,
        per_million_executions: 0.40,
        free_gb_seconds: 100_000.0,
        free_executions: 250_000.0,
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
    /// The handler's log lines in Application Insights, GB a month (about 1 KB a request as
    /// stored, with the columns the host adds).
    pub(crate) telemetry_gb_per_month: f64,
}

/// Days in an average month.
const DAYS_PER_MONTH: f64 = 30.44;
const SECONDS_PER_DAY: f64 = 86_400.0;

/// Request units of one front page view on average: a view reaches `feed` only when its
/// instance's cache (kept 1 s, `FEED_CACHE_LIFETIME`) is empty. With views arriving at random
/// at `rate` a second on an instance, a read opens a second in which the others are served from
/// the cache, so the reads a second are `rate / (1 + rate)`.
fn front_page_reads_per_day(traffic: &Traffic) -> f64 {
    let views = traffic.views_per_day * (1.0 - traffic.post_share);
    let rate = views / SECONDS_PER_DAY / traffic.instances;
    rate / (1.0 + rate) * SECONDS_PER_DAY * traffic.instances
}

/// The estimate for `traffic` at `prices`.
///
/// Post pages are counted as if each view reached the database (the per-post cache helps only a
/// post read more than once a second): an upper bound. Every write is counted with a key.
/// Functions: every view, write and change-feed batch is an execution (each write's batches
/// alone: an upper bound too), and an
/// instance is billed for its memory whenever it executes, a second at least each time, so at
/// `rate` executions a second an instance is billed for the share `1 - e^-rate` of the day.
pub(crate) fn estimate(traffic: &Traffic, prices: &Prices) -> Estimate {
    let post_views = traffic.views_per_day * traffic.post_share;
    let view_ru_per_day = front_page_reads_per_day(traffic) * FRONT_PAGE_RU + post_views * POST_PAGE_RU;
    let new_posts = traffic.writes_per_day * traffic.post_write_share;
    let reactions = traffic.writes_per_day - new_posts;
    let write_ru_per_day = new_posts * (article::C2 + COPIES_RU + FEED_TRIM_RU)
        + reactions * ((article::C3 + article::C4) / 2.0 + COPIES_RU)
        + traffic.writes_per_day * KEY_RU;
    let cosmos_per_month = (view_ru_per_day + write_ru_per_day) * DAYS_PER_MONTH / 1e6 * prices.per_million_ru;

    // A write is its request, the posts change feed's batch, and the users change feed's that
    // delivers its key's claim (which `UsersChangeFeed` passes over).
    let executions_per_day = traffic.views_per_day + 3.0 * traffic.writes_per_day;
    let rate = executions_per_day / SECONDS_PER_DAY / traffic.instances;
    let busy_seconds_per_day = (1.0 - (-rate).exp()) * SECONDS_PER_DAY * traffic.instances;
    let executions_per_month = executions_per_day * DAYS_PER_MONTH;
    let gb_seconds_per_month = busy_seconds_per_day * traffic.instance_gb * DAYS_PER_MONTH;
    let functions_per_month = (gb_seconds_per_month - prices.free_gb_seconds).max(0.0) * prices.per_gb_second
        + (executions_per_month - prices.free_executions).max(0.0) / 1e6 * prices.per_million_executions;
    Estimate {
        view_ru_per_day,
        write_ru_per_day,
        cosmos_per_month,
        functions_per_month,
        telemetry_gb_per_month: executions_per_day * DAYS_PER_MONTH / 1e6,
    }
}

/// The page views a day of the README's table.
pub(crate) const README_SIZES: [f64; 3] = [10_000.0, 100_000.0, 1_000_000.0];

/// The table `handler cost` prints (Markdown), one row per traffic.
pub(crate) fn table(traffics: &[Traffic], prices: &Prices) -> String {
    let mut out = String::new();
    out.push_str(
        "| page views a day | writes a day | RU a day | RU per 1,000 views | Cosmos DB a month | Functions a month | \
         Application Insights a month |\n",
    );
    out.push_str("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for traffic in traffics {
        let estimate = estimate(traffic, prices);
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | ${:.2} | ${:.2} | {:.1} GB |",
            grouped(traffic.views_per_day),
            grouped(traffic.writes_per_day),
            grouped(estimate.view_ru_per_day + estimate.write_ru_per_day),
            grouped(estimate.view_ru_per_day / traffic.views_per_day * 1000.0),
            estimate.cosmos_per_month,
            estimate.functions_per_month,
            estimate.telemetry_gb_per_month,
        );
    }
    out
}

/// What one view and one write cost, said once above the table.
pub(crate) fn per_request() -> String {
    format!(
        "A front page view that reaches Cosmos DB: {FRONT_PAGE_RU:.2} RU (Q6); a post page: {POST_PAGE_RU:.2} RU (Q2, Q4, Q5). \
         A new post: {:.2} RU (C2, its two copies, the feed's trim, its key's two records); a comment or a like: {:.2} RU \
         (C3 or C4, two copies, two records).\n",
        article::C2 + COPIES_RU + FEED_TRIM_RU + KEY_RU,
        (article::C3 + article::C4) / 2.0 + COPIES_RU + KEY_RU,
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

    /// The front page cache: a quiet blog reads `feed` on nearly every view, a busy one at
    /// most once a second an instance.
    #[test]
    fn the_front_page_reads_feed_at_most_once_a_second_an_instance() {
        let quiet = Traffic { post_share: 0.0, ..Traffic::of(1_000.0) };
        assert!((front_page_reads_per_day(&quiet) - 1_000.0).abs() < 12.0, "{}", front_page_reads_per_day(&quiet));
        let busy = Traffic { post_share: 0.0, ..Traffic::of(100_000_000.0) };
        assert!(front_page_reads_per_day(&busy) < SECONDS_PER_DAY);
        let two = Traffic { instances: 2.0, ..busy };
        assert!(front_page_reads_per_day(&two) < 2.0 * SECONDS_PER_DAY && front_page_reads_per_day(&two) > SECONDS_PER_DAY);
    }

    /// Request units follow the article's figures: 1,000 post page views with no cache help
    /// cost 1,000 times Q2 + Q4 + Q5.
    #[test]
    fn post_pages_cost_the_articles_three_reads() {
        let traffic = Traffic { post_share: 1.0, writes_per_day: 0.0, ..Traffic::of(1_000.0) };
        let estimate = estimate(&traffic, &Prices::LISTED);
        assert!((estimate.view_ru_per_day - 17_640.0).abs() < 1e-6, "{estimate:?}");
        assert_eq!(estimate.write_ru_per_day, 0.0);
    }

    /// A blog under the free grant pays nothing for its executions.
    #[test]
    fn the_free_grant_is_taken_off() {
        let estimate = estimate(&Traffic::of(100.0), &Prices::LISTED);
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
