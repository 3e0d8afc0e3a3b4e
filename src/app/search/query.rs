//! Answering a search: Q8, a few single-partition reads whatever the number of posts.
//!
//! 1. The query is parsed ([`parse`]); its words' heads and the statistics are point reads.
//! 2. Candidates come from the rarest required word only: its head's postings, or its chunks,
//!    best tier first, a page of chunks a round.
//! 3. Point reads of the candidates' records give their postings under every key the query names:
//!    a post missing a required word, or having an excluded one, drops out; the rest are scored
//!    `Σ idf × impact` (BM25F, [`crate::model::search`]).
//! 4. A round ends the search once the page is full of results that no unread posting could
//!    beat: the rarest word's next tier bounds what is left. At most [`MAX_ROUNDS`] rounds; past
//!    that the answer says it is not `complete`.
//! 5. The page's posts are point-read, for what a result shows and for the phrases' check.
//!
//! Paging is stable while posts are written: the token keeps the statistics page 1 scored with
//! and the last result's place, and the next page starts strictly after it.

use std::collections::{BTreeSet, HashMap, HashSet};

use futures::{StreamExt, TryStreamExt};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use utoipa::ToSchema;

use crate::app::lists::{unwrap_token, wrap_token};
use crate::app::{AppError, AppResult, AppState, BadInput};
use crate::cosmos::{Container, PageRequest, queries};
use crate::model::markdown::to_plain_text;
use crate::model::search::index::{
    Chunk, Doc, Entry, HEAD_ID, Head, STATS_ID, SUMMARY, Stats, record_partition, tier_ceiling,
};
use crate::model::search::{Language, Query, Segment, Term, idf, parse, snippet, surface};
use crate::model::{self, Post};

/// The most rounds of candidates one page reads. Four pages of a common word's chunks hold the
/// best few thousand of its postings.
const MAX_ROUNDS: usize = 4;

/// How many chunks of a word are read at once: about 256 postings, whatever the number of posts
/// (a chunk holds about `CHUNK_POSTINGS`).
const CHUNKS_A_ROUND: u32 = 2;

/// How many candidates a round scores, the best by the rarest word's impact: a point read of
/// each one's record. At most 4 rounds: 256 records a search.
const CANDIDATES_A_ROUND: usize = 64;

/// How many records are read at once.
const CONCURRENT_READS: usize = 16;

/// The results a page shows unless asked for fewer.
pub(crate) const DEFAULT_RESULTS: u32 = 10;
/// The most results a page shows: each is a point read of its post.
pub(crate) const MAX_RESULTS: u32 = 25;

/// How long a snippet is, in bytes of its text.
const SNIPPET_BYTES: usize = 200;

/// A page of results.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SearchPage {
    /// The posts found, best first.
    pub items: Vec<Found>,
    /// Authors whose name is the query (first page only).
    pub authors: Vec<AuthorFound>,
    /// Tags the query names that have posts (first page only).
    pub tags: Vec<String>,
    /// Whether every posting that could rank on this page was read: `false` when the words
    /// seldom meet and the search stopped after its rounds.
    pub complete: bool,
    /// Where the next page starts (`None`: this is the last page); opaque, signed.
    pub continuation_token: Option<String>,
}

/// A post found: its short form, its snippet, its score.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Found {
    pub post: Post,
    /// The text around the first match, the matches marked.
    pub snippet: Vec<SnippetPart>,
    /// How well it matches (BM25F): only its order means anything.
    pub score: f64,
}

/// A piece of a snippet.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub(crate) struct SnippetPart {
    pub text: String,
    /// Whether it is a word that matched.
    pub marked: bool,
}

/// An author whose name is the query.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AuthorFound {
    pub user_id: String,
    pub username: String,
}

/// Where a page ended, and the statistics the first page scored with.
#[derive(Serialize, Deserialize)]
struct Cursor {
    posts: u64,
    df: Vec<u64>,
    score: f64,
    id: String,
}

/// A candidate scored, with its language when its record was read.
#[derive(Clone, Debug)]
struct Scored {
    score: f64,
    id: String,
    language: Option<Language>,
}

