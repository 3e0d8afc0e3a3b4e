//! An import: the file checked whole, then written item by item, then the copies made again.

use serde_json::Value;

use crate::app::AppState;
use crate::changefeed::processor;
use crate::cosmos::{Container, WriteOp};
use crate::model::usernames::normalize_username;
use crate::model::{self, ListVersions, Post, StoredPost, User};

use super::check::{Checker, Reader};
use super::pictures::PicturePlan;
use super::{Counts, Item, TransferError, stop_here};
use crate::cosmos::error::ImportMark;

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

/// Checks the whole export at `path`, then writes every item and picture into `state`'s stores.
/// Then it makes the copies and reserves the names (the replay of `rebuild-copies`). `given` is
/// the file as the command names it (`None`: standard input). The embedded store records it
/// while the import writes, to say how to finish it. `progress` is told how far it has got.
pub async fn import(
    state: &AppState,
    path: &std::path::Path,
    given: Option<&str>,
    progress: &mut dyn FnMut(ImportProgress),
) -> Result<Counts, TransferError> {
    let open =
        || std::fs::File::open(path).map(|file| std::io::BufReader::with_capacity(1 << 20, file));
    let stamp = || std::fs::metadata(path).map(|found| (found.len(), found.modified().ok()));
    let before = stamp().map_err(TransferError::Io)?;
    let keeps_pictures = state.pictures.is_some();
    let mut reader = Reader::new(open().map_err(TransferError::Io)?, keeps_pictures, true);
    let mut pictures = PicturePlan::default();
    while let Some(item) = reader.next()? {
        if let Item::Picture(address, bytes) = item {
            let store = state
                .pictures
                .as_ref()
                .expect("checked: a file with pictures needs a picture store");
            pictures.check(store, reader.checker.line, &address, bytes).await?;
        }
        progress(ImportProgress::Checking {
            lines: reader.checker.line,
            bytes: reader.bytes,
            size: before.0,
        });
    }
    pictures.finish()?;
    let checker = reader.checker;
    let mark = ImportMark {
        sha256: checker.sha256.clone().expect("a whole file has its digest"),
        file: given.map(str::to_owned),
    };
    let durability = state.store.embedded();
    let resuming =
        match durability.map(|durability| durability.import_mark()).transpose()?.flatten() {
            Some(unfinished) if unfinished.sha256 == mark.sha256 => true,
            Some(unfinished) => {
                return Err(TransferError::OtherImportUnfinished {
                    sha256: unfinished.sha256,
                    file: unfinished.file,
                });
            }
            None => false,
        };
    check_in_store(state, &checker, resuming).await?;
    let total = checker.counts.total();
    if stamp().map_err(TransferError::Io)? != before {
        return Err(TransferError::Changed { path: path.display().to_string() });
    }

    // From here on the embedded store opens only to this import until it has finished.
    if let Some(durability) = durability {
        durability.mark_import(Some(&mark))?;
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
                return Err(TransferError::Unfinished {
                    line,
                    written: counts.total(),
                    total,
                    source: Box::new(error),
                });
            }
        };
        let line = reader.checker.line;
        if let Err(error) = write(state, &pictures, line, item, &mut counts).await {
            return Err(TransferError::Unfinished {
                line,
                written: counts.total(),
                total,
                source: Box::new(error),
            });
        }
        progress(ImportProgress::Writing { counts, total });
        stop_here(counts.total());
    }
    if reader.checker.counts != checker.counts {
        return Err(TransferError::Changed { path: path.display().to_string() });
    }
    over_quota(state, &checker.picture_owners).await?;
    state.feed.invalidate();
    let users = processor::replay_users(state, &mut |users| {
        progress(ImportProgress::Copies { users, posts: 0 })
    })
    .await
    .map_err(TransferError::Copies)?;
    stop_here(total + 1);
    processor::rebuild_copies(state, &mut |posts| {
        progress(ImportProgress::Copies { users, posts })
    })
    .await
    .map_err(TransferError::Copies)?;
    stop_here(total + 2);
    if let Some(durability) = durability {
        durability.mark_import(None)?;
    }
    Ok(counts)
}

