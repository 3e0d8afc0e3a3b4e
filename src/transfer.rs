//! `handler export` and `handler import` (issue 33): the blog's own data (every user, post,
//! comment and like) as JSON lines, out of one store and into another: the embedded store, an
//! account, and back.
//!
//! The file is a header line, `{"format": "cosmos-blog", "version": 1}`, then one item a line,
//! as it is stored (`type` says which), without Cosmos DB's system properties: users first, then
//! each post followed by its comments and likes. What the blog derives is not in it, and is made
//! again after an import: the short copies in `users` and `feed`, and the reserved usernames
//! (the same replay as `handler rebuild-copies`). Deleted posts, request records and dead
//! letters are left out.
//!
//! An import reads and checks the whole file before it writes anything: a malformed line is
//! refused naming its line, and nothing is imported. It writes each item as it is (upsert), so
//! an import run twice leaves the same data.

use std::io::{BufRead, Write};

use serde_json::{Value, json};

use crate::app::AppState;
use crate::changefeed::{FeedError, processor};
use crate::cosmos::{Container, PageRequest, QuerySpec, StoreError, WriteOp, queries};
use crate::model::{self, Comment, Like, Post, User};

/// The header line's format name and version.
const FORMAT: &str = "cosmos-blog";
const VERSION: u64 = 1;

/// How many items one query page of a post's comments or likes holds.
const PAGE_SIZE: u32 = 1000;

/// Why an export or an import stopped.
#[derive(Debug, thiserror::Error)]
pub enum TransferError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Making the copies and reserving the names after an import failed.
    #[error("the items are imported, but the copies were not made: run `handler rebuild-copies`")]
    Copies(#[source] FeedError),
    /// The file could not be read or written.
    #[error("{0}")]
    Io(#[source] std::io::Error),
    /// A line of the file is not an item of this format; nothing was imported.
    #[error("line {line}: {why}; nothing was imported")]
    Malformed {
        /// The line's number, from 1.
        line: usize,
        /// What is wrong with it.
        why: String,
    },
}

/// What an export or an import moved.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Users.
    pub users: usize,
    /// Posts.
    pub posts: usize,
    /// Comments.
    pub comments: usize,
    /// Likes.
    pub likes: usize,
}

impl Counts {
    /// Items of every kind.
    pub fn total(&self) -> usize {
        self.users + self.posts + self.comments + self.likes
    }
}

impl std::fmt::Display for Counts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} users, {} posts, {} comments, {} likes", self.users, self.posts, self.comments, self.likes)
    }
}

/// Writes every user, post, comment and like of `state`'s store to `out`, telling `progress`
/// the counts so far, and once the posts are known, how many of them have been gone through
/// and how many there are. The users and the posts are found through each container's change
/// feed from its beginning (the latest version of every item, on an account and on the embedded
/// store); each post is then read again, and its comments and likes listed, in its own
/// partition: the long part, whose length is known before it starts.
pub async fn export(
    state: &AppState,
    out: &mut dyn Write,
    progress: &mut dyn FnMut(&Counts, Option<PostsDone>),
) -> Result<Counts, TransferError> {
    let mut counts = Counts::default();
    writeln!(out, "{}", json!({"format": FORMAT, "version": VERSION})).map_err(TransferError::Io)?;
    let mut users = state.store.change_feed_from_beginning(Container::Users).await?;
    while let Some(documents) = users.next_changes().await? {
        for document in documents.into_iter().filter(|document| document["type"] == "user") {
            write_item(out, document)?;
            counts.users += 1;
        }
        progress(&counts, None);
    }
    let mut ids = Vec::new();
    let mut posts = state.store.change_feed_from_beginning(Container::Posts).await?;
    while let Some(documents) = posts.next_changes().await? {
        let found = documents.iter().filter(|document| document["type"] == "post");
        ids.extend(found.filter_map(|document| document["id"].as_str().map(str::to_owned)));
    }
    for (done, id) in ids.iter().enumerate() {
        progress(&counts, Some(PostsDone { done, of: ids.len() }));
        // As it is now: a post deleted since its change was read is left out.
        let Some(post) = state.store.read::<Value>(Container::Posts, id, id).await? else { continue };
        if !serde_json::from_value::<Post>(post.clone()).is_ok_and(|post| model::is_live(&post)) {
            continue;
        }
        write_item(out, post)?;
        counts.posts += 1;
        for (query, count) in
            [(queries::post_comments as fn() -> QuerySpec, &mut counts.comments), (queries::post_likes, &mut counts.likes)]
        {
            for item in all_of_partition(state, id, query).await? {
                write_item(out, item)?;
                *count += 1;
            }
        }
    }
    progress(&counts, Some(PostsDone { done: ids.len(), of: ids.len() }));
    out.flush().map_err(TransferError::Io)?;
    Ok(counts)
}

/// How far an export has gone through the posts: `done` of `of` (deleted ones included).
#[derive(Clone, Copy, Debug)]
pub struct PostsDone {
    /// Posts gone through.
    pub done: usize,
    /// Posts in all.
    pub of: usize,
}

/// Every result of `query` in the post `post_id`'s partition, page after page.
async fn all_of_partition(state: &AppState, post_id: &str, query: fn() -> QuerySpec) -> Result<Vec<Value>, StoreError> {
    let mut items = Vec::new();
    let mut continuation = None;
    loop {
        let page = PageRequest { size: PAGE_SIZE, continuation };
        let (found, next) = state.store.query_documents(Container::Posts, post_id, query(), page).await?;
        items.extend(found);
        match next {
            Some(next) => continuation = Some(next),
            None => return Ok(items),
        }
    }
}

