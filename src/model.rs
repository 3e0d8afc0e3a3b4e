//! The article's final (V3) items, and the rules that derive one item from another.
//!
//! Everything here is plain data and pure functions: no I/O, so every denormalization rule can
//! be tested on its own. The HTTP handlers, the scripts and the change-feed functions apply
//! these rules; none of them invents its own. [`usernames`]: how names compare, and the
//! reservations that keep them unique.

pub(crate) mod first_picture;
pub(crate) mod ids;
pub(crate) mod markdown;
mod marks;
pub(crate) mod picture;
pub(crate) mod search;
pub(crate) mod tags;
pub mod usernames;

pub(crate) use ids::IdError;
pub(crate) use ids::REQUEST_RECORD_PREFIX;
pub(crate) use ids::hex;
pub(crate) use ids::validate_id;
pub(crate) use marks::{
    CHANGE_LOG_ID, CHANGE_LOG_PARTITION, FEED_MARK_ID, FEED_MARK_PARTITION, TAG_MARK_ID,
    TAG_MARK_TYPE, USER_POSTS_MARK_ID, USER_POSTS_MARK_TYPE,
};

pub(crate) use ids::MAX_ID_BYTES;

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use utoipa::ToSchema;

/// How many characters of a post's `content` its short form (the copies in `users` and `feed`,
/// served by Q3 and Q6) keeps. Counted in Unicode scalar values, so a cut never splits one.
pub const SHORT_CONTENT_CHARS: usize = 200;

/// The longest username accepted, in characters.
pub(crate) const MAX_USERNAME_CHARS: usize = 64;
/// The longest post title accepted, in characters.
pub(crate) const MAX_TITLE_CHARS: usize = 200;
/// The longest post content accepted, in characters: a post at every limit stays far below
/// Cosmos DB's 2 MB item size.
pub(crate) const MAX_CONTENT_CHARS: usize = 20_000;
/// The longest comment accepted, in characters.
pub(crate) const MAX_COMMENT_CHARS: usize = 2_000;

/// The partition key value of every item in `feed`: the article partitions it by `type`, so the
/// whole feed is one logical partition that Q6 reads with one query.
pub(crate) const FEED_PARTITION: &str = "post";

/// The `type` discriminator the article puts on every item; containers hold several types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ItemType {
    /// A user.
    User,
    /// A post, or a short copy of one.
    Post,
    /// A comment.
    Comment,
    /// A like.
    Like,
}

/// A user, in `users` (partition `/userId`, which equals `id`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct User {
    /// The user's id: the signed-in principal's.
    pub id: String,
    /// `user`.
    #[serde(rename = "type")]
    pub item_type: ItemType,
    /// The same as `id`: the partition key in `users`.
    pub user_id: String,
    /// The user's unique name (compared ignoring case and Unicode form).
    pub username: String,
    /// When the username was last set by an edit (C1 edit); absent on a user never edited.
    /// `UsersChangeFeed` needs it: only a renamed user can have items that show another name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renamed_at: Option<String>,
}

/// Who may read a post: everyone once it is published; before, its author alone. Only a
/// published post is copied where readers find posts (`feed`, `tags`, the author's list).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum PostStatus {
    /// Public: in the feed, under its tags, in its author's list.
    #[default]
    Published,
    /// Kept for its author, who alone reads it; in no list but theirs of drafts.
    Draft,
    /// A draft the timer publishes at its `publishAt`.
    Scheduled,
}

impl PostStatus {
    /// Whether this is [`PostStatus::Published`]: the status a post without one has.
    pub(crate) fn is_published(&self) -> bool {
        *self == PostStatus::Published
    }
}

