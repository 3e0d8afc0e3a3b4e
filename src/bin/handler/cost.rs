//! What the blog costs to run on Azure, from its traffic. It counts request units, from the
//! article's measured charges and this blog's own operations per request and caches. It counts
//! executions of the function app. Both are priced with list prices whose source and date are
//! named below. `handler cost` prints it for the operator's own numbers; docs/costs.md's table
//! is its output for three sizes of blog (a test holds the two equal).
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

/// What the change-feed functions write after a write to a post (a new post, a comment or a
/// like changes the post, and its counters). They write its short copy in `users` and in
/// `feed`, each priced as the article's C1, the write of one small item.
pub(crate) const COPIES_RU: f64 = 2.0 * article::C1;

/// What the marks add to a write. `PostsChangeFeed` writes the author's posts mark after the
/// post's copy in `users`, and the feed's change mark after its copy in `feed`. These are two
/// small items, each priced as C1. A write to a post older than the feed's newest 100 leaves
/// the feed and its mark alone, so counting every write with both is an upper bound. Not
/// counted: a tagged post's write adds, per tag, a point read and a write of its copy under the
/// tag and the tag's mark (about 2 × C1 + Q1 per tag). The reader load this table is measured
/// on has no tags.
pub(crate) const MARKS_RU: f64 = 2.0 * article::C1;

/// Request units of a point read of the blog's change log, one small item (about a kilobyte
/// at most): priced as the article's point reads. Each instance reads it at most once a second
/// while it serves views, and checks every page it keeps with it.
pub(crate) const CHANGE_LOG_RU: f64 = article::Q1;

/// What the change log adds to a write: `PostsChangeFeed` appends what each batch changed, a
/// read of the log and its conditional replace (priced as Q1 and C1). Counted once a write, as if
/// each came in a batch of its own: an upper bound.
pub(crate) const LOG_APPEND_RU: f64 = CHANGE_LOG_RU + article::C1;

/// What an `Idempotency-Key` adds to a write (every form of the pages sends one, and careful
/// API clients do). It adds the key's claim in the caller's partition of `users` and the
/// request record in the write's own. Each is priced as the article's C1, the create of one
/// small item.
pub(crate) const KEY_RU: f64 = 2.0 * article::C1;

/// What a new post costs beyond C2 and its copies: the post-trigger that keeps `feed` at the
/// newest 100 deletes the 101st, priced as one small write.
pub(crate) const FEED_TRIM_RU: f64 = article::C1;

/// Search (Q8, `GET /api/search`) and the index `PostsChangeFeed` keeps for it in `words`
/// (issue 56). Priced from what `cargo bench --bench search` counted (BENCHMARKS.md, "Search"):
/// its operations, each priced as Cosmos DB charges its kind, since the embedded store's own
/// RU are synthetic.
pub(crate) mod search {
    use super::{article, timer};

    /// A search of two words with a full page of results (BENCHMARKS.md, "Search"). The bench's
    /// `vorpalix kelmarth` (a rare word and one in 80% of the posts) made 9 point reads and 2
    /// queries at 100, 300 and 1,000 posts: the two words' heads, the index's statistics, the 6
    /// posts it found, the candidates' records, and the tag the query might name. A
    /// full page reads 4 posts more: 13 point reads at 1 RU and 2 small queries at 2.8 RU. Two common words cost
    /// more, and more as the posts grow (BENCHMARKS.md says how much).
    pub(crate) const SEARCH_RU: f64 = 13.0 * article::Q2 + 2.0 * timer::QUERY_RU;

    /// Mending one word's partition: a point read of its head and its replace (a small item,
    /// priced as the article's C1).
    const WORD_RU: f64 = article::Q1 + article::C1;

    /// A post's record, written twice (pending, then finished; the first with its bucket's
    /// statistics) and read twice: about 3 KB in the bench, priced as three C1 a write.
    const RECORD_RU: f64 = 2.0 * 3.0 * article::C1 + article::C1 + 3.0 * article::Q1 + SUM_RU;

    /// Summing the totals after a delivery of one post: point reads of the totals, of what each
    /// bucket had counted (about 4 KB) and of the bucket's statistics, then the first two
    /// written in one batch: priced as three Q1 and three C1 (the 4 KB item as two).
    const SUM_RU: f64 = 3.0 * article::Q1 + 3.0 * article::C1;

    /// Indexing a new post: the bench's new posts (80 to 240 words in the body) at 1,000 posts
    /// wrote 139 items of `words` each: the record, and a head or a chunk of each word. Priced
    /// as 138 small writes, each after a point read.
    pub(crate) const NEW_POST_INDEX_RU: f64 = 138.0 * WORD_RU + RECORD_RU;

    /// An edit of a post's text mends only the words whose posting changed: the bench's edits of
    /// one word wrote 3.2 items of `words` at 1,000 posts: the record and 2.2 heads or chunks.
    pub(crate) const EDIT_INDEX_RU: f64 = 2.2 * WORD_RU + RECORD_RU;

    /// A comment or a like changes the post but not its text: one point read of its record,
    /// whose hash says so (the bench's comments wrote nothing in `words`).
    pub(crate) const CHECK_RU: f64 = article::Q2;

