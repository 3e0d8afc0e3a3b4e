//! `handler export` and `handler import`: the blog's own data (every user, post, comment, like
//! and picture) as one file of JSON lines, out of one store and into another: the embedded
//! store, an account, and back.
//!
//! The file (version 2) is a header line, `{"format": "cosmos-blog", "version": 2}`, then one
//! item a line as the blog stores it (`type` says which), without Cosmos DB's system properties:
//! users first, then each post followed by its comments, its likes and its pictures; then a last
//! line that says what the file holds and its digest:
//! `{"format": "cosmos-blog", "end": {"users": …, "posts": …, "comments": …, "likes": …,
//! "pictures": …, "sha256": …}}`, the SHA-256 of every byte before that line. A file cut short
//! has no last line, one put after another has lines after it, and one changed has another
//! digest: each is refused, naming what is wrong. A picture is a line of its own,
//! `{"type": "picture", "postId", "userId", "name", "bytes"}`, its stored bytes in base64: one
//! file whatever holds the pictures, so that it can go to stdout and through a pipe, and one
//! rename makes the whole of it appear (a third larger than the pictures themselves).
//!
//! What the blog derives is not in the file, and is made again after an import: the short
//! copies in `users` and `feed`, and the reserved usernames (the same replay as `handler
//! rebuild-copies`). Deleted posts, request records and dead letters are left out, and the
//! pictures of posts never published.
//!
//! An import goes through the file twice. The first time it checks every line by the rules the
//! API applies to what it writes (the same functions: ids, lengths, names), that every item is
//! in its own partition, that every author is a user of the file or of the store, that each
//! post's counters are what the file lists, that no two users of the file, nor a user of the
//! file and one of the store, have one name, that each picture's bytes are the ones its name
//! says; and writes nothing if anything is wrong, naming the line and the field. The second time
//! it writes each item as it is (upsert) and each picture under its own address, so that an
//! import stopped halfway (a throttle, a kill) is finished by running it again, and one run
//! twice leaves the same data. It holds one line at a time (at most [`MAX_LINE_BYTES`]), and
//! what the checks need of the whole file: each user's id and name, each post's id, and the
//! ids of the post being read's comments, likes and pictures.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, Read, Write};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::app::AppState;
use crate::changefeed::{FeedError, processor};
use crate::cosmos::{Container, PageRequest, QuerySpec, StoreError, WriteOp, queries};
use crate::model::picture::{PictureAddress, PictureName};
use crate::model::usernames::normalize_username;
use crate::model::{self, Comment, Like, MAX_COMMENT_CHARS, Post, User};
use crate::pictures::PictureStoreError;

/// The header line's format name and version.
const FORMAT: &str = "cosmos-blog";
const VERSION: u64 = 2;

/// How many items one query page of a post's comments or likes holds.
const PAGE_SIZE: u32 = 1000;

