//! The module's decision table, row by row, against the embedded store: a real change log and a
//! real mark, a page whose reads are counted, and a clock moved forward instead of slept through.
//! Each row says which reads a request made (the log: `feed`; the mark: `users`; the page and a
//! mend: counted by their closures) and whether it was shown as kept, mended or read whole.

use std::cell::Cell;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use super::change_log::{self, MAX_NAMES};
use super::marked::{Mark, MarkedPage, MarkedPages, PageBytes};
use super::{FRESH_FOR, READ_WHOLE_WITHIN};
use crate::app::AppState;
use crate::cosmos::Container;
use crate::cosmos::meter::Meter;

thread_local! {
    /// How far this test thread's clock is ahead of the system's (`#[tokio::test]` runs each
    /// test's tasks on its own thread).
    static AHEAD: Cell<Duration> = const { Cell::new(Duration::ZERO) };
}

/// How far the kept pages' clock is ahead on this thread.
pub(super) fn clock_ahead() -> Duration {
    AHEAD.with(Cell::get)
}

fn move_clock(by: Duration) {
    AHEAD.with(|ahead| ahead.set(ahead.get() + by));
}

/// A page that is its number: each read whole is a new one.
struct Page(usize);

impl PageBytes for Page {
    fn weight(&self) -> usize {
        8
    }
}

/// What the change log names after the page was kept.
#[derive(Clone, Copy, Debug)]
enum LogSince {
    /// Nothing, or another page.
    NoChangeToIt,
    /// A change under the page's name (`t/kite/x`), which the page mends.
    UnderItsName,
    /// The page.
    It,
    /// So many changes that the page's place in the log was dropped.
    CannotSay,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shown {
    Kept,
    Mended,
    ReadWhole,
}

/// Which reads a request made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
struct Reads {
    log: bool,
    mark: bool,
    page: bool,
    mended: bool,
}

struct Row {
    kept: bool,
    since: Duration,
    written_here: bool,
    log: LogSince,
    mark_moved: bool,
    reads: Reads,
    shown: Shown,
}

const NAME: &str = "t/kite";
const MARK: Mark<'static> = Mark { container: Container::Users, partition_key: "kite", id: "mark" };
const JUST: Duration = Duration::from_millis(100);
const NONE: Reads = Reads { log: false, mark: false, page: false, mended: false };

/// The module documentation's table, in its order.
fn rows() -> Vec<Row> {
    let log = Reads { log: true, ..NONE };
    let row = |kept, since, log, mark_moved, reads, shown| Row {
        kept,
        since,
        written_here: false,
        log,
        mark_moved,
        reads,
        shown,
    };
    vec![
        row(
            false,
            JUST,
            LogSince::It,
            true,
            Reads { page: true, mark: true, ..NONE },
            Shown::ReadWhole,
        ),
        row(true, JUST, LogSince::It, true, NONE, Shown::Kept),
        row(true, FRESH_FOR, LogSince::NoChangeToIt, true, log, Shown::Kept),
        row(
            true,
            FRESH_FOR,
            LogSince::UnderItsName,
            true,
            Reads { mended: true, ..log },
            Shown::Mended,
        ),
        row(true, FRESH_FOR, LogSince::It, false, Reads { mark: true, ..log }, Shown::Kept),
        row(
            true,
            FRESH_FOR,
            LogSince::It,
            true,
            Reads { mark: true, page: true, ..log },
            Shown::ReadWhole,
        ),
        row(true, FRESH_FOR, LogSince::CannotSay, false, Reads { mark: true, ..log }, Shown::Kept),
        Row {
            written_here: true,
            ..row(
                true,
                JUST,
                LogSince::NoChangeToIt,
                false,
                Reads { mark: true, ..NONE },
                Shown::Kept,
            )
        },
        row(
            true,
            READ_WHOLE_WITHIN,
            LogSince::NoChangeToIt,
            false,
            Reads { mark: true, page: true, ..NONE },
            Shown::ReadWhole,
        ),
    ]
}

async fn append(state: &AppState, names: impl IntoIterator<Item = String>) {
    let names: BTreeSet<String> = names.into_iter().collect();
    change_log::append(state, &names).await.expect("appended");
}

/// One request for the page, with the reads it made.
async fn request(
    state: &AppState,
    pages: &MarkedPages<u32, Page>,
    reads_whole: &AtomicUsize,
    mends: &AtomicUsize,
) -> (Arc<MarkedPage<Page>>, Reads) {
    let meter = Arc::new(Meter::default());
    let (page_before, mends_before) =
        (reads_whole.load(Ordering::SeqCst), mends.load(Ordering::SeqCst));
    let read = || async { Ok(Page(reads_whole.fetch_add(1, Ordering::SeqCst) + 1)) };
    let mend = |kept: &Page, _changed: Vec<String>| {
        let mended = Page(kept.0 + 1000);
        async move {
            mends.fetch_add(1, Ordering::SeqCst);
            Ok(Some(mended))
        }
    };
    let page = meter
        .clone()
        .measure(pages.page_mended(state, 7, NAME, MARK, read, mend))
        .await
        .expect("a page");
    let touched = meter.partitions().0;
    let reads = Reads {
        log: touched.contains(&(Container::Feed, Some(1))),
        mark: touched.contains(&(Container::Users, Some(1))),
        page: reads_whole.load(Ordering::SeqCst) > page_before,
        mended: mends.load(Ordering::SeqCst) > mends_before,
    };
    (page, reads)
}

#[tokio::test]
async fn every_row_of_the_freshness_rule_holds_on_the_embedded_store() {
    for (number, row) in rows().into_iter().enumerate() {
        let data = tempfile::tempdir().expect("a directory");
        let config = crate::test_support::embedded_config(data.path());
        let state = crate::running::connect(&config).await.expect("the embedded store");
        // A log this instance has read, and a mark written: what a blog that has run has.
        append(&state, ["u/someone".to_owned()]).await;
        state.changes.recent(&state).await.expect("the log");
        MARK.write(&state, "tagMark").await.expect("the mark");
        let pages: MarkedPages<u32, Page> = MarkedPages::within(16, 1 << 20);
        let (reads_whole, mends) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let kept = match row.kept {
            true => Some(request(&state, &pages, &reads_whole, &mends).await.0),
            false => None,
        };

        move_clock(row.since);
        if row.written_here {
            pages.check_next(|_| true);
        }
        match row.log {
            LogSince::NoChangeToIt => append(&state, ["t/other".to_owned()]).await,
            LogSince::UnderItsName => append(&state, [format!("{NAME}/x")]).await,
            LogSince::It => append(&state, [NAME.to_owned()]).await,
            LogSince::CannotSay => {
                append(&state, (0..=MAX_NAMES).map(|n| format!("p/{n}"))).await;
            }
        }
        if row.mark_moved {
            MARK.write(&state, "tagMark").await.expect("the mark");
        }

        let (page, reads) = request(&state, &pages, &reads_whole, &mends).await;
        let shown = match &kept {
            Some(kept) if Arc::ptr_eq(kept, &page) => Shown::Kept,
            Some(kept) if page.0 == kept.0 + 1000 => Shown::Mended,
            _ => Shown::ReadWhole,
        };
        let what = format!("row {} of the table", number + 1);
        assert_eq!(reads, row.reads, "{what}: the reads");
        assert_eq!(shown, row.shown, "{what}: what was shown");
    }
}
