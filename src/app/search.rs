//! Search: the index the change feed keeps in `words`, and the queries that read it.
//!
//! The article's method, applied to words: pay when a post is written so that a search is a
//! few single-partition reads. `PostsChangeFeed` indexes each published post after its copies
//! ([`index_posts`]); a search reads one partition a word, then the candidates' records by
//! point reads. See [`crate::model::search`] for the words and the ranking, and
//! [`crate::model::search::index`] for the items.

mod index;
mod query;

pub(crate) use index::{clear_legacy_index, index_posts, unindex_post};
pub(crate) use query::{MAX_RESULTS, SearchPage, SnippetPart, search};
