//! Every query the application runs, as constant SQL with parameters. Each one reads ONE
//! logical partition (the partition key is passed beside the query, never in it).

use std::borrow::Cow;

use serde_json::json;

use super::QuerySpec;

/// Q3: a user's posts, newest first, from the short copies in the user's partition of `users`.
/// Published posts only: a draft's copy (its author's list of drafts) carries a `status`.
pub(crate) fn user_posts() -> QuerySpec {
    QuerySpec {
        sql: Cow::Borrowed(
            "SELECT * FROM c WHERE c.type = @type AND NOT IS_DEFINED(c.status) ORDER BY c.creationDate DESC, c.id DESC",
        ),
        parameters: vec![(Cow::Borrowed("@type"), json!("post"))],
    }
}

/// A user's drafts, newest first, from their copies in the user's own partition of `users`:
/// the copies with a `status` (a published post's copy has none).
pub(crate) fn user_drafts() -> QuerySpec {
    QuerySpec {
        sql: Cow::Borrowed(
            "SELECT * FROM c WHERE c.type = @type AND IS_DEFINED(c.status) ORDER BY c.creationDate DESC, c.id DESC",
        ),
        parameters: vec![(Cow::Borrowed("@type"), json!("post"))],
    }
}

/// A post's revisions, newest first, from the post's partition of `posts` (its author's list,
/// and the export's).
pub(crate) fn post_revisions() -> QuerySpec {
    QuerySpec {
        sql: Cow::Borrowed("SELECT * FROM c WHERE c.type = @type ORDER BY c.number DESC"),
        parameters: vec![(Cow::Borrowed("@type"), json!("revision"))],
    }
}

/// The scheduled posts due by `now` (as `creationDate` writes a time), from the timer's
/// partition of `feed`: a range on one field, which the default index serves.
pub(crate) fn due_posts(now: &str) -> QuerySpec {
    QuerySpec {
        sql: Cow::Borrowed("SELECT * FROM c WHERE c.publishAt <= @now"),
        parameters: vec![(Cow::Borrowed("@now"), json!(now))],
    }
}

/// A word's chunks, best tier first, from the word's partition of `words` (a search's
/// candidates). One property's order: the default range index serves it.
pub(crate) fn word_chunks() -> QuerySpec {
    QuerySpec {
        sql: Cow::Borrowed("SELECT * FROM c WHERE c.type = @type ORDER BY c.tier DESC"),
        parameters: vec![(Cow::Borrowed("@type"), json!("chunk"))],
    }
}

/// Whether a tag's partition of `tags` holds a post: a page of one.
pub(crate) fn any_tagged_post() -> QuerySpec {
    QuerySpec {
        sql: Cow::Borrowed("SELECT c.id FROM c WHERE c.type = @type"),
        parameters: vec![(Cow::Borrowed("@type"), json!("post"))],
    }
}

/// Q4: a post's comments, oldest first, from the post's partition of `posts`.
pub fn post_comments() -> QuerySpec {
    QuerySpec {
        sql: Cow::Borrowed(
            "SELECT * FROM c WHERE c.type = @type ORDER BY c.creationDate ASC, c.id ASC",
        ),
        parameters: vec![(Cow::Borrowed("@type"), json!("comment"))],
    }
}

/// Q5: a post's likes, oldest first, from the post's partition of `posts`.
pub fn post_likes() -> QuerySpec {
    QuerySpec {
        sql: Cow::Borrowed(
            "SELECT * FROM c WHERE c.type = @type ORDER BY c.creationDate ASC, c.id ASC",
        ),
        parameters: vec![(Cow::Borrowed("@type"), json!("like"))],
    }
}

/// Q6: the newest posts, from the single partition of `feed`. (Where scripts run in process,
/// that partition also holds their fence item, whose `type` is the partition key too.)
pub fn feed() -> QuerySpec {
    QuerySpec {
        sql: Cow::Borrowed(
            "SELECT * FROM c WHERE c.type = @type AND NOT IS_DEFINED(c.scriptFence) ORDER BY c.creationDate DESC, c.id DESC",
        ),
        parameters: vec![(Cow::Borrowed("@type"), json!("post"))],
    }
}

/// Q7: the newest posts with a tag, from the tag's partition of `tags` (its normal form).
pub(crate) fn tag_posts() -> QuerySpec {
    QuerySpec {
        sql: Cow::Borrowed(
            "SELECT * FROM c WHERE c.type = @type ORDER BY c.creationDate DESC, c.id DESC",
        ),
        parameters: vec![(Cow::Borrowed("@type"), json!("post"))],
    }
}

/// The sitemap's index: each month that lists a post, from the index's partition of `feed`.
/// A month whose posts all left keeps its item at zero, which is not listed.
pub(crate) fn sitemap_months() -> QuerySpec {
    QuerySpec {
        sql: Cow::Borrowed("SELECT * FROM c WHERE c.posts > 0 ORDER BY c.id"),
        parameters: Vec::new(),
    }
}

/// One file of a month's sitemap: `limit` of its posts' addresses after the first `offset`,
/// oldest first, from the month's partition of `feed` (its summary has no `creationDate`).
pub(crate) fn sitemap_entries(offset: u64, limit: u64) -> QuerySpec {
    QuerySpec {
        sql: Cow::Borrowed(
            "SELECT c.id, c.lastmod FROM c WHERE IS_DEFINED(c.creationDate) ORDER BY c.creationDate ASC, c.id ASC OFFSET @offset LIMIT @limit",
        ),
        parameters: vec![
            (Cow::Borrowed("@offset"), json!(offset)),
            (Cow::Borrowed("@limit"), json!(limit)),
        ],
    }
}
