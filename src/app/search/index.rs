//! Keeping the index: a post's postings written where its words are, and only those that changed.
//!
//! A delivery's posts are indexed together, in three steps, each safe to repeat. First each
//! post's record is written with its new postings and `pending`, with its bucket's statistics
//! in the same batch; the totals are then summed from the buckets that changed. Then each word
//! whose postings changed is mended once for the whole delivery, in its own partition: a batch
//! on its head (and chunks) conditional on their etags, so two deliveries sharing a word never
//! lose one's posting. Last each record's `pending` is cleared (or the record deleted, for a
//! post no longer indexed). A delivery that fails half-way is delivered again and finds
//! `pending`: it finishes the words from the record's `wordsBefore` and `words`.
//!
//! Only published posts are indexed. A draft or scheduled post has no record, and a post sent
//! back to draft, or deleted, is taken out. A comment or like changes the post but not its
//! text: one point read of the record, and its hash says nothing changed.

use std::collections::{BTreeMap, BTreeSet};

use futures::{StreamExt, TryStreamExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::app::copies::{PostVersion, current_post};
use crate::app::{AppResult, AppState};
use crate::cosmos::{Container, StoreError, Versioned, WriteOp};
use crate::model::markdown::to_plain_text;
use crate::model::search::index::{
    COUNTED_ID, Chunk, Counted, Doc, Entry, HEAD_ID, Head, INDEX_RULES, INLINE_POSTINGS,
    LEGACY_DOCS, STATS_ID, SUMMARY, Stats, chunk_id, record_bucket, records_partition, take_out,
    text_hash, tier,
};
use crate::model::search::{Language, Posting, postings};
use crate::model::{self, CopyAction, Post, SourceVersion};

/// How often a conditional write that lost a race is tried again, with fresh reads.
const ATTEMPTS: usize = 10;

/// How often a word's mending is tried again after another delivery's change of the word came
/// first: common words are in every post, and deliveries run at once on several leases.
const WORD_ATTEMPTS: u32 = 40;

/// How many posts of a delivery have their records read and written at once.
const CONCURRENT_POSTS: usize = 8;

/// How many words' partitions a delivery mends at once.
const CONCURRENT_WORDS: usize = 16;

/// The most operations of one transactional batch (Cosmos DB's limit). A word whose changes
/// touch more chunks is mended in several batches, each whole.
const MAX_BATCH: usize = 100;

/// One post's change of one word: the impacts its posting may have had (where it may lie), and
/// what it becomes (`None`: taken out).
struct WordChange {
    post_id: String,
    old: Vec<u16>,
    new: Option<Entry>,
}

/// A post whose record step 1 wrote: its record as written, and its changes by word.
struct Prepared {
    record: Doc,
    bucket: u32,
    changes: Vec<(String, WordChange)>,
}

/// Brings the index up to each delivered post: its words indexed if it is published and live,
/// taken out if it is not. One point read for a post whose text has not changed.
pub(crate) async fn index_posts(state: &AppState, posts: &[PostVersion]) -> AppResult<()> {
    // A post delivered twice (two versions in one batch) is indexed once, at its last.
    let mut last: BTreeMap<&str, &PostVersion> = BTreeMap::new();
    for post in posts {
        last.insert(post.post.id.as_str(), post);
    }
    let average = average_body(state).await?;
    // The futures made first: a stream mapping through a closure would not be `Send` for
    // every lifetime, as the change-feed tasks need (as in `copy_posts`).
    let prepared: Vec<_> = last.values().map(|post| prepare_post(state, post, average)).collect();
    let prepared: Vec<Option<Prepared>> =
        futures::stream::iter(prepared).buffer_unordered(CONCURRENT_POSTS).try_collect().await?;
    apply(state, prepared.into_iter().flatten().collect()).await
}

/// Takes a deleted post out of the index (its tombstone's delivery).
pub(crate) async fn unindex_post(state: &AppState, post: &Post) -> AppResult<()> {
    let partition = records_partition(record_bucket(&post.id));
    let mut prepared = None;
    for _ in 0..ATTEMPTS {
        let Some(found) = read::<Doc>(state, &partition, &post.id).await? else { return Ok(()) };
        let source = found.item.source.clone();
        match record_change(state, &post.id, Some(found), None, source, 0.0).await {
            Err(error) if lost_race(&error) => continue,
            Ok(done) => {
                prepared = Some(done);
                break;
            }
            Err(other) => return Err(other),
        }
    }
    match prepared {
        Some(prepared) => apply(state, prepared.into_iter().collect()).await,
        None => Err(contended(&post.id)),
    }
}

/// Empties the index if it is of the layout before [`INDEX_RULES`] 2 (every record in one
/// partition, [`LEGACY_DOCS`]), so that `handler rebuild-copies`, which calls this first, makes
/// it anew: its postings could not be found from the records where they are now. Every item of
/// `words` is deleted, listed by its change feed; the old statistics last, so that a rebuild
/// stopped half-way empties it again. Answers the items deleted (0: the index is of this layout).
pub(crate) async fn clear_legacy_index(state: &AppState) -> AppResult<usize> {
    if read::<Stats>(state, LEGACY_DOCS, STATS_ID).await?.is_none() {
        return Ok(0);
    }
    let mut feed = state.store.change_feed_from_beginning(Container::Words).await?;
    let mut deleted = 0;
    while let Some(documents) = feed.next_changes().await? {
        for document in documents {
            let (Some(word), Some(id)) = (document["word"].as_str(), document["id"].as_str())
            else {
                continue;
            };
            if word == LEGACY_DOCS && id == STATS_ID {
                continue;
            }
            let delete = WriteOp::Delete { id: id.to_owned(), if_match: None };
            match state.store.execute_write(Container::Words, word, delete).await {
                Ok(()) | Err(StoreError::NotFound) => deleted += 1,
                Err(other) => return Err(other.into()),
            }
        }
    }
    let delete = WriteOp::Delete { id: STATS_ID.into(), if_match: None };
    match state.store.execute_write(Container::Words, LEGACY_DOCS, delete).await {
        Ok(()) | Err(StoreError::NotFound) => Ok(deleted + 1),
        Err(other) => Err(other.into()),
    }
}

/// Steps 2 and 3 for the posts whose records were written, and the totals summed first.
async fn apply(state: &AppState, prepared: Vec<Prepared>) -> AppResult<()> {
    if prepared.is_empty() {
        return Ok(());
    }
    let buckets: BTreeSet<u32> = prepared.iter().map(|post| post.bucket).collect();
    sum_totals(state, &buckets).await?;
    // Step 2: each word once, with every post's change of it.
    let mut by_word: BTreeMap<String, Vec<WordChange>> = BTreeMap::new();
    let mut records = Vec::with_capacity(prepared.len());
    for post in prepared {
        for (key, change) in post.changes {
            by_word.entry(key).or_default().push(change);
        }
        records.push((post.record, post.bucket));
    }
    let mended: Vec<_> =
        by_word.iter().map(|(key, changes)| mend_word(state, key, changes)).collect();
    futures::stream::iter(mended)
        .buffer_unordered(CONCURRENT_WORDS)
        .try_collect::<Vec<()>>()
        .await?;
    // Step 3: each record finished, or gone with the post's last word.
    let finished: Vec<_> =
        records.iter().map(|(record, bucket)| finish(state, record, *bucket)).collect();
    futures::stream::iter(finished)
        .buffer_unordered(CONCURRENT_POSTS)
        .try_collect::<Vec<()>>()
        .await?;
    Ok(())
}

/// The average body's words, as the totals say now: what a new post's impacts are weighed by.
async fn average_body(state: &AppState) -> AppResult<f64> {
    let totals = read::<Stats>(state, SUMMARY, STATS_ID).await?;
    Ok(totals.map_or(0.0, |found| found.item.average_body()))
}

/// Step 1 for one delivered post, if its index needs a change: its record written, pending.
async fn prepare_post(
    state: &AppState,
    delivered: &PostVersion,
    average: f64,
) -> AppResult<Option<Prepared>> {
    let post_id = &delivered.post.id;
    let partition = records_partition(record_bucket(post_id));
    for _ in 0..ATTEMPTS {
        let doc = read::<Doc>(state, &partition, post_id).await?;
        let source = delivered.source();
        let current =
            match model::copy_action(doc.as_ref().map(|found| &found.item.source), &source) {
                // An older version, or this one: nothing to do but finish an interrupted change.
                CopyAction::Keep => match &doc {
                    Some(found) if found.item.pending || found.item.rules != INDEX_RULES => {
                        current_post(state, post_id).await?
                    }
                    _ => return Ok(None),
                },
                // No record yet: indexed only while the post exists, so that a late delivery never
                // brings back a deleted post. The current version is at least as new as delivered.
                CopyAction::Write if doc.is_none() => current_post(state, post_id).await?,
                CopyAction::Write => Some(delivered.clone_version()),
                CopyAction::WriteFromCurrent => current_post(state, post_id).await?,
            };
        let wanted = current.filter(|version| indexable(&version.post));
        let source = wanted.as_ref().map_or(source, PostVersion::source);
        if let (Some(found), Some(version)) = (&doc, &wanted)
            && !found.item.pending
            && found.item.rules == INDEX_RULES
            && found.item.hash == hash(&version.post)
        {
            return Ok(None);
        }
        if doc.is_none() && wanted.is_none() {
            return Ok(None);
        }
        let wanted = wanted.map(|version| version.post);
        match record_change(state, post_id, doc, wanted, source, average).await {
            Err(error) if lost_race(&error) => continue,
            other => return other,
        }
    }
    Err(contended(post_id))
}

/// Whether the index holds `post`: published and not deleted, as the feed's copies.
fn indexable(post: &Post) -> bool {
    model::is_live(post) && post.status.is_published()
}

fn hash(post: &Post) -> String {
    text_hash(&post.title, &post.content, &post.tags)
}

/// Step 1: the record, pending, with the postings `wanted` has (none: taken out), and its
/// bucket's statistics, in one batch. `None` when there is nothing to write.
async fn record_change(
    state: &AppState,
    post_id: &str,
    doc: Option<Versioned<Doc>>,
    wanted: Option<Post>,
    source: SourceVersion,
    average: f64,
) -> AppResult<Option<Prepared>> {
    let bucket = record_bucket(post_id);
    let partition = records_partition(bucket);
    let (before, old_indexed, old_body) = match &doc {
        Some(found) => {
            let record = &found.item;
            let mut before = record.words_before.clone();
            before.extend(record.words.iter().cloned());
            // Each posting once: a change redone many times must not grow its record.
            before.sort_by(|a, b| (&a.key, a.impact, a.fields).cmp(&(&b.key, b.impact, b.fields)));
            before.dedup();
            let counted = record.indexed() && !record.pending_removal();
            (before, counted, if counted { record.body_words } else { 0 })
        }
        None => (Vec::new(), false, 0),
    };
    let mut record = Doc {
        id: post_id.into(),
        word: partition.clone(),
        kind: "doc".into(),
        source,
        rules: INDEX_RULES,
        hash: String::new(),
        language: Language::English,
        body_words: 0,
        words: Vec::new(),
        words_before: before.clone(),
        pending: true,
    };
    if let Some(post) = &wanted {
        let plain = to_plain_text(&post.content, false);
        let language = Language::detect(&format!("{}\n{plain}", post.title));
        let (words, lengths) = postings(&post.title, &post.tags, &plain, language, average);
        record.hash = hash(post);
        record.language = language;
        record.body_words = lengths.body;
        record.words = words;
    }
    let new_indexed = record.indexed();
    // A post with no word to index (its words all stop words) has no record: nothing to write.
    if doc.is_none() && !new_indexed {
        return Ok(None);
    }
    let new_body = if new_indexed { record.body_words } else { 0 };
    let stats = read::<Stats>(state, &partition, STATS_ID).await?;
    let was = stats.as_ref().map_or_else(|| Stats::new(&partition), |found| found.item.clone());
    let mut counts = was.clone();
    counts.posts = (counts.posts + u64::from(new_indexed)).saturating_sub(u64::from(old_indexed));
    counts.body_words =
        (counts.body_words + u64::from(new_body)).saturating_sub(u64::from(old_body));
    let mut batch = vec![write(&record, doc.as_ref().map(|found| found.etag.clone()), post_id)?];
    if counts != was {
        counts.version += 1;
        batch.push(write(&counts, stats.map(|found| found.etag), STATS_ID)?);
    }
    commit(state, &partition, batch).await?;
    // A pending record's words may not all be written: each is written again.
    let redo = doc.as_ref().is_some_and(|found| found.item.pending);
    let changes = word_changes(post_id, &before, &record.words, redo);
    Ok(Some(Prepared { record, bucket, changes }))
}

/// Step 3: the record (in `bucket`) finished, or gone with the post's last word.
async fn finish(state: &AppState, record: &Doc, bucket: u32) -> AppResult<()> {
    let partition = records_partition(bucket);
    let Some(written) = read::<Doc>(state, &partition, &record.id).await? else { return Ok(()) };
    if written.item != *record {
        // Changed by another delivery meanwhile: it finishes its own change.
        return Ok(());
    }
    let finish = if record.indexed() {
        let done = Doc { words_before: Vec::new(), pending: false, ..record.clone() };
        write(&done, Some(written.etag), &record.id)?
    } else {
        WriteOp::Delete { id: record.id.clone(), if_match: Some(written.etag) }
    };
    match state.store.execute_write(Container::Words, &partition, finish).await {
        Ok(()) | Err(StoreError::PreconditionFailed | StoreError::NotFound) => Ok(()),
        Err(other) => Err(other.into()),
    }
}

/// Sums the totals anew from `buckets`' statistics: each bucket's counts are taken in once
/// they are newer than those last taken, and the totals and what was taken are written in one
/// batch, conditional on what was taken as read. So two deliveries summing at once never lose a
/// change. The totals are derived from what was taken: upserted in that batch, never read here.
async fn sum_totals(state: &AppState, buckets: &BTreeSet<u32>) -> AppResult<()> {
    for attempt in 0..WORD_ATTEMPTS {
        let counted = read::<Counted>(state, SUMMARY, COUNTED_ID).await?;
        let read_stats: Vec<_> = buckets
            .iter()
            .map(|bucket| async move {
                let stats = read::<Stats>(state, &records_partition(*bucket), STATS_ID).await?;
                AppResult::Ok((*bucket, stats))
            })
            .collect();
        let found: Vec<(u32, Option<Versioned<Stats>>)> = futures::stream::iter(read_stats)
            .buffer_unordered(CONCURRENT_POSTS)
            .try_collect()
            .await?;
        let mut next = counted.as_ref().map_or_else(Counted::new, |found| found.item.clone());
        let mut changed = false;
        for (bucket, stats) in found {
            if let Some(stats) = stats {
                changed |= next.take(bucket, &stats.item);
            }
        }
        if !changed {
            return Ok(());
        }
        let batch = vec![
            write(&next, counted.map(|found| found.etag), COUNTED_ID)?,
            WriteOp::Upsert { document: document(&next.totals())?, if_match: None },
        ];
        match commit(state, SUMMARY, batch).await {
            Err(StoreError::PreconditionFailed | StoreError::Conflict | StoreError::NotFound) => {
                tokio::time::sleep(backoff(attempt)).await;
            }
            other => return Ok(other?),
        }
    }
    Err(contended(SUMMARY))
}

impl Doc {
    /// A record kept only while its post's words are taken out: it no longer counts.
    fn pending_removal(&self) -> bool {
        self.pending && self.words.is_empty()
    }
}

/// Each key whose posting of `post_id` changes, with the change: the impacts it may have had
/// (where it may lie), and what it becomes (`None`: taken out).
fn word_changes(
    post_id: &str,
    before: &[Posting],
    after: &[Posting],
    redo: bool,
) -> Vec<(String, WordChange)> {
    let mut keys: Vec<&str> =
        before.iter().chain(after).map(|posting| posting.key.as_str()).collect();
    keys.sort_unstable();
    keys.dedup();
    keys.into_iter()
        .filter_map(|key| {
            let old: Vec<&Posting> = before.iter().filter(|posting| posting.key == key).collect();
            let new = after.iter().find(|posting| posting.key == key);
            // Unchanged, and never half-written: nothing to do.
            if let ([only], Some(new)) = (old.as_slice(), new)
                && *only == new
                && !redo
            {
                return None;
            }
            let old = old.iter().map(|posting| posting.impact).collect();
            let new = new.map(|posting| Entry(post_id.to_owned(), posting.impact, posting.fields));
            Some((key.to_owned(), WordChange { post_id: post_id.to_owned(), old, new }))
        })
        .collect()
}

/// Applies `changes` (each post's posting under `key`, wherever it was) in as few batches as
/// its chunks allow, keeping the head's count exact. Conditional on every item read. Each
/// round either makes some of the changes or splits chunks the coming postings would crowd,
/// so it ends; only a round lost to another writer counts against [`WORD_ATTEMPTS`].
async fn mend_word(state: &AppState, key: &str, changes: &[WordChange]) -> AppResult<()> {
    let mut left: Vec<&WordChange> = changes.iter().collect();
    let mut lost = 0;
    loop {
        let head = read::<Head>(state, key, HEAD_ID).await?;
        // A split of a crowded tier is a batch of its own; the postings' changes come after.
        let mut split_first = false;
        let (operations, taken) = match head {
            None if left.iter().all(|change| change.new.is_none()) => return Ok(()),
            None => inline(key, None, &left)?,
            Some(found) if !found.item.spilled => inline(key, Some(found), &left)?,
            Some(found) => {
                // Crowded once the postings coming are in: split before they come.
                let mut coming: BTreeMap<u16, u64> = BTreeMap::new();
                for entry in left.iter().filter_map(|change| change.new.as_ref()) {
                    *coming.entry(tier(entry.1)).or_default() += 1;
                }
                let crowded = coming.iter().any(|(tier, count)| {
                    let mut spread = found.item.spread(*tier);
                    spread.count += count;
                    spread.crowded()
                });
                if crowded {
                    split_first = true;
                    (split(state, key, found.item, found.etag, &coming).await?, Vec::new())
                } else {
                    spilled(state, key, found, &left).await?
                }
            }
        };
        match commit(state, key, operations).await {
            Ok(()) => {
                let mut at = 0;
                left.retain(|_| {
                    at += 1;
                    taken.binary_search(&(at - 1)).is_err()
                });
                if left.is_empty() && !split_first {
                    return Ok(());
                }
            }
            // Another delivery's change of the word came first: read again, and redo, after a
            // pause.
            Err(StoreError::PreconditionFailed | StoreError::Conflict | StoreError::NotFound) => {
                lost += 1;
                if lost >= WORD_ATTEMPTS {
                    let post = changes.first().map_or_else(String::new, |c| c.post_id.clone());
                    return Err(contended(&post));
                }
                tokio::time::sleep(backoff(lost)).await;
            }
            Err(other) => return Err(other.into()),
        }
    }
}

/// Commits `operations` in `partition` of `words`: one alone as a point write, more as one
/// transactional batch (a batch is what a write that must go with others needs, and costs
/// more: the emulator copies the partition for it).
async fn commit(
    state: &AppState,
    partition: &str,
    mut operations: Vec<WriteOp>,
) -> Result<(), StoreError> {
    if operations.len() == 1 {
        let only = operations.pop().expect("one operation");
        return state.store.execute_write(Container::Words, partition, only).await;
    }
    state
        .store
        .execute_batch(Container::Words, partition, operations)
        .await
        .map_err(StoreError::of_failed_operation)
}

/// A word whose head holds its postings (or a new word, `found` none): every change made
/// there, the postings moved into chunks once too many. Answers the batch and which of
/// `changes` (their places, ascending) it makes: all, unless the chunks they would fill are more
/// than one batch holds (a rebuild's thousands of postings of a new word): then the first ones
/// that fit.
fn inline(
    key: &str,
    found: Option<Versioned<Head>>,
    changes: &[&WordChange],
) -> AppResult<(Vec<WriteOp>, Vec<usize>)> {
    let (head, etag) = match found {
        Some(found) => (found.item, Some(found.etag)),
        None => (Head::new(key), None),
    };
    let mut taken = changes.len();
    loop {
        let mut head = head.clone();
        let changes = &changes[..taken];
        for change in changes {
            take_out(&mut head.postings, &change.post_id);
        }
        head.postings.extend(changes.iter().filter_map(|change| change.new.clone()));
        head.df = head.postings.len() as u64;
        if head.postings.is_empty() {
            let delete =
                etag.map(|etag| WriteOp::Delete { id: HEAD_ID.into(), if_match: Some(etag) });
            return Ok((delete.into_iter().collect(), (0..taken).collect()));
        }
        if head.postings.len() <= INLINE_POSTINGS {
            return Ok((vec![write(&head, etag, HEAD_ID)?], (0..taken).collect()));
        }
        // Past the inline bound: every posting into its tier's chunks, each tier spread over as
        // many as its postings need, in the same batch. Upserted: a chunk left by postings whose
        // record was lost is garbage, and every write of the word's items is conditional on its
        // head, so nothing else writes them meanwhile.
        let chunks = spill(&mut head);
        // One place kept for the head; a single change always fits (33 postings, 33 chunks).
        if chunks.len() < MAX_BATCH || taken == 1 {
            let mut operations = vec![write(&head, etag, HEAD_ID)?];
            for chunk in chunks {
                operations.push(WriteOp::Upsert { document: document(&chunk)?, if_match: None });
            }
            return Ok((operations, (0..taken).collect()));
        }
        taken = (taken * (MAX_BATCH - 1) / chunks.len()).clamp(1, taken - 1);
    }
}

/// Moves `head`'s postings into chunks: each tier spread over the fewest buckets (a power of
/// two) that leave it uncrowded. Answers the chunks.
fn spill(head: &mut Head) -> Vec<Chunk> {
    let mut counts: BTreeMap<u16, u64> = BTreeMap::new();
    for entry in &head.postings {
        *counts.entry(tier(entry.1)).or_default() += 1;
    }
    for (tier, count) in counts {
        let spread = head.spread_mut(tier);
        spread.count = count;
        while spread.crowded() {
            spread.buckets *= 2;
        }
    }
    let mut chunks: BTreeMap<String, Chunk> = BTreeMap::new();
    for entry in std::mem::take(&mut head.postings) {
        let tier = tier(entry.1);
        let id = chunk_id(tier, head.spread(tier).bucket(&entry.0));
        chunks
            .entry(id.clone())
            .or_insert_with(|| Chunk::new(&head.word, id, tier))
            .postings
            .push(entry);
    }
    head.spilled = true;
    chunks.into_values().collect()
}

/// A word whose postings are in chunks: the chunks each change's posting may be in are read,
/// it is taken out of them and put in its new one, and the head's counts follow. Answers the
/// batch and which of `changes` (their places, ascending) it makes: as many as one batch's
/// chunks hold.
async fn spilled(
    state: &AppState,
    key: &str,
    found: Versioned<Head>,
    changes: &[&WordChange],
) -> AppResult<(Vec<WriteOp>, Vec<usize>)> {
    let head_etag = found.etag;
    let mut head = found.item;
    // Where each change may touch: the tiers of its old impacts, and its new one's. Every
    // change whose chunks the batch has room for is taken, not only the first ones: thousands
    // of postings coming at once fill a few batches, each of their chunks written once.
    let mut places: Vec<(usize, Vec<(u16, String)>)> = Vec::new();
    let mut wanted: BTreeMap<String, u16> = BTreeMap::new();
    for (at, change) in changes.iter().enumerate() {
        let place = |tier: u16| (tier, chunk_id(tier, head.spread(tier).bucket(&change.post_id)));
        let mut touched: Vec<(u16, String)> =
            change.old.iter().map(|impact| place(tier(*impact))).collect();
        touched.extend(change.new.as_ref().map(|entry| place(tier(entry.1))));
        touched.sort_unstable();
        touched.dedup();
        let fresh = touched.iter().filter(|(_, id)| !wanted.contains_key(id)).count();
        // The head is written too: one place kept for it.
        if !places.is_empty() && wanted.len() + fresh + 1 > MAX_BATCH {
            continue;
        }
        wanted.extend(touched.iter().map(|(tier, id)| (id.clone(), *tier)));
        places.push((at, touched));
    }
    let taken = places.iter().map(|(at, _)| *at).collect();
    let reads: Vec<_> = wanted
        .iter()
        .map(|(id, tier)| async move {
            let chunk = read::<Chunk>(state, key, id).await?;
            AppResult::Ok((id.clone(), *tier, chunk))
        })
        .collect();
    let read_chunks: Vec<(String, u16, Option<Versioned<Chunk>>)> =
        futures::stream::iter(reads).buffer_unordered(CONCURRENT_WORDS).try_collect().await?;
    let mut chunks: BTreeMap<String, (Chunk, Option<String>, Vec<Entry>)> = read_chunks
        .into_iter()
        .map(|(id, tier, chunk)| {
            let (item, etag) = match chunk {
                Some(found) => (found.item, Some(found.etag)),
                None => (Chunk::new(key, id.clone(), tier), None),
            };
            let before = item.postings.clone();
            (id, (item, etag, before))
        })
        .collect();
    for (at, touched) in &places {
        let change = changes[*at];
        for (tier, id) in touched {
            let Some((chunk, _, _)) = chunks.get_mut(id) else { continue };
            if take_out(&mut chunk.postings, &change.post_id) {
                head.df = head.df.saturating_sub(1);
                let spread = head.spread_mut(*tier);
                spread.count = spread.count.saturating_sub(1);
            }
        }
        if let Some(entry) = &change.new {
            let tier = tier(entry.1);
            let id = chunk_id(tier, head.spread(tier).bucket(&change.post_id));
            if let Some((chunk, _, _)) = chunks.get_mut(&id) {
                chunk.postings.push(entry.clone());
                head.df += 1;
                head.spread_mut(tier).count += 1;
            }
        }
    }
    let mut operations = Vec::new();
    for (id, (chunk, etag, before)) in chunks {
        if chunk.postings == before {
            continue;
        }
        operations.push(match (chunk.postings.is_empty(), etag) {
            (true, Some(etag)) => WriteOp::Delete { id, if_match: Some(etag) },
            (true, None) => continue,
            (false, etag) => write(&chunk, etag, &id)?,
        });
    }
    operations.push(if head.df == 0 {
        WriteOp::Delete { id: HEAD_ID.into(), if_match: Some(head_etag) }
    } else {
        write(&head, Some(head_etag), HEAD_ID)?
    });
    Ok((operations, taken))
}

/// Splits the chunks of the tiers that `coming` postings would crowd, one after another as
/// linear hashing orders them, as many as one batch holds: about half of each split chunk's
/// postings move to a new chunk, with the head's spreads, in one batch. The postings' own
/// changes come after, read anew.
async fn split(
    state: &AppState,
    key: &str,
    mut head: Head,
    etag: String,
    coming: &BTreeMap<u16, u64>,
) -> AppResult<Vec<WriteOp>> {
    // Each chunk touched: as it will be written, its etag as read (`None`: it was not there).
    let mut touched: BTreeMap<String, (Chunk, Option<String>)> = BTreeMap::new();
    'tiers: for (&tier, &count) in coming {
        loop {
            let mut spread = head.spread(tier);
            spread.count += count;
            if !spread.crowded() {
                break;
            }
            // Two chunks a split; one place kept for the head.
            if touched.len() + 2 >= MAX_BATCH {
                break 'tiers;
            }
            let spread = head.spread_mut(tier);
            let (from, to) = spread.split_next();
            let spread = *spread;
            let (from_id, to_id) = (chunk_id(tier, from), chunk_id(tier, to));
            if !touched.contains_key(&from_id) {
                let chunk = match read::<Chunk>(state, key, &from_id).await? {
                    Some(found) => (found.item, Some(found.etag)),
                    None => (Chunk::new(key, from_id.clone(), tier), None),
                };
                touched.insert(from_id.clone(), chunk);
            }
            let (chunk, _) = touched.get_mut(&from_id).expect("just read");
            let (stay, moved): (Vec<Entry>, Vec<Entry>) = std::mem::take(&mut chunk.postings)
                .into_iter()
                .partition(|entry| spread.bucket(&entry.0) == from);
            chunk.postings = stay;
            // A new bucket's chunk: any item of its id is garbage (see `inline`), replaced.
            let mut new_chunk = Chunk::new(key, to_id.clone(), tier);
            new_chunk.postings = moved;
            touched.insert(to_id, (new_chunk, None));
        }
    }
    let mut operations = vec![write(&head, Some(etag), HEAD_ID)?];
    for (id, (chunk, etag)) in touched {
        operations.push(match (chunk.postings.is_empty(), etag) {
            (true, Some(etag)) => WriteOp::Delete { id, if_match: Some(etag) },
            (true, None) => continue,
            (false, Some(etag)) => write(&chunk, Some(etag), &id)?,
            (false, None) => WriteOp::Upsert { document: document(&chunk)?, if_match: None },
        });
    }
    Ok(operations)
}