/// A post in `posts` (partition `/postId`, which equals `id`). Its short form, with the same
/// fields, is copied into `users` (partition `/userId`) and `feed` (partition `/type`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Post {
    /// The post's id.
    pub id: String,
    /// `post`.
    #[serde(rename = "type")]
    pub item_type: ItemType,
    /// The same as `id`: the partition key in `posts`.
    pub post_id: String,
    /// The author's id: the partition key of the copy in `users`.
    pub user_id: String,
    /// The author's username (kept true by `UsersChangeFeed`).
    pub user_username: String,
    /// The title.
    pub title: String,
    /// The content, in Markdown (cut short in the short copies).
    pub content: String,
    /// Its tags, as its author typed them (at most 5, compared ignoring case and Unicode form);
    /// absent on a post without tags, which keeps the article's shape.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(max_items = 5)]
    pub tags: Vec<String>,
    /// How many comments the post has (kept exact by the stored procedures).
    pub comment_count: u64,
    /// How many likes the post has (kept exact by the stored procedures).
    pub like_count: u64,
    /// When readers could first see it (RFC 3339, UTC, milliseconds): its creation, or the
    /// moment a draft was published; on a draft, when it was first saved.
    pub creation_date: String,
    /// When its author last edited the title or content (C2 edit); absent on a post never
    /// edited, so readers can tell an edited post from the one first published.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edited_at: Option<String>,
    /// `draft` for a post its author alone reads; absent once published, as on every post
    /// written before posts had drafts, so published posts keep the article's shape.
    #[serde(default, skip_serializing_if = "PostStatus::is_published")]
    pub status: PostStatus,
    /// When a scheduled post is to be published (RFC 3339, UTC, milliseconds); on scheduled
    /// posts only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub publish_at: Option<String>,
    /// Set by C7 (`deletePost`): the post is deleted and Cosmos DB removes it after its `ttl`.
    /// Until then it is a tombstone, kept only so that the change feed, which never delivers a
    /// deletion, delivers this update and `PostsChangeFeed` removes the post's copies. Every read
    /// treats a deleted post as missing ([`is_live`]); no answer ever carries the flag.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[schema(ignore)]
    pub deleted: bool,
    /// In lists only (the short copies): the post's first picture, its phones' copy, which the
    /// pages show beside the excerpt. Absent when the post shows none, and on a copy made before
    /// copies carried it (`handler rebuild-copies` adds it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) picture: Option<first_picture::FirstPicture>,
}

/// A post as `posts` stores it: the post, and a version of each of its lists that no answer
/// shows. A kept post view ([`crate::app::kept::post_views`]) compares the versions it was read with to
/// the post's as read again, and reads again only the list whose version moved.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct StoredPost {
    #[serde(flatten)]
    pub post: Post,
    #[serde(flatten)]
    pub versions: ListVersions,
    /// The key of the post's preview link, while its author shares one (never answered, never
    /// copied: the copies are of [`Post`]).
    #[serde(default, rename = "shareKey", skip_serializing_if = "Option::is_none")]
    pub share_key: Option<String>,
    /// How many revisions the post's edits have kept, ever: the next one's number. Written
    /// with every edit, so two edits at once cannot keep two revisions of one number.
    #[serde(default, rename = "revisionCount", skip_serializing_if = "is_zero")]
    pub revision_count: u64,
}

fn is_zero(count: &u64) -> bool {
    *count == 0
}

/// The `type` of a kept revision, in its post's partition of `posts`.
pub(crate) const REVISION_TYPE: &str = "revision";

/// A version of a post that an edit replaced, kept in the post's partition of `posts` for its
/// author alone: never copied, never shown to readers, deleted with the post.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Revision {
    /// `revision-<number>`.
    pub id: String,
    /// `revision`.
    #[serde(rename = "type")]
    pub item_type: String,
    /// The post: its partition key in `posts`.
    pub post_id: String,
    /// The revision's number: 0 for the first version an edit replaced, then 1, 2, ...
    pub number: u64,
    /// The title it had.
    pub title: String,
    /// The content it had.
    pub content: String,
    /// The tags it had.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// When that version was written (its edit, or the post's creation).
    pub written_at: String,
    /// When an edit replaced it.
    pub replaced_at: String,
}

/// The id of revision `number`.
pub(crate) fn revision_id(number: u64) -> String {
    format!("revision-{number}")
}

/// The revision `post` becomes when an edit at `now` replaces it, numbered `number`.
pub(crate) fn revision_of(post: &Post, number: u64, now: &str) -> Revision {
    Revision {
        id: revision_id(number),
        item_type: REVISION_TYPE.to_owned(),
        post_id: post.id.clone(),
        number,
        title: post.title.clone(),
        content: post.content.clone(),
        tags: post.tags.clone(),
        written_at: post.edited_at.clone().unwrap_or_else(|| post.creation_date.clone()),
        replaced_at: now.to_owned(),
    }
}