/// The longest line an import reads: a picture of the largest kept (a re-encoded PNG of
/// [`crate::model::picture::MAX_PIXELS`] stays well below 48 MB) in base64. A longer line is
/// refused before it is held whole.
pub(crate) const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// Why an export or an import stopped.
#[derive(Debug, thiserror::Error)]
pub enum TransferError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The picture store failed.
    #[error(transparent)]
    Pictures(#[from] PictureStoreError),
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
    /// A field of an item is not one the blog writes (the API's own words say why); nothing
    /// was imported.
    #[error("line {line}, `{field}`: {why}; nothing was imported")]
    Field {
        /// The line's number, from 1.
        line: usize,
        /// The field, as the file names it.
        field: &'static str,
        /// What is wrong with it.
        why: String,
    },
    /// A post's counter is not what the file lists for it.
    #[error("line {line}, `{field}`: post {post:?} says {said}, but the file lists {listed}; nothing was imported")]
    Count {
        /// The post's line.
        line: usize,
        /// `commentCount` or `likeCount`.
        field: &'static str,
        /// The post.
        post: String,
        /// What the post says.
        said: u64,
        /// What the file lists.
        listed: u64,
    },
    /// An item names as its writer a user that neither the file nor the store has.
    #[error("line {line}, `userId`: {user:?} is no user of the file or of this store; nothing was imported")]
    NoSuchUser {
        /// The first line that names the user.
        line: usize,
        /// The user's id.
        user: String,
    },
    /// Two users of the file have one name (compared as the blog compares names).
    #[error(
        "line {line}, `username`: {name:?} is the same name as {other_name:?}, line {other_line}'s: \
         two users cannot have one name; nothing was imported"
    )]
    NameTwice {
        /// The second user's line.
        line: usize,
        /// Its name.
        name: String,
        /// The first user's line.
        other_line: usize,
        /// Its name.
        other_name: String,
    },
    /// A user's name is held in this store by another user.
    #[error(
        "line {line}, `username`: {name:?} is held in this store by user {holder:?} (as {held:?}): \
         two users cannot have one name; rename one of them first; nothing was imported"
    )]
    NameTaken {
        /// The user's line.
        line: usize,
        /// Its name in the file.
        name: String,
        /// Who holds it in the store.
        holder: String,
        /// The name as held (normalized).
        held: String,
    },
    /// A user of the file is in the store already with another name.
    #[error(
        "line {line}, `username`: user {user:?} is in this store already, as {stored:?}, not {name:?}; \
         nothing was imported"
    )]
    UserDiffers {
        /// The user's line.
        line: usize,
        /// The user.
        user: String,
        /// Its name in the file.
        name: String,
        /// Its name in the store.
        stored: String,
    },
    /// A post of the file is in the store already as another post: another author, or other
    /// counters (comments or likes the file does not list would stay, and the counters say
    /// otherwise).
    #[error(
        "line {line}: post {post:?} is in this store already, by {stored_author:?} with {stored_comments} comments \
         and {stored_likes} likes; the file's is by {author:?} with {comments} and {likes}: import into a store \
         without it; nothing was imported"
    )]
    PostDiffers {
        /// The post's line.
        line: usize,
        /// The post.
        post: String,
        /// Its author in the file.
        author: String,
        /// Its counters in the file.
        comments: u64,
        /// Its counters in the file.
        likes: u64,
        /// Its author in the store.
        stored_author: String,
        /// Its counters in the store.
        stored_comments: u64,
        /// Its counters in the store.
        stored_likes: u64,
    },
    /// The file holds pictures, and the store the settings name keeps none.
    #[error(
        "line {line}: a picture, and this blog keeps no pictures (README, \"Configuration\": \
         BLOG_PICTURES); nothing was imported"
    )]
    NoPictureStore {
        /// The first picture's line.
        line: usize,
    },
    /// The file is not the whole of an export.
    #[error("{0}; nothing was imported")]
    NotWhole(NotWhole),
    /// The file changed between the import's check and its writing.
    #[error("{path} changed while it was imported: run the import again on a file nobody writes")]
    Changed {
        /// The file.
        path: String,
    },
    /// The import stopped while it wrote: what it wrote stays, and the same import finishes it.
    #[error(
        "the import stopped at line {line}, after writing {written} of the file's {total} items and pictures: \
         run the same import again to finish it (it writes them all again, which changes nothing written)"
    )]
    Unfinished {
        /// The line it was writing.
        line: usize,
        /// Items and pictures written before it.
        written: usize,
        /// Items and pictures in the file.
        total: usize,
        /// Why.
        #[source]
        source: Box<TransferError>,
    },
}

/// How a file is not the whole of one export.
#[derive(Debug, thiserror::Error)]
pub enum NotWhole {
    /// No last line: the file ends before it.
    #[error(
        "the file ends at line {lines} without its last line, which says what an export holds: it is cut short \
         (it holds {found} up to there)"
    )]
    Cut {
        /// Its lines.
        lines: usize,
        /// What it holds.
        found: Counts,
    },
    /// Lines after the last line.
    #[error(
        "line {line}: more after the file's last line (line {end}): two files put together, \
         or lines added after the export"
    )]
    AfterEnd {
        /// The first line after it.
        line: usize,
        /// The last line's.
        end: usize,
    },
    /// The last line's counts are not the file's.
    #[error("line {line}: the last line says the file holds {said}, but it holds {found}: lines are missing or added")]
    Counts {
        /// The last line's number.
        line: usize,
        /// What it says.
        said: Counts,
        /// What the file holds.
        found: Counts,
    },
    /// The digest is not the file's.
    #[error("line {line}: the file's SHA-256 is {found}, not {said} as its last line says: it was changed after the export")]
    Digest {
        /// The last line's number.
        line: usize,
        /// What it says.
        said: String,
        /// The file's.
        found: String,
    },
    /// A version 1 file, which has no last line.
    #[error(
        "line 1: a version 1 export, which has no last line to tell a whole file from a cut one and carries no \
         pictures: export the blog again with this handler (version {VERSION})"
    )]
    Version1,
}

/// What an export or an import moved.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Counts {
    /// Users.
    pub users: usize,
    /// Posts.
    pub posts: usize,
    /// Comments.
    pub comments: usize,
    /// Likes.
    pub likes: usize,
    /// Pictures' files (a picture and its phones' variant are two).
    pub pictures: usize,
}

impl Counts {
    /// Items and pictures of every kind.
    pub fn total(&self) -> usize {
        self.users + self.posts + self.comments + self.likes + self.pictures
    }
}

impl std::fmt::Display for Counts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} users, {} posts, {} comments, {} likes, {} pictures",
            self.users, self.posts, self.comments, self.likes, self.pictures
        )
    }
}

/// The last line's summary.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct End {
    #[serde(flatten)]
    counts: Counts,
    sha256: String,
}

/// `out`, with the SHA-256 of everything written to it so far.
struct Hashing<'a> {
    out: &'a mut dyn Write,
    digest: Sha256,
    /// Lines written.
    lines: usize,
}

impl Hashing<'_> {
    fn line(&mut self, value: &Value) -> Result<(), TransferError> {
        let mut text = value.to_string();
        text.push('\n');
        self.digest.update(text.as_bytes());
        self.out.write_all(text.as_bytes()).map_err(TransferError::Io)?;
        self.lines += 1;
        stop_here(self.lines);
        Ok(())
    }
}