    /// Searches a day unless `--searches-per-day` says: one for every 50 page views (an
    /// assumption, not a measurement: a blog's readers mostly arrive at a post from elsewhere).
    pub(crate) const VIEWS_PER_SEARCH: f64 = 50.0;
}

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
    /// (East US, as published 2025-05-22 by modal.com's "Azure Functions pricing guide", and the
    /// rate Microsoft Learn's "Estimating consumption-based costs" (2025-02) assumes).
    pub(crate) per_gb_second: f64,
    /// Flex Consumption, on demand, per million executions: $0.40 (same two sources).
    pub(crate) per_million_executions: f64,
    /// Flex Consumption's monthly free grant, on demand: 100,000 GB-s (modal.com, 2025-05-22).
    pub(crate) free_gb_seconds: f64,
    /// And 250,000 executions (same source).
    pub(crate) free_executions: f64,
    /// Log Analytics (workspace-based Application Insights), Analytics logs, per GB ingested
    /// (10^9 bytes, the size of the stored columns: azure-monitor-docs `cost-logs.md`, "Data
    /// size calculation"): $2.30, pay-as-you-go (monitoringcost.com, 2026).
    pub(crate) per_gb_logs: f64,
    /// The first 5 GB a month are free (same source).
    pub(crate) free_gb_logs: f64,
    /// Bytes sent from Azure to the internet, per GB past the free 100 GB a month, the first
    /// 10 TB from North America or Europe over Microsoft's network: $0.087 (Microsoft Tech
    /// Community, 2025-09-05). A function app's answers are such bytes.
    pub(crate) per_gb_egress: f64,
    /// The free bytes out a month, in GB.
    pub(crate) free_gb_egress: f64,
    /// Azure Front Door Standard, its base fee a month per profile: $35 (azure-docs
    /// `frontdoor/compare-cdn-front-door-price.md`, 2026-05, North America example prices).
    pub(crate) front_door_per_month: f64,
    /// Front Door Standard, per 10,000 requests from readers: $0.009 (same page).
    pub(crate) front_door_per_10k_requests: f64,
    /// Front Door, per GB sent to readers (the first 10 TB): $0.083 (same page); what it fetches
    /// from an Azure origin is free (`frontdoor/billing.md`).
    pub(crate) front_door_per_gb: f64,
    /// A CDN priced by the gigabyte alone: $0.01 per GB to readers in Europe and North America
    /// (bunny.net's standard network, docs.bunny.net/cdn/pricing, read in 2026).
    pub(crate) cdn_per_gb: f64,
    /// Blob Storage, Hot tier, LRS, per 10,000 read operations (a picture's download is one):
    /// $0.0044. That is East US, the pricing page's figure as tables quoting it give it
    /// for 2024. The README's pictures section (now docs/api.md's) read it as "about $0.004"
    /// in 2025.
    pub(crate) per_10k_blob_reads: f64,
}

impl Prices {
    /// The prices above.
    pub(crate) const LISTED: Prices = Prices {
        per_million_ru: 0.25,
        per_gb_second: 0.000026,
        per_million_executions: 0.40,
        free_gb_seconds: 100_000.0,
        free_executions: 250_000.0,
        per_gb_logs: 2.30,
        free_gb_logs: 5.0,
        per_gb_egress: 0.087,
        free_gb_egress: 100.0,
        front_door_per_month: 35.0,
        front_door_per_10k_requests: 0.009,
        front_door_per_gb: 0.083,
        cdn_per_gb: 0.01,
        per_10k_blob_reads: 0.0044,
    };
}

/// The instance memory the deployment gives by default, in MB (`instanceMemoryMB`,
/// infra/main.bicep): the smallest of Flex Consumption's sizes, which the handler's peak fits
/// (docs/deploy.md, "Instance size").
pub(crate) const DEFAULT_INSTANCE_MB: u32 = 512;

/// The most picture files an instance keeps checked (src/pictures/verified.rs,
/// `Verified::DEFAULT`).
const VERIFIED_ENTRIES: f64 = 16_384.0;

/// What readers' browsers download, in bytes. Pages are the reader-load bench's blog as the
/// handler sends them to a browser (gzip). Its front page is 2.5 KB, a post page about 1.5 KB,
/// its Atom feed 2 KB. So 4 KB a page with the answer's headers is generous for text.
pub(crate) mod weights {
    /// A page, compressed, with its headers.
    pub(crate) const PAGE: f64 = 4_000.0;
    /// A list page's thumbnail of a post with a picture, as a 2× screen takes it. It is the 256
    /// × 192 small copy of a 12-megapixel photo: 17,684 bytes (BENCHMARKS.md, "Thumbnails sized
    /// for their box"). The phones' 960-pixel copy the lists took before was 51 KB to 204 KB.
    pub(crate) const THUMBNAIL: f64 = 17_684.0;
    /// The posts a list page shows.
    pub(crate) const POSTS_ON_A_LIST_PAGE: f64 = 10.0;
    /// A post page's picture as a 2× screen takes it (a 44rem column is 1,408 pixels there,
    /// wider than the phones' copy). That is its screens' copy, 1,440 pixels wide. It is
    /// 267,067 bytes for the benches' 12-megapixel photo (`benches/pictures.rs`'s `photo_jpeg`,
    /// 4032 × 3024, grain 20). It was measured by `cargo test --test pictures
    /// a_photos_screen_copy -- --nocapture`. Before, the page took the photo as uploaded, 4.75
    /// MB (BENCHMARKS.md, "Pictures in posts").
    pub(crate) const POST_PICTURE: f64 = 267_067.0;
}

/// What each Application Insights row weighs, in bytes as Log Analytics bills them. A trace
/// keeps the line twice (as its message and as `prop__{OriginalFormat}`: azure-webjobs-sdk
/// `ApplicationInsightsLogger.LogTrace`) beside about 400 bytes of the host's columns (time,
/// category, level, host instance, role, SDK version; an estimate from the AppTraces table's
/// columns). The longest line of each kind is bounded in [`blog::BILLED_LINES`], against the
/// real lines in `tests/telemetry.rs`.
pub(crate) mod rows {
    /// The host's columns of a row.
    pub(crate) const COLUMNS: f64 = 400.0;
    /// A trace of a line of `bytes`.
    pub(crate) const fn trace(bytes: usize) -> f64 {
        COLUMNS + 2.0 * bytes as f64
    }
    /// The kinds of request the minute lines tell apart on a busy instance: the reader load's
    /// nine kinds of view, its three kinds of write, and pictures.
    pub(crate) const MINUTE_ROUTES: f64 = 13.0;
    /// The host's metrics of each function that ran in a flush of its aggregator (Count,
    /// AverageDuration, MaxDuration, MinDuration, Successes, Failures, SuccessRate:
    /// azure-webjobs-sdk `FunctionResultAggregator`), one flush in five minutes (`host.json`).
    pub(crate) const AGGREGATE_ROWS_PER_FUNCTION: f64 = 7.0;
    pub(crate) const AGGREGATOR_FLUSHES_PER_DAY: f64 = 288.0;
    /// Performance counters, three a minute on each running Linux instance (the host's
    /// `PerformanceCollectorModule`).
    pub(crate) const COUNTERS_PER_INSTANCE_PER_DAY: f64 = 3.0 * 1440.0;
}