/// Q8: the posts that have every required word of `text` (in any of its forms) and none of the
/// excluded, best first, `limit` a page.
pub(crate) async fn search(
    state: &AppState,
    text: &str,
    limit: Option<u32>,
    continuation_token: Option<&str>,
) -> AppResult<SearchPage> {
    let query = parse(text).map_err(|why| AppError::Invalid(BadInput::Search(why)))?;
    let limit = limit.unwrap_or(DEFAULT_RESULTS);
    if !(1..=MAX_RESULTS).contains(&limit) {
        return Err(AppError::Invalid(BadInput::SearchLimit(limit)));
    }
    let limit = limit as usize;
    let list_key = query_key(&query);
    let cursor: Option<Cursor> = continuation_token
        .map(|token| {
            let inner = unwrap_token(&state.tokens, token, "search", &list_key)?;
            serde_json::from_str(&inner).map_err(|_| AppError::Invalid(BadInput::ContinuationToken))
        })
        .transpose()?;

    // The keys and their heads, and the statistics: point reads, at once.
    let keys: Vec<String> = query
        .required
        .iter()
        .chain(&query.excluded)
        .flat_map(|term| term.keys.iter().cloned())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let reads: Vec<_> = keys.iter().map(|key| read_head(state, key)).collect();
    let (heads, stats) = futures::future::join(
        futures::future::try_join_all(reads),
        state.store.read::<Stats>(Container::Words, SUMMARY, STATS_ID),
    )
    .await;
    let heads = heads?;
    let stats = stats?.unwrap_or_else(|| Stats::new(SUMMARY));
    let (posts, df): (u64, Vec<u64>) = match &cursor {
        Some(cursor) if cursor.df.len() == keys.len() => (cursor.posts, cursor.df.clone()),
        _ => (stats.posts, heads.iter().map(|head| head.as_ref().map_or(0, |h| h.df)).collect()),
    };
    let df_of = |key: &str| keys.iter().position(|each| each == key).map_or(0, |at| df[at]);
    let term_idf = |term: &Term| idf(posts, term.keys.iter().map(|key| df_of(key)).sum());

    // The rarest required word gives the candidates.
    let Some(rarest) = query
        .required
        .iter()
        .min_by_key(|term| term.keys.iter().map(|key| df_of(key)).sum::<u64>())
    else {
        return Ok(empty(true));
    };
    let others_bound: f64 =
        query.required.iter().filter(|term| *term != rarest).map(&term_idf).sum();
    let rarest_idf = term_idf(rarest);
    let mut sources: Vec<Source> = rarest
        .keys
        .iter()
        .filter_map(|key| {
            let head = heads[keys.iter().position(|each| each == key)?].clone()?;
            Some(Source::new(key.clone(), head))
        })
        .collect();
    // One word, nothing excluded: a posting's impact is the score, and no record is read.
    let direct = query.required.len() == 1 && query.excluded.is_empty();
    let mut direct_scores: HashMap<String, f64> = HashMap::new();
    let mut seen = HashSet::new();
    let mut results: Vec<Scored> = Vec::new();
    let mut complete = false;
    let after = |scored: &Scored| match &cursor {
        None => true,
        Some(cursor) => ranks_after(scored, cursor),
    };
    for _ in 0..MAX_ROUNDS {
        let mut candidates = Vec::new();
        for source in sources.iter_mut().filter(|source| !source.done) {
            let want = if direct { usize::MAX } else { CANDIDATES_A_ROUND };
            for Entry(id, impact, _) in source.next(state, want).await? {
                if direct {
                    let score = rarest_idf * f64::from(impact) / 1000.0;
                    let best = direct_scores.entry(id).or_insert(score);
                    *best = best.max(score);
                } else if seen.insert(id.clone()) {
                    candidates.push(id);
                }
            }
        }
        if direct {
            results = direct_scores
                .iter()
                .map(|(id, score)| Scored { score: *score, id: id.clone(), language: None })
                .collect();
        }
        results.extend(score(state, &query, &candidates, &term_idf).await?);
        if sources.iter().all(|source| source.done) {
            complete = true;
            break;
        }
        let ceiling = sources.iter().map(|source| source.ceiling).max().unwrap_or(0);
        let bound = rarest_idf * f64::from(ceiling) / 1000.0 + others_bound;
        // One more than the page: whether a next page exists is known too.
        if results.iter().filter(|scored| after(scored) && scored.score > bound).count() > limit {
            complete = true;
            break;
        }
    }
    results.retain(|scored| after(scored));
    results.sort_by(order);
    // Phrases are checked on the posts' text: a page with phrases reads more to fill itself.
    let wanted = if query.phrases.is_empty() && query.excluded_phrases.is_empty() {
        limit
    } else {
        limit * 2
    };
    let more = results.len() > wanted || !complete;
    results.truncate(wanted);
    let mut items = Vec::new();
    let mut last = None;
    let marked = query.marked_keys();
    for scored in results {
        if items.len() == limit {
            break;
        }
        last = Some(scored.clone());
        let Some(post) = state.store.read::<Post>(Container::Posts, &scored.id, &scored.id).await?
        else {
            continue;
        };
        // The index follows the change feed: a post deleted or unpublished since is not shown.
        if !model::is_live(&post) || !post.status.is_published() {
            continue;
        }
        let plain = to_plain_text(&post.content, false);
        let whole = format!("{}\n{plain}", post.title);
        if !phrases_hold(&query, &whole) {
            continue;
        }
        let language = scored.language.unwrap_or_else(|| Language::detect(&whole));
        let segments = snippet(&plain, language, &marked, SNIPPET_BYTES);
        items.push(Found {
            post: model::short_post(&post),
            snippet: segments.into_iter().map(SnippetPart::from).collect(),
            score: scored.score,
        });
    }
    let continuation_token = match (&last, more) {
        (Some(last), true) => {
            let cursor = Cursor { posts, df: df.clone(), score: last.score, id: last.id.clone() };
            let inner = serde_json::to_string(&cursor).expect("a cursor serializes");
            wrap_token(&state.tokens, Some(inner), "search", &list_key)
        }
        _ => None,
    };
    let (authors, tags) = if cursor.is_none() {
        (authors_named(state, text).await?, tags_named(state, text).await?)
    } else {
        (Vec::new(), Vec::new())
    };
    Ok(SearchPage { items, authors, tags, complete, continuation_token })
}