/// The versions of a post's comments and likes: each a value no other version of the list had.
/// It is written in the same transaction as every change to the list: the stored procedures
/// that add or delete a comment or like, and `updateUsernames` when it renames one. That write
/// sets it to the etag the post had before (an etag never repeats). A new post's, and an
/// imported one's, are new ids. Absent on a post written before posts carried them: a list
/// whose version is absent may have changed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ListVersions {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comments_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub likes_version: Option<String>,
}

impl ListVersions {
    /// The versions of a new post's lists: values no write has made.
    pub(crate) fn new() -> ListVersions {
        ListVersions { comments_version: Some(new_id()), likes_version: Some(new_id()) }
    }

    /// `document`, a post as stored, without its versions: they say nothing outside the store
    /// they were read from.
    pub(crate) fn removed_from(mut document: serde_json::Value) -> serde_json::Value {
        if let Some(fields) = document.as_object_mut() {
            fields.retain(|name, _| name != "commentsVersion" && name != "likesVersion");
        }
        document
    }

    /// Whether the comments, then the likes, may differ between a read of the post with these
    /// versions and one with `now`'s: their versions differ, or one is not known.
    pub(crate) fn moved_since(&self, now: &ListVersions) -> (bool, bool) {
        let moved =
            |before: &Option<String>, after: &Option<String>| before.is_none() || before != after;
        (
            moved(&self.comments_version, &now.comments_version),
            moved(&self.likes_version, &now.likes_version),
        )
    }
}

/// How long a deleted post's tombstone stays before Cosmos DB's TTL removes it. It is long
/// enough for `PostsChangeFeed` to see it even after a day-long outage of the change-feed
/// functions. Once the tombstone is gone, a change feed that had not read it never will, and
/// the copies would stay. The tombstone keeps no title, content or counts, so the wait costs a
/// few hundred bytes and shows the author's words to no one.
pub const DELETED_POST_TTL_SECS: u32 = 24 * 60 * 60;

/// Whether a post item is a post that exists: not a comment or like of the partition, and not
/// a deleted post's tombstone.
pub(crate) fn is_live(post: &Post) -> bool {
    post.item_type == ItemType::Post && !post.deleted
}

/// A comment, in its post's partition of `posts`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Comment {
    /// The comment's id.
    pub id: String,
    /// `comment`.
    #[serde(rename = "type")]
    pub item_type: ItemType,
    /// The post it comments on: its partition key in `posts`.
    pub post_id: String,
    /// The commenter's id.
    pub user_id: String,
    /// The commenter's username (kept true by `UsersChangeFeed`).
    pub user_username: String,
    /// The comment's text.
    pub content: String,
    /// When it was written (RFC 3339, UTC, milliseconds).
    pub creation_date: String,
}

/// A like, in its post's partition of `posts`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Like {
    /// The like's id.
    pub id: String,
    /// `like`.
    #[serde(rename = "type")]
    pub item_type: ItemType,
    /// The post it likes: its partition key in `posts`.
    pub post_id: String,
    /// The liker's id.
    pub user_id: String,
    /// The liker's username (kept true by `UsersChangeFeed`).
    pub user_username: String,
    /// When it was liked (RFC 3339, UTC, milliseconds).
    pub creation_date: String,
}

/// A new random item id. Ids are strings in the article; a UUID never needs escaping in a
/// Cosmos resource link.
pub(crate) fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// `creationDate`: RFC 3339, UTC, millisecond precision. The fixed width makes the string order
/// the time order, so Cosmos can sort by it as a string.
pub fn creation_date(now: OffsetDateTime) -> String {
    let now = now.to_offset(time::UtcOffset::UTC);
    let millis = now.millisecond();
    let whole = now.replace_nanosecond(0).expect("zero nanoseconds is valid");
    let text = whole.format(&Rfc3339).expect("a UTC date formats as RFC 3339");
    // `text` ends in "Z" with no fraction; insert exactly three digits.
    format!("{}.{millis:03}Z", text.trim_end_matches('Z'))
}

/// The current time as a `creationDate`.
pub(crate) fn now() -> String {
    creation_date(OffsetDateTime::now_utc())
}

/// C1 create.
pub fn new_user(id: String, username: String) -> User {
    User { user_id: id.clone(), id, item_type: ItemType::User, username, renamed_at: None }
}

/// C1 edit: the user with the username it has from `now` on.
pub(crate) fn renamed_user(id: String, username: String, now: String) -> User {
    User { renamed_at: Some(now), ..new_user(id, username) }
}

