//! `handler export` and `handler import`: the blog's own data (every user, post, comment, like
//! and picture) as one file of JSON lines, out of one store and into another: the embedded
//! store, an account, and back.
//!
//! The file (version 2) is a header line, `{"format": "cosmos-blog", "version": 2}`, then one
//! item a line as the blog stores it (`type` says which). Items come without Cosmos DB's system
//! properties: users first, then each post followed by its comments, its likes and its
//! pictures. Then a last line says what the file holds and its digest: `{"format":
//! "cosmos-blog", "end": {"users": …, "posts": …, "comments": …, "likes": …, "pictures": …,
//! "sha256": …}}`. The digest is the SHA-256 of every byte before that line. A file cut short
//! has no last line, one put after another has lines after it, and one changed has another
//! digest: each is refused, naming what is wrong. A picture is a line of its own, `{"type":
//! "picture", "postId", "userId", "name", "bytes"}`, its stored bytes in base64. So there is
//! one file whatever holds the pictures: it can go to stdout and through a pipe, and one rename
//! makes the whole of it appear. The file is a third larger than the pictures themselves.
//!
//! What the blog derives is not in the file, and is made again after an import: the short
//! copies in `users` and `feed`, and the reserved usernames (the same replay as `handler
//! rebuild-copies`). Deleted posts, request records and dead letters are left out, and the
//! pictures of posts never published.
//!
//! An import goes through the file twice. The first time, it checks every line by the rules the
//! API applies to what it writes (the same functions: ids, lengths, names). It checks that
//! every item is in its own partition, and that every author is a user of the file or of the
//! store. It checks that each post's counters are what the file lists. It checks that no two
//! users of the file, nor a user of the file and one of the store, have one name. It checks
//! that each picture's bytes are the ones its name says. And it prepares each picture as an
//! upload is prepared, refusing what an upload would (`pictures`). It writes nothing if
//! anything is wrong, naming the line and the field. The second time it writes each item as it
//! is (upsert; a post naming its pictures as they are stored) and each picture as preparation
//! makes it. So an import stopped halfway (a throttle, a kill) is finished by running it again,
//! and one run twice leaves the same data. On the embedded store it records itself before its
//! first write and takes the record away once the copies are made. While the record is there,
//! only an import opens the store, and the same file's finishes it
//! (`crate::cosmos::error::ImportMark`). It holds one line at a time (at most
//! [`MAX_LINE_BYTES`], measured before it is held), then a picture's bytes while it is
//! prepared. It also holds what the checks need of the whole file: each user's id and name,
//! each post's id, each picture's name, and the ids of the post being read's comments, likes
//! and pictures.
//!
//! The parts, by role: the file's lines read and checked (`check`), the pictures prepared
//! (`pictures`), what an export writes (`export`), what an import writes (`import`), and the
//! files that appear whole or not at all (`files`).

mod check;
pub(crate) mod export;
pub(crate) mod files;
pub(crate) mod import;
mod pictures;

use crate::changefeed::FeedError;
use crate::cosmos::StoreError;
use crate::model::picture::PictureAddress;
use crate::model::{Comment, Like, Post, Revision, User};
use crate::pictures::PictureStoreError;

pub(crate) use check::check_unsealed;

/// The header line's format name and version.
const FORMAT: &str = "cosmos-blog";
const VERSION: u64 = 2;

/// How many items one query page of a post's comments or likes holds.
const PAGE_SIZE: u32 = 1000;

/// The longest line an import reads: a picture of the largest kept (a re-encoded PNG of
/// [`crate::model::picture::MAX_PIXELS`] stays well below 48 MB) in base64. A longer line is
/// refused without being held: it is measured before it is read (`check::read_line`).
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
    #[error("the file could not be read or written")]
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
    #[error(
        "line {line}, `{field}`: post {post:?} says {said}, but the file lists {listed}; nothing was imported"
    )]
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
    #[error(
        "line {line}, `userId`: {user:?} is no user of the file or of this store; nothing was imported"
    )]
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
        "line {line}: a picture, and this blog keeps no pictures (docs/configuration.md: \
         BLOG_PICTURES); nothing was imported"
    )]
    NoPictureStore {
        /// The first picture's line.
        line: usize,
    },
    /// The file is not the whole of an export.
    #[error("{0}; nothing was imported")]
    NotWhole(NotWhole),
    /// The store holds an import of another file that did not finish.
    #[error(
        "this store holds an import of another file that did not finish (its SHA-256 is {}{}): run that import again \
         to finish it first; nothing was imported",
        sha256,
        file.as_deref().map(|file| format!(", {file}")).unwrap_or_else(|| ", read from standard input".into())
    )]
    OtherImportUnfinished {
        /// That file's SHA-256.
        sha256: String,
        /// That file as its import was given it (`None`: standard input).
        file: Option<String>,
    },
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
    #[error(
        "line {line}: the last line says the file holds {said}, but it holds {found}: lines are missing or added"
    )]
    Counts {
        /// The last line's number.
        line: usize,
        /// What it says.
        said: Counts,
        /// What the file holds.
        found: Counts,
    },
    /// The digest is not the file's.
    #[error(
        "line {line}: the file's SHA-256 is {found}, not {said} as its last line says: it was changed after the export"
    )]
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
    /// Revisions the posts' edits kept (absent from a file that has none, as from every file
    /// written before posts kept them).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub revisions: usize,
}

fn is_zero(count: &usize) -> bool {
    *count == 0
}

impl Counts {
    /// Items and pictures of every kind.
    pub fn total(&self) -> usize {
        self.users + self.posts + self.comments + self.likes + self.pictures + self.revisions
    }
}

impl std::fmt::Display for Counts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} users, {} posts, {} comments, {} likes, {} pictures",
            self.users, self.posts, self.comments, self.likes, self.pictures
        )?;
        if self.revisions > 0 {
            write!(f, ", {} revisions", self.revisions)?;
        }
        Ok(())
    }
}

/// The last line's summary.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct End {
    #[serde(flatten)]
    counts: Counts,
    sha256: String,
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

/// One item or picture of a file, checked: what is written, as the blog writes it (fields the
/// blog does not know are not carried).
pub(crate) enum Item {
    User(User),
    /// A post, and how many revisions its edits have kept (`revisionCount`).
    Post(Post, u64),
    Comment(Comment),
    Like(Like),
    Revision(Revision),
    Picture(PictureAddress, Vec<u8>),
}