/// Writes one checked item of line `line` (upsert: written again, it changes nothing) or
/// picture (as `pictures` planned it), and counts it. A post names its pictures as they are
/// stored.
async fn write(
    state: &AppState,
    pictures: &PicturePlan,
    line: usize,
    item: Item,
    counts: &mut Counts,
) -> Result<(), TransferError> {
    let (container, partition, document, count) = match item {
        Item::User(user) => {
            (Container::Users, user.user_id.clone(), document(&user)?, &mut counts.users)
        }
        Item::Post(post, revision_count) => {
            let content = pictures.named_as_stored(&post.post_id, post.content);
            // New versions of its lists: no instance kept a view of the post with them.
            let post = StoredPost {
                post: Post { content, ..post },
                versions: ListVersions::new(),
                share_key: None,
                revision_count,
            };
            (Container::Posts, post.post.post_id.clone(), document(&post)?, &mut counts.posts)
        }
        Item::Comment(comment) => {
            (Container::Posts, comment.post_id.clone(), document(&comment)?, &mut counts.comments)
        }
        Item::Like(like) => {
            (Container::Posts, like.post_id.clone(), document(&like)?, &mut counts.likes)
        }
        Item::Revision(revision) => (
            Container::Posts,
            revision.post_id.clone(),
            document(&revision)?,
            &mut counts.revisions,
        ),
        Item::Picture(address, bytes) => {
            let store = state
                .pictures
                .as_ref()
                .expect("checked: a file with pictures needs a picture store");
            pictures.write(store, line, &address, bytes).await?;
            counts.pictures += 1;
            return Ok(());
        }
    };
    state
        .store
        .execute_write(container, &partition, WriteOp::Upsert { document, if_match: None })
        .await?;
    *count += 1;
    Ok(())
}

fn document(item: &impl serde::Serialize) -> Result<Value, TransferError> {
    serde_json::to_value(item).map_err(|error| TransferError::Io(error.into()))
}

/// Says which of `owners` keep more pictures than this blog's quota lets a writer keep. Their
/// pictures are imported all the same: they were taken where they come from, and the posts show
/// them. The quota counts what is stored under a writer. So such a writer can add no picture
/// until they delete some, as the operator is told here.
async fn over_quota(
    state: &AppState,
    owners: &std::collections::BTreeSet<String>,
) -> Result<(), TransferError> {
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

/// What the first pass leaves to the store. Each user named but not in the file must be in it,
/// and no name of the file may be held there by another user. The file's users must not be
/// there under other names. Its posts must not be there as other posts (another author, other
/// counters; one that is the file's, written by an import stopped halfway, is). The flag
/// `resuming` says the store records this file's import as unfinished, and nothing but an
/// import has opened it since. Then its posts are the file's whatever their counters say (a
/// `handler repair` meanwhile counts what was written so far): they are written again. Point
/// reads: one per post, two per user.
async fn check_in_store(
    state: &AppState,
    checker: &Checker,
    resuming: bool,
) -> Result<(), TransferError> {
    for (user, line) in &checker.elsewhere {
        if state
            .store
            .read::<Value>(Container::Users, user, user)
            .await?
            .is_none_or(|found| found["type"] != "user")
        {
            return Err(TransferError::NoSuchUser { line: *line, user: user.clone() });
        }
    }
    for (post, (line, author, comments, likes)) in checker.posts.iter().filter(|_| !resuming) {
        let Some(stored) = state.store.read::<Post>(Container::Posts, post, post).await? else {
            continue;
        };
        if !model::is_live(&stored) {
            continue;
        }
        if stored.user_id != *author
            || stored.comment_count != *comments
            || stored.like_count != *likes
        {
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
