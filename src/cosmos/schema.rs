//! The containers of the article's V3 model: names, partition keys, indexing, time to live.

use azure_data_cosmos::models::{
    CompositeIndex, CompositeIndexOrder, CompositeIndexProperty, ContainerProperties, IndexingMode,
    IndexingPolicy, TimeToLive,
};

/// The containers of the article's V3 model, plus the change feed's lease container.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Container {
    /// Users, and the short copies of their posts (`/userId`).
    Users,
    /// Posts with their comments and likes (`/postId`).
    Posts,
    /// The newest posts, short form (`/type`).
    Feed,
    /// A short copy of each tagged post under each of its tags (`/tag`, the tag's normal form):
    /// Q7, a tag's posts, reads one partition.
    Tags,
    /// The change-feed leases and the dead letters (`/id`).
    Leases,
    /// The search index (`/word`): a partition per word's key, holding which published posts
    /// have it and how well they match; and the posts' own records (`§docs`). A search reads one
    /// partition a word.
    Words,
}

impl Container {
    /// Every container.
    pub const ALL: [Container; 6] = [
        Container::Users,
        Container::Posts,
        Container::Feed,
        Container::Tags,
        Container::Leases,
        Container::Words,
    ];

    /// The container's name in the account.
    pub fn name(self) -> &'static str {
        match self {
            Container::Users => "users",
            Container::Posts => "posts",
            Container::Feed => "feed",
            Container::Tags => "tags",
            Container::Leases => "leases",
            Container::Words => "words",
        }
    }

    /// The partition key path: each container is partitioned so that every request reads one
    /// logical partition.
    pub(crate) fn partition_key_path(self) -> &'static str {
        match self {
            Container::Users => "/userId",
            Container::Posts => "/postId",
            Container::Feed => "/type",
            // A post's copy under a tag carries the tag's normal form as `tag`; the path names
            // what the partition holds rather than reusing `type`, which every copy also has.
            Container::Tags => "/tag",
            Container::Leases => "/id",
            // A word's key is its partition; `word` says what the partition holds.
            Container::Words => "/word",
        }
    }

    /// Lists sort by `creationDate`, then `id` so that equal dates keep one order. Cosmos DB
    /// needs a composite index for an ORDER BY on two properties; one ascending index also serves
    /// the same ORDER BY fully descending.
    /// In `words`, the postings (`postings`), the bulk of every item, are never filtered on and
    /// are left out of the index, so that writing them costs less.
    pub(crate) fn indexing_policy(self) -> IndexingPolicy {
        let mut policy = IndexingPolicy::default()
            .with_indexing_mode(IndexingMode::Consistent)
            .with_included_path("/*");
        if self == Container::Words {
            policy = policy.with_excluded_path("/postings/*");
        }
        if !matches!(self, Container::Leases | Container::Words) {
            policy = policy.with_composite_index(
                CompositeIndex::default()
                    .with_property(CompositeIndexProperty::new(
                        "/creationDate",
                        CompositeIndexOrder::Ascending,
                    ))
                    .with_property(CompositeIndexProperty::new(
                        "/id",
                        CompositeIndexOrder::Ascending,
                    )),
            );
        }
        policy.automatic = true;
        policy
    }

    /// Whether the container has time to live on with no default (`defaultTtl: -1`). Then an
    /// item carrying a `ttl` is removed that many seconds after its last write. That is
    /// `posts`, for the tombstones of deleted posts (C7), and both `posts` and `users` for the
    /// records of idempotency keys (`app::idempotency`). Cosmos DB ignores an item's `ttl`
    /// elsewhere.
    pub fn expires_items(self) -> bool {
        matches!(self, Container::Posts | Container::Users)
    }

    /// What the container is created with: its partition key, indexing policy and time to live.
    pub(crate) fn properties(self) -> ContainerProperties {
        let properties = ContainerProperties::new(self.name(), self.partition_key_path().into())
            .with_indexing_policy(self.indexing_policy());
        if self.expires_items() {
            properties.with_default_ttl(TimeToLive::NoDefault)
        } else {
            properties
        }
    }
}