/// Writes every user, post, comment, like and picture of `state`'s stores to `out`, then the
/// last line, telling `progress` the counts so far, and once the posts are known, how many of
/// them have been gone through and how many there are. The users and the posts are found
/// through each container's change feed from its beginning (the latest version of every item,
/// on an account and on the embedded store); each post is then read again, and its comments and
/// likes listed, in its own partition, and its pictures read one at a time: the long part, whose
/// length is known before it starts.
pub async fn export(
    state: &AppState,
    out: &mut dyn Write,
    progress: &mut dyn FnMut(&Counts, Option<PostsDone>),
) -> Result<Counts, TransferError> {
    let mut counts = Counts::default();
    let mut out = Hashing { out, digest: Sha256::new(), lines: 0 };
    out.line(&json!({"format": FORMAT, "version": VERSION}))?;
    let mut users = state.store.change_feed_from_beginning(Container::Users).await?;
    while let Some(documents) = users.next_changes().await? {
        for document in documents.into_iter().filter(|document| document["type"] == "user") {
            out.line(&without_system_properties(document))?;
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
    let pictures = state.pictures.as_ref().map(crate::app::pictures::Pictures::store);
    for (done, id) in ids.iter().enumerate() {
        progress(&counts, Some(PostsDone { done, of: ids.len() }));
        // As it is now: a post deleted since its change was read is left out.
        let Some(post) = state.store.read::<Value>(Container::Posts, id, id).await? else { continue };
        let Some(live) = serde_json::from_value::<Post>(post.clone()).ok().filter(model::is_live) else { continue };
        out.line(&without_system_properties(post))?;
        counts.posts += 1;
        for (query, count) in
            [(queries::post_comments as fn() -> QuerySpec, &mut counts.comments), (queries::post_likes, &mut counts.likes)]
        {
            for item in all_of_partition(state, id, query).await? {
                out.line(&without_system_properties(item))?;
                *count += 1;
            }
        }
        let Some(pictures) = pictures else { continue };
        let mut names = pictures.post_pictures(&live.user_id, id).await?;
        names.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        for name in names {
            let address = PictureAddress { owner: live.user_id.clone(), post: id.clone(), name };
            // Gone since it was listed (the post deleted meanwhile): left out as the post would be.
            let Some(bytes) = pictures.get(&address).await? else { continue };
            let line = json!({"type": "picture", "postId": id, "userId": live.user_id, "name": address.name.as_str(),
                "bytes": BASE64.encode(&bytes)});
            out.line(&line)?;
            counts.pictures += 1;
        }
    }
    progress(&counts, Some(PostsDone { done: ids.len(), of: ids.len() }));
    let sha256 = model::hex(&out.digest.clone().finalize());
    let end = End { counts, sha256 };
    writeln!(out.out, "{}", json!({"format": FORMAT, "end": end})).map_err(TransferError::Io)?;
    out.out.flush().map_err(TransferError::Io)?;
    Ok(counts)
}

/// Where a test stops an export or an import as a kill would: once `done` lines are written to
/// the file, or items and pictures into the store, when `BLOG_TEST_KILL_AFTER` says so (test
/// builds only).
fn stop_here(done: usize) {
    #[cfg(feature = "test-support")]
    crate::test_support::kill_after(done);
    #[cfg(not(feature = "test-support"))]
    let _ = done;
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

/// An item without the system properties Cosmos DB adds (`_rid`, `_etag`, `_ts`, ...).
fn without_system_properties(mut item: Value) -> Value {
    if let Some(fields) = item.as_object_mut() {
        fields.retain(|name, _| !name.starts_with('_'));
    }
    item
}

/// One item or picture of a file, checked: what is written, as the blog writes it (fields the
/// blog does not know are not carried).
pub(crate) enum Item {
    User(User),
    Post(Post),
    Comment(Comment),
    Like(Like),
    Picture(PictureAddress, Vec<u8>),
}

/// How far an import has got.
#[derive(Clone, Copy, Debug)]
pub enum ImportProgress {
    /// Checking the file: lines and bytes read so far, of its `size`.
    Checking {
        /// Lines read.
        lines: usize,
        /// Bytes read.
        bytes: u64,
        /// The file's bytes.
        size: u64,
    },
    /// Writing: what is written so far, of the file's `total`.
    Writing {
        /// Written so far.
        counts: Counts,
        /// Items and pictures in the file.
        total: usize,
    },
    /// Making the copies and reserving the names: users replayed, then posts delivered.
    Copies {
        /// Users replayed.
        users: usize,
        /// Posts delivered (0 while the users are replayed).
        posts: usize,
    },
}

/// Checks the whole export at `path`, then writes every item and picture into `state`'s stores,
/// then makes the copies and reserves the names (the replay of `rebuild-copies`). `progress` is
/// told how far it has got.
pub async fn import(
    state: &AppState,
    path: &std::path::Path,
    progress: &mut dyn FnMut(ImportProgress),
) -> Result<Counts, TransferError> {
    let open = || std::fs::File::open(path).map(|file| std::io::BufReader::with_capacity(1 << 20, file));
    let stamp = || std::fs::metadata(path).map(|found| (found.len(), found.modified().ok()));
    let before = stamp().map_err(TransferError::Io)?;
    let keeps_pictures = state.pictures.is_some();
    let mut reader = Reader::new(open().map_err(TransferError::Io)?, keeps_pictures, true);
    while reader.next()?.is_some() {
        progress(ImportProgress::Checking { lines: reader.checker.line, bytes: reader.bytes, size: before.0 });
    }
    let checker = reader.checker;
    check_in_store(state, &checker).await?;
    let total = checker.counts.total();
    if stamp().map_err(TransferError::Io)? != before {
        return Err(TransferError::Changed { path: path.display().to_string() });
    }

    let mut reader = Reader::new(open().map_err(TransferError::Io)?, keeps_pictures, true);
    let mut counts = Counts::default();
    loop {
        let item = match reader.next() {
            Ok(Some(item)) => item,
            Ok(None) => break,
            Err(error) => {
                // It passed the checks a moment ago: a line that fails them now was changed since.
                let error = match error {
                    TransferError::Io(error) => TransferError::Io(error),
                    _ => TransferError::Changed { path: path.display().to_string() },
                };
                let line = reader.checker.line;
                return Err(TransferError::Unfinished { line, written: counts.total(), total, source: Box::new(error) });
            }
        };
        if let Err(error) = write(state, item, &mut counts).await {
            let line = reader.checker.line;
            return Err(TransferError::Unfinished { line, written: counts.total(), total, source: Box::new(error) });
        }
        progress(ImportProgress::Writing { counts, total });
        stop_here(counts.total());
    }
    if reader.checker.counts != checker.counts {
        return Err(TransferError::Changed { path: path.display().to_string() });
    }
    over_quota(state, &checker.picture_owners).await?;
    state.feed.invalidate();
    let users = processor::replay_users_reporting(state, &mut |users| progress(ImportProgress::Copies { users, posts: 0 }))
        .await
        .map_err(TransferError::Copies)?;
    processor::rebuild_copies_reporting(state, &mut |posts| progress(ImportProgress::Copies { users, posts }))
        .await
        .map_err(TransferError::Copies)?;
    Ok(counts)
}

/// Writes one checked item (upsert: written again, it changes nothing) or picture, and counts it.
async fn write(state: &AppState, item: Item, counts: &mut Counts) -> Result<(), TransferError> {
    let (container, partition, document, count) = match item {
        Item::User(user) => (Container::Users, user.user_id.clone(), document(&user)?, &mut counts.users),
        Item::Post(post) => (Container::Posts, post.post_id.clone(), document(&post)?, &mut counts.posts),
        Item::Comment(comment) => (Container::Posts, comment.post_id.clone(), document(&comment)?, &mut counts.comments),
        Item::Like(like) => (Container::Posts, like.post_id.clone(), document(&like)?, &mut counts.likes),
        Item::Picture(address, bytes) => {
            let pictures = state.pictures.as_ref().expect("checked: a file with pictures needs a picture store");
            pictures.store().put(&address, &bytes).await?;
            counts.pictures += 1;
            return Ok(());
        }
    };
    state.store.execute_write(container, &partition, WriteOp::Upsert { document, if_match: None }).await?;
    *count += 1;
    Ok(())
}

fn document(item: &impl serde::Serialize) -> Result<Value, TransferError> {
    serde_json::to_value(item).map_err(|error| TransferError::Io(error.into()))
}

/// Says which of `owners` keep more pictures than this blog's quota lets a writer keep. Their
/// pictures are imported all the same (they were taken where they come from, and the posts show
/// them); the quota counts what is stored under a writer, so such a writer can add no picture
/// until they delete some, as the operator is told here.
async fn over_quota(state: &AppState, owners: &std::collections::BTreeSet<String>) -> Result<(), TransferError> {
    let Some(pictures) = &state.pictures else { return Ok(()) };
    let quota = pictures.quota();
    for owner in owners {
        let usage = pictures.store().usage(owner).await?;
        if usage.pictures > quota.pictures || usage.bytes > quota.bytes {
            tracing::warn!(
                writer = owner,
                pictures = usage.pictures,
                bytes = usage.bytes,
                quota_pictures = quota.pictures,
                quota_bytes = quota.bytes,
                "a writer keeps more pictures than this blog's quota: imported all the same; they can add none until they delete some"
            );
        }
    }
    Ok(())
}

/// What the first pass leaves to the store: that each user named but not in the file is in it,
/// that no name of the file is held there by another user, that the file's users are not there
/// under other names, and its posts not there as other posts (another author, other counters;
/// one that is the file's, written by an import stopped halfway, is). Point reads: one per post,
/// two per user.
async fn check_in_store(state: &AppState, checker: &Checker) -> Result<(), TransferError> {
    for (user, line) in &checker.elsewhere {
        if state.store.read::<Value>(Container::Users, user, user).await?.is_none_or(|found| found["type"] != "user") {
            return Err(TransferError::NoSuchUser { line: *line, user: user.clone() });
        }
    }
    for (post, (line, author, comments, likes)) in &checker.posts {
        let Some(stored) = state.store.read::<Post>(Container::Posts, post, post).await? else { continue };
        if !model::is_live(&stored) {
            continue;
        }
        if stored.user_id != *author || stored.comment_count != *comments || stored.like_count != *likes {
            return Err(TransferError::PostDiffers {
                line: *line,
                post: post.clone(),
                author: author.clone(),
                comments: *comments,
                likes: *likes,
                stored_author: stored.user_id,
                stored_comments: stored.comment_count,
                stored_likes: stored.like_count,
            });
        }
    }
    for (normalized, (line, user, name)) in &checker.names {
        if let Some(stored) = state.store.read::<User>(Container::Users, user, user).await?
            && normalize_username(&stored.username) != *normalized
        {
            let (user, name, stored) = (user.clone(), name.clone(), stored.username);
            return Err(TransferError::UserDiffers { line: *line, user, name, stored });
        }
        if let Some(held) = crate::app::usernames::reservation_of(&state.store, normalized).await?
            && held.item.owner_id != *user
        {
            let (name, holder, held) = (name.clone(), held.item.owner_id, held.item.name);
            return Err(TransferError::NameTaken { line: *line, name, holder, held });
        }
    }
    Ok(())
}

/// The lines of a file, read one at a time and checked ([`Checker`]).
pub(crate) struct Reader<R> {
    input: R,
    checker: Checker,
    buffer: Vec<u8>,
    /// Bytes read so far.
    bytes: u64,
}

impl<R: BufRead> Reader<R> {
    /// `sealed`: whether the file must end with its last line (always, but for the fuzzer's
    /// inputs, which cannot make a digest).
    pub(crate) fn new(input: R, keeps_pictures: bool, sealed: bool) -> Reader<R> {
        Reader { input, checker: Checker::new(keeps_pictures, sealed), buffer: Vec::new(), bytes: 0 }
    }

    /// The next item, checked; `None` at the end of a file that is whole.
    pub(crate) fn next(&mut self) -> Result<Option<Item>, TransferError> {
        loop {
            self.buffer.clear();
            let limit = MAX_LINE_BYTES as u64 + 1;
            let read = (&mut self.input).take(limit).read_until(b'\n', &mut self.buffer).map_err(TransferError::Io)?;
            if read == 0 {
                return self.checker.at_end().map(|()| None);
            }
            self.bytes += read as u64;
            self.checker.line += 1;
            let line = self.checker.line;
            if self.buffer.len() > MAX_LINE_BYTES {
                let why = format!("longer than {MAX_LINE_BYTES} bytes, which no line of an export is");
                return Err(TransferError::Malformed { line, why });
            }
            let Ok(text) = std::str::from_utf8(&self.buffer) else {
                return Err(TransferError::Malformed { line, why: "not UTF-8 text".into() });
            };
            if let Some(item) = self.checker.check(text)? {
                return Ok(Some(item));
            }
        }
    }
}

/// The checks of a file's lines that need nothing but the file, and what they leave to the
/// store ([`check_in_store`]).
pub(crate) struct Checker {
    keeps_pictures: bool,
    sealed: bool,
    /// The line being checked, from 1.
    line: usize,
    /// The SHA-256 of the lines before the last one.
    digest: Sha256,
    counts: Counts,
    /// The last line's number, once read.
    end: Option<usize>,
    /// The file's users: id → line.
    users: HashMap<String, usize>,
    /// The file's users' names: normalized → (line, user, name as written).
    names: HashMap<String, (usize, String, String)>,
    /// Users the file's items name that are not (yet) among its users: id → first line.
    elsewhere: std::collections::BTreeMap<String, usize>,
    /// Every post of the file: id → (line, author, comments, likes).
    posts: HashMap<String, (usize, String, u64, u64)>,
    /// The post whose comments, likes and pictures follow.
    current: Option<CurrentPost>,
    /// The writers whose pictures the file holds.
    picture_owners: std::collections::BTreeSet<String>,
}

/// The post being read, and what of it has been read.
struct CurrentPost {
    line: usize,
    post: Post,
    comments: u64,
    likes: u64,
    /// Ids in its partition (its own included), and its pictures' names.
    ids: HashSet<String>,
}

impl Checker {
    fn new(keeps_pictures: bool, sealed: bool) -> Checker {
        Checker {
            keeps_pictures,
            sealed,
            line: 0,
            digest: Sha256::new(),
            counts: Counts::default(),
            end: None,
            users: HashMap::new(),
            names: HashMap::new(),
            elsewhere: Default::default(),
            posts: HashMap::new(),
            current: None,
            picture_owners: Default::default(),
        }
    }

    fn malformed(&self, why: impl Into<String>) -> TransferError {
        TransferError::Malformed { line: self.line, why: sentence_part(why.into()) }
    }

    /// The API's own words for what is wrong with `field` (its messages are sentences: said
    /// here as part of one).
    fn field(&self, field: &'static str, why: impl std::fmt::Display) -> TransferError {
        TransferError::Field { line: self.line, field, why: sentence_part(why.to_string()) }
    }

    /// Checks line `self.line`, whose text (with its line break) is `raw`: the item it holds,
    /// if it holds one.
    fn check(&mut self, raw: &str) -> Result<Option<Item>, TransferError> {
        let text = raw.trim();
        if let Some(end) = self.end {
            return if text.is_empty() {
                Ok(None)
            } else {
                Err(TransferError::NotWhole(NotWhole::AfterEnd { line: self.line, end }))
            };
        }
        if text.is_empty() {
            self.digest.update(raw.as_bytes());
            return Ok(None);
        }
        let value: Value = serde_json::from_str(text).map_err(|error| self.malformed(format!("not JSON: {error}")))?;
        if self.line > 1 && value.get("format").is_some() && value.get("end").is_some() {
            return self.last_line(value).map(|()| None);
        }
        // Every line before the last one is in the digest.
        self.digest.update(raw.as_bytes());
        if self.line == 1 {
            return self.header(&value).map(|()| None);
        }
        let kind = value["type"].as_str().map(str::to_owned);
        let item = match kind.as_deref() {
            Some("user") => Item::User(self.user(self.shape(value)?)?),
            Some("post") => Item::Post(self.post(self.shape(value)?)?),
            Some("comment") => Item::Comment(self.comment(self.shape(value)?)?),
            Some("like") => Item::Like(self.like(self.shape(value)?)?),
            Some("picture") => {
                let (address, bytes) = self.picture(self.shape(value)?)?;
                Item::Picture(address, bytes)
            }
            other => {
                let found = other.map_or_else(|| "missing".to_owned(), |kind| format!("{kind:?}"));
                return Err(self.malformed(format!("`type` is {found}, not user, post, comment, like or picture")));
            }
        };
        Ok(Some(item))
    }

    fn header(&self, header: &Value) -> Result<(), TransferError> {
        if header["format"] == FORMAT && header["version"] == 1 {
            return Err(TransferError::NotWhole(NotWhole::Version1));
        }
        if header["format"] != FORMAT || header["version"] != VERSION {
            return Err(self.malformed(format!("not the header of a {FORMAT} export, version {VERSION}: {header}")));
        }
        Ok(())
    }

    fn shape<T: serde::de::DeserializeOwned>(&self, value: Value) -> Result<T, TransferError> {
        let kind = value["type"].clone();
        serde_json::from_value(value).map_err(|error| self.malformed(format!("not a {kind} as the blog stores one: {error}")))
    }

    fn user(&mut self, user: User) -> Result<User, TransferError> {
        model::validate_id(&user.id).map_err(|why| self.field("id", why))?;
        if user.user_id != user.id {
            return Err(self.field(
                "userId",
                format!("{:?} is not the user's `id`, {:?}: its partition key is its id", user.user_id, user.id),
            ));
        }
        let username = crate::app::users::valid_username(user.username.clone()).map_err(|why| self.field("username", why))?;
        if let Some(at) = &user.renamed_at {
            self.date("renamedAt", at)?;
        }
        if let Some(other) = self.users.insert(user.id.clone(), self.line) {
            return Err(self.field("id", format!("user {:?} is on line {other} too", user.id)));
        }
        let normalized = normalize_username(&username);
        if let Some((other_line, _, other_name)) = self.names.get(&normalized) {
            let (other_line, other_name) = (*other_line, other_name.clone());
            return Err(TransferError::NameTwice { line: self.line, name: username, other_line, other_name });
        }
        self.names.insert(normalized, (self.line, user.id.clone(), username));
        self.elsewhere.remove(&user.id);
        self.counts.users += 1;
        Ok(user)
    }

    fn post(&mut self, post: Post) -> Result<Post, TransferError> {
        self.end_of_post()?;
        model::validate_id(&post.id).map_err(|why| self.field("id", why))?;
        if post.post_id != post.id {
            return Err(self.field(
                "postId",
                format!("{:?} is not the post's `id`, {:?}: its partition key is its id", post.post_id, post.id),
            ));
        }
        crate::app::posts::validate_post_text(&post.title, &post.content).map_err(|why| self.malformed(why.to_string()))?;
        if post.deleted {
            return Err(self.field("deleted", "a deleted post, which no export holds"));
        }
        self.writer(&post.user_id, &post.user_username)?;
        self.date("creationDate", &post.creation_date)?;
        if let Some(at) = &post.edited_at {
            self.date("editedAt", at)?;
        }
        let listed = (self.line, post.user_id.clone(), post.comment_count, post.like_count);
        if self.posts.insert(post.id.clone(), listed).is_some() {
            return Err(self.field("id", format!("post {:?} is in the file twice", post.id)));
        }
        let ids = HashSet::from([post.id.clone()]);
        self.current = Some(CurrentPost { line: self.line, post: post.clone(), comments: 0, likes: 0, ids });
        self.counts.posts += 1;
        Ok(post)
    }

    fn comment(&mut self, comment: Comment) -> Result<Comment, TransferError> {
        self.of_current_post("comment", &comment.post_id, &comment.id)?;
        crate::app::validate_text("content", &comment.content, MAX_COMMENT_CHARS, true)
            .map_err(|why| self.field("content", why))?;
        self.writer(&comment.user_id, &comment.user_username)?;
        self.date("creationDate", &comment.creation_date)?;
        self.current.as_mut().expect("checked: a post is being read").comments += 1;
        self.counts.comments += 1;
        Ok(comment)
    }

    fn like(&mut self, like: Like) -> Result<Like, TransferError> {
        self.of_current_post("like", &like.post_id, &like.id)?;
        self.writer(&like.user_id, &like.user_username)?;
        if like.id != model::like_id(&like.user_id) {
            let why = format!(
                "{:?} is not {:?}: a like's id is its writer's, one like a user and post",
                like.id,
                model::like_id(&like.user_id)
            );
            return Err(self.field("id", why));
        }
        self.date("creationDate", &like.creation_date)?;
        self.current.as_mut().expect("checked: a post is being read").likes += 1;
        self.counts.likes += 1;
        Ok(like)
    }

    fn picture(&mut self, picture: PictureLine) -> Result<(PictureAddress, Vec<u8>), TransferError> {
        if !self.keeps_pictures {
            return Err(TransferError::NoPictureStore { line: self.line });
        }
        self.of_current_post("picture", &picture.post_id, &picture.name)?;
        let author = &self.current.as_ref().expect("checked: a post is being read").post.user_id;
        if picture.user_id != *author {
            return Err(self.field(
                "userId",
                format!("{:?} is not the post's author, {author:?}, whose pictures it keeps", picture.user_id),
            ));
        }
        let name = PictureName::parse(&picture.name)
            .filter(PictureName::within_limits)
            .ok_or_else(|| self.field("name", format!("{:?} is not the name of a picture the blog keeps", picture.name)))?;
        let bytes = BASE64.decode(&picture.bytes).map_err(|error| self.field("bytes", format!("not base64: {error}")))?;
        let address = PictureAddress { owner: picture.user_id, post: picture.post_id, name };
        if !crate::app::pictures::is_as_named(&address, &bytes) {
            return Err(self.field("bytes", "their SHA-256 is not the one the picture's name says"));
        }
        self.counts.pictures += 1;
        if !self.picture_owners.contains(&address.owner) {
            self.picture_owners.insert(address.owner.clone());
        }
        Ok((address, bytes))
    }

    /// That an item of `kind` with `id`, of the post `post_id`, follows that post, and is the
    /// only one with its id there.
    fn of_current_post(&mut self, kind: &str, post_id: &str, id: &str) -> Result<(), TransferError> {
        let current = match &mut self.current {
            Some(current) if current.post.id == post_id => current,
            _ if self.posts.contains_key(post_id) => {
                let why = format!(
                    "a {kind} of post {post_id:?} after another post's lines: a post's comments, likes and pictures follow it"
                );
                return Err(self.field("postId", why));
            }
            _ => return Err(self.field("postId", format!("a {kind} of post {post_id:?}, which no line before it holds"))),
        };
        if kind != "picture" {
            model::validate_id(id).map_err(|why| TransferError::Field {
                line: self.line,
                field: "id",
                why: sentence_part(why.to_string()),
            })?;
        }
        if !current.ids.insert(id.to_owned()) {
            let field = if kind == "picture" { "name" } else { "id" };
            return Err(self.field(field, format!("{id:?} is in post {post_id:?}'s partition already")));
        }
        Ok(())
    }

    /// That the writer of an item is a valid id with a valid name; whether it is a user is
    /// known at the end ([`check_in_store`]).
    fn writer(&mut self, user_id: &str, username: &str) -> Result<(), TransferError> {
        model::validate_id(user_id).map_err(|why| self.field("userId", why))?;
        crate::app::users::valid_username(username.to_owned()).map_err(|why| self.field("userUsername", why))?;
        if !self.users.contains_key(user_id) {
            self.elsewhere.entry(user_id.to_owned()).or_insert(self.line);
        }
        Ok(())
    }

    fn date(&self, field: &'static str, date: &str) -> Result<(), TransferError> {
        time::OffsetDateTime::parse(date, &time::format_description::well_known::Rfc3339)
            .map(drop)
            .map_err(|error| self.field(field, format!("{date:?} is not an RFC 3339 date: {error}")))
    }

    /// That the post being read lists as many comments and likes as it says.
    fn end_of_post(&mut self) -> Result<(), TransferError> {
        let Some(current) = self.current.take() else { return Ok(()) };
        let post = current.post.id.clone();
        for (field, said, listed) in [
            ("commentCount", current.post.comment_count, current.comments),
            ("likeCount", current.post.like_count, current.likes),
        ] {
            if said != listed {
                return Err(TransferError::Count { line: current.line, field, post, said, listed });
            }
        }
        Ok(())
    }

    fn last_line(&mut self, value: Value) -> Result<(), TransferError> {
        self.end_of_post()?;
        let end: End = serde_json::from_value(value["end"].clone())
            .map_err(|error| self.malformed(format!("not the last line of an export: {error}")))?;
        if end.counts != self.counts {
            return Err(TransferError::NotWhole(NotWhole::Counts { line: self.line, said: end.counts, found: self.counts }));
        }
        let found = model::hex(&self.digest.clone().finalize());
        if found != end.sha256 {
            return Err(TransferError::NotWhole(NotWhole::Digest { line: self.line, said: end.sha256, found }));
        }
        self.end = Some(self.line);
        Ok(())
    }

    fn at_end(&mut self) -> Result<(), TransferError> {
        if self.line == 0 {
            return Err(TransferError::Malformed {
                line: 1,
                why: "the file is empty; an export starts with its header line".into(),
            });
        }
        // Cut short: said as such, rather than as the post whose lines it cut.
        if self.end.is_none() && self.sealed {
            return Err(TransferError::NotWhole(NotWhole::Cut { lines: self.line, found: self.counts }));
        }
        self.end_of_post()
    }
}

/// A sentence of the API's (`The id must not be empty.`) as a part of the error's own.
fn sentence_part(mut why: String) -> String {
    if why.ends_with('.') {
        why.pop();
    }
    why
}

/// A picture's line.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PictureLine {
    #[serde(rename = "type")]
    _type: String,
    post_id: String,
    user_id: String,
    name: String,
    bytes: String,
}

/// Every item of `input`, checked as an import checks it before it writes anything, but for
/// what needs the store, and without the last line (the fuzzer's inputs cannot make a digest):
/// how many items and pictures it holds.
pub(crate) fn check_unsealed(input: &mut dyn BufRead) -> Result<usize, TransferError> {
    let mut reader = Reader::new(input, true, false);
    let mut items = 0;
    while reader.next()?.is_some() {
        items += 1;
    }
    Ok(items)
}

/// A file written under a temporary name beside where it is to be, and renamed to its name only
/// once whole and on the disk: an export stopped (an error, Ctrl-C, a kill, a power cut) leaves
/// the file that was there before, or none, never a cut one. A temporary file a kill left
/// behind (`.NAME.partial-…`, hidden) is removed by the next export to the same name; one
/// stopped otherwise removes its own.
pub struct PartialFile {
    path: std::path::PathBuf,
    temporary: std::path::PathBuf,
    file: Option<std::io::BufWriter<std::fs::File>>,
}

impl PartialFile {
    /// A new temporary file beside `path`, after removing those left beside it by exports killed.
    pub fn beside(path: &std::path::Path) -> std::io::Result<PartialFile> {
        let name = path.file_name().ok_or_else(|| std::io::Error::other("names a directory, not a file"))?;
        let directory = match path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_owned(),
            _ => std::path::PathBuf::from("."),
        };
        let prefix = format!(".{}.partial-", name.to_string_lossy());
        for entry in std::fs::read_dir(&directory)? {
            let entry = entry?;
            if entry.file_name().to_string_lossy().starts_with(&prefix) {
                std::fs::remove_file(entry.path())?;
                tracing::info!(path = %entry.path().display(), "removed what an export stopped before its end left");
            }
        }
        let temporary = directory.join(format!("{prefix}{}", uuid::Uuid::new_v4()));
        let file = std::fs::File::create_new(&temporary)?;
        Ok(PartialFile { path: path.to_owned(), temporary, file: Some(std::io::BufWriter::with_capacity(1 << 20, file)) })
    }

    /// Where to write.
    pub fn writer(&mut self) -> &mut dyn Write {
        self.file.as_mut().expect("written only before it is finished")
    }

    /// Puts the whole file on the disk, then under its name (in place of what was there).
    pub fn finish(mut self) -> std::io::Result<()> {
        let file = self.file.take().expect("finished once");
        let renamed = (|| {
            let file = file.into_inner().map_err(std::io::IntoInnerError::into_error)?;
            file.sync_all()?;
            std::fs::rename(&self.temporary, &self.path)
        })();
        if renamed.is_err() {
            let _ = std::fs::remove_file(&self.temporary);
        }
        renamed?;
        // The rename itself on the disk.
        match self.temporary.parent() {
            Some(directory) => std::fs::File::open(directory)?.sync_all(),
            None => Ok(()),
        }
    }
}

impl Drop for PartialFile {
    fn drop(&mut self) {
        if self.file.take().is_some() {
            let _ = std::fs::remove_file(&self.temporary);
        }
    }
}

/// Standard input, copied into a temporary file (an import reads its file twice: once to check
/// it, once to write it), removed when dropped. Memory holds none of it at once.
pub struct Spooled {
    path: std::path::PathBuf,
}

impl Spooled {
    /// `input`, copied whole into a new file in the system's temporary directory.
    pub fn from(input: &mut dyn Read) -> std::io::Result<Spooled> {
        let path = std::env::temp_dir().join(format!("cosmos-blog-import-{}.jsonl", uuid::Uuid::new_v4()));
        let spooled = Spooled { path };
        let mut file = std::fs::File::create_new(&spooled.path)?;
        std::io::copy(input, &mut file)?;
        Ok(spooled)
    }

    /// Where it is.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }
}

impl Drop for Spooled {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}