/// The change-feed functions and what their trigger does on its own (the Cosmos DB extension
/// 4.x on the .NET SDK's change-feed processor: `ChangeFeedProcessorBuilder`'s defaults, our
/// `feedPollDelay` in `functions/*/function.json`). Request units are estimates from Microsoft
/// Learn's "Plan and manage costs". A point read is 1 RU, a 1 KB replace about 10 RU, a small
/// query a few RU. An empty read of a change feed is not documented (azure-docs issue 99609).
pub(crate) mod change_feed {
    /// `PostsChangeFeed` and `UsersChangeFeed`, each on instances of its own (Flex Consumption
    /// scales every trigger but HTTP, blobs and Durable per function: "Flex Consumption plan
    /// hosting", "Per-function scaling").
    pub(crate) const FUNCTIONS: f64 = 2.0;
    /// How long a trigger waits after an empty read, in seconds (`feedPollDelay`: 1 s, for copies
    /// within a second; the extension's default is 5).
    pub(crate) const POLL_SECONDS: f64 = 1.0;
    /// An empty read of the change feed.
    pub(crate) const EMPTY_READ_RU: f64 = 1.0;
    /// Each lease renewed every 17 s (`LeaseRenewInterval`): a read and a replace.
    pub(crate) const RENEWALS_PER_DAY: f64 = 86_400.0 / 17.0;
    pub(crate) const RENEWAL_RU: f64 = 11.0;
    /// The leases looked over every 13 s (`LeaseAcquireInterval`): a query of the lease container.
    pub(crate) const ACQUIRES_PER_DAY: f64 = 86_400.0 / 13.0;
    pub(crate) const ACQUIRE_RU: f64 = 3.0;
    /// After each batch, its lease checkpointed (a replace), and its changes read.
    pub(crate) const BATCH_RU: f64 = 11.0 + 2.0;
}

/// The timer function `PublishScheduled` (functions/PublishScheduled): one run a minute, its
/// NCRONTAB `0 * * * * *`, each one query on the scheduled posts' partition of `feed`. A post it
/// publishes is priced with the writes (an edit, then its copies).
pub(crate) mod timer {
    /// A run a minute.
    pub(crate) const RUNS_PER_DAY: f64 = 1_440.0;
    /// A query of one partition that finds nothing due: about Cosmos DB's least charge for a
    /// query (the embedded store's meter charges its queries alike).
    pub(crate) const QUERY_RU: f64 = 2.8;
}

/// Who is in front of the function app, answering a share of the requests from its cache.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Cdn {
    /// One you already have, whose price is not counted here.
    Yours,
    /// One priced by the gigabyte alone ([`Prices::cdn_per_gb`]).
    ByTheGigabyte,
    /// Azure Front Door Standard (`BLOG_FRONT_DOOR=standard`), with its fees.
    FrontDoor,
}

/// Where the function app runs (`BLOG_HOSTING_PLAN`, infra/main.bicep's `hostingPlan`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Hosting {
    /// Flex Consumption, the default: each execution, and each instance's memory while it
    /// executes; nothing while nobody reads. The change-feed functions scale on instances of
    /// their own.
    Flex,
    /// A dedicated Linux App Service plan: its instances by the hour, whatever they do, with
    /// no charge per execution; the change-feed functions run on the same instances (Always On).
    Dedicated(Plan),
}

/// A dedicated Linux App Service plan's size and its price, an instance a month (730 hours,
/// pay-as-you-go), as the Azure Retail Prices API gave them in 2026 to the documents that quote
/// it: B1 $13.14 (Central US, 2026-09-23; microsoft/azure-skills `pricing-guide.md` says
/// "B1 Linux ~$13.14" too), S1 $69.35 (East US, 2026-04-18), P0v3 $62.05 (Central US,
/// 2026-09-23), P1v3 $113.15 (2026-04-18). Regions differ by a few percent.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Plan {
    /// The SKU's name, as `hostingPlan` takes it.
    pub(crate) name: &'static str,
    /// Cores and memory, as the plan's page says them.
    pub(crate) size: &'static str,
    pub(crate) per_month: f64,
}

/// The dedicated plans infra/main.bicep's `hostingPlan` takes besides `flex`.
pub(crate) const PLANS: [Plan; 4] = [
    Plan { name: "B1", size: "1 core, 1.75 GB", per_month: 13.14 },
    Plan { name: "S1", size: "1 core, 1.75 GB", per_month: 69.35 },
    Plan { name: "P0v3", size: "1 core, 4 GB", per_month: 62.05 },
    Plan { name: "P1v3", size: "2 cores, 8 GB", per_month: 113.15 },
];

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
    /// Searches a day (`GET /search` or `/api/search`): each reaches the function app and
    /// Cosmos DB, never a CDN's or an instance's cache.
    pub(crate) searches_per_day: f64,
    /// Function app instances serving the HTTP functions (each has its own caches).
    pub(crate) instances: f64,
    /// Each instance's memory, in GB (`instanceMemoryMB` in infra/main.bicep: 512 MB unless
    /// set otherwise).
    pub(crate) instance_gb: f64,
    /// The share of posts with a picture.
    pub(crate) picture_share: f64,
    /// The share of views by a browser that has been here before and keeps the pictures (they
    /// are cached for a year): only the others download them.
    pub(crate) repeat_share: f64,
    /// The share of requests a shared cache in front of the function app answers (they are
    /// neither executions nor the function app's bytes). A CDN saves executions and bytes, not
    /// request units: what Cosmos DB reads is set by the instances' once-a-second checks and by
    /// the writes, which a CDN leaves as they are.
    pub(crate) cdn_hit_rate: f64,
    /// Who that cache is, and so what it costs.
    pub(crate) cdn: Cdn,
    /// Where the function app runs.
    pub(crate) hosting: Hosting,
}

impl Traffic {
    /// A blog of `views_per_day` with the defaults of `handler cost`. Half the views are a
    /// post's page, and there is one write for every 100 views, a tenth of them new posts, and
    /// a search for every 50 views. Half the posts have a picture, half the views are by
    /// returning readers, and there is one instance of the deployment's size.
    pub(crate) fn of(views_per_day: f64) -> Traffic {
        Traffic {
            views_per_day,
            post_share: 0.5,
            writes_per_day: views_per_day / 100.0,
            post_write_share: 0.1,
            searches_per_day: views_per_day / search::VIEWS_PER_SEARCH,
            instances: 1.0,
            instance_gb: DEFAULT_INSTANCE_MB as f64 / 1024.0,
            picture_share: 0.5,
            repeat_share: 0.5,
            cdn_hit_rate: 0.0,
            cdn: Cdn::Yours,
            hosting: Hosting::Flex,
        }
    }