/// A pause of up to a few milliseconds, longer with each attempt, with a jitter taken from
/// the clock, so that two writers that met do not wait alike and meet again.
fn backoff(attempt: u32) -> std::time::Duration {
    let jitter = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.subsec_micros() % 1000);
    std::time::Duration::from_micros(u64::from(attempt.min(8) * 500 + jitter))
}

/// A point read of the index, with its etag.
async fn read<T: DeserializeOwned>(
    state: &AppState,
    partition_key: &str,
    id: &str,
) -> AppResult<Option<Versioned<T>>> {
    Ok(state.store.read_versioned(Container::Words, partition_key, id).await?)
}

/// A write of `item`: a replace on `etag`, or a create where there was none.
fn write<T: Serialize>(item: &T, etag: Option<String>, id: &str) -> AppResult<WriteOp> {
    let document = document(item)?;
    Ok(match etag {
        Some(etag) => WriteOp::Replace { id: id.into(), document, if_match: Some(etag) },
        None => WriteOp::Create { document },
    })
}

fn document<T: Serialize>(item: &T) -> AppResult<serde_json::Value> {
    Ok(serde_json::to_value(item).map_err(|error| {
        StoreError::json("an item of the search index does not serialize", error)
    })?)
}

/// Whether `error` is a conditional write that lost to another writer: read again, and retry.
fn lost_race(error: &crate::app::AppError) -> bool {
    matches!(
        error,
        crate::app::AppError::Store(
            StoreError::PreconditionFailed | StoreError::Conflict | StoreError::NotFound
        )
    )
}