/// Whether items of `user` may show a name other than the current one, so that the name has to
/// be carried onto them. Every item copies the username of its writer when it is written, so a
/// user who was never renamed only ever wrote the name they have.
pub(crate) fn may_show_other_names(user: &User) -> bool {
    user.renamed_at.is_some()
}

/// C2 create: counters start at zero and the author's current username is copied in, so that
/// Q2 needs no second read.
pub(crate) fn new_post(
    id: String,
    author: &User,
    title: String,
    content: String,
    creation_date: String,
) -> Post {
    Post {
        post_id: id.clone(),
        id,
        item_type: ItemType::Post,
        user_id: author.user_id.clone(),
        user_username: author.username.clone(),
        title,
        content,
        tags: Vec::new(),
        comment_count: 0,
        like_count: 0,
        creation_date,
        edited_at: None,
        status: PostStatus::Published,
        publish_at: None,
        deleted: false,
        picture: None,
    }
}

/// C2 edit: title and content change, and when; author, counters and creation date never do.
pub(crate) fn edited_post(post: Post, title: String, content: String, edited_at: String) -> Post {
    Post { title, content, edited_at: Some(edited_at), ..post }
}

/// A post given `status` (and `publish_at`, for [`PostStatus::Scheduled`] only) at `now`.
/// Published from a draft or a schedule, it is dated `now` and shows no edit. Readers see it
/// first now, so it enters the feed at the top. Dated when the draft was begun, it would be
/// older than the newest 100 and never shown. Any other change keeps its date.
pub(crate) fn with_status(
    post: Post,
    status: PostStatus,
    publish_at: Option<String>,
    now: &str,
) -> Post {
    let publish_at = publish_at.filter(|_| status == PostStatus::Scheduled);
    if status.is_published() && !post.status.is_published() {
        Post { status, publish_at, creation_date: now.to_owned(), edited_at: None, ..post }
    } else {
        Post { status, publish_at, ..post }
    }
}

/// Whether `reader` (`None`: nobody signed in) may read `post`: anyone a published post, its
/// author alone a draft. Everyone else is answered as if it did not exist.
pub(crate) fn readable_by(post: &Post, reader: Option<&str>) -> bool {
    post.status.is_published() || reader == Some(post.user_id.as_str())
}

/// The tags a post shows readers: its own once published; none before, so a draft has no
/// copies under its tags.
pub(crate) fn shown_tags(post: &Post) -> &[String] {
    if post.status.is_published() { &post.tags } else { &[] }
}

/// The short form of a post that `users` and `feed` hold: the same item with its content cut to
/// [`SHORT_CONTENT_CHARS`], and its first picture, from the whole content (the cut may leave it
/// out). One document serves both containers: it carries `userId` (the partition key of
/// `users`) and `type` = "post" (the partition key of `feed`).
pub(crate) fn short_post(post: &Post) -> Post {
    let content = truncate_chars(&post.content, SHORT_CONTENT_CHARS).to_owned();
    Post { content, picture: first_picture::FirstPicture::of(post), ..post.clone() }
}

/// Which version of a post a copy was made from: the post's `_ts` (seconds) and `_etag` as the
/// change feed delivered it. Etags are unordered; `_ts` orders versions a second apart, and two
/// versions within one second are told apart by their etags.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SourceVersion {
    pub source_ts: i64,
    pub source_etag: String,
}

/// A short copy of a post as stored in `users` and `feed`: the article's short post, plus the
/// version of the post it was made from. With it, a late or repeated change-feed delivery never
/// turns a copy back into an older version. Reads deserialize copies as [`Post`], which leaves
/// the version out of every answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct PostCopy {
    #[serde(flatten)]
    pub post: Post,
    #[serde(flatten)]
    pub source: SourceVersion,
    /// On the copy in `users` only: the tags (normal form) other than the copy's own under which
    /// `tags` may still hold a copy of the post, from the tags it had before (see
    /// `app::tags`). Empty, and absent, once those copies are gone.
    #[serde(default, rename = "taggedBefore", skip_serializing_if = "Vec::is_empty")]
    pub tagged_before: Vec<String>,
}

pub(crate) fn post_copy(post: &Post, source: SourceVersion) -> PostCopy {
    PostCopy { post: short_post(post), source, tagged_before: Vec::new() }
}