    /// Pictures a day that readers' browsers ask for: a list page's thumbnails and a post
    /// page's picture, on first visits.
    fn pictures_per_day(&self) -> f64 {
        let first_visits = self.views_per_day * (1.0 - self.repeat_share) * self.picture_share;
        first_visits * ((1.0 - self.post_share) * weights::POSTS_ON_A_LIST_PAGE + self.post_share)
    }

    /// Bytes a day that readers download: pages, and pictures on first visits.
    fn bytes_per_day(&self) -> (f64, f64) {
        let first_visits = self.views_per_day * (1.0 - self.repeat_share) * self.picture_share;
        let pictures = first_visits
            * ((1.0 - self.post_share) * weights::POSTS_ON_A_LIST_PAGE * weights::THUMBNAIL
                + self.post_share * weights::POST_PICTURE);
        (self.views_per_day * weights::PAGE, pictures)
    }
}

/// A month of one line of the bill: how much of what, and its price.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Line {
    pub(crate) what: &'static str,
    /// The quantity a month, said with its unit.
    pub(crate) quantity: String,
    pub(crate) dollars: f64,
}

/// What a day and a month of that traffic cost.
#[derive(Clone, Debug)]
pub(crate) struct Estimate {
    /// Request units a day spent by the page views.
    pub(crate) view_ru_per_day: f64,
    /// Request units a day the change-feed triggers spend on their own: polls, leases and
    /// checkpoints.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) trigger_ru_per_day: f64,
    /// How the views' request units were found.
    pub(crate) views_priced: ViewsPriced,
    /// The bill, line by line, a month.
    pub(crate) lines: Vec<Line>,
}

impl Estimate {
    /// The lines whose name starts with `part` ("Cosmos DB", "Functions", …), a month.
    pub(crate) fn part(&self, part: &str) -> f64 {
        self.lines
            .iter()
            .filter(|line| line.what.starts_with(part))
            .fold(0.0, |sum, line| sum + line.dollars)
    }

    /// Everything, a month.
    pub(crate) fn total_per_month(&self) -> f64 {
        self.lines.iter().fold(0.0, |sum, line| sum + line.dollars)
    }
}

/// Days in an average month.
const DAYS_PER_MONTH: f64 = 30.44;
const SECONDS_PER_DAY: f64 = 86_400.0;

/// How the request units of a row's views were found.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum ViewsPriced {
    /// Computed from the caches' rules, every post view read whole: an upper bound.
    Computed,
    /// The reader-load bench's measurement at this many views a day (the row's rate or less:
    /// more views share the caches more, so it is an upper bound at a higher rate).
    Measured { at_views_per_day: f64 },
}

/// What the reader-load bench measured (`cargo bench --bench readers -- --json PATH`). These
/// are the views of its mix (front page, post pages, user pages, the feeds and the API's
/// reads). They are priced at the article's request units, at the rate it replayed them.
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
        let view_ru_per_1000 =
            figures["per_1000_views"]["view_article_ru"].as_f64().filter(|ru| *ru >= 0.0)?;
        Some(Measured { views_per_day, view_ru_per_1000 })
    }
}

/// The measurements `handler cost` prices views with unless it is given others: runs of the
/// reader-load bench on this blog, kept in benches/results/ (BENCHMARKS.md says how they were
/// made).
pub(crate) fn recorded() -> Vec<Measured> {
    [
        include_str!("../../../benches/results/readers-100k.json"),
        include_str!("../../../benches/results/readers-1m.json"),
    ]
    .into_iter()
    .map(|text| Measured::from_json(text).expect("a recorded measurement has the bench's figures"))
    .collect()
}

/// Reads of the change log a day: a view reads it only when its instance's copy is older than a
/// second (`FRESH_FOR`). Say views arrive at random at `rate` a second on an instance. A read
/// opens a second in which the others are checked by it, so the reads a second are `rate / (1 +
/// rate)`. A front page view checks its kept page with it, so this bounds the front page's
/// checks too.
fn change_log_reads_per_day(traffic: &Traffic) -> f64 {
    let rate = traffic.views_per_day / SECONDS_PER_DAY / traffic.instances;
    rate / (1.0 + rate) * SECONDS_PER_DAY * traffic.instances
}

/// The request units of a day's views, computed from the caches' rules. It counts each read of
/// the change log (1 RU), and the feed's mark and Q6 on each instance after each write. Every
/// write is counted as one that changes the feed, and never more than the log's reads. Every
/// post view is counted as read whole (17.64 RU: the per-post cache counted as helping
/// nothing).
fn computed_view_ru_per_day(traffic: &Traffic) -> f64 {
    let log_reads = change_log_reads_per_day(traffic);
    let feed_reads = (traffic.writes_per_day * traffic.instances).min(log_reads);
    log_reads * CHANGE_LOG_RU
        + feed_reads * FRONT_PAGE_RU
        + traffic.views_per_day * traffic.post_share * POST_PAGE_RU
}

/// Seconds a day an instance is billed for, executing `executions_per_day` that arrive at
/// random: each execution holds it a second at least, so at `rate` a second it is busy for the
/// share `1 - e^-rate` of the day.
fn busy_seconds_per_day(executions_per_day: f64) -> f64 {
    (1.0 - (-executions_per_day / SECONDS_PER_DAY).exp()) * SECONDS_PER_DAY
}

/// A change-feed function's batches a day, when its container changes `changes_per_day` times at
/// random: the trigger reads again at once while changes come, and after an empty read waits
/// [`change_feed::POLL_SECONDS`], so a batch is a poll that found something.
fn batches_per_day(changes_per_day: f64) -> f64 {
    let polls = SECONDS_PER_DAY / change_feed::POLL_SECONDS;
    polls * (1.0 - (-changes_per_day / polls).exp())
}