/// One item, without the system properties Cosmos DB adds (`_rid`, `_etag`, `_ts`, ...).
fn write_item(out: &mut dyn Write, mut item: Value) -> Result<(), TransferError> {
    if let Some(fields) = item.as_object_mut() {
        fields.retain(|name, _| !name.starts_with('_'));
    }
    writeln!(out, "{item}").map_err(TransferError::Io)
}

/// One item of a file, checked.
pub(crate) enum Item {
    User(Value),
    /// A post, with its id (its partition).
    Post(String, Value),
    /// A comment or a like, with its post's id.
    OfPost(String, Value, bool),
}

/// Reads a whole export from `input` and checks every line; then writes every item into
/// `state`'s store, and makes the copies and reserves the names (the replay of `rebuild-copies`).
/// `progress` is told the counts written so far, and how many items there are in all.
pub async fn import(
    state: &AppState,
    input: &mut dyn BufRead,
    progress: &mut dyn FnMut(&Counts, usize),
) -> Result<Counts, TransferError> {
    let items = read_items(input)?;
    let total = items.len();
    let mut counts = Counts::default();
    for item in items {
        match item {
            Item::User(user) => {
                let user_id = user["userId"].as_str().unwrap_or_default().to_owned();
                state.store.execute_write(Container::Users, &user_id, WriteOp::Upsert { document: user, if_match: None }).await?;
                counts.users += 1;
            }
            Item::Post(post_id, post) => {
                state.store.execute_write(Container::Posts, &post_id, WriteOp::Upsert { document: post, if_match: None }).await?;
                counts.posts += 1;
            }
            Item::OfPost(post_id, item, comment) => {
                state.store.execute_write(Container::Posts, &post_id, WriteOp::Upsert { document: item, if_match: None }).await?;
                if comment { counts.comments += 1 } else { counts.likes += 1 }
            }
        }
        progress(&counts, total);
    }
    state.feed.invalidate();
    processor::replay_users(state).await.map_err(TransferError::Copies)?;
    processor::rebuild_copies(state).await.map_err(TransferError::Copies)?;
    Ok(counts)
}

/// Why line `number` could not be read: a line that is not UTF-8 is the file's fault, named by
/// its line as any other malformed line; anything else is the reading's.
fn unreadable(number: usize, error: std::io::Error) -> TransferError {
    match error.kind() {
        std::io::ErrorKind::InvalidData => TransferError::Malformed { line: number, why: "not UTF-8 text".into() },
        _ => TransferError::Io(error),
    }
}

/// Every line of `input`, checked: the header, then items of the four kinds, each post before
/// its comments and likes.
pub(crate) fn read_items(input: &mut dyn BufRead) -> Result<Vec<Item>, TransferError> {
    let malformed = |line: usize, why: String| TransferError::Malformed { line, why };
    let mut lines = input.lines().enumerate().map(|(at, line)| (at + 1, line));
    let header = match lines.next() {
        Some((number, line)) => line.map_err(|error| unreadable(number, error))?,
        None => return Err(malformed(1, "the file is empty; an export starts with its header line".into())),
    };
    let header: Value = serde_json::from_str(&header).map_err(|error| malformed(1, format!("not JSON: {error}")))?;
    if header["format"] != FORMAT || header["version"] != VERSION {
        return Err(malformed(1, format!("not the header of a {FORMAT} export, version {VERSION}: {header}")));
    }
    let mut items = Vec::new();
    let mut posts = std::collections::HashSet::new();
    for (number, line) in lines {
        let line = line.map_err(|error| unreadable(number, error))?;
        if line.trim().is_empty() {
            continue;
        }
        let item: Value = serde_json::from_str(&line).map_err(|error| malformed(number, format!("not JSON: {error}")))?;
        let kind = item["type"].as_str().map(str::to_owned);
        let shape =
            |error: serde_json::Error| malformed(number, format!("not a {} as the blog stores one: {error}", item["type"]));
        let item = match kind.as_deref() {
            Some("user") => {
                let user: User = serde_json::from_value(item.clone()).map_err(shape)?;
                model::validate_id(&user.id).map_err(|why| malformed(number, why))?;
                Item::User(item)
            }
            Some("post") => {
                let post: Post = serde_json::from_value(item.clone()).map_err(shape)?;
                model::validate_id(&post.id).map_err(|why| malformed(number, why))?;
                posts.insert(post.id.clone());
                Item::Post(post.id, item)
            }
            Some(kind @ ("comment" | "like")) => {
                let post_id = if kind == "comment" {
                    serde_json::from_value::<Comment>(item.clone()).map_err(shape)?.post_id
                } else {
                    serde_json::from_value::<Like>(item.clone()).map_err(shape)?.post_id
                };
                if !posts.contains(&post_id) {
                    return Err(malformed(number, format!("a {kind} of post {post_id:?}, which no line before it holds")));
                }
                Item::OfPost(post_id, item, kind == "comment")
            }
            other => {
                let found = other.map_or_else(|| "missing".to_owned(), |kind| format!("{kind:?}"));
                return Err(malformed(number, format!("`type` is {found}, not user, post, comment or like")));
            }
        };
        items.push(item);
    }
    Ok(items)
}
