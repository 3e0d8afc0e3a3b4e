//! The marks: small items the change feed writes again after it changed the copies a list
//! reads, so that an instance keeping a page of the list checks it with one point read
//! (`crate::app::kept`).

/// The partition of `feed` that holds its change mark, and the mark's id: one small item that
/// `PostsChangeFeed` writes again after every change it makes to the feed's posts, so that its
/// etag changes whenever Q6's answer may have. A reader holding a page of the feed checks it with
/// one point read of the mark (about 1 RU) instead of reading the page again (Q6, about 17 RU).
/// The mark has a partition of its own (its `type`), so Q6 and `truncateFeed`, which read the
/// posts' partition, never see it.
pub(crate) const FEED_MARK_PARTITION: &str = "feedMark";
/// The id of the feed's change mark (in [`FEED_MARK_PARTITION`]).
pub(crate) const FEED_MARK_ID: &str = "feedMark";

/// The id of a user's posts mark, in their partition of `users`: written again after every
/// change `PostsChangeFeed` makes to their posts' copies there (Q3's answer), as the feed's mark
/// is. User and post ids are printable ASCII, so no user or copy can have this id; its `type`
/// is [`USER_POSTS_MARK_TYPE`], which Q3 and `UsersChangeFeed` pass over.
pub(crate) const USER_POSTS_MARK_ID: &str = "\u{a7}postsMark";
/// The `type` of a user's posts mark.
pub(crate) const USER_POSTS_MARK_TYPE: &str = "postsMark";

/// The id of a tag's mark, in the tag's partition of `tags`: written again after every change
/// `PostsChangeFeed` makes to the copies under the tag (Q7's answer), as the feed's mark is.
/// Post ids are printable ASCII, so no copy can have this id; its `type` is [`TAG_MARK_TYPE`],
/// which Q7 passes over.
pub(crate) const TAG_MARK_ID: &str = "\u{a7}tagMark";
/// The `type` of a tag's mark.
pub(crate) const TAG_MARK_TYPE: &str = "tagMark";

/// The partition of `feed` that holds the blog's change log, and the log's id and `type`. The
/// log is one small item naming the kept pages the change feed changed lately
/// (`crate::app::kept::change_log`). With it, an instance checks every page it keeps with one
/// point read a second. A partition of its own, as the feed's mark has, so Q6 and
/// `truncateFeed` never see it.
pub(crate) const CHANGE_LOG_PARTITION: &str = "changeLog";
/// The change log's id (in [`CHANGE_LOG_PARTITION`]).
pub(crate) const CHANGE_LOG_ID: &str = "changeLog";
