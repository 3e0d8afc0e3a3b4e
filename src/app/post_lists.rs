//! Lists of short posts that live in one partition each and are kept by the instance: a user's
//! posts (Q3, in their partition of `users`) and a tag's (Q7, in the tag's partition of `tags`).
//! Each partition holds its list's mark beside the copies, which `PostsChangeFeed` writes again
//! after it changed them; the pages read are kept and checked by it ([`super::kept`]).

use std::sync::Arc;

use crate::cosmos::{Container, QuerySpec, queries};
use crate::model::{self, Post};

use super::kept::change_log;
use super::kept::{MAX_LIST_BYTES, Mark, MarkedPage, MarkedPages};
use super::lists::{DEFAULT_PAGE_SIZE, ListPage, ListParams, wrap_token};
use super::{AppResult, AppState};

/// The most pages of one kind of list one instance keeps (each partition, page size and
/// continuation is a page; partitions are the readers' to choose, and [`MAX_LIST_BYTES`] bounds
/// what the pages hold).
const MAX_PAGES: usize = 1024;

/// One kind of list: where its copies and its mark are, and the pages one instance keeps of it,
/// by partition, page size and continuation.
pub struct PostLists {
    /// The list's name in its continuation tokens.
    list: &'static str,
    container: Container,
    query: fn() -> QuerySpec,
    mark_id: &'static str,
    mark_type: &'static str,
    /// What the change log calls a partition's list.
    name: fn(&str) -> String,
    pages: MarkedPages<(String, u32, Option<String>), ListPage<Post>>,
}

impl PostLists {
    /// A user's posts: Q3, checked by `§postsMark` in their partition of `users`.
    pub(crate) fn user_posts() -> PostLists {
        PostLists::new(
            "userPosts",
            Container::Users,
            queries::user_posts,
            (model::USER_POSTS_MARK_ID, model::USER_POSTS_MARK_TYPE),
            change_log::user_posts,
        )
    }

    /// A tag's posts: Q7, checked by `§tagMark` in the tag's partition of `tags`.
    pub(crate) fn tag_posts() -> PostLists {
        PostLists::new(
            "tag",
            Container::Tags,
            queries::tag_posts,
            (model::TAG_MARK_ID, model::TAG_MARK_TYPE),
            change_log::tag,
        )
    }

    fn new(
        list: &'static str,
        container: Container,
        query: fn() -> QuerySpec,
        (mark_id, mark_type): (&'static str, &'static str),
        name: fn(&str) -> String,
    ) -> Self {
        PostLists {
            list,
            container,
            query,
            mark_id,
            mark_type,
            name,
            pages: MarkedPages::within(MAX_PAGES, MAX_LIST_BYTES),
        }
    }

    /// The page `params` asks for of the list in `partition`, newest first: the one kept while
    /// fresh, or checked by the partition's mark, or read by one query on the partition.
    pub(crate) async fn page(
        &self,
        state: &AppState,
        partition: &str,
        params: &ListParams,
    ) -> AppResult<Arc<MarkedPage<ListPage<Post>>>> {
        let page = params.page_request(&state.tokens, self.list, partition, DEFAULT_PAGE_SIZE)?;
        let key = (partition.to_owned(), page.size, page.continuation.clone());
        self.pages
            .page(state, key, &(self.name)(partition), self.mark(partition), || async {
                let found = state
                    .store
                    .query_page::<Post>(self.container, partition, (self.query)(), page)
                    .await?;
                let continuation_token =
                    wrap_token(&state.tokens, found.continuation, self.list, partition);
                Ok(ListPage { items: found.items, continuation_token })
            })
            .await
    }

    fn mark<'a>(&self, partition: &'a str) -> Mark<'a> {
        Mark { container: self.container, partition_key: partition, id: self.mark_id }
    }

    /// Writes the mark of the list in `partition` again and forgets this instance's pages of it:
    /// its copies changed (or may have, in a delivery that failed before its mark). Answers what
    /// the change log calls the list, for the caller to append once the batch is stored.
    pub(crate) async fn mark_changed(
        &self,
        state: &AppState,
        partition: &str,
    ) -> AppResult<String> {
        self.mark(partition).write(state, self.mark_type).await?;
        self.pages.forget(|(kept, _, _)| kept == partition);
        Ok((self.name)(partition))
    }

    /// Forgets every page kept: the next read of each list reads its mark and its query.
    pub fn invalidate(&self) {
        self.pages.forget(|_| true);
    }
}