impl From<Segment> for SnippetPart {
    fn from(segment: Segment) -> SnippetPart {
        SnippetPart { text: segment.text, marked: segment.marked }
    }
}

fn empty(complete: bool) -> SearchPage {
    SearchPage {
        items: Vec::new(),
        authors: Vec::new(),
        tags: Vec::new(),
        complete,
        continuation_token: None,
    }
}

/// What a token is bound to: the query as parsed, so that "Kites" and "kites " share pages.
fn query_key(query: &Query) -> String {
    let mut hash = Sha256::new();
    for (kind, terms) in [("+", &query.required), ("-", &query.excluded)] {
        for term in terms {
            hash.update(kind);
            hash.update(term.keys.join(" "));
            hash.update("\n");
        }
    }
    for (kind, phrases) in [("\"", &query.phrases), ("-\"", &query.excluded_phrases)] {
        for phrase in phrases {
            hash.update(kind);
            for term in phrase {
                hash.update(&term.surface);
                hash.update(" ");
            }
        }
    }
    hash.finalize().iter().take(16).map(|byte| format!("{byte:02x}")).collect()
}

/// Results best first: score, then the post's id, so that equal scores keep one order.
fn order(a: &Scored, b: &Scored) -> std::cmp::Ordering {
    b.score.total_cmp(&a.score).then_with(|| a.id.cmp(&b.id))
}

/// Whether `scored` comes strictly after the cursor's place.
fn ranks_after(scored: &Scored, cursor: &Cursor) -> bool {
    let place = Scored { score: cursor.score, id: cursor.id.clone(), language: None };
    order(&place, scored) == std::cmp::Ordering::Less
}

/// A word's postings, read a batch at a time: the head's, or its chunks best tier first.
struct Source {
    key: String,
    head: Option<Head>,
    continuation: Option<String>,
    /// Whether every chunk has been read.
    chunks_read: bool,
    /// Postings read and not yet handed out, best last.
    held: Vec<Entry>,
    /// The highest impact a posting of the chunks not yet read may have.
    unread_ceiling: u16,
    done: bool,
    /// The highest impact a posting not yet handed out may have.
    ceiling: u16,
}

impl Source {
    fn new(key: String, head: Head) -> Source {
        Source {
            key,
            head: Some(head),
            continuation: None,
            chunks_read: false,
            held: Vec::new(),
            unread_ceiling: 1000,
            done: false,
            ceiling: 1000,
        }
    }

