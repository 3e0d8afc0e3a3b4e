//! Pages an instance keeps in memory, and the one rule that says when a kept page may be shown.
//! The pages are the front page (Q6), a user's posts (Q3), a tag's posts (Q7), a user (Q1) and
//! a post's view (Q2 with Q4 and Q5). The API's reads of posts and comments are kept too.
//!
//! Three things tell a kept page's freshness, each cheaper than reading the page again:
//!
//! - **Its age.** For [`FRESH_FOR`] after it was read or checked, a page is shown as it is.
//! - **The change log** ([`change_log`]): one small item in `feed` that names the pages the
//!   change feed changed lately. An instance reads it at most once per [`FRESH_FOR`], one read
//!   shared by every page. It keeps with each page where the log was when the page was read.
//! - **The page's mark** ([`marked::Mark`]): one small item written again after every change to
//!   what a list reads. For a post's view, the mark is the post itself, whose etag every write
//!   to the post's page moves. One point read (about 1 RU) says whether the page may be shown
//!   again.
//!
//! Whatever they say, a page is read whole again within [`READ_WHOLE_WITHIN`], for what reaches
//! the data without the change feed (an operator's repair).
//!
//! | the page kept | since it was read or checked | what the log says since | what the page's mark says | reads | shown |
//! | --- | --- | --- | --- | --- | --- |
//! | none | | | | the page | read whole |
//! | yes | under [`FRESH_FOR`] | | | none | as kept |
//! | yes | [`FRESH_FOR`] or more | no change to it | | the log | as kept |
//! | yes | [`FRESH_FOR`] or more | changes under its name only (`feed/<postId>`), and it mends | | the log, what changed | mended |
//! | yes | [`FRESH_FOR`] or more | it changed | unchanged | the log, the mark | as kept |
//! | yes | [`FRESH_FOR`] or more | it changed | changed | the log, the mark, the page | read whole |
//! | yes | [`FRESH_FOR`] or more | cannot say (changes dropped, log begun anew, never read) | unchanged | the log, the mark | as kept |
//! | yes, written through this instance | any | | unchanged | the mark | as kept |
//! | yes, read whole [`READ_WHOLE_WITHIN`] ago | [`FRESH_FOR`] or more | | | the mark, the page | read whole |
//!
//! `decision_table`'s test runs each row against the embedded store. A post's view refines
//! "read whole": the post says which of its lists moved, and only those are read again
//! ([`post_views`]). A writer's own next view counts as written through this instance wherever
//! it lands ([`Freshness::Read`], the pages' "just wrote" cookie), so a writer sees their write.
//!
//! So a change made through one instance shows at once there, and on another instance once the
//! change feed has delivered it and [`FRESH_FOR`] later at most.

pub(crate) mod change_log;
pub(crate) mod marked;
mod pages;
pub(crate) mod post_views;

#[cfg(test)]
mod decision_table;

use std::time::{Duration, Instant};

pub(crate) use change_log::ChangeLog;
pub(crate) use marked::{
    MAX_LIST_BYTES, Mark, MarkedPage, MarkedPages, PageBytes, Rendering, etag_of,
};
pub(crate) use pages::{KeptPages, LogCheckedRead};
pub(crate) use post_views::{
    Freshness, PostPage, PostView, PostViewCache, api_comments, api_post, read_post_page,
};

/// How long a page read or checked is shown as it is, and so how often at most an instance
/// reads the change log. Where the local change-feed processors run, a change drops the
/// instance's pages at once; under the Functions host, an instance that did not make the change
/// shows it at most this late after the change feed delivered it.
pub(crate) const FRESH_FOR: Duration = Duration::from_secs(1);

/// How long a page may be shown, checked by the log and its mark alone, from when it was read
/// whole: the bound for changes neither follows (an operator's repair). Once an hour per page
/// kept is one query; measured with ten minutes, those reads were half of what post views cost
/// (BENCHMARKS.md, "Post views checked by the post's etag").
pub(crate) const READ_WHOLE_WITHIN: Duration = Duration::from_secs(3600);

/// The time as the kept pages count ages. A test moves it forward ([`decision_table`]) rather
/// than sleeping through an hour.
fn now() -> Instant {
    #[cfg(test)]
    return Instant::now() + decision_table::clock_ahead();
    #[cfg(not(test))]
    Instant::now()
}

/// How long ago `since` was, by [`now`].
fn age(since: Instant) -> Duration {
    now().saturating_duration_since(since)
}