/// The estimate for `traffic` at `prices`, its views priced by the measurement in `measured`
/// taken at the highest rate not above the traffic's, or computed where there is none.
///
/// Every write is counted with a key and a mark of the feed, and as a change of `posts` and two
/// of `users` (its key's claim; the author's copy and posts mark), each delivered to its
/// change-feed function. The trigger's leases are counted as renewed all day on each function
/// (an upper bound: Flex stops an idle function's instances, and with them its trigger).
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
    let batches =
        [batches_per_day(traffic.writes_per_day), batches_per_day(2.0 * traffic.writes_per_day)];
    let all_batches: f64 = batches.iter().sum();
    let trigger_ru_per_day = change_feed::FUNCTIONS
        * (SECONDS_PER_DAY / change_feed::POLL_SECONDS * change_feed::EMPTY_READ_RU
            + change_feed::RENEWALS_PER_DAY * change_feed::RENEWAL_RU
            + change_feed::ACQUIRES_PER_DAY * change_feed::ACQUIRE_RU)
        + all_batches * change_feed::BATCH_RU;
    let timer_ru_per_day = timer::RUNS_PER_DAY * timer::QUERY_RU;
    let search_ru_per_day = traffic.searches_per_day * search::SEARCH_RU;
    let index_ru_per_day = new_posts * search::NEW_POST_INDEX_RU + reactions * search::CHECK_RU;
    let ru = |per_day: f64| per_day * DAYS_PER_MONTH / 1e6 * prices.per_million_ru;
    let millions = |per_day: f64| format!("{:.1} M RU", per_day * DAYS_PER_MONTH / 1e6);

    // The function app: the HTTP functions share their instances; each change-feed function
    // has its own. The free grants are the app's, taken off the HTTP functions first.
    let served = 1.0 - traffic.cdn_hit_rate;
    let http_executions = (traffic.views_per_day + traffic.pictures_per_day()) * served
        + traffic.writes_per_day
        + traffic.searches_per_day;
    let http_busy = busy_seconds_per_day(http_executions / traffic.instances) * traffic.instances;
    let trigger_busy: f64 = batches.iter().map(|&batches| busy_seconds_per_day(batches)).sum();
    let gb_seconds = |busy: f64| busy * traffic.instance_gb * DAYS_PER_MONTH;
    let mut free_seconds = prices.free_gb_seconds;
    let mut free_executions = prices.free_executions;
    let mut functions = |executions_per_day: f64, busy: f64| {
        let (executions, memory) = (executions_per_day * DAYS_PER_MONTH, gb_seconds(busy));
        let (paid_executions, paid_memory) =
            ((executions - free_executions).max(0.0), (memory - free_seconds).max(0.0));
        free_executions = (free_executions - executions).max(0.0);
        free_seconds = (free_seconds - memory).max(0.0);
        let dollars = paid_memory * prices.per_gb_second
            + paid_executions / 1e6 * prices.per_million_executions;
        // A function with fewer (the timer's 43,200 a month) says its count whole.
        let count = if executions < 1e5 {
            format!("{} executions", grouped(executions))
        } else {
            format!("{:.1} M executions", executions / 1e6)
        };
        (format!("{count}, {} GB-s", grouped(memory)), dollars)
    };
    let timer_busy = busy_seconds_per_day(timer::RUNS_PER_DAY);
    let (
        (http_quantity, http_dollars),
        (trigger_quantity, trigger_dollars),
        (timer_quantity, timer_dollars),
    ) = match traffic.hosting {
        Hosting::Flex => (
            functions(http_executions, http_busy),
            functions(all_batches, trigger_busy),
            functions(timer::RUNS_PER_DAY, timer_busy),
        ),
        Hosting::Dedicated(plan) => (
            (
                format!(
                    "{} of App Service {} ({}), all month",
                    instances(traffic.instances),
                    plan.name,
                    plan.size
                ),
                plan.per_month * traffic.instances,
            ),
            (
                format!(
                    "{:.1} M batches, on the plan's instances",
                    all_batches * DAYS_PER_MONTH / 1e6
                ),
                0.0,
            ),
            (
                format!(
                    "{:.2} M runs, on the plan's instances",
                    timer::RUNS_PER_DAY * DAYS_PER_MONTH / 1e6
                ),
                0.0,
            ),
        ),
    };

    // Application Insights: the minute lines of each busy instance, the requests' own lines
    // (writes; the 5xx and slow ones are not counted), each batch's line, each function's lag
    // line a minute, the host's aggregates and counters.
    let per_minute = http_executions / 1440.0 / traffic.instances;
    let routes = rows::MINUTE_ROUTES * (1.0 - (-per_minute / rows::MINUTE_ROUTES).exp());
    let own_lines = traffic
        .writes_per_day
        .min(blog::BILLED_LINES.own_lines_per_minute as f64 * 1440.0 * traffic.instances);
    let trace_bytes = 1440.0 * traffic.instances * routes * rows::trace(blog::BILLED_LINES.minute)
        + own_lines * rows::trace(blog::BILLED_LINES.request)
        + all_batches * rows::trace(blog::BILLED_LINES.delivered)
        + change_feed::FUNCTIONS * 1440.0 * rows::trace(blog::BILLED_LINES.lag);
    let instances_running = match traffic.hosting {
        // The timer on an instance of its own, while it runs.
        Hosting::Flex => traffic.instances + change_feed::FUNCTIONS + 1.0,
        Hosting::Dedicated(_) => traffic.instances,
    };
    let metric_rows = rows::AGGREGATOR_FLUSHES_PER_DAY
        * rows::AGGREGATE_ROWS_PER_FUNCTION
        * (routes.min(rows::MINUTE_ROUTES) * traffic.instances + change_feed::FUNCTIONS)
        + rows::COUNTERS_PER_INSTANCE_PER_DAY * instances_running;
    let log_gb = (trace_bytes + metric_rows * rows::COLUMNS) * DAYS_PER_MONTH / 1e9;
    let logs_dollars = (log_gb - prices.free_gb_logs).max(0.0) * prices.per_gb_logs;

    // Bytes out: what the function app sends (the share a CDN does not answer) as Azure's
    // egress, and what the CDN sends at its own price.
    let (page_bytes, picture_bytes) = traffic.bytes_per_day();
    let gb = |bytes_per_day: f64| bytes_per_day * DAYS_PER_MONTH / 1e9;
    // A page of results each search, always from the function app.
    let search_bytes = traffic.searches_per_day * weights::PAGE;
    let origin_gb = gb((page_bytes + picture_bytes) * served + search_bytes);
    let egress_dollars = (origin_gb - prices.free_gb_egress).max(0.0) * prices.per_gb_egress;
    let cdn_gb = gb((page_bytes + picture_bytes) * traffic.cdn_hit_rate);
    let requests_per_month = (traffic.views_per_day + traffic.pictures_per_day()) * DAYS_PER_MONTH;
    let (cdn_what, cdn_dollars) = match traffic.cdn {
        Cdn::Yours => ("CDN (yours, not priced here)", 0.0),
        Cdn::ByTheGigabyte => ("CDN priced by the GB", cdn_gb * prices.cdn_per_gb),
        Cdn::FrontDoor => (
            "Front Door Standard",
            prices.front_door_per_month
                + requests_per_month / 10_000.0 * prices.front_door_per_10k_requests
                + gb(page_bytes + picture_bytes) * prices.front_door_per_gb,
        ),
    };
    // Blob Storage: a picture the function app serves is read from its blob at most once an
    // hour on each instance while the instance keeps it (src/pictures/blob.rs, KEPT_UNASKED).
    // An instance keeps at most VERIFIED_ENTRIES files. Counted as if every kept file were read
    // every hour (a bound), and never more than the pictures served.
    let picture_reads =
        (traffic.pictures_per_day() * served).min(24.0 * VERIFIED_ENTRIES * traffic.instances);
    let mut lines = vec![
        Line {
            what: "Cosmos DB: page views",
            quantity: millions(view_ru_per_day),
            dollars: ru(view_ru_per_day),
        },
        Line {
            what: "Cosmos DB: writes and their copies",
            quantity: millions(write_ru_per_day),
            dollars: ru(write_ru_per_day),
        },
        Line {
            what: "Cosmos DB: search",
            quantity: millions(search_ru_per_day),
            dollars: ru(search_ru_per_day),
        },
        Line {
            what: "Cosmos DB: search index",
            quantity: millions(index_ru_per_day),
            dollars: ru(index_ru_per_day),
        },
        Line {
            what: "Cosmos DB: the change-feed triggers' polls, leases and checkpoints",
            quantity: millions(trigger_ru_per_day),
            dollars: ru(trigger_ru_per_day),
        },
        Line {
            what: "Cosmos DB: the timer's query a minute (scheduled posts)",
            quantity: millions(timer_ru_per_day),
            dollars: ru(timer_ru_per_day),
        },
        Line {
            what: "Functions: HTTP (pages, pictures, API)",
            quantity: http_quantity,
            dollars: http_dollars,
        },
        Line {
            what: "Functions: the change feed (two functions)",
            quantity: trigger_quantity,
            dollars: trigger_dollars,
        },
        Line {
            what: "Functions: the timer (publishes scheduled posts)",
            quantity: timer_quantity,
            dollars: timer_dollars,
        },
        Line {
            what: "Application Insights",
            quantity: format!("{log_gb:.1} GB"),
            dollars: logs_dollars,
        },
        Line {
            what: "Blob Storage: pictures read",
            quantity: format!("{:.1} M reads", picture_reads * DAYS_PER_MONTH / 1e6),
            dollars: picture_reads * DAYS_PER_MONTH / 10_000.0 * prices.per_10k_blob_reads,
        },
        Line {
            what: "Bytes out of Azure",
            quantity: format!(
                "{} GB ({:.0}% pictures)",
                grouped(origin_gb),
                100.0 * picture_bytes * served
                    / ((page_bytes + picture_bytes) * served + search_bytes)
            ),
            dollars: egress_dollars,
        },
    ];
    if traffic.cdn_hit_rate > 0.0 || traffic.cdn == Cdn::FrontDoor {
        lines.push(Line {
            what: cdn_what,
            quantity: format!(
                "{} GB",
                grouped(gb((page_bytes + picture_bytes) * traffic.cdn_hit_rate))
            ),
            dollars: cdn_dollars,
        });
    }
    Estimate { view_ru_per_day, trigger_ru_per_day, views_priced, lines }
}

