//! Keeping the index: a post's postings written where its words are, and only those that changed.
//!
//! A change of a post is three steps, each safe to repeat. First its record in `§docs` is
//! written with the new postings and `pending`, with the statistics in the same batch. Then
//! each word whose posting changed is mended in its own partition: a batch on its head (and
//! chunks) conditional on their etags, so two posts sharing a word never lose one's posting.
//! Last the record's `pending` is cleared (or the record deleted, for a post no longer indexed).
//! A delivery that fails half-way is delivered again and finds `pending`: it finishes the words
//! from the record's `wordsBefore` and `words`.
//!
//! Only published posts are indexed. A draft or scheduled post has no record, and a post sent
//! back to draft, or deleted, is taken out. A comment or like changes the post but not its
//! text: one point read of the record, and its hash says nothing changed.

use std::collections::BTreeMap;

use futures::{StreamExt, TryStreamExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::app::copies::{PostVersion, current_post};
use crate::app::{AppResult, AppState};
use crate::cosmos::{Container, StoreError, Versioned, WriteOp};
use crate::model::markdown::to_plain_text;
use crate::model::search::index::{
    Chunk, DOCS, Doc, Entry, HEAD_ID, Head, INDEX_RULES, INLINE_POSTINGS, STATS_ID, Stats,
    chunk_id, take_out, text_hash, tier,
};
use crate::model::search::{Language, Posting, postings};
use crate::model::{self, CopyAction, Post, SourceVersion};

/// How often a conditional write that lost a race is tried again, with fresh reads.
const ATTEMPTS: usize = 10;

/// How often a word's mending is tried again after another post's change of the word came
/// first. A delivery indexes several posts at once, and common words are in all of them.
const WORD_ATTEMPTS: u32 = 40;

/// How many posts of a delivery are indexed at once.
const CONCURRENT_POSTS: usize = 4;

/// How many words' partitions one post's change mends at once.
const CONCURRENT_WORDS: usize = 8;

/// Brings the index up to each delivered post: its words indexed if it is published and live,
/// taken out if it is not. One point read for a post whose text has not changed.
pub(crate) async fn index_posts(state: &AppState, posts: &[PostVersion]) -> AppResult<()> {
    // Posts at once, as their copies in `users` are: each has its own record, and a word two
    // of them share is written conditionally.
    // The futures made first: a stream mapping through a closure would not be `Send` for
    // every lifetime, as the change-feed tasks need (as in `copy_posts`).
    let indexed: Vec<_> = posts.iter().map(|post| index_post(state, post)).collect();
    futures::stream::iter(indexed)
        .buffer_unordered(CONCURRENT_POSTS)
        .try_collect::<Vec<()>>()
        .await?;
    Ok(())
}

/// Takes a deleted post out of the index (its tombstone's delivery).
pub(crate) async fn unindex_post(state: &AppState, post: &Post) -> AppResult<()> {
    for _ in 0..ATTEMPTS {
        let doc = read::<Doc>(state, DOCS, &post.id).await?;
        let Some(found) = doc else { return Ok(()) };
        let source = found.item.source.clone();
        match change(state, &post.id, Some(found), None, source).await {
            Err(error) if lost_race(&error) => continue,
            other => return other,
        }
    }
    Err(contended(&post.id))
}

async fn index_post(state: &AppState, delivered: &PostVersion) -> AppResult<()> {
    let post_id = &delivered.post.id;
    for _ in 0..ATTEMPTS {
        let doc = read::<Doc>(state, DOCS, post_id).await?;
        let source = delivered.source();
        let current =
            match model::copy_action(doc.as_ref().map(|found| &found.item.source), &source) {
                // An older version, or this one: nothing to do but finish an interrupted change.
                CopyAction::Keep => match &doc {
                    Some(found) if found.item.pending || found.item.rules != INDEX_RULES => {
                        current_post(state, post_id).await?
                    }
                    _ => return Ok(()),
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
            return Ok(());
        }
        if doc.is_none() && wanted.is_none() {
            return Ok(());
        }
        match change(state, post_id, doc, wanted.map(|version| version.post), source).await {
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

/// The three steps: the record (and statistics), the words, the record again.
async fn change(
    state: &AppState,
    post_id: &str,
    doc: Option<Versioned<Doc>>,
    wanted: Option<Post>,
    source: SourceVersion,
) -> AppResult<()> {
    let stats = read::<Stats>(state, DOCS, STATS_ID).await?;
    let average = stats.as_ref().map_or(0.0, |found| found.item.average_body());
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
    let record = match &wanted {
        Some(post) => {
            let plain = to_plain_text(&post.content, false);
            let language = Language::detect(&format!("{}\n{plain}", post.title));
            let (words, lengths) = postings(&post.title, &post.tags, &plain, language, average);
            Doc {
                id: post_id.into(),
                word: DOCS.into(),
                kind: "doc".into(),
                source,
                rules: INDEX_RULES,
                hash: hash(post),
                language,
                body_words: lengths.body,
                words,
                words_before: before.clone(),
                pending: true,
            }
        }
        None => Doc {
            id: post_id.into(),
            word: DOCS.into(),
            kind: "doc".into(),
            source,
            rules: INDEX_RULES,
            hash: String::new(),
            language: Language::English,
            body_words: 0,
            words: Vec::new(),
            words_before: before.clone(),
            pending: true,
        },
    };
    let new_indexed = record.indexed();
    // A post with no word to index (its words all stop words) has no record: nothing to write.
    if doc.is_none() && !new_indexed {
        return Ok(());
    }
    let new_body = if new_indexed { record.body_words } else { 0 };
    // Step 1: the record, pending, and the statistics, in one batch.
    let mut counts = stats.as_ref().map_or_else(Stats::new, |found| found.item.clone());
    counts.posts = (counts.posts + u64::from(new_indexed)).saturating_sub(u64::from(old_indexed));
    counts.body_words =
        (counts.body_words + u64::from(new_body)).saturating_sub(u64::from(old_body));
    let mut batch = vec![write(&record, doc.as_ref().map(|found| found.etag.clone()), &record.id)?];
    if counts != stats.as_ref().map_or_else(Stats::new, |found| found.item.clone()) {
        batch.push(write(&counts, stats.map(|found| found.etag), STATS_ID)?);
    }
    state
        .store
        .execute_batch(Container::Words, DOCS, batch)
        .await
        .map_err(StoreError::of_failed_operation)?;
    // Step 2: each word whose posting changed.
    // A pending record's words may not all be written: each is written again.
    let redo = doc.as_ref().is_some_and(|found| found.item.pending);
    let changes = word_changes(&before, &record.words, redo);
    let mended: Vec<_> = changes
        .iter()
        .map(|(key, old, new)| mend_word(state, key, post_id, old, new.clone()))
        .collect();
    futures::stream::iter(mended)
        .buffer_unordered(CONCURRENT_WORDS)
        .try_collect::<Vec<()>>()
        .await?;
    // Step 3: the record finished, or gone with the post's last word.
    let Some(written) = read::<Doc>(state, DOCS, post_id).await? else { return Ok(()) };
    if written.item != record {
        // Changed by another delivery meanwhile: it finishes its own change.
        return Ok(());
    }
    let finish = if new_indexed {
        let done = Doc { words_before: Vec::new(), pending: false, ..record };
        write(&done, Some(written.etag), post_id)?
    } else {
        WriteOp::Delete { id: post_id.into(), if_match: Some(written.etag) }
    };
    match state.store.execute_write(Container::Words, DOCS, finish).await {
        Ok(()) | Err(StoreError::PreconditionFailed | StoreError::NotFound) => Ok(()),
        Err(other) => Err(other.into()),
    }
}

impl Doc {
    /// A record kept only while its post's words are taken out: it no longer counts.
    fn pending_removal(&self) -> bool {
        self.pending && self.words.is_empty()
    }
}

/// Each key whose posting changes: the impacts it may have had (where it may lie), and what it
/// becomes (`None`: taken out).
fn word_changes(
    before: &[Posting],
    after: &[Posting],
    redo: bool,
) -> Vec<(String, Vec<u16>, Option<Entry>)> {
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
            let impacts = old.iter().map(|posting| posting.impact).collect();
            let new = new.map(|posting| Entry(String::new(), posting.impact, posting.fields));
            Some((key.to_owned(), impacts, new))
        })
        .collect()
}

/// Sets `post_id`'s posting under `key` to `new` (or none), wherever it was (`old`: the impacts
/// it may have had), keeping the head's count exact. Conditional on every item read.
async fn mend_word(
    state: &AppState,
    key: &str,
    post_id: &str,
    old: &[u16],
    new: Option<Entry>,
) -> AppResult<()> {
    let new = new.map(|Entry(_, impact, fields)| Entry(post_id.to_owned(), impact, fields));
    for attempt in 0..WORD_ATTEMPTS {
        let head = read::<Head>(state, key, HEAD_ID).await?;
        // A split of a crowded tier is a batch of its own; the posting's change comes after.
        let mut split_first = false;
        let operations = match head {
            None if new.is_none() => return Ok(()),
            None => {
                let mut head = Head::new(key);
                head.df = 1;
                head.postings.extend(new.clone());
                vec![write(&head, None, HEAD_ID)?]
            }
            Some(found) if !found.item.spilled => inline(key, found, post_id, new.clone())?,
            Some(found) => {
                let crowded = new.as_ref().map(|entry| tier(entry.1));
                match crowded.filter(|tier| found.item.spread(*tier).crowded()) {
                    Some(tier) => {
                        split_first = true;
                        split(state, key, found.item, found.etag, tier).await?
                    }
                    None => spilled(state, key, found, post_id, old, new.clone()).await?,
                }
            }
        };
        let written = state.store.execute_batch(Container::Words, key, operations).await;
        match written.map_err(StoreError::of_failed_operation) {
            Ok(()) if split_first => {}
            Ok(()) => return Ok(()),
            // Another post's change of the word came first: read again, and redo, after a
            // pause that differs from post to post so that the next tries do not meet again.
            Err(StoreError::PreconditionFailed | StoreError::Conflict | StoreError::NotFound) => {
                tokio::time::sleep(backoff(post_id, attempt)).await;
            }
            Err(other) => return Err(other.into()),
        }
    }
    Err(contended(post_id))
}

/// A word whose head holds its postings: mended there, moved into chunks once too many.
fn inline(
    key: &str,
    found: Versioned<Head>,
    post_id: &str,
    new: Option<Entry>,
) -> AppResult<Vec<WriteOp>> {
    let mut head = found.item;
    take_out(&mut head.postings, post_id);
    head.postings.extend(new);
    head.df = head.postings.len() as u64;
    if head.postings.is_empty() {
        return Ok(vec![WriteOp::Delete { id: HEAD_ID.into(), if_match: Some(found.etag) }]);
    }
    if head.postings.len() <= INLINE_POSTINGS {
        return Ok(vec![write(&head, Some(found.etag), HEAD_ID)?]);
    }
    // Past the inline bound: every posting into its tier's first chunk, in the same batch.
    // Upserted: a chunk left by postings whose record was lost is garbage, and every write of
    // the word's items is conditional on its head, so nothing else writes them meanwhile.
    let mut chunks: BTreeMap<u16, Chunk> = BTreeMap::new();
    for entry in std::mem::take(&mut head.postings) {
        let tier = tier(entry.1);
        head.spread_mut(tier).count += 1;
        let chunk = chunks.entry(tier).or_insert_with(|| Chunk::new(key, chunk_id(tier, 0), tier));
        chunk.postings.push(entry);
    }
    head.spilled = true;
    let mut operations = vec![write(&head, Some(found.etag), HEAD_ID)?];
    for chunk in chunks.values() {
        operations.push(WriteOp::Upsert { document: document(chunk)?, if_match: None });
    }
    Ok(operations)
}

/// A word whose postings are in chunks: the chunks the posting may be in are read, it is
/// taken out of them and put in its new one, and the head's counts follow.
async fn spilled(
    state: &AppState,
    key: &str,
    found: Versioned<Head>,
    post_id: &str,
    old: &[u16],
    new: Option<Entry>,
) -> AppResult<Vec<WriteOp>> {
    let mut head = found.item;
    let place = |head: &Head, tier: u16| chunk_id(tier, head.spread(tier).bucket(post_id));
    let mut places: Vec<(u16, String)> =
        old.iter().map(|impact| (tier(*impact), place(&head, tier(*impact)))).collect();
    let new_place = new.as_ref().map(|entry| (tier(entry.1), place(&head, tier(entry.1))));
    places.extend(new_place.clone());
    places.sort_unstable();
    places.dedup();
    let mut operations = Vec::new();
    for (tier, id) in places {
        let chunk = read::<Chunk>(state, key, &id).await?;
        let (mut item, etag) = match chunk {
            Some(found) => (found.item, Some(found.etag)),
            None => (Chunk::new(key, id.clone(), tier), None),
        };
        let before = item.postings.clone();
        if take_out(&mut item.postings, post_id) {
            head.df = head.df.saturating_sub(1);
            let spread = head.spread_mut(tier);
            spread.count = spread.count.saturating_sub(1);
        }
        if new_place.as_ref().is_some_and(|(_, place)| *place == id) {
            item.postings.extend(new.clone());
            head.df += 1;
            head.spread_mut(tier).count += 1;
        }
        if item.postings == before {
            continue;
        }
        operations.push(match (item.postings.is_empty(), etag) {
            (true, Some(etag)) => WriteOp::Delete { id, if_match: Some(etag) },
            (true, None) => continue,
            (false, etag) => write(&item, etag, &id)?,
        });
    }
    if head.df == 0 {
        operations.push(WriteOp::Delete { id: HEAD_ID.into(), if_match: Some(found.etag) });
    } else {
        operations.push(write(&head, Some(found.etag), HEAD_ID)?);
    }
    Ok(operations)
}

/// Splits the next chunk of a crowded tier: about half of its postings move to a new chunk,
/// with the head's spread, in one batch. The posting's own change comes after, read anew.
async fn split(
    state: &AppState,
    key: &str,
    mut head: Head,
    etag: String,
    tier: u16,
) -> AppResult<Vec<WriteOp>> {
    let spread = head.spread_mut(tier);
    let (from, to) = spread.split_next();
    let spread = *spread;
    let (from_id, to_id) = (chunk_id(tier, from), chunk_id(tier, to));
    let chunk = read::<Chunk>(state, key, &from_id).await?;
    let mut operations = vec![write(&head, Some(etag), HEAD_ID)?];
    if let Some(found) = chunk {
        let (stay, moved): (Vec<Entry>, Vec<Entry>) =
            found.item.postings.iter().cloned().partition(|entry| spread.bucket(&entry.0) == from);
        let mut kept = found.item.clone();
        kept.postings = stay;
        operations.push(if kept.postings.is_empty() {
            WriteOp::Delete { id: from_id, if_match: Some(found.etag) }
        } else {
            write(&kept, Some(found.etag), &kept.id)?
        });
        if !moved.is_empty() {
            let mut new_chunk = Chunk::new(key, to_id, tier);
            new_chunk.postings = moved;
            operations.push(WriteOp::Upsert { document: document(&new_chunk)?, if_match: None });
        }
    }
    Ok(operations)
}

/// A pause of up to a few milliseconds, longer with each attempt, spread by the post's id.
fn backoff(post_id: &str, attempt: u32) -> std::time::Duration {
    let spread = post_id.bytes().fold(attempt, |sum, byte| sum.wrapping_mul(31) ^ u32::from(byte));
    std::time::Duration::from_micros(u64::from(attempt.min(8) * 500 + spread % 1000))
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
