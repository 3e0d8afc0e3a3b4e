//! `handler repair` and `handler remove`: a stopped embedded store made a consistent blog again
//! after rows went missing from its database. It also serves after the operator chose to go on
//! without a damaged item. A raw SQL statement would instead leave a post's comments, counts or
//! copies behind it.
//!
//! Two parts, in this order. The rows, in one SQLite transaction ([`cosmos::repair_rows`]): the
//! named item is removed first. Then the comments, likes and copies of posts that are gone and
//! the reservations of users that are gone are removed. Each post's counts are set to what it
//! lists, and what is left is recorded as whole, marked unfinished. Then through the store, as
//! `handler rebuild-copies` does: every user's name reserved again, every copy rebuilt, a
//! removed post's pictures removed, and the mark taken away. Both parts are idempotent, so a
//! repair cut short is finished by running `handler repair` again (the blog refuses to start
//! until then).

use crate::app::AppState;
use crate::changefeed::{FeedError, processor};
use crate::config::{Backend, Config};
use crate::cosmos::{
    self, Container, ItemToRemove, OpenError, RepairRowsError, RowsRepaired, StoreError,
};

/// What a repair did.
#[derive(Debug)]
pub struct Repaired {
    /// What the repair of the rows did.
    pub rows: RowsRepaired,
    /// Users delivered again (their names reserved).
    pub users: usize,
    /// Posts delivered again (their copies rebuilt).
    pub posts: usize,
}

/// Why a repair stopped.
#[derive(Debug, thiserror::Error)]
pub enum RepairError {
    /// The configuration names an account.
    #[error(
        "repair and remove work on the embedded store's data directory; this configuration names a Cosmos DB account"
    )]
    NotEmbedded,
    /// The rows could not be repaired.
    #[error(transparent)]
    Rows(#[from] RepairRowsError),
    /// The store could not be opened once the rows were repaired.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// A store call failed: the task that repairs the rows died, or the repair's end was not
    /// recorded.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Replaying the change feeds failed.
    #[error("the names and copies could not be made again (run `handler repair` to finish)")]
    Feed(#[source] FeedError),
    /// The removed post's pictures could not be removed.
    #[error(
        "the removed post's pictures could not be removed (the daily sweep of abandoned pictures will)"
    )]
    Pictures(#[source] crate::app::AppError),
}

/// Repairs the data directory `config` names, removing `remove` first if given.
pub async fn repair(
    config: &Config,
    remove: Option<ItemToRemove>,
) -> Result<Repaired, RepairError> {
    let Backend::Embedded { data_dir } = &config.backend else {
        return Err(RepairError::NotEmbedded);
    };
    let rows = {
        let (dir, remove) = (data_dir.clone(), remove.clone());
        tokio::task::spawn_blocking(move || cosmos::repair_rows(&dir, remove.as_ref()))
            .await
            .map_err(|source| StoreError::TaskDied { work: "the repair of the rows", source })??
    };
    let store = cosmos::Store::connect_for_repair(config, data_dir).await?;
    let state: AppState = crate::running::state_on(config, store).await?;
    let users = processor::replay_users(&state, &mut |_| {}).await.map_err(RepairError::Feed)?;
    let posts = processor::rebuild_copies(&state, &mut |_| {}).await.map_err(RepairError::Feed)?;
    if let (Some(item), Some(removed)) = (&remove, &rows.removed)
        && item.container == Container::Posts
        && item.id == item.partition_key
        && let Some(author) = removed["userId"].as_str()
    {
        crate::app::pictures::remove_post_pictures(&state, author, &item.id)
            .await
            .map_err(RepairError::Pictures)?;
    }
    if let Some(durability) = state.store.embedded() {
        durability.finish_repair()?;
    }
    Ok(Repaired { rows, users, posts })
}