/// The page views a day of docs/costs.md's table.
pub(crate) const README_SIZES: [f64; 3] = [10_000.0, 100_000.0, 1_000_000.0];

/// The table `handler cost` prints (Markdown), one row per traffic.
pub(crate) fn table(traffics: &[Traffic], prices: &Prices, measured: &[Measured]) -> String {
    let mut out = String::new();
    out.push_str(
        "| page views a day | writes a day | RU per 1,000 views | views priced by | Cosmos DB | Functions | \
         Application Insights | bytes out | CDN | Blob Storage | total a month |\n",
    );
    out.push_str("| ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for traffic in traffics {
        let estimate = estimate(traffic, prices, measured);
        let priced = match estimate.views_priced {
            ViewsPriced::Computed => "the caches' rules (a bound)".to_owned(),
            ViewsPriced::Measured { at_views_per_day } => {
                format!("a measurement at {} a day", grouped(at_views_per_day))
            }
        };
        let cdn = estimate.part("CDN") + estimate.part("Front Door");
        let _ = writeln!(
            out,
            "| {} | {} | {} | {priced} | {} | {} | {} | {} | {} | {} | **{}** |",
            grouped(traffic.views_per_day),
            grouped(traffic.writes_per_day),
            grouped(estimate.view_ru_per_day / traffic.views_per_day * 1000.0),
            dollars(estimate.part("Cosmos DB")),
            dollars(estimate.part("Functions")),
            dollars(estimate.part("Application Insights")),
            dollars(estimate.part("Bytes out")),
            dollars(cdn),
            dollars(estimate.part("Blob Storage")),
            dollars(estimate.total_per_month()),
        );
    }
    out
}

/// The bill of `traffic`, line by line.
pub(crate) fn bill(traffic: &Traffic, prices: &Prices, measured: &[Measured]) -> String {
    let estimate = estimate(traffic, prices, measured);
    let mut out = format!(
        "The bill at {} page views a day, line by line:\n\n",
        grouped(traffic.views_per_day)
    );
    out.push_str("| line | a month | cost |\n| --- | ---: | ---: |\n");
    for line in &estimate.lines {
        let _ = writeln!(out, "| {} | {} | {} |", line.what, line.quantity, dollars(line.dollars));
    }
    let _ = writeln!(out, "| **total** | | **{}** |", dollars(estimate.total_per_month()));
    out
}