    /// The next `want` best postings: from the head's, or from a page of chunks read when
    /// none read is left.
    async fn next(&mut self, state: &AppState, want: usize) -> AppResult<Vec<Entry>> {
        if let Some(head) = self.head.take().filter(|head| !head.spilled) {
            self.held = head.postings;
            self.chunks_read = true;
        }
        if self.held.is_empty() && !self.chunks_read {
            let page = PageRequest { size: CHUNKS_A_ROUND, continuation: self.continuation.take() };
            let chunks = state
                .store
                .query_page::<Chunk>(Container::Words, &self.key, queries::word_chunks(), page)
                .await?;
            self.continuation = chunks.continuation;
            self.chunks_read = self.continuation.is_none();
            self.unread_ceiling = chunks.items.last().map_or(0, |last| tier_ceiling(last.tier));
            self.held = chunks.items.into_iter().flat_map(|chunk| chunk.postings).collect();
        }
        self.held.sort_by_key(|entry| entry.1);
        let taken = self.held.split_off(self.held.len().saturating_sub(want));
        self.done = self.held.is_empty() && self.chunks_read;
        let unread = if self.chunks_read { 0 } else { self.unread_ceiling };
        self.ceiling = self.held.last().map_or(0, |entry| entry.1).max(unread);
        Ok(taken)
    }
}

async fn read_head(state: &AppState, key: &str) -> AppResult<Option<Head>> {
    Ok(state.store.read::<Head>(Container::Words, key, HEAD_ID).await?)
}

/// The candidates that have every required word and no excluded one, scored from their
/// records: point reads, at once. (A query of the records by id reads every record on the
/// SDK's in-memory emulator, about 7 ms a post; a point read reads one.)
async fn score(
    state: &AppState,
    query: &Query,
    candidates: &[String],
    term_idf: &impl Fn(&Term) -> f64,
) -> AppResult<Vec<Scored>> {
    let reads: Vec<_> = candidates
        .iter()
        .map(|id| async move {
            let partition = record_partition(id);
            state.store.read::<Doc>(Container::Words, &partition, id).await
        })
        .collect();
    let records: Vec<Option<Doc>> =
        futures::stream::iter(reads).buffer_unordered(CONCURRENT_READS).try_collect().await?;
    let impact = |record: &Doc, term: &Term| {
        record
            .words
            .iter()
            .filter(|posting| term.keys.contains(&posting.key))
            .map(|posting| posting.impact)
            .max()
    };
    Ok(records
        .into_iter()
        .flatten()
        .filter_map(|record| {
            if query.excluded.iter().any(|term| impact(&record, term).is_some()) {
                return None;
            }
            let mut score = 0.0;
            for term in &query.required {
                score += term_idf(term) * f64::from(impact(&record, term)?) / 1000.0;
            }
            Some(Scored { score, id: record.id, language: Some(record.language) })
        })
        .collect())
}

/// Whether the text has every phrase and none of the excluded ones, word after word.
fn phrases_hold(query: &Query, text: &str) -> bool {
    if query.phrases.is_empty() && query.excluded_phrases.is_empty() {
        return true;
    }
    use unicode_segmentation::UnicodeSegmentation;
    let words: Vec<String> = text.unicode_words().filter_map(surface).collect();
    let has = |phrase: &Vec<Term>| {
        let wanted: Vec<&str> = phrase.iter().map(|term| term.surface.as_str()).collect();
        !wanted.is_empty()
            && words
                .windows(wanted.len())
                .any(|window| window.iter().zip(&wanted).all(|(a, b)| a == b))
    };
    query.phrases.iter().all(has) && !query.excluded_phrases.iter().any(has)
}

/// The author whose name is `text` (compared as usernames are), if any: one point read.
async fn authors_named(state: &AppState, text: &str) -> AppResult<Vec<AuthorFound>> {
    let name = crate::model::usernames::normalize_username(text.trim());
    if name.is_empty() {
        return Ok(Vec::new());
    }
    let Some(reservation) = crate::app::usernames::reservation_of(&state.store, &name).await?
    else {
        return Ok(Vec::new());
    };
    let owner = reservation.item.owner_id;
    let user = state.store.read::<model::User>(Container::Users, &owner, &owner).await?;
    Ok(user
        .map(|user| AuthorFound { user_id: user.id, username: user.username })
        .into_iter()
        .collect())
}

/// The tag that `text` is, if it is one with posts: one query of a page of one.
async fn tags_named(state: &AppState, text: &str) -> AppResult<Vec<String>> {
    let Ok(tag) = crate::model::tags::tag_in_address(text.trim()) else { return Ok(Vec::new()) };
    let page = PageRequest { size: 1, continuation: None };
    let found = state
        .store
        .query_documents(Container::Tags, &tag, queries::any_tagged_post(), page)
        .await?;
    Ok(if found.0.is_empty() { Vec::new() } else { vec![text.trim().to_owned()] })
}
