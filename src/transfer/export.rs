//! An export: every item and picture of a store, as the file's lines, and the last line.

use std::io::Write;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::app::AppState;
use crate::cosmos::{Container, PageRequest, QuerySpec, StoreError, queries};
use crate::model::picture::PictureAddress;
use crate::model::{self, Post};

use super::{Counts, End, FORMAT, PAGE_SIZE, TransferError, VERSION, stop_here};

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
/// last line. It tells `progress` the counts so far, and once the posts are known, how many of
/// them have been gone through and how many there are. The users and the posts are found
/// through each container's change feed from its beginning (the latest version of every item,
/// on an account and on the embedded store). Each post is then read again, and its comments and
/// likes listed, in its own partition. Its pictures are read one at a time: the long part,
/// whose length is known before it starts.
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
        let Some(post) = state.store.read::<Value>(Container::Posts, id, id).await? else {
            continue;
        };
        let Some(live) = serde_json::from_value::<Post>(post.clone()).ok().filter(model::is_live)
        else {
            continue;
        };
        // An import makes the lists' versions anew; a preview link is not carried to another
        // store. The revisions' count is, with the revisions.
        let mut post = model::ListVersions::removed_from(without_system_properties(post));
        if let Some(fields) = post.as_object_mut() {
            fields.remove("shareKey");
        }
        out.line(&post)?;
        counts.posts += 1;
        for (query, count) in [
            (queries::post_comments as fn() -> QuerySpec, &mut counts.comments),
            (queries::post_likes, &mut counts.likes),
            (queries::post_revisions, &mut counts.revisions),
        ] {
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

/// How far an export has gone through the posts: `done` of `of` (deleted ones included).
#[derive(Clone, Copy, Debug)]
pub struct PostsDone {
    /// Posts gone through.
    pub done: usize,
    /// Posts in all.
    pub of: usize,
}

/// Every result of `query` in the post `post_id`'s partition, page after page.
async fn all_of_partition(
    state: &AppState,
    post_id: &str,
    query: fn() -> QuerySpec,
) -> Result<Vec<Value>, StoreError> {
    let mut items = Vec::new();
    let mut continuation = None;
    loop {
        let page = PageRequest { size: PAGE_SIZE, continuation };
        let (found, next) =
            state.store.query_documents(Container::Posts, post_id, query(), page).await?;
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