/// What each lever does to a month of `traffic` (the table's last row), one at a time from the
/// blog as deployed, priced with `measured` where the lever keeps the caches.
pub(crate) fn levers(traffic: &Traffic, prices: &Prices, measured: &[Measured]) -> String {
    let base = Traffic { cdn_hit_rate: 0.0, cdn: Cdn::Yours, ..*traffic };
    let b1 = Hosting::Dedicated(PLANS[0]);
    let rows: [(&str, Traffic, &[Measured]); 9] = [
        ("the caches' rules alone, every post view read whole (a bound)", base, &[]),
        ("as deployed: the caches as measured", base, measured),
        ("no post has a picture", Traffic { picture_share: 0.0, ..base }, measured),
        (
            "a CDN you already have answers 90% of the requests",
            Traffic { cdn_hit_rate: 0.9, ..base },
            measured,
        ),
        (
            "a CDN at $0.01 a GB answers 90% of the requests",
            Traffic { cdn_hit_rate: 0.9, cdn: Cdn::ByTheGigabyte, ..base },
            measured,
        ),
        (
            "Azure Front Door Standard answers 90% of the requests",
            Traffic { cdn_hit_rate: 0.9, cdn: Cdn::FrontDoor, ..base },
            measured,
        ),
        ("instances of 2,048 MB instead of 512", Traffic { instance_gb: 2.0, ..base }, measured),
        (
            "an App Service plan B1 instead of Flex Consumption",
            Traffic { hosting: b1, ..base },
            measured,
        ),
        (
            "B1, and a CDN at $0.01 a GB answers 90% of the requests",
            Traffic { hosting: b1, cdn_hit_rate: 0.9, cdn: Cdn::ByTheGigabyte, ..base },
            measured,
        ),
    ];
    let mut out = format!(
        "What each lever changes, at {} page views a day:\n\n",
        grouped(traffic.views_per_day)
    );
    out.push_str("| lever | Cosmos DB | Functions | Application Insights | bytes out | CDN | Blob Storage | total a month |\n");
    out.push_str("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for (lever, traffic, measured) in rows {
        let estimate = estimate(&traffic, prices, measured);
        let parts = ["Cosmos DB", "Functions", "Application Insights", "Bytes out"]
            .map(|part| estimate.part(part));
        let cdn = estimate.part("CDN") + estimate.part("Front Door");
        let _ = writeln!(
            out,
            "| {lever} | {} | {} | {} | {} | {} | {} | **{}** |",
            dollars(parts[0]),
            dollars(parts[1]),
            dollars(parts[2]),
            dollars(parts[3]),
            dollars(cdn),
            dollars(estimate.part("Blob Storage")),
            dollars(estimate.total_per_month()),
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
         like: {:.2} RU (C3 or C4, two copies, two marks, the log, two records). A search of two words: {:.2} RU; the \
         search index, kept by the change feed: {:.2} RU a new post, {:.2} an edit, {:.2} a comment or a like (a point read); a \
         search for every {:.0} views (`--searches-per-day`). Half the posts have a picture and half the \
         views are by returning readers, whose browsers keep the pictures (`--picture-share`, `--repeat-share`).\n",
        article::C2 + COPIES_RU + FEED_TRIM_RU + MARKS_RU + LOG_APPEND_RU + KEY_RU,
        (article::C3 + article::C4) / 2.0 + COPIES_RU + MARKS_RU + LOG_APPEND_RU + KEY_RU,
        search::SEARCH_RU,
        search::NEW_POST_INDEX_RU,
        search::EDIT_INDEX_RU,
        search::CHECK_RU,
        search::VIEWS_PER_SEARCH,
    )
}

/// `1` as "1 instance", `3` as "3 instances".
fn instances(count: f64) -> String {
    if count == 1.0 { "1 instance".to_owned() } else { format!("{} instances", grouped(count)) }
}

/// `1234.567` as `$1,234.57`.
fn dollars(value: f64) -> String {
    let cents = if value > 0.0 { (value * 100.0).round() } else { 0.0 };
    format!("${}.{:02}", grouped((cents / 100.0).trunc()), (cents % 100.0) as u64)
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
        assert!(
            (change_log_reads_per_day(&quiet) - 1_000.0).abs() < 12.0,
            "{}",
            change_log_reads_per_day(&quiet)
        );
        let busy = Traffic::of(100_000_000.0);
        assert!(change_log_reads_per_day(&busy) < SECONDS_PER_DAY);
        let two = Traffic { instances: 2.0, ..busy };
        assert!(
            change_log_reads_per_day(&two) < 2.0 * SECONDS_PER_DAY
                && change_log_reads_per_day(&two) > SECONDS_PER_DAY
        );
    }

    /// Request units follow the article's figures: 1,000 post page views with no cache help
    /// cost 1,000 times Q2 + Q4 + Q5, and the reads of the change log.
    #[test]
    fn post_pages_cost_the_articles_three_reads() {
        let traffic = Traffic { post_share: 1.0, writes_per_day: 0.0, ..Traffic::of(1_000.0) };
        let estimate = estimate(&traffic, &Prices::LISTED, &[]);
        let log = change_log_reads_per_day(&traffic) * CHANGE_LOG_RU;
        assert!((estimate.view_ru_per_day - log - 17_640.0).abs() < 1e-6, "{estimate:?}");
        let writes = estimate
            .lines
            .iter()
            .find(|line| line.what == "Cosmos DB: writes and their copies")
            .unwrap();
        assert_eq!(writes.dollars, 0.0);
        assert!(
            estimate.trigger_ru_per_day > 0.0,
            "the triggers poll and renew their leases all the same"
        );
    }

    /// Views are priced by the measurement taken at the highest rate not above the row's, and
    /// computed (a bound) below every measurement.
    #[test]
    fn views_are_priced_by_the_nearest_measurement_below() {
        let measured = [
            Measured { views_per_day: 100_000.0, view_ru_per_1000: 4_000.0 },
            Measured { views_per_day: 1_000_000.0, view_ru_per_1000: 2_000.0 },
        ];
        let at = |views: f64| estimate(&Traffic::of(views), &Prices::LISTED, &measured);
        assert_eq!(at(10_000.0).views_priced, ViewsPriced::Computed);
        assert_eq!(
            at(500_000.0).views_priced,
            ViewsPriced::Measured { at_views_per_day: 100_000.0 }
        );
        assert!((at(500_000.0).view_ru_per_day - 2_000_000.0).abs() < 1e-6);
        assert!((at(3_000_000.0).view_ru_per_day - 6_000_000.0).abs() < 1e-6);
    }

    /// A shared cache saves executions and bytes and not request units; Front Door adds its
    /// base fee, its requests and its bytes.
    #[test]
    fn a_cdn_is_priced_as_its_savings_less_front_doors_fees() {
        let busy = Traffic::of(1_000_000.0);
        let without = estimate(&busy, &Prices::LISTED, &[]);
        let cdn = estimate(&Traffic { cdn_hit_rate: 0.9, ..busy }, &Prices::LISTED, &[]);
        assert_eq!(cdn.part("Cosmos DB"), without.part("Cosmos DB"));
        assert!(cdn.part("Functions") < without.part("Functions"), "{cdn:?} {without:?}");
        assert!(cdn.part("Bytes out") < without.part("Bytes out"), "{cdn:?} {without:?}");
        assert_eq!(cdn.part("CDN"), 0.0, "yours, not priced");
        let front_door = estimate(
            &Traffic { cdn_hit_rate: 0.9, cdn: Cdn::FrontDoor, ..busy },
            &Prices::LISTED,
            &[],
        );
        let requests = 1_000_000.0 * DAYS_PER_MONTH / 10_000.0 * 0.009;
        assert!(front_door.part("Front Door") > 35.0 + requests, "{front_door:?}");
        let by_the_gb = estimate(
            &Traffic { cdn_hit_rate: 0.9, cdn: Cdn::ByTheGigabyte, ..busy },
            &Prices::LISTED,
            &[],
        );
        assert!(
            by_the_gb.part("CDN") > 0.0 && by_the_gb.part("CDN") < front_door.part("Front Door"),
            "{by_the_gb:?}"
        );
    }

    /// Pictures are most of the bytes, and only first visits download them.
    #[test]
    fn bytes_out_are_pages_with_first_visits_pictures() {
        let busy = Traffic::of(1_000_000.0);
        let (pages, pictures) = busy.bytes_per_day();
        assert_eq!(pages, 1_000_000.0 * weights::PAGE);
        assert!(pictures > pages, "{pictures} {pages}");
        let returning = Traffic { repeat_share: 1.0, ..busy };
        assert_eq!(returning.bytes_per_day().1, 0.0);
        assert_eq!(Traffic { picture_share: 0.0, ..busy }.pictures_per_day(), 0.0);
    }

    /// A change-feed function batches what comes within a poll: a batch per change when they
    /// are rare, never more than a poll's worth when they are many.
    #[test]
    fn the_change_feed_batches_at_most_once_a_poll() {
        assert!((batches_per_day(100.0) - 100.0).abs() < 1.0, "{}", batches_per_day(100.0));
        assert!(batches_per_day(1e9) <= SECONDS_PER_DAY / change_feed::POLL_SECONDS);
    }

    /// Application Insights is within its free 5 GB for docs/costs.md's blogs: the handler counts
    /// reads by the minute.
    #[test]
    fn telemetry_is_counted_by_the_minute() {
        let estimate = estimate(&Traffic::of(1_000_000.0), &Prices::LISTED, &[]);
        let logs = estimate.lines.iter().find(|line| line.what == "Application Insights").unwrap();
        assert_eq!(logs.dollars, 0.0, "{logs:?}");
    }

    /// The measurements kept in benches/results/ read, the slower rate first.
    #[test]
    fn the_recorded_measurements_read() {
        let recorded = recorded();
        assert_eq!(
            recorded.iter().map(|m| m.views_per_day).collect::<Vec<_>>(),
            [100_000.0, 1_000_000.0]
        );
        assert!(Measured::from_json("{}").is_none());
    }

    /// A blog under the free grant pays nothing for its executions.
    #[test]
    fn the_free_grant_is_taken_off() {
        let estimate = estimate(&Traffic::of(100.0), &Prices::LISTED, &[]);
        assert_eq!(estimate.part("Functions"), 0.0, "{estimate:?}");
    }

    /// On a dedicated plan the function app is its instances' price, whatever the load: no
    /// execution, no memory time, and the change-feed functions on the same instances.
    #[test]
    fn a_dedicated_plan_costs_its_instances_whatever_the_load() {
        let b1 = Hosting::Dedicated(PLANS[0]);
        for views in [100.0, 1_000_000.0, 10_000_000.0] {
            let estimate =
                estimate(&Traffic { hosting: b1, ..Traffic::of(views) }, &Prices::LISTED, &[]);
            assert_eq!(estimate.part("Functions"), 13.14, "{estimate:?}");
        }
        let two = estimate(
            &Traffic { hosting: b1, instances: 2.0, ..Traffic::of(1e6) },
            &Prices::LISTED,
            &[],
        );
        assert_eq!(two.part("Functions"), 2.0 * 13.14);
        let flex = estimate(&Traffic::of(1e6), &Prices::LISTED, &[]);
        let dedicated =
            estimate(&Traffic { hosting: b1, ..Traffic::of(1e6) }, &Prices::LISTED, &[]);
        assert_eq!(
            flex.part("Cosmos DB"),
            dedicated.part("Cosmos DB"),
            "the plan changes no request unit"
        );
        assert!(flex.part("Functions") > dedicated.part("Functions"), "{flex:?}");
    }

    /// Searches and the index the change feed keeps for them are lines of their own, priced
    /// at the searches a day asked for: none without searches or writes.
    #[test]
    fn searches_and_their_index_are_lines_of_their_own() {
        let line = |estimate: &Estimate, what: &str| {
            estimate.lines.iter().find(|line| line.what == what).unwrap().dollars
        };
        let none = Traffic { searches_per_day: 0.0, writes_per_day: 0.0, ..Traffic::of(1e6) };
        let quiet = estimate(&none, &Prices::LISTED, &[]);
        assert_eq!(line(&quiet, "Cosmos DB: search"), 0.0);
        assert_eq!(line(&quiet, "Cosmos DB: search index"), 0.0);
        let busy = estimate(&Traffic::of(1e6), &Prices::LISTED, &[]);
        let searches = 1e6 / search::VIEWS_PER_SEARCH * search::SEARCH_RU * DAYS_PER_MONTH / 1e6;
        assert!((line(&busy, "Cosmos DB: search") - searches * 0.25).abs() < 1e-9, "{busy:?}");
        let writes = 10_000.0 * (0.1 * search::NEW_POST_INDEX_RU + 0.9 * search::CHECK_RU);
        let index = writes * DAYS_PER_MONTH / 1e6 * 0.25;
        assert!((line(&busy, "Cosmos DB: search index") - index).abs() < 1e-9, "{busy:?}");
    }

    #[test]
    fn numbers_are_grouped_by_thousands() {
        assert_eq!(grouped(0.4), "0");
        assert_eq!(grouped(999.0), "999");
        assert_eq!(grouped(1_000.0), "1,000");
        assert_eq!(grouped(1_234_567.8), "1,234,568");
        assert_eq!(dollars(1_743.144), "$1,743.14");
        assert_eq!(dollars(0.999), "$1.00");
        assert_eq!(dollars(-0.0), "$0.00");
    }
}