/// What to do with a copy when a version of its post is delivered.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum CopyAction {
    /// The copy is from this version or a newer one.
    Keep,
    /// The delivered version is newer: write the copy from it.
    Write,
    /// Same second, other etag: the delivery cannot say which is newer, so write the copy from
    /// the post's current version, which is at least as new as both.
    WriteFromCurrent,
}

pub(crate) fn copy_action(copy: Option<&SourceVersion>, delivered: &SourceVersion) -> CopyAction {
    match copy {
        None => CopyAction::Write,
        Some(copy) if delivered.source_ts > copy.source_ts => CopyAction::Write,
        Some(copy)
            if delivered.source_ts < copy.source_ts
                || delivered.source_etag == copy.source_etag =>
        {
            CopyAction::Keep
        }
        Some(_) => CopyAction::WriteFromCurrent,
    }
}

pub(crate) fn new_comment(
    id: String,
    post_id: &str,
    author: &User,
    content: String,
    creation_date: String,
) -> Comment {
    Comment {
        id,
        item_type: ItemType::Comment,
        post_id: post_id.to_owned(),
        user_id: author.user_id.clone(),
        user_username: author.username.clone(),
        content,
        creation_date,
    }
}

/// The id of a user's like on a post. Deterministic, so that a second like by the same user is
/// a conflict on create inside the post's partition: the store itself forbids double likes.
pub(crate) fn like_id(user_id: &str) -> String {
    format!("like-{user_id}")
}

pub(crate) fn new_like(post_id: &str, author: &User, creation_date: String) -> Like {
    Like {
        id: like_id(&author.user_id),
        item_type: ItemType::Like,
        post_id: post_id.to_owned(),
        user_id: author.user_id.clone(),
        user_username: author.username.clone(),
        creation_date,
    }
}