fn contended(post_id: &str) -> crate::app::AppError {
    StoreError::CopyKeptChanging { post_id: post_id.to_owned(), container: Container::Words }.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn new_posting(n: usize, impact: u16) -> WordChange {
        let post_id = format!("post-{n}");
        WordChange {
            post_id: post_id.clone(),
            old: Vec::new(),
            new: Some(Entry(post_id, impact, 4)),
        }
    }

    #[test]
    fn a_new_word_of_thousands_of_postings_is_spilled_into_one_batch_at_most() {
        // 40,000 postings over 4 tiers: 10,000 a tier want 128 chunks each, far past a batch.
        let changes: Vec<WordChange> =
            (0..40_000).map(|n| new_posting(n, 100 + 16 * (n % 4) as u16)).collect();
        let changes: Vec<&WordChange> = changes.iter().collect();
        let (operations, taken) = inline("kite", None, &changes).unwrap();
        assert!(operations.len() <= MAX_BATCH, "{} operations", operations.len());
        let taken = taken.len();
        assert!((1..changes.len()).contains(&taken), "took {taken}");
        let WriteOp::Create { document } = &operations[0] else { panic!("the head first") };
        let head: Head = serde_json::from_value(document.clone()).unwrap();
        assert_eq!(head.df, taken as u64);
        assert!(head.tiers.values().all(|spread| !spread.crowded()), "{:?}", head.tiers);
    }

    #[test]
    fn a_few_postings_past_the_inline_bound_fill_one_chunk_a_tier() {
        let changes: Vec<WordChange> = (0..40).map(|n| new_posting(n, 500)).collect();
        let changes: Vec<&WordChange> = changes.iter().collect();
        let (operations, taken) = inline("kite", None, &changes).unwrap();
        assert_eq!((operations.len(), taken.len()), (2, 40));
    }
}