/// The longest prefix of `text` with at most `max_chars` characters.
pub(crate) fn truncate_chars(text: &str, max_chars: usize) -> &str {
    match text.char_indices().nth(max_chars) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

/// What a list shows of a short post: its Markdown as plain text ([`markdown::to_plain_text`]),
/// cut back to the last whole word and ended with "…" when the copy was cut
/// ([`SHORT_CONTENT_CHARS`]); and whether it was. A copy of exactly that length may be whole: it
/// is taken as cut, which at worst drops its last word.
pub(crate) fn excerpt(short_content: &str) -> (String, bool) {
    let cut = short_content.chars().count() >= SHORT_CONTENT_CHARS;
    if !cut {
        return (markdown::to_plain_text(short_content, false), false);
    }
    let (text, ends_at_a_word) = markdown::cut_to_plain_text(short_content);
    let whole_words = match text.rfind(char::is_whitespace) {
        _ if ends_at_a_word => &text,
        Some(at) if at > 0 => &text[..at],
        // One long word: cut inside it rather than show nothing.
        _ => &text,
    };
    (format!("{}…", whole_words.trim_end()), true)
}

#[cfg(test)]
mod tests {
    /// A list may have changed where its version moved, or where either read does not know it.
    #[test]
    fn a_list_moved_where_its_version_differs_or_is_not_known() {
        use super::ListVersions;
        let known =
            ListVersions { comments_version: Some("c1".into()), likes_version: Some("l1".into()) };
        assert_eq!(known.moved_since(&known), (false, false));
        let commented = ListVersions { comments_version: Some("c2".into()), ..known.clone() };
        assert_eq!(known.moved_since(&commented), (true, false));
        let liked = ListVersions { likes_version: Some("l2".into()), ..known.clone() };
        assert_eq!(known.moved_since(&liked), (false, true));
        let unknown = ListVersions::default();
        assert_eq!(unknown.moved_since(&unknown), (true, true), "a post stored before versions");
        assert_eq!(known.moved_since(&unknown), (true, true));
        assert_eq!(unknown.moved_since(&known), (true, true));
        let new = ListVersions::new();
        assert_ne!(
            new.comments_version,
            ListVersions::new().comments_version,
            "a new post's are its own"
        );
    }

    /// The versions are stored with the post and read back, and no answer (a [`super::Post`])
    /// carries them.
    #[test]
    fn a_posts_list_versions_are_never_answered() {
        use super::{ListVersions, StoredPost, new_post, new_user};
        let post = new_post(
            "p1".into(),
            &new_user("u".into(), "u".into()),
            "t".into(),
            "c".into(),
            "d".into(),
        );
        let stored =
            StoredPost { post, versions: ListVersions::new(), share_key: None, revision_count: 0 };
        let document = serde_json::to_value(&stored).unwrap();
        assert!(
            document["commentsVersion"].is_string() && document["likesVersion"].is_string(),
            "{document}"
        );
        assert_eq!(serde_json::from_value::<StoredPost>(document.clone()).unwrap(), stored);
        let answered =
            serde_json::to_value(serde_json::from_value::<super::Post>(document.clone()).unwrap())
                .unwrap();
        assert_eq!(answered, ListVersions::removed_from(document));
        assert!(answered.get("commentsVersion").is_none(), "{answered}");
    }

    #[test]
    fn an_excerpt_ends_at_a_whole_word() {
        use super::{SHORT_CONTENT_CHARS, excerpt, truncate_chars};
        assert_eq!(excerpt("Short and whole."), ("Short and whole.".to_owned(), false));
        let long = "word ".repeat(100);
        let (shown, cut) = excerpt(truncate_chars(&long, SHORT_CONTENT_CHARS));
        assert!(cut);
        assert!(shown.ends_with("word…"), "{shown}");
        assert!(shown.chars().count() <= SHORT_CONTENT_CHARS + 1);
        let one_word = "x".repeat(SHORT_CONTENT_CHARS);
        assert_eq!(excerpt(&one_word), (format!("{one_word}…"), true));
        // Cut in a picture, which is left out: the word before it is whole.
        let picture =
            format!("A kite, at dawn. ![A red kite]({})", "x".repeat(SHORT_CONTENT_CHARS));
        assert_eq!(
            excerpt(truncate_chars(&picture, SHORT_CONTENT_CHARS)),
            ("A kite, at dawn.…".to_owned(), true)
        );
    }

    #[test]
    fn an_excerpt_is_the_markdown_as_plain_text() {
        use super::{SHORT_CONTENT_CHARS, excerpt, truncate_chars};
        assert_eq!(
            excerpt("## Hi\n\nSome **bold** and `code`."),
            ("Hi Some bold and code.".to_owned(), false)
        );
        // Cut inside a bold run and a link: neither leaves its marks behind.
        let long = format!(
            "{} **bold words** and a [link to more](https://example.com/{})",
            "word ".repeat(30),
            "x".repeat(100)
        );
        let (shown, cut) = excerpt(truncate_chars(&long, SHORT_CONTENT_CHARS));
        assert!(cut);
        assert!(shown.ends_with("bold words and a link to…"), "{shown}");
        assert!(!shown.contains(['*', '[', ']', '(']), "{shown}");
    }

    /// No space before punctuation after an inline element, whole or cut.
    #[test]
    fn an_excerpt_has_no_space_at_an_inline_elements_edges() {
        use super::{SHORT_CONTENT_CHARS, excerpt, truncate_chars};
        let example = "A **bold**: word, an *em*, and `code`. Also [a link](https://example.org).";
        assert_eq!(
            excerpt(example),
            ("A bold: word, an em, and code. Also a link.".to_owned(), false)
        );
        let long = format!("{example} {}", "word ".repeat(100));
        let (shown, cut) = excerpt(truncate_chars(&long, SHORT_CONTENT_CHARS));
        assert!(cut);
        assert!(shown.starts_with("A bold: word, an em, and code. Also a link. word"), "{shown}");
        assert!(shown.ends_with("word…"), "{shown}");
    }

    use super::*;
    use time::macros::datetime;

    fn alice() -> User {
        new_user("u1".into(), "alice".into())
    }

    #[test]
    fn creation_date_sorts_as_text() {
        assert_eq!(
            creation_date(datetime!(2026-11-22 06:05:04.007 UTC)),
            "2026-11-22T06:05:04.007Z"
        );
        assert_eq!(creation_date(datetime!(2026-11-22 06:05:04 UTC)), "2026-11-22T06:05:04.000Z");
        assert_eq!(
            creation_date(datetime!(2026-11-22 08:05:04.999_9 +02:00)),
            "2026-11-22T06:05:04.999Z"
        );
        assert!(
            creation_date(datetime!(2026-11-22 06:05:04.010 UTC))
                > creation_date(datetime!(2026-11-22 06:05:04.009 UTC))
        );
    }

    #[test]
    fn only_a_renamed_user_needs_their_name_carried_onto_their_items() {
        assert!(!may_show_other_names(&alice()));
        let renamed = renamed_user("u1".into(), "alice2".into(), "2026-11-22T06:05:04.007Z".into());
        assert!(may_show_other_names(&renamed));
        let stored = serde_json::to_value(alice()).unwrap();
        assert!(
            stored.get("renamedAt").is_none(),
            "a new user is stored as the article's user: {stored}"
        );
        assert_eq!(
            serde_json::to_value(&renamed).unwrap()["renamedAt"],
            "2026-11-22T06:05:04.007Z"
        );
    }

    #[test]
    fn new_post_starts_counters_at_zero() {
        let post = new_post("p1".into(), &alice(), "t".into(), "c".into(), "d".into());
        assert_eq!((post.id.as_str(), post.post_id.as_str()), ("p1", "p1"));
        assert_eq!((post.user_id.as_str(), post.user_username.as_str()), ("u1", "alice"));
        assert_eq!((post.comment_count, post.like_count), (0, 0));
    }

    #[test]
    fn an_edit_keeps_what_it_does_not_change() {
        let mut post = new_post("p1".into(), &alice(), "t".into(), "c".into(), "d".into());
        post.comment_count = 3;
        post.like_count = 5;
        let edited = edited_post(post.clone(), "t2".into(), "c2".into(), "e".into());
        assert_eq!(
            edited,
            Post { title: "t2".into(), content: "c2".into(), edited_at: Some("e".into()), ..post }
        );
    }

    #[test]
    fn short_post_cuts_content_on_a_character_boundary() {
        let long = "é".repeat(SHORT_CONTENT_CHARS + 10);
        let post = new_post("p1".into(), &alice(), "t".into(), long, "d".into());
        let short = short_post(&post);
        assert_eq!(short.content.chars().count(), SHORT_CONTENT_CHARS);
        assert_eq!(Post { content: post.content.clone(), ..short }, post);
        assert_eq!(truncate_chars("abc", 5), "abc");
        assert_eq!(truncate_chars("a😀b", 2), "a😀");
    }

    fn version(ts: i64, etag: &str) -> SourceVersion {
        SourceVersion { source_ts: ts, source_etag: etag.into() }
    }

    #[test]
    fn a_copy_never_goes_back_to_an_older_version() {
        assert_eq!(copy_action(None, &version(5, "a")), CopyAction::Write);
        assert_eq!(copy_action(Some(&version(5, "a")), &version(6, "b")), CopyAction::Write);
        assert_eq!(
            copy_action(Some(&version(6, "b")), &version(5, "a")),
            CopyAction::Keep,
            "an older delivery"
        );
        assert_eq!(
            copy_action(Some(&version(6, "b")), &version(6, "b")),
            CopyAction::Keep,
            "a repeated delivery"
        );
        assert_eq!(
            copy_action(Some(&version(6, "b")), &version(6, "c")),
            CopyAction::WriteFromCurrent,
            "same second"
        );
    }

    #[test]
    fn a_copy_reads_back_as_a_post() {
        let post = new_post("p1".into(), &alice(), "t".into(), "x".repeat(500), "d".into());
        let copy = post_copy(&post, version(7, "e"));
        let stored = serde_json::to_value(&copy).unwrap();
        assert_eq!(stored["sourceTs"], 7);
        assert_eq!(stored["sourceEtag"], "e");
        assert_eq!(stored["content"].as_str().unwrap().len(), SHORT_CONTENT_CHARS);
        let read: Post = serde_json::from_value(stored.clone()).unwrap();
        assert_eq!(read, short_post(&post));
        let round_trip: PostCopy = serde_json::from_value(stored).unwrap();
        assert_eq!(round_trip, copy);
    }

    #[test]
    fn items_serialize_in_the_article_shape() {
        let like = new_like("p1", &alice(), "2026-01-01T00:00:00.000Z".into());
        assert_eq!(
            serde_json::to_value(&like).unwrap(),
            serde_json::json!({"id": "like-u1", "type": "like", "postId": "p1", "userId": "u1",
                "userUsername": "alice", "creationDate": "2026-01-01T00:00:00.000Z"})
        );
        let user = serde_json::to_value(alice()).unwrap();
        assert_eq!(
            user,
            serde_json::json!({"id": "u1", "type": "user", "userId": "u1", "username": "alice"})
        );
    }
}
